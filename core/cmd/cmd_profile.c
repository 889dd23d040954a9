/*
 * "qsup profile": check profiles, show what one resolves to and where each
 * setting came from, list the settings, show the host facts profiles see.
 * Nothing here starts a VM (facts may boot the KVM probe, once per host).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

#define CMD_PROFILE_JSON	(CMD_O_LONG + 0)
#define CMD_PROFILE_SET		(CMD_O_LONG + 1)

#define CMD_PROFILE_NAMES \
"PROFILE is a path, or a name looked up as ./NAME.lua,\n" \
"$XDG_CONFIG_HOME/qsup/profiles/NAME.lua, then among the built-in ones\n" \
"(builtin:NAME names one outright).\n"

static int	cmd_profile_exec(const struct cmd_entry *, int, char **);
static int	cmd_profile_check(const struct cmd_entry *, int, char **);
static int	cmd_profile_show(const struct cmd_entry *, int, char **);
static int	cmd_profile_settings(const struct cmd_entry *, int, char **);
static int	cmd_profile_facts(const struct cmd_entry *, int, char **);

static const struct cmd_option cmd_profile_check_options[] = {
	{ 'v', "verbose", CMD_V_NONE, NULL, 0, "say how long each took" },
	CMD_OPTION_HELP,
	{ 0, NULL, 0, NULL, 0, NULL }
};

static const struct cmd_option cmd_profile_show_options[] = {
	{ CMD_PROFILE_JSON, "json", CMD_V_NONE, NULL, 0, "as JSON" },
	{ CMD_PROFILE_SET, "set", CMD_V_SETTING, "NAME=VALUE", CMD_O_REPEAT,
	  "override a setting, as qsup run --set does" },
	CMD_OPTION_HELP,
	{ 0, NULL, 0, NULL, 0, NULL }
};

static const struct cmd_option cmd_profile_facts_options[] = {
	{ CMD_PROFILE_JSON, "json", CMD_V_NONE, NULL, 0, NULL },
	CMD_OPTION_HELP,
	{ 0, NULL, 0, NULL, 0, NULL }
};

static const struct cmd_entry cmd_profile_check_entry = {
	.name = "check",
	.usage = "profile check [-v] PROFILE...",
	.summary = "load and check each profile; print its mistakes",
	.help =
"Load and check each profile; print its mistakes as FILE:LINE: lines\n"
"and exit 125 if there are any.\n"
"\n",
	.options = cmd_profile_check_options,
	.column = 17,
	.notes = "\n" CMD_PROFILE_NAMES,
	.exec = cmd_profile_check
};

static const struct cmd_entry cmd_profile_show_entry = {
	.name = "show",
	.usage = "profile show [--json] [--set NAME=VALUE]... [PROFILE]",
	.summary = "each setting as run would use it, and where it came from",
	.help =
"Every setting as qsup run would use it, and where it came from: the\n"
"default, the profile (FILE:LINE) or the command line; without PROFILE,\n"
"the built-in default.\n"
"\n",
	.options = cmd_profile_show_options,
	.column = 24,
	.notes = "\n" CMD_PROFILE_NAMES,
	.exec = cmd_profile_show
};

static const struct cmd_entry cmd_profile_settings_entry = {
	.name = "settings",
	.usage = "profile settings",
	.summary = "every setting, its default, what it accepts",
	.exec = cmd_profile_settings
};

static const struct cmd_entry cmd_profile_facts_entry = {
	.name = "facts",
	.usage = "profile facts [--json]",
	.summary = "what profiles know of this host: the qsup table",
	.help =
"What profiles know of this host: the qsup table, as a profile reads it\n"
"or, with --json, as JSON. Finding out whether KVM works may boot a\n"
"probe VM, once per host.\n",
	.options = cmd_profile_facts_options,
	.exec = cmd_profile_facts
};

static const struct cmd_entry *const cmd_profile_subs[] = {
	&cmd_profile_check_entry,
	&cmd_profile_show_entry,
	&cmd_profile_settings_entry,
	&cmd_profile_facts_entry,
	&cmd_profile_import_entry,
	NULL
};

const struct cmd_entry cmd_profile_entry = {
	.name = "profile",
	.summary = "check, show, import profiles; settings and host facts",
	.help = CMD_PROFILE_NAMES,
	.subs = cmd_profile_subs,
	.exec = cmd_profile_exec
};

/* Load each profile named; its mistakes on stderr. */
static int
cmd_profile_check(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_args	 a;
	struct profile	 p;
	char		*cause;
	double		 t0;
	int		 i, verbose, r, rc = 0;

	if ((r = cmd_args_parse(self, argc, argv, &a)) == 1)
		cmd_usage(self, stdout);
	else if (r == -1)
		log_warnx("profile check: %s: unknown option", a.bad_word);
	else if (a.argc == 0) {
		log_warnx("profile check: no profile given: qsup profile check "
		    "PROFILE...");
		r = -1;
	}
	verbose = cmd_args_has(&a, 'v');
	argv = a.argv;
	argc = a.argc;
	cmd_args_free(&a);
	if (r != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	for (i = 0; i < argc; i++) {
		t0 = util_now();
		if (profile_load(&p, argv[i], &cause) == -1) {
			fprintf(stderr, "%s\n", cause);
			free(cause);
			rc = QSUP_EXIT_ERROR;
			continue;
		}
		if (verbose)
			printf("%s: ok (%.2f ms)\n", p.path,
			    (util_now() - t0) * 1000);
		profile_free(&p);
	}
	fflush(stdout);
	return (rc);
}

/* Print one profile's settings, and where each came from. */
static int
cmd_profile_show(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_args	  a;
	struct profile	  p;
	struct buf	  b = { 0 };
	char		**sets, *cause;
	size_t		  nsets;
	int		  r, json, rc = QSUP_EXIT_ERROR;

	if ((r = cmd_args_parse(self, argc, argv, &a)) == 1) {
		cmd_usage(self, stdout);
		rc = 0;
		goto out;
	}
	if (r == -1) {
		log_warnx("profile show: %s: unknown option or missing value",
		    a.bad_word);
		goto out;
	}
	if (a.argc > 1) {
		log_warnx("profile show: one profile at a time");
		goto out;
	}
	json = cmd_args_has(&a, CMD_PROFILE_JSON);
	sets = cmd_args_list(&a, CMD_PROFILE_SET, &nsets);
	if (profile_load_set(&p, a.argc > 0 ? a.argv[0] : NULL, sets,
	    nsets, &cause) == -1) {
		fprintf(stderr, "%s\n", cause);
		free(cause);
		goto out;
	}
	profile_print(&p, json ? PROFILE_PRINT_JSON : 0, &b);
	fputs(b.data, stdout);
	fflush(stdout);
	buf_free(&b);
	profile_free(&p);
	rc = 0;
out:
	cmd_args_free(&a);
	return (rc);
}

/* One fact, as a profile reads it (Lua) or as JSON. */
static void
cmd_profile_fact(struct buf *b, int json, int *n, const char *name,
    const char *value)
{
	if (json) {
		buf_printf(b, "%s\"%s\":", (*n)++ == 0 ? "" : ",", name);
		if (value == NULL)
			buf_printf(b, "null");
		else
			buf_json_string(b, value);
	} else {
		buf_printf(b, "qsup.%s = ", name);
		if (value == NULL)
			buf_printf(b, "nil\n");
		else {
			buf_json_string(b, value);	/* a Lua string too */
			buf_printf(b, "\n");
		}
	}
}

static void
cmd_profile_fact_raw(struct buf *b, int json, int *n, const char *name,
    const char *value)
{
	if (json)
		buf_printf(b, "%s\"%s\":%s", (*n)++ == 0 ? "" : ",", name,
		    value);
	else
		buf_printf(b, "qsup.%s = %s\n", name, value);
}

/* Print the facts a profile sees as the qsup table. */
static int
cmd_profile_facts(const struct cmd_entry *self, int argc, char **argv)
{
	struct facts_python	 py;
	struct buf		 b = { 0 };
	char			 num[32], *why = NULL, *cwd;
	struct cmd_args		 a;
	int			 json, n = 0, kvm, r;

	if ((r = cmd_args_parse(self, argc, argv, &a)) == 1)
		cmd_usage(self, stdout);
	else if (r == -1 || a.argc > 0 || a.dashdash) {
		log_warnx("profile facts: %s: unknown option", r == -1 ?
		    a.bad_word : a.argc > 0 ? a.argv[0] : "--");
		r = -1;
	}
	json = cmd_args_has(&a, CMD_PROFILE_JSON);
	cmd_args_free(&a);
	if (r != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (json)
		buf_printf(&b, "{");
	cmd_profile_fact(&b, json, &n, "arch", facts_arch());
	cmd_profile_fact(&b, json, &n, "triplet", facts_triplet());
	cmd_profile_fact(&b, json, &n, "glibc", facts_glibc());
	snprintf(num, sizeof num, "%ld", facts_cpus());
	cmd_profile_fact_raw(&b, json, &n, "cpus", num);
	snprintf(num, sizeof num, "%llu",
	    (unsigned long long)facts_memory_mib());
	cmd_profile_fact_raw(&b, json, &n, "memory_mib", num);
	cmd_profile_fact_raw(&b, json, &n, "in_container",
	    facts_in_container() ? "true" : "false");
	cwd = getcwd(NULL, 0);
	cmd_profile_fact(&b, json, &n, "cwd", cwd);
	free(cwd);
	kvm = kvm_verdict(&why);
	cmd_profile_fact_raw(&b, json, &n, "kvm", kvm ? "true" : "false");
	cmd_profile_fact(&b, json, &n, "kvm_why", why);
	free(why);
	if (facts_python(&py) == 0) {
		cmd_profile_fact(&b, json, &n, "python.path", py.path);
		cmd_profile_fact(&b, json, &n, "python.executable",
		    py.executable);
		cmd_profile_fact(&b, json, &n, "python.version", py.version);
		cmd_profile_fact(&b, json, &n, "python.prefix", py.prefix);
		cmd_profile_fact(&b, json, &n, "python.venv", py.venv);
		facts_python_free(&py);
	} else
		cmd_profile_fact(&b, json, &n, "python", NULL);
	if (json)
		buf_printf(&b, "}\n");
	fputs(b.data, stdout);
	fflush(stdout);
	buf_free(&b);
	return (0);
}

/* Every setting, its default and what it accepts. */
static int
cmd_profile_settings(const struct cmd_entry *self, int argc, char **argv)
{
	struct buf	b = { 0 };

	(void)self;
	(void)argc;
	(void)argv;
	profile_help(&b);
	fputs(b.data, stdout);
	buf_free(&b);
	return (0);
}

/* "qsup profile" naming none of its subcommands. */
static int
cmd_profile_exec(const struct cmd_entry *self, int argc, char **argv)
{
	if (argc < 2) {
		cmd_usage(self, stderr);
		return (QSUP_EXIT_ERROR);
	}
	log_warnx("profile: unknown command '%s'; try 'qsup profile help'",
	    argv[1]);
	return (QSUP_EXIT_ERROR);
}
