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
