/*
 * "qsup cache ls | clear [--stale]": the warm-start templates (their
 * mechanics are core/vm/template.c's) and the staged copies of shared
 * trees (staging/cache.c), listed or removed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "staging.h"

static int	cmd_cache_exec(const struct cmd_entry *, int, char **);
static int	cmd_cache_ls(const struct cmd_entry *, int, char **);
static int	cmd_cache_clear(const struct cmd_entry *, int, char **);

static const struct cmd_entry cmd_cache_ls_entry = {
	.name = "ls",
	.usage = "cache ls",
	.summary = "the templates and staged trees (what plain cache does)",
	.help =
"Each warm-start template, its size and age (\"stale\": its QEMU, kernel\n"
"or initramfs changed since), each half-written one and its writer, and\n"
"each staged copy of a shared tree.\n",
	.exec = cmd_cache_ls
};

static const struct cmd_entry cmd_cache_clear_entry = {
	.name = "clear",
	.usage = "cache clear [--stale]",
	.summary = "remove them (--stale: only the stale ones)",
	.help =
"Remove every template, the half-written ones whose writer is gone, and\n"
"the staged trees no sandbox uses.\n"
"\n"
"      --stale  only the templates and trees that are stale\n",
	.exec = cmd_cache_clear
};

static const struct cmd_entry *const cmd_cache_subs[] = {
	&cmd_cache_ls_entry,
	&cmd_cache_clear_entry,
	NULL
};

const struct cmd_entry cmd_cache_entry = {
	.name = "cache",
	.summary = "list or remove the templates and staged trees",
	.subs = cmd_cache_subs,
	.exec = cmd_cache_exec
};

/* What a usage error of cache, ls or clear says. */
#define CMD_CACHE_USAGE	"usage: qsup cache ls | clear [--stale]"

struct cmd_cache_clear {
	const char	*dir;
	int		 only_stale;
	int		 n;
};

/* One line of "qsup cache ls" for a template or a half-written file. */
static void
cmd_cache_ls_one(const struct template_info *ti, void *arg)
{
	char	when[32];

	(void)arg;
	if (ti->writer != 0) {
		printf("%s  %6.1f MB  half-written by process %ld, %s\n",
		    ti->name, ti->size / 1e6, ti->writer, ti->writer_alive ?
		    "still writing" : "gone");
		return;
	}
	strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S",
	    localtime(&ti->mtime));
	printf("%s  %6.1f MB  %s%s\n", ti->name, ti->size / 1e6,
	    ti->mtime != 0 ? when : "(incomplete)", ti->stale ? "  stale" : "");
}

/* Remove a template, if it is stale or all go; half-written ones wait. */
static void
cmd_cache_clear_one(const struct template_info *ti, void *arg)
{
	struct cmd_cache_clear	*c = arg;

	if (ti->writer != 0 || (c->only_stale && !ti->stale))
		return;
	template_remove(c->dir, ti->name);
	c->n++;
}

/* List (clear 0) or remove the templates, then the staged trees. */
static int
cmd_cache_do(int clear, int only_stale)
{
	struct cmd_cache_clear	 c;
	char			*dir;
	int			 n, rc;

	if ((dir = template_dir()) == NULL) {
		log_warnx("no cache directory (set XDG_CACHE_HOME or HOME)");
		return (QSUP_EXIT_ERROR);
	}
	memset(&c, 0, sizeof c);
	c.dir = dir;
	c.only_stale = only_stale;
	if (clear)
		rc = template_each(dir, cmd_cache_clear_one, &c);
	else
		rc = template_each(dir, cmd_cache_ls_one, NULL);
	if (rc == -1) {
		log_warn("%s", dir);
		free(dir);
		return (QSUP_EXIT_ERROR);
	}
	if (clear) {
		printf("removed %d template%s\n", c.n, c.n == 1 ? "" : "s");
		/* Those of a live writer stay: it is still saving. */
		if ((n = template_sweep(dir)) > 0)
			printf("removed %d half-written file%s\n", n,
			    n == 1 ? "" : "s");
	}
	free(dir);
	/* Staged copies of shared trees (staging/cache.c). */
	if ((dir = util_cache_dir()) != NULL) {
		n = staging_cache_cmd(dir, clear, only_stale);
		if (clear)
			printf("removed %d staged tree%s\n", n, n == 1 ? "" :
			    "s");
		free(dir);
	}
	return (0);
}

/* Is argv (from the subcommand's name on) ls's or clear's, [--stale]? */
static int
cmd_cache_args(int argc, char **argv, int *only_stale)
{
	*only_stale = argc > 1 && strcmp(argv[1], "--stale") == 0;
	if (argc > 2 || (argc == 2 && !*only_stale)) {
		log_warnx("%s", CMD_CACHE_USAGE);
		return (-1);
	}
	return (0);
}

/* "qsup cache ls", and plain "qsup cache". */
static int
cmd_cache_ls(const struct cmd_entry *self, int argc, char **argv)
{
	int	only_stale;

	(void)self;
	if (cmd_cache_args(argc, argv, &only_stale) == -1)
		return (QSUP_EXIT_ERROR);
	return (cmd_cache_do(0, only_stale));
}

/* "qsup cache clear [--stale]". */
static int
cmd_cache_clear(const struct cmd_entry *self, int argc, char **argv)
{
	int	only_stale;

	(void)self;
	if (cmd_cache_args(argc, argv, &only_stale) == -1)
		return (QSUP_EXIT_ERROR);
	return (cmd_cache_do(1, only_stale));
}

/* "qsup cache" naming neither ls nor clear: alone, it lists. */
static int
cmd_cache_exec(const struct cmd_entry *self, int argc, char **argv)
{
	(void)self;
	if (argc < 2)
		return (cmd_cache_ls(&cmd_cache_ls_entry, argc, argv));
	log_warnx("%s", CMD_CACHE_USAGE);
	return (QSUP_EXIT_ERROR);
}
