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

static char	**imageconf_entrypoint;
static size_t	  imageconf_nentrypoint;

/* Read the image's config, if it has one, into agent_cfg. */
void
imageconf_load(void)
{
	struct agent_config	 ic;
	struct stat		 st;
	char			*text, *cause = NULL, **env;
	size_t			 len, i, n, nimg;
	int			 fd;

	if ((fd = open(QSUP_IMAGE_CONF, O_RDONLY|O_NOFOLLOW|O_NONBLOCK|
	    O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			agent_set_error("%s: %s", QSUP_IMAGE_CONF,
			    strerror(errno));
		return;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		agent_set_error("%s: not a regular file", QSUP_IMAGE_CONF);
		close(fd);
		return;
	}
	/* The file checked, not whatever is at its name by now. */
	if (util_read_fd(fd, &text, &len, AGENT_CONFIG_MAX) == -1) {
		agent_set_error("%s: %s", QSUP_IMAGE_CONF, strerror(errno));
		close(fd);
		return;
	}
	close(fd);
	memset(&ic, 0, sizeof ic);
	if (config_parse(&ic, text, len, &cause) == -1) {
		agent_set_error("%s: %s", QSUP_IMAGE_CONF, cause);
		free(cause);
		goto out;
	}
	/* The image's env first: the profile's and the command's override. */
	nimg = ic.nenv;
	n = ic.nenv + agent_cfg.nenv;
	env = xcalloc(n > 0 ? n : 1, sizeof *env);
	for (i = 0; i < ic.nenv; i++)
		env[i] = ic.env[i];
	for (i = 0; i < agent_cfg.nenv; i++)
		env[ic.nenv + i] = agent_cfg.env[i];
	free(agent_cfg.env);
	free(ic.env);
	agent_cfg.env = env;
	agent_cfg.nenv = n;
	ic.env = NULL;
	ic.nenv = 0;
	/* "/" is the default profile's: the image's WorkingDir wins it. */
	if (ic.cwd != NULL && (agent_cfg.cwd == NULL ||
	    strcmp(agent_cfg.cwd, "/") == 0)) {
		free(agent_cfg.cwd);
		agent_cfg.cwd = ic.cwd;
		ic.cwd = NULL;
	}
	imageconf_entrypoint = ic.entrypoint;
	imageconf_nentrypoint = ic.nentrypoint;
	ic.entrypoint = NULL;
	ic.nentrypoint = 0;
	log_warnx("%s: %zu env, cwd %s, entrypoint of %zu", QSUP_IMAGE_CONF,
	    nimg, agent_cfg.cwd != NULL ?
	    agent_cfg.cwd : "/", imageconf_nentrypoint);
out:
	config_free(&ic);
	free(text);
}

/* The entrypoint and then argv, or NULL when the image has none. */
char **
imageconf_argv(char **argv, size_t argc)
{
	char	**a;
	size_t	  i;

	if (imageconf_nentrypoint == 0)
		return (NULL);
	a = xcalloc(imageconf_nentrypoint + argc + 1, sizeof *a);
	for (i = 0; i < imageconf_nentrypoint; i++)
		a[i] = imageconf_entrypoint[i];
	for (i = 0; i < argc; i++)
		a[imageconf_nentrypoint + i] = argv[i];
	return (a);
}
