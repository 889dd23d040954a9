-- The other form: a call instead of a returned table.
sandbox {
	memory = "1G",
	cpus = 2,
}
