-- One mistake per setting.
return {
	use_kvm = "yes",
	memory = "1.3G",
	cpus = 2.5,
	start_timeout = -1,
	show_boot_console = "true",
	kernel = "files/missing",
	initramfs = "files",
	env = "A=1",
	cwd = "work",
}
