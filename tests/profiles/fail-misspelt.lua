return {
	cpus = 2,
	memroy = "2G",
}
