/*
 * qsup sandbox screenshot: a display sandbox's screen, as a PNG file,
 * from the server's GET /v1/sandboxes/NAME/screenshot.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_client_int.h"

#define CMD_SCREEN_SCALE	(CMD_O_LONG + 40)
#define CMD_SCREEN_PNG_MAX	(64 * 1024 * 1024)

static int	cmd_sandbox_screenshot(const struct cmd_entry *, int, char **);

static const struct cmd_option cmd_sandbox_screenshot_options[] = {
	{ 'o', "output", CMD_V_FILE, "FILE", 0,
	  "write the PNG to FILE (required; - is stdout)" },
	{ CMD_SCREEN_SCALE, "scale", CMD_V_NUMBER, "F", 0,
	  "scale it down, 0.1 to 1 (the server does)" },
	CMD_CLIENT_HOST_OPTIONS
};

const struct cmd_entry cmd_sandbox_screenshot_entry = {
	.name = "screenshot",
	.usage = "sandbox screenshot [--scale F] -o FILE NAME",
	.summary = "a display sandbox's screen, as a PNG file",
	.help =
"Write the screen of the sandbox NAME (created with the setting\n"
"display = \"vnc\") to FILE as a PNG; FILE is written whole or not at all.\n"
"Exit 1 if the server refused (no display, not running), 125 if it did\n"
"not answer.\n"
"\n",
	.options = cmd_sandbox_screenshot_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP,
	.exec = cmd_sandbox_screenshot
};

/* qsup sandbox screenshot [--scale F] -o FILE NAME */
static int
cmd_sandbox_screenshot(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	struct buf		 b = { 0 };
	const char		*out, *scale;
	char			*cause = NULL, *path = NULL, *rest, *tmp = NULL;
	int			 r, ret = QSUP_EXIT_ERROR, fd = -1;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	out = cmd_args_get(&o.a, 'o');
	scale = cmd_args_get(&o.a, CMD_SCREEN_SCALE);
	if (out == NULL || argc - o.optind != 1) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	if (scale != NULL)
		xasprintf(&rest, "/screenshot?scale=%s", scale);
	else
		rest = xstrdup("/screenshot");
	path = client_path(argv[o.optind], rest);
	free(rest);
	if ((r = client_fetch(c, path, -1, &b, CMD_SCREEN_PNG_MAX, NULL,
	    &cause)) != 0) {
		ret = cmd_client_fail(r, argv[o.optind], cause);
		goto out;
	}
	if (strcmp(out, "-") == 0) {
		if (client_write_all(STDOUT_FILENO, b.data, b.len) == -1) {
			log_warn("stdout");
			goto out;
		}
		ret = 0;
		goto out;
	}
	/* Beside it, then renamed: never a half-written FILE. */
	xasprintf(&tmp, "%s.XXXXXX", out);
	if ((fd = mkstemp(tmp)) == -1) {
		log_warn("%s", tmp);
		goto out;
	}
	if (client_write_all(fd, b.data, b.len) == -1 || fchmod(fd, 0644) ==
	    -1 || close(fd) == -1 || rename(tmp, out) == -1) {
		log_warn("%s", out);
		(void)unlink(tmp);
		goto out;
	}
	fd = -1;
	ret = 0;
out:
	if (fd != -1) {
		close(fd);
		(void)unlink(tmp);
	}
	free(tmp);
	free(path);
	buf_free(&b);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}
