-- Without a network card, no rule can be carried out.
return {
	network = "none",
	network_rules = { "ALLOW|TCP|*|8000-8001|IN", "ALLOW|TCP|a.example|443|OUT" },
}
