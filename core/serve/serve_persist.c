/*
 * Persistent sandboxes: one created with "persistent": true outlives its
 * server. Each has a record, $XDG_CACHE_HOME/qsup/persist/NAME.json,
 * beside the snapshots it names (both go if the cache goes, never one
 * without the other): its create's body (without "wait"), its latest
 * save (a hidden snapshot, SERVE_PERSIST_HIDDEN, never listed), when it
 * was taken and whether the sandbox was paused then, and the saves its
 * disk lies on ("under": a sandbox restored from a save has its overlay
 * over that save's disk, so its own saves need that one kept). Records
 * are written whole, to a temporary name renamed into place.
 *
 * Saves are taken at a stop (SIGTERM: serve_persist_save_all, before any
 * QEMU is stopped, bounded by SERVE_PERSIST_STOP) and every
 * "persist_every" seconds if asked; a server killed outright leaves the
 * record naming the last one whole. A starting server restores each
 * record (serve_restore.c, above serve.c) and sweeps the hidden saves no
 * record names (a save a dead server did not finish). One server at a
 * time owns the records: the first to lock persist/lock; another
 * refuses persistent creates.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

#define SERVE_PERSIST_RECORD_MAX	(2 * 1024 * 1024)
#define SERVE_PERSIST_STOP		10.0	/* s the saves at a stop
						   may take */

/* The server's side: the records' directory, held, and its saves. */
struct serve_persist_srv {
	char		*dir;
	int		 lock;		/* the lock's fd, or -1 */
	int		 saves;		/* under way */
	int		 stopping;	/* saving for a stop */
	void		(*then)(struct serve *);	/* ... and then */
	ev_timer	 stop;		/* the bound on those saves */
	unsigned	 next;
};

/* One save under way: its sandbox by name and serial. */
struct serve_persist_job {
	struct serve		*srv;
	char			*sb_name;
	unsigned long long	 serial;
	char			*name;		/* the hidden snapshot's */
	char			*dir;
	int			 paused;
	int			 quiet;		/* nothing to say if it fails */
};

/* The sandbox a restore is making (serve_restore.c sets it). */
struct serve_persist	*serve_persist_restoring;

static void	serve_persist_every_cb(struct ev_loop *, ev_timer *, int);

/* Now, as records and the API write times. */
static char *
serve_persist_now(void)
{
	char		 when[32];
	struct tm	 tm;
	time_t		 now = time(NULL);

	gmtime_r(&now, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return (xstrdup(when));
}

/* Is name one of the hidden saves of a persistent sandbox? */
static int
serve_persist_hidden(const char *name)
{
	return (strncmp(name, SERVE_PERSIST_HIDDEN,
	    strlen(SERVE_PERSIST_HIDDEN)) == 0 && strchr(name, '/') == NULL &&
	    strlen(name) <= 2 * SERVE_NAME_MAX);
}

/*
 * The records' directory, made, and locked: 0; 1 if another server holds
 * it (then this one has no persistent sandboxes); -1 with *cause.
 */
int
serve_persist_open(struct serve *srv, char **cause)
{
	struct serve_persist_srv	*ps;
	char				*cache, *path;

	if (srv->persist != NULL)
		return (srv->persist->lock != -1 ? 0 : 1);
	ps = xcalloc(1, sizeof *ps);
	ps->lock = -1;
	srv->persist = ps;
	if ((cache = util_cache_dir()) == NULL) {
		xasprintf(cause, "no cache directory for persistent sandboxes "
		    "(XDG_CACHE_HOME, HOME)");
		return (-1);
	}
	xasprintf(&ps->dir, "%s/persist", cache);
	free(cache);
	if (mkdir(ps->dir, 0700) == -1 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", ps->dir, strerror(errno));
		return (-1);
	}
	xasprintf(&path, "%s/lock", ps->dir);
	ps->lock = open(path, O_RDWR|O_CREAT|O_CLOEXEC, 0600);
	if (ps->lock == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		return (-1);
	}
	if (flock(ps->lock, LOCK_EX|LOCK_NB) == -1) {
		log_warnx("%s is held by another server: its persistent "
		    "sandboxes are its own, and this one makes none", path);
		close(ps->lock);
		ps->lock = -1;
		free(path);
		return (1);
	}
	free(path);
	ev_init(&ps->stop, NULL);
	return (0);
}

/* The record of name as JSON, or NULL (none, or not one). */
json_t *
serve_persist_load(struct serve *srv, const char *name)
{
	char	*path, *text;
	size_t	 len;
	json_t	*j;

	if (srv->persist == NULL || srv->persist->dir == NULL ||
	    !serve_name_ok(name))
		return (NULL);
	xasprintf(&path, "%s/%s.json", srv->persist->dir, name);
	text = util_read_file(path, &len, SERVE_PERSIST_RECORD_MAX);
	free(path);
	if (text == NULL)
		return (NULL);
	j = json_loadb(text, len, 0, NULL);
	free(text);
	if (j != NULL && (!json_is_object(j) ||
	    !json_is_object(json_object_get(j, "body")))) {
		json_decref(j);
		j = NULL;
	}
	return (j);
}

/* A record's JSON as a sandbox's persist, to restore it. */
struct serve_persist *
serve_persist_from_json(json_t *j)
{
	struct serve_persist	*p;
	json_t			*v;
	size_t			 i;

	p = xcalloc(1, sizeof *p);
	p->body = json_deep_copy(json_object_get(j, "body"));
	json_object_del(p->body, "wait");
	v = json_object_get(j, "snapshot");
	if (json_is_string(v) && serve_persist_hidden(json_string_value(v)))
		p->snapshot = xstrdup(json_string_value(v));
	v = json_object_get(j, "taken");
	if (p->snapshot != NULL && json_is_string(v))
		p->taken = xstrdup(json_string_value(v));
	p->paused = json_is_true(json_object_get(j, "paused"));
	p->under = json_array();
	json_array_foreach(json_object_get(j, "under"), i, v) {
		if (json_is_string(v) &&
		    serve_persist_hidden(json_string_value(v)))
			json_array_append(p->under, v);
	}
	v = json_object_get(p->body, "persist_every");
	p->every = json_is_number(v) ? json_number_value(v) : 0;
	return (p);
}

void
serve_persist_free(struct serve_persist *p)
{
	if (p == NULL)
		return;
	json_decref(p->body);
	json_decref(p->under);
	free(p->snapshot);
	free(p->taken);
	free(p->from);
	free(p->from_snap);
	free(p->from_taken);
	free(p->from_why);
	free(p);
}

/* Does the record keep save name (its latest, or one its disk is on)? */
static int
serve_persist_keeps(json_t *rec, const char *name)
{
	json_t	*v;
	size_t	 i;

	v = json_object_get(rec, "snapshot");
	if (json_is_string(v) && strcmp(json_string_value(v), name) == 0)
		return (1);
	json_array_foreach(json_object_get(rec, "under"), i, v) {
		if (json_is_string(v) && strcmp(json_string_value(v), name) ==
		    0)
			return (1);
	}
	return (0);
}

/* Does p's disk lie on save name? */
static int
serve_persist_under(struct serve_persist *p, const char *name)
{
	json_t	*v;
	size_t	 i;

	json_array_foreach(p->under, i, v) {
		if (strcmp(json_string_value(v), name) == 0)
			return (1);
	}
	return (0);
}

/* The names of the records, NULL-terminated (none: NULL). */
char **
serve_persist_names(struct serve *srv)
{
	struct dirent	**recs = NULL;
	char		**names = NULL;
	size_t		  len, k = 0;
	int		  i, n;

	if (srv->persist == NULL || srv->persist->lock == -1 ||
	    (n = scandir(srv->persist->dir, &recs, NULL, alphasort)) == -1)
		return (NULL);
	names = xcalloc(n + 1, sizeof *names);
	for (i = 0; i < n; i++) {
		len = strlen(recs[i]->d_name);
		if (len > 5 && strcmp(recs[i]->d_name + len - 5, ".json") ==
		    0) {
			names[k] = xstrdup(recs[i]->d_name);
			names[k++][len - 5] = '\0';
		}
		free(recs[i]);
	}
	free(recs);
	return (names);
}

/*
 * At a server's start, before its restores: each hidden save that no
 * record names goes (a save a killed server did not finish, or one
 * replaced whose removal it did not live to do).
 */
void
serve_persist_sweep(struct serve *srv)
{
	struct dirent	 *de;
	json_t		 *rec;
	DIR		 *d;
	char		**names, *root, *path;
	size_t		  i;
	int		  kept;

	if ((names = serve_persist_names(srv)) == NULL)
		return;
	if ((root = serve_snap_root()) != NULL &&
	    (d = opendir(root)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (!serve_persist_hidden(de->d_name))
				continue;
			for (i = 0, kept = 0; names[i] != NULL && !kept; i++) {
				rec = serve_persist_load(srv, names[i]);
				kept = rec != NULL && serve_persist_keeps(rec,
				    de->d_name);
				json_decref(rec);
			}
			if (kept)
				continue;
			xasprintf(&path, "%s/%s", root, de->d_name);
			log_info("removing %s, a persistent sandbox's save no "
			    "record names", path);
			(void)util_rm_rf(path);
			free(path);
		}
		closedir(d);
	}
	for (i = 0; names[i] != NULL; i++)
		free(names[i]);
	free(names);
	free(root);
}

/* s's record, written whole: 0, or -1 with errno. */
static int
serve_persist_write(struct serve_sb *s)
{
	struct serve_persist	*p = s->persist;
	json_t			*j;
	char			*tmp, *path, *text;
	int			 rc;

	j = json_pack("{s:s, s:O, s:s?, s:s?, s:b, s:O}", "name", s->name,
	    "body", p->body, "snapshot", p->snapshot, "taken", p->taken,
	    "paused", p->paused, "under", p->under);
	if (j == NULL) {
		errno = EINVAL;
		return (-1);
	}
	text = json_dumps(j, JSON_COMPACT|JSON_REAL_PRECISION(17));
	json_decref(j);
	xasprintf(&tmp, "%s/%s.json.tmp", s->srv->persist->dir, s->name);
	xasprintf(&path, "%s/%s.json", s->srv->persist->dir, s->name);
	rc = util_write_file(tmp, text);
	if (rc == 0 && rename(tmp, path) == -1)
		rc = -1;
	if (rc == -1)
		unlink(tmp);
	free(tmp);
	free(path);
	free(text);
	return (rc);
}

/*
 * A create's "persistent" and "persist_every", checked before anything
 * else is: 0, or -1 with err (400 naming the field, 409).
 */
int
serve_persist_fields(struct serve *srv, json_t *j, struct serve_error *err)
{
	json_t		*v = json_object_get(j, "persistent");
	json_t		*every = json_object_get(j, "persist_every");
	const char	*no = NULL;
	double		 d;

	if (v != NULL && !json_is_boolean(v))
		return (serve_bad_field(err, "persistent", "must be true or "
		    "false"));
	if (every != NULL && (!json_is_number(every) ||
	    (d = json_number_value(every)) < 1 || d > SERVE_TTL_MAX ||
	    isnan(d)))
		return (serve_bad_field(err, "persist_every", "must be a number "
		    "of seconds, 1 to 316224000"));
	if (every != NULL && !json_is_true(v))
		return (serve_bad_field(err, "persist_every", "is for a "
		    "persistent sandbox: \"persistent\": true"));
	if (!json_is_true(v))
		return (0);
	if (json_object_get(j, "attach") != NULL)
		no = "attach";
	else if (json_object_get(j, "disk") != NULL)
		no = "disk";
	/* "extra_args": a save keeps them (serve_snap_args.c). */
	if (no != NULL)
		return (serve_fail(err, 409, "\"field\":\"persistent\"",
		    "a persistent sandbox cannot have \"%s\": %s", no,
		    strcmp(no, "attach") == 0 ? "an attached QEMU cannot be "
		    "saved" : "a sandbox on a real disk cannot be restored "
		    "from a save yet"));
	if (srv->persist == NULL || srv->persist->lock == -1)
		return (serve_fail(err, 409, "\"field\":\"persistent\"",
		    "this server keeps no persistent sandboxes: another "
		    "server holds %s/lock", srv->persist != NULL &&
		    srv->persist->dir != NULL ? srv->persist->dir :
		    "the cache's persist"));
	return (0);
}

/*
 * s, its profile loaded, made persistent if the body says so: a profile
 * whose sandboxes cannot be saved is refused (409, naming why). Its
 * record is written by serve_persist_begin.
 */
int
serve_persist_profile(struct serve_sb *s, json_t *j, struct serve_error *err)
{
	struct serve_persist	*p;
	json_t			*v;

	if (!json_is_true(json_object_get(j, "persistent")))
		return (0);
	if (s->profile.nshares > 0)
		return (serve_fail(err, 409, "\"field\":\"persistent\"",
		    "a persistent sandbox cannot have shares: QEMU cannot "
		    "save a guest with a virtio-9p export mounted (the "
		    "profile has %zu)", s->profile.nshares));
	if (s->profile.boot == PROFILE_BOOT_IMAGE)
		return (serve_fail(err, 409, "\"field\":\"persistent\"",
		    "a persistent sandbox cannot boot an image itself (boot = "
		    "\"image\"): such a sandbox cannot be saved"));
	if ((p = serve_persist_restoring) != NULL)
		serve_persist_restoring = NULL;
	else {
		p = xcalloc(1, sizeof *p);
		p->body = json_deep_copy(j);
		json_object_del(p->body, "wait");
		p->under = json_array();
		v = json_object_get(j, "persist_every");
		p->every = json_is_number(v) ? json_number_value(v) : 0;
	}
	s->persist = p;
	return (0);
}

/* s is about to boot: its record written. 0, or -1 with err (500). */
int
serve_persist_begin(struct serve_sb *s, struct serve_error *err)
{
	if (s->persist == NULL)
		return (0);
	if (serve_persist_write(s) == -1)
		return (serve_fail(err, 500, NULL, "%s/%s.json: %s",
		    s->srv->persist->dir, s->name, strerror(errno)));
	return (0);
}

/* The hidden saves of p: its latest and those its disk lies on. */
static void
serve_persist_rm_saves(struct serve_persist *p)
{
	json_t	*v;
	char	*root, *path;
	size_t	 i;

	if ((root = serve_snap_root()) == NULL)
		return;
	if (p->snapshot != NULL) {
		xasprintf(&path, "%s/%s", root, p->snapshot);
		(void)util_rm_rf(path);
		free(path);
	}
	json_array_foreach(p->under, i, v) {
		xasprintf(&path, "%s/%s", root, json_string_value(v));
		(void)util_rm_rf(path);
		free(path);
	}
	free(root);
}

/*
 * s goes: deleted (its record and saves go too), or the server stops or
 * it died (they stay, for the next start). Its timer stops either way.
 */
void
serve_persist_gone(struct serve_sb *s)
{
	struct serve_persist	*p = s->persist;
	char			*path;

	if (p == NULL)
		return;
	ev_timer_stop(s->srv->loop, &p->timer);
	if (s->deleting && !s->srv->stopping && s->srv->persist != NULL &&
	    s->srv->persist->dir != NULL) {
		xasprintf(&path, "%s/%s.json", s->srv->persist->dir, s->name);
		(void)unlink(path);
		free(path);
		serve_persist_rm_saves(p);
		log_info("persistent sandbox %s deleted: its record and saves "
		    "are gone", s->name);
	}
	serve_persist_free(p);
	s->persist = NULL;
}

/* The create failed after serve_persist_begin: its record goes. */
void
serve_persist_abort(struct serve_sb *s)
{
	char	*path;

	if (s->persist == NULL || s->persist->from != NULL)
		return;		/* a restore's: kept, to be tried again */
	xasprintf(&path, "%s/%s.json", s->srv->persist->dir, s->name);
	(void)unlink(path);
	free(path);
}

static void
serve_persist_job_free(struct serve_persist_job *job)
{
	free(job->sb_name);
	free(job->name);
	free(job->dir);
	free(job);
}

/* One save fewer under way: a stop waiting for them goes on. */
static void
serve_persist_save_over(struct serve *srv)
{
	struct serve_persist_srv	*ps = srv->persist;
	void				(*then)(struct serve *);

	if (ps == NULL || --ps->saves > 0 || !ps->stopping || ps->then == NULL)
		return;
	ev_timer_stop(srv->loop, &ps->stop);
	then = ps->then;
	ps->then = NULL;
	then(srv);
}

/* A save is over: the record names it, the one it replaces goes. */
static void
serve_persist_saved_cb(struct sandbox *sb, const char *error,
    const struct sandbox_snap_result *res, void *arg)
{
	struct serve_persist_job	*job = arg;
	struct serve			*srv = job->srv;
	struct serve_persist		*p;
	struct serve_sb			*s;
	char				*old = NULL, *taken = NULL, *path;

	(void)sb;
	s = serve_find(srv, job->sb_name);
	if (s != NULL && (s->serial != job->serial || s->persist == NULL ||
	    srv->persist == NULL))
		s = NULL;
	if (s != NULL)
		s->persist->saving = 0;
	if (error != NULL || s == NULL) {
		if (!job->quiet)
			log_warnx("persistent sandbox %s: save %s: %s",
			    job->sb_name, job->name, error != NULL ? error :
			    "it went during the save");
		(void)util_rm_rf(job->dir);
		goto out;
	}
	p = s->persist;
	old = p->snapshot;
	taken = p->taken;
	p->snapshot = xstrdup(job->name);
	p->taken = serve_persist_now();
	p->paused = job->paused;
	if (serve_persist_write(s) == -1) {
		log_warnx("persistent sandbox %s: %s/%s.json: %s: its last "
		    "save stays %s", s->name, srv->persist->dir, s->name,
		    strerror(errno), old != NULL ? old : "none");
		(void)util_rm_rf(job->dir);
		free(p->snapshot);
		free(p->taken);
		p->snapshot = old;
		p->taken = taken;
		old = taken = NULL;
		goto out;
	}
	log_info("persistent sandbox %s saved as %s (%.1f ms paused)", s->name,
	    job->name, res->pause_ms);
	/* The one it replaces, unless the sandbox's disk lies on it. */
	if (old != NULL && !serve_persist_under(p, old) &&
	    (path = serve_snap_root()) != NULL) {
		free(taken);
		xasprintf(&taken, "%s/%s", path, old);
		(void)util_rm_rf(taken);
		free(path);
	}
out:
	free(old);
	free(taken);
	serve_persist_job_free(job);
	serve_persist_save_over(srv);
}

/*
 * Save s now, into a new hidden snapshot: 0 once under way, -1 with
 * *cause (it cannot be saved now).
 */
static int
serve_persist_save(struct serve_sb *s, int quiet, char **cause)
{
	struct serve_persist_srv	*ps = s->srv->persist;
	struct serve_persist_job	*job;
	struct serve_error		 err = { 0 };
	char				*root;
	int				 made, tries;

	if (s->persist->saving) {
		xasprintf(cause, "a save is under way");
		return (-1);
	}
	if (serve_snap_can(s, "saved", "a save", &err) == -1) {
		*cause = err.msg;
		free(err.fields);
		free(err.allow);
		return (-1);
	}
	if ((root = serve_snap_root()) == NULL) {
		xasprintf(cause, "no cache directory for snapshots");
		return (-1);
	}
	job = xcalloc(1, sizeof *job);
	job->srv = s->srv;
	job->sb_name = xstrdup(s->name);
	job->serial = s->serial;
	job->paused = s->state == SERVE_PAUSED;
	job->quiet = quiet;
	/*
	 * The second and a count since this server's start: a save a
	 * restarted server takes within the second of its last one (format
	 * 2 restores are that quick) must not meet that one's name.
	 */
	for (tries = 0;; tries++) {
		xasprintf(&job->name, SERVE_PERSIST_HIDDEN "%s-%lld-%u",
		    s->name, (long long)time(NULL), ++ps->next);
		xasprintf(&job->dir, "%s/%s", root, job->name);
		if ((made = mkdir(job->dir, 0700)) == 0 || errno != EEXIST ||
		    tries == 100)
			break;
		free(job->name);
		free(job->dir);
	}
	free(root);
	if (made == -1) {
		xasprintf(cause, "%s: %s", job->dir, strerror(errno));
		serve_persist_job_free(job);
		return (-1);
	}
	if (serve_snap_write_ref(s, job->dir, cause) == -1 ||
	    sandbox_snapshot(s->sb, job->dir, serve_persist_saved_cb, job,
	    cause) == -1) {
		(void)util_rm_rf(job->dir);
		serve_persist_job_free(job);
		return (-1);
	}
	s->persist->saving = 1;
	ps->saves++;
	return (0);
}

/* persist_every: a save now, if s can be saved (else at the next). */
static void
serve_persist_every_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve_sb	*s = w->data;
	char		*cause = NULL;

	(void)loop;
	(void)revents;
	if (s->persist == NULL || s->srv->persist == NULL ||
	    s->srv->persist->stopping)
		return;
	if (serve_persist_save(s, 0, &cause) == -1) {
		log_debug("persistent sandbox %s: no save now: %s", s->name,
		    cause);
		free(cause);
	}
}

/*
 * s is ready: its periodic saves start. 1 if it is to be paused (it was
 * when it was saved), as the caller (serve.c) then does.
 */
int
serve_persist_ready(struct serve_sb *s)
{
	struct serve_persist	*p = s->persist;
	int			 pause;

	if (p == NULL)
		return (0);
	if (p->every > 0 && !ev_is_active(&p->timer)) {
		ev_init(&p->timer, serve_persist_every_cb);
		p->timer.data = s;
		ev_timer_set(&p->timer, p->every, p->every);
		ev_timer_start(s->srv->loop, &p->timer);
	}
	pause = p->pause;
	p->pause = 0;
	return (pause);
}

static void
serve_persist_stop_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct serve			*srv = w->data;
	struct serve_persist_srv	*ps = srv->persist;
	void				(*then)(struct serve *);

	(void)loop;
	(void)revents;
	log_warnx("%d save%s of persistent sandboxes not done in %g s: "
	    "stopping; each comes back from its last whole save", ps->saves,
	    ps->saves == 1 ? "" : "s", SERVE_PERSIST_STOP);
	if ((then = ps->then) != NULL) {
		ps->then = NULL;
		then(srv);
	}
}

/*
 * The server stops: each persistent sandbox, ready or paused, saved
 * first. The number of saves under way (then is called once they are
 * over, or after SERVE_PERSIST_STOP), or 0: none, go on now. Once only.
 */
int
serve_persist_save_all(struct serve *srv, void (*then)(struct serve *))
{
	struct serve_persist_srv	*ps = srv->persist;
	struct serve_sb			*s;
	char				*cause = NULL;

	if (ps == NULL || ps->lock == -1 || ps->stopping)
		return (0);
	ps->stopping = 1;
	TAILQ_FOREACH(s, &srv->sbs, entry) {
		if (s->persist == NULL)
			continue;
		ev_timer_stop(srv->loop, &s->persist->timer);
		if (s->persist->saving)
			continue;	/* counted already */
		if (s->state != SERVE_READY && s->state != SERVE_PAUSED) {
			log_info("persistent sandbox %s is %s: not saved; it "
			    "comes back from %s", s->name, serve_state_name(
			    s->state), s->persist->snapshot != NULL ?
			    s->persist->snapshot : "a boot");
			continue;
		}
		if (serve_persist_save(s, 0, &cause) == -1) {
			log_warnx("persistent sandbox %s not saved: %s; it "
			    "comes back from %s", s->name, cause,
			    s->persist->snapshot != NULL ? s->persist->snapshot :
			    "a boot");
			free(cause);
			cause = NULL;
		}
	}
	if (ps->saves == 0)
		return (0);
	log_info("saving %d persistent sandbox%s before stopping", ps->saves,
	    ps->saves == 1 ? "" : "es");
	ps->then = then;
	ev_timer_init(&ps->stop, serve_persist_stop_cb, SERVE_PERSIST_STOP, 0);
	ps->stop.data = srv;
	ev_timer_start(srv->loop, &ps->stop);
	return (ps->saves);
}

/*
 * The server is freed (its sandboxes next: saves under way end, failed,
 * with no record to update): its lock let go.
 */
void
serve_persist_close(struct serve *srv)
{
	struct serve_persist_srv	*ps = srv->persist;

	if (ps == NULL)
		return;
	ev_timer_stop(srv->loop, &ps->stop);
	if (ps->lock != -1)
		close(ps->lock);
	free(ps->dir);
	free(ps);
	srv->persist = NULL;
}

/* The sandbox's persistence, members of its JSON object. */
void
serve_persist_json(struct serve_sb *s, struct buf *b)
{
	struct serve_persist	*p = s->persist;

	if (p == NULL) {
		buf_puts(b, ",\"persistent\":false,\"persist_every\":null,"
		    "\"saved\":null,\"restored\":null");
		return;
	}
	buf_puts(b, ",\"persistent\":true,\"persist_every\":");
	if (p->every > 0)
		buf_printf(b, "%.17g", p->every);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"saved\":");
	if (p->snapshot != NULL) {
		buf_puts(b, "{\"snapshot\":");
		buf_json_string(b, p->snapshot);
		buf_puts(b, ",\"taken\":");
		buf_json_string(b, p->taken != NULL ? p->taken : "");
		buf_printf(b, ",\"paused\":%s}", p->paused ? "true" : "false");
	} else
		buf_puts(b, "null");
	buf_puts(b, ",\"restored\":");
	if (p->from == NULL) {
		buf_puts(b, "null");
		return;
	}
	buf_puts(b, "{\"from\":");
	buf_json_string(b, p->from);
	buf_puts(b, ",\"snapshot\":");
	if (p->from_snap != NULL)
		buf_json_string(b, p->from_snap);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"taken\":");
	if (p->from_taken != NULL)
		buf_json_string(b, p->from_taken);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"why\":");
	if (p->from_why != NULL)
		buf_json_string(b, p->from_why);
	else
		buf_puts(b, "null");
	buf_puts(b, "}");
}
