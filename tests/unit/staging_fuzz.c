/*
 * libFuzzer target for staging's parsers of untrusted bytes: ELF headers
 * and dynamic sections, /etc/ld.so.cache, glibc's version banner, an
 * initramfs cpio (for its libc.so.6). The
 * first input byte picks the parser. Not part of `make tests`; run:
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 \
 *	    -D_GNU_SOURCE -Icore -Istaging tests/unit/staging_fuzz.c \
 *	    staging/copy.c staging/elf.c staging/host.c staging/ldd.c \
 *	    core/util.c core/log.c -o build/tests/staging_fuzz
 *	build/tests/staging_fuzz -max_total_time=60 [CORPUS: /bin, /lib...]
 */
#include <stdint.h>
#include <stdlib.h>

#include "qsup.h"
#include "staging.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int
fuzz_accept(const char *path, void *arg)
{
	(void)path;
	return (arg != NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct staging_elf	 e;
	char			*why = NULL, *where = NULL;
	int			 major, minor;

	if (len == 0)
		return (0);
	switch (data[0] % 4) {
	case 0:
		if (staging_elf_parse(data + 1, len - 1, &e, &why) == 0)
			staging_elf_free(&e);
		free(why);
		break;
	case 1:
		staging_ldcache_lookup(data + 1, len - 1, "libc.so.6",
		    fuzz_accept, &e);
		break;
	case 2:
		staging_glibc_banner(data + 1, len - 1, &major, &minor);
		break;
	case 3:
		staging_cpio_glibc(data + 1, len - 1, &major, &minor, &where);
		free(where);
		break;
	}
	return (0);
}
