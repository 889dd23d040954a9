-- A base other profiles of this tree build on.
return {
	memory = "1G",
	cpus = 2,
	env = { LANG = "C.UTF-8" },
	network = "none",
}
