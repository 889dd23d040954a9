return {
	serve_pool = {
		default = -1,
		ci = 1.5,
		[""] = 1,
		["two words"] = 1,
		big = 65,
		text = "2",
		[3] = 1,
	},
}
