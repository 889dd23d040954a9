-- Built on include/base.lua, with two changes.
return extend("include/base", {
	cpus = 3,
	timeout = 60,
})
