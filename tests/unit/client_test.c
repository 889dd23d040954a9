/*
 * The serve API's client (core/cmd/client.c): which server a host spec
 * names, what an error answer says, and an exec's event stream turned
 * back into output and an exit status, fed in pieces cut anywhere.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "cmd.h"
#include "client.h"

static void
host_ok(const char *spec, const char *sock, const char *url)
{
	char	*s, *u, *cause = NULL;

	cr_assert_eq(client_host_parse(spec, &s, &u, &cause), 0, "%s: %s",
	    spec, cause);
	if (sock == NULL)
		cr_assert_null(s, "%s", spec);
	else
		cr_assert_str_eq(s, sock);
	cr_assert_str_eq(u, url);
	free(s);
	free(u);
}

static void
host_bad(const char *spec)
{
	char	*s, *u, *cause = NULL;

	cr_assert_eq(client_host_parse(spec, &s, &u, &cause), -1, "%s", spec);
	cr_assert_not_null(cause);
	cr_assert(strstr(cause, spec) != NULL, "%s", cause);
	free(cause);
}

Test(client, host_specs)
{
	host_ok("unix:/run/q/qsup.sock", "/run/q/qsup.sock",
	    "http://localhost");
	host_ok("unix:rel.sock", "rel.sock", "http://localhost");
	host_ok("http://127.0.0.1:8080", NULL, "http://127.0.0.1:8080");
	host_ok("http://127.0.0.1:8080/", NULL, "http://127.0.0.1:8080");
	host_ok("https://q.example:8443", NULL, "https://q.example:8443");
	host_ok("tcp:127.0.0.1:9", NULL, "http://127.0.0.1:9");
	host_bad("unix:");
	host_bad("http://");
	host_bad("http://h:1/v1");
	host_bad("http://h:1?x");
	host_bad("ftp://h");
	host_bad("/run/q/qsup.sock");
	host_bad("");
	host_bad("tcp:");
}

Test(client, default_host_and_token)
{
	struct client	*c;
	char		 dir[] = "/tmp/client-test.XXXXXX", *path, *h;
	char		*cause = NULL;

	cr_assert_not_null(mkdtemp(dir));
	setenv("XDG_RUNTIME_DIR", dir, 1);
	unsetenv("QSUP_HOST");
	unsetenv("QSUP_TOKEN");
	unsetenv("QSUP_TOKEN_FILE");
	h = client_default_host();
	xasprintf(&path, "unix:%s/qsup/qsup.sock", dir);
	cr_assert_str_eq(h, path);
	free(path);
	free(h);

	/* No token anywhere: a 401 says where it looked. */
	cr_assert_not_null(c = client_new(NULL, NULL, &cause));
	h = client_error_text(c, 401, "{\"error\":\"no token\"}", 20);
	cr_assert(strstr(h, "QSUP_TOKEN") != NULL, "%s", h);
	cr_assert(strstr(h, "/qsup/token") != NULL, "%s", h);
	free(h);
	client_free(c);

	/* A token file's token, whitespace around it dropped. */
	xasprintf(&path, "%s/tok", dir);
	cr_assert_eq(util_write_file(path, "abc123\n"), 0);
	setenv("QSUP_TOKEN_FILE", path, 1);
	cr_assert_not_null(c = client_new("unix:/x", NULL, &cause));
	h = client_error_text(c, 401, NULL, 0);
	cr_assert(strstr(h, "refused the token") != NULL, "%s", h);
	free(h);
	cr_assert_str_eq(client_host(c), "unix:/x");
	client_free(c);

	/* QSUP_HOST when no --host; a bad one is refused at once. */
	setenv("QSUP_HOST", "gopher://x", 1);
	cr_assert_null(client_new(NULL, NULL, &cause));
	cr_assert(strstr(cause, "gopher://x") != NULL, "%s", cause);
	free(cause);
	unsetenv("QSUP_HOST");
	unsetenv("QSUP_TOKEN_FILE");
	unlink(path);
	free(path);
	rmdir(dir);
}

static char *
error_of(long status, const char *body)
{
	return (client_error_text(NULL, status, body, strlen(body)));
}

Test(client, error_text)
{
	char	*t;

	t = error_of(404, "{\"error\":\"no sandbox x\"}");
	cr_assert_str_eq(t, "no sandbox x");
	free(t);
	t = error_of(400, "{\"error\":\"must be a string\","
	    "\"field\":\"cwd\"}");
	cr_assert_str_eq(t, "cwd: must be a string");
	free(t);
	t = error_of(503, "{\"error\":\"too many sandboxes\","
	    "\"limit\":\"sandboxes\",\"max\":16}");
	cr_assert_str_eq(t, "too many sandboxes");
	free(t);
	t = error_of(503, "{\"error\":\"full\","
	    "\"limit\":\"agent_ports\",\"max\":14}");
	cr_assert_str_eq(t, "full (limit agent_ports, at most 14)");
	free(t);
	t = error_of(502, "<html>");
	cr_assert_str_eq(t, "the server answered 502");
	free(t);
	t = error_of(404, "");
	cr_assert_str_eq(t, "the server answered 404 Not Found");
	free(t);
}

Test(client, path_escaped)
{
	char	*p;

	p = client_path("ci-1", "/exec");
	cr_assert_str_eq(p, "/v1/sandboxes/ci-1/exec");
	free(p);
	p = client_path("a/b c", NULL);
	cr_assert_str_eq(p, "/v1/sandboxes/a%2Fb%20c");
	free(p);
}

/* A stream: start, output on both, exit. */
static const char stream_text[] =
	": a comment\n"
	"event: start\ndata: {\"id\": 7}\n\n"
	"event: stdout\ndata: aGVsbG8K\n\n"		/* hello\n */
	"event: stderr\r\ndata: AP8=\r\n\r\n"		/* \0 \xff */
	"event: newer\ndata: whatever\n\n"
	"event: stdout\ndata: d29y\ndata: bGQ=\n\n"	/* world */
	"event: exit\ndata: {\"status\": 3, \"signal\": null, "
	"\"timed_out\": false, \"error\": null}\n\n";

/* Fed whole, or in two pieces cut at every byte, the same comes out. */
Test(client, stream_split_anywhere)
{
	struct client_stream	 s;
	size_t			 len = strlen(stream_text), cut;
	char			*cause;
	ssize_t			 n;

	for (cut = 0; cut <= len; cut++) {
		client_stream_init(&s, -1, -1, 1024);
		n = client_stream_feed(&s, stream_text, cut);
		cr_assert_eq(n, (ssize_t)cut, "cut %zu", cut);
		n = client_stream_feed(&s, stream_text + cut, len - cut);
		cr_assert_eq(n, (ssize_t)(len - cut), "cut %zu", cut);
		cr_assert_eq(s.id, 7);
		cr_assert_eq(s.out[0].len, 11, "cut %zu", cut);
		cr_assert(memcmp(s.out[0].data, "hello\nworld", 11) == 0);
		cr_assert_eq(s.out[1].len, 2);
		cr_assert(memcmp(s.out[1].data, "\0\xff", 2) == 0);
		cr_assert_eq(client_stream_status(&s, &cause), 3);
		cr_assert_null(cause);
		client_stream_free(&s);
	}
}

static int
stream_status_of(const char *exit, char **cause)
{
	struct client_stream	 s;
	char			*text;
	int			 st;

	client_stream_init(&s, -1, -1, 0);
	xasprintf(&text, "event: exit\ndata: %s\n\n", exit);
	cr_assert_eq(client_stream_feed(&s, text, strlen(text)),
	    (ssize_t)strlen(text));
	st = client_stream_status(&s, cause);
	free(text);
	client_stream_free(&s);
	return (st);
}

/* docs/api.md's exit statuses. */
Test(client, stream_statuses)
{
	char	*cause;

	cr_assert_eq(stream_status_of("{\"status\":0,\"signal\":null,"
	    "\"timed_out\":false,\"error\":null}", &cause), 0);
	cr_assert_null(cause);
	cr_assert_eq(stream_status_of("{\"status\":null,\"signal\":9,"
	    "\"timed_out\":false,\"error\":null}", &cause), 137);
	cr_assert_eq(stream_status_of("{\"status\":null,\"signal\":9,"
	    "\"timed_out\":true,\"error\":null}", &cause), 124);
	cr_assert_eq(stream_status_of("{\"status\":127,\"signal\":null,"
	    "\"timed_out\":false,\"error\":\"nope: not found\"}", &cause),
	    127);
	cr_assert_str_eq(cause, "nope: not found");
	free(cause);
	cr_assert_eq(stream_status_of("{\"status\":null,\"signal\":null,"
	    "\"timed_out\":false,\"error\":\"the sandbox was deleted\"}",
	    &cause), 125);
	cr_assert_str_eq(cause, "the sandbox was deleted");
	free(cause);
	cr_assert_eq(stream_status_of("{\"status\":300}", &cause), 125);
	cr_assert_not_null(cause);
	free(cause);
}

/* A stream that breaks the rules, or ends early, is qsup's failure. */
Test(client, stream_broken)
{
	struct client_stream	 s;
	char			*cause;

	client_stream_init(&s, -1, -1, 0);
	cr_assert_eq(client_stream_feed(&s, "bogus: x\n\n", 10), -1);
	cr_assert(strstr(s.cause, "unknown event field") != NULL, "%s",
	    s.cause);
	client_stream_free(&s);

	client_stream_init(&s, -1, -1, 0);
	cr_assert_eq(client_stream_feed(&s, "event: start\ndata: {}\n\n",
	    23), -1);
	client_stream_free(&s);

	client_stream_init(&s, -1, -1, 0);
	cr_assert_eq(client_stream_feed(&s, "event: stdout\ndata: eA==\n\n",
	    26), 26);
	cr_assert_eq(client_stream_status(&s, &cause), 125);
	cr_assert(strstr(cause, "before its exit") != NULL, "%s", cause);
	free(cause);
	client_stream_free(&s);

	/* After exit nothing more is read. */
	client_stream_init(&s, -1, -1, 0);
	cr_assert_eq(client_stream_feed(&s, "event: exit\ndata: {\"status\":"
	    "1}\n\nevent: stdout\ndata: eA==\n\n", 55), 55);
	cr_assert_eq(s.out[0].len, 0);
	client_stream_free(&s);
}

/* Collected output stops at its bound, and says so. */
Test(client, stream_bounded)
{
	struct client_stream	 s;
	const char		*ev = "event: stdout\ndata: aGVsbG8K\n\n";
	int			 i;

	client_stream_init(&s, -1, -1, 10);
	for (i = 0; i < 3; i++)
		client_stream_feed(&s, ev, strlen(ev));
	cr_assert_eq(s.out[0].len, 10);
	cr_assert(memcmp(s.out[0].data, "hello\nhell", 10) == 0);
	cr_assert(s.truncated[0]);
	cr_assert(!s.truncated[1]);
	client_stream_free(&s);
}

/*
 * Output to a full pipe: what it does not take waits in pend (the
 * transfer is paused meanwhile), and all of it arrives, in order.
 */
Test(client, stream_backpressure)
{
	struct client_stream	 s;
	unsigned char		 raw[QSUP_CHUNK], got[8 * QSUP_CHUNK];
	char			*b64, *ev;
	size_t			 total = 0, i;
	ssize_t			 n;
	int			 p[2], round;

	cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
	fcntl(p[1], F_SETPIPE_SZ, 4096);
	client_stream_init(&s, p[1], -1, 0);
	for (round = 0; round < 8; round++) {
		for (i = 0; i < sizeof raw; i++)
			raw[i] = (unsigned char)(i * 7 + round);
		b64 = mcp_base64(raw, sizeof raw);
		xasprintf(&ev, "event: stdout\ndata: %s\n\n", b64);
		free(b64);
		cr_assert_eq(client_stream_feed(&s, ev, strlen(ev)),
		    (ssize_t)strlen(ev));
		free(ev);
		/* The pipe is full: it waits, and the reader drains it. */
		cr_assert(client_stream_pending(&s));
		while (client_stream_pending(&s)) {
			n = read(p[0], got + total, sizeof got - total);
			if (n > 0)
				total += n;
			cr_assert_eq(client_stream_flush(&s), 0);
		}
	}
	while ((n = read(p[0], got + total, sizeof got - total)) > 0)
		total += n;
	cr_assert_eq(total, sizeof got);
	for (round = 0; round < 8; round++) {
		for (i = 0; i < sizeof raw; i++)
			cr_assert_eq(got[round * sizeof raw + i],
			    (unsigned char)(i * 7 + round));
	}
	/* A reader that is gone is an error of the stream. */
	close(p[0]);
	client_stream_free(&s);
	client_stream_init(&s, p[1], -1, 0);
	signal(SIGPIPE, SIG_IGN);
	cr_assert_eq(client_stream_feed(&s, "event: stdout\ndata: eA==\n\n",
	    26), -1);
	cr_assert_eq(s.write_errno, EPIPE);
	client_stream_free(&s);
	close(p[1]);
}

/* With real curl: a socket nobody listens on is named as such. */
Test(client, no_server)
{
	struct sockaddr_un	 sun;
	struct client		*c;
	json_t			*reply;
	char			 dir[] = "/tmp/client-test.XXXXXX", *host;
	char			*cause = NULL;
	int			 fd;

	cr_assert_not_null(mkdtemp(dir));
	setenv("QSUP_TOKEN", "t", 1);
	xasprintf(&host, "unix:%s/none.sock", dir);
	cr_assert_not_null(c = client_new(host, NULL, &cause));
	cr_assert_eq(client_call(c, "GET", "/v1/sandboxes", NULL, &reply,
	    &cause), -1);
	cr_assert(strstr(cause, "no qsup serve at unix:") != NULL, "%s",
	    cause);
	cr_assert(strstr(cause, "no such file or directory; start one with "
	    "qsup serve") != NULL, "%s", cause);
	free(cause);
	client_free(c);
	free(host);

	/* A socket bound, not listening: refused. */
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s/bound.sock", dir);
	cr_assert((fd = socket(AF_UNIX, SOCK_STREAM, 0)) != -1);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	xasprintf(&host, "unix:%s", sun.sun_path);
	cr_assert_not_null(c = client_new(host, NULL, &cause));
	cr_assert_eq(client_healthz(c, NULL, &cause), -1);
	cr_assert(strstr(cause, "connection refused; start one") != NULL,
	    "%s", cause);
	free(cause);
	client_free(c);
	close(fd);
	unlink(sun.sun_path);
	free(host);
	rmdir(dir);
	unsetenv("QSUP_TOKEN");
}
