return {
	image = "ftp://example.org/disk.img",
	image_base_url = "example.org/images",
	images_dir = "files/vmlinuz",
}
