/*
 * The defaults of an image made by "qsup image build" from an OCI image:
 * QSUP_IMAGE_CONF inside it, in the seed's own format, read once the
 * image is the root. Only env, cwd, entrypoint and cmd are taken from it
 * (an image cannot set the token, the shares or the firewall): its env
 * goes under the profile's and the command's, its cwd applies when the
 * profile names none or "/", the default profile's (a command's own cwd,
 * qsup run -w, wins anyway), and its
 * entrypoint is put before the argv of a command that asks for it, as
 * "docker run" does (qsup run asks; serve's /exec, like "docker exec",
 * does not). A config that does not parse is a setup error.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* Read the image's config, if it has one, into st->cfg. */
void
imageconf_load(struct init_state *st)
{
	struct agent_config	 ic;
	struct stat		 sb;
	char			*text, *cause = NULL, **env;
	size_t			 len, i, n, nimg;
	int			 fd;

	if ((fd = open(QSUP_IMAGE_CONF, O_RDONLY|O_NOFOLLOW|O_NONBLOCK|
	    O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			util_set_error(&st->error, "%s: %s", QSUP_IMAGE_CONF,
			    strerror(errno));
		return;
	}
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		util_set_error(&st->error, "%s: not a regular file",
		    QSUP_IMAGE_CONF);
		close(fd);
		return;
	}
	/* The file checked, not whatever is at its name by now. */
	if (util_read_fd(fd, &text, &len, AGENT_CONFIG_MAX) == -1) {
		util_set_error(&st->error, "%s: %s", QSUP_IMAGE_CONF,
		    strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	memset(&ic, 0, sizeof ic);
	if (config_parse(&ic, text, len, &cause) == -1) {
		util_set_error(&st->error, "%s: %s", QSUP_IMAGE_CONF, cause);
		free(cause);
		goto out;
	}
	/* The image's env first: the profile's and the command's override. */
	nimg = ic.nenv;
	n = ic.nenv + st->cfg.nenv;
	env = xcalloc(n > 0 ? n : 1, sizeof *env);
	for (i = 0; i < ic.nenv; i++)
		env[i] = ic.env[i];
	for (i = 0; i < st->cfg.nenv; i++)
		env[ic.nenv + i] = st->cfg.env[i];
	free(st->cfg.env);
	free(ic.env);
	st->cfg.env = env;
	st->cfg.nenv = n;
	ic.env = NULL;
	ic.nenv = 0;
	/* "/" is the default profile's: the image's WorkingDir wins it. */
	if (ic.cwd != NULL && (st->cfg.cwd == NULL ||
	    strcmp(st->cfg.cwd, "/") == 0)) {
		free(st->cfg.cwd);
		st->cfg.cwd = ic.cwd;
		ic.cwd = NULL;
	}
	st->entrypoint = ic.entrypoint;
	st->nentrypoint = ic.nentrypoint;
	ic.entrypoint = NULL;
	ic.nentrypoint = 0;
	log_warnx("%s: %zu env, cwd %s, entrypoint of %zu", QSUP_IMAGE_CONF,
	    nimg, st->cfg.cwd != NULL ? st->cfg.cwd : "/", st->nentrypoint);
out:
	config_free(&ic);
	free(text);
}

/* The entrypoint and then argv, or NULL when the image has none. */
char **
imageconf_argv(const struct init_state *st, char **argv, size_t argc)
{
	char	**a;
	size_t	  i;

	if (st->nentrypoint == 0)
		return (NULL);
	a = xcalloc(st->nentrypoint + argc + 1, sizeof *a);
	for (i = 0; i < st->nentrypoint; i++)
		a[i] = st->entrypoint[i];
	for (i = 0; i < argc; i++)
		a[st->nentrypoint + i] = argv[i];
	return (a);
}
