/*
 * The HTTP server layer (core/httpd): its head parser and query
 * parameters on their own, then a real server on a real loop, with
 * clients on real unix and TCP sockets in this process (the loop runs
 * while they wait), and curl over TLS in a child.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "httpd.h"

/* --- The parser ---------------------------------------------------------- */

static struct httpd_req	 preq;
static char		 pstore[65536];
static const char	*pwhy;

static int
parse(const char *head)
{
	return (httpd_parse_head(head, strlen(head), &preq, pstore, &pwhy));
}

Test(httpd_parse, good_request)
{
	cr_assert_eq(parse("POST /v1/sandboxes/a%20b/files?path=%2Fx&mode=0644 "
	    "HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n"
	    "Content-Type: application/json\r\n"
	    "Authorization: Bearer abc\r\nExpect: 100-continue\r\n\r\n"), 0,
	    "%s", pwhy);
	cr_assert_str_eq(preq.method, "POST");
	cr_assert_str_eq(preq.path, "/v1/sandboxes/a b/files");
	cr_assert_str_eq(preq.query, "path=%2Fx&mode=0644");
	cr_assert_eq(preq.minor, 1);
	cr_assert_eq(preq.content_length, 12);
	cr_assert_eq(preq.has_body, 1);
	cr_assert_eq(preq.chunked, 0);
	cr_assert_eq(preq.keep_alive, 1);
	cr_assert_eq(preq.expect_continue, 1);
	cr_assert_str_eq(preq.content_type, "application/json");
	cr_assert_str_eq(preq.authorization, "Bearer abc");
}

Test(httpd_parse, connection_and_versions)
{
	cr_assert_eq(parse("GET / HTTP/1.1\nConnection: keep-alive, close\n\n"),
	    0);
	cr_assert_eq(preq.keep_alive, 0);
	cr_assert_eq(preq.content_length, -1);
	cr_assert_eq(preq.has_body, 0);
	cr_assert_str_eq(preq.query, "");
	cr_assert_null(preq.content_type);
	cr_assert_null(preq.authorization);
	cr_assert_eq(parse("GET /x HTTP/1.0\r\n\r\n"), 0);
	cr_assert_eq(preq.minor, 0);
	cr_assert_eq(preq.keep_alive, 0);
	cr_assert_eq(parse("PUT /f HTTP/1.1\r\ntransfer-encoding: Chunked\r\n"
	    "\r\n"), 0);
	cr_assert_eq(preq.chunked, 1);
	cr_assert_eq(preq.has_body, 1);
	cr_assert_eq(parse("GET /a HTTP/1.1\r\nContent-Length: 3\r\n"
	    "Content-Length: 3\r\n\r\n"), 0, "the same length twice is one");
}

/* Each refusal, with the status it is owed. */
Test(httpd_parse, refusals)
{
	static const struct {
		const char	*head;
		int		 status;
	} bad[] = {
		{ "", 400 },
		{ "\r\n\r\n", 400 },
		{ "GET\r\n\r\n", 400 },
		{ "GET / HTTP/1.1 x\r\n\r\n", 400 },
		{ "G(T / HTTP/1.1\r\n\r\n", 400 },
		{ "GET x HTTP/1.1\r\n\r\n", 400 },
		{ "GET http://a/ HTTP/1.1\r\n\r\n", 400 },
		{ "GET /%zz HTTP/1.1\r\n\r\n", 400 },
		{ "GET /a%00b HTTP/1.1\r\n\r\n", 400 },
		{ "GET /a\x7f HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTX/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nno colon\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nBad Name: b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1\r\n"
		    "Content-Length: 2\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n", 400 },
		{ "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nAuthorization: a\r\n"
		    "Authorization: b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501 },
		{ "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n", 501 },
		{ "GET / HTTP/2.0\r\n\r\n", 505 },
		{ "GET / HTTP/1.2\r\n\r\n", 505 },
	};
	size_t	i;
	int	rc;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rc = parse(bad[i].head);
		cr_expect_eq(rc, bad[i].status, "%zu \"%s\": %d (%s), not %d",
		    i, bad[i].head, rc, pwhy ? pwhy : "-", bad[i].status);
		if (rc != 0)
			cr_expect_not_null(pwhy);
	}
	cr_assert_eq(httpd_parse_head("GET / HTTP/1.1\r\n\0\r\n\r\n", 20,
	    &preq, pstore, &pwhy), 400);
}

Test(httpd_parse, sizes)
{
	struct buf	b = { 0 };
	size_t		i;

	buf_puts(&b, "GET /");
	for (i = 0; i < HTTPD_TARGET_MAX; i++)
		buf_puts(&b, "a");
	buf_puts(&b, " HTTP/1.1\r\n\r\n");
	cr_assert_eq(parse(b.data), 414);
	b.len = 0;
	buf_puts(&b, "GET / HTTP/1.1\r\n");
	for (i = 0; i < 200; i++)
		buf_printf(&b, "X-%zu: y\r\n", i);
	buf_puts(&b, "\r\n");
	cr_assert_eq(parse(b.data), 431);
	buf_free(&b);
}

static void
expect_param(const char *query, const char *name, const char *want)
{
	char	*v = httpd_query_param(query, name);

	if (want == NULL)
		cr_expect_null(v, "%s in %s: \"%s\"", name, query, v);
	else {
		cr_expect_not_null(v, "%s in %s", name, query);
		if (v != NULL)
			cr_expect_str_eq(v, want, "%s in %s", name, query);
	}
	free(v);
}

Test(httpd_parse, query_params)
{
	expect_param("path=%2Fa%20b&mode=0644", "path", "/a b");
	expect_param("path=%2Fa%20b&mode=0644", "mode", "0644");
	expect_param("path=%2Fa%20b&mode=0644", "pat", NULL);
	expect_param("path=%2Fa%20b&mode=0644", "mod", NULL);
	expect_param("", "path", NULL);
	expect_param("flag&x=1", "flag", "");
	expect_param("x=&y=2", "x", "");
	expect_param("a%3Db=1&a=2", "a=b", "1");
	expect_param("a%3Db=1&a=2", "a", "2");
	expect_param("a=1&a=2", "a", "1");
	expect_param("p=a+b", "p", "a+b");
	expect_param("p=%zz", "p", NULL);
	expect_param("p=%2", "p", NULL);
	expect_param("p=a%00b", "p", NULL);
	expect_param("p=%C3%A9", "p", "\xc3\xa9");
}

/* --- A real server ------------------------------------------------------- */

struct app {
	struct httpd_conn	*conn;		/* the request held */
	int			 requests;
	int			 authorized;
	int			 closed;
	int			 drained;
	int			 over;
	int			 pieces;
	int			 paused_pieces;
	int			 ended;
	struct buf		 got;
};

static struct ev_loop	*loop;
static struct httpd	*srv;
static struct app	 app;
static char		 dir[] = "/tmp/qsup-httpd-test.XXXXXX";
static char		 sock[256];

static void
app_close_cb(void *arg)
{
	struct app	*a = arg;

	a->closed++;
	a->conn = NULL;
}

static void
echo_cb(struct httpd_conn *c, const char *data, size_t len, void *arg)
{
	(void)arg;
	httpd_respond(c, 200, "text/plain", data, len);
}

/* Streamed: the first piece pauses the body; the test resumes it. */
static void
stream_cb(struct httpd_conn *c, const char *data, size_t len, void *arg)
{
	struct app	*a = arg;

	if (len > 0) {
		a->pieces++;
		buf_add(&a->got, data, len);
		if (a->pieces == 1)
			httpd_body_pause(c, 1);
		return;
	}
	a->ended = 1;
	httpd_respond(c, 200, "text/plain", a->got.data, a->got.len);
}

static void
big_drain_cb(void *arg)
{
	struct app	*a = arg;

	a->drained++;
	httpd_stream_write(a->conn, "END", 3);
	httpd_end(a->conn);
	a->conn = NULL;
}

/* Written until the queue is over out_high; the rest once it drains. */
static void
big(struct httpd_conn *c)
{
	static char	chunk[65536];

	memset(chunk, 'x', sizeof chunk);
	httpd_stream_start(c, 200, "application/octet-stream");
	while (!httpd_over(c))
		httpd_stream_write(c, chunk, sizeof chunk);
	app.over = 1;
	app.conn = c;
	httpd_set_drain_cb(c, big_drain_cb, &app);
	httpd_set_close_cb(c, app_close_cb, &app);
}

static void
handler(struct httpd_conn *c, const struct httpd_req *req, void *arg)
{
	struct app	*a = arg;
	char		 msg[64];

	a->requests++;
	a->authorized = req->authorized;
	if (strcmp(req->path, "/hello") == 0)
		httpd_respond(c, 200, "text/plain", "hello", 5);
	else if (strcmp(req->path, "/healthz") == 0) {
		snprintf(msg, sizeof msg, "{\"authorized\":%d}",
		    req->authorized);
		httpd_respond_json(c, 200, msg, strlen(msg));
	} else if (strcmp(req->path, "/echo") == 0)
		httpd_read_body(c, echo_cb, a);
	else if (strcmp(req->path, "/stream") == 0) {
		a->conn = c;
		httpd_stream_body(c, stream_cb, a);
	} else if (strcmp(req->path, "/created") == 0) {
		httpd_header(c, "Location: /created/1\r\n");
		httpd_respond_json(c, 201, "{}", 2);
	} else if (strcmp(req->path, "/slow") == 0) {
		a->conn = c;
		httpd_set_close_cb(c, app_close_cb, a);
		httpd_read_body(c, echo_cb, a);
	} else if (strcmp(req->path, "/blob") == 0) {
		static char	blob[65536];

		memset(blob, 'b', sizeof blob);
		httpd_respond(c, 200, NULL, blob, sizeof blob);
	} else if (strcmp(req->path, "/early") == 0)
		httpd_respond(c, 200, "text/plain", "early", 5);
	else if (strcmp(req->path, "/big") == 0)
		big(c);
	else if (strcmp(req->path, "/hold") == 0) {
		a->conn = c;
		httpd_set_close_cb(c, app_close_cb, a);
	} else if (strcmp(req->path, "/quiet") == 0) {
		a->conn = c;
		httpd_set_close_cb(c, app_close_cb, a);
		httpd_sse_start(c);
	} else if (strcmp(req->path, "/sse") == 0) {
		httpd_sse_start(c);
		httpd_sse_event(c, "x", "a\nb", 3);
		httpd_sse_comment(c, "keep");
		httpd_end(c);
	} else
		httpd_error(c, 404, "no such path", "\"path\":\"?\"");
}

static void
setup(void)
{
	memset(&app, 0, sizeof app);
	signal(SIGPIPE, SIG_DFL);	/* a write to a closed peer must not kill */
	strcpy(dir, "/tmp/qsup-httpd-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof sock, "%s/s.sock", dir);
	loop = ev_loop_new(EVFLAG_AUTO);
}

static void
teardown(void)
{
	char	cmd[512];

	httpd_free(srv);
	srv = NULL;
	ev_loop_destroy(loop);
	buf_free(&app.got);
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	(void)system(cmd);
}

/* A server with these limits (NULL: the defaults) on a unix socket. */
static void
start(const struct httpd_limits *lim)
{
	char	*cause, spec[300];

	srv = httpd_new(loop, lim, handler, &app);
	snprintf(spec, sizeof spec, "unix:%s", sock);
	if (httpd_listen(srv, spec, NULL, NULL, &cause) == -1)
		cr_assert_fail("%s", cause);
}

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

static void
turn(void)
{
	ev_run(loop, EVRUN_NOWAIT);
	usleep(300);
}

static int
client_unix(void)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_neq(fd, -1);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	cr_assert_eq(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return (fd);
}

static int
client_tcp(const char *bound)
{
	struct sockaddr_in	sin;
	int			fd;

	cr_assert(strncmp(bound, "tcp:127.0.0.1:", 14) == 0, "%s", bound);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons(atoi(bound + 14));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	cr_assert_neq(fd, -1);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	cr_assert_eq(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return (fd);
}

/* Send it all, the loop running while the socket is full. */
static void
put(int fd, const char *p, size_t len)
{
	double	end = now() + 5;
	ssize_t	n;

	while (len > 0) {
		cr_assert_lt(now(), end, "the server stopped reading");
		if ((n = send(fd, p, len, MSG_NOSIGNAL)) > 0) {
			p += n;
			len -= n;
		} else
			cr_assert(errno == EAGAIN, "send: %s", strerror(errno));
		turn();
	}
}

static void
puts_(int fd, const char *s)
{
	put(fd, s, strlen(s));
}

/* Read, the loop running, until got holds needle (or at EOF): 1 at EOF. */
static int
get(int fd, struct buf *got, const char *needle, double secs)
{
	double	end = now() + secs;
	char	tmp[65536];
	ssize_t	n;

	for (;;) {
		if (needle != NULL && got->data != NULL &&
		    strstr(got->data, needle) != NULL)
			return (0);
		if (now() > end)
			return (-1);
		turn();
		while ((n = recv(fd, tmp, sizeof tmp, 0)) > 0)
			buf_add(got, tmp, n);
		if (n == 0)
			return (1);
		if (errno != EAGAIN && errno != ECONNRESET)
			cr_assert_fail("recv: %s", strerror(errno));
		if (errno == ECONNRESET)
			return (1);
	}
}

static int
count(const char *hay, const char *needle)
{
	int	n = 0;

	while (hay != NULL && (hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return (n);
}

TestSuite(httpd, .init = setup, .fini = teardown, .timeout = 20);

Test(httpd, answers_and_keeps_alive)
{
	struct buf	got = { 0 };
	int		fd;

	start(NULL);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0, "%s", got.data);
	cr_assert(strncmp(got.data, "HTTP/1.1 200 OK\r\n", 17) == 0);
	cr_assert_not_null(strstr(got.data, "Content-Length: 5\r\n"));
	cr_assert_null(strstr(got.data, "Connection: close"));
	puts_(fd, "GET /nope HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "}", 2), 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data, "HTTP/1.1 404 Not Found\r\n"));
	cr_assert_not_null(strstr(got.data,
	    "{\"error\":\"no such path\",\"path\":\"?\"}"));
	cr_assert_eq(app.requests, 2);
	cr_assert_eq(httpd_connections(srv), 1, "one connection for both");
	puts_(fd, "GET /hello HTTP/1.1\r\nConnection: close\r\n\r\n");
	cr_assert_eq(get(fd, &got, NULL, 2), 1, "closed after close");
	cr_assert_eq(count(got.data, "hello"), 2);
	cr_assert_not_null(strstr(got.data, "Connection: close\r\n"));
	close(fd);
	buf_free(&got);
}

Test(httpd, statuses_headers_and_head)
{
	struct buf	got = { 0 };
	int		fd;

	start(NULL);
	fd = client_unix();
	puts_(fd, "POST /created HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "{}", 2), 0, "%s", got.data);
	cr_assert_str_eq(got.data, "HTTP/1.1 201 Created\r\n"
	    "Content-Type: application/json\r\nContent-Length: 2\r\n"
	    "Location: /created/1\r\n\r\n{}");
	got.len = 0;
	puts_(fd, "HEAD /hello HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0, "%s", got.data);
	cr_assert_eq(count(got.data, "Content-Length: 5\r\n"), 2);
	cr_assert_eq(count(got.data, "hello"), 1, "no body for HEAD");
	close(fd);
	buf_free(&got);
}

Test(httpd, http10_closes)
{
	struct buf	got = { 0 };
	int		fd;

	start(NULL);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.0\r\n\r\n");
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert_not_null(strstr(got.data, "Connection: close\r\n"));
	cr_assert_not_null(strstr(got.data, "\r\n\r\nhello"));
	close(fd);
	buf_free(&got);
}

Test(httpd, pipelined_in_order)
{
	struct buf	 got = { 0 };
	const char	*a, *b, *e;
	int		 fd;

	start(NULL);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n"
	    "POST /echo HTTP/1.1\r\nContent-Length: 4\r\n\r\nping"
	    "POST /early HTTP/1.1\r\nContent-Length: 6\r\n\r\nunread"
	    "\r\nGET /hello HTTP/1.1\r\nConnection: close\r\n\r\n");
	cr_assert_eq(get(fd, &got, NULL, 2), 1, "%s", got.data);
	cr_assert_eq(count(got.data, "HTTP/1.1 200 OK"), 4, "%s", got.data);
	a = strstr(got.data, "hello");
	b = strstr(got.data, "ping");
	e = strstr(got.data, "early");
	cr_assert(a != NULL && b != NULL && e != NULL && a < b && b < e);
	cr_assert_not_null(strstr(e, "hello"));
	cr_assert_eq(app.requests, 4);
	close(fd);
	buf_free(&got);
}

/* Requests sent by one who reads no answers wait behind a full queue. */
Test(httpd, pipelining_held_by_backpressure)
{
	struct httpd_limits	 lim = { .out_high = 256 * 1024 };
	struct buf		 got = { 0 }, reqs = { 0 };
	int			 fd, i;

	start(&lim);
	fd = client_unix();
	for (i = 0; i < 40; i++)
		buf_puts(&reqs, "GET /blob HTTP/1.1\r\n\r\n");
	buf_puts(&reqs, "GET /hello HTTP/1.1\r\n\r\n");
	put(fd, reqs.data, reqs.len);
	for (i = 0; i < 200; i++)
		turn();
	cr_assert_lt(app.requests, 20, "%d answered, none read",
	    app.requests);
	cr_assert_gt(app.requests, 0);
	cr_assert_eq(get(fd, &got, "hello", 5), 0);
	cr_assert_eq(app.requests, 41);
	cr_assert_eq(count(got.data, "HTTP/1.1 200 OK"), 41);
	close(fd);
	buf_free(&got);
	buf_free(&reqs);
}

Test(httpd, token_and_public_paths)
{
	static const char *const	 pub[] = { "/healthz", NULL };
	struct buf			 got = { 0 };
	int				 fd;

	start(NULL);
	httpd_set_token(srv, "sekrit", pub);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "}", 2), 0);
	cr_assert(strncmp(got.data, "HTTP/1.1 401 Unauthorized\r\n", 27) == 0);
	cr_assert_not_null(strstr(got.data, "WWW-Authenticate: Bearer\r\n"));
	cr_assert_not_null(strstr(got.data, "{\"error\":"));
	cr_assert_eq(app.requests, 0, "refused before the handler");
	got.len = 0;
	got.data[0] = '\0';
	puts_(fd, "GET /hello HTTP/1.1\r\nAuthorization: Bearer sekrit2\r\n\r\n");
	cr_assert_eq(get(fd, &got, "}", 2), 0);
	cr_assert_not_null(strstr(got.data, "401"));
	got.len = 0;
	got.data[0] = '\0';
	puts_(fd, "GET /hello HTTP/1.1\r\nAuthorization: Bearer sekri\r\n\r\n");
	cr_assert_eq(get(fd, &got, "}", 2), 0);
	cr_assert_not_null(strstr(got.data, "401"));
	cr_assert_eq(app.requests, 0);
	got.len = 0;
	got.data[0] = '\0';
	puts_(fd, "GET /hello HTTP/1.1\r\nAuthorization: bearer sekrit\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0, "%s", got.data);
	cr_assert_eq(app.authorized, 1);
	puts_(fd, "GET /healthz HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "{\"authorized\":0}", 2), 0, "%s",
	    got.data);
	cr_assert_eq(app.requests, 2);
	close(fd);
	buf_free(&got);
}

Test(httpd, head_too_large_431)
{
	struct httpd_limits	 lim = { .head_max = 4096 };
	struct buf		 req = { 0 }, got = { 0 };
	int			 fd, i;

	start(&lim);
	fd = client_unix();
	buf_puts(&req, "GET /hello HTTP/1.1\r\n");
	for (i = 0; i < 300; i++)
		buf_printf(&req, "X-Filler-%d: %040d\r\n", i, i);
	put(fd, req.data, req.len);
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert(strncmp(got.data, "HTTP/1.1 431 ", 13) == 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data,
	    "\"limit\":\"max_header\",\"max\":4096"));
	cr_assert_eq(app.requests, 0);
	close(fd);
	buf_free(&req);
	buf_free(&got);
}

Test(httpd, body_too_large_413)
{
	struct httpd_limits	 lim = { .body_max = 1000 };
	struct buf		 got = { 0 }, body = { 0 };
	int			 fd, i;

	start(&lim);
	fd = client_unix();
	puts_(fd, "POST /echo HTTP/1.1\r\nContent-Length: 5000\r\n\r\n");
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert(strncmp(got.data, "HTTP/1.1 413 ", 13) == 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data,
	    "\"limit\":\"max_body\",\"max\":1000"));
	close(fd);

	/* Chunked, so only counting tells. */
	got.len = 0;
	fd = client_unix();
	puts_(fd, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	for (i = 0; i < 20; i++)
		buf_printf(&body, "64\r\n%0100d\r\n", i);
	buf_puts(&body, "0\r\n\r\n");
	put(fd, body.data, body.len);
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert(strncmp(got.data, "HTTP/1.1 413 ", 13) == 0, "%s", got.data);

	/* Just under: taken. */
	got.len = 0;
	fd = client_unix();
	puts_(fd, "POST /echo HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3e8\r\n");
	body.len = 0;
	for (i = 0; i < 1000; i++)
		buf_add(&body, "b", 1);
	buf_puts(&body, "\r\n0\r\n\r\n");
	put(fd, body.data, body.len);
	cr_assert_eq(get(fd, &got, "bbbbbbbbbb", 2), 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data, "Content-Length: 1000\r\n"));
	close(fd);
	buf_free(&got);
	buf_free(&body);
}

Test(httpd, expect_continue)
{
	struct buf	got = { 0 };
	int		fd;

	start(NULL);
	fd = client_unix();
	puts_(fd, "POST /echo HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Expect: 100-continue\r\n\r\n");
	cr_assert_eq(get(fd, &got, "\r\n\r\n", 2), 0);
	cr_assert_str_eq(got.data, "HTTP/1.1 100 Continue\r\n\r\n");
	puts_(fd, "abcde");
	cr_assert_eq(get(fd, &got, "abcde", 2), 0);
	cr_assert_not_null(strstr(got.data, "HTTP/1.1 200 OK"));
	close(fd);

	/* Answered without it: the body never comes, so the connection goes. */
	got.len = 0;
	fd = client_unix();
	puts_(fd, "POST /early HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Expect: 100-continue\r\n\r\n");
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert_null(strstr(got.data, "100 Continue"));
	cr_assert_not_null(strstr(got.data, "Connection: close\r\n"));
	close(fd);
	buf_free(&got);
}

Test(httpd, chunked_streamed_with_pause)
{
	struct buf	got = { 0 };
	int		fd, i;

	start(NULL);
	fd = client_unix();
	puts_(fd, "POST /stream HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5;ext=1\r\nfirst\r\n");
	for (i = 0; i < 200 && app.pieces == 0; i++)
		turn();
	cr_assert_eq(app.pieces, 1);
	puts_(fd, "6\r\nsecond\r\n5\r\nthird\r\n0\r\nTrailer: x\r\n\r\n");
	for (i = 0; i < 100; i++)
		turn();
	cr_assert_eq(app.pieces, 1, "no piece while paused");
	cr_assert_eq(app.ended, 0);
	httpd_body_pause(app.conn, 0);
	cr_assert_eq(get(fd, &got, "firstsecondthird", 2), 0, "%s", got.data);
	cr_assert_eq(app.pieces, 3);
	cr_assert_eq(app.ended, 1);
	close(fd);
	buf_free(&got);
}

Test(httpd, stalled_reader_backpressure)
{
	struct httpd_limits	 lim = { .out_high = 2 * 1024 * 1024 };
	struct buf		 got = { 0 };
	int			 fd, i;

	start(&lim);
	fd = client_unix();
	puts_(fd, "GET /big HTTP/1.1\r\n\r\n");
	for (i = 0; i < 200 && !app.over; i++)
		turn();
	cr_assert_eq(app.over, 1);
	for (i = 0; i < 100; i++)
		turn();
	cr_assert_eq(app.drained, 0, "drained with nobody reading");
	cr_assert_geq(httpd_pending(app.conn), lim.out_high / 2);
	cr_assert_eq(get(fd, &got, "END\r\n0\r\n\r\n", 5), 0);
	cr_assert_eq(app.drained, 1);
	cr_assert_eq(app.closed, 0);
	cr_assert_gt(got.len, lim.out_high);
	close(fd);
	buf_free(&got);
}

Test(httpd, client_gone_calls_close_cb)
{
	struct httpd_limits	 lim = { .out_high = 2 * 1024 * 1024 };
	int			 fd, i;

	start(&lim);
	fd = client_unix();
	puts_(fd, "GET /hold HTTP/1.1\r\n\r\n");
	for (i = 0; i < 200 && app.conn == NULL; i++)
		turn();
	cr_assert_not_null(app.conn);
	close(fd);
	for (i = 0; i < 200 && app.closed == 0; i++)
		turn();
	cr_assert_eq(app.closed, 1);
	cr_assert_eq(httpd_connections(srv), 0);

	/* A stream to a client that went away: close_cb, no SIGPIPE. */
	fd = client_unix();
	puts_(fd, "GET /big HTTP/1.1\r\n\r\n");
	for (i = 0; i < 200 && !app.over; i++)
		turn();
	close(fd);
	for (i = 0; i < 400 && app.closed < 2; i++)
		turn();
	cr_assert_eq(app.closed, 2);
	cr_assert_eq(app.drained, 0);
	cr_assert_eq(httpd_connections(srv), 0);
}

Test(httpd, close_cb_on_free)
{
	int	fd, i;

	start(NULL);
	fd = client_unix();
	puts_(fd, "GET /hold HTTP/1.1\r\n\r\n");
	for (i = 0; i < 200 && app.conn == NULL; i++)
		turn();
	cr_assert_not_null(app.conn);
	httpd_free(srv);
	srv = NULL;
	cr_assert_eq(app.closed, 1);
	cr_assert_eq(access(sock, F_OK), -1, "the socket file is gone");
	close(fd);
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

/* Out of fds at accept: the server waits, then takes the connection. */
Test(httpd, accept_out_of_fds)
{
	struct rlimit	 old, low;
	struct buf	 got = { 0 };
	int		 fd, i;

	start(NULL);
	fd = client_unix();
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = fd + 1;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (i = 0; i < 50; i++)
		turn();
	cr_assert_eq(httpd_connections(srv), 0);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 3), 0);
	close(fd);
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

/* Requests that end without the handler: close_cb, each time once. */
Test(httpd, ended_under_the_handler)
{
	struct httpd_limits	 lim = { .body_timeout = 0.2 };
	unsigned long long	 shed[HTTPD_SHED_N];
	struct buf		 got = { 0 };
	int			 fd, i;

	start(&lim);
	/* A body that stops coming: 408, after body_timeout. */
	fd = client_unix();
	puts_(fd, "POST /slow HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc");
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert(strncmp(got.data, "HTTP/1.1 408 ", 13) == 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data, "{\"error\":\"request body timed "
	    "out\",\"limit\":\"body_timeout\",\"max\":0.2}"), "%s", got.data);
	cr_assert_not_null(strstr(got.data, "Connection: close\r\n"));
	cr_assert_eq(app.closed, 1);
	httpd_shed(srv, shed);
	cr_assert_eq(shed[HTTPD_SHED_BODY_TIMEOUT], 1);
	close(fd);
	buf_free(&got);

	/* A chunked body that breaks its framing: 400, and close_cb. */
	fd = client_unix();
	puts_(fd, "POST /slow HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "zz\r\n");
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert(strncmp(got.data, "HTTP/1.1 400 ", 13) == 0, "%s", got.data);
	cr_assert_not_null(strstr(got.data, "bad chunked body"));
	cr_assert_eq(app.closed, 2);
	close(fd);

	/* httpd_abort. */
	got.len = 0;
	fd = client_unix();
	puts_(fd, "GET /hold HTTP/1.1\r\n\r\n");
	for (i = 0; i < 200 && app.conn == NULL; i++)
		turn();
	cr_assert_not_null(app.conn);
	httpd_abort(app.conn);
	cr_assert_eq(app.closed, 3);
	cr_assert_eq(get(fd, &got, NULL, 2), 1);
	cr_assert_eq(got.len, 0);
	cr_assert_eq(httpd_connections(srv), 0);
	close(fd);
	buf_free(&got);
}

Test(httpd, sse_stream)
{
	struct buf	got = { 0 };
	int		fd;

	start(NULL);
	fd = client_unix();
	puts_(fd, "GET /sse HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "0\r\n\r\n", 2), 0);
	cr_assert_not_null(strstr(got.data, "Content-Type: text/event-stream"));
	cr_assert_not_null(strstr(got.data, "Transfer-Encoding: chunked"));
	cr_assert_not_null(strstr(got.data, "Cache-Control: no-cache"));
	cr_assert_not_null(strstr(got.data, "event: x\ndata: a\ndata: b\n\n"));
	cr_assert_not_null(strstr(got.data, ": keep\n\n"));
	close(fd);
	buf_free(&got);
}

Test(httpd, unix_socket_file)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	struct httpd		*other;
	char			*cause, spec[300];
	int			 fd;

	start(NULL);
	cr_assert_eq(stat(sock, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
	snprintf(spec, sizeof spec, "unix:%s", sock);
	cr_assert_str_eq(httpd_bound(srv, 0), spec);
	cr_assert_null(httpd_bound(srv, 1));
	other = httpd_new(loop, NULL, handler, &app);
	cr_assert_eq(httpd_listen(other, spec, NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "already listening"), "%s", cause);
	free(cause);
	httpd_free(other);
	cr_assert_eq(access(sock, F_OK), 0, "a refused server leaves it be");
	httpd_free(srv);
	srv = NULL;
	cr_assert_eq(access(sock, F_OK), -1);

	/* What a killed server leaves: a socket file nobody answers on. */
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	close(fd);
	start(NULL);
	close(client_unix());

	cr_assert_eq(httpd_listen(srv, "unix:", NULL, NULL, &cause), -1);
	free(cause);

	/* Not a socket: left alone. */
	snprintf(spec, sizeof spec, "unix:%s/file", dir);
	cr_assert_eq(util_write_file(spec + 5, "x"), 0);
	cr_assert_eq(httpd_listen(srv, spec, NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "not a socket"), "%s", cause);
	free(cause);
}

Test(httpd, tcp_listeners)
{
	struct buf	 got = { 0 };
	char		*cause;
	int		 fd;

	start(NULL);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", NULL, NULL, &cause),
	    0);
	fd = client_tcp(httpd_bound(srv, 1));
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0);
	close(fd);
	if (httpd_listen(srv, "tcp:[::1]:0", NULL, NULL, &cause) == 0)
		cr_assert(strncmp(httpd_bound(srv, 2), "tcp:[::1]:", 10) == 0,
		    "%s", httpd_bound(srv, 2));
	else
		free(cause);	/* no IPv6 here */

	cr_assert_eq(httpd_listen(srv, "tcp:0.0.0.0:0", NULL, NULL, &cause),
	    -1);
	cr_assert_not_null(strstr(cause, "0.0.0.0"), "%s", cause);
	cr_assert_not_null(strstr(cause, "--tls-cert"), "%s", cause);
	cr_assert_not_null(strstr(cause, "--tls-key"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:[::]:0", NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "--tls-cert"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp::0", NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "--tls-cert"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1", NULL, NULL, &cause),
	    -1);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "http://x", NULL, NULL, &cause), -1);
	free(cause);
	buf_free(&got);
}

/* --- curl, on the unix socket and over TLS --------------------------------- */

/*
 * Run argv to its end, the loop running meanwhile: its exit status; its
 * standard output in DIR/stdout.
 */
static int
run_child(char *const argv[], double secs)
{
	double	end = now() + secs;
	char	path[300];
	pid_t	pid, w;
	int	status, devnull, fd;

	snprintf(path, sizeof path, "%s/stdout", dir);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		devnull = open("/dev/null", O_RDWR);
		fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0600);
		dup2(devnull, 0);
		dup2(fd, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while ((w = waitpid(pid, &status, WNOHANG)) == 0) {
		if (now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			cr_assert_fail("%s did not finish", argv[0]);
		}
		turn();
	}
	cr_assert_eq(w, pid);
	return (WIFEXITED(status) ? WEXITSTATUS(status) : 128);
}

/* curl's chunked upload with Expect, and two requests on one connection. */
Test(httpd, curl_unix_upload_and_reuse)
{
	char	 in[300], out[300], *text, *data;
	char	*up_argv[] = { "curl", "-sS", "--unix-socket", sock, "-T", in,
		    "-H", "Transfer-Encoding: chunked",
		    "-H", "Expect: 100-continue", "-o", out,
		    "http://localhost/echo", NULL };
	char	*two_argv[] = { "curl", "-sS", "--unix-socket", sock,
		    "-w", "%{num_connects}", "-o", out, "-o", in,
		    "http://localhost/hello",
		    "http://localhost/created", NULL };
	size_t	 len, i;

	snprintf(in, sizeof in, "%s/in", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	data = xmalloc(300001);
	for (i = 0; i < 300000; i++)
		data[i] = 'a' + i % 26;
	data[i] = '\0';
	cr_assert_eq(util_write_file(in, data), 0);
	start(NULL);
	cr_assert_eq(run_child(up_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 1024 * 1024);
	cr_assert_not_null(text);
	cr_assert_eq(len, 300000);
	cr_assert(strcmp(text, data) == 0);
	free(text);
	free(data);
	cr_assert_eq(run_child(two_argv, 10), 0, "curl failed");
	cr_assert_eq(app.requests, 3);
	text = util_read_file(in, &len, 1024);
	cr_assert_str_eq(text, "{}");
	free(text);
	snprintf(in, sizeof in, "%s/stdout", dir);
	text = util_read_file(in, &len, 1024);
	cr_assert_str_eq(text, "10", "connections made: %s", text);
	free(text);
}

static void
make_cert(const char *cert, const char *key)
{
	char	cmd[1024];

	snprintf(cmd, sizeof cmd, "openssl req -x509 -newkey rsa:2048 -nodes "
	    "-subj /CN=localhost -addext "
	    "subjectAltName=DNS:localhost,IP:127.0.0.1 -days 2 "
	    "-keyout %s -out %s 2>/dev/null", key, cert);
	cr_assert_eq(system(cmd), 0, "openssl req failed");
}

Test(httpd, tls_with_curl)
{
	char	 cert[300], key[300], out[300], url[300], *cause, *text;
	char	 body[8192];
	char	*get_argv[] = { "curl", "-sS", "--cacert", cert, "-o", out,
		    "-H", "Authorization: Bearer tok", url, NULL };
	char	*post_argv[] = { "curl", "-sS", "--cacert", cert, "-o", out,
		    "-H", "Authorization: Bearer tok", "--data-binary", body,
		    url, NULL };
	size_t	 len;

	snprintf(cert, sizeof cert, "%s/cert.pem", dir);
	snprintf(key, sizeof key, "%s/key.pem", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	make_cert(cert, key);
	start(NULL);
	httpd_set_token(srv, "tok", NULL);
	cr_assert_eq(httpd_listen(srv, "tcp:0.0.0.0:0", cert, key, &cause), 0,
	    "%s", cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", cert, key, &cause),
	    0, "%s", cause);
	snprintf(url, sizeof url, "https://127.0.0.1:%s/hello",
	    strrchr(httpd_bound(srv, 2), ':') + 1);
	cr_assert_eq(run_child(get_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 1024);
	cr_assert_not_null(text);
	cr_assert_str_eq(text, "hello");
	free(text);

	/* A body over several TLS records, echoed back. */
	memset(body, 'q', sizeof body - 1);
	body[sizeof body - 1] = '\0';
	snprintf(url, sizeof url, "https://127.0.0.1:%s/echo",
	    strrchr(httpd_bound(srv, 2), ':') + 1);
	cr_assert_eq(run_child(post_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 65536);
	cr_assert_not_null(text);
	cr_assert_eq(len, sizeof body - 1);
	cr_assert_str_eq(text, body);
	free(text);

	/* Megabytes out through TLS, past out_high and drained. */
	snprintf(url, sizeof url, "https://127.0.0.1:%s/big",
	    strrchr(httpd_bound(srv, 2), ':') + 1);
	cr_assert_eq(run_child(get_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 64 * 1024 * 1024);
	cr_assert_not_null(text);
	cr_assert_gt(len, HTTPD_OUT_HIGH);
	cr_assert_str_eq(text + len - 3, "END");
	cr_assert_eq(strspn(text, "x"), len - 3);
	cr_assert_eq(app.drained, 1);
	free(text);

	/* Plain HTTP to it: no answer, the connection dropped, no harm. */
	{
		struct buf	got = { 0 };
		int		fd;

		fd = client_tcp(httpd_bound(srv, 2));
		puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
		cr_assert_eq(get(fd, &got, NULL, 2), 1);
		cr_assert_null(got.data != NULL ? strstr(got.data, "hello") :
		    NULL);
		close(fd);
		buf_free(&got);
		cr_assert_eq(run_child(get_argv, 10), 0, "curl failed after");
	}

	/* Errors name the file and mbedTLS's reason. */
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", out, key, &cause),
	    -1);
	cr_assert(strncmp(cause, out, strlen(out)) == 0, "%s", cause);
	cr_assert_not_null(strstr(cause, "X509"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", cert, cert, &cause),
	    -1);
	cr_assert(strncmp(cause, cert, strlen(cert)) == 0, "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", cert, NULL, &cause),
	    -1);
	free(cause);
}

/* --- Deadlines and caps against clients that never finish -------------- */

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
