/*
 * A sandbox's screen (display = "vnc"): where QEMU's VNC server listens,
 * a unix socket in the run directory, for the serve code to relay to.
 */
#include <stdio.h>
#include <stdlib.h>

#include <ev.h>

#include "sandbox_int.h"

/*
 * The VNC socket's path (the caller frees it), or NULL when the sandbox
 * has no display or no run directory (yet).
 */
char *
sandbox_display_socket(struct sandbox *sb)
{
	char	*path;

	if (sb->profile->display != PROFILE_DISPLAY_VNC || sb->rundir == NULL)
		return (NULL);
	xasprintf(&path, "%s/" SANDBOX_VNC_SOCK, sb->rundir);
	return (path);
}

/*
 * QMP cmd (screendump, input-send-event) with args (a JSON object's
 * text) for a sandbox with a screen whose QEMU runs: cb is told from the
 * loop once it returned, or why not (qmp_conn_call). -1 with *cause
 * when it has no screen or is not ready or paused.
 */
int
sandbox_screen_qmp(struct sandbox *sb, const char *cmd, const char *args,
    qmp_conn_ret_cb cb, void *arg, char **cause)
{
	if (sb->profile->display != PROFILE_DISPLAY_VNC) {
		xasprintf(cause, "the sandbox has no display (display = "
		    "\"none\")");
		return (-1);
	}
	if ((sb->state != SBS_READY && sb->state != SBS_PAUSED) ||
	    sb->qmp == NULL) {
		xasprintf(cause, "the sandbox is not running (ready or "
		    "paused)");
		return (-1);
	}
	/* The request waiting on it hears of a QEMU reaped first too. */
	return (qmp_conn_call_told(sb->qmp, cmd, args, -1, cb, arg, cause));
}

/* Where a screendump may be written: a new file name in the run directory. */
char *
sandbox_screen_file(struct sandbox *sb)
{
	static unsigned	 n;
	char		*path;

	if (sb->rundir == NULL)
		return (NULL);
	xasprintf(&path, "%s/screen-%u.png", sb->rundir, ++n);
	return (path);
}

/* The screen's size in pixels: 0, or -1 when the sandbox has none. */
int
sandbox_display_size(struct sandbox *sb, int *w, int *h)
{
	if (sb->profile->display != PROFILE_DISPLAY_VNC)
		return (-1);
	return (profile_display_parse(sb->profile->display_size, w, h));
}
