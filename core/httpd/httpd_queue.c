/*
 * What the files above may do to a connection without running any of
 * the state machine (httpd_conn.c), which they are below: queue output
 * (bounded by out_high, with the drain callback), kick it to take up a
 * change on the loop's next turn, move it to its next request, tell the
 * handler its request ended without it, and close and free it. The
 * handler's own calls (httpd_body.c, httpd_resp.c) come down here, so
 * that no callback of ours runs inside them (httpd_conn.c says why).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "httpd.h"
#include "httpd_int.h"

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

void
httpd_set_drain_cb(struct httpd_conn *c, void (*cb)(void *), void *arg)
{
	c->drain_cb = cb;
	c->drain_arg = arg;
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
	/* A head already in (pipelined) is timed from now. */
	c->head_start = c->in.len > 0 ? ev_now(c->h->loop) : 0;
}

void
httpd_set_close_cb(struct httpd_conn *c, void (*cb)(void *), void *arg)
{
	c->close_cb = cb;
	c->close_arg = arg;
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

/* Waiting for a head: on its list, oldest first, where room is found. */
void
httpd_conn_park(struct httpd_conn *c)
{
	struct httpd_conns	*want = NULL;

	if (!c->dead && c->state == HTTPD_C_HEAD)
		want = c->authed ? &c->h->idle_auth : &c->h->idle_unauth;
	if (want == c->parked)
		return;
	if (c->parked != NULL)
		TAILQ_REMOVE(c->parked, c, park);
	if (want != NULL)
		TAILQ_INSERT_TAIL(want, c, park);
	c->parked = want;
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
	ev_timer_stop(loop, &c->timer);
	ev_timer_stop(loop, &c->kick);
	if (c->tls != NULL) {
		httpd_tls_conn_free(c->tls);
		c->tls = NULL;
	}
	close(c->fd);
	c->fd = -1;
	TAILQ_REMOVE(&c->h->conns, c, entry);
	c->h->nconns--;
	if (!c->authed)
		c->h->nunauth--;
	httpd_conn_park(c);
	httpd_peer_put(c->h, c->peer);
	c->peer = NULL;
	httpd_rec_end(c, 0);
	/* A WebSocket's owner hears of its end, however it came. */
	if (notify || c->ws != NULL)
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
	buf_free(&c->rec);
	buf_free(&c->rec_events);
	free(c->store);
	if (c->ws != NULL) {
		wire_ws_free(&c->ws->dec);
		free(c->ws);
	}
	free(c);
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
