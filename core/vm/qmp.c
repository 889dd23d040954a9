/*
 * A small QMP client. For the moments when QEMU is paused and qsup waits
 * for it anyway (saving a template): blocking, with a deadline on every
 * call; events that arrive while a command is pending are kept for
 * qmp_wait_event. For the others (restoring a template while the loop
 * runs everything else): a script, every command written at once, even
 * before QEMU's greeting (QMP reads them in order once it is up), and the
 * replies read on the loop. For a running sandbox's monitor (pause,
 * resume): a client on the loop, commands answered by their id. Replies
 * are one JSON object per line.
 */
#include <sys/queue.h>
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
/* A monitor command on the loop unanswered this long: QEMU is stuck. */
#define QMP_CONN_TIMEOUT	10.0

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

/*
 * A running QEMU's monitor, on the loop: commands one at a time, each
 * answered by its "id" (a line without ours, an event or what an earlier
 * client of the monitor left unread, is passed over). The monitor may or
 * may not have left negotiation mode (a restore's script, a save did; a
 * cold boot did not): qmp_capabilities goes first and its answer, a
 * return or "already complete", is not waited for.
 */
struct qmp_cmd {
	unsigned		 id;
	char			*name;
	double			 deadline;
	qmp_script_cb		 cb;
	qmp_conn_ret_cb		 rcb;	/* or this, told the return too */
	void			*arg;
	int			 told_on_free;	/* its owner outlives the conn */
	TAILQ_ENTRY(qmp_cmd)	 entry;
};
TAILQ_HEAD(qmp_cmds, qmp_cmd);

struct qmp_conn {
	struct ev_loop	*loop;
	int		 fd;
	ev_io		 io;
	struct buf	 in;
	unsigned	 next_id;
	struct qmp_cmds	 cmds;		/* sent, unanswered, in order */
	ev_timer	 timer;		/* the earliest one's deadline */
	double		 timeout;	/* for each command */
};

/* The timer set for the earliest deadline of the commands unanswered. */
static void
qmp_conn_arm(struct qmp_conn *c)
{
	struct qmp_cmd	*cmd;
	double		 first = 0;

	ev_timer_stop(c->loop, &c->timer);
	TAILQ_FOREACH(cmd, &c->cmds, entry) {
		if (first == 0 || cmd->deadline < first)
			first = cmd->deadline;
	}
	if (first == 0)
		return;
	ev_timer_set(&c->timer, first > util_now() ? first - util_now() :
	    0.001, 0);
	ev_timer_start(c->loop, &c->timer);
}

/* Tell the first command's owner, and forget it. */
static void
qmp_conn_tell(struct qmp_conn *c, struct qmp_cmd *cmd, const char *error,
    json_t *ret)
{
	TAILQ_REMOVE(&c->cmds, cmd, entry);
	qmp_conn_arm(c);
	if (cmd->rcb != NULL)
		cmd->rcb(error, ret, cmd->arg);
	else if (cmd->cb != NULL)
		cmd->cb(error, cmd->arg);
	free(cmd->name);
	free(cmd);
}

/* Every unanswered command fails with why (QEMU went, or broke QMP). */
static void
qmp_conn_fail_all(struct qmp_conn *c, const char *why)
{
	struct qmp_cmd	*cmd;

	ev_io_stop(c->loop, &c->io);
	while ((cmd = TAILQ_FIRST(&c->cmds)) != NULL)
		qmp_conn_tell(c, cmd, why, NULL);
	ev_timer_stop(c->loop, &c->timer);
}

/*
 * A command past its deadline: QEMU's monitor is stuck (or QEMU is), and
 * a monitor answers in order, so nothing behind it will come either.
 */
static void
qmp_conn_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct qmp_conn	*c = w->data;
	struct qmp_cmd	*cmd;
	char		*why;

	(void)loop;
	(void)revents;
	TAILQ_FOREACH(cmd, &c->cmds, entry) {
		if (cmd->deadline <= util_now() + 0.001)
			break;
	}
	if (cmd == NULL) {
		qmp_conn_arm(c);
		return;
	}
	xasprintf(&why, "QMP: no answer to %s within %g s", cmd->name,
	    c->timeout);
	qmp_conn_fail_all(c, why);
	free(why);
}

static void
qmp_conn_line(struct qmp_conn *c, const char *line, size_t len)
{
	struct qmp_cmd	*cmd;
	const char	*desc;
	json_int_t	 id;
	json_t		*j;
	char		*msg;

	if ((j = json_read(line, len, 0)) == NULL)
		return;
	if (!json_is_integer(json_object_get(j, "id"))) {
		json_decref(j);
		return;
	}
	id = json_integer_value(json_object_get(j, "id"));
	TAILQ_FOREACH(cmd, &c->cmds, entry) {
		if (cmd->id == id)
			break;
	}
	if (cmd != NULL && json_path(j, "error") != NULL) {
		desc = json_path_str(j, "error.desc");
		xasprintf(&msg, "QMP: %s", desc != NULL ? desc : "an error");
		qmp_conn_tell(c, cmd, msg, NULL);
		free(msg);
	} else if (cmd != NULL)
		qmp_conn_tell(c, cmd, NULL, json_object_get(j, "return"));
	json_decref(j);
}

static void
qmp_conn_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qmp_conn	*c = w->data;
	char		 chunk[4096], *nl;
	size_t		 used;
	ssize_t		 n;

	(void)loop;
	(void)revents;
	n = read(c->fd, chunk, sizeof chunk);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		qmp_conn_fail_all(c, "QMP: QEMU closed its monitor");
		return;
	}
	buf_add(&c->in, chunk, n);
	while (c->in.len > 0 &&
	    (nl = memchr(c->in.data, '\n', c->in.len)) != NULL) {
		used = nl - c->in.data + 1;
		qmp_conn_line(c, c->in.data, used - 1);
		buf_consume(&c->in, used);
	}
	if (c->in.len > QMP_LINE_MAX) {
		qmp_conn_fail_all(c, "QMP: reply too long");
		buf_consume(&c->in, c->in.len);
	}
}

/* The monitor on fd (still its owner's), read from now on. */
struct qmp_conn *
qmp_conn_new(struct ev_loop *loop, int fd)
{
	struct qmp_conn	*c;

	c = xcalloc(1, sizeof *c);
	c->loop = loop;
	c->fd = fd;
	TAILQ_INIT(&c->cmds);
	util_set_nonblock(fd);
	ev_io_init(&c->io, qmp_conn_io_cb, fd, EV_READ);
	c->io.data = c;
	ev_io_start(loop, &c->io);
	ev_timer_init(&c->timer, qmp_conn_timer_cb, 0, 0);
	c->timer.data = c;
	c->timeout = QMP_CONN_TIMEOUT;
	(void)qmp_conn_command(c, "qmp_capabilities", NULL, NULL, NULL);
	return (c);
}

/*
 * One line to the monitor, all at once (a monitor that reads takes it, or
 * it is stuck), with fd riding along unless it is -1.
 */
static int
qmp_conn_send(struct qmp_conn *c, const char *line, int fd, char **cause)
{
	struct msghdr	 msg;
	struct cmsghdr	*cmsg;
	struct iovec	 iov;
	union {
		char		buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	} u;
	ssize_t		 w;

	memset(&msg, 0, sizeof msg);
	iov.iov_base = (char *)(uintptr_t)line;
	iov.iov_len = strlen(line);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd != -1) {
		memset(&u, 0, sizeof u);
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof u.buf;
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cmsg), &fd, sizeof fd);
	}
	w = sendmsg(c->fd, &msg, MSG_NOSIGNAL|MSG_DONTWAIT);
	if (w == (ssize_t)iov.iov_len)
		return (0);
	if (cause != NULL)
		xasprintf(cause, "QMP: send: %s", w == -1 ? strerror(errno) :
		    "short write");
	return (-1);
}

/*
 * QMP command name with args (a JSON object's text, or NULL) and fd
 * passed with it (or -1): rcb is told from the loop, with NULL and the
 * command's "return" (borrowed: valid during the call) once it returned,
 * else why not. -1 with *cause when it cannot be sent.
 */
int
qmp_conn_call(struct qmp_conn *c, const char *name, const char *args,
    int fd, qmp_conn_ret_cb rcb, void *arg, char **cause)
{
	struct qmp_cmd	*cmd;
	char		*line;

	if (!ev_is_active(&c->io)) {
		if (cause != NULL)
			xasprintf(cause, "QMP: QEMU closed its monitor");
		return (-1);
	}
	cmd = xcalloc(1, sizeof *cmd);
	cmd->id = ++c->next_id;
	cmd->name = xstrdup(name);
	cmd->deadline = util_now() + c->timeout;
	cmd->rcb = rcb;
	cmd->arg = arg;
	xasprintf(&line, "{\"execute\":\"%s\",%s%s%s\"id\":%u}\n", name,
	    args != NULL ? "\"arguments\":" : "", args != NULL ? args : "",
	    args != NULL ? "," : "", cmd->id);
	if (qmp_conn_send(c, line, fd, cause) == -1) {
		free(line);
		free(cmd->name);
		free(cmd);
		return (-1);
	}
	free(line);
	TAILQ_INSERT_TAIL(&c->cmds, cmd, entry);
	qmp_conn_arm(c);
	return (0);
}

/*
 * qmp_conn_call for an owner that outlives the connection (an HTTP
 * request waiting on it): also told, with an error, if the connection is
 * freed before the command returned, as when its QEMU is reaped first.
 */
int
qmp_conn_call_told(struct qmp_conn *c, const char *name, const char *args,
    int fd, qmp_conn_ret_cb rcb, void *arg, char **cause)
{
	if (qmp_conn_call(c, name, args, fd, rcb, arg, cause) == -1)
		return (-1);
	TAILQ_LAST(&c->cmds, qmp_cmds)->told_on_free = 1;
	return (0);
}

/*
 * QMP command name, without arguments: cb is told from the loop, NULL
 * once it returned, else why not. -1 with *cause when it cannot be sent.
 */
int
qmp_conn_command(struct qmp_conn *c, const char *name, qmp_script_cb cb,
    void *arg, char **cause)
{
	struct qmp_cmd	*cmd;

	if (qmp_conn_call(c, name, NULL, -1, NULL, NULL, cause) == -1)
		return (-1);
	cmd = TAILQ_LAST(&c->cmds, qmp_cmds);
	cmd->cb = cb;
	cmd->arg = arg;
	return (0);
}

/* Commands sent from now on fail unanswered after seconds. */
void
qmp_conn_set_timeout(struct qmp_conn *c, double seconds)
{
	c->timeout = seconds;
}

/* Stop reading; unanswered commands are told nothing. */
void
qmp_conn_free(struct qmp_conn *c)
{
	struct qmp_cmd	*cmd;

	if (c == NULL)
		return;
	ev_io_stop(c->loop, &c->io);
	ev_timer_stop(c->loop, &c->timer);
	while ((cmd = TAILQ_FIRST(&c->cmds)) != NULL) {
		TAILQ_REMOVE(&c->cmds, cmd, entry);
		if (cmd->told_on_free && cmd->rcb != NULL)
			cmd->rcb("QMP: QEMU closed its monitor", NULL,
			    cmd->arg);
		free(cmd->name);
		free(cmd);
	}
	buf_free(&c->in);
	free(c);
}
