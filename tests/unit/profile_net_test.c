/*
 * The network settings on their own: extra_args, network_rules, the
 * seed's socket rules compiled into allows, denies and forwards, and the
 * hosts of network_tcp. Run from the top of the tree.
 */
#include "profile_helpers.h"

/* -------------------------------------------------------------------------
 * extra_args and network rules on their own.
 */

static int
args_ok(const char *first, ...)
{
	va_list	  ap;
	char	**v = NULL, *why;
	size_t	  n = 0, i = 0;
	int	  rc = 0;

	va_start(ap, first);
	for (; first != NULL; first = va_arg(ap, const char *)) {
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = (char *)(uintptr_t)first;
	}
	va_end(ap);
	while (i < n) {
		if (extra_args_next(v, n, &i, &why) == -1) {
			free(why);
			rc = -1;
		}
	}
	free(v);
	return (rc);
}

Test(profile, extra_args_refused)
{
	char	*link;

	cr_assert_eq(args_ok("-device", "virtio-rng-device", NULL), 0);
	cr_assert_eq(args_ok("-object", "rng-random,id=r,filename=/dev/random",
	    NULL), 0);
	cr_assert_eq(args_ok("-drive", "file=/tmp/disk.img,if=virtio", NULL),
	    0);
	cr_assert_eq(args_ok("-chardev", "null,id=n", NULL), 0);
	cr_assert_eq(args_ok("-serial", "none", NULL), 0);

	cr_assert_eq(args_ok("-virtfs", "local,path=/", NULL), -1);
	cr_assert_eq(args_ok("--virtfs", "local,path=/", NULL), -1);
	cr_assert_eq(args_ok("-virtfs=local,path=/", NULL), -1);
	cr_assert_eq(args_ok("--fsdev=local,path=/", NULL), -1);
	cr_assert_eq(args_ok("-drive", "file=/dev/sda", NULL), -1);
	cr_assert_eq(args_ok("-drive", "if=virtio,file=/dev/sda", NULL), -1);
	cr_assert_eq(args_ok("-drive", "file=../../../../../../dev/sda", NULL),
	    -1);
	cr_assert_eq(args_ok("-drive", "file=json:{\"file\":{\"filename\":"
	    "\"/dev/sda\"}}", NULL), -1);
	cr_assert_eq(args_ok("-blockdev", "{\"driver\":\"host_device\","
	    "\"filename\":\"/tmp/x\"}", NULL), -1);
	cr_assert_eq(args_ok("-blockdev", "{\"filename\":\"\\u002fdev/sda\"}",
	    NULL), -1);
	cr_assert_eq(args_ok("-cdrom", "/dev/sr0", NULL), -1);
	cr_assert_eq(args_ok("-no-hpet", "/dev/sda", NULL), -1,
	    "a bare value is a disk to QEMU");
	cr_assert_eq(args_ok("-chardev", "spawn,id=x", NULL), -1);
	cr_assert_eq(args_ok("-chardev", "id=x,backend=spawn", NULL), -1);
	cr_assert_eq(args_ok("-chardev", "file,id=x,path=/tmp/f", NULL), -1);
	cr_assert_eq(args_ok("-runas", "nobody", NULL), -1);
	cr_assert_eq(args_ok("-monitor", "none", NULL), -1);
	cr_assert_eq(args_ok("-mon", "chardev=x", NULL), -1);
	cr_assert_eq(args_ok("-qmp", "tcp::4444", NULL), -1);
	cr_assert_eq(args_ok("-pidfile", "/tmp/p", NULL), -1);
	cr_assert_eq(args_ok("-daemonize", NULL), -1);
	cr_assert_eq(args_ok("-sandbox", "off", NULL), -1);
	cr_assert_eq(args_ok("--sandbox=off", NULL), -1);
	cr_assert_eq(args_ok("-nic", "user", NULL), -1);
	cr_assert_eq(args_ok("-readconfig", "/tmp/q.cfg", NULL), -1);

	/* A link to a device is a device. */
	xasprintf(&link, "%s/tty", tmpdir);
	cr_assert_eq(symlink("/dev/tty", link), 0);
	cr_assert_eq(args_ok("-drive", link, NULL), -1);
	free(link);
}

Test(profile, network_rules)
{
	struct net_rule	r;
	char			*why;
	static const char	*bad[] = {
		"", "a b", "*", "*.", "foo.*.org", "-a.org", "a-.org", "1.2.3",
		"10.0.0.0/33", "10.0.0.0/0", "10.0.0.1/24", "a.org:0",
		"a.org:70000", "a.org:90-80", "a.org:", ":80", "[::1", "[::1]x",
		"::1/129", "a.org/8", "300.1.1.1",
	};
	size_t			 i;

	cr_assert_eq(net_rule_parse("Deb.Debian.ORG", &r, &why), 0);
	cr_assert_str_eq(r.host, "deb.debian.org");
	cr_assert_str_eq(r.text, "Deb.Debian.ORG");
	cr_assert_eq(r.port_min, 0);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("*.pypi.org:443", &r, &why), 0);
	cr_assert_str_eq(r.host, "*.pypi.org");
	cr_assert_eq(r.port_min, 443);
	cr_assert_eq(r.port_max, 443);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("192.0.2.7", &r, &why), 0);
	cr_assert_null(r.host);
	cr_assert_eq(r.family, AF_INET);
	cr_assert_eq(r.prefix, 32);
	cr_assert_eq(r.addr[3], 7);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("[2001:db8::/32]:1-1024", &r, &why), 0);
	cr_assert_eq(r.family, AF_INET6);
	cr_assert_eq(r.prefix, 32);
	cr_assert_eq(r.port_max, 1024);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("::1", &r, &why), 0);
	cr_assert_eq(r.family, AF_INET6);
	net_rule_free(&r);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(net_rule_parse(bad[i], &r, &why), -1, "%s", bad[i]);
		cr_assert_not_null(why);
		cr_assert_null(r.text);
		free(why);
	}
}

/* Compile one socket rule into fresh lists; returns net_rule_compile's. */
static int
compile(const char *text, struct net_rule **v, size_t *nv,
    struct net_port **pt, size_t *npt, char **why)
{
	*v = NULL;
	*pt = NULL;
	*nv = *npt = 0;
	return (net_rule_compile(text, 3, v, nv, pt, npt, why));
}

static void
compiled_free(struct net_rule *v, size_t nv, struct net_port *pt,
    size_t npt)
{
	size_t	i;

	for (i = 0; i < nv; i++)
		net_rule_free(&v[i]);
	free(v);
	for (i = 0; i < npt; i++)
		free(pt[i].address);
	free(pt);
}

/* The seed's socket rules become allow and deny rules, or forwards. */
Test(profile, socket_rules_compile)
{
	static const struct {
		const char	*rule;
		const char	*texts;		/* rules, "|"-joined */
		int		 deny;
	} out[] = {
		{ "ALLOW|TCP|deb.debian.org|80,443|OUT",
		  "deb.debian.org:80|deb.debian.org:443", 0 },
		{ "allow|tcp|Deb.Debian.Org|*|out", "Deb.Debian.Org", 0 },
		{ " ALLOW | TCP | a.example | 8000-8099 | OUT ",
		  "a.example:8000-8099", 0 },
		{ "ALLOW|TCP|10.0.0.0/8|5432|OUT", "10.0.0.0/8:5432", 0 },
		{ "ALLOW|TCP|[2001:db8::/32]|443|OUT",
		  "[2001:db8::/32]:443", 0 },
		{ "ALLOW|TCP|2001:db8::1|443|OUT", "[2001:db8::1]:443", 0 },
		{ "ALLOW|TCP|2001:db8::1|*|OUT", "2001:db8::1", 0 },
		{ "DENY|TCP|*.internal.example|*|OUT",
		  "*.internal.example", 1 },
		{ "Deny|Tcp|*|25,465|Out", "*:25|*:465", 1 },
		{ "DENY|TCP|*|*|OUT", "*", 1 },
	};
	static const struct {
		const char	*rule;
		int		 first, n;
		const char	*address;
	} in[] = {
		{ "ALLOW|TCP|127.0.0.1|8000-8010|IN", 8000, 11, "127.0.0.1" },
		{ "ALLOW|TCP|*|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|192.0.2.5|22|IN", 22, 1, "192.0.2.5" },
		{ "ALLOW|TCP|::1|22|IN", 22, 1, "::1" },
		{ "ALLOW|TCP|localhost|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|ci.example|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|10.0.0.0/8|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|*|1000-1063|IN", 1000, 64, "127.0.0.1" },
	};
	static const char	*bad[] = {
		"", "ALLOW", "ALLOW|TCP|a.example|443", "ALLOW|TCP|a|1|OUT|x",
		"PERMIT|TCP|a.example|443|OUT", "ALLOW|UDP|a.example|53|OUT",
		"ALLOW|ICMP|a.example|*|OUT", "ALLOW|TCP|a.example|443|BOTH",
		"DENY|TCP|127.0.0.1|22|IN", "ALLOW|TCP|*|443|OUT",
		"ALLOW|TCP|*|*|OUT", "ALLOW|TCP||443|OUT",
		"ALLOW|TCP|a..example|443|OUT",
		"ALLOW|TCP|a.example:80|443|OUT",
		"ALLOW|TCP|[::1]:80|443|OUT", "ALLOW|TCP|10.0.0.1/8|443|OUT",
		"ALLOW|TCP|0.0.0.0/0|443|OUT", "ALLOW|TCP|a.example||OUT",
		"ALLOW|TCP|a.example|80,,443|OUT", "ALLOW|TCP|a.example|0|OUT",
		"ALLOW|TCP|a.example|90-80|OUT", "ALLOW|TCP|a.example|x|OUT",
		"ALLOW|TCP|a.example|65536|OUT", "ALLOW|TCP|127.0.0.1|*|IN",
		"ALLOW|TCP|*|1000-1064|IN",
		/* 65 ports and ranges */
		"ALLOW|TCP|a.example|1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,"
		"17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,"
		"37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,"
		"57,58,59,60,61,62,63,64,65|OUT",
	};
	struct net_rule	*v;
	struct net_port	*pt;
	struct buf		 b = { 0 };
	char			*why;
	size_t			 nv, npt, i, j;

	for (i = 0; i < sizeof out / sizeof out[0]; i++) {
		cr_assert_eq(compile(out[i].rule, &v, &nv, &pt, &npt, &why),
		    0, "%s: %s", out[i].rule, why);
		cr_assert_eq(npt, 0);
		buf_consume(&b, b.len);
		for (j = 0; j < nv; j++) {
			buf_printf(&b, "%s%s", j == 0 ? "" : "|", v[j].text);
			cr_assert_eq(v[j].deny, out[i].deny, "%s", out[i].rule);
			cr_assert_eq(v[j].from_rule, 3);
		}
		cr_assert_str_eq(b.data, out[i].texts, "%s", out[i].rule);
		compiled_free(v, nv, pt, npt);
	}
	buf_free(&b);

	/* What each compiled rule matches: the host and the ports. */
	cr_assert_eq(compile("ALLOW|TCP|Deb.Debian.Org|80,8000-8010|OUT", &v,
	    &nv, &pt, &npt, &why), 0);
	cr_assert_eq(nv, 2);
	cr_assert_str_eq(v[0].host, "deb.debian.org");
	cr_assert_eq(v[0].port_min, 80);
	cr_assert_eq(v[0].port_max, 80);
	cr_assert_eq(v[1].port_min, 8000);
	cr_assert_eq(v[1].port_max, 8010);
	compiled_free(v, nv, pt, npt);
	cr_assert_eq(compile("DENY|TCP|*|25|OUT", &v, &nv, &pt, &npt, &why),
	    0);
	cr_assert_str_eq(v[0].host, "*");
	cr_assert_eq(v[0].family, 0);
	cr_assert_eq(v[0].port_min, 25);
	compiled_free(v, nv, pt, npt);
	cr_assert_eq(compile("DENY|TCP|10.9.0.0/16|*|OUT", &v, &nv, &pt, &npt,
	    &why), 0);
	cr_assert_null(v[0].host);
	cr_assert_eq(v[0].family, AF_INET);
	cr_assert_eq(v[0].prefix, 16);
	cr_assert_eq(v[0].port_min, 0);
	compiled_free(v, nv, pt, npt);

	for (i = 0; i < sizeof in / sizeof in[0]; i++) {
		cr_assert_eq(compile(in[i].rule, &v, &nv, &pt, &npt, &why), 0,
		    "%s: %s", in[i].rule, why);
		cr_assert_eq(nv, 0);
		cr_assert_eq(npt, (size_t)in[i].n, "%s", in[i].rule);
		for (j = 0; j < npt; j++) {
			cr_assert_eq(pt[j].guest, in[i].first + (int)j);
			cr_assert_eq(pt[j].host, 0, "any free host port");
			cr_assert_str_eq(pt[j].address, in[i].address, "%s",
			    in[i].rule);
			cr_assert_eq(pt[j].from_rule, 3);
		}
		compiled_free(v, nv, pt, npt);
	}

	/* Refused: why, and nothing added to what was there. */
	v = xcalloc(1, sizeof *v);
	cr_assert_eq(net_rule_parse("kept.example", &v[0], &why), 0);
	nv = 1;
	pt = xcalloc(1, sizeof *pt);
	pt[0].guest = 80;
	pt[0].address = xstrdup("127.0.0.1");
	npt = 1;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why = NULL;
		cr_assert_eq(net_rule_compile(bad[i], 1, &v, &nv, &pt, &npt,
		    &why), -1, "%s", bad[i]);
		cr_assert_not_null(why, "%s", bad[i]);
		cr_assert_eq(nv, 1, "%s", bad[i]);
		cr_assert_eq(npt, 1, "%s", bad[i]);
		free(why);
	}
	cr_assert_str_eq(v[0].text, "kept.example");
	compiled_free(v, nv, pt, npt);
	cr_assert_eq(compile("ALLOW|UDP|a.example|53|OUT", &v, &nv, &pt, &npt,
	    &why), -1);
	assert_contains(why, "DNS");
	free(why);
	cr_assert_eq(compile("DENY|TCP|*|22|IN", &v, &nv, &pt, &npt, &why),
	    -1);
	assert_contains(why, "inbound is closed by default");
	free(why);
}

/* Hosts of network_tcp: a name, or an address where one will do. */
Test(profile, tcp_hosts)
{
	static const char	*names[] = { "db", "DB.Internal", "a-b.c" };
	static const char	*addrs[] = { "127.0.0.1", "::1", "192.0.2.7" };
	static const char	*bad[] = { "", "a b", "*.example", "a..b",
	    "-a", "1.2.3", "10.0.0.0/8", "a.example:80", "[::1]", "a/b",
	    "300.1.1.1" };
	char			*out, *why;
	size_t			 i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		cr_assert_eq(net_rule_parse_host(names[i], 0, &out, &why), 0, "%s",
		    names[i]);
		cr_assert_eq(strcasecmp(out, names[i]), 0);
		cr_assert_eq(strpbrk(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"), NULL,
		    "lower case");
		free(out);
		cr_assert_eq(net_rule_parse_host(names[i], NET_RULE_HOST_ADDR, &out,
		    &why), 0, "%s", names[i]);
		free(out);
	}
	for (i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
		cr_assert_eq(net_rule_parse_host(addrs[i], NET_RULE_HOST_ADDR, &out,
		    &why), 0, "%s", addrs[i]);
		cr_assert_str_eq(out, addrs[i]);
		free(out);
		cr_assert_eq(net_rule_parse_host(addrs[i], 0, &out, &why), -1,
		    "%s is not a name", addrs[i]);
		cr_assert_null(out);
		free(why);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(net_rule_parse_host(bad[i], NET_RULE_HOST_ADDR, &out,
		    &why), -1, "%s", bad[i]);
		cr_assert_null(out);
		cr_assert_not_null(why);
		free(why);
	}
}
