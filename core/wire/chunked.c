/*
 * The one chunked transfer-coding codec. The decoder is incremental and
 * copies nothing: each call takes one line or one run of data from what
 * has arrived, and says how much it used, so a connection keeps its own
 * input buffer and hands the data wherever it goes. Lenient, it takes
 * HTTP/1.1 as a server should (chunk extensions, trailers, bare LF), the
 * way the agent reads qsup; strict, it takes only what the protocol allows
 * (wire.h: bare hex sizes up to WIRE_BODY_MAX, no trailers, no NUL), the
 * way qsup reads the agent.
 */
#include <stdio.h>
#include <string.h>

#include "wire.h"

enum {
	WIRE_CH_SIZE = 0,	/* a chunk-size line */
	WIRE_CH_DATA,
	WIRE_CH_DATA_END,	/* the line end after a chunk's data */
	WIRE_CH_TRAILER,	/* after the last chunk, up to a blank line */
	WIRE_CH_DONE
};

void
wire_chunked_init(struct wire_chunked *c, int strict)
{
	memset(c, 0, sizeof *c);
	c->strict = strict;
}

static int
wire_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	if (ch >= 'a' && ch <= 'f')
		return (ch - 'a' + 10);
	if (ch >= 'A' && ch <= 'F')
		return (ch - 'A' + 10);
	return (-1);
}

/* A chunk-size line, without its line end: the size into c->left. */
static int
wire_chunk_size(struct wire_chunked *c, const char *line, size_t len)
{
	size_t	i;
	int	d;

	c->left = 0;
	for (i = 0; i < len && (d = wire_hex((unsigned char)line[i])) != -1;
	    i++) {
		if (c->left > ((uint64_t)1 << 40))
			return (-1);
		c->left = c->left * 16 + d;
	}
	if (i == 0)
		return (-1);
	if (c->strict)
		return (i == len && i <= 8 && c->left <= WIRE_BODY_MAX ? 0 :
		    -1);
	/* Whatever extensions follow are skipped. */
	if (i < len && line[i] != ';' && line[i] != ' ' && line[i] != '\t')
		return (-1);
	return (0);
}

/*
 * Take from buf[0, len): returns the bytes used (0: more are needed), or
 * -1 when the framing is broken (*cause, static, says how). Data used is
 * in *data and *dlen (0 when none); *done once the body has ended.
 */
ssize_t
wire_chunked_feed(struct wire_chunked *c, const char *buf, size_t len,
    const char **data, size_t *dlen, int *done, const char **cause)
{
	const char	*nl;
	size_t		 max, used, llen;

	*data = NULL;
	*dlen = 0;
	*done = c->state == WIRE_CH_DONE;
	if (len == 0 || *done)
		return (0);
	if (c->state == WIRE_CH_DATA) {
		*data = buf;
		*dlen = len < c->left ? len : c->left;
		c->left -= *dlen;
		if (c->left == 0)
			c->state = WIRE_CH_DATA_END;
		return (*dlen);
	}
	max = c->strict ? WIRE_HEAD_MAX : WIRE_LINE_MAX;
	if ((nl = memchr(buf, '\n', len)) == NULL && len <= max)
		return (0);
	if (nl == NULL || (used = nl - buf + 1) > max) {
		*cause = c->strict ? "a head or chunk line over "
		    WIRE_STR(WIRE_HEAD_MAX) " bytes" : "a chunk line too long";
		return (-1);
	}
	llen = used - 1;
	if (llen > 0 && buf[llen - 1] == '\r')
		llen--;
	if (c->strict && memchr(buf, '\0', llen) != NULL) {
		*cause = "a NUL byte in the head";
		return (-1);
	}
	switch (c->state) {
	case WIRE_CH_SIZE:
		if (wire_chunk_size(c, buf, llen) == -1) {
			*cause = "a bad chunk size";
			return (-1);
		}
		c->state = c->left == 0 ? WIRE_CH_TRAILER : WIRE_CH_DATA;
		break;
	case WIRE_CH_DATA_END:
		if (llen != 0) {
			*cause = "a chunk longer than its size";
			return (-1);
		}
		c->state = WIRE_CH_SIZE;
		break;
	case WIRE_CH_TRAILER:
		if (llen == 0) {
			c->state = WIRE_CH_DONE;
			*done = 1;
		} else if (c->strict) {
			/* The agent sends no trailers. */
			*cause = "a trailer after the last chunk";
			return (-1);
		}
		break;
	}
	return (used);
}

/* The line that opens a chunk of n bytes (n > 0). */
void
wire_chunk_start(wire_put_cb *put, void *arg, size_t n)
{
	char	line[32];
	int	len;

	len = snprintf(line, sizeof line, "%zx\r\n", n);
	put(arg, line, len);
}

/* What closes a chunk's data. */
void
wire_chunk_end(wire_put_cb *put, void *arg)
{
	put(arg, "\r\n", 2);
}

/* The last chunk, without trailers: the body ends. */
void
wire_chunk_last(wire_put_cb *put, void *arg)
{
	put(arg, "0\r\n\r\n", 5);
}
