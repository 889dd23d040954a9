/*
 * The disks sandboxes run on, and their records in the registry of
 * disks in use (core/vm/disk_reg.c; the seed's launch_vm). A create's
 * "disk" names an image file: "writable": true boots the guest on the
 * file itself (QEMU writes it; no overlay), false (the default) on a
 * fresh overlay over it, as for an image. Writing is exclusive: a disk
 * held writable refuses every other use, and a disk held read-only (a
 * base under an overlay) refuses writing. The run directories of "qsup
 * run" name their base image too (image_in_use): a writable use checks
 * them as well.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "serve_int.h"

/*
 * Hold path (a real path) for s, writable or not: 0, or -1 with err (409
 * naming the holder, or 500).
 */
static int
serve_disk_take(struct serve_sb *s, const char *path, int writable,
    struct serve_error *err)
{
	struct disk_reg	 r;
	struct stat	 st;
	char		*cause = NULL, *holder = NULL, *by = NULL, *base, *rec;
	char		 mode;
	int		 rc = -1;

	if (stat(path, &st) == -1)
		return (serve_fail(err, 400, "\"field\":\"disk.path\"",
		    "disk.path: %s: %s", path, strerror(errno)));
	if (disk_reg_open(&r, 1, &cause) == -1) {
		serve_fail(err, 500, NULL, "disk registry: %s", cause);
		free(cause);
		return (-1);
	}
	if (disk_reg_find(&r, &st, writable, &mode, &holder)) {
		if (mode == 'w')
			serve_fail(err, 409, NULL, "disk %s is in use by "
			    "sandbox %s", path, holder);
		else
			serve_fail(err, 409, NULL, "disk %s is in use by "
			    "sandbox %s (read-only, as its base): it cannot be "
			    "written meanwhile", path, holder);
		goto out;
	}
	/* A "qsup run" on it as its base image. */
	base = sandbox_run_path();
	if (writable && image_in_use(base, path, &by)) {
		serve_fail(err, 409, NULL, "disk %s is in use by sandbox %s "
		    "(read-only, as its base): it cannot be written "
		    "meanwhile", path, by);
		free(base);
		goto out;
	}
	free(base);
	if ((rec = disk_reg_add(&r, &st, path, writable, s->name, s->serial,
	    &cause)) == NULL) {
		serve_fail(err, 500, NULL, "disk registry: %s", cause);
		free(cause);
		goto out;
	}
	free(s->disk_record);
	s->disk_record = rec;
	rc = 0;
out:
	disk_reg_close(&r);
	free(by);
	free(holder);
	return (rc);
}

/*
 * The members of object o (the request's field name) are all of fields:
 * 0, or -1 with err (400 naming "name.member").
 */
int
serve_check_members(json_t *o, const char *name, const char *const *fields,
    struct serve_error *err)
{
	const char	*key;
	json_t		*v;
	struct buf	 known = { 0 };
	char		*field;
	size_t		 i;

	json_object_foreach(o, key, v) {
		for (i = 0; fields[i] != NULL; i++) {
			if (strcmp(key, fields[i]) == 0)
				break;
		}
		if (fields[i] != NULL)
			continue;
		buf_puts(&known, "unknown field (known:");
		for (i = 0; fields[i] != NULL; i++)
			buf_printf(&known, " %s", fields[i]);
		buf_puts(&known, ")");
		xasprintf(&field, "%s.%s", name, key);
		serve_bad_field(err, field, known.data);
		free(field);
		buf_free(&known);
		return (-1);
	}
	return (0);
}

/*
 * A create's "disk": {"path": ABSOLUTE, "writable": BOOL}, checked: the
 * file there is an image qsup boots (disk_probe: raw or self-contained
 * qcow2). It becomes s's image (a file, as --set image= makes it) and
 * s->disk_writable says how it is used. 0 (no disk too), or -1 with err.
 */
int
serve_disk_fields(struct serve_sb *s, json_t *j, struct serve_error *err)
{
	static const char *const fields[] = { "path", "writable", NULL };
	struct disk	 d;
	json_t		*o, *v;
	const char	*path;
	char		*cause = NULL;

	if ((o = json_object_get(j, "disk")) == NULL)
		return (0);
	if (!json_is_object(o))
		return (serve_bad_field(err, "disk", "must be an object "
		    "{\"path\": ..., \"writable\": ...}"));
	if (serve_check_members(o, "disk", fields, err) == -1)
		return (-1);
	v = json_object_get(o, "path");
	if (v == NULL || !json_is_string(v))
		return (serve_bad_field(err, "disk.path", "must be the "
		    "image file's absolute path"));
	path = json_string_value(v);
	if (path[0] != '/')
		return (serve_bad_field(err, "disk.path", "must be an "
		    "absolute path"));
	if ((v = json_object_get(o, "writable")) != NULL &&
	    !json_is_boolean(v))
		return (serve_bad_field(err, "disk.writable", "must be true "
		    "or false"));
	s->disk_writable = v != NULL && json_is_true(v);
	if (disk_probe(path, &d, &cause) == -1) {
		serve_bad_field(err, "disk.path", cause);
		free(cause);
		return (-1);
	}
	if (s->disk_writable && access(d.base, W_OK) == -1) {
		xasprintf(&cause, "%s: %s", d.base, strerror(errno));
		serve_bad_field(err, "disk.path", cause);
		free(cause);
		disk_free(&d);
		return (-1);
	}
	free(s->disk_path);
	s->disk_path = xstrdup(d.base);
	disk_free(&d);
	return (0);
}

/*
 * s's profile, loaded, given its disk: the disk is the image, a file,
 * whatever the profile said; a writable one has no layers below it and
 * keeps its own size. 0 (no disk too), or -1 with err.
 */
int
serve_disk_profile(struct serve_sb *s, struct serve_error *err)
{
	if (s->disk_path == NULL)
		return (0);
	if (s->disk_writable && s->profile.nsetup > 0)
		return (serve_bad_field(err, "disk.writable", "a writable "
		    "disk has no setup layers (the profile's setup)"));
	if (s->disk_writable && s->profile.disk_size != 0)
		return (serve_bad_field(err, "disk.writable", "a writable "
		    "disk is used at its own size: disk_size does not "
		    "apply (qemu-img resize grows it)"));
	free(s->profile.image);
	s->profile.image = xstrdup(s->disk_path);
	s->profile.image_kind = PROFILE_IMAGE_FILE;
	return (0);
}

/*
 * The disk s boots on (its "disk", else its image file) registered as in
 * use: 0, or -1 with err (409 naming the holder). Images that are pulled
 * are registered once there (serve_disk_hold_late).
 */
int
serve_disk_hold(struct serve_sb *s, struct serve_error *err)
{
	char	*real;
	int	 rc;

	if (s->disk_record != NULL)
		return (0);
	if (s->disk_path != NULL)
		return (serve_disk_take(s, s->disk_path, s->disk_writable,
		    err));
	if (s->image == NULL)
		return (0);
	if ((real = realpath(s->image, NULL)) == NULL)
		return (0);	/* disk_probe will say */
	rc = serve_disk_take(s, real, 0, err);
	free(real);
	return (rc);
}

/* serve_disk_hold, for a launch off a request: -1 with *cause. */
int
serve_disk_hold_late(struct serve_sb *s, char **cause)
{
	struct serve_error	err = { 0 };

	if (serve_disk_hold(s, &err) == 0)
		return (0);
	*cause = err.msg;
	free(err.fields);
	free(err.allow);
	return (-1);
}

/* s's disk is no longer in use (s is dead, or never ran). */
void
serve_disk_release(struct serve_sb *s)
{
	if (s->disk_record == NULL)
		return;
	if (unlink(s->disk_record) == -1 && errno != ENOENT)
		log_warn("%s", s->disk_record);
	free(s->disk_record);
	s->disk_record = NULL;
}

/* "disk" in the sandbox's JSON: its path and use, or nothing. */
void
serve_disk_json(struct serve_sb *s, struct buf *b)
{
	if (s->disk_path == NULL)
		return;
	buf_puts(b, ",\"disk\":{\"path\":");
	buf_json_string(b, s->disk_path);
	buf_printf(b, ",\"writable\":%s}", s->disk_writable ? "true" :
	    "false");
}
