/*
 * The one HTTP/1.1 head parser: pure functions over bytes, no I/O, so the
 * connections that use it stay state machines and it can be fed anything.
 * A head is taken a line at a time (wire_head_line), as qsup reads the
 * agent's responses while they arrive, or whole (wire_head_parse), as the
 * agent reads a request once its blank line is in. The two roles are two
 * dialects: the agent answers a request it cannot take with a status
 * (400, 414, 431, 501, 505), qsup holds the agent to the protocol
 * strictly and names what broke it. The caller bounds the head's size.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "wire.h"

/*
 * Length of the head (start line, headers, blank line) at buf, or 0 when
 * the blank line has not arrived. Bare LF line ends are accepted too.
 */
size_t
wire_head_end(const char *buf, size_t len)
{
	const char	*p = buf, *end = buf + len;

	if (len == 0)
		return (0);
	while ((p = memchr(p, '\n', end - p)) != NULL) {
		if (end - p >= 2 && p[1] == '\n')
			return (p + 2 - buf);
		if (end - p >= 3 && p[1] == '\r' && p[2] == '\n')
			return (p + 3 - buf);
		p++;
	}
	return (0);
}

/*
 * The next line of [*p, end) without its line end (LF, or CRLF), or -1 at
 * the end. The last line may lack its LF.
 */
int
wire_line(const char **p, const char *end, const char **line, size_t *len)
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

/* Whether s is an HTTP token (RFC 9110 tchar), as methods and names are. */
int
wire_token(const char *s, size_t len)
{
	size_t	i;
	int	c;

	if (len == 0)
		return (0);
	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9'))
			continue;
		if (c == '\0' || strchr("!#$%&'*+-.^_`|~", c) == NULL)
			return (0);
	}
	return (1);
}

/*
 * "METHOD SP TARGET SP VERSION": the three parts, whatever they hold (the
 * agent and the proxy each check them their way); -1 without two spaces.
 */
int
wire_request_split(const char *line, size_t len, struct wire_request_line *rl)
{
	const char	*sp1, *sp2, *end = line + len;

	if ((sp1 = memchr(line, ' ', len)) == NULL ||
	    (sp2 = memchr(sp1 + 1, ' ', end - (sp1 + 1))) == NULL)
		return (-1);
	rl->method = line;
	rl->mlen = sp1 - line;
	rl->target = sp1 + 1;
	rl->tlen = sp2 - (sp1 + 1);
	rl->version = sp2 + 1;
	rl->vlen = end - (sp2 + 1);
	return (0);
}

/*
 * "NAME: VALUE" with a token for a name (so no folded line), the value
 * without the blanks around it; -1 otherwise.
 */
int
wire_field_split(const char *line, size_t len, struct wire_field *f)
{
	size_t	n;

	for (n = 0; n < len && wire_token(line + n, 1); n++)
		;
	if (n == 0 || n == len || line[n] != ':')
		return (-1);
	f->name = line;
	f->nlen = n;
	f->value = line + n + 1;
	f->vlen = len - n - 1;
	while (f->vlen > 0 && (*f->value == ' ' || *f->value == '\t')) {
		f->value++;
		f->vlen--;
	}
	while (f->vlen > 0 && (f->value[f->vlen - 1] == ' ' ||
	    f->value[f->vlen - 1] == '\t'))
		f->vlen--;
	return (0);
}

/*
 * A header line of a request, into *f: NULL, or why it is refused (a
 * folded line, no "NAME:", a control character in the value).
 */
const char *
wire_field_take(const char *line, size_t len, struct wire_field *f)
{
	size_t	i;

	if (len > 0 && (line[0] == ' ' || line[0] == '\t'))
		return ("folded header line");
	if (wire_field_split(line, len, f) == -1)
		return ("bad header line");
	for (i = 0; i < f->vlen; i++) {
		if (((unsigned char)f->value[i] < 0x20 &&
		    f->value[i] != '\t') || f->value[i] == 0x7f)
			return ("control character in header");
	}
	return (NULL);
}

/* Whether s, len bytes, is want, whatever the case. */
int
wire_is(const char *s, size_t len, const char *want)
{
	return (strlen(want) == len && strncasecmp(s, want, len) == 0);
}

/* Refuse: cause for a person, status for a request's answer. */
static int
wire_head_fail(struct wire_head *h, int status, const char *cause)
{
	h->error = status;
	h->cause = cause;
	return (-1);
}

void
wire_head_init(struct wire_head *h, int role)
{
	memset(h, 0, sizeof *h);
	h->role = role;
	h->content_length = -1;
	h->error = 400;
}

/* "METHOD SP /target SP HTTP/1.x": the agent's only request form. */
static int
wire_request_line(struct wire_head *h, const char *line, size_t llen)
{
	struct wire_request_line	 rl;
	const char			*q;
	size_t				 n, i;

	if (llen == 0)
		return (wire_head_fail(h, 400, "empty request line"));
	if (wire_request_split(line, llen, &rl) == -1)
		return (wire_head_fail(h, 400, "bad request line"));
	for (n = 0; n < rl.mlen && rl.method[n] >= 'A' && rl.method[n] <= 'Z';
	    n++)
		;
	if (n == 0 || n != rl.mlen || n >= sizeof h->method ||
	    rl.tlen == 0 || rl.target[0] != '/')
		return (wire_head_fail(h, 400, "bad request line"));
	memcpy(h->method, rl.method, n);
	h->method[n] = '\0';
	for (i = 0; i < rl.tlen; i++) {
		if ((unsigned char)rl.target[i] <= 0x20 ||
		    (unsigned char)rl.target[i] >= 0x7f)
			return (wire_head_fail(h, 400, "bad request target"));
	}
	n = rl.tlen;
	if ((q = memchr(rl.target, '?', n)) != NULL)
		n = q - rl.target;
	if (n >= sizeof h->path)
		return (wire_head_fail(h, 414, "request target too long"));
	memcpy(h->path, rl.target, n);
	h->path[n] = '\0';
	if (rl.vlen != 8 || memcmp(rl.version, "HTTP/1.", 7) != 0 ||
	    (rl.version[7] != '0' && rl.version[7] != '1')) {
		return (wire_head_fail(h, rl.vlen == 8 &&
		    memcmp(rl.version, "HTTP/", 5) == 0 ? 505 : 400,
		    "bad HTTP version"));
	}
	h->minor = rl.version[7] - '0';
	return (0);
}

/* "HTTP/1.1 NNN reason": the agent's only status line, 100-599. */
static int
wire_status_line(struct wire_head *h, const char *line, size_t llen)
{
	int	i;

	if (llen < 12 || strncmp(line, "HTTP/1.1 ", 9) != 0)
		return (wire_head_fail(h, 0, "a bad status line"));
	line += 9;
	for (i = 0; i < 3; i++) {
		if (line[i] < '0' || line[i] > '9')
			return (wire_head_fail(h, 0, "a bad status line"));
	}
	if (llen > 12 && line[3] != ' ')
		return (wire_head_fail(h, 0, "a bad status line"));
	h->status = (line[0] - '0') * 100 + (line[1] - '0') * 10 +
	    (line[2] - '0');
	if (h->status < 100 || h->status > 599)
		return (wire_head_fail(h, 0, "a bad status line"));
	return (0);
}

/* Digits only, at most max digits; -1 otherwise. */
int
wire_decimal(const char *s, size_t len, size_t max, long long *v)
{
	size_t	i;

	if (len == 0 || len > max)
		return (-1);
	for (*v = 0, i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (-1);
		*v = *v * 10 + (s[i] - '0');
	}
	return (0);
}

/* One header of a request, as the agent takes it. */
static int
wire_request_header(struct wire_head *h, const char *line, size_t llen)
{
	struct wire_field	 f;
	const char		*why;
	long long		 cl;

	if ((why = wire_field_take(line, llen, &f)) != NULL)
		return (wire_head_fail(h, 400, why));
	if (wire_is(f.name, f.nlen, "Authorization")) {
		if (h->has_auth)
			return (wire_head_fail(h, 400, "more than one "
			    "Authorization"));
		if (f.vlen >= sizeof h->auth)
			return (wire_head_fail(h, 431, "Authorization too "
			    "long"));
		memcpy(h->auth, f.value, f.vlen);
		h->auth[f.vlen] = '\0';
		h->has_auth = 1;
	} else if (wire_is(f.name, f.nlen, "Content-Length")) {
		if (wire_decimal(f.value, f.vlen, 15, &cl) == -1)
			return (wire_head_fail(h, 400, "bad Content-Length"));
		if (h->content_length != -1 && h->content_length != cl)
			return (wire_head_fail(h, 400, "conflicting "
			    "Content-Length"));
		h->content_length = cl;
	} else if (wire_is(f.name, f.nlen, "Transfer-Encoding")) {
		if (!wire_is(f.value, f.vlen, "chunked") || h->chunked)
			return (wire_head_fail(h, 501, "unsupported "
			    "Transfer-Encoding"));
		h->chunked = 1;
	} else if (wire_is(f.name, f.nlen, "Expect")) {
		if (wire_is(f.value, f.vlen, "100-continue"))
			h->expect_continue = 1;
	}
	return (0);
}

/* One header of a response, as qsup holds the agent to it. */
static int
wire_response_header(struct wire_head *h, const char *line, size_t llen)
{
	const char	*val;
	size_t		 nlen, vlen;
	long long	 cl;

	if ((val = memchr(line, ':', llen)) == NULL)
		return (wire_head_fail(h, 0, "a header line without a colon"));
	nlen = val - line;
	val++;
	vlen = llen - nlen - 1;
	while (vlen > 0 && (*val == ' ' || *val == '\t')) {
		val++;
		vlen--;
	}
	if (wire_is(line, nlen, "Content-Length")) {
		if (h->content_length != -1 || wire_decimal(val, vlen, 8,
		    &cl) == -1 || cl > WIRE_BODY_MAX)
			return (wire_head_fail(h, 0, "a bad Content-Length"));
		h->content_length = cl;
	} else if (wire_is(line, nlen, "Transfer-Encoding")) {
		if (!wire_is(val, vlen, "chunked"))
			return (wire_head_fail(h, 0, "an unknown "
			    "Transfer-Encoding"));
		h->chunked = 1;
	} else if (wire_is(line, nlen, "Content-Type"))
		h->sse = vlen >= 17 && strncasecmp(val, "text/event-stream",
		    17) == 0;
	return (0);
}

/* The head has ended: a body has one length or the other, not both. */
static int
wire_head_done(struct wire_head *h)
{
	if (h->chunked && h->content_length != -1) {
		if (h->role == WIRE_RESPONSE)
			return (wire_head_fail(h, 0, "both Content-Length "
			    "and chunked"));
		return (wire_head_fail(h, 400, "both Content-Length and "
		    "Transfer-Encoding"));
	}
	return (1);
}

/*
 * One line of a head, without its line end: 0 when taken, 1 when it was
 * the blank line that ends the head, -1 when it is refused (h->cause says
 * why, and for a request h->error what to answer).
 */
int
wire_head_line(struct wire_head *h, const char *line, size_t len)
{
	int	first = h->lines++ == 0;

	if (h->role == WIRE_RESPONSE) {
		if (memchr(line, '\0', len) != NULL)
			return (wire_head_fail(h, 0, "a NUL byte in the head"));
		if (first)
			return (wire_status_line(h, line, len));
		if (len == 0)
			return (wire_head_done(h));
		return (wire_response_header(h, line, len));
	}
	if (first)
		return (wire_request_line(h, line, len));
	if (len == 0)
		return (wire_head_done(h));
	return (wire_request_header(h, line, len));
}

/*
 * A complete head (up to its blank line, see wire_head_end): 0 when it
 * parses, -1 as for wire_head_line.
 */
int
wire_head_parse(struct wire_head *h, int role, const char *head, size_t len)
{
	const char	*p = head, *end = head + len, *line;
	size_t		 llen;
	int		 rc;

	wire_head_init(h, role);
	if (wire_line(&p, end, &line, &llen) == -1)
		return (wire_head_line(h, "", 0));
	do {
		if ((rc = wire_head_line(h, line, llen)) != 0)
			return (rc == 1 ? 0 : -1);
	} while (wire_line(&p, end, &line, &llen) == 0);
	return (wire_head_done(h) == 1 ? 0 : -1);
}

const char *
wire_reason(int status)
{
	switch (status) {
	case 100:
		return ("Continue");
	case 200:
		return ("OK");
	case 201:
		return ("Created");
	case 202:
		return ("Accepted");
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
	case 408:
		return ("Request Timeout");
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

/* The path of op (WIRE_OP_*) on exec id; size at least WIRE_EXEC_PATH_MAX. */
void
wire_exec_path(char *buf, size_t size, long long id, const char *op)
{
	snprintf(buf, size, WIRE_EXEC "/%lld/%s", id, op);
}

/* Is op one of the WIRE_OP_* an exec takes? */
int
wire_exec_op(const char *op)
{
	return (strcmp(op, WIRE_OP_STDIN) == 0 ||
	    strcmp(op, WIRE_OP_CLOSE) == 0 ||
	    strcmp(op, WIRE_OP_SIGNAL) == 0 ||
	    strcmp(op, WIRE_OP_RESIZE) == 0);
}

/*
 * WIRE_EXEC"/<id>/<op>", id 1-9 digits: 0 with the id and op (pointing
 * into path, unchecked: wire_exec_op says), or -1.
 */
int
wire_exec_path_parse(const char *path, unsigned *id, const char **op)
{
	const char	*s;
	unsigned long	 v = 0;
	int		 digits = 0;

	if (strncmp(path, WIRE_EXEC "/", sizeof WIRE_EXEC) != 0)
		return (-1);
	for (s = path + sizeof WIRE_EXEC; *s >= '0' && *s <= '9'; s++) {
		if (++digits > 9)
			return (-1);
		v = v * 10 + (*s - '0');
	}
	if (digits == 0 || *s != '/')
		return (-1);
	*id = v;
	*op = s + 1;
	return (0);
}
