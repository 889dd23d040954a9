/*
 * The agent's file jobs (guest/job.c), compiled in, for what the real
 * agent under agent_test cannot be made to do: a file system without
 * O_TMPFILE (9p, some initramfs roots), so the named temporary file; a
 * stale temporary name in the way; a failing copy, which must leave
 * nothing. open() is wrapped here to refuse O_TMPFILE on demand. Each
 * test is its own process (criterion), so stdin and stderr are its own
 * to redirect.
 */
#include <sys/stat.h>

#include <criterion/criterion.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int	job_test_no_tmpfile;

static int
job_test_open(const char *path, int flags, ...)
{
	va_list	ap;
	mode_t	mode = 0;

	va_start(ap, flags);
	if (flags & O_CREAT || (flags & O_TMPFILE) == O_TMPFILE)
		mode = va_arg(ap, mode_t);
	va_end(ap);
	if (job_test_no_tmpfile && (flags & O_TMPFILE) == O_TMPFILE) {
		errno = EOPNOTSUPP;
		return (-1);
	}
	return (open(path, flags, mode));
}

#define open job_test_open
#include "../../guest/job.c"
#undef open

static char	dir[64];

static void
setup(void)
{
	strcpy(dir, "/tmp/qsup-job-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	char		 path[512];
	DIR		*d;
	struct dirent	*de;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		(void)unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

TestSuite(agent_job, .init = setup, .fini = teardown);

/* The job's stdin: a file holding data. */
static void
stdin_from(const void *data, size_t len)
{
	char	path[128];
	int	fd;

	snprintf(path, sizeof path, "%s.in", dir);
	fd = open(path, O_RDWR|O_CREAT|O_TRUNC, 0600);
	cr_assert(fd != -1);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
	close(fd);
	unlink(path);
}

/* The job's stderr, into a file read back by stderr_text. */
static void
stderr_capture(void)
{
	char	path[128];
	int	fd;

	snprintf(path, sizeof path, "%s.err", dir);
	fd = open(path, O_RDWR|O_CREAT|O_TRUNC, 0600);
	cr_assert(fd != -1);
	cr_assert_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

static void
stderr_text(char *out, size_t size)
{
	char	path[128];
	ssize_t	n;
	int	fd;

	snprintf(path, sizeof path, "%s.err", dir);
	fd = open(path, O_RDONLY);
	cr_assert(fd != -1);
	n = read(fd, out, size - 1);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
}

/* How many names the folder holds. */
static int
names(void)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	d = opendir(dir);
	cr_assert_not_null(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return (n);
}

static void
check_file(const char *path, const char *want, mode_t mode)
{
	struct stat	st;
	char		buf[256];
	ssize_t		n;
	int		fd;

	cr_assert_eq(stat(path, &st), 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(st.st_mode & 07777, mode, "mode %o", st.st_mode & 07777);
	fd = open(path, O_RDONLY);
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	cr_assert(n >= 0);
	buf[n] = '\0';
	cr_assert_str_eq(buf, want);
}

static void
write_both_ways(int no_tmpfile)
{
	char	path[128], tmp[128];

	job_test_no_tmpfile = no_tmpfile;
	snprintf(path, sizeof path, "%s/f", dir);
	snprintf(tmp, sizeof tmp, "%s/.f.qsup-1-1", dir);
	stdin_from("first", 5);
	cr_assert_eq(job_write(path, 0600, tmp), 0);
	check_file(path, "first", 0600);
	/* Over the old one; a temporary name left by a dead agent is no bar. */
	cr_assert_eq(close(open(tmp, O_WRONLY|O_CREAT, 0644)), 0);
	stdin_from("second", 6);
	cr_assert_eq(job_write(path, 04711, tmp), 0);
	check_file(path, "second", 04711);
	cr_assert_eq(names(), 1, "the temporary name is left");
}

Test(agent_job, write_with_o_tmpfile)
{
	write_both_ways(0);
}

Test(agent_job, write_without_o_tmpfile_uses_a_named_file)
{
	write_both_ways(1);
}

/* A copy that fails half-way: the errno, one line, nothing left. */
static void
write_fails(int no_tmpfile)
{
	char	path[128], tmp[128], err[512];
	int	fd;

	job_test_no_tmpfile = no_tmpfile;
	snprintf(path, sizeof path, "%s/f", dir);
	snprintf(tmp, sizeof tmp, "%s/.f.qsup-1-1", dir);
	/* Reading a directory as stdin fails with EISDIR. */
	fd = open(dir, O_RDONLY|O_DIRECTORY);
	cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
	close(fd);
	stderr_capture();
	cr_assert_eq(job_write(path, 0644, tmp), EISDIR);
	stderr_text(err, sizeof err);
	cr_assert_eq(names(), 0, "something was left");
	cr_assert_not_null(strstr(err, path), "%s", err);
	cr_assert_not_null(strstr(err, strerror(EISDIR)), "%s", err);
	cr_assert_eq(strchr(err, '\n'), err + strlen(err) - 1, "%s", err);
}

Test(agent_job, failed_write_leaves_nothing_with_o_tmpfile)
{
	write_fails(0);
}

Test(agent_job, failed_write_leaves_nothing_without_o_tmpfile)
{
	write_fails(1);
}

Test(agent_job, paths_that_cannot_be_written)
{
	char	path[128], tmp[128], err[512];

	stderr_capture();
	stdin_from("x", 1);
	cr_assert_eq(job_write("rel/f", 0644, NULL), EINVAL);
	cr_assert_eq(job_read("rel/f"), EINVAL);
	stderr_text(err, sizeof err);
	cr_assert_not_null(strstr(err, "rel/f: not an absolute path"), "%s",
	    err);
	snprintf(tmp, sizeof tmp, "%s/.x", dir);
	cr_assert_eq(job_write(dir, 0644, tmp), EISDIR);
	/* Ends in '/': exec.c gives no temporary name. */
	snprintf(path, sizeof path, "%s/sub/", dir);
	cr_assert_eq(job_write(path, 0644, NULL), EISDIR);
	snprintf(path, sizeof path, "%s/missing/f", dir);
	cr_assert_eq(job_write(path, 0644, tmp), ENOENT);
	cr_assert_eq(names(), 0);
	cr_assert_eq(job_read(dir), EISDIR);
	snprintf(path, sizeof path, "%s/missing", dir);
	cr_assert_eq(job_read(path), ENOENT);
}
