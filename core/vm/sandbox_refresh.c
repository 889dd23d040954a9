/*
 * A copy of a snapshot given its own identity through an exec: above
 * exec.c, which sandbox_snap.c (below it) does not call: it ends the exec
 * at QEMU's death through snap->refresh_gone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>

#include "sandbox_int.h"

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

/*
 * A copy of a snapshot made its own: the host's clock and fresh bytes
 * from the host mixed into the guest's entropy pool, through an exec on
 * agent port (a copy's RNG would otherwise go on as its source's did).
 * cb is told once done, or why not; -1 with *cause if it cannot start.
 */
int
sandbox_refresh(struct sandbox *sb, int port, sandbox_done_cb cb, void *arg,
    char **cause)
{
	struct exec_spec	 spec;
	struct exec_ports	 ports;
	struct exec_cbs		 cbs;
	struct timespec		 ts;
	char			*script, *entropy, *argv[4];

	if (sb->snap == NULL || sb->state != SBS_READY ||
	    sb->snap->refresh != NULL) {
		xasprintf(cause, "not a ready copy of a snapshot");
		return (-1);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	entropy = token_hex(64);
	xasprintf(&script, "date -u -s @%lld >/dev/null && "
	    "printf %%s %s >/dev/urandom", (long long)ts.tv_sec, entropy);
	explicit_bzero(entropy, strlen(entropy));
	free(entropy);
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = script;
	argv[3] = NULL;
	memset(&spec, 0, sizeof spec);
	spec.kind = EXEC_COMMAND;
	spec.argv = argv;
	spec.timeout = 30;
	ports.stream = port;
	ports.in = -1;
	ports.control = QSUP_PORT_COUNT - 2;
	memset(&cbs, 0, sizeof cbs);
	cbs.done = sandbox_refresh_done;
	cbs.arg = sb;
	sb->snap->refresh_cb = cb;
	sb->snap->refresh_arg = arg;
	sb->snap->refresh_gone = exec_gone;	/* for sandbox_snap_abort */
	sb->snap->refresh = exec_new(sb->loop, sb, &spec, &ports, &cbs);
	explicit_bzero(script, strlen(script));
	free(script);
	exec_start(sb->snap->refresh);
	return (0);
}

