/*
 * template_cache.c on hand-made templates: what a template costs on disk
 * (allocated, not apparent), its format as its shape names it, the order
 * in which template_evict removes templates and what it never removes.
 * The files are made here as template.c lays them out (template_int.h),
 * format 2 included, so no QEMU is needed.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"
#include "template_int.h"
#include "wire.h"

static char	 dir[] = "/tmp/qsup-tcache.XXXXXX";
static char	*tdir;

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
	cr_assert_not_null(tdir = template_dir());
}

static void
teardown(void)
{
	free(tdir);
	util_rm_rf(dir);
}

TestSuite(template_cache, .init = setup, .fini = teardown);

#define MIB	(1024 * 1024)
#define TEMPLATE_KEY	32	/* a key's length: 16 bytes in hex */

/*
 * A key of the test's: tag (hex) padded to a key's length with f. One of
 * 16 buffers, each used again 16 calls later.
 */
static const char *
K(const char *tag)
{
	static char	keys[16][TEMPLATE_KEY + 1];
	static int	next;
	char		*k = keys[next++ % 16];

	memset(k, 'f', TEMPLATE_KEY);
	memcpy(k, tag, strlen(tag));
	k[TEMPLATE_KEY] = '\0';
	return (k);
}

static void
put(const char *key, const char *suffix, const void *data, size_t len)
{
	char	*path;
	int	 fd;

	xasprintf(&path, "%s/%s%s", tdir, key, suffix);
	fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0600);
	cr_assert(fd != -1, "%s", path);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	free(path);
}

static int
exists(const char *key, const char *suffix)
{
	struct stat	 st;
	char		*path;
	int		 rc;

	xasprintf(&path, "%s/%s%s", tdir, key, suffix);
	rc = lstat(path, &st) == 0;
	free(path);
	return (rc);
}

/* What dir/KEY.suffix takes on disk, as the test sees it. */
static uint64_t
blocks(const char *key, const char *suffix)
{
	struct stat	 st;
	char		*path;

	xasprintf(&path, "%s/%s%s", tdir, key, suffix);
	if (lstat(path, &st) == -1)
		st.st_blocks = 0;
	free(path);
	return ((uint64_t)st.st_blocks * 512);
}

/* Set KEY.shape's mtime: when the template was last used. */
static void
used_at(const char *key, time_t when)
{
	struct timespec	 ts[2];
	char		*path;

	ts[0].tv_sec = ts[1].tv_sec = when;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	xasprintf(&path, "%s/%s.shape", tdir, key);
	cr_assert_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
	free(path);
}

/*
 * A whole template KEY whose shape's first line is first (NULL: no shape)
 * and whose state has state bytes written; ram: a KEY.ram of that apparent
 * size (0: none, format 1) with nwritten 4 KiB blocks written, the rest a
 * hole, as QEMU leaves the pages a guest never touched. Used at used.
 */
static void
make(const char *key, const char *first, size_t state, off_t ram,
    int nwritten, time_t used)
{
	char	*data, *path, *shape;
	int	 fd, i;

	data = xcalloc(1, state > 4096 ? state : 4096);
	memset(data, 'x', state > 4096 ? state : 4096);
	put(key, ".state", data, state);
	if (ram != 0) {
		xasprintf(&path, "%s/%s.ram", tdir, key);
		fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0600);
		cr_assert(fd != -1);
		cr_assert_eq(ftruncate(fd, ram), 0);
		for (i = 0; i < nwritten; i++)
			cr_assert_eq(pwrite(fd, data, 4096, (off_t)i * 64 *
			    4096), 4096);
		close(fd);
		free(path);
	}
	free(data);
	put(key, ".meta", "1 2.3\n", 6);
	if (first != NULL) {
		xasprintf(&shape, "%s\nqemu-arg -m\n", first);
		put(key, ".shape", shape, strlen(shape));
		free(shape);
		used_at(key, used);
	}
}

static char *
shape_line(const char *format)
{
	char	*line;

	xasprintf(&line, "%s protocol %d", format, QSUP_PROTOCOL_VERSION);
	return (line);
}

struct seen {
	char			*name[16];
	struct template_info	 ti[16];
	int			 n;
};

static void
seen_cb(const struct template_info *ti, void *arg)
{
	struct seen	*s = arg;

	cr_assert_lt(s->n, 16);
	s->ti[s->n] = *ti;
	s->name[s->n] = xstrdup(ti->name);	/* ti->name is the scan's */
	s->ti[s->n].name = s->name[s->n];
	s->n++;
}

static void
seen_free(struct seen *s)
{
	int	i;

	for (i = 0; i < s->n; i++)
		free(s->name[i]);
	memset(s, 0, sizeof *s);
}

static void
scan(struct seen *s)
{
	seen_free(s);
	cr_assert_eq(template_each(tdir, seen_cb, s), 0);
}

static const struct template_info *
find(struct seen *s, const char *name)
{
	int	i;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->name[i], name) == 0)
			return (&s->ti[i]);
	}
	return (NULL);
}

/* A pid no process has: a child's, once reaped. */
static long
dead_pid(void)
{
	pid_t	pid;

	if ((pid = fork()) == 0)
		_exit(0);
	cr_assert(pid > 0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return ((long)pid);
}

Test(template_cache, allocated_is_on_disk_not_apparent)
{
	struct seen			 s = { 0 };
	const struct template_info	*ti;
	char				*shared;
	uint64_t			 want;

	/* 256 MiB of RAM file, 3 pages of it written. */
	shared = shape_line(TEMPLATE_SHAPE_SHARED);
	make(K("aaaa"), shared, 10000, 256 * MIB, 3, 1000);
	scan(&s);
	cr_assert_eq(s.n, 1);
	cr_assert_not_null(ti = find(&s, K("aaaa")));
	cr_assert_eq(ti->format, TEMPLATE_SHARED);
	cr_assert_eq(ti->ram_size, 256 * MIB);
	cr_assert_eq(ti->size, 10000);
	want = blocks(K("aaaa"), ".state") + blocks(K("aaaa"), ".ram") +
	    blocks(K("aaaa"), ".meta") + blocks(K("aaaa"), ".shape");
	cr_assert_eq(ti->allocated, want, "%llu, not %llu",
	    (unsigned long long)ti->allocated, (unsigned long long)want);
	cr_assert_geq(blocks(K("aaaa"), ".ram"), 3 * 4096);
	cr_assert_lt(ti->allocated, 1 * MIB, "the hole was counted");
	cr_assert_eq(ti->used, 1000);
	cr_assert(!ti->stale && ti->writer == 0 && ti->mtime != 0);
	seen_free(&s);
	free(shared);
}

Test(template_cache, format_is_read_never_guessed)
{
	struct seen	 s = { 0 };
	char		*stream = shape_line(TEMPLATE_SHAPE_STREAM);
	char		*shared = shape_line(TEMPLATE_SHAPE_SHARED);
	char		*old;

	xasprintf(&old, "%s protocol %d", TEMPLATE_SHAPE_STREAM,
	    QSUP_PROTOCOL_VERSION + 1);
	make(K("c1"), stream, 100, 0, 0, 1000);
	make(K("c2"), shared, 100, MIB, 1, 1000);
	make(K("c3"), "qsup-template 3 ram elsewhere protocol 1", 100, MIB, 1,
	    1000);
	make(K("c4"), "qsup-template 10 protocol 1", 100, 0, 0, 1000);
	make(K("c5"), "qsup-template 1 protocol 1x", 100, 0, 0, 1000);
	make(K("c6"), "qsup-template 1", 100, 0, 0, 1000);
	/* A RAM file and a state with no shape: there, but of no format. */
	make(K("c7"), NULL, 100, MIB, 1, 0);
	/* A format this qsup reads, of another agent protocol. */
	make(K("c8"), old, 100, 0, 0, 1000);
	scan(&s);
	cr_assert_eq(s.n, 8);
	cr_assert_eq(find(&s, K("c1"))->format, TEMPLATE_STREAM);
	cr_assert(!find(&s, K("c1"))->stale);
	cr_assert_eq(find(&s, K("c1"))->ram_size, 0);
	cr_assert_eq(find(&s, K("c2"))->format, TEMPLATE_SHARED);
	cr_assert(!find(&s, K("c2"))->stale);
	cr_assert_eq(find(&s, K("c3"))->format, 0);
	cr_assert_eq(find(&s, K("c4"))->format, 0, "format 10 is not 1");
	cr_assert_eq(find(&s, K("c5"))->format, 0);
	cr_assert_eq(find(&s, K("c6"))->format, 0);
	cr_assert_eq(find(&s, K("c7"))->format, 0);
	cr_assert(find(&s, K("c7"))->stale);
	cr_assert_eq(find(&s, K("c7"))->ram_size, MIB);
	cr_assert_neq(find(&s, K("c7"))->used, 0, "its files' mtime");
	cr_assert_eq(find(&s, K("c8"))->format, TEMPLATE_STREAM);
	cr_assert(find(&s, K("c8"))->stale, "another protocol's is never used");
	seen_free(&s);
	free(stream);
	free(shared);
	free(old);
}

Test(template_cache, stale_when_a_file_it_names_changed)
{
	struct seen	 s = { 0 };
	struct buf	 b = { 0 };
	char		*stream = shape_line(TEMPLATE_SHAPE_STREAM), *shape;
	char		*kernel;
	FILE		*f;

	xasprintf(&kernel, "%s/vmlinux", dir);
	cr_assert_not_null(f = fopen(kernel, "w"));
	fclose(f);
	template_file_id(&b, "kernel", kernel);
	xasprintf(&shape, "%s\n%s", stream, b.data);
	make(K("c1"), stream, 100, 0, 0, 1000);
	put(K("c1"), ".shape", shape, strlen(shape));
	scan(&s);
	cr_assert(!find(&s, K("c1"))->stale);
	cr_assert_not_null(f = fopen(kernel, "w"));
	fputs("a new kernel", f);
	fclose(f);
	scan(&s);
	cr_assert(find(&s, K("c1"))->stale);
	seen_free(&s);
	buf_free(&b);
	free(shape);
	free(kernel);
	free(stream);
}

/* Each test template takes this much on disk, or near it. */
#define T_STATE	(256 * 1024)

Test(template_cache, evicts_least_recently_used_first_and_keeps_keep)
{
	struct seen	 s = { 0 };
	char		*stream = shape_line(TEMPLATE_SHAPE_STREAM);
	char		*shared = shape_line(TEMPLATE_SHAPE_SHARED);
	uint64_t	 one;

	make(K("a"), stream, T_STATE, 0, 0, 1000);
	make(K("b"), shared, T_STATE, 64 * MIB, 0, 2000);
	make(K("c"), stream, T_STATE, 0, 0, 3000);
	make(K("d"), shared, T_STATE, 64 * MIB, 0, 4000);
	scan(&s);
	one = find(&s, K("a"))->allocated;
	cr_assert_gt(one, T_STATE - 1);

	cr_assert_eq(template_evict(tdir, 0, NULL), 0, "0 is no limit");
	cr_assert_eq(template_evict(tdir, 100 * one, NULL), 0, "under the cap");
	scan(&s);
	cr_assert_eq(s.n, 4);

	/* Room for two and a half: the two least recently used go. */
	cr_assert_eq(template_evict(tdir, 2 * one + one / 2, NULL), 2);
	cr_assert(!exists(K("a"), ".state") && !exists(K("a"), ".shape") &&
	    !exists(K("a"), ".meta"));
	cr_assert(!exists(K("b"), ".state") && !exists(K("b"), ".ram"),
	    "a format-2 template goes with its RAM file");
	cr_assert(exists(K("c"), ".state") && exists(K("d"), ".ram"));

	/* c is used now: d is the older. */
	used_at(K("c"), 5000);
	cr_assert_eq(template_evict(tdir, one + one / 2, NULL), 1);
	cr_assert(exists(K("c"), ".state") && !exists(K("d"), ".state"));

	/* keep stays even over the cap; nothing else is left to go. */
	make(K("e"), stream, T_STATE, 0, 0, 9000);
	cr_assert_eq(template_evict(tdir, one / 2, K("c")), 1);
	cr_assert(exists(K("c"), ".state") && !exists(K("e"), ".state"));
	cr_assert_eq(template_evict(tdir, one / 2, K("c")), 0);
	cr_assert(exists(K("c"), ".state"));
	seen_free(&s);
	free(stream);
	free(shared);
}

Test(template_cache, touch_makes_a_template_the_last_to_go)
{
	char		*stream = shape_line(TEMPLATE_SHAPE_STREAM);
	struct template	 t;
	struct stat	 st;

	make(K("0d"), stream, T_STATE, 0, 0, 1000);
	make(K("ae"), stream, T_STATE, 0, 0, 2000);
	memset(&t, 0, sizeof t);
	t.dir = tdir;
	t.key = (char *)(uintptr_t)K("0d");
	xasprintf(&t.shape_path, "%s/%s.shape", tdir, K("0d"));
	template_touch(&t);
	cr_assert_eq(stat(t.shape_path, &st), 0);
	cr_assert_geq(st.st_mtime, time(NULL) - 60);
	cr_assert_eq(template_evict(tdir, T_STATE + T_STATE / 2, NULL), 1);
	cr_assert(exists(K("0d"), ".state") && !exists(K("ae"), ".state"));
	/* A template gone since: nothing made, nothing said. */
	template_remove(tdir, K("0d"));
	template_touch(&t);
	cr_assert(!exists(K("0d"), ".shape"));
	template_touch(NULL);
	free(t.shape_path);
	free(stream);
}

Test(template_cache, unusable_ones_go_first)
{
	char	*stream = shape_line(TEMPLATE_SHAPE_STREAM);

	make(K("9d"), stream, T_STATE, 0, 0, 1000);
	make(K("fa"), "qsup-template 3 protocol 1", T_STATE, 0, 0, 5000);
	make(K("5a"), NULL, T_STATE, 0, 0, 0);
	cr_assert_eq(template_evict(tdir, 2 * T_STATE, NULL), 2,
	    "both unusable ones, not the least recently used one");
	cr_assert(exists(K("9d"), ".state"));
	cr_assert(!exists(K("fa"), ".state") && !exists(K("5a"), ".state"));
	free(stream);
}

Test(template_cache, never_a_live_writer_nor_a_build_under_way)
{
	struct seen	 s = { 0 };
	char		*stream = shape_line(TEMPLATE_SHAPE_STREAM);
	char		*big, *path;
	char		 live[64], dead[64], ram[64];
	long		 gone = dead_pid();
	int		 lock;

	big = xcalloc(1, T_STATE);
	memset(big, 'x', T_STATE);
	/* A save under way: its state half-written, its RAM file too. */
	snprintf(live, sizeof live, ".state.%ld", (long)getpid());
	put(K("ee"), live, big, T_STATE);
	snprintf(ram, sizeof ram, ".ram.%ld", (long)getpid());
	put(K("ee"), ram, big, T_STATE);
	/* What a qsup killed while saving left. */
	snprintf(dead, sizeof dead, ".state.%ld", gone);
	put(K("ee"), dead, big, T_STATE);
	/* A build between renaming its shape and its state into place. */
	put(K("b"), ".shape", stream, strlen(stream));
	put(K("b"), ".meta", "1 2.3\n", 6);
	xasprintf(&path, "%s/%s.lock", tdir, K("b"));
	lock = open(path, O_RDWR|O_CREAT, 0600);
	cr_assert(lock != -1 && flock(lock, LOCK_EX|LOCK_NB) == 0);
	free(path);
	make(K("0d"), stream, T_STATE, 0, 0, 1000);

	scan(&s);
	cr_assert_null(find(&s, K("b")), "a save under way is not listed");
	snprintf(live, sizeof live, "%s.state.%ld", K("ee"), (long)getpid());
	snprintf(ram, sizeof ram, "%s.ram.%ld", K("ee"), (long)getpid());
	snprintf(dead, sizeof dead, "%s.state.%ld", K("ee"), gone);
	cr_assert_not_null(find(&s, live));
	cr_assert(find(&s, live)->writer_alive);
	cr_assert_not_null(find(&s, ram), "a half-written RAM file is listed");
	cr_assert_eq(find(&s, ram)->writer, (long)getpid());
	cr_assert_geq(find(&s, ram)->allocated, T_STATE);
	cr_assert_not_null(find(&s, dead));
	cr_assert(!find(&s, dead)->writer_alive);
	cr_assert_null(find(&s, K("ee")), "half-written files are no template");

	/* Everything that may go goes; the rest stays. */
	cr_assert_eq(template_evict(tdir, 1, NULL), 1);
	cr_assert(!exists(K("0d"), ".state"));
	cr_assert(!exists(K("ee"), dead + TEMPLATE_KEY),
	    "a dead writer's file stayed");
	snprintf(live, sizeof live, ".state.%ld", (long)getpid());
	snprintf(ram, sizeof ram, ".ram.%ld", (long)getpid());
	cr_assert(exists(K("ee"), live) && exists(K("ee"), ram),
	    "a live writer's file was removed");
	cr_assert(exists(K("b"), ".shape") && exists(K("b"), ".meta") &&
	    exists(K("b"), ".lock"), "a build under way was touched");

	/* The build given up, what it left is stale, and goes. */
	close(lock);
	scan(&s);
	cr_assert_not_null(find(&s, K("b")));
	cr_assert(find(&s, K("b"))->stale && find(&s, K("b"))->mtime == 0);
	cr_assert_eq(template_evict(tdir, 1, NULL), 1);
	cr_assert(!exists(K("b"), ".shape") && !exists(K("b"), ".meta"));
	cr_assert(exists(K("b"), ".lock"), "a lock file is never removed");
	seen_free(&s);
	free(big);
	free(stream);
}

Test(template_cache, remove_takes_all_of_one_template_only)
{
	char	*shared = shape_line(TEMPLATE_SHAPE_SHARED), live[64];

	make(K("cc"), shared, 100, MIB, 1, 1000);
	make(K("cc0"), shared, 100, MIB, 1, 1000);
	put(K("cc"), ".devices", "x", 1);	/* a newer qsup's, say */
	put(K("cc"), ".lock", "", 0);
	snprintf(live, sizeof live, ".ram.%ld", (long)getpid());
	put(K("cc"), live, "x", 1);
	template_remove(tdir, K("cc"));
	cr_assert(!exists(K("cc"), ".state") && !exists(K("cc"), ".ram") &&
	    !exists(K("cc"), ".meta") && !exists(K("cc"), ".shape") &&
	    !exists(K("cc"), ".devices"));
	cr_assert(exists(K("cc"), ".lock") && exists(K("cc"), live));
	cr_assert(exists(K("cc0"), ".state") && exists(K("cc0"), ".ram") &&
	    exists(K("cc0"), ".shape"), "another template was removed");
	/* A key that is a path is no key. */
	template_remove(tdir, "../k0");
	template_remove(tdir, "");
	cr_assert(exists(K("cc0"), ".state"));
	free(shared);
}

/* What is not a template's, by its name, is left alone. */
Test(template_cache, other_files_are_not_templates)
{
	struct seen	 s = { 0 };
	char		*stream = shape_line(TEMPLATE_SHAPE_STREAM), *big;
	char		 wait[64];

	big = xcalloc(1, T_STATE);
	put("slot", ".1", big, T_STATE);
	snprintf(wait, sizeof wait, ".%ld", dead_pid());
	put("wait.123", wait, big, T_STATE);
	put("README", "", big, T_STATE);
	put("cafe", ".ram", big, T_STATE);	/* hex, but too short */
	put("0123456789abcdef0123456789ABCDEF", ".state", big, T_STATE);
	make(K("a"), stream, T_STATE, 0, 0, 1000);
	scan(&s);
	cr_assert_eq(s.n, 1, "%d listed", s.n);
	cr_assert_not_null(find(&s, K("a")));
	cr_assert_eq(template_evict(tdir, 1, NULL), 1);
	cr_assert(exists("slot", ".1") && exists("wait.123", wait) &&
	    exists("README", "") && exists("cafe", ".ram") &&
	    exists("0123456789abcdef0123456789ABCDEF", ".state"));
	seen_free(&s);
	free(big);
	free(stream);
}

Test(template_cache, unreadable_dir)
{
	struct seen	s = { 0 };

	cr_assert_eq(template_each("/nonexistent/qsup", seen_cb, &s), -1);
	cr_assert_eq(template_evict("/nonexistent/qsup", 1, NULL), 0);
	cr_assert_eq(s.n, 0);
}
