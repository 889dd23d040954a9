-- python.lua: run the host's Python 3 in the guest, as the seed does.
--
--   qsup --profile python -- python3 /app/script.py
--
-- The interpreter is the host's python3 (qsup.python: the one a shell here
-- would run, through pyenv shims and symlinks), shared read-only at the
-- same path with its standard library, and its virtual environment if it
-- runs from one; the current directory is shared read-only at /app. The
-- guest boots a cloud image chosen so that its C library and the host's
-- agree: the host's libraries may be laid over the guest's (nested
-- containers, virtfs), so the image must be no newer than the host, and
-- the host's interpreter must find what it was built against.
-- QSUP_IMAGE (or the seed's PYSANDBOXES_QEMU_IMAGE_URL) picks another
-- image; QSUP_IMAGE_BASE_URL (PYSANDBOXES_QEMU_IMAGE_BASE_URL) another
-- mirror of the same files.

local py = qsup.python
if py == nil then
	error("no python3 on the host's PATH, and python.lua runs the " ..
	    "host's Python in the guest")
end

-- "2.36" < "2.41"
local function older_or_same(a, b)
	local a1, a2 = a:match("^(%d+)%.(%d+)")
	local b1, b2 = b:match("^(%d+)%.(%d+)")
	a1, a2, b1, b2 = tonumber(a1), tonumber(a2), tonumber(b1), tonumber(b2)
	return a1 < b1 or (a1 == b1 and a2 <= b2)
end

-- Released images that ship each Python, with their glibc (the seed's
-- table, plus Debian 12 for 3.11). Never a development release.
local ubuntu = "https://cloud-images.ubuntu.com/releases/"
local images = {
	["3.11"] = {
		{ glibc = "2.36", base = "https://cloud.debian.org/images/cloud/bookworm/latest/",
		  file = "debian-12-generic-%s.qcow2" },
		{ glibc = "2.37", base = ubuntu .. "23.04/release/",
		  file = "ubuntu-23.04-server-cloudimg-%s.img" },
	},
	["3.12"] = {
		{ glibc = "2.39", base = ubuntu .. "24.04/release/",
		  file = "ubuntu-24.04-server-cloudimg-%s.img" },
	},
	["3.13"] = {
		{ glibc = "2.41", base = ubuntu .. "25.04/release/",
		  file = "ubuntu-25.04-server-cloudimg-%s.img" },
	},
	["3.14"] = {
		{ glibc = "2.41", base = ubuntu .. "25.04/release/",
		  file = "ubuntu-25.04-server-cloudimg-%s.img" },
	},
}
local arches = { x86_64 = "amd64", aarch64 = "arm64", ppc64le = "ppc64el" }

local image = qsup.env("QSUP_IMAGE") or qsup.env("PYSANDBOXES_QEMU_IMAGE_URL")
if image == nil then
	local candidates = images[py.version]
	local arch = arches[qsup.arch]
	if candidates == nil or arch == nil then
		error(("no image is known for Python %s on %s; set QSUP_IMAGE " ..
		    "to one whose glibc is no newer than the host's (%s)")
		    :format(py.version, qsup.arch, qsup.glibc or "?"))
	end
	-- The newest image whose glibc the host's is not older than.
	local pick = candidates[1]
	for _, c in ipairs(candidates) do
		if qsup.glibc ~= nil and older_or_same(c.glibc, qsup.glibc) then
			pick = c
		end
	end
	local base = qsup.env("QSUP_IMAGE_BASE_URL")
		or qsup.env("PYSANDBOXES_QEMU_IMAGE_BASE_URL") or pick.base
	if base:sub(-1) ~= "/" then
		base = base .. "/"
	end
	image = base .. pick.file:format(arch)
end

-- An interpreter of its own prefix (pyenv, uv, a build) is shared whole; a
-- system one only by its library, since the image has its own /usr.
local shares = {}
if py.prefix == "/usr" or py.prefix == "/usr/local" or py.prefix == "/" then
	table.insert(shares, { host = py.prefix .. "/lib/python" .. py.version,
	    mode = "ro", ignore = { "__pycache__" } })
else
	table.insert(shares, { host = py.prefix, mode = "ro",
	    ignore = { "__pycache__" } })
end
table.insert(shares, { host = qsup.cwd, guest = "/app", mode = "ro" })
if py.venv ~= nil then
	table.insert(shares, { host = py.venv, mode = "ro",
	    ignore = { "__pycache__" } })
end

return {
	use_kvm = "auto",
	-- Cloud images boot a whole distribution: the seed's 2 GiB.
	memory = "2G",
	cpus = math.max(1, math.min(qsup.cpus, 2)),
	image = image,
	shares = shares,
	cwd = "/app",
	virtfs = "auto",
	ld_closure_libs = "full",
	env = {
		PATH = py.executable:match("^(.*)/[^/]*$") ..
		    ":/usr/local/bin:/usr/bin:/bin",
		PYTHONDONTWRITEBYTECODE = "1",
		PYTHONUNBUFFERED = "1",
	},
}
