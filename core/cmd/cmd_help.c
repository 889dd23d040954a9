/*
 * "qsup help [COMMAND [SUBCOMMAND]]": every command, from the table, or
 * the usage of one (what "qsup COMMAND --help" prints).
 */
#include <stdio.h>

#include "cmd.h"

static int	cmd_help_exec(const struct cmd_entry *, int, char **);

const struct cmd_entry cmd_help_entry = {
	.name = "help",
	.alias = { "--help", "-h" },
	.usage = "help [COMMAND [SUBCOMMAND]]",
	.summary = "this list, or what COMMAND takes",
	.exec = cmd_help_exec
};

/* Without arguments the whole list; else the usage of the command named. */
static int
cmd_help_exec(const struct cmd_entry *self, int argc, char **argv)
{
	const struct cmd_entry	*e = NULL;
	int			 i;

	(void)self;
	if (argc < 2) {
		cmd_usage_all(stdout);
		return (0);
	}
	for (i = 1; i < argc; i++) {
		if (i == 1)
			e = cmd_find(cmd_table, argv[i]);
		else
			e = e->subs != NULL ? cmd_find(e->subs, argv[i]) : NULL;
		if (e == NULL) {
			log_warnx("unknown command '%s'; try 'qsup --help'",
			    argv[i]);
			return (QSUP_EXIT_ERROR);
		}
	}
	cmd_usage(e, stdout);
	return (0);
}
