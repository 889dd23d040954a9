/*
 * staging's reader of an initramfs cpio (the guest's, or one a profile
 * names), looking for its libc.so.6 and glibc's version in it.
 */
#include <stdlib.h>

#include "cmd.h"
#include "staging.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char	*where = NULL;
	int	 major = -1, minor = -1;

	(void)staging_cpio_glibc(data, len, &major, &minor, &where);
	free(where);
	return (0);
}
