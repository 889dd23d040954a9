-- network_tcp: maps of guest ports to host destinations.
return {
	network_tcp = {
		{ host = "127.0.0.1", port = 5432, name = "db" },
		{ port = 5432 },
		{ host = "127.0.0.1" },
		{ host = "10.0.0.0/8", port = 1 },
		{ host = "*.example.org", port = 70000 },
		{ host = "db.local", port = 3306, name = "127.0.0.1" },
		{ host = "db.local", port = 5433, name = "DB", guest_port = 5432 },
		{ host = "db.local", port = 1, guest_port = 0, nmae = "x" },
		"127.0.0.1:5432",
	},
}
