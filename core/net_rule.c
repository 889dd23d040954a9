/*
 * The allowlist: which destinations a guest may reach through qsup. Rules
 * are the profile's network_allow (lua/netrule.c parses them), with the
 * deny rules network_rules adds; this file only answers "does this
 * destination match".
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <ifaddrs.h>
#include <string.h>
#include <strings.h>

#include "qsup.h"

/*
 * Host names as the guest may write them: letters, digits, '-' and '_'
 * (some real names have one), non-empty labels of at most 63, at most 253
 * in all, one trailing dot allowed. Anything else is refused before it is
 * matched, logged or resolved.
 */
int
net_host_valid(const char *host)
{
	size_t	len, label = 0, i;
	int	c;

	len = strlen(host);
	if (len > 0 && host[len - 1] == '.')
		len--;
	if (len == 0 || len > 253)
		return (0);
	for (i = 0; i < len; i++) {
		c = (unsigned char)host[i];
		if (c == '.') {
			if (label == 0)
				return (0);
			label = 0;
			continue;
		}
		if (!isalnum(c) && c != '-' && c != '_')
			return (0);
		if (++label > 63)
			return (0);
	}
	return (1);
}

/* "*.debian.org" matches every name under debian.org, not debian.org. */
static int
net_rule_host(const char *pattern, const char *host)
{
	size_t	plen, hlen;

	hlen = strlen(host);
	if (hlen > 0 && host[hlen - 1] == '.')
		hlen--;
	if (strncmp(pattern, "*.", 2) == 0) {
		pattern++;	/* ".debian.org" */
		plen = strlen(pattern);
		return (hlen > plen &&
		    strncasecmp(host + hlen - plen, pattern, plen) == 0);
	}
	plen = strlen(pattern);
	return (hlen == plen && strncasecmp(host, pattern, plen) == 0);
}

/* An IPv4 address mapped into IPv6 (::ffff:a.b.c.d) counts as IPv4. */
static int
net_rule_addr_bytes(const struct sockaddr *sa, unsigned char *bytes)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	if (sa->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)(const void *)sa;
		memcpy(bytes, &sin->sin_addr, 4);
		return (AF_INET);
	}
	if (sa->sa_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			memcpy(bytes, &sin6->sin6_addr.s6_addr[12], 4);
			return (AF_INET);
		}
		memcpy(bytes, &sin6->sin6_addr, 16);
		return (AF_INET6);
	}
	return (0);
}

static int
net_rule_addr(const struct profile_net_rule *r, const struct sockaddr *sa)
{
	unsigned char	bytes[16];
	int		family, full, rest;

	if ((family = net_rule_addr_bytes(sa, bytes)) != r->family)
		return (0);
	full = r->prefix / 8;
	rest = r->prefix % 8;
	if (memcmp(bytes, r->addr, full) != 0)
		return (0);
	if (rest != 0 &&
	    ((bytes[full] ^ r->addr[full]) & (0xff00 >> rest) & 0xff) != 0)
		return (0);
	return (1);
}

/*
 * A host that is an address literal is matched as an address: fills ss
 * and moves host to *addr. A host that is not a valid name matches no
 * name rule.
 */
static void
net_rule_target(const char **host, const struct sockaddr **addr,
    struct sockaddr_storage *ss)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)(void *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)(void *)ss;

	if (*addr == NULL && *host != NULL) {
		memset(ss, 0, sizeof *ss);
		if (inet_pton(AF_INET, *host, &sin->sin_addr) == 1) {
			ss->ss_family = AF_INET;
			*addr = (struct sockaddr *)ss;
			*host = NULL;
		} else if (inet_pton(AF_INET6, *host, &sin6->sin6_addr) == 1) {
			ss->ss_family = AF_INET6;
			*addr = (struct sockaddr *)ss;
			*host = NULL;
		}
	}
	if (*host != NULL && !net_host_valid(*host))
		*host = NULL;
}

/* Does r name host or addr, whatever the port? */
static int
net_rule_names(const struct profile_net_rule *r, const char *host,
    const struct sockaddr *addr)
{
	if (r->host != NULL && strcmp(r->host, "*") == 0)
		return (r->deny && (host != NULL || addr != NULL));
	if (r->host != NULL)
		return (host != NULL && net_rule_host(r->host, host));
	return (addr != NULL && net_rule_addr(r, addr));
}

/* Is port within r's ports? Port 0 is within "any port" only. */
static int
net_rule_port(const struct profile_net_rule *r, int port)
{
	return (r->port_min == 0 ||
	    (port >= r->port_min && port <= r->port_max));
}

/*
 * The first deny rule that refuses host or addr on port; on port 0, one
 * that refuses every port (net_rule_port() takes 0 for no port at all).
 */
static const struct profile_net_rule *
net_rule_deny(const struct profile_net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (rules[i].deny && net_rule_port(&rules[i], port) &&
		    net_rule_names(&rules[i], host, addr))
			return (&rules[i]);
	}
	return (NULL);
}

/*
 * Does allow rule r leave a port open that no deny rule takes back? Each
 * deny rule covering the lowest candidate moves it past its own ports.
 */
static int
net_rule_port_left(const struct profile_net_rule *rules, size_t n,
    const struct profile_net_rule *r, const char *host,
    const struct sockaddr *addr)
{
	const struct profile_net_rule	*d;
	long				 p, hi;
	size_t				 i;
	int				 moved;

	p = r->port_min == 0 ? 1 : r->port_min;
	hi = r->port_min == 0 ? 65535 : r->port_max;
	do {
		moved = 0;
		for (i = 0; i < n && p <= hi; i++) {
			d = &rules[i];
			if (!d->deny || !net_rule_port(d, (int)p) ||
			    !net_rule_names(d, host, addr))
				continue;
			p = d->port_min == 0 ? 65536 : (long)d->port_max + 1;
			moved = 1;
		}
	} while (moved && p <= hi);
	return (p <= hi);
}

/*
 * The first rule that lets the guest reach host (a name, or NULL) or addr
 * (or NULL) on port; port 0 asks about any port (for DNS: some port the
 * deny rules leave open). A deny rule that matches wins over every allow
 * rule. NULL if nothing allows it.
 */
const struct profile_net_rule *
net_rule_match(const struct profile_net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port)
{
	const struct profile_net_rule	*r;
	struct sockaddr_storage		 ss;
	size_t				 i;

	net_rule_target(&host, &addr, &ss);
	if (port != 0 && net_rule_deny(rules, n, host, addr, port) != NULL)
		return (NULL);
	for (i = 0; i < n; i++) {
		r = &rules[i];
		if (r->deny || !net_rule_names(r, host, addr))
			continue;
		if (port != 0 ? net_rule_port(r, port) :
		    net_rule_port_left(rules, n, r, host, addr))
			return (r);
	}
	return (NULL);
}

/*
 * The deny rule that refuses host or addr on port, for saying why; with
 * port 0, one that refuses every port. NULL if none does.
 */
const struct profile_net_rule *
net_rule_denied(const struct profile_net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port)
{
	struct sockaddr_storage	ss;

	net_rule_target(&host, &addr, &ss);
	return (net_rule_deny(rules, n, host, addr, port));
}

/*
 * Why host or addr on port is refused, for the guest and -v: the deny rule
 * that refuses it if one does, else otherwise. The caller frees it.
 */
char *
net_rule_why(const struct profile_net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port,
    const char *otherwise)
{
	const struct profile_net_rule	*r;
	char				*why;

	if ((r = net_rule_denied(rules, n, host, addr, port)) == NULL ||
	    r->text == NULL)
		return (xstrdup(otherwise));
	xasprintf(&why, "denied by the rule \"%s\"", r->text);
	return (why);
}

/* 127.0.0.0/8 or ::1. */
static int
net_rule_addr_loopback(const struct sockaddr *sa)
{
	unsigned char	b[16];
	int		family;

	family = net_rule_addr_bytes(sa, b);
	if (family == AF_INET)
		return (b[0] == 127);
	if (family == AF_INET6) {
		struct in6_addr	a;

		memcpy(&a, b, 16);
		return (IN6_IS_ADDR_LOOPBACK(&a));
	}
	return (0);
}

/*
 * Addresses a name must not lead to unless a rule names the address: the
 * host itself (loopback, "this host"), link-local (cloud metadata lives at
 * 169.254.169.254), multicast and broadcast. A name on the allowlist whose
 * DNS points at 127.0.0.1 must not open the host's loopback.
 */
int
net_rule_addr_special(const struct sockaddr *sa)
{
	unsigned char	b[16];
	int		family;

	family = net_rule_addr_bytes(sa, b);
	if (family == AF_INET)
		return (b[0] == 127 || b[0] == 0 || b[0] >= 224 ||
		    (b[0] == 169 && b[1] == 254));
	if (family == AF_INET6) {
		struct in6_addr	a;

		memcpy(&a, b, 16);
		return (IN6_IS_ADDR_LOOPBACK(&a) ||
		    IN6_IS_ADDR_UNSPECIFIED(&a) || IN6_IS_ADDR_LINKLOCAL(&a) ||
		    IN6_IS_ADDR_MULTICAST(&a) || IN6_IS_ADDR_SITELOCAL(&a));
	}
	return (1);
}

/*
 * Is addr one of this host's own interface addresses? A service bound to
 * 0.0.0.0 answers there just as on 127.0.0.1.
 */
int
net_rule_addr_local(const struct sockaddr *sa)
{
	struct ifaddrs	*ifa, *i;
	unsigned char	 a[16], b[16];
	int		 family, found = 0;

	if ((family = net_rule_addr_bytes(sa, a)) == 0)
		return (0);
	if (getifaddrs(&ifa) == -1)
		return (1);		/* cannot tell: assume it is */
	for (i = ifa; i != NULL && !found; i = i->ifa_next) {
		if (i->ifa_addr == NULL ||
		    net_rule_addr_bytes(i->ifa_addr, b) != family)
			continue;
		found = memcmp(a, b, family == AF_INET ? 4 : 16) == 0;
	}
	freeifaddrs(ifa);
	return (found);
}

/*
 * May the guest reach addr, which host (a name that name_rule allowed)
 * resolved to? Not if a deny rule names the address; ordinary addresses
 * yes; special ones and the host's own only when an address rule names
 * them, or loopback when the rule is for "localhost" or names under it.
 */
int
net_rule_addr_allowed(const struct profile_net_rule *rules, size_t n,
    const struct profile_net_rule *name_rule, const struct sockaddr *addr,
    int port)
{
	if (net_rule_deny(rules, n, NULL, addr, port) != NULL)
		return (0);
	if (net_rule_match(rules, n, NULL, addr, port) != NULL)
		return (1);
	if (name_rule == NULL || name_rule->host == NULL || name_rule->deny)
		return (0);
	if (!net_rule_addr_special(addr) && !net_rule_addr_local(addr))
		return (1);
	return (net_name_loopback(name_rule->host) &&
	    net_rule_addr_loopback(addr));
}
