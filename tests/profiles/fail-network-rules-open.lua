-- With everything open, a DENY would be a promise qsup does not keep.
return {
	network = "open",
	network_open_ack = true,
	network_rules = { "ALLOW|TCP|::1|8000|IN", "DENY|TCP|*|25|OUT" },
}
