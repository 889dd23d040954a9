/*
 * An image build's children: each in a process group of its own (a
 * signal to the build stops the whole group, fakeroot's daemon with it),
 * its output to the build's log, a memfd; a failure's cause names the
 * step and ends with the log's last bytes.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_build_int.h"

volatile sig_atomic_t		image_build_sig;
static volatile pid_t		image_build_pgid;

/* Stop the child's process group; the build then cleans up. */
void
image_build_signal(int sig)
{
	image_build_sig = sig;
	/* SIGINT: fakeroot's trap for it stops its faked daemon too. */
	if (image_build_pgid > 0)
		kill(-image_build_pgid, SIGINT);
}

/* pid's group is the one a signal to the build stops (it was started
 * before others ran). */
void
image_build_foreground(pid_t pid)
{
	image_build_pgid = pid;
}

/* The last bytes of the children's log, one line. */
char *
image_build_log_tail(const struct image_bstate *b)
{
	char	 buf[IMAGE_BUILD_LOG_TAIL + 1], *p, *tail;
	off_t	 end, off;
	ssize_t	 n;

	if ((end = lseek(b->log, 0, SEEK_END)) == -1)
		end = 0;
	off = end > IMAGE_BUILD_LOG_TAIL ? end - IMAGE_BUILD_LOG_TAIL : 0;
	if ((n = pread(b->log, buf, sizeof buf - 1, off)) < 0)
		n = 0;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	tail = xstrdup(n > 0 ? buf : "(no output)");
	for (p = tail; *p != '\0'; p++) {
		if (*p == '\n' || (unsigned char)*p < 0x20)
			*p = ' ';
	}
	return (tail);
}

/*
 * Start argv (stdin from infd, else from in, or /dev/null) in a process
 * group of its own, its output to the log (emptied first); the pid, or
 * -1 with *cause saying what failed and why.
 */
pid_t
image_build_spawn(struct image_bstate *b, char *const argv[], int infd,
    const char *in, const char *what, char **cause)
{
	sigset_t	 all, old;
	pid_t		 pid;
	int		 fd;

	if (image_build_sig != 0) {
		xasprintf(cause, "interrupted by signal %d", image_build_sig);
		return (-1);
	}
	if (ftruncate(b->log, 0) == -1 || lseek(b->log, 0, SEEK_SET) == -1) {
		xasprintf(cause, "%s: the log: %s", what, strerror(errno));
		return (-1);
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if ((pid = fork()) == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		xasprintf(cause, "%s: fork: %s", what, strerror(errno));
		return (-1);
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (infd != -1)
			fd = infd;
		else if ((fd = open(in != NULL ? in : "/dev/null",
		    O_RDONLY)) == -1)
			_exit(126);
		if (dup2(fd, STDIN_FILENO) == -1)
			_exit(126);
		if (dup2(b->log, STDOUT_FILENO) == -1 ||
		    dup2(b->log, STDERR_FILENO) == -1)
			_exit(126);
		closefrom(3);
		execvp(argv[0], argv);
		dprintf(STDERR_FILENO, "%s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	image_build_pgid = pid;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (image_build_sig != 0)
		kill(-pid, SIGINT);
	return (pid);
}

/* Wait for pid, started by image_build_spawn; -1 with *cause. */
int
image_build_wait(struct image_bstate *b, pid_t pid, const char *what,
    char **cause)
{
	struct statvfs	 sv;
	char		*tail;
	int		 status;

	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR) {
			status = -1;
			break;
		}
	}
	image_build_pgid = 0;
	/* Nothing of the group may go on writing in the work directory. */
	if (status != 0)
		(void)kill(-pid, SIGKILL);
	if (image_build_sig != 0) {
		xasprintf(cause, "interrupted by signal %d", image_build_sig);
		return (-1);
	}
	if (status == 0)
		return (0);
	tail = image_build_log_tail(b);
	/* Not every tool says ENOSPC (tar: "Wrote only 2560 of 10240"). */
	if (strstr(tail, "No space left on device") != NULL ||
	    (statvfs(b->work, &sv) == 0 && (uint64_t)sv.f_bavail *
	    sv.f_frsize < IMAGE_BUILD_FULL))
		xasprintf(cause, "no space left beside %s (%s): %s",
		    b->req->out, what, tail);
	else
		xasprintf(cause, "%s failed (%s %d): %s", what,
		    WIFSIGNALED(status) ? "signal" : "exit",
		    WIFSIGNALED(status) ? WTERMSIG(status) :
		    WEXITSTATUS(status), tail);
	free(tail);
	return (-1);
}

/* Run argv (stdin from in, or /dev/null) to its end; -1 with *cause. */
int
image_build_run(struct image_bstate *b, char *const argv[], const char *in,
    const char *what, char **cause)
{
	pid_t	pid;

	if ((pid = image_build_spawn(b, argv, -1, in, what, cause)) == -1)
		return (-1);
	return (image_build_wait(b, pid, what, cause));
}

/* A file of the work directory holding buf's bytes; its path. */
char *
image_build_file(struct image_bstate *b, const char *name,
    const struct buf *buf, char **cause)
{
	char	*path;
	int	 fd;

	xasprintf(&path, "%s/%s", b->work, name);
	if ((fd = open(path, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600)) ==
	    -1 || (buf->len > 0 && write(fd, buf->data, buf->len) !=
	    (ssize_t)buf->len) || close(fd) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		return (NULL);
	}
	return (path);
}

/*
 * Run argv as image_build_run does, starting the writeback of file (its
 * output) every few milliseconds while it runs: the fsync after it then
 * waits for little. qemu-img's 150 MB qcow2 and its fsync took about
 * 40 ms less so here (medians of 5, alternating; docs/speed.md).
 */
int
image_build_run_flushing(struct image_bstate *b, char *const argv[],
    const char *file, const char *what, char **cause)
{
	siginfo_t	si;
	pid_t		pid;
	int		fd = -1;

	if ((pid = image_build_spawn(b, argv, -1, NULL, what, cause)) == -1)
		return (-1);
	while (image_build_sig == 0) {
		memset(&si, 0, sizeof si);
		if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
		    -1 && errno != EINTR)
			break;
		if (si.si_pid == pid)
			break;
		usleep(IMAGE_BUILD_FLUSH_US);
		if (fd == -1)
			fd = open(file, O_RDONLY | O_CLOEXEC);
		if (fd != -1)
			(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	}
	if (fd != -1)
		close(fd);
	return (image_build_wait(b, pid, what, cause));
}
