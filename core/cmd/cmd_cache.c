/*
 * "qsup cache ls | clear | prune": the warm-start templates (their
 * mechanics are core/vm/template.c's, their listing and size cap
 * template_cache.c's) and the staged copies of shared trees
 * (staging/cache.c), listed or removed.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd.h"
#include "staging.h"

static int	cmd_cache_exec(const struct cmd_entry *, int, char **);
static int	cmd_cache_ls(const struct cmd_entry *, int, char **);
static int	cmd_cache_clear(const struct cmd_entry *, int, char **);
static int	cmd_cache_prune(const struct cmd_entry *, int, char **);

#define CMD_CACHE_SET	(CMD_O_LONG + 0)
#define CMD_CACHE_JSON	(CMD_O_LONG + 1)
#define CMD_CACHE_STALE	(CMD_O_LONG + 2)
#define CMD_CACHE_MAX	(CMD_O_LONG + 3)

/* The profile's options, and -v, which every subcommand takes unsaid. */
#define CMD_CACHE_PROFILE_OPTIONS \
	{ 'p', "profile", CMD_V_PROFILE, "FILE", 0, \
	  "the profile whose template_cache_max applies (else\n" \
	  "the default profile's)" }, \
	{ CMD_CACHE_SET, "set", CMD_V_SETTING, "NAME=VALUE", CMD_O_REPEAT, \
	  "override a profile setting (repeatable)" }
#define CMD_CACHE_VERBOSE \
	{ 'v', "verbose", CMD_V_NONE, NULL, CMD_O_HIDDEN, NULL }, \
	{ 0, NULL, 0, NULL, 0, NULL }

static const struct cmd_option cmd_cache_ls_options[] = {
	CMD_CACHE_PROFILE_OPTIONS,
	{ CMD_CACHE_JSON, "json", CMD_V_NONE, NULL, 0,
	  "the templates as a JSON object on stdout" },
	CMD_CACHE_VERBOSE
};

static const struct cmd_option cmd_cache_clear_options[] = {
	{ CMD_CACHE_STALE, "stale", CMD_V_NONE, NULL, 0,
	  "only the templates and trees that are stale, and the\n"
	  "templates of a format this qsup cannot read" },
	CMD_CACHE_VERBOSE
};

static const struct cmd_option cmd_cache_prune_options[] = {
	{ CMD_CACHE_MAX, "max", CMD_V_SIZE, "SIZE", 0,
	  "the cap (\"2G\", \"500M\", bytes; 0: no limit),\n"
	  "instead of the profile's template_cache_max" },
	CMD_CACHE_PROFILE_OPTIONS,
	CMD_CACHE_VERBOSE
};

static const struct cmd_entry cmd_cache_ls_entry = {
	.name = "ls",
	.usage = "cache ls [--profile FILE] [--set NAME=VALUE] [--json]",
	.summary = "the templates and staged trees (what plain cache does)",
	.help =
"Each warm-start template: its key, what it takes on disk, its format\n"
"(\"stream\": the guest's RAM in the saved state; \"shared\": in a RAM file\n"
"of its own that restores map copy-on-write; \"unknown\": a format this\n"
"qsup cannot read), its RAM file's size on disk and apparent size (it is\n"
"sparse), its state file's size on disk, when it was last saved or\n"
"restored, and \"stale\" if it will not be used again (its QEMU, kernel or\n"
"initramfs changed since, or it is incomplete). Then each half-written\n"
"one and its writer, the total against the cap (template_cache_max of the\n"
"profile; each run applies its own profile's), and each staged copy of a\n"
"shared tree. Sizes are of what the files take on disk, MB of 10^6 bytes.\n"
"\n",
	.options = cmd_cache_ls_options,
	.flags = CMD_IN_ORDER,
	.exec = cmd_cache_ls
};

static const struct cmd_entry cmd_cache_clear_entry = {
	.name = "clear",
	.usage = "cache clear [--stale]",
	.summary = "remove them (--stale: only the stale ones)",
	.help =
"Remove every template (all of its files, its RAM file too), the\n"
"half-written ones whose writer is gone, and the staged trees no sandbox\n"
"uses.\n"
"\n",
	.options = cmd_cache_clear_options,
	.flags = CMD_IN_ORDER,
	.column = 15,
	.exec = cmd_cache_clear
};

static const struct cmd_entry cmd_cache_prune_entry = {
	.name = "prune",
	.usage = "cache prune [--max SIZE] [--profile FILE] [--set NAME=VALUE]",
	.summary = "remove templates, least recently used first, down to a cap",
	.help =
"What a run does after it saves a template, by hand: while the templates\n"
"take more than the cap on disk, remove the unusable ones (unknown\n"
"format, stale) and then the least recently used. A save under way and\n"
"a live writer's half-written files stay.\n"
"\n",
	.options = cmd_cache_prune_options,
	.flags = CMD_IN_ORDER,
	.exec = cmd_cache_prune
};

static const struct cmd_entry *const cmd_cache_subs[] = {
	&cmd_cache_ls_entry,
	&cmd_cache_clear_entry,
	&cmd_cache_prune_entry,
	NULL
};

const struct cmd_entry cmd_cache_entry = {
	.name = "cache",
	.summary = "list or remove the templates and staged trees",
	.subs = cmd_cache_subs,
	.exec = cmd_cache_exec
};

/* What a usage error of cache, ls, clear or prune says. */
#define CMD_CACHE_USAGE	"usage: qsup cache ls | clear [--stale] | prune"

struct cmd_cache_opts {
	const char	*profile;
	char		**sets;		/* one more slot, for --max */
	size_t		 nsets;
	int		 json;
	int		 only_stale;
	char		*max;		/* --max's, as a --set */
};

/* A template or a half-written file, as "qsup cache ls" shows it. */
struct cmd_cache_list {
	int		 json;
	int		 n;		/* templates */
	int		 nparts;
	uint64_t	 total;		/* bytes on disk, all of them */
	struct buf	 t;		/* --json: the templates */
	struct buf	 h;		/* --json: the half-written files */
};

struct cmd_cache_clear {
	const char	*dir;
	int		 only_stale;
	int		 n;
	int		 nparts;
};

/* The options of a subcommand; -1: a usage error, said. */
static int
cmd_cache_args(const struct cmd_entry *self, int argc, char **argv,
    struct cmd_cache_opts *o)
{
	struct cmd_args	  a;
	char		**sets;
	const char	 *max;
	int		  rc = -1;

	memset(o, 0, sizeof *o);
	if (cmd_args_parse(self, argc, argv, &a) == 0 && a.argc == 0) {
		o->profile = cmd_args_get(&a, 'p');
		sets = cmd_args_list(&a, CMD_CACHE_SET, &o->nsets);
		o->sets = xcalloc(o->nsets + 2, sizeof *o->sets);
		if (o->nsets > 0)
			memcpy(o->sets, sets, o->nsets * sizeof *o->sets);
		o->json = cmd_args_has(&a, CMD_CACHE_JSON);
		o->only_stale = cmd_args_has(&a, CMD_CACHE_STALE);
		if ((max = cmd_args_get(&a, CMD_CACHE_MAX)) != NULL)
			xasprintf(&o->max, "template_cache_max=%s", max);
		if (cmd_args_has(&a, 'v'))
			log_verbose = 1;
		rc = 0;
	} else
		log_warnx("usage: qsup %s", self->usage);
	cmd_args_free(&a);
	return (rc);
}

/*
 * The cap that applies: template_cache_max of the profile named (or the
 * default one) with --set and --max. -1: the profile would not load (said).
 */
static int
cmd_cache_cap(struct cmd_cache_opts *o, uint64_t *cap)
{
	struct profile	 p;
	char		*cause;

	if (o->max != NULL)
		o->sets[o->nsets++] = o->max;
	if (profile_load_set(&p, o->profile, o->sets, o->nsets, &cause) ==
	    -1) {
		log_warnx("%s", cause);
		free(cause);
		return (-1);
	}
	*cap = p.template_cache_max;
	profile_free(&p);
	return (0);
}

/* A size as template_cache_max would be written: "4G", "300M", bytes. */
static void
cmd_cache_size(char *s, size_t len, uint64_t bytes)
{
	static const char	units[] = "KMGT";
	int			i;

	for (i = 3; i >= 0; i--) {
		if (bytes != 0 && bytes % (1ULL << (10 * (i + 1))) == 0) {
			snprintf(s, len, "%llu%c", (unsigned long long)
			    (bytes >> (10 * (i + 1))), units[i]);
			return;
		}
	}
	snprintf(s, len, "%llu", (unsigned long long)bytes);
}

static const char *
cmd_cache_format(int format)
{
	switch (format) {
	case TEMPLATE_STREAM:
		return ("stream");
	case TEMPLATE_SHARED:
		return ("shared");
	}
	return ("unknown");
}

/* One template or half-written file of "qsup cache ls": a line, or JSON. */
static void
cmd_cache_ls_one(const struct template_info *ti, void *arg)
{
	struct cmd_cache_list	*l = arg;
	struct buf		*b;
	char			 when[32], rams[64];

	l->total += ti->allocated;
	if (ti->writer != 0) {
		l->nparts++;
		if (l->json) {
			b = &l->h;
			buf_puts(b, b->len == 0 ? "{\"name\":" : ",{\"name\":");
			buf_json_string(b, ti->name);
			buf_printf(b, ",\"allocated\":%llu,\"size\":%lld,"
			    "\"writer\":%ld,\"writer_alive\":%s}",
			    (unsigned long long)ti->allocated,
			    (long long)ti->size, ti->writer,
			    ti->writer_alive ? "true" : "false");
		} else
			printf("%s  %6.1f MB  half-written by process %ld, "
			    "%s\n", ti->name, ti->allocated / 1e6, ti->writer,
			    ti->writer_alive ? "still writing" : "gone");
		return;
	}
	l->n++;
	if (l->json) {
		b = &l->t;
		buf_puts(b, b->len == 0 ? "{\"key\":" : ",{\"key\":");
		buf_json_string(b, ti->name);
		buf_printf(b, ",\"format\":\"%s\",\"allocated\":%llu,"
		    "\"ram_allocated\":%llu,\"ram_size\":%lld,"
		    "\"state_allocated\":%llu,\"state_size\":%lld,"
		    "\"saved\":%lld,\"used\":%lld,\"stale\":%s}",
		    cmd_cache_format(ti->format),
		    (unsigned long long)ti->allocated,
		    (unsigned long long)ti->ram_allocated,
		    (long long)ti->ram_size,
		    (unsigned long long)ti->state_allocated,
		    (long long)ti->size,
		    (long long)ti->mtime, (long long)ti->used,
		    ti->stale ? "true" : "false");
		return;
	}
	if (ti->ram_size != 0 || ti->ram_allocated != 0)
		snprintf(rams, sizeof rams, "%.1f/%.1f MB",
		    ti->ram_allocated / 1e6, ti->ram_size / 1e6);
	else
		snprintf(rams, sizeof rams, "-");
	when[0] = '\0';
	if (ti->used != 0)
		strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S",
		    localtime(&ti->used));
	/* What it takes on disk first, where "qsup cache ls" always had it. */
	printf("%s  %6.1f MB  %-7s  ram %-17s  state %6.1f MB  used %s%s%s\n",
	    ti->name, ti->allocated / 1e6, cmd_cache_format(ti->format), rams,
	    ti->state_allocated / 1e6, ti->used != 0 ? when : "-", ti->mtime == 0 ?
	    "  (incomplete)" : "", ti->stale ? "  stale" : "");
}

/*
 * Remove a template if all go, or if it is stale or of a format qsup
 * cannot read; a half-written file once its writer is gone.
 */
static void
cmd_cache_clear_one(const struct template_info *ti, void *arg)
{
	struct cmd_cache_clear	*c = arg;
	char			*path;

	if (ti->writer != 0) {
		/* A live writer's stays: it is still saving. */
		if (ti->writer_alive)
			return;
		xasprintf(&path, "%s/%s", c->dir, ti->name);
		if (unlink(path) == 0)
			c->nparts++;
		free(path);
		return;
	}
	if (c->only_stale && !ti->stale && ti->format != 0)
		return;
	template_remove(c->dir, ti->name);
	c->n++;
}

/* The templates directory, or NULL (said). */
static char *
cmd_cache_dir(void)
{
	char	*dir;

	if ((dir = template_dir()) == NULL)
		log_warnx("no cache directory (set XDG_CACHE_HOME or HOME)");
	return (dir);
}

/* The staged copies of shared trees (staging/cache.c): listed or removed. */
static void
cmd_cache_staged(int clear, int only_stale)
{
	char	*cache;
	int	 n;

	if ((cache = util_cache_dir()) == NULL)
		return;
	n = staging_cache_cmd(cache, clear, only_stale);
	if (clear)
		printf("removed %d staged tree%s\n", n, n == 1 ? "" : "s");
	free(cache);
}

/* The last line of "qsup cache ls": the total, and the cap (NULL: none). */
static void
cmd_cache_ls_total(const struct cmd_cache_list *l, const char *profile,
    const uint64_t *max)
{
	char	cap[32];

	if (profile == NULL)
		profile = "the default profile";
	printf("total  %6.1f MB  %d template%s; cap ", l->total / 1e6, l->n,
	    l->n == 1 ? "" : "s");
	if (max == NULL)
		printf("unknown (the profile did not load)\n");
	else if (*max == 0)
		printf("none (template_cache_max = 0 in %s)\n", profile);
	else {
		cmd_cache_size(cap, sizeof cap, *max);
		printf("%.1f MB (template_cache_max = %s in %s; each run "
		    "applies its own profile's)%s\n", *max / 1e6, cap, profile,
		    l->total > *max ? ", over it" : "");
	}
}

/* "qsup cache ls", and plain "qsup cache". */
static int
cmd_cache_ls(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_cache_opts	 o;
	struct cmd_cache_list	 l;
	struct buf		 d = { 0 };
	char			*dir;
	uint64_t		 max = 0;
	int			 have_cap, rc = 0;

	if (cmd_cache_args(self, argc, argv, &o) == -1)
		return (QSUP_EXIT_ERROR);
	if ((dir = cmd_cache_dir()) == NULL) {
		free(o.sets);
		return (QSUP_EXIT_ERROR);
	}
	/* A profile that will not load: the listing all the same. */
	have_cap = cmd_cache_cap(&o, &max) == 0;
	free(o.sets);
	memset(&l, 0, sizeof l);
	l.json = o.json;
	if (template_each(dir, cmd_cache_ls_one, &l) == -1) {
		log_warn("%s", dir);
		rc = QSUP_EXIT_ERROR;
	} else if (o.json) {
		buf_json_string(&d, dir);
		printf("{\"dir\":%s,\"allocated\":%llu,\"cap\":", d.data,
		    (unsigned long long)l.total);
		if (have_cap)
			printf("%llu", (unsigned long long)max);
		else
			printf("null");
		printf(",\"templates\":[%s],\"half_written\":[%s]}\n",
		    l.t.data != NULL ? l.t.data : "",
		    l.h.data != NULL ? l.h.data : "");
		buf_free(&d);
	} else if (l.n != 0 || l.nparts != 0)
		cmd_cache_ls_total(&l, o.profile, have_cap ? &max : NULL);
	buf_free(&l.t);
	buf_free(&l.h);
	free(dir);
	free(o.max);
	if (!o.json && rc == 0)
		cmd_cache_staged(0, 0);
	return (rc);
}

/* "qsup cache clear [--stale]". */
static int
cmd_cache_clear(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_cache_opts	 o;
	struct cmd_cache_clear	 c;
	char			*dir;

	if (cmd_cache_args(self, argc, argv, &o) == -1)
		return (QSUP_EXIT_ERROR);
	free(o.sets);
	if ((dir = cmd_cache_dir()) == NULL)
		return (QSUP_EXIT_ERROR);
	memset(&c, 0, sizeof c);
	c.dir = dir;
	c.only_stale = o.only_stale;
	if (template_each(dir, cmd_cache_clear_one, &c) == -1) {
		log_warn("%s", dir);
		free(dir);
		return (QSUP_EXIT_ERROR);
	}
	printf("removed %d template%s\n", c.n, c.n == 1 ? "" : "s");
	if (c.nparts > 0)
		printf("removed %d half-written file%s\n", c.nparts,
		    c.nparts == 1 ? "" : "s");
	free(dir);
	cmd_cache_staged(1, o.only_stale);
	return (0);
}

/* Sums what the templates of dir take on disk (template_each's cb). */
static void
cmd_cache_sum(const struct template_info *ti, void *arg)
{
	*(uint64_t *)arg += ti->allocated;
}

/* Counts one template or half-written file into a cmd_cache_tally. */
static void
cmd_cache_tally_one(const struct template_info *ti, void *arg)
{
	struct cmd_cache_tally	*t = arg;

	t->allocated += ti->allocated;
	if (ti->writer != 0) {
		if (ti->writer_alive)
			t->writing++;
		else
			t->abandoned++;
		return;
	}
	t->n++;
	if (ti->format == 0)
		t->unknown++;
	else if (ti->stale || ti->mtime == 0)
		t->stale++;
}

/*
 * What "qsup cache ls" would list in dir, counted (qsup doctor): -1 if
 * dir cannot be read, errno set.
 */
int
cmd_cache_tally(const char *dir, struct cmd_cache_tally *t)
{
	memset(t, 0, sizeof *t);
	return (template_each(dir, cmd_cache_tally_one, t));
}

/* "qsup cache prune [--max SIZE]": template_evict, by hand. */
static int
cmd_cache_prune(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_cache_opts	 o;
	char			*dir, cap[32];
	uint64_t		 max, before = 0, after = 0;
	int			 n, rc;

	if (cmd_cache_args(self, argc, argv, &o) == -1)
		return (QSUP_EXIT_ERROR);
	rc = cmd_cache_cap(&o, &max);
	free(o.sets);
	free(o.max);
	if (rc == -1)
		return (QSUP_EXIT_ERROR);
	if ((dir = cmd_cache_dir()) == NULL)
		return (QSUP_EXIT_ERROR);
	if (template_each(dir, cmd_cache_sum, &before) == -1) {
		log_warn("%s", dir);
		free(dir);
		return (QSUP_EXIT_ERROR);
	}
	n = template_evict(dir, max, NULL);
	template_each(dir, cmd_cache_sum, &after);
	cmd_cache_size(cap, sizeof cap, max);
	printf("removed %d template%s (%.1f MB); %.1f MB left, cap %s\n", n,
	    n == 1 ? "" : "s", (before > after ? before - after : 0) / 1e6,
	    after / 1e6, max == 0 ? "none" : cap);
	free(dir);
	return (0);
}

/* "qsup cache" naming no subcommand: alone, it lists. */
static int
cmd_cache_exec(const struct cmd_entry *self, int argc, char **argv)
{
	(void)self;
	if (argc < 2)
		return (cmd_cache_ls(&cmd_cache_ls_entry, argc, argv));
	log_warnx("%s", CMD_CACHE_USAGE);
	return (QSUP_EXIT_ERROR);
}
