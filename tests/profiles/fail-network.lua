return {
	network = "allowlist",
	network_allow = {
		"deb.debian.org:443",
		"*.pypi.org:99999",
		"10.0.0.1/8",
		"foo*.example.org",
		"[2001:db8::1",
		"0.0.0.0/0",
		"example.org:http",
		"",
		"10.1.0.0/16:8000-8099",
		"[2001:db8::/32]:443",
	},
}
