/*
 * core/net: the guest's network, a libslirp stack in qsup's loop, and the
 * rules that decide what it may reach. It uses the base layer only; the
 * profile engine above it writes its rules.
 */
#ifndef QSUP_NET_H
#define QSUP_NET_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"

/* The modes (a profile's "network"). */
enum net_mode {
	NET_MODE_RESTRICTED,	/* SLIRP restrict=on: nothing out, ports in */
	NET_MODE_NONE,	/* no network card */
	NET_MODE_ALLOWLIST,	/* only network_allow */
	NET_MODE_OPEN	/* all, host loopback included (acknowledged) */
};
struct net_rule {
	char		*text;		/* as written, for messages */
	char		*host;		/* "example.org", "*.example.org" (all
					   names under it), lower case; "*"
					   any host (deny rules only); NULL
					   for an address */
	int		 family;	/* AF_INET, AF_INET6; 0 for a name */
	unsigned char	 addr[16];
	int		 prefix;	/* bits of addr that must match */
	uint16_t	 port_min;	/* 0: any port */
	uint16_t	 port_max;
	int		 deny;		/* refuses what it matches, whatever
					   else allows it */
	int		 from_rule;	/* made from network_rules[from_rule
					   - 1]; 0: written as is */
};
struct net_port {
	uint16_t	 guest;
	uint16_t	 host;		/* 0: any free port */
	char		*address;	/* host address to listen on */
	int		 from_rule;	/* as in struct net_rule */
};

/* net_rule.c: the modes' names, network_allow rules, network_rules compiled */
const char	*net_mode_name(enum net_mode);
#define NET_RULE_IN_MAX	64	/* ports of one range forwarded in */
int		 net_rule_parse(const char *, struct net_rule *, char **);
#define NET_RULE_HOST_ADDR 0x1	/* net_rule_parse_host(): an address will do */
int		 net_rule_parse_host(const char *, int, char **, char **);
int		 net_rule_compile(const char *, int, struct net_rule **,
		     size_t *, struct net_port **, size_t *, char **);
void		 net_rule_free(struct net_rule *);


/* net.c: the guest's network, a libslirp stack in qsup's loop (net_*.c) */
#define NET_GUEST_ADDR	QSUP_NET_GUEST	/* the guest's eth0, /24 */
#define NET_HOST_ADDR	QSUP_NET_GATEWAY /* its gateway */
#define NET_DNS_ADDR	QSUP_NET_DNS	/* its resolver (net_dns.c) */
#define NET_PROXY_ADDR	"10.0.2.100"	/* the allowlist's HTTP proxy */
#define NET_PROXY_PORT	3128
#define NET_MAP_FIRST	101		/* TCP maps: 10.0.2.101 and up, */
#define NET_MAPS_MAX	100		/* to 10.0.2.200 */
#define NET_GUEST_MAC	"52:54:00:12:34:56"
#define NET_MTU		16384		/* the guest learns it (host_mtu) */
#define NET_CONNS_MAX	128		/* through the proxy and maps, at once */
struct net_config {
	enum net_mode		 mode;
	const struct net_rule	*rules;	/* for "allowlist" */
	size_t				 nrules;
	const char			*dir;	/* for its unix sockets (the
						   sandbox's run directory);
						   NULL: a private one */
	int				 pci;	/* the card on PCI, not MMIO
						   (a PC, not a microVM) */
};
struct net_dest {
	const char	*kind;		/* "connect", "http", "tcp", "dns",
					   "udp", "icmp", "fragment" */
	char		*dest;		/* "example.org:443" */
	int		 allowed;
	char		*why;		/* why refused; NULL when allowed */
	unsigned long	 count;
};
struct net_stats {
	unsigned long long	 allowed;	/* connections and DNS answers */
	unsigned long long	 refused;
	unsigned long long	 frames_in;	/* from the guest */
	unsigned long long	 frames_out;	/* to the guest */
	unsigned long long	 frames_dropped; /* QEMU did not keep up */
	unsigned long long	 fragments_dropped; /* IPv4 fragments (also
						   counted in refused) */
	unsigned long long	 proxy_bytes_up;	/* through the proxy,
							   guest to world */
	unsigned long long	 proxy_bytes_down;	/* ... and back */
	const struct net_dest	*dests;		/* each distinct attempt;
						   valid until net is used */
	size_t			 ndests;
	unsigned long long	 dests_dropped;	/* not in dests: too many */
};
struct net;
struct net	*net_new(struct ev_loop *, const struct net_config *, char **);
int		 net_qemu_fd(struct net *);
char *const	*net_qemu_args(struct net *);
char *const	*net_guest_env(struct net *);
void		 net_qemu_started(struct net *);
int		 net_relink(struct net *, char **);
int		 net_link_pair(int [2], char **);
int		 net_adopt(struct net *, int);
char		*net_netdev_arg(int);
int		 net_add_hostfwd(struct net *, const char *, int, int, int *,
		     char **);
int		 net_add_tcp_map(struct net *, const char *, int,
		     const char *, int, char **, char **);
void		 net_stats(struct net *, struct net_stats *);
void		 net_stats_json(struct net *, struct buf *);
void		 net_free(struct net *);

#endif
