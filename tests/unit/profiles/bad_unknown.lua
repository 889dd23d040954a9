return {
	network = "none",
	"a list item",
}
