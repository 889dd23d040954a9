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
		"files",
	},
}
