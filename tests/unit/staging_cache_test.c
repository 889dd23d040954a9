/*
 * staging/cache.c: staged copies kept between runs, on real trees under
 * /tmp. A copy is used again only while every entry of its source is as it
 * was; a copy in use is never replaced under its user.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"
#include "staging.h"

static char	*dir;		/* the test's own temp directory */
static char	*cache;
static char	*src;

static void
setup(void)
{
	char	tmpl[] = "/tmp/qsup-cache-test.XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	dir = xstrdup(tmpl);
	xasprintf(&cache, "%s/cache", dir);
	xasprintf(&src, "%s/src", dir);
	cr_assert_eq(mkdir(cache, 0700), 0);
	cr_assert_eq(mkdir(src, 0755), 0);
}

static void
teardown(void)
{
	staging_remove(dir);
	free(dir);
	free(cache);
	free(src);
}

TestSuite(staging_cache, .init = setup, .fini = teardown);

static void
put(const char *rel, const char *text)
{
	char	*path;

	xasprintf(&path, "%s/%s", src, rel);
	cr_assert_eq(util_write_file(path, text), 0, "%s", path);
	free(path);
}

/* Stage src through the cache: its return; *path and *fd when 0. */
static int
stage(char **path, int *fd)
{
	static const char *const skip[] = { ".git", NULL };
	struct staging_stats	 st;
	char			*cause = NULL;
	int			 rc;

	memset(&st, 0, sizeof st);
	rc = staging_cache_stage(cache, src, STAGING_LINK, skip, NULL, path,
	    fd, &st, &cause);
	cr_assert_neq(rc, -1, "%s", cause);
	staging_stats_free(&st);
	return (rc);
}

static char *
read_in(const char *tree, const char *rel)
{
	char	*path, *text;

	xasprintf(&path, "%s/%s", tree, rel);
	text = util_read_file(path, NULL, 4096);
	free(path);
	return (text);
}

/* Let the next change land in another mtime than the copy's source. */
static void
tick(void)
{
	struct timespec	ts = { 0, 20 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

Test(staging_cache, reused_while_unchanged_made_again_on_change)
{
	struct stat	 a, b;
	char		*p1, *p2, *p3, *text;
	int		 fd1, fd2, fd3;

	cr_assert_eq(mkdir(strcat(strcpy(alloca(4096), src), "/lib"), 0755),
	    0);
	put("lib/m.py", "one\n");
	put("top", "t\n");
	cr_assert_eq(mkdir(strcat(strcpy(alloca(4096), src), "/.git"), 0755),
	    0);
	put(".git/HEAD", "ref\n");

	cr_assert_eq(stage(&p1, &fd1), 0);
	cr_assert_str_eq(text = read_in(p1, "lib/m.py"), "one\n");
	free(text);
	cr_assert_null(read_in(p1, ".git/HEAD"), "a skipped name was copied");
	staging_cache_release(fd1);

	/* Unchanged: the very same copy, not a new one. */
	cr_assert_eq(stat(p1, &a), 0);
	cr_assert_eq(stage(&p2, &fd2), 0);
	cr_assert_str_eq(p1, p2);
	cr_assert_eq(stat(p2, &b), 0);
	cr_assert_eq(a.st_ino, b.st_ino, "the copy was made again");
	staging_cache_release(fd2);

	/* A file rewritten in place: its mtime moved, so a new copy. */
	tick();
	put("lib/m.py", "two\n");
	cr_assert_eq(stage(&p3, &fd3), 0);
	cr_assert_str_eq(text = read_in(p3, "lib/m.py"), "two\n");
	free(text);
	staging_cache_release(fd3);
	free(p3);

	/* A file added: its directory changed. */
	tick();
	put("lib/new.py", "new\n");
	cr_assert_eq(stage(&p3, &fd3), 0);
	cr_assert_str_eq(text = read_in(p3, "lib/new.py"), "new\n");
	free(text);
	staging_cache_release(fd3);
	free(p3);

	/* A file removed. */
	tick();
	cr_assert_eq(unlink(strcat(strcpy(alloca(4096), src), "/top")), 0);
	cr_assert_eq(stage(&p3, &fd3), 0);
	cr_assert_null(read_in(p3, "top"), "a removed file is still shown");
	staging_cache_release(fd3);
	free(p1);
	free(p2);
	free(p3);
}

Test(staging_cache, a_stale_copy_in_use_is_not_replaced)
{
	char	*p1, *p2, *text;
	int	 fd1, fd2;

	put("f", "old\n");
	cr_assert_eq(stage(&p1, &fd1), 0);
	tick();
	put("g", "added\n");
	/* fd1 is a sandbox still showing the old copy. */
	cr_assert_eq(stage(&p2, &fd2), 1, "a copy in use was replaced");
	cr_assert_str_eq(text = read_in(p1, "f"), "old\n");
	free(text);
	cr_assert_null(read_in(p1, "g"));
	staging_cache_release(fd1);
	cr_assert_eq(stage(&p2, &fd2), 0);
	cr_assert_str_eq(text = read_in(p2, "g"), "added\n");
	free(text);
	staging_cache_release(fd2);
	free(p1);
	free(p2);
}

Test(staging_cache, two_users_share_a_current_copy)
{
	char	*p1, *p2;
	int	 fd1, fd2;

	put("f", "x\n");
	cr_assert_eq(stage(&p1, &fd1), 0);
	cr_assert_eq(stage(&p2, &fd2), 0);
	cr_assert_str_eq(p1, p2);
	staging_cache_release(fd1);
	staging_cache_release(fd2);
	free(p1);
	free(p2);
}

Test(staging_cache, clear_removes_what_no_one_uses)
{
	char	*p1;
	int	 fd1;

	put("f", "x\n");
	cr_assert_eq(stage(&p1, &fd1), 0);
	cr_assert_eq(staging_cache_cmd(cache, 1, 0), 0, "removed in use");
	cr_assert_eq(access(p1, F_OK), 0);
	staging_cache_release(fd1);
	cr_assert_eq(staging_cache_cmd(cache, 1, 1), 0, "current is stale");
	cr_assert_eq(staging_cache_cmd(cache, 1, 0), 1);
	cr_assert_neq(access(p1, F_OK), 0);
	free(p1);
}

/* Byte copies would not follow the source's changes in place: not kept. */
Test(staging_cache, copies_of_bytes_are_not_kept)
{
	struct staging_stats	 st;
	char			*path = NULL, *cause = NULL;
	int			 fd, rc;

	put("f", "x\n");
	memset(&st, 0, sizeof st);
	rc = staging_cache_stage(cache, src, STAGING_NOCLONE, NULL, NULL,
	    &path, &fd, &st, &cause);
	cr_assert_eq(rc, 1, "rc %d %s", rc, cause != NULL ? cause : "");
	cr_assert_null(path);
	staging_stats_free(&st);
	cr_assert_eq(staging_cache_cmd(cache, 0, 0), 0, "a copy was kept");
}
