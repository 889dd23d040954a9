/* Profiles compiled into the binary, each NUL-terminated. */
	.section .rodata

	.global builtin_profile_default
builtin_profile_default:
	.incbin "profiles/default.lua"
	.byte 0

	.global builtin_profile_ci
builtin_profile_ci:
	.incbin "profiles/ci.lua"
	.byte 0

	.global builtin_profile_dev
builtin_profile_dev:
	.incbin "profiles/dev.lua"
	.byte 0

	.global builtin_profile_python
builtin_profile_python:
	.incbin "profiles/python.lua"
	.byte 0

	.global builtin_profile_nested_container
builtin_profile_nested_container:
	.incbin "profiles/nested-container.lua"
	.byte 0

	/* Not a profile: the image catalog, qsup.images (profile_image.c). */
	.global builtin_catalog
builtin_catalog:
	.incbin "lua/catalog.lua"
	.byte 0

	.section .note.GNU-stack,"",@progbits
