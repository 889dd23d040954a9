/*
 * core/net's own declarations, shared by its files (net_*.c) and its
 * tests, never by another layer.
 */
#ifndef QSUP_NET_INT_H
#define QSUP_NET_INT_H

#include <sys/queue.h>

#include <netinet/in.h>

#include <ev.h>

#include "net.h"

struct sockaddr;
struct addrinfo;
struct net_resolver;
struct net_lookup;
struct net_proxy;
struct net_dns;
struct net_slirp_fd;
struct Slirp;

/* A guest address:port that leads into one of our listeners (net_map.c). */
struct net_map {
	struct net_proxy	*px;
	char			*name;		/* answered by DNS, or NULL */
	struct in_addr		 addr;
	int			 port;
	char			*to;		/* "host:port"; NULL: the proxy */
	TAILQ_ENTRY(net_map)	 entry;
};
TAILQ_HEAD(net_maps, net_map);

/* A host port forwarded to the guest (net_add_hostfwd). */
struct net_fwd {
	char		*addr;
	int		 host_port;
	int		 guest_port;
};

/* One guest's network; its parts are in net_*.c, each named below. */
struct net {
	struct ev_loop		*loop;
	enum net_mode	 mode;
	int			 pci;	/* virtio-net-pci */
	struct net_rule	*rules;
	size_t			 nrules;

	struct Slirp		*slirp;
	int			 fd;		/* ours */
	int			 qemu_fd;	/* QEMU's, until it has it */
	int			 link_dead;
	ev_io			 rd;
	ev_io			 wr;
	ev_prepare		 prepare;
	ev_check		 check;
	ev_timer		 tick;
	void			(*frame_cb)(struct net *,	/* net_frame() */
				    const unsigned char *, size_t);
	unsigned char		*in;
	size_t			 inlen;
	struct buf		 out;
	size_t			 outoff;	/* written from out */

	struct net_slirp_fd	**pfds;		/* by fd */
	size_t			 npfds;
	unsigned int		 gen;
	int			 nsockets;	/* slirp's open sockets */

	int			 nconns;	/* of the proxy and maps (net_proxy.c) */

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

/*
 * The files' sections, top down: each file calls only those below it (see
 * net.c; tests/circles.py checks). What a lower file needs of the network
 * it reads from struct net; what it reports up goes through a callback.
 */
/* net.c: the network's life, on top; it owns struct net (net.h only) */
/* net_frame.c: what each frame from the guest goes through */
void		 net_frame(struct net *, const unsigned char *, size_t);
/* net_dns.c: the guest's resolver, answered from the frames */
struct net_dns	*net_dns_new(struct net *);
int		 net_dns_frame(struct net_dns *, const unsigned char *, size_t);
void		 net_dns_free(struct net_dns *);
/* net_slirp.c: libslirp driven by the loop */
int		 net_slirp_start(struct net *, char **);
void		 net_slirp_free(struct net *);
/* net_link.c: the socketpair to QEMU, a frame at a time */
void		 net_link_start(struct net *, void (*)(struct net *,
		     const unsigned char *, size_t));
void		 net_link_send(struct net *, const void *, size_t);
void		 net_link_flush(struct net *);
/* net_map.c: TCP maps into our listeners, host ports forwarded */
int		 net_map_add(struct net *, const char *, struct in_addr, int,
		     const char *, int, char **);
int		 net_map_at(struct net *, const unsigned char *, int);
int		 net_map_find(struct net *, const char *, struct in_addr *);
/* net_proxy.c: the HTTP proxy and TCP maps, one unix listener each */
struct net_proxy *net_proxy_new(struct net *, const char *, const char *, int,
		     char **);
void		 net_proxy_accept(struct net_proxy *);
void		 net_proxy_free(struct net_proxy *);
/* net_stats.c: what the guest tried, counted and listed */
void		 net_note(struct net *, const char *, const char *, int,
		     const char *);
/* net_rule.c: matching destinations against the rules (net.h: parsing) */
int		 net_host_valid(const char *);
const struct net_rule *net_rule_match(const struct net_rule *,
		     size_t, const char *, const struct sockaddr *, int);
const struct net_rule *net_rule_denied(const struct net_rule *,
		     size_t, const char *, const struct sockaddr *, int);
char		*net_rule_why(const struct net_rule *, size_t,
		     const char *, const struct sockaddr *, int, const char *);
int		 net_rule_addr_special(const struct sockaddr *);
int		 net_rule_addr_local(const struct sockaddr *);
int		 net_rule_addr_allowed(const struct net_rule *, size_t,
		     const struct net_rule *, const struct sockaddr *,
		     int);
/* net_resolve.c: getaddrinfo_a, answered in the loop */
typedef void	(*net_lookup_cb)(const struct addrinfo *, int, void *);
struct net_resolver *net_resolver_new(struct ev_loop *);
struct net_lookup *net_lookup_start(struct net_resolver *, const char *, int,
		     int, net_lookup_cb, void *, int *);
void		 net_lookup_cancel(struct net_lookup *);
int		 net_name_loopback(const char *);
void		 net_resolver_free(struct net_resolver *);

#endif
