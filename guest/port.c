/*
 * One persistent HTTP/1.1 connection per agent port (wire.h). A port
 * is a state machine fed by the poll loop: it reads a head, then a body,
 * answers, and only then looks at the next pipelined request, so answers
 * leave in request order. An exec stream holds its port until the exit
 * event. Input and output are bounded: a port stops reading while its
 * output backs up, and exec pipes stop being read (exec.c) while the
 * port's output is above AGENT_OUT_HIGH.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent.h"

enum port_state {
	PORT_HEAD,		/* waiting for a request head */
	PORT_BODY,		/* reading, or dropping, a request body */
	PORT_SKIP,		/* dropping an oversized head up to its end */
	PORT_EXEC,		/* streaming an exec's events */
	PORT_STDIN		/* waiting for a stdin write to complete */
};

struct port {
	struct agent		*agent;
	int			 fd;
	char			*name;
	enum port_state		 state;
	int			 down;	/* host gone: not polled */
	int			 dead;	/* closed; port_sweep frees */

	struct abuf		 in;
	struct abuf		 out;
	struct abuf		 body;
	struct wire_head	 req;
	int			 discard; /* drop body: answered */
	long long		 left;	/* Content-Length to come */
	struct wire_chunked	 chunked;

	struct port		*next;
};

static char		 port_chunk[64 * 1024];

static void	port_advance(struct port *);
static void	port_event(void *, const char *, const void *, size_t, int);
static void	port_exec_done(void *);
static void	port_stdin_done(void *, int, const char *);
static size_t	port_pending(const void *);

/* How exec.c, below this file, reports to the port it streams to. */
static const struct exec_cb port_exec_cb = {
	port_event,
	port_exec_done,
	port_stdin_done,
	port_pending
};

void
port_add(struct agent *a, int fd, const char *name)
{
	struct port	*p, **pp;

	p = xcalloc(1, sizeof *p);
	p->agent = a;
	p->fd = fd;
	p->name = xstrdup(name);
	p->state = PORT_HEAD;
	for (pp = &a->ports; *pp != NULL; pp = &(*pp)->next)
		;
	*pp = p;
}

int
port_has(struct agent *a, const char *name)
{
	struct port	*p;

	for (p = a->ports; p != NULL; p = p->next) {
		if (strcmp(p->name, name) == 0)
			return (1);
	}
	return (0);
}

int
port_count(struct agent *a)
{
	struct port	*p;
	int		 n = 0;

	for (p = a->ports; p != NULL; p = p->next)
		n++;
	return (n);
}

static size_t
port_pending(const void *arg)
{
	const struct port	*p = arg;

	return (abuf_used(&p->out));
}

static void
port_respond(struct port *p, int status, const char *body)
{
	abuf_printf(&p->out, "HTTP/1.1 %d %s\r\n", status, wire_reason(status));
	if (status == 401)
		abuf_printf(&p->out, "WWW-Authenticate: Bearer\r\n");
	if (status == 204 || body == NULL) {
		abuf_printf(&p->out, "%s\r\n", status == 204 ? "" :
		    "Content-Length: 0\r\n");
		return;
	}
	abuf_printf(&p->out, "Content-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n%s", strlen(body), body);
}

static void
port_error(struct port *p, int status, const char *msg)
{
	struct abuf	b = { 0 };

	abuf_add(&b, "{\"error\":", 9);
	wire_json_string(abuf_put, &b, msg);
	abuf_add(&b, "}", 1);
	port_respond(p, status, b.data);
	abuf_free(&b);
}

/* One Server-Sent Event in its own HTTP chunk. */
static void
port_event(void *arg, const char *name, const void *data, size_t len,
    int base64)
{
	struct port	*p = arg;
	size_t		 dlen = base64 ? (len + 2) / 3 * 4 : len;

	wire_chunk_start(abuf_put, &p->out, wire_sse_size(name, dlen));
	wire_sse_start(abuf_put, &p->out, name);
	if (base64)
		abuf_base64(&p->out, data, len);
	else
		abuf_add(&p->out, data, len);
	wire_sse_end(abuf_put, &p->out);
	wire_chunk_end(abuf_put, &p->out);
}

/* The exec streaming on p has sent its exit event: end the body. */
static void
port_exec_done(void *arg)
{
	struct port	*p = arg;

	wire_chunk_last(abuf_put, &p->out);
	p->state = PORT_HEAD;
}

static void
port_stdin_done(void *arg, int status, const char *msg)
{
	struct port	*p = arg;

	if (status == 204)
		port_respond(p, 204, NULL);
	else
		port_error(p, status, msg);
	p->state = PORT_HEAD;
}

/* The host end went away: drop the connection's state. */
static void
port_gone(struct port *p)
{
	exec_port_gone(p->agent, p);
	abuf_reset(&p->in);
	abuf_reset(&p->out);
	abuf_reset(&p->body);
	p->state = PORT_HEAD;
	if (p->agent->init->pid1 || p->agent->init->service) {
		/* virtio-serial: the host may connect again later. */
		p->down = 1;
		return;
	}
	close(p->fd);
	p->fd = -1;
	p->dead = 1;
}

/*
 * Compare a bearer token with the expected one in time that depends only
 * on the expected token's length, not on where the first difference is.
 */
static int
port_token_equal(const char *want, const char *got)
{
	size_t			wl = strlen(want), gl = strlen(got), i;
	volatile unsigned	diff;

	diff = wl != gl;
	for (i = 0; i < wl; i++)
		diff |= (unsigned char)want[i] ^
		    (unsigned char)(i < gl ? got[i] : 0);
	return (diff == 0);
}

static int
port_auth_ok(struct port *p)
{
	const char	*v = p->req.auth;

	if (!p->req.has_auth || strncasecmp(v, "Bearer ", 7) != 0)
		return (0);
	for (v += 7; *v == ' '; v++)
		;
	return (port_token_equal(p->agent->init->cfg.token, v));
}

/* A head has been parsed: decide whether its body is wanted. */
static void
port_begin_body(struct port *p)
{
	struct init_state	*st = p->agent->init;
	const char		*why;

	abuf_reset(&p->body);
	wire_chunked_init(&p->chunked, 0);
	p->left = p->req.content_length > 0 ? p->req.content_length : 0;
	p->discard = 0;
	p->state = PORT_BODY;
	if (p->req.expect_continue)
		abuf_printf(&p->out, "HTTP/1.1 100 Continue\r\n\r\n");

	if (st->template) {
		/*
		 * Nothing secret yet: port_dispatch serves only /ping,
		 * /setup and /root.
		 */
		if (p->req.content_length > AGENT_BODY_MAX) {
			port_error(p, 413, "request body too large");
			p->discard = 1;
		}
	} else if (st->cfg.token == NULL) {
		/* No seed, so no token to check: nothing is served. */
		why = st->error != NULL ? st->error : "no seed disk";
		port_error(p, 503, why);
		p->discard = 1;
	} else if (!port_auth_ok(p)) {
		port_error(p, 401, "bad or missing bearer token");
		p->discard = 1;
	} else if (p->req.content_length > AGENT_BODY_MAX) {
		port_error(p, 413, "request body too large");
		p->discard = 1;
	}
}

/* Feed buffered input to the body; 1 once the body is complete. */
static int
port_body(struct port *p)
{
	const char	*data, *why;
	size_t		 n = abuf_used(&p->in), dlen;
	ssize_t		 used;
	int		 done = 0;

	while (p->req.chunked && !done) {
		used = wire_chunked_feed(&p->chunked, abuf_start(&p->in),
		    abuf_used(&p->in), &data, &dlen, &done, &why);
		if (used == -1) {
			/* Framing is lost; what follows is parsed as heads. */
			if (!p->discard)
				port_error(p, 400, "bad chunked body");
			abuf_reset(&p->in);
			p->state = PORT_HEAD;
			return (0);
		}
		if (used == 0)
			return (0);
		if (dlen > 0 && !p->discard &&
		    abuf_used(&p->body) + dlen > AGENT_BODY_MAX) {
			port_error(p, 413, "request body too large");
			p->discard = 1;
			abuf_reset(&p->body);
		} else if (dlen > 0 && !p->discard)
			abuf_add(&p->body, data, dlen);
		abuf_consume(&p->in, used);
	}
	if (p->req.chunked)
		return (done);
	if ((long long)n > p->left)
		n = p->left;
	if (!p->discard)
		abuf_add(&p->body, abuf_start(&p->in), n);
	abuf_consume(&p->in, n);
	p->left -= n;
	return (p->left == 0);
}

static void
port_ping(struct port *p)
{
	struct init_state	*st = p->agent->init;
	struct abuf		 b = { 0 };

	if (st->error != NULL) {
		port_error(p, 503, st->error);
		return;
	}
	abuf_printf(&b, "{\"version\":%d,\"boot_ms\":%lld,%s\"kernel\":",
	    QSUP_PROTOCOL_VERSION, p->agent->ready_ms,
	    st->template ? "\"template\":true," : "");
	wire_json_string(abuf_put, &b, st->kernel);
	/* The image mounted as the root, and its glibc, for the host to check. */
	if (st->root_device != NULL) {
		abuf_printf(&b, ",\"root\":");
		wire_json_string(abuf_put, &b, st->root_device);
	}
	if (st->root_device != NULL && st->root_glibc != NULL) {
		abuf_printf(&b, ",\"glibc\":");
		wire_json_string(abuf_put, &b, st->root_glibc);
	}
	if (p->agent->setup_us > 0)
		abuf_printf(&b, ",\"setup_us\":%lld", p->agent->setup_us);
	abuf_add(&b, "}", 1);
	port_respond(p, 200, b.data);
	abuf_free(&b);
}

static void
port_exec(struct port *p)
{
	struct json_exec	 x;
	char			*cause = NULL;
	unsigned		 id;
	pid_t			 pid;
	struct abuf		 b = { 0 };

	if (json_parse_exec(abuf_start(&p->body), abuf_used(&p->body), &x,
	    &cause) == -1) {
		port_error(p, 400, cause);
		free(cause);
		return;
	}
	if (exec_start(p->agent, &port_exec_cb, p, &x, &id, &pid,
	    &cause) == -1) {
		port_error(p, 500, cause);
		free(cause);
		json_exec_free(&x);
		return;
	}
	json_exec_free(&x);
	abuf_printf(&p->out, "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/event-stream\r\n"
	    "Cache-Control: no-store\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	abuf_printf(&b, "{\"id\":%u,\"pid\":%ld}", id, (long)pid);
	port_event(p, QSUP_EVENT_START, b.data, b.len, 0);
	abuf_free(&b);
	p->state = PORT_EXEC;
}

/* One decimal 1-10000 of a resize body; s is moved past it. */
static int
port_dim(const char **s, const char *end, unsigned *out)
{
	unsigned	v = 0;
	int		digits = 0;

	for (; *s < end && **s >= '0' && **s <= '9'; (*s)++) {
		if (++digits > 5)
			return (-1);
		v = v * 10 + (**s - '0');
	}
	if (digits == 0 || v < 1 || v > 10000)
		return (-1);
	*out = v;
	return (0);
}

static int
port_blank(int c)
{
	return (c == ' ' || c == '\t' || c == '\r' || c == '\n');
}

/* "ROWS COLS", blanks around and between them allowed: 0, or -1. */
static int
port_resize_body(struct port *p, unsigned *rows, unsigned *cols)
{
	const char	*s, *end;

	if (p->body.data == NULL)
		return (-1);
	s = abuf_start(&p->body);
	end = s + abuf_used(&p->body);
	while (s < end && port_blank(*s))
		s++;
	if (port_dim(&s, end, rows) == -1 || s == end || !port_blank(*s))
		return (-1);
	while (s < end && port_blank(*s))
		s++;
	if (port_dim(&s, end, cols) == -1)
		return (-1);
	while (s < end && port_blank(*s))
		s++;
	return (s == end ? 0 : -1);
}

static void
port_exec_op(struct port *p, struct exec *e, const char *op)
{
	const char	*s, *end, *cause;
	long		 sig = 0;
	unsigned	 rows, cols;
	int		 r;

	if (strcmp(op, WIRE_OP_STDIN) == 0) {
		r = exec_stdin(e, p, &p->body, &cause);
		if (r == -1)
			port_error(p, 409, cause);
		else if (r == 0)
			port_respond(p, 204, NULL);
		else
			p->state = PORT_STDIN;
	} else if (strcmp(op, WIRE_OP_CLOSE) == 0) {
		exec_close_stdin(e);
		port_respond(p, 204, NULL);
	} else if (strcmp(op, WIRE_OP_RESIZE) == 0) {
		if (port_resize_body(p, &rows, &cols) == -1)
			port_error(p, 400, "expected \"ROWS COLS\", each "
			    "1-10000");
		else if (exec_resize(e, rows, cols) == -1)
			port_error(p, 409, "not a terminal: the exec has no tty");
		else
			port_respond(p, 204, NULL);
	} else {
		s = abuf_start(&p->body);
		end = s + abuf_used(&p->body);
		while (s < end && (*s == ' ' || *s == '\t' || *s == '\r' ||
		    *s == '\n'))
			s++;
		while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
		    end[-1] == '\r' || end[-1] == '\n'))
			end--;
		if (s == end || end - s > 3)
			sig = -1;
		for (; sig != -1 && s < end; s++) {
			if (*s < '0' || *s > '9')
				sig = -1;
			else
				sig = sig * 10 + (*s - '0');
		}
		if (sig < 1 || sig > 64 || exec_signal(e, (int)sig) == -1)
			port_error(p, 400, "bad signal number");
		else
			port_respond(p, 204, NULL);
	}
}

/* POST /setup: setup applies the host's configuration (init_setup). */
static void
port_setup(struct port *p)
{
	char		*cause = NULL;
	long long	 t0 = util_us(CLOCK_MONOTONIC);

	if (init_setup(p->agent->init, p->body.data != NULL ?
	    abuf_start(&p->body) : "", abuf_used(&p->body), &cause) == -1) {
		port_error(p, 400, cause);
		free(cause);
		return;
	}
	/* For the host's breakdown of a start (qsup run -v). */
	p->agent->setup_us = util_us(CLOCK_MONOTONIC) - t0;
	port_ping(p);
}

/* POST /root: a template build's root, mounted before the save. */
static void
port_root(struct port *p)
{
	char	*cause = NULL;

	if (root_template(p->agent->init, p->body.data != NULL ?
	    abuf_start(&p->body) : "", abuf_used(&p->body), &cause) == -1) {
		port_error(p, 503, cause);
		free(cause);
		return;
	}
	exec_runner_ready(p->agent, 1);	/* in the new root, before the save */
	port_ping(p);
}

/*
 * POST /refresh: the host's clock, fresh entropy and a fork's new card
 * address ("time", "entropy" and "mac" lines, in the seed's format), set
 * by the agent itself, without a process: after a pause, a restore from a
 * snapshot or a fork, where an exec of date and ip would be the first
 * programs a new QEMU translates (about 120 ms of it under TCG).
 */
static void
port_refresh(struct port *p)
{
	struct agent_config	 cfg;
	char			*cause = NULL;
	int			 status = 0;

	memset(&cfg, 0, sizeof cfg);
	if (config_parse(&cfg, p->body.data != NULL ? abuf_start(&p->body) :
	    "", abuf_used(&p->body), &cause) == -1)
		status = 400;
	else if (cfg.token != NULL || cfg.hostname != NULL ||
	    cfg.nmounts > 0 || cfg.nbinds > 0 || cfg.nenv > 0 ||
	    (!cfg.has_time && cfg.entropy_len == 0)) {
		cause = xstrdup("refresh takes time, entropy and mac only");
		status = 400;
	} else if (!p->agent->init->pid1 && !p->agent->init->service) {
		/* Test mode: checked, applied to nothing (the host's clock). */
	} else if (init_apply_fresh(&cfg) == -1) {
		cause = xstrdup("the clock or the entropy could not be set");
		status = 500;
	} else if (cfg.has_mac && init_set_mac(cfg.mac) == -1) {
		cause = xstrdup("the network card's address could not be set");
		status = 500;
	}
	config_free(&cfg);
	if (status != 0) {
		port_error(p, status, cause);
		free(cause);
		return;
	}
	port_respond(p, 204, NULL);
}

/* A whole authenticated request is in: answer it. */
static void
port_dispatch(struct port *p)
{
	struct init_state	*st = p->agent->init;
	const char		*path = p->req.path, *method = p->req.method;
	const char		*op;
	struct exec		*e;
	unsigned		 id;
	int			 post = strcmp(method, "POST") == 0;

	p->state = PORT_HEAD;
	if (strcmp(path, "/setup") == 0) {
		if (!post)
			port_error(p, 405, "use POST");
		else if (!st->template)
			port_error(p, 409, "already configured");
		else
			port_setup(p);
	} else if (strcmp(path, "/root") == 0) {
		if (!post)
			port_error(p, 405, "use POST");
		else if (!st->template)
			port_error(p, 409, "already configured");
		else
			port_root(p);
	} else if (st->template && strcmp(path, "/ping") != 0)
		port_error(p, 503, "not configured yet (a template)");
	else if (strcmp(path, "/ping") == 0) {
		if (strcmp(method, "GET") != 0)
			port_error(p, 405, "use GET");
		else
			port_ping(p);
	} else if (strcmp(path, "/refresh") == 0) {
		if (!post)
			port_error(p, 405, "use POST");
		else
			port_refresh(p);
	} else if (strcmp(path, "/poweroff") == 0) {
		if (!post)
			port_error(p, 405, "use POST");
		else {
			port_respond(p, 204, NULL);
			p->agent->poweroff = 1;
		}
	} else if (st->error != NULL &&
	    (strcmp(path, WIRE_EXEC) == 0 ||
	    strncmp(path, WIRE_EXEC "/", sizeof WIRE_EXEC) == 0))
		port_error(p, 503, st->error);
	else if (strcmp(path, WIRE_EXEC) == 0) {
		if (!post)
			port_error(p, 405, "use POST");
		else
			port_exec(p);
	} else if (wire_exec_path_parse(path, &id, &op) == 0 &&
	    wire_exec_op(op)) {
		if (!post)
			port_error(p, 405, "use POST");
		else if ((e = exec_find(p->agent, id)) == NULL)
			port_error(p, 404, "no such exec");
		else
			port_exec_op(p, e, op);
	} else
		port_error(p, 404, "not found");
	abuf_reset(&p->body);
}

/* Handle as much buffered input as the port's state allows. */
static void
port_advance(struct port *p)
{
	size_t	n, used;

	while (!p->dead && !p->down) {
		if (abuf_used(&p->out) >= AGENT_OUT_HIGH)
			return;
		used = abuf_used(&p->in);
		switch (p->state) {
		case PORT_HEAD:
			/* Blank lines between requests are allowed. */
			n = 0;
			while (n < used && (abuf_start(&p->in)[n] == '\r' ||
			    abuf_start(&p->in)[n] == '\n'))
				n++;
			abuf_consume(&p->in, n);
			used -= n;
			if (used == 0)
				return;
			n = wire_head_end(abuf_start(&p->in), used);
			if (n == 0 && used <= AGENT_HEAD_MAX)
				return;
			if (n == 0 || n > AGENT_HEAD_MAX) {
				port_error(p, 431, "request head too large");
				if (n == 0)
					p->state = PORT_SKIP;
				else
					abuf_consume(&p->in, n);
				continue;
			}
			if (wire_head_parse(&p->req, WIRE_REQUEST,
			    abuf_start(&p->in), n) == -1) {
				abuf_consume(&p->in, n);
				port_error(p, p->req.error, p->req.cause);
				continue;
			}
			abuf_consume(&p->in, n);
			port_begin_body(p);
			break;
		case PORT_BODY:
			if (!port_body(p))
				return;
			if (p->discard)
				p->state = PORT_HEAD;
			else
				port_dispatch(p);
			break;
		case PORT_SKIP:
			n = wire_head_end(abuf_start(&p->in), used);
			if (n != 0) {
				abuf_consume(&p->in, n);
				p->state = PORT_HEAD;
				break;
			}
			/* Keep what could start the blank line. */
			if (used > 2)
				abuf_consume(&p->in, used - 2);
			return;
		case PORT_EXEC:
		case PORT_STDIN:
			return;
		}
	}
}

static void
port_read(struct port *p, int revents)
{
	size_t	room = AGENT_IN_MAX - abuf_used(&p->in);
	ssize_t	n;

	if (room > sizeof port_chunk)
		room = sizeof port_chunk;
	if (abuf_used(&p->in) >= AGENT_IN_MAX) {
		if (revents & (POLLHUP|POLLERR))
			port_gone(p);
		return;
	}
	n = read(p->fd, port_chunk, room);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		port_gone(p);
		return;
	}
	abuf_add(&p->in, port_chunk, n);
	port_advance(p);
}

static void
port_flush(struct port *p)
{
	size_t	n;
	ssize_t	w;

	while (!p->dead && !p->down && (n = abuf_used(&p->out)) > 0) {
		if (n > sizeof port_chunk)
			n = sizeof port_chunk;
		w = write(p->fd, abuf_start(&p->out), n);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && errno == EAGAIN)
			return;
		if (w <= 0) {
			port_gone(p);
			return;
		}
		abuf_consume(&p->out, w);
	}
}

static int
port_wants_read(const struct port *p)
{
	if (p->state == PORT_EXEC || p->state == PORT_STDIN)
		return (0);
	return (abuf_used(&p->in) < AGENT_IN_MAX &&
	    abuf_used(&p->out) < AGENT_OUT_HIGH);
}

/*
 * Poll entries for the ports. A port is polled even with no events
 * wanted, so that the host hanging up (POLLHUP) is seen at once.
 */
int
port_pollfds(struct agent *a, struct pollfd *pfd, void **refs, int max)
{
	struct port	*p;
	int		 n = 0;

	for (p = a->ports; p != NULL && n < max; p = p->next) {
		if (p->dead || p->down)
			continue;
		pfd[n].fd = p->fd;
		pfd[n].events = 0;
		pfd[n].revents = 0;
		if (port_wants_read(p))
			pfd[n].events |= POLLIN;
		if (abuf_used(&p->out) > 0)
			pfd[n].events |= POLLOUT;
		refs[n] = p;
		n++;
	}
	return (n);
}

void
port_handle(struct port *p, int revents)
{
	if (p->dead || p->down)
		return;
	if (revents & (POLLIN|POLLHUP|POLLERR))
		port_read(p, revents);
	if (revents & POLLOUT)
		port_flush(p);
}

/* After each loop turn: answer what became answerable, write, free. */
void
port_sweep(struct agent *a)
{
	struct port	*p, **pp;

	for (p = a->ports; p != NULL; p = p->next) {
		if (p->dead || p->down)
			continue;
		port_advance(p);
		port_flush(p);
	}
	for (pp = &a->ports; (p = *pp) != NULL;) {
		if (!p->dead) {
			pp = &p->next;
			continue;
		}
		*pp = p->next;
		abuf_free(&p->in);
		abuf_free(&p->out);
		abuf_free(&p->body);
		free(p->name);
		free(p);
	}
}

/*
 * A virtio-serial port reports POLLHUP for as long as no host is
 * connected; such a port is left out of the poll set (it would spin).
 * The guest's ports are opened with O_ASYNC (vport.c), and the
 * kernel sends SIGIO when the host connects or hangs up, so this runs
 * on SIGIO only: no timer wakes an idle guest to look. A SIGIO that
 * came between the hang-up and the port being marked down is still
 * pending in the signalfd, so no return of the host is missed.
 */
void
port_recheck(struct agent *a)
{
	struct port	*p;
	struct pollfd	 pfd;

	for (p = a->ports; p != NULL; p = p->next) {
		if (!p->down)
			continue;
		pfd.fd = p->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (poll(&pfd, 1, 0) == 1 && (pfd.revents & POLLHUP))
			continue;
		p->down = 0;
	}
}

/* Before powering off: give pending answers up to ms to leave. */
void
port_flush_all(struct agent *a, int ms)
{
	struct pollfd	 pfd;
	struct port	*p;
	long long	 deadline = util_ms(CLOCK_MONOTONIC) + ms, left;

	for (p = a->ports; p != NULL; p = p->next) {
		while (!p->dead && !p->down && abuf_used(&p->out) > 0) {
			left = deadline - util_ms(CLOCK_MONOTONIC);
			if (left <= 0)
				return;
			pfd.fd = p->fd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, (int)left) <= 0)
				return;
			port_flush(p);
		}
	}
}
