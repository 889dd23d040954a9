/*
 * slirp and what stands before it (net_slirp.c, net_link.c, net_frame.c,
 * net_dns.c) driven with hand-made Ethernet frames on the socket QEMU
 * would hold, and with mutated ones.
 */
#include "net_test.h"

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

/* --- Fuzz: bytes from the guest never crash qsup ------------------------- */

#define FUZZ_FRAMES	4000

TestSuite(net_fuzz, .init = setup, .fini = teardown, .timeout = 120);

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
