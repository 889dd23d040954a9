/*
 * What the staging suites (staging_copy_test.c, staging_closure_test.c)
 * share: a temp directory of the test's own with src/ in it, and files
 * put and looked for there.
 */
#ifndef STAGING_TEST_H
#define STAGING_TEST_H

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

#endif
