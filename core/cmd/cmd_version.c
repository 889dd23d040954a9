/*
 * "qsup version": qsup's version and that of the agent protocol it speaks.
 */
#include <stdio.h>

#include "cmd.h"
#include "wire.h"

static int	cmd_version_exec(const struct cmd_entry *, int, char **);

const struct cmd_entry cmd_version_entry = {
	.name = "version",
	.alias = { "--version" },
	.usage = "version",
	.summary = "qsup's version and its agent protocol's",
	.exec = cmd_version_exec
};

/* Print the version; arguments after it are ignored, as they always were. */
static int
cmd_version_exec(const struct cmd_entry *self, int argc, char **argv)
{
	(void)self;
	(void)argc;
	(void)argv;
	printf("qsup %s (agent protocol %d)\n", QSUP_VERSION,
	    QSUP_PROTOCOL_VERSION);
	return (0);
}
