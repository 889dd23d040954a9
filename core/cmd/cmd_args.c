/*
 * A command's options: the array its entry declares (struct cmd_option)
 * is all there is of them. One parser reads argv with getopt_long, its
 * option string and long options built from the array, into a struct
 * cmd_args (each option's values in order, the operands); --help's
 * option lines and the shells' completions are made from the same array,
 * so what a command takes, shows and offers cannot disagree. Nothing
 * here calls the rest of core/cmd: the commands call it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

/* How many options the array holds, up to its empty end. */
static size_t
cmd_args_count(const struct cmd_option *opts)
{
	size_t	n = 0;

	while (opts != NULL && opts[n].key != 0)
		n++;
	return (n);
}

/* The index of the option whose key is key; the count if none is. */
static size_t
cmd_args_index(const struct cmd_option *opts, int key)
{
	size_t	i;

	for (i = 0; opts != NULL && opts[i].key != 0; i++) {
		if (opts[i].key == key)
			break;
	}
	return (i);
}

/*
 * getopt_long's option string and long options for opts: "+" first when
 * options end at the first operand, a ':' after each short option that
 * takes a value. Both are the caller's to free.
 */
static void
cmd_args_getopt(const struct cmd_option *opts, int flags, char **optstring,
    struct option **longopts)
{
	struct option	*lo;
	char		*s;
	size_t		 n, i, ns = 0, nl = 0;

	n = cmd_args_count(opts);
	s = xmalloc(2 * n + 2);
	lo = xcalloc(n + 1, sizeof *lo);
	if (flags & CMD_IN_ORDER)
		s[ns++] = '+';
	for (i = 0; i < n; i++) {
		if (opts[i].key < CMD_O_LONG) {
			s[ns++] = opts[i].key;
			if (opts[i].value != CMD_V_NONE)
				s[ns++] = ':';
		}
		if (opts[i].name != NULL) {
			lo[nl].name = opts[i].name;
			lo[nl].has_arg = opts[i].value != CMD_V_NONE ?
			    required_argument : no_argument;
			lo[nl++].val = opts[i].key;
		}
	}
	s[ns] = '\0';
	*optstring = s;
	*longopts = lo;
}

/* Keep option i's value (NULL for a flag), in its list and in order. */
static void
cmd_args_add(struct cmd_args *a, size_t i, char *value)
{
	size_t	n = a->nvalues[i];

	a->items = xreallocarray(a->items, a->nitems + 1, sizeof *a->items);
	a->items[a->nitems].key = a->options[i].key;
	a->items[a->nitems++].value = value;
	a->values[i] = xreallocarray(a->values[i], n + 1, sizeof **a->values);
	a->values[i][n] = value;
	a->nvalues[i] = n + 1;
}

/*
 * Read e's options from argv (argv[0] the command's name) into a, which
 * is cmd_args_free's to free whatever the result: 0, the operands in
 * a->argc and a->argv; 1, --help was asked; -1, an option is unknown or
 * its value missing (a->bad, a->bad_word: cmd_args_bad says which). No
 * value is checked here: each command checks its own.
 */
int
cmd_args_parse(const struct cmd_entry *e, int argc, char **argv,
    struct cmd_args *a)
{
	struct option	*longopts;
	char		*optstring;
	size_t		 n, i;
	int		 ch, rc = 0;

	memset(a, 0, sizeof *a);
	a->options = e->options;
	n = cmd_args_count(e->options);
	a->values = xcalloc(n + 1, sizeof *a->values);
	a->nvalues = xcalloc(n + 1, sizeof *a->nvalues);
	cmd_args_getopt(e->options, e->flags, &optstring, &longopts);
	optind = 0;	/* glibc: start afresh, "+" or not */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, optstring, longopts,
	    NULL)) != -1) {
		if (ch == '?' || (i = cmd_args_index(e->options, ch)) == n) {
			a->bad = optopt;
			i = cmd_args_index(e->options, optopt);
			a->bad_value = optopt > 0 && optopt < CMD_O_LONG &&
			    i < n && e->options[i].value != CMD_V_NONE;
			a->bad_word = argv[optind - 1];
			rc = -1;
			break;
		}
		if (e->options[i].flags & CMD_O_HELP) {
			rc = 1;
			break;
		}
		cmd_args_add(a, i, e->options[i].value != CMD_V_NONE ?
		    optarg : NULL);
	}
	if (rc == 0) {
		a->argc = argc - optind;
		a->argv = argv + optind;
		a->dashdash = strcmp(argv[optind - 1], "--") == 0;
	}
	free(optstring);
	free(longopts);
	return (rc);
}

void
cmd_args_free(struct cmd_args *a)
{
	size_t	i, n;

	n = cmd_args_count(a->options);
	for (i = 0; a->values != NULL && i < n; i++)
		free(a->values[i]);
	free(a->values);
	free(a->nvalues);
	free(a->items);
	memset(a, 0, sizeof *a);
}

/* How many times the option key was given. */
int
cmd_args_has(const struct cmd_args *a, int key)
{
	size_t	i;

	i = cmd_args_index(a->options, key);
	return (a->options[i].key != 0 ? (int)a->nvalues[i] : 0);
}

/* The value key was last given, or NULL. */
const char *
cmd_args_get(const struct cmd_args *a, int key)
{
	size_t	i;

	i = cmd_args_index(a->options, key);
	if (a->options[i].key == 0 || a->nvalues[i] == 0)
		return (NULL);
	return (a->values[i][a->nvalues[i] - 1]);
}

/* Every value of key, in order (a's own; NULL with *n 0 if none). */
char **
cmd_args_list(const struct cmd_args *a, int key, size_t *n)
{
	size_t	i;

	i = cmd_args_index(a->options, key);
	if (a->options[i].key == 0) {
		*n = 0;
		return (NULL);
	}
	*n = a->nvalues[i];
	return (a->values[i]);
}

/*
 * Say which option was wrong (unknown, or its value missing), then where
 * the help is: "qsup CMD --help", or "qsup --help" with cmd NULL.
 * Returns qsup's exit status for a usage error.
 */
int
cmd_args_bad(const struct cmd_args *a, const char *cmd)
{
	if (a->bad > 0 && a->bad < CMD_O_LONG && a->bad != '?' &&
	    a->bad != ':')
		log_warnx("option -%c: %s", a->bad, a->bad_value ?
		    "needs a value" : "unknown");
	else
		log_warnx("%s: unknown option or missing value", a->bad_word);
	fprintf(stderr, "try 'qsup %s%s--help'\n", cmd != NULL ? cmd : "",
	    cmd != NULL ? " " : "");
	return (QSUP_EXIT_ERROR);
}

/*
 * --help's option lines: "  -p, --profile FILE", its help from column col
 * on (its further lines too). A name that reaches the column has its help
 * two spaces after it; one longer has it on the next line.
 */
void
cmd_args_print(const struct cmd_option *opts, int col, FILE *f)
{
	const struct cmd_option	*o;
	const char		*p, *nl;
	char			 sh[8];
	int			 len;

	for (o = opts; o != NULL && o->key != 0; o++) {
		if (o->help == NULL || (o->flags & CMD_O_HIDDEN))
			continue;
		if (o->key >= CMD_O_LONG)
			snprintf(sh, sizeof sh, "    ");
		else
			snprintf(sh, sizeof sh, "-%c%s", o->key,
			    o->name != NULL ? ", " : "");
		len = fprintf(f, "  %s%s%s%s%s", sh, o->name != NULL ? "--" : "",
		    o->name != NULL ? o->name : "", o->meta != NULL ? " " : "",
		    o->meta != NULL ? o->meta : "");
		if (len > col)
			fprintf(f, "\n%*s", col, "");
		else
			fprintf(f, "%*s", len < col ? col - len : 2, "");
		for (p = o->help;; p = nl + 1) {
			nl = strchr(p, '\n');
			fprintf(f, "%.*s\n", nl != NULL ? (int)(nl - p) :
			    (int)strlen(p), p);
			if (nl == NULL || nl[1] == '\0')
				break;
			fprintf(f, "%*s", col, "");
		}
	}
}

/* The option word names ("-p", "--profile"), or NULL. */
const struct cmd_option *
cmd_args_find(const struct cmd_option *opts, const char *word)
{
	const struct cmd_option	*o;

	for (o = opts; o != NULL && o->key != 0; o++) {
		if (word[0] != '-')
			break;
		if (word[1] != '-' && o->key < CMD_O_LONG &&
		    word[1] == o->key && word[2] == '\0')
			return (o);
		if (word[1] == '-' && o->name != NULL &&
		    strcmp(word + 2, o->name) == 0)
			return (o);
	}
	return (NULL);
}
