/*
 * "qsup run" and its short form "qsup [options] -- CMD": its entry and its
 * options. What a run does is run.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define CMD_RUN_SET	(CMD_O_LONG + 0)
#define CMD_RUN_SHARE	(CMD_O_LONG + 1)
#define CMD_RUN_TIMEOUT	(CMD_O_LONG + 2)
#define CMD_RUN_CONSOLE	(CMD_O_LONG + 3)
#define CMD_RUN_JSON	(CMD_O_LONG + 4)
#define CMD_RUN_SETUP	(CMD_O_LONG + 5)

static int	cmd_run_exec(const struct cmd_entry *, int, char **);

static const struct cmd_option cmd_run_options[] = {
	{ 'p', "profile", CMD_V_PROFILE, "FILE", 0,
	  "the Lua profile: a path, or a name looked up as\n"
	  "./NAME.lua, $XDG_CONFIG_HOME/qsup/profiles/NAME.lua\n"
	  "and the built-in ones (default: builtin:default)" },
	{ CMD_RUN_SET, "set", CMD_V_SETTING, "NAME=VALUE", CMD_O_REPEAT,
	  "override a profile setting (repeatable; checked\n"
	  "like the profile: qsup profile settings)" },
	{ 'e', NULL, CMD_V_ENV, "NAME=VALUE", CMD_O_REPEAT,
	  "set an environment variable for CMD" },
	{ 'w', NULL, CMD_V_STRING, "DIR", 0,
	  "CMD's working directory in the guest" },
	{ 't', "tty", CMD_V_NONE, NULL, 0,
	  "run CMD on a terminal in the guest (its output and\n"
	  "errors both come on stdout), of this terminal's\n"
	  "size, following SIGWINCH, with this TERM (unless\n"
	  "-e TERM=...); a stdin that is a terminal is in raw\n"
	  "mode while CMD runs, so every key, ^C too, goes to\n"
	  "CMD; -t works with no terminal here too (for\n"
	  "programs that check isatty)" },
	{ 'i', "interactive", CMD_V_NONE, NULL, 0,
	  "forward stdin to CMD: the default, but for -t with\n"
	  "a stdin that is not a terminal (-ti forwards it,\n"
	  "and its end is typed as ^D)" },
	{ CMD_RUN_SHARE, "share", CMD_V_DIR, "HOST[:GUEST][:ro|rw|cow]",
	  CMD_O_REPEAT,
	  "share a host directory (default: read-only, at\n"
	  "the same path in the guest)" },
	{ CMD_RUN_TIMEOUT, "timeout", CMD_V_SECONDS, "SECS", 0,
	  "kill CMD after SECS seconds and exit 124" },
	{ CMD_RUN_CONSOLE, "console", CMD_V_NONE, NULL, 0,
	  "show the guest's console live on stderr" },
	{ CMD_RUN_JSON, "json", CMD_V_NONE, NULL, 0,
	  "print a JSON summary on stderr at the end" },
	{ CMD_RUN_SETUP, "setup-only", CMD_V_NONE, NULL, 0,
	  "find or build the profile's setup layers, then\n"
	  "exit (no CMD; its error, if any, also on stdout:\n"
	  "qsup serve builds layers so)" },
	{ 'v', "verbose", CMD_V_NONE, NULL, 0, "say what qsup is doing" },
	{ 'h', "help", CMD_V_NONE, NULL, CMD_O_HELP, "this help" },
	{ 0, NULL, 0, NULL, 0, NULL }
};

const struct cmd_entry cmd_run_entry = {
	.name = "run",
	.usage = "run [--profile FILE] [options] [--] CMD [ARG...]\n"
	    "[--profile FILE] [options] -- CMD [ARG...]",
	.summary = "run CMD in a disposable microVM; exit with its status",
	.help = "options:\n",
	.options = cmd_run_options,
	.flags = CMD_IN_ORDER,	/* CMD's own flags are not ours */
	.notes =
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
 * run's options, from a, into o, each value checked in the order given:
 * 0, or -1 if one is wrong (said).
 */
static int
cmd_run_read(struct run_options *o, const struct cmd_args *a)
{
	const struct cmd_args_item	*it;
	char				*end;
	size_t				 i;

	for (i = 0; i < a->nitems; i++) {
		it = &a->items[i];
		switch (it->key) {
		case 'e':
			if (!cmd_run_valid_env(it->value)) {
				log_warnx("-e %s: expected NAME=VALUE with NAME "
				    "made of letters, digits and _", it->value);
				return (-1);
			}
			break;
		case 'w':
			if (*it->value != '/') {
				log_warnx("-w %s: the working directory must be "
				    "an absolute path in the guest", it->value);
				return (-1);
			}
			break;
		case CMD_RUN_TIMEOUT:
			o->timeout = strtod(it->value, &end);
			if (end == it->value || *end != '\0' ||
			    !(o->timeout > 0) || o->timeout > 1e9) {
				log_warnx("--timeout %s: expected a positive "
				    "number of seconds", it->value);
				return (-1);
			}
			break;
		case CMD_RUN_SET:	/* the rest is checked with the profile */
			if (strchr(it->value, '=') == NULL ||
			    *it->value == '=') {
				log_warnx("--set %s: expected NAME=VALUE",
				    it->value);
				return (-1);
			}
			break;
		}
	}
	o->profile = cmd_args_get(a, 'p');
	o->cwd = cmd_args_get(a, 'w');
	o->env = cmd_args_list(a, 'e', &o->nenv);
	o->shares = cmd_args_list(a, CMD_RUN_SHARE, &o->nshares);
	o->sets = cmd_args_list(a, CMD_RUN_SET, &o->nsets);
	o->console = cmd_args_has(a, CMD_RUN_CONSOLE);
	o->json = cmd_args_has(a, CMD_RUN_JSON);
	o->setup_only = cmd_args_has(a, CMD_RUN_SETUP);
	o->tty = cmd_args_has(a, 't');
	o->interactive = cmd_args_has(a, 'i');
	if (cmd_args_has(a, 'v'))
		log_verbose = 1;
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
	struct run_options	 opts;
	struct cmd_args		 a;
	int			 r, rc = QSUP_EXIT_ERROR;

	memset(&opts, 0, sizeof opts);
	/* The values before a --help or a bad option are checked first. */
	r = cmd_args_parse(self, argc, argv, &a);
	if (cmd_run_read(&opts, &a) == -1)
		goto out;
	if (r == 1) {
		cmd_usage(self, stdout);
		rc = 0;
		goto out;
	}
	if (r == -1) {
		rc = cmd_args_bad(&a, NULL);
		goto out;
	}
	if (a.argc > 0 && opts.setup_only) {
		log_warnx("--setup-only runs no command: give it none");
		goto out;
	}
	if (a.argc == 0 && !opts.setup_only) {
		log_warnx("no command given: qsup run [options] -- CMD "
		    "[ARG...]");
		goto out;
	}
	/*
	 * The short form, "qsup -v run -- CMD": the options were meant for
	 * the command named after them, not for a program called "run".
	 * After "--", a program of any name runs.
	 */
	if (commands != NULL && strcmp(argv[0], "run") != 0 && !a.dashdash &&
	    cmd_find(commands, a.argv[0]) != NULL) {
		log_warnx("'%s' is a command: put the options after it (qsup "
		    "%s -v ...), or '--' before a program of that name",
		    a.argv[0], a.argv[0]);
		goto out;
	}
	opts.argv = a.argv;
	rc = run_main(&opts);
out:
	cmd_args_free(&a);
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
