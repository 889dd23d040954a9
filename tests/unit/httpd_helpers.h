/*
 * What the suites of the HTTP server layer that run a real server
 * (tests/unit/httpd*_test.c, each its own binary) share: a server on a
 * real loop with one handler for every test path (struct app says what it
 * saw), and clients on real unix and TCP sockets in the test's process,
 * the loop running while they wait. Its functions are static and marked
 * unused, since each suite takes only some of them; each suite declares
 * TestSuite(httpd, .init = setup, .fini = teardown).
 */
#ifndef QSUP_HTTPD_HELPERS_H
#define QSUP_HTTPD_HELPERS_H

#include <sys/socket.h>
#include <sys/un.h>

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

static __attribute__((unused)) void
app_close_cb(void *arg)
{
	struct app	*a = arg;

	a->closed++;
	a->conn = NULL;
}

static __attribute__((unused)) void
echo_cb(struct httpd_conn *c, const char *data, size_t len, void *arg)
{
	(void)arg;
	httpd_respond(c, 200, "text/plain", data, len);
}

/* Streamed: the first piece pauses the body; the test resumes it. */
static __attribute__((unused)) void
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

static __attribute__((unused)) void
big_drain_cb(void *arg)
{
	struct app	*a = arg;

	a->drained++;
	httpd_stream_write(a->conn, "END", 3);
	httpd_end(a->conn);
	a->conn = NULL;
}

/* Written until the queue is over out_high; the rest once it drains. */
static __attribute__((unused)) void
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

static __attribute__((unused)) void
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

static __attribute__((unused)) void
setup(void)
{
	memset(&app, 0, sizeof app);
	signal(SIGPIPE, SIG_DFL);	/* a write to a closed peer must not kill */
	strcpy(dir, "/tmp/qsup-httpd-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(sock, sizeof sock, "%s/s.sock", dir);
	loop = ev_loop_new(EVFLAG_AUTO);
}

static __attribute__((unused)) void
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
static __attribute__((unused)) void
start(const struct httpd_limits *lim)
{
	char	*cause, spec[300];

	srv = httpd_new(loop, lim, handler, &app);
	snprintf(spec, sizeof spec, "unix:%s", sock);
	if (httpd_listen(srv, spec, NULL, NULL, &cause) == -1)
		cr_assert_fail("%s", cause);
}

static __attribute__((unused)) double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

static __attribute__((unused)) void
turn(void)
{
	ev_run(loop, EVRUN_NOWAIT);
	usleep(300);
}

static __attribute__((unused)) int
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

static __attribute__((unused)) int
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
static __attribute__((unused)) void
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

static __attribute__((unused)) void
puts_(int fd, const char *s)
{
	put(fd, s, strlen(s));
}

/* Read, the loop running, until got holds needle (or at EOF): 1 at EOF. */
static __attribute__((unused)) int
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

static __attribute__((unused)) int
count(const char *hay, const char *needle)
{
	int	n = 0;

	while (hay != NULL && (hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return (n);
}

#endif
