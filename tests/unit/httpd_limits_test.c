/*
 * The HTTP server layer's deadlines and caps against clients that never
 * finish: the connection limit, the head, idle and body deadlines,
 * streams the handler holds (never cut), and who gives up a connection
 * for room: the unauthenticated first, then the idle kept alive, and a
 * cap per client address.
 */
#include "httpd_helpers.h"

TestSuite(httpd, .init = setup, .fini = teardown, .timeout = 20);

#define TOKEN_HDR	"Authorization: Bearer sesame-sesame-sesame\r\n"

static void
start_token(const struct httpd_limits *lim)
{
	start(lim);
	httpd_set_token(srv, "sesame-sesame-sesame", NULL);
}

static unsigned long long
shed_count(enum httpd_shed why)
{
	unsigned long long	shed[HTTPD_SHED_N];

	httpd_shed(srv, shed);
	return (shed[why]);
}

/* Turn the loop until the server holds n connections (or 2 s pass). */
static void
until_conns(int n)
{
	int	i;

	for (i = 0; i < 2000 && httpd_connections(srv) != n; i++)
		turn();
	cr_assert_eq(httpd_connections(srv), n);
}

/* Whether the server closed fd (EOF or reset), the loop running. */
static int
closed(int fd, double secs)
{
	struct buf	got = { 0 };
	int		rc;

	rc = get(fd, &got, NULL, secs);
	buf_free(&got);
	return (rc == 1);
}

/* secs of the loop running, what fd gets read into got, EOF or not. */
static void
pace(int fd, struct buf *got, double secs)
{
	double	end = now() + secs;
	char	tmp[4096];
	ssize_t	n;

	while (now() < end) {
		turn();
		while ((n = recv(fd, tmp, sizeof tmp, MSG_DONTWAIT)) > 0)
			buf_add(got, tmp, n);
	}
}

/* Every connection busy with a request: nothing to close for room, 503. */
Test(httpd, conns_max_503)
{
	struct httpd_limits	 lim = { .conns_max = 2 };
	unsigned long long	 shed[HTTPD_SHED_N];
	struct buf		 got = { 0 };
	int			 a, b, c, i;

	start(&lim);
	a = client_unix();
	puts_(a, "GET /hold HTTP/1.1\r\n\r\n");
	for (i = 0; i < 200 && app.requests < 1; i++)
		turn();
	b = client_unix();
	puts_(b, "GET /hold HTTP/1.1\r\n\r\n");
	for (i = 0; i < 200 && app.requests < 2; i++)
		turn();
	cr_assert_eq(httpd_connections(srv), 2);
	c = client_unix();
	puts_(c, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(c, &got, NULL, 2), 1);
	cr_assert(strncmp(got.data, "HTTP/1.1 503 Service Unavailable\r\n",
	    34) == 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data, "{\"error\":\"too many "
	    "connections\",\"limit\":\"max_connections\",\"max\":2}"));
	cr_assert_eq(app.requests, 2);
	cr_assert_eq(httpd_connections(srv), 2);
	httpd_shed(srv, shed);
	cr_assert_eq(shed[HTTPD_SHED_FULL], 1);
	close(a);
	close(b);
	close(c);
	buf_free(&got);
}

/* Kept alive with no request: closed after idle_timeout, silently. */
Test(httpd, idle_timeout_closes)
{
	struct httpd_limits	 lim = { .idle_timeout = 0.2,
	    .head_timeout = 5 };
	unsigned long long	 shed[HTTPD_SHED_N];
	struct buf		 got = { 0 };
	double			 t0;
	int			 fd;

	start(&lim);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0);
	buf_free(&got);
	t0 = now();
	cr_assert_eq(get(fd, &got, NULL, 3), 1, "closed when idle");
	cr_assert_geq(now() - t0, 0.15);
	cr_assert_lt(now() - t0, 2, "idle_timeout, not head_timeout");
	cr_assert_eq(got.len, 0);
	cr_assert_eq(httpd_connections(srv), 0);
	httpd_shed(srv, shed);
	cr_assert_eq(shed[HTTPD_SHED_IDLE_TIMEOUT], 1);
	cr_assert_eq(shed[HTTPD_SHED_HEAD_TIMEOUT], 0);
	close(fd);

	/* A request under way is not idle. */
	fd = client_unix();
	puts_(fd, "GET /hold HTTP/1.1\r\n\r\n");
	t0 = now();
	cr_assert_eq(get(fd, &got, NULL, 0.5), -1, "closed while held");
	cr_assert_eq(app.closed, 0);
	httpd_respond(app.conn, 204, NULL, NULL, 0);
	cr_assert_eq(get(fd, &got, "\r\n\r\n", 1), 0);
	cr_assert(strncmp(got.data, "HTTP/1.1 204 No Content\r\n", 25) == 0,
	    "%s", got.data);
	cr_assert_null(strstr(got.data, "Content-Length"));
	cr_assert_eq(get(fd, &got, NULL, 3), 1, "idle again after it");
	close(fd);
	buf_free(&got);
}

/*
 * A head sent a byte every 0.1 s: each byte used to move the deadline,
 * and the connection was kept as long as bytes came. 408 at head_timeout,
 * and the linger after it ends too, bytes or not.
 */
Test(httpd, head_timeout_slow_head)
{
	struct httpd_limits	 lim = { .head_timeout = 1 };
	static const char	 head[] = "GET /hello HTTP/1.1\r\nHost: x\r\n"
	    "X-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
	struct buf		 got = { 0 };
	double			 t0, t408 = 0, tgone = 0;
	size_t			 i;
	int			 fd;

	start(&lim);
	fd = client_unix();
	t0 = now();
	for (i = 0; i < sizeof head - 1 && tgone == 0; i++) {
		/* Past our EOF, the bytes still go: to a lingering server. */
		(void)send(fd, head + i, 1, MSG_NOSIGNAL);
		pace(fd, &got, 0.1);
		if (t408 == 0 && got.len > 0)
			t408 = now() - t0;
		if (httpd_connections(srv) == 0)
			tgone = now() - t0;
	}
	cr_assert_gt(t408, 0.9, "408 after %.2f s", t408);
	cr_assert_lt(t408, 1.6, "408 after %.2f s", t408);
	cr_assert(strncmp(got.data, "HTTP/1.1 408 Request Timeout\r\n", 30) ==
	    0, "%s", got.data);
	cr_assert_not_null(strstr(got.data, "{\"error\":\"request head timed "
	    "out\",\"limit\":\"head_timeout\",\"max\":1}"), "%s", got.data);
	cr_assert_gt(tgone, 0, "still open after %zu bytes", i);
	cr_assert_lt(tgone, 3.6, "closed after %.2f s", tgone);
	cr_assert_eq(app.requests, 0);
	cr_assert_eq(shed_count(HTTPD_SHED_HEAD_TIMEOUT), 1);
	close(fd);

	/* Nothing sent at all: closed at head_timeout, without a word. */
	buf_free(&got);
	fd = client_unix();
	t0 = now();
	cr_assert_eq(get(fd, &got, NULL, 3), 1);
	cr_assert_gt(now() - t0, 0.9);
	cr_assert_eq(got.len, 0);
	cr_assert_eq(shed_count(HTTPD_SHED_HEAD_TIMEOUT), 2);
	close(fd);
	buf_free(&got);
}

/*
 * Kept alive: idle_timeout until the next head begins, head_timeout from
 * its first byte; a body's deadline moves with each byte.
 */
Test(httpd, head_timeout_after_keep_alive)
{
	struct httpd_limits	 lim = { .head_timeout = 0.4,
	    .idle_timeout = 10, .body_timeout = 0.4 };
	struct buf		 got = { 0 };
	double			 t0;
	int			 fd, i;

	start(&lim);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0);
	cr_assert_eq(get(fd, &got, NULL, 0.8), -1, "idle, not a late head");
	/* A body trickled, each byte within body_timeout: taken whole. */
	buf_free(&got);
	puts_(fd, "POST /echo HTTP/1.1\r\nContent-Length: 8\r\n\r\n");
	for (i = 0; i < 8; i++) {
		puts_(fd, "b");
		cr_assert_eq(get(fd, &got, NULL, 0.15), -1);
	}
	cr_assert_eq(get(fd, &got, "bbbbbbbb", 2), 0, "%s", got.data);
	buf_free(&got);
	puts_(fd, "GET /hel");
	t0 = now();
	cr_assert_eq(get(fd, &got, NULL, 3), 1);
	cr_assert_gt(now() - t0, 0.3);
	cr_assert_lt(now() - t0, 1.5);
	cr_assert(strncmp(got.data, "HTTP/1.1 408 ", 13) == 0, "%s", got.data);
	close(fd);
	buf_free(&got);
}

/* Streams the handler holds are never cut, however short the timeouts. */
Test(httpd, quiet_stream_not_cut)
{
	struct httpd_limits	 lim = { .head_timeout = 0.2,
	    .idle_timeout = 0.2, .body_timeout = 0.2 };
	struct buf		 got = { 0 };
	int			 fd;

	start(&lim);
	fd = client_unix();
	puts_(fd, "GET /quiet HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "text/event-stream", 2), 0);
	cr_assert_eq(get(fd, &got, NULL, 1.2), -1, "cut while quiet");
	cr_assert_eq(app.closed, 0);
	httpd_sse_event(app.conn, "late", "x", 1);
	httpd_end(app.conn);
	cr_assert_eq(get(fd, &got, "0\r\n\r\n", 2), 0);
	cr_assert_not_null(strstr(got.data, "event: late\ndata: x\n\n"));
	close(fd);
	buf_free(&got);
}

/*
 * Connections that never send the token (the issue: 300 of them took the
 * 256 slots) are closed, oldest first, for new ones: one with the token
 * is still served, and so is every request already under way.
 */
Test(httpd, unauthenticated_make_room)
{
	struct httpd_limits	 lim = { .conns_max = 4, .head_timeout = 30 };
	struct buf		 got = { 0 };
	int			 held, idle[12], fd, i;

	start_token(&lim);
	held = client_unix();
	puts_(held, "GET /hold HTTP/1.1\r\n" TOKEN_HDR "\r\n");
	for (i = 0; i < 200 && app.requests < 1; i++)
		turn();
	for (i = 0; i < 12; i++) {
		idle[i] = client_unix();
		until_conns(i < 2 ? i + 2 : 3);
	}
	cr_assert_eq(httpd_unauthenticated(srv), 2, "half of conns_max");
	cr_assert(closed(idle[0], 1), "the oldest stays");
	cr_assert(!closed(idle[11], 0.1), "the newest went");
	cr_assert_eq(shed_count(HTTPD_SHED_UNAUTHENTICATED), 10);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.1\r\n" TOKEN_HDR "\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0, "%s", got.data);
	cr_assert(strncmp(got.data, "HTTP/1.1 200 ", 13) == 0, "%s", got.data);
	cr_assert_eq(app.closed, 0, "the held request was closed");
	for (i = 0; i < 12; i++)
		close(idle[i]);
	close(fd);
	close(held);
	buf_free(&got);
}

/*
 * Full, the unauthenticated within their share: a kept-alive connection
 * idle between requests makes room, a busy one does not.
 */
Test(httpd, idle_keep_alive_makes_room)
{
	struct httpd_limits	 lim = { .conns_max = 2 };
	struct buf		 got = { 0 };
	int			 a, b, c, i;

	start_token(&lim);
	a = client_unix();
	puts_(a, "GET /hello HTTP/1.1\r\n" TOKEN_HDR "\r\n");
	cr_assert_eq(get(a, &got, "hello", 2), 0);
	b = client_unix();
	puts_(b, "GET /hold HTTP/1.1\r\n" TOKEN_HDR "\r\n");
	for (i = 0; i < 200 && app.requests < 2; i++)
		turn();
	c = client_unix();
	buf_free(&got);
	puts_(c, "GET /hello HTTP/1.1\r\n" TOKEN_HDR "\r\n");
	cr_assert_eq(get(c, &got, "hello", 2), 0, "%s", got.data);
	cr_assert(closed(a, 1), "the idle one stayed");
	cr_assert_eq(app.closed, 0, "the busy one went");
	cr_assert_eq(shed_count(HTTPD_SHED_IDLE), 1);
	close(a);
	close(b);
	close(c);
	buf_free(&got);
}

/*
 * One TCP address holds conns_per_addr: past it, its own oldest
 * unauthenticated connection goes; when it has none, 503 that says so.
 * Unix socket peers are not counted.
 */
Test(httpd, per_address_cap)
{
	struct httpd_limits	 lim = { .conns_per_addr = 2 };
	struct buf		 got = { 0 };
	char			*cause;
	int			 a, b, c, d, u[3], i;

	start_token(&lim);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", NULL, NULL, &cause),
	    0);
	a = client_tcp(httpd_bound(srv, 1));
	puts_(a, "GET /hold HTTP/1.1\r\n" TOKEN_HDR "\r\n");
	for (i = 0; i < 200 && app.requests < 1; i++)
		turn();
	b = client_tcp(httpd_bound(srv, 1));
	until_conns(2);
	c = client_tcp(httpd_bound(srv, 1));
	until_conns(2);
	cr_assert(closed(b, 1), "its unauthenticated one stayed");
	cr_assert_eq(shed_count(HTTPD_SHED_PER_ADDRESS), 1);
	puts_(c, "GET /hold HTTP/1.1\r\n" TOKEN_HDR "\r\n");
	for (i = 0; i < 200 && app.requests < 2; i++)
		turn();
	d = client_tcp(httpd_bound(srv, 1));
	cr_assert_eq(get(d, &got, NULL, 2), 1);
	cr_assert(strncmp(got.data, "HTTP/1.1 503 ", 13) == 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data, "{\"error\":\"too many connections "
	    "from this address\",\"limit\":\"max_connections_per_address\","
	    "\"max\":2}"), "%s", got.data);
	cr_assert_eq(shed_count(HTTPD_SHED_PER_ADDRESS), 2);
	for (i = 0; i < 3; i++)
		u[i] = client_unix();
	until_conns(5);
	cr_assert_eq(app.closed, 0);
	for (i = 0; i < 3; i++)
		close(u[i]);
	close(a);
	close(b);
	close(c);
	close(d);
	buf_free(&got);
}
