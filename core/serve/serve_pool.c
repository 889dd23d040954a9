/*
 * The warm pool (the profile's serve_pool, read from the server's own
 * profile): per profile, sandboxes booted the usual way (a template's
 * copy-on-write restore when there is one) and then paused, so that a
 * create of that profile with nothing that changes the guest (no
 * "extra_args", and "settings" only if its profile comes out the same)
 * takes one: renamed, given the create's
 * time limits, resumed, its clock set, answered. The pool is refilled
 * behind it on the loop, one boot at a time and only while no other
 * sandbox boots, so it never takes a start slot from a user's create.
 *
 * A pool sandbox is a struct serve_sb among the server's, with s->pool
 * naming its entry: hidden from the API (serve_find, the list, events)
 * until taken, counted against the server's limits, evicted when a
 * user's create needs its room, stopped with the rest on SIGTERM. Each
 * was booted on its own: its own token, run directory, overlay, and its
 * own /setup (entropy, clock); nothing of one is shared with another.
 * Its guest's clock stands still while it is paused (the vCPUs' clock
 * stops with them), so a taker's is set through the agent on resume.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

#define SERVE_POOL_KICK		0.05	/* s: refills run off callbacks */
#define SERVE_POOL_BACKOFF_MAX	60.0	/* s: a pool that keeps failing */

struct serve_pool_entry {
	char		*key;		/* "default" or a profile's name */
	int		 want;
	unsigned	 failures;	/* in a row: refills back off */
	double		 not_before;	/* no refill until then */
};

struct serve_pool {
	struct serve_pool_entry	*entries;
	size_t			 n;
	ev_timer		 kick;
	unsigned		 next;		/* names of pool sandboxes */
};

static void	serve_pool_kick_cb(struct ev_loop *, ev_timer *, int);

/*
 * Sandboxes that count against the limits, and their guest memory: the
 * pool's too, but not one evicted for a create (it is on its way out).
 */
size_t
serve_live(struct serve *srv, uint64_t *mib)
{
	struct serve_sb	*s;
	size_t		 n = 0;

	*mib = 0;
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->state == SERVE_DEAD || s->pool_evicted)
			continue;
		n++;
		*mib += s->profile.memory_mib;
	}
	return (n);
}

/* The profile a create gives for entry key: NULL for the server's. */
static const char *
serve_pool_profile(struct serve *srv, const char *key)
{
	return (strcmp(key, "default") == 0 ? srv->profile : key);
}

/*
 * The server's pool from its profile p, each entry's profile loaded once
 * now so a bad one stops the start: 0, or -1 with *cause naming it.
 */
int
serve_pool_init(struct serve *srv, const struct profile *p, char **cause)
{
	struct serve_pool	*pool;
	struct profile		 q;
	const char		*key;
	char			*why = NULL;
	size_t			 i;
	long			 total = 0;

	if (p->nserve_pool == 0)
		return (0);
	for (i = 0; i < p->nserve_pool; i++)
		total += atoi(p->serve_pool[i]);
	if (total > p->serve_max_sandboxes) {
		xasprintf(cause, "serve_pool: %ld sandboxes in all, more than "
		    "serve_max_sandboxes (%d)", total, p->serve_max_sandboxes);
		return (-1);
	}
	for (i = 0; i < p->nserve_pool; i++) {
		key = strchr(p->serve_pool[i], ' ') + 1;
		memset(&q, 0, sizeof q);
		if (profile_load_set(&q, serve_pool_profile(srv, key),
		    srv->sets, srv->nsets, &why) == -1) {
			xasprintf(cause, "serve_pool: %s: %s", key, why);
			free(why);
			return (-1);
		}
		profile_free(&q);
	}
	pool = xcalloc(1, sizeof *pool);
	pool->entries = xcalloc(p->nserve_pool, sizeof *pool->entries);
	for (i = 0; i < p->nserve_pool; i++) {
		pool->entries[i].key = xstrdup(strchr(p->serve_pool[i], ' ') +
		    1);
		pool->entries[i].want = atoi(p->serve_pool[i]);
		log_info("pool: %d sandbox%s of %s kept ready",
		    pool->entries[i].want, pool->entries[i].want == 1 ? "" :
		    "es", pool->entries[i].key);
	}
	pool->n = p->nserve_pool;
	ev_init(&pool->kick, serve_pool_kick_cb);
	pool->kick.data = srv;
	srv->pool = pool;
	serve_pool_kick(srv);
	return (0);
}

/* Look at the pool soon, off the callback that changed something. */
void
serve_pool_kick(struct serve *srv)
{
	struct serve_pool	*pool = srv->pool;

	if (pool == NULL || srv->stopping || ev_is_active(&pool->kick))
		return;
	ev_timer_set(&pool->kick, SERVE_POOL_KICK, 0);
	ev_timer_start(srv->loop, &pool->kick);
}

static struct serve_pool_entry *
serve_pool_entry(struct serve *srv, const char *key)
{
	size_t	i;

	for (i = 0; srv->pool != NULL && i < srv->pool->n; i++) {
		if (strcmp(srv->pool->entries[i].key, key) == 0)
			return (&srv->pool->entries[i]);
	}
	return (NULL);
}

/* The pool's sandboxes of entry key (NULL: all) in state st, or alive. */
static int
serve_pool_count(struct serve *srv, const char *key, int st)
{
	struct serve_sb	*s;
	int		 n = 0;

	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->pool == NULL || s->pool_evicted ||
		    (key != NULL && strcmp(s->pool, key) != 0))
			continue;
		if (st >= 0 ? (int)s->state == st :
		    s->state != SERVE_STOPPING && s->state != SERVE_DEAD)
			n++;
	}
	return (n);
}

/*
 * Refill: one boot at a time, none while any sandbox boots (a user's
 * create goes first), none past the server's limits; the next entry
 * that lacks one gets it.
 */
static void
serve_pool_kick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve		*srv = w->data;
	struct serve_pool	*pool = srv->pool;
	struct serve_pool_entry	*e;
	struct serve_sb		*s;
	struct profile		 q;
	char			*name, *cause = NULL;
	double			 now = util_now(), wait = 0;
	uint64_t		 mib;
	size_t			 i, live;

	(void)loop;
	(void)revents;
	if (srv->stopping)
		return;
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->state == SERVE_BOOTING)
			return;		/* its readiness kicks again */
	}
	for (i = 0; i < pool->n; i++) {
		e = &pool->entries[i];
		if (serve_pool_count(srv, e->key, -1) >= e->want)
			continue;
		if (e->not_before > now) {
			if (wait == 0 || e->not_before - now < wait)
				wait = e->not_before - now;
			continue;
		}
		live = serve_live(srv, &mib);
		memset(&q, 0, sizeof q);
		if (live >= (size_t)srv->limits.sandboxes)
			return;		/* a sandbox's end kicks again */
		if (profile_load_set(&q, serve_pool_profile(srv, e->key),
		    srv->sets, srv->nsets, &cause) == 0 &&
		    mib + q.memory_mib > srv->limits.memory_mib) {
			profile_free(&q);
			continue;
		}
		profile_free(&q);
		xasprintf(&name, "pool-%u", ++pool->next);
		free(cause);
		cause = NULL;
		if ((s = srv->sb_boot(srv, name, serve_pool_profile(srv,
		    e->key), &cause)) == NULL) {
			log_warnx("pool: %s: %s", e->key, cause);
			free(cause);
			free(name);
			e->failures++;
			e->not_before = now + (e->failures > 6 ?
			    SERVE_POOL_BACKOFF_MAX : (double)(1u << e->failures));
			serve_pool_kick(srv);
			return;
		}
		free(name);
		s->pool = xstrdup(e->key);
		srv->m.pool_refills++;
		log_debug("pool: booting %s for %s", s->name, e->key);
		return;
	}
	free(cause);
	if (wait > 0) {
		ev_timer_set(w, wait, 0);
		ev_timer_start(srv->loop, w);
	}
}

static void
serve_pool_paused_cb(struct sandbox *sb, const char *error, void *arg)
{
	struct serve_sb		*s = arg;
	struct serve_pool_entry	*e;

	(void)sb;
	if (s->pool == NULL || s->state != SERVE_BOOTING)
		return;		/* evicted, stopped meanwhile */
	if (error != NULL) {
		log_warnx("pool: %s: pause: %s", s->name, error);
		s->srv->sb_stop(s, "its pause failed");
		return;
	}
	s->state = SERVE_PAUSED;
	if ((e = serve_pool_entry(s->srv, s->pool)) != NULL)
		e->failures = 0;
	log_debug("pool: %s of %s ready and paused", s->name, s->pool);
	serve_pool_kick(s->srv);
}

/* Paused until a create takes it: the pool's sandbox is ready. */
static void
serve_pool_pause(struct serve_sb *s)
{
	char	*cause = NULL;

	if (sandbox_pause(s->sb, serve_pool_paused_cb, s, &cause) == -1) {
		log_warnx("pool: %s: pause: %s", s->name, cause);
		free(cause);
		s->srv->sb_stop(s, "its pause failed");
	}
}

/* The taken sandbox is up, its clock set: the create is answered. */
static void
serve_pool_answer(struct serve_sb *s)
{
	struct buf	b = { 0 };

	s->state = SERVE_READY;
	s->boot_s = util_now() - s->t_taken;
	s->t_active = util_now();
	serve_life_arm(s);
	log_debug("sandbox %s from the pool in %.3f s", s->name, s->boot_s);
	serve_sb_json(s, &b);
	serve_answer(&s->create_waiters, 201, b.data);
	buf_free(&b);
	serve_sb_event(s);
	serve_pool_kick(s->srv);	/* it no longer boots */
}

/*
 * The clock set (serve_life_clock): a pool sandbox is paused, a taken
 * one answered. Set once before the pause too, so that the commands it
 * runs are translated already (under TCG each QEMU translates the guest's
 * code anew: a first exec costs about 100 ms more), and the one after
 * the resume is quick.
 */
static void
serve_pool_clocked(struct serve_sb *s)
{
	if (s->state != SERVE_BOOTING || s->sb == NULL)
		return;		/* evicted, deleted meanwhile */
	if (s->pool != NULL)
		serve_pool_pause(s);
	else
		serve_pool_answer(s);
}

/*
 * Its clock set, or (no port free: never in a fresh one) not: by an exec
 * before its pause (the warm-up), by its agent after its take.
 */
static void
serve_pool_clock(struct serve_sb *s, int by_exec)
{
	if (serve_life_clock(s, by_exec, serve_pool_clocked) == -1)
		serve_pool_clocked(s);
}

/*
 * A pool sandbox is ready: its first exec run (serve_pool_clock), then
 * paused until a create takes it.
 */
void
serve_pool_ready(struct serve_sb *s)
{
	s->state = SERVE_BOOTING;	/* until paused: not takeable */
	serve_pool_clock(s, 1);
}

/* Resumed for its taker: its clock set, then the create answered. */
static void
serve_pool_resumed_cb(struct sandbox *sb, const char *error, void *arg)
{
	struct serve_sb		*s = arg;

	(void)sb;
	if (s->state != SERVE_BOOTING || s->sb == NULL)
		return;		/* deleted meanwhile */
	if (error != NULL) {
		log_warnx("sandbox %s: resume from the pool: %s", s->name,
		    error);
		free(s->reason);
		s->reason = xstrdup(error);
		s->srv->sb_stop(s, "its resume from the pool failed");
		return;
	}
	serve_pool_clock(s, 0);
}

/* The settings of p, values only: two profiles that make the same guest. */
static char *
serve_pool_settings(const struct profile *p)
{
	struct buf	b = { 0 };
	char		*text;

	profile_print(p, PROFILE_PRINT_BARE, &b);
	text = xstrdup(b.data);
	buf_free(&b);
	return (text);
}

/*
 * A create of profile (NULL: the server's) with sets (the server's, then
 * its own): taken from the pool when its profile has a pool entry, it
 * gives no "extra_args", and its profile with its settings comes out the
 * same as a paused pool sandbox's (so "settings" that change nothing are
 * taken too, and a pool sandbox whose profile file changed since its boot
 * is not handed out: it is stopped, and the pool refilled). 1: taken
 * (answered, or to be once resumed); 0: not (the create boots one, a miss
 * counted when its profile has a pool); -1 with err.
 */
int
serve_pool_take(struct serve *srv, json_t *j, const char *name,
    const char *profile, char *const *sets, size_t nsets, int wait,
    struct httpd_conn *conn, struct serve_error *err)
{
	struct serve_sb	*s, *next, *t = NULL;
	struct profile	 q;
	json_t		*v;
	const char	*key = "default";
	struct buf	 b = { 0 };
	char		*cause = NULL, *want, *have;

	if (srv->pool == NULL)
		return (0);
	if ((v = json_object_get(j, "profile")) != NULL)
		key = json_string_value(v);
	if (key == NULL || serve_pool_entry(srv, key) == NULL)
		return (0);
	v = json_object_get(j, "extra_args");
	memset(&q, 0, sizeof q);
	if ((v != NULL && (!json_is_array(v) || json_array_size(v) > 0)) ||
	    profile_load_set(&q, profile, sets, nsets, &cause) == -1) {
		free(cause);	/* the create's own load says it */
		profile_free(&q);
		srv->m.pool_misses++;
		return (0);
	}
	want = serve_pool_settings(&q);
	profile_free(&q);
	TAILQ_FOREACH_SAFE(s, &srv->sbs, entry, next) {
		if (s->pool == NULL || s->pool_evicted ||
		    s->state != SERVE_PAUSED || s->qmp_want != SERVE_DEAD ||
		    strcmp(s->pool, key) != 0)
			continue;
		have = serve_pool_settings(&s->profile);
		if (strcmp(have, want) == 0) {
			free(have);
			t = s;
			break;
		}
		free(have);
		v = json_object_get(j, "settings");
		if (v == NULL || json_object_size(v) == 0) {
			/* Its profile changed since it booted. */
			log_info("pool: %s: its profile %s changed: stopped",
			    s->name, key);
			s->pool_evicted = 1;
			s->srv->sb_stop(s, "its profile changed");
		}
	}
	free(want);
	if (t == NULL) {
		srv->m.pool_misses++;
		serve_pool_kick(srv);
		return (0);
	}
	if (serve_life_fields(t, j, err) == -1)
		return (-1);
	if (sandbox_resume(t->sb, serve_pool_resumed_cb, t, &cause) == -1) {
		log_warnx("pool: %s: resume: %s", t->name, cause);
		free(cause);
		t->pool_evicted = 1;
		t->srv->sb_stop(t, "its resume failed");
		srv->m.pool_misses++;
		return (0);
	}
	free(t->pool);
	t->pool = NULL;
	free(t->name);
	t->name = xstrdup(name);
	t->state = SERVE_BOOTING;
	t->created = time(NULL);
	t->t_created = t->t_taken = util_now();
	free(t->start);
	t->start = xstrdup("pool");
	srv->m.pool_hits++;
	serve_sb_event(t);
	serve_life_arm(t);	/* its ttl runs from now */
	if (wait)
		serve_wait(&t->create_waiters, t, conn);
	else {
		serve_sb_json(t, &b);
		httpd_respond_json(conn, 202, b.data, b.len);
		buf_free(&b);
	}
	serve_pool_kick(srv);
	return (1);
}

/*
 * Room for a create of mib more guest memory: pool sandboxes stopped
 * (the newest first) while the limits would refuse it.
 */
void
serve_pool_evict(struct serve *srv, uint64_t need)
{
	struct serve_sb	*s;
	uint64_t	 mib;
	size_t		 live;

	if (srv->pool == NULL)
		return;
	for (;;) {
		live = serve_live(srv, &mib);
		if (live < (size_t)srv->limits.sandboxes &&
		    mib + need <= srv->limits.memory_mib)
			return;
		TAILQ_FOREACH_REVERSE(s, &srv->sbs, serve_sbs, entry) {
			if (s->pool != NULL && !s->pool_evicted &&
			    s->state != SERVE_DEAD)
				break;
		}
		if (s == NULL)
			return;
		log_info("pool: %s evicted to make room for a create",
		    s->name);
		s->pool_evicted = 1;
		s->srv->sb_stop(s, "evicted from the pool");
	}
}

/* s is going: the pool refilled (serve_life_gone ends its clock's). */
void
serve_pool_gone(struct serve_sb *s)
{
	struct serve_pool_entry	*e;

	if (s->pool == NULL)
		return;
	if (s->state == SERVE_BOOTING && !s->pool_evicted &&
	    (e = serve_pool_entry(s->srv, s->pool)) != NULL) {
		/* It never came up: do not boot the next one at once. */
		e->failures++;
		e->not_before = util_now() + (e->failures > 6 ?
		    SERVE_POOL_BACKOFF_MAX : (double)(1u << e->failures));
	}
	serve_pool_kick(s->srv);
}

/* /metrics: the pool's sizes by entry and state, and its counters. */
void
serve_pool_metrics(struct serve *srv, struct buf *b)
{
	struct serve_pool_entry	*e;
	size_t			 i;

	buf_puts(b, "# HELP qsup_pool_sandboxes Sandboxes of the warm pool, "
	    "by profile and state (paused: ready to be taken).\n"
	    "# TYPE qsup_pool_sandboxes gauge\n");
	for (i = 0; srv->pool != NULL && i < srv->pool->n; i++) {
		e = &srv->pool->entries[i];
		buf_puts(b, "qsup_pool_sandboxes{profile=");
		buf_json_string(b, e->key);
		buf_printf(b, ",state=\"paused\"} %d\n",
		    serve_pool_count(srv, e->key, SERVE_PAUSED));
		buf_puts(b, "qsup_pool_sandboxes{profile=");
		buf_json_string(b, e->key);
		buf_printf(b, ",state=\"booting\"} %d\n",
		    serve_pool_count(srv, e->key, SERVE_BOOTING));
		buf_puts(b, "qsup_pool_target{profile=");
		buf_json_string(b, e->key);
		buf_printf(b, "} %d\n", e->want);
	}
	buf_printf(b, "# HELP qsup_pool_hits_total Creates answered from the "
	    "pool.\n# TYPE qsup_pool_hits_total counter\n"
	    "qsup_pool_hits_total %llu\n"
	    "# HELP qsup_pool_misses_total Creates of a pooled profile that "
	    "booted instead (pool empty, or settings given).\n"
	    "# TYPE qsup_pool_misses_total counter\n"
	    "qsup_pool_misses_total %llu\n"
	    "# HELP qsup_pool_refills_total Sandboxes booted for the pool.\n"
	    "# TYPE qsup_pool_refills_total counter\n"
	    "qsup_pool_refills_total %llu\n", srv->m.pool_hits,
	    srv->m.pool_misses, srv->m.pool_refills);
}

/* The server stops: no more refills (its sandboxes go with the rest). */
void
serve_pool_free(struct serve *srv)
{
	struct serve_pool	*pool = srv->pool;
	size_t			 i;

	if (pool == NULL)
		return;
	ev_timer_stop(srv->loop, &pool->kick);
	for (i = 0; i < pool->n; i++)
		free(pool->entries[i].key);
	free(pool->entries);
	free(pool);
	srv->pool = NULL;
}
