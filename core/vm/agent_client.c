/*
 * The host side of the agent protocol (guest/protocol.h): HTTP/1.1 with
 * Server-Sent Events over one virtio-serial port, driven by the loop.
 * Requests on a port are pipelined and answered in order. A response body
 * is either Content-Length or chunked; a text/event-stream body is split
 * into events as it arrives instead of being collected.
 */
#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"

/*
 * Bounds on what one response may hold. The head and every SSE event are
 * small by the protocol; a guest that sends more is broken or hostile.
 */
#define AGENT_HEADER_MAX	16384	/* status line and headers */
#define AGENT_BODY_MAX		(1024 * 1024)
#define AGENT_EVENT_MAX		(256 * 1024)	/* one SSE event, all lines */
#define AGENT_EVENT_NAME_MAX	32
#define AGENT_CHUNK_DIGITS	8
#define AGENT_READ		65536

enum agent_parse_state {
	AP_STATUS,
	AP_HEADERS,
	AP_BODY,		/* Content-Length */
	AP_CHUNK_SIZE,
	AP_CHUNK_DATA,
	AP_CHUNK_END,		/* the CRLF after a chunk */
	AP_TRAILER
};

struct agent_req {
	agent_response_cb	 response_cb;
	agent_event_cb		 event_cb;
	void			*arg;
	TAILQ_ENTRY(agent_req)	 entry;
};
TAILQ_HEAD(agent_reqs, agent_req);

struct agent_conn {
	struct ev_loop		*loop;
	int			 fd;
	char			*token;
	ev_io			 rd;
	ev_io			 wr;
	struct buf		 out;
	struct buf		 in;
	struct agent_reqs	 reqs;
	int			 paused;
	int			 dead;

	enum agent_parse_state	 state;
	int			 status;
	int			 chunked;
	int			 sse;
	int			 have_length;
	size_t			 head_len;	/* bytes of head so far */
	size_t			 remaining;
	struct buf		 body;
	struct buf		 line;		/* SSE: the line being read */
	char			*event;		/* SSE: the current event name */
	struct buf		 data;		/* SSE: its data */
};

static void	agent_fail(struct agent_conn *, int, const char *);

static void
agent_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent_conn	*c = w->data;
	ssize_t			 n;

	(void)revents;
	while (c->out.len > 0) {
		n = write(c->fd, c->out.data, c->out.len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			agent_fail(c, AGENT_CLOSED, strerror(errno));
			return;
		}
		buf_consume(&c->out, n);
	}
	ev_io_stop(loop, w);
}

/*
 * One SSE line; a blank line dispatches the event. Only the fields the
 * protocol uses are accepted, and an event (name and data) stays within
 * AGENT_EVENT_MAX however many lines it is sent in.
 */
static int
agent_sse_line(struct agent_conn *c, struct agent_req *r, char *line,
    size_t len, char **cause)
{
	char	*value;
	size_t	 vlen;
	int	 rc = 0;

	if (len == 0) {
		if (c->event != NULL || c->data.len > 0) {
			if (r->event_cb != NULL)
				rc = r->event_cb(c->event != NULL ? c->event :
				    "message", c->data.data != NULL ?
				    c->data.data : "", c->data.len, r->arg,
				    cause);
		}
		free(c->event);
		c->event = NULL;
		buf_consume(&c->data, c->data.len);
		return (rc);
	}
	if (memchr(line, '\0', len) != NULL) {
		xasprintf(cause, "a NUL byte in an event");
		return (-1);
	}
	if (line[0] == ':')
		return (0);
	if ((value = memchr(line, ':', len)) == NULL)
		value = line + len;
	else {
		*value++ = '\0';
		if (*value == ' ')
			value++;
	}
	vlen = line + len - value;
	if (strcmp(line, "event") == 0) {
		if (c->event != NULL || vlen == 0 ||
		    vlen > AGENT_EVENT_NAME_MAX) {
			xasprintf(cause, "a bad event name");
			return (-1);
		}
		c->event = xstrdup(value);
	} else if (strcmp(line, "data") == 0) {
		if (c->data.len + vlen + 1 > AGENT_EVENT_MAX) {
			xasprintf(cause, "an event over %d bytes",
			    AGENT_EVENT_MAX);
			return (-1);
		}
		if (c->data.len > 0)
			buf_add(&c->data, "\n", 1);
		buf_add(&c->data, value, vlen);
	} else {
		xasprintf(cause, "an unknown event field");
		return (-1);
	}
	return (0);
}

/* Body bytes: collected, or cut into SSE lines as they come. */
static int
agent_body(struct agent_conn *c, struct agent_req *r, const char *p,
    size_t len, char **cause)
{
	const char	*nl;
	size_t		 n;

	if (!c->sse) {
		if (c->body.len + len > AGENT_BODY_MAX) {
			xasprintf(cause, "a body over %d bytes",
			    AGENT_BODY_MAX);
			return (-1);
		}
		buf_add(&c->body, p, len);
		return (0);
	}
	while (len > 0) {
		nl = memchr(p, '\n', len);
		n = nl == NULL ? len : (size_t)(nl - p);
		if (c->line.len + n > AGENT_EVENT_MAX) {
			xasprintf(cause, "an event line over %d bytes",
			    AGENT_EVENT_MAX);
			return (-1);
		}
		buf_add(&c->line, p, n);
		if (nl == NULL)
			break;
		if (c->line.len > 0 && c->line.data[c->line.len - 1] == '\r')
			c->line.data[--c->line.len] = '\0';
		if (agent_sse_line(c, r, c->line.data != NULL ? c->line.data :
		    "", c->line.len, cause) == -1)
			return (-1);
		buf_consume(&c->line, c->line.len);
		p += n + 1;
		len -= n + 1;
	}
	return (0);
}

/*
 * The response is complete: hand it over. An event stream must end
 * between events, and once the last request is answered nothing more may
 * have come (the agent speaks only when asked).
 */
static int
agent_finish(struct agent_conn *c, char **cause)
{
	struct agent_req	*r;

	if (c->sse && (c->line.len > 0 || c->event != NULL ||
	    c->data.len > 0)) {
		xasprintf(cause, "the event stream ended inside an event");
		return (-1);
	}
	r = TAILQ_FIRST(&c->reqs);
	if (TAILQ_NEXT(r, entry) == NULL && c->in.len > 0) {
		xasprintf(cause, "%zu bytes after the last response",
		    c->in.len);
		return (-1);
	}
	TAILQ_REMOVE(&c->reqs, r, entry);
	c->state = AP_STATUS;
	c->head_len = 0;
	if (r->response_cb != NULL)
		r->response_cb(c->status, c->body.data != NULL ?
		    c->body.data : "", c->body.len, r->arg);
	buf_consume(&c->body, c->body.len);
	buf_consume(&c->line, c->line.len);
	free(c->event);
	c->event = NULL;
	buf_consume(&c->data, c->data.len);
	free(r);
	return (0);
}

/* Take one LF-terminated line (CR stripped) from the input, or NULL. */
static char *
agent_line(struct agent_conn *c, size_t *used, size_t *len)
{
	char	*nl;

	if (c->in.len == 0)
		return (NULL);
	if ((nl = memchr(c->in.data, '\n', c->in.len)) == NULL)
		return (NULL);
	*used = nl - c->in.data + 1;
	*nl = '\0';
	if (nl > c->in.data && nl[-1] == '\r')
		*--nl = '\0';
	*len = nl - c->in.data;
	return (c->in.data);
}

/* A decimal or hex number of digits only, within max; -1 otherwise. */
static int
agent_number(const char *s, int base, size_t maxdigits, size_t max,
    size_t *v)
{
	size_t	n = 0, d;

	*v = 0;
	for (; *s != '\0'; s++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = *s - 'A' + 10;
		else
			return (-1);
		if (++n > maxdigits)
			return (-1);
		*v = *v * base + d;
	}
	return (n == 0 || *v > max ? -1 : 0);
}

/* "HTTP/1.1 NNN reason": the status, 100-599. */
static int
agent_status_line(const char *line, int *status)
{
	int	i;

	if (strncmp(line, "HTTP/1.1 ", 9) != 0)
		return (-1);
	line += 9;
	for (i = 0; i < 3; i++) {
		if (line[i] < '0' || line[i] > '9')
			return (-1);
	}
	if (line[3] != ' ' && line[3] != '\0')
		return (-1);
	*status = (line[0] - '0') * 100 + (line[1] - '0') * 10 +
	    (line[2] - '0');
	return (*status < 100 || *status > 599 ? -1 : 0);
}

static int
agent_header(struct agent_conn *c, char *line, char **cause)
{
	char	*value;

	if ((value = strchr(line, ':')) == NULL) {
		xasprintf(cause, "a header line without a colon");
		return (-1);
	}
	*value++ = '\0';
	value += strspn(value, " \t");
	if (strcasecmp(line, "Content-Length") == 0) {
		if (c->have_length || agent_number(value, 10, 8,
		    AGENT_BODY_MAX, &c->remaining) == -1) {
			xasprintf(cause, "a bad Content-Length");
			return (-1);
		}
		c->have_length = 1;
	} else if (strcasecmp(line, "Transfer-Encoding") == 0) {
		if (strcasecmp(value, "chunked") != 0) {
			xasprintf(cause, "an unknown Transfer-Encoding");
			return (-1);
		}
		c->chunked = 1;
	} else if (strcasecmp(line, "Content-Type") == 0)
		c->sse = strncasecmp(value, "text/event-stream", 17) == 0;
	return (0);
}

/* Advance the parser over what has arrived; -1 on a protocol error. */
static int
agent_parse(struct agent_conn *c, char **cause)
{
	struct agent_req	*r;
	char			*line;
	size_t			 used, llen, n;

	for (;;) {
		if ((r = TAILQ_FIRST(&c->reqs)) == NULL) {
			if (c->in.len == 0)
				return (0);
			xasprintf(cause, "%zu bytes nobody asked for",
			    c->in.len);
			return (-1);
		}
		switch (c->state) {
		case AP_STATUS:
		case AP_HEADERS:
		case AP_CHUNK_SIZE:
		case AP_CHUNK_END:
		case AP_TRAILER:
			line = agent_line(c, &used, &llen);
			n = line == NULL ? c->in.len : used;
			if (c->state == AP_STATUS || c->state == AP_HEADERS)
				n += c->head_len;
			if (n > AGENT_HEADER_MAX) {
				xasprintf(cause, "a head or chunk line over "
				    "%d bytes", AGENT_HEADER_MAX);
				return (-1);
			}
			if (line == NULL)
				return (0);
			if (memchr(line, '\0', llen) != NULL) {
				xasprintf(cause, "a NUL byte in the head");
				return (-1);
			}
			if (c->state == AP_STATUS || c->state == AP_HEADERS)
				c->head_len += used;
			break;
		default:
			line = NULL;
			used = 0;
			break;
		}
		switch (c->state) {
		case AP_STATUS:
			if (agent_status_line(line, &c->status) == -1) {
				xasprintf(cause, "a bad status line");
				return (-1);
			}
			c->chunked = c->sse = c->have_length = 0;
			c->remaining = 0;
			c->state = AP_HEADERS;
			break;
		case AP_HEADERS:
			if (*line != '\0') {
				if (agent_header(c, line, cause) == -1)
					return (-1);
				break;
			}
			buf_consume(&c->in, used);
			if (c->chunked && c->have_length) {
				xasprintf(cause, "both Content-Length and "
				    "chunked");
				return (-1);
			}
			if (c->chunked)
				c->state = AP_CHUNK_SIZE;
			else if (c->remaining > 0)
				c->state = AP_BODY;
			else if (agent_finish(c, cause) == -1)
				return (-1);
			continue;
		case AP_BODY:
		case AP_CHUNK_DATA:
			if (c->in.len == 0)
				return (0);
			n = c->in.len < c->remaining ? c->in.len : c->remaining;
			if (agent_body(c, r, c->in.data, n, cause) == -1)
				return (-1);
			buf_consume(&c->in, n);
			c->remaining -= n;
			if (c->remaining > 0)
				return (0);
			if (c->state == AP_CHUNK_DATA)
				c->state = AP_CHUNK_END;
			else if (agent_finish(c, cause) == -1)
				return (-1);
			continue;
		case AP_CHUNK_SIZE:
			if (agent_number(line, 16, AGENT_CHUNK_DIGITS,
			    AGENT_BODY_MAX, &c->remaining) == -1) {
				xasprintf(cause, "a bad chunk size");
				return (-1);
			}
			c->state = c->remaining == 0 ? AP_TRAILER :
			    AP_CHUNK_DATA;
			break;
		case AP_CHUNK_END:
			if (*line != '\0') {
				xasprintf(cause, "a chunk longer than its "
				    "size");
				return (-1);
			}
			c->state = AP_CHUNK_SIZE;
			break;
		case AP_TRAILER:
			/* The agent sends no trailers. */
			if (*line != '\0') {
				xasprintf(cause, "a trailer after the last "
				    "chunk");
				return (-1);
			}
			buf_consume(&c->in, used);
			if (agent_finish(c, cause) == -1)
				return (-1);
			continue;
		}
		buf_consume(&c->in, used);
	}
}

static void
agent_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent_conn	*c = w->data;
	char			 chunk[AGENT_READ], *cause = NULL, *msg;
	ssize_t			 n;

	(void)loop;
	(void)revents;
	n = read(c->fd, chunk, sizeof chunk);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		agent_fail(c, AGENT_CLOSED, n == 0 ? "the port closed" :
		    strerror(errno));
		return;
	}
	buf_add(&c->in, chunk, n);
	if (agent_parse(c, &cause) == -1) {
		xasprintf(&msg, "the agent broke the protocol: %s", cause);
		log_debug("%s; dropping the connection", msg);
		agent_fail(c, AGENT_BROKEN, msg);
		free(msg);
		free(cause);
	}
}

/*
 * The port is gone (QEMU exited, or the agent broke the protocol): every
 * pending request gets status (AGENT_CLOSED or AGENT_BROKEN) and why.
 */
static void
agent_fail(struct agent_conn *c, int status, const char *why)
{
	struct agent_req	*r;

	c->dead = 1;
	ev_io_stop(c->loop, &c->rd);
	ev_io_stop(c->loop, &c->wr);
	while ((r = TAILQ_FIRST(&c->reqs)) != NULL) {
		TAILQ_REMOVE(&c->reqs, r, entry);
		if (r->response_cb != NULL)
			r->response_cb(status, why, strlen(why), r->arg);
		free(r);
	}
}

struct agent_conn *
agent_conn_new(struct ev_loop *loop, int fd, const char *token)
{
	struct agent_conn	*c;

	c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->fd = fd;
	c->token = xstrdup(token);
	TAILQ_INIT(&c->reqs);
	util_set_nonblock(fd);
	ev_io_init(&c->rd, agent_read_cb, fd, EV_READ);
	c->rd.data = c;
	ev_io_init(&c->wr, agent_write_cb, fd, EV_WRITE);
	c->wr.data = c;
	ev_io_start(loop, &c->rd);
	return (c);
}

void
agent_request(struct agent_conn *c, const char *method, const char *path,
    const void *body, size_t len, agent_response_cb response_cb,
    agent_event_cb event_cb, void *arg)
{
	struct agent_req	*r;

	if (c->dead) {
		if (response_cb != NULL)
			response_cb(AGENT_CLOSED, "the port is closed", 18, arg);
		return;
	}
	r = xcalloc(1, sizeof *r);
	r->response_cb = response_cb;
	r->event_cb = event_cb;
	r->arg = arg;
	TAILQ_INSERT_TAIL(&c->reqs, r, entry);
	buf_printf(&c->out, "%s %s HTTP/1.1\r\nHost: agent\r\n"
	    "Authorization: Bearer %s\r\nContent-Length: %zu\r\n\r\n",
	    method, path, c->token, len);
	if (len > 0)
		buf_add(&c->out, body, len);
	if (!ev_is_active(&c->wr))
		ev_io_start(c->loop, &c->wr);
}

/* Stop or resume reading responses (backpressure from our stdout). */
void
agent_conn_pause(struct agent_conn *c, int pause)
{
	if (c->dead || pause == c->paused)
		return;
	c->paused = pause;
	if (pause)
		ev_io_stop(c->loop, &c->rd);
	else
		ev_io_start(c->loop, &c->rd);
}

int
agent_conn_busy(struct agent_conn *c)
{
	return (!TAILQ_EMPTY(&c->reqs));
}

void
agent_conn_free(struct agent_conn *c)
{
	struct agent_req	*r;

	if (c == NULL)
		return;
	ev_io_stop(c->loop, &c->rd);
	ev_io_stop(c->loop, &c->wr);
	while ((r = TAILQ_FIRST(&c->reqs)) != NULL) {
		TAILQ_REMOVE(&c->reqs, r, entry);
		free(r);
	}
	close(c->fd);
	c->fd = -1;
	explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	buf_free(&c->out);
	buf_free(&c->in);
	buf_free(&c->body);
	buf_free(&c->line);
	buf_free(&c->data);
	free(c->event);
	free(c);
}

/*
 * Append text from the guest for a person's terminal: printable ASCII as
 * is, everything else (escape sequences, newlines, bytes >= 0x7f) as \xHH,
 * at most max bytes of the original, "..." if cut.
 */
void
agent_escape(struct buf *b, const char *s, size_t len, size_t max)
{
	size_t	i;

	buf_add(b, "", 0);
	for (i = 0; i < len && i < max; i++) {
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\')
			buf_add(b, s + i, 1);
		else if (s[i] == '\\')
			buf_puts(b, "\\\\");
		else
			buf_printf(b, "\\x%02x", (unsigned char)s[i]);
	}
	if (len > max)
		buf_puts(b, "...");
}

static const char *
agent_json_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' ||
	    *p == '\r'))
		p++;
	return (p);
}

/* A JSON string at p (past its quote on return), decoded into b. */
static int
agent_json_string(const char **pp, const char *end, struct buf *b)
{
	const char	*p = *pp;
	unsigned int	 u;
	int		 i;
	char		 ch;

	if (p >= end || *p++ != '"')
		return (-1);
	buf_add(b, "", 0);
	while (p < end && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return (-1);
		if (*p != '\\') {
			buf_add(b, p++, 1);
			continue;
		}
		if (++p >= end)
			return (-1);
		switch (*p) {
		case '"': case '\\': case '/':
			ch = *p;
			break;
		case 'b':
			ch = '\b';
			break;
		case 'f':
			ch = '\f';
			break;
		case 'n':
			ch = '\n';
			break;
		case 'r':
			ch = '\r';
			break;
		case 't':
			ch = '\t';
			break;
		case 'u':
			if (end - p < 5)
				return (-1);
			for (u = 0, i = 1; i <= 4; i++) {
				if (p[i] >= '0' && p[i] <= '9')
					u = u * 16 + (p[i] - '0');
				else if ((p[i] | 0x20) >= 'a' &&
				    (p[i] | 0x20) <= 'f')
					u = u * 16 + ((p[i] | 0x20) - 'a' + 10);
				else
					return (-1);
			}
			p += 4;
			/* Beyond ASCII only the fact is kept. */
			ch = u < 0x80 ? (char)u : '?';
			break;
		default:
			return (-1);
		}
		buf_add(b, &ch, 1);
		p++;
	}
	if (p >= end)
		return (-1);
	*pp = p + 1;
	return (0);
}

/* A JSON integer of at most 9 digits. */
static int
agent_json_int(const char **pp, const char *end, long *v)
{
	const char	*p = *pp;
	int		 neg = 0, n = 0;

	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	for (*v = 0; p < end && *p >= '0' && *p <= '9'; p++) {
		if (++n > 9)
			return (-1);
		*v = *v * 10 + (*p - '0');
	}
	if (n == 0 || (n > 1 && (*pp)[neg] == '0'))
		return (-1);
	if (neg)
		*v = -*v;
	*pp = p;
	return (0);
}

/*
 * The data of an exit event, strictly: one JSON object with either
 * "status" (0-255) or "signal" (1-AGENT_SIGNAL_MAX), and an optional
 * "error" string. Anything else is a protocol error.
 */
int
agent_parse_exit(const char *data, size_t len, struct agent_exit *x,
    char **cause)
{
	const char	*p = data, *end = data + len;
	struct buf	 key = { 0 }, err = { 0 };
	long		 v;
	int		 have_status = 0, have_signal = 0, have_error = 0;

	memset(x, 0, sizeof *x);
	p = agent_json_ws(p, end);
	if (p >= end || *p++ != '{')
		goto bad;
	p = agent_json_ws(p, end);
	if (p < end && *p == '}')
		goto bad;
	for (;;) {
		buf_consume(&key, key.len);
		p = agent_json_ws(p, end);
		if (agent_json_string(&p, end, &key) == -1)
			goto bad;
		p = agent_json_ws(p, end);
		if (p >= end || *p++ != ':')
			goto bad;
		p = agent_json_ws(p, end);
		if (strcmp(key.data, "status") == 0 && !have_status) {
			if (agent_json_int(&p, end, &v) == -1)
				goto bad;
			if (v < 0 || v > 255) {
				xasprintf(cause, "exit status %ld out of "
				    "range (0-255)", v);
				goto fail;
			}
			x->status = (int)v;
			have_status = 1;
		} else if (strcmp(key.data, "signal") == 0 && !have_signal) {
			if (agent_json_int(&p, end, &v) == -1)
				goto bad;
			if (v < 1 || v > AGENT_SIGNAL_MAX) {
				xasprintf(cause, "signal %ld out of range "
				    "(1-%d)", v, AGENT_SIGNAL_MAX);
				goto fail;
			}
			x->signal = (int)v;
			have_signal = 1;
		} else if (strcmp(key.data, "error") == 0 && !have_error) {
			if (agent_json_string(&p, end, &err) == -1)
				goto bad;
			have_error = 1;
		} else
			goto bad;
		p = agent_json_ws(p, end);
		if (p < end && *p == ',') {
			p++;
			continue;
		}
		if (p >= end || *p++ != '}')
			goto bad;
		break;
	}
	if (agent_json_ws(p, end) != end || have_status == have_signal)
		goto bad;
	if (have_error) {
		buf_consume(&key, key.len);
		agent_escape(&key, err.data, err.len, AGENT_ERROR_MAX);
		x->error = xstrdup(key.data);
	}
	buf_free(&key);
	buf_free(&err);
	return (0);
bad:
	xasprintf(cause, "a malformed exit event");
fail:
	buf_free(&key);
	buf_free(&err);
	return (-1);
}
