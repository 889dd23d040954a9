-- network_rules that the default network ("restricted") would not carry
-- out: ALLOW ... OUT needs "allowlist". A DENY alone is fine there.
return {
	network_rules = {
		"DENY|TCP|*.internal.example|*|OUT",
		"ALLOW|TCP|deb.debian.org|80,443|OUT",
	},
}
