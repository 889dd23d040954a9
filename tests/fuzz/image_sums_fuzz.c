/*
 * core/image's reader of SHA256SUMS/SHA512SUMS files, which come from the
 * network: any bytes, looked up for a few names. A digest it returns is
 * 64 or 128 lowercase hex digits.
 */
#include <stdlib.h>
#include <string.h>

#include "image.h"

static void
image_sums_fuzz_one(const uint8_t *data, size_t len, const char *name)
{
	char	*hex;
	size_t	 i, n;

	if ((hex = image_sums_find((const char *)data, len, name)) == NULL)
		return;
	n = strlen(hex);
	if (n != 64 && n != 128)
		abort();
	for (i = 0; i < n; i++) {
		if (!((hex[i] >= '0' && hex[i] <= '9') ||
		    (hex[i] >= 'a' && hex[i] <= 'f')))
			abort();
	}
	free(hex);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	image_sums_fuzz_one(data, len, "disk.img");
	image_sums_fuzz_one(data, len, "debian-12-genericcloud-amd64.qcow2");
	image_sums_fuzz_one(data, len, "noble-server-cloudimg-amd64.img");
	return (0);
}
