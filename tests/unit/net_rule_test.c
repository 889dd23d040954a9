/*
 * The rules of core/net (net_rule.c) matched one by one, and the
 * resolver (net_resolve.c) that answers the proxy and DNS off the loop.
 */
#include "net_test.h"

/* --- Rules -------------------------------------------------------------- */

static struct sockaddr *
sa(const char *text)
{
	static struct sockaddr_storage	 ss;
	struct sockaddr_in		*sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6		*sin6 = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof ss);
	if (inet_pton(AF_INET, text, &sin->sin_addr) == 1)
		ss.ss_family = AF_INET;
	else if (inet_pton(AF_INET6, text, &sin6->sin6_addr) == 1)
		ss.ss_family = AF_INET6;
	else
		cr_assert_fail("%s: not an address", text);
	return ((struct sockaddr *)&ss);
}

/* Which rule (its text) lets host/addr through on port, or "-". */
static const char *
match(const char *host, const char *addr, int port)
{
	const struct net_rule	*r;

	r = net_rule_match(rules, nrules, host, addr != NULL ? sa(addr) :
	    NULL, port);
	return (r != NULL ? r->text : "-");
}

static void
rules_clear(void)
{
	rules_set(NULL);
}

TestSuite(net_rule, .fini = rules_clear);

Test(net_rule, names_exact)
{
	rules_set("deb.debian.org", NULL);
	cr_assert_str_eq(match("deb.debian.org", NULL, 80), "deb.debian.org");
	cr_assert_str_eq(match("DEB.Debian.ORG", NULL, 443), "deb.debian.org");
	cr_assert_str_eq(match("deb.debian.org.", NULL, 443), "deb.debian.org");
	cr_assert_str_eq(match("debian.org", NULL, 80), "-");
	cr_assert_str_eq(match("x.deb.debian.org", NULL, 80), "-");
	cr_assert_str_eq(match("deb.debian.org.evil.com", NULL, 80), "-");
	cr_assert_str_eq(match("deb.debian.orgx", NULL, 80), "-");
	cr_assert_str_eq(match("deb.debian.org..", NULL, 80), "-");
	cr_assert_str_eq(match("", NULL, 80), "-");
	cr_assert_str_eq(match(NULL, "151.101.2.132", 80), "-");
}

Test(net_rule, names_wildcard)
{
	rules_set("*.debian.org", NULL);
	cr_assert_str_eq(match("sub.debian.org", NULL, 80), "*.debian.org");
	cr_assert_str_eq(match("a.b.debian.org", NULL, 80), "*.debian.org");
	cr_assert_str_eq(match("SUB.DEBIAN.ORG.", NULL, 80), "*.debian.org");
	cr_assert_str_eq(match("debian.org", NULL, 80), "-");
	cr_assert_str_eq(match("xdebian.org", NULL, 80), "-");
	cr_assert_str_eq(match(".debian.org", NULL, 80), "-");
	cr_assert_str_eq(match("debian.org.evil.com", NULL, 80), "-");
	cr_assert_str_eq(match("sub.debian.org.evil.com", NULL, 80), "-");
	/* Names the guest may not even write. */
	cr_assert_str_eq(match("a b.debian.org", NULL, 80), "-");
	cr_assert_str_eq(match("evil/x.debian.org", NULL, 80), "-");
	cr_assert_str_eq(match("a..debian.org", NULL, 80), "-");
	cr_assert_str_eq(match("user@x.debian.org", NULL, 80), "-");
}

Test(net_rule, ports)
{
	rules_set("a.example:443", "b.example:8000-8099", "c.example", NULL);
	cr_assert_str_eq(match("a.example", NULL, 443), "a.example:443");
	cr_assert_str_eq(match("a.example", NULL, 80), "-");
	cr_assert_str_eq(match("a.example", NULL, 444), "-");
	cr_assert_str_eq(match("b.example", NULL, 7999), "-");
	cr_assert_str_eq(match("b.example", NULL, 8000), "b.example:8000-8099");
	cr_assert_str_eq(match("b.example", NULL, 8050), "b.example:8000-8099");
	cr_assert_str_eq(match("b.example", NULL, 8099), "b.example:8000-8099");
	cr_assert_str_eq(match("b.example", NULL, 8100), "-");
	cr_assert_str_eq(match("c.example", NULL, 1), "c.example");
	cr_assert_str_eq(match("c.example", NULL, 65535), "c.example");
	/* Port 0 asks about any port (DNS does). */
	cr_assert_str_eq(match("a.example", NULL, 0), "a.example:443");
	cr_assert_str_eq(match("b.example", NULL, 0), "b.example:8000-8099");
}

Test(net_rule, ipv4_cidr)
{
	rules_set("10.1.0.0/16:5432", "192.0.2.7", "198.51.100.0/31",
	    "172.16.0.0/12", NULL);
	cr_assert_str_eq(match(NULL, "10.1.0.0", 5432), "10.1.0.0/16:5432");
	cr_assert_str_eq(match(NULL, "10.1.255.255", 5432),
	    "10.1.0.0/16:5432");
	cr_assert_str_eq(match(NULL, "10.2.0.0", 5432), "-");
	cr_assert_str_eq(match(NULL, "10.0.255.255", 5432), "-");
	cr_assert_str_eq(match(NULL, "10.1.2.3", 5433), "-");
	cr_assert_str_eq(match(NULL, "192.0.2.7", 1), "192.0.2.7");
	cr_assert_str_eq(match(NULL, "192.0.2.8", 1), "-");
	cr_assert_str_eq(match(NULL, "198.51.100.1", 1), "198.51.100.0/31");
	cr_assert_str_eq(match(NULL, "198.51.100.2", 1), "-");
	cr_assert_str_eq(match(NULL, "172.31.255.255", 1), "172.16.0.0/12");
	cr_assert_str_eq(match(NULL, "172.32.0.0", 1), "-");
	cr_assert_str_eq(match(NULL, "172.15.255.255", 1), "-");
	/* An IPv4 address mapped into IPv6 is the IPv4 address. */
	cr_assert_str_eq(match(NULL, "::ffff:192.0.2.7", 1), "192.0.2.7");
	/* A host that is an address literal is matched as one. */
	cr_assert_str_eq(match("192.0.2.7", NULL, 1), "192.0.2.7");
	cr_assert_str_eq(match("10.1.9.9", NULL, 5432), "10.1.0.0/16:5432");
	/* Never a name rule for an address, nor the other way round. */
	rules_set("example.org", NULL);
	cr_assert_str_eq(match(NULL, "93.184.216.34", 80), "-");
}

Test(net_rule, ipv6)
{
	rules_set("[2001:db8::/32]:443", "::1", NULL);
	cr_assert_str_eq(match(NULL, "2001:db8:1::5", 443),
	    "[2001:db8::/32]:443");
	cr_assert_str_eq(match(NULL, "2001:db9::5", 443), "-");
	cr_assert_str_eq(match(NULL, "2001:db8::5", 80), "-");
	cr_assert_str_eq(match(NULL, "::1", 22), "::1");
	cr_assert_str_eq(match("::1", NULL, 22), "::1");
	cr_assert_str_eq(match(NULL, "127.0.0.1", 22), "-");
}

Test(net_rule, special_addresses)
{
	const struct net_rule	*name;

	cr_assert(net_rule_addr_special(sa("127.0.0.1")));
	cr_assert(net_rule_addr_special(sa("127.1.2.3")));
	cr_assert(net_rule_addr_special(sa("0.0.0.0")));
	cr_assert(net_rule_addr_special(sa("169.254.169.254")));
	cr_assert(net_rule_addr_special(sa("224.0.0.1")));
	cr_assert(net_rule_addr_special(sa("255.255.255.255")));
	cr_assert(net_rule_addr_special(sa("::1")));
	cr_assert(net_rule_addr_special(sa("::")));
	cr_assert(net_rule_addr_special(sa("fe80::1")));
	cr_assert(net_rule_addr_special(sa("::ffff:127.0.0.1")));
	cr_assert(!net_rule_addr_special(sa("151.101.2.132")));
	cr_assert(!net_rule_addr_special(sa("10.0.0.1")));
	cr_assert(!net_rule_addr_special(sa("2a04:4e42::644")));

	/* A name on the list does not open the host's own addresses... */
	rules_set("*.example.org:443", NULL);
	name = net_rule_match(rules, nrules, "a.example.org", NULL, 443);
	cr_assert_not_null(name);
	cr_assert(net_rule_addr_allowed(rules, nrules, name,
	    sa("93.184.216.34"), 443));
	cr_assert(!net_rule_addr_allowed(rules, nrules, name,
	    sa("127.0.0.1"), 443));
	cr_assert(!net_rule_addr_allowed(rules, nrules, name,
	    sa("169.254.169.254"), 443));
	cr_assert(!net_rule_addr_allowed(rules, nrules, name, sa("::1"),
	    443));
	/* ...unless a rule names the address, or the name is localhost. */
	rules_set("*.example.org:443", "127.0.0.1:443", NULL);
	name = net_rule_match(rules, nrules, "a.example.org", NULL, 443);
	cr_assert(net_rule_addr_allowed(rules, nrules, name,
	    sa("127.0.0.1"), 443));
	cr_assert(!net_rule_addr_allowed(rules, nrules, name,
	    sa("127.0.0.2"), 443));
	rules_set("localhost:8080", NULL);
	name = net_rule_match(rules, nrules, "localhost", NULL, 8080);
	cr_assert(net_rule_addr_allowed(rules, nrules, name,
	    sa("127.0.0.1"), 8080));
	cr_assert(net_rule_addr_allowed(rules, nrules, name, sa("::1"),
	    8080));
	cr_assert(!net_rule_addr_allowed(rules, nrules, name,
	    sa("169.254.169.254"), 8080));
	/* No name rule: only address rules count. */
	cr_assert(!net_rule_addr_allowed(rules, nrules, NULL,
	    sa("93.184.216.34"), 8080));
}

/* A DENY of network_rules wins over every allow rule, wherever it is. */
Test(net_rule, deny_wins)
{
	const struct net_rule	*r;

	rules_set("*.example.org", "DENY|TCP|secret.example.org|*|OUT",
	    "DENY|TCP|*.example.org|22|OUT", "10.0.0.0/8",
	    "DENY|TCP|10.9.0.0/16|*|OUT", "DENY|TCP|*|25|OUT", NULL);
	cr_assert_str_eq(match("www.example.org", NULL, 443), "*.example.org");
	cr_assert_str_eq(match("secret.example.org", NULL, 443), "-");
	cr_assert_str_eq(match("SECRET.example.org.", NULL, 443), "-");
	cr_assert_str_eq(match("a.secret.example.org", NULL, 443),
	    "*.example.org", "a DENY of a name is not of names under it");
	cr_assert_str_eq(match("www.example.org", NULL, 22), "-");
	cr_assert_str_eq(match("www.example.org", NULL, 21), "*.example.org");
	cr_assert_str_eq(match("www.example.org", NULL, 25), "-");
	cr_assert_str_eq(match(NULL, "10.1.2.3", 80), "10.0.0.0/8");
	cr_assert_str_eq(match(NULL, "10.9.1.1", 80), "-");
	cr_assert_str_eq(match("10.9.1.1", NULL, 80), "-");
	cr_assert_str_eq(match(NULL, "10.1.2.3", 25), "-");

	/* The same, the deny rules first. */
	rules_set("DENY|TCP|secret.example.org|*|OUT", "*.example.org", NULL);
	cr_assert_str_eq(match("secret.example.org", NULL, 443), "-");
	cr_assert_str_eq(match("www.example.org", NULL, 443), "*.example.org");

	/* A deny rule alone allows nothing. */
	rules_set("DENY|TCP|a.example|*|OUT", NULL);
	cr_assert_str_eq(match("a.example", NULL, 80), "-");
	cr_assert_str_eq(match("b.example", NULL, 80), "-");
	cr_assert_str_eq(match("b.example", NULL, 0), "-");

	/* Which rule refused, for messages; port 0: one for every port. */
	rules_set("*.example.org", "DENY|TCP|secret.example.org|*|OUT",
	    "DENY|TCP|*.example.org|22|OUT", NULL);
	cr_assert_not_null(r = net_rule_denied(rules, nrules,
	    "secret.example.org", NULL, 443));
	cr_assert_str_eq(r->text, "secret.example.org");
	cr_assert_not_null(r = net_rule_denied(rules, nrules,
	    "www.example.org", NULL, 22));
	cr_assert_str_eq(r->text, "*.example.org:22");
	cr_assert_null(net_rule_denied(rules, nrules, "www.example.org", NULL,
	    443));
	cr_assert_null(net_rule_denied(rules, nrules, "www.example.org", NULL,
	    0));
	cr_assert_not_null(net_rule_denied(rules, nrules,
	    "secret.example.org", NULL, 0));
}

/* Port 0 (DNS): a name resolves while the deny rules leave it a port. */
Test(net_rule, deny_any_port)
{
	rules_set("*.example.org", "DENY|TCP|secret.example.org|*|OUT",
	    "DENY|TCP|*.example.org|22|OUT", NULL);
	cr_assert_str_eq(match("secret.example.org", NULL, 0), "-");
	cr_assert_str_eq(match("www.example.org", NULL, 0), "*.example.org");

	rules_set("a.example:20-30", "DENY|TCP|a.example|26-30,20-25|OUT",
	    NULL);
	cr_assert_str_eq(match("a.example", NULL, 0), "-");
	cr_assert_str_eq(match("a.example", NULL, 25), "-");
	rules_set("a.example:20-30", "DENY|TCP|a.example|26-30,20-24|OUT",
	    NULL);
	cr_assert_str_eq(match("a.example", NULL, 0), "a.example:20-30");
	cr_assert_str_eq(match("a.example", NULL, 25), "a.example:20-30");
	cr_assert_str_eq(match("a.example", NULL, 24), "-");
	/* The last port of all. */
	rules_set("a.example", "DENY|TCP|a.example|1-65534|OUT", NULL);
	cr_assert_str_eq(match("a.example", NULL, 0), "a.example");
	cr_assert_str_eq(match("a.example", NULL, 65535), "a.example");
	rules_set("a.example", "DENY|TCP|a.example|1-65535|OUT", NULL);
	cr_assert_str_eq(match("a.example", NULL, 0), "-");
}

/* A name that is allowed does not lead into a network that is denied. */
Test(net_rule, deny_addresses_of_names)
{
	const struct net_rule	*name;

	rules_set("*.example.org:443", "DENY|TCP|10.0.0.0/8|*|OUT", NULL);
	name = net_rule_match(rules, nrules, "a.example.org", NULL, 443);
	cr_assert_not_null(name);
	cr_assert(net_rule_addr_allowed(rules, nrules, name,
	    sa("93.184.216.34"), 443));
	cr_assert(!net_rule_addr_allowed(rules, nrules, name,
	    sa("10.1.2.3"), 443));
	cr_assert(!net_rule_addr_allowed(rules, nrules, name,
	    sa("::ffff:10.1.2.3"), 443));
	/* Nor an address rule into what a deny rule takes back. */
	rules_set("127.0.0.1:443", "DENY|TCP|127.0.0.1|443|OUT", NULL);
	cr_assert(!net_rule_addr_allowed(rules, nrules, NULL,
	    sa("127.0.0.1"), 443));
	rules_set("localhost:443", "DENY|TCP|127.0.0.0/8|*|OUT", NULL);
	name = net_rule_match(rules, nrules, "localhost", NULL, 443);
	cr_assert_not_null(name);
	cr_assert(!net_rule_addr_allowed(rules, nrules, name,
	    sa("127.0.0.1"), 443));
	cr_assert(net_rule_addr_allowed(rules, nrules, name, sa("::1"), 443));
}

Test(net_rule, local_addresses)
{
	const struct net_rule	*name;
	const char			*mine = host_address();

	cr_assert(net_rule_addr_local(sa("127.0.0.1")));
	cr_assert(!net_rule_addr_local(sa("192.0.2.1")));
	if (mine == NULL)
		cr_skip_test("this host has no IPv4 address but loopback");
	cr_assert(net_rule_addr_local(sa(mine)));
	/* A name may not lead to the host's own address... */
	rules_set("*.example.org", NULL);
	name = net_rule_match(rules, nrules, "a.example.org", NULL, 80);
	cr_assert(!net_rule_addr_allowed(rules, nrules, name, sa(mine), 80));
	/* ...unless a rule names it. */
	rules_set("*.example.org", mine, NULL);
	name = net_rule_match(rules, nrules, "a.example.org", NULL, 80);
	cr_assert(net_rule_addr_allowed(rules, nrules, name, sa(mine), 80));
}

Test(net_rule, host_valid)
{
	char	label[65], name[256];
	size_t	i;

	cr_assert(net_host_valid("a"));
	cr_assert(net_host_valid("deb.debian.org"));
	cr_assert(net_host_valid("deb.debian.org."));
	cr_assert(net_host_valid("_dmarc.example.org"));
	cr_assert(!net_host_valid(""));
	cr_assert(!net_host_valid("."));
	cr_assert(!net_host_valid("a..b"));
	cr_assert(!net_host_valid(".a"));
	cr_assert(!net_host_valid("a b"));
	cr_assert(!net_host_valid("a:80"));
	cr_assert(!net_host_valid("a/b"));
	cr_assert(!net_host_valid("a\nb"));
	cr_assert(!net_host_valid("\xc3\xa9.org"));
	/* Labels of 63 at most, names of 253 at most. */
	memset(label, 'a', sizeof label);
	label[63] = '\0';
	cr_assert(net_host_valid(label));
	label[63] = 'a';
	label[64] = '\0';
	cr_assert(!net_host_valid(label));
	for (i = 0; i < 253; i++)
		name[i] = i % 2 == 0 ? 'a' : '.';
	name[253] = '\0';
	cr_assert(net_host_valid(name));
	name[253] = 'a';
	name[254] = '\0';
	cr_assert(!net_host_valid(name));
}

/* --- The resolver ------------------------------------------------------- */

struct lookup_result {
	int	done;
	int	err;
	char	addrs[4][INET6_ADDRSTRLEN + 8];
	int	naddrs;
};

static void
lookup_cb(const struct addrinfo *res, int err, void *arg)
{
	struct lookup_result	*lr = arg;
	const struct addrinfo	*ai;
	char			 a[INET6_ADDRSTRLEN];
	int			 port;

	lr->done = 1;
	lr->err = err;
	for (ai = res; ai != NULL && lr->naddrs < 4; ai = ai->ai_next) {
		if (ai->ai_family == AF_INET) {
			const struct sockaddr_in *sin = (const void *)ai->ai_addr;

			inet_ntop(AF_INET, &sin->sin_addr, a, sizeof a);
			port = ntohs(sin->sin_port);
		} else {
			const struct sockaddr_in6 *sin6 =
			    (const void *)ai->ai_addr;

			inet_ntop(AF_INET6, &sin6->sin6_addr, a, sizeof a);
			port = ntohs(sin6->sin6_port);
		}
		snprintf(lr->addrs[lr->naddrs++], sizeof lr->addrs[0], "%s %d",
		    a, port);
	}
}

static void
lookup(struct net_resolver *r, const char *name, int family,
    struct lookup_result *lr)
{
	double	end = util_now() + 10;
	int	err;

	memset(lr, 0, sizeof *lr);
	cr_assert_not_null(net_lookup_start(r, name, 8080, family, lookup_cb,
	    lr, &err), "%s: %s", name, gai_strerror(err));
	cr_assert_eq(lr->done, 0, "the answer came before the lookup returned");
	while (!lr->done) {
		cr_assert(util_now() < end, "no answer for %s", name);
		spin(-1, 0);
	}
}

TestSuite(net_resolve, .init = setup, .fini = teardown, .timeout = 30);

/*
 * localhost and the names under it are loopback (RFC 6761), answered by
 * qsup itself: the same on every host, whatever /etc/hosts or DNS say
 * (glibc resolves no "*.localhost" of its own).
 */
Test(net_resolve, localhost_is_loopback)
{
	static const char *const names[] = { "localhost", "LocalHost.",
	    "db.localhost", "a.b.LOCALHOST" };
	struct net_resolver	*r;
	struct lookup_result	 lr;
	size_t			 i;
	int			 err;

	r = net_resolver_new(loop);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		lookup(r, names[i], AF_UNSPEC, &lr);
		cr_assert_eq(lr.err, 0, "%s", names[i]);
		cr_assert_eq(lr.naddrs, 2, "%s", names[i]);
		cr_assert_str_eq(lr.addrs[0], "127.0.0.1 8080");
		cr_assert_str_eq(lr.addrs[1], "::1 8080");
		lookup(r, names[i], AF_INET, &lr);
		cr_assert_eq(lr.naddrs, 1, "%s", names[i]);
		cr_assert_str_eq(lr.addrs[0], "127.0.0.1 8080");
		lookup(r, names[i], AF_INET6, &lr);
		cr_assert_eq(lr.naddrs, 1, "%s", names[i]);
		cr_assert_str_eq(lr.addrs[0], "::1 8080");
	}
	cr_assert(!net_name_loopback("notlocalhost"));
	cr_assert(!net_name_loopback("localhost.example.org"));
	cr_assert(net_name_loopback("x.localhost."));
	/* Cancelled, or the resolver freed first: no answer, no leak. */
	memset(&lr, 0, sizeof lr);
	net_lookup_cancel(net_lookup_start(r, "localhost", 1, AF_UNSPEC,
	    lookup_cb, &lr, &err));
	spin_for(0.1);
	cr_assert_eq(lr.done, 0);
	net_lookup_start(r, "localhost", 1, AF_UNSPEC, lookup_cb, &lr, &err);
	net_resolver_free(r);
	spin_for(0.1);
	cr_assert_eq(lr.done, 0);
}
