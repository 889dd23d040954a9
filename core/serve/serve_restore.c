/*
 * A starting server brings its persistent sandboxes back (the records
 * and saves are serve_persist.c's): each from its latest save, through a
 * create with "snapshot" (serve.c, as a fork's copies are made: this
 * file lies above it), paused again if it was paused when saved; or,
 * with no save, or one that cannot be restored, booted afresh from its
 * create's body, its processes and memory lost, and it says so
 * ("restored": {"from": "boot", "why": ...}). A record neither brings
 * back stays, to be tried at the next start (or deleted with its
 * sandbox's name).
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <jansson.h>

#include "serve_int.h"

/* A create from p's body (b), p handed to it: 0, or -1 with *why. */
static int
serve_restore_create(struct serve *srv, struct serve_persist *p, json_t *b,
    char **why)
{
	struct serve_error	 err = { 0 };
	struct serve_sb		*s;
	char			*text;

	text = json_dumps(b, JSON_COMPACT|JSON_REAL_PRECISION(17));
	serve_persist_restoring = p;
	serve_snap_hidden = p->from_snap;
	s = serve_create_json(srv, NULL, text, strlen(text), &err);
	serve_snap_hidden = NULL;
	/* Not taken (refused before it was): ours to free. */
	if (serve_persist_restoring == p)
		serve_persist_free(p);
	serve_persist_restoring = NULL;
	free(text);
	if (s == NULL) {
		*why = err.msg != NULL ? err.msg : xstrdup("not made");
		free(err.fields);
		free(err.allow);
		return (-1);
	}
	return (0);
}

/* From its latest save: 0, or -1 with *why. */
static int
serve_restore_snapshot(struct serve *srv, const char *name, json_t *rec,
    char **why)
{
	static const char *const theirs[] = {
		"profile", "settings", "extra_args", "disk", "snapshot", NULL
	};
	struct serve_persist	*p;
	struct stat		 st;
	json_t			*b;
	char			*root, *path;
	size_t			 i;
	int			 rc;

	p = serve_persist_from_json(rec);
	if (p->snapshot == NULL) {
		serve_persist_free(p);
		*why = xstrdup("no save was taken before the server stopped");
		return (-1);
	}
	/* The save has the source's profile and settings. */
	b = json_deep_copy(p->body);
	for (i = 0; theirs[i] != NULL; i++)
		json_object_del(b, theirs[i]);
	json_object_set_new(b, "name", json_string(name));
	json_object_set_new(b, "snapshot", json_string(p->snapshot));
	p->from = xstrdup("snapshot");
	p->from_snap = xstrdup(p->snapshot);
	p->from_taken = p->taken != NULL ? xstrdup(p->taken) : NULL;
	p->pause = p->paused;
	/* Its overlay will lie on the save's disk: kept while it does. */
	if ((root = serve_snap_root()) != NULL) {
		xasprintf(&path, "%s/%s/disk.qcow2", root, p->snapshot);
		if (stat(path, &st) == 0)
			json_array_insert_new(p->under, 0,
			    json_string(p->snapshot));
		free(path);
		free(root);
	}
	rc = serve_restore_create(srv, p, b, why);
	json_decref(b);
	return (rc);
}

/* Booted afresh from its create's body, saying why. */
static int
serve_restore_boot(struct serve *srv, const char *name, json_t *rec,
    const char *why, char **cause)
{
	struct serve_persist	*p;
	json_t			*b;
	int			 rc;

	p = serve_persist_from_json(rec);
	/* Its disk lies on none of the saves (the sweep takes them). */
	json_array_clear(p->under);
	p->from = xstrdup("boot");
	p->from_why = xstrdup(why);
	b = json_deep_copy(p->body);
	json_object_set_new(b, "name", json_string(name));
	rc = serve_restore_create(srv, p, b, cause);
	json_decref(b);
	return (rc);
}

/*
 * Every record of the server's (none if another server holds them):
 * its sandbox brought back, booting. 0, or -1 with *cause (the records'
 * directory cannot be had).
 */
int
serve_restore(struct serve *srv, char **cause)
{
	json_t	*rec;
	char	**names, *why, *boot_why, *fail;
	size_t	 i;
	int	 rc;

	if ((rc = serve_persist_open(srv, cause)) != 0)
		return (rc == 1 ? 0 : -1);
	serve_persist_sweep(srv);
	if ((names = serve_persist_names(srv)) == NULL)
		return (0);
	for (i = 0; names[i] != NULL; i++) {
		if ((rec = serve_persist_load(srv, names[i])) == NULL) {
			log_warnx("persistent sandbox %s: its record cannot be "
			    "read: left as it is", names[i]);
			free(names[i]);
			continue;
		}
		why = fail = NULL;
		if (serve_restore_snapshot(srv, names[i], rec, &why) == 0)
			log_info("persistent sandbox %s: restoring from its "
			    "last save", names[i]);
		else {
			if (json_is_string(json_object_get(rec, "snapshot")))
				xasprintf(&boot_why, "its last save could not "
				    "be restored: %s", why);
			else
				boot_why = xstrdup(why);
			if (serve_restore_boot(srv, names[i], rec, boot_why,
			    &fail) == 0)
				log_info("persistent sandbox %s: booting "
				    "afresh: %s", names[i], boot_why);
			else
				log_warnx("persistent sandbox %s not brought "
				    "back (its record stays): %s", names[i],
				    fail);
			free(boot_why);
		}
		free(why);
		free(fail);
		json_decref(rec);
		free(names[i]);
	}
	free(names);
	return (0);
}
