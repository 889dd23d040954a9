/*
 * staging/: copies of real trees under /tmp checked entry by entry, the
 * library closure checked against ldd's own answer (ldd runs here only, on
 * the host's own trusted binaries), programs built on the spot with a
 * missing library or with RPATH and RUNPATH, glibc's version, and the
 * container signs.
 */
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <linux/openat2.h>

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"
#include "staging.h"

#define NOBODY	65534

static char	*dir;		/* the test's own temp directory */
static char	*src;
static char	*dst;

static void
setup(void)
{
	char	tmpl[] = "/tmp/qsup-staging-test.XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	dir = xstrdup(tmpl);
	xasprintf(&src, "%s/src", dir);
	xasprintf(&dst, "%s/run/stage", dir);
	cr_assert_eq(mkdir(src, 0755), 0);
}

/* Also called by skip(): Criterion does not run .fini after a skip. */
static void
teardown(void)
{
	if (dir == NULL)
		return;
	seteuid(getuid());
	setegid(getgid());
	staging_remove(dir);
	free(src);
	free(dst);
	free(dir);
	src = dst = dir = NULL;
}

#define skip(...) do {							\
	teardown();							\
	cr_skip_test(__VA_ARGS__);					\
} while (0)

TestSuite(staging, .init = setup, .fini = teardown, .timeout = 120);

static char *
path_in(const char *base, const char *rel)
{
	char	*p;

	xasprintf(&p, "%s/%s", base, rel);
	return (p);
}

/* mkdir -p below base. */
static void
make_dirs(const char *base, const char *rel)
{
	char	*p = path_in(base, rel), *s;

	for (s = p + strlen(base) + 1; (s = strchr(s, '/')) != NULL; s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	mkdir(p, 0755);
	free(p);
}

static void
put(const char *base, const char *rel, const char *data, mode_t mode)
{
	char	*p = path_in(base, rel), *slash;
	int	 fd;

	slash = strrchr(rel, '/');
	if (slash != NULL) {
		char *d = xstrndup(rel, slash - rel);
		make_dirs(base, d);
		free(d);
	}
	fd = open(p, O_WRONLY|O_CREAT|O_TRUNC, 0600);
	cr_assert_neq(fd, -1, "%s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, data, strlen(data)), (ssize_t)strlen(data));
	close(fd);
	cr_assert_eq(chmod(p, mode), 0);
	free(p);
}

static void
put_link(const char *base, const char *rel, const char *target)
{
	char	*p = path_in(base, rel);

	cr_assert_eq(symlink(target, p), 0, "%s: %s", p, strerror(errno));
	free(p);
}

static int
exists(const char *base, const char *rel)
{
	struct stat	 sb;
	char		*p = path_in(base, rel);
	int		 yes;

	yes = lstat(p, &sb) == 0;
	free(p);
	return (yes);
}

static char *
slurp(const char *base, const char *rel)
{
	char	*p = path_in(base, rel), *data;

	data = util_read_file(p, NULL, 64 << 20);
	free(p);
	return (data);
}

static struct stat
lstat_in(const char *base, const char *rel)
{
	struct stat	 sb;
	char		*p = path_in(base, rel);

	cr_assert_eq(lstat(p, &sb), 0, "%s: %s", p, strerror(errno));
	free(p);
	return (sb);
}

static char *
link_in(const char *base, const char *rel)
{
	char	 buf[4096], *p = path_in(base, rel);
	ssize_t	 n;

	n = readlink(p, buf, sizeof buf - 1);
	cr_assert_gt(n, 0, "%s: %s", p, strerror(errno));
	buf[n] = '\0';
	free(p);
	return (xstrdup(buf));
}

/* Set a file's mtime to a fixed past second, to see it kept. */
static void
age(const char *base, const char *rel, time_t when)
{
	struct timespec	 ts[2] = { { when, 0 }, { when, 0 } };
	char		*p = path_in(base, rel);

	cr_assert_eq(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
	free(p);
}

/* The tree most tests copy. */
static void
make_tree(void)
{
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	char			*p;
	int			 s;

	put(src, "top.txt", "top\n", 0644);
	put(src, "bin/tool", "#!/bin/sh\necho tool\n", 0755);
	put(src, "a/b/c/deep.txt", "deep\n", 0600);
	put(src, "a/readonly.txt", "ro\n", 0444);
	put(src, "secrets/key", "k\n", 0600);
	put(src, "secrets/sub/more", "m\n", 0600);
	put(src, "a/b/server.pem", "pem\n", 0644);
	put(src, "pem.txt", "not a pem\n", 0644);
	put(src, ".git/config", "[core]\n", 0644);
	put(src, ".git/objects/ab/cdef", "obj\n", 0444);
	put(src, ".venv/bin/python", "venv\n", 0755);
	put(src, "node_modules/x/index.js", "js\n", 0644);
	put(src, "a/node_modules/y.js", "js\n", 0644);
	put(src, "a/__pycache__/m.cpython-311.pyc", "pyc\n", 0644);
	put_link(src, "rel", "a/readonly.txt");
	put_link(src, "abs", "/etc/hostname");
	put_link(src, "dangling", "no/such/file");
	put_link(src, "outside", "../../../etc/passwd");
	put_link(src, "linkdir", "a");
	p = path_in(src, "fifo");
	cr_assert_eq(mkfifo(p, 0644), 0);
	free(p);
	p = path_in(src, "sock");
	strncpy(sun.sun_path, p, sizeof sun.sun_path - 1);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(s, (struct sockaddr *)&sun, sizeof sun), 0);
	close(s);
	free(p);
	make_dirs(src, "empty");
	age(src, "top.txt", 1000000000);
	age(src, "a/b/c/deep.txt", 1100000000);
	age(src, "rel", 1200000000);
	age(src, "a/b/c", 1300000000);
	p = path_in(src, "a/b");
	cr_assert_eq(chmod(p, 0555), 0);	/* read-only directory */
	free(p);
}

Test(staging, copy_tree_keeps_content_modes_times_and_links)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *s;
	struct stat		 a, b;

	make_tree();
	cr_assert_eq(staging_copy_tree(src, dst, 0, staging_default_skip,
	    NULL, &st, &cause), 0, "%s", cause);

	/* Contents. */
	cr_assert_str_eq(s = slurp(dst, "top.txt"), "top\n");
	free(s);
	cr_assert_str_eq(s = slurp(dst, "a/b/c/deep.txt"), "deep\n");
	free(s);
	cr_assert_str_eq(s = slurp(dst, "bin/tool"), "#!/bin/sh\necho tool\n");
	free(s);

	/* Modes and times, of files and directories. */
	a = lstat_in(src, "bin/tool");
	b = lstat_in(dst, "bin/tool");
	cr_assert_eq(a.st_mode, b.st_mode);
	cr_assert_eq(lstat_in(dst, "a/readonly.txt").st_mode & 07777, 0444);
	cr_assert_eq(lstat_in(dst, "a/b/c/deep.txt").st_mode & 07777, 0600);
	cr_assert_eq(lstat_in(dst, "a/b").st_mode & 07777, 0555);
	cr_assert_eq(lstat_in(dst, "top.txt").st_mtim.tv_sec, 1000000000);
	cr_assert_eq(lstat_in(dst, "a/b/c/deep.txt").st_mtim.tv_sec,
	    1100000000);
	cr_assert_eq(lstat_in(dst, "a/b/c").st_mtim.tv_sec, 1300000000);
	cr_assert_eq(lstat_in(dst, "rel").st_mtim.tv_sec, 1200000000);
	a = lstat_in(src, "a");
	b = lstat_in(dst, "a");
	cr_assert_eq(a.st_mtim.tv_sec, b.st_mtim.tv_sec,
	    "a directory's mtime is set after its entries are made");

	/* Symlinks are symlinks, targets unchanged, never followed. */
	cr_assert(S_ISLNK(lstat_in(dst, "rel").st_mode));
	cr_assert_str_eq(s = link_in(dst, "rel"), "a/readonly.txt");
	free(s);
	cr_assert_str_eq(s = link_in(dst, "abs"), "/etc/hostname");
	free(s);
	cr_assert_str_eq(s = link_in(dst, "dangling"), "no/such/file");
	free(s);
	cr_assert_str_eq(s = link_in(dst, "outside"), "../../../etc/passwd");
	free(s);
	cr_assert(S_ISLNK(lstat_in(dst, "linkdir").st_mode));
	cr_assert(S_ISDIR(lstat_in(dst, "empty").st_mode));

	/* Special files and the bulky names are left out. */
	cr_assert(!exists(dst, "fifo"));
	cr_assert(!exists(dst, "sock"));
	cr_assert(!exists(dst, ".git"));
	cr_assert(!exists(dst, ".venv"));
	cr_assert(!exists(dst, "node_modules"));
	cr_assert(!exists(dst, "a/node_modules"));
	cr_assert(!exists(dst, "a/__pycache__"));

	cr_assert_eq(st.files, 8);
	cr_assert_eq(st.symlinks, 5);
	/* a a/b a/b/c bin secrets secrets/sub empty */
	cr_assert_eq(st.dirs, 7);
	cr_assert_eq(st.special, 2);
	cr_assert_eq(st.skipped, 5);
	cr_assert_eq(st.linked, 0);
	cr_assert_eq(st.copied + st.reflinked, 8);
	cr_assert_eq(st.errors, 0, "%s", st.first_error);
	cr_assert_eq(st.bytes, 4 + 20 + 5 + 3 + 2 + 2 + 4 + 10);
	staging_stats_free(&st);
	free(cause);
}

Test(staging, ignore_globs)
{
	const char *const	 globs[] = { "secrets/*", "*.pem", "/bin",
	    "empty/", NULL };
	struct staging_stats	 st = { 0 };
	char			*cause = NULL;

	make_tree();
	cr_assert_eq(staging_copy_tree(src, dst, 0, NULL, globs, &st,
	    &cause), 0, "%s", cause);
	cr_assert(S_ISDIR(lstat_in(dst, "secrets").st_mode));
	cr_assert(!exists(dst, "secrets/key"));
	cr_assert(!exists(dst, "secrets/sub"));
	cr_assert(!exists(dst, "a/b/server.pem"));
	cr_assert(exists(dst, "pem.txt"));
	cr_assert(!exists(dst, "bin"));
	cr_assert(!exists(dst, "empty"));
	/* No skip list given: .git is copied like anything else. */
	cr_assert(exists(dst, ".git/objects/ab/cdef"));
	cr_assert_eq(st.skipped, 5);
	staging_stats_free(&st);
}

Test(staging, ignore_matching)
{
	static const struct {
		const char	*glob, *rel;
		int		 is_dir, want;
	} t[] = {
		{ "*.pem", "x.pem", 0, 1 },
		{ "*.pem", "a/b/x.pem", 0, 1 },
		{ "*.pem", "a/.hidden.pem", 0, 1 },
		{ "*.pem", "x.pem.txt", 0, 0 },
		{ "secrets/*", "secrets/a", 0, 1 },
		{ "secrets/*", "secrets", 1, 0 },
		{ "secrets/*", "x/secrets/a", 0, 0 },
		{ "/top", "top", 1, 1 },
		{ "/top", "a/top", 1, 0 },
		{ "top", "a/top", 0, 1 },
		{ "build/", "build", 1, 1 },
		{ "build/", "build", 0, 0 },
		{ "**/cache", "cache", 1, 1 },
		{ "**/cache", "a/b/cache", 1, 1 },
		{ "a/**", "a/x/y", 0, 1 },
		{ "a/**/z", "a/z", 0, 1 },
		{ "a/**/z", "a/x/y/z", 0, 1 },
		{ "a/*/z", "a/x/y/z", 0, 0 },
		{ "[ab].txt", "b.txt", 0, 1 },
		{ "[!ab].txt", "b.txt", 0, 0 },
		{ "?.txt", "ab.txt", 0, 0 },
		{ "\\*.txt", "*.txt", 0, 1 },
		{ "\\*.txt", "a.txt", 0, 0 },
		{ "", "x", 0, 0 },
	};
	const char	*one[2] = { NULL, NULL };
	size_t		 i;

	for (i = 0; i < sizeof t / sizeof t[0]; i++) {
		one[0] = t[i].glob;
		cr_expect_eq(staging_ignored(one, t[i].rel, t[i].is_dir),
		    t[i].want, "glob %s on %s%s", t[i].glob, t[i].rel,
		    t[i].is_dir ? "/" : "");
	}
	cr_assert_eq(staging_ignored(NULL, "x", 0), 0);
}

static void
assert_inodes(const char *rel, int shared)
{
	struct stat	a = lstat_in(src, rel), b = lstat_in(dst, rel);

	if (shared)
		cr_assert(a.st_ino == b.st_ino && a.st_dev == b.st_dev,
		    "%s: a hard link was expected", rel);
	else
		cr_assert(a.st_ino != b.st_ino || a.st_dev != b.st_dev,
		    "%s: shares the host's inode", rel);
}

Test(staging, link_mode_shares_inodes)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL;

	make_tree();
	cr_assert_eq(staging_copy_tree(src, dst, STAGING_LINK,
	    staging_default_skip, NULL, &st, &cause), 0, "%s", cause);
	assert_inodes("top.txt", 1);
	assert_inodes("a/b/c/deep.txt", 1);
	assert_inodes("a/readonly.txt", 1);
	cr_assert_eq(lstat_in(src, "top.txt").st_nlink, 2);
	cr_assert_eq(st.linked, 8);
	cr_assert_eq(st.copied + st.reflinked, 0);
	/* Directories and symlinks are never links to the host's. */
	assert_inodes("a", 0);
	assert_inodes("rel", 0);
	staging_stats_free(&st);
}

/* A tree shared read-write must never be the host's inodes. */
Test(staging, read_write_mode_never_links)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *s;
	const int		 modes[] = { 0, STAGING_NOCLONE };
	size_t			 i;

	make_tree();
	for (i = 0; i < 2; i++) {
		cr_assert_eq(staging_copy_tree(src, dst, modes[i],
		    staging_default_skip, NULL, &st, &cause), 0, "%s", cause);
		assert_inodes("top.txt", 0);
		assert_inodes("a/b/c/deep.txt", 0);
		assert_inodes("a/readonly.txt", 0);
		cr_assert_eq(st.linked, 0);
		cr_assert_eq(lstat_in(src, "top.txt").st_nlink, 1);
		/* Writing the copy leaves the host file alone. */
		put(dst, "top.txt", "changed\n", 0644);
		cr_assert_str_eq(s = slurp(src, "top.txt"), "top\n");
		free(s);
		cr_assert_eq(staging_remove(dst), 0);
		staging_stats_free(&st);
	}
}

Test(staging, plain_copy_across_file_systems)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *big, *s, shm[] =
	    "/dev/shm/qsup-staging-test.XXXXXX";
	size_t			 i, len = 3 << 20;

	if (mkdtemp(shm) == NULL)
		skip("no /dev/shm here");
	big = xmalloc(len + 1);
	for (i = 0; i < len; i++)
		big[i] = 'a' + (i * 7919 % 26);
	big[len] = '\0';
	put(src, "big", big, 0640);
	put(src, "small", "s\n", 0600);
	/* LINK asked, but another file system: copies. */
	cr_assert_eq(staging_copy_tree(src, shm, STAGING_LINK, NULL, NULL,
	    &st, &cause), 0, "%s", cause);
	cr_assert_eq(st.linked, 0);
	cr_assert_eq(st.copied + st.reflinked, 2);
	s = slurp(shm, "big");
	cr_assert_not_null(s);
	cr_assert(strcmp(s, big) == 0, "the 3 MB copy differs");
	cr_assert_eq(lstat_in(shm, "big").st_mode & 07777, 0640);
	free(s);
	free(big);
	cr_assert_eq(staging_remove(shm), 0);
	cr_assert_eq(access(shm, F_OK), -1);
	staging_stats_free(&st);
}

/* Set QSUP_TEST_REFLINK_DIR to a directory on XFS or Btrfs to run this. */
Test(staging, reflink_where_supported)
{
	struct staging_stats	 st = { 0 };
	const char		*rdir = getenv("QSUP_TEST_REFLINK_DIR");
	char			*cause = NULL, *rsrc, *rdst, *s;

	if (rdir == NULL)
		skip("QSUP_TEST_REFLINK_DIR is not set");
	xasprintf(&rsrc, "%s/qsup-reflink-src", rdir);
	xasprintf(&rdst, "%s/qsup-reflink-dst", rdir);
	staging_remove(rsrc);
	staging_remove(rdst);
	cr_assert_eq(mkdir(rsrc, 0755), 0);
	put(rsrc, "f", "reflinked\n", 0644);
	put(rsrc, "d/g", "also\n", 0600);
	cr_assert_eq(staging_copy_tree(rsrc, rdst, 0, NULL, NULL, &st,
	    &cause), 0, "%s", cause);
	cr_assert_eq(st.reflinked, 2);
	cr_assert_eq(st.linked + st.copied, 0);
	cr_assert_str_eq(s = slurp(rdst, "f"), "reflinked\n");
	free(s);
	/* A reflink is a file of its own: writing it leaves the source. */
	put(rdst, "f", "changed\n", 0644);
	cr_assert_str_eq(s = slurp(rsrc, "f"), "reflinked\n");
	free(s);
	staging_remove(rsrc);
	staging_remove(rdst);
	free(rsrc);
	free(rdst);
	staging_stats_free(&st);
}

Test(staging, dst_is_a_file)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *file;

	make_tree();
	file = path_in(dir, "file");
	put(dir, "file", "x", 0644);
	cr_assert_eq(staging_copy_tree(src, file, 0, NULL, NULL, &st,
	    &cause), -1);
	cr_assert_not_null(strstr(cause, file), "%s", cause);
	free(cause);
	cause = NULL;
	free(file);
	/* A parent that is a file. */
	file = path_in(dir, "file/below");
	cr_assert_eq(staging_copy_tree(src, file, 0, NULL, NULL, &st,
	    &cause), -1);
	cr_assert_not_null(strstr(cause, file), "%s", cause);
	free(cause);
	free(file);
	staging_stats_free(&st);
}

Test(staging, src_missing)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *missing;

	missing = path_in(dir, "nowhere");
	cr_assert_eq(staging_copy_tree(missing, dst, 0, NULL, NULL, &st,
	    &cause), -1);
	cr_assert_not_null(strstr(cause, missing), "%s", cause);
	cr_assert_not_null(strstr(cause, "No such file"), "%s", cause);
	cr_assert(!exists(dir, "run/stage"));
	free(cause);
	free(missing);
}

Test(staging, single_file_through_a_symlink)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *from, *to, *s;

	put(src, "python3.11", "interp\n", 0755);
	put_link(src, "python3", "python3.11");
	from = path_in(src, "python3");
	to = path_in(dir, "run/bin/python3");
	cr_assert_eq(staging_copy_tree(from, to, 0, NULL, NULL, &st, &cause),
	    0, "%s", cause);
	cr_assert_str_eq(s = slurp(dir, "run/bin/python3"), "interp\n");
	cr_assert_eq(lstat_in(dir, "run/bin/python3").st_mode & 07777, 0755);
	free(s);
	free(from);
	free(to);
	staging_stats_free(&st);
}

Test(staging, copy_inside_its_own_source)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *inner;

	put(src, "f", "f\n", 0644);
	inner = path_in(src, "stage");
	cr_assert_eq(staging_copy_tree(src, inner, 0, NULL, NULL, &st,
	    &cause), 0, "%s", cause);
	cr_assert(exists(inner, "f"));
	cr_assert(!exists(inner, "stage"));
	cr_assert_eq(st.skipped, 1);
	free(inner);
	staging_stats_free(&st);
}

/* Another file system inside the tree is not entered unless asked. */
Test(staging, mount_points)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *mnt, *dst2;
	int			 rc;

	put(src, "f", "f\n", 0644);
	make_dirs(src, "mnt");
	mnt = path_in(src, "mnt");
	if (mount("qsup-test", mnt, "tmpfs", 0, "size=1m") == -1)
		skip("cannot mount a tmpfs here: %s", strerror(errno));
	put(mnt, "inside", "i\n", 0644);
	rc = staging_copy_tree(src, dst, 0, NULL, NULL, &st, &cause);
	cr_expect_eq(rc, 0, "%s", cause);
	cr_expect(S_ISDIR(lstat_in(dst, "mnt").st_mode));
	cr_expect(!exists(dst, "mnt/inside"));
	cr_expect_eq(st.mounts, 1);
	cr_expect_str_eq(st.first_mount, mnt);
	staging_stats_free(&st);
	dst2 = path_in(dir, "run/xdev");
	rc = staging_copy_tree(src, dst2, STAGING_XDEV, NULL, NULL, &st,
	    &cause);
	cr_expect_eq(rc, 0, "%s", cause);
	cr_expect(exists(dst2, "mnt/inside"));
	cr_expect_eq(st.mounts, 0);
	umount(mnt);
	free(mnt);
	free(dst2);
	staging_stats_free(&st);
}

/*
 * Stand in for a user who is not root: as root, take nobody's effective
 * ids (given the run directory and the chown_these paths below base); as
 * a user already, nothing to do.
 */
static void
become_user(const char *base, const char *const *chown_these)
{
	char	*p;
	size_t	 i;

	if (geteuid() != 0)
		return;
	for (i = 0; chown_these != NULL && chown_these[i] != NULL; i++) {
		xasprintf(&p, "%s%s", base, chown_these[i]);
		cr_assert_eq(chown(p, NOBODY, NOBODY), 0, "%s", p);
		free(p);
	}
	p = path_in(dir, "run");
	cr_assert_eq(chown(p, NOBODY, NOBODY), 0);
	free(p);
	cr_assert_eq(chmod(dir, 0755), 0);
	cr_assert_eq(setegid(NOBODY), 0);
	cr_assert_eq(seteuid(NOBODY), 0);
}

static void
become_root_again(void)
{
	if (getuid() == 0) {
		cr_assert_eq(seteuid(0), 0);
		cr_assert_eq(setegid(0), 0);
	}
}

/*
 * As a user who cannot read one file: that file is an error, counted and
 * named, and the rest is staged. Hard links to files the user may not
 * link (fs.protected_hardlinks) fall back to copies.
 */
Test(staging, unreadable_file_as_a_user)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *run, *secret;

	put(src, "readable", "r\n", 0644);
	/* Root's, for nobody; mode 0 for a user. */
	put(src, "secret", "s\n", geteuid() == 0 ? 0600 : 0);
	put(src, "sub/also", "a\n", 0644);
	run = path_in(dir, "run");
	cr_assert_eq(mkdir(run, 0700), 0);
	become_user(src, NULL);
	cr_assert_eq(staging_copy_tree(src, dst, STAGING_LINK, NULL, NULL,
	    &st, &cause), 0, "%s", cause);
	secret = path_in(src, "secret");
	if (getuid() == 0) {
		/* Another user's: not linked, and not readable to copy. */
		cr_assert_eq(st.errors, 1);
		cr_assert_not_null(strstr(st.first_error, secret), "%s",
		    st.first_error);
		cr_assert_not_null(strstr(st.first_error,
		    "Permission denied"));
		cr_assert(!exists(dst, "secret"));
		assert_inodes("readable", 0);
		cr_assert_eq(st.files, 2);
	} else {
		/* One's own files link, readable or not. */
		cr_assert_eq(st.errors, 0, "%s", st.first_error);
		cr_assert_eq(st.linked, 3);
	}
	cr_assert(exists(dst, "readable"));
	cr_assert(exists(dst, "sub/also"));
	staging_stats_free(&st);

	/* Without links, the unreadable file is an error either way. */
	free(run);
	run = path_in(dir, "run/copy");
	cr_assert_eq(staging_copy_tree(src, run, 0, NULL, NULL, &st,
	    &cause), 0, "%s", cause);
	cr_assert_eq(st.errors, 1);
	cr_assert_not_null(strstr(st.first_error, secret), "%s",
	    st.first_error);
	cr_assert_not_null(strstr(st.first_error, "Permission denied"));
	cr_assert(!exists(run, "secret"));
	cr_assert(exists(run, "sub/also"));
	become_root_again();
	free(secret);
	free(run);
	staging_stats_free(&st);
}

/*
 * A user's staged copy of read-only directories can still be removed, and
 * removal never changes the host's files (hard links are the host's
 * inodes: no chmod on them).
 */
Test(staging, remove_read_only_copies_as_a_user)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *run, *p;
	const char *const	 chown_these[] = { "", "/ro", "/ro/f",
	    "/ro/inner", "/ro/inner/g", NULL };

	put(src, "ro/f", "f\n", 0444);
	put(src, "ro/inner/g", "g\n", 0400);
	p = path_in(src, "ro/inner");
	cr_assert_eq(chmod(p, 0500), 0);
	free(p);
	p = path_in(src, "ro");
	cr_assert_eq(chmod(p, 0555), 0);
	free(p);
	run = path_in(dir, "run");
	cr_assert_eq(mkdir(run, 0700), 0);

	become_user(src, chown_these);
	cr_assert_eq(staging_copy_tree(src, dst, STAGING_LINK, NULL, NULL,
	    &st, &cause), 0, "%s", cause);
	cr_assert_eq(st.linked, 2);
	cr_assert_eq(st.errors, 0, "%s", st.first_error);
	cr_assert_eq(lstat_in(dst, "ro").st_mode & 07777, 0555);
	/* What a plain rm -rf meets: an entry it cannot unlink. */
	p = path_in(dst, "ro/f");
	cr_assert_eq(unlink(p), -1);
	cr_assert_eq(errno, EACCES);
	free(p);
	cr_assert_eq(staging_remove(dst), 0);
	cr_assert_eq(access(dst, F_OK), -1);
	become_root_again();
	cr_assert_eq(lstat_in(src, "ro/f").st_mode & 07777, 0444);
	cr_assert_eq(lstat_in(src, "ro/inner/g").st_mode & 07777, 0400);
	cr_assert_eq(lstat_in(src, "ro/f").st_nlink, 1);
	free(run);
	staging_stats_free(&st);
}

/*
 * A hard link on overlayfs copies the file up (a write to the container's
 * tree) and stays on overlay: an overlay source is copied, never linked.
 */
Test(staging, overlay_source_is_never_linked)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL, *opts, *merged, *run, *s;

	make_dirs(dir, "lower/tree");
	make_dirs(dir, "upper");
	make_dirs(dir, "work");
	make_dirs(dir, "merged");
	put(dir, "lower/tree/f", "lower\n", 0644);
	xasprintf(&opts, "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work",
	    dir, dir, dir);
	merged = path_in(dir, "merged");
	if (mount("overlay", merged, "overlay", 0, opts) == -1)
		skip("cannot mount overlayfs here: %s", strerror(errno));
	cr_expect_eq(staging_on_overlay(merged), 1);
	free(src);
	src = path_in(merged, "tree");
	run = path_in(merged, "run");
	cr_expect_eq(staging_copy_tree(src, run, STAGING_LINK, NULL, NULL, &st,
	    &cause), 0, "%s", cause);
	cr_expect_eq(st.linked, 0);
	cr_expect_eq(st.copied + st.reflinked, 1);
	cr_expect_str_eq(s = slurp(run, "f"), "lower\n");
	free(s);
	cr_expect(!exists(dir, "upper/tree/f"), "the source was copied up");
	st.linked = st.copied = st.reflinked = 0;
	cr_expect_eq(staging_copy_paths((const char *const []){ src, NULL },
	    run, STAGING_LINK, &st, &cause), 0, "%s", cause);
	cr_expect_eq(st.linked, 0);
	cr_expect(!exists(dir, "upper/tree/f"), "the source was copied up");
	umount(merged);
	free(run);
	free(merged);
	free(opts);
	staging_stats_free(&st);
}

Test(staging, remove_missing_is_fine)
{
	char	*p = path_in(dir, "never-made");

	cr_assert_eq(staging_remove(p), 0);
	free(p);
}

Test(staging, on_overlay)
{
	cr_assert_eq(staging_on_overlay(dir), 0, "/tmp is ext4 or tmpfs here");
	cr_assert_eq(staging_on_overlay("/nonexistent/qsup"), -1);
}

/* ---- library closure ---- */

static int
str_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* ldd's answer (paths found, "!name" for missing), sorted. */
static char **
ldd_paths(const char *program, size_t *np)
{
	FILE	 *f;
	char	 *cmd, line[4096], *s, *e, **v = NULL;
	size_t	  n = 0;

	xasprintf(&cmd, "ldd '%s' 2>&1", program);
	cr_assert_not_null(f = popen(cmd, "r"));
	while (fgets(line, sizeof line, f) != NULL) {
		s = line + strspn(line, " \t");
		if (strncmp(s, "linux-vdso", 10) == 0)
			continue;
		v = xreallocarray(v, n + 1, sizeof *v);
		if ((e = strstr(s, " => ")) != NULL) {
			if (strncmp(e + 4, "not found", 9) == 0) {
				*e = '\0';
				xasprintf(&v[n++], "!%s", s);
				continue;
			}
			s = e + 4;
		}
		if (*s != '/')
			cr_assert_fail("ldd %s: %s", program, line);
		s[strcspn(s, " \n")] = '\0';
		v[n++] = xstrdup(s);
	}
	pclose(f);
	free(cmd);
	qsort(v, n, sizeof *v, str_cmp);
	*np = n;
	return (v);
}

static char **
list_paths(const struct staging_list *l, size_t *np)
{
	char	**v = xreallocarray(NULL, l->nlibs + 1, sizeof *v);
	size_t	  i;

	for (i = 0; i < l->nlibs; i++) {
		if (l->libs[i].path != NULL)
			v[i] = xstrdup(l->libs[i].path);
		else
			xasprintf(&v[i], "!%s", l->libs[i].name);
	}
	qsort(v, l->nlibs, sizeof *v, str_cmp);
	*np = l->nlibs;
	return (v);
}

static void
free_strv(char **v, size_t n)
{
	while (n > 0)
		free(v[--n]);
	free(v);
}

static void
assert_same_as_ldd(const char *program)
{
	struct staging_list	 l = { 0 };
	const char		*one[2] = { program, NULL };
	char			*cause = NULL, **want, **got;
	size_t			 nwant, ngot, i;

	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	want = ldd_paths(program, &nwant);
	got = list_paths(&l, &ngot);
	for (i = 0; i < nwant || i < ngot; i++)
		cr_assert(i < nwant && i < ngot && strcmp(want[i],
		    got[i]) == 0, "%s: ldd says %s, staging says %s", program,
		    i < nwant ? want[i] : "(nothing)",
		    i < ngot ? got[i] : "(nothing)");
	cr_assert_gt(ngot, 1);
	free_strv(want, nwant);
	free_strv(got, ngot);
	staging_list_free(&l);
}

Test(staging, closure_of_ls_matches_ldd)
{
	assert_same_as_ldd("/bin/ls");
}

Test(staging, closure_of_pythons_matches_ldd)
{
	glob_t	g;
	size_t	i, checked = 0;

	if (access("/usr/bin/python3", X_OK) == 0) {
		assert_same_as_ldd("/usr/bin/python3");
		checked++;
	}
	if (glob("/root/.pyenv/versions/*/bin/python3.11", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			assert_same_as_ldd(g.gl_pathv[i]);
		checked += g.gl_pathc;
		globfree(&g);
	}
	if (checked == 0)
		skip("no python3 on this host");
}

/* Build in dir: each command is run by sh -c, and must succeed. */
static void
sh(const char *fmt, ...)
{
	va_list	 ap;
	char	*cmd;
	int	 status;

	va_start(ap, fmt);
	xvasprintf(&cmd, fmt, ap);
	va_end(ap);
	status = system(cmd);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", cmd);
	free(cmd);
}

static int
has_path(const struct staging_list *l, const char *path)
{
	size_t	i;

	for (i = 0; i < l->nlibs; i++)
		if (l->libs[i].path != NULL &&
		    strcmp(l->libs[i].path, path) == 0)
			return (1);
	return (0);
}

Test(staging, missing_needed_is_reported)
{
	struct staging_list	 l = { 0 };
	const char		*one[2];
	char			*cause = NULL, *prog, *missing, *want;

	sh("cd %s && echo 'int qsup_gone(void) { return 7; }' > gone.c && "
	    "cc -shared -fPIC -Wl,-soname,libqsupgone.so.1 -o "
	    "libqsupgone.so.1 gone.c && ln -s libqsupgone.so.1 "
	    "libqsupgone.so && echo 'int qsup_gone(void); int main(void) "
	    "{ return qsup_gone(); }' > main.c && cc -o prog main.c -L. "
	    "-lqsupgone && rm libqsupgone.so libqsupgone.so.1", dir);
	prog = path_in(dir, "prog");
	one[0] = prog;
	one[1] = NULL;
	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	cr_assert_eq(l.nmissing, 1);
	cr_assert_not_null(missing = staging_list_missing(&l));
	xasprintf(&want, "libqsupgone.so.1 (needed by %s)", prog);
	cr_assert_str_eq(missing, want);
	free(want);
	free(missing);
	/* What ldd says, too. */
	assert_same_as_ldd(prog);
	/* The rest is still there. */
	xasprintf(&want, "/lib/%s/libc.so.6", staging_host_triplet());
	cr_assert(has_path(&l, want));
	free(want);
	free(prog);
	staging_list_free(&l);
}

/*
 * DT_RPATH is inherited by the libraries the program loads; DT_RUNPATH is
 * not: the same layout resolves with one and not with the other.
 */
Test(staging, rpath_runpath_and_origin)
{
	char	*prog;

	sh("cd %s && mkdir -p bin lib && "
	    "echo 'int b(void) { return 2; }' > b.c && "
	    "echo 'int b(void); int a(void) { return b(); }' > a.c && "
	    "echo 'int a(void); int main(void) { return a(); }' > m.c && "
	    "cc -shared -fPIC -Wl,-soname,libqb.so -o lib/libqb.so b.c && "
	    "cc -shared -fPIC -Wl,-soname,libqa.so -o lib/libqa.so a.c "
	    "-Llib -lqb && "
	    "cc -o bin/rpath m.c -Llib -lqa -Wl,-rpath-link,lib "
	    "-Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' && "
	    "cc -o bin/runpath m.c -Llib -lqa -Wl,-rpath-link,lib "
	    "-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' && "
	    "cc -o bin/lib m.c -Llib -lqa -Wl,-rpath-link,lib "
	    "-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../$LIB' && "
	    "mkdir -p lib/$(cc -print-multiarch) && "
	    "cp lib/*.so lib/$(cc -print-multiarch)/",
	    dir);
	prog = path_in(dir, "bin/rpath");
	assert_same_as_ldd(prog);
	free(prog);
	prog = path_in(dir, "bin/runpath");
	assert_same_as_ldd(prog);
	free(prog);
	prog = path_in(dir, "bin/lib");
	assert_same_as_ldd(prog);
	free(prog);
}

Test(staging, script_and_never_run)
{
	struct staging_list	 l = { 0 };
	const char		*one[2];
	char			*cause = NULL, *script;

	put(dir, "script", "#!/bin/sh\ntouch \"$0.ran\"\n", 0755);
	script = path_in(dir, "script");
	one[0] = script;
	one[1] = NULL;
	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	cr_assert(has_path(&l, "/lib64/ld-linux-x86-64.so.2"));
	cr_assert_eq(l.nmissing, 0);
	cr_assert(!exists(dir, "script.ran"), "the script was run");
	free(script);
	staging_list_free(&l);
}

Test(staging, closure_errors)
{
	struct staging_list	 l = { 0 };
	const char		*one[2] = { "/etc/passwd", NULL };
	char			*cause = NULL;

	cr_assert_eq(staging_ldd_closure(one, &l, &cause), -1);
	cr_assert_str_eq(cause, "/etc/passwd: not an ELF file");
	free(cause);
	one[0] = "/nonexistent/prog";
	cr_assert_eq(staging_ldd_closure(one, &l, &cause), -1);
	cr_assert_str_eq(cause,
	    "/nonexistent/prog: No such file or directory");
	free(cause);
	staging_list_free(&l);
}

/* Extension modules are loaded into the program's process: their own
 * needs, missing ones included, on top of the program's. */
Test(staging, extension_modules)
{
	struct staging_list	 l = { 0 };
	const char		*dirs[2];
	char			*cause = NULL, *mods, *missing;

	sh("cd %s && mkdir -p mods/pkg/sub mods/pkg/libs && "
	    "echo 'int dep(void) { return 1; }' > dep.c && "
	    "echo 'int dep(void); int mod(void) { return dep(); }' > mod.c && "
	    "cc -shared -fPIC -Wl,-soname,libqdep.so.1 -o "
	    "mods/pkg/libs/libqdep.so.1 dep.c && "
	    "ln -s libqdep.so.1 mods/pkg/libs/libqdep.so && "
	    "cc -shared -fPIC -o mods/pkg/sub/mod.cpython-311-x86_64-linux-gnu"
	    ".so mod.c -Lmods/pkg/libs -lqdep "
	    "-Wl,-rpath,'$ORIGIN/../libs' && "
	    "cc -shared -fPIC -Wl,-soname,libqlost.so -o libqlost.so dep.c && "
	    "cc -shared -fPIC -o mods/lost.so mod.c -L. -lqlost && "
	    "rm libqlost.so && echo 'not elf' > mods/notelf.so && "
	    "cc -shared -fPIC -Wl,-soname,libqboth.so -o mods/pkg/libs/"
	    "libqboth.so dep.c && cc -shared -fPIC -o mods/pkg/sub/zz.so "
	    "mod.c -Lmods/pkg/libs -lqboth -Wl,-rpath,'$ORIGIN/../libs'",
	    dir);
	mods = path_in(dir, "mods");
	dirs[0] = mods;
	dirs[1] = NULL;
	cr_assert_eq(staging_ldd_closure_ext("/bin/ls", dirs, &l, &cause), 0,
	    "%s", cause);
	cr_assert(has_path(&l, "/lib/x86_64-linux-gnu/libselinux.so.1"));
	cr_assert_eq(l.nmissing, 1);
	cr_assert_not_null(missing = staging_list_missing(&l));
	cr_assert_not_null(strstr(missing, "libqlost.so (needed by "),
	    "%s", missing);
	cr_assert_not_null(strstr(missing, "/mods/lost.so)"), "%s", missing);
	free(missing);
	free(mods);
	xasprintf(&mods, "%s/mods/pkg/sub/../libs/libqdep.so.1", dir);
	cr_assert(has_path(&l, mods), "the module's $ORIGIN RUNPATH");
	free(mods);
	/* Needed by a module, and loadable as a module itself. */
	xasprintf(&mods, "%s/mods/pkg/sub/../libs/libqboth.so", dir);
	cr_assert(has_path(&l, mods), "a module that is also needed");
	free(mods);
	staging_list_free(&l);

	dirs[0] = "/nonexistent";
	cr_assert_eq(staging_ldd_closure_ext("/bin/ls", dirs, &l, &cause), -1);
	cr_assert_str_eq(cause, "/nonexistent: No such file or directory");
	free(cause);
	staging_list_free(&l);
}

Test(staging, compat_seeds)
{
	struct staging_list	 l = { 0 };
	char			*cause = NULL, *p;
	const char *const	 extra[] = { "libqsup-no-such.so.9", NULL };
	size_t			 i;

	cr_assert_eq(staging_ldd_seeds(staging_compat_seeds, &l, &cause), 0,
	    "%s", cause);
	cr_assert_eq(l.nmissing, 0);
	for (i = 0; staging_compat_seeds[i] != NULL; i++) {
		xasprintf(&p, "/lib/%s/%s", staging_host_triplet(),
		    staging_compat_seeds[i]);
		if (access(p, F_OK) == 0)
			cr_assert(has_path(&l, p), "%s not listed", p);
		free(p);
	}
	/* libselinux brings libpcre2 and libc with it. */
	xasprintf(&p, "/lib/%s/libc.so.6", staging_host_triplet());
	cr_assert(has_path(&l, p));
	free(p);
	staging_list_free(&l);
	cr_assert_eq(staging_ldd_seeds(extra, &l, &cause), 0);
	cr_assert_eq(l.nlibs, 0);
	staging_list_free(&l);
}

/* Where RESOLVE_IN_ROOT finds path inside root: as the guest would. */
static int
open_in_root(const char *root, const char *path, struct stat *sb)
{
	struct open_how	how = { .flags = O_RDONLY|O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT };
	int		rfd, fd;

	if ((rfd = open(root, O_RDONLY|O_DIRECTORY)) == -1)
		return (-1);
	fd = (int)syscall(SYS_openat2, rfd, path, &how, sizeof how);
	close(rfd);
	if (fd == -1)
		return (-1);
	fstat(fd, sb);
	close(fd);
	return (0);
}

/* The closure staged path by path resolves inside the copy as on the host,
 * symlinks (/lib -> usr/lib, /lib64/ld-linux...) included. */
Test(staging, copy_paths_mirrors_the_closure)
{
	struct staging_list	 l = { 0 };
	struct staging_stats	 st = { 0 };
	const char		*one[2] = { "/bin/ls", NULL };
	const char		**paths;
	char			*cause = NULL, *root;
	struct stat		 host, staged;
	size_t			 i, n = 0;

	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	paths = xreallocarray(NULL, l.nlibs + 2, sizeof *paths);
	for (i = 0; i < l.nlibs; i++)
		paths[n++] = l.libs[i].path;
	paths[n++] = "/bin/ls";
	paths[n] = NULL;
	root = path_in(dir, "run/libs");
	cr_assert_eq(staging_copy_paths(paths, root, STAGING_LINK, &st,
	    &cause), 0, "%s", cause);
	/* Twice: what is there already is left alone. */
	cr_assert_eq(staging_copy_paths(paths, root, STAGING_LINK, &st,
	    &cause), 0, "%s", cause);
	for (i = 0; paths[i] != NULL; i++) {
		cr_assert_eq(stat(paths[i], &host), 0);
		cr_assert_eq(open_in_root(root, paths[i], &staged), 0,
		    "%s is not reachable in the copy", paths[i]);
		/* Root may link the host's files; a user gets copies. */
		if (geteuid() == 0)
			cr_assert_eq(host.st_ino, staged.st_ino, "%s",
			    paths[i]);
		cr_assert_eq(host.st_size, staged.st_size, "%s", paths[i]);
	}
	cr_assert_eq(st.errors, 0, "%s", st.first_error);
	cr_assert_gt(st.symlinks, 0);
	/* Only what was asked for. */
	cr_assert(!exists(root, "usr/lib/x86_64-linux-gnu/libm.so.6"));
	free(root);
	free(paths);
	staging_stats_free(&st);
	staging_list_free(&l);
}

/* ---- ELF and ld.so.cache parsers ---- */

Test(staging, elf_parser_survives_corruption)
{
	struct staging_elf	 e;
	unsigned char		*orig, *buf;
	char			*why = NULL;
	size_t			 len, i, cut;
	unsigned		 seed = 1;

	orig = (unsigned char *)util_read_file("/bin/ls", &len, 64 << 20);
	cr_assert_not_null(orig);
	cr_assert_eq(staging_elf_parse(orig, len, &e, &why), 0, "%s", why);
	cr_assert_eq(e.nneeded, 2);
	cr_assert_str_eq(e.interp, "/lib64/ld-linux-x86-64.so.2");
	staging_elf_free(&e);
	/* Truncations at every header-ish length. */
	for (cut = 0; cut < 8192 && cut < len; cut += 7) {
		buf = xmalloc(cut + 1);
		memcpy(buf, orig, cut);
		if (staging_elf_parse(buf, cut, &e, &why) == 0)
			staging_elf_free(&e);
		free(why);
		why = NULL;
		free(buf);
	}
	/* Random bytes flipped in the headers and the dynamic section. */
	buf = xmalloc(len);
	for (i = 0; i < 3000; i++) {
		memcpy(buf, orig, len);
		for (cut = 0; cut < 8; cut++) {
			seed = seed * 1103515245 + 12345;
			buf[(seed >> 8) % (len < 65536 ? len : 65536)] =
			    (unsigned char)(seed >> 16);
		}
		if (staging_elf_parse(buf, len, &e, &why) == 0)
			staging_elf_free(&e);
		free(why);
		why = NULL;
	}
	free(buf);
	free(orig);
}

struct found {
	char	*path;
};

static int
take_first(const char *path, void *arg)
{
	struct found	*f = arg;

	f->path = xstrdup(path);
	return (1);
}

Test(staging, ld_so_cache)
{
	struct found	 f = { NULL };
	unsigned char	 cache[48 + 2 * 24 + 64];
	char		*real;
	size_t		 len, k1, v1;

	real = util_read_file("/etc/ld.so.cache", &len, 64 << 20);
	cr_assert_not_null(real);
	cr_assert_eq(staging_ldcache_lookup(real, len, "libc.so.6",
	    take_first, &f), 0);
	cr_assert_not_null(strstr(f.path, "/libc.so.6"));
	free(f.path);
	f.path = NULL;
	cr_assert_eq(staging_ldcache_lookup(real, len, "libqsup-none.so",
	    take_first, &f), -1);
	/* Cut anywhere: no answer, no crash. */
	for (k1 = 0; k1 < len && k1 < 4096; k1 += 3)
		if (staging_ldcache_lookup(real, k1, "libc.so.6", take_first,
		    &f) == 0) {
			free(f.path);
			f.path = NULL;
		}
	free(real);

	/* A cache of our own: one entry with hwcap (skipped), one without. */
	memset(cache, 0, sizeof cache);
	memcpy(cache, "glibc-ld.so.cache1.1", 20);
	cache[20] = 2;				/* nlibs */
	k1 = 48 + 2 * 24;
	v1 = k1 + 8;
	memcpy(cache + k1, "libq.so", 8);
	memcpy(cache + v1, "/opt/q/libq.so", 15);
	cache[48] = 3;				/* flags: ELF libc6 */
	cache[48 + 4] = (unsigned char)k1;
	cache[48 + 8] = (unsigned char)v1;
	cache[48 + 16] = 1;			/* hwcap */
	cache[72] = 3;
	cache[72 + 4] = (unsigned char)k1;
	cache[72 + 8] = (unsigned char)v1;
	cr_assert_eq(staging_ldcache_lookup(cache, sizeof cache, "libq.so",
	    take_first, &f), 0);
	cr_assert_str_eq(f.path, "/opt/q/libq.so");
	free(f.path);
	cr_assert_eq(staging_ldcache_lookup(cache, sizeof cache, "libq.s",
	    take_first, &f), -1);
	cache[72] = 0;				/* not libc6: skipped */
	cr_assert_eq(staging_ldcache_lookup(cache, sizeof cache, "libq.so",
	    take_first, &f), -1);
}

/* ---- host facts ---- */

Test(staging, glibc_version_of_the_host)
{
	struct staging_elf	 e;
	char			*libc, *want, *why = NULL, *data;
	int			 major, minor;
	size_t			 len;

	xasprintf(&libc, "/lib/%s/libc.so.6", staging_host_triplet());
	cr_assert_eq(staging_glibc_version(libc, &major, &minor), 0, "%s",
	    libc);
	xasprintf(&want, "%d.%d", major, minor);
	cr_assert_str_eq(want, gnu_get_libc_version());
	/* The version definitions agree (they can only lag the release). */
	data = util_read_file(libc, &len, 64 << 20);
	cr_assert_eq(staging_elf_parse(data, len, &e, &why), 0, "%s", why);
	cr_assert_eq(e.verdef_major, major);
	cr_assert_leq(e.verdef_minor, minor);
	cr_assert_geq(e.verdef_minor, 34);
	staging_elf_free(&e);
	free(data);
	free(want);
	free(libc);
	cr_assert_eq(staging_glibc_version("/bin/ls", &major, &minor), -1);
	cr_assert_eq(staging_glibc_version("/nonexistent", &major, &minor),
	    -1);
	cr_assert_eq(errno, ENOENT);
}

Test(staging, glibc_banner)
{
	static const char	 b1[] = "xx\0GNU C Library (Ubuntu GLIBC "
	    "2.43-0ubuntu1) development release version 2.43.\0yy";
	static const char	 b2[] = "GNU C Library is free\0release "
	    "version 9.9";
	int			 major = 0, minor = 0;

	cr_assert_eq(staging_glibc_banner(b1, sizeof b1, &major, &minor), 0);
	cr_assert_eq(major, 2);
	cr_assert_eq(minor, 43);
	cr_assert_eq(staging_glibc_banner(b2, sizeof b2, &major, &minor), -1);
	cr_assert_eq(staging_glibc_banner("GNU C Library", 13, &major,
	    &minor), -1);
}

Test(staging, host_triplet)
{
	char	*p;

	xasprintf(&p, "/usr/lib/%s", staging_host_triplet());
	cr_assert_eq(access(p, F_OK), 0, "%s", p);
	free(p);
#if defined(__x86_64__) && !defined(__ILP32__)
	cr_assert_str_eq(staging_host_triplet(), "x86_64-linux-gnu");
#endif
}

Test(staging, container_signs)
{
	char	*root, *p;

	unsetenv("container");
	root = path_in(dir, "root");
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(staging_container_signs(root), 0);
	put(root, ".dockerenv", "", 0644);
	cr_assert_eq(staging_container_signs(root), 1);
	p = path_in(root, ".dockerenv");
	cr_assert_eq(unlink(p), 0);
	free(p);
	put(root, ".containerenv", "", 0644);
	cr_assert_eq(staging_container_signs(root), 1);
	free(root);
	root = path_in(dir, "root2");
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(setenv("container", "podman", 1), 0);
	cr_assert_eq(staging_container_signs(root), 1);
	cr_assert_eq(staging_in_container(), 1);
	unsetenv("container");
	/* The real root, as it is on this host. */
	unsetenv("QSUP_IN_CONTAINER");
	cr_assert_eq(staging_in_container(),
	    access("/.dockerenv", F_OK) == 0 ||
	    access("/.containerenv", F_OK) == 0);
	/* Both answers forced, whatever the host's signs say. */
	cr_assert_eq(setenv("QSUP_IN_CONTAINER", "0", 1), 0);
	cr_assert_eq(setenv("container", "podman", 1), 0);
	cr_assert_eq(staging_in_container(), 0);
	cr_assert_eq(facts_in_container(), 0);
	unsetenv("container");
	cr_assert_eq(setenv("QSUP_IN_CONTAINER", "1", 1), 0);
	cr_assert_eq(staging_in_container(), 1);
	cr_assert_eq(facts_in_container(), 1);
	unsetenv("QSUP_IN_CONTAINER");
	free(root);
}

/* A second signal (util_stop_now) stops a copy at the next entry. */
Test(staging, copy_stops_at_a_second_signal)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL;

	make_tree();
	util_stop_now = 1;
	cr_assert_eq(staging_copy_tree(src, dst, 0, NULL, NULL, &st, &cause),
	    -1);
	util_stop_now = 0;
	cr_assert_not_null(cause);
	cr_assert(strstr(cause, "stopped by a signal") != NULL, "%s", cause);
	cr_assert_eq(st.files, 0);
	free(cause);
	staging_stats_free(&st);
}
