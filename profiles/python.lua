-- python.lua: run the host's Python 3 in the guest, as the seed does.
--
--   qsup --profile python -- python3 /app/script.py
--
-- The interpreter is the host's python3 (qsup.python: the one a shell here
-- would run, through pyenv shims and symlinks). The default microVM guest
-- has no C library of its own (its userland is a static busybox and the
-- static agent), so the host's interpreter runs on the host's own C
-- library, shared read-only at the paths the dynamic loader looks in: the
-- "full" glibc closure of the seed, /lib/TRIPLET and the loader in /lib64.
-- The interpreter's tree is shared read-only at the same path (its
-- standard library and site-packages with it), its virtual environment
-- too if it runs from one, and the current directory at /app.
--
-- Execution trees (exec = true) are staged into the run directory first
-- when qsup runs in a container (virtfs = "auto"): hard links, without
-- .git, .venv, caches and the like. An interpreter's tree is tens of
-- thousands of files that rarely change, so the copy is kept in the cache
-- between runs and checked against its source each time (virtfs_cache):
-- seconds saved a run.
--
-- ld_closure_libs = "sparse" (--set ld_closure_libs=sparse) shows, of the
-- library directories, only what the interpreter and its C modules need
-- (about 50 of the 1,300 files in /lib/TRIPLET for a pyenv build), through
-- hard links in the run directory, shared once and bound over the library
-- directories in the guest. For the system Python, /usr/lib is shared as
-- it is and the closure is bound over its /usr/lib/TRIPLET too, so the
-- rest is hidden there as well, at no cost. A library the program opens
-- itself (ctypes.CDLL) goes in ld_closure_extra; qsup names it when it is
-- missing.
--
-- This profile sets no image: the host's Python runs in the built-in
-- busybox guest. --set image=NAME applies as in any profile (a disk
-- image as the commands' root; qsup.images.for_python("3.12") names one
-- for a Python version), and an image whose glibc is newer than the
-- host's is refused while host library directories are shared over it.

local py = qsup.python
if py == nil then
	error("no python3 on the host's PATH, and python.lua runs the " ..
	    "host's Python in the guest")
end

local shares = {}

-- The interpreter's own tree at the same path when it lives apart (pyenv,
-- a home directory, /opt). The system's (/usr/bin/python3) comes with all
-- of the host's /usr/lib (its standard library, dist-packages and C
-- libraries), and /usr/bin is shown at /usr/local/bin, since the guest's
-- /usr/bin is its busybox; the interpreter then finds its library by the
-- prefix it was built with.
local bindir = py.executable:match("^(.*)/[^/]*$")
if py.prefix == "/usr" then
	table.insert(shares, { host = "/usr/lib", mode = "ro", exec = true })
	table.insert(shares, { host = "/usr/bin", guest = "/usr/local/bin",
	    mode = "ro" })
	bindir = "/usr/local/bin"
else
	table.insert(shares, { host = py.prefix, mode = "ro", exec = true })
end
if py.venv ~= nil then
	table.insert(shares, { host = py.venv, mode = "ro", exec = true })
end

-- The host's C library and dynamic loader (merged /usr: /lib is a link to
-- /usr/lib), where the loader and the interpreter's PT_INTERP expect them.
table.insert(shares, { host = "/usr/lib/" .. qsup.triplet,
    guest = "/lib/" .. qsup.triplet, mode = "ro", exec = true })
table.insert(shares, { host = "/lib64", guest = "/lib64", mode = "ro",
    exec = true })

-- The work: the current directory, read-only.
table.insert(shares, { host = qsup.cwd, guest = "/app", mode = "ro" })

return {
	use_kvm = "auto",
	memory = "1G",
	cpus = math.max(1, math.min(qsup.cpus, 2)),
	shares = shares,
	cwd = "/app",
	virtfs = "auto",
	virtfs_cache = true,
	ld_closure_libs = "full",
	-- mapped-xattr reads a host symlink as a file and fails (ELOOP): the
	-- library directories are full of them, so the host's modes as they are.
	virtfs_security_model = "none",
	env = {
		PATH = bindir .. ":/usr/local/bin:/usr/bin:/bin",
		PYTHONDONTWRITEBYTECODE = "1",
		PYTHONUNBUFFERED = "1",
		HOME = "/root",
	},
}
