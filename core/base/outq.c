/*
 * A bounded, non-blocking writer onto one of qsup's own fds (stdout,
 * stderr). The caller watches outq_pending() and stops producing when it
 * grows; the queue never blocks the loop.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "base.h"

#define OUTQ_POLL_MS	100	/* outq_flush_blocking looks at the stop flag */

struct outq {
	struct ev_loop	*loop;
	int		 fd;
	int		 owned;		/* fd is our own reopened copy */
	int		 is_socket;
	struct buf	 buf;
	ev_io		 wr;
	int		 failed;
	void		(*drain_cb)(void *);
	void		*drain_arg;
};

/*
 * Get a non-blocking fd onto the same pipe, FIFO or terminal as fd without
 * touching the file description the caller's shell shares with us: reopen
 * it through /proc. Sockets are left as they are (MSG_DONTWAIT does it) and
 * regular files never block. Returns the fd to use; *owned says whether it
 * is a new one.
 */
int
outq_reopen_nonblock(int fd, int flags)
{
	struct stat	 st;
	char		 path[64];
	int		 nfd;

	if (fstat(fd, &st) == -1)
		return (-1);
	if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
		return (fd);
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if ((nfd = open(path, flags|O_NONBLOCK|O_CLOEXEC|O_NOCTTY)) == -1)
		return (fd);
	return (nfd);
}

static void
outq_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct outq	*q = w->data;
	ssize_t		 n;

	(void)revents;
	while (q->buf.len > 0) {
		if (q->is_socket)
			n = send(q->fd, q->buf.data, q->buf.len,
			    MSG_DONTWAIT|MSG_NOSIGNAL);
		else
			n = write(q->fd, q->buf.data, q->buf.len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			/* The reader went away: drop what is left. */
			q->failed = 1;
			buf_consume(&q->buf, q->buf.len);
			break;
		}
		buf_consume(&q->buf, n);
	}
	ev_io_stop(loop, w);
	if (q->drain_cb != NULL)
		q->drain_cb(q->drain_arg);
}

struct outq *
outq_new(struct ev_loop *loop, int fd)
{
	struct outq	*q;
	struct stat	 st;
	int		 nfd;

	q = xcalloc(1, sizeof *q);
	q->loop = loop;
	nfd = outq_reopen_nonblock(fd, O_WRONLY);
	q->fd = nfd == -1 ? fd : nfd;
	q->owned = q->fd != fd;
	if (fstat(q->fd, &st) == 0 && S_ISSOCK(st.st_mode))
		q->is_socket = 1;
	ev_io_init(&q->wr, outq_write_cb, q->fd, EV_WRITE);
	q->wr.data = q;
	return (q);
}

void
outq_write(struct outq *q, const void *data, size_t len)
{
	if (q->failed || len == 0)
		return;
	buf_add(&q->buf, data, len);
	if (!ev_is_active(&q->wr)) {
		ev_io_start(q->loop, &q->wr);
		/* Try at once: most writes complete without waiting. */
		outq_write_cb(q->loop, &q->wr, EV_WRITE);
	}
}

/* outq_write as a callback (log_set_output), as buf_put is buf_add. */
void
outq_put(void *arg, const void *data, size_t len)
{
	outq_write(arg, data, len);
}

size_t
outq_pending(struct outq *q)
{
	return (q->buf.len);
}

void
outq_set_drain_cb(struct outq *q, void (*cb)(void *), void *arg)
{
	q->drain_cb = cb;
	q->drain_arg = arg;
}

/*
 * At exit: write what is left, waiting for the reader as long as it takes,
 * but not once qsup must stop at once (util_stop_now: a second signal);
 * what is left then is dropped. Polls in short steps so that a signal
 * landing just before the wait cannot make it block for good.
 */
int
outq_flush_blocking(struct outq *q)
{
	struct pollfd	pfd;
	ssize_t		n;

	pfd.fd = q->fd;
	pfd.events = POLLOUT;
	while (q->buf.len > 0 && !q->failed) {
		if (util_stop_now) {
			buf_consume(&q->buf, q->buf.len);
			return (-1);
		}
		if (q->is_socket)
			n = send(q->fd, q->buf.data, q->buf.len,
			    MSG_DONTWAIT|MSG_NOSIGNAL);
		else
			n = write(q->fd, q->buf.data, q->buf.len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				poll(&pfd, 1, OUTQ_POLL_MS);
				continue;
			}
			q->failed = 1;
			return (-1);
		}
		buf_consume(&q->buf, n);
	}
	return (0);
}

void
outq_free(struct outq *q)
{
	if (q == NULL)
		return;
	ev_io_stop(q->loop, &q->wr);
	if (q->owned) {
		close(q->fd);
		q->fd = -1;
	}
	buf_free(&q->buf);
	free(q);
}
