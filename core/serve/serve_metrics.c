/*
 * GET /metrics: the server's counters and gauges, and its HTTP server's,
 * in Prometheus' text format.
 */
#include <stdio.h>
#include <string.h>

#include "serve_int.h"

/* GET /metrics: Prometheus' text format. */
int
serve_metrics(const struct serve_req *r, struct serve_error *err)
{
	static const char *const classes[] = {
		"1xx", "2xx", "3xx", "4xx", "5xx", "other"
	};
	struct serve_sb		*s;
	struct serve_exec	*e;
	struct net_stats	 st;
	unsigned long long	 n[SERVE_NSTATES] = { 0 }, up, down, running = 0, cum = 0;
	unsigned long long	 answered[HTTPD_CLASSES];
	unsigned long long	 shed[HTTPD_SHED_N], taken;
	struct buf		 b = { 0 };
	struct serve		*srv = r->srv;
	size_t			 i, spares;

	(void)err;

	up = srv->m.proxy_up;
	down = srv->m.proxy_down;
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->pool == NULL)
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
	for (i = 0; i < SERVE_NSTATES; i++)
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
	serve_pool_metrics(srv, &b);
	spares = sandbox_spares_count(&taken);
	buf_printf(&b, "# HELP qsup_spares QEMUs started ahead, waiting for "
	    "a restore (--spares).\n# TYPE qsup_spares gauge\nqsup_spares "
	    "%zu\n# HELP qsup_spares_taken_total Restores and fork copies "
	    "that took a spare QEMU.\n# TYPE qsup_spares_taken_total counter\n"
	    "qsup_spares_taken_total %llu\n", spares, taken);
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
	httpd_respond(r->conn, 200, "text/plain; version=0.0.4", b.data,
	    b.len);
	buf_free(&b);
	return (0);
}
