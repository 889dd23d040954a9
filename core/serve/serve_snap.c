/*
 * Snapshots: POST /v1/sandboxes/{name}/snapshots saves a ready or paused
 * sandbox whole (core/vm/sandbox_snap.c: its RAM, devices and disk, its
 * processes alive); GET /v1/snapshots and /v1/snapshots/{name}, DELETE
 * /v1/snapshots/{name}; a create with "snapshot" starts a sandbox from
 * one (serve.c).
 *
 * They live in the cache's snapshots/ directory, one subdirectory each:
 * the state file, the disk, and snapshot.json, the record, written last
 * (to a temporary name, renamed into place): a directory without one is
 * a save under way, or one a dead server left half-written, and never
 * lists. Its name is reserved by making the directory, so two saves of
 * one name cannot race. A new server removes the half-written ones, and
 * the hidden ones of forks (SERVE_SNAP_HIDDEN, serve_fork.c).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

#define SERVE_SNAP_RECORD	"snapshot.json"
#define SERVE_SNAP_RECORD_MAX	(64 * 1024)

/* A save under way: its sandbox by name and serial, its client. */
struct serve_snap_job {
	struct serve		*srv;
	char			*sb_name;
	unsigned long long	 serial;
	char			*name;
	char			*dir;
	struct httpd_conn	*conn;		/* NULL once gone */
	struct buf		 meta;		/* the restore's members */
};

/* A fork's own snapshot, made from the loop and never listed. */
const char	*serve_snap_hidden;

/* The snapshots directory, made if need be; NULL: none. */
char *
serve_snap_root(void)
{
	char	*cache, *dir;

	if ((cache = util_cache_dir()) == NULL)
		return (NULL);
	xasprintf(&dir, "%s/snapshots", cache);
	free(cache);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		free(dir);
		return (NULL);
	}
	return (dir);
}

/* A snapshot's record, or NULL (none, or not one: then never listed). */
json_t *
serve_snap_record(const char *root, const char *name)
{
	char	*path, *text;
	size_t	 len;
	json_t	*j;

	if (!serve_name_ok(name) && (serve_snap_hidden == NULL ||
	    strcmp(name, serve_snap_hidden) != 0))
		return (NULL);
	xasprintf(&path, "%s/%s/" SERVE_SNAP_RECORD, root, name);
	text = util_read_file(path, &len, SERVE_SNAP_RECORD_MAX);
	free(path);
	if (text == NULL)
		return (NULL);
	j = json_loadb(text, len, 0, NULL);
	free(text);
	if (j != NULL && (!json_is_object(j) || !json_is_string(
	    json_object_get(j, "token")))) {
		json_decref(j);
		j = NULL;
	}
	return (j);
}

/* A record as the API shows it: all but the token. */
static void
serve_snap_json(json_t *j, struct buf *b)
{
	json_t	*c;
	char	*text;

	c = json_deep_copy(j);
	json_object_del(c, "token");
	/* Records older than format 2 were all of format 1. */
	if (json_object_get(c, "format") == NULL)
		json_object_set_new(c, "format", json_integer(1));
	text = json_dumps(c, JSON_COMPACT|JSON_REAL_PRECISION(9));
	buf_puts(b, text != NULL ? text : "{}");
	free(text);
	json_decref(c);
}

/*
 * At a server's start: the directories a dead server left without a
 * record (a save it did not finish) go.
 */
void
serve_snap_sweep(void)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		*root, *path;

	if ((root = serve_snap_root()) == NULL || (d = opendir(root)) == NULL) {
		free(root);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		/* A fork's: no fork is under way in a server starting. */
		if (strncmp(de->d_name, SERVE_SNAP_HIDDEN,
		    strlen(SERVE_SNAP_HIDDEN)) == 0) {
			xasprintf(&path, "%s/%s", root, de->d_name);
			(void)util_rm_rf(path);
			free(path);
			continue;
		}
		xasprintf(&path, "%s/%s/" SERVE_SNAP_RECORD, root, de->d_name);
		if (stat(path, &st) == -1) {
			free(path);
			xasprintf(&path, "%s/%s", root, de->d_name);
			log_info("removing %s, a snapshot never finished", path);
			(void)util_rm_rf(path);
		}
		free(path);
	}
	closedir(d);
	free(root);
}

static void
serve_snap_job_free(struct serve_snap_job *job)
{
	if (job->conn != NULL)
		httpd_set_close_cb(job->conn, NULL, NULL);
	free(job->sb_name);
	free(job->name);
	free(job->dir);
	buf_free(&job->meta);
	free(job);
}

static void
serve_snap_close_cb(void *arg)
{
	struct serve_snap_job	*job = arg;

	job->conn = NULL;
}

/*
 * The record of s's snapshot name in dir (its meta: what the restore
 * needs), written under a temporary name renamed into place; res NULL
 * before the save (a fork's). Its API form into out, if not NULL.
 */
int
serve_snap_write(const char *dir, const char *name, struct serve_sb *s,
    const struct sandbox_snap_result *res, const struct buf *meta,
    struct buf *out)
{
	struct buf	 b = { 0 };
	char		 when[32], *tmp, *path;
	struct tm	 tm;
	time_t		 now = time(NULL);
	json_t		*j;
	size_t		 i;
	int		 rc;

	gmtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_puts(&b, "{\"name\":");
	buf_json_string(&b, name);
	buf_puts(&b, ",\"sandbox\":");
	buf_json_string(&b, s->name);
	buf_printf(&b, ",\"created\":\"%s\",\"size_bytes\":%" PRIu64
	    ",\"pause_ms\":%.1f,\"memory_mib\":%" PRIu64 ",\"profile\":", when,
	    res != NULL ? res->bytes : 0, res != NULL ? res->pause_ms : 0,
	    s->profile.memory_mib);
	if (s->profile_arg != NULL)
		buf_json_string(&b, s->profile_arg);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"settings\":[");
	for (i = 0; i < s->nsets; i++) {
		if (i > 0)
			buf_puts(&b, ",");
		buf_json_string(&b, s->sets[i]);
	}
	buf_puts(&b, "]");
	serve_snap_args_json(s, &b);
	buf_puts(&b, ",");
	buf_add(&b, meta->data, meta->len);
	buf_puts(&b, "}\n");
	xasprintf(&tmp, "%s/" SERVE_SNAP_RECORD ".tmp", dir);
	xasprintf(&path, "%s/" SERVE_SNAP_RECORD, dir);
	rc = util_write_file(tmp, b.data);
	if (rc == 0 && rename(tmp, path) == -1)
		rc = -1;
	if (rc == -1)
		unlink(tmp);
	free(tmp);
	free(path);
	if (rc == 0 && out != NULL) {
		j = json_loadb(b.data, b.len, 0, NULL);
		serve_snap_json(j, out);
		json_decref(j);
	}
	explicit_bzero(b.data, b.len);
	buf_free(&b);
	return (rc);
}

/* A fork's record, before its save: what its copies start from. */
int
serve_snap_write_ref(struct serve_sb *s, const char *dir, char **cause)
{
	struct buf	meta = { 0 };
	int		rc;

	sandbox_snapshot_json(s->sb, &meta);
	rc = serve_snap_write(dir, strrchr(dir, '/') + 1, s, NULL, &meta,
	    NULL);
	if (rc == -1)
		xasprintf(cause, "%s: %s", dir, strerror(errno));
	explicit_bzero(meta.data, meta.len);
	buf_free(&meta);
	return (rc);
}

/* The save is over, done or not: the record, the answer, the event. */
static void
serve_snap_done_cb(struct sandbox *sb, const char *error,
    const struct sandbox_snap_result *res, void *arg)
{
	struct serve_snap_job	*job = arg;
	struct serve_sb		*s;
	struct serve_exec	*e;
	struct buf		 b = { 0 };
	char			*msg = NULL;
	int			 status = 201;

	(void)sb;
	s = serve_find(job->srv, job->sb_name);
	if (s != NULL && s->serial != job->serial)
		s = NULL;
	if (s != NULL && s->state == SERVE_READY)
		TAILQ_FOREACH(e, &s->execs, entry)
			exec_freeze(e->x, 0);
	if (error != NULL) {
		xasprintf(&msg, "snapshot %s of sandbox %s: %s", job->name,
		    job->sb_name, error);
		status = 500;
	} else if (s == NULL) {
		xasprintf(&msg, "snapshot %s: sandbox %s went during the save",
		    job->name, job->sb_name);
		status = 409;
	} else if (serve_snap_write(job->dir, job->name, s, res, &job->meta,
	    &b) == -1) {
		xasprintf(&msg, "snapshot %s: cannot write its record in %s: "
		    "%s", job->name, job->dir, strerror(errno));
		status = 500;
	}
	if (status != 201) {
		log_warnx("%s", msg);
		(void)util_rm_rf(job->dir);
		if (job->conn != NULL) {
			httpd_set_close_cb(job->conn, NULL, NULL);
			serve_error_now(job->conn, status, msg, NULL);
			job->conn = NULL;
		}
	} else {
		log_info("snapshot %s of %s saved (%.1f ms paused)", job->name,
		    job->sb_name, res->pause_ms);
		serve_event(job->srv, "snapshot", b.data);
		if (job->conn != NULL) {
			httpd_set_close_cb(job->conn, NULL, NULL);
			httpd_respond_json(job->conn, 201, b.data, b.len);
			job->conn = NULL;
		}
	}
	free(msg);
	buf_free(&b);
	serve_snap_job_free(job);
}

/*
 * Can s be saved (verb "saved") or forked ("forked", what "a fork")? 0,
 * or -1 with err: 409 naming why not.
 */
int
serve_snap_can(struct serve_sb *s, const char *verb, const char *what,
    struct serve_error *err)
{
	const char	*why;

	if (s->attach != NULL && strcmp(verb, "saved") != 0)
		return (serve_fail(err, 409, NULL, "sandbox %s is an attached "
		    "QEMU: qsup has no command line to start copies of it; "
		    "a snapshot (kept in its qcow2 disks) can be loaded back "
		    "into it", s->name));
	if (s->attach != NULL)
		return (s->state == SERVE_READY || s->state == SERVE_PAUSED ?
		    0 : serve_fail(err, 409, NULL, "sandbox %s is %s: only a "
		    "ready or paused sandbox can be saved", s->name,
		    serve_state_name(s->state)));
	if ((s->state != SERVE_READY && s->state != SERVE_PAUSED) ||
	    s->sb == NULL)
		return (serve_fail(err, 409, NULL, "sandbox %s is %s: only a "
		    "ready or paused sandbox can be %s", s->name,
		    serve_state_name(s->state), verb));
	if (s->qmp_want != SERVE_DEAD)
		return (serve_fail(err, 409, NULL, "sandbox %s: a pause or "
		    "resume is under way", s->name));
	/* An exec's stream could not go on in a copy of its agent. */
	if (serve_exec_busy(s))
		return (serve_fail(err, 409, NULL, "sandbox %s runs execs or "
		    "file transfers: %s waits for none", s->name, what));
	if ((why = sandbox_snapshot_refused(s->sb)) != NULL)
		return (serve_fail(err, 409, NULL, "sandbox %s cannot be %s: "
		    "%s", s->name, verb, why));
	return (0);
}

/*
 * A save's body read and its name reserved: the name into *name (j's,
 * stolen into *jp), its new directory into *dir. 0, or -1 with err.
 */
int
serve_snap_reserve(struct serve_sb *s, const char *body, size_t len,
    json_t **jp, const char **name, char **dir, struct serve_error *err)
{
	static const char *const fields[] = { "name", NULL };
	json_t		*v;
	char		*root;

	*jp = NULL;
	*dir = NULL;
	if (serve_json_body(body, len, jp, err) == -1 ||
	    serve_check_fields(*jp, fields, err) == -1)
		return (-1);
	v = json_object_get(*jp, "name");
	if (v == NULL || !json_is_string(v) ||
	    !serve_name_ok(json_string_value(v)))
		return (serve_bad_field(err, "name", "1 to 63 of a-z, 0-9, "
		    "'_', '.' and '-', beginning with a letter or a digit"));
	*name = json_string_value(v);
	if (serve_snap_can(s, "saved", "a snapshot", err) == -1)
		return (-1);
	if ((root = serve_snap_root()) == NULL)
		return (serve_fail(err, 500, NULL, "no cache directory for "
		    "snapshots"));
	xasprintf(dir, "%s/%s", root, *name);
	free(root);
	if (mkdir(*dir, 0700) == -1) {
		if (errno == EEXIST)
			serve_fail(err, 409, NULL, "a snapshot named %s "
			    "exists (or is being saved)", *name);
		else
			serve_fail(err, 500, NULL, "%s: %s", *dir,
			    strerror(errno));
		free(*dir);
		*dir = NULL;
		return (-1);
	}
	return (0);
}

static void
serve_snap_post_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	struct serve_error	 err = { 0 };
	struct serve_snap_job	*job = NULL;
	struct serve_exec	*e;
	json_t			*j = NULL;
	const char		*name;
	char			*dir = NULL, *cause = NULL;

	(void)arg;
	if (serve_snap_reserve(s, body, len, &j, &name, &dir, &err) == -1)
		goto out;
	job = xcalloc(1, sizeof *job);
	job->srv = s->srv;
	job->sb_name = xstrdup(s->name);
	job->serial = s->serial;
	job->name = xstrdup(name);
	job->dir = dir;
	dir = NULL;
	job->conn = conn;
	sandbox_snapshot_json(s->sb, &job->meta);
	/*
	 * No sync first: the guest's RAM (its page cache, dirty pages and
	 * all) and its disk are saved at one instant, the guest stopped, so
	 * a restore has every write the guest acknowledged.
	 */
	if (sandbox_snapshot(s->sb, job->dir, serve_snap_done_cb, job,
	    &cause) == -1) {
		serve_fail(&err, 409, NULL, "sandbox %s cannot be saved: %s",
		    s->name, cause);
		(void)util_rm_rf(job->dir);
		job->conn = NULL;
		serve_snap_job_free(job);
		goto out;
	}
	/* The guest stands still: no exec's timeout runs meanwhile. */
	TAILQ_FOREACH(e, &s->execs, entry)
		exec_freeze(e->x, 1);
	httpd_set_close_cb(conn, serve_snap_close_cb, job);
out:
	free(cause);
	free(dir);
	json_decref(j);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

/* POST /v1/sandboxes/{name}/snapshots */
int
serve_snap_post(const struct serve_req *r, struct serve_error *err)
{
	(void)err;
	serve_sb_read_body(r, serve_snap_post_body, NULL);
	return (0);
}

/* GET /v1/snapshots: every whole one, by name. */
int
serve_snap_list(const struct serve_req *r, struct serve_error *err)
{
	struct dirent	**names = NULL;
	struct buf	  b = { 0 };
	json_t		 *j;
	char		 *root;
	int		  i, n, first = 1;

	if ((root = serve_snap_root()) == NULL)
		return (serve_fail(err, 500, NULL, "no cache directory for "
		    "snapshots"));
	n = scandir(root, &names, NULL, alphasort);
	buf_puts(&b, "{\"snapshots\":[");
	for (i = 0; i < n; i++) {
		if ((j = serve_snap_record(root, names[i]->d_name)) != NULL) {
			if (!first)
				buf_puts(&b, ",");
			first = 0;
			serve_snap_json(j, &b);
			json_decref(j);
		}
		free(names[i]);
	}
	free(names);
	buf_puts(&b, "]}");
	httpd_respond_json(r->conn, 200, b.data, b.len);
	buf_free(&b);
	free(root);
	return (0);
}

/* The {name} of a /v1/snapshots/{name} path, or NULL (404 in err). */
static json_t *
serve_snap_named(const struct serve_req *r, char **root,
    const char **name, struct serve_error *err)
{
	json_t	*j;

	*name = r->http->path + strlen("/v1/snapshots/");
	if ((*root = serve_snap_root()) == NULL) {
		serve_fail(err, 500, NULL, "no cache directory for snapshots");
		return (NULL);
	}
	if ((j = serve_snap_record(*root, *name)) == NULL)
		serve_fail(err, 404, NULL, "no snapshot named %s", *name);
	return (j);
}

/* GET /v1/snapshots/{name} */
int
serve_snap_get(const struct serve_req *r, struct serve_error *err)
{
	struct buf	 b = { 0 };
	const char	*name;
	char		*root = NULL;
	json_t		*j;

	if ((j = serve_snap_named(r, &root, &name, err)) == NULL) {
		free(root);
		return (-1);
	}
	serve_snap_json(j, &b);
	httpd_respond_json(r->conn, 200, b.data, b.len);
	buf_free(&b);
	json_decref(j);
	free(root);
	return (0);
}

/*
 * DELETE /v1/snapshots/{name}. Sandboxes made from it keep its disk open
 * (and its files, while they run, on Linux): the record goes first, so
 * it is gone from the list at once.
 */
int
serve_snap_delete(const struct serve_req *r, struct serve_error *err)
{
	const char	*name;
	char		*root = NULL, *path;
	json_t		*j;
	int		 rc;

	if ((j = serve_snap_named(r, &root, &name, err)) == NULL) {
		free(root);
		return (-1);
	}
	json_decref(j);
	xasprintf(&path, "%s/%s/" SERVE_SNAP_RECORD, root, name);
	rc = unlink(path);
	free(path);
	xasprintf(&path, "%s/%s", root, name);
	if (rc == 0)
		rc = util_rm_rf(path);
	free(path);
	free(root);
	if (rc == -1)
		return (serve_fail(err, 500, NULL, "snapshot %s: %s", name,
		    strerror(errno)));
	httpd_respond(r->conn, 204, NULL, NULL, 0);
	return (0);
}

/*
 * A create's "snapshot": its record checked, its directory into *dir and
 * the sandbox's profile and settings (the source's) into *profile and
 * sets. 0, or -1 with err (400, 404).
 */
int
serve_snap_from(json_t *v, struct serve_snapref *ref, struct serve_error *err)
{
	json_t		*j, *a;
	char		*root;
	size_t		 i;

	if (!json_is_string(v) || (!serve_name_ok(json_string_value(v)) &&
	    (serve_snap_hidden == NULL ||
	    strcmp(json_string_value(v), serve_snap_hidden) != 0)))
		return (serve_bad_field(err, "snapshot", "must be a snapshot's "
		    "name"));
	if ((root = serve_snap_root()) == NULL)
		return (serve_fail(err, 500, NULL, "no cache directory for "
		    "snapshots"));
	if ((j = serve_snap_record(root, json_string_value(v))) == NULL) {
		free(root);
		return (serve_fail(err, 404, NULL, "no snapshot named %s",
		    json_string_value(v)));
	}
	if ((a = json_object_get(j, "attached")) != NULL) {
		serve_fail(err, 409, NULL, "snapshot %s lies inside the disks "
		    "of an attached QEMU (%s): load it back into that QEMU "
		    "with POST /v1/sandboxes/NAME/restore", json_string_value(v),
		    json_string_value(json_object_get(a, "qmp")) != NULL ?
		    json_string_value(json_object_get(a, "qmp")) : "?");
		json_decref(j);
		free(root);
		return (-1);
	}
	xasprintf(&ref->dir, "%s/%s", root, json_string_value(v));
	free(root);
	ref->token = xstrdup(json_string_value(json_object_get(j, "token")));
	/* A record without seed_disk is older than /setup at boot. */
	ref->cold = !json_is_true(json_object_get(j, "cold")) ? 0 :
	    json_is_false(json_object_get(j, "seed_disk")) ?
	    SANDBOX_COLD_SETUP : SANDBOX_COLD_SEED;
	ref->ram_backend = json_is_true(json_object_get(j, "ram_backend"));
	if (json_is_string(json_object_get(j, "profile")))
		ref->profile = xstrdup(json_string_value(json_object_get(j,
		    "profile")));
	a = json_object_get(j, "settings");
	ref->nsets = json_is_array(a) ? json_array_size(a) : 0;
	ref->sets = xcalloc(ref->nsets + 1, sizeof *ref->sets);
	for (i = 0; i < ref->nsets; i++) {
		v = json_array_get(a, i);
		ref->sets[i] = xstrdup(json_is_string(v) ?
		    json_string_value(v) : "");
	}
	serve_snap_args_from(j, ref);
	json_decref(j);
	return (0);
}

void
serve_snapref_free(struct serve_snapref *ref)
{
	size_t	i;

	free(ref->dir);
	if (ref->token != NULL)
		explicit_bzero(ref->token, strlen(ref->token));
	free(ref->token);
	free(ref->profile);
	for (i = 0; i < ref->nsets; i++)
		free(ref->sets[i]);
	free(ref->sets);
	for (i = 0; ref->extra != NULL && ref->extra[i] != NULL; i++)
		free(ref->extra[i]);
	free(ref->extra);
	memset(ref, 0, sizeof *ref);
}
