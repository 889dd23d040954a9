/*
 * A snapshot's extra QEMU arguments: a restore is a launch with its
 * source's command line, and an argument that adds a device changes the
 * devices QEMU expects in the saved state. The record keeps the source's
 * whole list (its profile's, then its create's "extra_args"); a restore
 * reloads the profile, whose own list must still begin it, and gets the
 * rest (the create's) back. A profile changed since, giving other
 * arguments, is refused, naming both lists, rather than restored into
 * something else. A record from before this kept no list: its restore
 * has its profile's, as then.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve_int.h"

/* The record's member: ,"extra_args":[...] */
void
serve_snap_args_json(struct serve_sb *s, struct buf *b)
{
	size_t	i;

	buf_puts(b, ",\"extra_args\":[");
	for (i = 0; i < s->profile.nextra_args; i++) {
		if (i > 0)
			buf_puts(b, ",");
		buf_json_string(b, s->profile.extra_args[i]);
	}
	buf_puts(b, "]");
}

/* The record's list into ref; none kept: ref->nextra is -1. */
void
serve_snap_args_from(json_t *j, struct serve_snapref *ref)
{
	json_t	*a = json_object_get(j, "extra_args"), *v;
	size_t	 i;

	ref->nextra = -1;
	if (!json_is_array(a))
		return;
	ref->extra = xcalloc(json_array_size(a) + 1, sizeof *ref->extra);
	for (i = 0; i < json_array_size(a); i++) {
		v = json_array_get(a, i);
		ref->extra[i] = xstrdup(json_is_string(v) ?
		    json_string_value(v) : "");
	}
	ref->nextra = (long)json_array_size(a);
}

/* A list as one line, for an error. */
static void
serve_snap_args_line(struct buf *b, char *const *argv, size_t n)
{
	size_t	i;

	if (n == 0)
		buf_puts(b, "none");
	for (i = 0; i < n; i++)
		buf_printf(b, "%s%s", i > 0 ? " " : "", argv[i]);
}

/*
 * p, the profile reloaded for a restore of ref: the source's arguments
 * given back, or -1 with err (409) when its own differ from theirs.
 */
int
serve_snap_args(struct profile *p, const struct serve_snapref *ref,
    const char *snap, struct serve_error *err)
{
	struct buf	 had = { 0 }, has = { 0 };
	size_t		 i, n;

	if (ref->dir == NULL || ref->nextra < 0)
		return (0);
	n = (size_t)ref->nextra;
	for (i = 0; i < p->nextra_args && i < n; i++) {
		if (strcmp(p->extra_args[i], ref->extra[i]) != 0)
			break;
	}
	if (i < p->nextra_args) {
		serve_snap_args_line(&had, ref->extra, n);
		serve_snap_args_line(&has, p->extra_args, p->nextra_args);
		serve_fail(err, 409, NULL, "snapshot %s was taken with the "
		    "extra QEMU arguments \"%s\", but its profile now gives "
		    "\"%s\": its restore would not have the same devices",
		    snap, had.data, has.data);
		buf_free(&had);
		buf_free(&has);
		return (-1);
	}
	for (i = 0; i < p->nextra_args; i++)
		free(p->extra_args[i]);
	free(p->extra_args);
	p->extra_args = xcalloc(n + 1, sizeof *p->extra_args);
	for (i = 0; i < n; i++)
		p->extra_args[i] = xstrdup(ref->extra[i]);
	p->nextra_args = n;
	return (0);
}
