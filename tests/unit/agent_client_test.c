/*
 * The host side of the agent protocol, against a scripted peer on the other
 * end of a socketpair.
 */
#include <sys/socket.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "cmd.h"

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

static int
event_cb(const char *event, const char *data, size_t len, void *arg,
    char **cause)
{
	struct seen	*s = arg;

	buf_printf(&s->events, "%s=", event);
	buf_add(&s->events, data, len);
	buf_add(&s->events, ";", 1);
	if (strcmp(event, "refuse") == 0) {
		xasprintf(cause, "refused by the test");
		return (-1);
	}
	return (0);
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
	util_set_nonblock(peer);
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

	ssize_t	w;

	while (len > 0) {
		n = len < piece ? len : piece;
		/* A client that gave up reads no more: stop there. */
		if ((w = write(peer, s, n)) == -1 && errno == EAGAIN)
			break;
		cr_assert_gt(w, 0);
		s += w;
		len -= w;
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
	cr_assert_eq(s.statuses[0], AGENT_BROKEN);
	cr_assert_eq(s.statuses[1], AGENT_BROKEN);
	cr_assert(strstr(s.bodies.data, "bad status line") != NULL, "%s",
	    s.bodies.data);
	/* A dead connection answers new requests at once. */
	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	cr_assert_eq(s.nstatus, 3);
	cr_assert_eq(s.statuses[2], AGENT_CLOSED);
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
	cr_assert_eq(s.statuses[0], AGENT_CLOSED);
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
	cr_assert_eq(s.statuses[0], AGENT_BROKEN);
	seen_free(&s);
}

static const char sse_head[] = "HTTP/1.1 200 OK\r\nContent-Type: "
    "text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

/* One exec request; feed it text; what came of it. */
static void
exec_feed(struct seen *s, const char *text)
{
	agent_request(conn, "POST", "/exec", NULL, 0, response_cb, event_cb,
	    s);
	feed(text, 4096);
}

/* A forged exit event without the last chunk answers nothing yet. */
Test(agent_client, exit_event_alone_does_not_end_the_response)
{
	struct seen	 s = { 0 };
	struct buf	 b = { 0 };

	buf_puts(&b, sse_head);
	chunk(&b, "event: start\ndata: {\"id\":1}\n\n");
	chunk(&b, "event: exit\ndata: {\"status\":7}\n\n");
	exec_feed(&s, b.data);
	cr_assert_str_eq(s.events.data, "start={\"id\":1};exit={\"status\":7};");
	cr_assert_eq(s.nstatus, 0);
	cr_assert(agent_conn_busy(conn));
	feed("0\r\n\r\n", 64);
	cr_assert_eq(s.nstatus, 1);
	cr_assert_eq(s.statuses[0], 200);
	buf_free(&b);
	seen_free(&s);
}

/* Each of these breaks the protocol and fails the request, named. */
static void
expect_broken(const char *tail, const char *why)
{
	struct seen	 s = { 0 };
	struct buf	 b = { 0 };

	buf_puts(&b, sse_head);
	buf_puts(&b, tail);
	exec_feed(&s, b.data);
	cr_assert_eq(s.nstatus, 1, "%s: no answer", why);
	cr_assert_eq(s.statuses[0], AGENT_BROKEN, "%s: status %d", why,
	    s.statuses[0]);
	cr_assert(strstr(s.bodies.data, why) != NULL, "expected \"%s\", "
	    "got \"%s\"", why, s.bodies.data);
	cr_assert(strncmp(s.bodies.data, "the agent broke the protocol: ",
	    30) == 0);
	buf_free(&b);
	buf_free(&s.bodies);
	buf_free(&s.events);
}

Test(agent_client, bad_chunk_framing_is_a_protocol_error)
{
	expect_broken("5x\r\nhello\r\n", "bad chunk size");
	teardown(); setup();
	expect_broken("+5\r\nhello\r\n", "bad chunk size");
	teardown(); setup();
	expect_broken(" 5\r\nhello\r\n", "bad chunk size");
	teardown(); setup();
	expect_broken("\r\nhello\r\n", "bad chunk size");
	teardown(); setup();
	expect_broken("000000005\r\nhello\r\n", "bad chunk size");
	teardown(); setup();
	expect_broken("200000\r\n", "bad chunk size");	/* 2 MiB */
	teardown(); setup();
	expect_broken("3\r\nhello\r\n", "chunk longer than its size");
	teardown(); setup();
	expect_broken("0\r\nX-Trailer: 1\r\n\r\n", "trailer");
}

Test(agent_client, bytes_after_the_last_response_are_refused)
{
	struct buf	b = { 0 };

	chunk(&b, "event: start\ndata: {\"id\":1}\n\n");
	chunk(&b, "event: exit\ndata: {\"status\":0}\n\n");
	buf_puts(&b, "0\r\n\r\nevent: stdout\n");
	expect_broken(b.data, "after the last response");
	buf_free(&b);
}

Test(agent_client, stream_ending_inside_an_event_is_refused)
{
	struct buf	b = { 0 };

	chunk(&b, "event: exit\ndata: {\"status\":0}\n");
	buf_puts(&b, "0\r\n\r\n");
	expect_broken(b.data, "ended inside an event");
	buf_free(&b);
}

/* A 1 MiB event in many short data lines, in many small chunks. */
Test(agent_client, oversized_event_is_refused)
{
	struct buf	b = { 0 };
	int		i;

	chunk(&b, "event: stdout\n");
	for (i = 0; i < 1024 * 1024 / 1000; i++)
		chunk(&b, "data: AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n");
	expect_broken(b.data, "an event over");
	buf_free(&b);
}

Test(agent_client, oversized_event_line_is_refused)
{
	struct buf	 b = { 0 };
	char		*big;
	int		 i;

	big = xmalloc(60001);
	memset(big, 'A', 60000);
	big[60000] = '\0';
	chunk(&b, "event: stdout\ndata: ");
	for (i = 0; i < 6; i++)
		chunk(&b, big);
	free(big);
	expect_broken(b.data, "an event line over");
	buf_free(&b);
}

/* The events of one chunk break the protocol. */
static void
expect_broken_chunk(const char *events, const char *why)
{
	struct buf	b = { 0 };

	chunk(&b, events);
	expect_broken(b.data, why);
	buf_free(&b);
}

Test(agent_client, odd_event_fields_are_refused)
{
	expect_broken_chunk("bogus: 1\n\n", "unknown event field");
	teardown(); setup();
	expect_broken_chunk("event: a\nevent: b\n\n", "bad event name");
	teardown(); setup();
	expect_broken_chunk("event:\n\n", "bad event name");
	teardown(); setup();
	expect_broken_chunk("event: refuse\n\n", "refused by the test");
}

Test(agent_client, bad_heads_are_refused)
{
	struct seen	s = { 0 };

	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	feed("HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\nhello", 64);
	cr_assert_eq(s.statuses[0], AGENT_BROKEN);
	cr_assert(strstr(s.bodies.data, "Content-Length") != NULL);
	teardown(); setup();
	seen_free(&s);
	memset(&s, 0, sizeof s);
	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	feed("HTTP/1.1 2000 OK\r\n\r\n", 64);
	cr_assert_eq(s.statuses[0], AGENT_BROKEN);
	teardown(); setup();
	seen_free(&s);
	memset(&s, 0, sizeof s);
	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	feed("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", 64);
	cr_assert_eq(s.statuses[0], AGENT_BROKEN);
	seen_free(&s);
}

/* Many short header lines add up to the head's bound too. */
Test(agent_client, endless_headers_are_refused)
{
	struct seen	s = { 0 };
	int		i;

	agent_request(conn, "GET", "/ping", NULL, 0, response_cb, NULL, &s);
	feed("HTTP/1.1 200 OK\r\n", 64);
	for (i = 0; i < 2000 && s.nstatus == 0; i++)
		feed("X-Junk: 0123456789\r\n", 64);
	cr_assert_eq(s.nstatus, 1);
	cr_assert_eq(s.statuses[0], AGENT_BROKEN);
	seen_free(&s);
}

static void
exit_ok(const char *json, int status, int sig, const char *error)
{
	struct agent_exit	 x;
	char			*cause = NULL;

	cr_assert_eq(agent_parse_exit(json, strlen(json), &x, &cause), 0,
	    "%s: %s", json, cause);
	cr_assert_eq(x.status, status, "%s", json);
	cr_assert_eq(x.signal, sig, "%s", json);
	if (error == NULL)
		cr_assert_null(x.error, "%s", json);
	else
		cr_assert_str_eq(x.error, error, "%s", json);
	free(x.error);
}

static void
exit_bad(const char *json, const char *why)
{
	struct agent_exit	 x;
	char			*cause = NULL;

	cr_assert_eq(agent_parse_exit(json, strlen(json), &x, &cause), -1,
	    "%s accepted", json);
	cr_assert(strstr(cause, why) != NULL, "%s: %s", json, cause);
	cr_assert_null(x.error);
	free(cause);
}

Test(agent_client_exit, what_the_agent_sends)
{
	exit_ok("{\"status\":0}", 0, 0, NULL);
	exit_ok("{\"status\":255}", 255, 0, NULL);
	exit_ok("{\"signal\":9}", 0, 9, NULL);
	exit_ok("{\"signal\":64}", 0, 64, NULL);
	exit_ok(" { \"status\" : 127 , \"error\" : \"x: No such file\" } ",
	    127, 0, "x: No such file");
}

Test(agent_client_exit, ranges_are_checked)
{
	exit_bad("{\"signal\":1000}", "signal 1000 out of range");
	exit_bad("{\"signal\":0}", "out of range");
	exit_bad("{\"signal\":65}", "out of range");
	exit_bad("{\"status\":256}", "exit status 256 out of range");
	exit_bad("{\"status\":-1}", "out of range");
	exit_bad("{\"status\":99999999999}", "malformed");
}

Test(agent_client_exit, malformed_json_is_refused)
{
	exit_bad("", "malformed");
	exit_bad("{}", "malformed");
	exit_bad("{\"status\":7", "malformed");
	exit_bad("{\"status\":7}x", "malformed");
	exit_bad("{\"status\":7,}", "malformed");
	exit_bad("{\"status\":07}", "malformed");
	exit_bad("{\"status\":\"7\"}", "malformed");
	exit_bad("{\"status\":7,\"signal\":9}", "malformed");
	exit_bad("{\"status\":7,\"status\":8}", "malformed");
	exit_bad("{\"error\":\"no status\"}", "malformed");
	exit_bad("{\"status\":7,\"other\":1}", "malformed");
	exit_bad("{\"status\":7,\"error\":\"a\\qb\"}", "malformed");
	exit_bad("{\"status\":7,\"error\":\"open", "malformed");
	exit_bad("[7]", "malformed");
}

/* The agent's text reaches a terminal: no escape sequence gets through. */
Test(agent_client_exit, error_text_is_escaped_and_bounded)
{
	struct agent_exit	 x;
	struct buf		 b = { 0 };
	char			*cause = NULL;
	int			 i;

	exit_ok("{\"status\":126,\"error\":\"\\u001b[2J\\u001b]0;pwned\\u0007"
	    "x\\ny\\\\\"}", 126, 0, "\\x1b[2J\\x1b]0;pwned\\x07x\\x0ay\\\\");
	buf_puts(&b, "{\"status\":126,\"error\":\"");
	for (i = 0; i < 5000; i++)
		buf_puts(&b, "e");
	buf_puts(&b, "\"}");
	cr_assert_eq(agent_parse_exit(b.data, b.len, &x, &cause), 0);
	cr_assert_eq(strlen(x.error), AGENT_ERROR_MAX + 3);
	cr_assert(strcmp(x.error + AGENT_ERROR_MAX, "...") == 0);
	free(x.error);
	buf_free(&b);
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
		cr_assert_eq(s.statuses[0], AGENT_BROKEN, "%s", bad[i]);
	}
	seen_free(&s);
}
