/*
 * The ways between the guest and the host that slirp's restrictions leave
 * open. A map is a guest address:port that slirp_add_unix turns into a
 * connection to one of net_proxy.c's unix listeners: the HTTP proxy at
 * NET_PROXY_ADDR, and the TCP maps at 10.0.2.101 and up, each to a host
 * and port of the profile's (and a name net_dns.c answers). A forward is
 * a host port slirp listens on and connects to the guest's.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <slirp/libslirp.h>

#include "net_int.h"

/* Is addr:port (network order) one of our listeners in the guest? */
int
net_map_at(struct net *net, const unsigned char *addr, int port)
{
	struct net_map	*m;

	TAILQ_FOREACH(m, &net->maps, entry) {
		if (memcmp(&m->addr, addr, 4) == 0 && m->port == port)
			return (1);
	}
	return (0);
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
int
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

/* Is port on the host one of our forwards already? */
static int
net_map_fwd_known(struct net *net, int port)
{
	size_t	i;

	for (i = 0; i < net->nfwds; i++) {
		if (net->fwds[i].host_port == port)
			return (1);
	}
	return (0);
}

struct net_map_port {
	struct in_addr	 addr;
	struct net	*net;
	int		 port;
};

/* slirp_pollfds_fill, to find the listener slirp just made. */
static int
net_map_port_cb(int fd, int events, void *arg)
{
	struct net_map_port	*f = arg;
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
	if (!net_map_fwd_known(f->net, ntohs(sin.sin_port)))
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
	struct net_map_port	 f;
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
		slirp_pollfds_fill(net->slirp, &timeout, net_map_port_cb, &f);
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
