/*
 * The wire layer (core/wire), driven the way each of its users drives it.
 * The first byte of an input picks the role, the second the size of the
 * pieces the rest arrives in:
 *   0  the agent: a request head, whole, then a lenient chunked body
 *   1  qsup's agent client: a response head a line at a time, then a
 *      strict chunked body whose data is read as an event stream
 *   2  the allowlist proxy: a request head, found and cut into its
 *      request line and fields
 * Whatever the bytes, nothing crashes, nothing leaks, and what comes out
 * keeps the bounds the protocol sets (wire.h).
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

static size_t	 fuzz_seen;

/* Read every byte handed over, for ASan to see. */
static void
fuzz_touch(const char *p, size_t len)
{
	while (len-- > 0)
		fuzz_seen += p[len] == '\0';
}

/*
 * A chunked body arriving piece bytes at a time, fed as a connection
 * feeds it; its data goes to the event-stream reader if there is one.
 */
static void
fuzz_chunked(int strict, const char *p, size_t len, size_t piece,
    struct wire_sse *sse)
{
	struct wire_chunked	 c;
	const char		*data, *why;
	size_t			 have = 0, off = 0, dlen;
	ssize_t			 n, m;
	int			 done = 0, ready;

	wire_chunked_init(&c, strict);
	while (!done) {
		n = wire_chunked_feed(&c, p + off, have - off, &data, &dlen,
		    &done, &why);
		if (n == -1) {
			if (why == NULL || *why == '\0')
				abort();
			return;
		}
		if (n == 0) {
			if (have == len)
				return;
			have = len - have > piece ? have + piece : len;
			continue;
		}
		if ((size_t)n > have - off || dlen > (size_t)n ||
		    (dlen > 0 && data != p + off))
			abort();
		fuzz_touch(data, dlen);
		while (sse != NULL && dlen > 0) {
			if ((m = wire_sse_feed(sse, data, dlen, &ready,
			    &why)) == -1)
				return;
			if ((size_t)m > dlen || (ready &&
			    (strlen(wire_sse_name(sse)) > WIRE_EVENT_NAME_MAX ||
			    sse->data.len > WIRE_EVENT_MAX)))
				abort();
			data += m;
			dlen -= m;
		}
		off += n;
	}
}

/* The agent: wire_head_end, wire_head_parse, then the body. */
static void
fuzz_agent(const char *p, size_t len, size_t piece)
{
	struct wire_head	h;
	size_t			n;

	n = wire_head_end(p, len > WIRE_HEAD_MAX ? WIRE_HEAD_MAX : len);
	if (n > len)
		abort();
	if (n == 0)
		return;
	if (wire_head_parse(&h, WIRE_REQUEST, p, n) == 0) {
		if (h.content_length < -1 || h.path[0] != '/' ||
		    strlen(h.method) == 0 || (h.chunked &&
		    h.content_length != -1))
			abort();
	} else if (h.cause == NULL || h.error < 400 || h.error > 505)
		abort();
	fuzz_chunked(0, p + n, len - n, piece, NULL);
}

/* qsup's client: lines of a response head, then its body's events. */
static void
fuzz_client(const char *p, size_t len, size_t piece)
{
	struct wire_head	 h;
	struct wire_sse		 sse;
	const char		*nl, *end = p + len;
	size_t			 llen, head = 0;
	int			 rc = 0;

	wire_head_init(&h, WIRE_RESPONSE);
	while (rc == 0 && (nl = memchr(p, '\n', end - p)) != NULL) {
		head += nl - p + 1;
		if (head > WIRE_HEAD_MAX)
			return;
		llen = nl - p;
		if (llen > 0 && p[llen - 1] == '\r')
			llen--;
		rc = wire_head_line(&h, p, llen);
		p = nl + 1;
	}
	if (rc == -1) {
		if (h.cause == NULL)
			abort();
		return;
	}
	if (rc == 0)
		return;
	if (h.status < 100 || h.status > 599 ||
	    h.content_length > WIRE_BODY_MAX)
		abort();
	memset(&sse, 0, sizeof sse);
	fuzz_chunked(1, p, end - p, piece, h.sse ? &sse : NULL);
	(void)wire_sse_pending(&sse);
	wire_sse_free(&sse);
}

/* The proxy: the head's end, its request line, its fields. */
static void
fuzz_proxy(const char *p, size_t len)
{
	struct wire_request_line	 rl;
	struct wire_field		 f;
	const char			*q, *end, *line;
	size_t				 n, llen;
	int				 first = 1;

	if ((n = wire_head_end(p, len)) == 0)
		return;
	for (q = p, end = p + n; wire_line(&q, end, &line, &llen) == 0;) {
		if (q > end || line + llen > end)
			abort();
		if (first) {
			first = 0;
			if (wire_request_split(line, llen, &rl) == 0 &&
			    (rl.mlen + rl.tlen + rl.vlen + 2 != llen ||
			    rl.version + rl.vlen != line + llen))
				abort();
			(void)wire_token(line, llen);
		} else if (wire_field_split(line, llen, &f) == 0) {
			if (f.nlen == 0 || f.value < f.name + f.nlen ||
			    f.value + f.vlen > line + llen)
				abort();
			fuzz_touch(f.value, f.vlen);
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char	*p = (const char *)data + 2;
	size_t		 piece;

	if (len < 2)
		return (0);
	piece = data[1] == 0 ? 1 : data[1];
	len -= 2;
	switch (data[0] % 3) {
	case 0:
		fuzz_agent(p, len, piece);
		break;
	case 1:
		fuzz_client(p, len, piece);
		break;
	case 2:
		fuzz_proxy(p, len);
		break;
	}
	return (0);
}
