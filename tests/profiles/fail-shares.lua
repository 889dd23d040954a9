return {
	shares = {
		{ host = "files", guest = "/data", mode = "rx" },
		{ host = "no-such-dir" },
		{ hots = "files" },
		{ host = "files/vmlinuz", guest = "data" },
		{ host = "files/share", guest = "/share" },
		{ host = "files", guest = "/share/./" },
		{ host = "files", guest = "/proc/x", ignore = { "[abc", "../up", 3 } },
		{ host = "no-such-tree", guest = "/cow", mode = "cow" },
		{ host = "no-such-out", guest = "/out", create = true },
		{ host = "files", guest = "/out2", mode = "rw", create = "yes" },
		"files",
	},
}
