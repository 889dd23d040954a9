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
 * Checked here so that a mistake is found when the profile is loaded; what
 * the rules let through is the network code's business.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "qsup.h"

#define NETRULE_NAME_MAX	253
#define NETRULE_LABEL_MAX	63
#define NETRULE_FIELDS		5	/* ACTION|PROTOCOL|HOST|PORTS|DIR */
#define NETRULE_ITEMS_MAX	64	/* ports and ranges in one rule */
#define NETRULE_SHAPE		"ACTION|TCP|HOST|PORTS|DIRECTION " \
	"(\"ALLOW|TCP|deb.debian.org|80,443|OUT\")"

/* One label of a host name: letters, digits, inner hyphens. */
static int
netrule_label_ok(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > NETRULE_LABEL_MAX || s[0] == '-' ||
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
netrule_name(const char *s, char **out, char **why)
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
	if (*p == '\0' || len > NETRULE_NAME_MAX) {
		*why = xstrdup("is not a host name");
		return (-1);
	}
	for (;;) {
		dot = strchr(p, '.');
		if (!netrule_label_ok(p, dot == NULL ? strlen(p) :
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
netrule_ports(const char *s, struct profile_net_rule *r, char **why)
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
netrule_addr(const char *s, int family, struct profile_net_rule *r,
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
netrule_parse(const char *text, struct profile_net_rule *r, char **why)
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
		if (netrule_addr(host, AF_INET6, r, why) == -1)
			goto out;
	} else if (colons > 1) {
		/* Bare IPv6, no port. */
		if (netrule_addr(host, AF_INET6, r, why) == -1)
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
			if (netrule_addr(host, AF_INET, r, why) == -1)
				goto out;
		} else if (strchr(host, '/') != NULL) {
			*why = xstrdup("has a prefix length after a host name");
			goto out;
		} else if (netrule_name(host, &r->host, why) == -1)
			goto out;
	}
	if (port != NULL && netrule_ports(port, r, why) == -1)
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
 * NETRULE_HOST_ADDR, an IPv4 or IPv6 address. *out (to free): the name in
 * lower case, or the address as written.
 */
int
netrule_host(const char *s, int flags, char **out, char **why)
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
		if (~flags & NETRULE_HOST_ADDR) {
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
		*why = xstrdup((flags & NETRULE_HOST_ADDR) ? "is neither an "
		    "address nor a host name (no port, no network)" :
		    "is not a host name");
		return (-1);
	}
	return (netrule_name(s, out, why));
}

/* Cut s at each sep into at most max fields, spaces around each taken off. */
static size_t
netrule_split(char *s, int sep, char **fields, size_t max)
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
netrule_any(const char *port, const struct profile_net_rule *ports,
    struct profile_net_rule *r)
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

/*
 * Compile socket rule number k of network_rules ("ALLOW|TCP|HOST|PORTS|
 * OUT" and the like): OUT rules are appended to *rules (DENY ones with
 * deny set), ALLOW IN rules to *ports (each port of each range, on the
 * host's address if HOST is one, else on 127.0.0.1). Nothing is appended
 * when the rule is refused; *why (to free) says why.
 */
int
netrule_compile(const char *text, int k, struct profile_net_rule **rules,
    size_t *nrules, struct profile_port **ports, size_t *nports, char **why)
{
	struct profile_net_rule	 host, pr, *r;
	char			*f[NETRULE_FIELDS], *items[NETRULE_ITEMS_MAX];
	char			*s, *h, *rt, *address = NULL;
	size_t			 n, nitems = 0, i, r0 = *nrules, p0 = *nports;
	int			 deny, in, any, v6, p, ok, rc = -1;

	*why = NULL;
	memset(&host, 0, sizeof host);
	s = xstrdup(text);
	if ((n = netrule_split(s, '|', f, NETRULE_FIELDS)) != NETRULE_FIELDS) {
		xasprintf(why, "has %zu field%s; expected %s", n, n == 1 ? "" :
		    "s", NETRULE_SHAPE);
		goto out;
	}
	if (strcasecmp(f[0], "allow") == 0)
		deny = 0;
	else if (strcasecmp(f[0], "deny") == 0)
		deny = 1;
	else {
		*why = xstrdup("does not start with ALLOW or DENY");
		goto out;
	}
	if (strcasecmp(f[1], "udp") == 0) {
		*why = xstrdup("is a UDP rule, and the guest's network carries "
		    "no UDP: qsup answers DNS itself (for the names the rules "
		    "allow), and no other UDP leaves the guest");
		goto out;
	}
	if (strcasecmp(f[1], "tcp") != 0) {
		*why = xstrdup("has a protocol other than TCP in its second "
		    "field");
		goto out;
	}
	if (strcasecmp(f[4], "out") == 0)
		in = 0;
	else if (strcasecmp(f[4], "in") == 0)
		in = 1;
	else {
		*why = xstrdup("does not end with OUT or IN");
		goto out;
	}
	if (deny && in) {
		*why = xstrdup("is DENY ... IN, which has nothing to close: "
		    "inbound is closed by default, and only ALLOW ... IN rules "
		    "forward ports in");
		goto out;
	}

	/* HOST: "*", or what network_allow takes, IPv6 with or without []. */
	h = f[2];
	if (*h == '[' && h[strlen(h) - 1] == ']') {
		h[strlen(h) - 1] = '\0';
		h++;
	}
	any = strcmp(h, "*") == 0;
	if (any && !deny && !in) {
		*why = xstrdup("allows every host (*), which is network = "
		    "\"open\"; name the hosts or networks");
		goto out;
	}
	if (!any && (*h == '\0' || netrule_parse(h, &host, &rt) == -1)) {
		xasprintf(why, "has a host that %s", *h == '\0' ? "is empty" :
		    rt);
		if (*h != '\0')
			free(rt);
		goto out;
	}
	if (host.port_min != 0) {
		*why = xstrdup("has a port in its host field; ports go in the "
		    "fourth field");
		goto out;
	}
	v6 = strchr(h, ':') != NULL;

	/* PORTS: "*", or ports and ranges separated by commas. */
	if (strcmp(f[3], "*") != 0) {
		nitems = netrule_split(f[3], ',', items, NETRULE_ITEMS_MAX);
		if (nitems > NETRULE_ITEMS_MAX) {
			xasprintf(why, "has more than %d ports and ranges",
			    NETRULE_ITEMS_MAX);
			goto out;
		}
		for (i = 0; i < nitems; i++) {
			if (netrule_ports(items[i], &pr, &rt) == -1) {
				free(rt);
				*why = xstrdup("has ports that are not ports "
				    "from 1 to 65535 or ranges low-high, "
				    "separated by commas "
				    "(\"80,443,8000-8010\"), nor * for any");
				goto out;
			}
			if (in && pr.port_max - pr.port_min >=
			    NETRULE_IN_MAX) {
				xasprintf(why, "forwards the range %s, more "
				    "than %d ports", items[i], NETRULE_IN_MAX);
				goto out;
			}
		}
	} else if (in) {
		xasprintf(why, "forwards every port (*); name the ports, in "
		    "ranges of at most %d", NETRULE_IN_MAX);
		goto out;
	}

	if (in) {
		/* Loopback unless the rule names an address to listen on. */
		if (!any && host.host == NULL && strchr(h, '/') == NULL)
			address = xstrdup(h);
		else
			address = xstrdup("127.0.0.1");
		for (i = 0; i < nitems; i++) {
			netrule_ports(items[i], &pr, &rt);
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
		rc = 0;
		goto out;
	}
	for (i = 0; i < (nitems == 0 ? 1 : nitems); i++) {
		*rules = xreallocarray(*rules, *nrules + 1, sizeof **rules);
		r = &(*rules)[*nrules];
		if (any) {
			pr.port_min = pr.port_max = 0;
			if (nitems != 0)
				netrule_ports(items[i], &pr, &rt);
			netrule_any(nitems != 0 ? items[i] : NULL, &pr, r);
		} else {
			if (nitems == 0)
				rt = xstrdup(h);
			else
				xasprintf(&rt, v6 ? "[%s]:%s" : "%s:%s", h,
				    items[i]);
			ok = netrule_parse(rt, r, why);
			free(rt);
			if (ok != 0)
				goto out;	/* checked above: cannot be */
		}
		r->deny = deny;
		r->from_rule = k;
		(*nrules)++;
	}
	rc = 0;
out:
	if (rc == -1) {
		while (*nrules > r0)
			netrule_free(&(*rules)[--(*nrules)]);
		while (*nports > p0) {
			free((*ports)[--(*nports)].address);
			(*ports)[*nports].address = NULL;
		}
	}
	netrule_free(&host);
	free(address);
	free(s);
	return (rc);
}

void
netrule_free(struct profile_net_rule *r)
{
	free(r->text);
	r->text = NULL;
	free(r->host);
	r->host = NULL;
}
