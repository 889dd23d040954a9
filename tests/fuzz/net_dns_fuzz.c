/*
 * qsup's DNS server, fed the queries guest root can send to 10.0.2.3:53:
 * the input is the DNS message, sent in a well-formed UDP datagram, in
 * allowlist mode (names under localhost allowed, answered by qsup's own
 * resolver, never by DNS; a TCP map's name; everything else refused).
 * Every query gets at most one answer, from 10.0.2.3:53 to the asking
 * port, with the query's id, right IPv4 and UDP checksums, and a length
 * that matches the frame.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cmd.h"
#include "net_int.h"
#include "net_fuzz.h"

#define DNS_FUZZ_MAX	1472		/* a datagram within an MTU of 1500 */

static const char *const	 dns_rule_text[] = { "localhost",
				    "*.localhost:80" };
static struct net_fuzz		 dns_fuzz = { .name = "dns",
				    .text = dns_rule_text, .nrules = 2 };

static uint32_t
dns_sum(const unsigned char *p, size_t len, uint32_t sum)
{
	size_t	i;

	for (i = 0; i + 1 < len; i += 2)
		sum += ((uint32_t)p[i] << 8) | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (sum);
}

static void
dns_put16(unsigned char *p, size_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

/* The frame a guest sends: Ethernet, IPv4, UDP 33333 -> 53, msg. */
static size_t
dns_frame(unsigned char *f, const uint8_t *msg, size_t len)
{
	unsigned char	*ip = f + 14, *udp = ip + 20;

	memcpy(f, "\x52\x55\x0a\x00\x02\x03\x52\x54\x00\x12\x34\x56\x08\x00",
	    14);
	memset(ip, 0, 20);
	ip[0] = 0x45;
	dns_put16(ip + 2, 20 + 8 + len);
	ip[8] = 64;
	ip[9] = 17;
	memcpy(ip + 12, "\x0a\x00\x02\x0f\x0a\x00\x02\x03", 8);
	dns_put16(ip + 10, ~dns_sum(ip, 20, 0) & 0xffff);
	dns_put16(udp, 33333);
	dns_put16(udp + 2, 53);
	dns_put16(udp + 4, 8 + len);
	dns_put16(udp + 6, 0);
	memcpy(udp + 8, msg, len);
	return (14 + 20 + 8 + len);
}

/* Each answer: from 10.0.2.3:53 to 33333, sound, with the query's id. */
static int
dns_check(const unsigned char *f, size_t len, const uint8_t *q, size_t qlen)
{
	const unsigned char	*ip = f + 14, *udp = ip + 20;
	uint32_t		 sum;

	if (len < 14 + 20 + 8 + 12 || f[12] != 0x08 || f[13] != 0x00 ||
	    ip[0] != 0x45 || ip[9] != 17)
		abort();
	if (((size_t)ip[2] << 8 | ip[3]) != len - 14 ||
	    ((size_t)udp[4] << 8 | udp[5]) != len - 14 - 20)
		abort();
	if (dns_sum(ip, 20, 0) != 0xffff)
		abort();
	sum = dns_sum(ip + 12, 8, 0) + 17 + (uint32_t)(len - 34);
	if (dns_sum(udp, len - 34, sum) != 0xffff)
		abort();
	if (memcmp(ip + 12, "\x0a\x00\x02\x03\x0a\x00\x02\x0f", 8) != 0 ||
	    memcmp(udp, "\x00\x35\x82\x35", 4) != 0)
		abort();
	if (qlen < 2 || memcmp(udp + 8, q, 2) != 0 || (udp[10] & 0x80) == 0)
		abort();
	return (1);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net		*net;
	struct buf		 in = { 0 };
	unsigned char		 f[14 + 20 + 8 + DNS_FUZZ_MAX], hdr[4];
	const unsigned char	*p;
	char			 chunk[65536], *cause = NULL;
	size_t			 flen, len, answers = 0;
	ssize_t			 n;
	int			 qfd, i;

	if (size > DNS_FUZZ_MAX)
		size = DNS_FUZZ_MAX;
	net = net_fuzz_new(&dns_fuzz, NET_MODE_ALLOWLIST);
	if (net_add_tcp_map(net, "db.internal", 5432, "127.0.0.1", 9, NULL,
	    &cause) == -1)
		abort();
	qfd = dup(net_qemu_fd(net));
	net_qemu_started(net);
	if (qfd == -1)
		abort();
	flen = dns_frame(f, data, size);
	dns_put16(hdr, 0);
	dns_put16(hdr + 2, flen);
	if (send(qfd, hdr, 4, MSG_NOSIGNAL) != 4 ||
	    send(qfd, f, flen, MSG_NOSIGNAL) != (ssize_t)flen)
		abort();
	/* The answer now, or once qsup's resolver has run in the loop. */
	for (i = 0; i < 4; i++) {
		ev_run(dns_fuzz.loop, EVRUN_NOWAIT);
		while ((n = recv(qfd, chunk, sizeof chunk, MSG_DONTWAIT)) > 0)
			buf_add(&in, chunk, (size_t)n);
	}
	while (in.len >= 4) {
		p = (const unsigned char *)in.data;
		len = (size_t)p[2] << 8 | p[3];
		if (p[0] != 0 || p[1] != 0 || in.len < 4 + len)
			abort();
		answers += dns_check(p + 4, len, data, size);
		buf_consume(&in, 4 + len);
	}
	if (answers > 1 || in.len != 0)
		abort();
	net_fuzz_free(&dns_fuzz, net);
	close(qfd);
	buf_free(&in);
	return (0);
}
