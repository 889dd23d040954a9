-- The built-in profile: what qsup uses when it is given none. It also
-- documents the format, and every setting below shows its default
-- (`qsup profile settings` lists them with what each accepts).
--
-- A profile is a Lua chunk that returns a table of settings (or passes one
-- to sandbox { ... }). A setting left out keeps its default. The chunk runs
-- in a sandbox: base, string, table, math and utf8 only, no files, no os,
-- at most 1 s and 64 MiB. What it may know of the host is in `qsup`
-- (`qsup profile facts` shows them):
--   qsup.arch          "x86_64", ...
--   qsup.triplet       Debian's multiarch triplet, "x86_64-linux-gnu"
--   qsup.glibc         the host's glibc version, "2.36"
--   qsup.cpus          CPUs qsup may run on (cgroup quota included)
--   qsup.memory_mib    host RAM in MiB (cgroup limit included)
--   qsup.in_container  true in Docker, Podman or Kubernetes (/.dockerenv,
--                      /.containerenv or $container)
--   qsup.cwd           the directory qsup was started in
--   qsup.kvm           true if KVM is measured to work here (the first
--                      read on a host may boot a probe guest, at most
--                      5 s, not counted in the profile's second)
--   qsup.kvm_why       why, or why not
--   qsup.python        the host's python3, or nil: { path, executable,
--                      version = "3.11", prefix, venv }
--   qsup.env(NAME)     the host's environment variable NAME, or nil
--   qsup.images        qsup's catalog of disk images, read-only: names,
--                      entries by name, python (the seed's Python ->
--                      image table), for_python(VERSION[, GLIBC])
-- for example: cpus = math.min(4, qsup.cpus).
--
-- A profile may build on another one of its directory tree, or on a
-- built-in one ("builtin:ci"):
--   return extend("base.lua", { memory = "2G" })  -- base, with changes
--   local p = include("base.lua"); p.cpus = 2; return p
-- Cycles are refused. On the command line, --set NAME=VALUE overrides any
-- setting, checked the same way (--set memory=1G, --set use_kvm=false,
-- --set 'env={FOO="bar"}').
--
-- Mistakes are reported all at once, as FILE:LINE: messages; an unknown
-- setting gets the closest known name suggested. `qsup profile check FILE`
-- checks a profile, `qsup profile show FILE` shows what it resolves to.

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

	-- Seconds a command may run; then it is killed and qsup exits 124.
	-- 0: no limit. `qsup run --timeout SECS` overrides it.
	timeout = 0,

	-- Copy the guest's console (kernel and boot messages) to stderr;
	-- with boot = "image", verbose cloud-init and bootstrap output too.
	show_boot_console = false,

	-- A file the console is written to as it comes, kept after the run
	-- (the seed's .pysandbox-qemu-console.log); nil: none.
	console_log = nil,

	-- Lines of the guest's console shown when the sandbox fails (the
	-- guest does not start, QEMU dies). 0: none.
	console_on_failure = 20,

	-- Start from a saved VM state (a template) of this guest's shape
	-- instead of booting it: the first run of a shape boots and saves
	-- one into the cache (qsup cache ls), later runs restore it.
	warm_start = true,

	-- Where a template keeps the guest's memory: "shared", a file of its
	-- own that every restored guest maps copy-on-write (restores in tens
	-- of milliseconds, unchanged pages shared between sandboxes);
	-- "stream", inside the saved state, copied into each restored guest.
	template_ram = "shared",

	-- The most disk the templates may take; past it, saving one removes
	-- the least recently used others. 0: no limit.
	template_cache_max = "4G",
	-- qsup serve's limits, read from the server's own profile.
	serve_max_sandboxes = 16,
	-- serve_max_memory: 0 is three quarters of the host's.
	serve_max_memory = 0,
	serve_max_body = "1M",
	serve_max_header = "16K",
	serve_max_connections = 256,
	-- From one TCP address (an IPv6 /64); 0: no cap. Unix socket
	-- clients are the server's own user, and not counted.
	serve_max_connections_per_address = 64,
	-- Connections that have not sent the token yet; 0: half of
	-- serve_max_connections. The oldest of them is closed for a new one.
	serve_max_unauthenticated = 0,
	-- Seconds for a request's head to arrive whole, a kept-alive
	-- connection to wait for its next request, a body to send its next
	-- byte. Event and exec streams are never cut.
	serve_head_timeout = 10,
	serve_idle_timeout = 60,
	serve_body_timeout = 60,
	-- Sandboxes kept booted and paused per profile ("default": the
	-- server's own), so a create is answered at once and the pool
	-- refilled behind it: { default = 2 }. Read from the server's own
	-- profile only; {}: none.
	serve_pool = {},

	-- What boots: "kernel", qsup's fast kernel and agent, the image (if
	-- any) only the root file system; "image", the image as a PC would
	-- (firmware, its boot loader, kernel and init), cloud-init starting
	-- qsup's agent from the seed. About a minute under emulation, cold;
	-- a warm start restores the image as it was once cloud-init ended.
	boot = "kernel",

	-- Guest kernel and initramfs, absolute or relative to the profile's
	-- directory; nil means the built-in guest's.
	kernel = nil,
	initramfs = nil,

	-- A disk image for the guest: a name ("debian-12", see below), an
	-- http(s) URL, or a file (with a "/": "./disk.qcow2"). nil: the
	-- built-in guest, which needs none.
	-- The seed's variables are honoured, qsup's own first.
	image = qsup.env("QSUP_IMAGE") or qsup.env("PYSANDBOXES_QEMU_IMAGE_URL"),
	image_base_url = qsup.env("QSUP_IMAGE_BASE_URL") or qsup.env("PYSANDBOXES_QEMU_IMAGE_BASE_URL"),
	-- Where downloaded images are kept (nil: $XDG_DATA_HOME/qsup/images).
	images_dir = qsup.env("QSUP_IMAGES_DIR") or qsup.env("PYSANDBOXES_VM_IMAGES_DIR"),

	-- A name is looked up in qsup's catalog (qsup.images: Debian 12 and
	-- 13, Ubuntu 22.04 to 26.04, for amd64 and arm64; `qsup profile show`
	-- shows the URL it resolves to); with image_base_url set, the
	-- catalog's file name (or the name itself, for one it lacks) is taken
	-- from there instead, as from a mirror. The seed's Python versions
	-- map to images: image = qsup.images.for_python("3.12") gives
	-- "ubuntu-24.04"; for_python(v, qsup.glibc) one whose glibc is no
	-- newer than the host's, for when the host's libraries are shared.
	--
	-- A downloaded image is checked against its SHA-256: image_sha256 (64
	-- hex digits) when pinned, else the SHA256SUMS or SHA512SUMS file
	-- beside it. With neither, it is refused unless image_unverified is
	-- true. A digest for a file image, or for none, is refused.
	image_sha256 = qsup.env("QSUP_IMAGE_SHA256"),
	image_unverified = false,
	-- The most a downloaded image may weigh: a larger Content-Length is
	-- refused before a byte is written, a body that goes on past it is
	-- stopped, and nothing of either is kept. Never more than the free
	-- space of images_dir's file system less a margin (5% of it, at most
	-- 1G), whatever this says. Bytes as for disk_size, 1M to 2T.
	image_max_size = "16G",
	-- docker:// images, per registry ("docker.io", "host:5000"): mirrors
	-- tried in order before the registry itself (any failure, 429 after
	-- its wait included, moves to the next), and insecure = true to allow
	-- plain http to it (after https). A registry's mirrors here replace
	-- those registries.conf gives it; its insecure registries are added.
	-- An http:// mirror must be on loopback or a registry named insecure.
	--   registries = {
	--     ["docker.io"] = { mirrors = { "https://mirror.example.org" } },
	--     ["registry.lan:5000"] = { insecure = true },
	--   },
	registries = {},

	-- The guest's disk (a fresh copy-on-write overlay over the image each
	-- run, the image never written) grows to this size, its root file
	-- system with it: "10G", "512M", or bytes as a whole number; whole
	-- 512-byte sectors, 1M to 2T; "10GB" is refused. nil: the image's own
	-- size. Only with an image.
	disk_size = nil,

	-- Room for the guest's writes to its mode = "cow" shares: one sparse
	-- disk per sandbox in its run directory, an empty ext4 holding every
	-- cow share's upper layer, removed with the sandbox. It costs the
	-- host only what the guest writes; once it is full, the guest's
	-- writes fail with ENOSPC ("No space left on device"). Sizes as for
	-- disk_size, 16M to 2T.
	cow_size = "4G",

	-- Steps run once over image, before the command, each a string (run
	-- by sh -c) or an argv list: { "apt-get update", { "make", "-j2" } }.
	-- Each step's result is kept as a qcow2 layer in images_dir/layers,
	-- keyed by its parent, the step and env; later runs start from the
	-- top layer, and a changed step rebuilds only itself and those after
	-- it. Only with an image; qsup image ls and prune show and remove
	-- layers.
	setup = {},
	-- The network of setup steps: "none", "restricted", "open" (needs
	-- network_open_ack), or an allowlist, written as its "HOST[:PORT]"
	-- rules: setup_network = { "deb.debian.org:80", "deb.debian.org:443" }
	-- (one rule alone is taken as such a list).
	setup_network = "none",

	-- Environment of every command in the guest, as a list of
	-- "NAME=VALUE" strings or as NAME = "VALUE" fields (or both):
	--   env = { "LANG=C.UTF-8", TZ = "UTC" },
	env = {},

	-- Working directory of commands in the guest: an absolute path.
	cwd = "/",

	-- Host directories the guest sees, over virtio-9p. Read-only unless
	-- mode = "rw" (the guest writes the host's files) or "cow" (the
	-- guest may write anything, but its writes stay in the sandbox, on
	-- its cow disk, and the host tree is never touched); at the same
	-- path unless guest = ...; names matching an ignore glob are left
	-- out. Relative host paths are relative to the profile's directory.
	-- create = true (rw only) makes a missing host directory at the start.
	--   shares = {
	--     { host = qsup.cwd, guest = "/src", mode = "cow" },
	--     { host = "/tmp/out", mode = "rw", create = true },
	--   },
	shares = {},

	-- Copy shared trees to a temporary directory before sharing them:
	-- in a nested container, files on overlayfs that the guest maps
	-- crash it. "auto" copies when qsup runs in a container; "on", "off".
	virtfs = "auto",

	-- QEMU's 9p security model for read-write shares; read-only ones
	-- and copies always use "none". "none": the guest sees and makes the
	-- host's own files, symlinks included; it cannot set setuid or setgid
	-- bits, chown, make device nodes or set xattrs there (qsup confines
	-- QEMU). "mapped-xattr": the guest's owners, modes, devices and
	-- symlinks are kept in user.virtfs.* xattrs, the host's files stay
	-- 0600/0700, but the host's symlinks read as ELOOP and the guest's
	-- are plain files on the host. "mapped-file": the same in
	-- .virtfs_metadata files. "passthrough" is refused with a read-write
	-- share. The seed's "auto" means "none".
	virtfs_security_model = "none",

	-- Keep those copies in the cache directory (~/.cache/qsup/staged, as
	-- hard links) and use them again while their source is unchanged:
	-- every entry's inode, size and time is checked each run, any change
	-- makes the copy again. Staging a 40,000-file interpreter then costs
	-- a check, not seconds. false (the default): a fresh copy in the run
	-- directory each run, removed with the sandbox, so nothing of a run
	-- stays behind. "qsup cache clear" removes kept copies.
	virtfs_cache = false,

	-- What the guest sees of the host's C-library directories when a
	-- profile shares them (python.lua does): "full" shows all of
	-- /lib/TRIPLET, /usr/lib/TRIPLET and /lib64; "sparse" only the
	-- closure of what can run, found as the dynamic loader would find it
	-- (the command, the programs and *.so modules of exec = true trees,
	-- a few libraries glibc opens itself), through a hard-linked copy in
	-- the run directory that the guest binds over those directories,
	-- also where a share contains one (all of /usr/lib), which is shared
	-- as it is. "minimal" and "ldd" mean "sparse".
	ld_closure_libs = "full",

	-- With "sparse": libraries to add to the closure, with what they
	-- need, for what a program opens itself (dlopen, ctypes): names as
	-- the loader takes them ("libbz2.so.1.0") or absolute host paths.
	ld_closure_extra = {},

	-- The guest's network:
	--   "none"        no network card at all
	--   "restricted"  the guest reaches nothing; ports are still forwarded in
	--   "allowlist"   only what network_allow and network_rules allow
	--   "open"        everything, the host's own 127.0.0.1 included (SLIRP
	--                 shows it as 10.0.2.2): needs network_open_ack = true
	network = "restricted",

	-- With network = "allowlist": "HOST[:PORT]" rules. HOST is a name
	-- ("deb.debian.org", "*.pypi.org" for the names under it), an address
	-- or a network ("192.0.2.7", "10.0.0.0/8", "[2001:db8::/32]"); PORT a
	-- port or a range ("443", "8000-8099"), any port if left out.
	network_allow = {},

	-- true accepts what network = "open" means for the host's services.
	network_open_ack = false,

	-- Guest ports forwarded from the host: a guest port (8080) or
	-- { guest = 8080, host = 18080, address = "127.0.0.1" }; host = 0 (the
	-- default) takes any free port.
	ports = {},

	-- Plain TCP destinations on the host's side (a database, a cache),
	-- with network = "restricted" or "allowlist": the guest reaches each at
	-- an address of its own network, and by name when one is given:
	--   network_tcp = {
	--     { host = "127.0.0.1", port = 5432, name = "db" },  -- db:5432
	--     { host = "cache.lan", port = 6379, name = "cache", guest_port = 80 },
	--   },
	-- host (a name or an address) and port are required; guest_port is
	-- port unless given. At most 100; a map is its own permission, with
	-- no network_allow rule.
	network_tcp = {},

	-- The seed's socket rules, "ACTION|TCP|HOST|PORTS|DIRECTION", compiled
	-- into network_allow and ports when the profile is loaded (qsup
	-- profile show lists what each became):
	--   "ALLOW|TCP|deb.debian.org|80,443|OUT"  network_allow rules, one
	--                                          per port or range; needs
	--                                          network = "allowlist"
	--   "DENY|TCP|*.internal.example|*|OUT"    refused, whatever allows it
	--   "ALLOW|TCP|127.0.0.1|8000-8010|IN"     guest ports 8000 to 8010
	--                                          forwarded from free host ports
	-- HOST is what network_allow takes, or * (any: for DENY and IN only);
	-- PORTS a comma list of ports and ranges, or * (any: OUT only). ALLOW
	-- and DENY, TCP, OUT and IN in any case. Inbound ports listen on
	-- 127.0.0.1, never beyond loopback unless HOST names an address to
	-- listen on; a range forwards at most 64 ports. UDP is refused: qsup
	-- answers DNS itself, and no other UDP leaves the guest. DENY ... IN is
	-- refused too: nothing comes in unless an ALLOW ... IN rule says so.
	network_rules = {},

	-- The guest loads a firewall of its own as well (the seed's way), built
	-- from the mode: out only to qsup's DNS, proxy and TCP maps, in only to
	-- forwarded ports. Defence in depth only: the policy above is enforced
	-- on the host whatever the guest does. Needs iptables-nft-restore,
	-- iptables-legacy-restore or iptables-restore on the command PATH and
	-- netfilter in the guest's kernel, which the default guest does not
	-- have; asked for and not loaded, the sandbox does not start.
	guest_firewall = false,

	-- A virtual screen (virtio-gpu), keyboard and tablet: "vnc" serves it
	-- through QEMU's VNC server on a unix socket in the run directory only
	-- (never TCP), and qsup serve's screenshot, input and display routes.
	-- The guest loads its display modules only then.
	display = "none",
	display_size = "1024x768",

	-- Raw QEMU flags, for devices qsup knows nothing of:
	--   extra_args = { "-device", "virtio-rng-device" },
	-- Flags that weaken isolation or that qsup manages are refused:
	-- -fsdev, -virtfs, -drive/-blockdev on /dev/..., -chardev reaching the
	-- host (spawn, file, socket, ...), -runas, -monitor, -qmp, -pidfile,
	-- -daemonize, -sandbox, -netdev, -m, -smp, ... A fixed list, not a
	-- proof that the rest is safe: review extra_args like code.
	extra_args = {},
}
