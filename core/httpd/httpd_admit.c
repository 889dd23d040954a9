/*
 * Who gets a connection. A client that never authenticates must not be
 * able to take the slots of those that do: a TCP client address holds
 * at most conns_per_addr connections, the connections that have not yet
 * carried the token at most unauth_max of conns_max, and a connection
 * that finds no room is let in by closing an idle one (waiting for a
 * head): the oldest not yet authenticated first, else, when the
 * unauthenticated are within their share, the oldest kept alive between
 * requests. Only then is it turned away (503), as nginx's limit_conn and
 * a full server would.
 *
 * Unix socket peers are not capped by address: the socket is the
 * server's user's alone (mode 0600, or what systemd's unit allows), every
 * peer is that user, who can read the token anyway, and one cap for all of
 * them would cap every local client together (an exec's stream holds a
 * connection as long as it runs).
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
static struct httpd_peer *
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

/*
 * The oldest connection of list that may be closed for room: waiting for
 * a head and in none of our callbacks; of peer p's only, unless p is
 * NULL; for kept-alive ones, only those with nothing begun or going out.
 */
static struct httpd_conn *
httpd_idle_oldest(struct httpd_conns *list, struct httpd_peer *p, int quiet)
{
	struct httpd_conn	*c;

	TAILQ_FOREACH(c, list, park) {
		if (c->dead || c->depth != 0 || c->state != HTTPD_C_HEAD)
			continue;
		if (p != NULL && c->peer != p)
			continue;
		if (quiet && (c->in.len > 0 || httpd_pending(c) > 0))
			continue;
		return (c);
	}
	return (NULL);
}

static void
httpd_evict(struct httpd_conn *c, enum httpd_shed why)
{
	log_debug("httpd: %s: an idle connection closed for a new one (%s)",
	    c->l->bound, httpd_shed_names[why]);
	c->h->shed[why]++;
	httpd_conn_close(c, 0);
	httpd_conn_free(c);
}

/*
 * Room for one more connection from p (counted in p already), made by
 * closing idle ones where the limits allow: -1 when there is, else the
 * limit that turns it away.
 */
static int
httpd_make_room(struct httpd *h, struct httpd_peer *p)
{
	struct httpd_limits	*lim = &h->limits;
	struct httpd_conn	*v;

	if (p != NULL && lim->conns_per_addr > 0 &&
	    p->nconns > lim->conns_per_addr) {
		if ((v = httpd_idle_oldest(&h->idle_unauth, p, 0)) == NULL)
			return (HTTPD_SHED_PER_ADDRESS);
		httpd_evict(v, HTTPD_SHED_PER_ADDRESS);
	}
	/* The new one is unauthenticated too: it must fit their share. */
	if (h->nunauth >= lim->unauth_max) {
		if ((v = httpd_idle_oldest(&h->idle_unauth, NULL, 0)) == NULL)
			return (HTTPD_SHED_UNAUTHENTICATED);
		httpd_evict(v, HTTPD_SHED_UNAUTHENTICATED);
	}
	if (h->nconns >= lim->conns_max) {
		if ((v = httpd_idle_oldest(&h->idle_unauth, NULL, 0)) != NULL)
			httpd_evict(v, HTTPD_SHED_UNAUTHENTICATED);
		else if ((v = httpd_idle_oldest(&h->idle_auth, NULL, 1)) !=
		    NULL)
			httpd_evict(v, HTTPD_SHED_IDLE);
		else
			return (HTTPD_SHED_FULL);
	}
	return (-1);
}

/*
 * A connection just accepted from sa: taken (and its count in its
 * address's record with it), or turned away.
 */
void
httpd_admit(struct httpd *h, struct httpd_listener *l, int fd,
    const struct sockaddr *sa)
{
	struct httpd_peer	*p;
	int			 why;

	p = httpd_peer_get(h, sa);
	if (p != NULL)
		p->nconns++;	/* held while room is made: not freed under us */
	if ((why = httpd_make_room(h, p)) != -1) {
		httpd_peer_put(h, p);
		httpd_turn_away(h, l, fd, why);
		return;
	}
	httpd_conn_new(h, l, fd, p);
}
