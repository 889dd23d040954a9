/*
 * The guest's serial console: drained in chunks whenever it is readable,
 * never read by lines, so a guest that floods it or never ends a line
 * cannot stall qsup. The bytes go to console.log in the run directory (up
 * to a cap) and a ring of the last SERIAL_TAIL bytes is kept for error
 * messages; with --console they are also shown live on stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "qsup.h"

#define SERIAL_TAIL	16384
#define SERIAL_LOG_MAX	(64 * 1024 * 1024)
#define SERIAL_READ	65536
#define SERIAL_LIVE_MAX	(1024 * 1024)

struct serial {
	struct ev_loop	*loop;
	int		 fd;
	ev_io		 rd;
	int		 log_fd;
	size_t		 logged;
	char		 ring[SERIAL_TAIL];
	size_t		 ring_pos;	/* next byte to write */
	size_t		 ring_len;
	struct outq	*live;
	int		 closed;
	void		(*close_cb)(void *);
	void		*close_arg;
};

static void
serial_keep(struct serial *s, const char *data, size_t len)
{
	size_t	n;

	if (len > SERIAL_TAIL) {
		data += len - SERIAL_TAIL;
		len = SERIAL_TAIL;
	}
	while (len > 0) {
		n = SERIAL_TAIL - s->ring_pos;
		if (n > len)
			n = len;
		memcpy(s->ring + s->ring_pos, data, n);
		s->ring_pos = (s->ring_pos + n) % SERIAL_TAIL;
		s->ring_len += n;
		if (s->ring_len > SERIAL_TAIL)
			s->ring_len = SERIAL_TAIL;
		data += n;
		len -= n;
	}
}

static void
serial_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct serial	*s = w->data;
	char		 chunk[SERIAL_READ];
	ssize_t		 n;
	int		 rounds;

	(void)revents;
	/* Bounded work per wakeup so other watchers get their turn. */
	for (rounds = 0; rounds < 16; rounds++) {
		n = read(s->fd, chunk, sizeof chunk);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			n = 0;
		}
		if (n == 0) {
			ev_io_stop(loop, w);
			s->closed = 1;
			if (s->close_cb != NULL)
				s->close_cb(s->close_arg);
			return;
		}
		serial_keep(s, chunk, n);
		if (s->log_fd != -1 && s->logged < SERIAL_LOG_MAX) {
			if (write(s->log_fd, chunk, n) == n)
				s->logged += n;
		}
		/* The live view is lossy rather than a brake on the guest. */
		if (s->live != NULL && outq_pending(s->live) < SERIAL_LIVE_MAX)
			outq_write(s->live, chunk, n);
	}
}

/* Take over fd (the host end of the console); log to path if not NULL. */
struct serial *
serial_new(struct ev_loop *loop, int fd, const char *path, int live)
{
	struct serial	*s;

	s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->fd = fd;
	s->log_fd = -1;
	if (path != NULL)
		s->log_fd = open(path, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC,
		    0600);
	if (live)
		s->live = outq_new(loop, STDERR_FILENO);
	util_set_nonblock(fd);
	ev_io_init(&s->rd, serial_read_cb, fd, EV_READ);
	s->rd.data = s;
	ev_io_start(loop, &s->rd);
	return (s);
}

void
serial_set_close_cb(struct serial *s, void (*cb)(void *), void *arg)
{
	s->close_cb = cb;
	s->close_arg = arg;
}

int
serial_closed(struct serial *s)
{
	return (s->closed);
}

/* Append the last lines (at most nlines) of the console to out. */
void
serial_tail(struct serial *s, int nlines, struct buf *out)
{
	char	*flat, *p;
	size_t	 start, i, len;
	int	 seen = 0;

	len = s->ring_len;
	flat = xmalloc(len + 1);
	start = (s->ring_pos + SERIAL_TAIL - len) % SERIAL_TAIL;
	for (i = 0; i < len; i++)
		flat[i] = s->ring[(start + i) % SERIAL_TAIL];
	flat[len] = '\0';
	while (len > 0 && (flat[len - 1] == '\n' || flat[len - 1] == '\r'))
		len--;
	p = flat + len;
	while (p > flat) {
		if (p[-1] == '\n' && ++seen == nlines)
			break;
		p--;
	}
	/* Control bytes other than newline and tab are not shown raw. */
	for (; p < flat + len; p++) {
		if (*p == '\r')
			continue;
		if ((unsigned char)*p < 0x20 && *p != '\n' && *p != '\t')
			buf_add(out, "?", 1);
		else
			buf_add(out, p, 1);
	}
	free(flat);
}

void
serial_free(struct serial *s)
{
	if (s == NULL)
		return;
	ev_io_stop(s->loop, &s->rd);
	if (s->live != NULL) {
		outq_flush_blocking(s->live);
		outq_free(s->live);
	}
	close(s->fd);
	s->fd = -1;
	if (s->log_fd != -1) {
		close(s->log_fd);
		s->log_fd = -1;
	}
	free(s);
}
