/*
 * The guest's network: a libslirp stack inside qsup's loop. QEMU gets one
 * end of a socketpair (-netdev stream: each Ethernet frame preceded by its
 * length, 4 bytes big-endian) and has no network access of its own. Every
 * frame the guest sends is read here and given to slirp; every frame slirp
 * makes is queued back, at most NET_OUT_MAX bytes (beyond that frames are
 * dropped, and TCP in the guest retransmits).
 *
 * What the guest can make qsup hold is bounded, each with its own limit:
 *   frames to QEMU	NET_OUT_MAX queued, then dropped
 *   frames from QEMU	NET_IN_SIZE read at a time; QEMU waits meanwhile
 *   IPv4 fragments	none: every one is dropped (net_fragment)
 *   slirp's sockets	NET_SOCKETS_MAX (every guest connection, UDP flow
 *			or ping slirp opens one for); past it new ones are
 *			dropped: a SYN is sent again by the guest
 *   proxy and maps	NET_CONNS_MAX connections in all (net_conn_open),
 *			PX_BUF_MAX each way each (net_proxy.c)
 *   DNS		DNS_PENDING_MAX lookups at once (net_dns.c)
 *   the listing	NET_DESTS_MAX destinations, then only counted
 *
 * The modes (profile "network"):
 *   none        no card; net_new makes nothing
 *   restricted  slirp restrict=on: the guest reaches nothing, not even the
 *               host's loopback through 10.0.2.2; DNS answers NXDOMAIN
 *   allowlist   restricted, plus the HTTP proxy at 10.0.2.100:3128 and the
 *               TCP maps: slirp_add_unix turns each guest connection into
 *               one connection to a unix socket of net_proxy.c; DNS
 *               answers the names the rules allow (net_dns.c)
 *   open        slirp unrestricted: everything, the host's 127.0.0.1 too
 *
 * slirp is driven by its fill/poll API: an ev_prepare asks it which of its
 * sockets to watch (ev_io each) and for how long it may sleep (ev_timer),
 * an ev_check of the lowest priority lets it act on what the ev_io
 * callbacks saw, after all of them have run.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <slirp/libslirp.h>

#include "net_int.h"

#define NET_FRAME_MAX		(65535 + 14)	/* the largest MTU, framed */
#define NET_IN_SIZE		(256 * 1024)	/* > a frame and its length */
#define NET_OUT_MAX		(4 * 1024 * 1024)
#define NET_DESTS_MAX		256
#define NET_ACCEPT_EVERY	128		/* frames between accepts */
#define NET_SOCKBUF		(1024 * 1024)
#define NET_SOCKETS_MAX		384		/* slirp's, at once */
#define NET_NOTE_LOG_MAX	5		/* -v lines per destination */

/* One of slirp's sockets, watched for it. */
struct net_pollfd {
	ev_io		 io;
	struct net	*net;
	int		 events;	/* EV_READ|EV_WRITE, as last asked */
	int		 revents;	/* SLIRP_POLL_*, since the last poll */
	unsigned int	 gen;		/* the fill that last asked for it */
	int		 registered;	/* slirp has it open (nsockets) */
};

struct net_timer {
	ev_timer	 t;
	struct net	*net;
	SlirpTimerCb	 cb;
	void		*arg;
};

/* A guest address:port that leads into one of our listeners. */
struct net_map {
	struct net_proxy	*px;
	char			*name;		/* answered by DNS, or NULL */
	struct in_addr		 addr;
	int			 port;
	char			*to;		/* "host:port"; NULL: the proxy */
	TAILQ_ENTRY(net_map)	 entry;
};
TAILQ_HEAD(net_maps, net_map);

struct net_fwd {
	char		*addr;
	int		 host_port;
	int		 guest_port;
};

struct net {
	struct ev_loop		*loop;
	enum net_mode	 mode;
	struct net_rule	*rules;
	size_t			 nrules;

	Slirp			*slirp;
	int			 fd;		/* ours */
	int			 qemu_fd;	/* QEMU's, until it has it */
	int			 link_dead;
	ev_io			 rd;
	ev_io			 wr;
	ev_prepare		 prepare;
	ev_check		 check;
	ev_timer		 tick;
	unsigned char		*in;
	size_t			 inlen;
	struct buf		 out;
	size_t			 outoff;	/* written from out */

	struct net_pollfd	**pfds;		/* by fd */
	size_t			 npfds;
	unsigned int		 gen;
	int			 nsockets;	/* slirp's open sockets */

	int			 nconns;	/* net_conn_open() */

	char			*dir;		/* the unix sockets */
	int			 own_dir;
	int			 nsock;
	struct net_maps		 maps;
	int			 nmapaddrs;	/* guest addresses of TCP maps */
	struct net_resolver	*resolver;
	struct net_dns		*dns;
	struct net_fwd		*fwds;
	size_t			 nfwds;
	char			*args[5];
	char			*env[7];

	struct net_stats	 stats;
	struct net_dest		*dests;
	size_t			 ndests;
};

static void	net_flush(struct net *);

/* A frame slirp made, for the guest. */
static ssize_t
net_send_packet_cb(const void *buf, size_t len, void *arg)
{
	net_send_frame(arg, buf, len);
	return ((ssize_t)len);
}

void
net_send_frame(struct net *net, const void *buf, size_t len)
{
	unsigned char	hdr[4];

	if (net->link_dead || len > NET_FRAME_MAX)
		return;
	if (net->out.len - net->outoff + len + 4 > NET_OUT_MAX) {
		net->stats.frames_dropped++;
		return;
	}
	hdr[0] = (len >> 24) & 0xff;
	hdr[1] = (len >> 16) & 0xff;
	hdr[2] = (len >> 8) & 0xff;
	hdr[3] = len & 0xff;
	buf_add(&net->out, hdr, 4);
	buf_add(&net->out, buf, len);
	net->stats.frames_out++;
}

static void
net_guest_error_cb(const char *msg, void *arg)
{
	(void)arg;
	log_debug("net: the guest's network misbehaves: %s", msg);
}

static int64_t
net_clock_get_ns_cb(void *arg)
{
	struct timespec	ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

static void
net_timer_fire_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct net_timer	*t = w->data;

	(void)loop;
	(void)revents;
	t->cb(t->arg);
}

static void *
net_timer_new_cb(SlirpTimerCb cb, void *cb_arg, void *arg)
{
	struct net_timer	*t;

	t = xcalloc(1, sizeof *t);
	t->net = arg;
	t->cb = cb;
	t->arg = cb_arg;
	ev_timer_init(&t->t, net_timer_fire_cb, 0., 0.);
	t->t.data = t;
	return (t);
}

static void
net_timer_free_cb(void *timer, void *arg)
{
	struct net_timer	*t = timer;

	(void)arg;
	ev_timer_stop(t->net->loop, &t->t);
	free(t);
}

/* expire is in milliseconds of net_clock_get_ns_cb's clock. */
static void
net_timer_mod_cb(void *timer, int64_t expire, void *arg)
{
	struct net_timer	*t = timer;
	double			 delay;

	delay = (double)(expire - net_clock_get_ns_cb(arg) / 1000000) / 1e3;
	ev_timer_stop(t->net->loop, &t->t);
	ev_timer_set(&t->t, delay > 0 ? delay : 0., 0.);
	ev_timer_start(t->net->loop, &t->t);
}

static struct net_pollfd *
net_pollfd(struct net *net, int fd)
{
	size_t	n;

	if ((size_t)fd >= net->npfds) {
		n = (size_t)fd + 64;
		net->pfds = xreallocarray(net->pfds, n, sizeof *net->pfds);
		memset(net->pfds + net->npfds, 0,
		    (n - net->npfds) * sizeof *net->pfds);
		net->npfds = n;
	}
	return (net->pfds[fd]);
}

static void
net_pollfd_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct net_pollfd	*p = w->data;

	(void)loop;
	if (revents & EV_READ)
		p->revents |= SLIRP_POLL_IN;
	if (revents & EV_WRITE)
		p->revents |= SLIRP_POLL_OUT;
}

static struct net_pollfd *
net_pollfd_make(struct net *net, int fd)
{
	struct net_pollfd	*p;

	if ((p = net_pollfd(net, fd)) == NULL) {
		p = xcalloc(1, sizeof *p);
		p->net = net;
		ev_io_init(&p->io, net_pollfd_io_cb, fd, 0);
		p->io.data = p;
		net->pfds[fd] = p;
	}
	return (p);
}

/* slirp opened fd for one of its sockets: count it (NET_SOCKETS_MAX). */
static void
net_register_poll_fd_cb(int fd, void *arg)
{
	struct net		*net = arg;
	struct net_pollfd	*p;

	if (fd < 0)
		return;
	p = net_pollfd_make(net, fd);
	if (!p->registered) {
		p->registered = 1;
		net->nsockets++;
	}
}

/* slirp is done with fd (and may close it now): stop watching it. */
static void
net_unregister_poll_fd_cb(int fd, void *arg)
{
	struct net		*net = arg;
	struct net_pollfd	*p;

	if (fd < 0 || (p = net_pollfd(net, fd)) == NULL)
		return;
	ev_io_stop(net->loop, &p->io);
	p->events = p->revents = 0;
	if (p->registered) {
		p->registered = 0;
		net->nsockets--;
	}
}

static void
net_notify_cb(void *arg)
{
	(void)arg;
}

static const SlirpCb net_slirp_cbs = {
	.send_packet = net_send_packet_cb,
	.guest_error = net_guest_error_cb,
	.clock_get_ns = net_clock_get_ns_cb,
	.timer_new = net_timer_new_cb,
	.timer_free = net_timer_free_cb,
	.timer_mod = net_timer_mod_cb,
	.register_poll_fd = net_register_poll_fd_cb,
	.unregister_poll_fd = net_unregister_poll_fd_cb,
	.notify = net_notify_cb,
};

/* slirp_pollfds_fill: slirp wants fd watched for events. */
static int
net_add_poll_cb(int fd, int events, void *arg)
{
	struct net		*net = arg;
	struct net_pollfd	*p;
	int			 want = 0;

	if (events & (SLIRP_POLL_IN|SLIRP_POLL_PRI))
		want |= EV_READ;
	if (events & SLIRP_POLL_OUT)
		want |= EV_WRITE;
	p = net_pollfd_make(net, fd);
	p->gen = net->gen;
	if (want != p->events || (want != 0) != ev_is_active(&p->io)) {
		ev_io_stop(net->loop, &p->io);
		ev_io_set(&p->io, fd, want);
		if (want != 0)
			ev_io_start(net->loop, &p->io);
		p->events = want;
	}
	return (fd);
}

/* slirp_pollfds_poll: what was seen on fd; cleared once told. */
static int
net_get_revents_cb(int idx, void *arg)
{
	struct net		*net = arg;
	struct net_pollfd	*p;
	int			 revents;

	if (idx < 0 || (p = net_pollfd(net, idx)) == NULL)
		return (0);
	revents = p->revents;
	p->revents = 0;
	return (revents);
}

static void
net_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct net		*net = w->data;
	struct net_pollfd	*p;
	uint32_t		 timeout = UINT32_MAX;
	size_t			 i;

	(void)revents;
	net->gen++;
	slirp_pollfds_fill(net->slirp, &timeout, net_add_poll_cb, net);
	for (i = 0; i < net->npfds; i++) {
		if ((p = net->pfds[i]) == NULL || p->gen == net->gen)
			continue;
		if (ev_is_active(&p->io))
			ev_io_stop(loop, &p->io);
		p->events = p->revents = 0;
	}
	ev_timer_stop(loop, &net->tick);
	if (timeout != UINT32_MAX) {
		ev_timer_set(&net->tick, timeout / 1e3, 0.);
		ev_timer_start(loop, &net->tick);
	}
	net_flush(net);
}

static void
net_check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	struct net	*net = w->data;

	(void)loop;
	(void)revents;
	slirp_pollfds_poll(net->slirp, 0, net_get_revents_cb, net);
}

/* Only wakes the loop, so that slirp's timers run in net_check_cb. */
static void
net_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/* QEMU went away, or broke the framing: no more frames either way. */
static void
net_link_down(struct net *net, const char *why)
{
	if (net->link_dead)
		return;
	net->link_dead = 1;
	ev_io_stop(net->loop, &net->rd);
	ev_io_stop(net->loop, &net->wr);
	buf_free(&net->out);
	net->outoff = 0;
	log_debug("net: link to QEMU down: %s", why);
}

static void
net_flush(struct net *net)
{
	ssize_t	n;

	while (net->outoff < net->out.len) {
		n = send(net->fd, net->out.data + net->outoff,
		    net->out.len - net->outoff, MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!ev_is_active(&net->wr))
					ev_io_start(net->loop, &net->wr);
				/* Keep the buffer from creeping. */
				if (net->outoff > net->out.len / 2) {
					buf_consume(&net->out, net->outoff);
					net->outoff = 0;
				}
				return;
			}
			net_link_down(net, strerror(errno));
			return;
		}
		net->outoff += (size_t)n;
	}
	buf_consume(&net->out, net->out.len);
	net->outoff = 0;
	ev_io_stop(net->loop, &net->wr);
}

static void
net_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	net_flush(w->data);
}

/* Is addr:port (network order) one of our listeners in the guest? */
static int
net_map_at(struct net *net, const unsigned char *addr, int port)
{
	struct net_map	*m;

	TAILQ_FOREACH(m, &net->maps, entry) {
		if (memcmp(&m->addr, addr, 4) == 0 && m->port == port)
			return (1);
	}
	return (0);
}

/* The IPv4 header of frame f, or NULL; *ihl is its length. */
static const unsigned char *
net_ipv4(const unsigned char *f, size_t len, size_t *ihl)
{
	const unsigned char	*ip = f + 14;

	if (len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00)
		return (NULL);
	*ihl = (size_t)(ip[0] & 0x0f) * 4;
	if ((ip[0] >> 4) != 4 || *ihl < 20 || 14 + *ihl > len)
		return (NULL);
	return (ip);
}

/* The IPv4 destination of ip, with port unless it is 0. */
static void
net_dest(char *dest, size_t size, const unsigned char *ip, int port)
{
	if (port != 0)
		snprintf(dest, size, "%u.%u.%u.%u:%d", ip[16], ip[17], ip[18],
		    ip[19], port);
	else
		snprintf(dest, size, "%u.%u.%u.%u", ip[16], ip[17], ip[18],
		    ip[19]);
}

/*
 * Would slirp open a flow of its own for this frame: a TCP SYN, a UDP
 * datagram (but DHCP, which slirp answers itself) or a ping? Then 1, with
 * its IPv4 header, its kind and its destination port (0 for a ping).
 */
static int
net_new_flow(const unsigned char *f, size_t len, const unsigned char **ipp,
    const char **kind, int *port)
{
	const unsigned char	*ip, *l4;
	size_t			 ihl;

	if ((ip = net_ipv4(f, len, &ihl)) == NULL || 14 + ihl + 8 > len ||
	    (((ip[6] << 8) | ip[7]) & 0x1fff) != 0)
		return (0);
	l4 = ip + ihl;
	*ipp = ip;
	*port = 0;
	switch (ip[9]) {
	case IPPROTO_TCP:
		if (14 + ihl + 14 > len || (l4[13] & 0x12) != 0x02)
			return (0);		/* not a SYN */
		*kind = "tcp";
		*port = (l4[2] << 8) | l4[3];
		return (1);
	case IPPROTO_UDP:
		*kind = "udp";
		*port = (l4[2] << 8) | l4[3];
		return (*port != 67);		/* DHCP, answered by slirp */
	case IPPROTO_ICMP:
		*kind = "icmp";
		return (l4[0] == 8);		/* an echo request */
	default:
		return (0);
	}
}

/*
 * Count what restricted slirp is about to refuse: a new TCP connection,
 * a UDP datagram or a ping to anywhere but our listeners (DNS and DHCP
 * are answered). A TCP SYN still goes to slirp, which answers with a
 * reset (the guest's connect fails at once rather than time out); UDP and
 * pings are dropped here: slirp answers pings to its own addresses, and a
 * reply from 10.0.2.2 would look like the host being reachable. Returns
 * 1 when the frame is to be dropped.
 */
static int
net_watch_frame(struct net *net, const unsigned char *f, size_t len)
{
	const unsigned char	*ip;
	const char		*kind;
	char			 dest[64];
	int			 port;

	if (!net_new_flow(f, len, &ip, &kind, &port) ||
	    (ip[9] == IPPROTO_TCP && net_map_at(net, ip + 16, port)))
		return (0);
	net_dest(dest, sizeof dest, ip, port);
	net_note(net, kind, dest, 0, net->mode == NET_MODE_ALLOWLIST ?
	    "the guest reaches out only through the proxy at "
	    NET_PROXY_ADDR " and the TCP maps" : "the network is restricted");
	return (ip[9] != IPPROTO_TCP);
}

/*
 * A fragment of an IPv4 datagram: 1, it is dropped, in every mode. The
 * libslirp qsup is built with (4.7) keeps every fragment until its
 * datagram is whole, for up to 30 s and with no limit (20,000 datagrams of
 * 60 KB took qsup to 1 GB), and it crashes on a last fragment that comes
 * before any other of its datagram; neither can be told to it. qsup's own
 * DNS and the proxy's TCP never need fragments; in open mode a datagram
 * larger than the guest's MTU (16 KiB) does not get through.
 */
static int
net_fragment(struct net *net, const unsigned char *f, size_t len)
{
	const unsigned char	*ip;
	char			 dest[INET_ADDRSTRLEN];
	size_t			 ihl;

	if ((ip = net_ipv4(f, len, &ihl)) == NULL ||
	    (((ip[6] << 8) | ip[7]) & 0x3fff) == 0)
		return (0);		/* not a fragment */
	net->stats.fragments_dropped++;
	net_dest(dest, sizeof dest, ip, 0);
	net_note(net, "fragment", dest, 0, "IPv4 fragments are dropped");
	return (1);
}

/*
 * Would slirp open a socket for this frame while it has NET_SOCKETS_MAX
 * already? Then 1: it is dropped (a TCP SYN comes again, slowing the
 * guest down; a UDP datagram or a ping is lost).
 */
static int
net_sockets_full(struct net *net, const unsigned char *f, size_t len)
{
	const unsigned char	*ip;
	const char		*kind;
	char			 dest[64];
	int			 port;

	if (net->nsockets < NET_SOCKETS_MAX ||
	    !net_new_flow(f, len, &ip, &kind, &port))
		return (0);
	net_dest(dest, sizeof dest, ip, 0);
	net_note(net, kind, dest, 0, "too many connections at once");
	return (1);
}

/* One frame from the guest. */
static void
net_frame(struct net *net, const unsigned char *frame, size_t len)
{
	net->stats.frames_in++;
	if (net_fragment(net, frame, len))
		return;
	if (net->dns != NULL && net_dns_frame(net->dns, frame, len))
		return;
	if (net->mode != NET_MODE_OPEN && net_watch_frame(net, frame, len))
		return;
	if (net_sockets_full(net, frame, len))
		return;
	slirp_input(net->slirp, frame, (int)len);
}

static void
net_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct net	*net = w->data;
	struct net_map	*m;
	size_t		 off = 0, len;
	ssize_t		 n;
	unsigned int	 frames = 0;
	const unsigned char *p;

	(void)loop;
	(void)revents;
	n = recv(net->fd, net->in + net->inlen, NET_IN_SIZE - net->inlen,
	    MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		net_link_down(net, n == 0 ? "QEMU closed its end" :
		    strerror(errno));
		return;
	}
	net->inlen += (size_t)n;
	while (net->inlen - off >= 4) {
		p = net->in + off;
		len = ((size_t)p[0] << 24) | ((size_t)p[1] << 16) |
		    ((size_t)p[2] << 8) | p[3];
		if (len > NET_FRAME_MAX) {
			log_warnx("net: QEMU sent a frame of %zu bytes; "
			    "closing the guest's network", len);
			net_link_down(net, "frame too large");
			return;
		}
		if (net->inlen - off - 4 < len)
			break;
		if (len >= 14)
			net_frame(net, p + 4, len);
		off += 4 + len;
		/*
		 * slirp connects to our unix sockets with a blocking
		 * connect(2): accept now and then, so that a guest opening
		 * thousands of connections at once cannot fill the backlog
		 * and hang the loop inside slirp.
		 */
		if (++frames % NET_ACCEPT_EVERY == 0) {
			TAILQ_FOREACH(m, &net->maps, entry)
				net_proxy_accept(m->px);
		}
	}
	if (off > 0) {
		memmove(net->in, net->in + off, net->inlen - off);
		net->inlen -= off;
	}
}

static void
net_note_log(const char *kind, const char *dest, int allowed, const char *why)
{
	if (allowed)
		log_debug("net: %s %s", kind, dest);
	else
		log_debug("net: refused %s %s: %s", kind, dest, why);
}

/*
 * Count and remember one attempt of the guest's, for -v and --json; -v
 * says the first few of each as they come.
 */
void
net_note(struct net *net, const char *kind, const char *dest, int allowed,
    const char *why)
{
	struct net_dest	*d;
	size_t		 i;

	if (allowed)
		net->stats.allowed++;
	else
		net->stats.refused++;
	for (i = 0; i < net->ndests; i++) {
		d = &net->dests[i];
		if (d->allowed == allowed && strcmp(d->kind, kind) == 0 &&
		    strcmp(d->dest, dest) == 0) {
			/* A flood says so at the end, with its count. */
			if (d->count++ < NET_NOTE_LOG_MAX)
				net_note_log(kind, dest, allowed, why);
			return;
		}
	}
	if (net->ndests == NET_DESTS_MAX) {
		if (net->stats.dests_dropped++ < NET_NOTE_LOG_MAX)
			net_note_log(kind, dest, allowed, why);
		return;
	}
	net_note_log(kind, dest, allowed, why);
	net->dests = xreallocarray(net->dests, net->ndests + 1,
	    sizeof *net->dests);
	d = &net->dests[net->ndests++];
	d->kind = kind;
	d->dest = xstrdup(dest);
	d->allowed = allowed;
	d->why = why != NULL ? xstrdup(why) : NULL;
	d->count = 1;
	net->stats.dests = net->dests;
	net->stats.ndests = net->ndests;
}

/*
 * One more connection through the proxy or a TCP map, if there is room
 * (NET_CONNS_MAX for all listeners together: each holds two descriptors
 * and two buffers); -1 if not. net_conn_close gives it back.
 */
int
net_conn_open(struct net *net)
{
	if (net->nconns >= NET_CONNS_MAX)
		return (-1);
	net->nconns++;
	return (0);
}

void
net_conn_close(struct net *net)
{
	net->nconns--;
}

const struct net_rule *
net_rules(struct net *net, size_t *n)
{
	*n = net->nrules;
	return (net->rules);
}

enum net_mode
net_mode(struct net *net)
{
	return (net->mode);
}

struct net_resolver *
net_resolver(struct net *net)
{
	return (net->resolver);
}

struct ev_loop *
net_loop(struct net *net)
{
	return (net->loop);
}

/* The guest address of the TCP map named name, for DNS. */
int
net_map_find(struct net *net, const char *name, struct in_addr *addr)
{
	struct net_map	*m;
	size_t		 len;

	len = strlen(name);
	if (len > 0 && name[len - 1] == '.')
		len--;
	TAILQ_FOREACH(m, &net->maps, entry) {
		if (m->name != NULL && strlen(m->name) == len &&
		    strncasecmp(m->name, name, len) == 0) {
			*addr = m->addr;
			return (0);
		}
	}
	return (-1);
}

/* A listener of net_proxy.c, reached by the guest at addr:port. */
static int
net_map_add(struct net *net, const char *name, struct in_addr addr,
    int port, const char *host, int host_port, char **cause)
{
	struct net_map	*m;
	char		*path;
	struct in_addr	 a = addr;

	xasprintf(&path, "%s/net%d.sock", net->dir, net->nsock++);
	m = xcalloc(1, sizeof *m);
	m->addr = addr;
	m->port = port;
	if ((m->px = net_proxy_new(net, path, host, host_port, cause)) ==
	    NULL)
		goto fail;
	if (slirp_add_unix(net->slirp, path, &a, port) == -1) {
		xasprintf(cause, "%s:%d is taken in the guest's network",
		    inet_ntoa(addr), port);
		goto fail;
	}
	m->name = name != NULL ? xstrdup(name) : NULL;
	if (host != NULL)
		xasprintf(&m->to, strchr(host, ':') != NULL ? "[%s]:%d" :
		    "%s:%d", host, host_port);
	TAILQ_INSERT_TAIL(&net->maps, m, entry);
	free(path);
	return (0);
fail:
	net_proxy_free(m->px);
	free(m);
	free(path);
	return (-1);
}

static int
net_make_dir(struct net *net, const char *dir, char **cause)
{
	const char	*tmp;

	if (dir != NULL) {
		net->dir = xstrdup(dir);
		return (0);
	}
	if ((tmp = getenv("TMPDIR")) == NULL || *tmp != '/')
		tmp = "/tmp";
	xasprintf(&net->dir, "%s/qsup-net.XXXXXX", tmp);
	if (mkdtemp(net->dir) == NULL) {
		xasprintf(cause, "mkdtemp %s: %s", net->dir, strerror(errno));
		return (-1);
	}
	net->own_dir = 1;
	return (0);
}

static void
net_copy_rules(struct net *net, const struct net_config *cfg)
{
	struct net_rule	*r;
	size_t			 i;

	if (cfg->nrules == 0)
		return;
	net->rules = xcalloc(cfg->nrules, sizeof *net->rules);
	for (i = 0; i < cfg->nrules; i++) {
		r = &net->rules[i];
		*r = cfg->rules[i];
		r->text = cfg->rules[i].text != NULL ?
		    xstrdup(cfg->rules[i].text) : NULL;
		r->host = cfg->rules[i].host != NULL ?
		    xstrdup(cfg->rules[i].host) : NULL;
	}
	net->nrules = cfg->nrules;
}

static int
net_start_slirp(struct net *net, char **cause)
{
	SlirpConfig	cfg;

	memset(&cfg, 0, sizeof cfg);
	cfg.version = 4;
	cfg.restricted = net->mode != NET_MODE_OPEN;
	cfg.in_enabled = true;
	inet_pton(AF_INET, "10.0.2.0", &cfg.vnetwork);
	inet_pton(AF_INET, "255.255.255.0", &cfg.vnetmask);
	inet_pton(AF_INET, NET_HOST_ADDR, &cfg.vhost);
	inet_pton(AF_INET, NET_GUEST_ADDR, &cfg.vdhcp_start);
	inet_pton(AF_INET, NET_DNS_ADDR, &cfg.vnameserver);
	cfg.in6_enabled = false;
	inet_pton(AF_INET6, "fec0::", &cfg.vprefix_addr6);
	cfg.vprefix_len = 64;
	inet_pton(AF_INET6, "fec0::2", &cfg.vhost6);
	inet_pton(AF_INET6, "fec0::3", &cfg.vnameserver6);
	/*
	 * A large MTU saves the guest work per packet, and the guest learns
	 * it from the device (host_mtu). But slirp's TCP has no window
	 * scaling: its window is 64 KiB at most, and with 64 KiB segments a
	 * download stalled for seconds at a time (one segment per window:
	 * no fast retransmit, silly-window avoidance, persist timer). 16 KiB
	 * keeps four segments in a window and was the fastest measured.
	 */
	cfg.if_mtu = NET_MTU;
	cfg.if_mru = NET_MTU;
	cfg.disable_host_loopback = false;
	cfg.enable_emu = false;
	if ((net->slirp = slirp_new(&cfg, &net_slirp_cbs, net)) == NULL) {
		xasprintf(cause, "libslirp refused its configuration");
		return (-1);
	}

	net->in = xmalloc(NET_IN_SIZE);
	ev_init(&net->rd, net_read_cb);
	net->rd.data = net;
	ev_init(&net->wr, net_write_cb);
	net->wr.data = net;
	ev_prepare_init(&net->prepare, net_prepare_cb);
	net->prepare.data = net;
	ev_check_init(&net->check, net_check_cb);
	net->check.data = net;
	ev_set_priority(&net->check, EV_MINPRI);
	ev_timer_init(&net->tick, net_tick_cb, 0., 0.);
	net->tick.data = net;
	ev_prepare_start(net->loop, &net->prepare);
	ev_check_start(net->loop, &net->check);
	if (net_relink(net, cause) == -1)
		return (-1);

	xasprintf(&net->args[0], "-netdev");
	xasprintf(&net->args[2], "-device");
	xasprintf(&net->args[3], "virtio-net-device,netdev=net0,mac=%s,"
	    "host_mtu=%d", NET_GUEST_MAC, NET_MTU);
	return (0);
}

/*
 * A new link to QEMU: a socketpair, its watcher, the -netdev argument
 * naming QEMU's end. Also after a QEMU went away (a failed restore is
 * followed by a boot): slirp and what it holds stay, the link is new.
 */
int
net_relink(struct net *net, char **cause)
{
	int	sv[2], size = NET_SOCKBUF;

	if (net->slirp == NULL)
		return (0);
	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	ev_io_stop(net->loop, &net->rd);
	ev_io_stop(net->loop, &net->wr);
	if (net->fd != -1)
		close(net->fd);
	net_qemu_started(net);
	net->fd = sv[0];
	net->qemu_fd = sv[1];
	net->link_dead = 0;
	net->inlen = 0;
	buf_free(&net->out);
	net->outoff = 0;
	util_set_nonblock(net->fd);
	/* Fewer wake-ups in bulk transfers; best effort. */
	setsockopt(net->fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
	setsockopt(net->fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	setsockopt(net->qemu_fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
	setsockopt(net->qemu_fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	ev_io_set(&net->rd, net->fd, EV_READ);
	ev_io_set(&net->wr, net->fd, EV_WRITE);
	ev_io_start(net->loop, &net->rd);
	free(net->args[1]);
	xasprintf(&net->args[1], "stream,id=net0,server=off,addr.type=fd,"
	    "addr.str=%d", net->qemu_fd);
	return (0);
}

/*
 * The guest's network for cfg->mode. For "none" nothing is made and
 * net_qemu_fd() is -1; otherwise QEMU must get net_qemu_fd() (clear its
 * close-on-exec in the child) and net_qemu_args(), and the caller calls
 * net_qemu_started() once it has forked.
 */
struct net *
net_new(struct ev_loop *loop, const struct net_config *cfg, char **cause)
{
	struct net	*net;
	struct in_addr	 addr;

	net = xcalloc(1, sizeof *net);
	net->loop = loop;
	net->mode = cfg->mode;
	net->fd = net->qemu_fd = -1;
	TAILQ_INIT(&net->maps);
	net_copy_rules(net, cfg);
	if (net->mode == NET_MODE_NONE)
		return (net);

	net->resolver = net_resolver_new(loop);
	if (net_make_dir(net, cfg->dir, cause) == -1)
		goto fail;
	if (net_start_slirp(net, cause) == -1)
		goto fail;
	if (net->mode != NET_MODE_OPEN)
		net->dns = net_dns_new(net);
	if (net->mode == NET_MODE_ALLOWLIST) {
		inet_pton(AF_INET, NET_PROXY_ADDR, &addr);
		if (net_map_add(net, NULL, addr, NET_PROXY_PORT, NULL, 0,
		    cause) == -1)
			goto fail;
		xasprintf(&net->env[0], "http_proxy=http://%s:%d",
		    NET_PROXY_ADDR, NET_PROXY_PORT);
		xasprintf(&net->env[1], "https_proxy=http://%s:%d",
		    NET_PROXY_ADDR, NET_PROXY_PORT);
		xasprintf(&net->env[2], "HTTP_PROXY=http://%s:%d",
		    NET_PROXY_ADDR, NET_PROXY_PORT);
		xasprintf(&net->env[3], "HTTPS_PROXY=http://%s:%d",
		    NET_PROXY_ADDR, NET_PROXY_PORT);
		net->env[4] = xstrdup("no_proxy=localhost,127.0.0.1,::1");
		net->env[5] = xstrdup("NO_PROXY=localhost,127.0.0.1,::1");
	}
	return (net);
fail:
	net_free(net);
	return (NULL);
}

/* The socket QEMU must inherit, or -1 without a card. */
int
net_qemu_fd(struct net *net)
{
	return (net->qemu_fd);
}

/*
 * "-netdev", "stream,...,addr.str=FD", "-device", "virtio-net-device,...",
 * NULL; just NULL without a card. FD is net_qemu_fd()'s number.
 */
char *const *
net_qemu_args(struct net *net)
{
	return (net->args);
}

/* What CMD's environment needs: the proxy, in allowlist mode. */
char *const *
net_guest_env(struct net *net)
{
	return (net->env);
}

/* QEMU has forked with its end: ours must not keep it open. */
void
net_qemu_started(struct net *net)
{
	if (net->qemu_fd != -1) {
		close(net->qemu_fd);
		net->qemu_fd = -1;
	}
}

static int
net_fwd_known(struct net *net, int port)
{
	size_t	i;

	for (i = 0; i < net->nfwds; i++) {
		if (net->fwds[i].host_port == port)
			return (1);
	}
	return (0);
}

struct net_find_port {
	struct in_addr	 addr;
	struct net	*net;
	int		 port;
};

/* slirp_pollfds_fill, to find the listener slirp just made. */
static int
net_find_port_cb(int fd, int events, void *arg)
{
	struct net_find_port	*f = arg;
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	int			 on = 0;
	socklen_t		 onlen = sizeof on;

	(void)events;
	if (f->port != 0)
		return (fd);
	if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &on, &onlen) == -1 ||
	    !on)
		return (fd);
	if (getsockname(fd, (struct sockaddr *)&sin, &len) == -1 ||
	    sin.sin_family != AF_INET ||
	    sin.sin_addr.s_addr != f->addr.s_addr)
		return (fd);
	if (!net_fwd_known(f->net, ntohs(sin.sin_port)))
		f->port = ntohs(sin.sin_port);
	return (fd);
}

/*
 * Forward TCP connections to addr:host_port on the host (addr NULL:
 * 127.0.0.1; host_port 0: a free port, put in *bound) to guest_port of the
 * guest. Works in every mode but "none".
 */
int
net_add_hostfwd(struct net *net, const char *addr, int host_port,
    int guest_port, int *bound, char **cause)
{
	struct net_find_port	 f;
	struct in_addr		 ha, ga;
	struct net_fwd		*fw;
	uint32_t		 timeout = UINT32_MAX;

	if (net->slirp == NULL) {
		xasprintf(cause, "cannot forward port %d: the guest has no "
		    "network card", guest_port);
		return (-1);
	}
	if (addr == NULL)
		addr = "127.0.0.1";
	if (inet_pton(AF_INET, addr, &ha) != 1) {
		xasprintf(cause, "%s: not an IPv4 address", addr);
		return (-1);
	}
	if (host_port < 0 || host_port > 65535 || guest_port < 1 ||
	    guest_port > 65535) {
		xasprintf(cause, "port out of range");
		return (-1);
	}
	ga.s_addr = 0;
	if (slirp_add_hostfwd(net->slirp, 0, ha, host_port, ga,
	    guest_port) == -1) {
		xasprintf(cause, "cannot listen on %s:%d: %s", addr,
		    host_port, strerror(errno));
		return (-1);
	}
	if (host_port == 0) {
		memset(&f, 0, sizeof f);
		f.addr = ha;
		f.net = net;
		slirp_pollfds_fill(net->slirp, &timeout, net_find_port_cb, &f);
		if (f.port == 0) {
			xasprintf(cause, "cannot find the port slirp chose "
			    "on %s", addr);
			return (-1);
		}
		host_port = f.port;
	}
	net->fwds = xreallocarray(net->fwds, net->nfwds + 1,
	    sizeof *net->fwds);
	fw = &net->fwds[net->nfwds++];
	fw->addr = xstrdup(addr);
	fw->host_port = host_port;
	fw->guest_port = guest_port;
	if (bound != NULL)
		*bound = host_port;
	log_debug("net: forwarding %s:%d to the guest's port %d", addr,
	    host_port, guest_port);
	return (0);
}

/*
 * Let the guest reach host:port (a name or an address, resolved at each
 * connection) through its own address and port guest_port; *guest_addr
 * (to free) says which address. name, if not NULL, resolves to it in the
 * guest. The map is the permission: no rule is consulted.
 */
int
net_add_tcp_map(struct net *net, const char *name, int guest_port,
    const char *host, int port, char **guest_addr, char **cause)
{
	struct in_addr	addr;

	if (net->slirp == NULL || net->mode == NET_MODE_OPEN) {
		xasprintf(cause, "TCP maps need network = \"restricted\" or "
		    "\"allowlist\"");
		return (-1);
	}
	if (name != NULL && !net_host_valid(name)) {
		xasprintf(cause, "%s: not a host name", name);
		return (-1);
	}
	if (guest_port < 1 || guest_port > 65535 || port < 1 ||
	    port > 65535) {
		xasprintf(cause, "port out of range");
		return (-1);
	}
	/* A name seen before keeps its address: DNS gives one per name. */
	if (name == NULL || net_map_find(net, name, &addr) == -1) {
		if (net->nmapaddrs == NET_MAPS_MAX) {
			xasprintf(cause, "too many TCP maps (at most %d)",
			    NET_MAPS_MAX);
			return (-1);
		}
		/* 10.0.2.101 for the first, and so on; .100 is the proxy's. */
		addr.s_addr = htonl(0x0a000200 + NET_MAP_FIRST +
		    (uint32_t)net->nmapaddrs++);
	}
	if (net_map_add(net, name, addr, guest_port, host, port, cause) ==
	    -1)
		return (-1);
	if (guest_addr != NULL)
		*guest_addr = xstrdup(inet_ntoa(addr));
	return (0);
}

void
net_stats(struct net *net, struct net_stats *st)
{
	*st = net->stats;
	st->dests = net->dests;
	st->ndests = net->ndests;
}

/* A JSON object for the --json summary. */
void
net_stats_json(struct net *net, struct buf *b)
{
	struct net_dest	*d;
	struct net_map	*m;
	size_t		 i;

	buf_printf(b, "{\"mode\":\"%s\",\"allowed\":%llu,\"refused\":%llu,"
	    "\"frames_in\":%llu,\"frames_out\":%llu,\"frames_dropped\":%llu,"
	    "\"fragments_dropped\":%llu,\"destinations\":[",
	    net_mode_name(net->mode), net->stats.allowed,
	    net->stats.refused, net->stats.frames_in, net->stats.frames_out,
	    net->stats.frames_dropped, net->stats.fragments_dropped);
	for (i = 0; i < net->ndests; i++) {
		d = &net->dests[i];
		buf_printf(b, "%s{\"kind\":\"%s\",\"dest\":", i > 0 ? "," : "",
		    d->kind);
		buf_json_string(b, d->dest);
		buf_printf(b, ",\"allowed\":%s,\"count\":%lu",
		    d->allowed ? "true" : "false", d->count);
		if (d->why != NULL) {
			buf_puts(b, ",\"why\":");
			buf_json_string(b, d->why);
		}
		buf_puts(b, "}");
	}
	buf_printf(b, "],\"destinations_not_listed\":%llu,\"forwards\":[",
	    net->stats.dests_dropped);
	for (i = 0; i < net->nfwds; i++)
		buf_printf(b, "%s{\"host\":\"%s:%d\",\"guest\":%d}",
		    i > 0 ? "," : "", net->fwds[i].addr,
		    net->fwds[i].host_port, net->fwds[i].guest_port);
	buf_puts(b, "],\"tcp_maps\":[");
	i = 0;
	TAILQ_FOREACH(m, &net->maps, entry) {
		if (m->to == NULL)
			continue;
		buf_printf(b, "%s{\"guest\":\"%s:%d\",\"name\":", i++ > 0 ?
		    "," : "", inet_ntoa(m->addr), m->port);
		if (m->name != NULL)
			buf_json_string(b, m->name);
		else
			buf_puts(b, "null");
		buf_puts(b, ",\"host\":");
		buf_json_string(b, m->to);
		buf_puts(b, "}");
	}
	buf_puts(b, "]");
	if (net->mode == NET_MODE_ALLOWLIST)
		buf_printf(b, ",\"proxy\":\"%s:%d\"", NET_PROXY_ADDR,
		    NET_PROXY_PORT);
	buf_puts(b, "}");
}

void
net_free(struct net *net)
{
	struct net_map	*m;
	size_t		 i;

	if (net == NULL)
		return;
	ev_io_stop(net->loop, &net->rd);
	ev_io_stop(net->loop, &net->wr);
	ev_prepare_stop(net->loop, &net->prepare);
	ev_check_stop(net->loop, &net->check);
	ev_timer_stop(net->loop, &net->tick);
	while ((m = TAILQ_FIRST(&net->maps)) != NULL) {
		TAILQ_REMOVE(&net->maps, m, entry);
		net_proxy_free(m->px);
		free(m->name);
		free(m->to);
		free(m);
	}
	net_dns_free(net->dns);
	if (net->slirp != NULL)
		slirp_cleanup(net->slirp);	/* closes its sockets */
	for (i = 0; i < net->npfds; i++) {
		if (net->pfds[i] != NULL) {
			ev_io_stop(net->loop, &net->pfds[i]->io);
			free(net->pfds[i]);
		}
	}
	free(net->pfds);
	net_resolver_free(net->resolver);
	if (net->fd != -1) {
		close(net->fd);
		net->fd = -1;
	}
	net_qemu_started(net);
	if (net->own_dir)
		rmdir(net->dir);
	free(net->dir);
	free(net->in);
	buf_free(&net->out);
	for (i = 0; i < net->nrules; i++) {
		free(net->rules[i].text);
		free(net->rules[i].host);
	}
	free(net->rules);
	for (i = 0; i < net->nfwds; i++)
		free(net->fwds[i].addr);
	free(net->fwds);
	for (i = 0; i < net->ndests; i++) {
		free(net->dests[i].dest);
		free(net->dests[i].why);
	}
	free(net->dests);
	for (i = 0; i < sizeof net->args / sizeof net->args[0]; i++)
		free(net->args[i]);
	for (i = 0; i < sizeof net->env / sizeof net->env[0]; i++)
		free(net->env[i]);
	free(net);
}

/* The name of network mode m, as profiles write it. */
const char *
net_mode_name(enum net_mode m)
{
	switch (m) {
	case NET_MODE_RESTRICTED:
		return ("restricted");
	case NET_MODE_NONE:
		return ("none");
	case NET_MODE_ALLOWLIST:
		return ("allowlist");
	case NET_MODE_OPEN:
		return ("open");
	}
	return ("?");
}
