/*
 * The host side of the agent protocol, against a scripted peer on the other
 * end of a socketpair.
 */
#include <sys/socket.h>

#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "qsup.h"

struct seen {
	int		 statuses[8];
	int		 nstatus;
	struct buf	 bodies;
	struct buf	 events;
};

static void
response_cb(int status, const char *body, size_t len, void *arg)
{
	struct seen	*s = arg;

	s->statuses[s->nstatus++] = status;
	buf_add(&s->bodies, body, len);
	buf_add(&s->bodies, "|", 1);
}

static void
event_cb(const char *event, const char *data, size_t len, void *arg)
{
	struct seen	*s = arg;

	buf_printf(&s->events, "%s=", event);
	buf_add(&s->events, data, len);
	buf_add(&s->events, ";", 1);
}

static void
seen_free(struct seen *s)
{
	buf_free(&s->bodies);
	buf_free(&s->events);
}

static struct ev_loop	*loop;
static int		 peer;
static struct agent_conn *conn;

static void
setup(void)
{
	int	sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	loop = ev_loop_new(EVFLAG_AUTO);
	conn = agent_conn_new(loop, sv[0], "sekrit");
	peer = sv[1];
}

static void
teardown(void)
{
	agent_conn_free(conn);
	close(peer);
	ev_loop_destroy(loop);
}

/* Send bytes from the peer in pieces, running the loop after each. */
static void
feed(const char *s, size_t piece)
{
	size_t	len = strlen(s), n;

	while (len > 0) {
		n = len < piece ? len : piece;
		cr_assert_eq(write(peer, s, n), (ssize_t)n);
		s += n;
		len -= n;
		ev_run(loop, EVRUN_NOWAIT);
		ev_run(loop, EVRUN_NOWAIT);
	}
}

TestSuite(agent_client, .init = setup, .fini = teardown);

Test(agent_client, request_carries_token_and_body)
{
	struct seen	s = { 0 };
	char		req[512];
	ssize_t		n;

	agent_request(conn, "POST", "/exec", "{\"argv\":[\"x\"]}", 14,
	    response_cb, NULL, &s);
	ev_run(loop, EVRUN_NOWAIT);
	n = read(peer, req, sizeof req - 1);
	cr_assert_gt(n, 0);
	req[n] = '\0';
	cr_assert(strncmp(req, "POST /exec HTTP/1.1\r\n", 21) == 0, "%s", req);
	cr_assert_not_null(strstr(req, "Authorization: Bearer sekrit\r\n"));
	cr_assert_not_null(strstr(req, "Content-Length: 14\r\n"));
	cr_assert(strcmp(req + n - 14, "{\"argv\":[\"x\"]}") == 0);
}

Test(agent_client, pipelined_responses_in_order)
{
	struct seen	s = { 0 };

	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	agent_request(conn, "POST", "/x", NULL, 0, response_cb, NULL, &s);
	feed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
	    "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n", 3);
	cr_assert_eq(s.nstatus, 2);
	cr_assert_eq(s.statuses[0], 200);
	cr_assert_eq(s.statuses[1], 401);
	cr_assert_str_eq(s.bodies.data, "hello||");
	seen_free(&s);
}

static void
chunk(struct buf *b, const char *s)
{
	buf_printf(b, "%zx\r\n%s\r\n", strlen(s), s);
}

Test(agent_client, sse_over_chunks_split_anywhere)
{
	struct buf	resp = { 0 };
	size_t		piece;

	buf_printf(&resp, "HTTP/1.1 200 OK\r\nContent-Type: "
	    "text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
	/* Events cut across chunks at awkward places. */
	chunk(&resp, "event: start\ndata: {\"id\":1}\n\n");
	chunk(&resp, "even");
	chunk(&resp, "t: stdout\r\ndata: aGk=");
	chunk(&resp, "\n\n: a comment\n\n");
	chunk(&resp, "event: exit\ndata: {\"status\"");
	chunk(&resp, ":0}\n\n");
	buf_printf(&resp, "0\r\n\r\n"
	    "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");

	/* Every way of cutting the stream gives the same events. */
	for (piece = 1; piece <= 7; piece++) {
		struct seen s = { 0 };

		agent_request(conn, "POST", "/exec", NULL, 0, response_cb,
		    event_cb, &s);
		agent_request(conn, "POST", "/poweroff", NULL, 0, response_cb,
		    NULL, &s);
		feed(resp.data, piece);
		cr_assert_str_eq(s.events.data, "start={\"id\":1};stdout=aGk=;"
		    "exit={\"status\":0};", "piece %zu", piece);
		cr_assert_eq(s.nstatus, 2);
		cr_assert_eq(s.statuses[0], 200);
		cr_assert_eq(s.statuses[1], 204);
		seen_free(&s);
	}
	buf_free(&resp);
}

Test(agent_client, garbage_fails_pending_requests)
{
	struct seen	s = { 0 };

	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	feed("SSH-2.0-nope\r\n", 64);
	cr_assert_eq(s.nstatus, 2);
	cr_assert_eq(s.statuses[0], -1);
	cr_assert_eq(s.statuses[1], -1);
	/* A dead connection answers new requests with -1 at once. */
	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	cr_assert_eq(s.nstatus, 3);
	cr_assert_eq(s.statuses[2], -1);
	seen_free(&s);
}

Test(agent_client, eof_fails_pending_requests)
{
	struct seen	s = { 0 };

	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	feed("HTTP/1.1 200 OK\r\nContent-Le", 64);
	shutdown(peer, SHUT_WR);
	ev_run(loop, EVRUN_NOWAIT);
	cr_assert_eq(s.nstatus, 1);
	cr_assert_eq(s.statuses[0], -1);
	seen_free(&s);
}

Test(agent_client, oversized_header_is_refused)
{
	struct seen	 s = { 0 };
	char		*big;

	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	big = xmalloc(40000);
	memset(big, 'a', 39999);
	big[39999] = '\0';
	feed(big, 8192);
	free(big);
	cr_assert_eq(s.nstatus, 1);
	cr_assert_eq(s.statuses[0], -1);
	seen_free(&s);
}

/* A status that is not three digits, 100-599, is a malformed response. */
Test(agent_client, status_out_of_range_is_refused)
{
	static const char	*bad[] = { "HTTP/1.1 2048 OK\r\n",
	    "HTTP/1.1 -1 X\r\n", "HTTP/1.1 099 X\r\n", "HTTP/1.1 20 X\r\n" };
	struct seen		 s = { 0 };
	size_t			 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		teardown();
		setup();
		memset(&s.statuses, 0, sizeof s.statuses);
		s.nstatus = 0;
		agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL,
		    &s);
		feed(bad[i], 64);
		feed("Content-Length: 0\r\n\r\n", 64);
		cr_assert_eq(s.nstatus, 1, "%s", bad[i]);
		cr_assert_eq(s.statuses[0], -1, "%s", bad[i]);
	}
	seen_free(&s);
}
