return {
	sound = "none",
	"a list item",
}
