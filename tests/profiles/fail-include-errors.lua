-- Mistakes in an included profile are reported at its own lines.
return extend("include/bad-base.lua", {
	cpus = 0,
	memroy = "1G",
})
