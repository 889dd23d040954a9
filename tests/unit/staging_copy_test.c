/*
 * staging/copy.c: copies of real trees under /tmp checked entry by entry:
 * contents, modes, times, links, what is left out, hard links and
 * reflinks, mounts, a user's unreadable files, overlayfs sources.
 */
#include "staging_test.h"

#define NOBODY	65534

TestSuite(staging, .init = setup, .fini = teardown, .timeout = 120);

static void
put_link(const char *base, const char *rel, const char *target)
{
	char	*p = path_in(base, rel);

	cr_assert_eq(symlink(target, p), 0, "%s: %s", p, strerror(errno));
	free(p);
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
