-- ld_closure_extra takes library names as the loader does, or absolute
-- paths; a relative path, a blank or a non-string is refused.
return {
	ld_closure_libs = "sparse",
	ld_closure_extra = {
		"libbz2.so.1.0",
		"lib/libfoo.so.1",
		"libfoo .so",
		"",
		42,
		"/usr/lib/x86_64-linux-gnu/libz.so.1",
	},
}
