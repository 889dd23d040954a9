/*
 * Network allowlist rules, as profiles write them in network_allow:
 *
 *	"deb.debian.org"		a host name, any port
 *	"*.pypi.org:443"		any name under pypi.org, port 443
 *	"10.1.0.0/16:8000-8099"		an IPv4 network, a port range
 *	"192.0.2.7"			one IPv4 address
 *	"[2001:db8::/32]:443"		IPv6 (brackets when a port follows)
 *	"2001:db8::1"			IPv6, any port
 *
 * and the seed's socket rules, as profiles write them in network_rules,
 * compiled into the same allowlist (with deny rules) and port forwards:
 *
 *	"ALLOW|TCP|deb.debian.org|80,443|OUT"	two allow rules
 *	"DENY|TCP|*.internal.example|*|OUT"	a deny rule, every port
 *	"ALLOW|TCP|127.0.0.1|8000-8010|IN"	eleven forwards on 127.0.0.1
 *
 * Parsed here when the profile is loaded, so a mistake is found then; and
 * matched here when the guest connects ("does this destination match").
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net_int.h"

#define NET_RULE_NAME_MAX	253
#define NET_RULE_LABEL_MAX	63
#define NET_RULE_FIELDS		5	/* ACTION|PROTOCOL|HOST|PORTS|DIR */
#define NET_RULE_ITEMS_MAX	64	/* ports and ranges in one rule */
#define NET_RULE_SHAPE		"ACTION|TCP|HOST|PORTS|DIRECTION " \
	"(\"ALLOW|TCP|deb.debian.org|80,443|OUT\")"

/* One label of a host name: letters, digits, inner hyphens. */
static int
net_rule_parse_label(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > NET_RULE_LABEL_MAX || s[0] == '-' ||
	    s[len - 1] == '-')
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return (0);
	}
	return (1);
}

/* "example.org", "*.example.org"; lower-cased into *out. */
static int
net_rule_parse_name(const char *s, char **out, char **why)
{
	const char	*p, *dot, *last = s;
	size_t		 i, len = strlen(s);
	int		 digits = 1;

	if (strncmp(s, "*.", 2) == 0)
		p = s + 2;
	else
		p = s;
	if (strchr(p, '*') != NULL) {
		*why = xstrdup("has a wildcard that is not the whole first "
		    "label (\"*.example.org\")");
		return (-1);
	}
	if (*p == '\0' || len > NET_RULE_NAME_MAX) {
		*why = xstrdup("is not a host name");
		return (-1);
	}
	for (;;) {
		dot = strchr(p, '.');
		if (!net_rule_parse_label(p, dot == NULL ? strlen(p) :
		    (size_t)(dot - p))) {
			*why = xstrdup("is not a host name (labels of letters, "
			    "digits and inner hyphens, separated by dots)");
			return (-1);
		}
		last = p;
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	for (p = last; *p != '\0'; p++) {
		if (!isdigit((unsigned char)*p))
			digits = 0;
	}
	if (digits) {
		*why = xstrdup("is neither an address nor a host name");
		return (-1);
	}
	*out = xstrdup(s);
	for (i = 0; (*out)[i] != '\0'; i++)
		(*out)[i] = tolower((unsigned char)(*out)[i]);
	return (0);
}

/* "80" or "8000-8099". */
static int
net_rule_parse_ports(const char *s, struct net_rule *r, char **why)
{
	char	*end;
	long	 lo, hi;

	errno = 0;
	if (!isdigit((unsigned char)*s))
		goto bad;
	lo = strtol(s, &end, 10);
	hi = lo;
	if (*end == '-') {
		if (!isdigit((unsigned char)end[1]))
			goto bad;
		hi = strtol(end + 1, &end, 10);
	}
	if (*end != '\0' || errno != 0)
		goto bad;
	if (lo < 1 || hi > 65535 || lo > hi) {
		*why = xstrdup("has a port out of range (1 to 65535, and a "
		    "range low-high)");
		return (-1);
	}
	r->port_min = (uint16_t)lo;
	r->port_max = (uint16_t)hi;
	return (0);
bad:
	*why = xstrdup("has a port that is not a number or a range "
	    "(\"443\", \"8000-8099\")");
	return (-1);
}

/* An address with an optional /bits, host bits clear. */
static int
net_rule_parse_addr(const char *s, int family, struct net_rule *r,
    char **why)
{
	char		*copy, *slash, *end;
	long		 bits;
	int		 max = family == AF_INET ? 32 : 128, i, rc = -1;

	copy = xstrdup(s);
	if ((slash = strchr(copy, '/')) != NULL)
		*slash++ = '\0';
	if (inet_pton(family, copy, r->addr) != 1) {
		*why = xstrdup(family == AF_INET ? "is not an IPv4 address" :
		    "is not an IPv6 address");
		goto out;
	}
	bits = max;
	if (slash != NULL) {
		errno = 0;
		bits = strtol(slash, &end, 10);
		if (!isdigit((unsigned char)*slash) || *end != '\0' ||
		    errno != 0 || bits < 0 || bits > max) {
			xasprintf(why, "has a prefix length that is not a "
			    "number from 1 to %d", max);
			goto out;
		}
		if (bits == 0) {
			*why = xstrdup("matches every address; for that, "
			    "write network = \"open\"");
			goto out;
		}
	}
	for (i = (int)bits; i < max; i++) {
		if (r->addr[i / 8] & (0x80 >> (i % 8))) {
			*why = xstrdup("has bits set after the prefix length "
			    "(write the network's first address)");
			goto out;
		}
	}
	r->family = family;
	r->prefix = (int)bits;
	rc = 0;
out:
	free(copy);
	return (rc);
}

/* Parse one rule; *why (to free) says what is wrong. */
int
net_rule_parse(const char *text, struct net_rule *r, char **why)
{
	char		*s, *host, *port = NULL, *close;
	size_t		 colons = 0;
	const char	*p;
	int		 rc = -1;

	memset(r, 0, sizeof *r);
	*why = NULL;
	for (p = text; *p != '\0'; p++) {
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p)) {
			*why = xstrdup("holds a space or a control character");
			return (-1);
		}
		if (*p == ':')
			colons++;
	}
	if (*text == '\0') {
		*why = xstrdup("is empty");
		return (-1);
	}
	s = xstrdup(text);
	host = s;
	if (*s == '[') {
		if ((close = strchr(s, ']')) == NULL) {
			*why = xstrdup("has a '[' without its ']'");
			goto out;
		}
		*close = '\0';
		host = s + 1;
		if (close[1] == ':')
			port = close + 2;
		else if (close[1] != '\0') {
			*why = xstrdup("has something other than :PORT after "
			    "']'");
			goto out;
		}
		if (net_rule_parse_addr(host, AF_INET6, r, why) == -1)
			goto out;
	} else if (colons > 1) {
		/* Bare IPv6, no port. */
		if (net_rule_parse_addr(host, AF_INET6, r, why) == -1)
			goto out;
	} else {
		if ((port = strchr(s, ':')) != NULL)
			*port++ = '\0';
		if (*host == '\0') {
			*why = xstrdup("has no host before the port");
			goto out;
		}
		if (isdigit((unsigned char)host[strlen(host) - 1]) &&
		    strspn(host, "0123456789./") == strlen(host)) {
			if (net_rule_parse_addr(host, AF_INET, r, why) == -1)
				goto out;
		} else if (strchr(host, '/') != NULL) {
			*why = xstrdup("has a prefix length after a host name");
			goto out;
		} else if (net_rule_parse_name(host, &r->host, why) == -1)
			goto out;
	}
	if (port != NULL && net_rule_parse_ports(port, r, why) == -1)
		goto out;
	r->text = xstrdup(text);
	rc = 0;
out:
	free(s);
	if (rc == -1) {
		free(r->host);
		memset(r, 0, sizeof *r);
	}
	return (rc);
}

/*
 * A single host, for TCP maps: a host name (no wildcard) or, with
 * NET_RULE_HOST_ADDR, an IPv4 or IPv6 address. *out (to free): the name in
 * lower case, or the address as written.
 */
int
net_rule_parse_host(const char *s, int flags, char **out, char **why)
{
	unsigned char	addr[16];
	const char	*p;

	*out = NULL;
	*why = NULL;
	for (p = s; *p != '\0'; p++) {
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p)) {
			*why = xstrdup("holds a space or a control character");
			return (-1);
		}
	}
	if (inet_pton(AF_INET, s, addr) == 1 ||
	    inet_pton(AF_INET6, s, addr) == 1) {
		if (~flags & NET_RULE_HOST_ADDR) {
			*why = xstrdup("is an address, not a host name");
			return (-1);
		}
		*out = xstrdup(s);
		return (0);
	}
	if (strchr(s, '*') != NULL) {
		*why = xstrdup("has a wildcard");
		return (-1);
	}
	if (strchr(s, ':') != NULL || strchr(s, '/') != NULL) {
		*why = xstrdup((flags & NET_RULE_HOST_ADDR) ? "is neither an "
		    "address nor a host name (no port, no network)" :
		    "is not a host name");
		return (-1);
	}
	return (net_rule_parse_name(s, out, why));
}

/* Cut s at each sep into at most max fields, spaces around each taken off. */
static size_t
net_rule_compile_split(char *s, int sep, char **fields, size_t max)
{
	char	*p, *end;
	size_t	 n = 0;

	for (p = s; ; p = end + 1) {
		if ((end = strchr(p, sep)) != NULL)
			*end = '\0';
		if (n < max) {
			while (*p == ' ' || *p == '\t')
				p++;
			fields[n] = p;
			p += strlen(p);
			while (p > fields[n] && (p[-1] == ' ' || p[-1] == '\t'))
				*--p = '\0';
		}
		n++;
		if (end == NULL)
			break;
	}
	return (n);
}

/* A rule that denies every host: no name, no address, only ports. */
static void
net_rule_compile_any(const char *port, const struct net_rule *ports,
    struct net_rule *r)
{
	memset(r, 0, sizeof *r);
	r->host = xstrdup("*");
	r->port_min = ports->port_min;
	r->port_max = ports->port_max;
	if (port != NULL)
		xasprintf(&r->text, "*:%s", port);
	else
		r->text = xstrdup("*");
}

/* One socket rule of network_rules, as net_rule_compile reads it. */
struct net_rule_socket {
	int		 deny;		/* DENY, else ALLOW */
	int		 in;		/* IN, else OUT */
	int		 any;		/* HOST is "*" */
	int		 v6;		/* HOST is an IPv6 address */
	char		*h;		/* HOST, without [] */
	struct net_rule	 host;		/* HOST parsed, unless any */
	char		*items[NET_RULE_ITEMS_MAX]; /* PORTS; none for "*" */
	size_t		 nitems;
};

/* ACTION, PROTOCOL and DIRECTION: ALLOW or DENY, TCP, OUT or IN. */
static int
net_rule_compile_kind(char **f, struct net_rule_socket *sk, char **why)
{
	if (strcasecmp(f[0], "allow") == 0)
		sk->deny = 0;
	else if (strcasecmp(f[0], "deny") == 0)
		sk->deny = 1;
	else {
		*why = xstrdup("does not start with ALLOW or DENY");
		return (-1);
	}
	if (strcasecmp(f[1], "udp") == 0) {
		*why = xstrdup("is a UDP rule, and the guest's network carries "
		    "no UDP: qsup answers DNS itself (for the names the rules "
		    "allow), and no other UDP leaves the guest");
		return (-1);
	}
	if (strcasecmp(f[1], "tcp") != 0) {
		*why = xstrdup("has a protocol other than TCP in its second "
		    "field");
		return (-1);
	}
	if (strcasecmp(f[4], "out") == 0)
		sk->in = 0;
	else if (strcasecmp(f[4], "in") == 0)
		sk->in = 1;
	else {
		*why = xstrdup("does not end with OUT or IN");
		return (-1);
	}
	if (sk->deny && sk->in) {
		*why = xstrdup("is DENY ... IN, which has nothing to close: "
		    "inbound is closed by default, and only ALLOW ... IN rules "
		    "forward ports in");
		return (-1);
	}
	return (0);
}

/* HOST: "*", or what network_allow takes, IPv6 with or without []. */
static int
net_rule_compile_host(char *h, struct net_rule_socket *sk, char **why)
{
	char	*rt;

	if (*h == '[' && h[strlen(h) - 1] == ']') {
		h[strlen(h) - 1] = '\0';
		h++;
	}
	sk->h = h;
	sk->any = strcmp(h, "*") == 0;
	if (sk->any && !sk->deny && !sk->in) {
		*why = xstrdup("allows every host (*), which is network = "
		    "\"open\"; name the hosts or networks");
		return (-1);
	}
	if (!sk->any && (*h == '\0' ||
	    net_rule_parse(h, &sk->host, &rt) == -1)) {
		xasprintf(why, "has a host that %s", *h == '\0' ? "is empty" :
		    rt);
		if (*h != '\0')
			free(rt);
		return (-1);
	}
	if (sk->host.port_min != 0) {
		*why = xstrdup("has a port in its host field; ports go in the "
		    "fourth field");
		return (-1);
	}
	sk->v6 = strchr(h, ':') != NULL;
	return (0);
}

/* PORTS: "*", or ports and ranges separated by commas. */
static int
net_rule_compile_ports(char *ports, struct net_rule_socket *sk, char **why)
{
	struct net_rule	 pr;
	char		*rt;
	size_t		 i;

	if (strcmp(ports, "*") == 0) {
		if (!sk->in)
			return (0);
		xasprintf(why, "forwards every port (*); name the ports, in "
		    "ranges of at most %d", NET_RULE_IN_MAX);
		return (-1);
	}
	sk->nitems = net_rule_compile_split(ports, ',', sk->items,
	    NET_RULE_ITEMS_MAX);
	if (sk->nitems > NET_RULE_ITEMS_MAX) {
		xasprintf(why, "has more than %d ports and ranges",
		    NET_RULE_ITEMS_MAX);
		return (-1);
	}
	for (i = 0; i < sk->nitems; i++) {
		if (net_rule_parse_ports(sk->items[i], &pr, &rt) == -1) {
			free(rt);
			*why = xstrdup("has ports that are not ports from 1 to "
			    "65535 or ranges low-high, separated by commas "
			    "(\"80,443,8000-8010\"), nor * for any");
			return (-1);
		}
		if (sk->in && pr.port_max - pr.port_min >= NET_RULE_IN_MAX) {
			xasprintf(why, "forwards the range %s, more than %d "
			    "ports", sk->items[i], NET_RULE_IN_MAX);
			return (-1);
		}
	}
	return (0);
}

/*
 * An ALLOW ... IN rule: each port of each range forwarded, on loopback
 * unless the rule names an address to listen on.
 */
static void
net_rule_compile_in(const struct net_rule_socket *sk, int k,
    struct net_port **ports, size_t *nports)
{
	struct net_rule	 pr;
	char		*address, *rt;
	size_t		 i;
	int		 p;

	if (!sk->any && sk->host.host == NULL && strchr(sk->h, '/') == NULL)
		address = xstrdup(sk->h);
	else
		address = xstrdup("127.0.0.1");
	for (i = 0; i < sk->nitems; i++) {
		net_rule_parse_ports(sk->items[i], &pr, &rt);
		for (p = pr.port_min; p <= pr.port_max; p++) {
			*ports = xreallocarray(*ports, *nports + 1,
			    sizeof **ports);
			(*ports)[*nports].guest = (uint16_t)p;
			(*ports)[*nports].host = 0;
			(*ports)[*nports].address = xstrdup(address);
			(*ports)[*nports].from_rule = k;
			(*nports)++;
		}
	}
	free(address);
}

/* An OUT rule: one allowlist rule (deny set for DENY) for each item. */
static int
net_rule_compile_out(const struct net_rule_socket *sk, int k,
    struct net_rule **rules, size_t *nrules, char **why)
{
	struct net_rule	 pr, *r;
	char		*rt;
	size_t		 i;
	int		 ok;

	for (i = 0; i < (sk->nitems == 0 ? 1 : sk->nitems); i++) {
		*rules = xreallocarray(*rules, *nrules + 1, sizeof **rules);
		r = &(*rules)[*nrules];
		if (sk->any) {
			pr.port_min = pr.port_max = 0;
			if (sk->nitems != 0)
				net_rule_parse_ports(sk->items[i], &pr, &rt);
			net_rule_compile_any(sk->nitems != 0 ? sk->items[i] :
			    NULL, &pr, r);
		} else {
			if (sk->nitems == 0)
				rt = xstrdup(sk->h);
			else
				xasprintf(&rt, sk->v6 ? "[%s]:%s" : "%s:%s",
				    sk->h, sk->items[i]);
			ok = net_rule_parse(rt, r, why);
			free(rt);
			if (ok != 0)
				return (-1);	/* checked: cannot be */
		}
		r->deny = sk->deny;
		r->from_rule = k;
		(*nrules)++;
	}
	return (0);
}

/*
 * Compile socket rule number k of network_rules ("ALLOW|TCP|HOST|PORTS|
 * OUT" and the like): OUT rules are appended to *rules (DENY ones with
 * deny set), ALLOW IN rules to *ports (each port of each range, on the
 * host's address if HOST is one, else on 127.0.0.1). Nothing is appended
 * when the rule is refused; *why (to free) says why.
 */
int
net_rule_compile(const char *text, int k, struct net_rule **rules,
    size_t *nrules, struct net_port **ports, size_t *nports, char **why)
{
	struct net_rule_socket	 sk;
	char			*f[NET_RULE_FIELDS], *s;
	size_t			 n, r0 = *nrules, p0 = *nports;
	int			 rc = -1;

	*why = NULL;
	memset(&sk, 0, sizeof sk);
	s = xstrdup(text);
	n = net_rule_compile_split(s, '|', f, NET_RULE_FIELDS);
	if (n != NET_RULE_FIELDS) {
		xasprintf(why, "has %zu field%s; expected %s", n, n == 1 ? "" :
		    "s", NET_RULE_SHAPE);
		goto out;
	}
	if (net_rule_compile_kind(f, &sk, why) == -1 ||
	    net_rule_compile_host(f[2], &sk, why) == -1 ||
	    net_rule_compile_ports(f[3], &sk, why) == -1)
		goto out;
	if (sk.in) {
		net_rule_compile_in(&sk, k, ports, nports);
		rc = 0;
	} else
		rc = net_rule_compile_out(&sk, k, rules, nrules, why);
out:
	if (rc == -1) {
		while (*nrules > r0)
			net_rule_free(&(*rules)[--(*nrules)]);
		while (*nports > p0) {
			free((*ports)[--(*nports)].address);
			(*ports)[*nports].address = NULL;
		}
	}
	net_rule_free(&sk.host);
	free(s);
	return (rc);
}

void
net_rule_free(struct net_rule *r)
{
	free(r->text);
	r->text = NULL;
	free(r->host);
	r->host = NULL;
}

/* ------------------------------------------------------------------------
 * Matching: the allowlist (network_allow, and the deny rules network_rules
 * adds) against a destination the guest asked for.
 */

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
net_rule_match_host(const char *pattern, const char *host)
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
net_rule_match_addr(const struct net_rule *r, const struct sockaddr *sa)
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
net_rule_match_target(const char **host, const struct sockaddr **addr,
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
net_rule_match_names(const struct net_rule *r, const char *host,
    const struct sockaddr *addr)
{
	if (r->host != NULL && strcmp(r->host, "*") == 0)
		return (r->deny && (host != NULL || addr != NULL));
	if (r->host != NULL)
		return (host != NULL && net_rule_match_host(r->host, host));
	return (addr != NULL && net_rule_match_addr(r, addr));
}

/* Is port within r's ports? Port 0 is within "any port" only. */
static int
net_rule_match_port(const struct net_rule *r, int port)
{
	return (r->port_min == 0 ||
	    (port >= r->port_min && port <= r->port_max));
}

/*
 * The first deny rule that refuses host or addr on port; on port 0, one
 * that refuses every port (net_rule_match_port() takes 0 for no port at all).
 */
static const struct net_rule *
net_rule_match_deny(const struct net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (rules[i].deny && net_rule_match_port(&rules[i], port) &&
		    net_rule_match_names(&rules[i], host, addr))
			return (&rules[i]);
	}
	return (NULL);
}

/*
 * Does allow rule r leave a port open that no deny rule takes back? Each
 * deny rule covering the lowest candidate moves it past its own ports.
 */
static int
net_rule_match_port_left(const struct net_rule *rules, size_t n,
    const struct net_rule *r, const char *host,
    const struct sockaddr *addr)
{
	const struct net_rule	*d;
	long				 p, hi;
	size_t				 i;
	int				 moved;

	p = r->port_min == 0 ? 1 : r->port_min;
	hi = r->port_min == 0 ? 65535 : r->port_max;
	do {
		moved = 0;
		for (i = 0; i < n && p <= hi; i++) {
			d = &rules[i];
			if (!d->deny || !net_rule_match_port(d, (int)p) ||
			    !net_rule_match_names(d, host, addr))
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
const struct net_rule *
net_rule_match(const struct net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port)
{
	const struct net_rule	*r;
	struct sockaddr_storage		 ss;
	size_t				 i;

	net_rule_match_target(&host, &addr, &ss);
	if (port != 0 &&
	    net_rule_match_deny(rules, n, host, addr, port) != NULL)
		return (NULL);
	for (i = 0; i < n; i++) {
		r = &rules[i];
		if (r->deny || !net_rule_match_names(r, host, addr))
			continue;
		if (port != 0 ? net_rule_match_port(r, port) :
		    net_rule_match_port_left(rules, n, r, host, addr))
			return (r);
	}
	return (NULL);
}

/*
 * The deny rule that refuses host or addr on port, for saying why; with
 * port 0, one that refuses every port. NULL if none does.
 */
const struct net_rule *
net_rule_denied(const struct net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port)
{
	struct sockaddr_storage	ss;

	net_rule_match_target(&host, &addr, &ss);
	return (net_rule_match_deny(rules, n, host, addr, port));
}

/*
 * Why host or addr on port is refused, for the guest and -v: the deny rule
 * that refuses it if one does, else otherwise. The caller frees it.
 */
char *
net_rule_why(const struct net_rule *rules, size_t n,
    const char *host, const struct sockaddr *addr, int port,
    const char *otherwise)
{
	const struct net_rule	*r;
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
net_rule_addr_allowed(const struct net_rule *rules, size_t n,
    const struct net_rule *name_rule, const struct sockaddr *addr,
    int port)
{
	if (net_rule_match_deny(rules, n, NULL, addr, port) != NULL)
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
