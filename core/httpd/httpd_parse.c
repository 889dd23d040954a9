/*
 * The request head parser of "qsup serve": pure functions over bytes, so
 * a connection stays a state machine and the fuzz target can feed it
 * anything. It takes HTTP/1.0 and 1.1 as a server should, and refuses
 * what would let two readers of one stream disagree on where a request
 * ends (two lengths, an unknown transfer-coding, folded lines), with the
 * status a client is owed.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpd.h"
#include "httpd_int.h"

/* The strings of a request, laid out one after the other. */
struct httpd_arena {
	char	*p;
};

static int
httpd_hex(int ch)
{
	if (ch >= '0' && ch <= '9')
		return (ch - '0');
	if (ch >= 'a' && ch <= 'f')
		return (ch - 'a' + 10);
	if (ch >= 'A' && ch <= 'F')
		return (ch - 'A' + 10);
	return (-1);
}

/*
 * Percent-decode s[0, len) into out (len + 1 bytes at least, NUL-ended):
 * the decoded length, or -1 for a bad escape or an escaped NUL, which no
 * C string could carry.
 */
ssize_t
httpd_decode(const char *s, size_t len, char *out)
{
	size_t	i, n = 0;
	int	hi, lo;

	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			out[n++] = s[i];
			continue;
		}
		if (len - i < 3 || (hi = httpd_hex((unsigned char)s[i + 1])) ==
		    -1 || (lo = httpd_hex((unsigned char)s[i + 2])) == -1)
			return (-1);
		if ((out[n++] = (char)(hi * 16 + lo)) == '\0')
			return (-1);
		i += 2;
	}
	out[n] = '\0';
	return (n);
}

static const char *
httpd_arena_copy(struct httpd_arena *a, const char *s, size_t len)
{
	char	*p = a->p;

	memcpy(p, s, len);
	p[len] = '\0';
	a->p += len + 1;
	return (p);
}

/* Refuse: the status to answer and a static reason. */
static int
httpd_refuse(const char **why, int status, const char *reason)
{
	*why = reason;
	return (status);
}

/* "METHOD SP /path?query SP HTTP/1.x" */
static int
httpd_parse_line(const char *line, size_t llen, struct httpd_req *req,
    struct httpd_arena *a, const char **why)
{
	struct wire_request_line	 rl;
	const char			*q;
	size_t				 i, plen;
	ssize_t				 n;
	char				*path;

	if (llen == 0)
		return (httpd_refuse(why, 400, "empty request line"));
	if (wire_request_split(line, llen, &rl) == -1 ||
	    !wire_token(rl.method, rl.mlen) || rl.tlen == 0)
		return (httpd_refuse(why, 400, "bad request line"));
	if (rl.tlen > HTTPD_TARGET_MAX)
		return (httpd_refuse(why, 414, "request target too long"));
	for (i = 0; i < rl.tlen; i++) {
		if ((unsigned char)rl.target[i] <= 0x20 ||
		    (unsigned char)rl.target[i] >= 0x7f)
			return (httpd_refuse(why, 400, "bad request target"));
	}
	if (rl.target[0] != '/')
		return (httpd_refuse(why, 400, "request target is not a path"));
	if (rl.vlen != 8 || memcmp(rl.version, "HTTP/", 5) != 0 ||
	    rl.version[5] < '0' || rl.version[5] > '9' ||
	    rl.version[6] != '.' || rl.version[7] < '0' ||
	    rl.version[7] > '9')
		return (httpd_refuse(why, 400, "bad HTTP version"));
	if (rl.version[5] != '1' || rl.version[7] > '1')
		return (httpd_refuse(why, 505, "HTTP version not supported"));
	req->minor = rl.version[7] - '0';
	req->method = httpd_arena_copy(a, rl.method, rl.mlen);

	plen = rl.tlen;
	if ((q = memchr(rl.target, '?', rl.tlen)) != NULL)
		plen = q - rl.target;
	path = a->p;
	if ((n = httpd_decode(rl.target, plen, path)) == -1)
		return (httpd_refuse(why, 400, "bad percent-encoding in path"));
	a->p += n + 1;
	req->path = path;
	if (q != NULL)
		req->query = httpd_arena_copy(a, q + 1, rl.tlen - plen - 1);
	else
		req->query = httpd_arena_copy(a, "", 0);
	return (0);
}

/* Whether the comma-separated list holds the token want. */
static int
httpd_list_has(const char *s, size_t len, const char *want)
{
	const char	*end = s + len, *e;
	size_t		 n;

	while (s < end) {
		while (s < end && (*s == ' ' || *s == '\t' || *s == ','))
			s++;
		if ((e = memchr(s, ',', end - s)) == NULL)
			e = end;
		n = e - s;
		while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
			n--;
		if (n > 0 && wire_is(s, n, want))
			return (1);
		s = e;
	}
	return (0);
}

/* One header line. */
static int
httpd_parse_field(const char *line, size_t llen, struct httpd_req *req,
    struct httpd_arena *a, const char **why)
{
	struct wire_field	 f;
	const char		*bad;
	long long		 cl;

	if ((bad = wire_field_take(line, llen, &f)) != NULL)
		return (httpd_refuse(why, 400, bad));
	if (wire_is(f.name, f.nlen, "Content-Length")) {
		if (wire_decimal(f.value, f.vlen, 18, &cl) == -1)
			return (httpd_refuse(why, 400, "bad Content-Length"));
		if (req->content_length != -1 && req->content_length != cl)
			return (httpd_refuse(why, 400, "conflicting "
			    "Content-Length"));
		req->content_length = cl;
	} else if (wire_is(f.name, f.nlen, "Transfer-Encoding")) {
		if (!wire_is(f.value, f.vlen, "chunked") || req->chunked)
			return (httpd_refuse(why, 501, "unsupported "
			    "Transfer-Encoding"));
		req->chunked = 1;
	} else if (wire_is(f.name, f.nlen, "Connection")) {
		if (httpd_list_has(f.value, f.vlen, "close"))
			req->keep_alive = 0;
	} else if (wire_is(f.name, f.nlen, "Expect")) {
		if (wire_is(f.value, f.vlen, "100-continue"))
			req->expect_continue = 1;
	} else if (wire_is(f.name, f.nlen, "Content-Type")) {
		if (req->content_type != NULL)
			return (httpd_refuse(why, 400, "more than one "
			    "Content-Type"));
		req->content_type = httpd_arena_copy(a, f.value, f.vlen);
	} else if (wire_is(f.name, f.nlen, "Authorization")) {
		if (req->authorization != NULL)
			return (httpd_refuse(why, 400, "more than one "
			    "Authorization"));
		req->authorization = httpd_arena_copy(a, f.value, f.vlen);
	}
	return (0);
}

/*
 * The head in buf, len bytes, into *req; its strings go to storage (len
 * + 1 bytes at least: each string is a piece of the head, shorter than
 * its line by at least the one byte its NUL takes). 0, or the status to
 * refuse the request with and why.
 */
int
httpd_parse_head(const char *buf, size_t len, struct httpd_req *req,
    char *storage, const char **why)
{
	struct httpd_arena	 a = { storage };
	const char		*p = buf, *end = buf + len, *line;
	size_t			 llen;
	int			 rc, fields = 0;

	memset(req, 0, sizeof *req);
	req->content_length = -1;
	*why = NULL;
	if (memchr(buf, '\0', len) != NULL)
		return (httpd_refuse(why, 400, "NUL byte in the head"));
	if (wire_line(&p, end, &line, &llen) == -1)
		return (httpd_refuse(why, 400, "empty request line"));
	if ((rc = httpd_parse_line(line, llen, req, &a, why)) != 0)
		return (rc);
	req->keep_alive = req->minor >= 1;
	while (wire_line(&p, end, &line, &llen) == 0 && llen > 0) {
		if (++fields > HTTPD_FIELDS_MAX)
			return (httpd_refuse(why, 431, "too many header "
			    "fields"));
		if ((rc = httpd_parse_field(line, llen, req, &a, why)) != 0)
			return (rc);
	}
	if (req->chunked && req->content_length != -1)
		return (httpd_refuse(why, 400, "both Content-Length and "
		    "Transfer-Encoding"));
	if (req->chunked && req->minor == 0)
		return (httpd_refuse(why, 400, "chunked body in HTTP/1.0"));
	req->has_body = req->chunked || req->content_length > 0;
	return (0);
}

/*
 * The value of parameter name in query ("a=1&b=%2F"), percent-decoded;
 * '+' is taken as itself (RFC 3986), not as a space. NULL when absent, and
 * when its value is badly encoded or holds an escaped NUL.
 */
char *
httpd_query_param(const char *query, const char *name)
{
	const char	*p = query, *amp, *eq, *v;
	size_t		 klen, nlen = strlen(name), vlen;
	char		*key, *val;
	ssize_t		 n;

	while (*p != '\0') {
		if ((amp = strchr(p, '&')) == NULL)
			amp = p + strlen(p);
		if ((eq = memchr(p, '=', amp - p)) == NULL)
			eq = amp;
		klen = eq - p;
		if (klen >= nlen && klen <= 3 * nlen) {
			key = xmalloc(klen + 1);
			n = httpd_decode(p, klen, key);
			if (n == (ssize_t)nlen && memcmp(key, name, nlen) == 0) {
				free(key);
				v = eq < amp ? eq + 1 : amp;
				vlen = amp - v;
				val = xmalloc(vlen + 1);
				if (httpd_decode(v, vlen, val) == -1) {
					free(val);
					return (NULL);
				}
				return (val);
			}
			free(key);
		}
		p = *amp == '&' ? amp + 1 : amp;
	}
	return (NULL);
}

char *
httpd_field(const struct httpd_req *req, const char *name)
{
	struct wire_field	 f;
	const char		*p = req->head, *end, *line;
	size_t			 llen;
	char			*v;

	if (p == NULL)
		return (NULL);
	end = p + req->head_len;
	if (wire_line(&p, end, &line, &llen) == -1)
		return (NULL);		/* the request line */
	while (wire_line(&p, end, &line, &llen) == 0 && llen > 0) {
		if (wire_field_take(line, llen, &f) != NULL ||
		    !wire_is(f.name, f.nlen, name))
			continue;
		v = xmalloc(f.vlen + 1);
		memcpy(v, f.value, f.vlen);
		v[f.vlen] = '\0';
		return (v);
	}
	return (NULL);
}
