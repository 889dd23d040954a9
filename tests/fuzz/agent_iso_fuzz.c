/*
 * The agent's ISO 9660 reader of the seed disk. The input is laid out from
 * sector 16, the primary volume descriptor, onward; what it finds is
 * NUL-terminated.
 */
#include <sys/mman.h>

#include <stdlib.h>
#include <unistd.h>

#include "agent.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char	*text = NULL, *cause = NULL;
	size_t	 tlen;
	int	 fd;

	if ((fd = memfd_create("iso", MFD_CLOEXEC)) == -1)
		abort();
	if (pwrite(fd, data, len, 16 * 2048) == (ssize_t)len) {
		(void)iso_is_seed(fd);
		if (iso_read_config(fd, &text, &tlen, &cause) == 0 &&
		    (text == NULL || text[tlen] != '\0'))
			abort();
	}
	free(text);
	free(cause);
	close(fd);
	return (0);
}
