/*
 * The HTTP server layer (core/httpd) fed what a client may send. The
 * first byte of an input picks the way in, the second the size of the
 * pieces the rest arrives in:
 *   0  httpd_parse_head over the head wire_head_end finds, its strings
 *      in an arena of exactly the size the contract names (len + 1), then
 *      httpd_query_param for each parameter the query names
 *   1  httpd_query_param alone: a name, a newline, a query
 *   2  a whole connection: the bytes sent on a socket to a real server on
 *      a loop (heads, pipelining, bodies buffered, streamed and chunked),
 *      with a token to check when (first byte / 3) is odd; its answers
 *      are read and must be HTTP. Pieces are 16 times the second byte.
 * Whatever the bytes, nothing crashes, nothing leaks, and what comes out
 * keeps the bounds the contract sets (httpd.h).
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "httpd.h"
#include "httpd_int.h"

static size_t	 fuzz_seen;

static void
fuzz_touch(const char *p)
{
	fuzz_seen += strlen(p);
}

/* Each parameter the query names, looked up by its own (raw) name. */
static void
fuzz_params(const char *query)
{
	const char	*p = query, *e;
	char		*name, *v;
	size_t		 n;

	while (*p != '\0') {
		n = strcspn(p, "&=");
		name = xstrndup(p, n);
		if ((v = httpd_query_param(query, name)) != NULL) {
			if (strlen(v) > strlen(query))
				abort();
			free(v);
		}
		free(name);
		if ((e = strchr(p, '&')) == NULL)
			break;
		p = e + 1;
	}
}

static void
fuzz_head(const char *p, size_t len)
{
	struct httpd_req	 req;
	const char		*why;
	char			*store;
	size_t			 n;
	int			 rc;

	n = wire_head_end(p, len > HTTPD_HEAD_MAX ? HTTPD_HEAD_MAX : len);
	if (n == 0)
		n = len > HTTPD_HEAD_MAX ? HTTPD_HEAD_MAX : len;
	store = xmalloc(n + 1);
	rc = httpd_parse_head(p, n, &req, store, &why);
	if (rc == 0) {
		if (req.method == NULL || !wire_token(req.method,
		    strlen(req.method)) || req.path == NULL ||
		    req.path[0] != '/' || req.query == NULL ||
		    strlen(req.path) + strlen(req.query) > n ||
		    req.content_length < -1 || (req.chunked &&
		    req.content_length != -1) || (req.minor != 0 &&
		    req.minor != 1) || req.has_body != (req.chunked ||
		    req.content_length > 0))
			abort();
		if (req.content_type != NULL)
			fuzz_touch(req.content_type);
		if (req.authorization != NULL)
			fuzz_touch(req.authorization);
		fuzz_params(req.query);
	} else if (why == NULL || (rc != 400 && rc != 414 && rc != 431 &&
	    rc != 501 && rc != 505))
		abort();
	free(store);
}

static void
fuzz_query(const char *p, size_t len)
{
	const char	*nl;
	char		*name, *query, *v;

	if ((nl = memchr(p, '\n', len)) == NULL)
		return;
	name = xstrndup(p, nl - p);
	query = xstrndup(nl + 1, len - (nl + 1 - p));
	if ((v = httpd_query_param(query, name)) != NULL) {
		if (strlen(v) > strlen(query))
			abort();
		free(v);
	}
	fuzz_params(query);
	free(name);
	free(query);
}

/* --- A whole connection -------------------------------------------------- */

static void
fuzz_body_cb(struct httpd_conn *c, const char *data, size_t len, void *arg)
{
	(void)arg;
	if (len == 0 || data[0] == 'e')
		httpd_respond(c, 200, "text/plain", data, len);
	else if (data[0] == 'w')
		httpd_body_pause(c, 1);
}

static void
fuzz_handler(struct httpd_conn *c, const struct httpd_req *req, void *arg)
{
	(void)arg;
	if (strncmp(req->path, "/echo", 5) == 0)
		httpd_read_body(c, fuzz_body_cb, NULL);
	else if (strncmp(req->path, "/stream", 7) == 0)
		httpd_stream_body(c, fuzz_body_cb, NULL);
	else if (strncmp(req->path, "/sse", 4) == 0) {
		httpd_sse_start(c);
		httpd_sse_event(c, "x", req->query, strlen(req->query));
		httpd_end(c);
	} else if (strncmp(req->path, "/err", 4) == 0)
		httpd_error(c, 409, req->path, NULL);
	else
		httpd_respond(c, 204, NULL, NULL, 0);
}

/* What the server answered: HTTP responses, or nothing. */
static void
fuzz_drain(int fd, struct buf *out)
{
	char	tmp[65536];
	ssize_t	n;

	while ((n = recv(fd, tmp, sizeof tmp, MSG_DONTWAIT)) > 0) {
		if (out->len < 64)
			buf_add(out, tmp, n);
	}
}

static void
fuzz_conn(const char *p, size_t len, size_t piece, int token)
{
	static const char *const	 pub[] = { "/p", NULL };
	struct httpd_limits		 lim = { .head_max = 2048,
					     .body_max = 4096,
					     .out_high = 8192 };
	struct httpd_listener		 l;
	struct ev_loop			*loop;
	struct httpd			*h;
	struct buf			 out = { 0 };
	size_t				 off = 0, n;
	ssize_t				 w;
	int				 sv[2], i;

	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1)
		return;
	loop = ev_loop_new(EVFLAG_AUTO);
	h = httpd_new(loop, &lim, fuzz_handler, NULL);
	if (token)
		httpd_set_token(h, "t", pub);
	memset(&l, 0, sizeof l);
	l.h = h;
	l.fd = -1;
	l.bound = "fuzz";
	util_set_nonblock(sv[0]);
	httpd_conn_new(h, &l, sv[0], NULL);
	for (i = 0; off < len && i < 10000; i++) {
		n = len - off < piece ? len - off : piece;
		if ((w = send(sv[1], p + off, n, MSG_DONTWAIT|MSG_NOSIGNAL)) >
		    0)
			off += w;
		else if (w == -1 && errno != EAGAIN)
			break;
		ev_run(loop, EVRUN_NOWAIT);
		fuzz_drain(sv[1], &out);
	}
	shutdown(sv[1], SHUT_WR);
	for (i = 0; i < 8 && httpd_connections(h) > 0; i++) {
		ev_run(loop, EVRUN_NOWAIT);
		fuzz_drain(sv[1], &out);
	}
	if (out.len > 0 && (out.len < 9 || memcmp(out.data, "HTTP/1.1 ", 9)))
		abort();
	httpd_free(h);
	ev_loop_destroy(loop);
	close(sv[1]);
	buf_free(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	const char	*p = (const char *)data + 2;
	size_t		 piece;

	if (len < 2)
		return (0);
	piece = data[1] == 0 ? 1 : data[1];
	len -= 2;
	switch (data[0] % 3) {
	case 0:
		fuzz_head(p, len);
		break;
	case 1:
		fuzz_query(p, len);
		break;
	case 2:
		if (len > 0)
			fuzz_conn(p, len, piece * 16, (data[0] / 3) & 1);
		break;
	}
	return (0);
}
