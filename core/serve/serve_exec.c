/*
 * "qsup serve": commands and files in a running sandbox, the HTTP side of
 * them; the agent's side, the protocol, is an exec's (core/vm/exec.c).
 * Each exec holds one agent port for its stream (and one more for its
 * stdin or a file's upload), so execs never wait on each other; signals,
 * stdin's close and terminal sizes go through the control port, which the
 * agent answers at once. A file is a job the agent runs like a command
 * (wire.h), so both stream any size with the same backpressure: a client
 * that does not read pauses its own port, and so its own command, in the
 * guest.
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

/* The upper bounds of qsup_exec_seconds' buckets; +Inf follows. */
const double serve_exec_le[11] = {
	0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
};

/* Agent ports for execs and uploads: the lowest free one, or -1. */
int
serve_port_take(struct serve_sb *s)
{
	int	i;

	for (i = 0; i < SERVE_PORTS; i++) {
		if ((s->ports_busy & (1u << i)) == 0) {
			s->ports_busy |= 1u << i;
			return (i);
		}
	}
	return (-1);
}

void
serve_port_give(struct serve_sb *s, int i)
{
	if (i >= 0)
		s->ports_busy &= ~(1u << i);
}

/* An exec's time, for the histogram. */
static void
serve_exec_observe(struct serve *srv, double seconds)
{
	size_t	i;

	srv->m.execs++;
	srv->m.exec_seconds += seconds;
	for (i = 0; i < sizeof serve_exec_le / sizeof serve_exec_le[0]; i++) {
		if (seconds <= serve_exec_le[i]) {
			srv->m.exec_buckets[i]++;
			break;
		}
	}
}

struct serve_exec *
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

/* The exit event's JSON, for the client. */
void
serve_exit_json(const struct exec_result *r, const char *error,
    struct buf *b)
{
	buf_puts(b, "{\"status\":");
	if (error == NULL && r->signal == 0)
		buf_printf(b, "%d", r->status);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"signal\":");
	if (error == NULL && r->signal > 0)
		buf_printf(b, "%d", r->signal);
	else
		buf_puts(b, "null");
	buf_printf(b, ",\"timed_out\":%s,\"error\":",
	    r->timed_out ? "true" : "false");
	if (error != NULL)
		buf_json_string(b, error);
	else if (r->exit_error != NULL)
		buf_json_string(b, r->exit_error);
	else
		buf_puts(b, "null");
	buf_puts(b, "}");
}

/* On /v1/events: it runs (r NULL), or it exited as r says. */
static void
serve_exec_event(struct serve_exec *e, const struct exec_result *r)
{
	struct buf	b = { 0 };

	buf_puts(&b, "{\"sandbox\":");
	buf_json_string(&b, e->sb->name);
	buf_printf(&b, ",\"id\":%u,\"state\":\"%s\"", e->id, r == NULL ?
	    "running" : "exited");
	if (r != NULL) {
		buf_puts(&b, ",\"status\":");
		if (r->exit_seen && r->signal == 0)
			buf_printf(&b, "%d", r->status);
		else
			buf_puts(&b, "null");
		buf_puts(&b, ",\"signal\":");
		if (r->exit_seen && r->signal > 0)
			buf_printf(&b, "%d", r->signal);
		else
			buf_puts(&b, "null");
		buf_printf(&b, ",\"seconds\":%.6f", util_now() - e->t_start);
	}
	buf_puts(&b, "}");
	serve_event(e->sb->srv, "exec", b.data);
	buf_free(&b);
}

/* Counted in "execs" and qsup_execs_running. */
int
serve_exec_running(const struct serve_exec *e)
{
	return (e->job == SERVE_EXEC && exec_state(e->x) != EXEC_DONE);
}

/* An exec or a file job of s under way: it is not idle. */
int
serve_exec_busy(const struct serve_sb *s)
{
	const struct serve_exec	*e;

	TAILQ_FOREACH(e, &s->execs, entry) {
		if (exec_state(e->x) != EXEC_DONE)
			return (1);
	}
	return (0);
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
		exec_stdin_drop(e->x);
	}
	e->conn = NULL;
	if (exec_state(e->x) == EXEC_DONE)
		;
	else if (e->hook != NULL && e->hook->outlive) {
		/* Held for a client that will not read: read on. */
		log_debug("exec %u: its client went away: it runs on", e->id);
		exec_resume(e->x);
	} else {
		log_debug("exec %u: its client went away: killed", e->id);
		exec_detach(e->x);
	}
	serve_exec_maybe_free(e);
}

static void
serve_drain_cb(void *arg)
{
	struct serve_exec	*e = arg;

	exec_resume(e->x);
}

/* A file job's failure, told its client. */
static void
serve_job_failed(struct serve_exec *e, const struct exec_result *r)
{
	char	*msg;

	if (r->signal == 0) {
		/* Its errno and its message. */
		if (e->started)
			httpd_abort(e->conn);	/* cut short: no clean end */
		else {
			xasprintf(&msg, "%s", e->err.len > 0 ? e->err.data :
			    strerror(r->status));
			msg[strcspn(msg, "\n")] = '\0';
			serve_error_now(e->conn,
			    serve_errno_status(r->status), msg, NULL);
			free(msg);
		}
	} else if (e->started)
		httpd_abort(e->conn);
	else
		serve_error_now(e->conn, 500, "the file job was killed", NULL);
}

/* The answer, at the stream's end, to a client still there. */
static void
serve_exec_answer(struct serve_exec *e, const struct exec_result *r,
    const char *error)
{
	struct buf	 b = { 0 };

	if (e->job == SERVE_EXEC && e->started) {
		serve_exit_json(r, error, &b);
		httpd_sse_event(e->conn, QSUP_EVENT_EXIT, b.data, b.len);
		httpd_end(e->conn);
	} else if ((error != NULL || !r->exit_seen) && e->started) {
		/*
		 * A download under way: its head is out, so no status can
		 * say it failed; cut short, its client sees no clean end.
		 */
		httpd_abort(e->conn);
	} else if (r->end == EXEC_END_CLOSED || r->end == EXEC_END_GONE) {
		/* The sandbox went before the command began: its state. */
		serve_error_now(e->conn, 409, error != NULL ? error :
		    "the sandbox is gone", NULL);
	} else if (error != NULL || !r->exit_seen) {
		serve_error_now(e->conn, 500, error != NULL ? error :
		    "the agent ended the stream without an exit event", NULL);
	} else if (e->job != SERVE_EXEC && (r->signal != 0 || r->status != 0))
		serve_job_failed(e, r);
	else if (e->job == SERVE_READ) {
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
		serve_error_now(e->conn, 500, "the agent refused the command",
		    NULL);
	buf_free(&b);
}

/* The stream is over: the client told, the exec's ports given back. */
static void
serve_done_cb(struct exec *x, const struct exec_result *r, void *arg)
{
	struct serve_exec	*e = arg;
	struct buf		 b = { 0 };
	const char		*error = NULL;

	(void)x;
	switch (r->end) {
	case EXEC_END_EXITED:
		break;
	case EXEC_END_CLOSED:
		buf_printf(&b, "the sandbox is gone (%s)", r->error);
		error = b.data;
		break;
	case EXEC_END_NO_EXIT:
	case EXEC_END_BROKEN:
	case EXEC_END_REFUSED:
	case EXEC_END_GONE:
		error = r->error;
		break;
	}
	e->sb->t_active = util_now();	/* idle_ttl runs from its end */
	serve_port_give(e->sb, e->port);
	if (!exec_stdin_busy(e->x)) {
		serve_port_give(e->sb, e->in_port);
		e->in_port = -1;
	}
	if (e->job == SERVE_EXEC) {
		serve_exec_observe(e->sb->srv, util_now() - e->t_start);
		serve_exec_event(e, r);
	}
	if (e->conn != NULL) {
		httpd_set_close_cb(e->conn, NULL, NULL);
		httpd_set_drain_cb(e->conn, NULL, NULL);
		if (e->hook == NULL)
			serve_exec_answer(e, r, error);
		if (e->job == SERVE_WRITE && e->in_conn == e->conn)
			e->in_conn = NULL;
	}
	/* Always: its client may be gone (conn NULL), its arg is freed. */
	if (e->hook != NULL)
		e->hook->done(e, r, error, e->hook_arg);
	e->conn = NULL;
	buf_free(&b);
	serve_exec_maybe_free(e);
}

static void
serve_exec_maybe_free(struct serve_exec *e)
{
	if (exec_state(e->x) != EXEC_DONE || e->conn != NULL ||
	    e->in_conn != NULL || exec_stdin_busy(e->x))
		return;
	TAILQ_REMOVE(&e->sb->execs, e, entry);
	serve_port_give(e->sb, e->in_port);
	exec_free(e->x);
	free(e->path);
	buf_free(&e->err);
	free(e);
}

/* Output for the client; the guest waits while the client does not read. */
static int
serve_output_cb(struct exec *x, enum exec_stream stream, const char *data,
    size_t len, void *arg)
{
	struct serve_exec	*e = arg;
	unsigned char		*raw;
	size_t			 n;

	(void)x;
	if (e->hook != NULL)
		return (e->conn == NULL && !e->hook->outlive ? 0 :
		    e->hook->output(e, stream, data, len, e->hook_arg));
	if (e->job != SERVE_EXEC && stream == EXEC_STDERR) {
		/* A file job's says why it failed: kept, bounded. */
		raw = xmalloc(len * 3 / 4 + 3);
		n = util_base64_decode(data, len, raw);
		if (e->err.len + n > SERVE_ERR_MAX)
			n = SERVE_ERR_MAX - e->err.len;
		buf_add(&e->err, raw, n);
		free(raw);
		return (0);
	}
	if (e->job == SERVE_WRITE || e->conn == NULL)
		return (0);	/* a write job says nothing on stdout */
	if (e->job == SERVE_EXEC)
		httpd_sse_event(e->conn, stream == EXEC_STDERR ?
		    QSUP_EVENT_STDERR : QSUP_EVENT_STDOUT, data, len);
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
	return (httpd_over(e->conn));
}

static void	serve_body_cb(struct httpd_conn *, const char *, size_t,
		    void *);

/* Started: an exec's client gets its stream, a file upload may come. */
static void
serve_started_cb(struct exec *x, void *arg)
{
	struct serve_exec	*e = arg;
	struct buf		 b = { 0 };

	(void)x;
	if (e->hook != NULL) {
		e->started = 1;
		if (e->conn != NULL)
			e->hook->started(e, e->hook_arg);
		serve_exec_event(e, NULL);
	} else if (e->job == SERVE_EXEC) {
		e->started = 1;
		httpd_sse_start(e->conn);
		buf_printf(&b, "{\"id\":%u}", e->id);
		httpd_sse_event(e->conn, QSUP_EVENT_START, b.data, b.len);
		buf_free(&b);
		serve_exec_event(e, NULL);
	} else if (e->job == SERVE_WRITE) {
		/* Now the body may come: it is the file. */
		e->in_conn = e->conn;
		httpd_stream_body(e->conn, serve_body_cb, e);
	}
}

/*
 * The body's end, once the exec has taken all of it: 1 when its upload
 * was answered, and e may be freed. It frees nothing itself: a caller
 * that uses e after it (serve_stdin_cb) would use it freed.
 */
static int
serve_stdin_settle(struct serve_exec *e)
{
	struct httpd_conn	*c = e->in_conn;

	if (c == NULL || !e->in_eof || exec_stdin_queued(e->x) > 0 ||
	    exec_stdin_busy(e->x))
		return (0);
	e->in_conn = NULL;
	if (e->job == SERVE_WRITE) {
		/* The whole file is there: the job puts it in place. */
		exec_stdin_close(e->x);
		return (0);
	}
	httpd_set_close_cb(c, NULL, NULL);
	httpd_respond(c, 204, NULL, NULL, 0);
	return (1);
}

/* The stdin upload's client learns its stdin is closed. */
static void
serve_stdin_refused(struct serve_exec *e)
{
	struct httpd_conn	*c;

	if ((c = e->in_conn) == NULL)
		return;
	e->in_conn = NULL;
	if (e->job == SERVE_WRITE) {
		/* The job ended early; its exit says why. */
		e->in_eof = 1;
		return;
	}
	httpd_set_close_cb(c, NULL, NULL);
	serve_error_now(c, 409, "the command's stdin is closed", NULL);
}

/* stdin: the agent took a piece, took no more, or closed it. */
static void
serve_stdin_cb(struct exec *x, enum exec_stdin_news news, void *arg)
{
	struct serve_exec	*e = arg;
	struct httpd_conn	*c;

	if (exec_state(x) == EXEC_DONE && !exec_stdin_busy(x)) {
		serve_port_give(e->sb, e->in_port);
		e->in_port = -1;
	}
	switch (news) {
	case EXEC_STDIN_SENT:
		if (e->in_conn != NULL &&
		    exec_stdin_queued(x) < SERVE_CHUNK)
			httpd_body_pause(e->in_conn, 0);
		serve_stdin_settle(e);
		break;
	case EXEC_STDIN_REFUSED:
		serve_stdin_refused(e);
		break;
	case EXEC_STDIN_CLOSED:
		/* An empty body closed it: now it is answered. */
		if ((c = e->in_conn) != NULL && e->job == SERVE_EXEC) {
			e->in_conn = NULL;
			httpd_set_close_cb(c, NULL, NULL);
			httpd_respond(c, 204, NULL, NULL, 0);
		}
		break;
	}
	serve_exec_maybe_free(e);
}

/*
 * A new exec of spec in s for conn, its ports taken; NULL with err (409,
 * 503). Nothing goes to the agent before exec_start(e->x).
 */
static struct serve_exec *
serve_exec_new(struct serve_sb *s, struct httpd_conn *conn,
    enum serve_job job, const struct exec_spec *spec,
    struct serve_error *err)
{
	struct serve_exec	*e;
	struct exec_ports	 ports;
	struct exec_cbs		 cbs;
	char			*msg;
	int			 port, in_port = -1, uploads;

	uploads = job == SERVE_WRITE || spec->feed_stdin;
	if (s->state != SERVE_READY || s->sb == NULL) {
		serve_fail(err, 409, NULL, "sandbox %s is %s", s->name,
		    serve_state_name(s->state));
		return (NULL);
	}
	/* Its agent is being saved: a copy would have half an exec. */
	if (sandbox_snapshot_busy(s->sb)) {
		serve_fail(err, 409, NULL, "sandbox %s: a snapshot of it is "
		    "under way", s->name);
		return (NULL);
	}
	if ((port = serve_port_take(s)) == -1 ||
	    (uploads && (in_port = serve_port_take(s)) == -1)) {
		serve_port_give(s, port);
		xasprintf(&msg, "sandbox %s runs as many execs and transfers "
		    "as its agent has ports for", s->name);
		serve_limit(err, msg, "agent_ports", SERVE_PORTS);
		free(msg);
		return (NULL);
	}
	e = xcalloc(1, sizeof *e);
	e->sb = s;
	e->id = ++s->srv->next_exec;
	e->job = job;
	e->port = port;
	e->in_port = in_port;
	e->want_stdin = uploads;
	e->conn = conn;
	e->t_start = util_now();
	s->t_active = e->t_start;
	ports.stream = port;
	ports.in = in_port;
	ports.control = SERVE_PORT_CONTROL;
	memset(&cbs, 0, sizeof cbs);
	cbs.started = serve_started_cb;
	cbs.output = serve_output_cb;
	cbs.stdin_news = serve_stdin_cb;
	cbs.done = serve_done_cb;
	cbs.arg = e;
	e->x = exec_new(s->srv->loop, s->sb, spec, &ports, &cbs);
	TAILQ_INSERT_TAIL(&s->execs, e, entry);
	if (job == SERVE_EXEC)
		s->execs_total++;
	httpd_set_close_cb(conn, serve_client_close_cb, e);
	httpd_set_drain_cb(conn, serve_drain_cb, e);
	return (e);
}

/* An exec's body, checked: its spec, and the strings it points to. */
struct serve_spec {
	struct exec_spec	 spec;
	char			**argv;		/* copies, NULL-terminated */
	char			**env;
};

static void
serve_spec_free(struct serve_spec *sp)
{
	size_t	i;

	for (i = 0; i < sp->spec.nenv; i++)
		free(sp->env[i]);
	free(sp->env);
	for (i = 0; sp->argv != NULL && sp->argv[i] != NULL; i++)
		free(sp->argv[i]);
	free(sp->argv);
}

/* argv and env of j into sp; the field at fault, or NULL. */
static const char *
serve_spec_argv(json_t *j, struct serve_spec *sp, const char **why)
{
	json_t		*argv, *env, *v;
	const char	*key;
	size_t		 i;

	argv = json_object_get(j, "argv");
	*why = "must be a non-empty array of strings";
	if (argv == NULL || !json_is_array(argv) || json_array_size(argv) == 0)
		return ("argv");
	sp->argv = xcalloc(json_array_size(argv) + 1, sizeof *sp->argv);
	for (i = 0; i < json_array_size(argv); i++) {
		if (!json_is_string(json_array_get(argv, i)))
			return ("argv");
		sp->argv[i] = xstrdup(json_string_value(json_array_get(argv,
		    i)));
	}
	if ((env = json_object_get(j, "env")) == NULL)
		return (NULL);
	*why = "must be an object of names to strings";
	if (!json_is_object(env))
		return ("env");
	*why = "must be an object of names (without '=') to strings";
	sp->env = xcalloc(json_object_size(env) + 1, sizeof *sp->env);
	json_object_foreach(env, key, v) {
		if (!json_is_string(v) || *key == '\0' ||
		    strchr(key, '=') != NULL)
			return ("env");
		xasprintf(&sp->env[sp->spec.nenv++], "%s=%s", key,
		    json_string_value(v));
	}
	return (NULL);
}

/*
 * The body j of an exec in s, checked into sp once: the field at fault
 * (why says how), or NULL.
 */
static const char *
serve_spec_parse(json_t *j, struct serve_sb *s, struct serve_spec *sp,
    const char **why)
{
	json_t		*v;
	const char	*bad;
	long long	 n;

	memset(sp, 0, sizeof *sp);
	sp->spec.kind = EXEC_COMMAND;
	sp->spec.rows = 24;
	sp->spec.cols = 80;
	if ((bad = serve_spec_argv(j, sp, why)) != NULL)
		return (bad);
	sp->spec.argv = sp->argv;
	sp->spec.env = sp->env;
	if ((v = json_object_get(j, "cwd")) != NULL) {
		*why = "must be an absolute path";
		if (!json_is_string(v) || json_string_value(v)[0] != '/')
			return ("cwd");
		sp->spec.cwd = json_string_value(v);
	}
	*why = "must be true or false";
	if ((v = json_object_get(j, "stdin")) != NULL) {
		if (!json_is_boolean(v))
			return ("stdin");
		sp->spec.feed_stdin = json_is_true(v);
	}
	if ((v = json_object_get(j, "tty")) != NULL) {
		if (!json_is_boolean(v))
			return ("tty");
		sp->spec.tty = json_is_true(v);
	}
	*why = "must be an integer 1-10000";
	if ((v = json_object_get(j, "rows")) != NULL) {
		if (!json_is_integer(v) || (n = json_integer_value(v)) < 1 ||
		    n > SERVE_TTY_MAX)
			return ("rows");
		sp->spec.rows = n;
	}
	if ((v = json_object_get(j, "cols")) != NULL) {
		if (!json_is_integer(v) || (n = json_integer_value(v)) < 1 ||
		    n > SERVE_TTY_MAX)
			return ("cols");
		sp->spec.cols = n;
	}
	/* Without one, the profile's timeout applies, as to qsup run. */
	sp->spec.timeout = s->profile.timeout;
	if ((v = json_object_get(j, "timeout")) != NULL) {
		*why = "must be a number of seconds, 0 or more";
		if (!json_is_number(v) ||
		    (sp->spec.timeout = json_number_value(v)) < 0)
			return ("timeout");
	}
	return (NULL);
}

static void
serve_exec_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	static const char *const fields[] = {
		"argv", "env", "cwd", "stdin", "tty", "rows", "cols",
		"timeout", NULL
	};
	struct serve_exec	*e;
	struct serve_spec	 sp;
	struct serve_error	 err = { 0 };
	json_t			*j;
	const char		*bad, *why;

	(void)arg;
	memset(&sp, 0, sizeof sp);
	if (serve_json_body(body, len, &j, &err) == -1)
		goto out;
	if (s->attach != NULL) {
		/* Through qemu-guest-agent (serve_attach.c). */
		(void)serve_attach_exec(conn, s, j, &err);
		goto out;
	}
	if (serve_check_fields(j, fields, &err) == -1)
		goto out;
	if ((bad = serve_spec_parse(j, s, &sp, &why)) != NULL) {
		serve_bad_field(&err, bad, why);
		goto out;
	}
	if ((e = serve_exec_new(s, conn, SERVE_EXEC, &sp.spec, &err)) != NULL)
		exec_start(e->x);	/* e may be gone after */
out:
	serve_spec_free(&sp);
	json_decref(j);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

/*
 * An exec's JSON body (POST .../exec's) from another channel (a
 * WebSocket's first message), its output to hook; stdin always fed.
 * 0, or -1 with err naming the field.
 */
int
serve_exec_json(struct serve_sb *s, struct httpd_conn *conn,
    const char *body, size_t len, const struct serve_exec_hook *hook,
    void *arg, struct serve_error *err)
{
	static const char *const fields[] = {
		"argv", "env", "cwd", "stdin", "tty", "rows", "cols",
		"timeout", NULL
	};
	struct serve_spec	 sp;
	json_t			*j;
	const char		*bad, *why;
	int			 rc = -1;

	memset(&sp, 0, sizeof sp);
	if (serve_json_body(body, len, &j, err) == -1)
		return (-1);
	if (serve_check_fields(j, fields, err) == 0) {
		if ((bad = serve_spec_parse(j, s, &sp, &why)) != NULL)
			serve_bad_field(err, bad, why);
		else {
			sp.spec.feed_stdin = 1;
			rc = serve_exec_hooked(s, conn, &sp.spec, hook, arg,
			    err);
		}
	}
	serve_spec_free(&sp);
	json_decref(j);
	return (rc);
}

/* POST /v1/sandboxes/{name}/exec: a command, its output streamed. */
int
serve_exec_post(const struct serve_req *r, struct serve_error *err)
{
	(void)err;
	serve_sb_read_body(r, serve_exec_body, NULL);
	return (0);
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
		if (e->job == SERVE_WRITE)
			e->bytes += len;
		if (exec_stdin_write(e->x, data, len) == -1) {
			serve_stdin_refused(e);
			serve_exec_maybe_free(e);
			return;
		}
		if (exec_stdin_queued(e->x) >= SERVE_CHUNK)
			httpd_body_pause(conn, 1);
	}
	if (serve_stdin_settle(e))
		serve_exec_maybe_free(e);
}

static void
serve_in_close_cb(void *arg)
{
	struct serve_exec	*e = arg;

	e->in_conn = NULL;
	exec_stdin_drop(e->x);
	serve_exec_maybe_free(e);
}

/* The exec {id} of the request: it, or NULL with err (404). */
static struct serve_exec *
serve_exec_of(const struct serve_req *r, struct serve_error *err)
{
	struct serve_exec	*e;

	if ((e = serve_exec_find(r->sb, r->exec)) == NULL ||
	    e->job != SERVE_EXEC) {
		serve_fail(err, 404, NULL, "no such exec");
		return (NULL);
	}
	return (e);
}

/* POST .../exec/{id}/stdin: a piece of its stdin, or (empty) its end. */
int
serve_exec_stdin(const struct serve_req *r, struct serve_error *err)
{
	struct serve_exec	*e;
	struct httpd_conn	*conn = r->conn;

	if ((e = serve_exec_of(r, err)) == NULL)
		return (-1);
	if (!e->want_stdin)
		return (serve_fail(err, 400, NULL, "this exec was not started "
		    "with \"stdin\": true"));
	if (exec_state(e->x) == EXEC_DONE || !exec_stdin_open(e->x))
		return (serve_fail(err, 409, NULL, "the command's stdin is "
		    "closed"));
	if (e->in_conn != NULL)
		return (serve_fail(err, 409, NULL, "another stdin upload is "
		    "under way for this exec"));
	e->in_conn = conn;
	e->in_eof = 0;
	httpd_set_close_cb(conn, serve_in_close_cb, e);
	if (!r->http->has_body) {
		exec_stdin_close(e->x);	/* answered when the agent is */
		return (0);
	}
	httpd_stream_body(conn, serve_body_cb, e);
	return (0);
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
			serve_error_now(w->conn, 409, "not a terminal, or the "
			    "command is over", NULL);
		else {
			buf_printf(&b, "the agent refused it (%d): ", status);
			agent_escape(&b, body, len, AGENT_ERROR_MAX);
			serve_error_now(w->conn, status == 404 ? 409 : 500,
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
	unsigned	 id;
	int		 resize;	/* else a signal */
};

/* A signal's body: 0 with *sig, or -1 with err. */
static int
serve_op_signal(json_t *j, int *sig, struct serve_error *err)
{
	static const char *const fields[] = { "signal", NULL };
	json_t			*v;

	if (serve_check_fields(j, fields, err) == -1)
		return (-1);
	v = json_object_get(j, "signal");
	if (v != NULL && json_is_string(v))
		*sig = serve_signal_number(json_string_value(v));
	else if (v != NULL && json_is_integer(v) &&
	    json_integer_value(v) >= 1 &&
	    json_integer_value(v) <= AGENT_SIGNAL_MAX)
		*sig = (int)json_integer_value(v);
	if (*sig == -1)
		return (serve_fail(err, 400, "\"field\":\"signal\"", "signal: "
		    "a name (\"TERM\", \"SIGKILL\") or a number 1-64"));
	return (0);
}

/* A resize's body: 0 with rows and cols, or -1 with err. */
static int
serve_op_resize(json_t *j, struct serve_exec *e, long long *rows,
    long long *cols, struct serve_error *err)
{
	static const char *const fields[] = { "rows", "cols", NULL };

	if (serve_check_fields(j, fields, err) == -1)
		return (-1);
	if (json_path_int(j, "rows", rows) == -1 || *rows < 1 ||
	    *rows > SERVE_TTY_MAX || json_path_int(j, "cols", cols) ==
	    -1 || *cols < 1 || *cols > SERVE_TTY_MAX)
		return (serve_fail(err, 400, NULL, "rows and cols: integers "
		    "1-10000"));
	if (!exec_tty(e->x))
		return (serve_fail(err, 409, NULL, "this exec has no "
		    "terminal"));
	return (0);
}

static void
serve_op_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	struct serve_op		*op = arg;
	struct serve_exec	*e;
	struct serve_waiter	*w;
	struct serve_error	 err = { 0 };
	json_t			*j;
	long long		 rows = 0, cols = 0;
	int			 sig = -1;

	e = serve_exec_find(s, op->id);
	if (serve_json_body(body, len, &j, &err) == -1)
		goto out;
	if (e == NULL || exec_state(e->x) == EXEC_DONE) {
		serve_fail(&err, e == NULL ? 404 : 409, NULL, "%s", e == NULL ?
		    "no such exec" : "the command is over");
		goto out;
	}
	if (!op->resize && serve_op_signal(j, &sig, &err) == -1)
		goto out;
	if (op->resize && serve_op_resize(j, e, &rows, &cols, &err) == -1)
		goto out;
	if (exec_id(e->x) < 0) {
		serve_fail(&err, 409, NULL, "the command has not started yet");
		goto out;
	}
	w = xcalloc(1, sizeof *w);
	w->conn = conn;
	httpd_set_close_cb(conn, serve_op_close_cb, w);
	if (sig != -1)
		exec_signal(e->x, sig, serve_op_done_cb, w);
	else
		exec_resize(e->x, rows, cols, serve_op_done_cb, w);
out:
	json_decref(j);
	free(op);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

/* A signal or a resize of exec {id}, once its body is in. */
static int
serve_exec_op(const struct serve_req *r, int resize, struct serve_error *err)
{
	struct serve_op		*op;

	if (serve_exec_of(r, err) == NULL)
		return (-1);
	op = xcalloc(1, sizeof *op);
	op->id = r->exec;
	op->resize = resize;
	serve_sb_read_body(r, serve_op_body, op);
	return (0);
}

/* POST .../exec/{id}/signal */
int
serve_exec_signal(const struct serve_req *r, struct serve_error *err)
{
	return (serve_exec_op(r, 0, err));
}

/* POST .../exec/{id}/resize */
int
serve_exec_resize(const struct serve_req *r, struct serve_error *err)
{
	return (serve_exec_op(r, 1, err));
}

/* PUT and GET /v1/sandboxes/{name}/files?path=/abs[&mode=0644] */
int
serve_files(const struct serve_req *r, struct serve_error *err)
{
	struct serve_exec	*e;
	struct exec_spec	 spec;
	char			*path, *mode, *end;
	unsigned long		 m = 0644;
	int			 put = strcmp(r->http->method, "PUT") == 0;
	int			 rc = -1;

	if (r->sb->attach != NULL)
		return (serve_fail(err, 409, NULL, "sandbox %s is attached: "
		    "file calls need qsup's agent (use exec through "
		    "qemu-guest-agent)", r->sb->name));
	path = httpd_query_param(r->http->query, "path");
	mode = httpd_query_param(r->http->query, "mode");
	if (path == NULL || path[0] != '/' || strlen(path) >= PATH_MAX) {
		serve_fail(err, 400, "\"field\":\"path\"", "path: an absolute "
		    "path in the guest, as ?path=/abs/path");
		goto out;
	}
	if (mode != NULL) {
		errno = 0;
		m = strtoul(mode, &end, 8);
		if (!put || *mode == '\0' || *end != '\0' || errno != 0 ||
		    m > 07777) {
			serve_fail(err, 400, "\"field\":\"mode\"", "mode: "
			    "octal, 0-7777, for a PUT");
			goto out;
		}
	}
	memset(&spec, 0, sizeof spec);
	spec.kind = put ? EXEC_WRITE : EXEC_READ;
	spec.path = path;
	spec.mode = m;
	if ((e = serve_exec_new(r->sb, r->conn, put ? SERVE_WRITE :
	    SERVE_READ, &spec, err)) == NULL)
		goto out;
	e->path = xstrdup(path);
	exec_start(e->x);	/* e may be gone after */
	rc = 0;
out:
	free(path);
	free(mode);
	return (rc);
}

/*
 * A command whose client is answered through hook, started: 0, or -1
 * with err. It may be over (and freed) by the time this returns, when the
 * agent failed at once: the hook has its id.
 */
int
serve_exec_hooked(struct serve_sb *s, struct httpd_conn *conn,
    const struct exec_spec *spec, const struct serve_exec_hook *hook,
    void *arg, struct serve_error *err)
{
	struct serve_exec	*e;

	if (s->attach != NULL)
		return (serve_fail(err, 409, NULL, "sandbox %s is attached: "
		    "this needs qsup's agent", s->name));
	if ((e = serve_exec_new(s, conn, SERVE_EXEC, spec, err)) == NULL)
		return (-1);
	e->hook = hook;
	e->hook_arg = arg;
	exec_start(e->x);	/* e may be gone after */
	return (0);
}

/* The sandbox is going: every exec ends, its client told why. */
void
serve_exec_sandbox_gone(struct serve_sb *s, const char *why)
{
	struct serve_exec	*e, *next;
	struct httpd_conn	*c;
	char			*msg;
	int			 done;

	xasprintf(&msg, "the sandbox is gone: %s", why);
	TAILQ_FOREACH_SAFE(e, &s->execs, entry, next) {
		if ((c = e->in_conn) != NULL && c != e->conn) {
			e->in_conn = NULL;
			httpd_set_close_cb(c, NULL, NULL);
			serve_error_now(c, 409, msg, NULL);
		}
		/* Its answers will never come: it ends now (serve_done_cb). */
		done = exec_state(e->x) == EXEC_DONE;
		exec_gone(e->x, msg);
		if (done)
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
