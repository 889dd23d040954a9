return {
	image = "debian-12",
	image_sha256 = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	image_unverified = "yes",
	disk_size = "10GB",
	image_max_size = "512k",
}
