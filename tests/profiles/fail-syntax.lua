return {
	memory = "2G"
	cpus = 2,
}
