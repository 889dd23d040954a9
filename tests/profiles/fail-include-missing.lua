return extend("include/no-such-base", {})
