/*
 * The command table, on top of every command: which commands qsup has, in
 * the order "qsup help" lists them, what "qsup help" prints, and "qsup
 * help [COMMAND [SUBCOMMAND]]" itself, which reads the table. Each other
 * command lives in a file of its own, cmd_NAME.c, with its entry; what
 * they all use of their entries is cmd_usage.c's.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

static int	cmd_help_exec(const struct cmd_entry *, int, char **);

/* In the order "qsup help" lists them. */
const struct cmd_entry *const cmd_table[] = {
	&cmd_run_entry,
	&cmd_serve_entry,
	&cmd_sandbox_entry,
	&cmd_exec_entry,
	&cmd_cp_entry,
	&cmd_ls_entry,
	&cmd_rm_entry,
	&cmd_mcp_entry,
	&cmd_cache_entry,
	&cmd_image_entry,
	&cmd_profile_entry,
	&cmd_doctor_entry,
	&cmd_version_entry,
	&cmd_help_entry,
	NULL
};

/*
 * What "qsup help" prints: every command's forms, the list of them, and
 * run's options, which the short form takes with no command named.
 */
void
cmd_usage_all(FILE *f)
{
	size_t	i;
	int	n = 0;

	for (i = 0; cmd_table[i] != NULL; i++)
		n = cmd_usage_lines(cmd_table[i], f, n);
	fprintf(f, "\ncommands:\n");
	cmd_list(cmd_table, 1, "  ", f);
	fprintf(f, "\nrun's ");
	cmd_usage_body(&cmd_run_entry, f);
	fprintf(f, "\n'qsup COMMAND --help' says what COMMAND takes.\n");
}

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
