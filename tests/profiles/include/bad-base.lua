-- A base with a mistake of its own.
return {
	memory = "1.3G",
	use_kvm = "auto",
}
