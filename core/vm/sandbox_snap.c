/*
 * Snapshots of a ready (or paused) sandbox, and sandboxes started from
 * one. The save runs on the loop through the sandbox's monitor
 * (qmp_conn): stop, the whole VM migrated into the snapshot's state file
 * (RAM in the stream, as template format 1), completion polled with
 * query-migrate, the overlay copied while QEMU stands still, cont. A
 * restore is a launch with the source's command line (the same devices:
 * the same RAM block, seed disk or none, kernel flags), -incoming from
 * the state file, the snapshot's disk read-only below a fresh overlay
 * (and the disks the source's overlay was over, kept with it: a
 * template's, an earlier snapshot's), and the source's agent token, which the restored guest still holds:
 * its first request is a ping, as a boot's.
 */
#include <sys/stat.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "sandbox_int.h"

#define SNAP_POLL	0.002	/* query-migrate's period */
#define SNAP_FDNAME	"qsnap"
#define SNAP_DOWNTIME	"20"	/* ms: the stop a live save aims for */
#define SNAP_CONVERGE	2.0	/* s of a live save before the guest is
				   stopped for it to end */

struct sandbox_snap_job {
	struct sandbox		*sb;
	char			*dir;
	int			 fd;		/* the state file */
	int			 was_running;
	int			 forced;	/* stopped, not converging */
	double			 forced_at;
	double			 t_start;
	double			 t_done;	/* the migration's end */
	double			 downtime_ms;	/* QEMU's, of a live save */
	ev_timer		 poll;
	sandbox_snap_cb		 cb;
	void			*arg;
	int			 step;		/* of sandbox_snap_step */
	char			*error;		/* the save's, while it conts */
	struct sandbox_snap_result res;
};

static void	sandbox_snap_step(const char *, json_t *, void *);

/* The snapshot's kept disks, under%zu.qcow2 from 0 to the first gap. */
static size_t
sandbox_snap_unders(const char *dir, char ***paths)
{
	char	*path;
	size_t	 n;

	*paths = NULL;
	for (n = 0; ; n++) {
		xasprintf(&path, "%s/" SANDBOX_SNAP_UNDER, dir, n);
		if (access(path, F_OK) == -1) {
			free(path);
			return (n);
		}
		*paths = xreallocarray(*paths, n + 1, sizeof **paths);
		(*paths)[n] = path;
	}
}

static void
sandbox_snap_unlink_unders(const char *dir)
{
	char	**paths;
	size_t	  i, n;

	n = sandbox_snap_unders(dir, &paths);
	for (i = n; i > 0; i--) {
		unlink(paths[i - 1]);
		free(paths[i - 1]);
	}
	free(paths);
}

/*
 * The disks the sandbox's overlay goes over (its template's, or the
 * snapshot's it was restored from, and theirs), kept in the snapshot as
 * under0.qcow2 and up: a hard link where it can (they are never written
 * once in place), else a copy. The snapshot's own disk, a copy of the
 * overlay, goes over the last of them at a restore.
 */
static int
sandbox_snap_keep_mids(struct sandbox *sb, const char *dir, uint64_t *bytes,
    char **cause)
{
	struct stat	 st;
	char		*path;
	size_t		 i;
	int		 rc = 0;

	for (i = 0; i < sb->disk.nmids && rc == 0; i++) {
		xasprintf(&path, "%s/" SANDBOX_SNAP_UNDER, dir, i);
		if (link(sb->disk.mids[i], path) == -1 &&
		    template_copy_file(sb->disk.mids[i], path, cause) == -1)
			rc = -1;
		else if (stat(path, &st) == 0)
			*bytes += (uint64_t)st.st_blocks * 512;
		free(path);
	}
	return (rc);
}

/* The job is over: the guest goes on as it was, the owner is told. */
static void
sandbox_snap_end(struct sandbox_snap_job *j, const char *error)
{
	struct sandbox	*sb = j->sb;
	char		*path;

	ev_timer_stop(sb->loop, &j->poll);
	/* A pause measured first: the guest runs again by now. */
	if (j->was_running && j->t_done > 0)
		j->res.pause_ms = j->downtime_ms + (util_now() - j->t_done) *
		    1000;
	/*
	 * On disk before its record is written (the owner's): after cont,
	 * so the guest does not stand still for the writeback.
	 */
	if (error == NULL && fsync(j->fd) == -1)
		error = "fsync of the state file failed";
	if (j->fd != -1)
		close(j->fd);
	if (error != NULL) {
		xasprintf(&path, "%s/" SANDBOX_SNAP_STATE, j->dir);
		unlink(path);
		free(path);
		xasprintf(&path, "%s/" SANDBOX_SNAP_DISK, j->dir);
		unlink(path);
		free(path);
		sandbox_snap_unlink_unders(j->dir);
	}
	sb->snap_job = NULL;
	if (j->was_running && sb->state == SBS_READY)
		sandbox_live_resume(sb);
	j->cb(sb, error, &j->res, j->arg);
	free(j->error);
	free(j->dir);
	free(j);
}

/* cont answered: running again, or not (then the owner hears why). */
static void
sandbox_snap_cont(const char *error, json_t *ret, void *arg)
{
	struct sandbox_snap_job	*j = arg;
	char			*msg;

	(void)ret;
	if (error == NULL) {
		sandbox_snap_end(j, j->error);
		return;
	}
	xasprintf(&msg, "the guest was saved but not continued: %s", error);
	sandbox_snap_end(j, msg);
	free(msg);
}

/* The state is written: the disk copied, then the guest goes on. */
static void
sandbox_snap_saved(struct sandbox_snap_job *j, const char *error)
{
	struct sandbox	*sb = j->sb;
	struct stat	 st;
	char		*path, *cause = NULL;

	if (error == NULL && fstat(j->fd, &st) == 0)
		j->res.bytes += (uint64_t)st.st_blocks * 512;
	if (error == NULL && sb->disk.overlay != NULL &&
	    sandbox_snap_keep_mids(sb, j->dir, &j->res.bytes, &cause) == 0) {
		xasprintf(&path, "%s/" SANDBOX_SNAP_DISK, j->dir);
		if (template_copy_file(sb->disk.overlay, path, &cause) == 0 &&
		    stat(path, &st) == 0)
			j->res.bytes += (uint64_t)st.st_blocks * 512;
		free(path);
	}
	if (error != NULL || cause != NULL)
		xasprintf(&j->error, "%s", error != NULL ? error : cause);
	free(cause);
	if (!j->was_running || sb->qmp == NULL) {
		sandbox_snap_end(j, j->error);
		return;
	}
	if (qmp_conn_call(sb->qmp, "cont", NULL, -1, sandbox_snap_cont, j,
	    &cause) == -1) {
		sandbox_snap_end(j, cause);
		free(cause);
	}
}

static void
sandbox_snap_poll_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox_snap_job	*j = w->data;
	char			*cause = NULL;

	(void)loop;
	(void)revents;
	if (qmp_conn_call(j->sb->qmp, "query-migrate", NULL, -1,
	    sandbox_snap_step, j, &cause) == -1) {
		sandbox_snap_saved(j, cause);
		free(cause);
	}
}

/*
 * One step answered: each command's answer sends the next; query-migrate
 * is asked again until the migration is over.
 */
static void
sandbox_snap_step(const char *error, json_t *ret, void *arg)
{
	struct sandbox_snap_job	*j = arg;
	struct sandbox		*sb = j->sb;
	const char		*st;
	char			*cause = NULL, *args = NULL;
	int			 rc = 0;

	if (error != NULL) {
		sandbox_snap_saved(j, error);
		return;
	}
	/* Steps 0-4 set it up; query-migrate answers after. */
	if (j->step > 4 && ret != NULL && (st = json_string_value(
	    json_object_get(ret, "status"))) != NULL) {
		if (strcmp(st, "completed") == 0) {
			j->t_done = util_now();
			if (json_is_number(json_object_get(ret, "downtime")))
				j->downtime_ms = json_number_value(
				    json_object_get(ret, "downtime"));
			if (j->forced)
				j->downtime_ms += (j->t_done - j->forced_at) *
				    1000;
			sandbox_snap_saved(j, NULL);
			return;
		}
		if (strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0) {
			xasprintf(&cause, "QEMU's migration %s: %s", st,
			    json_string_value(json_object_get(ret,
			    "error-desc")) != NULL ? json_string_value(
			    json_object_get(ret, "error-desc")) : "no reason");
			sandbox_snap_saved(j, cause);
			free(cause);
			return;
		}
		/* A guest that dirties faster than the disk takes it. */
		if (j->was_running && !j->forced &&
		    util_now() - j->t_start > SNAP_CONVERGE) {
			j->forced = 1;
			j->forced_at = util_now();
			log_debug("snapshot: not converging in %.1f s; stopping "
			    "the guest", SNAP_CONVERGE);
			(void)qmp_conn_call(sb->qmp, "stop", NULL, -1, NULL,
			    NULL, NULL);
		}
		ev_timer_set(&j->poll, SNAP_POLL, 0);
		ev_timer_start(sb->loop, &j->poll);
		return;
	}
	switch (j->step++) {
	case 0:		/* the RAM goes in the stream, all of it */
		rc = qmp_conn_call(sb->qmp, "migrate-set-capabilities",
		    "{\"capabilities\":[{\"capability\":\"x-ignore-shared\","
		    "\"state\":false}]}", -1, sandbox_snap_step, j, &cause);
		break;
	case 1:		/* as fast as the disk takes it, a short stop */
		rc = qmp_conn_call(sb->qmp, "migrate-set-parameters",
		    "{\"max-bandwidth\":107374182400,\"downtime-limit\":"
		    SNAP_DOWNTIME "}", -1, sandbox_snap_step, j, &cause);
		break;
	case 2:		/* no fork: -sandbox spawn=deny forbids exec: */
		xasprintf(&args, "{\"fdname\":\"%s\"}", SNAP_FDNAME);
		rc = qmp_conn_call(sb->qmp, "getfd", args, j->fd,
		    sandbox_snap_step, j, &cause);
		break;
	case 3:
		xasprintf(&args, "{\"uri\":\"fd:%s\"}", SNAP_FDNAME);
		rc = qmp_conn_call(sb->qmp, "migrate", args, -1,
		    sandbox_snap_step, j, &cause);
		break;
	default:
		sandbox_snap_poll_cb(sb->loop, &j->poll, 0);
		break;
	}
	free(args);
	if (rc == -1) {
		sandbox_snap_saved(j, cause);
		free(cause);
	}
}

/*
 * Format 2 (sandbox_snap2.c): stop, the dirty pages read, the devices
 * saved without RAM (QEMU writes the state file by its path; "live":
 * false keeps its disks active for the cont), then as format 1's end.
 */
static void
sandbox_snap2_step(const char *error, json_t *ret, void *arg)
{
	struct sandbox_snap_job	*j = arg;
	struct sandbox		*sb = j->sb;
	struct buf		 b = { 0 };
	char			*cause = NULL, *path;
	int			 rc;

	(void)ret;
	if (error != NULL) {
		sandbox_snap_saved(j, error);
		return;
	}
	if (j->step++ == 1) {
		j->t_done = util_now();
		j->downtime_ms = (j->t_done - j->forced_at) * 1000;
		sandbox_snap_saved(j, NULL);
		return;
	}
	if (sandbox_snap2_save(sb, j->dir, &j->res.bytes, &cause) == -1) {
		sandbox_snap_saved(j, cause);
		free(cause);
		return;
	}
	xasprintf(&path, "%s/" SANDBOX_SNAP_STATE, j->dir);
	buf_puts(&b, "{\"live\":false,\"filename\":");
	buf_json_string(&b, path);
	buf_puts(&b, "}");
	buf_add(&b, "", 1);
	free(path);
	rc = qmp_conn_call(sb->qmp, "xen-save-devices-state", b.data, -1,
	    sandbox_snap2_step, j, &cause);
	buf_free(&b);
	if (rc == -1) {
		sandbox_snap_saved(j, cause);
		free(cause);
	}
}

/* QEMU is going (its monitor with it): a save under way failed. */
void
sandbox_snap_abort(struct sandbox *sb)
{
	struct exec	*x;
	sandbox_fresh_cb fcb;

	if (sb->snap != NULL)
		ev_timer_stop(sb->loop, &sb->snap->status);
	/* Its identity's exec: told it is over, its owner with it. */
	if (sb->snap != NULL && (x = sb->snap->refresh) != NULL)
		sb->snap->refresh_gone(x, "QEMU exited");
	/* ... or its agent's own refresh (sandbox_fresh_send): the same. */
	if (sb->fresh_cb != NULL) {
		fcb = sb->fresh_cb;
		sb->fresh_cb = NULL;
		fcb(sb, 1, "QEMU exited", sb->fresh_arg);
	}
	if (sb->snap_job != NULL)
		sandbox_snap_end(sb->snap_job, "QEMU exited during the save");
}

/*
 * Why sb cannot be saved now, or NULL. A mounted virtio-9p export blocks
 * QEMU's migration ("Migration is disabled when VirtFS export path is
 * mounted in the guest"), and the guest mounts every share at its start.
 */
const char *
sandbox_snapshot_refused(struct sandbox *sb)
{
	if (sb->state != SBS_READY && sb->state != SBS_PAUSED)
		return ("it is not ready");
	if (sb->qmp == NULL)
		return ("it has no monitor");
	if (sb->nshares > 0)
		return ("it has virtio-9p shares mounted, and QEMU cannot "
		    "migrate a mounted 9p export");
	if (sandbox_boot_image(sb))
		return ("it boots an image itself (boot = \"image\")");
	if (sb->snap_job != NULL)
		return ("a snapshot of it is under way");
	if (sb->qmp_cb != NULL)
		return ("a pause or resume is under way");
	return (NULL);
}

/* Is a save of sb under way? (A new exec would be caught half-way.) */
int
sandbox_snapshot_busy(struct sandbox *sb)
{
	return (sb->snap_job != NULL);
}

/*
 * Save sb into dir (made, empty): its state file, its disk. The guest is
 * stopped meanwhile (if it ran) and continued after; cb is told from the
 * loop with the result. -1 with *cause when it cannot start.
 */
int
sandbox_snapshot(struct sandbox *sb, const char *dir, sandbox_snap_cb cb,
    void *arg, char **cause)
{
	struct sandbox_snap_job	*j;
	const char		*why;
	char			*path;
	int			 fd;

	if ((why = sandbox_snapshot_refused(sb)) != NULL) {
		xasprintf(cause, "%s", why);
		return (-1);
	}
	xasprintf(&path, "%s/" SANDBOX_SNAP_STATE, dir);
	fd = open(path, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600);
	if (fd == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		return (-1);
	}
	free(path);
	j = xcalloc(1, sizeof *j);
	j->sb = sb;
	j->dir = xstrdup(dir);
	j->fd = fd;
	j->cb = cb;
	j->arg = arg;
	j->was_running = sb->state == SBS_READY;
	j->t_start = util_now();
	ev_init(&j->poll, sandbox_snap_poll_cb);
	j->poll.data = j;
	/*
	 * A running guest is saved live: QEMU copies its RAM while it runs
	 * and stops it only for the last dirty pages and the devices (the
	 * stream then records a running VM). It answers no ping meanwhile.
	 */
	sandbox_live_stop(sb);
	j->forced_at = j->t_start;
	if (sandbox_snap2_able(sb) ? qmp_conn_call(sb->qmp, j->was_running ?
	    "stop" : "query-status", NULL, -1, sandbox_snap2_step, j,
	    cause) == -1 : qmp_conn_call(sb->qmp, "query-status", NULL, -1,
	    sandbox_snap_step, j, cause) == -1) {
		if (j->was_running)
			sandbox_live_resume(sb);
		close(fd);
		xasprintf(&path, "%s/" SANDBOX_SNAP_STATE, dir);
		unlink(path);
		free(path);
		free(j->dir);
		free(j);
		return (-1);
	}
	sb->snap_job = j;
	return (0);
}

/*
 * What a restore needs to know of sb's launch, as JSON members: its
 * agent's token (the guest keeps it), its command line's shape.
 */
void
sandbox_snapshot_json(struct sandbox *sb, struct buf *b)
{
	int	cold = sandbox_cold(sb);
	int	ram = sb->snap != NULL ? sb->snap->ram_backend :
		    sb->mode != SB_COLD &&
		    sandbox_template_format(sb) == TEMPLATE_SHARED;

	buf_puts(b, "\"token\":");
	buf_json_string(b, sb->token);
	buf_printf(b, ",\"cold\":%s,\"seed_disk\":%s,\"ram_backend\":%s,"
	    "\"disk\":%s,\"format\":%d", cold ? "true" : "false",
	    cold == SANDBOX_COLD_SEED ? "true" : "false", ram ? "true" : "false",
	    sb->disk.overlay != NULL ? "true" : "false",
	    sandbox_snap2_able(sb) ? 2 : 1);
}

/*
 * Start sb from the snapshot in dir (before sandbox_start): token, cold
 * and ram_backend as sandbox_snapshot_json wrote them.
 */
void
sandbox_set_snapshot(struct sandbox *sb, const char *dir, const char *token,
    int cold, int ram_backend)
{
	char	*path;

	assert(sb->state == SBS_NEW);
	sb->snap = xcalloc(1, sizeof *sb->snap);
	sb->snap->dir = xstrdup(dir);
	sb->snap->token = xstrdup(token);
	sb->snap->cold = cold;
	sb->snap->ram_backend = ram_backend;
	sb->snap->pipe = sb->snap->tpl_fd = -1;
	/* Its files say its format, whatever its record says. */
	xasprintf(&path, "%s/" SANDBOX_SNAP_MAP, dir);
	sb->snap->format = ram_backend && access(path, F_OK) == 0 ? 2 : 1;
	free(path);
}

/*
 * A restore's launch: the snapshot's state for -incoming, and its disk
 * below this sandbox's own overlay (read-only: no sandbox writes it).
 */
int
sandbox_snap_launch(struct sandbox *sb, char **cause)
{
	char	*path, **mids;
	size_t	 i, n;
	int	 rc = 0;

	if (sb->snap->format == 2) {
		if (sandbox_snap2_launch(sb, cause) == -1)
			return (-1);
	} else {
		xasprintf(&path, "%s/" SANDBOX_SNAP_STATE, sb->snap->dir);
		if ((sb->state_fd = open(path, O_RDONLY|O_CLOEXEC)) == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			free(path);
			return (-1);
		}
		free(path);
	}
	if (sb->disk.base != NULL && sb->disk.nmids == 0) {
		n = sandbox_snap_unders(sb->snap->dir, &mids);
		mids = xreallocarray(mids, n + 1, sizeof *mids);
		xasprintf(&mids[n++], "%s/" SANDBOX_SNAP_DISK, sb->snap->dir);
		rc = disk_overlay_on(&sb->disk, sb->rundir, mids, n, cause);
		for (i = 0; i < n; i++)
			free(mids[i]);
		free(mids);
	}
	return (rc);
}

static void	sandbox_snap_status_cb(struct ev_loop *, ev_timer *, int);

/*
 * The restore's run state: a snapshot of a paused guest (and QEMU's
 * stream says so) comes in paused, and is continued once loaded. The
 * state is asked until QEMU has left "inmigrate".
 */
static void
sandbox_snap_status(const char *error, json_t *ret, void *arg)
{
	struct sandbox	*sb = arg;
	const char	*st;

	char		*cause = NULL;

	if (error != NULL || sb->snap == NULL || sb->qmp == NULL)
		return;		/* the start's deadline says the rest */
	/* QEMU runs and waits on its pipe: the RAM, then the devices. */
	if (sb->snap->pipe != -1 && sandbox_snap2_load(sb, &cause) == -1) {
		log_warnx("restore of snapshot %s: %s", sb->snap->dir, cause);
		free(cause);
		return;
	}
	st = json_string_value(json_object_get(ret, "status"));
	if (st == NULL || strcmp(st, "inmigrate") == 0) {
		ev_timer_set(&sb->snap->status, SNAP_POLL, 0);
		ev_timer_start(sb->loop, &sb->snap->status);
		return;
	}
	if (strcmp(st, "running") != 0)
		(void)qmp_conn_call(sb->qmp, "cont", NULL, -1, NULL, NULL,
		    NULL);
}

static void
sandbox_snap_status_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;

	(void)loop;
	(void)revents;
	if (sb->qmp != NULL)
		(void)qmp_conn_call(sb->qmp, "query-status", NULL, -1,
		    sandbox_snap_status, sb, NULL);
}

/* QEMU of a restore runs: its monitor is ours from now on. */
void
sandbox_snap_launched(struct sandbox *sb)
{
	if (sb->qmp == NULL && sb->qmp_fd != -1)
		sb->qmp = qmp_conn_new(sb->loop, sb->qmp_fd);
	ev_init(&sb->snap->status, sandbox_snap_status_cb);
	sb->snap->status.data = sb;
	sandbox_snap_status_cb(sb->loop, &sb->snap->status, 0);
}
