/*
 * POST /v1/sandboxes/{name}/fork {"count": N} or {"names": [...]}, and
 * "machine_id": true for new machine-ids: N running copies of a ready or
 * paused sandbox (the source stays as it was), each its own: a sandbox
 * restored from one snapshot of the source (serve_snap.c,
 * core/vm/sandbox_snap.c), saved once into a hidden directory of the
 * snapshots', with its own overlay over the snapshot's disk, then given
 * the host's clock, fresh entropy, a new address on its network card if
 * it has one, and a new /etc/machine-id if asked (sandbox_refresh). Its
 * hostname is qsup's, "qsup", the same in every sandbox: nothing to do.
 * The answer comes once every copy is ready and refreshed, or failed:
 * 201 with the copies, or the first failure. The copies' readiness is
 * looked at every few milliseconds rather than hooked into serve.c.
 */
#include <sys/stat.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

#define SERVE_FORK_MAX		16
#define SERVE_FORK_POLL		0.002

struct serve_fork_copy {
	char			*name;
	unsigned long long	 serial;	/* 0: not made */
	int			 port;		/* its refresh's, or -1 */
	int			 state;		/* 0 made, 1 refreshing, 2 done */
	int			 early;		/* refreshed with its restore */
	char			*error;
	char			 mac[SANDBOX_MAC_LEN];	/* "": no card */
};

struct serve_fork {
	struct serve		*srv;
	char			*src;
	char			*dir;		/* the hidden snapshot's */
	struct httpd_conn	*conn;		/* NULL once gone */
	struct serve_fork_copy	*copies;
	size_t			 n;
	ev_timer		 poll;
	int			 saved;
	int			 machine_id;	/* new ones asked for */
	double			 t0;
};

static unsigned	serve_fork_next;

static void
serve_fork_free(struct serve_fork *f)
{
	size_t	i;

	ev_timer_stop(f->srv->loop, &f->poll);
	if (f->conn != NULL)
		httpd_set_close_cb(f->conn, NULL, NULL);
	/*
	 * The copies read the state file at their start, and hold the disk
	 * open (QEMU, read-only) from then on: both may go now.
	 */
	if (f->dir != NULL)
		(void)util_rm_rf(f->dir);
	for (i = 0; i < f->n; i++) {
		free(f->copies[i].name);
		free(f->copies[i].error);
	}
	free(f->copies);
	free(f->src);
	free(f->dir);
	free(f);
}

static void
serve_fork_close_cb(void *arg)
{
	struct serve_fork	*f = arg;

	f->conn = NULL;
}

/* A copy, found again: it may have been deleted meanwhile. */
static struct serve_sb *
serve_fork_find(struct serve_fork *f, struct serve_fork_copy *c)
{
	struct serve_sb	*s;

	if (c->serial == 0 || (s = serve_find(f->srv, c->name)) == NULL ||
	    s->serial != c->serial)
		return (NULL);
	return (s);
}

/* Every copy is done, one way or another: the answer. */
static void
serve_fork_answer(struct serve_fork *f)
{
	struct serve_sb	*s;
	struct buf	 b = { 0 };
	size_t		 i;
	const char	*error = NULL;

	for (i = 0; i < f->n && error == NULL; i++)
		error = f->copies[i].error;
	if (f->conn != NULL && error != NULL)
		serve_error_now(f->conn, 500, error, NULL);
	else if (f->conn != NULL) {
		buf_printf(&b, "{\"source\":");
		buf_json_string(&b, f->src);
		buf_printf(&b, ",\"seconds\":%.3f,\"sandboxes\":[",
		    util_now() - f->t0);
		for (i = 0; i < f->n; i++) {
			if (i > 0)
				buf_puts(&b, ",");
			if ((s = serve_fork_find(f, &f->copies[i])) != NULL)
				serve_sb_json(s, &b);
			else
				buf_puts(&b, "null");
		}
		buf_puts(&b, "]}");
		httpd_set_close_cb(f->conn, NULL, NULL);
		httpd_respond_json(f->conn, 201, b.data, b.len);
		buf_free(&b);
	}
	f->conn = NULL;
	log_info("fork of %s: %zu cop%s in %.3f s%s%s", f->src, f->n,
	    f->n == 1 ? "y" : "ies", util_now() - f->t0,
	    error != NULL ? ": " : "", error != NULL ? error : "");
	serve_fork_free(f);
}

/* A copy's identity is set, or not. */
static void
serve_fork_refreshed(struct sandbox *sb, const char *error, void *arg)
{
	struct serve_fork_copy	*c = arg;

	(void)sb;
	c->state = 2;
	if (error != NULL && c->error == NULL)
		xasprintf(&c->error, "%s: %s", c->name, error);
}

/* A ready copy's identity: its clock, entropy, card, machine-id. */
static int
serve_fork_refresh(struct serve_fork *f, struct serve_fork_copy *c,
    struct serve_sb *s, char **cause)
{
	struct sandbox_fresh	fresh;

	memset(&fresh, 0, sizeof fresh);
	fresh.entropy = 1;
	fresh.machine_id = f->machine_id;
	if (sandbox_net_of(s->sb) != NULL) {
		sandbox_mac_new(c->mac);
		fresh.mac = c->mac;
	}
	if (sandbox_refresh(s->sb, c->port, &fresh, serve_fork_refreshed, c,
	    cause) == -1)
		return (-1);
	if (fresh.mac != NULL) {
		free(s->mac);
		s->mac = xstrdup(c->mac);
	}
	return (0);
}

/* A copy's identity, sent with its restore, is set, or not. */
static void
serve_fork_early_cb(struct sandbox *sb, int gone, const char *error,
    void *arg)
{
	serve_fork_refreshed(sb, error != NULL ? error : gone ? "QEMU exited" :
	    NULL, arg);
}

/*
 * A new copy's clock, entropy and card address go with its restore
 * (sandbox_fresh_early), so it is its own as soon as it is up; a new
 * machine-id needs an exec once it is (serve_fork_refresh).
 */
static void
serve_fork_early(struct serve_fork *f, struct serve_fork_copy *c,
    struct serve_sb *s)
{
	char	*cause = NULL;

	if (f->machine_id || s->sb == NULL)
		return;
	if (sandbox_net_of(s->sb) != NULL)
		sandbox_mac_new(c->mac);
	if (sandbox_fresh_early(s->sb, c->mac[0] != '\0' ? c->mac : NULL,
	    &cause) == -1) {
		log_debug("fork of %s: %s: %s; refreshed once up", f->src,
		    c->name, cause);
		free(cause);
		c->mac[0] = '\0';
		return;
	}
	c->early = 1;
	if (c->mac[0] != '\0') {
		free(s->mac);
		s->mac = xstrdup(c->mac);
	}
}

/* Where each copy is: ready ones get their identity; all done, answer. */
static void
serve_fork_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve_fork	*f = w->data;
	struct serve_fork_copy	*c;
	struct serve_sb		*s;
	size_t			 i, done = 0;
	char			*cause = NULL;

	(void)loop;
	(void)revents;
	for (i = 0; i < f->n; i++) {
		c = &f->copies[i];
		s = serve_fork_find(f, c);
		if (c->state == 1 && s != NULL)
			continue;
		if (c->state == 1 || c->state == 2) {
			if (c->port != -1 && s != NULL)
				serve_port_give(s, c->port);
			c->port = -1;
			if (c->state == 1 && c->error == NULL)
				xasprintf(&c->error, "%s went before it was "
				    "ready", c->name);
			c->state = 2;
			done++;
			continue;
		}
		if (s == NULL || s->state == SERVE_DEAD ||
		    s->state == SERVE_STOPPING) {
			if (c->error == NULL)
				xasprintf(&c->error, "%s: %s", c->name,
				    s != NULL && s->reason != NULL ? s->reason :
				    "it went before it was ready");
			c->state = 2;
			done++;
			continue;
		}
		if (s->state != SERVE_READY || s->sb == NULL)
			continue;
		/* Its exec may end before sandbox_refresh returns. */
		c->state = 1;
		if (c->early && sandbox_fresh_then(s->sb, serve_fork_early_cb,
		    c) == 0)
			continue;
		if ((c->port = serve_port_take(s)) == -1 ||
		    serve_fork_refresh(f, c, s, &cause) == -1) {
			xasprintf(&c->error, "%s: %s", c->name, cause != NULL ?
			    cause : "no agent port free");
			free(cause);
			cause = NULL;
			serve_port_give(s, c->port);
			c->port = -1;
			c->state = 2;
			done++;
		}
	}
	if (done == f->n) {
		serve_fork_answer(f);
		return;
	}
	ev_timer_set(w, SERVE_FORK_POLL, 0);
	ev_timer_start(f->srv->loop, w);
}

/* The source is saved: its copies are made from it. */
static void
serve_fork_saved_cb(struct sandbox *sb, const char *error,
    const struct sandbox_snap_result *res, void *arg)
{
	struct serve_fork	*f = arg;
	struct serve_error	 err = { 0 };
	struct serve_sb		*s;
	struct buf		 b = { 0 };
	size_t			 i;

	(void)sb;
	if (error != NULL) {
		if (f->conn != NULL) {
			httpd_set_close_cb(f->conn, NULL, NULL);
			serve_error_now(f->conn, 500, error, NULL);
			f->conn = NULL;
		}
		serve_fork_free(f);
		return;
	}
	log_debug("fork of %s: saved in %.3f s (%.1f ms paused)", f->src,
	    util_now() - f->t0, res->pause_ms);
	for (i = 0; i < f->n; i++) {
		buf_puts(&b, "{\"name\":");
		buf_json_string(&b, f->copies[i].name);
		buf_puts(&b, ",\"snapshot\":");
		buf_json_string(&b, strrchr(f->dir, '/') + 1);
		buf_puts(&b, "}");
		serve_snap_hidden = strrchr(f->dir, '/') + 1;
		s = serve_create_json(f->srv, NULL, b.data, b.len, &err);
		serve_snap_hidden = NULL;
		buf_free(&b);
		if (s == NULL) {
			f->copies[i].state = 2;
			xasprintf(&f->copies[i].error, "%s: %s",
			    f->copies[i].name, err.msg != NULL ? err.msg :
			    "not made");
			free(err.msg);
			free(err.fields);
			free(err.allow);
			memset(&err, 0, sizeof err);
			continue;
		}
		f->copies[i].serial = s->serial;
		serve_fork_early(f, &f->copies[i], s);
	}
	serve_fork_poll_cb(f->srv->loop, &f->poll, 0);
}

/* The copies' names: "names", or NAME-f1... free ones. */
static int
serve_fork_names(struct serve_sb *s, json_t *j, struct serve_fork *f,
    struct serve_error *err)
{
	json_t		*count = json_object_get(j, "count");
	json_t		*names = json_object_get(j, "names"), *v;
	json_int_t	 n;
	size_t		 i, k, next = 1;
	char		*name;

	if (count != NULL && (!json_is_integer(count) ||
	    (n = json_integer_value(count)) < 1 || n > SERVE_FORK_MAX))
		return (serve_bad_field(err, "count", "must be a number of "
		    "copies, 1 to 16"));
	if (names != NULL && (!json_is_array(names) ||
	    json_array_size(names) < 1 ||
	    json_array_size(names) > SERVE_FORK_MAX))
		return (serve_bad_field(err, "names", "must be an array of 1 "
		    "to 16 names"));
	if (names != NULL && count != NULL &&
	    json_array_size(names) != (size_t)json_integer_value(count))
		return (serve_bad_field(err, "names", "must have \"count\" "
		    "names"));
	f->n = names != NULL ? json_array_size(names) : count != NULL ?
	    (size_t)json_integer_value(count) : 1;
	f->copies = xcalloc(f->n, sizeof *f->copies);
	for (i = 0; i < f->n; i++) {
		f->copies[i].port = -1;
		if (names != NULL) {
			v = json_array_get(names, i);
			if (!json_is_string(v) ||
			    !serve_name_ok(json_string_value(v)))
				return (serve_bad_field(err, "names", "each 1 "
				    "to 63 of a-z, 0-9, '_', '.' and '-', "
				    "beginning with a letter or a digit"));
			name = xstrdup(json_string_value(v));
		} else {
			name = NULL;
			do {
				free(name);
				xasprintf(&name, "%s-f%zu", s->name, next++);
			} while (serve_find(s->srv, name) != NULL ||
			    strlen(name) > SERVE_NAME_MAX);
		}
		f->copies[i].name = name;
		if (serve_find(s->srv, name) != NULL)
			return (serve_fail(err, 409, NULL, "a sandbox named %s "
			    "exists", name));
		for (k = 0; k < i; k++) {
			if (strcmp(f->copies[k].name, name) == 0)
				return (serve_bad_field(err, "names", "names "
				    "must differ"));
		}
	}
	return (0);
}

/* Room for the copies: the server's limits. */
static int
serve_fork_room(struct serve_sb *s, size_t n, struct serve_error *err)
{
	struct serve	*srv = s->srv;
	struct serve_sb	*o;
	uint64_t	 mib = 0;
	size_t		 live = 0;
	char		*msg;
	int		 rc = 0;

	TAILQ_FOREACH(o, &srv->sbs, entry) {
		if (o->state == SERVE_DEAD)
			continue;
		live++;
		mib += o->profile.memory_mib;
	}
	if (live + n > (size_t)srv->limits.sandboxes) {
		xasprintf(&msg, "%zu copies would make %zu sandboxes, past the "
		    "server's limit", n, live + n);
		rc = serve_limit(err, msg, "max_sandboxes",
		    srv->limits.sandboxes);
		free(msg);
	} else if (mib + n * s->profile.memory_mib > srv->limits.memory_mib) {
		xasprintf(&msg, "%zu copies of %" PRIu64 " MiB would make %"
		    PRIu64 " MiB of guest memory, past the server's limit", n,
		    s->profile.memory_mib, mib + n * s->profile.memory_mib);
		rc = serve_limit(err, msg, "max_memory",
		    srv->limits.memory_mib);
		free(msg);
	}
	return (rc);
}

static void
serve_fork_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	static const char *const fields[] = {
		"count", "names", "machine_id", NULL
	};
	struct serve_error	 err = { 0 };
	struct serve_fork	*f;
	json_t			*j = NULL;
	char			*root = NULL, *cause = NULL;

	(void)arg;
	f = xcalloc(1, sizeof *f);
	f->srv = s->srv;
	f->t0 = util_now();
	ev_init(&f->poll, serve_fork_poll_cb);
	f->poll.data = f;
	if (serve_json_body(body, len, &j, &err) == -1 ||
	    serve_check_fields(j, fields, &err) == -1 ||
	    serve_fork_names(s, j, f, &err) == -1)
		goto out;
	if (json_object_get(j, "machine_id") != NULL &&
	    !json_is_boolean(json_object_get(j, "machine_id"))) {
		serve_bad_field(&err, "machine_id", "must be true or false");
		goto out;
	}
	f->machine_id = json_is_true(json_object_get(j, "machine_id"));
	if (s->srv->stopping) {
		serve_fail(&err, 503, NULL, "the server is stopping");
		goto out;
	}
	if (serve_snap_can(s, "forked", "a fork", &err) == -1)
		goto out;
	if (serve_fork_room(s, f->n, &err) == -1)
		goto out;
	if ((root = serve_snap_root()) == NULL) {
		serve_fail(&err, 500, NULL, "no cache directory for snapshots");
		goto out;
	}
	xasprintf(&f->dir, "%s/" SERVE_SNAP_HIDDEN "%ld-%u", root,
	    (long)getpid(), ++serve_fork_next);
	if (mkdir(f->dir, 0700) == -1) {
		serve_fail(&err, 500, NULL, "%s: %s", f->dir, strerror(errno));
		free(f->dir);
		f->dir = NULL;
		goto out;
	}
	if (serve_snap_write_ref(s, f->dir, &cause) == -1 ||
	    sandbox_snapshot(s->sb, f->dir, serve_fork_saved_cb, f,
	    &cause) == -1) {
		serve_fail(&err, 409, NULL, "sandbox %s cannot be forked: %s",
		    s->name, cause);
		goto out;
	}
	f->src = xstrdup(s->name);
	f->conn = conn;
	httpd_set_close_cb(conn, serve_fork_close_cb, f);
	f = NULL;
out:
	if (f != NULL)
		serve_fork_free(f);
	free(cause);
	free(root);
	json_decref(j);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

/* POST /v1/sandboxes/{name}/fork */
int
serve_fork(const struct serve_req *r, struct serve_error *err)
{
	(void)err;
	serve_sb_read_body(r, serve_fork_body, NULL);
	return (0);
}
