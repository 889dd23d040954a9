/*
 * File jobs: POST /exec with "read" or "write" in place of argv (wire.h).
 * Each runs in a child of the agent (exec.c), so that a slow disk, a share
 * that hangs or a FIFO with no writer blocks that child and never the
 * agent's loop. A job's stdin and stdout are exec.c's pipes; what it
 * returns is its exit status: 0, or the errno of the call that failed,
 * after one line on stderr naming the path and the error.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#ifndef O_TMPFILE
#define O_TMPFILE	(020000000 | O_DIRECTORY)
#endif

/* The status of a failed call, and its line on stderr. */
static int
job_fail(const char *what, const char *path, int error)
{
	if (error <= 0 || error > 255)
		error = EIO;
	if (error == EINVAL && path[0] != '/')
		dprintf(STDERR_FILENO, "%s %s: not an absolute path\n", what,
		    path);
	else
		dprintf(STDERR_FILENO, "%s %s: %s\n", what, path,
		    strerror(error));
	return (error);
}

/* Copy from to to until EOF: 0, or the errno of the read or write. */
static int
job_copy(int from, int to)
{
	static char	 buf[65536];
	ssize_t		 n, w, off;

	for (;;) {
		n = read(from, buf, sizeof buf);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return (errno);
		if (n == 0)
			return (0);
		for (off = 0; off < n; off += w) {
			w = write(to, buf + off, n - off);
			if (w == -1 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w == -1)
				return (errno);
		}
	}
}

/* {"read":PATH}: the file's bytes on stdout. */
int
job_read(const char *path)
{
	struct stat	st;
	int		fd, error;

	if (path[0] != '/')
		return (job_fail("read", path, EINVAL));
	if ((fd = open(path, O_RDONLY|O_NOCTTY|O_CLOEXEC)) == -1)
		return (job_fail("read", path, errno));
	if (fstat(fd, &st) == -1) {
		error = errno;
		close(fd);
		return (job_fail("read", path, error));
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return (job_fail("read", path, EISDIR));
	}
	error = job_copy(fd, STDOUT_FILENO);
	close(fd);
	return (error != 0 ? job_fail("read", path, error) : 0);
}

/*
 * Give an O_TMPFILE file the name tmp: through /proc, which needs no
 * privilege, else by AT_EMPTY_PATH (CAP_DAC_READ_SEARCH). A name left
 * by an earlier agent of the same pid and id is in the way: replaced.
 */
static int
job_link(int fd, const char *tmp)
{
	char	proc[64];
	int	tries;

	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	for (tries = 0; tries < 2; tries++) {
		if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp,
		    AT_SYMLINK_FOLLOW) == 0)
			return (0);
		if (errno == EEXIST) {
			(void)unlink(tmp);
			continue;
		}
		if (linkat(fd, "", AT_FDCWD, tmp, AT_EMPTY_PATH) == 0)
			return (0);
		if (errno != EEXIST)
			return (-1);
		(void)unlink(tmp);
	}
	return (-1);
}

/*
 * {"write":PATH,"mode":N}: stdin to a file beside PATH, then at EOF that
 * file, mode N exactly (no umask), renamed over PATH, so a reader sees the
 * old file or the new one whole. The file has no name until it is whole
 * (O_TMPFILE), so a job killed on the way leaves nothing; where the file
 * system has no O_TMPFILE it is written under tmp, which this removes on
 * failure and the agent on the job's death (exec_finish).
 */
int
job_write(const char *path, int mode, const char *tmp)
{
	struct stat	 st;
	const char	*slash;
	char		*dir;
	int		 fd, named = 0, error;

	if (path[0] != '/' || tmp == NULL)
		return (job_fail("write", path, path[0] != '/' ? EINVAL :
		    EISDIR));
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return (job_fail("write", path, EISDIR));
	slash = strrchr(path, '/');
	dir = slash == path ? xstrdup("/") : xstrndup(path, slash - path);
	fd = open(dir, O_TMPFILE|O_WRONLY|O_CLOEXEC, 0600);
	free(dir);
	if (fd == -1 && (errno == EOPNOTSUPP || errno == EISDIR ||
	    errno == EINVAL)) {
		/* No O_TMPFILE here (9p, an old kernel): a named file. */
		(void)unlink(tmp);
		fd = open(tmp, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC,
		    0600);
		named = 1;
	}
	if (fd == -1)
		return (job_fail("write", path, errno));
	if ((error = job_copy(STDIN_FILENO, fd)) != 0)
		goto fail;
	if (fchmod(fd, mode & 07777) == -1 || (!named && job_link(fd,
	    tmp) == -1)) {
		error = errno;
		goto fail;
	}
	named = 1;
	/* A file system may report a failed write only now. */
	if (close(fd) == -1) {
		fd = -1;
		error = errno;
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) == -1) {
		error = errno;
		goto fail;
	}
	return (0);
fail:
	if (fd != -1)
		close(fd);
	if (named)
		(void)unlink(tmp);
	return (job_fail("write", path, error));
}
