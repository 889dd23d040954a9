/*
 * "qsup __complete WORD... CUR": what the shells' completions offer (the
 * scripts of contrib/completion call it), one candidate a line, each
 * beginning with CUR; a last line "::files" or "::dirs" asks the shell to
 * add host paths. Commands and subcommands come from the command table,
 * options and what their values are from each command's options
 * (cmd_args.c), settings and profile names from the profile layer, so a
 * completion cannot drift from what qsup takes. Hidden: main() calls it
 * by name.
 */
#include <stdio.h>
#include <string.h>

#include "cmd.h"

/* Print s if it begins with cur. */
static void
cmd_complete_put(const char *s, const char *cur)
{
	if (strncmp(s, cur, strlen(cur)) == 0)
		printf("%s\n", s);
}

/* e's options that begin with cur: each name, then --help and -h. */
static void
cmd_complete_opts(const struct cmd_entry *e, const char *cur)
{
	const struct cmd_option	*o;
	char			 name[64];
	int			 help = 0;

	for (o = e->options; o != NULL && o->key != 0; o++) {
		if (o->flags & CMD_O_HIDDEN)
			continue;
		help |= o->flags & CMD_O_HELP;
		if (o->key < CMD_O_LONG) {
			snprintf(name, sizeof name, "-%c", o->key);
			cmd_complete_put(name, cur);
		}
		if (o->name != NULL) {
			snprintf(name, sizeof name, "--%s", o->name);
			cmd_complete_put(name, cur);
		}
	}
	if (!help) {
		cmd_complete_put("--help", cur);
		cmd_complete_put("-h", cur);
	}
}

/* The names of table's entries; aliases too when cur is an option. */
static void
cmd_complete_names(const struct cmd_entry *const *table, const char *cur)
{
	size_t	i, j;

	for (i = 0; table[i] != NULL; i++) {
		cmd_complete_put(table[i]->name, cur);
		for (j = 0; j < CMD_ALIASES && table[i]->alias[j] != NULL; j++)
			if (cur[0] == '-')
				cmd_complete_put(table[i]->alias[j], cur);
	}
}

static void
cmd_complete_buf(struct buf *b)
{
	if (b->data != NULL)
		fputs(b->data, stdout);
	buf_free(b);
}

static void
cmd_complete_profiles(const char *cur)
{
	struct buf	b = { 0 };

	profile_complete_names(&b, cur);
	cmd_complete_buf(&b);
	printf("::files\n");
}

/* The value of option o. */
static void
cmd_complete_value(const struct cmd_option *o, const char *cur)
{
	struct buf	b = { 0 };

	switch (o->value) {
	case CMD_V_PROFILE:
		cmd_complete_profiles(cur);
		break;
	case CMD_V_SETTING:
		profile_complete_settings(&b, cur);
		cmd_complete_buf(&b);
		break;
	case CMD_V_DIR:
		printf("::dirs\n");
		break;
	case CMD_V_FILE:
		printf("::files\n");
		break;
	default:
		break;
	}
}

/* The words after e's name (w[0] .. w[n - 1], the last being completed). */
static void
cmd_complete_args(const struct cmd_entry *e, char **w, int n)
{
	const struct cmd_option	*o;
	const char		*cur = w[n - 1];
	int			 k;

	for (k = 0; k < n - 1; k++) {
		if (strcmp(w[k], "--") == 0)
			return;	/* the guest's command */
	}
	if (n > 1 && (o = cmd_args_find(e->options, w[n - 2])) != NULL &&
	    o->value != CMD_V_NONE) {
		cmd_complete_value(o, cur);
		return;
	}
	if (cur[0] == '-') {
		cmd_complete_opts(e, cur);
		if (e == &cmd_run_entry)
			cmd_complete_put("--", cur);
	} else if (e == &cmd_help_entry)
		cmd_complete_names(cmd_table, cur);
	else if (e->usage != NULL && strstr(e->usage, "PROFILE") != NULL)
		cmd_complete_profiles(cur);	/* profile check, show */
	else if (e != &cmd_run_entry)
		printf("::files\n");
}

/* argv: "__complete", then the words after "qsup", the last one's start. */
int
cmd_complete(int argc, char **argv)
{
	const struct cmd_entry	*e, *sub;
	char			*empty[] = { (char *)"" };
	char			**w = argv + 1;
	int			 n = argc - 1, i = 1;

	if (n < 1) {
		w = empty;
		n = 1;
	}
	if (n == 1 && w[0][0] != '-')
		cmd_complete_names(cmd_table, w[0]);
	else if (n == 1) {
		cmd_complete_args(&cmd_run_entry, w, n);	/* short form */
		cmd_complete_put("--version", w[0]);
	} else if ((e = cmd_find(cmd_table, w[0])) == NULL) {
		if (w[0][0] == '-')
			cmd_complete_args(&cmd_run_entry, w, n);
	} else {
		while (e->subs != NULL && i < n - 1 &&
		    (sub = cmd_find(e->subs, w[i])) != NULL) {
			e = sub;
			i++;
		}
		if (e->subs != NULL && i == n - 1 && w[i][0] != '-') {
			cmd_complete_names(e->subs, w[i]);
			cmd_complete_put("help", w[i]);
		} else if (e == &cmd_help_entry && n == 3 &&
		    (sub = cmd_find(cmd_table, w[1])) != NULL &&
		    sub->subs != NULL)
			cmd_complete_names(sub->subs, w[2]);
		else
			cmd_complete_args(e, w + i, n - i);
	}
	fflush(stdout);
	return (0);
}
