/*
 * The guest's network (core/net*.c) without a VM: rules matched one by
 * one; the proxy driven through its unix socket, as slirp would, against
 * real servers on 127.0.0.1; and slirp driven with hand-made Ethernet
 * frames on the socket QEMU would hold.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <ev.h>

#include "cmd.h"
#include "net_int.h"

/* --- Rules -------------------------------------------------------------- */

#define RULES_MAX	16

static struct net_rule	rules[RULES_MAX];
static size_t			nrules;

/* Rules as network_allow writes them, or socket rules (with '|'). */
static void
rules_set(const char *first, ...)
{
	va_list			 ap;
	const char		*text;
	char			*why;
	struct net_rule	*v;
	struct net_port	*pt = NULL;
	size_t			 nv, npt = 0, i;

	while (nrules > 0)
		net_rule_free(&rules[--nrules]);
	if (first == NULL)
		return;
	va_start(ap, first);
	for (text = first; text != NULL; text = va_arg(ap, const char *)) {
		cr_assert(nrules < RULES_MAX);
		if (strchr(text, '|') == NULL) {
			if (net_rule_parse(text, &rules[nrules], &why) == -1)
				cr_assert_fail("%s: %s", text, why);
			nrules++;
			continue;
		}
		v = NULL;
		nv = 0;
		if (net_rule_compile(text, 1, &v, &nv, &pt, &npt, &why) == -1)
			cr_assert_fail("%s: %s", text, why);
		cr_assert_eq(npt, 0, "%s: an inbound rule", text);
		for (i = 0; i < nv; i++) {
			cr_assert(nrules < RULES_MAX);
			rules[nrules++] = v[i];
		}
		free(v);
	}
	va_end(ap);
}

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

/* One of this host's IPv4 addresses that is not loopback, or NULL. */
static const char *
host_address(void)
{
	static char	 text[INET_ADDRSTRLEN];
	struct ifaddrs	*ifa, *i;
	unsigned char	*b;

	text[0] = '\0';
	cr_assert(getifaddrs(&ifa) == 0);
	for (i = ifa; i != NULL && text[0] == '\0'; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		b = (unsigned char *)&((struct sockaddr_in *)(void *)
		    i->ifa_addr)->sin_addr;
		if (b[0] != 127)
			inet_ntop(AF_INET, b, text, sizeof text);
	}
	freeifaddrs(ifa);
	return (text[0] != '\0' ? text : NULL);
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

/* --- A loop, servers, and the proxy's clients ---------------------------- */

static struct ev_loop	*loop;
static char		 dir[64];
static pid_t		 servers[4];
static int		 nservers;

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_verbose = getenv("QSUP_TEST_V") != NULL;
	loop = ev_loop_new(EVFLAG_AUTO);
	snprintf(dir, sizeof dir, "/tmp/qsup-net-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	int	i;

	rules_set(NULL);
	for (i = 0; i < nservers; i++) {
		kill(-servers[i], SIGKILL);
		waitpid(servers[i], NULL, 0);
	}
	nservers = 0;
	util_rm_rf(dir);
	ev_loop_destroy(loop);
}

/* Let the loop run for a moment, waiting on fd (if not -1) as well. */
static void
spin(int fd, int events)
{
	struct pollfd	pfd = { .fd = fd, .events = (short)events };

	ev_run(loop, EVRUN_NOWAIT);
	poll(&pfd, fd != -1 ? 1 : 0, 2);
	ev_run(loop, EVRUN_NOWAIT);
}

static void
spin_for(double seconds)
{
	double	end = util_now() + seconds;

	while (util_now() < end)
		spin(-1, 0);
}

static void
send_all(int fd, const void *data, size_t len)
{
	const char	*p = data;
	double		 end = util_now() + 10;
	ssize_t		 n;

	while (len > 0) {
		cr_assert(util_now() < end, "send stalled");
		n = send(fd, p, len, MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n == -1) {
			cr_assert(errno == EAGAIN, "send: %s", strerror(errno));
			spin(fd, POLLOUT);
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Read until EOF (or want bytes, if not 0); the loop runs meanwhile. */
static void
recv_some(int fd, struct buf *b, size_t want, double seconds)
{
	char	chunk[65536];
	double	end = util_now() + seconds;
	ssize_t	n;

	for (;;) {
		if (want != 0 && b->len >= want)
			return;
		cr_assert(util_now() < end, "no answer after %.0f s (%zu "
		    "bytes so far)", seconds, b->len);
		n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
		if (n == 0)
			return;
		if (n == -1) {
			if (errno == ECONNRESET)
				return;
			cr_assert(errno == EAGAIN, "recv: %s", strerror(errno));
			spin(fd, POLLIN);
			continue;
		}
		buf_add(b, chunk, (size_t)n);
	}
}

/* Connect to one of net's unix sockets, as slirp does for the guest. */
static int
guest_connect(const char *name)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s/%s", dir, name);
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0);
	cr_assert(fd != -1);
	cr_assert(connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0,
	    "%s: %s", sun.sun_path, strerror(errno));
	util_set_nonblock(fd);
	return (fd);
}

/* One request to the proxy; the whole answer until the proxy closes. */
static char *
proxy_ask(const void *req, size_t len)
{
	struct buf	b = { 0 };
	int		fd;

	fd = guest_connect("net0.sock");
	send_all(fd, req, len);
	recv_some(fd, &b, 0, 10);
	close(fd);
	buf_add(&b, "", 0);
	return (b.data);
}

static int
listen_local(int *port)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			fd;

	fd = socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0);
	cr_assert(fd != -1);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0);
	cr_assert(listen(fd, 16) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	*port = ntohs(sin.sin_port);
	return (fd);
}

/* A port on 127.0.0.1 where nothing listens. */
static int
unused_port(void)
{
	int	fd, port;

	fd = listen_local(&port);
	close(fd);
	return (port);
}

enum server_kind {
	SERVER_ECHO,	/* bytes back until EOF, then EOF */
	SERVER_HTTP	/* records the request in logfd, answers "hello" */
};

static void
server_http(int c, int logfd)
{
	char		 req[65536], *end, *cl;
	size_t		 len = 0, body = 0, head;
	ssize_t		 n;
	const char	*answer = "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n"
			    "\r\nhello";

	for (;;) {
		if ((n = read(c, req + len, sizeof req - 1 - len)) <= 0)
			return;
		len += (size_t)n;
		req[len] = '\0';
		if ((end = strstr(req, "\r\n\r\n")) == NULL)
			continue;
		head = (size_t)(end + 4 - req);
		if ((cl = strcasestr(req, "\r\nContent-Length:")) != NULL &&
		    cl < end)
			body = strtoul(cl + 17, NULL, 10);
		if (len >= head + body)
			break;
	}
	(void)write(logfd, req, len);
	(void)write(logfd, "\0", 1);
	(void)write(c, answer, strlen(answer));
}

static int
server(enum server_kind kind, int *logfd)
{
	int	lfd, c, port, p[2] = { -1, -1 };
	char	buf[65536];
	ssize_t	n;
	pid_t	pid;

	lfd = listen_local(&port);
	if (logfd != NULL) {
		cr_assert(pipe(p) == 0);
		*logfd = p[0];
	}
	pid = fork();
	cr_assert(pid != -1);
	if (pid == 0) {
		/* A process group, so that teardown stops every child. */
		setpgid(0, 0);
		signal(SIGCHLD, SIG_IGN);
		for (;;) {
			if ((c = accept(lfd, NULL, NULL)) == -1)
				_exit(1);
			if (kind == SERVER_HTTP) {
				server_http(c, p[1]);
				close(c);
				continue;
			}
			if (fork() == 0) {
				while ((n = read(c, buf, sizeof buf)) > 0)
					(void)write(c, buf, (size_t)n);
				_exit(0);
			}
			close(c);
		}
	}
	setpgid(pid, pid);
	close(lfd);
	if (p[1] != -1)
		close(p[1]);
	servers[nservers++] = pid;
	return (port);
}

/* What the HTTP server was sent, as it recorded it. */
static char *
server_log(int logfd)
{
	struct buf	b = { 0 };
	struct pollfd	pfd = { .fd = logfd, .events = POLLIN };
	char		c;

	while (poll(&pfd, 1, 5000) == 1 && read(logfd, &c, 1) == 1 &&
	    c != '\0')
		buf_add(&b, &c, 1);
	buf_add(&b, "", 0);
	return (b.data);
}

/* A network of mode on the rules set, its sockets in the test's dir. */
static struct net *
net_make(enum net_mode mode)
{
	struct net_config	 cfg = { 0 };
	struct net		*net;
	char			*cause = NULL;

	cfg.mode = mode;
	cfg.rules = rules;
	cfg.nrules = nrules;
	cfg.dir = dir;
	net = net_new(loop, &cfg, &cause);
	cr_assert_not_null(net, "net_new: %s", cause);
	return (net);
}

static struct net *
net_allowlist(void)
{
	return (net_make(NET_MODE_ALLOWLIST));
}

/* The destination log holds kind dest with this verdict and count. */
static void
assert_dest(struct net *net, const char *kind, const char *dest,
    int allowed, unsigned long count)
{
	struct net_stats	st;
	size_t			i;

	net_stats(net, &st);
	for (i = 0; i < st.ndests; i++) {
		if (strcmp(st.dests[i].kind, kind) == 0 &&
		    strcmp(st.dests[i].dest, dest) == 0 &&
		    st.dests[i].allowed == allowed) {
			cr_assert_eq(st.dests[i].count, count, "%s %s: %lu "
			    "times, not %lu", kind, dest, st.dests[i].count,
			    count);
			if (!allowed)
				cr_assert_not_null(st.dests[i].why);
			return;
		}
	}
	cr_assert_fail("%s %s (%s) is not in the destination log", kind, dest,
	    allowed ? "allowed" : "refused");
}

/* --- The proxy ----------------------------------------------------------- */

TestSuite(net_proxy, .init = setup, .fini = teardown, .timeout = 60);

Test(net_proxy, connect_allowed_bytes_both_ways)
{
	struct net		*net;
	struct net_stats	 st;
	struct buf		 b = { 0 };
	char			 rule[64], req[128], *big;
	size_t			 i, n = 3 * 1024 * 1024;
	int			 port, fd;

	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();

	fd = guest_connect("net0.sock");
	/* The first bytes of the tunnel may come with the request. */
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nUser-Agent: t\r\n\r\nearly", port, port);
	send_all(fd, req, strlen(req));
	recv_some(fd, &b, 39 + 5, 10);
	cr_assert(strncmp(b.data, "HTTP/1.1 200 Connection established\r\n"
	    "\r\nearly", 44) == 0, "%s", b.data);
	buf_consume(&b, b.len);

	/* More than every buffer on the way holds, so both ways wait. */
	big = xmalloc(n);
	for (i = 0; i < n; i++)
		big[i] = (char)(i * 7 + i / 251);
	send_all(fd, big, n);
	recv_some(fd, &b, n, 30);
	cr_assert_eq(b.len, n);
	cr_assert(memcmp(b.data, big, n) == 0);

	/* A half-close goes through: the server sees EOF and closes. */
	shutdown(fd, SHUT_WR);
	buf_consume(&b, b.len);
	recv_some(fd, &b, 0, 10);
	cr_assert_eq(b.len, 0);
	close(fd);

	net_stats(net, &st);
	cr_assert_eq(st.allowed, 1);
	cr_assert_eq(st.refused, 0);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	assert_dest(net, "connect", rule, 1, 1);
	free(big);
	buf_free(&b);
	net_free(net);
}

/*
 * A guest that sends but never reads: once the buffers on the way are
 * full, the proxy stops reading from both sides, and so the guest stalls
 * instead of qsup's memory growing.
 */
Test(net_proxy, backpressure_bounds_memory)
{
	struct net	*net;
	struct buf	 b = { 0 };
	char		 rule[64], req[128], *chunk;
	size_t		 sent = 0, limit = 64 * 1024 * 1024;
	double		 last;
	ssize_t		 n;
	int		 port, fd;

	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();
	fd = guest_connect("net0.sock");
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    port);
	send_all(fd, req, strlen(req));
	recv_some(fd, &b, 39, 10);
	chunk = xcalloc(1, 65536);
	last = util_now();
	while (sent < limit && util_now() - last < 0.5) {
		n = send(fd, chunk, 65536, MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n > 0) {
			sent += (size_t)n;
			last = util_now();
		} else
			spin(fd, POLLOUT);
	}
	/* Kernel buffers (loopback TCP autotunes to a few MB) and ours. */
	cr_assert_lt(sent, 40 * 1024 * 1024, "%zu bytes taken without "
	    "reading any back", sent);
	cr_assert_gt(sent, 128 * 1024);
	close(fd);
	free(chunk);
	buf_free(&b);
	net_free(net);
}

Test(net_proxy, connect_refused_403_counted)
{
	struct net		*net;
	struct net_stats	 st;
	struct buf		 js = { 0 };
	char			 rule[64], req[128], dest[64], *ans;
	int			 port, other;

	port = server(SERVER_ECHO, NULL);
	other = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, "*.example.org:443", NULL);
	net = net_allowlist();

	/* Another port of an allowed address. */
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    other);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "not allowed"));
	free(ans);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	snprintf(dest, sizeof dest, "127.0.0.1:%d", other);
	assert_dest(net, "connect", dest, 0, 2);

	/* A name no rule allows; an allowed name on another port. */
	ans = proxy_ask("CONNECT evil.example.com:443 HTTP/1.1\r\n\r\n", 41);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	assert_dest(net, "connect", "evil.example.com:443", 0, 1);
	ans = proxy_ask("CONNECT a.example.org:22 HTTP/1.1\r\n\r\n", 37);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "other ports"));
	free(ans);
	/* The host's loopback by another name, or by 10.0.2.2: no. */
	ans = proxy_ask("CONNECT example.org.evil.com:443 HTTP/1.1\r\n\r\n",
	    45);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);

	net_stats(net, &st);
	cr_assert_eq(st.refused, 5);
	cr_assert_eq(st.allowed, 0);
	net_stats_json(net, &js);
	cr_assert_not_null(strstr(js.data, "\"refused\":5"), "%s", js.data);
	cr_assert_not_null(strstr(js.data, "\"dest\":\"evil.example.com:443\""
	    ",\"allowed\":false,\"count\":1,\"why\":"), "%s", js.data);
	buf_free(&js);
	net_free(net);
}

/* CONNECT localhost:port through the proxy, which must let it through. */
static void
connect_localhost(int port)
{
	struct buf	b = { 0 };
	char		req[128];
	int		fd;

	fd = guest_connect("net0.sock");
	snprintf(req, sizeof req, "CONNECT localhost:%d HTTP/1.1\r\n\r\nhi",
	    port);
	send_all(fd, req, strlen(req));
	recv_some(fd, &b, 39 + 2, 10);
	cr_assert(strncmp(b.data, "HTTP/1.1 200 Connection established\r\n"
	    "\r\nhi", 41) == 0, "%s", b.data);
	close(fd);
	buf_free(&b);
}

Test(net_proxy, names_and_the_host_loopback)
{
	struct net	*net;
	char		 r1[64], r2[64], req[128], *ans;
	const char	*mine;
	struct in_addr	 a;
	int		 port;

	port = server(SERVER_ECHO, NULL);
	/*
	 * localhost names the loopback itself; "0x7f.0x1" is a name on the
	 * list that resolves to 127.0.0.1 (as inet_aton reads it) and must
	 * not open the host's loopback.
	 */
	snprintf(r1, sizeof r1, "localhost:%d", port);
	snprintf(r2, sizeof r2, "0x7f.0x1:%d", port);
	rules_set(r1, r2, NULL);
	net = net_allowlist();

	connect_localhost(port);

	snprintf(req, sizeof req, "CONNECT 0x7f.0x1:%d HTTP/1.1\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "host itself"), "%s", ans);
	free(ans);
	snprintf(req, sizeof req, "0x7f.0x1:%d", port);
	assert_dest(net, "connect", req, 0, 1);
	net_free(net);

	/* Nor the host's own address, where 0.0.0.0 servers answer. */
	if ((mine = host_address()) == NULL)
		return;
	inet_pton(AF_INET, mine, &a);
	snprintf(r1, sizeof r1, "0x%08x:%d", ntohl(a.s_addr), port);
	rules_set(r1, NULL);
	net = net_allowlist();
	snprintf(req, sizeof req, "CONNECT %s HTTP/1.1\r\n\r\n", r1);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "host itself"), "%s", ans);
	free(ans);
	net_free(net);
}

/* network_rules' DENY through the proxy: it wins over the allow rules. */
Test(net_proxy, deny_rules_refuse)
{
	struct net	*net;
	char		 r1[64], r2[64], r3[64], req[128], dest[64], *ans;
	int		 port;

	port = server(SERVER_ECHO, NULL);
	snprintf(r1, sizeof r1, "localhost:%d", port);
	snprintf(r2, sizeof r2, "DENY|TCP|127.0.0.1|%d|OUT", port);
	/* localhost is both loopbacks, whatever /etc/hosts says. */
	snprintf(r3, sizeof r3, "DENY|TCP|::1|%d|OUT", port);
	rules_set("127.0.0.0/8", r1, r2, r3, NULL);
	net = net_allowlist();
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	snprintf(dest, sizeof dest, "127.0.0.1:%d", port);
	assert_dest(net, "connect", dest, 0, 1);
	/* An allowed name does not lead into the denied address either. */
	snprintf(req, sizeof req, "CONNECT localhost:%d HTTP/1.1\r\n\r\n",
	    port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	net_free(net);

	/* A DENY of another port leaves this one open. */
	snprintf(r2, sizeof r2, "DENY|TCP|localhost|%d|OUT", port + 1);
	rules_set(r1, r2, NULL);
	net = net_allowlist();
	connect_localhost(port);
	net_free(net);

	/* A DENY of the name, on every port. */
	rules_set(r1, "DENY|TCP|localhost|*|OUT", NULL);
	net = net_allowlist();
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	snprintf(dest, sizeof dest, "localhost:%d", port);
	assert_dest(net, "connect", dest, 0, 1);
	net_free(net);
}

Test(net_proxy, connect_unreachable_502)
{
	struct net	*net;
	char		 req[128], *ans;

	rules_set("127.0.0.1", NULL);
	net = net_allowlist();
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    unused_port());
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 502 ", 13) == 0, "%s", ans);
	free(ans);
	ans = proxy_ask("CONNECT no-such-name.invalid:443 HTTP/1.1\r\n\r\n",
	    46);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	net_free(net);
}

Test(net_proxy, http_get_forwarded)
{
	struct net	*net;
	char		 rule[64], req[512], *ans, *seen, host[64];
	int		 port, logfd;

	port = server(SERVER_HTTP, &logfd);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();

	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/a/b?c=d HTTP/1.1\r\n"
	    "Host: evil.example\r\nProxy-Connection: keep-alive\r\n"
	    "Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
	    "User-Agent: qsup-test\r\nAccept: */*\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert_str_eq(ans, "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n"
	    "hello");
	free(ans);
	seen = server_log(logfd);
	snprintf(host, sizeof host, "Host: 127.0.0.1:%d\r\n", port);
	cr_assert(strncmp(seen, "GET /a/b?c=d HTTP/1.1\r\n", 23) == 0, "%s",
	    seen);
	cr_assert_not_null(strstr(seen, host), "%s", seen);
	cr_assert_not_null(strstr(seen, "\r\nUser-Agent: qsup-test\r\n"));
	cr_assert_not_null(strstr(seen, "\r\nAccept: */*\r\n"));
	cr_assert_not_null(strstr(seen, "\r\nConnection: close\r\n\r\n"));
	cr_assert_null(strstr(seen, "evil"), "%s", seen);
	cr_assert_null(strcasestr(seen, "proxy-"), "%s", seen);
	cr_assert_null(strstr(seen, "keep-alive"), "%s", seen);
	free(seen);

	/* A body goes along; an empty path becomes "/". */
	snprintf(req, sizeof req, "POST http://127.0.0.1:%d HTTP/1.0\r\n"
	    "Content-Length: 7\r\n\r\npayload", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.0 200 OK", 15) == 0, "%s", ans);
	free(ans);
	seen = server_log(logfd);
	cr_assert(strncmp(seen, "POST / HTTP/1.0\r\n", 17) == 0, "%s", seen);
	cr_assert_not_null(strstr(seen, "\r\n\r\npayload"), "%s", seen);
	free(seen);

	snprintf(req, sizeof req, "127.0.0.1:%d", port);
	assert_dest(net, "http", req, 1, 2);
	close(logfd);
	net_free(net);
}

Test(net_proxy, http_get_refused)
{
	struct net		*net;
	struct net_stats	 st;
	char			 rule[64], req[256], *ans;
	int			 port, logfd;

	port = server(SERVER_HTTP, &logfd);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port + 1 > 65535 ? 1 :
	    port + 1);
	rules_set(rule, "deb.debian.org:80", NULL);
	net = net_allowlist();

	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 Forbidden\r\n", 24) == 0, "%s",
	    ans);
	free(ans);
	/* The Host header does not decide: the URL does. */
	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
	    "Host: deb.debian.org\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	/* Nothing reached the server. */
	{
		struct pollfd	pfd = { .fd = logfd, .events = POLLIN };

		cr_assert_eq(poll(&pfd, 1, 200), 0);
	}
	net_stats(net, &st);
	cr_assert_eq(st.refused, 2);
	snprintf(req, sizeof req, "127.0.0.1:%d", port);
	assert_dest(net, "http", req, 0, 2);
	close(logfd);
	net_free(net);
}

Test(net_proxy, malformed_400_and_still_serving)
{
	static const char *const bad[] = {
		"\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /x HTTP/1.1\r\n\r\n",
		"GARBAGE\r\n\r\n",
		"GET  http://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/2.0\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1 x\r\n\r\n",
		"GET http://127.0.0.1/\r\n\r\n",
		"G(T http://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET ftp://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http:/127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http:// HTTP/1.1\r\n\r\n",
		"GET http://user@127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http://a..b/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:99999/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:0/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:8a/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:-1/ HTTP/1.1\r\n\r\n",
		"GET http://[::1/ HTTP/1.1\r\n\r\n",
		"GET http://[zz::1]/ HTTP/1.1\r\n\r\n",
		"GET http://[::1]x/ HTTP/1.1\r\n\r\n",
		"GET http://::1/ HTTP/1.1\r\n\r\n",
		"CONNECT example.org HTTP/1.1\r\n\r\n",
		"CONNECT example.org: HTTP/1.1\r\n\r\n",
		"CONNECT :443 HTTP/1.1\r\n\r\n",
		"CONNECT http://example.org:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.org:443/x HTTP/1.1\r\n\r\n",
		"CONNECT ex ample.org:443 HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nNoColon\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\n: empty\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nBad Name: x\r\n\r\n",
		"\x16\x03\x01\x02\x01\x01\x01\x01\xfc\x03\x03\n\n",
	};
	struct net		*net;
	struct net_stats	 st;
	char			*ans, *big, rule[64], req[256];
	size_t			 i;
	int			 port, logfd, fd;
	struct buf		 b = { 0 };

	port = server(SERVER_HTTP, &logfd);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, "127.0.0.1:80", "example.org:443", NULL);
	net = net_allowlist();
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ans = proxy_ask(bad[i], strlen(bad[i]));
		cr_assert(strncmp(ans, "HTTP/1.1 400 Bad Request\r\n", 26) == 0,
		    "request %zu: %s", i, ans);
		free(ans);
	}
	/* A NUL byte in the head. */
	ans = proxy_ask("GET http://127.0.0.1/ HTTP/1.1\r\nA: \0\r\n\r\n", 40);
	cr_assert(strncmp(ans, "HTTP/1.1 400 ", 13) == 0, "%s", ans);
	free(ans);
	/* A head that never ends. */
	big = xmalloc(20000);
	memcpy(big, "GET http://127.0.0.1/ HTTP/1.1\r\nX: ", 35);
	memset(big + 35, 'a', 20000 - 35);
	ans = proxy_ask(big, 20000);
	cr_assert(strncmp(ans, "HTTP/1.1 431 ", 13) == 0, "%.60s", ans);
	free(ans);
	free(big);
	/* A head cut short by EOF. */
	fd = guest_connect("net0.sock");
	send_all(fd, "GET http://127.0.0.1/ HTT", 25);
	shutdown(fd, SHUT_WR);
	recv_some(fd, &b, 0, 10);
	buf_add(&b, "", 0);
	cr_assert(strncmp(b.data, "HTTP/1.1 400 ", 13) == 0, "%s", b.data);
	close(fd);
	buf_free(&b);
	/* One that ends before a byte: closed at once, not counted. */
	fd = guest_connect("net0.sock");
	shutdown(fd, SHUT_WR);
	recv_some(fd, &b, 0, 2);
	cr_assert_eq(b.len, 0);
	close(fd);
	close(guest_connect("net0.sock"));
	spin_for(0.05);

	net_stats(net, &st);
	cr_assert_eq(st.refused, sizeof bad / sizeof bad[0] + 3);
	cr_assert_eq(st.allowed, 0);
	assert_dest(net, "http", "(malformed request)", 0,
	    sizeof bad / sizeof bad[0] + 3);

	/* And the proxy still works. */
	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/ok HTTP/1.1\r\n\r\n",
	    port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.0 200 OK", 15) == 0, "%s", ans);
	free(ans);
	free(server_log(logfd));
	close(logfd);
	net_free(net);
}

Test(net_proxy, many_at_once)
{
	struct net	*net;
	struct buf	 b[40];
	char		 rule[64], req[128], want[64];
	int		 port, fd[40], i;

	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();
	/* Interleaved: each tunnel must get its own bytes back. */
	for (i = 0; i < 40; i++) {
		memset(&b[i], 0, sizeof b[i]);
		fd[i] = guest_connect("net0.sock");
		snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
		    "\r\nconnection %d;", port, i);
		send_all(fd[i], req, strlen(req));
	}
	for (i = 0; i < 40; i++) {
		snprintf(want, sizeof want, "HTTP/1.1 200 Connection "
		    "established\r\n\r\nconnection %d;", i);
		recv_some(fd[i], &b[i], strlen(want), 10);
		buf_add(&b[i], "", 0);
		cr_assert_str_eq(b[i].data, want);
		close(fd[i]);
		buf_free(&b[i]);
	}
	net_free(net);
}

Test(net_proxy, tcp_map)
{
	struct net	*net;
	struct buf	 b = { 0 };
	char		*cause = NULL, *gaddr = NULL, dest[64];
	int		 port, fd;

	port = server(SERVER_ECHO, NULL);
	rules_set("example.org", NULL);
	net = net_allowlist();
	cr_assert(net_add_tcp_map(net, "db", 5432, "127.0.0.1", port, &gaddr,
	    &cause) == 0, "%s", cause);
	cr_assert_str_eq(gaddr, "10.0.2.101");
	free(gaddr);
	/* Plain TCP: no HTTP in between. */
	fd = guest_connect("net1.sock");
	send_all(fd, "SELECT 1;", 9);
	shutdown(fd, SHUT_WR);
	recv_some(fd, &b, 0, 10);
	buf_add(&b, "", 0);
	cr_assert_str_eq(b.data, "SELECT 1;");
	close(fd);
	buf_free(&b);
	snprintf(dest, sizeof dest, "127.0.0.1:%d", port);
	assert_dest(net, "tcp", dest, 1, 1);

	cr_assert(net_add_tcp_map(net, "bad name", 1, "127.0.0.1", port, NULL,
	    &cause) == -1);
	free(cause);
	net_free(net);
}

/*
 * NET_CONNS_MAX connections at once over the proxy and the maps together;
 * one more is closed at once and counted; once one ends there is room.
 */
Test(net_proxy, connections_capped_over_all_listeners)
{
	struct net	*net;
	struct buf	 b = { 0 };
	char		*cause = NULL;
	int		 fd[NET_CONNS_MAX], extra, i, port;

	port = server(SERVER_ECHO, NULL);
	rules_set("example.org", NULL);
	net = net_allowlist();
	cr_assert(net_add_tcp_map(net, "db", 5432, "127.0.0.1", port, NULL,
	    &cause) == 0, "%s", cause);
	/* Half waiting to say their request, half on the map. */
	for (i = 0; i < NET_CONNS_MAX; i++) {
		fd[i] = guest_connect(i % 2 == 0 ? "net0.sock" : "net1.sock");
		spin(-1, 0);
	}
	spin_for(0.2);
	extra = guest_connect("net0.sock");
	recv_some(extra, &b, 0, 10);
	cr_assert_eq(b.len, 0, "a connection past the limit was served");
	close(extra);
	extra = guest_connect("net1.sock");
	recv_some(extra, &b, 0, 10);
	cr_assert_eq(b.len, 0, "a map connection past the limit was served");
	close(extra);
	assert_dest(net, "http", "(any)", 0, 1);
	assert_dest(net, "tcp", "(any)", 0, 1);
	/* The ones inside still work. */
	send_all(fd[1], "x", 1);
	recv_some(fd[1], &b, 1, 10);
	cr_assert_eq(b.data[0], 'x');
	for (i = 0; i < NET_CONNS_MAX; i++)
		close(fd[i]);
	spin_for(0.2);
	extra = guest_connect("net1.sock");
	send_all(extra, "y", 1);
	buf_consume(&b, b.len);
	recv_some(extra, &b, 1, 10);
	cr_assert_eq(b.data[0], 'y');
	close(extra);
	buf_free(&b);
	net_free(net);
}

/* --- slirp, through frames ---------------------------------------------- */

static const unsigned char guest_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34,
    0x56 };
static struct buf qin;		/* what net wrote to "QEMU", unframed yet */

static void
put16(unsigned char *p, unsigned int v)
{
	p[0] = (v >> 8) & 0xff;
	p[1] = v & 0xff;
}

static uint32_t
sum16(const unsigned char *p, size_t len, uint32_t sum)
{
	size_t	i;

	for (i = 0; i + 1 < len; i += 2)
		sum += ((uint32_t)p[i] << 8) | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return (sum);
}

static unsigned int
fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (~sum & 0xffff);
}

/* An IPv4 frame from the guest to dst; the L4 checksum is filled in. */
static size_t
ip_frame(unsigned char *f, const char *dst, int proto,
    const unsigned char *l4, size_t len)
{
	unsigned char	*ip = f + 14;
	uint32_t	 sum;
	size_t		 csum_at;

	memcpy(f, "\x52\x55\x0a\x00\x02\x02", 6);
	memcpy(f + 6, guest_mac, 6);
	put16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (unsigned int)(20 + len));
	ip[8] = 64;
	ip[9] = (unsigned char)proto;
	inet_pton(AF_INET, NET_GUEST_ADDR, ip + 12);
	inet_pton(AF_INET, dst, ip + 16);
	put16(ip + 10, fold(sum16(ip, 20, 0)));
	memcpy(ip + 20, l4, len);
	csum_at = proto == IPPROTO_TCP ? 16 : proto == IPPROTO_UDP ? 6 : 2;
	put16(ip + 20 + csum_at, 0);
	if (proto == IPPROTO_ICMP)
		sum = sum16(ip + 20, len, 0);
	else {
		sum = sum16(ip + 12, 8, 0) + (uint32_t)proto + (uint32_t)len;
		sum = sum16(ip + 20, len, sum);
	}
	put16(ip + 20 + csum_at, fold(sum));
	return (14 + 20 + len);
}

static void
qemu_send(int fd, const unsigned char *f, size_t len)
{
	unsigned char	hdr[4];

	hdr[0] = (unsigned char)(len >> 24);
	hdr[1] = (unsigned char)(len >> 16);
	hdr[2] = (unsigned char)(len >> 8);
	hdr[3] = (unsigned char)len;
	send_all(fd, hdr, 4);
	send_all(fd, f, len);
}

typedef int (*frame_pred)(const unsigned char *, size_t, void *);

/* The next frame for the guest that pred likes; others are skipped. */
static size_t
qemu_recv(int fd, unsigned char *out, frame_pred pred, void *arg,
    double seconds)
{
	unsigned char	chunk[65536];
	double		end = util_now() + seconds;
	size_t		len;
	ssize_t		n;

	for (;;) {
		while (qin.len >= 4) {
			const unsigned char *p = (unsigned char *)qin.data;

			len = ((size_t)p[0] << 24) | ((size_t)p[1] << 16) |
			    ((size_t)p[2] << 8) | p[3];
			if (qin.len < 4 + len)
				break;
			if (pred(p + 4, len, arg)) {
				memcpy(out, p + 4, len);
				buf_consume(&qin, 4 + len);
				return (len);
			}
			buf_consume(&qin, 4 + len);
		}
		if (util_now() > end)
			return (0);
		n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
		if (n > 0)
			buf_add(&qin, chunk, (size_t)n);
		else
			spin(fd, POLLIN);
	}
}

static int
is_arp_reply(const unsigned char *f, size_t len, void *arg)
{
	(void)arg;
	return (len >= 42 && f[12] == 0x08 && f[13] == 0x06 && f[21] == 2);
}

static int
is_proto(const unsigned char *f, size_t len, void *arg)
{
	return (len >= 34 && f[12] == 0x08 && f[13] == 0x00 &&
	    f[23] == *(int *)arg);
}

static int
is_arp_or_ip(const unsigned char *f, size_t len, void *arg)
{
	(void)arg;
	return (len >= 42 && f[12] == 0x08 && (f[13] == 0x06 ||
	    f[13] == 0x00));
}

static struct net *
net_start(enum net_mode mode, int *qfd)
{
	struct net	*net;

	net = net_make(mode);
	*qfd = net_qemu_fd(net);
	cr_assert(*qfd != -1);
	util_set_nonblock(*qfd);
	buf_consume(&qin, qin.len);
	return (net);
}

/* The guest says who it is (and learns the gateway's MAC). */
static void
guest_arp(int qfd)
{
	unsigned char	f[64], r[65536];
	size_t		len;

	memset(f, 0, sizeof f);
	memset(f, 0xff, 6);
	memcpy(f + 6, guest_mac, 6);
	put16(f + 12, 0x0806);
	put16(f + 14, 1);
	put16(f + 16, 0x0800);
	f[18] = 6;
	f[19] = 4;
	put16(f + 20, 1);
	memcpy(f + 22, guest_mac, 6);
	inet_pton(AF_INET, NET_GUEST_ADDR, f + 28);
	inet_pton(AF_INET, NET_HOST_ADDR, f + 38);
	qemu_send(qfd, f, 60);
	len = qemu_recv(qfd, r, is_arp_reply, NULL, 5);
	cr_assert(len >= 42, "no ARP reply");
	cr_assert(memcmp(r + 22, "\x52\x55\x0a\x00\x02\x02", 6) == 0);
	cr_assert(memcmp(r + 28, f + 38, 4) == 0);
	cr_assert(memcmp(r, guest_mac, 6) == 0);
}

TestSuite(net_slirp, .init = setup, .fini = teardown, .timeout = 60);

Test(net_slirp, qemu_args_and_none)
{
	struct net_config	 cfg = { 0 };
	struct net		*net;
	char			*cause = NULL, want[128];
	char *const		*a;
	int			 bound;

	cfg.mode = NET_MODE_NONE;
	net = net_new(loop, &cfg, &cause);
	cr_assert_not_null(net);
	cr_assert_eq(net_qemu_fd(net), -1);
	cr_assert_null(net_qemu_args(net)[0]);
	cr_assert_null(net_guest_env(net)[0]);
	cr_assert(net_add_hostfwd(net, NULL, 0, 22, &bound, &cause) == -1);
	free(cause);
	net_free(net);

	cfg.mode = NET_MODE_RESTRICTED;
	cfg.dir = dir;
	net = net_new(loop, &cfg, &cause);
	cr_assert_not_null(net, "%s", cause);
	a = net_qemu_args(net);
	snprintf(want, sizeof want, "stream,id=net0,server=off,addr.type=fd,"
	    "addr.str=%d", net_qemu_fd(net));
	cr_assert_str_eq(a[0], "-netdev");
	cr_assert_str_eq(a[1], want);
	cr_assert_str_eq(a[2], "-device");
	cr_assert(strncmp(a[3], "virtio-net-device,netdev=net0,", 30) == 0);
	cr_assert_null(a[4]);
	/* QEMU's end must not leak into other children. */
	cr_assert(fcntl(net_qemu_fd(net), F_GETFD) & FD_CLOEXEC);
	cr_assert_null(net_guest_env(net)[0]);
	net_free(net);

	cfg.mode = NET_MODE_ALLOWLIST;
	net = net_new(loop, &cfg, &cause);
	cr_assert_not_null(net, "%s", cause);
	cr_assert_str_eq(net_guest_env(net)[0],
	    "http_proxy=http://10.0.2.100:3128");
	net_free(net);
}

/* An echo request to the gateway; its answer's length, 0 for none. */
static size_t
guest_ping(int qfd, unsigned char *r, int secs)
{
	unsigned char	 icmp[64], f[128];
	size_t		 flen;
	int		 proto = IPPROTO_ICMP;

	memset(icmp, 0, sizeof icmp);
	icmp[0] = 8;			/* echo request */
	put16(icmp + 4, 0x1234);
	put16(icmp + 6, 1);
	memcpy(icmp + 8, "qsup ping", 9);
	flen = ip_frame(f, NET_HOST_ADDR, IPPROTO_ICMP, icmp, 17);
	qemu_send(qfd, f, flen);
	return (qemu_recv(qfd, r, is_proto, &proto, secs));
}

/* open: slirp answers pings to its own address. */
Test(net_slirp, arp_and_ping_the_gateway)
{
	struct net	*net;
	unsigned char	 r[65536];
	size_t		 len;
	int		 qfd;

	net = net_start(NET_MODE_OPEN, &qfd);
	guest_arp(qfd);
	len = guest_ping(qfd, r, 5);
	cr_assert(len > 0, "no ICMP answer");
	cr_assert_eq(r[34], 0);		/* echo reply */
	cr_assert(memcmp(r + 34 + 8, "qsup ping", 9) == 0);
	net_free(net);
}

/*
 * restricted: no answer, not even slirp's own, which would look like the
 * host answering; the attempt is counted.
 */
Test(net_slirp, restricted_drops_pings)
{
	struct net	*net;
	unsigned char	 r[65536];
	int		 qfd;

	net = net_start(NET_MODE_RESTRICTED, &qfd);
	guest_arp(qfd);
	cr_assert_eq(guest_ping(qfd, r, 1), 0, "a ping was answered");
	assert_dest(net, "icmp", NET_HOST_ADDR, 0, 1);
	net_free(net);
}

/* A TCP SYN from the guest to dst:port; the answer's flags, or -1. */
static int
guest_syn(int qfd, const char *dst, int port)
{
	unsigned char	tcp[20], f[128], r[65536];
	size_t		flen, len;
	int		proto = IPPROTO_TCP;

	memset(tcp, 0, sizeof tcp);
	put16(tcp, 40000);
	put16(tcp + 2, (unsigned int)port);
	tcp[4] = 0x11;			/* seq */
	tcp[12] = 5 << 4;
	tcp[13] = 0x02;			/* SYN */
	put16(tcp + 14, 65535);
	flen = ip_frame(f, dst, IPPROTO_TCP, tcp, sizeof tcp);
	qemu_send(qfd, f, flen);
	len = qemu_recv(qfd, r, is_proto, &proto, 5);
	if (len < 14 + 20 + 20)
		return (-1);
	return (r[14 + 20 + 13]);
}

Test(net_slirp, restricted_keeps_the_host_loopback_out)
{
	struct net	*net;
	char		 dest[64];
	int		 qfd, port, flags;

	port = server(SERVER_ECHO, NULL);
	/* restricted: 10.0.2.2 is not the host's 127.0.0.1; RST. */
	net = net_start(NET_MODE_RESTRICTED, &qfd);
	guest_arp(qfd);
	flags = guest_syn(qfd, NET_HOST_ADDR, port);
	cr_assert(flags != -1 && (flags & 0x04), "flags %#x: not a reset",
	    flags);
	snprintf(dest, sizeof dest, "10.0.2.2:%d", port);
	assert_dest(net, "tcp", dest, 0, 1);
	/* Nor anywhere else. */
	flags = guest_syn(qfd, "192.0.2.1", 80);
	cr_assert(flags != -1 && (flags & 0x04), "flags %#x", flags);
	assert_dest(net, "tcp", "192.0.2.1:80", 0, 1);
	net_free(net);

	/* allowlist: the same, whatever the rules say about addresses. */
	snprintf(dest, sizeof dest, "127.0.0.1:%d", port);
	rules_set(dest, NULL);
	net = net_start(NET_MODE_ALLOWLIST, &qfd);
	guest_arp(qfd);
	flags = guest_syn(qfd, NET_HOST_ADDR, port);
	cr_assert(flags != -1 && (flags & 0x04), "flags %#x", flags);
	net_free(net);

	/* open: it is, as documented (SYN|ACK from the host's server). */
	net = net_start(NET_MODE_OPEN, &qfd);
	guest_arp(qfd);
	flags = guest_syn(qfd, NET_HOST_ADDR, port);
	cr_assert(flags != -1 && (flags & 0x12) == 0x12, "flags %#x: not "
	    "SYN|ACK", flags);
	net_free(net);
}

/* A DNS query from the guest; the answer's rcode and first A, if any. */
static int
guest_dns(int qfd, const char *name, int qtype, char *addr, int *ancount)
{
	unsigned char	 udp[512], f[600], r[65536], *p;
	const char	*label, *dot;
	size_t		 len, flen;
	int		 proto = IPPROTO_UDP;

	memset(udp, 0, sizeof udp);
	put16(udp, 33333);
	put16(udp + 2, 53);
	p = udp + 8;
	put16(p, 0xbeef);
	put16(p + 2, 0x0100);		/* RD */
	put16(p + 4, 1);
	p += 12;
	for (label = name; *label != '\0'; label = dot + 1) {
		dot = strchr(label, '.');
		if (dot == NULL)
			dot = label + strlen(label);
		*p++ = (unsigned char)(dot - label);
		memcpy(p, label, (size_t)(dot - label));
		p += dot - label;
		if (*dot == '\0')
			break;
	}
	*p++ = 0;
	put16(p, (unsigned int)qtype);
	put16(p + 2, 1);
	p += 4;
	put16(udp + 4, (unsigned int)(p - udp));
	flen = ip_frame(f, NET_DNS_ADDR, IPPROTO_UDP, udp, (size_t)(p - udp));
	memcpy(f, "\x52\x55\x0a\x00\x02\x03", 6);
	qemu_send(qfd, f, flen);
	len = qemu_recv(qfd, r, is_proto, &proto, 10);
	if (len == 0)
		return (-1);
	/* From 10.0.2.3:53 to us, checksums right. */
	cr_assert(memcmp(r + 26, "\x0a\x00\x02\x03", 4) == 0);
	cr_assert_eq((r[34] << 8) | r[35], 53);
	cr_assert_eq((r[36] << 8) | r[37], 33333);
	cr_assert_eq(fold(sum16(r + 14, 20, 0)), 0);
	cr_assert_eq(fold(sum16(r + 34, len - 34, sum16(r + 26, 8, 0) +
	    IPPROTO_UDP + (uint32_t)(len - 34))), 0);
	p = r + 42;
	cr_assert_eq((p[0] << 8) | p[1], 0xbeef);
	cr_assert(p[2] & 0x80);		/* a response */
	*ancount = (p[6] << 8) | p[7];
	if (*ancount > 0)
		inet_ntop(AF_INET, r + len - (*ancount) * 16 + 12, addr, 16);
	return (p[3] & 0x0f);
}

Test(net_slirp, dns_answers_allowed_names_only)
{
	struct net		*net;
	struct net_stats	 st;
	char			 addr[16] = "", *cause = NULL, *ga;
	int			 qfd, an, rc;

	rules_set("localhost:8080", "*.example.org", NULL);
	net = net_start(NET_MODE_ALLOWLIST, &qfd);
	cr_assert(net_add_tcp_map(net, "db.internal", 5432, "127.0.0.1", 5432,
	    &ga, &cause) == 0, "%s", cause);

	rc = guest_dns(qfd, "localhost", 1, addr, &an);
	cr_assert_eq(rc, 0);
	cr_assert_eq(an, 1);
	cr_assert_str_eq(addr, "127.0.0.1");
	/* Other types of an allowed name: no error, no answer. */
	rc = guest_dns(qfd, "localhost", 28, addr, &an);
	cr_assert_eq(rc, 0);
	cr_assert_eq(an, 0);
	/* A map's name is its guest address. */
	rc = guest_dns(qfd, "DB.internal", 1, addr, &an);
	cr_assert_eq(rc, 0);
	cr_assert_eq(an, 1);
	cr_assert_str_eq(addr, ga);
	free(ga);
	/* Not on the list: NXDOMAIN, counted, never looked up. */
	rc = guest_dns(qfd, "evil.example.com", 1, addr, &an);
	cr_assert_eq(rc, 3);
	cr_assert_eq(an, 0);
	rc = guest_dns(qfd, "example.org", 1, addr, &an);
	cr_assert_eq(rc, 3);
	rc = guest_dns(qfd, "vm", 1, addr, &an);
	cr_assert_eq(rc, 3);
	assert_dest(net, "dns", "evil.example.com", 0, 1);
	assert_dest(net, "dns", "example.org", 0, 1);
	assert_dest(net, "dns", "localhost", 1, 2);
	net_stats(net, &st);
	cr_assert_eq(st.refused, 3);
	net_free(net);

	/* restricted: nothing resolves. */
	net = net_start(NET_MODE_RESTRICTED, &qfd);
	rc = guest_dns(qfd, "localhost", 1, addr, &an);
	cr_assert_eq(rc, 3);
	assert_dest(net, "dns", "localhost", 0, 1);
	net_free(net);
}

Test(net_slirp, dns_malformed)
{
	static const unsigned char junk[][40] = {
		/* compression pointer in the question */
		{ 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c,
		  0, 1, 0, 1 },
		/* label runs past the end */
		{ 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 60, 'a' },
		/* two questions */
		{ 0x12, 0x34, 0x01, 0x00, 0, 2, 0, 0, 0, 0, 0, 0, 1, 'a', 0,
		  0, 1, 0, 1 },
		/* class CH */
		{ 0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a', 0,
		  0, 1, 0, 3 },
	};
	struct net	*net;
	unsigned char	 udp[64], f[128], r[65536];
	size_t		 i, flen, len;
	int		 qfd, proto = IPPROTO_UDP, an;
	char		 addr[16];

	rules_set("localhost", NULL);
	net = net_start(NET_MODE_ALLOWLIST, &qfd);
	for (i = 0; i < sizeof junk / sizeof junk[0]; i++) {
		memset(udp, 0, sizeof udp);
		put16(udp, 33333);
		put16(udp + 2, 53);
		memcpy(udp + 8, junk[i], sizeof junk[i]);
		put16(udp + 4, 8 + 19);
		flen = ip_frame(f, NET_DNS_ADDR, IPPROTO_UDP, udp, 8 + 19);
		qemu_send(qfd, f, flen);
		len = qemu_recv(qfd, r, is_proto, &proto, 5);
		cr_assert(len > 42, "query %zu: no answer", i);
		cr_assert_eq(r[42 + 3] & 0x0f, 1, "query %zu: rcode %d", i,
		    r[42 + 3] & 0x0f);
	}
	/* Short, and a length that lies: dropped, nothing breaks. */
	memset(udp, 0, sizeof udp);
	put16(udp, 33333);
	put16(udp + 2, 53);
	put16(udp + 4, 60);
	flen = ip_frame(f, NET_DNS_ADDR, IPPROTO_UDP, udp, 12);
	qemu_send(qfd, f, flen);
	cr_assert_eq(qemu_recv(qfd, r, is_proto, &proto, 0.2), 0);
	/* Still answering. */
	cr_assert_eq(guest_dns(qfd, "localhost", 1, addr, &an), 0);
	cr_assert_str_eq(addr, "127.0.0.1");
	net_free(net);
}

Test(net_slirp, hostfwd_reaches_the_guest)
{
	struct net		*net;
	struct sockaddr_in	 sin;
	struct buf		 js = { 0 };
	unsigned char		 r[65536];
	char			*cause = NULL, want[64];
	int			 qfd, bound = 0, fixed, fd, proto = IPPROTO_TCP;
	size_t			 len;

	net = net_start(NET_MODE_RESTRICTED, &qfd);
	guest_arp(qfd);
	cr_assert(net_add_hostfwd(net, "127.0.0.1", 0, 22, &bound,
	    &cause) == 0, "%s", cause);
	cr_assert(bound > 0);
	fixed = unused_port();
	cr_assert(net_add_hostfwd(net, NULL, fixed, 80, NULL, &cause) == 0,
	    "%s", cause);
	cr_assert(net_add_hostfwd(net, "localhost", 0, 22, NULL,
	    &cause) == -1);
	free(cause);
	cr_assert(net_add_hostfwd(net, NULL, fixed, 81, NULL, &cause) == -1);
	free(cause);

	/* A connection to the forward becomes a SYN to the guest's 22. */
	fd = socket(AF_INET, SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)bound);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	connect(fd, (struct sockaddr *)&sin, sizeof sin);
	len = qemu_recv(qfd, r, is_proto, &proto, 5);
	cr_assert(len >= 54, "no SYN for the guest");
	cr_assert(memcmp(r + 30, "\x0a\x00\x02\x0f", 4) == 0);
	cr_assert_eq((r[36] << 8) | r[37], 22);
	cr_assert_eq(r[47] & 0x12, 0x02);
	close(fd);

	net_stats_json(net, &js);
	snprintf(want, sizeof want, "{\"host\":\"127.0.0.1:%d\",\"guest\":22}",
	    bound);
	cr_assert_not_null(strstr(js.data, want), "%s", js.data);
	snprintf(want, sizeof want, "{\"host\":\"127.0.0.1:%d\",\"guest\":80}",
	    fixed);
	cr_assert_not_null(strstr(js.data, want), "%s", js.data);
	buf_free(&js);
	net_free(net);
}

Test(net_slirp, bad_framing_closes_the_link)
{
	struct net		*net;
	struct net_stats	 st;
	unsigned char		 r[65536];
	int			 qfd;

	cr_redirect_stderr();
	net = net_start(NET_MODE_RESTRICTED, &qfd);
	/* Tiny frames are ignored, a huge length ends it all. */
	send_all(qfd, "\0\0\0\3abc", 7);
	send_all(qfd, "\x7f\xff\xff\xff", 4);
	spin_for(0.1);
	{
		unsigned char f[60] = { 0 };

		memset(f, 0xff, 6);
		put16(f + 12, 0x0806);
		qemu_send(qfd, f, sizeof f);
	}
	cr_assert_eq(qemu_recv(qfd, r, is_arp_or_ip, NULL, 0.3), 0);
	net_stats(net, &st);
	cr_assert_eq(st.frames_in, 0);
	net_free(net);
}

/* --- Fuzz: bytes from the guest never crash qsup ------------------------- */

#define FUZZ_REQUESTS	1500
#define FUZZ_FRAMES	4000

/*
 * A fragment of an IPv4 datagram of the guest's, at byte offset off (a
 * multiple of 8), more to come or not; frame f, its length returned.
 */
static size_t
ip_fragment(unsigned char *f, const char *dst, int proto, unsigned int id,
    size_t off, int more, const unsigned char *data, size_t len)
{
	unsigned char	*ip = f + 14;

	memcpy(f, "\x52\x55\x0a\x00\x02\x02", 6);
	memcpy(f + 6, guest_mac, 6);
	put16(f + 12, 0x0800);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	put16(ip + 2, (unsigned int)(20 + len));
	put16(ip + 4, id);
	put16(ip + 6, (more ? 0x2000 : 0) | (unsigned int)(off / 8));
	ip[8] = 64;
	ip[9] = (unsigned char)proto;
	inet_pton(AF_INET, NET_GUEST_ADDR, ip + 12);
	inet_pton(AF_INET, dst, ip + 16);
	put16(ip + 10, fold(sum16(ip, 20, 0)));
	memcpy(ip + 20, data, len);
	return (14 + 20 + len);
}

/* An echo request of 2000 bytes to the gateway in two fragments. */
static size_t
guest_ping_fragmented(int qfd, unsigned char *r, unsigned int id, int secs)
{
	unsigned char	 icmp[2000], f[2100];
	int		 proto = IPPROTO_ICMP;

	memset(icmp, 'p', sizeof icmp);
	icmp[0] = 8;
	icmp[1] = 0;
	put16(icmp + 2, 0);
	put16(icmp + 4, 0x4321);
	put16(icmp + 6, id);
	put16(icmp + 2, fold(sum16(icmp, sizeof icmp, 0)));
	qemu_send(qfd, f, ip_fragment(f, NET_HOST_ADDR, IPPROTO_ICMP, id, 0, 1,
	    icmp, 1000));
	qemu_send(qfd, f, ip_fragment(f, NET_HOST_ADDR, IPPROTO_ICMP, id,
	    1000, 0, icmp + 1000, 1000));
	return (qemu_recv(qfd, r, is_proto, &proto, secs));
}

/*
 * restricted and allowlist: every IPv4 fragment is dropped before slirp
 * (which would hold it for 30 s) or qsup's DNS see it, and counted.
 */
Test(net_slirp, restricted_drops_fragments)
{
	static const unsigned char query[] = "\x82\x35\x00\x35\x00\x23\x00\x00"
	    "\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x09localhost\x00\x00\x01\x00\x01";
	struct net		*net;
	struct net_stats	 st;
	unsigned char		 f[256], r[65536];
	char			 addr[16];
	int			 qfd, an, proto = IPPROTO_UDP;

	rules_set("localhost", NULL);
	net = net_start(NET_MODE_ALLOWLIST, &qfd);
	/* A whole DNS query, cut in two. */
	qemu_send(qfd, f, ip_fragment(f, NET_DNS_ADDR, IPPROTO_UDP, 7, 0, 1,
	    query, 16));
	qemu_send(qfd, f, ip_fragment(f, NET_DNS_ADDR, IPPROTO_UDP, 7, 16, 0,
	    query + 16, sizeof query - 1 - 16));
	cr_assert_eq(qemu_recv(qfd, r, is_proto, &proto, 1), 0,
	    "a fragmented query was answered");
	net_stats(net, &st);
	cr_assert_eq(st.fragments_dropped, 2);
	assert_dest(net, "fragment", NET_DNS_ADDR, 0, 2);
	/* Whole, it is answered. */
	cr_assert_eq(guest_dns(qfd, "localhost", 1, addr, &an), 0);
	cr_assert_str_eq(addr, "127.0.0.1");
	net_free(net);

	net = net_start(NET_MODE_RESTRICTED, &qfd);
	guest_arp(qfd);
	cr_assert_eq(guest_ping_fragmented(qfd, r, 1, 1), 0);
	net_stats(net, &st);
	cr_assert_eq(st.fragments_dropped, 2);
	assert_dest(net, "fragment", NET_HOST_ADDR, 0, 2);
	net_free(net);
}

/*
 * open: fragments are dropped too. libslirp 4.7 would keep them without
 * limit, and a last fragment that comes first (a lone one, or one ahead
 * of its datagram's others) crashes it, and qsup with it.
 */
Test(net_slirp, open_drops_fragments)
{
	struct net		*net;
	struct net_stats	 st;
	unsigned char		 f[2048], data[1400], r[65536];
	unsigned int		 i;
	int			 qfd;

	net = net_start(NET_MODE_OPEN, &qfd);
	guest_arp(qfd);
	cr_assert_eq(guest_ping_fragmented(qfd, r, 1, 1), 0);
	memset(data, 'f', sizeof data);
	/* Middle pieces of datagrams that never complete, ... */
	for (i = 0; i < 1000; i++) {
		qemu_send(qfd, f, ip_fragment(f, NET_HOST_ADDR, IPPROTO_UDP,
		    1000 + i, 8, 1, data, sizeof data));
		if (i % 64 == 0)
			spin(-1, 0);
	}
	/* ... and last pieces, first of their datagrams. */
	qemu_send(qfd, f, ip_fragment(f, NET_HOST_ADDR, IPPROTO_UDP, 3000, 8,
	    0, data, 100));
	qemu_send(qfd, f, ip_fragment(f, NET_HOST_ADDR, IPPROTO_ICMP, 3001,
	    1000, 0, data, 100));
	spin_for(0.2);
	net_stats(net, &st);
	cr_assert_eq(st.fragments_dropped, 2 + 1000 + 2);
	assert_dest(net, "fragment", NET_HOST_ADDR, 0, 2 + 1000 + 2);
	/* Still alive, still answering what is whole. */
	buf_consume(&qin, qin.len);
	cr_assert_gt(guest_ping(qfd, r, 5), 0, "no answer to a plain ping");
	net_free(net);
}

/*
 * slirp opens a socket for each UDP flow (each ping, each connection) of
 * the guest; past NET_SOCKETS_MAX (384) new ones are dropped and counted.
 */
Test(net_slirp, open_caps_slirps_sockets)
{
	struct net		*net;
	struct sockaddr_in	 sin;
	socklen_t		 slen = sizeof sin;
	unsigned char		 udp[16], f[128], r[64];
	int			 qfd, sink, i, got = 0;

	sink = socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC|SOCK_NONBLOCK, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(sink, (struct sockaddr *)&sin, sizeof sin) == 0);
	cr_assert(getsockname(sink, (struct sockaddr *)&sin, &slen) == 0);
	net = net_start(NET_MODE_OPEN, &qfd);
	guest_arp(qfd);
	for (i = 0; i < 400; i++) {
		memset(udp, 'u', sizeof udp);
		put16(udp, (unsigned int)(20000 + i));	/* a flow each */
		memcpy(udp + 2, &sin.sin_port, 2);
		put16(udp + 4, sizeof udp);
		qemu_send(qfd, f, ip_frame(f, NET_HOST_ADDR, IPPROTO_UDP, udp,
		    sizeof udp));
		if (i % 32 == 0) {
			spin(-1, 0);
			while (recv(sink, r, sizeof r, 0) > 0)
				got++;
		}
	}
	spin_for(0.3);
	while (recv(sink, r, sizeof r, 0) > 0)
		got++;
	cr_assert_eq(got, 384, "%d datagrams reached the host", got);
	assert_dest(net, "udp", NET_HOST_ADDR, 0, 16);
	net_free(net);
	close(sink);
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

static void
fuzz_mutate(unsigned char *buf, size_t *len, size_t max)
{
	static const char	 pick[] = "0123456789abcdef:/[]@.*\r\n \t%?#";
	size_t			 n = (size_t)rand() % 6 + 1, at;

	while (n-- > 0) {
		at = *len > 0 ? (size_t)rand() % *len : 0;
		switch (rand() % 5) {
		case 0:
			if (*len > 0)
				buf[at] = (unsigned char)rand();
			break;
		case 1:
			if (*len > 0)
				buf[at] = (unsigned char)pick[(size_t)rand() %
				    (sizeof pick - 1)];
			break;
		case 2:
			*len = at;
			break;
		case 3:
			if (*len > 0 && *len * 2 < max) {
				memcpy(buf + *len, buf + at, *len - at);
				*len += *len - at;
			}
			break;
		case 4:
			if (*len > at + 1)
				memmove(buf + at, buf + at + 1, *len - at - 1);
			if (*len > 0)
				(*len)--;
			break;
		}
	}
}

TestSuite(net_fuzz, .init = setup, .fini = teardown, .timeout = 120);

/*
 * Mutated proxy requests: every answer is a whole HTTP response with one
 * of the codes the proxy gives, or a tunnel's 200 (the echo server then
 * answers with what followed). Only address rules, so that no mutated
 * name is ever looked up.
 */
Test(net_fuzz, proxy_requests)
{
	static const char *const corpus[] = {
		"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
		"GET http://127.0.0.1:%d/a?b=%d HTTP/1.1\r\nHost: x\r\n"
		"Proxy-Connection: keep-alive\r\n\r\n",
		"POST http://[::1]:%d/x HTTP/1.0\r\nContent-Length: %d\r\n\r\n"
		"ab",
		"CONNECT deb.debian.org:%d HTTP/1.1\r\n\r\n%d",
	};
	struct net		*net;
	struct net_stats	 st;
	struct buf		 b = { 0 };
	unsigned char		 req[4096];
	char			 rule[64];
	size_t			 len;
	int			 port, round, fd, code;
	char			*end;

	cr_redirect_stderr();
	srand(20261130);
	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, "[::1]:1-1024", NULL);
	net = net_allowlist();
	for (round = 0; round < FUZZ_REQUESTS; round++) {
		len = (size_t)snprintf((char *)req, sizeof req,
		    corpus[round % 4], port, port);
		if (round % 10 == 0) {
			len = (size_t)rand() % 600;
			for (size_t i = 0; i < len; i++)
				req[i] = (unsigned char)rand();
		} else
			fuzz_mutate(req, &len, sizeof req);
		fd = guest_connect("net0.sock");
		send_all(fd, req, len);
		shutdown(fd, SHUT_WR);
		buf_consume(&b, b.len);
		recv_some(fd, &b, 0, 20);
		close(fd);
		if (b.len == 0)
			continue;	/* no head at all: nothing to say */
		buf_add(&b, "", 0);
		if (strncmp(b.data, "HTTP/1.1 ", 9) != 0) {
			/*
			 * The echo server sent back the request as the proxy
			 * forwarded it: origin form, no proxy headers.
			 */
			end = strstr(b.data, "\r\n\r\n");
			cr_assert_not_null(end, "round %d: %s", round, b.data);
			*end = '\0';
			cr_assert_not_null(strstr(b.data, " /"), "round %d: %s",
			    round, b.data);
			cr_assert_null(strcasestr(b.data, "\nproxy-connection:"),
			    "round %d: %s", round, b.data);
			cr_assert_null(strcasestr(b.data, "\nhost: x"),
			    "round %d: %s", round, b.data);
			cr_assert(end - b.data > 17 && strcmp(end - 17,
			    "Connection: close") == 0, "round %d: %s", round,
			    b.data);
			continue;
		}
		code = atoi(b.data + 9);
		cr_assert(code == 200 || code == 400 || code == 403 ||
		    code == 431 || code == 502, "round %d: %s", round, b.data);
	}
	net_stats(net, &st);
	cr_assert_gt(st.refused, FUZZ_REQUESTS / 4);
	buf_free(&b);
	net_free(net);
}

/*
 * Mutated frames from "QEMU": DNS queries, ARP, TCP and UDP to all sorts
 * of places, and random bytes. They reach the DNS responder, the frame
 * watcher and slirp. Afterwards the stack still answers.
 */
Test(net_fuzz, guest_frames)
{
	struct net	*net;
	unsigned char	 f[2048], r[65536], udp[128], tcp[20];
	size_t		 len, base_len[4];
	unsigned char	 base[4][256];
	char		 addr[16];
	int		 qfd, round, an;
	ssize_t		 n;

	cr_redirect_stderr();
	srand(20261131);
	rules_set("localhost", "127.0.0.1:1-1024", NULL);
	net = net_start(NET_MODE_ALLOWLIST, &qfd);

	/* A DNS query for localhost, a SYN to the proxy, one to 10.0.2.2. */
	memset(udp, 0, sizeof udp);
	put16(udp, 33333);
	put16(udp + 2, 53);
	memcpy(udp + 8, "\xbe\xef\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"
	    "\x09localhost\x00\x00\x01\x00\x01", 12 + 15);
	put16(udp + 4, 8 + 27);
	base_len[0] = ip_frame(base[0], NET_DNS_ADDR, IPPROTO_UDP, udp, 35);
	memset(tcp, 0, sizeof tcp);
	put16(tcp, 40000);
	put16(tcp + 2, NET_PROXY_PORT);
	tcp[12] = 5 << 4;
	tcp[13] = 0x02;
	put16(tcp + 14, 65535);
	base_len[1] = ip_frame(base[1], NET_PROXY_ADDR, IPPROTO_TCP, tcp, 20);
	put16(tcp + 2, 22);
	base_len[2] = ip_frame(base[2], NET_HOST_ADDR, IPPROTO_TCP, tcp, 20);
	memset(base[3], 0, 60);
	memset(base[3], 0xff, 6);
	memcpy(base[3] + 6, guest_mac, 6);
	memcpy(base[3] + 12, "\x08\x06\x00\x01\x08\x00\x06\x04\x00\x01", 10);
	memcpy(base[3] + 22, guest_mac, 6);
	memcpy(base[3] + 28, "\x0a\x00\x02\x0f", 4);
	memcpy(base[3] + 38, "\x0a\x00\x02\x02", 4);
	base_len[3] = 60;

	for (round = 0; round < FUZZ_FRAMES; round++) {
		if (round % 10 == 0) {
			len = (size_t)rand() % 600;
			for (size_t i = 0; i < len; i++)
				f[i] = (unsigned char)rand();
		} else {
			len = base_len[round % 4];
			memcpy(f, base[round % 4], len);
			/* Keep Ethernet mostly intact, so IP is reached. */
			fuzz_mutate(f + 14, &len, sizeof f - 14);
			len += 14;
		}
		qemu_send(qfd, f, len);
		if (round % 16 == 0) {
			spin(-1, 0);
			/* Drop whatever came back. */
			while ((n = recv(qfd, r, sizeof r, MSG_DONTWAIT)) > 0)
				;
			buf_consume(&qin, qin.len);
		}
	}
	spin_for(0.2);
	while (recv(qfd, r, sizeof r, MSG_DONTWAIT) > 0)
		;
	buf_consume(&qin, qin.len);
	/* Still framing, still answering. */
	cr_assert_eq(guest_dns(qfd, "localhost", 1, addr, &an), 0);
	cr_assert_str_eq(addr, "127.0.0.1");
	net_free(net);
}

static void
break_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ONE);
}

/*
 * With qsup out of file descriptors, a connection waiting at the proxy
 * must not spin the loop (the listener stays readable while accept fails
 * with EMFILE); once descriptors are free again it is served.
 */
Test(net_proxy, out_of_descriptors_does_not_spin)
{
	struct net		*net;
	struct net_stats	 st;
	struct rlimit		 rl;
	ev_timer		 stop;
	unsigned int		 before;
	int			 fd, spare[64], n = 0, i;

	rules_set("example.org", NULL);
	net = net_allowlist();
	fd = guest_connect("net0.sock");
	cr_assert(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	/* This test's process only: Criterion forks each test. */
	rl.rlim_cur = 256;
	cr_assert(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	while (n < 64 && (spare[n] = dup(0)) != -1)
		n++;
	while (dup(0) != -1)
		;
	cr_assert_eq(errno, EMFILE);
	/* The loop left to itself for 0.5 s: it sleeps, or it spins. */
	ev_timer_init(&stop, break_cb, 0.5, 0);
	ev_timer_start(loop, &stop);
	before = ev_iteration(loop);
	ev_run(loop, 0);
	cr_assert_lt(ev_iteration(loop) - before, 100,
	    "%u loop iterations in 0.5 s: the loop spins",
	    ev_iteration(loop) - before);
	net_stats(net, &st);
	for (i = 0; i < (int)st.ndests; i++) {
		if (strcmp(st.dests[i].kind, "http") == 0 &&
		    strstr(st.dests[i].why, "file descriptors") != NULL)
			break;
	}
	cr_assert_lt(i, (int)st.ndests, "no refusal for want of descriptors");
	/* Descriptors again: the waiting connection is taken and served. */
	for (i = 0; i < n; i++)
		close(spare[i]);
	send_all(fd, "GET http://example.net/ HTTP/1.1\r\n\r\n", 36);
	{
		struct buf	b = { 0 };

		recv_some(fd, &b, 12, 10);
		cr_assert(b.len >= 12 && strncmp(b.data, "HTTP/1.1 403", 12) == 0,
		    "%.*s", (int)b.len, b.data);
		buf_free(&b);
	}
	close(fd);
	net_free(net);
}
