/*
 * libcurl's multi-socket API on a libev loop: an ev_io per socket curl
 * names, one ev_timer for its timeouts, never a blocking wait. After each
 * action the owner's check runs (to read curl's messages). Below
 * image_pull.c, which owns the transfers; it knows nothing of them.
 */
#include <stdlib.h>

#include <curl/curl.h>

#include "image_int.h"

struct image_curl_sock {
	ev_io			 io;
	curl_socket_t		 fd;
	struct image_curl_loop	*cl;
	struct image_curl_sock	*next;
};

/* A socket curl watches is ready: its action, then the owner's check. */
static void
image_curl_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct image_curl_sock	*sk = w->data;
	struct image_curl_loop	*cl = sk->cl;
	int			 action = 0, running;

	(void)loop;
	if (revents & EV_READ)
		action |= CURL_CSELECT_IN;
	if (revents & EV_WRITE)
		action |= CURL_CSELECT_OUT;
	curl_multi_socket_action(cl->multi, sk->fd, action, &running);
	cl->check(cl->arg);
}

/* curl's CURLMOPT_SOCKETFUNCTION: watch s as it asks, on our loop. */
static int
image_curl_socket_cb(CURL *e, curl_socket_t s, int what, void *userp,
    void *socketp)
{
	struct image_curl_loop	*cl = userp;
	struct image_curl_sock	*sk = socketp, **pp;
	int			 ev = 0;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		if (sk == NULL)
			return (0);
		ev_io_stop(cl->loop, &sk->io);
		for (pp = &cl->socks; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == sk) {
				*pp = sk->next;
				break;
			}
		}
		free(sk);
		curl_multi_assign(cl->multi, s, NULL);
		return (0);
	}
	if (sk == NULL) {
		sk = xcalloc(1, sizeof *sk);
		sk->fd = s;
		sk->cl = cl;
		sk->next = cl->socks;
		cl->socks = sk;
		ev_init(&sk->io, image_curl_io_cb);
		sk->io.data = sk;
		curl_multi_assign(cl->multi, s, sk);
	}
	if (what & CURL_POLL_IN)
		ev |= EV_READ;
	if (what & CURL_POLL_OUT)
		ev |= EV_WRITE;
	ev_io_stop(cl->loop, &sk->io);
	ev_io_set(&sk->io, s, ev);
	ev_io_start(cl->loop, &sk->io);
	return (0);
}

/* curl's CURLMOPT_TIMERFUNCTION: the one timer, set as it asks. */
static int
image_curl_timer_set_cb(CURLM *m, long ms, void *userp)
{
	struct image_curl_loop	*cl = userp;

	(void)m;
	ev_timer_stop(cl->loop, &cl->timer);
	if (ms >= 0) {
		ev_timer_set(&cl->timer, ms / 1000.0, 0);
		ev_timer_start(cl->loop, &cl->timer);
	}
	return (0);
}

static void
image_curl_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_curl_loop	*cl = w->data;
	int			 running;

	(void)loop;
	(void)revents;
	curl_multi_socket_action(cl->multi, CURL_SOCKET_TIMEOUT, 0,
	    &running);
	cl->check(cl->arg);
}

/* Ready to be stopped; check(arg) after each of curl's actions. */
void
image_curl_loop_init(struct image_curl_loop *cl, struct ev_loop *loop,
    void (*check)(void *), void *arg)
{
	cl->loop = loop;
	cl->multi = NULL;
	cl->socks = NULL;
	cl->check = check;
	cl->arg = arg;
	ev_init(&cl->timer, image_curl_timer_cb);
	cl->timer.data = cl;
}

/* multi's sockets and timer on the loop from now on. */
void
image_curl_loop_attach(struct image_curl_loop *cl, CURLM *multi)
{
	cl->multi = multi;
	curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION,
	    image_curl_socket_cb);
	curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, cl);
	curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION,
	    image_curl_timer_set_cb);
	curl_multi_setopt(multi, CURLMOPT_TIMERDATA, cl);
}

/* Every watcher stopped and freed (after curl_multi_cleanup). */
void
image_curl_loop_stop(struct image_curl_loop *cl)
{
	struct image_curl_sock	*sk;

	while ((sk = cl->socks) != NULL) {
		cl->socks = sk->next;
		ev_io_stop(cl->loop, &sk->io);
		free(sk);
	}
	ev_timer_stop(cl->loop, &cl->timer);
	cl->multi = NULL;
}
