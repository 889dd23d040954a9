/*
 * The guest's resolver at 10.0.2.3:53 (UDP), answered from the frames
 * before slirp sees them; a restricted slirp would only drop them. In
 * "allowlist" mode a name a rule allows gets the IPv4 addresses the host
 * resolves it to (the guest still reaches them only through the proxy),
 * the name of a TCP map gets the map's guest address, and every other name
 * NXDOMAIN, counted as refused. A refused name is never looked up on the
 * host, so DNS cannot carry data out of the guest. In "restricted" mode
 * every name but a map's is refused. One question, class IN; types other
 * than A get an empty answer (the guest has no IPv6).
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <ctype.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "net_int.h"

#define DNS_PENDING_MAX		64	/* lookups on the host at once */
#define DNS_ANSWERS_MAX		8
#define DNS_TTL			60
#define DNS_QUESTION_MAX	(255 + 4)
#define DNS_TYPE_A		1
#define DNS_TYPE_ANY		255
#define DNS_CLASS_IN		1
#define DNS_NOERROR		0
#define DNS_FORMERR		1
#define DNS_SERVFAIL		2
#define DNS_NXDOMAIN		3
#define DNS_NOTIMP		4
#define DNS_REFUSED		5

/* Where an answer goes, and what it answers. */
struct net_dns_query {
	struct net_dns			*dns;
	struct net_lookup		*lookup;
	unsigned char			 guest_mac[6];
	unsigned char			 our_mac[6];
	unsigned char			 guest_ip[4];
	unsigned char			 guest_port[2];
	unsigned char			 id[2];
	uint16_t			 flags;
	unsigned char			 question[DNS_QUESTION_MAX];
	size_t				 qlen;
	uint16_t			 qtype;
	char				 name[256];
	TAILQ_ENTRY(net_dns_query)	 entry;
};
TAILQ_HEAD(net_dns_queries, net_dns_query);

struct net_dns {
	struct net		*net;
	unsigned char		 addr[4];
	struct net_dns_queries	 pending;
	size_t			 npending;
};

static uint32_t
net_dns_sum(const unsigned char *p, size_t len, uint32_t sum)
{
	size_t	i;

	for (i = 0; i + 1 < len; i += 2)
		sum += ((uint32_t)p[i] << 8) | p[i + 1];
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	return (sum);
}

static uint16_t
net_dns_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ((uint16_t)~sum);
}

static void
net_dns_put16(unsigned char *p, unsigned int v)
{
	p[0] = (v >> 8) & 0xff;
	p[1] = v & 0xff;
}

/* Send the answer: Ethernet, IPv4, UDP, DNS. */
static void
net_dns_reply(struct net_dns *dns, const struct net_dns_query *q, int rcode,
    const unsigned char (*addrs)[4], size_t naddrs)
{
	unsigned char	 f[14 + 20 + 8 + 12 + DNS_QUESTION_MAX +
			     DNS_ANSWERS_MAX * 16];
	unsigned char	*ip = f + 14, *udp = ip + 20, *msg = udp + 8, *p;
	size_t		 mlen, i;
	uint32_t	 sum;

	if (naddrs > DNS_ANSWERS_MAX)
		naddrs = DNS_ANSWERS_MAX;
	memcpy(msg, q->id, 2);
	net_dns_put16(msg + 2, 0x8000 | (q->flags & 0x7900) | 0x0080 |
	    (unsigned int)rcode);
	net_dns_put16(msg + 4, q->qlen > 0 ? 1 : 0);
	net_dns_put16(msg + 6, (unsigned int)naddrs);
	net_dns_put16(msg + 8, 0);
	net_dns_put16(msg + 10, 0);
	p = msg + 12;
	memcpy(p, q->question, q->qlen);
	p += q->qlen;
	for (i = 0; i < naddrs; i++) {
		net_dns_put16(p, 0xc00c);	/* the question's name */
		net_dns_put16(p + 2, DNS_TYPE_A);
		net_dns_put16(p + 4, DNS_CLASS_IN);
		net_dns_put16(p + 6, 0);
		net_dns_put16(p + 8, DNS_TTL);
		net_dns_put16(p + 10, 4);
		memcpy(p + 12, addrs[i], 4);
		p += 16;
	}
	mlen = (size_t)(p - msg);

	memcpy(udp, "\0\x35", 2);
	memcpy(udp + 2, q->guest_port, 2);
	net_dns_put16(udp + 4, (unsigned int)(8 + mlen));
	net_dns_put16(udp + 6, 0);

	ip[0] = 0x45;
	ip[1] = 0;
	net_dns_put16(ip + 2, (unsigned int)(20 + 8 + mlen));
	net_dns_put16(ip + 4, 0);
	net_dns_put16(ip + 6, 0x4000);		/* don't fragment */
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	net_dns_put16(ip + 10, 0);
	memcpy(ip + 12, dns->addr, 4);
	memcpy(ip + 16, q->guest_ip, 4);
	net_dns_put16(ip + 10, net_dns_fold(net_dns_sum(ip, 20, 0)));

	/* The pseudo-header, then the datagram. */
	sum = net_dns_sum(ip + 12, 8, 0);
	sum += IPPROTO_UDP + 8 + (uint32_t)mlen;
	sum = net_dns_sum(udp, 8 + mlen, sum);
	net_dns_put16(udp + 6, net_dns_fold(sum) == 0 ? 0xffff :
	    net_dns_fold(sum));

	memcpy(f, q->guest_mac, 6);
	memcpy(f + 6, q->our_mac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	net_link_send(dns->net, f, 14 + 20 + 8 + mlen);
}

static void
net_dns_lookup_cb(const struct addrinfo *res, int err, void *arg)
{
	struct net_dns_query	*q = arg;
	struct net_dns		*dns = q->dns;
	const struct addrinfo	*ai;
	unsigned char		 addrs[DNS_ANSWERS_MAX][4];
	size_t			 n = 0;

	TAILQ_REMOVE(&dns->pending, q, entry);
	dns->npending--;
	for (ai = res; ai != NULL && n < DNS_ANSWERS_MAX; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET)
			continue;
		memcpy(addrs[n++], &((const struct sockaddr_in *)(const void *)
		    ai->ai_addr)->sin_addr, 4);
	}
	if (n > 0)
		net_dns_reply(dns, q, DNS_NOERROR, addrs, n);
	else if (err == EAI_NONAME || err == 0 || err == EAI_NODATA)
		net_dns_reply(dns, q, err == EAI_NONAME ? DNS_NXDOMAIN :
		    DNS_NOERROR, NULL, 0);
	else
		net_dns_reply(dns, q, DNS_SERVFAIL, NULL, 0);
	free(q);
}

/* The question at msg + 12: its name, lower case, dotted; -1 if bad. */
static int
net_dns_question(struct net_dns_query *q, const unsigned char *msg,
    size_t mlen)
{
	size_t		off = 12, nlen = 0, l, i;
	int		ok = 1, c;

	for (;;) {
		if (off >= mlen)
			return (-1);
		l = msg[off];
		if (l == 0) {
			off++;
			break;
		}
		if ((l & 0xc0) != 0 || off + 1 + l > mlen ||
		    nlen + l + 1 > 254)
			return (-1);
		if (nlen > 0)
			q->name[nlen++] = '.';
		for (i = 0; i < l; i++) {
			c = msg[off + 1 + i];
			if (c == '\0' || c == '.' || !isprint(c))
				ok = 0;
			q->name[nlen++] = (char)tolower(c);
		}
		off += 1 + l;
	}
	q->name[nlen] = '\0';
	if (off + 4 > mlen)
		return (-1);
	q->qtype = (uint16_t)((msg[off] << 8) | msg[off + 1]);
	if (((msg[off + 2] << 8) | msg[off + 3]) != DNS_CLASS_IN)
		return (-1);
	q->qlen = off + 4 - 12;
	memcpy(q->question, msg + 12, q->qlen);
	if (!ok || !net_host_valid(q->name))
		q->name[0] = '\0';
	return (0);
}

/* A query from the guest: answer now, or once the host has resolved. */
static void
net_dns_query(struct net_dns *dns, struct net_dns_query *q,
    const unsigned char *msg, size_t mlen)
{
	struct net			*net = dns->net;
	const struct net_rule	*rules;
	struct net_dns_query		*pq;
	struct in_addr			 a;
	unsigned char			 addr[1][4];
	size_t				 nrules;
	char				*why;
	int				 err;

	if (mlen < 12 || (msg[2] & 0x80) != 0)
		return;				/* not a query */
	memcpy(q->id, msg, 2);
	q->flags = (uint16_t)((msg[2] << 8) | msg[3]);
	if (((q->flags >> 11) & 0xf) != 0) {
		net_dns_reply(dns, q, DNS_NOTIMP, NULL, 0);
		return;
	}
	if (((msg[4] << 8) | msg[5]) != 1 ||
	    net_dns_question(q, msg, mlen) == -1) {
		q->qlen = 0;
		net_dns_reply(dns, q, DNS_FORMERR, NULL, 0);
		return;
	}
	if (q->name[0] == '\0') {
		net_note(net, "dns", "(not a host name)", 0,
		    "not a valid host name");
		net_dns_reply(dns, q, DNS_NXDOMAIN, NULL, 0);
		return;
	}
	if (net_map_find(net, q->name, &a) == 0) {
		net_note(net, "dns", q->name, 1, NULL);
		memcpy(addr[0], &a, 4);
		if (q->qtype == DNS_TYPE_A || q->qtype == DNS_TYPE_ANY)
			net_dns_reply(dns, q, DNS_NOERROR, addr, 1);
		else
			net_dns_reply(dns, q, DNS_NOERROR, NULL, 0);
		return;
	}
	rules = net->rules;
	nrules = net->nrules;
	if (net->mode != NET_MODE_ALLOWLIST ||
	    net_rule_match(rules, nrules, q->name, NULL, 0) == NULL) {
		why = net->mode != NET_MODE_ALLOWLIST ?
		    xstrdup("the network is restricted") : net_rule_why(rules,
		    nrules, q->name, NULL, 0, "no rule allows the name");
		net_note(net, "dns", q->name, 0, why);
		free(why);
		net_dns_reply(dns, q, DNS_NXDOMAIN, NULL, 0);
		return;
	}
	net_note(net, "dns", q->name, 1, NULL);
	if (q->qtype != DNS_TYPE_A && q->qtype != DNS_TYPE_ANY) {
		net_dns_reply(dns, q, DNS_NOERROR, NULL, 0);
		return;
	}
	if (dns->npending >= DNS_PENDING_MAX) {
		net_dns_reply(dns, q, DNS_SERVFAIL, NULL, 0);
		return;
	}
	pq = xmalloc(sizeof *pq);
	*pq = *q;
	pq->lookup = net_lookup_start(net->resolver, pq->name, 0, AF_INET,
	    net_dns_lookup_cb, pq, &err);
	if (pq->lookup == NULL) {
		net_dns_reply(dns, q, DNS_SERVFAIL, NULL, 0);
		free(pq);
		return;
	}
	TAILQ_INSERT_TAIL(&dns->pending, pq, entry);
	dns->npending++;
}

/*
 * A frame from the guest: 1 if it was a DNS query for us (answered, or
 * dropped when malformed), 0 if slirp should have it.
 */
int
net_dns_frame(struct net_dns *dns, const unsigned char *f, size_t len)
{
	struct net_dns_query	 q;
	const unsigned char	*ip, *udp;
	size_t			 ihl, total, ulen;

	if (len < 14 + 20 + 8 || f[12] != 0x08 || f[13] != 0x00)
		return (0);
	ip = f + 14;
	ihl = (size_t)(ip[0] & 0x0f) * 4;
	if ((ip[0] >> 4) != 4 || ihl < 20 || 14 + ihl + 8 > len ||
	    ip[9] != IPPROTO_UDP || memcmp(ip + 16, dns->addr, 4) != 0)
		return (0);
	udp = ip + ihl;
	if (udp[2] != 0 || udp[3] != 53)
		return (0);
	/* Ours from here on: slirp never sees it. */
	total = ((size_t)ip[2] << 8) | ip[3];
	ulen = ((size_t)udp[4] << 8) | udp[5];
	if (total < ihl + 8 || 14 + total > len ||
	    (((ip[6] << 8) | ip[7]) & 0x3fff) != 0 ||	/* a fragment */
	    ulen < 8 || ulen > total - ihl)
		return (1);
	memset(&q, 0, sizeof q);
	q.dns = dns;
	memcpy(q.guest_mac, f + 6, 6);
	/* slirp's own MAC for 10.0.2.3, as its ARP answers gave it. */
	memcpy(q.our_mac, "\x52\x55", 2);
	memcpy(q.our_mac + 2, dns->addr, 4);
	memcpy(q.guest_ip, ip + 12, 4);
	memcpy(q.guest_port, udp, 2);
	net_dns_query(dns, &q, udp + 8, ulen - 8);
	return (1);
}

struct net_dns *
net_dns_new(struct net *net)
{
	struct net_dns	*dns;

	dns = xcalloc(1, sizeof *dns);
	dns->net = net;
	inet_pton(AF_INET, NET_DNS_ADDR, dns->addr);
	TAILQ_INIT(&dns->pending);
	return (dns);
}

void
net_dns_free(struct net_dns *dns)
{
	struct net_dns_query	*q;

	if (dns == NULL)
		return;
	while ((q = TAILQ_FIRST(&dns->pending)) != NULL) {
		TAILQ_REMOVE(&dns->pending, q, entry);
		net_lookup_cancel(q->lookup);
		free(q);
	}
	free(dns);
}
