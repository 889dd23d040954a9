/*
 * The guest's network: a libslirp stack inside qsup's loop. QEMU gets one
 * end of a socketpair (-netdev stream: each Ethernet frame preceded by its
 * length, 4 bytes big-endian) and has no network access of its own. Every
 * frame the guest sends is read (net_link.c), filtered (net_frame.c) and
 * given to slirp; every frame slirp makes is queued back, at most
 * NET_OUT_MAX bytes (beyond that frames are dropped, and TCP in the guest
 * retransmits).
 *
 * What the guest can make qsup hold is bounded, each with its own limit:
 *   frames to QEMU	NET_OUT_MAX queued, then dropped
 *   frames from QEMU	NET_IN_SIZE read at a time; QEMU waits meanwhile
 *   IPv4 fragments	none: every one is dropped (net_frame_fragment)
 *   slirp's sockets	NET_SOCKETS_MAX (every guest connection, UDP flow
 *			or ping slirp opens one for); past it new ones are
 *			dropped: a SYN is sent again by the guest
 *   proxy and maps	NET_CONNS_MAX connections in all (net_proxy_accept),
 *			NET_PROXY_BUF_MAX each way each (net_proxy.c)
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
 * The files of the layer (net_int.h declares what they share), top down;
 * each calls only files below it, so they can be read, tested and changed
 * a layer at a time. net.c owns struct net and hands it down: the lower
 * files read the fields they need from it, and what must go up goes
 * through a callback (net_link.c's frames to net_frame()).
 *   net.c          the network's life: net_new, net_free, QEMU's arguments
 *   net_frame.c    what each frame from the guest goes through
 *   net_dns.c      the guest's resolver, answered from the frames
 *   net_slirp.c    libslirp's callbacks, driven by the loop
 *   net_link.c     the socketpair to QEMU, frames in and out
 *   net_map.c      TCP maps into our listeners, host ports forwarded
 *   net_proxy.c    the HTTP proxy and the TCP maps' listeners
 *   net_stats.c    what the guest tried, counted and listed
 *   net_rule.c     network modes' names, network_allow and network_rules,
 *                  and their matching
 *   net_resolve.c  getaddrinfo_a, answered in the loop
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "net_int.h"

/* The directory of the unix sockets: the caller's, or one of our own. */
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

/* net keeps its own copy of the rules: the profile may go first. */
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

/* slirp, the link to QEMU, and QEMU's arguments for its card. */
static int
net_start(struct net *net, char **cause)
{
	if (net_slirp_start(net, cause) == -1)
		return (-1);
	net_link_start(net, net_frame);
	if (net_relink(net, cause) == -1)
		return (-1);

	xasprintf(&net->args[0], "-netdev");
	xasprintf(&net->args[2], "-device");
	xasprintf(&net->args[3], "virtio-net-%s,netdev=net0,mac=%s,"
	    "host_mtu=%d", net->pci ? "pci" : "device", NET_GUEST_MAC,
	    NET_MTU);
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
	net->pci = cfg->pci;
	net->fd = net->qemu_fd = -1;
	TAILQ_INIT(&net->maps);
	net_copy_rules(net, cfg);
	if (net->mode == NET_MODE_NONE)
		return (net);

	net->resolver = net_resolver_new(loop);
	if (net_make_dir(net, cfg->dir, cause) == -1)
		goto fail;
	if (net_start(net, cause) == -1)
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

/* The network gone: its listeners, slirp, the link, what it counted. */
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
	net_slirp_free(net);
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
