/*
 * qsup: run untrusted commands inside disposable QEMU microVMs.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

/*
 * The command named by the first argument, from the table (cmd.c); an
 * option there starts the short form of run, qsup --profile FILE -- CMD.
 */
int
main(int argc, char **argv)
{
	const struct cmd_entry	*e;

	log_init("qsup");
	profile_set_kvm_fact(kvm_verdict);
	if (argc < 2) {
		cmd_usage_all(stderr);
		return (QSUP_EXIT_ERROR);
	}
	if (strcmp(argv[1], "__complete") == 0)	/* hidden: for the shells */
		return (cmd_complete(argc - 1, argv + 1));
	if ((e = cmd_find(cmd_table, argv[1])) != NULL)
		return (cmd_exec(e, argc - 1, argv + 1));
	if (argv[1][0] == '-')
		return (cmd_run_short(argc, argv, cmd_table));
	log_warnx("unknown command '%s'; try 'qsup --help'", argv[1]);
	return (QSUP_EXIT_ERROR);
}
