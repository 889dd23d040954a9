/*
 * The client addresses and how many connections each holds, for
 * httpd_admit.c's per-address cap: an IPv4 address, or an IPv6 /64 (the
 * least one site is given); a unix socket's peers have none. A record
 * lives as long as a connection of its address does: the connection's
 * close lets go of it (httpd_queue.c), so it is at the bottom.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "httpd.h"
#include "httpd_int.h"

/* The address's key: an IPv4 address, or an IPv6 /64. 0: none (unix). */
static int
httpd_peer_key(const struct sockaddr *sa, unsigned char key[8], int *family)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	memset(key, 0, 8);
	if (sa->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)sa;
		memcpy(key, &sin->sin_addr, 4);
		*family = AF_INET;
		return (1);
	}
	if (sa->sa_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			memcpy(key, sin6->sin6_addr.s6_addr + 12, 4);
			*family = AF_INET;
		} else {
			memcpy(key, sin6->sin6_addr.s6_addr, 8);
			*family = AF_INET6;
		}
		return (1);
	}
	return (0);
}

/* FNV-1a: the table's only reader is us, and the keys are short. */
static size_t
httpd_peer_hash(const unsigned char key[8], int family)
{
	uint32_t	h = 2166136261u;
	size_t		i;

	for (i = 0; i < 8; i++)
		h = (h ^ key[i]) * 16777619u;
	h = (h ^ (unsigned)family) * 16777619u;
	return (h % HTTPD_PEER_BUCKETS);
}

/* The address's record, made with no connection if it had none. */
struct httpd_peer *
httpd_peer_get(struct httpd *h, const struct sockaddr *sa)
{
	struct httpd_peers	*b;
	struct httpd_peer	*p;
	unsigned char		 key[8];
	int			 family;

	if (!httpd_peer_key(sa, key, &family))
		return (NULL);
	b = &h->peers[httpd_peer_hash(key, family)];
	LIST_FOREACH(p, b, entry) {
		if (p->family == family && memcmp(p->addr, key, 8) == 0)
			return (p);
	}
	p = xcalloc(1, sizeof *p);
	memcpy(p->addr, key, 8);
	p->family = family;
	LIST_INSERT_HEAD(b, p, entry);
	return (p);
}

/* A connection of p's is gone (or never came): p goes with its last. */
void
httpd_peer_put(struct httpd *h, struct httpd_peer *p)
{
	(void)h;
	if (p == NULL || --p->nconns > 0)
		return;
	LIST_REMOVE(p, entry);
	free(p);
}
