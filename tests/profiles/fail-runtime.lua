local sizes = { small = "512M" }
return {
	memory = sizes.small:upper() .. nosuch.field,
}
