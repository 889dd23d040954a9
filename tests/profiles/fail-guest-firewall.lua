-- A guest firewall guards a network card: not with "none", and "open"
-- would make it let everything through.
return {
	network = "none",
	guest_firewall = true,
}
