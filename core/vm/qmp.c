/*
 * A small QMP client. For the moments when QEMU is paused and qsup waits
 * for it anyway (saving a template): blocking, with a deadline on every
 * call; events that arrive while a command is pending are kept for
 * qmp_wait_event. For the others (restoring a template while the loop
 * runs everything else): a script, every command written at once, even
 * before QEMU's greeting (QMP reads them in order once it is up), and the
 * replies read on the loop. Replies are one JSON object per line.
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "vm.h"

#define QMP_LINE_MAX	(1024 * 1024)

/* One line from QEMU, waiting until the deadline. */
static char *
qmp_read_line(struct qmp *q, double deadline, char **cause)
{
	struct pollfd	 pfd;
	char		 chunk[4096], *nl, *line;
	ssize_t		 n;
	double		 left;
	int		 rc;

	for (;;) {
		if (q->in.len > 0 &&
		    (nl = memchr(q->in.data, '\n', q->in.len)) != NULL) {
			line = xstrndup(q->in.data, nl - q->in.data);
			buf_consume(&q->in, nl - q->in.data + 1);
			return (line);
		}
		if (q->in.len > QMP_LINE_MAX) {
			xasprintf(cause, "QMP: reply too long");
			return (NULL);
		}
		if ((left = deadline - util_now()) <= 0) {
			xasprintf(cause, "QMP: no reply in time");
			return (NULL);
		}
		if (util_stop_now) {
			xasprintf(cause, "QMP: interrupted");
			return (NULL);
		}
		pfd.fd = q->fd;
		pfd.events = POLLIN;
		/*
		 * A signal or the deadline: look again before reading. In
		 * short steps, for a signal that lands just before poll().
		 */
		if ((rc = poll(&pfd, 1, left > 0.1 ? 100 :
		    (int)(left * 1000) + 1)) == -1 &&
		    errno != EINTR) {
			xasprintf(cause, "QMP: poll: %s", strerror(errno));
			return (NULL);
		}
		if (rc <= 0)
			continue;
		n = read(q->fd, chunk, sizeof chunk);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0) {
			xasprintf(cause, "QMP: QEMU closed the connection");
			return (NULL);
		}
		buf_add(&q->in, chunk, n);
	}
}

static int
qmp_send(struct qmp *q, const char *json, int passfd, char **cause)
{
	struct msghdr	 msg;
	struct cmsghdr	*cmsg;
	struct iovec	 iov;
	union {
		char		buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	} u;
	size_t		 off = 0, len = strlen(json);
	ssize_t		 n;

	while (off < len) {
		if (util_stop_now) {
			xasprintf(cause, "QMP: interrupted");
			return (-1);
		}
		memset(&msg, 0, sizeof msg);
		iov.iov_base = (char *)(uintptr_t)(json + off);
		iov.iov_len = len - off;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		/* The descriptor rides along with the first byte. */
		if (passfd != -1 && off == 0) {
			memset(&u, 0, sizeof u);
			msg.msg_control = u.buf;
			msg.msg_controllen = sizeof u.buf;
			cmsg = CMSG_FIRSTHDR(&msg);
			cmsg->cmsg_level = SOL_SOCKET;
			cmsg->cmsg_type = SCM_RIGHTS;
			cmsg->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cmsg), &passfd, sizeof passfd);
		}
		n = sendmsg(q->fd, &msg, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			struct pollfd pfd = { q->fd, POLLOUT, 0 };

			poll(&pfd, 1, 1000);
			continue;
		}
		if (n <= 0) {
			xasprintf(cause, "QMP: send: %s", strerror(errno));
			return (-1);
		}
		off += n;
	}
	return (0);
}

/* Send one command; 0 with its "return" line in *reply, or -1. */
int
qmp_command(struct qmp *q, const char *json, int passfd, double timeout,
    char **reply, char **cause)
{
	double		 deadline = util_now() + timeout;
	const char	*desc;
	char		*line;
	json_t		*j;

	if (reply != NULL)
		*reply = NULL;
	if (qmp_send(q, json, passfd, cause) == -1)
		return (-1);
	for (;;) {
		if ((line = qmp_read_line(q, deadline, cause)) == NULL)
			return (-1);
		j = json_read(line, strlen(line), 0);
		if (json_path(j, "event") != NULL) {
			buf_add(&q->events, line, strlen(line));
			buf_add(&q->events, "\n", 1);
		} else if (json_path(j, "error") != NULL) {
			desc = json_path_str(j, "error.desc");
			xasprintf(cause, "QMP %s: %s", json, desc != NULL ?
			    desc : line);
			json_decref(j);
			free(line);
			return (-1);
		} else if (json_path(j, "return") != NULL) {
			json_decref(j);
			if (reply != NULL)
				*reply = line;
			else
				free(line);
			return (0);
		}
		json_decref(j);
		free(line);
	}
}

/* Wait for EVENT with status STATUS; FAIL_STATUS ends the wait with -1. */
int
qmp_wait_event(struct qmp *q, const char *event, const char *status,
    const char *fail_status, double timeout, char **cause)
{
	double		 deadline = util_now() + timeout;
	const char	*ev, *st;
	char		*line, *nl;
	json_t		*j;
	int		 rc = 1;

	for (;;) {
		if (q->events.len > 0) {
			nl = memchr(q->events.data, '\n', q->events.len);
			line = xstrndup(q->events.data, nl - q->events.data);
			buf_consume(&q->events, nl - q->events.data + 1);
		} else if ((line = qmp_read_line(q, deadline, cause)) == NULL)
			return (-1);
		j = json_read(line, strlen(line), 0);
		ev = json_path_str(j, "event");
		st = json_path_str(j, "data.status");
		if (ev != NULL && strcmp(ev, event) == 0 && st != NULL) {
			if (strcmp(st, status) == 0)
				rc = 0;
			else if (fail_status != NULL &&
			    strcmp(st, fail_status) == 0) {
				xasprintf(cause, "QMP: %s %s", event, st);
				rc = -1;
			}
		}
		json_decref(j);
		free(line);
		if (rc != 1)
			return (rc);
	}
}

/* Read the greeting and leave capabilities negotiation mode. */
int
qmp_open(struct qmp *q, int fd, double timeout, char **cause)
{
	char	*greeting;

	memset(q, 0, sizeof *q);
	q->fd = fd;
	if ((greeting = qmp_read_line(q, util_now() + timeout, cause)) ==
	    NULL)
		return (-1);
	free(greeting);
	return (qmp_command(q, "{\"execute\":\"qmp_capabilities\"}\n", -1,
	    timeout, NULL, cause));
}

void
qmp_close(struct qmp *q)
{
	buf_free(&q->in);
	buf_free(&q->events);
}

struct qmp_script {
	struct ev_loop	*loop;
	int		 fd;
	ev_io		 io;
	struct buf	 in;
	size_t		 want;		/* "return"s still awaited */
	int		 told;
	qmp_script_cb	 cb;
	void		*arg;
};

static void
qmp_script_tell(struct qmp_script *s, const char *error)
{
	if (s->told)
		return;
	s->told = 1;
	s->cb(error, s->arg);
}

/*
 * One line: the greeting and events are passed over, a "return" counts,
 * an "error" ends the script. Once told, lines are read and dropped, so
 * that QEMU never waits on a full socket for us.
 */
static void
qmp_script_line(struct qmp_script *s, const char *line, size_t len)
{
	const char	*desc;
	char		*msg;
	json_t		*j;

	if (s->told)
		return;
	if ((j = json_read(line, len, 0)) == NULL) {
		qmp_script_tell(s, "QMP: a reply that is not JSON");
		return;
	}
	if (json_path(j, "error") != NULL) {
		desc = json_path_str(j, "error.desc");
		xasprintf(&msg, "QMP: %s", desc != NULL ? desc : "an error");
		qmp_script_tell(s, msg);
		free(msg);
	} else if (json_path(j, "return") != NULL && --s->want == 0)
		qmp_script_tell(s, NULL);
	json_decref(j);
}

static void
qmp_script_cb_io(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qmp_script	*s = w->data;
	char			 chunk[4096], *nl;
	size_t			 used;
	ssize_t			 n;

	(void)revents;
	n = read(s->fd, chunk, sizeof chunk);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		/* QEMU is gone: its reaping says why. */
		ev_io_stop(loop, w);
		return;
	}
	buf_add(&s->in, chunk, n);
	while (s->in.len > 0 &&
	    (nl = memchr(s->in.data, '\n', s->in.len)) != NULL) {
		used = nl - s->in.data + 1;
		qmp_script_line(s, s->in.data, used - 1);
		buf_consume(&s->in, used);
	}
	if (s->in.len > QMP_LINE_MAX) {
		qmp_script_tell(s, "QMP: reply too long");
		buf_consume(&s->in, s->in.len);
	}
}

/*
 * Send qmp_capabilities and then each of cmds (JSON objects, without the
 * newline) on fd, QEMU's monitor; cb is told, once, from the loop: NULL
 * when every command returned, else the first error. NULL (and *cause)
 * when the script cannot be written at all.
 */
struct qmp_script *
qmp_script_new(struct ev_loop *loop, int fd, const char *const *cmds,
    size_t n, qmp_script_cb cb, void *arg, char **cause)
{
	struct qmp_script	*s;
	struct buf		 out = { 0 };
	size_t			 i;
	ssize_t			 w;

	buf_puts(&out, "{\"execute\":\"qmp_capabilities\"}\n");
	for (i = 0; i < n; i++)
		buf_printf(&out, "%s\n", cmds[i]);
	/* A few hundred bytes into an empty socket: all at once, or never. */
	w = send(fd, out.data, out.len, MSG_NOSIGNAL|MSG_DONTWAIT);
	if (w != (ssize_t)out.len) {
		xasprintf(cause, "QMP: send: %s", w == -1 ? strerror(errno) :
		    "short write");
		buf_free(&out);
		return (NULL);
	}
	buf_free(&out);
	s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->fd = fd;
	s->want = n + 1;
	s->cb = cb;
	s->arg = arg;
	util_set_nonblock(fd);
	ev_io_init(&s->io, qmp_script_cb_io, fd, EV_READ);
	s->io.data = s;
	ev_io_start(loop, &s->io);
	return (s);
}

/* Stop reading; the descriptor stays its owner's. */
void
qmp_script_free(struct qmp_script *s)
{
	if (s == NULL)
		return;
	ev_io_stop(s->loop, &s->io);
	buf_free(&s->in);
	free(s);
}
