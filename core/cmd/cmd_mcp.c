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

const struct cmd_entry cmd_mcp_entry = {
	.name = "mcp",
	.usage = "mcp",
	.summary = "(placeholder)",
	.exec = placeholder_exec
};
