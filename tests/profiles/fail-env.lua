return {
	env = {
		"LANG=C",
		"no equals sign",
		"1ST=x",
		LANG = "C.UTF-8",
		["BAD-NAME"] = "x",
		FLAG = true,
	},
}
