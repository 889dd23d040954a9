/*
 * Name lookups off the loop. getaddrinfo_a(3) runs them in glibc's own
 * threads; each completion is queued under a mutex and wakes the loop
 * through an ev_async, where the caller's callback runs. A lookup that has
 * started cannot be stopped, so the shared part stays alive until the last
 * one finishes, even after net_resolver_free: the loop never waits for DNS.
 * Nothing else of qsup is touched from those threads.
 *
 * "localhost" and every name under it are loopback (RFC 6761, 6.3): they
 * are answered here, 127.0.0.1 and ::1, never from /etc/hosts or DNS.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ev.h>

#include "net_int.h"

struct net_lookup {
	struct net_resolver	*r;
	struct gaicb		 gai;
	struct gaicb		*list[1];
	struct addrinfo		 hints;
	struct sigevent		 sev;
	char			*name;
	char			 service[8];
	net_lookup_cb		 cb;		/* NULL once cancelled */
	void			*arg;
	int			 loopback;	/* answered by qsup itself */
	struct addrinfo		 lo[2];
	struct sockaddr_in	 lo4;
	struct sockaddr_in6	 lo6;
	TAILQ_ENTRY(net_lookup)	 entry;
};
TAILQ_HEAD(net_lookups, net_lookup);

struct net_resolver {
	pthread_mutex_t		 mu;
	int			 refs;		/* the loop's, and one a lookup */
	int			 orphaned;	/* net_resolver_free was called */
	struct ev_loop		*loop;
	ev_async		 async;
	struct net_lookups	 done;
};

static void
net_lookup_destroy(struct net_lookup *l)
{
	if (l->gai.ar_result != NULL)
		freeaddrinfo(l->gai.ar_result);
	free(l->name);
	free(l);
}

static void
net_resolver_destroy(struct net_resolver *r)
{
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* In a glibc thread: hand the finished lookup to the loop. */
static void
net_lookup_notify(union sigval sv)
{
	struct net_lookup	*l = sv.sival_ptr;
	struct net_resolver	*r = l->r;
	int			 last = 0;

	pthread_mutex_lock(&r->mu);
	if (r->orphaned) {
		net_lookup_destroy(l);
		last = --r->refs == 0;
	} else {
		TAILQ_INSERT_TAIL(&r->done, l, entry);
		ev_async_send(r->loop, &r->async);
	}
	pthread_mutex_unlock(&r->mu);
	if (last)
		net_resolver_destroy(r);
}

static void
net_resolver_async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct net_resolver	*r = w->data;
	struct net_lookups	 done;
	struct net_lookup	*l;
	int			 err;

	(void)loop;
	(void)revents;
	TAILQ_INIT(&done);
	pthread_mutex_lock(&r->mu);
	TAILQ_CONCAT(&done, &r->done, entry);
	pthread_mutex_unlock(&r->mu);
	while ((l = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, l, entry);
		pthread_mutex_lock(&r->mu);
		r->refs--;
		pthread_mutex_unlock(&r->mu);
		if (l->cb != NULL && l->loopback)
			l->cb(l->lo, 0, l->arg);
		else if (l->cb != NULL) {
			err = gai_error(&l->gai);
			l->cb(err == 0 ? l->gai.ar_result : NULL, err, l->arg);
		}
		net_lookup_destroy(l);
	}
}

struct net_resolver *
net_resolver_new(struct ev_loop *loop)
{
	struct net_resolver	*r;

	r = xcalloc(1, sizeof *r);
	pthread_mutex_init(&r->mu, NULL);
	r->refs = 1;
	r->loop = loop;
	TAILQ_INIT(&r->done);
	ev_async_init(&r->async, net_resolver_async_cb);
	r->async.data = r;
	ev_async_start(loop, &r->async);
	return (r);
}

/* "localhost", "LocalHost.", "a.b.localhost": loopback by definition. */
int
net_name_loopback(const char *name)
{
	size_t	len = strlen(name);

	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len < 9 || strncasecmp(name + len - 9, "localhost", 9) != 0)
		return (0);
	return (len == 9 || name[len - 10] == '.');
}

/* The answer for a loopback name: 127.0.0.1 first, then ::1. */
static void
net_lookup_loopback(struct net_lookup *l, int port, int family)
{
	struct addrinfo	*ai, *prev = NULL;
	size_t		 n = 0;

	l->loopback = 1;
	l->lo4.sin_family = AF_INET;
	l->lo4.sin_port = htons((uint16_t)port);
	l->lo4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l->lo6.sin6_family = AF_INET6;
	l->lo6.sin6_port = htons((uint16_t)port);
	l->lo6.sin6_addr = in6addr_loopback;
	if (family == AF_INET || family == AF_UNSPEC) {
		ai = &l->lo[n++];
		ai->ai_family = AF_INET;
		ai->ai_addr = (struct sockaddr *)&l->lo4;
		ai->ai_addrlen = sizeof l->lo4;
		prev = ai;
	}
	if (family == AF_INET6 || family == AF_UNSPEC) {
		ai = &l->lo[n++];
		ai->ai_family = AF_INET6;
		ai->ai_addr = (struct sockaddr *)&l->lo6;
		ai->ai_addrlen = sizeof l->lo6;
		if (prev != NULL)
			prev->ai_next = ai;
	}
	for (ai = l->lo; ai < l->lo + n; ai++) {
		ai->ai_socktype = SOCK_STREAM;
		ai->ai_protocol = IPPROTO_TCP;
	}
}

/*
 * Look name up for TCP to port, in family (AF_UNSPEC for any); cb runs
 * later, from the loop, with the addresses (freed when it returns) or a
 * getaddrinfo error. NULL, and *err set, if the lookup could not start.
 */
struct net_lookup *
net_lookup_start(struct net_resolver *r, const char *name, int port,
    int family, net_lookup_cb cb, void *arg, int *err)
{
	struct net_lookup	*l;
	int			 rc;

	l = xcalloc(1, sizeof *l);
	l->r = r;
	l->name = xstrdup(name);
	snprintf(l->service, sizeof l->service, "%d", port);
	l->hints.ai_family = family;
	l->hints.ai_socktype = SOCK_STREAM;
	/* Not AI_ADDRCONFIG: a host with only loopback would get nothing. */
	l->hints.ai_flags = AI_NUMERICSERV;
	l->gai.ar_name = l->name;
	l->gai.ar_service = l->service;
	l->gai.ar_request = &l->hints;
	l->list[0] = &l->gai;
	l->sev.sigev_notify = SIGEV_THREAD;
	l->sev.sigev_value.sival_ptr = l;
	l->sev.sigev_notify_function = net_lookup_notify;
	l->cb = cb;
	l->arg = arg;
	if (net_name_loopback(name)) {
		/* Still later, from the loop, as every answer. */
		net_lookup_loopback(l, port, family);
		pthread_mutex_lock(&r->mu);
		r->refs++;
		TAILQ_INSERT_TAIL(&r->done, l, entry);
		ev_async_send(r->loop, &r->async);
		pthread_mutex_unlock(&r->mu);
		return (l);
	}
	pthread_mutex_lock(&r->mu);
	r->refs++;
	pthread_mutex_unlock(&r->mu);
	if ((rc = getaddrinfo_a(GAI_NOWAIT, l->list, 1, &l->sev)) != 0) {
		pthread_mutex_lock(&r->mu);
		r->refs--;
		pthread_mutex_unlock(&r->mu);
		net_lookup_destroy(l);
		*err = rc;
		return (NULL);
	}
	return (l);
}

/* The caller no longer wants the answer; l is freed when it comes. */
void
net_lookup_cancel(struct net_lookup *l)
{
	if (l != NULL)
		l->cb = NULL;
}

void
net_resolver_free(struct net_resolver *r)
{
	struct net_lookup	*l;
	int			 last;

	if (r == NULL)
		return;
	/* Under the lock: no thread is in ev_async_send meanwhile. */
	pthread_mutex_lock(&r->mu);
	ev_async_stop(r->loop, &r->async);
	r->orphaned = 1;
	while ((l = TAILQ_FIRST(&r->done)) != NULL) {
		TAILQ_REMOVE(&r->done, l, entry);
		net_lookup_destroy(l);
		r->refs--;
	}
	last = --r->refs == 0;
	pthread_mutex_unlock(&r->mu);
	if (last)
		net_resolver_destroy(r);
}
