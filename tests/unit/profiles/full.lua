-- Every setting, none at its default.
return {
	use_kvm = false,
	memory = "2G",
	cpus = 4,
	start_timeout = 90.5,
	show_boot_console = true,
	kernel = "files/vmlinuz",
	initramfs = "files/initrd.img",
	env = { "LANG=C.UTF-8", "EQ=a=b", TZ = "UTC", N = 42 },
	cwd = "/work",
}
