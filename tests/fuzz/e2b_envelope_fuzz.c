/*
 * --e2b's Connect envelopes (core/serve/serve_e2b_wire.c), any bytes:
 * a client's body read envelope after envelope, as a Start's is; each
 * one taken must lie within the input and within E2B_MSG_MAX, and its
 * frame written back must read the same.
 */
#include <stdlib.h>
#include <string.h>

#include "serve_e2b.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char	*p = (const char *)data, *msg, *msg2, *why;
	struct buf	 b = { 0 };
	size_t		 left = len, mlen, mlen2;
	ssize_t		 n;
	int		 flags, flags2;

	while ((n = e2b_envelope(p, left, &flags, &msg, &mlen, &why)) > 0) {
		if ((size_t)n > left || mlen > E2B_MSG_MAX ||
		    (size_t)n != mlen + 5 || msg != p + 5)
			abort();
		b.len = 0;
		e2b_frame(&b, flags, msg, mlen);
		if (e2b_envelope(b.data, b.len, &flags2, &msg2, &mlen2,
		    &why) != n || flags2 != flags || mlen2 != mlen ||
		    memcmp(msg, msg2, mlen) != 0)
			abort();
		p += n;
		left -= n;
	}
	if (n == -1 && why == NULL)
		abort();
	buf_free(&b);
	return (0);
}
