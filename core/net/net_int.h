/*
 * core/net's own declarations, shared by its files (net_*.c) and its
 * tests, never by another layer.
 */
#ifndef QSUP_NET_INT_H
#define QSUP_NET_INT_H

#include "net.h"

struct in_addr;
struct sockaddr;
struct addrinfo;
struct net_resolver;
struct net_lookup;
struct net_proxy;
struct net_dns;
void		 net_send_frame(struct net *, const void *, size_t);
void		 net_note(struct net *, const char *, const char *, int,
		     const char *);
const struct net_rule *net_rules(struct net *, size_t *);
int		 net_conn_open(struct net *);
void		 net_conn_close(struct net *);
enum net_mode net_mode(struct net *);
struct net_resolver *net_resolver(struct net *);
struct ev_loop	*net_loop(struct net *);
int		 net_map_find(struct net *, const char *, struct in_addr *);
/* net_rule.c */
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
/* net_proxy.c: the HTTP proxy and TCP maps, one unix listener each */
struct net_proxy *net_proxy_new(struct net *, const char *, const char *, int,
		     char **);
void		 net_proxy_accept(struct net_proxy *);
void		 net_proxy_free(struct net_proxy *);
/* net_dns.c: the guest's resolver, answered from the frames */
struct net_dns	*net_dns_new(struct net *);
int		 net_dns_frame(struct net_dns *, const unsigned char *, size_t);
void		 net_dns_free(struct net_dns *);

#endif
