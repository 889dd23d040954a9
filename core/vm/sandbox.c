/*
 * One sandbox: one QEMU microVM with its run directory, console, agent
 * ports and timers, driven by the loop. What it does is one state (enum
 * sbs, sandbox_int.h); what happens to it is one event (enum sbe); and
 * what an event does in a state is one entry of sandbox_actions, the only
 * place where the state changes (s6-supervise's actions[][] is the model).
 * A sandbox is dead once QEMU has been reaped and its console has reached
 * EOF (tmux's JOB_DEAD and JOB_CLOSED).
 *
 * The other sandbox_*.c files hold its parts, below it (sandbox_int.h
 * says in what order): one QEMU launch, the warm start, QEMU's command
 * line, the guest's configuration, the deadlines and liveness pings, and
 * what an image that boots itself changes. They report what happens to
 * the sandbox as events (sb->event, which sandbox_new points here), and
 * this file alone acts on them.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "image.h"
#include "sandbox_int.h"
#include "staging.h"

static void	sandbox_queue(struct sandbox *);
static void	sandbox_gate_cb(void *);
static void	sandbox_builder_cb(struct ev_loop *, ev_timer *, int);

static const struct {
	const char		*name;
	enum sandbox_state	 public;
} sandbox_states[SBS_COUNT] = {
	[SBS_NEW] =		{ "new", SB_NEW },
	[SBS_QUEUED] =		{ "queued", SB_BOOTING },
	[SBS_BOOTING] =		{ "booting", SB_BOOTING },
	[SBS_BUILDING] =	{ "building", SB_BOOTING },
	[SBS_SAVING] =		{ "saving", SB_SAVING },
	[SBS_CONFIGURING] =	{ "configuring", SB_SAVING },
	[SBS_RESTARTING] =	{ "restarting", SB_SAVING },
	[SBS_CLONING] =		{ "cloning", SB_SAVING },
	[SBS_RECOVERING] =	{ "recovering", SB_SAVING },
	[SBS_RESTORING] =	{ "restoring", SB_BOOTING },
	[SBS_RELAUNCHING] =	{ "relaunching", SB_BOOTING },
	[SBS_READY] =		{ "ready", SB_READY },
	[SBS_PAUSED] =		{ "paused", SB_PAUSED },
	[SBS_STOPPING] =	{ "stopping", SB_STOPPING },
	[SBS_DEAD] =		{ "dead", SB_DEAD },
};

static const char *const sandbox_events[SBE_COUNT] = {
	[SBE_UP] = "up",
	[SBE_REFUSED] = "refused",
	[SBE_SETUP_FAILED] = "setup-failed",
	[SBE_BROKEN] = "broken",
	[SBE_SAVED] = "saved",
	[SBE_DEADLINE] = "deadline",
	[SBE_LOST] = "lost",
	[SBE_HALTED] = "halted",
	[SBE_EXITED] = "exited",
	[SBE_EOF] = "eof",
	[SBE_STOP] = "stop",
	[SBE_KILL] = "kill",
	[SBE_GO] = "go",
	[SBE_PAUSED] = "paused",
	[SBE_RESUMED] = "resumed",
};

const char *
sandbox_sbs_name(enum sbs s)
{
	return (s < SBS_COUNT ? sandbox_states[s].name : "?");
}

const char *
sandbox_sbe_name(enum sbe e)
{
	return (e < SBE_COUNT ? sandbox_events[e] : "?");
}

/* What the owner sees of a state. */
enum sandbox_state
sandbox_public(enum sbs s)
{
	return (sandbox_states[s].public);
}

/* The names of the owner's states, as -v has always said them. */
static const char *
sandbox_public_name(enum sandbox_state s)
{
	static const char *const names[] = {
		[SB_NEW] = "new", [SB_BOOTING] = "booting",
		[SB_SAVING] = "saving", [SB_READY] = "ready",
		[SB_PAUSED] = "paused",
		[SB_STOPPING] = "stopping", [SB_DEAD] = "dead",
	};

	return (names[s]);
}

/*
 * The only writer of sb->state, from the actions below (but for
 * sandbox_free, which stops it without a word).
 */
static void
sandbox_set_state(struct sandbox *sb, enum sbs s)
{
	enum sandbox_state	from = sandbox_public(sb->state);
	enum sandbox_state	to = sandbox_public(s);

	/* The owner's states only move forward, but for a resume. */
	assert((to >= from || (from == SB_PAUSED && to == SB_READY)) &&
	    s != sb->state);
	if (to != from) {
		log_debug("sandbox: %s -> %s", sandbox_public_name(from),
		    sandbox_public_name(to));
	} else
		log_debug("sandbox: %s -> %s", sandbox_sbs_name(sb->state),
		    sandbox_sbs_name(s));
	sb->state = s;
	assert(sb->state != SBS_DEAD || !qemu_running(sb->qemu));
}

/* The state a launch waits in for the agent, as the mode says. */
static enum sbs
sandbox_launched(struct sandbox *sb)
{
	switch (sb->mode) {
	case SB_COLD:
		break;
	case SB_BUILD:
		return (SBS_BUILDING);
	case SB_RESTORE:
		return (SBS_RESTORING);
	}
	return (SBS_BOOTING);
}

/* Nothing to do: the event means nothing in this state. */
static void
sandbox_nop(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)sb;
	(void)ev;
	(void)why;
}

/* QEMU and its console are gone: dead. */
static void
sandbox_gone(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	(void)why;
	if (qemu_running(sb->qemu))
		return;
	ev_timer_stop(sb->loop, &sb->kill_timer);
	if (sb->console != NULL && !serial_closed(sb->console))
		return;
	sandbox_set_state(sb, SBS_DEAD);
	if (sb->cbs.dead != NULL)
		sb->cbs.dead(sb, sb->cbs.arg);
}

/* Stop: polite request, timer, SIGKILL. */
static void
sandbox_stopping(struct sandbox *sb, enum sbe ev, const char *why)
{
	log_debug("stopping the sandbox: %s", why);
	sandbox_set_state(sb, SBS_STOPPING);
	ev_timer_stop(sb->loop, &sb->deadline);
	gate_release(sb->gate);
	sandbox_live_stop(sb);
	if (qemu_running(sb->qemu)) {
		qemu_kill(sb->qemu, SIGTERM);
		ev_timer_set(&sb->kill_timer, SANDBOX_KILL_GRACE, 0);
		ev_timer_start(sb->loop, &sb->kill_timer);
	}
	sandbox_gone(sb, ev, why);
}

/* Stopped before it started: nothing ran. */
static void
sandbox_drop(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	log_debug("stopping the sandbox: %s", why);
	sandbox_set_state(sb, SBS_DEAD);
}

/* A failure: tell the owner, then stop. */
static void
sandbox_fail(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	if (sb->cbs.failed != NULL)
		sb->cbs.failed(sb, why, sb->cbs.arg);
	sandbox_event(sb, SBE_STOP, why);
}

/* Stopped while queued: no QEMU ran, but the owner hears it is dead. */
static void
sandbox_unqueue(struct sandbox *sb, enum sbe ev, const char *why)
{
	log_debug("stopping the sandbox: %s", why);
	ev_timer_stop(sb->loop, &sb->builder);
	ev_timer_stop(sb->loop, &sb->spare);
	gate_free(sb->gate);
	sb->gate = NULL;
	sandbox_set_state(sb, SBS_STOPPING);
	sandbox_gone(sb, ev, why);
}

/* Our turn: launch QEMU, as the mode says. */
static void
sandbox_go(struct sandbox *sb, enum sbe ev, const char *why)
{
	char	*cause = NULL;

	(void)why;
	sb->queued_seconds = util_now() - sb->t_queued;
	if (sb->gate != NULL && gate_waited(sb->gate) > 0.01)
		log_debug("start slot ours after %.3f s", gate_waited(sb->gate));
	if (sandbox_launch(sb, &cause) == -1) {
		sandbox_launch_free(sb);
		sandbox_fail(sb, ev, cause);
		free(cause);
		return;
	}
	sandbox_set_state(sb, sandbox_launched(sb));
}

/* QEMU exited on its own: say why. */
static void
sandbox_died(struct sandbox *sb, enum sbe ev, const char *why)
{
	char	*msg;

	(void)why;
	msg = sandbox_death(sb);
	sandbox_fail(sb, ev, msg);
	free(msg);
}

/* The start's deadline passed. */
static void
sandbox_late(struct sandbox *sb, enum sbe ev, const char *why)
{
	char	*msg;

	(void)why;
	xasprintf(&msg, "the guest did not become ready within %g s "
	    "(accelerator %s%s%s)", sandbox_start_timeout(sb),
	    accel_name(sb->accel.accel), sandbox_boot_image(sb) ?
	    "; the image's boot was at: " : "", sandbox_boot_image(sb) ?
	    sandbox_boot_phase(sb) : "");
	sandbox_fail(sb, ev, msg);
	free(msg);
}

/*
 * Give up on the template: remove it and boot instead. QEMU is killed if
 * need be; its reaping (SBE_EXITED) launches again.
 */
static void
sandbox_unrestore(struct sandbox *sb, enum sbe ev, const char *why)
{
	static const char *const what[SBE_COUNT] = {
		[SBE_REFUSED] = "the restored agent refused setup",
		[SBE_DEADLINE] = "the restore took too long",
		[SBE_EXITED] = "QEMU exited while restoring",
	};
	struct buf	log = { 0 };

	if (why != NULL && ev == SBE_REFUSED)
		buf_puts(&log, why);
	else
		sandbox_console_tail(sb, 3, &log);
	free(sb->fallback);
	xasprintf(&sb->fallback, "%s%s%s", what[ev], log.len > 0 ? ": " : "",
	    log.len > 0 ? log.data : "");
	buf_free(&log);
	/*
	 * A refusal, or QEMU's exit, is the template's fault: it goes. A
	 * restore only too slow is more likely the machine's (many starts
	 * at once): the template stays for the next run, this one boots.
	 */
	if (ev == SBE_DEADLINE) {
		log_debug("template %s did not restore in time (%s); booting "
		    "instead, the template kept", sb->tpl.key, sb->fallback);
		sb->keep_template = 1;
	} else {
		log_debug("template %s did not restore (%s); booting instead",
		    sb->tpl.key, sb->fallback);
		template_discard(&sb->tpl);
	}
	sandbox_set_state(sb, sb->state == SBS_CLONING ? SBS_RECOVERING :
	    SBS_RELAUNCHING);
	if (qemu_running(sb->qemu))
		qemu_kill(sb->qemu, SIGKILL);
	else
		sandbox_event(sb, SBE_EXITED, NULL);
}

/*
 * The last QEMU is reaped: launch again. After a failed restore, booting;
 * after a failed restore of the template this run has just saved, booting
 * without one (a state the owner sees as "saving" still, since its states
 * only move forward); after that save, restoring it.
 */
static void
sandbox_relaunch(struct sandbox *sb, enum sbe ev, const char *why)
{
	char	*cause = NULL;
	enum sbs next;

	(void)why;
	sandbox_launch_free(sb);
	switch (sb->state) {
	case SBS_RESTARTING:
		sb->mode = SB_RESTORE;
		next = SBS_CLONING;
		break;
	case SBS_RECOVERING:
		template_unlock(&sb->tpl);
		sb->mode = SB_COLD;
		next = SBS_CONFIGURING;
		break;
	default:
		sandbox_rechoose_mode(sb);
		next = sandbox_launched(sb);
		break;
	}
	if (sandbox_launch(sb, &cause) == -1) {
		sandbox_launch_free(sb);
		sandbox_fail(sb, ev, cause);
		free(cause);
		return;
	}
	sandbox_set_state(sb, next);
}

/* Ready a moment ago: a spare QEMU in its shape, if it is still ready. */
static void
sandbox_spare_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;

	(void)loop;
	(void)revents;
	if (sb->state == SBS_READY)
		sandbox_spare_make(sb);
}

/* The agent answered with this sandbox's token, configured. */
static void
sandbox_ready(struct sandbox *sb, enum sbe ev, const char *why)
{
	const char	*us;

	(void)ev;
	sb->t_ready = util_now();
	if (why != NULL && (us = strstr(why, "\"setup_us\":")) != NULL)
		sb->guest_setup = strtod(us + 11, NULL) / 1e6;
	ev_timer_stop(sb->loop, &sb->deadline);
	gate_release(sb->gate);
	sandbox_set_state(sb, SBS_READY);
	sandbox_live_start(sb);
	/* The monitor is the pause's from now on; a restore's script is done. */
	qmp_script_free(sb->incoming);
	sb->incoming = NULL;
	if (sb->qmp_fd != -1 && sb->qmp == NULL)
		sb->qmp = qmp_conn_new(sb->loop, sb->qmp_fd);
	log_debug("agent ready: %s", why);
	/* A spare for the next restore of this shape, once this one is told. */
	if (sb->snap != NULL) {
		ev_timer_set(&sb->spare, 0, 0);
		ev_timer_start(sb->loop, &sb->spare);
	}
	if (sb->cbs.ready != NULL)
		sb->cbs.ready(sb, sb->cbs.arg);
}

/* The build booted to template state: save it (the loop waits). */
static void
sandbox_saving(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	(void)why;
	sandbox_set_state(sb, SBS_SAVING);
	sandbox_save(sb);
	sandbox_event(sb, SBE_SAVED, NULL);
}

/*
 * Saved or not: the guest gets its own configuration. Saved with shared
 * RAM, the build's QEMU must not go on (its guest's memory is the
 * template's file): it is killed, and its reaping restores the template,
 * as every later run will.
 */
static void
sandbox_configure(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	(void)why;
	if (sb->built && sb->tpl.format == TEMPLATE_SHARED) {
		sandbox_set_state(sb, SBS_RESTARTING);
		if (qemu_running(sb->qemu))
			qemu_kill(sb->qemu, SIGKILL);
		else
			sandbox_event(sb, SBE_EXITED, NULL);
		return;
	}
	sandbox_set_state(sb, SBS_CONFIGURING);
	sandbox_send_setup(sb);
}

/* QMP stop returned: the vCPUs stand still, so the pings stop too. */
static void
sandbox_paused(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	(void)why;
	sandbox_set_state(sb, SBS_PAUSED);
	ev_timer_stop(sb->loop, &sb->live);
}

/* QMP cont returned: running again, the pings with it. */
static void
sandbox_resumed(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	(void)why;
	sandbox_set_state(sb, SBS_READY);
	sandbox_live_resume(sb);
}

/* QEMU did not stop within the grace. */
static void
sandbox_kill(struct sandbox *sb, enum sbe ev, const char *why)
{
	(void)ev;
	(void)why;
	if (!qemu_running(sb->qemu))
		return;
	log_warnx("QEMU did not stop within %.0f s; killing it",
	    SANDBOX_KILL_GRACE);
	qemu_kill(sb->qemu, SIGKILL);
}

/*
 * What each event does in each state: the whole behaviour of a sandbox.
 * NOP nothing, DROP dead at once (nothing ran), READY ready, SAVE save the
 * template, CONF configure the saved guest (or restore its template),
 * FAIL tell the owner and stop, LATE fail for the deadline, DEATH fail
 * saying why QEMU exited, UNREST give the restore up, AGAIN launch again
 * (booting, or restoring the template just saved), GO launch once queued,
 * UNQ stop while queued, STOP stop, GONE dead
 * once QEMU and the console are, KILL SIGKILL, PAUSE paused, RESUME ready
 * again.
 */
#define NOP	sandbox_nop
#define DROP	sandbox_drop
#define READY	sandbox_ready
#define SAVE	sandbox_saving
#define CONF	sandbox_configure
#define FAIL	sandbox_fail
#define LATE	sandbox_late
#define DEATH	sandbox_died
#define UNREST	sandbox_unrestore
#define AGAIN	sandbox_relaunch
#define GONE	sandbox_gone
#define KILL	sandbox_kill
#define STOP	sandbox_stopping
#define GO	sandbox_go
#define UNQ	sandbox_unqueue
#define PAUSE	sandbox_paused
#define RESUME	sandbox_resumed
const sandbox_action sandbox_actions[SBS_COUNT][SBE_COUNT] = {
/*                    up      refused setupf  broken  saved   deadline
 *                    lost    halted  exited  eof     stop    kill
 *                    go      paused  resumed */
[SBS_NEW] =         { NOP,    NOP,    NOP,    NOP,    NOP,    NOP,
                      NOP,    NOP,    NOP,    NOP,    DROP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_QUEUED] =      { NOP,    NOP,    NOP,    NOP,    NOP,    NOP,
                      NOP,    NOP,    NOP,    NOP,    UNQ,    NOP,
                      GO,     NOP,    NOP },
[SBS_BOOTING] =     { READY,  FAIL,   FAIL,   FAIL,   NOP,    LATE,
                      NOP,    NOP,    DEATH,  NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_BUILDING] =    { SAVE,   FAIL,   FAIL,   FAIL,   NOP,    LATE,
                      NOP,    NOP,    DEATH,  NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_SAVING] =      { NOP,    NOP,    NOP,    NOP,    CONF,   NOP,
                      NOP,    NOP,    NOP,    NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_CONFIGURING] = { READY,  FAIL,   FAIL,   FAIL,   NOP,    LATE,
                      NOP,    NOP,    DEATH,  NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_RESTARTING] =  { NOP,    NOP,    NOP,    NOP,    NOP,    LATE,
                      NOP,    NOP,    AGAIN,  NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_CLONING] =     { READY,  UNREST, FAIL,   FAIL,   NOP,    UNREST,
                      NOP,    NOP,    UNREST, NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_RECOVERING] =  { NOP,    NOP,    NOP,    NOP,    NOP,    NOP,
                      NOP,    NOP,    AGAIN,  NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_RESTORING] =   { READY,  UNREST, FAIL,   FAIL,   NOP,    UNREST,
                      NOP,    NOP,    UNREST, NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_RELAUNCHING] = { NOP,    NOP,    NOP,    NOP,    NOP,    NOP,
                      NOP,    NOP,    AGAIN,  NOP,    STOP,   NOP,
                      NOP,    NOP,    NOP },
[SBS_READY] =       { NOP,    NOP,    NOP,    FAIL,   NOP,    NOP,
                      FAIL,   FAIL,   DEATH,  NOP,    STOP,   NOP,
                      NOP,    PAUSE,  NOP },
[SBS_PAUSED] =      { NOP,    NOP,    NOP,    FAIL,   NOP,    NOP,
                      NOP,    FAIL,   DEATH,  NOP,    STOP,   NOP,
                      NOP,    NOP,    RESUME },
[SBS_STOPPING] =    { NOP,    NOP,    NOP,    NOP,    NOP,    NOP,
                      NOP,    NOP,    GONE,   GONE,   NOP,    KILL,
                      NOP,    NOP,    NOP },
[SBS_DEAD] =        { NOP,    NOP,    NOP,    NOP,    NOP,    NOP,
                      NOP,    NOP,    NOP,    NOP,    NOP,    NOP,
                      NOP,    NOP,    NOP },
};
#undef NOP
#undef DROP
#undef READY
#undef SAVE
#undef CONF
#undef FAIL
#undef LATE
#undef DEATH
#undef UNREST
#undef AGAIN
#undef GONE
#undef KILL
#undef STOP
#undef GO
#undef UNQ
#undef PAUSE
#undef RESUME

/* The transition function: what ev does in the sandbox's state. */
void
sandbox_event(struct sandbox *sb, enum sbe ev, const char *why)
{
	assert(sb->state < SBS_COUNT && ev < SBE_COUNT);
	sandbox_actions[sb->state][ev](sb, ev, why);
}

static void
sandbox_deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	sandbox_event(w->data, SBE_DEADLINE, NULL);
}

static void
sandbox_kill_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	sandbox_event(w->data, SBE_KILL, NULL);
}

/* QEMU was reaped (qemu.c, through ev_child). */
static void
sandbox_exit_cb(struct qemu *q, void *arg)
{
	struct sandbox	*sb = arg;

	(void)q;
	ev_timer_stop(sb->loop, &sb->kill_timer);
	sandbox_event(sb, SBE_EXITED, NULL);
}

struct sandbox *
sandbox_new(struct ev_loop *loop, const struct profile *p,
    const struct sandbox_cbs *cbs)
{
	struct sandbox	*sb;
	int		 i;

	sb = xcalloc(1, sizeof *sb);
	sb->loop = loop;
	sb->profile = p;
	sb->cbs = *cbs;
	sb->event = sandbox_event;
	sb->state = SBS_NEW;
	sb->qemu = qemu_new(loop, sandbox_exit_cb, NULL, sb);
	sb->console_guest_fd = -1;
	sb->qmp_fd = sb->qmp_guest_fd = -1;
	sb->state_fd = sb->ram_fd = -1;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		sb->port_guest_fd[i] = -1;
	ev_init(&sb->deadline, sandbox_deadline_cb);
	sb->deadline.data = sb;
	ev_init(&sb->kill_timer, sandbox_kill_cb);
	sb->kill_timer.data = sb;
	ev_init(&sb->builder, sandbox_builder_cb);
	sb->builder.data = sb;
	ev_init(&sb->spare, sandbox_spare_cb);
	sb->spare.data = sb;
	return (sb);
}

/* Share these host trees (the sandbox takes them over); before start. */
void
sandbox_set_shares(struct sandbox *sb, struct share *shares, size_t n)
{
	assert(sb->state == SBS_NEW);
	sb->shares = shares;
	sb->nshares = n;
}

/* Boot on a fresh overlay over this base image (a file); before start. */
void
sandbox_set_image(struct sandbox *sb, const char *path)
{
	assert(sb->state == SBS_NEW);
	free(sb->image);
	sb->image = xstrdup(path);
}

/*
 * The image is a disk of the guest's own, written in place: no overlay,
 * no template (a restore would bring back an older disk); before start.
 */
void
sandbox_set_disk_writable(struct sandbox *sb)
{
	assert(sb->state == SBS_NEW && sb->image != NULL && sb->nlayers == 0);
	sb->image_writable = 1;
}

/*
 * Over the base, these layers of setup (core/image/image_layer.c), bottom
 * first, each of which must be a file of store; before start.
 */
void
sandbox_set_layers(struct sandbox *sb, char *const *paths, size_t n,
    const char *store)
{
	size_t	i;

	assert(sb->state == SBS_NEW && sb->nlayers == 0);
	sb->layers = xcalloc(n + 1, sizeof *sb->layers);
	for (i = 0; i < n; i++)
		sb->layers[i] = xstrdup(paths[i]);
	sb->nlayers = n;
	free(sb->layer_store);
	sb->layer_store = xstrdup(store);
}

/* The run's overlay, which holds all the guest wrote: a layer's build. */
const char *
sandbox_overlay_path(struct sandbox *sb)
{
	return (sb->disk.overlay);
}

/* QEMU ended by itself or on the polite SIGTERM, not SIGKILLed. */
int
sandbox_qemu_exited(struct sandbox *sb)
{
	return (qemu_reaped(sb->qemu) && WIFEXITED(qemu_wstatus(sb->qemu)));
}

/*
 * The base image probed, its overlay's size and path in the run directory
 * set, and the base's real path written there as "image": qsup image rm and ls see
 * from it that the base is in use, and by whom.
 */
static int
sandbox_disk(struct sandbox *sb, char **cause)
{
	char	*path, *text;
	int	 rc;
	size_t	 i;

	if (sb->image == NULL)
		return (0);
	/* Not a base some server's sandbox writes (disk_reg.c). */
	if (!sb->image_writable && disk_reg_check_base(sb->image, cause) == -1)
		return (-1);
	if (disk_probe(sb->image, &sb->disk, cause) == -1)
		return (-1);
	/* A pulled base on the disk before anything is built on it. */
	image_settle(sb->disk.base);
	sb->disk.writable = sb->image_writable;
	for (i = 0; i < sb->nlayers; i++) {
		if (disk_add_layer(&sb->disk, sb->layers[i], sb->layer_store,
		    cause) == -1)
			return (-1);
	}
	xasprintf(&path, "%s/image", sb->rundir);
	xasprintf(&text, "%s\n", sb->disk.base);
	rc = util_write_file(path, text);
	free(text);
	free(path);
	if (rc == -1) {
		xasprintf(cause, "%s: %s", sb->rundir, strerror(errno));
		return (-1);
	}
	if (sb->disk.writable) {
		/* The disk as it is: the guest sees its own size. */
		sb->disk.size = sb->disk.info.virtual_size;
		return (0);
	}
	/* Made by each launch, over what its mode needs (sandbox_launch). */
	return (disk_overlay_plan(&sb->disk, sb->rundir,
	    sb->profile->disk_size, cause));
}

/*
 * Queue for a start slot: starts share this machine's CPUs through the
 * gate, in the order they came, rather than all starving each other into
 * their deadlines (the deadline runs from the launch). SBE_GO launches.
 */
static void
sandbox_queue(struct sandbox *sb)
{
	char	*dir, *base;
	int	 slots = gate_slots();

	base = sandbox_run_path();
	xasprintf(&dir, "%s/gate", base);
	free(base);
	sb->gate = gate_new(sb->loop, dir, slots, sandbox_gate_cb, sb);
	free(dir);
	if (gate_ahead(sb->gate) > 0)
		log_info("waiting for a start slot: %d start%s ahead of this "
		    "one (%d at a time on this machine)", gate_ahead(sb->gate),
		    gate_ahead(sb->gate) == 1 ? "" : "s", slots);
}

static void
sandbox_gate_cb(void *arg)
{
	sandbox_event(arg, SBE_GO, NULL);
}

/* Another qsup builds our template: look again, then queue. */
static void
sandbox_builder_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;

	(void)revents;
	if (!sandbox_builder_done(sb, util_now() - sb->t_queued))
		return;
	ev_timer_stop(loop, w);
	sandbox_queue(sb);
}

/*
 * Prepare the run directory, the shares and the network, choose between
 * booting and restoring, and queue to launch QEMU.
 */
int
sandbox_start(struct sandbox *sb, const struct accel_choice *accel,
    char **cause)
{
	char	*base = NULL, *path;
	size_t	 i;
	int	 rc, stage, wait;

	assert(sb->state == SBS_NEW);
	sb->accel.accel = accel->accel;
	sb->accel.why = xstrdup(accel->why);
	if (guest_resolve(sb->profile, &sb->guest, cause) == -1)
		return (-1);
	if ((base = sandbox_run_base(cause)) == NULL)
		return (-1);
	xasprintf(&sb->rundir, "%s/sb-XXXXXX", base);
	free(base);
	if (mkdtemp(sb->rundir) == NULL) {
		xasprintf(cause, "%s: %s", sb->rundir, strerror(errno));
		free(sb->rundir);
		sb->rundir = NULL;
		return (-1);
	}
	xasprintf(&path, "%s/pid", sb->rundir);
	xasprintf(&base, "%ld\n", (long)getpid());
	rc = util_write_file(path, base);
	free(base);
	free(path);
	if (rc == -1) {
		xasprintf(cause, "%s: %s", sb->rundir, strerror(errno));
		return (-1);
	}
	if (share_prepare(sb->shares, sb->nshares, cause) == -1 ||
	    share_check_model(sb->shares, sb->nshares,
	    sb->profile->virtfs_security_model, cause) == -1)
		return (-1);
	stage = sandbox_stage_exec(sb);
	for (i = 0; i < sb->nshares; i++) {
		xasprintf(&path, "%s/%s", sb->rundir, sb->shares[i].tag);
		sb->shares[i].use_cache = sb->profile->virtfs_cache;
		rc = share_stage(&sb->shares[i], path, stage, cause);
		free(path);
		if (rc == -1)
			return (-1);
	}
	if (sandbox_net(sb, cause) == -1 || sandbox_disk(sb, cause) == -1)
		return (-1);
	if (cow_wanted(sb->shares, sb->nshares) && cow_make(&sb->cow,
	    sb->rundir, sb->profile->cow_size, cause) == -1)
		return (-1);
	/* A snapshot's guest holds its source's token, and boots no more. */
	sb->token = sb->snap != NULL ? xstrdup(sb->snap->token) :
	    token_hex(32);

	wait = sb->snap != NULL ? 0 : sandbox_choose_mode(sb);
	sandbox_set_state(sb, SBS_QUEUED);
	sb->t_queued = util_now();
	if (wait) {
		ev_timer_set(&sb->builder, 0, SANDBOX_BUILDER_POLL);
		ev_timer_again(sb->loop, &sb->builder);
	} else
		sandbox_queue(sb);
	return (0);
}

/*
 * base_image_untouched for --json: the base's path and whether, and how
 * it is known that, nothing reached it; null without an image.
 */
void
sandbox_disk_report(struct sandbox *sb, struct buf *b)
{
	if (sb->disk.base == NULL)
		buf_puts(b, "null");
	else
		(void)disk_untouched(&sb->disk, b);
}

double
sandbox_overlay_seconds(struct sandbox *sb)
{
	return (sb->disk.overlay_seconds);
}

/* Polite request, timer, SIGKILL (a table entry: SBE_STOP). */
void
sandbox_stop(struct sandbox *sb, const char *why)
{
	sandbox_event(sb, SBE_STOP, why);
}

/* QMP's answer to a pause or a resume: the table moves, then the owner hears. */
static void
sandbox_qmp_done_cb(const char *error, void *arg)
{
	struct sandbox	*sb = arg;
	sandbox_done_cb	 cb = sb->qmp_cb;
	int		 pausing = sb->state == SBS_READY;

	sb->qmp_cb = NULL;
	if (error == NULL)
		sandbox_event(sb, pausing ? SBE_PAUSED : SBE_RESUMED, NULL);
	if (cb != NULL)
		cb(sb, error, sb->qmp_arg);
}

/* QMP cmd for a sandbox in state want, cb told once it answered. */
static int
sandbox_qmp(struct sandbox *sb, enum sbs want, const char *cmd,
    sandbox_done_cb cb, void *arg, char **cause)
{
	if (sb->state != want || sb->qmp == NULL) {
		xasprintf(cause, "the sandbox is %s", sandbox_public_name(
		    sandbox_public(sb->state)));
		return (-1);
	}
	if (sb->qmp_cb != NULL) {
		xasprintf(cause, "a pause or resume is under way");
		return (-1);
	}
	if (sb->snap_job != NULL) {
		xasprintf(cause, "a snapshot is under way");
		return (-1);
	}
	if (qmp_conn_command(sb->qmp, cmd, sandbox_qmp_done_cb, sb,
	    cause) == -1)
		return (-1);
	sb->qmp_cb = cb;
	sb->qmp_arg = arg;
	return (0);
}

/*
 * Stop the guest's vCPUs (QMP stop): its memory, devices and files stay
 * as they are, and QEMU takes no CPU. cb is told once it is paused (the
 * state SB_PAUSED), or why not; -1 with *cause unless it is ready.
 */
int
sandbox_pause(struct sandbox *sb, sandbox_done_cb cb, void *arg,
    char **cause)
{
	return (sandbox_qmp(sb, SBS_READY, "stop", cb, arg, cause));
}

/* Run a paused sandbox again (QMP cont); as sandbox_pause. */
int
sandbox_resume(struct sandbox *sb, sandbox_done_cb cb, void *arg,
    char **cause)
{
	return (sandbox_qmp(sb, SBS_PAUSED, "cont", cb, arg, cause));
}

enum sandbox_state
sandbox_state(struct sandbox *sb)
{
	return (sandbox_public(sb->state));
}

struct agent_conn *
sandbox_port(struct sandbox *sb, int i)
{
	assert(i >= 0 && i < QSUP_PORT_COUNT);
	return (sb->ports[i]);
}

const struct accel_choice *
sandbox_accel(struct sandbox *sb)
{
	return (&sb->accel);
}

double
sandbox_boot_seconds(struct sandbox *sb)
{
	if (sb->t_ready == 0)
		return (0);
	return (sb->t_ready - sb->t_spawn);
}

/*
 * Of its start (sandbox_boot_seconds): a restore's QEMU until it took
 * the template's state (0 for other starts), and the agent's own work on
 * its /setup (0 if it did not say). Between them: the state's load, the
 * guest's wake and the request's round trip.
 */
void
sandbox_boot_split(struct sandbox *sb, double *qemu_start,
    double *guest_setup)
{
	*qemu_start = sb->mode == SB_RESTORE && !sb->built &&
	    sb->t_loading > sb->t_spawn && sb->t_spawn > 0 ?
	    sb->t_loading - sb->t_spawn : 0;
	*guest_setup = sb->guest_setup;
}

/* How this sandbox started: "cold", "template-build" or "warm". */
const char *
sandbox_start_kind(struct sandbox *sb)
{
	if (sb->snap != NULL)
		return ("snapshot");
	switch (sb->mode) {
	case SB_COLD:
		return ("cold");
	case SB_BUILD:
		return ("template-build");
	case SB_RESTORE:
		return (sb->built ? "template-build" : "warm");
	}
	return ("?");
}

/* Why a template was given up, or NULL. */
const char *
sandbox_fallback(struct sandbox *sb)
{
	return (sb->fallback);
}

/* Seconds spent queued: for another's template, for a start slot. */
double
sandbox_queued_seconds(struct sandbox *sb)
{
	return (sb->queued_seconds);
}

double
sandbox_save_seconds(struct sandbox *sb)
{
	return (sb->save_seconds);
}

/* The network, for its figures; NULL without a card. */
struct net *
sandbox_net_of(struct sandbox *sb)
{
	return (sb->net);
}

/* QEMU's resident memory now, or -1. */
long
sandbox_qemu_rss_kb(struct sandbox *sb)
{
	return (qemu_rss_kb(sb->qemu));
}

/* The console's last OOM-killer line, or NULL; the caller frees it. */
char *
sandbox_console_oom(struct sandbox *sb)
{
	if (sb->console == NULL)
		return (NULL);
	return (serial_find(sb->console, "Out of memory"));
}

/* The last lines of the console and of QEMU's own messages. */
void
sandbox_console_tail(struct sandbox *sb, int nlines, struct buf *out)
{
	if (sb->console != NULL)
		serial_tail(sb->console, nlines, out);
	if (qemu_log(sb->qemu)->len > 0) {
		if (out->len > 0 && out->data[out->len - 1] != '\n')
			buf_add(out, "\n", 1);
		buf_add(out, qemu_log(sb->qemu)->data, qemu_log(sb->qemu)->len);
	}
}

static void
sandbox_snap_forget(struct sandbox *sb)
{
	if (sb->snap == NULL)
		return;
	ev_timer_stop(sb->loop, &sb->snap->status);
	free(sb->snap->dir);
	if (sb->snap->token != NULL)
		explicit_bzero(sb->snap->token, strlen(sb->snap->token));
	free(sb->snap->token);
	free(sb->snap->map);
	free(sb->snap->state);
	if (sb->snap->pipe != -1)
		close(sb->snap->pipe);
	if (sb->snap->tpl_fd != -1)
		close(sb->snap->tpl_fd);
	free(sb->snap);
	sb->snap = NULL;
}

void
sandbox_free(struct sandbox *sb)
{
	size_t	i;

	if (sb == NULL)
		return;
	/*
	 * Never leave QEMU behind, even on an error path: it is killed and
	 * reaped through the loop, which runs meanwhile, so the owner hears
	 * nothing more and finds the sandbox stopping.
	 */
	memset(&sb->cbs, 0, sizeof sb->cbs);
	if (sb->state > SBS_NEW && sb->state < SBS_STOPPING)
		sb->state = SBS_STOPPING;
	ev_timer_stop(sb->loop, &sb->deadline);
	ev_timer_stop(sb->loop, &sb->kill_timer);
	ev_timer_stop(sb->loop, &sb->live);
	ev_timer_stop(sb->loop, &sb->builder);
	gate_free(sb->gate);
	sandbox_launch_free(sb);
	sandbox_snap_forget(sb);
	qemu_free(sb->qemu);
	net_free(sb->net);
	/* Staged copies may hold directories not even we can write to. */
	for (i = 0; i < sb->nshares; i++) {
		if (sb->shares[i].staged && sb->shares[i].cache_fd <= 0)
			staging_remove(sb->shares[i].host);
	}
	if (sb->rundir != NULL && util_rm_rf(sb->rundir) == -1)
		log_warn("cannot remove %s", sb->rundir);
	free(sb->early_error);
	free(sb->rundir);
	if (sb->token != NULL) {
		explicit_bzero(sb->token, strlen(sb->token));
		free(sb->token);
	}
	if (sb->tpl.dir != NULL)
		template_free(&sb->tpl);
	for (i = 0; i < sb->nshares; i++)
		share_free(&sb->shares[i]);
	free(sb->shares);
	guest_free(&sb->guest);
	disk_free(&sb->disk);
	cow_free(&sb->cow);
	free(sb->image);
	for (i = 0; i < sb->nlayers; i++)
		free(sb->layers[i]);
	free(sb->layers);
	free(sb->layer_store);
	free(sb->accel.why);
	free(sb->fallback);
	free(sb);
}
