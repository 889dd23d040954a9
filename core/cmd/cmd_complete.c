/*
 * "qsup __complete WORD... CUR": what the shells' completions offer (the
 * scripts of contrib/completion call it), one candidate a line, each
 * beginning with CUR; a last line "::files" or "::dirs" asks the shell to
 * add host paths. Commands and subcommands come from the command table,
 * options from each command's usage and help (the text --help prints),
 * settings and profile names from the profile layer, so a completion
 * cannot drift from what qsup takes. Hidden: main() calls it by name.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cmd.h"

#define CMD_COMPLETE_OPTS	48

struct cmd_complete_opt {
	char	name[32];	/* "-p", "--profile" */
	char	arg[32];	/* the value's name in the help, "FILE"; or "" */
};

/* Print s if it begins with cur. */
static void
cmd_complete_put(const char *s, const char *cur)
{
	if (strncmp(s, cur, strlen(cur)) == 0)
		printf("%s\n", s);
}

/* Is p, inside text, the start of an option: -x or --word? */
static size_t
cmd_complete_token(const char *text, const char *p)
{
	size_t	n;

	if (p[0] != '-' || (p != text && strchr(" [(|\n", p[-1]) == NULL))
		return (0);
	n = p[1] == '-' ? 2 : 1;
	if (!isalpha((unsigned char)p[n]))
		return (0);
	while (isalnum((unsigned char)p[n]) || p[n] == '-')
		n++;
	if (n > 2 && p[1] != '-')
		return (0);	/* "-ti": prose, not an option */
	return (n < sizeof ((struct cmd_complete_opt *)0)->name ? n : 0);
}

/* Add or update the option name, n long, with its value's name if any. */
static size_t
cmd_complete_add(struct cmd_complete_opt *o, size_t no, const char *name,
    size_t n, const char *arg, size_t argn)
{
	size_t	i;

	for (i = 0; i < no; i++) {
		if (strlen(o[i].name) == n && strncmp(o[i].name, name, n) == 0)
			break;
	}
	if (i == no) {
		if (no == CMD_COMPLETE_OPTS)
			return (no);
		memset(&o[no], 0, sizeof o[no]);
		memcpy(o[no].name, name, n);
		no++;
	}
	if (argn > 0 && o[i].arg[0] == '\0')
		snprintf(o[i].arg, sizeof o[i].arg, "%.*s", (int)argn, arg);
	return (no);
}

/*
 * The options text names, as --help shows them: "-p, --profile FILE"
 * (one value for the group), "[--set K=V]", "--json  as JSON" (none).
 */
static size_t
cmd_complete_scan(const char *text, struct cmd_complete_opt *o, size_t no)
{
	const char	*p, *q, *group[4], *arg;
	size_t		 n, ng, i, len[4], argn;

	for (p = text; p != NULL && *p != '\0'; p++) {
		if ((n = cmd_complete_token(text, p)) == 0)
			continue;
		ng = 0;
		for (q = p; ng < 4 && (n = cmd_complete_token(text, q)) != 0;) {
			group[ng] = q;
			len[ng++] = n;
			q += n;
			if (q[0] != ',' || q[1] != ' ' || q[2] != '-')
				break;
			q += 2;
		}
		arg = NULL;
		argn = 0;
		if ((q[0] == ' ' && (isupper((unsigned char)q[1]) ||
		    q[1] == '[')) || q[0] == '=') {
			arg = q + 1;
			while (arg[argn] != '\0' && arg[argn] != ' ' &&
			    arg[argn] != ']' && arg[argn] != '\n')
				argn++;
		}
		for (i = 0; i < ng; i++)
			no = cmd_complete_add(o, no, group[i], len[i], arg,
			    argn);
		p = q - 1;
	}
	return (no);
}

static size_t
cmd_complete_opts(const struct cmd_entry *e, struct cmd_complete_opt *o)
{
	size_t	no;

	no = cmd_complete_scan(e->usage, o, 0);
	no = cmd_complete_scan(e->help, o, no);
	no = cmd_complete_add(o, no, "--help", 6, NULL, 0);
	return (cmd_complete_add(o, no, "-h", 2, NULL, 0));
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
cmd_complete_value(const struct cmd_complete_opt *o, const char *cur)
{
	struct buf	b = { 0 };

	if (strcmp(o->name, "--profile") == 0 || strcmp(o->name, "-p") == 0)
		cmd_complete_profiles(cur);
	else if (strcmp(o->name, "--set") == 0) {
		profile_complete_settings(&b, cur);
		cmd_complete_buf(&b);
	} else if (strcmp(o->name, "--share") == 0)
		printf("::dirs\n");
	else if (strstr(o->arg, "FILE") != NULL)
		printf("::files\n");
}

/* The words after e's name (w[0] .. w[n - 1], the last being completed). */
static void
cmd_complete_args(const struct cmd_entry *e, char **w, int n)
{
	struct cmd_complete_opt	 o[CMD_COMPLETE_OPTS];
	const char		*cur = w[n - 1];
	size_t			 no, i;
	int			 k;

	for (k = 0; k < n - 1; k++) {
		if (strcmp(w[k], "--") == 0)
			return;	/* the guest's command */
	}
	no = cmd_complete_opts(e, o);
	for (i = 0; n > 1 && i < no; i++) {
		if (strcmp(o[i].name, w[n - 2]) == 0 && o[i].arg[0] != '\0') {
			cmd_complete_value(&o[i], cur);
			return;
		}
	}
	if (cur[0] == '-') {
		for (i = 0; i < no; i++)
			cmd_complete_put(o[i].name, cur);
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
