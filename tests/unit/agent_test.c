/*
 * qsup-agent, tested as qsup uses it: the real binary in test mode
 * (qsup-agent --config FILE --fd N ...) serving HTTP/1.1 and Server-Sent
 * Events over socketpairs. Run from the repository root, after
 * `make build/qsup-agent` (or set QSUP_AGENT to the binary).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "wire.h"

#define TOKEN		"t0k3n-Secret_42"
#define IO_TIMEOUT_MS	15000
#define MAX_PORTS	4

/* A growable byte buffer. */
struct tbuf {
	char	*data;
	size_t	 len;
	size_t	 cap;
};

static void
tbuf_add(struct tbuf *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->data = realloc(b->data, b->cap);
		cr_assert_not_null(b->data);
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

static void
tbuf_consume(struct tbuf *b, size_t n)
{
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

/* One client connection: a socketpair end with its unread bytes. */
struct conn {
	int		fd;
	struct tbuf	in;
	/* The response being read. */
	int		status;
	char		head[4096];
	long		content_length;
	int		chunked;
	int		body_done;
	struct tbuf	sse;		/* de-chunked, not yet split */
};

struct agent {
	pid_t		pid;
	int		nports;
	struct conn	c[MAX_PORTS];
	char		dir[64];
};

static struct agent	ag;

static const char *
agent_path(void)
{
	const char	*p = getenv("QSUP_AGENT");

	return (p != NULL ? p : "build/qsup-agent");
}

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return (0);
}

static void
write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int	fd;

	fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, mode);
	cr_assert(fd != -1, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void
tmp_path(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", ag.dir, name);
}

static void
make_dir(void)
{
	if (ag.dir[0] != '\0')
		return;
	strcpy(ag.dir, "/tmp/qsup-agent-test.XXXXXX");
	cr_assert_not_null(mkdtemp(ag.dir));
}

/*
 * Start the agent on nports socketpairs. mode is "--config" or "--seed";
 * file is written into the test's folder first when data is not NULL.
 */
static void
spawn_agent_with(int nports, const char *mode, const char *name,
    const void *data, size_t len, const char *extra)
{
	int		 sv[MAX_PORTS][2], i;
	char		 path[256], fdarg[MAX_PORTS][16];
	const char	*argv[32];
	int		 argc = 0;

	signal(SIGPIPE, SIG_IGN);
	make_dir();
	if (name != NULL)
		tmp_path(path, sizeof path, name);
	if (data != NULL)
		write_file(path, data, len, 0644);
	cr_assert(nports <= MAX_PORTS);
	ag.nports = nports;
	argv[argc++] = agent_path();
	argv[argc++] = mode;
	if (name != NULL)
		argv[argc++] = path;
	for (i = 0; i < nports; i++) {
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]), 0);
		snprintf(fdarg[i], sizeof fdarg[i], "%d", sv[i][1]);
		argv[argc++] = "--fd";
		argv[argc++] = fdarg[i];
	}
	if (extra != NULL)
		argv[argc++] = extra;
	argv[argc] = NULL;

	ag.pid = fork();
	cr_assert(ag.pid != -1);
	if (ag.pid == 0) {
		for (i = 0; i < nports; i++)
			close(sv[i][0]);
		execv(argv[0], (char **)(uintptr_t)argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	for (i = 0; i < nports; i++) {
		close(sv[i][1]);
		memset(&ag.c[i], 0, sizeof ag.c[i]);
		ag.c[i].fd = sv[i][0];
	}
}

static void
spawn_agent(int nports, const char *extra_config)
{
	char	cfg[2048];

	snprintf(cfg, sizeof cfg, "# test seed\n"
	    "token %s\n"
	    "hostname ignored-in-test-mode\n"
	    "env FOO=hello%%20world\n"
	    "env SHADOWED=from-seed\n"
	    "cwd %s\n"
	    "unknown-key is ignored\n"
	    "%s", TOKEN, "/tmp", extra_config != NULL ? extra_config : "");
	spawn_agent_with(nports, "--config", "qsup-config", cfg, strlen(cfg),
	    NULL);
}

/* Wait for the agent to exit; its status, or -1 if it did not. */
static int
agent_wait(int ms)
{
	int	status, i;
	pid_t	r;

	for (i = 0; i < ms / 10; i++) {
		r = waitpid(ag.pid, &status, WNOHANG);
		if (r == ag.pid) {
			ag.pid = 0;
			return (status);
		}
		usleep(10000);
	}
	return (-1);
}

static void
teardown(void)
{
	int	i;

	for (i = 0; i < ag.nports; i++) {
		if (ag.c[i].fd != -1)
			close(ag.c[i].fd);
		ag.c[i].fd = -1;
		free(ag.c[i].in.data);
		free(ag.c[i].sse.data);
	}
	if (ag.pid > 0 && agent_wait(3000) == -1) {
		kill(ag.pid, SIGKILL);
		waitpid(ag.pid, NULL, 0);
	}
	if (ag.dir[0] != '\0')
		nftw(ag.dir, rm_cb, 16, FTW_DEPTH|FTW_PHYS);
	memset(&ag, 0, sizeof ag);
}

TestSuite(agent, .fini = teardown, .timeout = 60);

static void
send_all(struct conn *c, const void *p, size_t len)
{
	const char	*s = p;
	ssize_t		 n;

	while (len > 0) {
		n = write(c->fd, s, len);
		if (n == -1 && errno == EINTR)
			continue;
		cr_assert(n > 0, "write to agent: %s", strerror(errno));
		s += n;
		len -= n;
	}
}

static void
send_request(struct conn *c, const char *method, const char *path,
    const char *token, const void *body, size_t len)
{
	char	head[1024];

	if (token != NULL)
		snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: agent\r\n"
		    "Authorization: Bearer %s\r\nContent-Length: %zu\r\n\r\n",
		    method, path, token, len);
	else
		snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: agent\r\n"
		    "Content-Length: %zu\r\n\r\n", method, path, len);
	send_all(c, head, strlen(head));
	if (len > 0)
		send_all(c, body, len);
}

/* Read more from the agent; fails the test on timeout or EOF. */
static void
conn_fill(struct conn *c)
{
	struct pollfd	pfd = { c->fd, POLLIN, 0 };
	char		chunk[65536];
	ssize_t		n;
	int		r;

	r = poll(&pfd, 1, IO_TIMEOUT_MS);
	cr_assert(r == 1, "timed out waiting for the agent");
	n = read(c->fd, chunk, sizeof chunk);
	cr_assert(n > 0, "agent closed the connection (%zd: %s)", n,
	    strerror(errno));
	tbuf_add(&c->in, chunk, n);
}

/* Take one CRLF line (without it) into out. */
static void
conn_line(struct conn *c, char *out, size_t size)
{
	char	*nl;
	size_t	 n;

	while ((nl = memchr(c->in.data, '\n', c->in.len)) == NULL ||
	    c->in.len == 0)
		conn_fill(c);
	n = nl - c->in.data;
	cr_assert(n > 0 && nl[-1] == '\r', "line without CRLF");
	cr_assert(n - 1 < size, "line too long");
	memcpy(out, c->in.data, n - 1);
	out[n - 1] = '\0';
	tbuf_consume(&c->in, n + 1);
}

/* Read a status line and headers. */
static int
read_head(struct conn *c)
{
	char	line[4096];
	size_t	hl = 0;

	if (c->in.data == NULL)
		conn_fill(c);
	conn_line(c, line, sizeof line);
	cr_assert_eq(strncmp(line, "HTTP/1.1 ", 9), 0, "status line: %s",
	    line);
	c->status = atoi(line + 9);
	c->content_length = -1;
	c->chunked = 0;
	c->body_done = 0;
	c->head[0] = '\0';
	free(c->sse.data);
	memset(&c->sse, 0, sizeof c->sse);
	for (;;) {
		conn_line(c, line, sizeof line);
		if (line[0] == '\0')
			break;
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			c->content_length = atol(line + 15);
		if (strncasecmp(line, "Transfer-Encoding:", 18) == 0)
			c->chunked = strstr(line, "chunked") != NULL;
		hl += snprintf(c->head + hl, sizeof c->head - hl, "%s\n",
		    line);
	}
	return (c->status);
}

/* A whole Content-Length response; the body is NUL-terminated. */
static int
read_response(struct conn *c, struct tbuf *body)
{
	int	status;

	status = read_head(c);
	cr_assert(!c->chunked, "unexpected chunked response");
	if (status == 204)
		cr_assert(c->content_length <= 0);
	if (c->content_length < 0)
		c->content_length = 0;
	while (c->in.len < (size_t)c->content_length)
		conn_fill(c);
	memset(body, 0, sizeof *body);
	tbuf_add(body, c->in.data != NULL ? c->in.data : "",
	    c->content_length);
	tbuf_consume(&c->in, c->content_length);
	return (status);
}

static int
request(struct conn *c, const char *method, const char *path,
    const void *body, size_t len, struct tbuf *resp)
{
	send_request(c, method, path, TOKEN, body, len);
	return (read_response(c, resp));
}

/* Read one chunk of a chunked body into c->sse; 0 at the last chunk. */
static int
read_chunk(struct conn *c)
{
	char	line[64], *end;
	long	n;

	conn_line(c, line, sizeof line);
	n = strtol(line, &end, 16);
	cr_assert(end != line && n >= 0, "bad chunk size: %s", line);
	if (n == 0) {
		conn_line(c, line, sizeof line);
		cr_assert_str_empty(line);
		c->body_done = 1;
		return (0);
	}
	while (c->in.len < (size_t)n + 2)
		conn_fill(c);
	cr_assert(c->in.data[n] == '\r' && c->in.data[n + 1] == '\n');
	tbuf_add(&c->sse, c->in.data, n);
	tbuf_consume(&c->in, n + 2);
	return (1);
}

/* The next SSE event; 0 when the stream has ended. */
static int
next_event(struct conn *c, char *name, size_t nsize, struct tbuf *data)
{
	char	*end, *p, *nl;

	for (;;) {
		if (c->sse.len > 0 && (end = strstr(c->sse.data, "\n\n")) !=
		    NULL)
			break;
		if (c->body_done || !read_chunk(c)) {
			cr_assert_eq(c->sse.len, 0, "partial event at end");
			return (0);
		}
	}
	memset(data, 0, sizeof *data);
	tbuf_add(data, "", 0);
	name[0] = '\0';
	for (p = c->sse.data; p < end + 1; p = nl + 1) {
		nl = memchr(p, '\n', end + 1 - p);
		if (strncmp(p, "event: ", 7) == 0)
			snprintf(name, nsize, "%.*s", (int)(nl - p - 7), p + 7);
		else if (strncmp(p, "data: ", 6) == 0)
			tbuf_add(data, p + 6, nl - p - 6);
		else
			cr_assert_fail("unexpected SSE line: %.*s",
			    (int)(nl - p), p);
	}
	tbuf_consume(&c->sse, end + 2 - c->sse.data);
	return (1);
}

static int
b64val(int ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return (ch - 'A');
	if (ch >= 'a' && ch <= 'z')
		return (ch - 'a' + 26);
	if (ch >= '0' && ch <= '9')
		return (ch - '0' + 52);
	if (ch == '+')
		return (62);
	if (ch == '/')
		return (63);
	return (-1);
}

static void
b64_decode(const char *s, size_t len, struct tbuf *out)
{
	size_t		i;
	int		v[4], j;
	unsigned char	b[3];

	cr_assert_eq(len % 4, 0, "base64 length %zu", len);
	for (i = 0; i < len; i += 4) {
		for (j = 0; j < 4; j++)
			v[j] = s[i + j] == '=' ? 0 : b64val(s[i + j]);
		cr_assert(v[0] >= 0 && v[1] >= 0 && v[2] >= 0 && v[3] >= 0,
		    "bad base64");
		b[0] = v[0] << 2 | v[1] >> 4;
		b[1] = (v[1] & 15) << 4 | v[2] >> 2;
		b[2] = (v[2] & 3) << 6 | v[3];
		tbuf_add(out, b, s[i + 2] == '=' ? 1 : s[i + 3] == '=' ? 2 : 3);
	}
}

/* The outcome of one exec, as a user of the protocol sees it. */
struct result {
	long		id;
	long		pid;
	struct tbuf	out;
	struct tbuf	err;
	char		exit[512];
	int		status;		/* -1 unless {"status":N} */
	int		signal;		/* -1 unless {"signal":N} */
	int		nevents;
	long		max_event_raw;
};

static long
json_num(const char *json, const char *key)
{
	char		 pat[64];
	const char	*p;

	snprintf(pat, sizeof pat, "\"%s\":", key);
	if ((p = strstr(json, pat)) == NULL)
		return (-1);
	return (strtol(p + strlen(pat), NULL, 10));
}

/* Send POST /exec and read up to and including the start event. */
static void
exec_begin(struct conn *c, const char *json, struct result *r)
{
	char		name[32];
	struct tbuf	data;

	memset(r, 0, sizeof *r);
	tbuf_add(&r->out, "", 0);
	tbuf_add(&r->err, "", 0);
	r->status = r->signal = -1;
	send_request(c, "POST", "/exec", TOKEN, json, strlen(json));
	cr_assert_eq(read_head(c), 200, "exec answered %d", c->status);
	cr_assert(c->chunked);
	cr_assert_not_null(strstr(c->head, "text/event-stream"));
	cr_assert(next_event(c, name, sizeof name, &data));
	cr_assert_str_eq(name, QSUP_EVENT_START);
	r->id = json_num(data.data, "id");
	r->pid = json_num(data.data, "pid");
	cr_assert(r->id > 0 && r->pid > 0, "start: %s", data.data);
	free(data.data);
}

/* Read events to the end of the stream. */
static void
exec_end(struct conn *c, struct result *r)
{
	char		name[32];
	struct tbuf	data, raw;
	int		saw_exit = 0;

	while (next_event(c, name, sizeof name, &data)) {
		r->nevents++;
		cr_assert(!saw_exit, "event %s after exit", name);
		if (strcmp(name, QSUP_EVENT_STDOUT) == 0 ||
		    strcmp(name, QSUP_EVENT_STDERR) == 0) {
			memset(&raw, 0, sizeof raw);
			b64_decode(data.data, data.len, &raw);
			cr_assert(raw.len > 0 && raw.len <= QSUP_CHUNK,
			    "event of %zu bytes", raw.len);
			if ((long)raw.len > r->max_event_raw)
				r->max_event_raw = raw.len;
			tbuf_add(name[3] == 'o' ? &r->out : &r->err, raw.data,
			    raw.len);
			free(raw.data);
		} else if (strcmp(name, QSUP_EVENT_EXIT) == 0) {
			saw_exit = 1;
			snprintf(r->exit, sizeof r->exit, "%s", data.data);
			r->status = json_num(data.data, "status");
			r->signal = json_num(data.data, "signal");
		} else
			cr_assert_fail("unexpected event %s", name);
		free(data.data);
	}
	cr_assert(saw_exit, "stream ended without an exit event");
}

static void
exec_run(struct conn *c, const char *json, struct result *r)
{
	exec_begin(c, json, r);
	exec_end(c, r);
}

static void
result_free(struct result *r)
{
	free(r->out.data);
	free(r->err.data);
}

static void
assert_serving(struct conn *c)
{
	struct tbuf	body;

	cr_assert_eq(request(c, "GET", "/ping", NULL, 0, &body), 200,
	    "ping after the error: %s", body.data);
	free(body.data);
}

/* --- Authentication and ping. */

Test(agent, ping_answers_version_and_kernel)
{
	struct tbuf	body;

	spawn_agent(1, NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 200);
	cr_assert_eq(json_num(body.data, "version"), QSUP_PROTOCOL_VERSION,
	    "%s", body.data);
	cr_assert(json_num(body.data, "boot_ms") >= 0);
	cr_assert_not_null(strstr(body.data, "\"kernel\":\""), "%s",
	    body.data);
	cr_assert_not_null(strstr(ag.c[0].head, "application/json"));
	free(body.data);
}

Test(agent, requests_without_the_token_get_401)
{
	struct tbuf	 body;
	struct conn	*c = &ag.c[0];
	const char	*bad[] = { "wrong", TOKEN "x", "t0k3n-Secret_4",
	    "T0K3N-SECRET_42", "" };
	char		 head[256];
	size_t		 i;

	spawn_agent(1, NULL);
	send_request(c, "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(c, &body), 401);
	cr_assert_not_null(strstr(body.data, "\"error\""));
	free(body.data);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		send_request(c, "GET", "/ping", bad[i], NULL, 0);
		cr_assert_eq(read_response(c, &body), 401, "token '%s'",
		    bad[i]);
		free(body.data);
	}
	/* Another scheme with the right token is still wrong. */
	snprintf(head, sizeof head, "GET /ping HTTP/1.1\r\n"
	    "Authorization: Basic %s\r\n\r\n", TOKEN);
	send_all(c, head, strlen(head));
	cr_assert_eq(read_response(c, &body), 401);
	free(body.data);
	/* An unauthenticated exec must not run anything. */
	send_request(c, "POST", "/exec", "nope", "{\"argv\":[\"true\"]}", 17);
	cr_assert_eq(read_response(c, &body), 401);
	free(body.data);
	assert_serving(c);
}

Test(agent, pipelined_requests_are_answered_in_order)
{
	struct tbuf	 body;
	struct conn	*c = &ag.c[0];
	char		 two[512];

	spawn_agent(1, NULL);
	snprintf(two, sizeof two,
	    "GET /nope HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n"
	    "GET /ping HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n",
	    TOKEN, TOKEN);
	send_all(c, two, strlen(two));
	cr_assert_eq(read_response(c, &body), 404);
	free(body.data);
	cr_assert_eq(read_response(c, &body), 200);
	free(body.data);
}

/* --- Exec. */

Test(agent, exec_echo_streams_start_stdout_exit)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"echo\",\"hi\"]}", &r);
	cr_assert_eq(r.out.len, 3);
	cr_assert_str_eq(r.out.data, "hi\n");
	cr_assert_eq(r.err.len, 0);
	cr_assert_eq(r.status, 0, "exit: %s", r.exit);
	cr_assert_eq(r.signal, -1);
	cr_assert_str_eq(r.exit, "{\"status\":0}");
	result_free(&r);
	/* The port is free again, and ids go up. */
	exec_run(&ag.c[0], "{\"argv\":[\"true\"]}", &r);
	cr_assert_eq(r.id, 2);
	result_free(&r);
}

Test(agent, exit_statuses_pass_through)
{
	static const int	codes[] = { 0, 1, 42, 255 };
	struct result		r;
	char			json[128];
	size_t			i;

	spawn_agent(1, NULL);
	for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		snprintf(json, sizeof json,
		    "{\"argv\":[\"sh\",\"-c\",\"exit %d\"]}", codes[i]);
		exec_run(&ag.c[0], json, &r);
		cr_assert_eq(r.status, codes[i], "exit: %s", r.exit);
		result_free(&r);
	}
}

Test(agent, death_by_signal_is_reported)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"kill -9 $$\"]}", &r);
	cr_assert_eq(r.signal, 9, "exit: %s", r.exit);
	cr_assert_eq(r.status, -1);
	result_free(&r);
}

Test(agent, missing_command_is_127_not_executable_is_126)
{
	struct result	r;
	char		path[256], json[512];

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"no-such-command-qsup\"]}", &r);
	cr_assert_eq(r.status, 127, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.exit, "\"error\":\"no-such-command-qsup"),
	    "%s", r.exit);
	cr_assert_eq(r.out.len + r.err.len, 0);
	result_free(&r);

	tmp_path(path, sizeof path, "not-executable");
	write_file(path, "#!/bin/sh\necho ran\n", 19, 0644);
	snprintf(json, sizeof json, "{\"argv\":[\"%s\"]}", path);
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 126, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.exit, "\"error\":"), "%s", r.exit);
	cr_assert_eq(r.out.len, 0);
	result_free(&r);

	/* A missing working directory cannot start the command either. */
	exec_run(&ag.c[0], "{\"argv\":[\"true\"],\"cwd\":\"/no/such/dir\"}",
	    &r);
	cr_assert_eq(r.status, 127, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.exit, "/no/such/dir"), "%s", r.exit);
	result_free(&r);
}

Test(agent, stdout_and_stderr_stay_separate)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"printf out1; printf err1 >&2; printf out2; printf err2 >&2\"]}",
	    &r);
	cr_assert_str_eq(r.out.data, "out1out2");
	cr_assert_str_eq(r.err.data, "err1err2");
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, environment_and_working_directory)
{
	struct result	r;

	spawn_agent(1, NULL);
	/* Seed env (percent-decoded), request env overriding it, defaults. */
	exec_run(&ag.c[0], "{\"cwd\":null,\"argv\":[\"sh\",\"-c\","
	    "\"echo \\\"$FOO|$SHADOWED|$REQ|$HOME|$PATH\\\"; pwd\"],"
	    "\"env\":[\"SHADOWED=from-request\",\"REQ=a b=c\"],"
	    "\"ignored\":{\"nested\":[1,2.5e3,-0.1,true,false,null,\"x\"]}}",
	    &r);
	cr_assert_str_eq(r.out.data, "hello world|from-request|a b=c|/root|"
	    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	    "/tmp\n");
	result_free(&r);

	/* Only what the seed and the request give, nothing of ours. */
	setenv("QSUP_TEST_LEAK", "1", 1);
	exec_run(&ag.c[0], "{\"argv\":[\"env\"],\"cwd\":\"/\"}", &r);
	cr_assert_null(strstr(r.out.data, "QSUP_TEST_LEAK"));
	cr_assert_not_null(strstr(r.out.data, "TERM="));
	result_free(&r);

	exec_run(&ag.c[0], "{\"argv\":[\"pwd\"],\"cwd\":\"/usr\"}", &r);
	cr_assert_str_eq(r.out.data, "/usr\n");
	result_free(&r);
}

Test(agent, json_string_escapes_reach_argv)
{
	struct result		r;
	static const char	want[] = "caf\xc3\xa9 \xf0\x9f\x98\x80 "
	    "\"q\" \\ / \b\f\n\r\t|";

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"printf\",\"%s|\","
	    "\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ "
	    "\\b\\f\\n\\r\\t\"]}",
	    &r);
	cr_assert_eq(r.out.len, sizeof want - 1, "got %zu bytes", r.out.len);
	cr_assert_eq(memcmp(r.out.data, want, sizeof want - 1), 0);
	result_free(&r);
}

Test(agent, commands_start_clean)
{
	struct result	r;

	spawn_agent(2, NULL);
	/* Only 0-2 (and the fd ls itself opens to read the folder). */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"ls /proc/self/fd | wc -l; ls -l /proc/self/fd/0\"]}", &r);
	cr_assert(strncmp(r.out.data, "4\n", 2) == 0, "%s", r.out.data);
	cr_assert_not_null(strstr(r.out.data, "pipe:"), "%s", r.out.data);
	result_free(&r);

	/* No signal blocked or ignored, a session of its own. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"grep -E '^Sig(Blk|Ign)' /proc/self/status;"
	    " test $(ps -o sid= -p $$) -eq $$ && echo leader\"]}", &r);
	cr_assert_str_eq(r.out.data, "SigBlk:\t0000000000000000\n"
	    "SigIgn:\t0000000000000000\nleader\n");
	result_free(&r);
}

/* --- Stdin. */

static void
stdin_send(struct conn *c, long id, const void *data, size_t len,
    int want)
{
	char		path[64];
	struct tbuf	body;

	snprintf(path, sizeof path, "/exec/%ld/stdin", id);
	cr_assert_eq(request(c, "POST", path, data, len, &body), want,
	    "stdin: %s", body.data);
	free(body.data);
}

static void
stdin_close(struct conn *c, long id)
{
	char		path[64];
	struct tbuf	body;

	snprintf(path, sizeof path, "/exec/%ld/close", id);
	cr_assert_eq(request(c, "POST", path, NULL, 0, &body), 204);
	free(body.data);
}

Test(agent, stdin_is_forwarded_byte_exact)
{
	struct result	 r;
	unsigned char	*big;
	size_t		 i, total = 0, mib = 1024 * 1024;
	int		 fd;
	char		 want[32];

	spawn_agent(2, NULL);
	big = malloc(mib);
	cr_assert_not_null(big);
	fd = open("/dev/urandom", O_RDONLY);
	cr_assert_eq(read(fd, big, mib), (ssize_t)mib);
	close(fd);

	exec_begin(&ag.c[0], "{\"argv\":[\"wc\",\"-c\"]}", &r);
	stdin_send(&ag.c[1], r.id, "hello", 5, 204);
	total += 5;
	for (i = 0; i < 3; i++) {
		stdin_send(&ag.c[1], r.id, big, mib, 204);
		total += mib;
	}
	stdin_send(&ag.c[1], r.id, "", 0, 204);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	snprintf(want, sizeof want, "%zu\n", total);
	cr_assert_str_eq(r.out.data, want);
	cr_assert_eq(r.status, 0);
	result_free(&r);

	/* Binary content survives: the command echoes it back. */
	exec_begin(&ag.c[0], "{\"argv\":[\"cat\"]}", &r);
	stdin_send(&ag.c[1], r.id, big, 200000, 204);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.out.len, 200000);
	cr_assert_eq(memcmp(r.out.data, big, 200000), 0);
	result_free(&r);
	free(big);
}

Test(agent, stdin_after_close_is_409_and_unknown_ids_404)
{
	struct result	 r;
	struct tbuf	 body;

	spawn_agent(2, NULL);
	/*
	 * It lives on after its stdin closes: a plain cat could exit and its
	 * exec be gone (404) before the late write comes, on a loaded host.
	 */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"cat; sleep 1\"]}",
	    &r);
	stdin_send(&ag.c[1], r.id, "abc", 3, 204);
	stdin_close(&ag.c[1], r.id);
	stdin_close(&ag.c[1], r.id);	/* twice is fine */
	stdin_send(&ag.c[1], r.id, "late", 4, 409);
	exec_end(&ag.c[0], &r);
	cr_assert_str_eq(r.out.data, "abc");
	result_free(&r);

	/* The exec is over: its id is gone. */
	stdin_send(&ag.c[1], r.id, "x", 1, 404);
	cr_assert_eq(request(&ag.c[1], "POST", "/exec/999/close", NULL, 0,
	    &body), 404);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", "/exec/999/signal", "9", 1,
	    &body), 404);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", "/exec/abc/stdin", "9", 1,
	    &body), 404);
	free(body.data);
}

Test(agent, stdin_to_a_command_that_stopped_reading_is_409)
{
	struct result	 r;
	char		*big;
	size_t		 len = 1024 * 1024;

	spawn_agent(2, NULL);
	big = malloc(len);
	memset(big, 'x', len);
	/* Closes its stdin at once but lives on. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"exec 0<&-; echo closed; sleep 0.5\"]}", &r);
	usleep(200000);
	stdin_send(&ag.c[1], r.id, big, len, 409);
	exec_end(&ag.c[0], &r);
	cr_assert_str_eq(r.out.data, "closed\n");
	cr_assert_eq(r.status, 0);
	result_free(&r);
	free(big);
}

/* --- Concurrency, signals, large output. */

Test(agent, execs_on_different_ports_run_at_once)
{
	struct result	a, b;

	spawn_agent(3, NULL);
	/* a waits for a line on stdin; b runs and ends meanwhile. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"read x; echo got $x\"]}", &a);
	exec_run(&ag.c[1], "{\"argv\":[\"echo\",\"b\"]}", &b);
	cr_assert_str_eq(b.out.data, "b\n");
	cr_assert_neq(a.id, b.id);
	stdin_send(&ag.c[2], a.id, "line\n", 5, 204);
	exec_end(&ag.c[0], &a);
	cr_assert_str_eq(a.out.data, "got line\n");
	cr_assert_eq(a.status, 0);
	result_free(&a);
	result_free(&b);
}

Test(agent, signal_reaches_the_process_group)
{
	struct result	 r;
	struct tbuf	 body, data, raw;
	char		 path[64], name[32];
	long		 child;
	int		 i;

	spawn_agent(2, NULL);
	/* The shell waits on a child; both are in the command's group. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"sleep 30 & echo $!; wait; echo no\"]}", &r);
	cr_assert(next_event(&ag.c[0], name, sizeof name, &data));
	cr_assert_str_eq(name, QSUP_EVENT_STDOUT);
	memset(&raw, 0, sizeof raw);
	b64_decode(data.data, data.len, &raw);
	child = strtol(raw.data, NULL, 10);
	cr_assert(child > 0);
	free(data.data);
	free(raw.data);

	snprintf(path, sizeof path, "/exec/%ld/signal", r.id);
	cr_assert_eq(request(&ag.c[1], "POST", path, "abc", 3, &body), 400);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", path, "0", 1, &body), 400);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", path, "15\n", 3, &body), 204);
	free(body.data);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.signal, 15, "exit: %s", r.exit);
	cr_assert_eq(r.out.len, 0);
	/* The background sleep got it too (and the agent reaped it). */
	for (i = 0; i < 300 && kill(child, 0) == 0; i++)
		usleep(10000);
	cr_assert_eq(kill(child, 0), -1, "the group's other process lives");
	result_free(&r);
}

Test(agent, large_binary_output_is_byte_exact, .timeout = 120)
{
	struct result	 r;
	char		 path[256], json[512];
	unsigned char	*data;
	size_t		 len = 5 * 1024 * 1024 + 12345;
	int		 fd;

	spawn_agent(1, NULL);
	data = malloc(len);
	fd = open("/dev/urandom", O_RDONLY);
	cr_assert_eq(read(fd, data, len), (ssize_t)len);
	close(fd);
	tmp_path(path, sizeof path, "big.bin");
	write_file(path, data, len, 0644);
	snprintf(json, sizeof json, "{\"argv\":[\"cat\",\"%s\"]}", path);
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.out.len, len, "got %zu bytes", r.out.len);
	cr_assert_eq(memcmp(r.out.data, data, len), 0, "output differs");
	cr_assert(r.max_event_raw <= QSUP_CHUNK);
	cr_assert(r.nevents >= (int)(len / QSUP_CHUNK), "%d events",
	    r.nevents);
	result_free(&r);
	free(data);
}

/* The agent's peak resident memory. */
static long
agent_hwm_kb(void)
{
	char	path[64], line[256];
	FILE	*f;
	long	kb = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)ag.pid);
	cr_assert_not_null(f = fopen(path, "r"));
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = atol(line + 6);
	}
	fclose(f);
	cr_assert(kb > 0);
	return (kb);
}

Test(agent, slow_reader_gets_everything)
{
	struct result	 r;
	struct conn	*c = &ag.c[0];
	size_t		 len = 32 * 1024 * 1024;
	long		 base;

	spawn_agent(1, NULL);
	base = agent_hwm_kb();
	exec_begin(c, "{\"argv\":[\"head\",\"-c\",\"33554432\","
	    "\"/dev/zero\"]}", &r);
	/* The agent must hold the command back, not buffer 32 MB. */
	usleep(500000);
	/* Buffered, 32 MB of output would be 43 MB of events. */
	cr_assert_lt(agent_hwm_kb() - base, 12 * 1024, "agent grew by %ld kB",
	    agent_hwm_kb() - base);
	exec_end(c, &r);
	cr_assert_eq(r.out.len, len);
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, background_process_does_not_hold_the_exit)
{
	struct result	r;
	struct timespec	t0, t1;
	double		s;

	spawn_agent(1, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"sleep 5 & echo started\"]}", &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert(s < 3.0, "exit took %.1f s", s);
	cr_assert_str_eq(r.out.data, "started\n");
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, hangup_kills_the_command)
{
	struct result	r;
	int		i;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sleep\",\"60\"]}", &r);
	close(ag.c[0].fd);
	ag.c[0].fd = -1;
	for (i = 0; i < 300 && kill(r.pid, 0) == 0; i++)
		usleep(10000);
	cr_assert_eq(kill(r.pid, 0), -1, "sleep still runs");
	assert_serving(&ag.c[1]);
	result_free(&r);
}

/* --- Malformed input. */

static void
expect_status(struct conn *c, const void *raw, size_t len, int want)
{
	struct tbuf	body;
	int		status;

	send_all(c, raw, len);
	status = read_response(c, &body);
	cr_assert_eq(status, want, "got %d (%s) for %.40s", status, body.data,
	    (const char *)raw);
	free(body.data);
}

static void
expect_str(struct conn *c, const char *raw, int want)
{
	expect_status(c, raw, strlen(raw), want);
}

static void
expect_exec_status(struct conn *c, const char *json, int want,
    const char *needle)
{
	struct tbuf	body;

	cr_assert_eq(request(c, "POST", "/exec", json, strlen(json), &body),
	    want, "%s -> %s", json, body.data);
	if (needle != NULL)
		cr_assert_not_null(strstr(body.data, needle), "%s", body.data);
	free(body.data);
}

Test(agent, malformed_requests_get_4xx_and_serving_goes_on)
{
	struct conn	*c = &ag.c[0];
	char		*huge, head[256];
	size_t		 n = 20000;

	spawn_agent(1, NULL);
	expect_str(c, "garbage\r\n\r\n", 400);
	expect_str(c, "GET /ping\r\n\r\n", 400);
	expect_str(c, "GET /ping HTTP/2.0\r\n\r\n", 505);
	expect_str(c, "GET ping HTTP/1.1\r\n\r\n", 400);
	expect_str(c, "GET /ping HTTP/1.1\r\nNo colon\r\n\r\n", 400);
	expect_str(c, "GET /ping HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400);
	expect_str(c, "POST /exec HTTP/1.1\r\nTransfer-Encoding: gzip\r\n"
	    "\r\n", 501);
	assert_serving(c);

	/* A head larger than the limit. */
	huge = malloc(n + 64);
	memcpy(huge, "GET /ping HTTP/1.1\r\nX-Big: ", 27);
	memset(huge + 27, 'a', n);
	memcpy(huge + 27 + n, "\r\n\r\n", 4);
	expect_status(c, huge, 27 + n + 4, 431);
	free(huge);
	assert_serving(c);

	/* A body over the limit is refused and skipped, not buffered. */
	n = 2 * 1024 * 1024;
	huge = calloc(1, n);
	snprintf(head, sizeof head, "POST /exec HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\nContent-Length: %zu\r\n\r\n", TOKEN,
	    n);
	send_all(c, head, strlen(head));
	send_all(c, huge, n);
	expect_str(c, "", 413);
	free(huge);
	assert_serving(c);

	/* Bad exec bodies. */
	expect_exec_status(c, "", 400, "bad JSON");
	expect_exec_status(c, "{", 400, "bad JSON");
	expect_exec_status(c, "[\"ls\"]", 400, "bad JSON");
	expect_exec_status(c, "{\"argv\":\"ls\"}", 400, NULL);
	expect_exec_status(c, "{\"argv\":[]}", 400, "argv");
	expect_exec_status(c, "{\"env\":[\"A=1\"]}", 400, "argv");
	expect_exec_status(c, "{\"argv\":[1]}", 400, NULL);
	expect_exec_status(c, "{\"argv\":[\"ls\"],}", 400, NULL);
	expect_exec_status(c, "{\"argv\":[\"ls\"]} x", 400, "trailing");
	expect_exec_status(c, "{\"argv\":[\"a\\u0000b\"]}", 400, "NUL");
	expect_exec_status(c, "{\"argv\":[\"\\ud800\"]}", 400, "surrogate");
	expect_exec_status(c, "{\"argv\":[\"a\nb\"]}", 400, "control");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"env\":[\"NOEQUALS\"]}", 400,
	    "env");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"x\":"
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	    400, "deep");

	/* Wrong methods and paths. */
	expect_str(c, "POST /ping HTTP/1.1\r\nAuthorization: Bearer "
	    TOKEN "\r\n\r\n", 405);
	{
		struct tbuf	body;

		cr_assert_eq(request(c, "GET", "/nothing", NULL, 0, &body),
		    404);
		free(body.data);
		cr_assert_eq(request(c, "GET", "/exec", NULL, 0, &body), 405);
		free(body.data);
	}
	assert_serving(c);
	cr_assert_eq(waitpid(ag.pid, NULL, WNOHANG), 0, "agent died");
}

Test(agent, random_garbage_never_kills_the_agent)
{
	struct conn	*c = &ag.c[0];
	struct tbuf	 body;
	unsigned char	 junk[4096];
	char		 ping[256];
	unsigned	 seed;
	int		 round, i, status, n;

	spawn_agent(1, NULL);
	snprintf(ping, sizeof ping, "\r\n\r\nGET /ping HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\n\r\n", TOKEN);
	for (round = 0; round < 40; round++) {
		seed = 1234 + round;
		n = 1 + rand_r(&seed) % (int)sizeof junk;
		for (i = 0; i < n; i++) {
			junk[i] = (unsigned char)rand_r(&seed);
			/* Half the rounds: text-like junk, with line ends. */
			if (round % 2 == 0)
				junk[i] = " \r\nGET/HTTP:1.ab"[junk[i] % 16];
		}
		send_all(c, junk, n);
		send_all(c, ping, strlen(ping));
		/* Some 4xx answers, then the ping's 200. */
		for (i = 0; i < 2000; i++) {
			status = read_response(c, &body);
			free(body.data);
			if (status == 200)
				break;
			cr_assert(status >= 400 && status < 500,
			    "round %d: status %d", round, status);
		}
		cr_assert_eq(status, 200, "round %d", round);
	}
	cr_assert_eq(waitpid(ag.pid, NULL, WNOHANG), 0, "agent died");
}

Test(agent, chunked_and_expect_continue_requests)
{
	struct conn	*c = &ag.c[0];
	struct result	 r;
	char		 buf[512];
	const char	*json = "{\"argv\":[\"echo\",\"chunked\"]}";

	spawn_agent(1, NULL);
	snprintf(buf, sizeof buf, "POST /exec HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5;ext=1\r\n%.5s\r\n%zx\r\n%s\r\n0\r\nTrailer: x\r\n\r\n",
	    TOKEN, json, strlen(json) - 5, json + 5);
	send_all(c, buf, strlen(buf));
	memset(&r, 0, sizeof r);
	tbuf_add(&r.out, "", 0);
	tbuf_add(&r.err, "", 0);
	cr_assert_eq(read_head(c), 200);
	{
		char		name[32];
		struct tbuf	data;

		cr_assert(next_event(c, name, sizeof name, &data));
		cr_assert_str_eq(name, QSUP_EVENT_START);
		free(data.data);
	}
	exec_end(c, &r);
	cr_assert_str_eq(r.out.data, "chunked\n");
	result_free(&r);

	snprintf(buf, sizeof buf, "GET /ping HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\nExpect: 100-continue\r\n"
	    "Content-Length: 0\r\n\r\n", TOKEN);
	send_all(c, buf, strlen(buf));
	cr_assert_eq(read_head(c), 100);
	{
		struct tbuf	body;

		cr_assert_eq(read_response(c, &body), 200);
		free(body.data);
	}
}

/* --- Seeds and setup errors. */

Test(agent, poweroff_answers_204_then_exits)
{
	struct tbuf	body;
	int		status;

	spawn_agent(2, NULL);
	cr_assert_eq(request(&ag.c[0], "POST", "/poweroff", NULL, 0, &body),
	    204);
	free(body.data);
	status = agent_wait(3000);
	cr_assert(status != -1 && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "status %d", status);
}

Test(agent, mount_failure_is_a_setup_error)
{
	struct tbuf	body;
	char		cfg[512], mnt[256];

	make_dir();
	tmp_path(mnt, sizeof mnt, "share");
	snprintf(cfg, sizeof cfg, "token %s\nmount qsup-no-such-tag %s rw\n",
	    TOKEN, mnt);
	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg),
	    "--apply-mounts");
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	snprintf(cfg, sizeof cfg, "{\"error\":\"mount qsup-no-such-tag on %s: ",
	    mnt);
	cr_assert_eq(strncmp(body.data, cfg, strlen(cfg)), 0, "%s", body.data);
	free(body.data);
	/* The token is still checked; exec is refused. */
	send_request(&ag.c[0], "GET", "/ping", "wrong", NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 401);
	free(body.data);
	cr_assert_eq(request(&ag.c[0], "POST", "/exec", "{\"argv\":[\"true\"]}",
	    17, &body), 503);
	free(body.data);
}

/* A bind whose source is missing is a setup error naming both paths. */
Test(agent, bind_failure_is_a_setup_error)
{
	struct tbuf	body;
	char		cfg[512], dst[256], want[600];

	make_dir();
	tmp_path(dst, sizeof dst, "bound");
	snprintf(cfg, sizeof cfg, "token %s\nbind /nonexistent/qsup-ld %s "
	    "ro\n", TOKEN, dst);
	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg),
	    "--apply-mounts");
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	snprintf(want, sizeof want, "{\"error\":\"bind /nonexistent/qsup-ld "
	    "on %s: No such file or directory", dst);
	cr_assert_eq(strncmp(body.data, want, strlen(want)), 0, "%s",
	    body.data);
	free(body.data);
}

Test(agent, bad_bind_line_is_a_setup_error)
{
	struct tbuf	 body;
	const char	*cfg = "token " TOKEN "\nbind relative /x ro\n";

	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg), NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	cr_assert_not_null(strstr(body.data, "line 2: bind: bind paths must "
	    "be absolute"), "%s", body.data);
	free(body.data);
}

/* root SERIAL grow|keep [BYTES]: anything else names the line. */
Test(agent, bad_root_line_is_a_setup_error)
{
	static const char *const bad[] = { "root qsup-root", "root qsup-root "
	    "shrink", "root qsup-root grow 12x", "root qsup-root keep 0",
	    "root qsup-root grow 1 2", NULL };
	struct tbuf	 body;
	char		 cfg[256];
	size_t		 i;

	for (i = 0; bad[i] != NULL; i++) {
		snprintf(cfg, sizeof cfg, "token %s\n%s\n", TOKEN, bad[i]);
		spawn_agent_with(1, "--config", "qsup-config", cfg,
		    strlen(cfg), NULL);
		cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body),
		    503, "%s", bad[i]);
		cr_assert_not_null(strstr(body.data, "line 2: root: "), "%s: %s",
		    bad[i], body.data);
		free(body.data);
		teardown();
	}
}

/* Not PID 1, there is no disk to mount: the ping says no root. */
Test(agent, root_line_in_test_mode_mounts_nothing)
{
	struct tbuf	body;

	spawn_agent(1, "root qsup-root grow 10737418240\n");
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 200);
	cr_assert_null(strstr(body.data, "\"root\""), "%s", body.data);
	cr_assert_null(strstr(body.data, "\"glibc\""), "%s", body.data);
	free(body.data);
}

Test(agent, bad_seed_config_is_a_setup_error)
{
	struct tbuf	 body;
	const char	*cfg = "token " TOKEN "\nenv NOEQUALS\n";

	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg), NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 503);
	cr_assert_not_null(strstr(body.data, "line 2"), "%s", body.data);
	free(body.data);
}

Test(agent, seed_without_token_answers_503)
{
	struct tbuf	 body;
	const char	*cfg = "hostname h\n";

	spawn_agent_with(1, "--config", "qsup-config", cfg, strlen(cfg), NULL);
	send_request(&ag.c[0], "GET", "/ping", "anything", NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	cr_assert_not_null(strstr(body.data, "no token"), "%s", body.data);
	free(body.data);
}

/* A minimal ISO 9660 image, written the way seed writers lay it out. */
#define SECTOR	2048

static void
both16(unsigned char *p, unsigned v)
{
	p[0] = v & 0xff;
	p[1] = v >> 8;
	p[2] = v >> 8;
	p[3] = v & 0xff;
}

static void
both32(unsigned char *p, unsigned v)
{
	int	i;

	for (i = 0; i < 4; i++) {
		p[i] = v >> (8 * i);
		p[7 - i] = v >> (8 * i);
	}
}

static size_t
dirrec(unsigned char *p, unsigned lba, unsigned size, int flags,
    const void *name, size_t nlen, const void *su, size_t sulen)
{
	size_t	len = 33 + nlen + (nlen % 2 == 0 ? 1 : 0) + sulen;

	len += len % 2;
	memset(p, 0, len);
	p[0] = len;
	both32(p + 2, lba);
	both32(p + 10, size);
	p[25] = flags;
	both16(p + 28, 1);
	p[32] = nlen;
	memcpy(p + 33, name, nlen);
	if (sulen > 0)
		memcpy(p + 33 + nlen + (nlen % 2 == 0 ? 1 : 0), su, sulen);
	return (len);
}

enum iso_style {
	ISO_UPPER,		/* QSUP-CONFIG;1 */
	ISO_LOWER,		/* qsup-config */
	ISO_ROCK_RIDGE,		/* QSUP_CON.;1 with NM qsup-config */
	ISO_ROCK_RIDGE_CE,	/* the NM entry in a continuation area */
	ISO_NOT_CIDATA
};

static size_t
make_iso(unsigned char *img, enum iso_style style, const char *config)
{
	unsigned char	*pvd = img + 16 * SECTOR, *dir = img + 18 * SECTOR;
	unsigned char	 su[64], sp[8] = { 'S', 'P', 7, 1, 0xbe, 0xef, 0 };
	size_t		 off = 0, sulen = 0;
	const char	*name;
	int		 rr = style == ISO_ROCK_RIDGE ||
	    style == ISO_ROCK_RIDGE_CE;

	memset(img, 0, 22 * SECTOR);
	pvd[0] = 1;
	memcpy(pvd + 1, "CD001", 5);
	pvd[6] = 1;
	memset(pvd + 8, ' ', 32);
	memset(pvd + 40, ' ', 32);
	memcpy(pvd + 40, style == ISO_NOT_CIDATA ? "OTHER" : QSUP_SEED_VOLUME,
	    style == ISO_NOT_CIDATA ? 5 : strlen(QSUP_SEED_VOLUME));
	both32(pvd + 80, 22);
	both16(pvd + 120, 1);
	both16(pvd + 124, 1);
	both16(pvd + 128, SECTOR);
	dirrec(pvd + 156, 18, SECTOR, 2, "\0", 1, NULL, 0);
	pvd[881] = 1;
	img[17 * SECTOR] = 255;
	memcpy(img + 17 * SECTOR + 1, "CD001", 5);
	img[17 * SECTOR + 6] = 1;

	off += dirrec(dir + off, 18, SECTOR, 2, "\0", 1, rr ? sp : NULL,
	    rr ? 7 : 0);
	off += dirrec(dir + off, 18, SECTOR, 2, "\1", 1, NULL, 0);
	off += dirrec(dir + off, 21, 5, 0, "META_DAT.;1", 11, NULL, 0);
	switch (style) {
	case ISO_LOWER:
		name = "qsup-config";
		break;
	case ISO_ROCK_RIDGE:
	case ISO_ROCK_RIDGE_CE:
		name = "QSUP_CON.;1";
		break;
	default:
		name = "QSUP-CONFIG;1";
		break;
	}
	if (style == ISO_ROCK_RIDGE) {
		/* "qsup-" then "config", split over two NM entries. */
		memcpy(su, "NM\012\001\001qsup-", 10);
		memcpy(su + 10, "NM\013\001\000config", 11);
		sulen = 21;
	} else if (style == ISO_ROCK_RIDGE_CE) {
		memset(su, 0, 28);
		memcpy(su, "CE\034\001", 4);
		both32(su + 4, 20);
		both32(su + 12, 100);
		both32(su + 20, 16);
		sulen = 28;
		memcpy(img + 20 * SECTOR + 100, "NM\020\001\000qsup-config",
		    16);
	}
	off += dirrec(dir + off, 19, strlen(config), 0, name, strlen(name), su,
	    sulen);
	memcpy(img + 19 * SECTOR, config, strlen(config));
	memcpy(img + 21 * SECTOR, "decoy", 5);
	return (22 * SECTOR);
}

static void
seed_test(enum iso_style style)
{
	static unsigned char	 img[22 * SECTOR];
	struct tbuf		 body;
	const char		*cfg = "token%20ignored x\ntoken " TOKEN "\n";
	size_t			 len;

	len = make_iso(img, style, cfg);
	spawn_agent_with(1, "--seed", "seed.iso", img, len, NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 200,
	    "style %d: %s", style, body.data);
	free(body.data);
	send_request(&ag.c[0], "GET", "/ping", "wrong", NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 401);
	free(body.data);
}

Test(agent, seed_iso_upper_case_name)
{
	seed_test(ISO_UPPER);
}

Test(agent, seed_iso_lower_case_name)
{
	seed_test(ISO_LOWER);
}

Test(agent, seed_iso_rock_ridge_name)
{
	seed_test(ISO_ROCK_RIDGE);
}

Test(agent, seed_iso_rock_ridge_continuation)
{
	seed_test(ISO_ROCK_RIDGE_CE);
}

Test(agent, no_seed_answers_503_to_everything)
{
	static unsigned char	 img[22 * SECTOR];
	struct tbuf		 body;
	size_t			 len;

	len = make_iso(img, ISO_NOT_CIDATA, "token " TOKEN "\n");
	spawn_agent_with(1, "--seed", "seed.iso", img, len, NULL);
	/* No token to check against: 503 whatever the request says. */
	send_request(&ag.c[0], "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	cr_assert_str_eq(body.data, "{\"error\":\"no seed disk\"}");
	free(body.data);
	send_request(&ag.c[0], "POST", "/exec", "x", "{\"argv\":[\"true\"]}",
	    17);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	free(body.data);
}

Test(agent, seed_without_config_file_is_a_setup_error)
{
	static unsigned char	 img[22 * SECTOR];
	struct tbuf		 body;
	size_t			 len;

	len = make_iso(img, ISO_UPPER, "token " TOKEN "\n");
	/* Rename the file: the seed has no qsup-config now. */
	memcpy(memmem(img + 18 * SECTOR, SECTOR, "QSUP-CONFIG", 11),
	    "QSUP-CONFIX", 11);
	spawn_agent_with(1, "--seed", "seed.iso", img, len, NULL);
	send_request(&ag.c[0], "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(&ag.c[0], &body), 503);
	cr_assert_not_null(strstr(body.data, "no qsup-config"), "%s",
	    body.data);
	free(body.data);
}

/* --- Template state: booted for a VM state template, configured later. */

Test(agent, template_state_serves_ping_and_setup_only)
{
	struct tbuf	 body;
	struct result	 r;
	struct conn	*c = &ag.c[0];
	const char	*exec = "{\"argv\":[\"sh\",\"-c\",\"echo $FOO\"]}";
	char		 cfg[256];

	spawn_agent_with(2, "--template", NULL, NULL, 0, NULL);
	/* No token exists yet: ping answers without one, and says so. */
	send_request(c, "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(c, &body), 200);
	cr_assert_not_null(strstr(body.data, "\"template\":true"), "%s",
	    body.data);
	free(body.data);
	/* Nothing runs before setup, whatever the token. */
	send_request(c, "POST", "/exec", TOKEN, exec, strlen(exec));
	cr_assert_eq(read_response(c, &body), 503);
	free(body.data);
	/* A setup without a token, or that does not parse, is refused. */
	send_request(c, "POST", "/setup", NULL, "hostname x\n", 11);
	cr_assert_eq(read_response(c, &body), 400);
	free(body.data);
	send_request(c, "POST", "/setup", NULL, "env NOEQUALS\n", 13);
	cr_assert_eq(read_response(c, &body), 400);
	free(body.data);
	snprintf(cfg, sizeof cfg, "token %s\nenv FOO=from-setup\n", TOKEN);
	send_request(c, "POST", "/setup", NULL, cfg, strlen(cfg));
	cr_assert_eq(read_response(c, &body), 200);
	cr_assert_null(strstr(body.data, "template"), "%s", body.data);
	free(body.data);
	/* From now on the token is required, and the setup is in force. */
	send_request(c, "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(c, &body), 401);
	free(body.data);
	send_request(c, "POST", "/setup", TOKEN, cfg, strlen(cfg));
	cr_assert_eq(read_response(c, &body), 409);
	free(body.data);
	send_request(&ag.c[1], "GET", "/ping", "other", NULL, 0);
	cr_assert_eq(read_response(&ag.c[1], &body), 401);
	free(body.data);
	exec_run(c, exec, &r);
	cr_assert_str_eq(r.out.data, "from-setup\n");
	cr_assert_eq(r.status, 0, "exit: %s", r.exit);
	result_free(&r);
}

/* --- Terminals ("tty"). */

/* Read stdout events of an exec until its output holds needle. */
static void
exec_until(struct conn *c, struct result *r, const char *needle)
{
	char		name[32];
	struct tbuf	data, raw;

	while (strstr(r->out.data, needle) == NULL) {
		cr_assert(next_event(c, name, sizeof name, &data),
		    "stream ended before \"%s\": %s", needle, r->out.data);
		cr_assert_str_eq(name, QSUP_EVENT_STDOUT, "%s before \"%s\"",
		    name, needle);
		memset(&raw, 0, sizeof raw);
		b64_decode(data.data, data.len, &raw);
		tbuf_add(&r->out, raw.data, raw.len);
		free(raw.data);
		free(data.data);
	}
}

static int
exec_op(struct conn *c, long id, const char *op, const char *body)
{
	char		path[64];
	struct tbuf	resp;
	int		status;

	snprintf(path, sizeof path, "/exec/%ld/%s", id, op);
	status = request(c, "POST", path, body, body != NULL ? strlen(body) :
	    0, &resp);
	free(resp.data);
	return (status);
}

Test(agent, tty_command_has_a_terminal_of_the_size_asked)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"tty; test -t 0 && "
	    "test -t 1 && test -t 2 && echo all-three; stty size; "
	    "echo to-stderr >&2; exit 7\"],\"tty\":true,\"rows\":33,"
	    "\"cols\":101}", &r);
	cr_assert_not_null(strstr(r.out.data, "/dev/pts/"), "%s", r.out.data);
	cr_assert_not_null(strstr(r.out.data, "all-three\r\n"), "%s",
	    r.out.data);
	cr_assert_not_null(strstr(r.out.data, "33 101\r\n"), "%s", r.out.data);
	/* stderr is the terminal too: it comes as stdout. */
	cr_assert_not_null(strstr(r.out.data, "to-stderr"), "%s", r.out.data);
	cr_assert_eq(r.err.len, 0);
	cr_assert_eq(r.status, 7, "exit: %s", r.exit);
	result_free(&r);

	/* No size said: 24x80. Without tty, no terminal. */
	exec_run(&ag.c[0], "{\"argv\":[\"stty\",\"size\"],\"tty\":true}", &r);
	cr_assert_str_eq(r.out.data, "24 80\r\n");
	result_free(&r);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"test -t 0 || "
	    "test -t 1 || echo none\"],\"tty\":false}", &r);
	cr_assert_str_eq(r.out.data, "none\n");
	result_free(&r);
}

Test(agent, tty_is_the_controlling_terminal_of_a_new_session)
{
	struct result	r;
	char		want[64];

	spawn_agent(1, NULL);
	/* ps-free: /proc says the session and the terminal's group. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo $$; "
	    "cut -d' ' -f6,8 /proc/$$/stat; exec </dev/tty && echo opened\"],"
	    "\"tty\":true}", &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.out.data);
	snprintf(want, sizeof want, "%ld\r\n", r.pid);
	cr_assert_eq(strncmp(r.out.data, want, strlen(want)), 0, "%s",
	    r.out.data);
	cr_assert_not_null(strstr(r.out.data, "opened"), "%s", r.out.data);
	result_free(&r);
}

Test(agent, tty_stdin_is_typed_and_ctrl_c_interrupts)
{
	struct result	r;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"read x; "
	    "echo got:$x\"],\"tty\":true}", &r);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "stdin", "hello\r"), 204);
	exec_end(&ag.c[0], &r);
	/* The terminal echoes what was typed, then the command answers. */
	cr_assert_not_null(strstr(r.out.data, "hello\r\n"), "%s", r.out.data);
	cr_assert_not_null(strstr(r.out.data, "got:hello\r\n"), "%s",
	    r.out.data);
	cr_assert_eq(r.status, 0);
	result_free(&r);

	/* ^C is a byte; the line discipline makes it SIGINT. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo ready; "
	    "exec sleep 30\"],\"tty\":true}", &r);
	exec_until(&ag.c[0], &r, "ready");
	cr_assert_eq(exec_op(&ag.c[1], r.id, "stdin", "\003"), 204);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.signal, SIGINT, "exit: %s", r.exit);
	result_free(&r);
}

Test(agent, tty_close_stops_uploads_but_not_output)
{
	struct result	r;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo before; "
	    "sleep 0.3; echo after\"],\"tty\":true}", &r);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "close", NULL), 204);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "stdin", "x"), 409);
	exec_end(&ag.c[0], &r);
	cr_assert_str_eq(r.out.data, "before\r\nafter\r\n");
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, tty_output_written_just_before_exit_is_all_there)
{
	struct result	r;
	size_t		n = 300000, i, lines = 0;

	spawn_agent(1, NULL);
	/* More than the terminal buffers hold, written as the shell exits. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"i=0; while [ $i -lt "
	    "3000 ]; do echo 0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890123456789; i=$((i+1)); done\"],"
	    "\"tty\":true}", &r);
	for (i = 0; i < r.out.len; i++)
		lines += r.out.data[i] == '\n';
	cr_assert_eq(lines, 3000, "%zu lines, %zu bytes", lines, r.out.len);
	cr_assert_eq(r.out.len, 3000 * 82);
	cr_assert(r.out.len < n);
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, tty_resize_sends_sigwinch_and_checks_its_body)
{
	struct result	r, plain;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"trap 'stty size; "
	    "exit 3' WINCH; echo ready; while :; do sleep 0.05; done\"],"
	    "\"tty\":true,\"rows\":10,\"cols\":20}", &r);
	exec_until(&ag.c[0], &r, "ready");
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", ""), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "0 80"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40 10001"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40 80 1"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40x80"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "-4 80"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", " 41\t121\n"), 204);
	exec_end(&ag.c[0], &r);
	cr_assert_not_null(strstr(r.out.data, "41 121\r\n"), "%s", r.out.data);
	cr_assert_eq(r.status, 3, "exit: %s", r.exit);
	/* Gone: 404 as for the other operations. */
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40 80"), 404);
	result_free(&r);

	/* Not a terminal: 409. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sleep\",\"0.2\"]}", &plain);
	cr_assert_eq(exec_op(&ag.c[1], plain.id, "resize", "40 80"), 409);
	exec_end(&ag.c[0], &plain);
	result_free(&plain);
}

Test(agent, tty_hangup_kills_the_command)
{
	struct result	r;
	long		pid;
	int		i;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sleep\",\"30\"],\"tty\":true}",
	    &r);
	pid = r.pid;
	close(ag.c[0].fd);
	ag.c[0].fd = -1;
	for (i = 0; i < 300 && kill(pid, 0) == 0; i++)
		usleep(10000);
	cr_assert_eq(kill(pid, 0), -1, "the command outlived its host");
	assert_serving(&ag.c[1]);
	result_free(&r);
}

/* --- File jobs. */

static void
read_back(const char *path, struct tbuf *out)
{
	char	chunk[4096];
	ssize_t	n;
	int	fd;

	memset(out, 0, sizeof *out);
	tbuf_add(out, "", 0);
	fd = open(path, O_RDONLY);
	cr_assert(fd != -1, "open %s: %s", path, strerror(errno));
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		tbuf_add(out, chunk, n);
	close(fd);
}

/* The names in the test's folder, sorted, one line each. */
static void
dir_names(char *out, size_t size)
{
	char	cmd[256];
	FILE	*f;
	size_t	n;

	snprintf(cmd, sizeof cmd, "ls -A %s", ag.dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	pclose(f);
}

static void
job_json(char *out, size_t size, const char *kind, const char *path,
    const char *rest)
{
	snprintf(out, size, "{\"%s\":\"%s\"%s}", kind, path, rest);
}

Test(agent, read_job_streams_the_file_byte_exact)
{
	struct result	 r;
	unsigned char	*data;
	char		 path[256], json[512];
	size_t		 len = 300000, i;

	spawn_agent(1, NULL);
	data = malloc(len);
	for (i = 0; i < len; i++)
		data[i] = (i * 7919) ^ (i >> 8);
	tmp_path(path, sizeof path, "blob");
	write_file(path, data, len, 0600);
	job_json(json, sizeof json, "read", path, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.err.data);
	cr_assert_eq(r.out.len, len);
	cr_assert_eq(memcmp(r.out.data, data, len), 0);
	cr_assert_eq(r.err.len, 0);
	result_free(&r);

	/* An empty file: no output, status 0. */
	tmp_path(path, sizeof path, "empty");
	write_file(path, "", 0, 0644);
	job_json(json, sizeof json, "read", path, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.out.len, 0);
	result_free(&r);
	free(data);
}

Test(agent, read_job_failures_are_the_errno)
{
	struct result	r;
	char		path[256], json[512];

	spawn_agent(1, NULL);
	tmp_path(path, sizeof path, "missing");
	job_json(json, sizeof json, "read", path, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, ENOENT, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.err.data, path), "%s", r.err.data);
	cr_assert_not_null(strstr(r.err.data, strerror(ENOENT)), "%s",
	    r.err.data);
	cr_assert_eq(r.out.len, 0);
	result_free(&r);

	job_json(json, sizeof json, "read", ag.dir, "");
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, EISDIR, "exit: %s", r.exit);
	result_free(&r);

	exec_run(&ag.c[0], "{\"read\":\"etc/passwd\"}", &r);
	cr_assert_eq(r.status, EINVAL, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.err.data, "etc/passwd"), "%s", r.err.data);
	result_free(&r);
}

Test(agent, write_job_puts_the_file_in_place_whole)
{
	struct result	 r;
	struct tbuf	 back;
	struct stat	 st, before;
	char		 path[256], json[512], names[512];
	char		*big;
	size_t		 len = 200000;
	mode_t		 old;

	spawn_agent(2, NULL);
	big = malloc(len);
	memset(big, 'z', len);
	big[0] = '\0';
	tmp_path(path, sizeof path, "out");
	write_file(path, "old contents", 12, 0600);
	cr_assert_eq(stat(path, &before), 0);
	job_json(json, sizeof json, "write", path, ",\"mode\":1909");
	exec_begin(&ag.c[0], json, &r);
	stdin_send(&ag.c[1], r.id, big, len, 204);
	stdin_send(&ag.c[1], r.id, "tail", 4, 204);
	/* Until the close, the old file is there, whole. */
	read_back(path, &back);
	cr_assert_str_eq(back.data, "old contents");
	free(back.data);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.err.data);
	cr_assert_eq(r.err.len, 0);
	read_back(path, &back);
	cr_assert_eq(back.len, len + 4);
	cr_assert_eq(memcmp(back.data, big, len), 0);
	cr_assert_eq(memcmp(back.data + len, "tail", 4), 0);
	free(back.data);
	cr_assert_eq(stat(path, &st), 0);
	/* 1909 is 03565: exactly, whatever the umask. */
	cr_assert_eq(st.st_mode & 07777, 03565, "mode %o", st.st_mode & 07777);
	cr_assert_neq(st.st_ino, before.st_ino, "written in place");
	dir_names(names, sizeof names);
	cr_assert_str_eq(names, "out\nqsup-config\n");
	result_free(&r);

	/* No mode: 0644, even under a umask that would take bits away. */
	old = umask(0);
	umask(old);
	tmp_path(path, sizeof path, "new");
	job_json(json, sizeof json, "write", path, "");
	exec_begin(&ag.c[0], json, &r);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.err.data);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_size, 0);
	cr_assert_eq(st.st_mode & 07777, 0644, "mode %o", st.st_mode & 07777);
	result_free(&r);
	free(big);
}

Test(agent, write_job_failures_leave_nothing)
{
	struct result	r;
	char		path[256], json[512], names[512];
	struct tbuf	back;

	spawn_agent(2, NULL);
	job_json(json, sizeof json, "write", ag.dir, "");
	exec_begin(&ag.c[0], json, &r);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, EISDIR, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.err.data, ag.dir), "%s", r.err.data);
	result_free(&r);

	tmp_path(path, sizeof path, "no/such/dir/f");
	job_json(json, sizeof json, "write", path, "");
	exec_begin(&ag.c[0], json, &r);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, ENOENT, "exit: %s", r.exit);
	result_free(&r);

	exec_begin(&ag.c[0], "{\"write\":\"relative\"}", &r);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.status, EINVAL, "exit: %s", r.exit);
	result_free(&r);

	/* Killed half-way: the old file stays, and nothing is left beside. */
	tmp_path(path, sizeof path, "keep");
	write_file(path, "kept", 4, 0644);
	job_json(json, sizeof json, "write", path, "");
	exec_begin(&ag.c[0], json, &r);
	stdin_send(&ag.c[1], r.id, "partial", 7, 204);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "signal", "9"), 204);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.signal, SIGKILL, "exit: %s", r.exit);
	result_free(&r);
	read_back(path, &back);
	cr_assert_str_eq(back.data, "kept");
	free(back.data);
	dir_names(names, sizeof names);
	cr_assert_str_eq(names, "keep\nqsup-config\n");
}

Test(agent, exec_json_for_tty_and_file_jobs)
{
	struct conn	*c = &ag.c[0];

	spawn_agent(1, NULL);
	expect_exec_status(c, "{}", 400, "argv");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"read\":\"/a\"}", 400,
	    "only one");
	expect_exec_status(c, "{\"read\":\"/a\",\"write\":\"/b\"}", 400,
	    "only one");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"write\":\"/b\"}", 400,
	    "only one");
	expect_exec_status(c, "{\"read\":1}", 400, "string");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":\"644\"}", 400,
	    "whole number");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":-1}", 400,
	    "whole number");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":4096}", 400,
	    "range");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":4.5}", 400,
	    "whole number");
	expect_exec_status(c, "{\"read\":\"/b\",\"mode\":420}", 400,
	    "mode");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"mode\":420}", 400,
	    "mode");
	expect_exec_status(c, "{\"read\":\"/b\",\"tty\":true}", 400, "tty");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":1}", 400,
	    "true or false");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":\"yes\"}", 400,
	    "true or false");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,\"rows\":0}",
	    400, "range");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,"
	    "\"cols\":10001}", 400, "range");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,"
	    "\"rows\":1e2}", 400, "whole number");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,"
	    "\"rows\":99999999999999999999}", 400, "range");
	assert_serving(c);
}

Test(agent, exec_json_accepts_the_new_fields)
{
	struct result	r;

	spawn_agent(1, NULL);
	/* null is the default, and a later key wins, as for cwd. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"test -t 1 || "
	    "echo no-tty\"],\"tty\":null,\"read\":null,\"write\":null}", &r);
	cr_assert_str_eq(r.out.data, "no-tty\n");
	result_free(&r);
	exec_run(&ag.c[0], "{\"tty\":false,\"argv\":[\"stty\",\"size\"],"
	    "\"rows\":5,\"cols\":7,\"tty\":true,\"rows\":10000,"
	    "\"cols\":1}", &r);
	cr_assert_str_eq(r.out.data, "10000 1\r\n");
	result_free(&r);
}
