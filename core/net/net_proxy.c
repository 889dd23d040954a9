/*
 * Guest connections that leave through qsup: the allowlist's HTTP proxy
 * and the TCP maps (one fixed destination each). slirp_add_unix turns each
 * guest connection to a listener's guest address into one connection to
 * its unix socket; here it is accepted, judged, connected to its
 * destination without blocking, and bytes are copied both ways through
 * bounded buffers: a side whose buffer is full is no longer read, so TCP
 * slows the sender down, and memory stays bounded. At most NET_CONNS_MAX
 * connections are open at once, over all listeners together; one more is
 * closed as soon as it is accepted (and counted as refused). A request
 * head is at most NET_PROXY_HEAD_MAX bytes (431 past it), each way holds
 * at most NET_PROXY_BUF_MAX bytes, and a connection not yet connected is
 * given up after NET_PROXY_HEAD_TIMEOUT or NET_PROXY_CONNECT_TIMEOUT.
 *
 * The proxy takes one request per connection:
 *   CONNECT host:port HTTP/1.x	the name (or address) checked against the
 *				rules, then a tunnel; TLS is not looked into
 *   METHOD http://host[:port]/path HTTP/1.x
 *				checked, then forwarded in origin form, with
 *				Host from the URL, "Connection: close", and
 *				the proxy's own headers dropped; the answer
 *				is copied back as it comes
 * Anything else gets 400; a destination no rule allows 403 (counted and
 * logged); one that cannot be reached 502, or 504 after
 * NET_PROXY_CONNECT_TIMEOUT.
 *
 * Names: a name is looked up only if a rule allows it (getaddrinfo_a, off
 * the loop), so the proxy cannot carry data out in DNS queries; and the
 * addresses it resolves to that are the host's own (loopback, link-local,
 * ...) are refused unless a rule names them.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <ev.h>

#include "net_int.h"

#define NET_PROXY_HEAD_MAX		16384	/* a request's head */
#define NET_PROXY_BUF_MAX		(128 * 1024)	/* each way */
#define NET_PROXY_READ			65536
#define NET_PROXY_ADDRS_MAX		8	/* tried in turn */
#define NET_PROXY_HEAD_TIMEOUT		30.
#define NET_PROXY_CONNECT_TIMEOUT	15.
#define NET_PROXY_LINGER		5.	/* after an error reply */
/* Out of descriptors: how long to wait before accepting again. */
#define NET_PROXY_BACKOFF		0.1

enum net_proxy_state {
	NET_PROXY_HEAD,	/* reading the request */
	NET_PROXY_LOOKUP,	/* the name is being resolved */
	NET_PROXY_CONNECTING,
	NET_PROXY_OPEN,	/* copying both ways */
	NET_PROXY_REPLY	/* an error reply goes out, then we close */
};

/* A byte queue read from its front. */
struct net_proxy_buf {
	struct buf	b;
	size_t		off;
};

struct net_proxy_conn {
	struct net_proxy	*px;
	enum net_proxy_state		 state;
	int			 cfd;		/* to slirp, i.e. the guest */
	int			 sfd;		/* to the destination */
	ev_io			 crd, cwr, srd, swr;
	ev_timer		 timer;
	struct buf		 head;
	struct net_proxy_buf		 to_s;
	struct net_proxy_buf		 to_c;
	int			 c_eof, s_eof;	/* nothing more to read */
	int			 c_shut, s_shut; /* nothing more to write */
	int			 tunnel;	/* CONNECT: say 200 first */
	const char		*kind;		/* "connect", "http", "tcp" */
	char			*host;
	int			 port;
	char			*what;		/* "host:port", for notes */
	const struct net_rule *name_rule;
	struct sockaddr_storage	 addrs[NET_PROXY_ADDRS_MAX];
	socklen_t		 alens[NET_PROXY_ADDRS_MAX];
	size_t			 naddrs;
	size_t			 next;
	struct net_lookup	*lookup;
	TAILQ_ENTRY(net_proxy_conn)	 entry;
};
TAILQ_HEAD(net_proxy_conns, net_proxy_conn);

struct net_proxy {
	struct net		*net;
	struct ev_loop		*loop;
	char			*path;
	int			 fd;
	ev_io			 accept;
	ev_timer		 backoff;	/* out of descriptors: wait */
	char			*host;		/* a map's; NULL: the proxy */
	int			 port;
	struct net_proxy_conns		 conns;
	size_t			 nconns;
};

static void	net_proxy_update(struct net_proxy_conn *);

static size_t
net_proxy_qlen(const struct net_proxy_buf *q)
{
	return (q->b.len - q->off);
}

/* What may still be read into q: it holds NET_PROXY_BUF_MAX at most. */
static size_t
net_proxy_qroom(const struct net_proxy_buf *q)
{
	if (net_proxy_qlen(q) >= NET_PROXY_BUF_MAX)
		return (0);
	return (NET_PROXY_BUF_MAX - net_proxy_qlen(q));
}

static void
net_proxy_qconsume(struct net_proxy_buf *q, size_t n)
{
	q->off += n;
	if (q->off == q->b.len) {
		buf_consume(&q->b, q->b.len);
		q->off = 0;
	} else if (q->off > NET_PROXY_BUF_MAX) {
		buf_consume(&q->b, q->off);
		q->off = 0;
	}
}

static void
net_proxy_qfree(struct net_proxy_buf *q)
{
	buf_free(&q->b);
	q->off = 0;
}

static void
net_proxy_watch(struct ev_loop *loop, ev_io *w, int on)
{
	if (on && !ev_is_active(w))
		ev_io_start(loop, w);
	else if (!on && ev_is_active(w))
		ev_io_stop(loop, w);
}

static void
net_proxy_close_server(struct net_proxy_conn *c)
{
	struct ev_loop	*loop = c->px->loop;

	ev_io_stop(loop, &c->srd);
	ev_io_stop(loop, &c->swr);
	if (c->sfd != -1) {
		close(c->sfd);
		c->sfd = -1;
	}
}

static void
net_proxy_conn_free(struct net_proxy_conn *c)
{
	struct net_proxy	*px = c->px;

	TAILQ_REMOVE(&px->conns, c, entry);
	px->nconns--;
	px->net->nconns--;
	net_lookup_cancel(c->lookup);
	ev_io_stop(px->loop, &c->crd);
	ev_io_stop(px->loop, &c->cwr);
	ev_timer_stop(px->loop, &c->timer);
	net_proxy_close_server(c);
	close(c->cfd);
	c->cfd = -1;
	buf_free(&c->head);
	net_proxy_qfree(&c->to_s);
	net_proxy_qfree(&c->to_c);
	free(c->host);
	free(c->what);
	free(c);
}

static void
net_proxy_timer(struct net_proxy_conn *c, double seconds)
{
	ev_timer_stop(c->px->loop, &c->timer);
	if (seconds > 0) {
		ev_timer_set(&c->timer, seconds, 0.);
		ev_timer_start(c->px->loop, &c->timer);
	}
}

/* Answer with an error and close once it is out. */
static void
net_proxy_reply(struct net_proxy_conn *c, int code, const char *reason,
    const char *text)
{
	c->state = NET_PROXY_REPLY;
	net_lookup_cancel(c->lookup);
	c->lookup = NULL;
	net_proxy_close_server(c);
	net_proxy_qfree(&c->to_s);
	buf_printf(&c->to_c.b, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n%s\n", code,
	    reason, strlen(text) + 1, text);
	net_proxy_timer(c, NET_PROXY_LINGER);
}

static void
net_proxy_refuse(struct net_proxy_conn *c, const char *why)
{
	char	*text;

	net_note(c->px->net, c->kind, c->what, 0, why);
	xasprintf(&text, "qsup: %s is not allowed by the sandbox's network "
	    "policy: %s", c->what, why);
	net_proxy_reply(c, 403, "Forbidden", text);
	free(text);
}

static void
net_proxy_connect_next(struct net_proxy_conn *c)
{
	struct ev_loop	*loop = c->px->loop;
	int		 fd;

	while (c->next < c->naddrs) {
		fd = socket(c->addrs[c->next].ss_family,
		    SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
		if (fd == -1) {
			c->next++;
			continue;
		}
		if (connect(fd, (struct sockaddr *)&c->addrs[c->next],
		    c->alens[c->next]) == -1 && errno != EINPROGRESS) {
			close(fd);
			c->next++;
			continue;
		}
		c->next++;
		c->sfd = fd;
		c->state = NET_PROXY_CONNECTING;
		ev_io_set(&c->srd, fd, EV_READ);
		ev_io_set(&c->swr, fd, EV_WRITE);
		ev_io_start(loop, &c->swr);
		return;
	}
	log_debug("net: cannot connect to %s", c->what);
	net_proxy_reply(c, 502, "Bad Gateway", "qsup: the destination cannot "
	    "be reached");
}

/* Connected, or failed: go on with the next address. */
static void
net_proxy_connected(struct net_proxy_conn *c)
{
	int		err = 0, one = 1;
	socklen_t	len = sizeof err;

	if (getsockopt(c->sfd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
		err = errno;
	if (err != 0) {
		net_proxy_close_server(c);
		net_proxy_connect_next(c);
		return;
	}
	setsockopt(c->sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	c->state = NET_PROXY_OPEN;
	net_proxy_timer(c, 0);
	if (c->tunnel)
		buf_puts(&c->to_c.b, "HTTP/1.1 200 Connection established"
		    "\r\n\r\n");
}

static void
net_proxy_add_addr(struct net_proxy_conn *c, const struct sockaddr *sa,
    socklen_t len)
{
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;

	if (c->naddrs == NET_PROXY_ADDRS_MAX || len > sizeof c->addrs[0])
		return;
	memcpy(&c->addrs[c->naddrs], sa, len);
	if (sa->sa_family == AF_INET) {
		sin = (struct sockaddr_in *)(void *)&c->addrs[c->naddrs];
		sin->sin_port = htons((uint16_t)c->port);
	} else {
		sin6 = (struct sockaddr_in6 *)(void *)&c->addrs[c->naddrs];
		sin6->sin6_port = htons((uint16_t)c->port);
	}
	c->alens[c->naddrs++] = len;
}

static void
net_proxy_lookup_cb(const struct addrinfo *res, int err, void *arg)
{
	struct net_proxy_conn			*c = arg;
	const struct net_rule	*rules;
	const struct addrinfo		*ai;
	size_t				 nrules, seen = 0;
	char				*why = NULL;

	c->lookup = NULL;
	rules = c->px->net->rules;
	nrules = c->px->net->nrules;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		seen++;
		/* A map is its own permission; the proxy checks. */
		if (c->px->host == NULL && !net_rule_addr_allowed(rules,
		    nrules, c->name_rule, ai->ai_addr, c->port)) {
			if (why == NULL)
				why = net_rule_why(rules, nrules, NULL,
				    ai->ai_addr, c->port, "the name resolves "
				    "only to addresses of the host itself "
				    "(loopback, link-local, its own "
				    "interfaces); a rule must name the "
				    "address");
			continue;
		}
		net_proxy_add_addr(c, ai->ai_addr, ai->ai_addrlen);
	}
	if (c->naddrs == 0) {
		if (seen > 0)
			net_proxy_refuse(c, why);
		else {
			log_debug("net: cannot resolve %s: %s", c->host,
			    gai_strerror(err));
			net_proxy_reply(c, 502, "Bad Gateway", "qsup: the "
			    "name does not resolve");
		}
	} else {
		net_note(c->px->net, c->kind, c->what, 1, NULL);
		net_proxy_connect_next(c);
	}
	free(why);
	net_proxy_update(c);
}

/* The destination is chosen (c->host, c->port): check it and go. */
static void
net_proxy_start(struct net_proxy_conn *c)
{
	const struct net_rule	*rules;
	struct sockaddr_storage		 ss;
	struct sockaddr_in		*sin = (struct sockaddr_in *)(void *)&ss;
	struct sockaddr_in6		*sin6 = (struct sockaddr_in6 *)(void *)&ss;
	size_t				 nrules;
	char				*why;
	int				 err;

	xasprintf(&c->what, strchr(c->host, ':') != NULL ? "[%s]:%d" :
	    "%s:%d", c->host, c->port);
	rules = c->px->net->rules;
	nrules = c->px->net->nrules;
	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, c->host, &sin->sin_addr) == 1 ||
	    inet_pton(AF_INET6, c->host, &sin6->sin6_addr) == 1) {
		ss.ss_family = strchr(c->host, ':') != NULL ? AF_INET6 :
		    AF_INET;
		if (c->px->host == NULL && net_rule_match(rules, nrules, NULL,
		    (struct sockaddr *)&ss, c->port) == NULL) {
			why = net_rule_why(rules, nrules, NULL,
			    (struct sockaddr *)&ss, c->port,
			    "no rule allows the address and port");
			net_proxy_refuse(c, why);
			free(why);
			return;
		}
		net_note(c->px->net, c->kind, c->what, 1, NULL);
		net_proxy_add_addr(c, (struct sockaddr *)&ss,
		    ss.ss_family == AF_INET ? sizeof *sin : sizeof *sin6);
		net_proxy_timer(c, NET_PROXY_CONNECT_TIMEOUT);
		net_proxy_connect_next(c);
		return;
	}
	if (c->px->host == NULL) {
		c->name_rule = net_rule_match(rules, nrules, c->host, NULL,
		    c->port);
		if (c->name_rule == NULL) {
			why = net_rule_why(rules, nrules, c->host, NULL,
			    c->port, net_rule_match(rules, nrules, c->host,
			    NULL, 0) != NULL ? "the rules allow the name on "
			    "other ports only" : "no rule allows the name");
			net_proxy_refuse(c, why);
			free(why);
			return;
		}
	}
	c->state = NET_PROXY_LOOKUP;
	net_proxy_timer(c, NET_PROXY_CONNECT_TIMEOUT);
	c->lookup = net_lookup_start(c->px->net->resolver, c->host,
	    c->port, AF_UNSPEC, net_proxy_lookup_cb, c, &err);
	if (c->lookup == NULL) {
		log_debug("net: cannot resolve %s: %s", c->host,
		    gai_strerror(err));
		net_proxy_reply(c, 502, "Bad Gateway", "qsup: the name cannot "
		    "be resolved now");
	}
}

/*
 * "host:port", "[v6]:port", or without a port (defport; -1: required).
 * The host is an address or a valid name, lower-cased, without a trailing
 * dot; no user information.
 */
static int
net_proxy_authority(const char *s, size_t len, int defport, char **host,
    int *port)
{
	const char	*end = s + len, *colon = NULL, *p;
	char		 a[INET6_ADDRSTRLEN + 1], *h;
	unsigned char	 tmp[16];
	size_t		 hlen, i;
	long		 v;

	if (len == 0)
		return (-1);
	if (*s == '[') {
		if ((p = memchr(s, ']', len)) == NULL)
			return (-1);
		hlen = (size_t)(p - s - 1);
		if (hlen == 0 || hlen >= sizeof a)
			return (-1);
		memcpy(a, s + 1, hlen);
		a[hlen] = '\0';
		if (inet_pton(AF_INET6, a, tmp) != 1)
			return (-1);
		h = xstrdup(a);
		p++;
		if (p != end && *p != ':') {
			free(h);
			return (-1);
		}
		colon = p != end ? p : NULL;
	} else {
		for (p = s; p < end; p++) {
			if (*p == ':')
				colon = p;
		}
		hlen = (size_t)((colon != NULL ? colon : end) - s);
		h = xstrndup(s, hlen);
		if (strlen(h) != hlen || (inet_pton(AF_INET, h, tmp) != 1 &&
		    (!net_host_valid(h) || strchr(h, ':') != NULL))) {
			free(h);
			return (-1);
		}
		if (hlen > 1 && h[hlen - 1] == '.')
			h[hlen - 1] = '\0';
		for (i = 0; h[i] != '\0'; i++)
			h[i] = (char)tolower((unsigned char)h[i]);
	}
	if (colon == NULL) {
		if (defport == -1) {
			free(h);
			return (-1);
		}
		*port = defport;
	} else {
		v = 0;
		for (p = colon + 1; p < end; p++) {
			if (!isdigit((unsigned char)*p) || p - colon > 5) {
				free(h);
				return (-1);
			}
			v = v * 10 + (*p - '0');
		}
		if (p == colon + 1 || v < 1 || v > 65535) {
			free(h);
			return (-1);
		}
		*port = (int)v;
	}
	*host = h;
	return (0);
}

/* Headers a proxy consumes or replaces. */
static int
net_proxy_hop_header(const char *name, size_t len)
{
	static const char *const hop[] = { "connection", "proxy-connection",
	    "keep-alive", "proxy-authorization", "proxy-authenticate",
	    "host", "te", "upgrade" };
	size_t			 i;

	for (i = 0; i < sizeof hop / sizeof hop[0]; i++) {
		if (strlen(hop[i]) == len && strncasecmp(name, hop[i], len) == 0)
			return (1);
	}
	return (0);
}

/*
 * The request head (hlen bytes of c->head, NUL-free, ending with a blank
 * line) has arrived: parse, rewrite, check. -1: malformed.
 */
static int
net_proxy_request(struct net_proxy_conn *c, size_t hlen, struct buf *out)
{
	struct wire_request_line	 rl;
	struct wire_field		 f;
	const char			*p = c->head.data, *end = p + hlen,
					*line, *target, *path, *auth_end;
	size_t				 llen, tlen;
	int				 first = 1;

	while (wire_line(&p, end, &line, &llen) == 0) {
		if (first) {
			first = 0;
			if (wire_request_split(line, llen, &rl) == -1 ||
			    !wire_token(rl.method, rl.mlen) || rl.vlen != 8 ||
			    (strncmp(rl.version, "HTTP/1.1", 8) != 0 &&
			    strncmp(rl.version, "HTTP/1.0", 8) != 0))
				return (-1);
			target = rl.target;
			tlen = rl.tlen;
			if (tlen == 0)
				return (-1);
			if (rl.mlen == 7 && strncmp(rl.method, "CONNECT",
			    7) == 0) {
				c->kind = "connect";
				c->tunnel = 1;
				if (net_proxy_authority(target, tlen, -1,
				    &c->host, &c->port) == -1)
					return (-1);
				continue;
			}
			c->kind = "http";
			if (tlen < 7 || strncasecmp(target, "http://", 7) != 0)
				return (-1);
			target += 7;
			tlen -= 7;
			for (auth_end = target; auth_end < target + tlen &&
			    strchr("/?#", *auth_end) == NULL; auth_end++)
				;
			if (net_proxy_authority(target, (size_t)(auth_end -
			    target), 80, &c->host, &c->port) == -1)
				return (-1);
			path = auth_end;
			buf_add(out, line, rl.mlen + 1);
			if (path == target + tlen || *path != '/')
				buf_add(out, "/", 1);
			buf_add(out, path, (size_t)(target + tlen - path));
			buf_add(out, rl.version - 1, rl.vlen + 1);
			buf_add(out, "\r\n", 2);
			buf_printf(out, "Host: %s%s%s", strchr(c->host, ':') !=
			    NULL ? "[" : "", c->host, strchr(c->host, ':') !=
			    NULL ? "]" : "");
			if (c->port != 80)
				buf_printf(out, ":%d", c->port);
			buf_add(out, "\r\n", 2);
			continue;
		}
		if (llen == 0)
			break;
		/* No folded lines, a token before the colon. */
		if (wire_field_split(line, llen, &f) == -1)
			return (-1);
		if (c->tunnel || net_proxy_hop_header(f.name, f.nlen))
			continue;
		buf_add(out, line, llen);
		buf_add(out, "\r\n", 2);
	}
	if (first)
		return (-1);
	if (!c->tunnel)
		buf_puts(out, "Connection: close\r\n\r\n");
	return (0);
}

static void
net_proxy_head(struct net_proxy_conn *c)
{
	struct buf	 out = { 0 };
	size_t		 hlen;

	hlen = wire_head_end(c->head.data, c->head.len);
	if (hlen == 0) {
		if (c->head.len >= NET_PROXY_HEAD_MAX) {
			net_note(c->px->net, "http", "(malformed request)", 0,
			    "the request head is too long");
			net_proxy_reply(c, 431, "Request Header Fields Too "
			    "Large", "qsup: the request head is too long");
		} else if (c->c_eof && c->head.len > 0) {
			net_note(c->px->net, "http", "(malformed request)", 0,
			    "the request ends before its blank line");
			net_proxy_reply(c, 400, "Bad Request", "qsup: the "
			    "request is cut short");
		}
		return;
	}
	if (memchr(c->head.data, '\0', hlen) != NULL ||
	    net_proxy_request(c, hlen, &out) == -1) {
		buf_free(&out);
		net_note(c->px->net, "http", "(malformed request)", 0,
		    "not a proxy request (CONNECT host:port, or an absolute "
		    "http:// URL)");
		net_proxy_reply(c, 400, "Bad Request", "qsup: this proxy takes "
		    "CONNECT host:port and absolute http:// URLs");
		return;
	}
	if (out.len > 0)
		buf_add(&c->to_s.b, out.data, out.len);
	buf_free(&out);
	/* Whatever came after the head goes on too. */
	buf_add(&c->to_s.b, c->head.data + hlen, c->head.len - hlen);
	buf_free(&c->head);
	c->state = NET_PROXY_LOOKUP;
	net_proxy_start(c);
}

/* Read what fd has into q (or head); 1: got bytes, 0: EOF/error, -1: none. */
static int
net_proxy_read(int fd, struct buf *b, size_t room)
{
	char	chunk[NET_PROXY_READ];
	ssize_t	n;

	if (room == 0)
		return (-1);		/* full: read again once drained */
	if (room > sizeof chunk)
		room = sizeof chunk;
	n = recv(fd, chunk, room, MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return (-1);
	if (n <= 0)
		return (0);
	if (b != NULL)
		buf_add(b, chunk, (size_t)n);
	return (1);
}

/* Write from q, counting what went in *sent; 0 on a dead peer. */
static int
net_proxy_write(int fd, struct net_proxy_buf *q, unsigned long long *sent)
{
	ssize_t	n;

	while (net_proxy_qlen(q) > 0) {
		n = send(fd, q->b.data + q->off, net_proxy_qlen(q),
		    MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return (errno == EAGAIN ? 1 : 0);
		}
		net_proxy_qconsume(q, (size_t)n);
		*sent += (size_t)n;
	}
	return (1);
}

static void
net_proxy_client_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct net_proxy_conn	*c = w->data;
	int		 rc;

	(void)loop;
	(void)revents;
	switch (c->state) {
	case NET_PROXY_HEAD:
		rc = net_proxy_read(c->cfd, &c->head, NET_PROXY_HEAD_MAX -
		    c->head.len);
		if (rc == 0)
			c->c_eof = 1;
		if (rc != -1)
			net_proxy_head(c);
		break;
	case NET_PROXY_REPLY:
		if (net_proxy_read(c->cfd, NULL, NET_PROXY_READ) == 0)
			c->c_eof = 1;
		break;
	default:
		if (net_proxy_read(c->cfd, &c->to_s.b,
		    net_proxy_qroom(&c->to_s)) == 0)
			c->c_eof = 1;
		break;
	}
	net_proxy_update(c);
}

static void
net_proxy_client_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct net_proxy_conn	*c = w->data;

	(void)loop;
	(void)revents;
	if (!net_proxy_write(c->cfd, &c->to_c,
	    &c->px->net->stats.proxy_bytes_down)) {
		/* The guest's side is gone: nothing left to do. */
		net_proxy_conn_free(c);
		return;
	}
	net_proxy_update(c);
}

static void
net_proxy_server_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct net_proxy_conn	*c = w->data;

	(void)loop;
	(void)revents;
	if (net_proxy_read(c->sfd, &c->to_c.b, net_proxy_qroom(&c->to_c)) == 0)
		c->s_eof = 1;
	net_proxy_update(c);
}

static void
net_proxy_server_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct net_proxy_conn	*c = w->data;

	(void)loop;
	(void)revents;
	if (c->state == NET_PROXY_CONNECTING)
		net_proxy_connected(c);
	else if (c->state == NET_PROXY_OPEN &&
	    !net_proxy_write(c->sfd, &c->to_s,
	    &c->px->net->stats.proxy_bytes_up)) {
		/* The destination stopped reading: stop sending it. */
		net_proxy_qfree(&c->to_s);
		c->s_shut = 1;
		c->c_eof = 1;
	}
	net_proxy_update(c);
}

static void
net_proxy_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct net_proxy_conn	*c = w->data;

	(void)loop;
	(void)revents;
	switch (c->state) {
	case NET_PROXY_HEAD:
		net_proxy_reply(c, 408, "Request Timeout", "qsup: no request "
		    "came");
		break;
	case NET_PROXY_LOOKUP:
	case NET_PROXY_CONNECTING:
		log_debug("net: %s: no connection after %.0f s", c->what,
		    NET_PROXY_CONNECT_TIMEOUT);
		net_proxy_reply(c, 504, "Gateway Timeout", "qsup: the "
		    "destination does not answer");
		break;
	default:
		net_proxy_conn_free(c);
		return;
	}
	net_proxy_update(c);
}

/*
 * Make the watchers match the state and the buffers, pass EOFs on as
 * half-closes, and free the connection once both ways are done. c may be
 * gone afterwards.
 */
static void
net_proxy_update(struct net_proxy_conn *c)
{
	struct ev_loop	*loop = c->px->loop;
	int		 open = c->state == NET_PROXY_OPEN;

	/* Closed before saying anything: nothing to answer. */
	if (c->state == NET_PROXY_HEAD && c->c_eof && c->head.len == 0) {
		net_proxy_conn_free(c);
		return;
	}
	if (c->state == NET_PROXY_REPLY) {
		if (net_proxy_qlen(&c->to_c) > 0 &&
		    !net_proxy_write(c->cfd, &c->to_c,
	    &c->px->net->stats.proxy_bytes_down)) {
			net_proxy_conn_free(c);
			return;
		}
		if (net_proxy_qlen(&c->to_c) == 0) {
			if (!c->c_shut) {
				shutdown(c->cfd, SHUT_WR);
				c->c_shut = 1;
			}
			if (c->c_eof) {
				net_proxy_conn_free(c);
				return;
			}
		}
		net_proxy_watch(loop, &c->crd, !c->c_eof);
		net_proxy_watch(loop, &c->cwr, net_proxy_qlen(&c->to_c) > 0);
		return;
	}
	if (open && net_proxy_qlen(&c->to_s) > 0 && !c->s_shut &&
	    !net_proxy_write(c->sfd, &c->to_s,
	    &c->px->net->stats.proxy_bytes_up)) {
		net_proxy_qfree(&c->to_s);
		c->s_shut = 1;
		c->c_eof = 1;
	}
	if (net_proxy_qlen(&c->to_c) > 0 &&
	    !net_proxy_write(c->cfd, &c->to_c,
	    &c->px->net->stats.proxy_bytes_down)) {
		net_proxy_conn_free(c);
		return;
	}
	if (open && c->c_eof && net_proxy_qlen(&c->to_s) == 0 && !c->s_shut) {
		shutdown(c->sfd, SHUT_WR);
		c->s_shut = 1;
	}
	if (open && c->s_eof && net_proxy_qlen(&c->to_c) == 0 && !c->c_shut) {
		shutdown(c->cfd, SHUT_WR);
		c->c_shut = 1;
	}
	if (open && c->c_shut && c->s_shut) {
		net_proxy_conn_free(c);
		return;
	}
	net_proxy_watch(loop, &c->crd, !c->c_eof &&
	    (c->state == NET_PROXY_HEAD ||
	    net_proxy_qlen(&c->to_s) < NET_PROXY_BUF_MAX));
	net_proxy_watch(loop, &c->cwr, net_proxy_qlen(&c->to_c) > 0);
	net_proxy_watch(loop, &c->srd, open && !c->s_eof &&
	    net_proxy_qlen(&c->to_c) < NET_PROXY_BUF_MAX);
	net_proxy_watch(loop, &c->swr, c->state == NET_PROXY_CONNECTING ||
	    (open && net_proxy_qlen(&c->to_s) > 0 && !c->s_shut));
}

static void
net_proxy_conn_new(struct net_proxy *px, int fd)
{
	struct net_proxy_conn	*c;

	c = xcalloc(1, sizeof *c);
	c->px = px;
	c->cfd = fd;
	c->sfd = -1;
	ev_io_init(&c->crd, net_proxy_client_read_cb, fd, EV_READ);
	ev_io_init(&c->cwr, net_proxy_client_write_cb, fd, EV_WRITE);
	ev_io_init(&c->srd, net_proxy_server_read_cb, -1, EV_READ);
	ev_io_init(&c->swr, net_proxy_server_write_cb, -1, EV_WRITE);
	ev_timer_init(&c->timer, net_proxy_timer_cb, 0., 0.);
	c->crd.data = c->cwr.data = c->srd.data = c->swr.data = c;
	c->timer.data = c;
	TAILQ_INSERT_TAIL(&px->conns, c, entry);
	px->nconns++;
	if (px->host != NULL) {
		c->kind = "tcp";
		c->host = xstrdup(px->host);
		c->port = px->port;
		c->state = NET_PROXY_LOOKUP;
		net_proxy_start(c);
	} else {
		c->state = NET_PROXY_HEAD;
		net_proxy_timer(c, NET_PROXY_HEAD_TIMEOUT);
	}
	net_proxy_update(c);
}

/* Take every connection slirp has made. */
void
net_proxy_accept(struct net_proxy *px)
{
	int	fd;

	for (;;) {
		fd = accept4(px->fd, NULL, NULL, SOCK_NONBLOCK|SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			/*
			 * Out of descriptors: the listener stays readable,
			 * so watching it now would spin the loop. Wait,
			 * leaving the connection in the backlog.
			 */
			if ((errno == EMFILE || errno == ENFILE) &&
			    !ev_is_active(&px->backoff)) {
				net_note(px->net, px->host != NULL ? "tcp" :
				    "http", "(any)", 0, "qsup is out of file "
				    "descriptors");
				ev_io_stop(px->loop, &px->accept);
				ev_timer_set(&px->backoff, NET_PROXY_BACKOFF,
				    0);
				ev_timer_start(px->loop, &px->backoff);
			}
			return;
		}
		/*
		 * NET_CONNS_MAX over all listeners together, counted in net:
		 * each connection holds two descriptors and two buffers.
		 */
		if (px->net->nconns >= NET_CONNS_MAX) {
			net_note(px->net, px->host != NULL ? "tcp" : "http",
			    "(any)", 0, "too many connections at once");
			close(fd);
			continue;
		}
		px->net->nconns++;
		net_proxy_conn_new(px, fd);
	}
}

static void
net_proxy_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	net_proxy_accept(w->data);
}

static void
net_proxy_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct net_proxy	*px = w->data;

	(void)revents;
	ev_io_start(loop, &px->accept);
	net_proxy_accept(px);
}

/*
 * A listener on the unix socket path: the HTTP proxy (host NULL), or a
 * TCP map to host:port.
 */
struct net_proxy *
net_proxy_new(struct net *net, const char *path, const char *host, int port,
    char **cause)
{
	struct net_proxy	*px;
	struct sockaddr_un	 sun;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof sun.sun_path) {
		xasprintf(cause, "%s: path too long for a unix socket", path);
		return (NULL);
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	px = xcalloc(1, sizeof *px);
	px->net = net;
	px->loop = net->loop;
	px->path = xstrdup(path);
	px->host = host != NULL ? xstrdup(host) : NULL;
	px->port = port;
	TAILQ_INIT(&px->conns);
	px->fd = socket(AF_UNIX, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	if (px->fd == -1) {
		xasprintf(cause, "socket: %s", strerror(errno));
		goto fail;
	}
	unlink(path);
	if (bind(px->fd, (struct sockaddr *)&sun, sizeof sun) == -1 ||
	    listen(px->fd, SOMAXCONN) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	ev_io_init(&px->accept, net_proxy_accept_cb, px->fd, EV_READ);
	px->accept.data = px;
	ev_io_start(px->loop, &px->accept);
	ev_init(&px->backoff, net_proxy_backoff_cb);
	px->backoff.data = px;
	return (px);
fail:
	net_proxy_free(px);
	return (NULL);
}

void
net_proxy_free(struct net_proxy *px)
{
	struct net_proxy_conn	*c;

	if (px == NULL)
		return;
	while ((c = TAILQ_FIRST(&px->conns)) != NULL)
		net_proxy_conn_free(c);
	ev_io_stop(px->loop, &px->accept);
	ev_timer_stop(px->loop, &px->backoff);
	if (px->fd != -1) {
		close(px->fd);
		px->fd = -1;
		unlink(px->path);
	}
	free(px->path);
	free(px->host);
	free(px);
}
