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
 * Checked here so that a mistake is found when the profile is loaded; what
 * the rules let through is the network code's business.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qsup.h"

#define NETRULE_NAME_MAX	253
#define NETRULE_LABEL_MAX	63

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

void
netrule_free(struct profile_net_rule *r)
{
	free(r->text);
	r->text = NULL;
	free(r->host);
	r->host = NULL;
}
