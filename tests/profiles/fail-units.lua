-- Wrong units, quoted values, near-miss choices: each message says what
-- to write instead.
return {
	memory = "2GB",
	start_timeout = "60",
	timeout = "30s",
	show_boot_console = "yes",
	use_kvm = "on",
	virtfs = "ON",
	virtfs_security_model = "mapped_xattr",
	ld_closure_libs = "spares",
	cpus = "2",
}
