/*
 * One command, or file job, run by the agent (core/wire/wire.h): its
 * /exec request, built from a typed spec; its event stream, held to the
 * protocol; its stdin, one upload at a time, each waiting for the agent's
 * 204; signals, terminal sizes and its stdin's close on the control port;
 * its timeout; its end. qsup run and qsup serve are its users: they say
 * what to run and what to do with its output and its end, nothing of the
 * protocol.
 *
 * The stream's life is exec_actions[state][event], and exec_set_state the
 * only place its state changes. Until the stream ends well, the exit event
 * is only the guest's word: the timeout, signals and detaching do not
 * depend on it. Stdin is a smaller machine beside it (enum exec_in).
 *
 * Freed as tmux frees a job: once its stream has ended (EXEC_DONE),
 * nothing it asked the agent is unanswered, and its user has let it go
 * (exec_free); whichever comes last frees it, never from inside one of
 * its own callbacks (depth).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <assert.h>
#include <ev.h>
#include <jansson.h>

#include "vm.h"

/* What happens to an exec. */
enum exec_event {
	EXEC_EV_START,		/* the start event */
	EXEC_EV_OUTPUT,		/* a stdout or stderr event */
	EXEC_EV_EXIT,		/* the exit event */
	EXEC_EV_UNKNOWN,	/* any other event */
	EXEC_EV_END,		/* the stream ended well (200) */
	EXEC_EV_FAIL,		/* ... or not: refused, broken, closed */
	EXEC_EV_GONE,		/* the sandbox's ports went (exec_gone) */
	EXEC_EV_TIMEOUT,	/* the spec's timeout passed */
	EXEC_EV_DETACH,		/* its user's client went away */
	EXEC_NEVENTS
};

/* Its stdin. */
enum exec_in {
	EXEC_IN_OPEN,		/* uploads go as they come */
	EXEC_IN_DRAINING,	/* closing once what is queued has gone */
	EXEC_IN_CLOSING,	/* /close sent, its answer awaited */
	EXEC_IN_CLOSED		/* closed or refused: nothing more goes */
};

/* An event's particulars: a stream event's, or a response's. */
struct exec_input {
	const char	*event;
	const char	*data;		/* the event's data, the body */
	size_t		 len;
	int		 status;	/* EXEC_EV_FAIL */
	const char	*why;		/* EXEC_EV_GONE */
};

struct exec {
	struct ev_loop		*loop;
	struct sandbox		*sb;		/* NULL once gone */
	struct exec_ports	 ports;
	struct exec_cbs		 cbs;
	enum exec_state		 state;
	enum exec_kind		 kind;
	int			 tty;
	int			 feed_stdin;
	struct buf		 request;	/* the /exec body, until sent */
	double			 timeout;
	ev_timer		 timer;
	double			 frozen_left;	/* its timer's, while frozen */
	long long		 id;		/* the agent's; -1 before start */
	int			 timed_out;
	int			 detached;	/* no started, no output */
	int			 released;	/* no callbacks at all */
	int			 depth;		/* in our own code: no free */
	struct agent_exit	 exit;		/* once EXEC_EXITED */
	struct exec_result	 result;	/* once EXEC_DONE */
	char			*error;		/* result.error's */

	enum exec_in		 in_state;
	struct buf		 in;		/* queued, not yet sent */
	int			 in_flight;	/* an upload unanswered */
};

typedef int	(*exec_action)(struct exec *, const struct exec_input *,
		    char **);

static void	exec_pump(struct exec *);

/* One of the sandbox's ports, or NULL when there are none any more. */
static struct agent_conn *
exec_port(struct exec *x, int i)
{
	if (x->sb == NULL || i < 0)
		return (NULL);
	return (sandbox_port(x->sb, i));
}

/* A request about the exec on the control port; NULL cb: no answer. */
static void
exec_control(struct exec *x, const char *op, const char *body,
    agent_response_cb cb, void *arg)
{
	struct agent_conn	*c;
	char			 path[WIRE_EXEC_PATH_MAX];
	static const char	 closed[] = "the port is closed";

	if ((c = exec_port(x, x->ports.control)) == NULL) {
		/* As agent_request answers on a dead port. */
		if (cb != NULL)
			cb(AGENT_CLOSED, closed, sizeof closed - 1, arg);
		return;
	}
	wire_exec_path(path, sizeof path, x->id, op);
	agent_request(c, "POST", path, body, body != NULL ? strlen(body) : 0,
	    cb, NULL, arg);
}

static void
exec_kill(struct exec *x)
{
	char	body[16];

	if (x->id < 0)
		return;
	snprintf(body, sizeof body, "%d", SIGKILL);
	exec_control(x, WIRE_OP_SIGNAL, body, NULL, NULL);
}

static void
exec_pause(struct exec *x, int pause)
{
	struct agent_conn	*c;

	if ((c = exec_port(x, x->ports.stream)) != NULL)
		agent_conn_pause(c, pause);
}

/* The one place the state changes: only ever forward. */
static void
exec_set_state(struct exec *x, enum exec_state s)
{
	assert(s > x->state && s < EXEC_NSTATES);
	x->state = s;
	if (s == EXEC_DONE)
		ev_timer_stop(x->loop, &x->timer);
	assert(x->state != EXEC_DONE || !ev_is_active(&x->timer));
	assert(x->id >= 0 || x->state == EXEC_STARTING ||
	    x->state == EXEC_DONE);
}

static void
exec_maybe_free(struct exec *x)
{
	if (x->depth > 0 || !x->released || x->state != EXEC_DONE ||
	    x->in_flight || x->in_state == EXEC_IN_CLOSING)
		return;
	ev_timer_stop(x->loop, &x->timer);
	buf_free(&x->request);
	buf_free(&x->in);
	free(x->exit.error);
	free(x->error);
	free(x);
}

/*
 * The stream is over: the result made, stdin closed (what was queued will
 * not go), the user told.
 */
static void
exec_finish(struct exec *x, enum exec_end end, const char *error)
{
	struct exec_result	*r = &x->result;
	int			 dropped;

	r->exit_seen = x->state == EXEC_EXITED;
	exec_set_state(x, EXEC_DONE);
	if (error != NULL)
		x->error = xstrdup(error);
	r->end = end;
	r->status = x->exit.status;
	r->signal = x->exit.signal;
	r->exit_error = x->exit.error;
	r->timed_out = x->timed_out;
	r->error = x->error;
	if (x->in_state == EXEC_IN_OPEN || x->in_state == EXEC_IN_DRAINING)
		x->in_state = EXEC_IN_CLOSED;
	dropped = x->in.len > 0 && !x->in_flight;
	buf_free(&x->in);
	if (x->released)
		return;
	if (x->cbs.done != NULL)
		x->cbs.done(x, r, x->cbs.arg);
	if (dropped && !x->released && x->cbs.stdin_news != NULL)
		x->cbs.stdin_news(x, EXEC_STDIN_REFUSED, x->cbs.arg);
}

/* The start event: its id, then what was waiting for it. */
static int
exec_act_start(struct exec *x, const struct exec_input *in, char **cause)
{
	json_t		*j;
	long long	 id;

	j = json_read(in->data, in->len, 0);
	if (json_path_int(j, "id", &id) == -1 || id < 0 || id > INT_MAX) {
		json_decref(j);
		xasprintf(cause, "a bad start event");
		return (-1);
	}
	json_decref(j);
	x->id = id;
	exec_set_state(x, EXEC_RUNNING);
	if (x->detached) {
		/* Its client went away before: it goes too. */
		exec_kill(x);
		return (0);
	}
	if (x->timed_out)
		exec_kill(x);
	/* Without stdin, the command reads its end at once. */
	if (x->kind == EXEC_COMMAND && !x->feed_stdin &&
	    x->in_state == EXEC_IN_OPEN) {
		x->in_state = EXEC_IN_CLOSED;
		exec_control(x, WIRE_OP_CLOSE, NULL, NULL, NULL);
	}
	if (x->cbs.started != NULL)
		x->cbs.started(x, x->cbs.arg);
	exec_pump(x);
	return (0);
}

/* Is data base64, as the users will decode it? */
static int
exec_base64_ok(const char *data, size_t len)
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

/* Output for the user, who may hold the stream (the guest then waits). */
static int
exec_act_output(struct exec *x, const struct exec_input *in, char **cause)
{
	enum exec_stream	s;

	if (!exec_base64_ok(in->data, in->len)) {
		xasprintf(cause, "output that is not base64");
		return (-1);
	}
	if (x->detached || x->cbs.output == NULL)
		return (0);	/* read, and dropped */
	s = strcmp(in->event, QSUP_EVENT_STDERR) == 0 ? EXEC_STDERR :
	    EXEC_STDOUT;
	if (x->cbs.output(x, s, in->data, in->len, x->cbs.arg) != 0)
		exec_pause(x, 1);
	return (0);
}

/* The exit event: checked, and kept until the stream ends well. */
static int
exec_act_exit(struct exec *x, const struct exec_input *in, char **cause)
{
	if (agent_parse_exit(in->data, in->len, &x->exit, cause) == -1)
		return (-1);
	exec_set_state(x, EXEC_EXITED);
	return (0);
}

static int
exec_act_unknown(struct exec *x, const struct exec_input *in, char **cause)
{
	struct buf	name = { 0 };

	(void)x;
	agent_escape(&name, in->event, strlen(in->event), 32);
	xasprintf(cause, "an unknown event \"%s\"", name.data);
	buf_free(&name);
	return (-1);
}

static int
exec_act_restart(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)x;
	(void)in;
	xasprintf(cause, "a bad start event");
	return (-1);
}

static int
exec_act_early(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)x;
	(void)in;
	xasprintf(cause, "an event before the start event");
	return (-1);
}

static int
exec_act_late(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)x;
	(void)in;
	xasprintf(cause, "an event after the exit event");
	return (-1);
}

/* Stream events after its end (only after exec_gone, on a live port). */
static int
exec_act_over(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)x;
	(void)in;
	xasprintf(cause, "an event after the stream's end");
	return (-1);
}

static int
exec_act_none(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)x;
	(void)in;
	(void)cause;
	return (0);
}

/* The stream ended well: only after its exit event is that an exit. */
static int
exec_act_end(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)in;
	(void)cause;
	if (x->state == EXEC_EXITED)
		exec_finish(x, EXEC_END_EXITED, NULL);
	else
		exec_finish(x, EXEC_END_NO_EXIT, "the agent ended the stream "
		    "without an exit event");
	return (0);
}

static int
exec_act_fail(struct exec *x, const struct exec_input *in, char **cause)
{
	struct buf	b = { 0 };

	(void)cause;
	if (in->status == AGENT_CLOSED || in->status == AGENT_BROKEN) {
		buf_add(&b, in->data, in->len);
		exec_finish(x, in->status == AGENT_CLOSED ? EXEC_END_CLOSED :
		    EXEC_END_BROKEN, b.data);
	} else {
		buf_printf(&b, "the agent refused the command (%d): ",
		    in->status);
		agent_escape(&b, in->data, in->len, AGENT_ERROR_MAX);
		exec_finish(x, EXEC_END_REFUSED, b.data);
	}
	buf_free(&b);
	return (0);
}

static int
exec_act_gone(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)cause;
	exec_finish(x, EXEC_END_GONE, in->why);
	return (0);
}

/* Killed; before its start, as it starts. The user hears at once. */
static int
exec_act_timeout(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)in;
	(void)cause;
	x->timed_out = 1;
	exec_kill(x);
	if (!x->released && x->cbs.timed_out != NULL)
		x->cbs.timed_out(x, x->cbs.arg);
	return (0);
}

/*
 * Its client went away: killed (before its start, as it starts), and
 * what it prints meanwhile read and dropped, to its end.
 */
static int
exec_act_detach(struct exec *x, const struct exec_input *in, char **cause)
{
	(void)in;
	(void)cause;
	x->detached = 1;
	exec_kill(x);
	exec_pause(x, 0);
	return (0);
}

static int
exec_act_detach_done(struct exec *x, const struct exec_input *in,
    char **cause)
{
	(void)in;
	(void)cause;
	x->detached = 1;
	return (0);
}

/*
 * What each event does in each state. A stream event out of order is a
 * protocol error named after the order it broke; once the stream is over
 * only the user's events come, and change nothing.
 */
static const exec_action exec_actions[EXEC_NSTATES][EXEC_NEVENTS] = {
	[EXEC_STARTING] = {
		[EXEC_EV_START] = exec_act_start,
		[EXEC_EV_OUTPUT] = exec_act_early,
		[EXEC_EV_EXIT] = exec_act_early,
		[EXEC_EV_UNKNOWN] = exec_act_early,
		[EXEC_EV_END] = exec_act_end,
		[EXEC_EV_FAIL] = exec_act_fail,
		[EXEC_EV_GONE] = exec_act_gone,
		[EXEC_EV_TIMEOUT] = exec_act_timeout,
		[EXEC_EV_DETACH] = exec_act_detach,
	},
	[EXEC_RUNNING] = {
		[EXEC_EV_START] = exec_act_restart,
		[EXEC_EV_OUTPUT] = exec_act_output,
		[EXEC_EV_EXIT] = exec_act_exit,
		[EXEC_EV_UNKNOWN] = exec_act_unknown,
		[EXEC_EV_END] = exec_act_end,
		[EXEC_EV_FAIL] = exec_act_fail,
		[EXEC_EV_GONE] = exec_act_gone,
		[EXEC_EV_TIMEOUT] = exec_act_timeout,
		[EXEC_EV_DETACH] = exec_act_detach,
	},
	[EXEC_EXITED] = {
		[EXEC_EV_START] = exec_act_late,
		[EXEC_EV_OUTPUT] = exec_act_late,
		[EXEC_EV_EXIT] = exec_act_late,
		[EXEC_EV_UNKNOWN] = exec_act_late,
		[EXEC_EV_END] = exec_act_end,
		[EXEC_EV_FAIL] = exec_act_fail,
		[EXEC_EV_GONE] = exec_act_gone,
		[EXEC_EV_TIMEOUT] = exec_act_timeout,
		[EXEC_EV_DETACH] = exec_act_detach,
	},
	[EXEC_DONE] = {
		[EXEC_EV_START] = exec_act_over,
		[EXEC_EV_OUTPUT] = exec_act_over,
		[EXEC_EV_EXIT] = exec_act_over,
		[EXEC_EV_UNKNOWN] = exec_act_over,
		[EXEC_EV_END] = exec_act_none,
		[EXEC_EV_FAIL] = exec_act_none,
		[EXEC_EV_GONE] = exec_act_none,
		[EXEC_EV_TIMEOUT] = exec_act_none,
		[EXEC_EV_DETACH] = exec_act_detach_done,
	},
};

/* An event: its action, and the exec freed after, if that was its last. */
static int
exec_fire(struct exec *x, enum exec_event ev, const struct exec_input *in,
    char **cause)
{
	int	rc;

	assert(exec_actions[x->state][ev] != NULL);
	x->depth++;
	rc = exec_actions[x->state][ev](x, in, cause);
	x->depth--;
	exec_maybe_free(x);
	return (rc);
}

/* One event of the stream; -1 if it breaks the protocol. */
static int
exec_event_cb(const char *event, const char *data, size_t len, void *arg,
    char **cause)
{
	struct exec		*x = arg;
	struct exec_input	 in;
	enum exec_event		 ev;

	memset(&in, 0, sizeof in);
	in.event = event;
	in.data = data;
	in.len = len;
	if (strcmp(event, QSUP_EVENT_START) == 0)
		ev = EXEC_EV_START;
	else if (strcmp(event, QSUP_EVENT_STDOUT) == 0 ||
	    strcmp(event, QSUP_EVENT_STDERR) == 0)
		ev = EXEC_EV_OUTPUT;
	else if (strcmp(event, QSUP_EVENT_EXIT) == 0)
		ev = EXEC_EV_EXIT;
	else
		ev = EXEC_EV_UNKNOWN;
	return (exec_fire(x, ev, &in, cause));
}

/* The /exec response ended. */
static void
exec_done_cb(int status, const char *body, size_t len, void *arg)
{
	struct exec_input	 in;

	memset(&in, 0, sizeof in);
	in.data = body;
	in.len = len;
	in.status = status;
	exec_fire(arg, status == 200 ? EXEC_EV_END : EXEC_EV_FAIL, &in, NULL);
}

static void
exec_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct exec_input	 in;

	(void)loop;
	(void)revents;
	memset(&in, 0, sizeof in);
	exec_fire(w->data, EXEC_EV_TIMEOUT, &in, NULL);
}

/* stdin: the agent took a piece (204), or will take no more. */
static void
exec_upload_cb(int status, const char *body, size_t len, void *arg)
{
	struct exec		*x = arg;
	enum exec_stdin_news	 news = EXEC_STDIN_SENT;

	(void)body;
	(void)len;
	x->in_flight = 0;
	x->depth++;
	if (status == 204)
		exec_pump(x);
	else {
		/* The command is gone or closed its stdin: stop sending. */
		news = EXEC_STDIN_REFUSED;
		buf_free(&x->in);
		if (x->in_state != EXEC_IN_CLOSING)
			x->in_state = EXEC_IN_CLOSED;
	}
	if (!x->released && x->cbs.stdin_news != NULL)
		x->cbs.stdin_news(x, news, x->cbs.arg);
	x->depth--;
	exec_maybe_free(x);
}

static void
exec_close_cb(int status, const char *body, size_t len, void *arg)
{
	struct exec	*x = arg;

	(void)status;
	(void)body;
	(void)len;
	x->in_state = EXEC_IN_CLOSED;
	x->depth++;
	if (!x->released && x->cbs.stdin_news != NULL)
		x->cbs.stdin_news(x, EXEC_STDIN_CLOSED, x->cbs.arg);
	x->depth--;
	exec_maybe_free(x);
}

/*
 * The next piece of stdin to the agent, once the last was taken and the
 * command has started; when closing, /close after the last piece.
 */
static void
exec_pump(struct exec *x)
{
	struct agent_conn	*c;
	struct buf		 piece = { 0 };
	char			 path[WIRE_EXEC_PATH_MAX];
	size_t			 n;

	if (x->in_flight ||
	    (x->state != EXEC_RUNNING && x->state != EXEC_EXITED))
		return;
	if (x->in.len > 0 && (x->in_state == EXEC_IN_OPEN ||
	    x->in_state == EXEC_IN_DRAINING)) {
		if ((c = exec_port(x, x->ports.in)) == NULL)
			return;
		n = x->in.len < EXEC_STDIN_PIECE ? x->in.len :
		    EXEC_STDIN_PIECE;
		/* Off the queue first: a dead port answers at once. */
		buf_add(&piece, x->in.data, n);
		buf_consume(&x->in, n);
		wire_exec_path(path, sizeof path, x->id, WIRE_OP_STDIN);
		x->in_flight = 1;
		agent_request(c, "POST", path, piece.data, n, exec_upload_cb,
		    NULL, x);
		buf_free(&piece);
		return;
	}
	if (x->in_state == EXEC_IN_DRAINING && x->in.len == 0) {
		x->in_state = EXEC_IN_CLOSING;
		exec_control(x, WIRE_OP_CLOSE, NULL, exec_close_cb, x);
	}
}

/* The agent's /exec request for spec. */
void
exec_request(const struct exec_spec *spec, struct buf *b)
{
	char *const	*a;
	size_t		 i;

	if (spec->kind != EXEC_COMMAND) {
		buf_puts(b, spec->kind == EXEC_READ ? "{\"read\":" :
		    "{\"write\":");
		buf_json_string(b, spec->path);
		if (spec->kind == EXEC_WRITE)
			buf_printf(b, ",\"mode\":%u", spec->mode);
		buf_puts(b, "}");
		return;
	}
	buf_puts(b, "{\"argv\":[");
	for (a = spec->argv; *a != NULL; a++) {
		buf_puts(b, a != spec->argv ? "," : "");
		buf_json_string(b, *a);
	}
	buf_puts(b, "],\"env\":[");
	for (i = 0; i < spec->nenv; i++) {
		buf_puts(b, i > 0 ? "," : "");
		buf_json_string(b, spec->env[i]);
	}
	buf_puts(b, "]");
	if (spec->entrypoint)
		buf_puts(b, ",\"entrypoint\":true");
	if (spec->tty) {
		buf_puts(b, ",\"tty\":true");
		if (spec->rows != 0)
			buf_printf(b, ",\"rows\":%u,\"cols\":%u", spec->rows,
			    spec->cols);
	}
	if (spec->cwd != NULL) {
		buf_puts(b, ",\"cwd\":");
		buf_json_string(b, spec->cwd);
	}
	buf_puts(b, "}");
}

/* An exec of spec in sb, on ports; nothing is sent before exec_start. */
struct exec *
exec_new(struct ev_loop *loop, struct sandbox *sb,
    const struct exec_spec *spec, const struct exec_ports *ports,
    const struct exec_cbs *cbs)
{
	struct exec	*x;

	x = xcalloc(1, sizeof *x);
	x->loop = loop;
	x->sb = sb;
	x->ports = *ports;
	x->cbs = *cbs;
	x->state = EXEC_STARTING;
	x->kind = spec->kind;
	x->tty = spec->tty;
	x->feed_stdin = spec->feed_stdin;
	x->timeout = spec->timeout;
	x->id = -1;
	x->in_state = ports->in >= 0 || (spec->kind == EXEC_COMMAND &&
	    !spec->feed_stdin) ? EXEC_IN_OPEN : EXEC_IN_CLOSED;
	exec_request(spec, &x->request);
	ev_init(&x->timer, exec_timer_cb);
	x->timer.data = x;
	return (x);
}

/*
 * Send the request. Its end may come before this returns (a port that is
 * already closed): the user must be ready for its callbacks.
 */
void
exec_start(struct exec *x)
{
	struct agent_conn	*c;
	static const char	 closed[] = "the port is closed";

	x->depth++;
	exec_set_timeout(x, x->timeout);
	if ((c = exec_port(x, x->ports.stream)) == NULL)
		exec_done_cb(AGENT_CLOSED, closed, sizeof closed - 1, x);
	else
		agent_request(c, "POST", WIRE_EXEC, x->request.data,
		    x->request.len, exec_done_cb, exec_event_cb, x);
	buf_free(&x->request);
	x->depth--;
	exec_maybe_free(x);
}

enum exec_state
exec_state(const struct exec *x)
{
	return (x->state);
}

/* The agent's id of the exec, -1 before its start. */
long long
exec_id(const struct exec *x)
{
	return (x->id);
}

int
exec_tty(const struct exec *x)
{
	return (x->tty);
}

/* While it runs: -1 before its start and after its end, nothing sent. */
int
exec_signal(struct exec *x, int sig, agent_response_cb cb, void *arg)
{
	char	body[16];

	if (x->state != EXEC_RUNNING && x->state != EXEC_EXITED)
		return (-1);
	snprintf(body, sizeof body, "%d", sig);
	exec_control(x, WIRE_OP_SIGNAL, body, cb, arg);
	return (0);
}

int
exec_resize(struct exec *x, unsigned rows, unsigned cols,
    agent_response_cb cb, void *arg)
{
	char	body[32];

	if (x->state != EXEC_RUNNING && x->state != EXEC_EXITED)
		return (-1);
	snprintf(body, sizeof body, "%u %u", rows, cols);
	exec_control(x, WIRE_OP_RESIZE, body, cb, arg);
	return (0);
}

/* From now, seconds (0: none) until it is killed. */
void
exec_set_timeout(struct exec *x, double seconds)
{
	ev_timer_stop(x->loop, &x->timer);
	x->timeout = seconds;
	if (seconds > 0 && x->state != EXEC_DONE) {
		ev_timer_set(&x->timer, seconds, 0);
		ev_timer_start(x->loop, &x->timer);
	}
}

/*
 * Its sandbox paused (on) or resumed: the timeout's clock stopped, then
 * started again with what it had left, so a pause costs it no time.
 */
void
exec_freeze(struct exec *x, int on)
{
	if (on && ev_is_active(&x->timer)) {
		x->frozen_left = ev_timer_remaining(x->loop, &x->timer);
		ev_timer_stop(x->loop, &x->timer);
	} else if (!on && x->frozen_left > 0) {
		if (x->state != EXEC_DONE) {
			ev_timer_set(&x->timer, x->frozen_left, 0);
			ev_timer_start(x->loop, &x->timer);
		}
		x->frozen_left = 0;
	}
}

/* The user took the output it held: let the guest's flow again. */
void
exec_resume(struct exec *x)
{
	if (x->state != EXEC_DONE)
		exec_pause(x, 0);
}

/* Bytes for its stdin, sent as the agent takes them; -1 once closed. */
int
exec_stdin_write(struct exec *x, const void *p, size_t len)
{
	if (x->in_state != EXEC_IN_OPEN || x->ports.in < 0)
		return (-1);
	buf_add(&x->in, p, len);
	x->depth++;
	exec_pump(x);
	x->depth--;
	exec_maybe_free(x);
	return (0);
}

/* Close its stdin once what is queued has gone. */
void
exec_stdin_close(struct exec *x)
{
	if (x->in_state != EXEC_IN_OPEN)
		return;
	x->in_state = EXEC_IN_DRAINING;
	x->depth++;
	exec_pump(x);
	x->depth--;
	exec_maybe_free(x);
}

/* Forget what is queued and not sent (its writer went away). */
void
exec_stdin_drop(struct exec *x)
{
	buf_free(&x->in);
}

int
exec_stdin_open(const struct exec *x)
{
	return (x->in_state == EXEC_IN_OPEN);
}

size_t
exec_stdin_queued(const struct exec *x)
{
	return (x->in.len);
}

/* Is an upload unanswered (its port still in use)? */
int
exec_stdin_busy(const struct exec *x)
{
	return (x->in_flight);
}

void
exec_detach(struct exec *x)
{
	exec_fire(x, EXEC_EV_DETACH, NULL, NULL);
}

/*
 * The sandbox's ports are going (sandbox_free follows): what was asked of
 * the agent will never be answered, and the stream ends now, with why.
 */
void
exec_gone(struct exec *x, const char *why)
{
	struct exec_input	in;

	memset(&in, 0, sizeof in);
	in.why = why;
	x->in_flight = 0;
	if (x->in_state == EXEC_IN_CLOSING)
		x->in_state = EXEC_IN_CLOSED;
	x->depth++;
	exec_fire(x, EXEC_EV_GONE, &in, NULL);
	x->sb = NULL;
	x->depth--;
	exec_maybe_free(x);
}

/*
 * Its user lets it go: no more callbacks. Not over yet, it is detached
 * and freed at its end.
 */
void
exec_free(struct exec *x)
{
	if (x == NULL)
		return;
	x->depth++;
	if (!x->detached && x->state != EXEC_DONE)
		exec_fire(x, EXEC_EV_DETACH, NULL, NULL);
	x->released = 1;
	x->depth--;
	exec_maybe_free(x);
}
