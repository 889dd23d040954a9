/*
 * Snapshots of an attached QEMU (one started by hand), where QEMU allows
 * them: qsup has no command line to start a copy from, so the snapshot
 * is QEMU's own internal one, kept inside the VM's writable qcow2 disks
 * (QMP snapshot-save: RAM and devices into the first, every disk's
 * blocks marked in each). It is loaded back into the same QEMU with POST
 * /v1/sandboxes/{name}/restore {"snapshot": S} (snapshot-load), and
 * DELETE /v1/snapshots/{S} removes it from the disks too while that QEMU
 * is attached (snapshot-delete). Its record lies beside the others
 * (serve_snap.c), with "attached": the monitor's path, the tag, the
 * disks; a create from it is refused with the way to load it.
 *
 * A writable disk that is not qcow2 (raw, a host device) cannot hold a
 * snapshot: its writes after the save would be in no snapshot, so the
 * save is refused, naming it. Each step is one QMP command on the
 * attached monitor (serve_attach.c's line: bounded, with deadlines); the
 * job's end is polled with query-jobs (its events are not read), then
 * the job is dismissed. QEMU stops the guest for the whole save or load
 * itself, and runs it again after if it ran before.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

#define ASNAP_POLL_FIRST	0.01	/* s: query-jobs, doubled ... */
#define ASNAP_POLL		0.2	/* ... up to this */
#define ASNAP_MAX		600.0	/* s: a job, at most */

enum asnap_kind { ASNAP_SAVE, ASNAP_LOAD, ASNAP_DELETE };

struct attach_snap {
	struct serve_sb		*s;
	enum asnap_kind		 kind;
	char			*name;		/* the snapshot's, its tag */
	char			*dir;		/* its directory */
	char			*job;		/* QEMU's job id */
	json_t			*devices;	/* node names */
	struct httpd_conn	*conn;		/* NULL once gone */
	double			 t_start;
	double			 wait;
	ev_timer		 poll;
};

static const char *const asnap_verbs[] = { "save", "load", "delete" };

static void	asnap_step(struct attach_snap *);

static void
asnap_close_cb(void *arg)
{
	struct attach_snap	*a = arg;

	a->conn = NULL;
}

static void
asnap_free(struct attach_snap *a)
{
	ev_timer_stop(a->s->srv->loop, &a->poll);
	if (a->conn != NULL)
		httpd_set_close_cb(a->conn, NULL, NULL);
	a->s->attach_snap = NULL;
	free(a->name);
	free(a->dir);
	free(a->job);
	json_decref(a->devices);
	free(a);
}

/* The end: answered with status and body, or error; a freed. */
static void
asnap_end(struct attach_snap *a, int status, const char *error,
    const struct buf *body)
{
	if (error != NULL) {
		log_warnx("sandbox %s: snapshot %s: %s: %s", a->s->name,
		    a->name, asnap_verbs[a->kind], error);
		/* A save that failed keeps nothing. */
		if (a->kind == ASNAP_SAVE)
			(void)util_rm_rf(a->dir);
	}
	if (a->conn != NULL) {
		httpd_set_close_cb(a->conn, NULL, NULL);
		if (error != NULL)
			serve_error_now(a->conn, status, error, NULL);
		else if (body != NULL)
			httpd_respond_json(a->conn, status, body->data,
			    body->len);
		else
			httpd_respond(a->conn, status, NULL, NULL, 0);
		a->conn = NULL;
	}
	asnap_free(a);
}

static void
asnap_fail(struct attach_snap *a, int status, const char *fmt, const char *x)
{
	char	*msg;

	xasprintf(&msg, fmt, x);
	asnap_end(a, status, msg, NULL);
	free(msg);
}

/* The save is whole: its record, the answer, the event. */
static void
asnap_saved(struct attach_snap *a)
{
	struct sandbox_snap_result	 res = { 0 };
	struct buf			 meta = { 0 }, out = { 0 };
	char				*text;
	json_t				*at;

	res.pause_ms = (util_now() - a->t_start) * 1000;
	at = json_pack("{s:s, s:s, s:O}", "qmp", serve_attach_qmp_path(a->s),
	    "tag", a->name, "devices", a->devices);
	text = json_dumps(at, JSON_COMPACT);
	json_decref(at);
	buf_printf(&meta, "\"token\":\"\",\"cold\":false,\"ram_backend\":"
	    "false,\"disk\":false,\"attached\":%s", text);
	free(text);
	if (serve_snap_write(a->dir, a->name, a->s, &res, &meta, &out) ==
	    -1) {
		asnap_fail(a, 500, "cannot write the snapshot's record: %s",
		    strerror(errno));
		buf_free(&meta);
		return;
	}
	log_info("snapshot %s of attached %s saved in its disks (%.0f ms)",
	    a->name, a->s->name, res.pause_ms);
	serve_event(a->s->srv, "snapshot", out.data);
	asnap_end(a, 201, NULL, &out);
	buf_free(&meta);
	buf_free(&out);
}

/* Its job concluded without an error: what each kind does then. */
static void
asnap_done(struct attach_snap *a)
{
	struct buf	b = { 0 };
	char		*path;

	switch (a->kind) {
	case ASNAP_SAVE:
		asnap_saved(a);
		return;
	case ASNAP_LOAD:
		log_info("sandbox %s: snapshot %s loaded", a->s->name,
		    a->name);
		serve_sb_event(a->s);
		serve_sb_json(a->s, &b);
		asnap_end(a, 200, NULL, &b);
		buf_free(&b);
		return;
	case ASNAP_DELETE:
		xasprintf(&path, "%s/snapshot.json", a->dir);
		(void)unlink(path);
		free(path);
		(void)util_rm_rf(a->dir);
		asnap_end(a, 204, NULL, NULL);
		return;
	}
}

static void
asnap_dismissed_cb(json_t *ret, const char *error, void *arg)
{
	struct attach_snap	*a = arg;

	(void)ret;
	(void)error;	/* done either way */
	asnap_done(a);
}

static void
asnap_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct attach_snap	*a = w->data;

	(void)loop;
	(void)revents;
	asnap_step(a);
}

/* query-jobs' answer: ours still running, concluded, or failed. */
static void
asnap_jobs_cb(json_t *ret, const char *error, void *arg)
{
	struct attach_snap	*a = arg;
	json_t			*j, *err = NULL;
	const char		*st = NULL;
	char			*cause = NULL;
	size_t			 i;

	if (error != NULL) {
		asnap_fail(a, 500, "query-jobs: %s", error);
		return;
	}
	json_array_foreach(ret, i, j) {
		if (json_is_string(json_object_get(j, "id")) &&
		    strcmp(json_string_value(json_object_get(j, "id")),
		    a->job) == 0) {
			st = json_string_value(json_object_get(j, "status"));
			err = json_object_get(j, "error");
			break;
		}
	}
	if (st == NULL) {
		asnap_fail(a, 500, "QEMU's job %s is gone", a->job);
		return;
	}
	if (strcmp(st, "concluded") != 0) {
		if (util_now() - a->t_start > ASNAP_MAX) {
			asnap_fail(a, 504, "QEMU's job %s did not end in time",
			    a->job);
			return;
		}
		ev_timer_set(&a->poll, a->wait, 0);
		ev_timer_start(a->s->srv->loop, &a->poll);
		a->wait = a->wait * 2 > ASNAP_POLL ? ASNAP_POLL : a->wait * 2;
		return;
	}
	if (json_is_string(err)) {
		/* Its error first, dismissed after: the job must go. */
		xasprintf(&cause, "QEMU: %s", json_string_value(err));
		(void)serve_attach_qmp(a->s, "job-dismiss",
		    json_pack("{s:s}", "id", a->job), NULL, NULL, NULL);
		asnap_end(a, 409, cause, NULL);
		free(cause);
		return;
	}
	if (serve_attach_qmp(a->s, "job-dismiss", json_pack("{s:s}", "id",
	    a->job), asnap_dismissed_cb, a, &cause) == -1) {
		asnap_fail(a, 500, "%s", cause);
		free(cause);
	}
}

/* Another look at the job. */
static void
asnap_step(struct attach_snap *a)
{
	char	*cause = NULL;

	if (serve_attach_qmp(a->s, "query-jobs", NULL, asnap_jobs_cb, a,
	    &cause) == -1) {
		asnap_fail(a, 500, "%s", cause);
		free(cause);
	}
}

/* The job's start was answered: its end is polled. */
static void
asnap_started_cb(json_t *ret, const char *error, void *arg)
{
	struct attach_snap	*a = arg;

	(void)ret;
	if (error != NULL) {
		asnap_fail(a, 409, "QEMU: %s", error);
		return;
	}
	asnap_step(a);
}

/* snapshot-save, -load or -delete of a->name on a->devices. */
static void
asnap_start(struct attach_snap *a)
{
	static const char *const cmds[] = {
		"snapshot-save", "snapshot-load", "snapshot-delete"
	};
	json_t	*args;
	char	*cause = NULL;

	xasprintf(&a->job, "qsup-%s-%s", asnap_verbs[a->kind], a->name);
	args = json_pack("{s:s, s:s, s:O}", "job-id", a->job, "tag", a->name,
	    "devices", a->devices);
	if (a->kind != ASNAP_DELETE)
		json_object_set(args, "vmstate", json_array_get(a->devices,
		    0));
	if (serve_attach_qmp(a->s, cmds[a->kind], args, asnap_started_cb, a,
	    &cause) == -1) {
		asnap_fail(a, 500, "%s", cause);
		free(cause);
	}
}

/*
 * query-block's answer: every writable disk must be qcow2 (it holds the
 * snapshot); their nodes are the devices. NULL with *why if not.
 */
static json_t *
asnap_devices(json_t *ret, char **why)
{
	json_t		*devs, *j, *in;
	const char	*drv, *node, *dev;
	size_t		 i;

	devs = json_array();
	json_array_foreach(ret, i, j) {
		in = json_object_get(j, "inserted");
		if (!json_is_object(in) || json_is_true(json_object_get(in,
		    "ro")))
			continue;
		drv = json_string_value(json_object_get(in, "drv"));
		node = json_string_value(json_object_get(in, "node-name"));
		dev = json_string_value(json_object_get(j, "device"));
		if (dev == NULL || dev[0] == '\0')
			dev = json_string_value(json_object_get(j, "qdev"));
		if (drv == NULL || strcmp(drv, "qcow2") != 0 || node == NULL) {
			xasprintf(why, "its writable disk %s is %s, not "
			    "qcow2: it cannot hold a snapshot (QEMU keeps "
			    "them inside qcow2 disks)", dev != NULL ? dev :
			    "?", drv != NULL ? drv : "of no format");
			json_decref(devs);
			return (NULL);
		}
		json_array_append_new(devs, json_string(node));
	}
	if (json_array_size(devs) == 0) {
		*why = xstrdup("it has no writable qcow2 disk: QEMU keeps a "
		    "snapshot of RAM and devices inside one");
		json_decref(devs);
		return (NULL);
	}
	return (devs);
}

static void
asnap_block_cb(json_t *ret, const char *error, void *arg)
{
	struct attach_snap	*a = arg;
	char			*why = NULL, *msg;

	if (error != NULL) {
		asnap_fail(a, 500, "query-block: %s", error);
		return;
	}
	if ((a->devices = asnap_devices(ret, &why)) == NULL) {
		xasprintf(&msg, "sandbox %s (an attached QEMU) cannot be "
		    "saved: %s", a->s->name, why);
		asnap_end(a, 409, msg, NULL);
		free(msg);
		free(why);
		return;
	}
	asnap_start(a);
}

/* A job on s: NULL with err if one is under way already. */
static struct attach_snap *
asnap_new(struct serve_sb *s, struct httpd_conn *conn, enum asnap_kind kind,
    const char *name, const char *dir, struct serve_error *err)
{
	struct attach_snap	*a;

	if (s->attach_snap != NULL) {
		serve_fail(err, 409, NULL, "sandbox %s: a snapshot's %s is "
		    "under way", s->name, asnap_verbs[s->attach_snap->kind]);
		return (NULL);
	}
	a = xcalloc(1, sizeof *a);
	a->s = s;
	a->kind = kind;
	a->name = xstrdup(name);
	a->dir = xstrdup(dir);
	a->conn = conn;
	a->t_start = util_now();
	a->wait = ASNAP_POLL_FIRST;
	ev_timer_init(&a->poll, asnap_poll_cb, 0, 0);
	a->poll.data = a;
	s->attach_snap = a;
	httpd_set_close_cb(conn, asnap_close_cb, a);
	return (a);
}

/* POST /v1/sandboxes/{name}/snapshots's body, for an attached s. */
static void
asnap_save_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	struct serve_error	 err = { 0 };
	struct attach_snap	*a;
	json_t			*j = NULL;
	const char		*name;
	char			*dir = NULL, *cause = NULL;

	(void)arg;
	if (serve_snap_reserve(s, body, len, &j, &name, &dir, &err) == -1)
		goto out;
	if ((a = asnap_new(s, conn, ASNAP_SAVE, name, dir, &err)) == NULL) {
		(void)util_rm_rf(dir);
		goto out;
	}
	if (serve_attach_qmp(s, "query-block", NULL, asnap_block_cb, a,
	    &cause) == -1) {
		a->conn = NULL;
		httpd_set_close_cb(conn, NULL, NULL);
		asnap_free(a);
		(void)util_rm_rf(dir);
		serve_fail(&err, 500, NULL, "%s", cause);
	}
out:
	free(cause);
	free(dir);
	json_decref(j);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

/*
 * POST /v1/sandboxes/{name}/snapshots: an attached QEMU's is kept in its
 * disks (here); any other sandbox's is serve_snap.c's.
 */
int
serve_attach_snap_post(const struct serve_req *r, struct serve_error *err)
{
	if (r->sb->attach == NULL)
		return (serve_snap_post(r, err));
	serve_sb_read_body(r, asnap_save_body, NULL);
	return (0);
}

/* The attached sandbox whose monitor is qmp, or NULL. */
static struct serve_sb *
asnap_holder(struct serve *srv, const char *qmp)
{
	struct serve_sb	*s;

	TAILQ_FOREACH(s, &srv->sbs, entry)
		if (s->attach != NULL && s->state != SERVE_DEAD &&
		    strcmp(serve_attach_qmp_path(s), qmp) == 0)
			return (s);
	return (NULL);
}

/*
 * DELETE /v1/snapshots/{name}: an attached QEMU's snapshot goes out of
 * its disks too while that QEMU is attached (answered once done); any
 * other, or one whose QEMU is not attached now, only on disk here
 * (serve_snap.c: its QEMU's disks keep it then).
 */
int
serve_attach_snap_del(const struct serve_req *r, struct serve_error *err)
{
	struct attach_snap	*a;
	struct serve_sb		*s = NULL;
	const char		*name, *qmp;
	char			*root, *dir;
	json_t			*rec = NULL, *at;
	int			 rc;

	name = r->http->path + strlen("/v1/snapshots/");
	if ((root = serve_snap_root()) != NULL)
		rec = serve_snap_record(root, name);
	at = json_object_get(rec, "attached");
	qmp = json_string_value(json_object_get(at, "qmp"));
	if (qmp != NULL && (s = asnap_holder(r->srv, qmp)) == NULL)
		log_info("snapshot %s: its QEMU (%s) is not attached: its "
		    "record goes, its disks keep it", name, qmp);
	if (s == NULL) {
		json_decref(rec);
		free(root);
		return (serve_snap_delete(r, err));
	}
	xasprintf(&dir, "%s/%s", root, name);
	rc = -1;
	if ((a = asnap_new(s, r->conn, ASNAP_DELETE, name, dir, err)) !=
	    NULL) {
		a->devices = json_incref(json_object_get(at, "devices"));
		asnap_start(a);
		rc = 0;
	}
	free(dir);
	json_decref(rec);
	free(root);
	return (rc);
}

/*
 * POST /v1/sandboxes/{name}/restore {"snapshot": S}: an attached QEMU's
 * own snapshot loaded back into it. Other sandboxes start a new one from
 * a snapshot instead (POST /v1/sandboxes {"snapshot": S}).
 */
static void
asnap_restore_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	static const char *const fields[] = { "snapshot", NULL };
	struct serve_error	 err = { 0 };
	struct attach_snap	*a;
	json_t			*j = NULL, *rec = NULL, *at, *v;
	const char		*name, *qmp;
	char			*root = NULL, *dir = NULL;

	(void)arg;
	if (serve_json_body(body, len, &j, &err) == -1 ||
	    serve_check_fields(j, fields, &err) == -1)
		goto out;
	v = json_object_get(j, "snapshot");
	if (!json_is_string(v) || !serve_name_ok(json_string_value(v))) {
		serve_bad_field(&err, "snapshot", "must be a snapshot's name");
		goto out;
	}
	name = json_string_value(v);
	if (s->attach == NULL) {
		serve_fail(&err, 409, NULL, "sandbox %s is not an attached "
		    "QEMU: start a new sandbox from snapshot %s with POST "
		    "/v1/sandboxes {\"snapshot\": \"%s\"}", s->name, name, name);
		goto out;
	}
	if ((root = serve_snap_root()) == NULL) {
		serve_fail(&err, 500, NULL, "no cache directory for snapshots");
		goto out;
	}
	if ((rec = serve_snap_record(root, name)) == NULL) {
		serve_fail(&err, 404, NULL, "no snapshot named %s", name);
		goto out;
	}
	at = json_object_get(rec, "attached");
	qmp = json_string_value(json_object_get(at, "qmp"));
	if (qmp == NULL || strcmp(qmp, serve_attach_qmp_path(s)) != 0) {
		serve_fail(&err, 409, NULL, "snapshot %s was not taken of this "
		    "QEMU (%s): it can only be loaded where it was saved", name,
		    serve_attach_qmp_path(s));
		goto out;
	}
	if (s->state != SERVE_READY && s->state != SERVE_PAUSED) {
		serve_fail(&err, 409, NULL, "sandbox %s is %s", s->name,
		    serve_state_name(s->state));
		goto out;
	}
	xasprintf(&dir, "%s/%s", root, name);
	if ((a = asnap_new(s, conn, ASNAP_LOAD, name, dir, &err)) == NULL)
		goto out;
	a->devices = json_incref(json_object_get(at, "devices"));
	asnap_start(a);
out:
	free(root);
	free(dir);
	json_decref(rec);
	json_decref(j);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

int
serve_attach_restore(const struct serve_req *r, struct serve_error *err)
{
	(void)err;
	serve_sb_read_body(r, asnap_restore_body, NULL);
	return (0);
}

/* s goes: its job's client told, the job forgotten (QEMU may finish). */
void
serve_attach_snap_gone(struct serve_sb *s)
{
	struct attach_snap	*a = s->attach_snap;

	if (a == NULL)
		return;
	asnap_end(a, 409, "the sandbox went during the snapshot's work",
	    NULL);
}
