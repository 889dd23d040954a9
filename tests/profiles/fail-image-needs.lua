-- A digest with nothing to download, a disk for a guest without one.
return {
	image_sha256 = string.rep("0", 64),
	disk_size = "10G",
}
