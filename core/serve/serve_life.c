/*
 * A sandbox as the API shows it, and its life once it is made: pause and
 * resume (QMP stop and cont, through core/vm), and its time limits,
 * "ttl" (seconds from its creation) and "idle_ttl" (seconds without an
 * exec or a file call), each ending in a delete or a pause ("on_ttl"),
 * a delete done by serve.c's stop (srv->sb_stop: serve.c lies above).
 * Each limit is one ev_timer, armed for its deadline and re-armed when
 * the deadline moves (libev's manual: "be smart about timeouts"), so
 * nothing polls.
 *
 * ttl fires once and is then lifted: a sandbox it paused and that is
 * resumed runs on. idle_ttl stays: a resumed sandbox left idle again is
 * paused again. The idle clock runs only while the sandbox is ready, and
 * starts again at its readiness, at each exec's or file call's start and
 * end, and at a resume; an exec under way keeps it from being idle.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

static const char *const serve_on_ttl_names[] = {
	[SERVE_TTL_DELETE] = "delete",
	[SERVE_TTL_PAUSE] = "pause",
};

static void	serve_ttl_cb(struct ev_loop *, ev_timer *, int);
static void	serve_idle_cb(struct ev_loop *, ev_timer *, int);
static void	serve_life_done_cb(struct sandbox *, const char *, void *);
static void	serve_life_json(struct serve_sb *, struct buf *);
static int	serve_life_pause_now(struct serve_sb *, char **);

/* A new sandbox's: no limits, nothing under way. */
void
serve_life_init(struct serve_sb *s)
{
	TAILQ_INIT(&s->qmp_waiters);
	s->qmp_want = SERVE_DEAD;
	s->on_ttl = SERVE_TTL_DELETE;
	s->clock_port = -1;
	ev_init(&s->ttl_timer, serve_ttl_cb);
	s->ttl_timer.data = s;
	ev_init(&s->idle_timer, serve_idle_cb);
	s->idle_timer.data = s;
}

/* The sandbox as the API shows it. */
void
serve_sb_json(struct serve_sb *s, struct buf *b)
{
	const struct net_port	*np;
	char			 when[32];
	struct tm		 tm;
	struct serve_exec	*e;
	size_t			 i, n = 0;

	gmtime_r(&s->created, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_puts(b, "{\"name\":");
	buf_json_string(b, s->name);
	buf_printf(b, ",\"state\":\"%s\",\"accelerator\":",
	    serve_state_name(s->state));
	buf_json_string(b, accel_name(s->accel.accel));
	buf_puts(b, ",\"accelerator_reason\":");
	buf_json_string(b, s->accel.why != NULL ? s->accel.why : "");
	buf_puts(b, ",\"profile\":");
	buf_json_string(b, s->profile.path != NULL ? s->profile.path : "");
	buf_puts(b, ",\"image\":");
	if (s->image != NULL)
		buf_json_string(b, s->image);
	else if (s->profile.image != NULL)
		buf_json_string(b, s->profile.image);
	else
		buf_puts(b, "null");
	buf_printf(b, ",\"memory_mib\":%" PRIu64 ",\"cpus\":%d,\"ports\":[",
	    s->profile.memory_mib, s->profile.cpus);
	for (i = 0; i < s->profile.nports; i++) {
		np = &s->profile.ports[i];
		buf_printf(b, "%s{\"host\":\"%s:%u\",\"guest\":%u}",
		    i > 0 ? "," : "", np->address != NULL ? np->address :
		    "127.0.0.1", s->host_ports != NULL && s->host_ports[i] ?
		    s->host_ports[i] : np->host, np->guest);
	}
	buf_printf(b, "],\"created\":\"%s\",\"start\":", when);
	if (s->start != NULL)
		buf_json_string(b, s->start);
	else
		buf_puts(b, "null");
	TAILQ_FOREACH(e, &s->execs, entry)
		n += serve_exec_running(e);
	buf_printf(b, ",\"boot_s\":%.3f,\"execs\":%llu,\"execs_running\":%zu,"
	    "\"reason\":", s->boot_s, s->execs_total, n);
	if (s->reason != NULL)
		buf_json_string(b, s->reason);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"console_tail\":");
	if (s->tail != NULL)
		buf_json_string(b, s->tail);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"phase\":");
	if (s->phase != NULL)
		buf_json_string(b, s->phase);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"mac\":");	/* a fork's copy's own */
	if (s->mac != NULL)
		buf_json_string(b, s->mac);
	else
		buf_puts(b, "null");
	/* A screen or not: what the console's Display button needs. */
	if (s->profile.display == PROFILE_DISPLAY_VNC) {
		buf_puts(b, ",\"display\":\"vnc\",\"display_size\":");
		buf_json_string(b, s->profile.display_size != NULL ?
		    s->profile.display_size : "1024x768");
	} else
		buf_puts(b, ",\"display\":\"none\",\"display_size\":null");
	serve_life_json(s, b);
	serve_disk_json(s, b);
	serve_attach_json(s, b);
	serve_persist_json(s, b);
	buf_puts(b, "}");
}

/* Seconds until ttl's deadline (negative: past), if there is one. */
static double
serve_ttl_left(struct serve_sb *s)
{
	return (s->t_created + s->ttl - util_now());
}

/* Seconds until idle_ttl's deadline, while it runs: ready, not busy. */
static int
serve_idle_left(struct serve_sb *s, double *left)
{
	if (s->idle_ttl == 0 || s->state != SERVE_READY)
		return (0);
	if (serve_exec_busy(s))
		*left = s->idle_ttl;
	else
		*left = s->t_active + s->idle_ttl - util_now();
	return (1);
}

/* Both timers as the limits and the state say: after any change. */
void
serve_life_arm(struct serve_sb *s)
{
	struct ev_loop	*loop = s->srv->loop;
	double		 left;

	ev_timer_stop(loop, &s->ttl_timer);
	ev_timer_stop(loop, &s->idle_timer);
	if (s->state == SERVE_STOPPING || s->state == SERVE_DEAD)
		return;
	if (s->ttl > 0) {
		left = serve_ttl_left(s);
		ev_timer_set(&s->ttl_timer, left > 0 ? left : 0, 0);
		ev_timer_start(loop, &s->ttl_timer);
	}
	if (serve_idle_left(s, &left)) {
		ev_timer_set(&s->idle_timer, left > 0 ? left : 0, 0);
		ev_timer_start(loop, &s->idle_timer);
	}
}

/* It is over: no timer, and a pause or resume waited for is refused. */
void
serve_life_gone(struct serve_sb *s)
{
	struct buf	b = { 0 };

	ev_timer_stop(s->srv->loop, &s->ttl_timer);
	ev_timer_stop(s->srv->loop, &s->idle_timer);
	if (s->clock != NULL)
		exec_gone(s->clock, s->reason);	/* its cb frees it */
	if (s->clocking && s->sb != NULL)
		sandbox_fresh_cancel(s->sb);
	s->clocking = 0;
	s->qmp_want = SERVE_DEAD;
	if (TAILQ_EMPTY(&s->qmp_waiters))
		return;
	buf_puts(&b, "{\"error\":");
	buf_printf(&b, "\"sandbox %s is %s\"}", s->name,
	    s->deleting ? "deleted" : "dead");
	serve_answer(&s->qmp_waiters, 409, b.data);
	buf_free(&b);
}

/* A deadline as the API shows it: its time and the seconds left. */
static void
serve_life_deadline(struct buf *b, const char *name, int set, double left)
{
	char		when[32];
	struct tm	tm;
	time_t		t;

	if (!set) {
		buf_printf(b, ",\"%s_deadline\":null,\"%s_left\":null", name,
		    name);
		return;
	}
	if (left < 0)
		left = 0;
	t = time(NULL) + (time_t)ceil(left);
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_printf(b, ",\"%s_deadline\":\"%s\",\"%s_left\":%.1f", name, when,
	    name, left);
}

/* The limits, members of the sandbox's JSON object. */
static void
serve_life_json(struct serve_sb *s, struct buf *b)
{
	double	left = 0;
	int	live = s->state != SERVE_STOPPING && s->state != SERVE_DEAD;
	int	idle;

	if (s->ttl > 0)
		buf_printf(b, ",\"ttl\":%.17g", s->ttl);
	else
		buf_puts(b, ",\"ttl\":null");
	if (s->idle_ttl > 0)
		buf_printf(b, ",\"idle_ttl\":%.17g", s->idle_ttl);
	else
		buf_puts(b, ",\"idle_ttl\":null");
	buf_printf(b, ",\"on_ttl\":\"%s\"", serve_on_ttl_names[s->on_ttl]);
	serve_life_deadline(b, "ttl", live && s->ttl > 0,
	    live && s->ttl > 0 ? serve_ttl_left(s) : 0);
	idle = live && serve_idle_left(s, &left);
	serve_life_deadline(b, "idle", idle, left);
}

/* One limit from a body: 0 (absent or set), or -1 with err (400). */
static int
serve_life_seconds(json_t *j, const char *name, double *to,
    struct serve_error *err)
{
	json_t	*v = json_object_get(j, name);
	double	 d;

	if (v == NULL)
		return (0);
	if (json_is_null(v)) {
		*to = 0;
		return (0);
	}
	if (!json_is_number(v) || (d = json_number_value(v)) < 0 ||
	    d > SERVE_TTL_MAX || isnan(d))
		return (serve_bad_field(err, name, "must be a number of "
		    "seconds, 0 to 316224000 (0 or null: no limit)"));
	*to = d;
	return (0);
}

/*
 * ttl, idle_ttl and on_ttl from a create's or a PATCH's body, into s, all
 * or none: 0, or -1 with err (400 naming the field).
 */
int
serve_life_fields(struct serve_sb *s, json_t *j, struct serve_error *err)
{
	double		 ttl = s->ttl, idle = s->idle_ttl;
	enum serve_on_ttl on = s->on_ttl;
	json_t		*v;
	const char	*o;

	if (serve_life_seconds(j, "ttl", &ttl, err) == -1 ||
	    serve_life_seconds(j, "idle_ttl", &idle, err) == -1)
		return (-1);
	if ((v = json_object_get(j, "on_ttl")) != NULL) {
		o = json_is_string(v) ? json_string_value(v) : "";
		if (strcmp(o, "delete") == 0)
			on = SERVE_TTL_DELETE;
		else if (strcmp(o, "pause") == 0)
			on = SERVE_TTL_PAUSE;
		else
			return (serve_bad_field(err, "on_ttl", "must be "
			    "\"delete\" or \"pause\""));
	}
	s->ttl = ttl;
	s->idle_ttl = idle;
	s->on_ttl = on;
	return (0);
}

/* The event of a limit that expired, and what it does. */
static void
serve_life_expired_event(struct serve_sb *s, const char *which,
    double seconds, const char *done)
{
	struct buf	b = { 0 };

	buf_puts(&b, "{\"sandbox\":");
	buf_json_string(&b, s->name);
	buf_printf(&b, ",\"limit\":\"%s\",\"seconds\":%.17g,\"action\":\"%s\","
	    "\"done\":", which, seconds, serve_on_ttl_names[s->on_ttl]);
	buf_json_string(&b, done);
	buf_puts(&b, "}");
	serve_event(s->srv, "ttl", b.data);
	buf_free(&b);
}

/* A limit expired: s is deleted or paused, as on_ttl says. */
static void
serve_life_expire(struct serve_sb *s, const char *which, double seconds)
{
	char	*why = NULL, *cause = NULL;

	log_info("sandbox %s: %s of %g s expired: %s", s->name, which,
	    seconds, serve_on_ttl_names[s->on_ttl]);
	if (s->on_ttl == SERVE_TTL_DELETE) {
		serve_life_expired_event(s, which, seconds, "deleting");
		xasprintf(&why, "%s of %g s expired", which, seconds);
		free(s->reason);
		s->reason = why;
		s->deleting = 1;
		s->srv->sb_stop(s, why);
		return;
	}
	if (s->state == SERVE_PAUSED || s->qmp_want == SERVE_PAUSED) {
		serve_life_expired_event(s, which, seconds, "already paused");
		return;
	}
	if (s->qmp_want == SERVE_DEAD && serve_life_pause_now(s, &cause) ==
	    0) {
		serve_life_expired_event(s, which, seconds, "pausing");
		return;
	}
	xasprintf(&why, "not paused: %s", cause != NULL ? cause :
	    "a resume is under way");
	serve_life_expired_event(s, which, seconds, why);
	free(why);
	free(cause);
}

/* s paused by the server itself: 0 once under way, or -1 with *cause. */
static int
serve_life_pause_now(struct serve_sb *s, char **cause)
{
	if (sandbox_pause(s->sb, serve_life_done_cb, s, cause) == -1)
		return (-1);
	s->qmp_want = SERVE_PAUSED;
	return (0);
}

/* A ready s paused, as a client's pause would (why: for the log). */
void
serve_life_pause(struct serve_sb *s, const char *why)
{
	char	*cause = NULL;

	if (s->state != SERVE_READY || s->qmp_want != SERVE_DEAD ||
	    s->sb == NULL)
		return;
	if (serve_life_pause_now(s, &cause) == -1) {
		log_warnx("sandbox %s: not paused (%s): %s", s->name, why,
		    cause);
		free(cause);
		return;
	}
	log_info("sandbox %s: pausing: %s", s->name, why);
}

static void
serve_ttl_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve_sb	*s = w->data;
	double		 ttl = s->ttl;

	(void)loop;
	(void)revents;
	/* A pause waits for the sandbox to be ready; a delete does not. */
	if (s->on_ttl == SERVE_TTL_PAUSE && s->state == SERVE_BOOTING)
		return;		/* serve_life_arm at its readiness */
	s->ttl = 0;		/* once: a resumed sandbox runs on */
	serve_life_expire(s, "ttl", ttl);
}

static void
serve_idle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve_sb	*s = w->data;
	double		 left;

	(void)revents;
	if (!serve_idle_left(s, &left))
		return;
	if (left > 0.001) {
		/* Active since it was armed: wait for the new deadline. */
		ev_timer_set(w, left, 0);
		ev_timer_start(loop, w);
		return;
	}
	serve_life_expire(s, "idle_ttl", s->idle_ttl);
}

/* The exec setting s's guest clock is over: its owner goes on. */
static void
serve_life_clock_cb(struct exec *x, const struct exec_result *r, void *arg)
{
	struct serve_sb	*s = arg;

	exec_free(x);
	s->clock = NULL;
	serve_port_give(s, s->clock_port);
	s->clock_port = -1;
	if (r->end == EXEC_END_GONE || r->end == EXEC_END_CLOSED)
		return;		/* QEMU is going: serve_sb_gone answers */
	if (r->end != EXEC_END_EXITED || r->status != 0)
		log_warnx("sandbox %s: its clock was not set: %s", s->name,
		    r->error != NULL ? r->error : r->exit_error != NULL ?
		    r->exit_error : "date failed");
	s->clock_done(s);
}

/* The agent's own refresh of s's clock is over: its owner goes on. */
static void
serve_life_fresh_cb(struct sandbox *sb, int gone, const char *error,
    void *arg)
{
	struct serve_sb	*s = arg;

	(void)sb;
	s->clocking = 0;
	if (gone)
		return;		/* QEMU is going: serve_sb_gone answers */
	if (error != NULL)
		log_warnx("sandbox %s: its clock was not set: %s", s->name,
		    error);
	s->clock_done(s);
}

/*
 * The guest's clock set to the host's now, then done called: the guest's
 * clock stood still while it was paused (its vCPUs' clock stops with
 * them), and a restored one's is its save's. The agent sets it itself
 * (POST /refresh on the control port, core/vm's sandbox_fresh_send), or,
 * with by_exec, an exec of date does (sandbox_fresh_exec): the warm
 * pool's, whose first exec translates the exec path before its pause.
 * -1 when neither can be sent.
 */
int
serve_life_clock(struct serve_sb *s, int by_exec,
    void (*done)(struct serve_sb *))
{
	struct exec_ports	 ports;
	struct exec_cbs		 cbs;
	char			*cause = NULL;

	if (s->sb == NULL)
		return (-1);
	s->clock_done = done;
	if (!by_exec && sandbox_fresh_send(s->sb, SERVE_PORT_CONTROL, NULL,
	    serve_life_fresh_cb, s, &cause) == 0) {
		s->clocking = 1;
		return (0);
	}
	if (cause != NULL)
		log_debug("sandbox %s: %s: its clock by an exec", s->name,
		    cause);
	free(cause);
	if ((s->clock_port = serve_port_take(s)) == -1)
		return (-1);
	ports.stream = s->clock_port;
	ports.in = -1;
	ports.control = SERVE_PORT_CONTROL;
	memset(&cbs, 0, sizeof cbs);
	cbs.done = serve_life_clock_cb;
	cbs.arg = s;
	s->clock = sandbox_fresh_exec(s->sb, NULL, &ports, &cbs);
	exec_start(s->clock);
	return (0);
}

/* s is a fork's copy: the fork sends its clock with its identity. */
static int
serve_life_forked(struct serve_sb *s)
{
	const char	*base = strrchr(s->snap.dir, '/');

	return (base != NULL && strncmp(base + 1, SERVE_SNAP_HIDDEN,
	    strlen(SERVE_SNAP_HIDDEN)) == 0);
}

/*
 * s, started from a snapshot, is up: its guest's clock is the save's, so
 * it is set before s is ready, then done called. 0 once under way; -1:
 * nothing to do (set already, or a fork's copy, which gets it with its
 * identity), or no port free.
 */
int
serve_life_restored(struct serve_sb *s, void (*done)(struct serve_sb *))
{
	if (s->snap.dir == NULL || s->clocked || serve_life_forked(s))
		return (-1);
	s->clocked = 1;
	/* Sent with the restore (serve_life_restore_early): its answer. */
	s->clock_done = done;
	s->clocking = 1;
	if (s->sb != NULL && sandbox_fresh_then(s->sb, serve_life_fresh_cb,
	    s) == 0)
		return (0);
	s->clocking = 0;
	return (serve_life_clock(s, 0, done));
}

/*
 * s is being made from a snapshot: the host's clock goes to its guest
 * with the restore (sandbox_fresh_early), rather than once it is up.
 */
void
serve_life_restore_early(struct serve_sb *s)
{
	char	*cause = NULL;

	if (s->snap.dir == NULL || s->sb == NULL || serve_life_forked(s))
		return;
	if (sandbox_fresh_early(s->sb, NULL, &cause) == -1)
		log_debug("sandbox %s: %s: its clock once it is up", s->name,
		    cause);
	free(cause);
}

/* s is in state want now: the event, the answers. */
static void
serve_life_moved(struct serve_sb *s, enum serve_state want)
{
	struct serve_exec *e;
	struct buf	 b = { 0 };

	s->qmp_want = SERVE_DEAD;
	s->state = want;
	if (want == SERVE_READY)
		s->t_active = util_now();	/* idle from the resume */
	TAILQ_FOREACH(e, &s->execs, entry)
		exec_freeze(e->x, want == SERVE_PAUSED);
	serve_life_arm(s);
	serve_sb_event(s);
	serve_sb_json(s, &b);
	serve_answer(&s->qmp_waiters, 200, b.data);
	buf_free(&b);
}

/* Resumed, its clock set: ready. */
static void
serve_life_clocked(struct serve_sb *s)
{
	if (s->state == SERVE_PAUSED && s->qmp_want == SERVE_READY)
		serve_life_moved(s, SERVE_READY);
}

/*
 * QMP answered a pause or a resume: the state, the event, the answers.
 * A resumed guest's clock is set first (still "paused" meanwhile, with
 * the resume under way: no exec sees the old time).
 */
static void
serve_life_done_cb(struct sandbox *sb, const char *error, void *arg)
{
	struct serve_sb	*s = arg;
	struct buf	 b = { 0 };
	enum serve_state want = s->qmp_want;

	(void)sb;
	s->qmp_want = SERVE_DEAD;
	if (error != NULL || (s->state != SERVE_READY &&
	    s->state != SERVE_PAUSED)) {
		log_warnx("sandbox %s: %s: %s", s->name, want ==
		    SERVE_PAUSED ? "pause" : "resume", error != NULL ? error :
		    serve_state_name(s->state));
		buf_puts(&b, "{\"error\":");
		if (error != NULL)
			buf_json_string(&b, error);
		else
			buf_printf(&b, "\"sandbox %s is %s\"", s->name,
			    serve_state_name(s->state));
		buf_puts(&b, "}");
		serve_answer(&s->qmp_waiters, error != NULL ? 500 : 409,
		    b.data);
		buf_free(&b);
		return;
	}
	if (want == SERVE_READY && s->attach == NULL &&
	    s->state == SERVE_PAUSED) {
		s->qmp_want = SERVE_READY;
		if (serve_life_clock(s, 0, serve_life_clocked) == 0)
			return;
		log_warnx("sandbox %s: its clock was not set: no agent port "
		    "free", s->name);
	}
	serve_life_moved(s, want);
}

/*
 * POST .../pause and .../resume: to state want. Already there (or on the
 * way): answered with the sandbox. Booting, stopping, dead: 409.
 */
static int
serve_life_move(const struct serve_req *r, enum serve_state want,
    struct serve_error *err)
{
	struct serve_sb	*s = r->sb;
	struct buf	 b = { 0 };
	char		*cause = NULL;
	int		 rc;

	if (s->qmp_want == want) {
		serve_wait(&s->qmp_waiters, s, r->conn);
		return (0);
	}
	if (s->qmp_want != SERVE_DEAD)
		return (serve_fail(err, 409, NULL, "sandbox %s: a %s is under "
		    "way", s->name, want == SERVE_PAUSED ? "resume" :
		    "pause"));
	if (s->state == want) {
		serve_sb_json(s, &b);
		httpd_respond_json(r->conn, 200, b.data, b.len);
		buf_free(&b);
		return (0);
	}
	if ((s->state != SERVE_READY && s->state != SERVE_PAUSED) ||
	    (s->sb == NULL && s->attach == NULL))
		return (serve_fail(err, 409, NULL, "sandbox %s is %s",
		    s->name, serve_state_name(s->state)));
	if (s->attach != NULL)
		rc = serve_attach_move(s, want == SERVE_PAUSED,
		    serve_life_done_cb, s, &cause);
	else
		rc = want == SERVE_PAUSED ? sandbox_pause(s->sb,
		    serve_life_done_cb, s, &cause) : sandbox_resume(s->sb,
		    serve_life_done_cb, s, &cause);
	if (rc == -1) {
		serve_fail(err, 409, NULL, "sandbox %s: %s", s->name, cause);
		free(cause);
		return (-1);
	}
	s->qmp_want = want;
	serve_wait(&s->qmp_waiters, s, r->conn);
	return (0);
}

/* POST /v1/sandboxes/{name}/pause */
int
serve_pause(const struct serve_req *r, struct serve_error *err)
{
	return (serve_life_move(r, SERVE_PAUSED, err));
}

/* POST /v1/sandboxes/{name}/resume */
int
serve_resume(const struct serve_req *r, struct serve_error *err)
{
	return (serve_life_move(r, SERVE_READY, err));
}

static void
serve_patch_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	static const char *const fields[] = {
		"ttl", "idle_ttl", "on_ttl", NULL
	};
	struct serve_error	 err = { 0 };
	struct buf		 b = { 0 };
	json_t			*j = NULL;

	(void)arg;
	if (serve_json_body(body, len, &j, &err) == -1 ||
	    serve_check_fields(j, fields, &err) == -1)
		goto out;
	if (s->state == SERVE_STOPPING || s->state == SERVE_DEAD) {
		serve_fail(&err, 409, NULL, "sandbox %s is %s", s->name,
		    serve_state_name(s->state));
		goto out;
	}
	if (serve_life_fields(s, j, &err) == -1)
		goto out;
	serve_life_arm(s);
	serve_sb_json(s, &b);
	httpd_respond_json(conn, 200, b.data, b.len);
	buf_free(&b);
out:
	json_decref(j);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

/* PATCH /v1/sandboxes/{name}: its limits changed, once its body is in. */
int
serve_patch(const struct serve_req *r, struct serve_error *err)
{
	(void)err;
	serve_sb_read_body(r, serve_patch_body, NULL);
	return (0);
}
