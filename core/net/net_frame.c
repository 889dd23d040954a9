/*
 * What each frame from the guest goes through before slirp sees it, and
 * why: IPv4 fragments are dropped in every mode (net_frame_fragment), DNS
 * is answered by net_dns.c, new flows in the restricted modes are counted
 * and refused (net_frame_watch), and none are made past NET_SOCKETS_MAX
 * of slirp's sockets (net_frame_sockets_full). The frames are the guest's:
 * every length is checked before a byte is read.
 */
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>

#include <slirp/libslirp.h>

#include "net_int.h"

#define NET_SOCKETS_MAX		384		/* slirp's, at once */

/* The IPv4 header of frame f, or NULL; *ihl is its length. */
static const unsigned char *
net_frame_ipv4(const unsigned char *f, size_t len, size_t *ihl)
{
	const unsigned char	*ip = f + 14;

	if (len < 14 + 20 || f[12] != 0x08 || f[13] != 0x00)
		return (NULL);
	*ihl = (size_t)(ip[0] & 0x0f) * 4;
	if ((ip[0] >> 4) != 4 || *ihl < 20 || 14 + *ihl > len)
		return (NULL);
	return (ip);
}

/* The IPv4 destination of ip, with port unless it is 0. */
static void
net_frame_dest(char *dest, size_t size, const unsigned char *ip, int port)
{
	if (port != 0)
		snprintf(dest, size, "%u.%u.%u.%u:%d", ip[16], ip[17], ip[18],
		    ip[19], port);
	else
		snprintf(dest, size, "%u.%u.%u.%u", ip[16], ip[17], ip[18],
		    ip[19]);
}

/*
 * Would slirp open a flow of its own for this frame: a TCP SYN, a UDP
 * datagram (but DHCP, which slirp answers itself) or a ping? Then 1, with
 * its IPv4 header, its kind and its destination port (0 for a ping).
 */
static int
net_frame_new_flow(const unsigned char *f, size_t len,
    const unsigned char **ipp, const char **kind, int *port)
{
	const unsigned char	*ip, *l4;
	size_t			 ihl;

	if ((ip = net_frame_ipv4(f, len, &ihl)) == NULL || 14 + ihl + 8 > len ||
	    (((ip[6] << 8) | ip[7]) & 0x1fff) != 0)
		return (0);
	l4 = ip + ihl;
	*ipp = ip;
	*port = 0;
	switch (ip[9]) {
	case IPPROTO_TCP:
		if (14 + ihl + 14 > len || (l4[13] & 0x12) != 0x02)
			return (0);		/* not a SYN */
		*kind = "tcp";
		*port = (l4[2] << 8) | l4[3];
		return (1);
	case IPPROTO_UDP:
		*kind = "udp";
		*port = (l4[2] << 8) | l4[3];
		return (*port != 67);		/* DHCP, answered by slirp */
	case IPPROTO_ICMP:
		*kind = "icmp";
		return (l4[0] == 8);		/* an echo request */
	default:
		return (0);
	}
}

/*
 * Count what restricted slirp is about to refuse: a new TCP connection,
 * a UDP datagram or a ping to anywhere but our listeners (DNS and DHCP
 * are answered). A TCP SYN still goes to slirp, which answers with a
 * reset (the guest's connect fails at once rather than time out); UDP and
 * pings are dropped here: slirp answers pings to its own addresses, and a
 * reply from 10.0.2.2 would look like the host being reachable. Returns
 * 1 when the frame is to be dropped.
 */
static int
net_frame_watch(struct net *net, const unsigned char *f, size_t len)
{
	const unsigned char	*ip;
	const char		*kind;
	char			 dest[64];
	int			 port;

	if (!net_frame_new_flow(f, len, &ip, &kind, &port) ||
	    (ip[9] == IPPROTO_TCP && net_map_at(net, ip + 16, port)))
		return (0);
	net_frame_dest(dest, sizeof dest, ip, port);
	net_note(net, kind, dest, 0, net->mode == NET_MODE_ALLOWLIST ?
	    "the guest reaches out only through the proxy at "
	    NET_PROXY_ADDR " and the TCP maps" : "the network is restricted");
	return (ip[9] != IPPROTO_TCP);
}

/*
 * A fragment of an IPv4 datagram: 1, it is dropped, in every mode. The
 * libslirp qsup is built with (4.7) keeps every fragment until its
 * datagram is whole, for up to 30 s and with no limit (20,000 datagrams of
 * 60 KB took qsup to 1 GB), and it crashes on a last fragment that comes
 * before any other of its datagram; neither can be told to it. qsup's own
 * DNS and the proxy's TCP never need fragments; in open mode a datagram
 * larger than the guest's MTU (16 KiB) does not get through.
 */
static int
net_frame_fragment(struct net *net, const unsigned char *f, size_t len)
{
	const unsigned char	*ip;
	char			 dest[INET_ADDRSTRLEN];
	size_t			 ihl;

	if ((ip = net_frame_ipv4(f, len, &ihl)) == NULL ||
	    (((ip[6] << 8) | ip[7]) & 0x3fff) == 0)
		return (0);		/* not a fragment */
	net->stats.fragments_dropped++;
	net_frame_dest(dest, sizeof dest, ip, 0);
	net_note(net, "fragment", dest, 0, "IPv4 fragments are dropped");
	return (1);
}

/*
 * Would slirp open a socket for this frame while it has NET_SOCKETS_MAX
 * already? Then 1: it is dropped (a TCP SYN comes again, slowing the
 * guest down; a UDP datagram or a ping is lost).
 */
static int
net_frame_sockets_full(struct net *net, const unsigned char *f, size_t len)
{
	const unsigned char	*ip;
	const char		*kind;
	char			 dest[64];
	int			 port;

	if (net->nsockets < NET_SOCKETS_MAX ||
	    !net_frame_new_flow(f, len, &ip, &kind, &port))
		return (0);
	net_frame_dest(dest, sizeof dest, ip, 0);
	net_note(net, kind, dest, 0, "too many connections at once");
	return (1);
}

/*
 * One frame from the guest: dropped, answered here (DNS), or given to
 * slirp.
 */
void
net_frame(struct net *net, const unsigned char *frame, size_t len)
{
	net->stats.frames_in++;
	if (net_frame_fragment(net, frame, len))
		return;
	if (net->dns != NULL && net_dns_frame(net->dns, frame, len))
		return;
	if (net->mode != NET_MODE_OPEN && net_frame_watch(net, frame, len))
		return;
	if (net_frame_sockets_full(net, frame, len))
		return;
	slirp_input(net->slirp, frame, (int)len);
}
