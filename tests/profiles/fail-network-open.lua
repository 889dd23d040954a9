-- "open" reaches the host's own 127.0.0.1: it must be acknowledged.
return {
	network = "open",
}
