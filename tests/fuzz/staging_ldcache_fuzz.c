/*
 * staging's reader of /etc/ld.so.cache (both formats), looking a library
 * up in it; every name it offers is a C string.
 */
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "staging.h"

static int
fuzz_accept(const char *path, void *arg)
{
	size_t	*total = arg;

	*total += strlen(path);
	return (path[0] == '/');
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	size_t	total = 0;

	(void)staging_ldcache_lookup(data, len, "libc.so.6", fuzz_accept,
	    &total);
	return (0);
}
