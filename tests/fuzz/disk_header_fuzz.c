/*
 * core/vm/disk.c's reading of an image file's header, which comes from
 * anywhere (a download, a user's file): whatever it accepts is raw or a
 * self-contained qcow2 of a plausible size, and every refusal says why.
 */
#include <stdlib.h>
#include <string.h>

#include "vm.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct disk_info	 info;
	char			*cause = NULL;
	uint64_t		 size;

	/* The file's length: the input's, or one the input chooses. */
	size = len;
	if (len > 8 && data[len - 1] == 0xff)
		memcpy(&size, data + len - 9, sizeof size);
	if (disk_parse_header(data, len, size, &info, &cause) == 0) {
		if (cause != NULL || info.format == NULL ||
		    info.virtual_size == 0 || info.virtual_size % 512 != 0)
			abort();
		if (strcmp(info.format, "qcow2") == 0 &&
		    (len < 72 || memcmp(data, "QFI\xfb", 4) != 0 ||
		    data[8] | data[9] | data[10] | data[11] | data[12] |
		    data[13] | data[14] | data[15]))
			abort();
	} else if (cause == NULL || *cause == '\0')
		abort();
	free(cause);
	return (0);
}
