-- The seed's qemu.<key> lines, written as Lua, and its legacy alias.
return {
	["qemu.memory"] = "2G",
	["qemu.use_kvm"] = true,
	virtfs_stage = "on",
	kvm = false,
}
