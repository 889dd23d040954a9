/*
 * "qsup run" and its short form "qsup [options] -- CMD": its entry and its
 * options. What a run does is run.c's.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define CMD_RUN_OPTS	"+p:e:w:tivh"	/* getopt's: run's short options */

static int	cmd_run_exec(const struct cmd_entry *, int, char **);

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "run [--profile FILE] [options] [--] CMD [ARG...]\n"
	    "[--profile FILE] [options] -- CMD [ARG...]",
	.summary = "run CMD in a disposable microVM; exit with its status",
	.help =
"options:\n"
"  -p, --profile FILE   the Lua profile: a path, or a name looked up as\n"
"                       ./NAME.lua, $XDG_CONFIG_HOME/qsup/profiles/NAME.lua\n"
"                       and the built-in ones (default: builtin:default)\n"
"      --set NAME=VALUE override a profile setting (repeatable; checked\n"
"                       like the profile: qsup profile settings)\n"
"  -e NAME=VALUE        set an environment variable for CMD\n"
"  -w DIR               CMD's working directory in the guest\n"
"  -t, --tty            run CMD on a terminal in the guest (its output and\n"
"                       errors both come on stdout), of this terminal's\n"
"                       size, following SIGWINCH, with this TERM (unless\n"
"                       -e TERM=...); a stdin that is a terminal is in raw\n"
"                       mode while CMD runs, so every key, ^C too, goes to\n"
"                       CMD; -t works with no terminal here too (for\n"
"                       programs that check isatty)\n"
"  -i, --interactive    forward stdin to CMD: the default, but for -t with\n"
"                       a stdin that is not a terminal (-ti forwards it,\n"
"                       and its end is typed as ^D)\n"
"      --share HOST[:GUEST][:ro|rw]\n"
"                       share a host directory (default: read-only, at\n"
"                       the same path in the guest)\n"
"      --timeout SECS   kill CMD after SECS seconds and exit 124\n"
"      --console        show the guest's console live on stderr\n"
"      --json           print a JSON summary on stderr at the end\n"
"  -v, --verbose        say what qsup is doing\n"
"  -h, --help           this help\n"
"\n"
"exit status: CMD's own; 124 timeout; 125 qsup error; 126 CMD not\n"
"executable; 127 CMD not found; 128+N CMD killed by signal N.\n",
	.exec = cmd_run_exec
};

/* -e's NAME=VALUE: NAME a shell variable's name. */
static int
cmd_run_valid_env(const char *s)
{
	const char	*p;

	if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
	    *s == '_'))
		return (0);
	for (p = s + 1; *p != '=' ; p++) {
		if (*p == '\0')
			return (0);
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '_'))
			return (0);
	}
	return (1);
}


/*
 * One of run's options, ch with optarg, into o: 0, -1 if its value is
 * wrong (said), 1 if ch is none of them.
 */
static int
cmd_run_opt(struct run_options *o, int ch)
{
	char	*end;

	switch (ch) {
	case 'p':
		o->profile = optarg;
		break;
	case 'e':
		if (!cmd_run_valid_env(optarg)) {
			log_warnx("-e %s: expected NAME=VALUE with NAME made "
			    "of letters, digits and _", optarg);
			return (-1);
		}
		o->env = xreallocarray(o->env, o->nenv + 1, sizeof *o->env);
		o->env[o->nenv++] = optarg;
		break;
	case 'w':
		if (*optarg != '/') {
			log_warnx("-w %s: the working directory must be an "
			    "absolute path in the guest", optarg);
			return (-1);
		}
		o->cwd = optarg;
		break;
	case 'T':
		o->timeout = strtod(optarg, &end);
		if (end == optarg || *end != '\0' || !(o->timeout > 0) ||
		    o->timeout > 1e9) {
			log_warnx("--timeout %s: expected a positive number "
			    "of seconds", optarg);
			return (-1);
		}
		break;
	case 'C':
		o->console = 1;
		break;
	case 't':
		o->tty = 1;
		break;
	case 'i':
		o->interactive = 1;
		break;
	case 'S':
		o->shares = xreallocarray(o->shares, o->nshares + 1,
		    sizeof *o->shares);
		o->shares[o->nshares++] = optarg;
		break;
	case 'J':
		o->json = 1;
		break;
	case 0x100:	/* --set: checked with the profile */
		if (strchr(optarg, '=') == NULL || *optarg == '=') {
			log_warnx("--set %s: expected NAME=VALUE", optarg);
			return (-1);
		}
		o->sets = xreallocarray(o->sets, o->nsets + 1,
		    sizeof *o->sets);
		o->sets[o->nsets++] = optarg;
		break;
	case 'v':
		log_verbose = 1;
		break;
	default:
		return (1);
	}
	return (0);
}

/*
 * Read run's options into a struct run_options and run. argv[0] is "run",
 * or "qsup" in the short form, whose caller hands it the commands (a
 * command named there is a mistake); the first argument not an option is
 * CMD.
 */
static int
cmd_run_main(const struct cmd_entry *self, int argc, char **argv,
    const struct cmd_entry *const *commands)
{
	static const struct option longopts[] = {
		{ "profile",	required_argument,	NULL, 'p' },
		{ "timeout",	required_argument,	NULL, 'T' },
		{ "console",	no_argument,		NULL, 'C' },
		{ "json",	no_argument,		NULL, 'J' },
		{ "share",	required_argument,	NULL, 'S' },
		{ "tty",	no_argument,		NULL, 't' },
		{ "interactive", no_argument,		NULL, 'i' },
		{ "set",	required_argument,	NULL, 0x100 },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL,		0,			NULL, 0 }
	};
	struct run_options	 opts;
	int			 ch, rc = QSUP_EXIT_ERROR;

	memset(&opts, 0, sizeof opts);
	optind = 1;
	opterr = 0;
	/* '+': stop at the command, whose own flags are not ours. */
	while ((ch = getopt_long(argc, argv, CMD_RUN_OPTS, longopts,
	    NULL)) != -1) {
		if (ch == 'h') {
			cmd_usage(self, stdout);
			rc = 0;
			goto out;
		}
		switch (cmd_run_opt(&opts, ch)) {
		case -1:
			goto out;
		case 1:
			rc = cmd_bad_option(CMD_RUN_OPTS, argv, NULL);
			goto out;
		}
	}
	if (optind >= argc) {
		log_warnx("no command given: qsup run [options] -- CMD "
		    "[ARG...]");
		goto out;
	}
	/*
	 * The short form, "qsup -v run -- CMD": the options were meant for
	 * the command named after them, not for a program called "run".
	 * After "--", a program of any name runs.
	 */
	if (commands != NULL && strcmp(argv[0], "run") != 0 &&
	    strcmp(argv[optind - 1], "--") != 0 &&
	    cmd_find(commands, argv[optind]) != NULL) {
		log_warnx("'%s' is a command: put the options after it (qsup "
		    "%s -v ...), or '--' before a program of that name",
		    argv[optind], argv[optind]);
		goto out;
	}
	opts.argv = argv + optind;
	rc = run_main(&opts);
out:
	free(opts.env);
	free(opts.shares);
	free(opts.sets);
	return (rc);
}

static int
cmd_run_exec(const struct cmd_entry *self, int argc, char **argv)
{
	return (cmd_run_main(self, argc, argv, NULL));
}

/* The short form, "qsup [options] -- CMD": run, knowing the commands. */
int
cmd_run_short(int argc, char **argv, const struct cmd_entry *const *commands)
{
	return (cmd_run_main(&cmd_run_entry, argc, argv, commands));
}
