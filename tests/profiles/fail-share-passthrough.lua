-- passthrough would hand the guest's owners and setuid bits to the host.
return {
	shares = {
		{ host = "/tmp", guest = "/ro" },
		{ host = "/tmp", guest = "/out", mode = "rw" },
	},
	virtfs_security_model = "passthrough",
}
