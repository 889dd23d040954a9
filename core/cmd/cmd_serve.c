/* PLACEHOLDER: replaced by its owner before this lands. */
#include <stdio.h>

#include "cmd.h"

static int
placeholder_exec(const struct cmd_entry *e, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "qsup %s: not built yet\n", e->name);
	return (QSUP_EXIT_ERROR);
}

const struct cmd_entry cmd_serve_entry = {
	.name = "serve",
	.usage = "serve",
	.summary = "(placeholder)",
	.exec = placeholder_exec
};
