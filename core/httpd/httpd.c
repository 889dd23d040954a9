/*
 * The server, on top of the layer's other files: its listeners (unix
 * sockets, TCP with or without TLS), the accept path, and the answer to a
 * connection turned away. Who is let in is httpd_admit.c's to say, and
 * the accept path does what it says: a connection (httpd_conn.c's) or a
 * 503. What a connection needs of the server (limits, the token and the
 * public paths, the counts) it reads from struct httpd, set here.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ev.h>

#include "httpd.h"
#include "httpd_int.h"

#define HTTPD_BACKLOG	128

struct httpd *
httpd_new(struct ev_loop *loop, const struct httpd_limits *limits,
    httpd_handler handler, void *arg)
{
	struct httpd	*h;
	size_t		 i;

	h = xcalloc(1, sizeof *h);
	h->loop = loop;
	if (limits != NULL)
		h->limits = *limits;
	if (h->limits.head_max == 0)
		h->limits.head_max = HTTPD_HEAD_MAX;
	if (h->limits.body_max == 0)
		h->limits.body_max = HTTPD_BODY_MAX;
	if (h->limits.conns_max <= 0)
		h->limits.conns_max = HTTPD_CONNS_MAX;
	if (h->limits.out_high == 0)
		h->limits.out_high = HTTPD_OUT_HIGH;
	if (h->limits.head_timeout <= 0)
		h->limits.head_timeout = HTTPD_HEAD_TIMEOUT;
	if (h->limits.idle_timeout <= 0)
		h->limits.idle_timeout = HTTPD_IDLE_TIMEOUT;
	if (h->limits.body_timeout <= 0)
		h->limits.body_timeout = HTTPD_BODY_TIMEOUT;
	if (h->limits.conns_per_addr == 0)
		h->limits.conns_per_addr = HTTPD_CONNS_PER_ADDR;
	if (h->limits.unauth_max <= 0)
		h->limits.unauth_max = h->limits.conns_max / 2;
	if (h->limits.unauth_max > h->limits.conns_max)
		h->limits.unauth_max = h->limits.conns_max;
	if (h->limits.unauth_max < 1)
		h->limits.unauth_max = 1;
	h->handler = handler;
	h->arg = arg;
	TAILQ_INIT(&h->conns);
	TAILQ_INIT(&h->idle_unauth);
	TAILQ_INIT(&h->idle_auth);
	TAILQ_INIT(&h->lingers);
	for (i = 0; i < HTTPD_PEER_BUCKETS; i++)
		LIST_INIT(&h->peers[i]);
	return (h);
}

void
httpd_set_token(struct httpd *h, const char *token,
    const char *const *public)
{
	size_t	n = 0, i;

	free(h->token);
	h->token = token != NULL ? xstrdup(token) : NULL;
	if (h->public != NULL) {
		for (i = 0; h->public[i] != NULL; i++)
			free(h->public[i]);
		free(h->public);
		h->public = NULL;
	}
	while (public != NULL && public[n] != NULL)
		n++;
	h->public = xcalloc(n + 1, sizeof *h->public);
	for (i = 0; i < n; i++)
		h->public[i] = xstrdup(public[i]);
}

void
httpd_set_origins(struct httpd *h, const char *const *origins)
{
	size_t	n = 0, i;

	for (i = 0; h->origins != NULL && h->origins[i] != NULL; i++)
		free(h->origins[i]);
	free(h->origins);
	h->origins = NULL;
	while (origins != NULL && origins[n] != NULL)
		n++;
	if (n == 0)
		return;
	h->origins = xcalloc(n + 1, sizeof *h->origins);
	for (i = 0; i < n; i++)
		h->origins[i] = xstrdup(origins[i]);
}

static void
httpd_linger_free(struct httpd_linger *g)
{
	struct httpd	*h = g->h;

	ev_io_stop(h->loop, &g->rd);
	ev_timer_stop(h->loop, &g->timer);
	close(g->fd);
	TAILQ_REMOVE(&h->lingers, g, entry);
	h->nlingers--;
	free(g);
}

static void
httpd_linger_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct httpd_linger	*g = w->data;
	char			 junk[4096];
	ssize_t			 n;

	(void)loop;
	(void)revents;
	while ((n = recv(g->fd, junk, sizeof junk, MSG_DONTWAIT)) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
	    errno != EINTR))
		httpd_linger_free(g);
}

static void
httpd_linger_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	httpd_linger_free(w->data);
}

/* What a connection turned away by a limit is told. */
static void
httpd_turn_away_why(struct httpd *h, enum httpd_shed why, struct buf *body)
{
	char	fields[80];

	switch (why) {
	case HTTPD_SHED_PER_ADDRESS:
		snprintf(fields, sizeof fields, "\"limit\":"
		    "\"max_connections_per_address\",\"max\":%d",
		    h->limits.conns_per_addr);
		httpd_error_json(body, "too many connections from this "
		    "address", fields);
		break;
	case HTTPD_SHED_UNAUTHENTICATED:
		snprintf(fields, sizeof fields, "\"limit\":"
		    "\"max_unauthenticated\",\"max\":%d", h->limits.unauth_max);
		httpd_error_json(body, "too many connections without the "
		    "token", fields);
		break;
	default:
		snprintf(fields, sizeof fields, "\"limit\":\"max_connections\","
		    "\"max\":%d", h->limits.conns_max);
		httpd_error_json(body, "too many connections", fields);
		break;
	}
}

/*
 * One connection over a limit: told so at once, in plain text or not at
 * all (a TLS client could read no plain answer), without its request
 * being read. It then lingers (struct httpd_linger), or, with
 * HTTPD_LINGER_MAX already lingering, is closed after dropping what
 * already arrived.
 */
static void
httpd_turn_away(struct httpd *h, struct httpd_listener *l, int fd,
    enum httpd_shed why)
{
	struct buf		 body = { 0 }, msg = { 0 };
	struct httpd_linger	*g;
	char			 junk[4096];

	log_debug("httpd: %s: a connection turned away (%s)", l->bound,
	    httpd_shed_names[why]);
	h->shed[why]++;
	if (l->tls == NULL) {
		httpd_turn_away_why(h, why, &body);
		httpd_count(h, 503);
		buf_printf(&msg, "HTTP/1.1 503 %s\r\n"
		    "Content-Type: application/json\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
		    wire_reason(503), body.len, body.data);
		while (recv(fd, junk, sizeof junk, MSG_DONTWAIT) > 0)
			;
		(void)send(fd, msg.data, msg.len, MSG_DONTWAIT|MSG_NOSIGNAL);
		shutdown(fd, SHUT_WR);
		buf_free(&body);
		buf_free(&msg);
	}
	if (h->nlingers >= HTTPD_LINGER_MAX) {
		close(fd);
		return;
	}
	g = xcalloc(1, sizeof *g);
	g->h = h;
	g->fd = fd;
	ev_io_init(&g->rd, httpd_linger_read_cb, fd, EV_READ);
	ev_timer_init(&g->timer, httpd_linger_timer_cb, HTTPD_LINGER_TIME, 0.);
	g->rd.data = g->timer.data = g;
	ev_io_start(h->loop, &g->rd);
	ev_timer_start(h->loop, &g->timer);
	TAILQ_INSERT_TAIL(&h->lingers, g, entry);
	h->nlingers++;
}

static void
httpd_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct httpd_listener	*l = w->data;
	struct sockaddr_storage	 ss;
	struct httpd_peer	*p;
	socklen_t		 slen;
	int			 fd, why, one = 1;

	(void)revents;
	for (;;) {
		slen = sizeof ss;
		fd = accept4(l->fd, (struct sockaddr *)&ss, &slen,
		    SOCK_NONBLOCK|SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			/*
			 * Out of fds or memory: the connection stays queued
			 * and would wake us at once again; wait a little.
			 */
			log_warn("httpd: accept on %s", l->bound);
			ev_io_stop(loop, &l->io);
			ev_timer_start(loop, &l->pause);
			return;
		}
		if (slen > sizeof ss)
			ss.ss_family = AF_UNSPEC;
		/*
		 * Answers go out in small writes (a head, then SSE events
		 * and chunks as they come): with Nagle's algorithm, a write
		 * after an unacknowledged one waits for the client's delayed
		 * ACK, up to 40 ms a request on Linux.
		 */
		if (ss.ss_family == AF_INET || ss.ss_family == AF_INET6)
			(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
			    sizeof one);
		if ((why = httpd_admit(l->h, (struct sockaddr *)&ss, &p)) != -1)
			httpd_turn_away(l->h, l, fd, why);
		else
			httpd_conn_new(l->h, l, fd, p);
	}
}

static void
httpd_accept_again_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct httpd_listener	*l = w->data;

	(void)revents;
	if (l->fd != -1)
		ev_io_start(loop, &l->io);
}

/*
 * Bind a unix socket at path, mode 0600 from the start: the socket's own
 * mode, set before bind, is what bind gives the file (less the umask),
 * so there is no moment when another user could connect.
 */
static int
httpd_listen_unix(struct httpd_listener *l, const char *path, char **cause)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	int			 fd = -1, probe;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (*path == '\0' || strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "unix:%s: path empty or too long", path);
		return (-1);
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			xasprintf(cause, "unix:%s: exists and is not a socket",
			    path);
			return (-1);
		}
		/* Not blocking: a live server with a full backlog says EAGAIN. */
		probe = socket(AF_UNIX, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC,
		    0);
		if (probe != -1 && (connect(probe, (struct sockaddr *)&sun,
		    sizeof sun) == 0 || errno == EAGAIN)) {
			close(probe);
			xasprintf(cause, "unix:%s: a server is already "
			    "listening there", path);
			return (-1);
		}
		if (probe != -1)
			close(probe);
		/* Nobody answers: what a dead server left. */
		if (unlink(path) == -1 && errno != ENOENT) {
			xasprintf(cause, "unix:%s: cannot remove the stale "
			    "socket: %s", path, strerror(errno));
			return (-1);
		}
	}
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	if (fd == -1 || fchmod(fd, 0600) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    chmod(path, 0600) == -1 || listen(fd, HTTPD_BACKLOG) == -1 ||
	    stat(path, &st) == -1) {
		xasprintf(cause, "unix:%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return (-1);
	}
	l->fd = fd;
	l->unix_path = xstrdup(path);
	l->unix_dev = st.st_dev;
	l->unix_ino = st.st_ino;
	xasprintf(&l->bound, "unix:%s", path);
	return (0);
}

static int
httpd_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;
	const uint8_t			*a;

	if (sa->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)sa;
		return ((ntohl(sin->sin_addr.s_addr) >> 24) == 127);
	}
	if (sa->sa_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr))
			return (1);
		a = sin6->sin6_addr.s6_addr;
		return (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr) && a[12] == 127);
	}
	return (0);
}

/* "tcp:127.0.0.1:PORT" or "tcp:[::1]:PORT" for what fd is bound to. */
static char *
httpd_tcp_name(int fd)
{
	struct sockaddr_storage	 ss;
	socklen_t		 slen = sizeof ss;
	char			 host[NI_MAXHOST], serv[NI_MAXSERV], *s;

	if (getsockname(fd, (struct sockaddr *)&ss, &slen) == -1 ||
	    getnameinfo((struct sockaddr *)&ss, slen, host, sizeof host, serv,
	    sizeof serv, NI_NUMERICHOST|NI_NUMERICSERV) != 0)
		return (xstrdup("tcp:?"));
	if (ss.ss_family == AF_INET6)
		xasprintf(&s, "tcp:[%s]:%s", host, serv);
	else
		xasprintf(&s, "tcp:%s:%s", host, serv);
	return (s);
}

/* ADDR:PORT or [ADDR6]:PORT, into host and port (both allocated). */
static int
httpd_split_hostport(const char *s, char **host, char **port)
{
	const char	*e, *c;

	if (*s == '[') {
		if ((e = strchr(s, ']')) == NULL || e[1] != ':')
			return (-1);
		*host = xstrndup(s + 1, e - s - 1);
		c = e + 1;
	} else {
		if ((c = strrchr(s, ':')) == NULL)
			return (-1);
		*host = xstrndup(s, c - s);
	}
	if (c[1] == '\0' || strspn(c + 1, "0123456789") != strlen(c + 1)) {
		free(*host);
		*host = NULL;
		return (-1);
	}
	*port = xstrdup(c + 1);
	return (0);
}

static int
httpd_listen_tcp(struct httpd_listener *l, const char *spec, const char *at,
    int tls, char **cause)
{
	struct addrinfo	 hints, *res = NULL;
	char		*host = NULL, *port = NULL;
	int		 fd = -1, on = 1, rc = -1, error;

	if (httpd_split_hostport(at, &host, &port) == -1) {
		xasprintf(cause, "%s: not tcp:ADDR:PORT or tcp:[ADDR6]:PORT",
		    spec);
		goto out;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE|AI_NUMERICSERV;
	if ((error = getaddrinfo(*host != '\0' ? host : NULL, port, &hints,
	    &res)) != 0) {
		xasprintf(cause, "%s: %s", spec, gai_strerror(error));
		goto out;
	}
	if (!tls && !httpd_loopback(res->ai_addr)) {
		xasprintf(cause, "%s: %s is not a loopback address: a TCP "
		    "listener there needs TLS (--tls-cert FILE --tls-key FILE)",
		    spec, *host != '\0' ? host : "the wildcard address");
		goto out;
	}
	if ((fd = socket(res->ai_family, res->ai_socktype|SOCK_NONBLOCK|
	    SOCK_CLOEXEC, res->ai_protocol)) == -1) {
		xasprintf(cause, "%s: socket: %s", spec, strerror(errno));
		goto out;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	if (res->ai_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
	if (bind(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    listen(fd, HTTPD_BACKLOG) == -1) {
		xasprintf(cause, "%s: %s", spec, strerror(errno));
		goto out;
	}
	l->fd = fd;
	fd = -1;
	l->bound = httpd_tcp_name(l->fd);
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	if (res != NULL)
		freeaddrinfo(res);
	free(host);
	free(port);
	return (rc);
}

/*
 * A socket already listening, inherited (systemd's socket activation:
 * fd:3). Not ours to unlink; a TCP one off loopback needs TLS, as ours.
 */
static int
httpd_listen_fd(struct httpd_listener *l, const char *spec, int tls,
    char **cause)
{
	struct sockaddr_storage	 ss;
	socklen_t		 len = sizeof ss;
	char			*end;
	long			 fd;
	int			 on = 0;
	socklen_t		 olen = sizeof on;

	errno = 0;
	fd = strtol(spec + 3, &end, 10);
	if (spec[3] == '\0' || *end != '\0' || errno != 0 || fd < 0 ||
	    fd > INT_MAX) {
		xasprintf(cause, "%s: not fd:N", spec);
		return (-1);
	}
	if (getsockopt((int)fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &olen) == -1 ||
	    !on || getsockname((int)fd, (struct sockaddr *)&ss, &len) == -1) {
		xasprintf(cause, "%s: not a listening socket%s%s", spec,
		    errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "");
		return (-1);
	}
	if (ss.ss_family != AF_UNIX && !tls &&
	    !httpd_loopback((struct sockaddr *)&ss)) {
		xasprintf(cause, "%s: not bound to a loopback address: it needs "
		    "TLS (--tls-cert FILE --tls-key FILE)", spec);
		return (-1);
	}
	if (util_set_nonblock((int)fd) == -1 ||
	    util_set_cloexec((int)fd, 1) == -1) {
		xasprintf(cause, "%s: %s", spec, strerror(errno));
		return (-1);
	}
	l->fd = (int)fd;
	if (ss.ss_family == AF_UNIX)
		l->bound = xstrdup(spec);
	else
		l->bound = httpd_tcp_name(l->fd);
	return (0);
}

int
httpd_listen(struct httpd *h, const char *spec, const char *cert,
    const char *key, char **cause)
{
	struct httpd_listener	*l;
	int			 rc;

	*cause = NULL;
	if ((cert == NULL) != (key == NULL)) {
		xasprintf(cause, "%s: TLS needs both a certificate and a key "
		    "(--tls-cert FILE --tls-key FILE)", spec);
		return (-1);
	}
	l = xcalloc(1, sizeof *l);
	l->h = h;
	l->fd = -1;
	if (strncmp(spec, "unix:", 5) == 0) {
		if (cert != NULL) {
			xasprintf(cause, "%s: TLS is for TCP listeners", spec);
			free(l);
			return (-1);
		}
		rc = httpd_listen_unix(l, spec + 5, cause);
	} else if (strncmp(spec, "tcp:", 4) == 0)
		rc = httpd_listen_tcp(l, spec, spec + 4, cert != NULL, cause);
	else if (strncmp(spec, "fd:", 3) == 0)
		rc = httpd_listen_fd(l, spec, cert != NULL, cause);
	else {
		xasprintf(cause, "%s: not unix:PATH, tcp:ADDR:PORT, "
		    "tcp:[ADDR6]:PORT or fd:N", spec);
		rc = -1;
	}
	if (rc == 0 && cert != NULL &&
	    (l->tls = httpd_tls_new(cert, key, cause)) == NULL)
		rc = -1;
	if (rc == -1) {
		if (l->fd != -1)
			close(l->fd);
		if (l->unix_path != NULL)
			unlink(l->unix_path);
		free(l->unix_path);
		free(l->bound);
		free(l);
		return (-1);
	}
	ev_io_init(&l->io, httpd_accept_cb, l->fd, EV_READ);
	ev_timer_init(&l->pause, httpd_accept_again_cb, HTTPD_ACCEPT_PAUSE, 0.);
	l->io.data = l->pause.data = l;
	ev_io_start(h->loop, &l->io);
	h->listeners = xreallocarray(h->listeners, h->nlisteners + 1,
	    sizeof *h->listeners);
	h->listeners[h->nlisteners++] = l;
	return (0);
}

const char *
httpd_bound(struct httpd *h, size_t i)
{
	if (i >= h->nlisteners)
		return (NULL);
	return (h->listeners[i]->bound);
}

int
httpd_connections(struct httpd *h)
{
	return (h->nconns);
}

int
httpd_unauthenticated(struct httpd *h)
{
	return (h->nunauth);
}

/* The socket file goes only if it is still the one we bound. */
static void
httpd_listener_stop(struct httpd *h, struct httpd_listener *l)
{
	struct stat	st;

	if (l->fd == -1)
		return;
	ev_io_stop(h->loop, &l->io);
	ev_timer_stop(h->loop, &l->pause);
	close(l->fd);
	l->fd = -1;
	if (l->unix_path != NULL && stat(l->unix_path, &st) == 0 &&
	    st.st_dev == l->unix_dev && st.st_ino == l->unix_ino)
		unlink(l->unix_path);
}

void
httpd_close_listeners(struct httpd *h)
{
	size_t	i;

	for (i = 0; i < h->nlisteners; i++)
		httpd_listener_stop(h, h->listeners[i]);
}

void
httpd_free(struct httpd *h)
{
	struct httpd_conn	*c;
	struct httpd_listener	*l;
	size_t			 i;

	if (h == NULL)
		return;
	httpd_close_listeners(h);
	while (!TAILQ_EMPTY(&h->lingers))
		httpd_linger_free(TAILQ_FIRST(&h->lingers));
	while ((c = TAILQ_FIRST(&h->conns)) != NULL) {
		httpd_conn_close(c, 1);
		httpd_conn_free(c);
	}
	for (i = 0; i < h->nlisteners; i++) {
		l = h->listeners[i];
		httpd_tls_free(l->tls);
		free(l->unix_path);
		free(l->bound);
		free(l);
	}
	free(h->listeners);
	httpd_set_token(h, NULL, NULL);
	free(h->public);
	httpd_set_origins(h, NULL);
	httpd_record_free(h);
	free(h);
}

void
httpd_answered(struct httpd *h, unsigned long long out[HTTPD_CLASSES])
{
	memcpy(out, h->answered, sizeof h->answered);
}
