/*
 * An image build off the caller's loop: image_build in a child process
 * (its tools, fakeroot and mke2fs, take seconds, and a pull on qsup
 * serve's loop must not stop every other sandbox for them). The child's
 * cause comes back through a pipe, read once the child is reaped by
 * ev_child (qsup's loops are the default loop). Cancelled, the child is
 * sent SIGTERM, which image_build answers by removing its work, and
 * reaped there.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_int.h"

struct image_build_job {
	struct ev_loop		*loop;
	ev_child		 child;
	int			 fd;	/* the child's cause */
	void			(*cb)(const char *, void *);
	void			*arg;
};

/*
 * The build's lock, taken (waiting): its file is unlinked by its holder
 * before it lets go, so one taken must still be the file at its path.
 * The fd, or -1 with errno.
 */
static int
image_build_job_lock(const char *lock)
{
	struct stat	fst, pst;
	int		fd;

	for (;;) {
		if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1)
			return (-1);
		if (flock(fd, LOCK_EX) == -1) {
			close(fd);
			return (-1);
		}
		if (fstat(fd, &fst) == 0 && stat(lock, &pst) == 0 &&
		    fst.st_dev == pst.st_dev && fst.st_ino == pst.st_ino)
			return (fd);
		close(fd);
	}
}

/* The child's end: the lock's file goes while it is still held. */
static void
image_build_job_exit(const char *lock, int status)
{
	if (lock != NULL)
		(void)unlink(lock);
	_exit(status);
}

/*
 * The child: the build, its cause down the pipe; never returns. With a
 * lock, the build waits for another process's build of the same image,
 * and is not done again if that one made OUT.
 */
static void
image_build_job_child(const struct image_build_req *req, const char *lock,
    int fd, const sigset_t *old)
{
	char	*cause = NULL;
	int	 sig = 0, s, lfd;
	size_t	 n, off = 0;
	ssize_t	 w;

	for (s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	if (req->stream)
		close(req->stream_peer);	/* its end's EOF: the pull gone */
	sigprocmask(SIG_SETMASK, old, NULL);
	if (lock != NULL && (lfd = image_build_job_lock(lock)) == -1) {
		xasprintf(&cause, "%s: %s", lock, strerror(errno));
		lock = NULL;	/* not ours to remove */
	} else if (lock != NULL && access(req->out, F_OK) == 0)
		image_build_job_exit(lock, 0);	/* the other one built it */
	if (cause == NULL && image_build(req, &sig, &cause) == 0)
		image_build_job_exit(lock, 0);
	n = cause != NULL ? strlen(cause) : 0;
	while (off < n && ((w = write(fd, cause + off, n - off)) > 0 ||
	    errno == EINTR))
		off += w > 0 ? (size_t)w : 0;
	image_build_job_exit(lock, 1);
}

static void
image_build_job_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct image_build_job	*j = w->data;
	struct buf		 b = { 0 };

	(void)revents;
	ev_child_stop(loop, w);
	buf_read_fd(&b, j->fd);
	buf_add(&b, "", 1);
	close(j->fd);
	j->fd = -1;
	if (WIFEXITED(w->rstatus) && WEXITSTATUS(w->rstatus) == 0)
		j->cb(NULL, j->arg);
	else if (b.len > 1)
		j->cb(b.data, j->arg);
	else
		j->cb("the build's process died", j->arg);
	buf_free(&b);
	free(j);
}

/*
 * Build req in a child (under lock, a file, when not NULL); cb later,
 * once, with NULL (built) or the cause. The request's strings need only
 * last through this call. NULL with *cause if no child could be made.
 */
struct image_build_job *
image_build_job_start(struct ev_loop *loop, const struct image_build_req *req,
    const char *lock, void (*cb)(const char *, void *), void *arg,
    char **cause)
{
	struct image_build_job	*j;
	sigset_t		 all, old;
	int			 fds[2];
	pid_t			 pid;

	if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return (NULL);
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if ((pid = fork()) == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		xasprintf(cause, "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return (NULL);
	}
	if (pid == 0) {
		close(fds[0]);
		image_build_job_child(req, lock, fds[1], &old);
	}
	j = xcalloc(1, sizeof *j);
	j->loop = loop;
	j->cb = cb;
	j->arg = arg;
	j->fd = fds[0];
	close(fds[1]);
	ev_child_init(&j->child, image_build_job_cb, pid, 0);
	j->child.data = j;
	ev_child_start(loop, &j->child);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return (j);
}

/* Stop the build: its child removes its work, and is reaped here. */
void
image_build_job_cancel(struct image_build_job *j)
{
	if (j == NULL)
		return;
	ev_child_stop(j->loop, &j->child);
	(void)kill(j->child.pid, SIGTERM);
	while (waitpid(j->child.pid, NULL, 0) == -1 && errno == EINTR)
		/* nothing */;
	close(j->fd);
	free(j);
}
