/*
 * How long the guest may keep qsup waiting: its start (the deadline each
 * launch sets), then, once it is ready, each liveness ping. Liveness: the
 * guest's agent is pinged on a port of its own every SANDBOX_PING_EVERY
 * s; a guest that leaves one unanswered this long has stopped (halted,
 * wedged, paused). Under TCG a loaded host can slow the guest down a lot,
 * so it gets more time. A halted guest never ends QEMU, so the console's
 * word of it ends the run at once.
 */
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "sandbox_int.h"

#define SANDBOX_PING_PORT	(QSUP_PORT_COUNT - 1)
#define SANDBOX_PING_EVERY	5.0
#define SANDBOX_PING_MAX_KVM	10.0
#define SANDBOX_PING_MAX_TCG	20.0

/*
 * How long a launch may take until the agent answers: the profile's
 * start_timeout, else what a start of this kind takes under this
 * accelerator, with room to spare.
 */
double
sandbox_start_timeout(struct sandbox *sb)
{
	if (sb->profile->start_timeout > 0)
		return (sb->profile->start_timeout);
	/* A PC boot with cloud-init: about two minutes under TCG. */
	if (sandbox_boot_image(sb))
		return (sb->accel.accel == ACCEL_KVM ? 180.0 : 900.0);
	return (sb->accel.accel == ACCEL_KVM ? 20.0 : 60.0);
}

/* A ping's answer: any answer says the agent runs. */
static void
sandbox_pong_cb(int status, const char *body, size_t len, void *arg)
{
	struct sandbox	*sb = arg;
	char		*msg;

	if (sb->state != SBS_READY || status == AGENT_CLOSED)
		return;		/* QEMU is going; SBE_EXITED says why */
	if (status == AGENT_BROKEN) {
		xasprintf(&msg, "%.*s", (int)len, body);
		sb->event(sb, SBE_BROKEN, msg);
		free(msg);
		return;
	}
	if (util_now() - sb->ping_sent > sb->ping_slowest)
		sb->ping_slowest = util_now() - sb->ping_sent;
	sb->pings++;
	sb->ping_sent = 0;
}

static double
sandbox_ping_max(struct sandbox *sb)
{
	return (sb->accel.accel == ACCEL_KVM ? SANDBOX_PING_MAX_KVM :
	    SANDBOX_PING_MAX_TCG);
}

/* Send the next ping, or find the last one unanswered for too long. */
static void
sandbox_live_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;
	double		 now = util_now();
	char		*msg;

	(void)loop;
	(void)revents;
	if (sb->state != SBS_READY)
		return;
	/* qsup itself did not run (stopped, suspended): not the guest's fault. */
	if (now - sb->live_tick > 3 * SANDBOX_PING_EVERY && sb->ping_sent > 0)
		sb->ping_sent = now;
	sb->live_tick = now;
	if (sb->ping_sent > 0) {
		if (now - sb->ping_sent < sandbox_ping_max(sb))
			return;
		xasprintf(&msg, "the guest stopped answering for %.0f s",
		    now - sb->ping_sent);
		sb->event(sb, SBE_LOST, msg);
		free(msg);
		return;
	}
	sb->ping_sent = now;
	agent_request(sb->ports[SANDBOX_PING_PORT], "GET", "/ping", NULL, 0,
	    sandbox_pong_cb, NULL, sb);
}

/* Ready: the pings begin. */
void
sandbox_live_start(struct sandbox *sb)
{
	ev_init(&sb->live, sandbox_live_cb);
	sb->live.data = sb;
	sb->live_tick = util_now();
	ev_timer_set(&sb->live, SANDBOX_PING_EVERY, SANDBOX_PING_EVERY);
	ev_timer_start(sb->loop, &sb->live);
}

/*
 * Resumed: the pings again. One sent before the pause is given its whole
 * time from now: the guest could not answer while it stood still.
 */
void
sandbox_live_resume(struct sandbox *sb)
{
	if (sb->ping_sent > 0)
		sb->ping_sent = util_now();
	sb->live_tick = util_now();
	ev_timer_set(&sb->live, SANDBOX_PING_EVERY, SANDBOX_PING_EVERY);
	ev_timer_start(sb->loop, &sb->live);
}

/* Stopping: no more pings; -v says how they went. */
void
sandbox_live_stop(struct sandbox *sb)
{
	ev_timer_stop(sb->loop, &sb->live);
	if (sb->pings > 0)
		log_debug("liveness: %u pings answered, the slowest in %.3f s",
		    sb->pings, sb->ping_slowest);
}

/*
 * An important console line. A halted guest never ends QEMU, so the
 * kernel's last word ends the run at once (a later ping would too).
 */
void
sandbox_console_mark_cb(void *arg, const char *line)
{
	struct sandbox	*sb = arg;

	/* Once QEMU is reaped, sandbox_death tells it all. */
	if (!qemu_reaped(sb->qemu) && strstr(line, "reboot: System halted") != NULL)
		sb->event(sb, SBE_HALTED, "the guest halted");
}
