-- ci.lua: qsup in a pipeline (GitHub Actions, GitLab CI, Jenkins, ...).
--
--   qsup --profile ci -- make test
--
-- The checkout is shared read-only at /src, so a test cannot change the
-- tree it is testing; the guest has no network card at all; a command
-- that hangs is killed after 10 minutes (qsup exits 124); when the sandbox
-- itself fails, the console is printed at length, since a pipeline's log is
-- all there is to look at afterwards. Runners seldom have a working KVM:
-- "auto" measures it and emulates otherwise. Override anything for one job
-- with --set (--set timeout=1800).

-- The checkout: where the CI system says it is, else where qsup runs.
local checkout = qsup.env("GITHUB_WORKSPACE") or qsup.env("CI_PROJECT_DIR")
	or qsup.env("WORKSPACE") or qsup.cwd

return {
	use_kvm = "auto",
	memory = "1G",
	cpus = math.max(1, math.min(qsup.cpus, 4)),

	-- Tight: a hung test should fail the job, not eat the runner's hours.
	timeout = 600,

	-- The whole console tail when the guest fails to start or dies.
	console_on_failure = 200,

	-- Every job boots the same guest: restore it instead.
	warm_start = true,

	network = "none",

	shares = {
		{ host = checkout, guest = "/src", mode = "ro" },
	},
	-- Commands start in the checkout.
	cwd = "/src",

	env = { CI = "true", LANG = "C.UTF-8" },
}
