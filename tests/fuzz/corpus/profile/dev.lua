-- dev.lua: interactive work on the project in the current directory.
--
--   qsup --profile dev -- sh -c 'cd /work && make'
--
-- The current directory is shared read-write at /work: what you build in
-- the guest is on the host afterwards. The guest may fetch packages from
-- the usual registries and nothing else (the host's own services stay out
-- of reach), port 8000 in the guest is forwarded to a free host port, and
-- the guest gets a good share of the host, leaving some for your editor.

local function clamp(n, lo, hi)
	return math.max(lo, math.min(hi, n))
end

return {
	use_kvm = "auto",
	memory = clamp(qsup.memory_mib // 4, 512, 4096),
	cpus = clamp(qsup.cpus - 1, 1, 4),
	warm_start = true,

	shares = {
		{ host = qsup.cwd, guest = "/work", mode = "rw" },
	},

	network = "allowlist",
	network_allow = {
		"deb.debian.org:80", "deb.debian.org:443",
		"security.debian.org:80", "security.debian.org:443",
		"pypi.org:443", "files.pythonhosted.org:443",
		"registry.npmjs.org:443",
		"crates.io:443", "static.crates.io:443", "index.crates.io:443",
		"proxy.golang.org:443", "sum.golang.org:443",
		"github.com:443", "*.githubusercontent.com:443",
	},

	-- A development server in the guest on port 8000: `qsup run -v`
	-- says which host port it got.
	ports = { { guest = 8000, host = 0 } },

	env = {
		LANG = "C.UTF-8",
		TERM = qsup.env("TERM") or "xterm-256color",
	},
}
