/*
 * What every command uses of its entry, at the bottom of the folder: a
 * command found by its name in a table, run with its --help, its usage
 * and the list of a table's commands printed (the options' lines from
 * cmd_args.c, below it).
 * The table of commands itself is cmd.c's, above every command.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"

/* The entry of table named, or aliased, name; NULL if none is. */
const struct cmd_entry *
cmd_find(const struct cmd_entry *const *table, const char *name)
{
	const struct cmd_entry	*e;
	size_t			 i, j;

	for (i = 0; (e = table[i]) != NULL; i++) {
		if (strcmp(e->name, name) == 0)
			return (e);
		for (j = 0; j < CMD_ALIASES && e->alias[j] != NULL; j++) {
			if (strcmp(e->alias[j], name) == 0)
				return (e);
		}
	}
	return (NULL);
}

/* Is arg a request for help? A command with subcommands takes "help" too. */
static int
cmd_is_help(const struct cmd_entry *e, const char *arg)
{
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
		return (1);
	return (e->subs != NULL && strcmp(arg, "help") == 0);
}

/*
 * Run command e on argv (argv[0] its name): its usage on stdout if its
 * first argument asks for help, else the subcommand named, else its exec.
 * Only the first argument is looked at: the rest may be a guest's command.
 */
int
cmd_exec(const struct cmd_entry *e, int argc, char **argv)
{
	const struct cmd_entry	*sub;

	if (argc > 1 && cmd_is_help(e, argv[1])) {
		cmd_usage(e, stdout);
		return (0);
	}
	if (e->subs != NULL && argc > 1 &&
	    (sub = cmd_find(e->subs, argv[1])) != NULL)
		return (cmd_exec(sub, argc - 1, argv + 1));
	return (e->exec(e, argc, argv));
}

/* e's forms, "usage: qsup ..." then "       qsup ...": n printed so far. */
int
cmd_usage_lines(const struct cmd_entry *e, FILE *f, int n)
{
	const char	*p, *nl;
	size_t		 i;

	if (e->usage == NULL) {
		for (i = 0; e->subs[i] != NULL; i++)
			n = cmd_usage_lines(e->subs[i], f, n);
		return (n);
	}
	for (p = e->usage; *p != '\0'; p = *nl == '\0' ? nl : nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL)
			nl = p + strlen(p);
		fprintf(f, "%s qsup %.*s\n", n++ == 0 ? "usage:" : "      ",
		    (int)(nl - p), p);
	}
	return (n);
}

/* One line of a list of commands; with f NULL, the width it needs. */
static void
cmd_list_one(FILE *f, int *width, const char *indent, const char *parent,
    const struct cmd_entry *e)
{
	char	name[64];

	snprintf(name, sizeof name, "%s%s%s", parent != NULL ? parent : "",
	    parent != NULL ? " " : "", e->name);
	if (f == NULL) {
		if ((int)strlen(name) > *width)
			*width = strlen(name);
	} else
		fprintf(f, "%s%-*s  %s\n", indent, *width, name, e->summary);
}

/*
 * "NAME  summary" for each command of table, in two passes (the width of
 * the longest name, then the lines); with all, each subcommand rather
 * than the command that has it, as "NAME SUBNAME".
 */
void
cmd_list(const struct cmd_entry *const *table, int all, const char *indent,
    FILE *f)
{
	const struct cmd_entry	*e;
	FILE			*out;
	int			 width = 0, pass;
	size_t			 i, j;

	for (pass = 0; pass < 2; pass++) {
		out = pass == 0 ? NULL : f;
		for (i = 0; (e = table[i]) != NULL; i++) {
			if (!all || e->subs == NULL) {
				cmd_list_one(out, &width, indent, NULL, e);
				continue;
			}
			for (j = 0; e->subs[j] != NULL; j++)
				cmd_list_one(out, &width, indent, e->name,
				    e->subs[j]);
		}
	}
}

/* --help's after the forms: e's help, its options' lines, its notes. */
void
cmd_usage_body(const struct cmd_entry *e, FILE *f)
{
	if (e->help != NULL)
		fputs(e->help, f);
	cmd_args_print(e->options, e->column != 0 ? e->column : CMD_COLUMN,
	    f);
	if (e->notes != NULL)
		fputs(e->notes, f);
}

/* Has e anything to say beyond its forms? */
static int
cmd_usage_has_body(const struct cmd_entry *e)
{
	const struct cmd_option	*o;

	if (e->help != NULL || e->notes != NULL)
		return (1);
	for (o = e->options; o != NULL && o->key != 0; o++) {
		if (o->help != NULL && !(o->flags & CMD_O_HIDDEN))
			return (1);
	}
	return (0);
}

/*
 * What "qsup CMD --help" prints: CMD's forms, its subcommands if it has
 * some, and the rest of its help, its options' lines among it.
 */
void
cmd_usage(const struct cmd_entry *e, FILE *f)
{
	cmd_usage_lines(e, f, 0);
	if (e->subs != NULL) {
		fputc('\n', f);
		cmd_list(e->subs, 0, "", f);
	}
	if (cmd_usage_has_body(e)) {
		fputc('\n', f);
		cmd_usage_body(e, f);
	}
}
