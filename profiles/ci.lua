-- ci.lua: qsup in a pipeline (GitHub Actions, GitLab CI, Jenkins, ...).
--
--   qsup --profile ci -- sh -c './configure && make && make test'
--
-- The job runs in Debian 12 with a C toolchain (build-essential, ccache),
-- installed once by setup and kept as image layers in images_dir: keep
-- that directory between jobs (the CI system's cache) and later jobs
-- start from the toolchain at once. The checkout is shared copy-on-write
-- at /src: the job may write anything in it (configure's files, objects),
-- its writes stay in the sandbox, and the runner's checkout is left as it
-- was. What the job copies to /artifacts comes back to the host, and
-- /cache is kept between jobs: ccache keeps its objects there, and cc,
-- gcc and g++ go through it. The job itself has no network card; setup
-- reaches deb.debian.org alone. A command that hangs is killed after 30
-- minutes (qsup exits 124); when the sandbox itself fails, the console is
-- printed at length, since a pipeline's log is all there is to look at
-- afterwards. Runners seldom have a working KVM: "auto" measures it and
-- emulates otherwise. Override anything for one job with --set
-- (--set image=./my-toolchain.qcow2, --set timeout=3600).

-- The checkout: where the CI system says it is, else where qsup runs.
local checkout = qsup.env("GITHUB_WORKSPACE") or qsup.env("CI_PROJECT_DIR")
	or qsup.env("WORKSPACE") or qsup.cwd
-- Inside the checkout by default, where GitLab wants artifacts and
-- caches to be; made if missing.
local artifacts = qsup.env("QSUP_ARTIFACTS") or (checkout .. "/.qsup/artifacts")
local cache = qsup.env("QSUP_CACHE") or (checkout .. "/.qsup/cache")

return {
	use_kvm = "auto",
	memory = "2G",
	cpus = math.max(1, math.min(qsup.cpus, 4)),

	-- A hung test should fail the job, not eat the runner's hours.
	timeout = 1800,

	-- The whole console tail when the guest fails to start or dies.
	console_on_failure = 200,

	-- Every job boots the same guest: restore it instead.
	warm_start = true,

	image = qsup.env("QSUP_CI_IMAGE") or "docker://debian:bookworm",
	-- Room for the toolchain and the build on the guest's disk.
	disk_size = "4G",
	setup = {
		"apt-get update",
		"DEBIAN_FRONTEND=noninteractive apt-get install -y "
			.. "--no-install-recommends build-essential ccache",
		"apt-get clean",
	},
	setup_network = { "deb.debian.org:80", "deb.debian.org:443" },

	network = "none",

	shares = {
		{ host = checkout, guest = "/src", mode = "cow" },
		{ host = artifacts, guest = "/artifacts", mode = "rw", create = true },
		{ host = cache, guest = "/cache", mode = "rw", create = true },
	},
	-- Room for the build's writes to the checkout.
	cow_size = "8G",
	-- Commands start in the checkout.
	cwd = "/src",

	env = {
		CI = "true",
		LANG = "C.UTF-8",
		CCACHE_DIR = "/cache/ccache",
		PATH = "/usr/lib/ccache:/usr/local/sbin:/usr/local/bin:"
			.. "/usr/sbin:/usr/bin:/sbin:/bin",
	},
}
