/*
 * HTTP/1.1 request parsing: pure functions over bytes, no I/O, so the
 * connection code in agent_port.c stays a state machine and these can be
 * fed anything. Limits are enforced by the caller (head size) and here
 * (line lengths, chunk sizes).
 */
#include <string.h>
#include <strings.h>

#include "agent.h"

#define HTTP_LINE_MAX	1024	/* chunk-size and trailer lines */

enum {
	CH_SIZE = 0,
	CH_EXT,
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER,
	CH_TRAILER_LINE,
	CH_TRAILER_LF
};

/*
 * Length of the head (request line, headers, blank line) at buf, or 0 when
 * the blank line has not arrived. Bare LF line ends are accepted too.
 */
size_t
http_head_end(const char *buf, size_t len)
{
	const char	*p = buf, *end = buf + len;

	while ((p = memchr(p, '\n', end - p)) != NULL) {
		if (end - p >= 2 && p[1] == '\n')
			return (p + 2 - buf);
		if (end - p >= 3 && p[1] == '\r' && p[2] == '\n')
			return (p + 3 - buf);
		p++;
	}
	return (0);
}

static int
http_tchar(int c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return (1);
	return (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* The next line of [*p, end) without its line end, or -1 at the end. */
static int
http_line(const char **p, const char *end, const char **line, size_t *len)
{
	const char	*nl;

	if (*p >= end)
		return (-1);
	if ((nl = memchr(*p, '\n', end - *p)) == NULL)
		nl = end;
	*line = *p;
	*len = nl - *p;
	if (*len > 0 && (*p)[*len - 1] == '\r')
		(*len)--;
	*p = nl < end ? nl + 1 : end;
	return (0);
}

static int
http_header_is(const char *name, size_t len, const char *want)
{
	return (strlen(want) == len && strncasecmp(name, want, len) == 0);
}

/*
 * Parse a complete head. On error, *status is the code to answer and
 * *cause a static reason.
 */
int
http_parse_head(const char *head, size_t len, struct http_request *req,
    int *status, const char **cause)
{
	const char	*p = head, *end = head + len, *line, *sp, *name;
	const char	*val, *q;
	size_t		 llen, nlen, vlen, n, i;
	long long	 cl;

	memset(req, 0, sizeof *req);
	req->content_length = -1;
	*status = 400;

	if (http_line(&p, end, &line, &llen) == -1 || llen == 0) {
		*cause = "empty request line";
		return (-1);
	}
	/* METHOD SP TARGET SP HTTP/1.x */
	for (n = 0; n < llen && line[n] >= 'A' && line[n] <= 'Z'; n++)
		;
	if (n == 0 || n >= sizeof req->method || n == llen || line[n] != ' ') {
		*cause = "bad request line";
		return (-1);
	}
	memcpy(req->method, line, n);
	req->method[n] = '\0';
	line += n + 1;
	llen -= n + 1;
	if ((sp = memchr(line, ' ', llen)) == NULL || line[0] != '/') {
		*cause = "bad request line";
		return (-1);
	}
	n = sp - line;
	for (i = 0; i < n; i++) {
		if ((unsigned char)line[i] <= 0x20 ||
		    (unsigned char)line[i] >= 0x7f) {
			*cause = "bad request target";
			return (-1);
		}
	}
	if ((q = memchr(line, '?', n)) != NULL)
		n = q - line;
	if (n >= sizeof req->path) {
		*status = 414;
		*cause = "request target too long";
		return (-1);
	}
	memcpy(req->path, line, n);
	req->path[n] = '\0';
	/* The version is the rest of the first line. */
	val = sp + 1;
	vlen = (line + llen) - val;
	if (vlen != 8 || memcmp(val, "HTTP/1.", 7) != 0 ||
	    (val[7] != '0' && val[7] != '1')) {
		*cause = "bad HTTP version";
		if (vlen == 8 && memcmp(val, "HTTP/", 5) == 0)
			*status = 505;
		return (-1);
	}
	req->minor = val[7] - '0';

	while (http_line(&p, end, &line, &llen) == 0 && llen > 0) {
		if (line[0] == ' ' || line[0] == '\t') {
			*cause = "folded header line";
			return (-1);
		}
		for (nlen = 0; nlen < llen && http_tchar(line[nlen]); nlen++)
			;
		if (nlen == 0 || nlen == llen || line[nlen] != ':') {
			*cause = "bad header line";
			return (-1);
		}
		name = line;
		val = line + nlen + 1;
		vlen = llen - nlen - 1;
		while (vlen > 0 && (*val == ' ' || *val == '\t')) {
			val++;
			vlen--;
		}
		while (vlen > 0 && (val[vlen - 1] == ' ' ||
		    val[vlen - 1] == '\t'))
			vlen--;
		for (i = 0; i < vlen; i++) {
			if (((unsigned char)val[i] < 0x20 && val[i] != '\t') ||
			    val[i] == 0x7f) {
				*cause = "control character in header";
				return (-1);
			}
		}
		if (http_header_is(name, nlen, "Authorization")) {
			if (req->has_auth) {
				*cause = "more than one Authorization";
				return (-1);
			}
			if (vlen >= sizeof req->auth) {
				*status = 431;
				*cause = "Authorization too long";
				return (-1);
			}
			memcpy(req->auth, val, vlen);
			req->auth[vlen] = '\0';
			req->has_auth = 1;
		} else if (http_header_is(name, nlen, "Content-Length")) {
			if (vlen == 0 || vlen > 15) {
				*cause = "bad Content-Length";
				return (-1);
			}
			for (cl = 0, i = 0; i < vlen; i++) {
				if (val[i] < '0' || val[i] > '9') {
					*cause = "bad Content-Length";
					return (-1);
				}
				cl = cl * 10 + (val[i] - '0');
			}
			if (req->content_length != -1 &&
			    req->content_length != cl) {
				*cause = "conflicting Content-Length";
				return (-1);
			}
			req->content_length = cl;
		} else if (http_header_is(name, nlen, "Transfer-Encoding")) {
			if (vlen != 7 || strncasecmp(val, "chunked", 7) != 0 ||
			    req->chunked) {
				*status = 501;
				*cause = "unsupported Transfer-Encoding";
				return (-1);
			}
			req->chunked = 1;
		} else if (http_header_is(name, nlen, "Expect")) {
			if (vlen == 12 && strncasecmp(val, "100-continue",
			    12) == 0)
				req->expect_continue = 1;
		}
	}
	if (req->chunked && req->content_length != -1) {
		*cause = "both Content-Length and Transfer-Encoding";
		return (-1);
	}
	return (0);
}

/*
 * Consume chunked-body bytes from buf; data goes to out (NULL: dropped)
 * until it holds max bytes, after which *too_big is set and the rest is
 * dropped. Returns the bytes consumed, *done at the body's end, -1 when
 * the framing is broken.
 */
ssize_t
http_chunked_feed(struct http_chunked *c, const char *buf, size_t len,
    struct abuf *out, size_t max, int *done, int *too_big)
{
	size_t	i = 0, n, room;
	int	ch, d;

	*done = 0;
	while (i < len) {
		ch = (unsigned char)buf[i];
		switch (c->state) {
		case CH_SIZE:
			if (ch >= '0' && ch <= '9')
				d = ch - '0';
			else if (ch >= 'a' && ch <= 'f')
				d = ch - 'a' + 10;
			else if (ch >= 'A' && ch <= 'F')
				d = ch - 'A' + 10;
			else
				d = -1;
			if (d != -1) {
				if (c->left > ((uint64_t)1 << 40))
					return (-1);
				c->left = c->left * 16 + d;
				c->line++;
			} else if (c->line == 0)
				return (-1);
			else if (ch == ';' || ch == ' ' || ch == '\t')
				c->state = CH_EXT;
			else if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (ch == '\n')
				goto size_done;
			else
				return (-1);
			i++;
			break;
		case CH_EXT:
			if (++c->line > HTTP_LINE_MAX)
				return (-1);
			i++;
			if (ch == '\n')
				goto size_done;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return (-1);
			i++;
size_done:
			c->line = 0;
			c->state = c->left == 0 ? CH_TRAILER : CH_DATA;
			break;
		case CH_DATA:
			n = len - i;
			if (n > c->left)
				n = c->left;
			if (out != NULL) {
				room = out->len >= max ? 0 : max - out->len;
				if (n > room)
					*too_big = 1;
				abuf_add(out, buf + i, n < room ? n : room);
			}
			i += n;
			c->left -= n;
			if (c->left == 0)
				c->state = CH_DATA_CR;
			break;
		case CH_DATA_CR:
			i++;
			if (ch == '\r')
				c->state = CH_DATA_LF;
			else if (ch == '\n')
				c->state = CH_SIZE;
			else
				return (-1);
			break;
		case CH_DATA_LF:
			i++;
			if (ch != '\n')
				return (-1);
			c->state = CH_SIZE;
			break;
		case CH_TRAILER:
			i++;
			if (ch == '\n') {
				*done = 1;
				return (i);
			}
			c->state = ch == '\r' ? CH_TRAILER_LF : CH_TRAILER_LINE;
			c->line = 1;
			break;
		case CH_TRAILER_LF:
			i++;
			if (ch != '\n')
				return (-1);
			*done = 1;
			return (i);
		case CH_TRAILER_LINE:
			i++;
			if (++c->line > HTTP_LINE_MAX)
				return (-1);
			if (ch == '\n')
				c->state = CH_TRAILER;
			break;
		default:
			return (-1);
		}
	}
	return (i);
}

const char *
http_reason(int status)
{
	switch (status) {
	case 100:
		return ("Continue");
	case 200:
		return ("OK");
	case 204:
		return ("No Content");
	case 400:
		return ("Bad Request");
	case 401:
		return ("Unauthorized");
	case 404:
		return ("Not Found");
	case 405:
		return ("Method Not Allowed");
	case 409:
		return ("Conflict");
	case 413:
		return ("Content Too Large");
	case 414:
		return ("URI Too Long");
	case 431:
		return ("Request Header Fields Too Large");
	case 500:
		return ("Internal Server Error");
	case 501:
		return ("Not Implemented");
	case 503:
		return ("Service Unavailable");
	case 505:
		return ("HTTP Version Not Supported");
	}
	return ("Unknown");
}

/*
 * Compare a bearer token with the expected one in time that depends only
 * on the expected token's length, not on where the first difference is.
 */
int
http_token_equal(const char *want, const char *got)
{
	size_t			wl = strlen(want), gl = strlen(got), i;
	volatile unsigned	diff;

	diff = wl != gl;
	for (i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^
		    (unsigned char)(i < gl ? got[i] : 0);
	return (diff == 0);
}
