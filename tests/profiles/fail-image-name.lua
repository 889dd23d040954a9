return {
	image = "debian 12",
}
