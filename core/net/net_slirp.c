/*
 * libslirp inside qsup's loop: its callbacks (frames out, timers, the
 * sockets it opens) and its fill/poll API. An ev_prepare asks slirp which
 * of its sockets to watch (an ev_io each) and for how long it may sleep
 * (an ev_timer); an ev_check of the lowest priority lets it act on what
 * the ev_io callbacks saw, after all of them have run. slirp's sockets are
 * counted here (net->nsockets), for net_frame.c's NET_SOCKETS_MAX.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>
#include <slirp/libslirp.h>

#include "net_int.h"

/* One of slirp's sockets, watched for it. */
struct net_slirp_fd {
	ev_io		 io;
	struct net	*net;
	int		 events;	/* EV_READ|EV_WRITE, as last asked */
	int		 revents;	/* SLIRP_POLL_*, since the last poll */
	unsigned int	 gen;		/* the fill that last asked for it */
	int		 registered;	/* slirp has it open (nsockets) */
};

struct net_slirp_timer {
	ev_timer	 t;
	struct net	*net;
	SlirpTimerCb	 cb;
	void		*arg;
};

/* A frame slirp made, for the guest. */
static ssize_t
net_slirp_send_cb(const void *buf, size_t len, void *arg)
{
	net_link_send(arg, buf, len);
	return ((ssize_t)len);
}

/* slirp found the guest's packets wrong: for -v only. */
static void
net_slirp_guest_error_cb(const char *msg, void *arg)
{
	(void)arg;
	log_debug("net: the guest's network misbehaves: %s", msg);
}

/* slirp's clock, in nanoseconds: monotonic. */
static int64_t
net_slirp_clock_cb(void *arg)
{
	struct timespec	ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

/* One of slirp's timers is due. */
static void
net_slirp_timer_fire_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct net_slirp_timer	*t = w->data;

	(void)loop;
	(void)revents;
	t->cb(t->arg);
}

/* slirp wants a timer, an ev_timer not yet started. */
static void *
net_slirp_timer_new_cb(SlirpTimerCb cb, void *cb_arg, void *arg)
{
	struct net_slirp_timer	*t;

	t = xcalloc(1, sizeof *t);
	t->net = arg;
	t->cb = cb;
	t->arg = cb_arg;
	ev_timer_init(&t->t, net_slirp_timer_fire_cb, 0., 0.);
	t->t.data = t;
	return (t);
}

/* slirp is done with a timer. */
static void
net_slirp_timer_free_cb(void *timer, void *arg)
{
	struct net_slirp_timer	*t = timer;

	(void)arg;
	ev_timer_stop(t->net->loop, &t->t);
	free(t);
}

/* expire is in milliseconds of net_slirp_clock_cb's clock. */
static void
net_slirp_timer_mod_cb(void *timer, int64_t expire, void *arg)
{
	struct net_slirp_timer	*t = timer;
	double			 delay;

	delay = (double)(expire - net_slirp_clock_cb(arg) / 1000000) / 1e3;
	ev_timer_stop(t->net->loop, &t->t);
	ev_timer_set(&t->t, delay > 0 ? delay : 0., 0.);
	ev_timer_start(t->net->loop, &t->t);
}

/* The watcher of slirp's fd, or NULL; the table grows to hold fd. */
static struct net_slirp_fd *
net_slirp_fd(struct net *net, int fd)
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

/* What the loop saw on one of slirp's sockets, kept for the poll. */
static void
net_slirp_fd_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct net_slirp_fd	*p = w->data;

	(void)loop;
	if (revents & EV_READ)
		p->revents |= SLIRP_POLL_IN;
	if (revents & EV_WRITE)
		p->revents |= SLIRP_POLL_OUT;
}

/* The watcher of slirp's fd, made if it is new. */
static struct net_slirp_fd *
net_slirp_fd_make(struct net *net, int fd)
{
	struct net_slirp_fd	*p;

	if ((p = net_slirp_fd(net, fd)) == NULL) {
		p = xcalloc(1, sizeof *p);
		p->net = net;
		ev_io_init(&p->io, net_slirp_fd_io_cb, fd, 0);
		p->io.data = p;
		net->pfds[fd] = p;
	}
	return (p);
}

/* slirp opened fd for one of its sockets: count it (NET_SOCKETS_MAX). */
static void
net_slirp_register_cb(int fd, void *arg)
{
	struct net		*net = arg;
	struct net_slirp_fd	*p;

	if (fd < 0)
		return;
	p = net_slirp_fd_make(net, fd);
	if (!p->registered) {
		p->registered = 1;
		net->nsockets++;
	}
}

/* slirp is done with fd (and may close it now): stop watching it. */
static void
net_slirp_unregister_cb(int fd, void *arg)
{
	struct net		*net = arg;
	struct net_slirp_fd	*p;

	if (fd < 0 || (p = net_slirp_fd(net, fd)) == NULL)
		return;
	ev_io_stop(net->loop, &p->io);
	p->events = p->revents = 0;
	if (p->registered) {
		p->registered = 0;
		net->nsockets--;
	}
}

/* slirp would wake its I/O thread: there is none, the next ev_prepare asks. */
static void
net_slirp_notify_cb(void *arg)
{
	(void)arg;
}

static const SlirpCb net_slirp_cbs = {
	.send_packet = net_slirp_send_cb,
	.guest_error = net_slirp_guest_error_cb,
	.clock_get_ns = net_slirp_clock_cb,
	.timer_new = net_slirp_timer_new_cb,
	.timer_free = net_slirp_timer_free_cb,
	.timer_mod = net_slirp_timer_mod_cb,
	.register_poll_fd = net_slirp_register_cb,
	.unregister_poll_fd = net_slirp_unregister_cb,
	.notify = net_slirp_notify_cb,
};

/* slirp_pollfds_fill: slirp wants fd watched for events. */
static int
net_slirp_add_poll_cb(int fd, int events, void *arg)
{
	struct net		*net = arg;
	struct net_slirp_fd	*p;
	int			 want = 0;

	if (events & (SLIRP_POLL_IN|SLIRP_POLL_PRI))
		want |= EV_READ;
	if (events & SLIRP_POLL_OUT)
		want |= EV_WRITE;
	p = net_slirp_fd_make(net, fd);
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
net_slirp_revents_cb(int idx, void *arg)
{
	struct net		*net = arg;
	struct net_slirp_fd	*p;
	int			 revents;

	if (idx < 0 || (p = net_slirp_fd(net, idx)) == NULL)
		return (0);
	revents = p->revents;
	p->revents = 0;
	return (revents);
}

/*
 * Before the loop sleeps: slirp says which sockets to watch (those it no
 * longer names are stopped) and when it wants to be woken; what it queued
 * for QEMU is written.
 */
static void
net_slirp_prepare_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct net		*net = w->data;
	struct net_slirp_fd	*p;
	uint32_t		 timeout = UINT32_MAX;
	size_t			 i;

	(void)revents;
	net->gen++;
	slirp_pollfds_fill(net->slirp, &timeout, net_slirp_add_poll_cb, net);
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
	net_link_flush(net);
}

/* After the loop woke, all ev_io seen: slirp acts on them and its timers. */
static void
net_slirp_check_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	struct net	*net = w->data;

	(void)loop;
	(void)revents;
	slirp_pollfds_poll(net->slirp, 0, net_slirp_revents_cb, net);
}

/* Only wakes the loop, so that slirp's timers run in net_slirp_check_cb. */
static void
net_slirp_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}


/* A slirp for net's mode, its watchers started; -1 if libslirp refuses. */
int
net_slirp_start(struct net *net, char **cause)
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
	ev_prepare_init(&net->prepare, net_slirp_prepare_cb);
	net->prepare.data = net;
	ev_check_init(&net->check, net_slirp_check_cb);
	net->check.data = net;
	ev_set_priority(&net->check, EV_MINPRI);
	ev_timer_init(&net->tick, net_slirp_tick_cb, 0., 0.);
	net->tick.data = net;
	ev_prepare_start(net->loop, &net->prepare);
	ev_check_start(net->loop, &net->check);
	return (0);
}

/* slirp gone, with the sockets it held, and our watchers of them. */
void
net_slirp_free(struct net *net)
{
	size_t	i;

	if (net->slirp != NULL)
		slirp_cleanup(net->slirp);	/* closes its sockets */
	for (i = 0; i < net->npfds; i++) {
		if (net->pfds[i] != NULL) {
			ev_io_stop(net->loop, &net->pfds[i]->io);
			free(net->pfds[i]);
		}
	}
	free(net->pfds);
}
