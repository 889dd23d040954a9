/*
 * What the agent's suites (tests/unit/agent*_test.c that run the real
 * binary, each its own binary) share: qsup-agent in test mode
 * (qsup-agent --config FILE --fd N ...) spawned on socketpairs, and a
 * client of its HTTP/1.1 and Server-Sent Events: requests, responses,
 * events and whole execs. Its functions are static and marked unused,
 * since each suite takes only some of them. Run from the repository
 * root, after `make build/qsup-agent` (or set QSUP_AGENT to the binary).
 */
#ifndef QSUP_AGENT_HELPERS_H
#define QSUP_AGENT_HELPERS_H

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

static __attribute__((unused)) void
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

static __attribute__((unused)) void
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

static __attribute__((unused)) const char *
agent_path(void)
{
	const char	*p = getenv("QSUP_AGENT");

	return (p != NULL ? p : "build/qsup-agent");
}

static __attribute__((unused)) int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return (0);
}

static __attribute__((unused)) void
write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	int	fd;

	fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, mode);
	cr_assert(fd != -1, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static __attribute__((unused)) void
tmp_path(char *out, size_t size, const char *name)
{
	snprintf(out, size, "%s/%s", ag.dir, name);
}

static __attribute__((unused)) void
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
static __attribute__((unused)) void
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

static __attribute__((unused)) void
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
static __attribute__((unused)) int
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

static __attribute__((unused)) void
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

static __attribute__((unused)) void
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

static __attribute__((unused)) void
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
static __attribute__((unused)) void
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
static __attribute__((unused)) void
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
static __attribute__((unused)) int
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
static __attribute__((unused)) int
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

static __attribute__((unused)) int
request(struct conn *c, const char *method, const char *path,
    const void *body, size_t len, struct tbuf *resp)
{
	send_request(c, method, path, TOKEN, body, len);
	return (read_response(c, resp));
}

/* Read one chunk of a chunked body into c->sse; 0 at the last chunk. */
static __attribute__((unused)) int
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
static __attribute__((unused)) int
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

static __attribute__((unused)) int
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

static __attribute__((unused)) void
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

static __attribute__((unused)) long
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
static __attribute__((unused)) void
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
static __attribute__((unused)) void
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

static __attribute__((unused)) void
exec_run(struct conn *c, const char *json, struct result *r)
{
	exec_begin(c, json, r);
	exec_end(c, r);
}

static __attribute__((unused)) void
result_free(struct result *r)
{
	free(r->out.data);
	free(r->err.data);
}

static __attribute__((unused)) void
assert_serving(struct conn *c)
{
	struct tbuf	body;

	cr_assert_eq(request(c, "GET", "/ping", NULL, 0, &body), 200,
	    "ping after the error: %s", body.data);
	free(body.data);
}

/* Stdin uploads and closes. */

static __attribute__((unused)) void
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

static __attribute__((unused)) void
stdin_close(struct conn *c, long id)
{
	char		path[64];
	struct tbuf	body;

	snprintf(path, sizeof path, "/exec/%ld/close", id);
	cr_assert_eq(request(c, "POST", path, NULL, 0, &body), 204);
	free(body.data);
}

/* One operation on a running exec: its status. */
static __attribute__((unused)) int
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

#endif
