/*
 * The HTTP server layer (core/httpd) serving requests: a real server on a
 * real loop (httpd_helpers.h), with clients on its unix socket. Whole,
 * streamed and event-stream responses, keep-alive and pipelining, the
 * token, bodies read whole, streamed and paused, 100-continue, the output
 * queue's back-pressure, and requests that end under the handler.
 */
#include "httpd_helpers.h"

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
