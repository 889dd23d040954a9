/*
 * A QEMU started by hand, registered with the server (the seed's
 * attach_vm): {"attach": {"qmp": PATH, "qga": PATH}}. The server talks to
 * its QMP monitor (status, stop, cont, quit) and, when given, to the
 * qemu-guest-agent's socket (guest-exec), both JSON lines on unix sockets
 * read on the loop. It owns nothing else of it: no run directory, no
 * process to reap; a delete detaches (QEMU runs on) unless ?quit=true.
 *
 * Every byte from either socket is untrusted (the monitor of a QEMU whose
 * guest may own it, an agent inside the guest): lines are bounded, every
 * request has a deadline, a reply is matched to the oldest request (both
 * answer in order), and a line that is not a reply is dropped. The first
 * line of a monitor must be QMP's greeting, within a short deadline, or
 * the socket is refused as "not a QMP monitor". qga's socket may hold
 * another client's leftovers: guest-sync-delimited (a 0xff byte, then the
 * command) makes everything up to the agent's own 0xff dropped.
 *
 * An exec is guest-exec with capture-output, then guest-exec-status
 * polled on a timer (5 ms, doubled up to 0.1 s) until it says "exited":
 * qemu-ga hands the output over only then, so it comes as one piece
 * before the exit event, on the same event stream as the agent's execs.
 * qemu-ga has no stdin, terminal, working directory or kill: those
 * fields are refused.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>
#include <mbedtls/base64.h>

#include "serve_int.h"

#define ATTACH_GREETING_MAX	3.0	/* s: QMP's greeting */
#define ATTACH_REPLY_MAX	10.0	/* s: any reply */
#define ATTACH_SYNC_MAX		5.0	/* s: qga's sync */
#define ATTACH_POLL_FIRST	0.005	/* s: the first wait for
					   guest-exec-status, doubled ... */
#define ATTACH_POLL		0.1	/* ... up to this */

typedef void	 attach_reply_cb(json_t *, const char *, void *);

struct attach_req {
	attach_reply_cb			*cb;
	void				*arg;
	double				 deadline;
	TAILQ_ENTRY(attach_req)		 entry;
};
TAILQ_HEAD(attach_reqs, attach_req);

/* One socket of JSON lines: QMP's or qga's. */
struct attach_line {
	struct ev_loop		*loop;
	const char		*what;		/* "QMP", "qemu-guest-agent" */
	int			 fd;
	ev_io			 io;
	ev_timer		 timer;
	struct buf		 in;
	int			 greeting;	/* the next line is QMP's */
	int			 syncing;	/* drop up to qga's 0xff */
	struct attach_reqs	 reqs;
	void			(*closed)(struct attach_line *, const char *);
	void			*arg;
	int			 in_cb;		/* in its own callback: */
	int			 dead;		/* ... freed on the way out */
};

struct attach_exec {
	struct serve_attach	*a;
	TAILQ_ENTRY(attach_exec) entry;
	unsigned		 id;
	struct httpd_conn	*conn;		/* NULL once its client went */
	json_t			*cmd;		/* guest-exec's arguments */
	long long		 pid;		/* the guest's, or 0 */
	int			 busy;		/* a request under way */
	double			 wait;		/* before the next poll */
	ev_timer		 poll;
};
TAILQ_HEAD(attach_execs, attach_exec);

struct serve_attach {
	struct serve_sb		*s;
	char			*qmp_path;
	char			*qga_path;	/* or NULL */
	struct attach_line	*qmp;
	struct attach_line	*qga;		/* connected, or NULL */
	int			 qga_ready;	/* synced */
	struct attach_execs	 execs;
	unsigned		 next_id;
	/* a pause or resume under way */
	void			(*move_cb)(struct sandbox *, const char *,
				    void *);
	void			*move_arg;
};

static void	attach_line_free(struct attach_line *);
static int	attach_line_leave(struct attach_line *);
static void	attach_exec_step(struct attach_exec *);
static void	attach_exec_end(struct attach_exec *, const char *, int,
		    int);

/* The earliest deadline of line's requests, or none. */
static void
attach_line_arm(struct attach_line *l)
{
	struct attach_req	*r;
	double			 first = 0;

	ev_timer_stop(l->loop, &l->timer);
	TAILQ_FOREACH(r, &l->reqs, entry) {
		if (first == 0 || r->deadline < first)
			first = r->deadline;
	}
	if (first == 0)
		return;
	ev_timer_set(&l->timer, first > util_now() ? first - util_now() :
	    0.001, 0);
	ev_timer_start(l->loop, &l->timer);
}

/*
 * The line is broken (closed, silent, too long, not QMP): every request
 * told why, reading stopped, its owner told last (it may free it).
 */
static void
attach_line_fail(struct attach_line *l, const char *why)
{
	struct attach_req	*r;

	ev_io_stop(l->loop, &l->io);
	ev_timer_stop(l->loop, &l->timer);
	while ((r = TAILQ_FIRST(&l->reqs)) != NULL) {
		TAILQ_REMOVE(&l->reqs, r, entry);
		r->cb(NULL, why, r->arg);
		free(r);
	}
	if (!l->dead && l->closed != NULL)
		l->closed(l, why);
}

static void
attach_line_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct attach_line	*l = w->data;
	char			*why;

	(void)loop;
	(void)revents;
	l->in_cb++;
	if (l->greeting)
		xasprintf(&why, "not a QMP monitor: no greeting within %g s "
		    "(or another client holds QEMU's monitor)",
		    ATTACH_GREETING_MAX);
	else if (l->syncing)
		xasprintf(&why, "%s: no answer to guest-sync-delimited "
		    "within %g s (is qemu-ga running in the guest?)", l->what,
		    ATTACH_SYNC_MAX);
	else
		xasprintf(&why, "%s: no answer in time", l->what);
	attach_line_fail(l, why);
	free(why);
	(void)attach_line_leave(l);
}

/* A whole line: the oldest request's answer, unless it is not one. */
static int
attach_line_one(struct attach_line *l, const char *line, size_t len)
{
	struct attach_req	*r;
	json_t			*ret;
	char			*error;
	int			 kind;

	kind = attach_parse_reply(line, len, &ret, &error);
	if (l->greeting) {
		if (kind != 2) {
			json_decref(ret);
			free(error);
			attach_line_fail(l, "not a QMP monitor: its first "
			    "line is not QMP's greeting");
			return (-1);
		}
		l->greeting = 0;
		/* The greeting's waiter is the first request. */
		kind = 0;
	}
	if (kind != 0 || (r = TAILQ_FIRST(&l->reqs)) == NULL) {
		json_decref(ret);
		free(error);
		return (0);
	}
	TAILQ_REMOVE(&l->reqs, r, entry);
	attach_line_arm(l);
	r->cb(ret, error, r->arg);
	free(r);
	json_decref(ret);
	free(error);
	return (0);
}

static void
attach_line_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct attach_line	*l = w->data;
	char			 chunk[16384], *nl, *ff;
	ssize_t			 n;
	size_t			 used;

	(void)loop;
	(void)revents;
	n = read(l->fd, chunk, sizeof chunk);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	l->in_cb++;
	if (n <= 0) {
		attach_line_fail(l, l->greeting ? "not a QMP monitor: it "
		    "closed the connection without a greeting" : l->what[0] ==
		    'Q' ? "QMP: QEMU closed its monitor" : "qemu-guest-agent: "
		    "the socket was closed");
		(void)attach_line_leave(l);
		return;
	}
	buf_add(&l->in, chunk, n);
	if (l->syncing) {
		if ((ff = memchr(l->in.data, 0xff, l->in.len)) == NULL) {
			buf_consume(&l->in, l->in.len);
			(void)attach_line_leave(l);
			return;
		}
		buf_consume(&l->in, ff - l->in.data + 1);
		l->syncing = 0;
	}
	while (!l->dead && l->in.len > 0 &&
	    (nl = memchr(l->in.data, '\n', l->in.len)) != NULL) {
		used = nl - l->in.data + 1;
		if (attach_line_one(l, l->in.data, used - 1) == -1)
			break;
		buf_consume(&l->in, used);
	}
	if (!l->dead && l->in.len > ATTACH_LINE_MAX)
		attach_line_fail(l, l->greeting ? "not a QMP monitor: a long "
		    "first line" : "a reply too long");
	(void)attach_line_leave(l);
}

/* A connection to the unix socket at path: NULL with *cause. */
static struct attach_line *
attach_line_open(struct ev_loop *loop, const char *what, const char *path,
    char **cause)
{
	struct sockaddr_un	 sun;
	struct attach_line	*l;
	int			 fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "%s: too long for a unix socket's path",
		    path);
		return (NULL);
	}
	memcpy(sun.sun_path, path, strlen(path));
	if ((fd = socket(AF_UNIX, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC,
	    0)) == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		return (NULL);
	}
	/* A unix socket connects at once, or not at all. */
	if (connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		close(fd);
		return (NULL);
	}
	l = xcalloc(1, sizeof *l);
	l->loop = loop;
	l->what = what;
	l->fd = fd;
	TAILQ_INIT(&l->reqs);
	ev_io_init(&l->io, attach_line_io_cb, fd, EV_READ);
	l->io.data = l;
	ev_io_start(loop, &l->io);
	ev_timer_init(&l->timer, attach_line_timer_cb, 0, 0);
	l->timer.data = l;
	return (l);
}

/*
 * Closed, its requests forgotten untold; the memory goes now, or, when
 * this is called from its own callback, once that returns.
 */
static void
attach_line_free(struct attach_line *l)
{
	struct attach_req	*r;

	if (l == NULL || l->dead)
		return;
	ev_io_stop(l->loop, &l->io);
	ev_timer_stop(l->loop, &l->timer);
	while ((r = TAILQ_FIRST(&l->reqs)) != NULL) {
		TAILQ_REMOVE(&l->reqs, r, entry);
		free(r);
	}
	close(l->fd);
	l->fd = -1;
	l->dead = 1;
	if (l->in_cb > 0)
		return;
	buf_free(&l->in);
	free(l);
}

/* Out of its callback: freed if that freed it. 1 if so. */
static int
attach_line_leave(struct attach_line *l)
{
	if (--l->in_cb > 0 || !l->dead)
		return (l->dead);
	buf_free(&l->in);
	free(l);
	return (1);
}

/* Wait for an answer to what was sent (or the greeting), for max s. */
static void
attach_line_expect(struct attach_line *l, double max, attach_reply_cb *cb,
    void *arg)
{
	struct attach_req	*r;

	r = xcalloc(1, sizeof *r);
	r->cb = cb;
	r->arg = arg;
	r->deadline = util_now() + max;
	TAILQ_INSERT_TAIL(&l->reqs, r, entry);
	attach_line_arm(l);
}

/*
 * Send {"execute": name, "arguments": args} (args stolen, may be NULL),
 * with a prefix (qga's 0xff) before it: cb is told its return or error.
 * -1 with *cause when it cannot be sent (the line is failed then, later).
 */
static int
attach_line_send(struct attach_line *l, const char *prefix, const char *name,
    json_t *args, double max, attach_reply_cb *cb, void *arg, char **cause)
{
	json_t	*j;
	char	*text, *line;
	ssize_t	 w;
	size_t	 len;

	j = json_object();
	json_object_set_new(j, "execute", json_string(name));
	if (args != NULL)
		json_object_set_new(j, "arguments", args);
	text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	xasprintf(&line, "%s%s\n", prefix, text);
	free(text);
	len = strlen(line);
	if (!ev_is_active(&l->io)) {
		xasprintf(cause, "%s: the connection is closed", l->what);
		free(line);
		return (-1);
	}
	/* A small line into a reader: all at once, or it is stuck. */
	w = send(l->fd, line, len, MSG_NOSIGNAL|MSG_DONTWAIT);
	free(line);
	if (w != (ssize_t)len) {
		xasprintf(cause, "%s: send: %s", l->what, w == -1 ?
		    strerror(errno) : "short write");
		return (-1);
	}
	attach_line_expect(l, max, cb, arg);
	return (0);
}

/* -------------------------------------------------------------------- */

static struct serve_sb *
attach_sb(struct serve_attach *a)
{
	return (a->s);
}

/* Answer the create's waiters with status and error, then drop it. */
static void
attach_refuse(struct serve_attach *a, int status, const char *msg)
{
	struct serve_sb		*s = attach_sb(a);
	struct serve_waiter	*x;

	while ((x = TAILQ_FIRST(&s->create_waiters)) != NULL) {
		TAILQ_REMOVE(&s->create_waiters, x, entry);
		if (x->conn != NULL) {
			httpd_set_close_cb(x->conn, NULL, NULL);
			serve_error_now(x->conn, status, msg, NULL);
		}
		free(x);
	}
	s->deleting = 1;	/* no record kept */
	free(s->reason);
	s->reason = xstrdup(msg);
	s->srv->sb_stop(s, msg);
}

/* QMP went away (QEMU quit or died): the sandbox is dead. */
static void
attach_qmp_closed(struct attach_line *l, const char *why)
{
	struct serve_attach	*a = l->arg;
	struct serve_sb		*s = attach_sb(a);

	if (s->state == SERVE_BOOTING) {
		attach_refuse(a, 400, why);
		return;
	}
	if (s->reason == NULL)
		s->reason = xstrdup(why);
	s->srv->sb_stop(s, why);
}

static void
attach_status_cb(json_t *ret, const char *error, void *arg)
{
	struct serve_attach	*a = arg;
	struct serve_sb		*s = attach_sb(a);
	struct buf		 b = { 0 };
	const char		*st;
	char			*msg;

	if (ret == NULL) {
		if (error != NULL && strncmp(error, "not a QMP", 9) == 0)
			return;		/* said by the line's failure */
		xasprintf(&msg, "not a QMP monitor: query-status: %s",
		    error != NULL ? error : "no answer");
		attach_refuse(a, 400, msg);
		free(msg);
		return;
	}
	st = json_string_value(json_object_get(ret, "status"));
	if (st == NULL) {
		attach_refuse(a, 400, "not a QMP monitor: query-status "
		    "without a status");
		return;
	}
	if (strcmp(st, "running") == 0)
		s->state = SERVE_READY;
	else if (strcmp(st, "paused") == 0 || strcmp(st, "prelaunch") == 0 ||
	    strcmp(st, "suspended") == 0)
		s->state = SERVE_PAUSED;
	else {
		xasprintf(&msg, "QEMU is %.64s: neither running nor paused",
		    st);
		attach_refuse(a, 409, msg);
		free(msg);
		return;
	}
	free(s->start);
	s->start = xstrdup("attached");
	s->boot_s = util_now() - s->t_created;
	s->t_active = util_now();
	log_info("sandbox %s: attached to %s (%s)", s->name, a->qmp_path, st);
	s->srv->sb_json(s, &b);
	serve_answer(&s->create_waiters, 201, b.data);
	buf_free(&b);
	serve_sb_event(s);
}

static void
attach_caps_cb(json_t *ret, const char *error, void *arg)
{
	struct serve_attach	*a = arg;
	char			*cause = NULL, *msg;

	(void)ret;
	if (error != NULL) {
		if (strncmp(error, "not a QMP", 9) == 0)
			return;
		xasprintf(&msg, "not a QMP monitor: qmp_capabilities: %s",
		    error);
		attach_refuse(a, 400, msg);
		free(msg);
		return;
	}
	if (attach_line_send(a->qmp, "", "query-status", NULL,
	    ATTACH_REPLY_MAX, attach_status_cb, a, &cause) == -1) {
		attach_refuse(a, 400, cause);
		free(cause);
	}
}

static void
attach_greeting_cb(json_t *ret, const char *error, void *arg)
{
	struct serve_attach	*a = arg;
	char			*cause = NULL;

	(void)ret;
	if (error != NULL)
		return;		/* the line's failure says it */
	if (attach_line_send(a->qmp, "", "qmp_capabilities", NULL,
	    ATTACH_REPLY_MAX, attach_caps_cb, a, &cause) == -1) {
		attach_refuse(a, 400, cause);
		free(cause);
	}
}

/* A path member of "attach": absolute. NULL with err. */
static const char *
attach_path(json_t *o, const char *key, int required,
    struct serve_error *err)
{
	json_t	*v;
	char	*field;

	xasprintf(&field, "attach.%s", key);
	v = json_object_get(o, key);
	if (v == NULL && !required) {
		free(field);
		return ("");
	}
	if (v == NULL || !json_is_string(v) ||
	    json_string_value(v)[0] != '/' ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		serve_bad_field(err, field, "must be the absolute path of a "
		    "unix socket");
		free(field);
		return (NULL);
	}
	free(field);
	return (json_string_value(v));
}

/*
 * A create with "attach": its members checked, the monitor connected,
 * and s (named, not yet listed) answered on conn once QMP has said its
 * state. Fields other than name, wait and attach are refused: nothing of
 * a profile applies to a QEMU qsup did not start. 0, or -1 with err.
 */
int
serve_attach_create(struct serve_sb *s, json_t *j, struct httpd_conn *conn,
    int wait, struct serve_error *err)
{
	static const char *const fields[] = { "qmp", "qga", NULL };
	struct serve_attach	*a;
	struct serve_sb		*other;
	json_t			*o, *v;
	const char		*key, *qmp, *qga;
	char			*cause = NULL, *msg;

	json_object_foreach(j, key, v) {
		if (strcmp(key, "name") != 0 && strcmp(key, "attach") != 0 &&
		    strcmp(key, "wait") != 0)
			return (serve_fail(err, 400, NULL, "%s: not with "
			    "\"attach\" (a QEMU started by hand has its own "
			    "settings)", key));
	}
	o = json_object_get(j, "attach");
	if (!json_is_object(o))
		return (serve_bad_field(err, "attach", "must be an object "
		    "{\"qmp\": PATH, \"qga\": PATH}"));
	if (serve_check_members(o, "attach", fields, err) == -1)
		return (-1);
	if ((qmp = attach_path(o, "qmp", 1, err)) == NULL ||
	    (qga = attach_path(o, "qga", 0, err)) == NULL)
		return (-1);
	/* QEMU's monitor takes one client: say who has it, if we do. */
	TAILQ_FOREACH(other, &s->srv->sbs, entry) {
		if (other->attach != NULL &&
		    strcmp(other->attach->qmp_path, qmp) == 0)
			return (serve_fail(err, 409, NULL, "the QEMU of %s is "
			    "attached already, as sandbox %s", qmp,
			    other->name));
	}
	a = xcalloc(1, sizeof *a);
	a->s = s;
	a->qmp_path = xstrdup(qmp);
	a->qga_path = *qga != '\0' ? xstrdup(qga) : NULL;
	TAILQ_INIT(&a->execs);
	if ((a->qmp = attach_line_open(s->srv->loop, "QMP", qmp, &cause)) ==
	    NULL) {
		xasprintf(&msg, "attach.qmp: %s", cause);
		serve_fail(err, 400, "\"field\":\"attach.qmp\"", "%s", msg);
		free(msg);
		free(cause);
		free(a->qmp_path);
		free(a->qga_path);
		free(a);
		return (-1);
	}
	a->qmp->arg = a;
	a->qmp->closed = attach_qmp_closed;
	a->qmp->greeting = 1;
	attach_line_expect(a->qmp, ATTACH_GREETING_MAX, attach_greeting_cb, a);
	s->attach = a;
	if (wait)
		serve_wait(&s->create_waiters, s, conn);
	return (0);
}

/* "attached" and its sockets in the sandbox's JSON. */
void
serve_attach_json(struct serve_sb *s, struct buf *b)
{
	if (s->attach == NULL)
		return;
	buf_puts(b, ",\"attached\":true,\"qmp\":");
	buf_json_string(b, s->attach->qmp_path);
	buf_puts(b, ",\"qga\":");
	if (s->attach->qga_path != NULL)
		buf_json_string(b, s->attach->qga_path);
	else
		buf_puts(b, "null");
}

static void
attach_move_cb(json_t *ret, const char *error, void *arg)
{
	struct serve_attach	*a = arg;
	void			(*cb)(struct sandbox *, const char *, void *);

	(void)ret;
	cb = a->move_cb;
	a->move_cb = NULL;
	if (cb != NULL)
		cb(NULL, error, a->move_arg);
}

/* Pause (stop) or resume (cont): cb told as sandbox_pause tells it. */
int
serve_attach_move(struct serve_sb *s, int pause,
    void (*cb)(struct sandbox *, const char *, void *), void *arg,
    char **cause)
{
	struct serve_attach	*a = s->attach;

	if (attach_line_send(a->qmp, "", pause ? "stop" : "cont", NULL,
	    ATTACH_REPLY_MAX, attach_move_cb, a, cause) == -1)
		return (-1);
	a->move_cb = cb;
	a->move_arg = arg;
	return (0);
}

static void
attach_quit_cb(json_t *ret, const char *error, void *arg)
{
	struct serve_attach	*a = arg;
	struct serve_sb		*s = attach_sb(a);

	(void)ret;
	/* QEMU answers, then closes its monitor: either is the end. */
	if (s->state == SERVE_DEAD)
		return;
	s->state = SERVE_READY;	/* STOPPING: sb_stop would do nothing */
	free(s->reason);
	s->reason = xstrdup(error == NULL || strstr(error, "closed") != NULL ?
	    "deleted: QEMU quit (QMP quit)" : error);
	s->srv->sb_stop(s, s->reason);
}

/*
 * DELETE of an attached sandbox: detached (QEMU runs on), or with
 * ?quit=true ended by QMP quit. Answered with the report once done.
 */
int
serve_attach_delete(const struct serve_req *r, struct serve_error *err)
{
	struct serve_sb	*s = r->sb;
	struct serve_attach *a = s->attach;
	char		*quit, *cause = NULL;
	int		 q;

	quit = httpd_query_param(r->http->query, "quit");
	q = quit != NULL && strcmp(quit, "true") == 0;
	if (quit != NULL && !q && strcmp(quit, "false") != 0) {
		free(quit);
		return (serve_bad_field(err, "quit", "must be true or false"));
	}
	free(quit);
	s->deleting = 1;
	serve_wait(&s->delete_waiters, s, r->conn);
	if (q) {
		s->state = SERVE_STOPPING;
		serve_sb_event(s);
		a->qmp->closed = NULL;	/* the quit's answer says it */
		if (attach_line_send(a->qmp, "", "quit", NULL,
		    ATTACH_REPLY_MAX, attach_quit_cb, a, &cause) == -1) {
			s->reason = cause;
			s->state = SERVE_READY;	/* so sb_stop goes on */
			s->srv->sb_stop(s, cause);
		}
		return (0);
	}
	free(s->reason);
	s->reason = xstrdup("deleted: detached (QEMU left running)");
	s->srv->sb_stop(s, s->reason);
	return (0);
}

/* --------------------------------------------------------------------
 * Execs through qemu-guest-agent.
 */

static void
attach_exec_free(struct attach_exec *e)
{
	struct serve_attach	*a = e->a;

	TAILQ_REMOVE(&a->execs, e, entry);
	ev_timer_stop(a->s->srv->loop, &e->poll);
	if (e->conn != NULL)
		httpd_set_close_cb(e->conn, NULL, NULL);
	json_decref(e->cmd);
	free(e);
}

static void
attach_exec_close_cb(void *arg)
{
	struct attach_exec	*e = arg;

	e->conn = NULL;		/* it runs on; its end goes to nobody */
}

/*
 * The exec's end: its output and exit event to a client still there,
 * or (not started) an error answer; then it is freed.
 */
static void
attach_exec_end(struct attach_exec *e, const char *error, int code,
    int sig)
{
	struct buf	b = { 0 };

	if (e->conn != NULL && e->pid == 0 && error != NULL) {
		httpd_set_close_cb(e->conn, NULL, NULL);
		serve_error_now(e->conn, 502, error, NULL);
		e->conn = NULL;
	} else if (e->conn != NULL) {
		buf_puts(&b, "{\"status\":");
		if (error == NULL && sig == 0)
			buf_printf(&b, "%d", code);
		else
			buf_puts(&b, "null");
		buf_puts(&b, ",\"signal\":");
		if (error == NULL && sig > 0)
			buf_printf(&b, "%d", sig);
		else
			buf_puts(&b, "null");
		buf_puts(&b, ",\"timed_out\":false,\"error\":");
		if (error != NULL)
			buf_json_string(&b, error);
		else
			buf_puts(&b, "null");
		buf_puts(&b, "}");
		httpd_sse_event(e->conn, QSUP_EVENT_EXIT, b.data, b.len);
		httpd_end(e->conn);
		buf_free(&b);
	}
	attach_exec_free(e);
}

/* Output as the agent's exec streams it: base64, in pieces. */
static void
attach_exec_output(struct attach_exec *e, const char *event,
    const struct buf *raw)
{
	unsigned char	*b64;
	size_t		 off, n, blen, olen;

	blen = (QSUP_CHUNK + 2) / 3 * 4 + 1;
	b64 = xmalloc(blen);
	for (off = 0; off < raw->len; off += n) {
		n = raw->len - off < QSUP_CHUNK ? raw->len - off : QSUP_CHUNK;
		if (mbedtls_base64_encode(b64, blen, &olen,
		    (const unsigned char *)raw->data + off, n) != 0)
			fatalx("base64 of %zu bytes overflowed", n);
		httpd_sse_event(e->conn, event, b64, olen);
	}
	free(b64);
}

static void
attach_exec_status_cb(json_t *ret, const char *error, void *arg)
{
	struct attach_exec	*e = arg;
	struct attach_status	 st;
	char			*cause = NULL;

	e->busy = 0;
	if (ret == NULL) {
		attach_exec_end(e, error, 0, 0);
		return;
	}
	if (attach_qga_status(ret, &st, &cause) == -1) {
		attach_exec_end(e, cause, 0, 0);
		free(cause);
		return;
	}
	if (!st.exited) {
		attach_status_free(&st);
		/* A short command's end is seen soon, a long one's cheaply. */
		e->wait = e->wait == 0 ? ATTACH_POLL_FIRST : e->wait * 2;
		if (e->wait > ATTACH_POLL)
			e->wait = ATTACH_POLL;
		ev_timer_set(&e->poll, e->wait, 0);
		ev_timer_start(e->a->s->srv->loop, &e->poll);
		return;
	}
	if (e->conn != NULL) {
		attach_exec_output(e, QSUP_EVENT_STDOUT, &st.out);
		attach_exec_output(e, QSUP_EVENT_STDERR, &st.err);
	}
	attach_exec_end(e, NULL, st.has_code ? st.code : 0, st.signal);
	attach_status_free(&st);
}

static void
attach_exec_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct attach_exec	*e = w->data;

	(void)loop;
	(void)revents;
	attach_exec_step(e);
}

static void
attach_exec_started_cb(json_t *ret, const char *error, void *arg)
{
	struct attach_exec	*e = arg;
	struct buf		 b = { 0 };

	e->busy = 0;
	if (ret == NULL) {
		attach_exec_end(e, error, 0, 0);
		return;
	}
	if (attach_qga_pid(ret, &e->pid) == -1) {
		attach_exec_end(e, "qemu-guest-agent: guest-exec returned no "
		    "pid", 0, 0);
		return;
	}
	if (e->conn != NULL) {
		httpd_sse_start(e->conn);
		buf_printf(&b, "{\"id\":%u}", e->id);
		httpd_sse_event(e->conn, QSUP_EVENT_START, b.data, b.len);
		buf_free(&b);
	}
	attach_exec_step(e);
}

/* qga's socket broke: every exec ends, the next one connects anew. */
static void
attach_qga_closed(struct attach_line *l, const char *why)
{
	struct serve_attach	*a = l->arg;
	struct attach_exec	*e, *next;

	a->qga = NULL;
	/* Execs whose request went with it were told; the others too. */
	TAILQ_FOREACH_SAFE(e, &a->execs, entry, next) {
		if (!e->busy)
			attach_exec_end(e, why, 0, 0);
	}
	a->qga_ready = 0;
	attach_line_free(l);
}

static void
attach_sync_cb(json_t *ret, const char *error, void *arg)
{
	struct serve_attach	*a = arg;
	struct attach_exec	*e, *next;

	if (ret != NULL && json_is_integer(ret)) {
		a->qga_ready = 1;
		TAILQ_FOREACH_SAFE(e, &a->execs, entry, next) {
			if (!e->busy && !ev_is_active(&e->poll))
				attach_exec_step(e);
		}
		return;
	}
	/* Not synced: the execs waiting for it fail. */
	TAILQ_FOREACH_SAFE(e, &a->execs, entry, next) {
		if (e->pid == 0 && !e->busy)
			attach_exec_end(e, error != NULL ? error :
			    "qemu-guest-agent: a bad guest-sync-delimited "
			    "answer", 0, 0);
	}
}

/* qga connected and synced, or on the way: 0, or -1 with *cause. */
static int
attach_qga_open(struct serve_attach *a, char **cause)
{
	json_t	*args;

	if (a->qga != NULL)
		return (0);
	if ((a->qga = attach_line_open(a->s->srv->loop, "qemu-guest-agent",
	    a->qga_path, cause)) == NULL)
		return (-1);
	a->qga->arg = a;
	a->qga->closed = attach_qga_closed;
	a->qga->syncing = 1;
	args = json_pack("{s:I}", "id", (json_int_t)(arc4random() & 0x7fffffff));
	if (attach_line_send(a->qga, "\xff", "guest-sync-delimited", args,
	    ATTACH_SYNC_MAX, attach_sync_cb, a, cause) == -1) {
		attach_line_free(a->qga);
		a->qga = NULL;
		return (-1);
	}
	return (0);
}

/* The exec's next request: guest-exec, then guest-exec-status. */
static void
attach_exec_step(struct attach_exec *e)
{
	struct serve_attach	*a = e->a;
	char			*cause = NULL;
	int			 rc;

	if (a->s->state == SERVE_PAUSED) {
		/* Its guest answers nothing now: look again later. */
		ev_timer_set(&e->poll, ATTACH_POLL * 5, 0);
		ev_timer_start(a->s->srv->loop, &e->poll);
		return;
	}
	if (attach_qga_open(a, &cause) == -1) {
		attach_exec_end(e, cause, 0, 0);
		free(cause);
		return;
	}
	if (!a->qga_ready)
		return;		/* attach_sync_cb steps it */
	e->busy = 1;
	if (e->pid == 0)
		rc = attach_line_send(a->qga, "", "guest-exec",
		    json_incref(e->cmd), ATTACH_REPLY_MAX,
		    attach_exec_started_cb, e, &cause);
	else
		rc = attach_line_send(a->qga, "", "guest-exec-status",
		    json_pack("{s:I}", "pid", (json_int_t)e->pid),
		    ATTACH_REPLY_MAX, attach_exec_status_cb, e, &cause);
	if (rc == -1) {
		e->busy = 0;
		attach_exec_end(e, cause, 0, 0);
		free(cause);
	}
}

/*
 * POST .../exec on an attached sandbox: argv and env go to guest-exec;
 * what qemu-ga cannot do is refused. 0 (answered later), or -1 with err.
 */
int
serve_attach_exec(struct httpd_conn *conn, struct serve_sb *s, json_t *j,
    struct serve_error *err)
{
	static const char *const fields[] = {
		"argv", "env", "cwd", "stdin", "tty", "rows", "cols",
		"timeout", NULL
	};
	struct serve_attach	*a = s->attach;
	struct attach_exec	*e;
	json_t			*argv, *env, *v, *args, *envl;
	const char		*key;
	size_t			 i;
	char			*kv;

	if (serve_check_fields(j, fields, err) == -1)
		return (-1);
	if (json_is_true(json_object_get(j, "stdin")) ||
	    json_is_true(json_object_get(j, "tty")) ||
	    json_object_get(j, "rows") != NULL ||
	    json_object_get(j, "cols") != NULL)
		return (serve_bad_field(err, json_is_true(json_object_get(j,
		    "stdin")) ? "stdin" : "tty", "not for an attached "
		    "sandbox: qemu-guest-agent's guest-exec has no stdin and "
		    "no terminal"));
	if (json_object_get(j, "cwd") != NULL)
		return (serve_bad_field(err, "cwd", "not for an attached "
		    "sandbox: guest-exec has no working directory (run sh "
		    "-c 'cd DIR && ...')"));
	if ((v = json_object_get(j, "timeout")) != NULL &&
	    !(json_is_number(v) && json_number_value(v) == 0))
		return (serve_bad_field(err, "timeout", "not for an attached "
		    "sandbox: qemu-guest-agent cannot kill a command"));
	argv = json_object_get(j, "argv");
	if (!json_is_array(argv) || json_array_size(argv) == 0)
		return (serve_bad_field(err, "argv", "must be a non-empty "
		    "array of strings"));
	json_array_foreach(argv, i, v) {
		if (!json_is_string(v) || strlen(json_string_value(v)) !=
		    json_string_length(v))
			return (serve_bad_field(err, "argv", "must be a "
			    "non-empty array of strings"));
	}
	envl = json_array();
	if ((env = json_object_get(j, "env")) != NULL) {
		if (!json_is_object(env)) {
			json_decref(envl);
			return (serve_bad_field(err, "env", "must be an object "
			    "of strings"));
		}
		json_object_foreach(env, key, v) {
			if (!json_is_string(v) || *key == '\0' ||
			    strchr(key, '=') != NULL) {
				json_decref(envl);
				return (serve_bad_field(err, "env", "must be "
				    "an object of strings"));
			}
			xasprintf(&kv, "%s=%s", key, json_string_value(v));
			json_array_append_new(envl, json_string(kv));
			free(kv);
		}
	}
	if (s->state != SERVE_READY) {
		json_decref(envl);
		return (serve_fail(err, 409, NULL, "sandbox %s is %s", s->name,
		    serve_state_name(s->state)));
	}
	if (a->qga_path == NULL) {
		json_decref(envl);
		return (serve_fail(err, 409, NULL, "sandbox %s was attached "
		    "without \"qga\": no exec without qemu-guest-agent",
		    s->name));
	}
	args = json_array();
	for (i = 1; i < json_array_size(argv); i++)
		json_array_append(args, json_array_get(argv, i));
	e = xcalloc(1, sizeof *e);
	e->a = a;
	e->id = ++a->next_id;
	e->conn = conn;
	e->cmd = json_pack("{s:O, s:o, s:b}", "path", json_array_get(argv, 0),
	    "arg", args, "capture-output", 1);
	if (json_array_size(envl) > 0)
		json_object_set_new(e->cmd, "env", envl);
	else
		json_decref(envl);
	ev_timer_init(&e->poll, attach_exec_poll_cb, 0, 0);
	e->poll.data = e;
	TAILQ_INSERT_TAIL(&a->execs, e, entry);
	httpd_set_close_cb(conn, attach_exec_close_cb, e);
	s->t_active = util_now();
	attach_exec_step(e);	/* e may be gone after */
	return (0);
}

static void
attach_ignore_cb(json_t *ret, const char *error, void *arg)
{
	(void)ret;
	(void)error;
	(void)arg;
}

/*
 * One QMP command (args stolen, may be NULL) to s's monitor, for other
 * files (serve_attach_snap.c); cb NULL: its answer ignored. cb is not
 * called if the sandbox goes first. -1 with *cause (if not NULL).
 */
int
serve_attach_qmp(struct serve_sb *s, const char *name, json_t *args,
    serve_qmp_cb *cb, void *arg, char **cause)
{
	char	*why = NULL;
	int	 rc;

	rc = attach_line_send(s->attach->qmp, "", name, args,
	    ATTACH_REPLY_MAX, cb != NULL ? cb : attach_ignore_cb, arg, &why);
	if (cause != NULL)
		*cause = why;
	else
		free(why);
	return (rc);
}

const char *
serve_attach_qmp_path(const struct serve_sb *s)
{
	return (s->attach->qmp_path);
}

/* The sandbox goes: its sockets closed, its execs ended (QEMU runs on). */
void
serve_attach_gone(struct serve_sb *s)
{
	struct serve_attach	*a = s->attach;
	struct attach_exec	*e;

	if (a == NULL)
		return;
	while ((e = TAILQ_FIRST(&a->execs)) != NULL)
		attach_exec_end(e, s->reason != NULL ? s->reason :
		    "the sandbox is gone", 0, 0);
	attach_line_free(a->qmp);
	attach_line_free(a->qga);
	free(a->qmp_path);
	free(a->qga_path);
	free(a);
	s->attach = NULL;
}
