return {
	memory = "2GB",
	use_kvm = true,
	cpus = 0,
}
