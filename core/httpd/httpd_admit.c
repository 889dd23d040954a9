/*
 * Who gets a connection. A client that never authenticates must not be
 * able to take the slots of those that do: a TCP client address holds
 * at most conns_per_addr connections, the connections that have not yet
 * carried the token at most unauth_max of conns_max, and a connection
 * that finds no room is let in by closing an idle one (waiting for a
 * head): the oldest not yet authenticated first, else, when the
 * unauthenticated are within their share, the oldest kept alive between
 * requests. Only then is it turned away (503, by httpd.c), as nginx's
 * limit_conn and a full server would. The reasons a connection is shed,
 * here or by its deadlines, are named and counted here for /metrics.
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
 * A connection just accepted from sa: -1 when it is taken, its count in
 * its address's record *p (NULL for a unix socket's), which its close lets
 * go of; else why it is to be turned away (enum httpd_shed), counted
 * nowhere. httpd.c, above us, makes the one or turns away the other.
 */
int
httpd_admit(struct httpd *h, const struct sockaddr *sa, struct httpd_peer **p)
{
	int	why;

	*p = httpd_peer_get(h, sa);
	if (*p != NULL)
		(*p)->nconns++;	/* held while room is made: not freed under us */
	if ((why = httpd_make_room(h, *p)) != -1) {
		httpd_peer_put(h, *p);
		*p = NULL;
		return (why);
	}
	return (-1);
}

const char *const httpd_shed_names[HTTPD_SHED_N] = {
	[HTTPD_SHED_HEAD_TIMEOUT] = "head_timeout",
	[HTTPD_SHED_IDLE_TIMEOUT] = "idle_timeout",
	[HTTPD_SHED_BODY_TIMEOUT] = "body_timeout",
	[HTTPD_SHED_SEND_TIMEOUT] = "send_timeout",
	[HTTPD_SHED_PER_ADDRESS] = "per_address",
	[HTTPD_SHED_UNAUTHENTICATED] = "unauthenticated",
	[HTTPD_SHED_IDLE] = "idle_for_room",
	[HTTPD_SHED_FULL] = "full"
};

void
httpd_shed(struct httpd *h, unsigned long long out[HTTPD_SHED_N])
{
	memcpy(out, h->shed, sizeof h->shed);
}
