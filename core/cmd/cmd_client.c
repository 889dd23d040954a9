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

const struct cmd_entry cmd_sandbox_entry = {
	.name = "sandbox",
	.usage = "sandbox",
	.summary = "(placeholder)",
	.exec = placeholder_exec
};

const struct cmd_entry cmd_exec_entry = {
	.name = "exec",
	.usage = "exec",
	.summary = "(placeholder)",
	.exec = placeholder_exec
};

const struct cmd_entry cmd_cp_entry = {
	.name = "cp",
	.usage = "cp",
	.summary = "(placeholder)",
	.exec = placeholder_exec
};

const struct cmd_entry cmd_ls_entry = {
	.name = "ls",
	.usage = "ls",
	.summary = "(placeholder)",
	.exec = placeholder_exec
};

const struct cmd_entry cmd_rm_entry = {
	.name = "rm",
	.usage = "rm",
	.summary = "(placeholder)",
	.exec = placeholder_exec
};
