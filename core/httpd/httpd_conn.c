/*
 * One client connection: a state machine on the loop. Bytes come into a
 * bounded input buffer (c->in) and leave through a queue (c->out) that
 * the handler watches; heads are cut from the input and handed to the
 * handler one request at a time, in order, however many a client sends
 * at once. Whatever the handler calls, no callback of ours runs inside
 * that call (but httpd_abort's close_cb): state changes are taken up by
 * httpd_conn_process on the next turn of the loop (c->kick), so a
 * handler never finds itself re-entered. Each request's bearer token is
 * checked here, against the server's (c->h), in constant time.
 *
 * What httpd.h leaves to us:
 * - close_cb fires when the request ends other than by the handler's own
 *   response: the client closed or half-closed, a read or write failed,
 *   the body could not be taken (413 past body_max, 400 for bad chunked
 *   framing, 408 when it stalled past body_timeout: the server answers
 *   that itself if no response had begun), httpd_abort, or httpd_free.
 * - One timer, one deadline at a time (enum httpd_clock): the head's, from
 *   the connection's start or the next head's first byte, whatever comes
 *   in meanwhile; idle_timeout between requests of a kept-alive
 *   connection, and while a response is drained after its end;
 *   body_timeout between two bytes of a body being read. None while the
 *   handler holds the request otherwise (an SSE stream, an exec's output,
 *   a slow answer) or has paused the body: a quiet stream is not idle.
 * - A body left unread when the response ends is read and dropped, and
 *   the connection kept, unless the client waits for "100 Continue" that
 *   never went out, more than body_max is still due by Content-Length, or
 *   a chunked one runs past body_max: then it is closed (the response
 *   says "Connection: close" whenever that is known in time).
 * - A buffered body's bytes are valid until the response ends.
 * - No new request is taken while the output queue is over out_high.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
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

/*
 * Some progress on the wire: a body's or an answer's clock starts again;
 * a head's and a linger's do not, or a byte a second would hold them.
 */
static void
httpd_conn_touch(struct httpd_conn *c)
{
	if ((c->clock == HTTPD_K_BODY || c->clock == HTTPD_K_SEND) &&
	    ev_is_active(&c->timer))
		ev_timer_again(c->h->loop, &c->timer);
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
	if (progress && c->state == HTTPD_C_HEAD && c->head_start == 0)
		c->head_start = ev_now(c->h->loop);
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

/* A head that did not come in time: 408 if some of it did, else closed. */
static void
httpd_conn_head_late(struct httpd_conn *c)
{
	char	fields[64];

	c->h->shed[HTTPD_SHED_HEAD_TIMEOUT]++;
	if (c->in.len == 0 || (c->tls != NULL && !httpd_tls_done(c->tls))) {
		log_debug("httpd: %s: no request in %g s, closed",
		    c->l->bound, c->h->limits.head_timeout);
		httpd_conn_close(c, 0);
		return;
	}
	snprintf(fields, sizeof fields, "\"limit\":\"head_timeout\","
	    "\"max\":%g", c->h->limits.head_timeout);
	httpd_reject(c, 408, "request head timed out", fields);
}

static void
httpd_conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct httpd_conn	*c = w->data;
	struct httpd		*h = c->h;
	char			 fields[64];

	(void)loop;
	(void)revents;
	switch (c->clock) {
	case HTTPD_K_HEAD:
		httpd_conn_head_late(c);
		break;
	case HTTPD_K_IDLE:
		h->shed[HTTPD_SHED_IDLE_TIMEOUT]++;
		log_debug("httpd: %s: kept alive with no request for %g s, "
		    "closed", c->l->bound, h->limits.idle_timeout);
		httpd_conn_close(c, 0);
		break;
	case HTTPD_K_BODY:
		h->shed[HTTPD_SHED_BODY_TIMEOUT]++;
		snprintf(fields, sizeof fields, "\"limit\":\"body_timeout\","
		    "\"max\":%g", h->limits.body_timeout);
		if (c->state == HTTPD_C_REQ)
			httpd_body_failed(c, 408, "request body timed out",
			    fields);
		else
			httpd_conn_close(c, 0);
		break;
	case HTTPD_K_SEND:
		h->shed[HTTPD_SHED_SEND_TIMEOUT]++;
		log_debug("httpd: %s: the answer left unread for %g s, closed",
		    c->l->bound, h->limits.idle_timeout);
		httpd_conn_close(c, 1);
		break;
	case HTTPD_K_LINGER:
	case HTTPD_K_NONE:
		httpd_conn_close(c, 1);
		break;
	}
	/* Spent: httpd_conn_update sets the next one. */
	c->clock = HTTPD_K_NONE;
	httpd_conn_process(c);
}

static void
httpd_conn_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	httpd_conn_process(w->data);
}

/*
 * A connection taken (httpd_admit's): peer's count already has it. Its
 * head's clock starts now, as nginx's client_header_timeout does for a
 * connection's first request: one that sends nothing is not kept.
 */
void
httpd_conn_new(struct httpd *h, struct httpd_listener *l, int fd,
    struct httpd_peer *peer)
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
		httpd_peer_put(h, peer);
		close(fd);
		free(c);
		return;
	}
	c->peer = peer;
	c->tls_want = HTTPD_TLS_READ;
	c->head_start = ev_now(h->loop);
	ev_io_init(&c->rd, httpd_conn_io_cb, fd, EV_READ);
	ev_io_init(&c->wr, httpd_conn_io_cb, fd, EV_WRITE);
	ev_init(&c->timer, httpd_conn_timer_cb);
	ev_timer_init(&c->kick, httpd_conn_kick_cb, 0., 0.);
	c->rd.data = c->wr.data = c->timer.data = c->kick.data = c;
	TAILQ_INSERT_TAIL(&h->conns, c, entry);
	h->nconns++;
	h->nunauth++;
	httpd_conn_process(c);
}

/*
 * A request carried the token, or a key its handler checked: the
 * connection is no longer the first to go.
 */
void
httpd_conn_authed(struct httpd_conn *c)
{
	if (c->authed)
		return;
	c->authed = 1;
	c->h->nunauth--;
}

/*
 * Whether the Authorization value carries the token: the time taken
 * depends on the lengths only, never on where the bytes differ.
 */
static int
httpd_authorized(struct httpd *h, const char *auth)
{
	const char		*given;
	size_t			 glen, tlen, i;
	volatile unsigned char	 diff;

	if (h->token == NULL)
		return (1);
	if (auth == NULL || strncasecmp(auth, "Bearer ", 7) != 0)
		return (0);
	for (given = auth + 7; *given == ' '; given++)
		;
	glen = strlen(given);
	tlen = strlen(h->token);
	diff = glen != tlen;
	for (i = 0; i < tlen; i++)
		diff |= (unsigned char)h->token[i] ^
		    (unsigned char)given[i < glen ? i : 0];
	return (diff == 0);
}

/* A path the server answers without the token (httpd_set_token). */
static int
httpd_public(struct httpd *h, const char *path)
{
	size_t	i, n;

	for (i = 0; h->public != NULL && h->public[i] != NULL; i++) {
		n = strlen(h->public[i]);
		if (n > 0 && h->public[i][n - 1] == '*' &&
		    strncmp(h->public[i], path, n - 1) == 0)
			return (1);
		if (strcmp(h->public[i], path) == 0)
			return (1);
	}
	return (0);
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
	c->route = NULL;
	c->resp_raw = c->req.minor == 0;
	c->head_only = strcmp(c->req.method, "HEAD") == 0;
	c->requests++;
	c->req.authorized = httpd_authorized(h, c->req.authorization) ||
	    (h->token != NULL && httpd_upgrading(&c->req) &&
	    httpd_ws_token(&c->req, h->token));
	if (c->req.authorized)
		httpd_conn_authed(c);
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
	if (c->in.len == 0)
		return (0);
	lim = c->in.len < h->limits.head_max ? c->in.len : h->limits.head_max;
	if ((n = wire_head_end(c->in.data, lim)) == 0) {
		if (c->in.len < h->limits.head_max)
			return (0);
		snprintf(fields, sizeof fields, "\"limit\":\"max_header\","
		    "\"max\":%zu", h->limits.head_max);
		httpd_reject(c, 431, "request head too large", fields);
		return (1);
	}
	/* The arena, then the head as sent (httpd_field reads it). */
	c->store = xmalloc(2 * n + 1);
	rc = httpd_parse_head(c->in.data, n, &c->req, c->store, &why);
	memcpy(c->store + n + 1, c->in.data, n);
	c->req.head = c->store + n + 1;
	c->req.head_len = n;
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

/* The deadline for what the connection waits on now. */
static enum httpd_clock
httpd_conn_clock_want(struct httpd_conn *c)
{
	if (c->shut)
		return (HTTPD_K_LINGER);
	if (c->state != HTTPD_C_REQ && httpd_pending(c) > 0)
		return (HTTPD_K_SEND);
	switch (c->state) {
	case HTTPD_C_HEAD:
		if (c->requests == 0 || c->head_start != 0 ||
		    (c->tls != NULL && !httpd_tls_done(c->tls)))
			return (HTTPD_K_HEAD);
		return (HTTPD_K_IDLE);
	case HTTPD_C_REQ:
		if (c->body_mode != HTTPD_B_NONE && !c->body_done &&
		    !c->paused)
			return (HTTPD_K_BODY);
		return (HTTPD_K_NONE);
	case HTTPD_C_DISCARD:
		return (HTTPD_K_BODY);
	case HTTPD_C_CLOSING:
		break;
	}
	return (HTTPD_K_SEND);
}

/* The timer set for that deadline, unless it already is. */
static void
httpd_conn_clock(struct httpd_conn *c)
{
	struct ev_loop		*loop = c->h->loop;
	const struct httpd_limits *lim = &c->h->limits;
	enum httpd_clock	 want = httpd_conn_clock_want(c);
	double			 after = 0;

	if (want == c->clock && (want != HTTPD_K_HEAD ||
	    c->clock_from == c->head_start))
		return;
	ev_timer_stop(loop, &c->timer);
	c->clock = want;
	switch (want) {
	case HTTPD_K_NONE:
		return;
	case HTTPD_K_HEAD:
		c->clock_from = c->head_start;
		after = c->head_start + lim->head_timeout - ev_now(loop);
		if (after < 0)
			after = 0;
		ev_timer_set(&c->timer, after, 0.);
		break;
	case HTTPD_K_IDLE:
	case HTTPD_K_SEND:
		ev_timer_set(&c->timer, lim->idle_timeout, lim->idle_timeout);
		break;
	case HTTPD_K_BODY:
		ev_timer_set(&c->timer, lim->body_timeout, lim->body_timeout);
		break;
	case HTTPD_K_LINGER:
		after = lim->idle_timeout < HTTPD_LINGER ? lim->idle_timeout :
		    HTTPD_LINGER;
		ev_timer_set(&c->timer, after, 0.);
		break;
	}
	ev_timer_start(loop, &c->timer);
}

/* Which watchers run, for what the connection waits on now. */
static void
httpd_conn_update(struct httpd_conn *c)
{
	struct ev_loop	*loop = c->h->loop;
	int		 rd, wr;

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
	httpd_conn_clock(c);
	httpd_conn_park(c);
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
		if (c->ws != NULL) {
			/* A WebSocket: frames, not requests, from now on. */
			if (c->state == HTTPD_C_REQ)
				httpd_ws_input(c);
			break;
		}
		if (c->state == HTTPD_C_HEAD) {
			if (c->tls != NULL && !httpd_tls_done(c->tls))
				break;
			/* A client that sends and never reads is held here. */
			if (httpd_over(c))
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
