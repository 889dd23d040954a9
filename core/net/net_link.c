/*
 * The link to QEMU: one end of a socketpair (-netdev stream), each
 * Ethernet frame preceded by its length, 4 bytes big-endian. Every frame
 * the guest sends is read here and given to the callback net.c hands down
 * (net_frame(), a layer above: it answers DNS, which sends through here);
 * every frame slirp makes is queued back, at most NET_OUT_MAX bytes
 * (beyond that frames are dropped, and TCP in the guest retransmits). A
 * QEMU that goes away or breaks the framing takes the link down;
 * net_relink() makes a new one.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "net_int.h"

#define NET_FRAME_MAX		(65535 + 14)	/* the largest MTU, framed */
#define NET_IN_SIZE		(256 * 1024)	/* > a frame and its length */
#define NET_OUT_MAX		(4 * 1024 * 1024)
#define NET_ACCEPT_EVERY	128		/* frames between accepts */
#define NET_SOCKBUF		(1024 * 1024)

/*
 * Queue a frame for QEMU, with its length; dropped past NET_OUT_MAX, or
 * once the link is down.
 */
void
net_link_send(struct net *net, const void *buf, size_t len)
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

/* Write what is queued; wait for the socket when it is full. */
void
net_link_flush(struct net *net)
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

/* QEMU's socket has room again. */
static void
net_link_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	net_link_flush(w->data);
}


/* Frames from QEMU: each given to net->frame_cb, whole or not at all. */
static void
net_link_read_cb(struct ev_loop *loop, ev_io *w, int revents)
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
			net->frame_cb(net, p + 4, len);
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


/* QEMU has forked with its end: ours must not keep it open. */
void
net_qemu_started(struct net *net)
{
	if (net->qemu_fd != -1) {
		close(net->qemu_fd);
		net->qemu_fd = -1;
	}
}

/*
 * A socketpair for a link to QEMU, sized for bulk transfers (best
 * effort): sv[0] is ours, sv[1] QEMU's.
 */
int
net_link_pair(int sv[2], char **cause)
{
	int	size = NET_SOCKBUF, i;

	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	/* Fewer wake-ups in bulk transfers; best effort. */
	for (i = 0; i < 2; i++) {
		setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
		setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
	}
	return (0);
}

/* The link is now ours (our end) and theirs (QEMU's, or -1: it has it). */
static void
net_link_set(struct net *net, int ours, int theirs)
{
	ev_io_stop(net->loop, &net->rd);
	ev_io_stop(net->loop, &net->wr);
	if (net->fd != -1)
		close(net->fd);
	net_qemu_started(net);
	net->fd = ours;
	net->qemu_fd = theirs;
	net->link_dead = 0;
	net->inlen = 0;
	buf_free(&net->out);
	net->outoff = 0;
	util_set_nonblock(net->fd);
	ev_io_set(&net->rd, net->fd, EV_READ);
	ev_io_set(&net->wr, net->fd, EV_WRITE);
	ev_io_start(net->loop, &net->rd);
}

/*
 * A new link to QEMU: a socketpair, its watcher, the -netdev argument
 * naming QEMU's end. Also after a QEMU went away (a failed restore is
 * followed by a boot): slirp and what it holds stay, the link is new.
 */
int
net_relink(struct net *net, char **cause)
{
	int	sv[2];

	if (net->slirp == NULL)
		return (0);
	if (net_link_pair(sv, cause) == -1)
		return (-1);
	net_link_set(net, sv[0], sv[1]);
	free(net->args[1]);
	net->args[1] = net_netdev_arg(net->qemu_fd);
	return (0);
}

/*
 * A QEMU started ahead (a spare, sandbox_spare.c) holds its end of a
 * net_link_pair already: ours is the other. 0, or -1 without slirp.
 */
int
net_adopt(struct net *net, int ours)
{
	if (net->slirp == NULL)
		return (-1);
	net_link_set(net, ours, -1);
	return (0);
}

/* The -netdev argument for a QEMU holding fd as its end of the link. */
char *
net_netdev_arg(int fd)
{
	char	*s;

	xasprintf(&s, "stream,id=net0,server=off,addr.type=fd,addr.str=%d",
	    fd);
	return (s);
}

/*
 * The link's buffer and watchers, before its first net_relink(); each
 * frame from the guest will go to frame_cb.
 */
void
net_link_start(struct net *net, void (*frame_cb)(struct net *,
    const unsigned char *, size_t))
{
	net->frame_cb = frame_cb;
	net->in = xmalloc(NET_IN_SIZE);
	ev_init(&net->rd, net_link_read_cb);
	net->rd.data = net;
	ev_init(&net->wr, net_link_write_cb);
	net->wr.data = net;
}
