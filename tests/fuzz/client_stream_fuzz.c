/*
 * The serve API client's reading of an exec's event stream
 * (client_stream_feed in core/cmd/client.c): bytes from a server, which
 * may be any server at all (--host). The first byte sets the size of the
 * pieces the rest arrives in; no input may crash it, make it collect more
 * than its bound, or end without a status and, for 125, a reason.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct client_stream	 s;
	const char		*p = (const char *)data;
	char			*cause = NULL;
	size_t			 piece, off, n;
	ssize_t			 used;
	int			 st;

	if (size == 0)
		return (0);
	piece = (size_t)data[0] + 1;
	p++;
	size--;
	client_stream_init(&s, -1, -1, 4096);
	for (off = 0; off < size; off += n) {
		n = size - off < piece ? size - off : piece;
		if ((used = client_stream_feed(&s, p + off, n)) == -1) {
			if (s.cause == NULL)
				abort();
			break;
		}
		if ((size_t)used != n && s.exit == NULL)
			abort();
	}
	if (s.out[0].len > 4096 || s.out[1].len > 4096)
		abort();
	st = client_stream_status(&s, &cause);
	if (st < 0 || st > 255 || (st == QSUP_EXIT_ERROR && cause == NULL &&
	    s.exit == NULL))
		abort();
	free(cause);
	client_stream_free(&s);
	return (0);
}
