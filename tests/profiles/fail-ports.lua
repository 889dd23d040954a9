return {
	ports = {
		8080,
		0,
		{ guest = 80, host = 70000 },
		{ guest = 22, address = "localhost" },
		{ guest = 81, host = 8080 },
		{ guest = 82, host = 8080 },
		{ gest = 1 },
		"8000",
	},
}
