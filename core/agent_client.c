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

#include "qsup.h"

#define AGENT_HEADER_MAX	16384
#define AGENT_BODY_MAX		(1024 * 1024)
#define AGENT_EVENT_MAX		(256 * 1024)
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
	size_t			 remaining;
	struct buf		 body;
	struct buf		 line;		/* SSE: the line being read */
	char			*event;		/* SSE: the current event name */
	struct buf		 data;		/* SSE: its data */
};

static void	agent_fail(struct agent_conn *);

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
			agent_fail(c);
			return;
		}
		buf_consume(&c->out, n);
	}
	ev_io_stop(loop, w);
}

/* One SSE line; a blank line dispatches the event. */
static void
agent_sse_line(struct agent_conn *c, struct agent_req *r, char *line,
    size_t len)
{
	char	*value;

	if (len == 0) {
		if (c->event != NULL || c->data.len > 0) {
			if (r->event_cb != NULL)
				r->event_cb(c->event != NULL ? c->event :
				    "message", c->data.data != NULL ?
				    c->data.data : "", c->data.len, r->arg);
		}
		free(c->event);
		c->event = NULL;
		buf_consume(&c->data, c->data.len);
		return;
	}
	if (line[0] == ':')
		return;
	if ((value = memchr(line, ':', len)) == NULL)
		value = line + len;
	else {
		*value++ = '\0';
		if (*value == ' ')
			value++;
	}
	if (strcmp(line, "event") == 0) {
		free(c->event);
		c->event = xstrdup(value);
	} else if (strcmp(line, "data") == 0) {
		if (c->data.len > 0)
			buf_add(&c->data, "\n", 1);
		buf_add(&c->data, value, line + len - value);
	}
}

/* Body bytes: collected, or cut into SSE lines as they come. */
static int
agent_body(struct agent_conn *c, struct agent_req *r, const char *p,
    size_t len)
{
	const char	*nl;
	size_t		 n;

	if (!c->sse) {
		if (c->body.len + len > AGENT_BODY_MAX)
			return (-1);
		buf_add(&c->body, p, len);
		return (0);
	}
	while (len > 0) {
		nl = memchr(p, '\n', len);
		n = nl == NULL ? len : (size_t)(nl - p);
		if (c->line.len + n > AGENT_EVENT_MAX)
			return (-1);
		buf_add(&c->line, p, n);
		if (nl == NULL)
			break;
		if (c->line.len > 0 && c->line.data[c->line.len - 1] == '\r')
			c->line.data[--c->line.len] = '\0';
		agent_sse_line(c, r, c->line.data != NULL ? c->line.data : "",
		    c->line.len);
		buf_consume(&c->line, c->line.len);
		p += n + 1;
		len -= n + 1;
	}
	return (0);
}

static void
agent_finish(struct agent_conn *c)
{
	struct agent_req	*r;

	r = TAILQ_FIRST(&c->reqs);
	TAILQ_REMOVE(&c->reqs, r, entry);
	c->state = AP_STATUS;
	if (r->response_cb != NULL)
		r->response_cb(c->status, c->body.data != NULL ?
		    c->body.data : "", c->body.len, r->arg);
	buf_consume(&c->body, c->body.len);
	buf_consume(&c->line, c->line.len);
	free(c->event);
	c->event = NULL;
	buf_consume(&c->data, c->data.len);
	free(r);
}

/* Take one CRLF-terminated line from the input, or return NULL. */
static char *
agent_line(struct agent_conn *c, size_t *used)
{
	char	*nl;

	if (c->in.len == 0)
		return (NULL);
	if ((nl = memchr(c->in.data, '\n', c->in.len)) == NULL)
		return (NULL);
	*used = nl - c->in.data + 1;
	*nl = '\0';
	if (nl > c->in.data && nl[-1] == '\r')
		nl[-1] = '\0';
	return (c->in.data);
}

static int
agent_header(struct agent_conn *c, char *line)
{
	char	*value;

	if ((value = strchr(line, ':')) == NULL)
		return (-1);
	*value++ = '\0';
	value += strspn(value, " \t");
	if (strcasecmp(line, "Content-Length") == 0) {
		c->remaining = strtoull(value, NULL, 10);
		if (c->remaining > AGENT_BODY_MAX)
			return (-1);
	} else if (strcasecmp(line, "Transfer-Encoding") == 0)
		c->chunked = strcasecmp(value, "chunked") == 0;
	else if (strcasecmp(line, "Content-Type") == 0)
		c->sse = strncasecmp(value, "text/event-stream", 17) == 0;
	return (0);
}

/* Advance the parser over what has arrived; -1 on a protocol error. */
static int
agent_parse(struct agent_conn *c)
{
	struct agent_req	*r;
	char			*line, *end;
	size_t			 used, n;

	for (;;) {
		if ((r = TAILQ_FIRST(&c->reqs)) == NULL)
			return (c->in.len == 0 ? 0 : -1);
		switch (c->state) {
		case AP_STATUS:
		case AP_HEADERS:
		case AP_CHUNK_SIZE:
		case AP_CHUNK_END:
		case AP_TRAILER:
			if ((line = agent_line(c, &used)) == NULL)
				return (c->in.len > AGENT_HEADER_MAX ? -1 : 0);
			break;
		default:
			line = NULL;
			used = 0;
			break;
		}
		switch (c->state) {
		case AP_STATUS:
			/* Three digits, 100-599: -1 means a dead connection. */
			if (strncmp(line, "HTTP/1.1 ", 9) != 0 ||
			    line[9] < '1' || line[9] > '5' ||
			    line[10] < '0' || line[10] > '9' ||
			    line[11] < '0' || line[11] > '9' ||
			    (line[12] != ' ' && line[12] != '\0'))
				return (-1);
			c->status = atoi(line + 9);
			c->chunked = c->sse = 0;
			c->remaining = 0;
			c->state = AP_HEADERS;
			break;
		case AP_HEADERS:
			if (*line != '\0') {
				if (agent_header(c, line) == -1)
					return (-1);
				break;
			}
			if (c->chunked)
				c->state = AP_CHUNK_SIZE;
			else if (c->remaining > 0)
				c->state = AP_BODY;
			else {
				buf_consume(&c->in, used);
				agent_finish(c);
				continue;
			}
			break;
		case AP_BODY:
		case AP_CHUNK_DATA:
			if (c->in.len == 0)
				return (0);
			n = c->in.len < c->remaining ? c->in.len : c->remaining;
			if (agent_body(c, r, c->in.data, n) == -1)
				return (-1);
			buf_consume(&c->in, n);
			c->remaining -= n;
			if (c->remaining > 0)
				return (0);
			if (c->state == AP_CHUNK_DATA)
				c->state = AP_CHUNK_END;
			else {
				agent_finish(c);
				continue;
			}
			continue;
		case AP_CHUNK_SIZE:
			c->remaining = strtoul(line, &end, 16);
			if (end == line || c->remaining > AGENT_BODY_MAX)
				return (-1);
			c->state = c->remaining == 0 ? AP_TRAILER :
			    AP_CHUNK_DATA;
			break;
		case AP_CHUNK_END:
			if (*line != '\0')
				return (-1);
			c->state = AP_CHUNK_SIZE;
			break;
		case AP_TRAILER:
			if (*line != '\0')
				break;
			buf_consume(&c->in, used);
			agent_finish(c);
			continue;
		}
		buf_consume(&c->in, used);
	}
}

static void
agent_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct agent_conn	*c = w->data;
	char			 chunk[AGENT_READ];
	ssize_t			 n;

	(void)loop;
	(void)revents;
	n = read(c->fd, chunk, sizeof chunk);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		agent_fail(c);
		return;
	}
	buf_add(&c->in, chunk, n);
	if (agent_parse(c) == -1) {
		log_warnx("agent sent a malformed response; dropping the "
		    "connection");
		agent_fail(c);
	}
}

/* The port is gone (QEMU exited, or the agent broke the protocol). */
static void
agent_fail(struct agent_conn *c)
{
	struct agent_req	*r;

	c->dead = 1;
	ev_io_stop(c->loop, &c->rd);
	ev_io_stop(c->loop, &c->wr);
	while ((r = TAILQ_FIRST(&c->reqs)) != NULL) {
		TAILQ_REMOVE(&c->reqs, r, entry);
		if (r->response_cb != NULL)
			r->response_cb(-1, "", 0, r->arg);
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
			response_cb(-1, "", 0, arg);
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
