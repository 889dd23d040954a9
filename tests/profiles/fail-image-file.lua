return {
	image = "./no-such-disk.qcow2",
}
