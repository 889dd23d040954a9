/*
 * One client connection: a state machine on the loop. Bytes come into a
 * bounded input buffer (c->in) and leave through a queue (c->out) that
 * the handler watches; heads are cut from the input and handed to the
 * handler one request at a time, in order, however many a client sends
 * at once. Whatever the handler calls, no callback of ours runs inside
 * that call (but httpd_abort's close_cb): state changes are taken up by
 * httpd_conn_process on the next turn of the loop (c->kick), so a
 * handler never finds itself re-entered.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "httpd.h"
#include "httpd_int.h"

#define HTTPD_LINGER	2.0	/* closing: how long the rest is drained */

static void	httpd_conn_process(struct httpd_conn *);

/* The input held at once: a whole head at least. */
static size_t
httpd_conn_cap(struct httpd_conn *c)
{
	size_t	max = c->h->limits.head_max;

	return (max > HTTPD_READ_MAX ? max : HTTPD_READ_MAX);
}

/* Some progress on the wire: the idle clock starts again. */
static void
httpd_conn_touch(struct httpd_conn *c)
{
	if (ev_is_active(&c->idle))
		ev_timer_again(c->h->loop, &c->idle);
}

static void
httpd_conn_handshake(struct httpd_conn *c)
{
	int	rc;

	if ((rc = httpd_tls_handshake(c->tls)) == HTTPD_TLS_FAIL) {
		log_debug("httpd: %s: TLS handshake failed", c->l->bound);
		httpd_conn_close(c, 0);
		return;
	}
	c->tls_want = rc;
	httpd_conn_touch(c);
}

static ssize_t
httpd_conn_recv(struct httpd_conn *c, void *p, size_t len)
{
	if (c->tls != NULL)
		return (httpd_tls_read(c->tls, p, len));
	return (recv(c->fd, p, len, 0));
}

/* Read what there is, up to the cap; when closing, only to drop it. */
static void
httpd_conn_fill(struct httpd_conn *c)
{
	char	tmp[16384];
	size_t	cap = httpd_conn_cap(c), room;
	ssize_t	n;
	int	progress = 0;

	while (!c->dead && !c->eof && (c->shut || c->in.len < cap)) {
		room = c->shut ? sizeof tmp : cap - c->in.len;
		if (room > sizeof tmp)
			room = sizeof tmp;
		if ((n = httpd_conn_recv(c, tmp, room)) > 0) {
			progress = 1;
			if (!c->shut)
				buf_add(&c->in, tmp, n);
			continue;
		}
		if (n == 0) {
			c->eof = 1;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			break;
		/* Reset, or broken: the client is gone. */
		log_debug("httpd: %s: read: %s", c->l->bound, strerror(errno));
		httpd_conn_close(c, 1);
		return;
	}
	if (progress)
		httpd_conn_touch(c);
}

/* Send what is queued; the drain callback once it fell low enough. */
static void
httpd_conn_flush(struct httpd_conn *c)
{
	size_t	pending;
	ssize_t	n;
	int	progress = 0;

	while ((pending = c->out.len - c->out_off) > 0) {
		if (c->tls != NULL)
			n = httpd_tls_write(c->tls, c->out.data + c->out_off,
			    pending);
		else
			n = send(c->fd, c->out.data + c->out_off, pending,
			    MSG_NOSIGNAL);
		if (n > 0) {
			c->out_off += n;
			progress = 1;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		log_debug("httpd: %s: write: %s", c->l->bound,
		    strerror(errno));
		httpd_conn_close(c, 1);
		return;
	}
	if (c->out_off == c->out.len) {
		c->out.len = 0;
		c->out_off = 0;
	} else if (c->out_off > HTTPD_READ_MAX && c->out_off > c->out.len / 2) {
		buf_consume(&c->out, c->out_off);
		c->out_off = 0;
	}
	if (progress)
		httpd_conn_touch(c);
	if (c->over && httpd_pending(c) < c->h->limits.out_high / 2) {
		c->over = 0;
		if (c->drain_cb != NULL) {
			c->depth++;
			c->drain_cb(c->drain_arg);
			c->depth--;
		}
	}
}

static void
httpd_conn_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct httpd_conn	*c = w->data;

	(void)loop;
	c->depth++;
	if (c->tls != NULL && !httpd_tls_done(c->tls)) {
		httpd_conn_handshake(c);
		if (c->dead || !httpd_tls_done(c->tls))
			goto out;
		revents |= EV_READ;
	}
	if (revents & EV_WRITE)
		httpd_conn_flush(c);
	if (!c->dead && (revents & EV_READ))
		httpd_conn_fill(c);
out:
	c->depth--;
	httpd_conn_process(c);
}

static void
httpd_conn_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct httpd_conn	*c = w->data;

	(void)loop;
	(void)revents;
	if (!c->shut)
		log_debug("httpd: %s: idle for %.0f s, closed", c->l->bound,
		    c->h->limits.idle_timeout);
	httpd_conn_close(c, 1);
	httpd_conn_process(c);
}

static void
httpd_conn_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	httpd_conn_process(w->data);
}

void
httpd_conn_new(struct httpd *h, struct httpd_listener *l, int fd)
{
	struct httpd_conn	*c;

	c = xcalloc(1, sizeof *c);
	c->h = h;
	c->l = l;
	c->fd = fd;
	if (l->tls != NULL &&
	    (c->tls = httpd_tls_conn_new(l->tls, fd)) == NULL) {
		log_warnx("httpd: %s: cannot set up TLS for a connection",
		    l->bound);
		close(fd);
		free(c);
		return;
	}
	c->tls_want = HTTPD_TLS_READ;
	ev_io_init(&c->rd, httpd_conn_io_cb, fd, EV_READ);
	ev_io_init(&c->wr, httpd_conn_io_cb, fd, EV_WRITE);
	ev_init(&c->idle, httpd_conn_idle_cb);
	c->idle.repeat = h->limits.idle_timeout;
	ev_timer_init(&c->kick, httpd_conn_kick_cb, 0., 0.);
	c->rd.data = c->wr.data = c->idle.data = c->kick.data = c;
	TAILQ_INSERT_TAIL(&h->conns, c, entry);
	h->nconns++;
	httpd_conn_process(c);
}

/* The handler is told its request ended without it: once. */
void
httpd_notify_close(struct httpd_conn *c)
{
	void	(*cb)(void *) = c->close_cb;

	c->close_cb = NULL;
	c->drain_cb = NULL;
	if (cb != NULL && c->state == HTTPD_C_REQ && c->resp != HTTPD_R_DONE) {
		c->depth++;
		cb(c->close_arg);
		c->depth--;
	}
}

/*
 * Closed at once: the fd and the watchers go now, the memory once no
 * callback of ours is under way (httpd_conn_process frees it).
 */
void
httpd_conn_close(struct httpd_conn *c, int notify)
{
	struct ev_loop	*loop = c->h->loop;

	if (c->dead)
		return;
	c->dead = 1;
	ev_io_stop(loop, &c->rd);
	ev_io_stop(loop, &c->wr);
	ev_timer_stop(loop, &c->idle);
	ev_timer_stop(loop, &c->kick);
	if (c->tls != NULL) {
		httpd_tls_conn_free(c->tls);
		c->tls = NULL;
	}
	close(c->fd);
	c->fd = -1;
	TAILQ_REMOVE(&c->h->conns, c, entry);
	c->h->nconns--;
	if (notify)
		httpd_notify_close(c);
	c->close_cb = NULL;
	c->drain_cb = NULL;
}

void
httpd_conn_free(struct httpd_conn *c)
{
	buf_free(&c->in);
	buf_free(&c->out);
	buf_free(&c->body);
	buf_free(&c->headers);
	free(c->store);
	free(c);
}

void
httpd_conn_queue(struct httpd_conn *c, const void *p, size_t len)
{
	if (c->dead || len == 0)
		return;
	buf_add(&c->out, p, len);
	if (httpd_pending(c) >= c->h->limits.out_high)
		c->over = 1;
	if (c->tls == NULL || httpd_tls_done(c->tls))
		ev_io_start(c->h->loop, &c->wr);
}

/* State changed outside our callbacks: take it up on the loop's next turn. */
void
httpd_conn_kick(struct httpd_conn *c)
{
	if (!c->dead && !ev_is_active(&c->kick))
		ev_timer_start(c->h->loop, &c->kick);
}

/* The request is over, body and response: the next one, or the end. */
void
httpd_conn_next(struct httpd_conn *c)
{
	free(c->store);
	c->store = NULL;
	memset(&c->req, 0, sizeof c->req);
	buf_free(&c->body);
	buf_free(&c->headers);
	c->body_mode = HTTPD_B_NONE;
	c->body_cb = NULL;
	c->paused = 0;
	c->resp = HTTPD_R_NONE;
	c->state = c->keep_alive ? HTTPD_C_HEAD : HTTPD_C_CLOSING;
}

/* A new request: its head parsed into c->req, c->store. */
static void
httpd_conn_begin(struct httpd_conn *c)
{
	struct httpd	*h = c->h;

	c->state = HTTPD_C_REQ;
	c->keep_alive = c->req.keep_alive;
	c->continued = 0;
	c->body_mode = HTTPD_B_NONE;
	c->body_left = c->req.content_length > 0 ? c->req.content_length : 0;
	wire_chunked_init(&c->chunked, 0);
	c->body_done = !c->req.has_body;
	c->body_started = 0;
	c->discarded = 0;
	c->paused = 0;
	c->resp = HTTPD_R_NONE;
	c->resp_raw = c->req.minor == 0;
	c->head_only = strcmp(c->req.method, "HEAD") == 0;
	c->req.authorized = httpd_authorized(h, c->req.authorization);
	if (!c->req.authorized && !httpd_public(h, c->req.path)) {
		httpd_header(c, "WWW-Authenticate: Bearer\r\n");
		httpd_error(c, 401, "missing or wrong bearer token", NULL);
		return;
	}
	h->handler(c, &c->req, h->arg);
}

/* Between requests: 1 if a head was taken (or refused), 0 for more. */
static int
httpd_conn_head(struct httpd_conn *c)
{
	struct httpd	*h = c->h;
	const char	*why;
	char		 fields[64];
	size_t		 n, skip, lim;
	int		 rc;

	/* Blank lines before a request line are let by (RFC 9112 2.2). */
	for (skip = 0; skip < c->in.len && (c->in.data[skip] == '\r' ||
	    c->in.data[skip] == '\n'); skip++)
		;
	buf_consume(&c->in, skip);
	lim = c->in.len < h->limits.head_max ? c->in.len : h->limits.head_max;
	if ((n = wire_head_end(c->in.data, lim)) == 0) {
		if (c->in.len < h->limits.head_max)
			return (0);
		snprintf(fields, sizeof fields, "\"limit\":\"max_header\","
		    "\"max\":%zu", h->limits.head_max);
		httpd_reject(c, 431, "request head too large", fields);
		return (1);
	}
	c->store = xmalloc(n + 1);
	rc = httpd_parse_head(c->in.data, n, &c->req, c->store, &why);
	buf_consume(&c->in, n);
	if (rc != 0) {
		free(c->store);
		c->store = NULL;
		httpd_reject(c, rc, why, NULL);
		return (1);
	}
	httpd_conn_begin(c);
	return (1);
}

/* Which watchers run, for what the connection waits on now. */
static void
httpd_conn_update(struct httpd_conn *c)
{
	struct ev_loop	*loop = c->h->loop;
	int		 rd, wr, idle;

	if (c->tls != NULL && !httpd_tls_done(c->tls)) {
		rd = c->tls_want == HTTPD_TLS_READ;
		wr = c->tls_want == HTTPD_TLS_WRITE;
	} else {
		wr = httpd_pending(c) > 0;
		if (c->state == HTTPD_C_CLOSING)
			rd = c->shut;
		else
			rd = !c->paused && c->in.len < httpd_conn_cap(c);
		rd = rd && !c->eof;
	}
	if (rd && !ev_is_active(&c->rd))
		ev_io_start(loop, &c->rd);
	else if (!rd && ev_is_active(&c->rd))
		ev_io_stop(loop, &c->rd);
	if (wr && !ev_is_active(&c->wr))
		ev_io_start(loop, &c->wr);
	else if (!wr && ev_is_active(&c->wr))
		ev_io_stop(loop, &c->wr);
	/* Bytes TLS already took off the socket wake no watcher. */
	if (rd && c->tls != NULL && httpd_tls_pending(c->tls))
		ev_feed_event(loop, &c->rd, EV_READ);

	idle = c->state != HTTPD_C_REQ || (c->body_mode != HTTPD_B_NONE &&
	    !c->body_done && !c->paused);
	if (idle && !ev_is_active(&c->idle))
		ev_timer_again(loop, &c->idle);
	else if (!idle && ev_is_active(&c->idle))
		ev_timer_stop(loop, &c->idle);
}

/*
 * Closing, the answer out: our side is shut and what the client still
 * sends is drained a little while, so that closing with unread bytes
 * does not reset the connection under the answer before it is read.
 */
static void
httpd_conn_linger(struct httpd_conn *c)
{
	if (c->tls != NULL)
		httpd_tls_notify(c->tls);
	shutdown(c->fd, SHUT_WR);
	c->shut = 1;
	buf_free(&c->in);
	ev_timer_stop(c->h->loop, &c->idle);
	c->idle.repeat = c->h->limits.idle_timeout < HTTPD_LINGER ?
	    c->h->limits.idle_timeout : HTTPD_LINGER;
	ev_timer_again(c->h->loop, &c->idle);
}

/* The client sent no more: what that means depends on where we are. */
static void
httpd_conn_eof(struct httpd_conn *c)
{
	switch (c->state) {
	case HTTPD_C_HEAD:
		if (httpd_pending(c) > 0)
			c->state = HTTPD_C_CLOSING;
		else
			httpd_conn_close(c, 0);
		break;
	case HTTPD_C_REQ:
		/* A client that half-closes is taken to be gone. */
		httpd_conn_close(c, 1);
		break;
	case HTTPD_C_DISCARD:
		httpd_conn_close(c, 0);
		break;
	case HTTPD_C_CLOSING:
		if (c->shut || httpd_pending(c) == 0)
			httpd_conn_close(c, 0);
		break;
	}
}

/*
 * Take what the input holds as far as it goes: heads, bodies, requests
 * in order. Every entry from the loop ends here; so does a connection,
 * freed here once no callback of ours is under way.
 */
static void
httpd_conn_process(struct httpd_conn *c)
{
	if (c->dead) {
		if (c->depth == 0)
			httpd_conn_free(c);
		return;
	}
	c->depth++;
	while (!c->dead) {
		if (c->state == HTTPD_C_HEAD) {
			if (c->tls != NULL && !httpd_tls_done(c->tls))
				break;
			if (httpd_conn_head(c) == 0)
				break;
			continue;
		}
		if (c->state != HTTPD_C_REQ && c->state != HTTPD_C_DISCARD)
			break;
		if (c->body_mode != HTTPD_B_NONE && !c->paused &&
		    !c->body_done) {
			if (httpd_body_feed(c) == 0)
				break;
			continue;
		}
		if (c->state == HTTPD_C_DISCARD && c->body_done) {
			httpd_conn_next(c);
			continue;
		}
		break;
	}
	if (!c->dead && c->eof)
		httpd_conn_eof(c);
	if (!c->dead && c->state == HTTPD_C_CLOSING && !c->shut &&
	    httpd_pending(c) == 0)
		httpd_conn_linger(c);
	c->depth--;
	if (c->dead) {
		if (c->depth == 0)
			httpd_conn_free(c);
		return;
	}
	httpd_conn_update(c);
}

size_t
httpd_pending(struct httpd_conn *c)
{
	return (c->out.len - c->out_off);
}

int
httpd_over(struct httpd_conn *c)
{
	return (httpd_pending(c) >= c->h->limits.out_high);
}

void
httpd_set_drain_cb(struct httpd_conn *c, void (*cb)(void *), void *arg)
{
	c->drain_cb = cb;
	c->drain_arg = arg;
}

void
httpd_set_close_cb(struct httpd_conn *c, void (*cb)(void *), void *arg)
{
	c->close_cb = cb;
	c->close_arg = arg;
}

void
httpd_abort(struct httpd_conn *c)
{
	if (c->dead)
		return;
	httpd_conn_close(c, 1);
	if (c->depth == 0)
		httpd_conn_free(c);
}
