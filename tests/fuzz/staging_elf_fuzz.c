/*
 * staging's ELF reader: headers, program headers and the dynamic section
 * of a host binary or library (any file a share may hold). What it gives
 * back is freed whatever it says.
 */
#include <stdlib.h>

#include "cmd.h"
#include "staging.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct staging_elf	 e;
	char			*why = NULL;

	if (staging_elf_parse(data, len, &e, &why) == 0)
		staging_elf_free(&e);
	else if (why == NULL)
		abort();
	free(why);
	return (0);
}
