/*
 * VM state templates for warm starts. A template is the saved state of a
 * guest booted to the agent's template state; template.c makes, checks and
 * restores them, template_cache.c lists them for "qsup cache" and keeps
 * the cache under its size cap (least recently used out first), both
 * through template_file.c's names of their files.
 *
 * What a template costs is what its files take on disk (st_blocks), not
 * their apparent size: a format-2 KEY.ram is as big as the guest's memory
 * but sparse, only the pages the guest touched before the save written.
 * Its last use is KEY.shape's mtime: set when it is saved, and by
 * template_touch at each restore (the shape is read by every restore and
 * written by none, so its mtime is free to mean this).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "template_int.h"
#include "wire.h"

/* A template (its KEY.* files) or a half-written file, as scanned. */
struct tc_entry {
	char			*name;
	struct template_info	 ti;
	int			 has_shape;
	int			 has_state;
	int			 building; /* incomplete, its lock held */
	int			 gone;	   /* removed by template_evict */
};

struct tc_scan {
	struct tc_entry	*v;
	size_t		 n;
	uint64_t	 total;		/* allocated bytes of all of them */
};

/* Is every file a shape names still the same? */
static int
template_stale(const char *shape)
{
	char		*copy, *line, *save, what[32], path[4096];
	struct buf	 now = { 0 };
	int		 stale = 0;

	copy = xstrdup(shape);
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%31s %4095s", what, path) != 2 ||
		    (strcmp(what, "qemu") != 0 && strcmp(what, "kernel") != 0 &&
		    strcmp(what, "initramfs") != 0))
			continue;
		buf_consume(&now, now.len);
		template_file_id(&now, what, path);
		if (now.len == 0 || strncmp(now.data, line, now.len - 1) != 0)
			stale = 1;
	}
	buf_free(&now);
	free(copy);
	return (stale);
}

/*
 * The format a shape's first line names, exactly: "FORMAT protocol N\n"
 * with FORMAT one of the two this qsup writes; anything else is 0, a
 * format it cannot read (a newer qsup's, or not a shape at all), never a
 * guess from the files that are there. *current: N is this qsup's agent
 * protocol (a template of another is never restored: its key differs).
 */
static int
template_format(const char *shape, int *current)
{
	static const struct {
		const char	*line;
		int		 format;
	} formats[] = {
		{ TEMPLATE_SHAPE_STREAM, TEMPLATE_STREAM },
		{ TEMPLATE_SHAPE_SHARED, TEMPLATE_SHARED }
	};
	const char	*p, *end;
	char		*ep;
	long		 protocol;
	size_t		 i, n;

	*current = 0;
	for (i = 0; i < sizeof formats / sizeof formats[0]; i++) {
		n = strlen(formats[i].line);
		if (strncmp(shape, formats[i].line, n) != 0 ||
		    strncmp(shape + n, " protocol ", 10) != 0)
			continue;
		p = shape + n + 10;
		if (!isdigit((unsigned char)*p))
			return (0);
		errno = 0;
		protocol = strtol(p, &ep, 10);
		end = ep;
		if (errno != 0 || (*end != '\n' && *end != '\0'))
			return (0);
		*current = protocol == QSUP_PROTOCOL_VERSION;
		return (formats[i].format);
	}
	return (0);
}

/*
 * Is KEY being built, its lock held? Asked only of an incomplete template
 * (its shape or meta renamed into place, its state not yet): holding the
 * lock shared for this instant could make a builder starting now give up
 * its save for this run, nothing worse.
 */
static int
template_building(int dfd, const char *key)
{
	char	*name;
	int	 fd, held;

	xasprintf(&name, "%s.lock", key);
	fd = openat(dfd, name, O_RDONLY|O_CLOEXEC);
	free(name);
	if (fd == -1)
		return (0);
	held = flock(fd, LOCK_SH|LOCK_NB) == -1 && errno == EWOULDBLOCK;
	close(fd);
	return (held);
}

static int
template_cmp_name(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

static struct tc_entry *
template_scan_add(struct tc_scan *s, const char *name, size_t len)
{
	struct tc_entry	*e;

	s->v = xreallocarray(s->v, s->n + 1, sizeof *s->v);
	e = &s->v[s->n++];
	memset(e, 0, sizeof *e);
	e->name = xstrndup(name, len);
	e->ti.name = e->name;
	return (e);
}

/* What a template's shape says of it: its format, staleness, last use. */
static void
template_scan_shape(const char *dir, const char *name, const struct stat *st,
    struct tc_entry *e)
{
	char	*shape, *path;
	int	 current;

	e->has_shape = 1;
	e->ti.used = st->st_mtime;
	xasprintf(&path, "%s/%s", dir, name);
	shape = util_read_file(path, NULL, 1 << 20);
	free(path);
	if (shape == NULL) {
		e->ti.stale = 1;
		return;
	}
	e->ti.format = template_format(shape, &current);
	/* A template of another agent protocol is never used again. */
	e->ti.stale = template_stale(shape) || (e->ti.format != 0 && !current);
	free(shape);
}

/*
 * All of a template's files seen: one without a shape is of no format
 * qsup can tell, and one without its state is left over, unless its
 * save is under way.
 */
static void
template_scan_done(int dfd, struct tc_entry *e)
{
	if (!e->has_shape) {
		e->ti.format = 0;
		e->ti.stale = 1;
	}
	if (!e->has_state) {
		if (template_building(dfd, e->name))
			e->building = 1;
		else
			e->ti.stale = 1;
	}
}

static void
template_scan_free(struct tc_scan *s)
{
	size_t	i;

	for (i = 0; i < s->n; i++)
		free(s->v[i].name);
	free(s->v);
	memset(s, 0, sizeof *s);
}

/*
 * Every template of dir (sorted by key) and then every half-written file,
 * with what each takes on disk. A template is all the files KEY.SUFFIX
 * (KEY.lock aside): found by any of them, so a KEY.ram or KEY.state left
 * without its shape is listed (format 0, stale) rather than kept unseen.
 */
static int
template_scan(const char *dir, struct tc_scan *s)
{
	struct tc_entry	*e, *t = NULL;
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		**names = NULL, *dot;
	size_t		 nnames = 0, i, keylen;
	long		 pid;
	int		 dfd;

	memset(s, 0, sizeof *s);
	if ((d = opendir(dir)) == NULL)
		return (-1);
	dfd = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		names = xreallocarray(names, nnames + 1, sizeof *names);
		names[nnames++] = xstrdup(de->d_name);
	}
	/* Sorted, the files KEY.* of one key are next to each other. */
	qsort(names, nnames, sizeof *names, template_cmp_name);

	/* The templates first. */
	for (i = 0; i < nnames; i++) {
		if (template_partial(names[i], &pid) > 0 ||
		    (dot = strchr(names[i], '.')) == NULL ||
		    !template_is_key(names[i], dot - names[i]))
			continue;
		keylen = dot - names[i];
		if (t != NULL && (keylen != strlen(t->name) ||
		    strncmp(names[i], t->name, keylen) != 0)) {
			template_scan_done(dfd, t);
			t = NULL;
		}
		if (strcmp(dot, ".lock") == 0 ||
		    fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (t == NULL)
			t = template_scan_add(s, names[i], keylen);
		t->ti.allocated += (uint64_t)st.st_blocks * 512;
		if (strcmp(dot, ".state") == 0) {
			t->has_state = 1;
			t->ti.size = st.st_size;
			t->ti.mtime = st.st_mtime;
			t->ti.state_allocated = (uint64_t)st.st_blocks * 512;
		} else if (strcmp(dot, ".ram") == 0) {
			t->ti.ram_size = st.st_size;
			t->ti.ram_allocated = (uint64_t)st.st_blocks * 512;
		}
		else if (strcmp(dot, ".shape") == 0)
			template_scan_shape(dir, names[i], &st, t);
		/* Without a shape, a template is as old as its newest file. */
		if (!t->has_shape && st.st_mtime > t->ti.used)
			t->ti.used = st.st_mtime;
	}
	if (t != NULL)
		template_scan_done(dfd, t);

	/* Then the half-written files: a save under way, or a qsup killed. */
	for (i = 0; i < nnames; i++) {
		if (template_partial(names[i], &pid) == 0 ||
		    fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		e = template_scan_add(s, names[i], strlen(names[i]));
		e->ti.size = st.st_size;
		e->ti.mtime = e->ti.used = st.st_mtime;
		e->ti.allocated = (uint64_t)st.st_blocks * 512;
		e->ti.writer = pid;
		e->ti.writer_alive = template_writer_alive(pid);
	}
	for (i = 0; i < s->n; i++)
		s->total += s->v[i].ti.allocated;
	for (i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return (0);
}

/*
 * Call cb for each template in dir, by key, then for each half-written
 * file (writer set): what "qsup cache" lists and clears. cb may remove the
 * template it is given. A template being saved is not given (its files
 * not all in place yet): only its half-written ones. -1 (errno set): dir
 * cannot be read.
 */
int
template_each(const char *dir, void (*cb)(const struct template_info *,
    void *), void *arg)
{
	struct tc_scan	s;
	size_t		i;

	if (template_scan(dir, &s) == -1)
		return (-1);
	for (i = 0; i < s.n; i++) {
		if (!s.v[i].building)
			cb(&s.v[i].ti, arg);
	}
	template_scan_free(&s);
	return (0);
}

/*
 * Mark t used now: the least recently used templates are the first to go.
 * One utimensat of the shape, at each restore; if it fails, t only looks
 * older than it is.
 */
void
template_touch(struct template *t)
{
	if (t != NULL && t->shape_path != NULL)
		(void)utimensat(AT_FDCWD, t->shape_path, NULL, 0);
}

/*
 * Of the templates evict may remove, the one to go first: those qsup
 * cannot read or will not use again (unknown format, stale, incomplete),
 * then the least recently used. NULL: none left.
 */
static struct tc_entry *
template_evict_next(struct tc_scan *s, const char *keep)
{
	struct tc_entry	*e, *best = NULL;
	size_t		 i;
	int		 useless, best_useless = 0;

	for (i = 0; i < s->n; i++) {
		e = &s->v[i];
		if (e->gone || e->building || e->ti.writer != 0 ||
		    (keep != NULL && strcmp(e->name, keep) == 0))
			continue;
		useless = e->ti.format == 0 || e->ti.stale;
		if (best == NULL || useless > best_useless ||
		    (useless == best_useless && e->ti.used < best->ti.used)) {
			best = e;
			best_useless = useless;
		}
	}
	return (best);
}

/*
 * Remove templates of dir while all its files take more than max bytes on
 * disk (0: no limit), keep (a KEY, or NULL) never; half-written files of a
 * writer that is gone go first. A live writer's half-written files and a
 * template being built stay, but count. Returns how many templates went.
 *
 * Removing a template another qsup has just restored is safe: its QEMU
 * has KEY.ram mapped and KEY.state open, and an unlinked file lives on
 * until the last of those closes (so its blocks are freed only then: the
 * cap is on what the cache directory holds). A qsup that has checked the
 * template but not yet opened its files fails to restore it and boots.
 */
int
template_evict(const char *dir, uint64_t max, const char *keep)
{
	struct tc_scan	 s;
	struct tc_entry	*e;
	char		*path;
	size_t		 i;
	int		 n = 0;

	if (max == 0 || template_scan(dir, &s) == -1)
		return (0);
	for (i = 0; i < s.n && s.total > max; i++) {
		e = &s.v[i];
		if (e->ti.writer == 0 || e->ti.writer_alive)
			continue;
		xasprintf(&path, "%s/%s", dir, e->name);
		if (unlink(path) == 0 || errno == ENOENT) {
			log_debug("removed %s (%.1f MB), left by process %ld",
			    path, e->ti.allocated / 1e6, e->ti.writer);
			s.total -= e->ti.allocated;
			e->gone = 1;
		}
		free(path);
	}
	while (s.total > max && (e = template_evict_next(&s, keep)) != NULL) {
		template_remove(dir, e->name);
		log_debug("evicted template %s (%.1f MB%s), the cache over "
		    "%.1f MB", e->name, e->ti.allocated / 1e6,
		    e->ti.format == 0 ? ", unknown format" : e->ti.stale ?
		    ", stale" : "", max / 1e6);
		s.total -= e->ti.allocated;
		e->gone = 1;
		n++;
	}
	template_scan_free(&s);
	return (n);
}
