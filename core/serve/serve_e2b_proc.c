/*
 * --e2b's process.Process: Connect over qsup's execs. Start is a server
 * stream of envelopes (start, data, end events, keepalives, then the
 * end-of-stream envelope) fed by the exec's hooks; SendInput, CloseStdin,
 * SendSignal and Update act on a running one by its pid (qsup's exec id);
 * List lists them. A command that wants /bin/bash runs under sh when the
 * guest has no bash (the default guest is busybox): commands.run always
 * asks for "/bin/bash -l -c CMD". Also here: a command whose output is
 * kept, for serve_e2b_fs.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"
#include "serve_e2b.h"

/* bash when the guest has it, else sh, with the same arguments. */
#define E2B_BASH_SHIM	"if command -v bash >/dev/null 2>&1; then " \
			"exec bash \"$@\"; fi; exec sh \"$@\""
#define E2B_ARGS_MAX	4096
#define E2B_ERR_MAX	4096

#define E2B_ATTACH_MAX	8

struct e2b_stream;

/* A Connect's stream: a listener re-attached to a running command. */
struct e2b_att {
	struct e2b_stream	*st;
	struct httpd_conn	*conn;
	int			 head;
};

/* One Start's stream. */
struct e2b_stream {
	struct e2b_att	*att[E2B_ATTACH_MAX];	/* Connect's listeners */
	size_t		 natt;
	const char	*end_code;	/* how they end: an error's, or NULL */
	const char	*end_msg;
	struct ev_loop	*loop;
	ev_timer	 ping;		/* keepalives, when asked for */
	double		 every;
	int		 tty;
	int		 head;		/* the stream's head went out */
	json_t		*config;	/* its ProcessConfig, for List */
};

static void
e2b_write(struct httpd_conn *conn, int *head, int flags, const char *json,
    size_t len)
{
	struct buf	b = { 0 };

	if (!*head) {
		*head = 1;
		httpd_stream_start(conn, 200, "application/connect+json");
	}
	e2b_frame(&b, flags, json, len);
	httpd_stream_write(conn, b.data, b.len);
	buf_free(&b);
}

static void
e2b_send(struct httpd_conn *conn, struct e2b_stream *st, int flags,
    const char *json, size_t len)
{
	e2b_write(conn, &st->head, flags, json, len);
}

/* The stream's end: its error's code and message, or none. */
static void
e2b_stream_end(struct httpd_conn *conn, int *head, const char *code,
    const char *msg)
{
	struct buf	b = { 0 };

	if (code == NULL)
		buf_puts(&b, "{}");
	else {
		buf_puts(&b, "{\"error\":{\"code\":");
		buf_json_string(&b, code);
		buf_puts(&b, ",\"message\":");
		buf_json_string(&b, msg);
		buf_puts(&b, "}}");
	}
	e2b_write(conn, head, E2B_FLAG_END, b.data, b.len);
	httpd_end(conn);
	buf_free(&b);
}

static void
e2b_att_close_cb(void *arg)
{
	struct e2b_att		*a = arg;
	struct e2b_stream	*st = a->st;
	size_t			 i;

	for (i = 0; i < st->natt; i++)
		if (st->att[i] == a)
			st->att[i] = st->att[--st->natt];
	free(a);
}

/*
 * An event for Connect's listeners too; with end, their streams end. One
 * that does not keep up (its client does not read) is let go, told why.
 */
static void
e2b_att_send(struct e2b_stream *st, const char *json, size_t len, int end)
{
	struct e2b_att	*a;
	size_t		 i = 0;
	static const char slow[] = "{\"error\":{\"code\":\"resource_exhausted\","
	    "\"message\":\"Connect: the client fell behind the output\"}}";

	while (i < st->natt) {
		a = st->att[i];
		if (json != NULL)
			e2b_write(a->conn, &a->head, 0, json, len);
		if (!end && !httpd_over(a->conn)) {
			i++;
			continue;
		}
		/* Off the list before httpd_end can close it. */
		st->att[i] = st->att[--st->natt];
		httpd_set_close_cb(a->conn, NULL, NULL);
		if (end)
			e2b_stream_end(a->conn, &a->head, st->end_code,
			    st->end_msg);
		else {
			e2b_write(a->conn, &a->head, E2B_FLAG_END, slow,
			    sizeof slow - 1);
			httpd_end(a->conn);
		}
		free(a);
	}
}

static void
e2b_ping_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve_exec	*e = w->data;
	static const char	 ka[] = "{\"event\":{\"keepalive\":{}}}";

	(void)loop;
	(void)revents;
	if (e->conn != NULL)
		e2b_send(e->conn, e->hook_arg, 0, ka, sizeof ka - 1);
}

static void
e2b_started(struct serve_exec *e, void *arg)
{
	struct e2b_stream	*st = arg;
	struct buf		 b = { 0 };

	buf_printf(&b, "{\"event\":{\"start\":{\"pid\":%u}}}", e->id);
	e2b_send(e->conn, st, 0, b.data, b.len);
	buf_free(&b);
	if (st->every > 0) {
		ev_timer_init(&st->ping, e2b_ping_cb, st->every, st->every);
		st->ping.data = e;
		ev_timer_start(st->loop, &st->ping);
	}
}

static int
e2b_output(struct serve_exec *e, enum exec_stream which, const char *b64,
    size_t len, void *arg)
{
	struct e2b_stream	*st = arg;
	struct buf		 b = { 0 };

	buf_printf(&b, "{\"event\":{\"data\":{\"%s\":\"", st->tty ? "pty" :
	    which == EXEC_STDERR ? "stderr" : "stdout");
	buf_add(&b, b64, len);	/* checked base64, the agent's */
	buf_puts(&b, "\"}}}");
	if (e->conn != NULL)
		e2b_send(e->conn, st, 0, b.data, b.len);
	e2b_att_send(st, b.data, b.len, 0);
	buf_free(&b);
	return (e->conn != NULL && httpd_over(e->conn));
}

static void
e2b_done(struct serve_exec *e, const struct exec_result *r,
    const char *error, void *arg)
{
	struct e2b_stream	*st = arg;
	struct buf		 b = { 0 };

	ev_timer_stop(st->loop, &st->ping);
	if (error == NULL && r->exit_seen) {
		buf_puts(&b, "{\"event\":{\"end\":{");
		if (r->signal == 0)
			buf_printf(&b, "\"exitCode\":%d,\"exited\":true,"
			    "\"status\":\"exit status %d\"", r->status,
			    r->status);
		else
			buf_printf(&b, "\"exitCode\":-1,\"exited\":false,"
			    "\"status\":\"signal: %d\"", r->signal);
		if (r->exit_error != NULL) {
			buf_puts(&b, ",\"error\":");
			buf_json_string(&b, r->exit_error);
		}
		buf_puts(&b, "}}}");
		if (e->conn != NULL)
			e2b_send(e->conn, st, 0, b.data, b.len);
	}
	if (r->timed_out) {
		st->end_code = "deadline_exceeded";
		st->end_msg = "the command ran past Connect-Timeout-Ms";
	} else if (error != NULL || !r->exit_seen) {
		st->end_code = "unavailable";
		st->end_msg = error != NULL ? error : "the agent ended the "
		    "stream without an exit";
	}
	e2b_att_send(st, b.data, b.len, 1);
	if (e->conn != NULL)
		e2b_stream_end(e->conn, &st->head, st->end_code, st->end_msg);
	buf_free(&b);
	json_decref(st->config);
	free(st);
}

/* As on E2B, a command outlives the stream that started it. */
static const struct serve_exec_hook e2b_start_hook = {
	e2b_started, e2b_output, e2b_done, 1
};

/* A request's arguments: the server and its sandbox's id, copied. */
struct e2b_call {
	struct serve	*srv;
	char		*id;
	char		*method;
	double		 timeout;	/* Connect-Timeout-Ms, in seconds */
	double		 every;		/* Keepalive-Ping-Interval */
};

static void
e2b_call_free(struct e2b_call *c)
{
	free(c->id);
	free(c->method);
	free(c);
}

/* The spec's argv: cmd and args, bash through E2B_BASH_SHIM. */
static const char *
e2b_argv(json_t *proc, char ***argvp)
{
	json_t		*args, *v;
	const char	*cmd;
	char		**argv;
	size_t		 i, n, k = 0;

	if ((cmd = json_string_value(json_object_get(proc, "cmd"))) == NULL ||
	    *cmd == '\0')
		return ("process.cmd: a non-empty string");
	args = json_object_get(proc, "args");
	if (args != NULL && !json_is_array(args))
		return ("process.args: an array of strings");
	n = json_array_size(args);
	if (n > E2B_ARGS_MAX)
		return ("process.args: more than 4096");
	argv = xcalloc(n + 5, sizeof *argv);
	if (strcmp(cmd, "/bin/bash") == 0 || strcmp(cmd, "bash") == 0) {
		argv[k++] = xstrdup("/bin/sh");
		argv[k++] = xstrdup("-c");
		argv[k++] = xstrdup(E2B_BASH_SHIM);
		argv[k++] = xstrdup("sh");
	} else
		argv[k++] = xstrdup(cmd);
	json_array_foreach(args, i, v) {
		if (!json_is_string(v)) {
			for (i = 0; i < k; i++)
				free(argv[i]);
			free(argv);
			return ("process.args: an array of strings");
		}
		argv[k++] = xstrdup(json_string_value(v));
	}
	*argvp = argv;
	return (NULL);
}

/* The env: the sandbox's envVars, then the command's envs. */
static const char *
e2b_env(json_t *sbenv, json_t *envs, char ***envp, size_t *np)
{
	json_t		*o[2] = { sbenv, envs }, *v;
	const char	*k;
	char		**env = NULL;
	size_t		 n = 0, i;

	if (envs != NULL && !json_is_object(envs))
		return ("process.envs: an object of strings");
	for (i = 0; i < 2; i++) {
		if (!json_is_object(o[i]))
			continue;
		json_object_foreach(o[i], k, v) {
			if (!json_is_string(v) || *k == '\0' ||
			    strchr(k, '=') != NULL) {
				*envp = env;
				*np = n;
				return ("process.envs: names without '=' to "
				    "strings");
			}
			env = xreallocarray(env, n + 1, sizeof *env);
			xasprintf(&env[n++], "%s=%s", k, json_string_value(v));
		}
	}
	*envp = env;
	*np = n;
	return (NULL);
}

static void
e2b_strv_free(char **v, size_t n)
{
	size_t	i;

	for (i = 0; v != NULL && (n == (size_t)-1 ? v[i] != NULL : i < n);
	    i++)
		free(v[i]);
	free(v);
}

/* A stream that fails before its command starts. */
void
e2b_stream_fail(struct httpd_conn *conn, const char *code, const char *msg)
{
	struct e2b_stream	st;

	memset(&st, 0, sizeof st);
	e2b_stream_end(conn, &st.head, code, msg);
}

/* Start's request, its envelope read: the command started, or why not. */
static const char *
e2b_start_spec(struct e2b_sb *e, json_t *j, struct exec_spec *spec,
    char ***argv, char ***env)
{
	json_t		*proc, *pty, *v;
	const char	*why;
	long long	 rows = 0, cols = 0;

	if (!json_is_object(proc = json_object_get(j, "process")))
		return ("process: missing");
	if ((why = e2b_argv(proc, argv)) != NULL)
		return (why);
	if ((why = e2b_env(e->envs, json_object_get(proc, "envs"), env,
	    &spec->nenv)) != NULL)
		return (why);
	spec->kind = EXEC_COMMAND;
	spec->argv = *argv;
	spec->env = *env;
	if ((v = json_object_get(proc, "cwd")) != NULL &&
	    (spec->cwd = json_string_value(v)) == NULL)
		return ("process.cwd: a string");
	if ((pty = json_object_get(j, "pty")) != NULL) {
		if (json_path_int(pty, "size.rows", &rows) == -1 ||
		    json_path_int(pty, "size.cols", &cols) == -1 ||
		    rows < 1 || rows > 10000 || cols < 1 || cols > 10000)
			return ("pty.size: rows and cols, 1-10000");
		spec->tty = 1;
		spec->rows = rows;
		spec->cols = cols;
		spec->feed_stdin = 1;	/* a terminal's input */
	}
	if (json_is_true(json_object_get(j, "stdin")))
		spec->feed_stdin = 1;
	return (NULL);
}

static void
e2b_start_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct e2b_call		*c = arg;
	struct serve_error	 err = { 0 };
	struct exec_spec	 spec;
	struct e2b_stream	*st;
	struct serve_sb		*s;
	struct e2b_sb		*e;
	json_t			*j = NULL;
	const char		*msg, *why;
	char			**argv = NULL, **env = NULL;
	size_t			 mlen;
	ssize_t			 n;
	int			 flags;

	memset(&spec, 0, sizeof spec);
	if ((e = e2b_find(c->srv, c->id, &s)) == NULL) {
		e2b_stream_fail(conn, "not_found", "the sandbox is gone");
		goto out;
	}
	if ((n = e2b_envelope(body, len, &flags, &msg, &mlen, &why)) <= 0 ||
	    (size_t)n != len || flags != 0) {
		e2b_stream_fail(conn, "invalid_argument", why != NULL ? why :
		    "the body must be one envelope");
		goto out;
	}
	if ((j = json_loadb(msg, mlen, 0, NULL)) == NULL) {
		e2b_stream_fail(conn, "invalid_argument", "StartRequest: not "
		    "JSON");
		goto out;
	}
	if ((why = e2b_start_spec(e, j, &spec, &argv, &env)) != NULL) {
		e2b_stream_fail(conn, "invalid_argument", why);
		goto out;
	}
	spec.timeout = c->timeout;
	st = xcalloc(1, sizeof *st);
	st->loop = c->srv->loop;
	st->every = c->every;
	st->tty = spec.tty;
	st->config = json_incref(json_object_get(j, "process"));
	ev_timer_init(&st->ping, e2b_ping_cb, 0, 0);
	if (serve_exec_hooked(s, conn, &spec, &e2b_start_hook, st,
	    &err) == -1) {
		json_decref(st->config);
		free(st);
		e2b_stream_fail(conn, err.status == 409 ?
		    "failed_precondition" : "resource_exhausted", err.msg);
		free(err.msg);
		free(err.fields);
		free(err.allow);
	}
out:
	e2b_strv_free(argv, (size_t)-1);
	e2b_strv_free(env, spec.nenv);
	json_decref(j);
	e2b_call_free(c);
}

/*
 * The running command j's process.pid names, or NULL with the code and
 * the message that say why.
 */
static struct serve_exec *
e2b_pid_find(struct serve_sb *s, json_t *j, const char **code, char **msg)
{
	struct serve_exec	*x;
	long long		 pid;

	if (json_path_int(j, "process.pid", &pid) == -1 || pid < 1 ||
	    pid > UINT_MAX) {
		*code = json_path(j, "process.tag") != NULL ?
		    "unimplemented" : "invalid_argument";
		*msg = xstrdup("process: a pid (tags are not kept)");
		return (NULL);
	}
	if ((x = serve_exec_find(s, (unsigned)pid)) == NULL ||
	    x->hook != &e2b_start_hook || exec_state(x->x) == EXEC_DONE) {
		*code = "not_found";
		xasprintf(msg, "process with pid %lld not found", pid);
		return (NULL);
	}
	return (x);
}

/* The running command a request's process.pid names, or NULL (told). */
static struct serve_exec *
e2b_pid(struct httpd_conn *conn, struct serve_sb *s, json_t *j)
{
	struct serve_exec	*x;
	const char		*code;
	char			*msg;

	if ((x = e2b_pid_find(s, j, &code, &msg)) == NULL) {
		e2b_rpc_error(conn, code, "%s", msg);
		free(msg);
	}
	return (x);
}

static void
e2b_ignore_cb(int status, const char *body, size_t len, void *arg)
{
	(void)status;
	(void)body;
	(void)len;
	(void)arg;
}

/* SendInput: a piece of its stdin (or of its terminal's input). */
static void
e2b_send_input(struct httpd_conn *conn, struct serve_exec *x, json_t *j)
{
	const char	*in;
	unsigned char	*raw;
	size_t		 n;

	if ((in = json_string_value(json_path(j, "input.stdin"))) == NULL &&
	    (in = json_string_value(json_path(j, "input.pty"))) == NULL) {
		e2b_rpc_error(conn, "invalid_argument", "input: stdin or pty, "
		    "base64");
		return;
	}
	raw = xmalloc(strlen(in) * 3 / 4 + 3);
	n = util_base64_decode(in, strlen(in), raw);
	if (exec_stdin_write(x->x, raw, n) == -1)
		e2b_rpc_error(conn, "failed_precondition", "the process's "
		    "stdin is closed (start it with stdin: true)");
	else
		httpd_respond_json(conn, 200, "{}", 2);
	free(raw);
}

/* SendSignal: SIGKILL or SIGTERM, by name or number. */
static void
e2b_send_signal(struct httpd_conn *conn, struct serve_exec *x, json_t *j)
{
	json_t		*v = json_object_get(j, "signal");
	const char	*s = json_string_value(v);
	int		 sig = 0;

	if ((s != NULL && strcmp(s, "SIGNAL_SIGKILL") == 0) ||
	    json_integer_value(v) == 9)
		sig = 9;
	else if ((s != NULL && strcmp(s, "SIGNAL_SIGTERM") == 0) ||
	    json_integer_value(v) == 15)
		sig = 15;
	if (sig == 0)
		e2b_rpc_error(conn, "invalid_argument", "signal: "
		    "SIGNAL_SIGKILL or SIGNAL_SIGTERM");
	else if (exec_id(x->x) < 0)
		e2b_rpc_error(conn, "failed_precondition", "the process has "
		    "not started yet");
	else if (exec_signal(x->x, sig, e2b_ignore_cb, NULL) == -1)
		e2b_rpc_error(conn, "unavailable", "the signal was not sent");
	else
		httpd_respond_json(conn, 200, "{}", 2);
}

/* List: the commands started through Start that still run. */
static void
e2b_list(struct httpd_conn *conn, struct serve_sb *s)
{
	struct serve_exec	*x;
	struct e2b_stream	*st;
	struct buf		 b = { 0 };
	char			*cfg;

	buf_puts(&b, "{\"processes\":[");
	TAILQ_FOREACH(x, &s->execs, entry) {
		if (x->hook != &e2b_start_hook || exec_state(x->x) ==
		    EXEC_DONE)
			continue;
		st = x->hook_arg;
		cfg = json_dumps(st->config, JSON_COMPACT);
		buf_printf(&b, "%s{\"pid\":%u,\"config\":%s}",
		    b.data[b.len - 1] == '[' ? "" : ",", x->id, cfg);
		free(cfg);
	}
	buf_puts(&b, "]}");
	httpd_respond_json(conn, 200, b.data, b.len);
	buf_free(&b);
}

/* A unary call, its JSON body in. */
static void
e2b_unary_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct e2b_call		*c = arg;
	struct serve_exec	*x;
	struct serve_sb		*s;
	json_t			*j;
	long long		 rows, cols;

	if (e2b_find(c->srv, c->id, &s) == NULL) {
		e2b_rpc_error(conn, "not_found", "the sandbox is gone");
		goto out;
	}
	if ((j = json_loadb(body, len, 0, NULL)) == NULL) {
		e2b_rpc_error(conn, "invalid_argument", "the body is not "
		    "JSON");
		goto out;
	}
	if (strcmp(c->method, "List") == 0)
		e2b_list(conn, s);
	else if ((x = e2b_pid(conn, s, j)) == NULL)
		;
	else if (strcmp(c->method, "SendInput") == 0)
		e2b_send_input(conn, x, j);
	else if (strcmp(c->method, "CloseStdin") == 0) {
		exec_stdin_close(x->x);
		httpd_respond_json(conn, 200, "{}", 2);
	} else if (strcmp(c->method, "SendSignal") == 0)
		e2b_send_signal(conn, x, j);
	else if (json_path_int(j, "pty.size.rows", &rows) == -1 ||
	    json_path_int(j, "pty.size.cols", &cols) == -1 || rows < 1 ||
	    cols < 1 || rows > 10000 || cols > 10000)
		e2b_rpc_error(conn, "invalid_argument", "pty.size: rows and "
		    "cols, 1-10000");
	else if (!exec_tty(x->x))
		e2b_rpc_error(conn, "failed_precondition", "the process has "
		    "no terminal");
	else if (exec_resize(x->x, rows, cols, e2b_ignore_cb, NULL) == -1)
		e2b_rpc_error(conn, "unavailable", "the resize was not sent");
	else
		httpd_respond_json(conn, 200, "{}", 2);
	json_decref(j);
out:
	e2b_call_free(c);
}

/*
 * Connect: a listener for a running command's later output and its end,
 * while its Start's stream lasts (E2B_ATTACH_MAX of them).
 */
static void
e2b_connect_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct e2b_call		*c = arg;
	struct e2b_stream	*st;
	struct e2b_att		*a;
	struct serve_exec	*x;
	struct serve_sb		*s;
	struct buf		 b = { 0 };
	json_t			*j = NULL;
	const char		*msg, *why, *code;
	char			*err;
	size_t			 mlen;
	ssize_t			 n;
	int			 flags;

	if (e2b_find(c->srv, c->id, &s) == NULL)
		e2b_stream_fail(conn, "not_found", "the sandbox is gone");
	else if ((n = e2b_envelope(body, len, &flags, &msg, &mlen,
	    &why)) <= 0 || (size_t)n != len || flags != 0)
		e2b_stream_fail(conn, "invalid_argument", why != NULL ? why :
		    "the body must be one envelope");
	else if ((j = json_loadb(msg, mlen, 0, NULL)) == NULL)
		e2b_stream_fail(conn, "invalid_argument", "ConnectRequest: "
		    "not JSON");
	else if ((x = e2b_pid_find(s, j, &code, &err)) == NULL) {
		e2b_stream_fail(conn, code, err);
		free(err);
	} else if ((st = x->hook_arg)->natt == E2B_ATTACH_MAX)
		e2b_stream_fail(conn, "resource_exhausted", "Connect: "
		    "8 listeners on this process already");
	else {
		a = xcalloc(1, sizeof *a);
		a->st = st;
		a->conn = conn;
		st->att[st->natt++] = a;
		httpd_set_close_cb(conn, e2b_att_close_cb, a);
		buf_printf(&b, "{\"event\":{\"start\":{\"pid\":%u}}}",
		    x->id);
		e2b_write(conn, &a->head, 0, b.data, b.len);
		buf_free(&b);
	}
	json_decref(j);
	e2b_call_free(c);
}

/* A header's number (Connect-Timeout-Ms, ...), or 0. */
static double
e2b_header_num(const struct httpd_req *h, const char *name)
{
	char		*v, *end;
	double		 d = 0;

	if ((v = httpd_field(h, name)) == NULL)
		return (0);
	d = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || d < 0 || d > 1e12)
		d = 0;
	free(v);
	return (d);
}

int
e2b_process(const struct e2b_req *q, const char *method)
{
	static const char *const unary[] = {
		"List", "SendInput", "CloseStdin", "SendSignal", "Update", NULL
	};
	struct httpd_conn	*conn = q->r->conn;
	struct e2b_call		*c;
	size_t			 i;

	if (strcmp(q->r->http->method, "POST") != 0) {
		e2b_rpc_error(conn, "unimplemented", "POST only");
		return (-1);
	}
	c = xcalloc(1, sizeof *c);
	c->srv = q->r->srv;
	c->id = xstrdup(q->e->id);
	c->method = xstrdup(method);
	if (strcmp(method, "Start") == 0) {
		c->timeout = e2b_header_num(q->r->http, "Connect-Timeout-Ms") /
		    1000;
		c->every = e2b_header_num(q->r->http,
		    "Keepalive-Ping-Interval");
		httpd_read_body(conn, e2b_start_body, c);
		return (0);
	}
	if (strcmp(method, "Connect") == 0) {
		httpd_read_body(conn, e2b_connect_body, c);
		return (0);
	}
	for (i = 0; unary[i] != NULL; i++) {
		if (strcmp(unary[i], method) == 0) {
			httpd_read_body(conn, e2b_unary_body, c);
			return (0);
		}
	}
	e2b_call_free(c);
	/* StreamInput: not done. */
	e2b_rpc_error(conn, "unimplemented", "process.Process/%s: not "
	    "supported by qsup's E2B front end", method);
	return (-1);
}

/* A command whose output is kept: e2b_command's. */
struct e2b_cmd {
	e2b_cmd_fn	*fn;
	void		*arg;
	struct buf	 out;
	struct buf	 err;
	char		*in;		/* its stdin, or NULL */
	size_t		 inlen;
	int		 over;		/* out passed E2B_OUT_MAX */
};

static void
e2b_cmd_started(struct serve_exec *e, void *arg)
{
	struct e2b_cmd	*c = arg;

	if (c->in != NULL) {
		(void)exec_stdin_write(e->x, c->in, c->inlen);
		exec_stdin_close(e->x);
	}
}

static int
e2b_cmd_output(struct serve_exec *e, enum exec_stream which,
    const char *b64, size_t len, void *arg)
{
	struct e2b_cmd	*c = arg;
	struct buf	*b = which == EXEC_STDERR ? &c->err : &c->out;
	size_t		 max = which == EXEC_STDERR ? E2B_ERR_MAX : E2B_OUT_MAX;
	unsigned char	*raw;
	size_t		 n;

	(void)e;
	raw = xmalloc(len * 3 / 4 + 3);
	n = util_base64_decode(b64, len, raw);
	if (b->len + n > max) {
		n = max - b->len;
		if (which == EXEC_STDOUT)
			c->over = 1;
	}
	buf_add(b, raw, n);
	free(raw);
	return (0);
}

static void
e2b_cmd_done(struct serve_exec *e, const struct exec_result *r,
    const char *error, void *arg)
{
	struct e2b_cmd	*c = arg;
	int		 code = -1;

	if (error == NULL && r->exit_seen && r->signal == 0)
		code = r->status;
	if (c->over && error == NULL)
		error = "its output passed 4 MiB";
	if (e->conn != NULL)
		c->fn(e->conn, code, c->out.data != NULL ? c->out.data : "",
		    c->out.len, error != NULL ? error : c->err.data != NULL ?
		    c->err.data : "", c->arg);
	else
		c->fn(NULL, code, "", 0, "", c->arg);
	buf_free(&c->out);
	buf_free(&c->err);
	free(c->in);
	free(c);
}

static const struct serve_exec_hook e2b_cmd_hook = {
	e2b_cmd_started, e2b_cmd_output, e2b_cmd_done, 0
};

/*
 * argv run in s for conn, with in (inlen bytes, or NULL) as its stdin:
 * fn gets its exit status (-1: it did not exit), its stdout and its
 * stderr (or why it failed), and arg; fn is called once, unless this
 * returns -1 with err.
 */
int
e2b_command(struct serve_sb *s, struct httpd_conn *conn, char *const *argv,
    const char *in, size_t inlen, e2b_cmd_fn *fn, void *arg,
    struct serve_error *err)
{
	struct exec_spec	 spec;
	struct e2b_cmd		*c;

	memset(&spec, 0, sizeof spec);
	spec.kind = EXEC_COMMAND;
	spec.argv = argv;
	spec.feed_stdin = in != NULL;
	c = xcalloc(1, sizeof *c);
	c->fn = fn;
	c->arg = arg;
	if (in != NULL) {
		c->in = xmalloc(inlen + 1);
		memcpy(c->in, in, inlen);
		c->inlen = inlen;
	}
	if (serve_exec_hooked(s, conn, &spec, &e2b_cmd_hook, c, err) == -1) {
		free(c->in);
		free(c);
		return (-1);
	}
	return (0);
}
