/*
 * staging's reader of glibc's release banner in a libc.so.6, read and
 * never run: a version it finds is a plausible one.
 */
#include <stdlib.h>

#include "cmd.h"
#include "staging.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	int	major = -1, minor = -1;

	if (staging_glibc_banner(data, len, &major, &minor) == 0 &&
	    (major < 0 || minor < 0))
		abort();
	return (0);
}
