/*
 * "qsup serve": commands and files in a running sandbox. Each exec holds
 * one agent port for its stream (and one more for its stdin or a file's
 * upload), so execs never wait on each other; signals, stdin's close and
 * terminal sizes go through the control port, which the agent answers at
 * once. A file is a job the agent runs like a command (wire.h), so both
 * stream any size with the same backpressure: a client that does not
 * read pauses its own port, and so its own command, in the guest.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"
#include "wire.h"

#define SERVE_ERR_MAX	1024	/* of a file job's stderr, kept */
#define SERVE_TTY_MAX	10000	/* rows, cols */

static void	serve_exec_maybe_free(struct serve_exec *);
static void	serve_stdin_pump(struct serve_exec *);

static struct serve_exec *
serve_exec_find(struct serve_sb *s, unsigned id)
{
	struct serve_exec	*e;

	TAILQ_FOREACH(e, &s->execs, entry) {
		if (e->id == id)
			return (e);
	}
	return (NULL);
}

static const struct {
	const char	*name;
	int		 sig;
} serve_signals[] = {
	{ "HUP", SIGHUP }, { "INT", SIGINT }, { "QUIT", SIGQUIT },
	{ "ILL", SIGILL }, { "TRAP", SIGTRAP }, { "ABRT", SIGABRT },
	{ "BUS", SIGBUS }, { "FPE", SIGFPE }, { "KILL", SIGKILL },
	{ "USR1", SIGUSR1 }, { "SEGV", SIGSEGV }, { "USR2", SIGUSR2 },
	{ "PIPE", SIGPIPE }, { "ALRM", SIGALRM }, { "TERM", SIGTERM },
	{ "CHLD", SIGCHLD }, { "CONT", SIGCONT }, { "STOP", SIGSTOP },
	{ "TSTP", SIGTSTP }, { "TTIN", SIGTTIN }, { "TTOU", SIGTTOU },
	{ "URG", SIGURG }, { "XCPU", SIGXCPU }, { "XFSZ", SIGXFSZ },
	{ "VTALRM", SIGVTALRM }, { "PROF", SIGPROF }, { "WINCH", SIGWINCH },
	{ "IO", SIGIO }, { "PWR", SIGPWR }, { "SYS", SIGSYS }
};

/* A signal's name (with or without SIG) or number 1-64: it, or -1. */
int
serve_signal_number(const char *s)
{
	size_t	i;
	long	n;
	char	*end;

	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 0; i < sizeof serve_signals / sizeof serve_signals[0]; i++) {
		if (strcasecmp(s, serve_signals[i].name) == 0)
			return (serve_signals[i].sig);
	}
	if (*s < '0' || *s > '9')
		return (-1);
	n = strtol(s, &end, 10);
	if (*end != '\0' || n < 1 || n > AGENT_SIGNAL_MAX)
		return (-1);
	return ((int)n);
}

/* A request to the agent about e, on the control port. */
static void
serve_control(struct serve_exec *e, const char *op, const char *body,
    agent_response_cb cb, void *arg)
{
	char	path[64];

	snprintf(path, sizeof path, "/exec/%lld/%s", e->guest_id, op);
	agent_request(sandbox_port(e->sb->sb, SERVE_PORT_CONTROL), "POST",
	    path, body, body != NULL ? strlen(body) : 0, cb, NULL, arg);
}

static void
serve_kill(struct serve_exec *e)
{
	if (e->done || e->guest_id < 0 || e->sb->sb == NULL)
		return;
	serve_control(e, "signal", "9", NULL, NULL);
}

/* The exit event's JSON, for the client. */
static void
serve_exit_json(struct serve_exec *e, const char *error, struct buf *b)
{
	buf_puts(b, "{\"status\":");
	if (error == NULL && e->exit.signal == 0)
		buf_printf(b, "%d", e->exit.status);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"signal\":");
	if (error == NULL && e->exit.signal > 0)
		buf_printf(b, "%d", e->exit.signal);
	else
		buf_puts(b, "null");
	buf_printf(b, ",\"timed_out\":%s,\"error\":",
	    e->timed_out ? "true" : "false");
	if (error != NULL)
		buf_json_string(b, error);
	else if (e->exit.error != NULL)
		buf_json_string(b, e->exit.error);
	else
		buf_puts(b, "null");
	buf_puts(b, "}");
}

static void
serve_exec_event(struct serve_exec *e, const char *state)
{
	struct buf	b = { 0 };

	buf_puts(&b, "{\"sandbox\":");
	buf_json_string(&b, e->sb->name);
	buf_printf(&b, ",\"id\":%u,\"state\":\"%s\"", e->id, state);
	if (strcmp(state, "exited") == 0) {
		buf_puts(&b, ",\"status\":");
		if (e->exit_seen && e->exit.signal == 0)
			buf_printf(&b, "%d", e->exit.status);
		else
			buf_puts(&b, "null");
		buf_puts(&b, ",\"signal\":");
		if (e->exit_seen && e->exit.signal > 0)
			buf_printf(&b, "%d", e->exit.signal);
		else
			buf_puts(&b, "null");
		buf_printf(&b, ",\"seconds\":%.6f", util_now() - e->t_start);
	}
	buf_puts(&b, "}");
	serve_event(e->sb->srv, "exec", b.data);
	buf_free(&b);
}

/* A file job's errno as an HTTP status. */
static int
serve_errno_status(int e)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return (404);
	case EPERM:
	case EACCES:
	case EROFS:
		return (403);
	case EISDIR:
		return (409);
	case ENOSPC:
	case EDQUOT:
		return (507);
	case EFBIG:
		return (413);
	case EINVAL:
	case ENAMETOOLONG:
	case ELOOP:
		return (400);
	}
	return (500);
}

static void
serve_client_close_cb(void *arg)
{
	struct serve_exec	*e = arg;

	if (e->in_conn == e->conn) {	/* a file's upload: the same */
		e->in_conn = NULL;
		e->in_buf.len = 0;
	}
	e->conn = NULL;
	if (!e->done) {
		log_debug("exec %u: its client went away: killed", e->id);
		serve_kill(e);
		/* What it printed meanwhile is read and dropped, to its end. */
		if (e->sb->sb != NULL)
			agent_conn_pause(sandbox_port(e->sb->sb, e->port), 0);
	}
	serve_exec_maybe_free(e);
}

static void
serve_drain_cb(void *arg)
{
	struct serve_exec	*e = arg;

	if (!e->done && e->sb->sb != NULL)
		agent_conn_pause(sandbox_port(e->sb->sb, e->port), 0);
}

/* The stream is over: the client told, the exec's ports given back. */
static void
serve_exec_finish(struct serve_exec *e, const char *error)
{
	struct buf	 b = { 0 };
	char		*msg;
	int		 status, ok;

	if (e->done)
		return;
	e->done = 1;
	ev_timer_stop(e->sb->srv->loop, &e->timer);
	serve_port_give(e->sb, e->port);
	if (!e->in_flight) {
		serve_port_give(e->sb, e->in_port);
		e->in_port = -1;
	}
	if (e->job == SERVE_EXEC) {
		serve_exec_observe(e->sb->srv, util_now() - e->t_start);
		serve_exec_event(e, "exited");
	}
	ok = error == NULL && e->exit_seen;
	if (e->conn != NULL) {
		httpd_set_close_cb(e->conn, NULL, NULL);
		httpd_set_drain_cb(e->conn, NULL, NULL);
	}
	if (e->conn == NULL)
		;
	else if (e->job == SERVE_EXEC && e->started) {
		serve_exit_json(e, error, &b);
		httpd_sse_event(e->conn, QSUP_EVENT_EXIT, b.data, b.len);
		httpd_end(e->conn);
	} else if (!ok) {
		httpd_error(e->conn, 500, error != NULL ? error :
		    "the agent ended the stream without an exit event", NULL);
	} else if (e->job != SERVE_EXEC && e->exit.signal == 0 &&
	    e->exit.status != 0) {
		/* A file job that failed: its errno and its message. */
		status = e->exit.status;
		if (e->started)
			httpd_abort(e->conn);	/* cut short: no clean end */
		else {
			xasprintf(&msg, "%s", e->err.len > 0 ? e->err.data :
			    strerror(status));
			msg[strcspn(msg, "\n")] = '\0';
			httpd_error(e->conn, serve_errno_status(status), msg,
			    NULL);
			free(msg);
		}
	} else if (e->job != SERVE_EXEC && e->exit.signal != 0) {
		if (e->started)
			httpd_abort(e->conn);
		else
			httpd_error(e->conn, 500, "the file job was killed",
			    NULL);
	} else if (e->job == SERVE_READ) {
		if (e->started)
			httpd_end(e->conn);
		else
			httpd_respond(e->conn, 200, "application/octet-stream",
			    "", 0);
	} else if (e->job == SERVE_WRITE) {
		buf_puts(&b, "{\"path\":");
		buf_json_string(&b, e->path);
		buf_printf(&b, ",\"size\":%llu}", (unsigned long long)e->bytes);
		httpd_respond_json(e->conn, 201, b.data, b.len);
	} else
		httpd_error(e->conn, 500, "the agent refused the command",
		    NULL);
	if (e->conn != NULL && e->job == SERVE_WRITE && e->in_conn == e->conn)
		e->in_conn = NULL;
	e->conn = NULL;
	buf_free(&b);
	serve_exec_maybe_free(e);
}

static void
serve_exec_maybe_free(struct serve_exec *e)
{
	if (!e->done || e->conn != NULL || e->in_conn != NULL ||
	    e->in_flight)
		return;
	TAILQ_REMOVE(&e->sb->execs, e, entry);
	serve_port_give(e->sb, e->in_port);
	ev_timer_stop(e->sb->srv->loop, &e->timer);
	free(e->exit.error);
	free(e->path);
	buf_free(&e->err);
	buf_free(&e->in_buf);
	free(e);
}

/* Is data base64, as the client will decode it? */
static int
serve_base64_ok(const char *data, size_t len)
{
	size_t	i;
	char	c;

	for (i = 0; i < len; i++) {
		c = data[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '+' || c == '/' ||
		    c == '='))
			return (0);
	}
	return (1);
}

/* Output for the client; the guest waits while the client does not read. */
static void
serve_output(struct serve_exec *e, const char *event, const char *data,
    size_t len)
{
	unsigned char	*raw;
	size_t		 n;

	if (e->conn == NULL)
		return;
	if (e->job == SERVE_EXEC)
		httpd_sse_event(e->conn, event, data, len);
	else {
		raw = xmalloc(len * 3 / 4 + 3);
		n = util_base64_decode(data, len, raw);
		if (!e->started) {
			e->started = 1;
			httpd_stream_start(e->conn, 200,
			    "application/octet-stream");
		}
		httpd_stream_write(e->conn, raw, n);
		e->bytes += n;
		free(raw);
	}
	if (httpd_over(e->conn))
		agent_conn_pause(sandbox_port(e->sb->sb, e->port), 1);
}

static void	serve_body_cb(struct httpd_conn *, const char *, size_t,
		    void *);

static int
serve_event_cb(const char *event, const char *data, size_t len, void *arg,
    char **cause)
{
	struct serve_exec	*e = arg;
	struct buf		 b = { 0 };
	json_t			*j;
	long long		 id;
	unsigned char		*raw;
	size_t			 n;

	if (e->exit_seen) {
		xasprintf(cause, "an event after the exit event");
		return (-1);
	}
	if (strcmp(event, QSUP_EVENT_START) == 0) {
		j = json_read(data, len, 0);
		if (e->guest_id >= 0 || json_path_int(j, "id", &id) == -1 ||
		    id < 0 || id > INT_MAX) {
			json_decref(j);
			xasprintf(cause, "a bad start event");
			return (-1);
		}
		json_decref(j);
		e->guest_id = id;
		if (e->conn == NULL) {
			serve_kill(e);
			return (0);
		}
		/* Without stdin, the command reads its end at once. */
		if (e->job == SERVE_EXEC && !e->want_stdin)
			serve_control(e, "close", NULL, NULL, NULL);
		if (e->job == SERVE_EXEC) {
			e->started = 1;
			httpd_sse_start(e->conn);
			buf_printf(&b, "{\"id\":%u}", e->id);
			httpd_sse_event(e->conn, QSUP_EVENT_START, b.data,
			    b.len);
			buf_free(&b);
			serve_exec_event(e, "running");
		} else if (e->job == SERVE_WRITE) {
			/* Now the body may come: it is the file. */
			e->in_conn = e->conn;
			httpd_stream_body(e->conn, serve_body_cb, e);
		}
		return (0);
	}
	if (e->guest_id < 0) {
		xasprintf(cause, "an event before the start event");
		return (-1);
	}
	if (strcmp(event, QSUP_EVENT_EXIT) == 0) {
		if (agent_parse_exit(data, len, &e->exit, cause) == -1)
			return (-1);
		e->exit_seen = 1;
		return (0);
	}
	if (strcmp(event, QSUP_EVENT_STDOUT) != 0 &&
	    strcmp(event, QSUP_EVENT_STDERR) != 0) {
		agent_escape(&b, event, strlen(event), 32);
		xasprintf(cause, "an unknown event \"%s\"", b.data);
		buf_free(&b);
		return (-1);
	}
	if (!serve_base64_ok(data, len)) {
		xasprintf(cause, "output that is not base64");
		return (-1);
	}
	if (e->job != SERVE_EXEC && strcmp(event, QSUP_EVENT_STDERR) == 0) {
		raw = xmalloc(len * 3 / 4 + 3);
		n = util_base64_decode(data, len, raw);
		if (e->err.len + n > SERVE_ERR_MAX)
			n = SERVE_ERR_MAX - e->err.len;
		buf_add(&e->err, raw, n);
		free(raw);
		return (0);
	}
	if (e->job == SERVE_WRITE)
		return (0);	/* a write job says nothing on stdout */
	serve_output(e, event, data, len);
	return (0);
}

static void
serve_done_cb(int status, const char *body, size_t len, void *arg)
{
	struct serve_exec	*e = arg;
	struct buf		 b = { 0 };

	if (status == 200 && e->exit_seen) {
		serve_exec_finish(e, NULL);
		return;
	}
	if (status == 200)
		buf_puts(&b, "the agent ended the stream without an exit "
		    "event");
	else if (status == AGENT_CLOSED)
		buf_printf(&b, "the sandbox is gone (%.*s)", (int)len, body);
	else if (status == AGENT_BROKEN)
		buf_add(&b, body, len);
	else {
		buf_printf(&b, "the agent refused the command (%d): ",
		    status);
		agent_escape(&b, body, len, AGENT_ERROR_MAX);
	}
	serve_exec_finish(e, b.data);
	buf_free(&b);
}

static void
serve_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve_exec	*e = w->data;

	(void)loop;
	(void)revents;
	e->timed_out = 1;
	serve_kill(e);
}

/* A new exec of s for conn, its ports taken: NULL once answered 503. */
static struct serve_exec *
serve_exec_new(struct serve_sb *s, struct httpd_conn *conn,
    enum serve_job job, int uploads)
{
	struct serve_exec	*e;
	char			*msg;
	int			 port, in_port = -1;

	if (s->state != SERVE_READY || s->sb == NULL) {
		xasprintf(&msg, "sandbox %s is %s", s->name,
		    serve_state_name(s->state));
		httpd_error(conn, 409, msg, NULL);
		free(msg);
		return (NULL);
	}
	if ((port = serve_port_take(s)) == -1 ||
	    (uploads && (in_port = serve_port_take(s)) == -1)) {
		serve_port_give(s, port);
		xasprintf(&msg, "sandbox %s runs as many execs and transfers "
		    "as its agent has ports for", s->name);
		serve_limit(conn, msg, "agent_ports", SERVE_PORTS);
		free(msg);
		return (NULL);
	}
	e = xcalloc(1, sizeof *e);
	e->sb = s;
	e->id = ++s->srv->next_exec;
	e->guest_id = -1;
	e->job = job;
	e->port = port;
	e->in_port = in_port;
	e->want_stdin = uploads;
	e->conn = conn;
	e->t_start = util_now();
	ev_init(&e->timer, serve_timeout_cb);
	e->timer.data = e;
	TAILQ_INSERT_TAIL(&s->execs, e, entry);
	httpd_set_close_cb(conn, serve_client_close_cb, e);
	httpd_set_drain_cb(conn, serve_drain_cb, e);
	return (e);
}

static void
serve_exec_send(struct serve_exec *e, struct buf *body)
{
	agent_request(sandbox_port(e->sb->sb, e->port), "POST", "/exec",
	    body->data, body->len, serve_done_cb, serve_event_cb, e);
}

/* The agent's /exec request for the checked body j. */
static void
serve_exec_request(struct buf *b, json_t *j, int tty, long long rows,
    long long cols)
{
	json_t		*argv, *env, *v;
	const char	*key;
	struct buf	 kv = { 0 };
	size_t		 i;

	argv = json_object_get(j, "argv");
	buf_puts(b, "{\"argv\":[");
	for (i = 0; i < json_array_size(argv); i++) {
		buf_puts(b, i > 0 ? "," : "");
		buf_json_string(b, json_string_value(json_array_get(argv, i)));
	}
	buf_puts(b, "],\"env\":[");
	i = 0;
	if ((env = json_object_get(j, "env")) != NULL) {
		json_object_foreach(env, key, v) {
			buf_puts(&kv, "");
			kv.len = 0;
			buf_printf(&kv, "%s=%s", key, json_string_value(v));
			buf_puts(b, i++ > 0 ? "," : "");
			buf_json_string(b, kv.data);
		}
	}
	buf_puts(b, "]");
	if ((v = json_object_get(j, "cwd")) != NULL) {
		buf_puts(b, ",\"cwd\":");
		buf_json_string(b, json_string_value(v));
	}
	if (tty)
		buf_printf(b, ",\"tty\":true,\"rows\":%lld,\"cols\":%lld",
		    rows, cols);
	buf_puts(b, "}");
	buf_free(&kv);
}

static void
serve_exec_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	static const char *const fields[] = {
		"argv", "env", "cwd", "stdin", "tty", "rows", "cols",
		"timeout", NULL
	};
	struct serve_sb		*s = arg;
	struct serve_exec	*e;
	json_t			*j, *argv, *env, *v;
	const char		*key, *bad = NULL, *why = NULL;
	struct buf		 b = { 0 }, kv = { 0 }, msg = { 0 };
	long long		 rows = 24, cols = 80;
	double			 timeout = 0;
	int			 want_stdin = 0, tty = 0;
	size_t			 i;

	if (serve_json_body(conn, body, len, &j) == -1)
		return;
	if (serve_check_fields(conn, j, fields) == -1)
		goto out;
	argv = json_object_get(j, "argv");
	if (argv == NULL || !json_is_array(argv) || json_array_size(argv) == 0)
		bad = "argv", why = "must be a non-empty array of strings";
	for (i = 0; bad == NULL && i < json_array_size(argv); i++) {
		if (!json_is_string(json_array_get(argv, i)))
			bad = "argv", why = "must be a non-empty array of "
			    "strings";
	}
	env = json_object_get(j, "env");
	if (bad == NULL && env != NULL && !json_is_object(env))
		bad = "env", why = "must be an object of names to strings";
	if (bad == NULL && env != NULL) {
		json_object_foreach(env, key, v) {
			if (!json_is_string(v) || *key == '\0' ||
			    strchr(key, '=') != NULL) {
				bad = "env", why = "must be an object of names "
				    "(without '=') to strings";
				break;
			}
		}
	}
	if (bad == NULL && (v = json_object_get(j, "cwd")) != NULL &&
	    (!json_is_string(v) || json_string_value(v)[0] != '/'))
		bad = "cwd", why = "must be an absolute path";
	if (bad == NULL && (v = json_object_get(j, "stdin")) != NULL) {
		if (!json_is_boolean(v))
			bad = "stdin", why = "must be true or false";
		want_stdin = json_is_true(v);
	}
	if (bad == NULL && (v = json_object_get(j, "tty")) != NULL) {
		if (!json_is_boolean(v))
			bad = "tty", why = "must be true or false";
		tty = json_is_true(v);
	}
	if (bad == NULL && (v = json_object_get(j, "rows")) != NULL) {
		if (!json_is_integer(v) || (rows = json_integer_value(v)) < 1 ||
		    rows > SERVE_TTY_MAX)
			bad = "rows", why = "must be an integer 1-10000";
	}
	if (bad == NULL && (v = json_object_get(j, "cols")) != NULL) {
		if (!json_is_integer(v) || (cols = json_integer_value(v)) < 1 ||
		    cols > SERVE_TTY_MAX)
			bad = "cols", why = "must be an integer 1-10000";
	}
	/* Without one, the profile's timeout applies, as to qsup run. */
	timeout = s->profile.timeout;
	if (bad == NULL && (v = json_object_get(j, "timeout")) != NULL) {
		if (!json_is_number(v) || (timeout = json_number_value(v)) < 0)
			bad = "timeout", why = "must be a number of seconds, "
			    "0 or more";
	}
	if (bad != NULL) {
		buf_printf(&msg, "%s: %s", bad, why);
		buf_puts(&kv, "\"field\":");
		buf_json_string(&kv, bad);
		httpd_error(conn, 400, msg.data, kv.data);
		goto out;
	}
	if ((e = serve_exec_new(s, conn, SERVE_EXEC, want_stdin)) == NULL)
		goto out;
	e->tty = tty;
	e->timeout = timeout;
	serve_exec_request(&b, j, tty, rows, cols);
	if (timeout > 0) {
		ev_timer_set(&e->timer, timeout, 0);
		ev_timer_start(s->srv->loop, &e->timer);
	}
	serve_exec_send(e, &b);
	/* Without stdin, the command reads its end at once. */
	if (!want_stdin)
		e->in_closed = 1;
out:
	buf_free(&b);
	buf_free(&kv);
	buf_free(&msg);
	json_decref(j);
}

void
serve_exec_post(struct serve_sb *s, struct httpd_conn *conn,
    const struct httpd_req *req)
{
	(void)req;
	httpd_read_body(conn, serve_exec_body, s);
}

/* stdin: the agent took a piece (204), or will take no more. */
static void
serve_upload_cb(int status, const char *body, size_t len, void *arg)
{
	struct serve_exec	*e = arg;
	struct httpd_conn	*c;

	(void)body;
	(void)len;
	e->in_flight = 0;
	if (e->done) {
		serve_port_give(e->sb, e->in_port);
		e->in_port = -1;
	}
	if (status != 204) {
		e->in_closed = 1;
		e->in_buf.len = 0;
		if ((c = e->in_conn) != NULL) {
			e->in_conn = NULL;
			if (e->job == SERVE_WRITE) {
				/* The job ended early; its exit says why. */
				e->in_eof = 1;
			} else {
				httpd_set_close_cb(c, NULL, NULL);
				httpd_error(c, 409, "the command's stdin is "
				    "closed", NULL);
			}
		}
		serve_exec_maybe_free(e);
		return;
	}
	serve_stdin_pump(e);
}

static void
serve_close_done_cb(int status, const char *body, size_t len, void *arg)
{
	struct serve_exec	*e = arg;
	struct httpd_conn	*c;

	(void)body;
	(void)len;
	(void)status;
	if ((c = e->in_conn) != NULL && e->job == SERVE_EXEC) {
		e->in_conn = NULL;
		httpd_set_close_cb(c, NULL, NULL);
		httpd_respond(c, 204, NULL, NULL, 0);
	}
	serve_exec_maybe_free(e);
}

/* The next piece to the agent; at the body's end, the answer. */
static void
serve_stdin_pump(struct serve_exec *e)
{
	struct httpd_conn	*c = e->in_conn;
	char			 path[64];
	size_t			 n;

	if (e->in_flight || e->in_closed || e->sb->sb == NULL)
		return;
	if (e->in_buf.len > 0) {
		n = e->in_buf.len < SERVE_CHUNK ? e->in_buf.len : SERVE_CHUNK;
		snprintf(path, sizeof path, "/exec/%lld/stdin", e->guest_id);
		e->in_flight = 1;
		if (e->job == SERVE_WRITE)
			e->bytes += n;
		agent_request(sandbox_port(e->sb->sb, e->in_port), "POST",
		    path, e->in_buf.data, n, serve_upload_cb, NULL, e);
		buf_consume(&e->in_buf, n);
		if (c != NULL && e->in_buf.len < SERVE_CHUNK)
			httpd_body_pause(c, 0);
		return;
	}
	if (!e->in_eof || c == NULL)
		return;
	if (e->job == SERVE_WRITE) {
		/* The whole file is there: the job puts it in place. */
		e->in_closed = 1;
		e->in_conn = NULL;
		serve_control(e, "close", NULL, NULL, NULL);
		return;
	}
	e->in_conn = NULL;
	httpd_set_close_cb(c, NULL, NULL);
	httpd_respond(c, 204, NULL, NULL, 0);
	serve_exec_maybe_free(e);
}

static void
serve_body_cb(struct httpd_conn *conn, const char *data, size_t len,
    void *arg)
{
	struct serve_exec	*e = arg;

	if (e->in_conn != conn)
		return;		/* refused meanwhile: the rest is dropped */
	if (len == 0)
		e->in_eof = 1;
	else {
		buf_add(&e->in_buf, data, len);
		if (e->in_buf.len >= SERVE_CHUNK)
			httpd_body_pause(conn, 1);
	}
	serve_stdin_pump(e);
}

static void
serve_in_close_cb(void *arg)
{
	struct serve_exec	*e = arg;

	e->in_conn = NULL;
	e->in_buf.len = 0;
	serve_exec_maybe_free(e);
}

static void
serve_stdin(struct serve_exec *e, struct httpd_conn *conn,
    const struct httpd_req *req)
{
	if (!e->want_stdin) {
		httpd_error(conn, 400, "this exec was not started with "
		    "\"stdin\": true", NULL);
		return;
	}
	if (e->done || e->in_closed) {
		httpd_error(conn, 409, "the command's stdin is closed", NULL);
		return;
	}
	if (e->in_conn != NULL) {
		httpd_error(conn, 409, "another stdin upload is under way for "
		    "this exec", NULL);
		return;
	}
	e->in_conn = conn;
	e->in_eof = 0;
	httpd_set_close_cb(conn, serve_in_close_cb, e);
	if (!req->has_body) {
		e->in_closed = 1;
		serve_control(e, "close", NULL, serve_close_done_cb, e);
		return;
	}
	httpd_stream_body(conn, serve_body_cb, e);
}

/* The agent's answer to a signal or a resize, passed on. */
static void
serve_op_done_cb(int status, const char *body, size_t len, void *arg)
{
	struct serve_waiter	*w = arg;
	struct buf		 b = { 0 };

	if (w->conn != NULL) {
		httpd_set_close_cb(w->conn, NULL, NULL);
		if (status == 204)
			httpd_respond(w->conn, 204, NULL, NULL, 0);
		else if (status == 409)
			httpd_error(w->conn, 409, "not a terminal, or the "
			    "command is over", NULL);
		else {
			buf_printf(&b, "the agent refused it (%d): ", status);
			agent_escape(&b, body, len, AGENT_ERROR_MAX);
			httpd_error(w->conn, status == 404 ? 409 : 500,
			    status == 404 ? "the command is over" : b.data,
			    NULL);
		}
	}
	buf_free(&b);
	free(w);
}

static void
serve_op_close_cb(void *arg)
{
	struct serve_waiter	*w = arg;

	w->conn = NULL;
}

struct serve_op {
	struct serve_sb	*sb;
	unsigned	 id;
	char		 op[8];
};

static void
serve_op_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct serve_op		*op = arg;
	struct serve_exec	*e;
	struct serve_waiter	*w;
	json_t			*j, *v;
	long long		 rows = 0, cols = 0;
	char			 text[32];
	int			 sig;
	const char		*rfields[] = { "rows", "cols", NULL };
	const char		*sfields[] = { "signal", NULL };

	e = serve_exec_find(op->sb, op->id);
	if (serve_json_body(conn, body, len, &j) == -1)
		goto out;
	if (e == NULL || e->done) {
		httpd_error(conn, e == NULL ? 404 : 409, e == NULL ?
		    "no such exec" : "the command is over", NULL);
		goto out;
	}
	if (strcmp(op->op, "signal") == 0) {
		if (serve_check_fields(conn, j, sfields) == -1)
			goto out;
		v = json_object_get(j, "signal");
		sig = -1;
		if (v != NULL && json_is_string(v))
			sig = serve_signal_number(json_string_value(v));
		else if (v != NULL && json_is_integer(v) &&
		    json_integer_value(v) >= 1 &&
		    json_integer_value(v) <= AGENT_SIGNAL_MAX)
			sig = (int)json_integer_value(v);
		if (sig == -1) {
			httpd_error(conn, 400, "signal: a name (\"TERM\", "
			    "\"SIGKILL\") or a number 1-64",
			    "\"field\":\"signal\"");
			goto out;
		}
		snprintf(text, sizeof text, "%d", sig);
	} else {
		if (serve_check_fields(conn, j, rfields) == -1)
			goto out;
		if (json_path_int(j, "rows", &rows) == -1 || rows < 1 ||
		    rows > SERVE_TTY_MAX || json_path_int(j, "cols", &cols) ==
		    -1 || cols < 1 || cols > SERVE_TTY_MAX) {
			httpd_error(conn, 400, "rows and cols: integers "
			    "1-10000", NULL);
			goto out;
		}
		if (!e->tty) {
			httpd_error(conn, 409, "this exec has no terminal",
			    NULL);
			goto out;
		}
		snprintf(text, sizeof text, "%lld %lld", rows, cols);
	}
	if (e->guest_id < 0) {
		httpd_error(conn, 409, "the command has not started yet", NULL);
		goto out;
	}
	w = xcalloc(1, sizeof *w);
	w->conn = conn;
	httpd_set_close_cb(conn, serve_op_close_cb, w);
	serve_control(e, op->op, text, serve_op_done_cb, w);
out:
	json_decref(j);
	free(op);
}

void
serve_exec_op(struct serve_sb *s, struct httpd_conn *conn,
    const struct httpd_req *req, unsigned id, const char *what)
{
	struct serve_exec	*e;
	struct serve_op		*op;

	if ((e = serve_exec_find(s, id)) == NULL || e->job != SERVE_EXEC) {
		httpd_error(conn, 404, "no such exec", NULL);
		return;
	}
	if (strcmp(what, "stdin") == 0) {
		serve_stdin(e, conn, req);
		return;
	}
	op = xcalloc(1, sizeof *op);
	op->sb = s;
	op->id = id;
	snprintf(op->op, sizeof op->op, "%s", what);
	httpd_read_body(conn, serve_op_body, op);
}

/* PUT and GET .../files?path=/abs[&mode=0644] */
void
serve_files(struct serve_sb *s, struct httpd_conn *conn,
    const struct httpd_req *req)
{
	struct serve_exec	*e;
	struct buf		 b = { 0 };
	char			*path, *mode, *end;
	unsigned long		 m = 0644;
	int			 put = strcmp(req->method, "PUT") == 0;

	path = httpd_query_param(req->query, "path");
	mode = httpd_query_param(req->query, "mode");
	if (path == NULL || path[0] != '/' || strlen(path) >= PATH_MAX) {
		httpd_error(conn, 400, "path: an absolute path in the guest, "
		    "as ?path=/abs/path", "\"field\":\"path\"");
		goto out;
	}
	if (mode != NULL) {
		errno = 0;
		m = strtoul(mode, &end, 8);
		if (!put || *mode == '\0' || *end != '\0' || errno != 0 ||
		    m > 07777) {
			httpd_error(conn, 400, "mode: octal, 0-7777, for a PUT",
			    "\"field\":\"mode\"");
			goto out;
		}
	}
	if ((e = serve_exec_new(s, conn, put ? SERVE_WRITE : SERVE_READ,
	    put)) == NULL)
		goto out;
	e->path = xstrdup(path);
	buf_puts(&b, put ? "{\"write\":" : "{\"read\":");
	buf_json_string(&b, path);
	if (put)
		buf_printf(&b, ",\"mode\":%lu", m);
	buf_puts(&b, "}");
	serve_exec_send(e, &b);
out:
	buf_free(&b);
	free(path);
	free(mode);
}

/* The sandbox is going: every exec ends, its client told why. */
void
serve_exec_sandbox_gone(struct serve_sb *s, const char *why)
{
	struct serve_exec	*e, *next;
	struct httpd_conn	*c;
	char			*msg;

	xasprintf(&msg, "the sandbox is gone: %s", why);
	TAILQ_FOREACH_SAFE(e, &s->execs, entry, next) {
		e->in_flight = 0;	/* its answer will never come */
		if ((c = e->in_conn) != NULL && c != e->conn) {
			e->in_conn = NULL;
			httpd_set_close_cb(c, NULL, NULL);
			httpd_error(c, 409, msg, NULL);
		}
		if (!e->done)
			serve_exec_finish(e, msg);
		else
			serve_exec_maybe_free(e);
	}
	/* What is left waits for its own client, which is told nothing. */
	TAILQ_FOREACH_SAFE(e, &s->execs, entry, next) {
		e->in_conn = NULL;
		if (e->conn != NULL) {
			httpd_set_close_cb(e->conn, NULL, NULL);
			httpd_abort(e->conn);
			e->conn = NULL;
		}
		serve_exec_maybe_free(e);
	}
	free(msg);
}
