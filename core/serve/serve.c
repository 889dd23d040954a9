/*
 * "qsup serve"'s sandboxes, the resource /v1/sandboxes: created, listed,
 * shown, deleted, and their lives. A sandbox here is the same struct
 * sandbox "qsup run" drives; this file keeps many of them by name,
 * answers for them over the API (docs/serve-api.md) and
 * keeps a dead one's record until it is deleted.
 *
 * Nothing here blocks the loop but the few steps a sandbox's start takes
 * before QEMU runs (the profile, the overlay), as "qsup run" takes them.
 */
#include <sys/types.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

const char *const serve_boot_kinds[3] = {
	"cold", "warm", "template-build"
};

static void	serve_sb_free(struct serve_sb *);
static void	serve_sb_gone(struct serve_sb *);
static void	serve_sb_layers_release(struct serve_sb *);
static void	serve_sb_stop(struct serve_sb *, const char *);
static struct serve_sb *serve_sb_boot(struct serve *, const char *,
		    const char *, char **);

static void	serve_ready_cb(struct sandbox *, void *);

/* From a snapshot, its clock set: ready now, unless it went meanwhile. */
static void
serve_ready_clocked(struct serve_sb *s)
{
	if (s->state == SERVE_BOOTING && s->sb != NULL)
		serve_ready_cb(s->sb, s);
}

static void
serve_ready_cb(struct sandbox *sb, void *arg)
{
	struct serve_sb	*s = arg;
	struct buf	 b = { 0 };
	size_t		 i;

	if (serve_life_restored(s, serve_ready_clocked) == 0)
		return;		/* its clock was the save's */
	s->state = SERVE_READY;
	s->boot_s = sandbox_boot_seconds(sb);
	free(s->start);
	s->start = xstrdup(sandbox_start_kind(sb));
	for (i = 0; i < 3; i++) {
		if (strcmp(s->start, serve_boot_kinds[i]) == 0)
			s->srv->m.boots[i]++;
	}
	log_debug("sandbox %s ready in %.3f s (%s)", s->name, s->boot_s,
	    s->start);
	if (s->pool != NULL) {
		serve_pool_ready(s);	/* paused, for a create to take */
		return;
	}
	s->t_active = util_now();
	serve_life_arm(s);
	serve_sb_json(s, &b);
	serve_answer(&s->create_waiters, 201, b.data);
	buf_free(&b);
	serve_sb_event(s);
	/* Restored from a save of it paused: paused again. */
	if (serve_persist_ready(s))
		serve_life_pause(s, "restored as it was saved, paused");
	serve_pool_kick(s->srv);	/* refills wait for boots */
}

static void
serve_failed_cb(struct sandbox *sb, const char *msg, void *arg)
{
	struct serve_sb	*s = arg;

	(void)sb;
	if (s->reason == NULL)
		s->reason = xstrdup(msg);
	if (s->state == SERVE_BOOTING)
		s->failed = 1;
	log_warnx("sandbox %s: %s", s->name, msg);
}

/* QEMU reaped, the console closed: free the sandbox, off its callback. */
static void
serve_dead_cb(struct sandbox *sb, void *arg)
{
	struct serve_sb	*s = arg;

	(void)sb;
	ev_timer_set(&s->reap, 0, 0);
	ev_timer_start(s->srv->loop, &s->reap);
}

/* The teardown report, as DELETE answers it. */
static void
serve_report(struct serve_sb *s)
{
	struct buf	b = { 0 };

	buf_puts(&b, "{\"name\":");
	buf_json_string(&b, s->name);
	buf_puts(&b, ",\"state\":\"deleted\",\"reason\":");
	if (s->reason != NULL)
		buf_json_string(&b, s->reason);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"base_image_untouched\":");
	if (s->sb != NULL)
		sandbox_disk_report(s->sb, &b);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"network\":");
	if (s->sb != NULL && sandbox_net_of(s->sb) != NULL)
		net_stats_json(sandbox_net_of(s->sb), &b);
	else {
		buf_puts(&b, "{\"mode\":");
		buf_json_string(&b, s->profile.network == NET_MODE_NONE ?
		    "none" : "not started");
		buf_puts(&b, "}");
	}
	buf_puts(&b, "}");
	free(s->report);
	s->report = xstrdup(b.data);
	buf_free(&b);
}

/* The sandbox is over: everything of it freed, the record kept or not. */
static void
serve_sb_gone(struct serve_sb *s)
{
	struct serve	*srv = s->srv;
	struct net_stats st;
	struct buf	 tail = { 0 }, b = { 0 };
	char		*extra;

	if (s->pool != NULL)
		s->deleting = 1;	/* nobody keeps its record */
	if (s->reason == NULL)
		s->reason = xstrdup(s->deleting ? "deleted" :
		    srv->stopping ? "the server stopped" : "QEMU exited");
	if (s->sb != NULL) {
		sandbox_console_tail(s->sb, SERVE_TAIL_LINES, &tail);
		if (tail.len > 0)
			s->tail = xstrdup(tail.data);
		buf_free(&tail);
		serve_report(s);
		if (sandbox_net_of(s->sb) != NULL) {
			net_stats(sandbox_net_of(s->sb), &st);
			srv->m.proxy_up += st.proxy_bytes_up;
			srv->m.proxy_down += st.proxy_bytes_down;
		}
	} else if (s->report == NULL)
		serve_report(s);
	serve_exec_sandbox_gone(s, s->reason);
	serve_attach_snap_gone(s);	/* before its monitor goes */
	serve_attach_gone(s);
	serve_life_gone(s);
	serve_pool_gone(s);
	if (s->sb != NULL) {
		sandbox_free(s->sb);	/* its run directory goes too */
		s->sb = NULL;
	}
	serve_disk_release(s);
	if (s->pull != NULL) {
		image_pull_cancel(s->pull);
		s->pull = NULL;
	}
	serve_setup_leave(s);
	serve_sb_layers_release(s);
	free(s->phase);
	free(s->pool);
	s->phase = NULL;
	if (!s->deleting && !srv->stopping && s->state != SERVE_DEAD)
		srv->m.deaths++;
	s->state = SERVE_DEAD;
	serve_sb_event(s);
	if (!TAILQ_EMPTY(&s->create_waiters)) {
		/* It never came up: the create fails, and it is gone. */
		buf_puts(&b, "\"console_tail\":");
		if (s->tail != NULL)
			buf_json_string(&b, s->tail);
		else
			buf_puts(&b, "null");
		xasprintf(&extra, "%s", b.data);
		while (!TAILQ_EMPTY(&s->create_waiters)) {
			struct serve_waiter *x = TAILQ_FIRST(&s->create_waiters);

			TAILQ_REMOVE(&s->create_waiters, x, entry);
			if (x->conn != NULL)
				httpd_set_close_cb(x->conn, NULL, NULL);
			if (x->fn != NULL)
				x->fn(x->conn, srv->stopping ? 503 : 500,
				    s->reason, x->arg);
			else if (x->conn != NULL)
				serve_error_now(x->conn, srv->stopping ? 503 :
				    500, s->reason, extra);
			free(x);
		}
		free(extra);
		buf_free(&b);
		s->deleting = 1;
	}
	if (s->deleting || srv->stopping) {
		serve_answer(&s->delete_waiters, 200, s->report);
		TAILQ_REMOVE(&srv->sbs, s, entry);
		serve_sb_free(s);
	}
	if (srv->stopping && serve_idle(srv))
		ev_break(srv->loop, EVBREAK_ALL);
}

static void
serve_reap_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	serve_sb_gone(w->data);
}

static void
serve_sb_free(struct serve_sb *s)
{
	ev_timer_stop(s->srv->loop, &s->reap);
	serve_persist_gone(s);	/* its record goes if it is deleted */
	serve_life_gone(s);
	serve_waiters_free(&s->create_waiters);
	serve_waiters_free(&s->qmp_waiters);
	serve_waiters_free(&s->delete_waiters);
	profile_free(&s->profile);
	free(s->accel.why);
	free(s->name);
	free(s->image);
	free(s->start);
	free(s->reason);
	free(s->tail);
	free(s->report);
	free(s->host_ports);
	free(s->mac);
	free(s->phase);
	free(s->profile_arg);
	serve_snapref_free(&s->snap);
	while (s->nsets > 0)
		free(s->sets[--s->nsets]);
	free(s->sets);
	serve_sb_layers_release(s);
	serve_disk_release(s);
	free(s->disk_path);
	serve_attach_snap_gone(s);	/* before its monitor goes */
	serve_attach_gone(s);
	free(s);
}

/* Stop s; its record goes once it is dead (now, if it never ran). */
static void
serve_sb_stop(struct serve_sb *s, const char *why)
{
	if (s->state == SERVE_DEAD || s->state == SERVE_STOPPING)
		return;
	if (s->sb == NULL) {
		/* Pulling its image, building its layers: nothing ran. */
		serve_sb_gone(s);
		return;
	}
	s->state = SERVE_STOPPING;
	serve_sb_event(s);
	sandbox_stop(s->sb, why);
	/* Stopped before it was launched: no dead callback comes. */
	if (s->sb != NULL && sandbox_state(s->sb) == SB_DEAD &&
	    !ev_is_active(&s->reap)) {
		ev_timer_set(&s->reap, 0, 0);
		ev_timer_start(s->srv->loop, &s->reap);
	}
}

/*
 * The shares the profile names, with the closure it may add; a server's
 * sandbox has no command yet for the closure to start from.
 */
static int
serve_shares(struct serve_sb *s, char **cause)
{
	static char	*argv[] = { "sh", NULL };
	struct share	*sh;
	size_t		 n;

	if (plan_shares(&s->profile, NULL, 0, argv, s->profile.env,
	    s->profile.nenv, &sh, &n, cause) == -1)
		return (-1);
	sandbox_set_shares(s->sb, sh, n);
	return (0);
}

/* Let go of s's chain (its sandbox is gone, or never came). */
static void
serve_sb_layers_release(struct serve_sb *s)
{
	size_t	i;

	for (i = 0; i < s->nlayers; i++)
		image_layer_release(&s->layers[i]);
	free(s->layers);
	s->layers = NULL;
	s->nlayers = 0;
	free(s->layer_store);
	s->layer_store = NULL;
}

/*
 * The chain over s's image, every layer built (by the child): got and
 * held shared while s lives, so prune leaves them. -1 with *cause.
 */
static int
serve_sb_layers(struct serve_sb *s, char **cause)
{
	char	***steps, *base;
	size_t	   i;
	int	   rc;

	if ((s->layer_store = image_layer_dir(s->profile.images_dir,
	    cause)) == NULL)
		return (-1);
	if ((base = realpath(s->image, NULL)) == NULL) {
		xasprintf(cause, "image %s: %s", s->image, strerror(errno));
		return (-1);
	}
	steps = xcalloc(s->profile.nsetup, sizeof *steps);
	for (i = 0; i < s->profile.nsetup; i++)
		steps[i] = s->profile.setup[i].argv;
	s->layers = xcalloc(s->profile.nsetup, sizeof *s->layers);
	rc = image_layer_chain(s->layer_store, base, steps, s->profile.nsetup,
	    s->profile.env, s->profile.nenv, s->profile.disk_size, s->layers,
	    cause);
	free(steps);
	free(base);
	if (rc == -1) {
		free(s->layers);
		s->layers = NULL;
		return (-1);
	}
	s->nlayers = s->profile.nsetup;
	return (0);
}

static int	serve_sb_launch(struct serve_sb *, char **);

static void
serve_sb_setup_progress_cb(struct serve_sb *s, const char *phase)
{
	free(s->phase);
	s->phase = xstrdup(phase);
	serve_sb_event(s);
}

/* The child is done: s boots on its layers, or fails with its error. */
static void
serve_sb_setup_done_cb(struct serve_sb *s, const char *error)
{
	char	*why = NULL;

	free(s->phase);
	s->phase = NULL;
	if (error != NULL)
		s->reason = xstrdup(error);
	else if (serve_sb_layers(s, &why) == -1 ||
	    serve_sb_launch(s, &why) == -1)
		s->reason = why;
	else
		return;
	serve_sb_gone(s);
}

static const struct serve_setup_cbs serve_sb_setup_cbs = {
	serve_sb_setup_progress_cb, serve_sb_setup_done_cb
};

/* Launch s's QEMU: -1 with *cause, and s is not started. */
static int
serve_sb_launch(struct serve_sb *s, char **cause)
{
	struct sandbox_cbs	cbs;
	char			**paths;
	size_t			 i;

	/* Its layers first, built off the loop; launched once they are. */
	if (s->profile.nsetup > 0 && s->layers == NULL)
		return (serve_setup_start(s, s->profile_arg, s->sets,
		    s->nsets, &serve_sb_setup_cbs, cause));
	memset(&cbs, 0, sizeof cbs);
	cbs.ready = serve_ready_cb;
	cbs.failed = serve_failed_cb;
	cbs.dead = serve_dead_cb;
	cbs.arg = s;
	if (serve_disk_hold_late(s, cause) == -1)
		return (-1);
	s->sb = sandbox_new(s->srv->loop, &s->profile, &cbs);
	if (s->snap.dir != NULL) {
		sandbox_set_snapshot(s->sb, s->snap.dir, s->snap.token,
		    s->snap.cold, s->snap.ram_backend);
		serve_life_restore_early(s);
	}
	if (s->image != NULL)
		sandbox_set_image(s->sb, s->image);
	if (s->image != NULL && s->disk_writable)
		sandbox_set_disk_writable(s->sb);
	if (s->nlayers > 0) {
		paths = xcalloc(s->nlayers + 1, sizeof *paths);
		for (i = 0; i < s->nlayers; i++)
			paths[i] = s->layers[i].path;
		sandbox_set_layers(s->sb, paths, s->nlayers, s->layer_store);
		free(paths);
	}
	if (serve_shares(s, cause) == -1 ||
	    sandbox_start(s->sb, &s->accel, cause) == -1) {
		sandbox_free(s->sb);
		s->sb = NULL;
		return (-1);
	}
	return (0);
}

static void
serve_pull_done_cb(struct image_pull *ip, const char *path,
    const char *cause, void *arg)
{
	struct serve_sb	*s = arg;
	char		*why = NULL;

	(void)ip;
	s->pull = NULL;
	if (path == NULL) {
		/* The pull's cause names the image (its URL, docker://REF). */
		xasprintf(&s->reason, "image pull: %s", cause != NULL ? cause :
		    "cancelled");
		serve_sb_gone(s);
		return;
	}
	s->image = xstrdup(path);
	if (serve_sb_launch(s, &why) == -1) {
		s->reason = why;
		serve_sb_gone(s);
	}
}

/* The profile's image: a file as it is, else cached, else pulled. */
static int
serve_sb_image(struct serve_sb *s, char **cause)
{
	struct image_req	 req;

	switch (s->profile.image_kind) {
	case PROFILE_IMAGE_NONE:
		return (0);
	case PROFILE_IMAGE_FILE:
		s->image = xstrdup(s->profile.image);
		return (0);
	case PROFILE_IMAGE_NAME:
	case PROFILE_IMAGE_URL:
		break;
	}
	plan_image(&s->profile, 1, &req);
	if (req.url == NULL) {
		xasprintf(cause, "image \"%s\": no URL known for this name "
		    "(image_base_url, the catalog)", s->profile.image);
		return (-1);
	}
	if ((s->image = image_cached(&req)) != NULL)
		return (0);
	s->pull = image_pull_start(s->srv->loop, &req, serve_pull_done_cb, s);
	return (s->pull != NULL ? 0 : -1);
}

/* A setting's value from JSON, as --set would take it. */
static char *
serve_setting(const char *key, json_t *v)
{
	char	*kv = NULL;

	if (json_is_string(v))
		xasprintf(&kv, "%s=%s", key, json_string_value(v));
	else if (json_is_integer(v))
		xasprintf(&kv, "%s=%" JSON_INTEGER_FORMAT, key,
		    json_integer_value(v));
	else if (json_is_real(v))
		xasprintf(&kv, "%s=%.17g", key, json_real_value(v));
	else if (json_is_boolean(v))
		xasprintf(&kv, "%s=%s", key, json_is_true(v) ? "true" :
		    "false");
	return (kv);
}

/* The request's extra_args: checked, then after the profile's. */
static int
serve_extra_args(struct profile *p, json_t *a, struct serve_error *err)
{
	char	**all, *cause = NULL;
	size_t	 i, n, at = 0;
	int	 rc = -1;

	if (a == NULL)
		return (0);
	if (!json_is_array(a))
		return (serve_bad_field(err, "extra_args",
		    "must be an array of strings"));
	n = p->nextra_args + json_array_size(a);
	all = xcalloc(n + 1, sizeof *all);
	for (i = 0; i < p->nextra_args; i++)
		all[i] = xstrdup(p->extra_args[i]);
	for (i = 0; i < json_array_size(a); i++) {
		if (!json_is_string(json_array_get(a, i))) {
			serve_bad_field(err, "extra_args", "must be an array "
			    "of strings");
			goto out;
		}
		all[p->nextra_args + i] = xstrdup(json_string_value(
		    json_array_get(a, i)));
	}
	while (at < n) {
		if (extra_args_next(all, n, &at, &cause) == -1) {
			serve_bad_field(err, "extra_args", cause);
			free(cause);
			goto out;
		}
	}
	for (i = 0; i < p->nextra_args; i++)
		free(p->extra_args[i]);
	free(p->extra_args);
	p->extra_args = all;
	p->nextra_args = n;
	return (0);
out:
	for (i = 0; i < n; i++)
		free(all[i]);
	free(all);
	return (rc);
}

/*
 * The settings of a create, as --set takes them: the server's first, so a
 * request's own win. NULL with err (400).
 */
static char **
serve_sets(struct serve *srv, json_t *settings, size_t *n,
    struct serve_error *err)
{
	const char	*key;
	json_t		*v;
	char		**sets, *field;
	size_t		 i;

	*n = 0;
	sets = xcalloc(srv->nsets + (settings != NULL ?
	    json_object_size(settings) : 0) + 1, sizeof *sets);
	for (i = 0; i < srv->nsets; i++)
		sets[(*n)++] = xstrdup(srv->sets[i]);
	if (settings == NULL)
		return (sets);
	json_object_foreach(settings, key, v) {
		if ((sets[*n] = serve_setting(key, v)) != NULL) {
			(*n)++;
			continue;
		}
		xasprintf(&field, "settings.%s", key);
		serve_bad_field(err, field, "must be a string, a number or a "
		    "boolean");
		free(field);
		while (*n > 0)
			free(sets[--(*n)]);
		free(sets);
		return (NULL);
	}
	return (sets);
}

/* The accelerator s runs under: 0, or -1 with err. */
static int
serve_sb_accel(struct serve_sb *s, struct serve_error *err)
{
	struct guest	 g;
	char		*cause = NULL;

	if (guest_resolve(&s->profile, &g, &cause) == -1) {
		serve_fail(err, 500, NULL, "%s", cause);
		free(cause);
		return (-1);
	}
	/* A remembered verdict after the first: serve measured at start. */
	if (kvm_choose(&s->profile, guest_qemu_binary(), g.kernel,
	    g.initramfs, &s->accel, &cause) == -1) {
		guest_free(&g);
		serve_fail(err, 500, NULL, "%s", cause);
		free(cause);
		return (-1);
	}
	guest_free(&g);
	return (0);
}

/* A create's name, profile and wait: 0, or -1 with err (400). */
static int
serve_create_fields(struct serve *srv, json_t *j, char **name,
    const char **profile, int *wait, struct serve_error *err)
{
	json_t	*v;

	*name = NULL;
	*wait = 1;
	*profile = srv->profile;
	if ((v = json_object_get(j, "name")) != NULL) {
		if (!json_is_string(v) || !serve_name_ok(json_string_value(v)))
			return (serve_bad_field(err, "name", "1 to 63 of a-z, "
			    "0-9, '_', '.' and '-', beginning with a letter or "
			    "a digit"));
		*name = xstrdup(json_string_value(v));
	} else {
		do {
			free(*name);
			xasprintf(name, "sb-%u", ++srv->next_name);
		} while (serve_find(srv, *name) != NULL);
	}
	if ((v = json_object_get(j, "wait")) != NULL) {
		if (!json_is_boolean(v))
			return (serve_bad_field(err, "wait", "must be true or "
			    "false"));
		*wait = json_is_true(v);
	}
	if ((v = json_object_get(j, "profile")) != NULL) {
		if (!json_is_string(v) || *json_string_value(v) == '\0')
			return (serve_bad_field(err, "profile", "must be a "
			    "profile's name or path"));
		*profile = json_string_value(v);
	}
	return (0);
}

/* A new sandbox's record, not started yet. */
static struct serve_sb *
serve_sb_alloc(struct serve *srv)
{
	struct serve_sb	*s;

	s = xcalloc(1, sizeof *s);
	s->srv = srv;
	s->serial = ++srv->next_serial;
	serve_life_init(s);
	TAILQ_INIT(&s->create_waiters);
	TAILQ_INIT(&s->delete_waiters);
	TAILQ_INIT(&s->execs);
	ev_init(&s->reap, serve_reap_cb);
	s->reap.data = s;
	return (s);
}

/* A new sandbox's life begins: booting from now. */
static void
serve_sb_booting(struct serve_sb *s)
{
	s->state = SERVE_BOOTING;
	s->created = time(NULL);
	s->t_created = util_now();
}

/*
 * s, its profile loaded, booting: its image got, its disk held, its QEMU
 * launched, and it among the server's sandboxes. -1 with err, and s is
 * not started (nor listed).
 */
static int
serve_sb_go(struct serve_sb *s, struct serve_error *err)
{
	char	*cause = NULL;

	serve_sb_booting(s);
	if (serve_sb_image(s, &cause) == -1) {
		serve_fail(err, 500, NULL, "%s", cause);
		free(cause);
		return (-1);
	}
	if (s->pull == NULL && serve_disk_hold(s, err) == -1)
		return (-1);
	if (s->pull == NULL && serve_sb_launch(s, &cause) == -1) {
		serve_fail(err, 500, NULL, "%s", cause);
		free(cause);
		return (-1);
	}
	TAILQ_INSERT_TAIL(&s->srv->sbs, s, entry);
	return (0);
}

/*
 * A sandbox of profile (NULL: the server's) with the server's settings
 * only, booting under name: the pool's (serve_pool.c, through
 * srv->sb_boot: it lies below). NULL with *cause.
 */
static struct serve_sb *
serve_sb_boot(struct serve *srv, const char *name, const char *profile,
    char **cause)
{
	struct serve_sb		*s;
	struct serve_error	 err = { 0 };
	size_t			 i;

	s = serve_sb_alloc(srv);
	s->name = xstrdup(name);
	if (profile != NULL)
		s->profile_arg = xstrdup(profile);
	s->sets = xcalloc(srv->nsets + 1, sizeof *s->sets);
	for (i = 0; i < srv->nsets; i++)
		s->sets[s->nsets++] = xstrdup(srv->sets[i]);
	if (profile_load_set(&s->profile, profile, s->sets, s->nsets,
	    cause) == -1)
		goto fail;
	if (serve_sb_accel(s, &err) == -1 || serve_sb_go(s, &err) == -1) {
		*cause = err.msg;
		err.msg = NULL;
		goto fail;
	}
	return (s);
fail:
	free(err.fields);
	free(err.allow);
	serve_sb_free(s);
	return (NULL);
}

/*
 * A create with "attach": a QEMU started by hand, registered once its
 * monitor answers (serve_attach.c). *name is taken. err on failure.
 */
static void
serve_create_attach(struct serve *srv, struct httpd_conn *conn, json_t *j,
    char **name, int wait, struct serve_error *err)
{
	struct serve_sb	*s;
	struct buf	 b = { 0 };
	uint64_t	 mib;
	size_t		 live;
	char		*why;

	/* It counts as a sandbox (its memory is its own command line's). */
	if ((live = serve_live(srv, &mib)) >= (size_t)srv->limits.sandboxes) {
		xasprintf(&why, "%zu sandboxes already: the server's limit",
		    live);
		serve_limit(err, why, "max_sandboxes", srv->limits.sandboxes);
		free(why);
		return;
	}
	s = serve_sb_alloc(srv);
	s->name = *name;
	*name = NULL;
	serve_sb_booting(s);
	if (serve_attach_create(s, j, conn, wait, err) == -1) {
		serve_sb_free(s);
		return;
	}
	TAILQ_INSERT_TAIL(&srv->sbs, s, entry);
	serve_sb_event(s);
	if (!wait) {
		serve_sb_json(s, &b);
		httpd_respond_json(conn, 202, b.data, b.len);
		buf_free(&b);
	}
}

/* Room for s within the server's limits (a pool sandbox may make way). */
static int
serve_sb_room(struct serve_sb *s, struct serve_error *err)
{
	struct serve	*srv = s->srv;
	uint64_t	 mib;
	size_t		 live;
	char		*cause;

	serve_pool_evict(srv, s->profile.memory_mib);
	live = serve_live(srv, &mib);
	if (live >= (size_t)srv->limits.sandboxes) {
		xasprintf(&cause, "%zu sandboxes already: the server's "
		    "limit", live);
		serve_limit(err, cause, "max_sandboxes", srv->limits.sandboxes);
		free(cause);
		return (-1);
	}
	if (mib + s->profile.memory_mib > srv->limits.memory_mib) {
		xasprintf(&cause, "%" PRIu64 " MiB more guest memory would "
		    "make %" PRIu64 " MiB, past the server's limit",
		    s->profile.memory_mib, mib + s->profile.memory_mib);
		serve_limit(err, cause, "max_memory", srv->limits.memory_mib);
		free(cause);
		return (-1);
	}
	return (0);
}

/*
 * A create from a snapshot: the source's profile and settings, no
 * others; *snap filled, *profile and *sets its. 0, or -1 with err.
 */
static int
serve_create_snap(json_t *j, struct serve_snapref *snap, const char **profile,
    char ***sets, size_t *nsets, struct serve_error *err)
{
	size_t	i;

	if (json_object_get(j, "profile") != NULL ||
	    json_object_get(j, "settings") != NULL ||
	    json_object_get(j, "extra_args") != NULL ||
	    json_object_get(j, "disk") != NULL)
		return (serve_bad_field(err, "snapshot", "a sandbox from a "
		    "snapshot has its source's profile and settings: no "
		    "\"profile\", \"settings\", \"extra_args\" or \"disk\""));
	if (serve_snap_from(json_object_get(j, "snapshot"), snap, err) == -1)
		return (-1);
	*profile = snap->profile;
	*sets = xcalloc(snap->nsets + 1, sizeof **sets);
	for (i = 0; i < snap->nsets; i++)
		(*sets)[i] = xstrdup(snap->sets[i]);
	*nsets = snap->nsets;
	return (0);
}

/*
 * A create's body: the sandbox made (and its client, conn, answered or
 * waiting), or NULL with err (or NULL answered: attached, or taken from
 * the pool). conn NULL (a fork's copies): no answer.
 */
struct serve_sb *
serve_create_json(struct serve *srv, struct httpd_conn *conn,
    const char *body, size_t len, struct serve_error *err)
{
	static const char *const fields[] = {
		"name", "profile", "settings", "extra_args", "wait", "ttl",
		"idle_ttl", "on_ttl", "disk", "attach", "snapshot", "persistent",
		"persist_every", NULL
	};
	struct serve_sb		*s = NULL, *made = NULL;
	json_t			*j, *settings;
	const char		*profile;
	char			**sets = NULL, *name = NULL, *cause = NULL;
	size_t			 nsets = 0, i;
	struct buf		 b = { 0 };
	struct serve_snapref	 snap = { 0 };
	int			 wait = 1;

	if (serve_json_body(body, len, &j, err) == -1 ||
	    serve_check_fields(j, fields, err) == -1 ||
	    serve_create_fields(srv, j, &name, &profile, &wait, err) == -1 ||
	    serve_persist_fields(srv, j, err) == -1)
		goto out;
	settings = json_object_get(j, "settings");
	if (json_object_get(j, "snapshot") != NULL) {
		if (serve_create_snap(j, &snap, &profile, &sets, &nsets,
		    err) == -1)
			goto out;
	} else if (settings != NULL && !json_is_object(settings)) {
		serve_bad_field(err, "settings", "must be an object of "
		    "setting names to values");
		goto out;
	} else if ((sets = serve_sets(srv, settings, &nsets, err)) == NULL)
		goto out;
	if (srv->stopping) {
		serve_fail(err, 503, NULL, "the server is stopping");
		goto out;
	}
	if (serve_find(srv, name) != NULL) {
		serve_fail(err, 409, NULL, "a sandbox named %s exists", name);
		goto out;
	}
	if (json_object_get(j, "attach") != NULL) {
		serve_create_attach(srv, conn, j, &name, wait, err);
		goto out;
	}
	/* 1: answered from the pool, or to be once resumed; -1: err. */
	if (conn != NULL && snap.dir == NULL &&
	    json_object_get(j, "disk") == NULL &&
	    !json_is_true(json_object_get(j, "persistent")) &&
	    serve_pool_take(srv, j, name, profile, sets, nsets, wait, conn,
	    err) != 0)
		goto out;
	s = serve_sb_alloc(srv);
	if (serve_life_fields(s, j, err) == -1 ||
	    serve_disk_fields(s, j, err) == -1)
		goto out;
	if (profile_load_set(&s->profile, profile, sets, nsets, &cause) ==
	    -1) {
		serve_bad_field(err, settings != NULL ? "settings" :
		    "profile", cause);
		goto out;
	}
	if (serve_disk_profile(s, err) == -1 ||
	    serve_snap_args(&s->profile, &snap, json_string_value(
	    json_object_get(j, "snapshot")), err) == -1 ||
	    serve_persist_profile(s, j, err) == -1 ||
	    serve_extra_args(&s->profile, json_object_get(j, "extra_args"),
	    err) == -1 || serve_sb_room(s, err) == -1 ||
	    serve_sb_accel(s, err) == -1)
		goto out;
	s->name = name;
	name = NULL;
	if (profile != NULL)
		s->profile_arg = xstrdup(profile);
	s->sets = sets;
	s->nsets = nsets;
	sets = NULL;
	nsets = 0;
	s->snap = snap;
	memset(&snap, 0, sizeof snap);
	if (serve_persist_begin(s, err) == -1)
		goto out;
	if (serve_sb_go(s, err) == -1) {
		serve_persist_abort(s);
		goto out;
	}
	serve_sb_event(s);
	serve_pool_kick(srv);	/* its refills wait for this boot */
	serve_life_arm(s);	/* its ttl runs from now */
	made = s;
	if (conn == NULL)
		;
	else if (wait)
		serve_wait(&s->create_waiters, s, conn);
	else {
		serve_sb_json(s, &b);
		httpd_respond_json(conn, 202, b.data, b.len);
		buf_free(&b);
	}
	s = NULL;
out:
	if (s != NULL)
		serve_sb_free(s);
	for (i = 0; i < nsets; i++)
		free(sets[i]);
	free(sets);
	free(name);
	free(cause);
	serve_snapref_free(&snap);
	json_decref(j);
	return (made);
}

static void
serve_create_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct serve_error	err = { 0 };

	if (serve_create_json(arg, conn, body, len, &err) == NULL &&
	    err.status != 0)
		serve_error_answer(conn, &err);
}

/* POST /v1/sandboxes: answered once its body is in. */
int
serve_create(const struct serve_req *r, struct serve_error *err)
{
	(void)err;
	httpd_read_body(r->conn, serve_create_body, r->srv);
	return (0);
}

/* GET /v1/sandboxes */
int
serve_list(const struct serve_req *r, struct serve_error *err)
{
	struct serve	*srv = r->srv;
	struct serve_sb	*s;
	struct buf	 b = { 0 };

	(void)err;
	buf_puts(&b, "{\"sandboxes\":[");
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->pool != NULL)
			continue;	/* the pool's: /metrics counts them */
		if (b.data[b.len - 1] != '[')
			buf_puts(&b, ",");
		serve_sb_json(s, &b);
	}
	buf_puts(&b, "]}");
	httpd_respond_json(r->conn, 200, b.data, b.len);
	buf_free(&b);
	return (0);
}

/* GET /v1/sandboxes/{name} */
int
serve_get(const struct serve_req *r, struct serve_error *err)
{
	struct buf	b = { 0 };

	(void)err;
	serve_sb_json(r->sb, &b);
	httpd_respond_json(r->conn, 200, b.data, b.len);
	buf_free(&b);
	return (0);
}

/* DELETE /v1/sandboxes/{name}: answered with its report once it is gone. */
int
serve_delete(const struct serve_req *r, struct serve_error *err)
{
	struct serve_sb		*s = r->sb;
	struct serve		*srv = s->srv;
	struct httpd_conn	*conn = r->conn;

	if (s->attach != NULL && s->state != SERVE_STOPPING &&
	    s->state != SERVE_DEAD)
		return (serve_attach_delete(r, err));
	if (s->state == SERVE_DEAD) {
		/* Freed already: its report was kept. */
		httpd_respond_json(conn, 200, s->report, strlen(s->report));
		s->deleting = 1;
		serve_sb_event(s);
		TAILQ_REMOVE(&srv->sbs, s, entry);
		serve_sb_free(s);
		return (0);
	}
	s->deleting = 1;
	serve_wait(&s->delete_waiters, s, conn);
	if (s->state != SERVE_STOPPING)
		serve_sb_stop(s, "deleted");
	return (0);
}

void
serve_init(struct serve *srv, struct ev_loop *loop)
{
	memset(srv, 0, sizeof *srv);
	srv->loop = loop;
	TAILQ_INIT(&srv->sbs);
	TAILQ_INIT(&srv->setups);
	srv->sb_stop = serve_sb_stop;
	srv->sb_boot = serve_sb_boot;
	srv->sb_json = serve_sb_json;
	serve_events_init(srv);
	serve_snap_sweep();	/* saves a dead server left unfinished */
}

/*
 * SIGTERM: every sandbox stopped, the persistent ones saved first (then
 * this is called again, by serve_persist.c); serve_idle once all are gone.
 */
void
serve_stop_all(struct serve *srv)
{
	struct serve_sb	*s, *next;

	srv->stopping = 1;
	sandbox_spares_free();
	/* Persistent sandboxes saved first; stopped once they are. */
	if (serve_persist_save_all(srv, serve_stop_all) > 0)
		return;
	TAILQ_FOREACH_SAFE(s, &srv->sbs, entry, next) {
		if (s->state == SERVE_DEAD) {
			TAILQ_REMOVE(&srv->sbs, s, entry);
			serve_sb_free(s);
		} else
			serve_sb_stop(s, "the server is stopping");
	}
}

/* No sandbox left running. */
int
serve_idle(struct serve *srv)
{
	struct serve_sb	*s;

	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->sb != NULL || s->pull != NULL || s->setup != NULL)
			return (0);
	}
	return (1);
}

/* At once: QEMUs killed, everything freed (a second signal, or the end). */
void
serve_free(struct serve *srv)
{
	struct serve_sb	*s;

	ev_timer_stop(srv->loop, &srv->events_ping);
	srv->stopping = 1;
	serve_persist_close(srv);	/* no stop waits for its saves now */
	serve_pool_free(srv);
	free(srv->console);
	srv->console = NULL;
	while ((s = TAILQ_FIRST(&srv->sbs)) != NULL) {
		if (s->sb != NULL || s->pull != NULL || s->setup != NULL) {
			if (s->reason == NULL)
				s->reason = xstrdup("the server stopped");
			serve_sb_gone(s);	/* removes and frees it */
		} else {
			TAILQ_REMOVE(&srv->sbs, s, entry);
			serve_sb_free(s);
		}
	}
	serve_setup_free_all(srv);
}
