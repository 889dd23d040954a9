/*
 * The agent's HTTP reader, fed what qsup (or guest root holding the
 * port) writes: a request head, then the rest as a chunked body in small
 * pieces. A parsed head has a path and a sane length; a body never holds
 * more than its bound.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char		*p = (const char *)data, *cause;
	struct http_request	 req;
	struct http_chunked	 ch;
	struct abuf		 out = { 0 };
	size_t			 head, off;
	ssize_t			 n;
	int			 status, done = 0, too_big = 0;

	head = http_head_end(p, len);
	if (head > len)
		abort();
	if (head > 0 && http_parse_head(p, head, &req, &status, &cause) == 0) {
		if (req.content_length < -1 || req.path[0] != '/')
			abort();
		(void)http_token_equal("token", req.auth);
	}
	memset(&ch, 0, sizeof ch);
	for (off = head; off < len && !done; off += n) {
		n = http_chunked_feed(&ch, p + off, len - off < 7 ? len - off :
		    7, &out, 4096, &done, &too_big);
		if (n <= 0)
			break;
	}
	if (out.len > 4096)
		abort();
	abuf_free(&out);
	return (0);
}
