/*
 * The host side of the agent protocol (core/wire/wire.h): HTTP/1.1 with
 * Server-Sent Events over one virtio-serial port, driven by the loop.
 * Requests on a port are pipelined and answered in order. A response body
 * is either Content-Length or chunked; a text/event-stream body is split
 * into events as it arrives instead of being collected. The parsing is
 * the wire layer's, in its strict mode; this file holds the connection,
 * and reads the exit event's JSON with jansson.
 */
#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "vm.h"

/*
 * Bounds on what one response may hold. The head and every SSE event are
 * small by the protocol; a guest that sends more is broken or hostile.
 */
#define AGENT_HEADER_MAX	WIRE_HEAD_MAX	/* status line and headers */
#define AGENT_BODY_MAX		WIRE_BODY_MAX
#define AGENT_READ		65536

enum agent_parse_state {
	AP_HEAD,
	AP_BODY,		/* Content-Length */
	AP_CHUNKED
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
	struct wire_head	 head;
	size_t			 head_len;	/* bytes of head so far */
	size_t			 remaining;	/* of a Content-Length body */
	struct wire_chunked	 chunked;
	struct buf		 body;
	struct wire_sse		 sse;
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

/* Body bytes: collected, or cut into events as they come. */
static int
agent_body(struct agent_conn *c, struct agent_req *r, const char *p,
    size_t len, char **cause)
{
	const char	*why;
	ssize_t		 n;
	int		 ready;

	if (!c->head.sse) {
		if (c->body.len + len > AGENT_BODY_MAX) {
			xasprintf(cause, "a body over %d bytes",
			    AGENT_BODY_MAX);
			return (-1);
		}
		buf_add(&c->body, p, len);
		return (0);
	}
	while (len > 0) {
		if ((n = wire_sse_feed(&c->sse, p, len, &ready, &why)) == -1) {
			xasprintf(cause, "%s", why);
			return (-1);
		}
		p += n;
		len -= n;
		if (ready && r->event_cb != NULL && r->event_cb(
		    wire_sse_name(&c->sse), c->sse.data.data != NULL ?
		    c->sse.data.data : "", c->sse.data.len, r->arg,
		    cause) == -1)
			return (-1);
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

	if (c->head.sse && wire_sse_pending(&c->sse)) {
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
	c->state = AP_HEAD;
	c->head_len = 0;
	if (r->response_cb != NULL)
		r->response_cb(c->head.status, c->body.data != NULL ?
		    c->body.data : "", c->body.len, r->arg);
	buf_consume(&c->body, c->body.len);
	wire_sse_reset(&c->sse);
	wire_head_init(&c->head, WIRE_RESPONSE);
	free(r);
	return (0);
}

/*
 * One line of the head, if a whole one has arrived (the head stays within
 * AGENT_HEADER_MAX): 0 when taken, 1 at the head's end, 2 when more must
 * come first, -1 on a protocol error.
 */
static int
agent_head(struct agent_conn *c, char **cause)
{
	char	*nl;
	size_t	 used, len;
	int	 rc;

	nl = c->in.len > 0 ? memchr(c->in.data, '\n', c->in.len) : NULL;
	used = nl != NULL ? (size_t)(nl - c->in.data + 1) : c->in.len;
	if (c->head_len + used > AGENT_HEADER_MAX) {
		xasprintf(cause, "a head or chunk line over %d bytes",
		    AGENT_HEADER_MAX);
		return (-1);
	}
	if (nl == NULL)
		return (2);
	len = used - 1;
	if (len > 0 && c->in.data[len - 1] == '\r')
		len--;
	c->head_len += used;
	rc = wire_head_line(&c->head, c->in.data, len);
	buf_consume(&c->in, used);
	if (rc == -1) {
		xasprintf(cause, "%s", c->head.cause);
		return (-1);
	}
	return (rc);
}

/* Advance the parser over what has arrived; -1 on a protocol error. */
static int
agent_parse(struct agent_conn *c, char **cause)
{
	struct agent_req	*r;
	const char		*data, *why;
	size_t			 n, dlen;
	ssize_t			 used;
	int			 done;

	for (;;) {
		if ((r = TAILQ_FIRST(&c->reqs)) == NULL) {
			if (c->in.len == 0)
				return (0);
			xasprintf(cause, "%zu bytes nobody asked for",
			    c->in.len);
			return (-1);
		}
		switch (c->state) {
		case AP_HEAD:
			switch (agent_head(c, cause)) {
			case -1:
				return (-1);
			case 2:
				return (0);
			case 0:
				continue;
			}
			if (c->head.chunked) {
				wire_chunked_init(&c->chunked, 1);
				c->state = AP_CHUNKED;
			} else if (c->head.content_length > 0) {
				c->remaining = c->head.content_length;
				c->state = AP_BODY;
			} else if (agent_finish(c, cause) == -1)
				return (-1);
			break;
		case AP_BODY:
			if (c->in.len == 0)
				return (0);
			n = c->in.len < c->remaining ? c->in.len : c->remaining;
			if (agent_body(c, r, c->in.data, n, cause) == -1)
				return (-1);
			buf_consume(&c->in, n);
			c->remaining -= n;
			if (c->remaining > 0)
				return (0);
			if (agent_finish(c, cause) == -1)
				return (-1);
			break;
		case AP_CHUNKED:
			used = wire_chunked_feed(&c->chunked, c->in.data,
			    c->in.len, &data, &dlen, &done, &why);
			if (used == -1) {
				xasprintf(cause, "%s", why);
				return (-1);
			}
			if (used == 0)
				return (0);
			if (dlen > 0 && agent_body(c, r, data, dlen,
			    cause) == -1)
				return (-1);
			buf_consume(&c->in, used);
			if (done && agent_finish(c, cause) == -1)
				return (-1);
			break;
		}
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
	wire_head_init(&c->head, WIRE_RESPONSE);
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
	wire_sse_free(&c->sse);
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

/*
 * The agent's texts are bytes (a command's name need not be UTF-8) and
 * jansson takes only UTF-8: each byte above 0x7f goes in as the code
 * point of its value, and comes out again as that byte (agent_bytes).
 */
static void
agent_latin1(struct buf *b, const char *s, size_t len)
{
	unsigned char	u[2];
	size_t		i;

	buf_add(b, "", 0);
	for (i = 0; i < len; i++) {
		if ((unsigned char)s[i] < 0x80) {
			buf_add(b, s + i, 1);
			continue;
		}
		u[0] = 0xc0 | (unsigned char)s[i] >> 6;
		u[1] = 0x80 | ((unsigned char)s[i] & 0x3f);
		buf_add(b, u, 2);
	}
}

/* Back from agent_latin1: code points past 0xff (escapes) become '?'. */
static void
agent_bytes(struct buf *b, const char *s, size_t len)
{
	const unsigned char	*p = (const unsigned char *)s, *end = p + len;
	char			 ch;

	buf_add(b, "", 0);
	while (p < end) {
		if (*p < 0x80)
			ch = (char)*p++;
		else if ((*p & 0xe0) == 0xc0 && *p <= 0xc3 && end - p >= 2) {
			ch = (char)((p[0] & 0x03) << 6 | (p[1] & 0x3f));
			p += 2;
		} else {
			/* Beyond 0xff only the fact is kept. */
			ch = '?';
			for (p++; p < end && (*p & 0xc0) == 0x80; p++)
				;
		}
		buf_add(b, &ch, 1);
	}
}

/* A number as the protocol has them: an integer of at most 9 digits. */
static int
agent_exit_int(json_t *v, long *n)
{
	json_int_t	i;

	if (!json_is_integer(v))
		return (-1);
	i = json_integer_value(v);
	if (i < -999999999 || i > 999999999)
		return (-1);
	*n = (long)i;
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
	struct buf	 in = { 0 }, err = { 0 }, esc = { 0 };
	json_t		*j, *v;
	const char	*key;
	long		 n;
	int		 have_status = 0, have_signal = 0;

	memset(x, 0, sizeof *x);
	agent_latin1(&in, data, len);
	j = json_read(in.data, in.len, JSON_REJECT_DUPLICATES|JSON_ALLOW_NUL);
	buf_free(&in);
	if (j == NULL || json_object_size(j) == 0)
		goto bad;
	json_object_foreach(j, key, v) {
		if (strcmp(key, "status") == 0) {
			if (agent_exit_int(v, &n) == -1)
				goto bad;
			if (n < 0 || n > 255) {
				xasprintf(cause, "exit status %ld out of "
				    "range (0-255)", n);
				goto fail;
			}
			x->status = (int)n;
			have_status = 1;
		} else if (strcmp(key, "signal") == 0) {
			if (agent_exit_int(v, &n) == -1)
				goto bad;
			if (n < 1 || n > AGENT_SIGNAL_MAX) {
				xasprintf(cause, "signal %ld out of range "
				    "(1-%d)", n, AGENT_SIGNAL_MAX);
				goto fail;
			}
			x->signal = (int)n;
			have_signal = 1;
		} else if (strcmp(key, "error") == 0 && json_is_string(v))
			agent_bytes(&err, json_string_value(v),
			    json_string_length(v));
		else
			goto bad;
	}
	if (have_status == have_signal)
		goto bad;
	if (err.data != NULL) {
		agent_escape(&esc, err.data, err.len, AGENT_ERROR_MAX);
		x->error = xstrdup(esc.data);
	}
	json_decref(j);
	buf_free(&err);
	buf_free(&esc);
	return (0);
bad:
	xasprintf(cause, "a malformed exit event");
fail:
	if (j != NULL)
		json_decref(j);
	buf_free(&err);
	buf_free(&esc);
	x->status = x->signal = 0;
	return (-1);
}
