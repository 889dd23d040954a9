/*
 * WebSockets of qsup serve (core/httpd/httpd_ws.c underneath):
 *
 * GET /v1/sandboxes/{name}/exec/ws: a command, or a terminal, over one
 * WebSocket, on the same exec object as POST .../exec. The client's first
 * message is a text one holding that route's JSON body; then text
 * {"type":"started","id":N}, binary messages whose first byte is the
 * stream (1 stdout, 2 stderr), and text {"type":"exit","code":N,...} (the
 * exec's exit event's fields) before a close with 1000. The client sends
 * binary messages whose first byte is 0 (stdin) and text ones
 * {"type":"resize","rows":R,"cols":C}, {"type":"signal","signal":"INT"}
 * and {"type":"eof"}. Closing the WebSocket kills the command, as a
 * client going away from POST .../exec does.
 *
 * GET /v1/sandboxes/{name}/display: the bytes of QEMU's VNC server (RFB,
 * its unix socket in the sandbox's run directory) both ways as binary
 * messages, for noVNC. Both ways are bounded: the socket is not read
 * while the client is slow, the client's messages not taken while the
 * socket is.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

#define SERVE_WS_STDIN_MAX	(4 * 1024 * 1024)	/* queued for the guest */
#define SERVE_WS_RFB_MAX	(256 * 1024)	/* queued for QEMU's socket */

struct serve_ws_term {
	struct httpd_conn	*conn;		/* NULL once gone */
	struct serve		*srv;
	char			*name;		/* its sandbox's */
	unsigned long long	 serial;
	struct serve_exec	*e;		/* once made, until done */
	int			 begun;		/* the first message came */
	int			 hooked;	/* its exec made: the hook frees t */
};

/*
 * A refusal told, then the close (1008): members are the error's own
 * JSON members (serve_error's fields: "field", or "limit" and "max"), or
 * NULL.
 */
static void
serve_ws_refuse(struct httpd_conn *conn, const char *members, const char *msg)
{
	struct buf	b = { 0 };

	buf_puts(&b, "{\"type\":\"error\",\"error\":");
	buf_json_string(&b, msg);
	if (members != NULL)
		buf_printf(&b, ",%s", members);
	buf_puts(&b, "}");
	(void)httpd_ws_send(conn, 1, b.data, b.len);
	buf_free(&b);
	httpd_ws_close(conn, 1008, "refused");
}

/* A refusal of a message's field (or of the message: field NULL). */
static void
serve_ws_error(struct httpd_conn *conn, const char *field, const char *msg)
{
	struct buf	b = { 0 };

	if (field != NULL) {
		buf_puts(&b, "\"field\":");
		buf_json_string(&b, field);
	}
	serve_ws_refuse(conn, field != NULL ? b.data : NULL, msg);
	buf_free(&b);
}

static void
serve_ws_term_started(struct serve_exec *e, void *arg)
{
	struct serve_ws_term	*t = arg;
	char			 msg[64];

	t->e = e;
	snprintf(msg, sizeof msg, "{\"type\":\"started\",\"id\":%u}", e->id);
	(void)httpd_ws_send(t->conn, 1, msg, strlen(msg));
	httpd_ws_pause(t->conn, 0);
}

/* Output: [stream][bytes]; 1 while the client lags (the guest waits). */
static int
serve_ws_term_output(struct serve_exec *e, enum exec_stream stream,
    const char *data, size_t len, void *arg)
{
	struct serve_ws_term	*t = arg;
	unsigned char		*raw;
	size_t			 n;
	int			 over;

	(void)e;
	if (t->conn == NULL)
		return (0);
	raw = xmalloc(len * 3 / 4 + 4);
	n = util_base64_decode(data, len, raw + 1);
	raw[0] = stream == EXEC_STDERR ? 2 : 1;
	(void)httpd_ws_send(t->conn, 0, raw, n + 1);
	free(raw);
	over = httpd_over(t->conn);
	return (over);
}

static void
serve_ws_term_done(struct serve_exec *e, const struct exec_result *r,
    const char *error, void *arg)
{
	struct serve_ws_term	*t = arg;
	struct buf		 b = { 0 }, x = { 0 };

	(void)e;
	t->e = NULL;
	if (t->conn != NULL) {
		serve_exit_json(r, error, &x);
		buf_printf(&b, "{\"type\":\"exit\",\"code\":%d,",
		    error == NULL && r->signal == 0 ? r->status : -1);
		buf_add(&b, x.data + 1, x.len - 1);	/* its members */
		(void)httpd_ws_send(t->conn, 1, b.data, b.len);
		httpd_ws_close(t->conn, 1000, NULL);
		buf_free(&b);
		buf_free(&x);
	}
	free(t->name);
	free(t);
}

static const struct serve_exec_hook serve_ws_term_hook = {
	serve_ws_term_started, serve_ws_term_output, serve_ws_term_done, 0
};

static void
serve_ws_ignore_cb(int status, const char *body, size_t len, void *arg)
{
	(void)status;
	(void)body;
	(void)len;
	(void)arg;
}

/* A control message: resize, signal, eof. */
static void
serve_ws_term_control(struct serve_ws_term *t, const char *p, size_t len)
{
	json_t		*j, *v;
	const char	*type;
	json_int_t	 rows, cols;
	int		 sig;

	if ((j = json_loadb(p, len, 0, NULL)) == NULL || !json_is_object(j) ||
	    (type = json_string_value(json_object_get(j, "type"))) == NULL) {
		json_decref(j);
		serve_ws_error(t->conn, "type", "a control message is a JSON "
		    "object with a \"type\": resize, signal or eof");
		return;
	}
	if (strcmp(type, "resize") == 0) {
		rows = json_integer_value(json_object_get(j, "rows"));
		cols = json_integer_value(json_object_get(j, "cols"));
		if (rows < 1 || rows > 10000 || cols < 1 || cols > 10000)
			serve_ws_error(t->conn, "rows", "rows and cols: 1-10000");
		else if (exec_resize(t->e->x, (unsigned)rows, (unsigned)cols,
		    serve_ws_ignore_cb, NULL) == -1)
			serve_ws_error(t->conn, "type", "not a terminal: the "
			    "exec has no tty");
	} else if (strcmp(type, "signal") == 0) {
		v = json_object_get(j, "signal");
		sig = json_is_string(v) ? serve_signal_number(
		    json_string_value(v)) : json_is_integer(v) &&
		    json_integer_value(v) > 0 && json_integer_value(v) <= 64 ?
		    (int)json_integer_value(v) : -1;
		if (sig == -1)
			serve_ws_error(t->conn, "signal", "a signal's name or "
			    "number");
		else
			(void)exec_signal(t->e->x, sig, serve_ws_ignore_cb,
			    NULL);
	} else if (strcmp(type, "eof") == 0)
		exec_stdin_close(t->e->x);
	else
		serve_ws_error(t->conn, "type", "resize, signal or eof");
	json_decref(j);
}

static void
serve_ws_term_message(void *arg, int text, const void *p, size_t len)
{
	struct serve_ws_term	*t = arg;
	struct serve_error	 err = { 0 };
	struct serve_sb		*s;

	if (!t->begun) {
		t->begun = 1;
		s = serve_find(t->srv, t->name);
		if (!text)
			serve_ws_error(t->conn, NULL, "the first message is "
			    "the exec's JSON body, as text");
		else if (s == NULL || s->serial != t->serial)
			serve_ws_error(t->conn, NULL, "the sandbox is gone");
		else if (serve_exec_json(s, t->conn, p, len,
		    &serve_ws_term_hook, t, &err) == -1) {
			serve_ws_refuse(t->conn, err.fields, err.msg != NULL ?
			    err.msg : "refused");
		} else {
			/* What the client sends next waits for the start. */
			t->hooked = 1;
			if (t->e == NULL)
				httpd_ws_pause(t->conn, 1);
			return;		/* t is the hook's now */
		}
		free(err.msg);
		free(err.fields);
		free(err.allow);
		free(t->name);		/* refused: its close tells no one */
		free(t);
		return;
	}
	if (t->e == NULL)
		return;		/* not started yet, or over */
	if (text)
		serve_ws_term_control(t, p, len);
	else if (len == 0 || ((const unsigned char *)p)[0] != 0)
		serve_ws_error(t->conn, NULL, "a binary message is 0 (stdin) "
		    "and the bytes");
	else if (exec_stdin_queued(t->e->x) + len > SERVE_WS_STDIN_MAX)
		serve_ws_error(t->conn, NULL, "the command does not take its "
		    "stdin fast enough");
	else if (len > 1)
		(void)exec_stdin_write(t->e->x, (const char *)p + 1, len - 1);
}

/* The WebSocket went: the command with it (or before it began, t). */
static void
serve_ws_term_closed(void *arg, int code)
{
	struct serve_ws_term	*t = arg;

	(void)code;
	t->conn = NULL;
	if (t->hooked)
		return;		/* the connection's close kills its exec,
				   whose end frees t (serve_ws_term_done) */
	free(t->name);
	free(t);
}

static const struct httpd_ws_cbs serve_ws_term_cbs = {
	serve_ws_term_message, serve_ws_term_closed
};

/* GET /v1/sandboxes/{name}/exec/ws */
int
serve_exec_ws(const struct serve_req *r, struct serve_error *err)
{
	struct serve_ws_term	*t;

	if (r->sb->state != SERVE_READY)
		return (serve_fail(err, 409, NULL, "sandbox %s is %s",
		    r->sb->name, serve_state_name(r->sb->state)));
	if (r->sb->attach != NULL)
		return (serve_fail(err, 409, NULL, "sandbox %s is attached: "
		    "this needs qsup's agent", r->sb->name));
	t = xcalloc(1, sizeof *t);
	t->conn = r->conn;
	t->srv = r->srv;
	t->name = xstrdup(r->sb->name);
	t->serial = r->sb->serial;
	if (httpd_ws_accept(r->conn, &serve_ws_term_cbs, t) == -1) {
		free(t->name);
		free(t);
	}
	return (0);
}

/* A display's relay: the client's WebSocket and QEMU's VNC socket. */
struct serve_ws_rfb {
	struct serve		*srv;
	struct httpd_conn	*conn;
	int			 fd;
	ev_io			 rd;
	ev_io			 wr;
	struct buf		 out;		/* for the socket */
	int			 client_paused;
};

static void
serve_ws_rfb_free(struct serve_ws_rfb *v)
{
	ev_io_stop(v->srv->loop, &v->rd);
	ev_io_stop(v->srv->loop, &v->wr);
	if (v->fd != -1)
		close(v->fd);
	buf_free(&v->out);
	free(v);
}

/* The socket ended, or failed: the WebSocket closes, v with it. */
static void
serve_ws_rfb_end(struct serve_ws_rfb *v, int code, const char *why)
{
	struct httpd_conn	*c = v->conn;

	v->conn = NULL;
	httpd_set_drain_cb(c, NULL, NULL);
	httpd_set_close_cb(c, NULL, NULL);
	httpd_ws_close(c, code, why);
	serve_ws_rfb_free(v);
}

static void
serve_ws_rfb_rd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct serve_ws_rfb	*v = w->data;
	char			 b[65536];
	ssize_t			 n;

	(void)loop;
	(void)revents;
	n = read(v->fd, b, sizeof b);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		serve_ws_rfb_end(v, n == 0 ? 1000 : 1011, n == 0 ?
		    "the display closed" : "the display failed");
		return;
	}
	(void)httpd_ws_send(v->conn, 0, b, (size_t)n);
	if (httpd_over(v->conn))
		ev_io_stop(v->srv->loop, &v->rd);	/* till it drains */
}

static void
serve_ws_rfb_wr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct serve_ws_rfb	*v = w->data;
	ssize_t			 n;

	(void)loop;
	(void)revents;
	n = write(v->fd, v->out.data, v->out.len);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		serve_ws_rfb_end(v, 1011, "the display failed");
		return;
	}
	buf_consume(&v->out, (size_t)n);
	if (v->out.len == 0)
		ev_io_stop(v->srv->loop, &v->wr);
	if (v->client_paused && v->out.len < SERVE_WS_RFB_MAX / 2) {
		v->client_paused = 0;
		httpd_ws_pause(v->conn, 0);
	}
}

static void
serve_ws_rfb_drain_cb(void *arg)
{
	struct serve_ws_rfb	*v = arg;

	ev_io_start(v->srv->loop, &v->rd);
}

static void
serve_ws_rfb_message(void *arg, int text, const void *p, size_t len)
{
	struct serve_ws_rfb	*v = arg;

	(void)text;
	buf_add(&v->out, p, len);
	ev_io_start(v->srv->loop, &v->wr);
	if (v->out.len >= SERVE_WS_RFB_MAX && !v->client_paused) {
		v->client_paused = 1;
		httpd_ws_pause(v->conn, 1);
	}
}

static void
serve_ws_rfb_closed(void *arg, int code)
{
	struct serve_ws_rfb	*v = arg;

	(void)code;
	if (v->conn != NULL) {
		httpd_set_close_cb(v->conn, NULL, NULL);
		httpd_set_drain_cb(v->conn, NULL, NULL);
		v->conn = NULL;
	}
	serve_ws_rfb_free(v);
}

static const struct httpd_ws_cbs serve_ws_rfb_cbs = {
	serve_ws_rfb_message, serve_ws_rfb_closed
};

static void
serve_ws_rfb_gone_cb(void *arg)
{
	serve_ws_rfb_closed(arg, 1006);
}

/* GET /v1/sandboxes/{name}/display */
int
serve_display_ws(const struct serve_req *r, struct serve_error *err)
{
	struct serve_ws_rfb	*v;
	struct sockaddr_un	 sun;
	char			*path;
	int			 fd;

	if (r->sb->state != SERVE_READY && r->sb->state != SERVE_PAUSED)
		return (serve_fail(err, 409, NULL, "sandbox %s is %s",
		    r->sb->name, serve_state_name(r->sb->state)));
	if (r->sb->sb == NULL ||
	    (path = sandbox_display_socket(r->sb->sb)) == NULL)
		return (serve_fail(err, 409, NULL, "sandbox %s has no display "
		    "(its profile's display is \"none\")", r->sb->name));
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		free(path);
		return (serve_fail(err, 500, NULL, "the display's socket path "
		    "is too long"));
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	free(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    util_set_nonblock(fd) == -1) {
		if (fd != -1)
			close(fd);
		return (serve_fail(err, 409, NULL, "sandbox %s: its display "
		    "cannot be reached: %s", r->sb->name, strerror(errno)));
	}
	v = xcalloc(1, sizeof *v);
	v->srv = r->srv;
	v->conn = r->conn;
	v->fd = fd;
	ev_io_init(&v->rd, serve_ws_rfb_rd_cb, fd, EV_READ);
	ev_io_init(&v->wr, serve_ws_rfb_wr_cb, fd, EV_WRITE);
	v->rd.data = v->wr.data = v;
	if (httpd_ws_accept(r->conn, &serve_ws_rfb_cbs, v) == -1) {
		serve_ws_rfb_free(v);
		return (0);
	}
	/* Its end, however it comes, frees v (and never twice). */
	httpd_set_close_cb(r->conn, serve_ws_rfb_gone_cb, v);
	httpd_set_drain_cb(r->conn, serve_ws_rfb_drain_cb, v);
	ev_io_start(v->srv->loop, &v->rd);
	return (0);
}
