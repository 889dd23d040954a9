-- The built-in profile: what qsup uses when it is given none. It also
-- documents the format, and every setting below shows its default.
--
-- A profile is a Lua chunk that returns a table of settings (or passes one
-- to sandbox { ... }). A setting left out keeps its default. The chunk runs
-- in a sandbox: base, string, table, math and utf8 only, no files, no os,
-- at most 1 s and 64 MiB. What it may know of the host is in `qsup`:
--   qsup.arch        "x86_64", ...
--   qsup.cpus        CPUs qsup may run on
--   qsup.memory_mib  host RAM in MiB
--   qsup.env(NAME)   the host's environment variable NAME, or nil
-- for example: cpus = math.min(4, qsup.cpus).
--
-- Mistakes are reported all at once, as FILE:LINE: messages; an unknown
-- setting gets the closest known name suggested.

return {
	-- KVM: true means KVM or fail, false never, "auto" uses KVM when it
	-- is measured to work and emulation (TCG) otherwise.
	use_kvm = "auto",

	-- Guest RAM: MiB as a whole number (1024), or a string with one
	-- suffix k, M, G or T ("512M", "2G", "1.5G"); "2GB" or "2GiB" are
	-- refused. 16M to 1T. The built-in guest is small: 512 is plenty.
	memory = 512,

	-- Virtual CPUs, 1 to 64.
	cpus = 1,

	-- Seconds the guest has to answer, boot included. 0 lets the
	-- accelerator decide: short with KVM, much longer when emulated.
	start_timeout = 0,

	-- Copy the guest's console (kernel and boot messages) to stderr.
	show_boot_console = false,

	-- Start from a saved VM state (a template) of this guest's shape
	-- instead of booting it: the first run of a shape boots and saves
	-- one into the cache (qsup cache ls), later runs restore it.
	warm_start = true,

	-- Guest kernel and initramfs, absolute or relative to the profile's
	-- directory; nil means the built-in guest's.
	kernel = nil,
	initramfs = nil,

	-- Environment of every command in the guest, as a list of
	-- "NAME=VALUE" strings or as NAME = "VALUE" fields (or both):
	--   env = { "LANG=C.UTF-8", TZ = "UTC" },
	env = {},

	-- Working directory of commands in the guest: an absolute path.
	cwd = "/",
}
