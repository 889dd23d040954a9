/*
 * A guest told what it cannot know by itself: by its agent's own POST
 * /refresh (the clock, entropy, a card's address: no process, so no
 * program for a new QEMU to translate first; sandbox_fresh.c), or, for a
 * new machine-id, by one exec of a shell script: above exec.c, which
 * sandbox_snap.c (below it) does not
 * call: it ends a fork's exec at QEMU's death through snap->refresh_gone.
 * The host's clock always (a guest's clock stands still while it is
 * paused, and a restored one's is its source's); for a copy of a
 * snapshot, an identity of its own: fresh entropy, a new address on its
 * network card (virtio-net's address is in the migrated device state,
 * so only the guest can change it: the driver then tells the device),
 * and a new /etc/machine-id when asked. The warm pool's takes, a resume
 * and a fork all come here (qsup serve), so they set the clock alike.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>

#include "sandbox_int.h"

/* The script: the clock first, so the rest runs at the right time. */
static char *
sandbox_fresh_script(const struct sandbox_fresh *f)
{
	struct timespec	 ts;
	struct buf	 b = { 0 };
	char		*hex;

	/* Rounded to the nearest second: date -s takes whole ones. */
	clock_gettime(CLOCK_REALTIME, &ts);
	buf_printf(&b, "date -u -s @%lld >/dev/null", (long long)ts.tv_sec +
	    (ts.tv_nsec >= 500000000L));
	if (f != NULL && f->entropy) {
		hex = token_hex(64);
		buf_printf(&b, " && printf %%s %s >/dev/urandom", hex);
		explicit_bzero(hex, strlen(hex));
		free(hex);
	}
	/* Its card: the first interface that is a device (lo is not). */
	if (f != NULL && f->mac != NULL)
		buf_printf(&b, " && for d in /sys/class/net/*; do "
		    "[ -e \"$d/device\" ] || continue; "
		    "ip link set dev \"${d##*/}\" address %s || exit 1; "
		    "break; done", f->mac);
	if (f != NULL && f->machine_id) {
		hex = token_hex(16);
		buf_printf(&b, " && printf '%%s\\n' %s >/etc/machine-id", hex);
		free(hex);
	}
	return (b.data);
}

/*
 * The exec that tells sb's guest f (NULL: the clock only), on ports; its
 * owner keeps it, then starts it (its end may come from exec_start),
 * hears of its end through cbs, and frees it.
 */
struct exec *
sandbox_fresh_exec(struct sandbox *sb, const struct sandbox_fresh *f,
    const struct exec_ports *ports, const struct exec_cbs *cbs)
{
	static char *const	 env[] = { "TZ=UTC" };
	struct exec_spec	 spec;
	struct exec		*x;
	char			*script, *argv[4];

	script = sandbox_fresh_script(f);
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = script;
	argv[3] = NULL;
	memset(&spec, 0, sizeof spec);
	spec.kind = EXEC_COMMAND;
	spec.argv = argv;
	spec.env = env;
	spec.nenv = 1;
	spec.timeout = 30;
	x = exec_new(sb->loop, sb, &spec, ports, cbs);
	explicit_bzero(script, strlen(script));
	free(script);
	return (x);
}

/* The identity's exec ended: its owner hears how. */
static void
sandbox_refresh_done(struct exec *x, const struct exec_result *r, void *arg)
{
	struct sandbox	*sb = arg;
	sandbox_done_cb	 cb;
	char		*msg = NULL;

	if (sb->snap == NULL || sb->snap->refresh != x)
		return;
	sb->snap->refresh = NULL;
	cb = sb->snap->refresh_cb;
	if (r->end != EXEC_END_EXITED || r->status != 0)
		xasprintf(&msg, "the fresh identity was not set: %s",
		    r->error != NULL ? r->error : r->exit_error != NULL ?
		    r->exit_error : "its command failed");
	exec_free(x);
	if (cb != NULL)
		cb(sb, msg, sb->snap->refresh_arg);
	free(msg);
}

/* The agent's own refresh of a copy is over: its owner hears how. */
static void
sandbox_refresh_sent(struct sandbox *sb, int gone, const char *error,
    void *arg)
{
	char	*msg = NULL;

	(void)gone;
	(void)arg;
	if (sb->snap == NULL || sb->snap->refresh_cb == NULL)
		return;
	if (error != NULL)
		xasprintf(&msg, "the fresh identity was not set: %s", error);
	sb->snap->refresh_cb(sb, msg, sb->snap->refresh_arg);
	free(msg);
}

/*
 * A copy of a snapshot made its own (f: what besides the clock), through
 * an exec on agent port: a copy's RNG would otherwise go on as its
 * source's did, and its card keep its source's address. cb is told once
 * done, or why not; -1 with *cause if it cannot start.
 */
int
sandbox_refresh(struct sandbox *sb, int port, const struct sandbox_fresh *f,
    sandbox_done_cb cb, void *arg, char **cause)
{
	struct exec_ports	 ports;
	struct exec_cbs		 cbs;

	if (sb->snap == NULL || sb->state != SBS_READY ||
	    sb->snap->refresh != NULL || sb->fresh_busy) {
		xasprintf(cause, "not a ready copy of a snapshot");
		return (-1);
	}
	if (f->mac != NULL && sb->net == NULL) {
		xasprintf(cause, "it has no network card for an address");
		return (-1);
	}
	sb->snap->refresh_cb = cb;
	sb->snap->refresh_arg = arg;
	/* The clock, entropy and address: the agent sets them itself. */
	if (!f->machine_id)
		return (sandbox_fresh_send(sb, port, f->mac,
		    sandbox_refresh_sent, NULL, cause));
	ports.stream = port;
	ports.in = -1;
	ports.control = QSUP_PORT_COUNT - 2;
	memset(&cbs, 0, sizeof cbs);
	cbs.done = sandbox_refresh_done;
	cbs.arg = sb;
	sb->snap->refresh_gone = exec_gone;	/* for sandbox_snap_abort */
	sb->snap->refresh = sandbox_fresh_exec(sb, f, &ports, &cbs);
	exec_start(sb->snap->refresh);
	return (0);
}
