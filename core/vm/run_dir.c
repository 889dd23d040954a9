/*
 * Where sandboxes' run directories are, and the sweep of those a killed
 * qsup left: below sandbox_launch.c and the registry of disks in use
 * (disk_reg.c), which both keep files there.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "sandbox_int.h"
#include "staging.h"

/*
 * Run directories left by a qsup that was killed outright (SIGKILL: its
 * QEMU died with it through PDEATHSIG, but nothing removed the directory):
 * those whose pid file names a process that no longer exists.
 */
static void
sandbox_sweep(const char *base)
{
	DIR		*d;
	struct dirent	*de;
	char		*path, *text;
	long		 pid;

	if ((d = opendir(base)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "sb-", 3) != 0)
			continue;
		xasprintf(&path, "%s/%s/pid", base, de->d_name);
		text = util_read_file(path, NULL, 64);
		free(path);
		if (text == NULL)
			continue;	/* being made, or not ours to judge */
		pid = strtol(text, NULL, 10);
		free(text);
		if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		xasprintf(&path, "%s/%s", base, de->d_name);
		log_debug("removing %s, left by process %ld", path, pid);
		staging_remove(path);
		free(path);
	}
	closedir(d);
}

/* Where run directories are: $XDG_RUNTIME_DIR/qsup, or /tmp/qsup-UID. */
char *
sandbox_run_path(void)
{
	const char	*xdg;
	char		*base;

	if ((xdg = getenv("XDG_RUNTIME_DIR")) != NULL && *xdg == '/')
		xasprintf(&base, "%s/qsup", xdg);
	else
		xasprintf(&base, "/tmp/qsup-%ld", (long)getuid());
	return (base);
}

/* sandbox_run_path, made if need be: ours alone, mode 0700. */
char *
sandbox_run_base(char **cause)
{
	struct stat	 st;
	char		*base;

	base = sandbox_run_path();
	if (mkdir(base, 0700) == -1 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", base, strerror(errno));
		goto fail;
	}
	if (lstat(base, &st) == -1) {
		xasprintf(cause, "%s: %s", base, strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) != 0) {
		xasprintf(cause, "%s: not a private directory of this user "
		    "(mode 0700 expected)", base);
		goto fail;
	}
	sandbox_sweep(base);
	return (base);
fail:
	free(base);
	return (NULL);
}
