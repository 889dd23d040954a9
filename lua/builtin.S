/* Profiles compiled into the binary, each NUL-terminated. */
	.section .rodata
	.global builtin_profile_default
builtin_profile_default:
	.incbin "profiles/default.lua"
	.byte 0
	.section .note.GNU-stack,"",@progbits
