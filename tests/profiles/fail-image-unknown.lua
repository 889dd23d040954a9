return {
	image = "debian-11",
}
