/* (Lead's placeholder until the gate branch lands: no slots, no wait.) */
#include <stdlib.h>

#include <ev.h>

#include "vm.h"

struct gate {
	struct ev_loop	*loop;
	ev_timer	 t;
	gate_cb		 cb;
	void		*arg;
};

static void
gate_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct gate	*g = w->data;

	(void)loop;
	(void)revents;
	g->cb(g->arg);
}

struct gate *
gate_new(struct ev_loop *loop, const char *dir, int slots, gate_cb cb,
    void *arg)
{
	struct gate	*g;

	(void)dir;
	(void)slots;
	g = xcalloc(1, sizeof *g);
	g->loop = loop;
	g->cb = cb;
	g->arg = arg;
	ev_timer_init(&g->t, gate_timer_cb, 0, 0);
	g->t.data = g;
	ev_timer_start(loop, &g->t);
	return (g);
}

int
gate_slots(void)
{
	return (1);
}

int
gate_ahead(const struct gate *g)
{
	(void)g;
	return (0);
}

double
gate_waited(const struct gate *g)
{
	(void)g;
	return (0);
}

void
gate_release(struct gate *g)
{
	(void)g;
}

void
gate_free(struct gate *g)
{
	if (g == NULL)
		return;
	ev_timer_stop(g->loop, &g->t);
	free(g);
}
