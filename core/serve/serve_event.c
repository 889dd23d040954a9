/*
 * The server's event stream, GET /v1/events: a sandbox's state or an
 * exec's end, to every subscriber, with a ping comment now and then; the
 * states' names every other file shows; and the requests that wait for a
 * sandbox's next state (its create, its delete, its pause or resume).
 */
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "serve_int.h"

const char *
serve_state_name(enum serve_state s)
{
	switch (s) {
	case SERVE_BOOTING:
		return ("booting");
	case SERVE_READY:
		return ("ready");
	case SERVE_PAUSED:
		return ("paused");
	case SERVE_STOPPING:
		return ("stopping");
	case SERVE_DEAD:
		return ("dead");
	}
	return ("?");
}

/* One event to every subscriber; one too far behind is dropped. */
void
serve_event(struct serve *srv, const char *name, const char *data)
{
	struct serve_sub	*sub, *next;

	TAILQ_FOREACH_SAFE(sub, &srv->subs, entry, next) {
		if (httpd_pending(sub->conn) > SERVE_EVENTS_HIGH) {
			log_debug("dropping an events subscriber that does "
			    "not read");
			httpd_abort(sub->conn);	/* its close_cb frees it */
			continue;
		}
		httpd_sse_event(sub->conn, name, data, strlen(data));
	}
}

static void
serve_sub_close_cb(void *arg)
{
	struct serve_sub	*sub = arg;

	TAILQ_REMOVE(&sub->srv->subs, sub, entry);
	free(sub);
}

/* GET /v1/events: where things stand, then each change. */
int
serve_events(const struct serve_req *r, struct serve_error *err)
{
	struct serve		*srv = r->srv;
	struct httpd_conn	*conn = r->conn;
	struct serve_sub	*sub;
	struct serve_sb		*s;

	(void)err;
	sub = xcalloc(1, sizeof *sub);
	sub->srv = srv;
	sub->conn = conn;
	httpd_set_close_cb(conn, serve_sub_close_cb, sub);
	TAILQ_INSERT_TAIL(&srv->subs, sub, entry);
	httpd_sse_start(conn);
	httpd_sse_comment(conn, "qsup events");
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		struct buf	b = { 0 };

		buf_puts(&b, "{\"name\":");
		buf_json_string(&b, s->name);
		buf_printf(&b, ",\"state\":\"%s\",\"reason\":null}",
		    serve_state_name(s->state));
		httpd_sse_event(conn, "sandbox", b.data, b.len);
		buf_free(&b);
	}
	return (0);
}

static void
serve_events_ping_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve		*srv = w->data;
	struct serve_sub	*sub;

	(void)loop;
	(void)revents;
	TAILQ_FOREACH(sub, &srv->subs, entry)
		httpd_sse_comment(sub->conn, "ping");
}

/* The subscribers' list, and the ping that keeps them open. */
void
serve_events_init(struct serve *srv)
{
	TAILQ_INIT(&srv->subs);
	ev_timer_init(&srv->events_ping, serve_events_ping_cb,
	    SERVE_EVENTS_PING, SERVE_EVENTS_PING);
	srv->events_ping.data = srv;
	ev_timer_start(srv->loop, &srv->events_ping);
}

/* A sandbox's state, as an event. */
void
serve_sb_event(struct serve_sb *s)
{
	struct buf	b = { 0 };

	if (s->pool != NULL)
		return;		/* the pool's are not the API's yet */
	buf_puts(&b, "{\"name\":");
	buf_json_string(&b, s->name);
	buf_printf(&b, ",\"state\":\"%s\",\"reason\":",
	    s->deleting && s->state == SERVE_DEAD ? "deleted" :
	    serve_state_name(s->state));
	if (s->reason != NULL)
		buf_json_string(&b, s->reason);
	else
		buf_puts(&b, "null");
	if (s->phase != NULL) {
		buf_puts(&b, ",\"phase\":");
		buf_json_string(&b, s->phase);
	}
	buf_puts(&b, "}");
	serve_event(s->srv, "sandbox", b.data);
	buf_free(&b);
}

void
serve_waiters_free(struct serve_waiters *w)
{
	struct serve_waiter	*x;

	while ((x = TAILQ_FIRST(w)) != NULL) {
		TAILQ_REMOVE(w, x, entry);
		free(x->arg);
		free(x);
	}
}

static void
serve_waiter_close_cb(void *arg)
{
	struct serve_waiter	*x = arg;

	x->conn = NULL;		/* answered to nobody */
}

void
serve_wait(struct serve_waiters *w, struct serve_sb *s,
    struct httpd_conn *conn)
{
	struct serve_waiter	*x;

	x = xcalloc(1, sizeof *x);
	x->conn = conn;
	x->sb = s;
	httpd_set_close_cb(conn, serve_waiter_close_cb, x);
	TAILQ_INSERT_TAIL(w, x, entry);
}

/* Answer every waiter of w with status and body (JSON). */
void
serve_answer(struct serve_waiters *w, int status, const char *body)
{
	struct serve_waiter	*x;

	while ((x = TAILQ_FIRST(w)) != NULL) {
		TAILQ_REMOVE(w, x, entry);
		if (x->conn != NULL)
			httpd_set_close_cb(x->conn, NULL, NULL);
		if (x->fn != NULL)
			x->fn(x->conn, status, body, x->arg);
		else if (x->conn != NULL)
			httpd_respond_json(x->conn, status, body,
			    strlen(body));
		free(x);
	}
}

/* conn's waiter in w answered by fn (arg its): 0, or -1 if none. */
int
serve_wait_hook(struct serve_waiters *w, struct httpd_conn *conn,
    serve_wait_fn *fn, void *arg)
{
	struct serve_waiter	*x;

	TAILQ_FOREACH(x, w, entry) {
		if (x->conn == conn && x->fn == NULL) {
			x->fn = fn;
			x->arg = arg;
			return (0);
		}
	}
	return (-1);
}

struct serve_sb *
serve_find(struct serve *srv, const char *name)
{
	struct serve_sb	*s;

	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->pool == NULL && strcmp(s->name, name) == 0)
			return (s);
	}
	return (NULL);
}

struct serve_body {
	struct serve		*srv;
	char			*name;
	unsigned long long	 serial;
	serve_body_fn		*fn;
	void			*arg;
};

static void
serve_body_free(struct serve_body *b, int arg_too)
{
	if (arg_too)
		free(b->arg);
	free(b->name);
	free(b);
}

static void
serve_body_close_cb(void *arg)
{
	serve_body_free(arg, 1);
}

static void
serve_body_cb(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct serve_body	*b = arg;
	struct serve_sb		*s;

	httpd_set_close_cb(conn, NULL, NULL);
	s = serve_find(b->srv, b->name);
	if (s == NULL || s->serial != b->serial) {
		serve_error_now(conn, 404, "the sandbox was deleted while the "
		    "request's body came in", NULL);
		serve_body_free(b, 1);
		return;
	}
	b->fn(conn, s, body, len, b->arg);
	serve_body_free(b, 0);
}

void
serve_sb_read_body(const struct serve_req *r, serve_body_fn *fn, void *arg)
{
	struct serve_body	*b;

	b = xcalloc(1, sizeof *b);
	b->srv = r->srv;
	b->name = xstrdup(r->sb->name);
	b->serial = r->sb->serial;
	b->fn = fn;
	b->arg = arg;
	httpd_set_close_cb(r->conn, serve_body_close_cb, b);
	httpd_read_body(r->conn, serve_body_cb, b);
}

/* A sandbox's or a snapshot's name: 1-63 of a-z 0-9 _ . -, from a-z 0-9. */
int
serve_name_ok(const char *n)
{
	size_t	i, len = strlen(n);

	if (len == 0 || len > SERVE_NAME_MAX)
		return (0);
	if (!((n[0] >= 'a' && n[0] <= 'z') || (n[0] >= '0' && n[0] <= '9')))
		return (0);
	for (i = 0; i < len; i++) {
		if (!((n[i] >= 'a' && n[i] <= 'z') ||
		    (n[i] >= '0' && n[i] <= '9') || n[i] == '_' ||
		    n[i] == '.' || n[i] == '-'))
			return (0);
	}
	return (1);
}
