/*
 * The options parser of core/cmd/cmd_args.c, on a table of its own: values
 * in order and as lists, "+" stopping at the first operand, "--", --help,
 * what an unknown option or a missing value says, and the option lines of
 * --help.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"

#define T_SET	(CMD_O_LONG + 0)
#define T_JSON	(CMD_O_LONG + 1)
#define T_SHARE	(CMD_O_LONG + 2)

static const struct cmd_option t_options[] = {
	{ 'p', "profile", CMD_V_PROFILE, "FILE", 0, "a profile\nits second line" },
	{ T_SET, "set", CMD_V_SETTING, "NAME=VALUE", CMD_O_REPEAT,
	  "a setting (repeatable)" },
	{ 'e', NULL, CMD_V_ENV, "NAME=VALUE", CMD_O_REPEAT, "a variable" },
	{ T_JSON, "json", CMD_V_NONE, NULL, 0, NULL },
	{ T_SHARE, "share", CMD_V_DIR, "HOST[:GUEST][:ro|rw]", 0,
	  "share a host directory" },
	{ 'v', "verbose", CMD_V_NONE, NULL, CMD_O_HIDDEN, "unseen" },
	CMD_OPTION_HELP,
	{ 0, NULL, 0, NULL, 0, NULL }
};

static const struct cmd_entry t_in_order = {
	.name = "t",
	.options = t_options,
	.flags = CMD_IN_ORDER
};

static const struct cmd_entry t_permute = {
	.name = "t",
	.options = t_options
};

/* argv from a string of words, in a static array. */
static char **
t_argv(const char *words, int *argc)
{
	static char	 buf[512];
	static char	*argv[32];
	char		*p;

	snprintf(buf, sizeof buf, "%s", words);
	*argc = 0;
	for (p = strtok(buf, " "); p != NULL; p = strtok(NULL, " "))
		argv[(*argc)++] = p;
	argv[*argc] = NULL;
	return (argv);
}

Test(cmd_args, values_in_order_and_lists)
{
	struct cmd_args	  a;
	char		**argv, **l;
	size_t		  n;
	int		  argc;

	argv = t_argv("t -p one --set a=1 -e X=1 --json --set b=2 -pTWO op x",
	    &argc);
	cr_assert_eq(cmd_args_parse(&t_in_order, argc, argv, &a), 0);
	cr_assert_str_eq(cmd_args_get(&a, 'p'), "TWO");	/* the last one */
	l = cmd_args_list(&a, T_SET, &n);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(l[0], "a=1");
	cr_assert_str_eq(l[1], "b=2");
	cr_assert_eq(cmd_args_has(&a, T_JSON), 1);
	cr_assert_eq(cmd_args_has(&a, 'v'), 0);
	cr_assert_null(cmd_args_get(&a, T_SHARE));
	cr_assert_eq(a.nitems, 6);
	cr_assert_eq(a.items[2].key, 'e');
	cr_assert_str_eq(a.items[2].value, "X=1");
	cr_assert_null(a.items[3].value);
	cr_assert_eq(a.argc, 2);
	cr_assert_str_eq(a.argv[0], "op");
	cr_assert_eq(a.dashdash, 0);
	cmd_args_free(&a);
}

Test(cmd_args, in_order_stops_at_the_first_operand)
{
	struct cmd_args	  a;
	char		**argv;
	int		  argc;

	argv = t_argv("t -v cmd --json", &argc);
	cr_assert_eq(cmd_args_parse(&t_in_order, argc, argv, &a), 0);
	cr_assert_eq(cmd_args_has(&a, T_JSON), 0);
	cr_assert_eq(a.argc, 2);
	cr_assert_str_eq(a.argv[1], "--json");
	cmd_args_free(&a);

	argv = t_argv("t -v cmd --json", &argc);
	cr_assert_eq(cmd_args_parse(&t_permute, argc, argv, &a), 0);
	cr_assert_eq(cmd_args_has(&a, T_JSON), 1);
	cr_assert_eq(a.argc, 1);
	cmd_args_free(&a);

	argv = t_argv("t -v -- --json", &argc);
	cr_assert_eq(cmd_args_parse(&t_in_order, argc, argv, &a), 0);
	cr_assert_eq(a.dashdash, 1);
	cr_assert_eq(a.argc, 1);
	cr_assert_str_eq(a.argv[0], "--json");
	cmd_args_free(&a);
}

Test(cmd_args, help)
{
	struct cmd_args	  a;
	char		**argv;
	int		  argc;

	argv = t_argv("t --json --help --bogus", &argc);
	cr_assert_eq(cmd_args_parse(&t_permute, argc, argv, &a), 1);
	cmd_args_free(&a);
}

/* What cmd_args_bad says of argv, on stderr. */
static void
t_bad(const char *words, const char *cmd, const char *want)
{
	struct cmd_args	  a;
	char		**argv, got[512];
	size_t		  n;
	FILE		 *f;
	int		  argc;

	argv = t_argv(words, &argc);
	cr_assert_eq(cmd_args_parse(&t_in_order, argc, argv, &a), -1, "%s",
	    words);
	fflush(stderr);
	cr_assert_not_null(f = freopen("/tmp/cmd_args_test.err", "w+",
	    stderr));
	cr_assert_eq(cmd_args_bad(&a, cmd), QSUP_EXIT_ERROR);
	fflush(stderr);
	rewind(f);
	n = fread(got, 1, sizeof got - 1, f);
	got[n] = '\0';
	cr_assert(strstr(got, want) != NULL, "%s: got '%s', want '%s'", words,
	    got, want);
	cmd_args_free(&a);
	unlink("/tmp/cmd_args_test.err");
}

Test(cmd_args, bad_options_say_which)
{
	t_bad("t -Z", "t", "option -Z: unknown\ntry 'qsup t --help'\n");
	t_bad("t -e", NULL, "option -e: needs a value\ntry 'qsup --help'\n");
	t_bad("t --profile", "t", "option -p: needs a value\n");
	t_bad("t --set", "t", "--set: unknown option or missing value\n");
	t_bad("t --bogus", "t", "--bogus: unknown option or missing value\n");
	t_bad("t --json=1", "t", "--json=1: unknown option or missing value\n");
}

Test(cmd_args, option_lines)
{
	char	*text = NULL;
	size_t	 len = 0;
	FILE	*f;

	cr_assert_not_null(f = open_memstream(&text, &len));
	cmd_args_print(t_options, 23, f);
	fclose(f);
	cr_assert_str_eq(text,
"  -p, --profile FILE   a profile\n"
"                       its second line\n"
"      --set NAME=VALUE a setting (repeatable)\n"
"  -e NAME=VALUE        a variable\n"
"      --share HOST[:GUEST][:ro|rw]\n"
"                       share a host directory\n");
	free(text);
}

Test(cmd_args, find)
{
	cr_assert_eq(cmd_args_find(t_options, "-p"), &t_options[0]);
	cr_assert_eq(cmd_args_find(t_options, "--profile"), &t_options[0]);
	cr_assert_eq(cmd_args_find(t_options, "--set"), &t_options[1]);
	cr_assert_eq(cmd_args_find(t_options, "-e"), &t_options[2]);
	cr_assert_null(cmd_args_find(t_options, "--e"));
	cr_assert_null(cmd_args_find(t_options, "-pe"));
	cr_assert_null(cmd_args_find(t_options, "profile"));
}
