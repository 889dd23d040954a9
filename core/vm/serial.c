/*
 * The guest's serial console: drained in chunks whenever it is readable,
 * never read by lines, so a guest that floods it or never ends a line
 * cannot stall qsup. The bytes go to console.log in the run directory (up
 * to a cap) and a ring of the last SERIAL_TAIL bytes is kept for error
 * messages; with --console they are also shown live on stderr. Lines that
 * say why a guest died (a panic, the OOM killer, a halt) are also kept on
 * their own, the first few and the last few of the whole run, so that a
 * panic that scrolled out of the ring still gets shown.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"

#define SERIAL_TAIL	16384
#define SERIAL_LOG_MAX	(64 * 1024 * 1024)
#define SERIAL_READ	65536
#define SERIAL_LIVE_MAX	(1024 * 1024)
#define SERIAL_MARK_LEN	200	/* of an important line, kept */
#define SERIAL_MARK_FIRST 4	/* the first important lines, kept for good */
#define SERIAL_MARK_LAST 4	/* and a ring of the last ones */

/* What makes a console line important (the kernel's own wording). */
static const char *serial_marks[] = {
	"Kernel panic",
	"Out of memory",
	"invoked oom-killer",
	"BUG:",
	"Oops",
	"general protection fault",
	"self-detected stall",
	"reboot: ",
	NULL
};

struct serial {
	struct ev_loop	*loop;
	int		 fd;
	ev_io		 rd;
	int		 log_fd;
	size_t		 logged;
	int		 copy_fd;	/* console_log's, or -1 */
	size_t		 copied;
	char		 ring[SERIAL_TAIL];
	size_t		 ring_pos;	/* next byte to write */
	size_t		 ring_len;
	struct outq	*live;
	int		 closed;
	void		(*close_cb)(void *);
	void		*close_arg;
	void		(*mark_cb)(void *, const char *);
	void		*mark_arg;
	void		(*line_cb)(void *, const char *);
	void		*line_arg;

	char		 cur[SERIAL_MARK_LEN + 1];	/* the line so far */
	size_t		 cur_len;
	char		 first[SERIAL_MARK_FIRST][SERIAL_MARK_LEN + 1];
	int		 nfirst;
	char		 last[SERIAL_MARK_LAST][SERIAL_MARK_LEN + 1];
	int		 nlast;		/* how many ever went into last */
};

/* A whole console line (its first SERIAL_MARK_LEN bytes): keep it? */
static void
serial_line(struct serial *s)
{
	const char	**m;
	char		 *line;

	s->cur[s->cur_len] = '\0';
	if (s->line_cb != NULL)
		s->line_cb(s->line_arg, s->cur);
	for (m = serial_marks; *m != NULL; m++) {
		if (strstr(s->cur, *m) != NULL)
			break;
	}
	if (*m == NULL)
		return;
	if (s->nfirst < SERIAL_MARK_FIRST)
		line = s->first[s->nfirst++];
	else
		line = s->last[s->nlast++ % SERIAL_MARK_LAST];
	memcpy(line, s->cur, s->cur_len + 1);
	if (s->mark_cb != NULL)
		s->mark_cb(s->mark_arg, line);
}

/* Cut the bytes into lines for serial_line; control bytes become '?'. */
static void
serial_scan(struct serial *s, const char *data, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++) {
		if (data[i] == '\n') {
			serial_line(s);
			s->cur_len = 0;
		} else if (data[i] == '\r')
			continue;
		else if (s->cur_len < SERIAL_MARK_LEN)
			s->cur[s->cur_len++] = (unsigned char)data[i] < 0x20 ||
			    data[i] == 0x7f ? '?' : data[i];
	}
}

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

/* Read what there is, at most rounds times; 0 once drained or closed. */
static int
serial_read(struct serial *s, int rounds)
{
	char		 chunk[SERIAL_READ];
	ssize_t		 n;

	while (rounds-- > 0) {
		n = read(s->fd, chunk, sizeof chunk);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return (0);
			n = 0;
		}
		if (n == 0) {
			ev_io_stop(s->loop, &s->rd);
			s->closed = 1;
			if (s->cur_len > 0)
				serial_line(s);
			s->cur_len = 0;
			if (s->close_cb != NULL)
				s->close_cb(s->close_arg);
			return (0);
		}
		serial_keep(s, chunk, n);
		serial_scan(s, chunk, n);
		if (s->log_fd != -1 && s->logged < SERIAL_LOG_MAX) {
			if (write(s->log_fd, chunk, n) == n)
				s->logged += n;
		}
		if (s->copy_fd != -1 && s->copied < SERIAL_LOG_MAX) {
			if (write(s->copy_fd, chunk, n) == n)
				s->copied += n;
		}
		/* The live view is lossy rather than a brake on the guest. */
		if (s->live != NULL && outq_pending(s->live) < SERIAL_LIVE_MAX)
			outq_write(s->live, chunk, n);
	}
	return (1);
}

static void
serial_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	/* Bounded work per wakeup so other watchers get their turn. */
	serial_read(w->data, 16);
}

/*
 * Read what QEMU left in the console before it exited (it writes no more,
 * so this ends), to say why the guest died. Bounded all the same.
 */
void
serial_drain(struct serial *s)
{
	int	rounds = 64;

	while (!s->closed && rounds-- > 0 && serial_read(s, 1) == 1)
		;
}

/* Take over fd (the host end of the console); log to path if not NULL. */
struct serial *
serial_new(struct ev_loop *loop, int fd, const char *path, int live)
{
	struct serial	*s;

	s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->fd = fd;
	s->log_fd = s->copy_fd = -1;
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

/*
 * Also write the console to path (the profile's console_log), replacing
 * what it held (with first: a run's first QEMU; a later one, restoring
 * the template the first saved, adds to it), under the same cap as the
 * run directory's copy.
 */
int
serial_copy_to(struct serial *s, const char *path, int first, char **cause)
{
	if ((s->copy_fd = open(path, O_WRONLY|O_CREAT|O_CLOEXEC|O_NOFOLLOW|
	    (first ? O_TRUNC : O_APPEND), 0644)) == -1) {
		xasprintf(cause, "console_log: %s: %s", path, strerror(errno));
		return (-1);
	}
	return (0);
}

/* Call cb with every line (its first SERIAL_MARK_LEN bytes) as it ends. */
void
serial_set_line_cb(struct serial *s, void (*cb)(void *, const char *),
    void *arg)
{
	s->line_cb = cb;
	s->line_arg = arg;
}

/* Call cb with each important line as it is seen. */
void
serial_set_mark_cb(struct serial *s, void (*cb)(void *, const char *),
    void *arg)
{
	s->mark_cb = cb;
	s->mark_arg = arg;
}

/* How many lines the ring of the last important ones holds. */
static int
serial_nlast(const struct serial *s)
{
	return (s->nlast < SERIAL_MARK_LAST ? s->nlast : SERIAL_MARK_LAST);
}

/* The i-th newest of them, 1 the newest. */
static const char *
serial_last(const struct serial *s, int i)
{
	return (s->last[(s->nlast - i) % SERIAL_MARK_LAST]);
}

/* The last important line that holds what, or NULL; the caller frees it. */
char *
serial_find(struct serial *s, const char *what)
{
	int	i;

	for (i = 1; i <= serial_nlast(s); i++) {
		if (strstr(serial_last(s, i), what) != NULL)
			return (xstrdup(serial_last(s, i)));
	}
	for (i = s->nfirst - 1; i >= 0; i--) {
		if (strstr(s->first[i], what) != NULL)
			return (xstrdup(s->first[i]));
	}
	return (NULL);
}

int
serial_closed(struct serial *s)
{
	return (s->closed);
}

static void
serial_tail_mark(const char *line, const char *shown, struct buf *out,
    int *marks)
{
	if (*line == '\0' || strstr(shown, line) != NULL)
		return;
	buf_puts(out, line);
	buf_add(out, "\n", 1);
	(*marks)++;
}

/*
 * Append the last lines (at most nlines) of the console to out, after the
 * important lines (serial_marks) that are no longer among them.
 */
void
serial_tail(struct serial *s, int nlines, struct buf *out)
{
	char	*flat, *p;
	size_t	 start, i, len;
	int	 seen = 0, marks = 0, n;

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
	/* The important lines that scrolled out of what is shown, first. */
	flat[len] = '\0';
	for (i = 0; i < (size_t)s->nfirst; i++)
		serial_tail_mark(s->first[i], p, out, &marks);
	for (n = serial_nlast(s); n > 0; n--)
		serial_tail_mark(serial_last(s, n), p, out, &marks);
	if (marks > 0)
		buf_puts(out, "...\n");
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
	if (s->copy_fd != -1)
		close(s->copy_fd);
	free(s);
}
