/*
 * "qsup serve": the API's front: the router, JSON bodies and their
 * errors, the event stream and the metrics.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

/* The upper bounds of qsup_exec_seconds' buckets; +Inf follows. */
static const double serve_exec_le[] = {
	0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
};

/*
 * A request's JSON body, an object: 0 with *j, or -1 once answered 400
 * naming where it broke.
 */
int
serve_json_body(struct httpd_conn *conn, const char *body, size_t len,
    json_t **j)
{
	json_error_t	 err;
	char		*msg;

	*j = NULL;
	if (len == 0) {
		*j = json_object();
		return (0);
	}
	if ((*j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &err)) ==
	    NULL) {
		xasprintf(&msg, "malformed JSON at line %d, column %d: %s",
		    err.line, err.column, err.text);
		httpd_error(conn, 400, msg, NULL);
		free(msg);
		return (-1);
	}
	if (!json_is_object(*j)) {
		json_decref(*j);
		*j = NULL;
		httpd_error(conn, 400, "the body must be a JSON object", NULL);
		return (-1);
	}
	return (0);
}

/* 400 for a field not in allowed (NULL-ended): -1 once answered. */
int
serve_check_fields(struct httpd_conn *conn, json_t *j,
    const char *const *allowed)
{
	const char	*key;
	json_t		*v;
	struct buf	 extra = { 0 }, msg = { 0 };
	size_t		 i;

	json_object_foreach(j, key, v) {
		for (i = 0; allowed[i] != NULL; i++) {
			if (strcmp(allowed[i], key) == 0)
				break;
		}
		if (allowed[i] != NULL)
			continue;
		buf_puts(&msg, "unknown field ");
		buf_json_string(&msg, key);
		buf_puts(&msg, "; known: ");
		for (i = 0; allowed[i] != NULL; i++)
			buf_printf(&msg, "%s%s", i > 0 ? ", " : "", allowed[i]);
		buf_puts(&extra, "\"field\":");
		buf_json_string(&extra, key);
		httpd_error(conn, 400, msg.data, extra.data);
		buf_free(&msg);
		buf_free(&extra);
		return (-1);
	}
	return (0);
}

/* 400 naming field and why: -1, for "return (serve_bad_field(...))". */
int
serve_bad_field(struct httpd_conn *conn, const char *field, const char *why)
{
	struct buf	 extra = { 0 }, msg = { 0 };

	buf_printf(&msg, "%s: %s", field, why);
	buf_puts(&extra, "\"field\":");
	buf_json_string(&extra, field);
	httpd_error(conn, 400, msg.data, extra.data);
	buf_free(&msg);
	buf_free(&extra);
	return (-1);
}

void
serve_limit(struct httpd_conn *conn, const char *msg, const char *limit,
    unsigned long long max)
{
	char	*extra;

	xasprintf(&extra, "\"limit\":\"%s\",\"max\":%llu", limit, max);
	httpd_error(conn, 503, msg, extra);
	free(extra);
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
serve_metrics(struct serve *srv, struct httpd_conn *conn)
{
	static const char *const classes[] = {
		"1xx", "2xx", "3xx", "4xx", "5xx", "other"
	};
	struct serve_sb		*s;
	struct serve_exec	*e;
	struct net_stats	 st;
	unsigned long long	 n[4] = { 0 }, up, down, running = 0, cum = 0;
	unsigned long long	 answered[HTTPD_CLASSES];
	unsigned long long	 shed[HTTPD_SHED_N];
	struct buf		 b = { 0 };
	size_t			 i;

	up = srv->m.proxy_up;
	down = srv->m.proxy_down;
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		n[s->state]++;
		TAILQ_FOREACH(e, &s->execs, entry)
			running += serve_exec_running(e);
		if (s->sb != NULL && sandbox_net_of(s->sb) != NULL) {
			net_stats(sandbox_net_of(s->sb), &st);
			up += st.proxy_bytes_up;
			down += st.proxy_bytes_down;
		}
	}
	buf_puts(&b, "# HELP qsup_sandboxes Sandboxes by state.\n"
	    "# TYPE qsup_sandboxes gauge\n");
	for (i = 0; i < 4; i++)
		buf_printf(&b, "qsup_sandboxes{state=\"%s\"} %llu\n",
		    serve_state_name(i), n[i]);
	buf_puts(&b, "# HELP qsup_boots_total Sandboxes that came up, by "
	    "how they started.\n# TYPE qsup_boots_total counter\n");
	for (i = 0; i < 3; i++)
		buf_printf(&b, "qsup_boots_total{start=\"%s\"} %llu\n",
		    serve_boot_kinds[i], srv->m.boots[i]);
	buf_printf(&b, "# HELP qsup_restores_total Sandboxes restored from "
	    "a template.\n# TYPE qsup_restores_total counter\n"
	    "qsup_restores_total %llu\n", srv->m.boots[1] + srv->m.boots[2]);
	buf_printf(&b, "# HELP qsup_sandbox_deaths_total Sandboxes whose "
	    "QEMU died unasked.\n# TYPE qsup_sandbox_deaths_total counter\n"
	    "qsup_sandbox_deaths_total %llu\n", srv->m.deaths);
	buf_printf(&b, "# HELP qsup_execs_total Commands run.\n"
	    "# TYPE qsup_execs_total counter\nqsup_execs_total %llu\n"
	    "# HELP qsup_execs_running Commands running.\n"
	    "# TYPE qsup_execs_running gauge\nqsup_execs_running %llu\n",
	    srv->m.execs, running);
	buf_puts(&b, "# HELP qsup_exec_seconds Commands' time from request "
	    "to exit.\n# TYPE qsup_exec_seconds histogram\n");
	for (i = 0; i < sizeof serve_exec_le / sizeof serve_exec_le[0]; i++) {
		cum += srv->m.exec_buckets[i];
		buf_printf(&b, "qsup_exec_seconds_bucket{le=\"%g\"} %llu\n",
		    serve_exec_le[i], cum);
	}
	buf_printf(&b, "qsup_exec_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "qsup_exec_seconds_sum %.6f\nqsup_exec_seconds_count %llu\n",
	    srv->m.execs, srv->m.exec_seconds, srv->m.execs);
	buf_printf(&b, "# HELP qsup_proxy_bytes_total Bytes through the "
	    "network proxy.\n# TYPE qsup_proxy_bytes_total counter\n"
	    "qsup_proxy_bytes_total{direction=\"out\"} %llu\n"
	    "qsup_proxy_bytes_total{direction=\"in\"} %llu\n", up, down);
	buf_puts(&b, "# HELP qsup_http_requests_total API requests, by "
	    "status.\n# TYPE qsup_http_requests_total counter\n");
	httpd_answered(srv->httpd, answered);
	for (i = 0; i < HTTPD_CLASSES; i++)
		buf_printf(&b, "qsup_http_requests_total{code=\"%s\"} %llu\n",
		    classes[i], answered[i]);
	buf_printf(&b, "# HELP qsup_connections Open API connections.\n"
	    "# TYPE qsup_connections gauge\nqsup_connections %d\n",
	    httpd_connections(srv->httpd));
	buf_printf(&b, "# HELP qsup_connections_unauthenticated Open API "
	    "connections that have not yet sent the token.\n"
	    "# TYPE qsup_connections_unauthenticated gauge\n"
	    "qsup_connections_unauthenticated %d\n",
	    httpd_unauthenticated(srv->httpd));
	buf_puts(&b, "# HELP qsup_http_connections_closed_total API "
	    "connections closed or turned away by a limit, by the limit.\n"
	    "# TYPE qsup_http_connections_closed_total counter\n");
	httpd_shed(srv->httpd, shed);
	for (i = 0; i < HTTPD_SHED_N; i++)
		buf_printf(&b, "qsup_http_connections_closed_total"
		    "{reason=\"%s\"} %llu\n", httpd_shed_names[i], shed[i]);
	httpd_respond(conn, 200, "text/plain; version=0.0.4", b.data, b.len);
	buf_free(&b);
}

/* An exec's time, for the histogram. */
void
serve_exec_observe(struct serve *srv, double seconds)
{
	size_t	i;

	srv->m.execs++;
	srv->m.exec_seconds += seconds;
	for (i = 0; i < sizeof serve_exec_le / sizeof serve_exec_le[0]; i++) {
		if (seconds <= serve_exec_le[i]) {
			srv->m.exec_buckets[i]++;
			break;
		}
	}
}

static void
serve_sub_close_cb(void *arg)
{
	struct serve_sub	*sub = arg;

	TAILQ_REMOVE(&sub->srv->subs, sub, entry);
	free(sub);
}

static void
serve_events(struct serve *srv, struct httpd_conn *conn)
{
	struct serve_sub	*sub;
	struct serve_sb		*s;

	sub = xcalloc(1, sizeof *sub);
	sub->srv = srv;
	sub->conn = conn;
	httpd_set_close_cb(conn, serve_sub_close_cb, sub);
	TAILQ_INSERT_TAIL(&srv->subs, sub, entry);
	httpd_sse_start(conn);
	httpd_sse_comment(conn, "qsup events");
	/* Where things stand, first. */
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		struct buf	b = { 0 };

		buf_puts(&b, "{\"name\":");
		buf_json_string(&b, s->name);
		buf_printf(&b, ",\"state\":\"%s\",\"reason\":null}",
		    serve_state_name(s->state));
		httpd_sse_event(conn, "sandbox", b.data, b.len);
		buf_free(&b);
	}
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

static void
serve_method(struct httpd_conn *conn, const char *allow)
{
	char	*h;

	xasprintf(&h, "Allow: %s\r\n", allow);
	httpd_header(conn, h);
	free(h);
	httpd_error(conn, 405, "method not allowed here", NULL);
}

/* Every request: routed by its path. */
void
serve_handle(struct httpd_conn *conn, const struct httpd_req *req,
    void *arg)
{
	struct serve	*srv = arg;
	struct serve_sb	*s;
	const char	*m = req->method, *p = req->path, *rest;
	char		 name[SERVE_NAME_MAX + 2], *msg, *end;
	size_t		 n;
	unsigned long	 id;

	if (strcmp(p, "/v1/healthz") == 0) {
		if (strcmp(m, "GET") != 0)
			return (serve_method(conn, "GET"));
		httpd_respond_json(conn, 200, "{\"ok\":true,\"version\":\""
		    QSUP_VERSION "\"}", strlen("{\"ok\":true,\"version\":\""
		    QSUP_VERSION "\"}"));
		return;
	}
	if (strcmp(p, "/metrics") == 0) {
		if (strcmp(m, "GET") != 0)
			return (serve_method(conn, "GET"));
		return (serve_metrics(srv, conn));
	}
	if (strcmp(p, "/v1/events") == 0) {
		if (strcmp(m, "GET") != 0)
			return (serve_method(conn, "GET"));
		return (serve_events(srv, conn));
	}
	if (strcmp(p, "/v1/sandboxes") == 0) {
		if (strcmp(m, "GET") == 0)
			return (serve_list(srv, conn));
		if (strcmp(m, "POST") == 0)
			return (httpd_read_body(conn, serve_create_body, srv));
		return (serve_method(conn, "GET, POST"));
	}
	if (strncmp(p, "/v1/sandboxes/", 14) != 0) {
		httpd_error(conn, 404, "no such path", NULL);
		return;
	}
	p += 14;
	n = strcspn(p, "/");
	if (n == 0 || n > SERVE_NAME_MAX) {
		httpd_error(conn, 404, "no such sandbox", NULL);
		return;
	}
	memcpy(name, p, n);
	name[n] = '\0';
	rest = p + n;
	if ((s = serve_find(srv, name)) == NULL) {
		xasprintf(&msg, "no sandbox named %s", name);
		httpd_error(conn, 404, msg, NULL);
		free(msg);
		return;
	}
	if (*rest == '\0') {
		struct buf	b = { 0 };

		if (strcmp(m, "DELETE") == 0)
			return (serve_delete(s, conn));
		if (strcmp(m, "GET") != 0)
			return (serve_method(conn, "GET, DELETE"));
		serve_sb_json(s, &b);
		httpd_respond_json(conn, 200, b.data, b.len);
		buf_free(&b);
		return;
	}
	if (strcmp(rest, "/exec") == 0) {
		if (strcmp(m, "POST") != 0)
			return (serve_method(conn, "POST"));
		return (serve_exec_post(s, conn, req));
	}
	if (strcmp(rest, "/files") == 0) {
		if (strcmp(m, "GET") != 0 && strcmp(m, "PUT") != 0)
			return (serve_method(conn, "GET, PUT"));
		return (serve_files(s, conn, req));
	}
	if (strncmp(rest, "/exec/", 6) == 0 && rest[6] >= '0' &&
	    rest[6] <= '9') {
		errno = 0;
		id = strtoul(rest + 6, &end, 10);
		if (errno == 0 && id <= UINT_MAX && *end == '/' &&
		    (strcmp(end, "/stdin") == 0 ||
		    strcmp(end, "/signal") == 0 ||
		    strcmp(end, "/resize") == 0)) {
			if (strcmp(m, "POST") != 0)
				return (serve_method(conn, "POST"));
			return (serve_exec_op(s, conn, req, (unsigned)id,
			    end + 1));
		}
	}
	httpd_error(conn, 404, "no such path", NULL);
}

void
serve_init(struct serve *srv, struct ev_loop *loop)
{
	memset(srv, 0, sizeof *srv);
	srv->loop = loop;
	TAILQ_INIT(&srv->sbs);
	TAILQ_INIT(&srv->subs);
	ev_timer_init(&srv->events_ping, serve_events_ping_cb,
	    SERVE_EVENTS_PING, SERVE_EVENTS_PING);
	srv->events_ping.data = srv;
	ev_timer_start(loop, &srv->events_ping);
}
