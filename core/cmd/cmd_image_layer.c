/*
 * The layers of "qsup image ls" and "qsup image prune": setup's cached
 * steps in images_dir/layers (core/image/image_layer.c), each with its
 * parent, step, size and when a run last used it; prune removes those no
 * run holds (a run holds its whole chain), never a base image.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmd.h"
#include "image.h"

struct cmd_layer_list {
	int		 json;
	int		 n;
	struct buf	*b;
};

static void
cmd_layer_when(long long t, char *s, size_t len)
{
	struct tm	tm;
	time_t		tt = (time_t)t;

	if (t <= 0 || localtime_r(&tt, &tm) == NULL)
		snprintf(s, len, "-");
	else
		strftime(s, len, "%Y-%m-%d %H:%M", &tm);
}

/* The parent as ls shows it: the base's path, or the parent's key. */
static void
cmd_layer_parent(const struct image_layer *l, char *s, size_t len)
{
	if (l->parent == NULL)
		snprintf(s, len, "?");
	else if (strncmp(l->parent, "base:", 5) == 0)
		snprintf(s, len, "base %s", l->parent_path != NULL ?
		    l->parent_path : l->parent);
	else
		snprintf(s, len, "layer %.12s", l->parent);
}

static void
cmd_layer_json(struct buf *b, const struct image_layer *l, int in_use)
{
	size_t	i;

	buf_puts(b, "{\"key\":");
	buf_json_string(b, l->key);
	buf_puts(b, ",\"path\":");
	buf_json_string(b, l->path);
	buf_puts(b, ",\"parent\":");
	if (l->parent != NULL)
		buf_json_string(b, l->parent);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"parent_path\":");
	if (l->parent_path != NULL)
		buf_json_string(b, l->parent_path);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"step\":");
	if (l->step != NULL)
		buf_json_string(b, l->step);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"env\":[");
	for (i = 0; i < l->nenv; i++) {
		if (i > 0)
			buf_puts(b, ",");
		buf_json_string(b, l->env[i]);
	}
	buf_printf(b, "],\"disk_size\":%llu,\"size\":%llu,\"created\":%lld,"
	    "\"last_used\":%lld,\"in_use\":%s}",
	    (unsigned long long)l->disk_size, (unsigned long long)l->size,
	    l->created, l->used, in_use ? "true" : "false");
}

static void
cmd_layer_ls_one(const struct image_layer *l, int in_use, void *arg)
{
	struct cmd_layer_list	*ll = arg;
	char			 used[32], parent[PATH_MAX + 16];

	if (ll->json) {
		buf_puts(ll->b, ll->n++ == 0 ? "" : ",");
		cmd_layer_json(ll->b, l, in_use);
		return;
	}
	if (ll->n++ == 0)
		printf("layers (setup steps):\n");
	cmd_layer_when(l->used, used, sizeof used);
	cmd_layer_parent(l, parent, sizeof parent);
	printf("  %.12s  over %s  %.1f MB  last used %s%s\n    %s\n",
	    l->key, parent, l->size / 1e6, used,
	    in_use ? "  in use" : "", l->step != NULL ? l->step : "?");
}

/*
 * ls's layers of images_dir: lines on stdout, or (json) the items of a
 * JSON array into b. -1 if the store cannot be read (said).
 */
int
cmd_image_ls_layers(const char *images_dir, int json, struct buf *b)
{
	struct cmd_layer_list	 ll;
	char			*dir;
	int			 rc;

	memset(&ll, 0, sizeof ll);
	ll.json = json;
	ll.b = b;
	xasprintf(&dir, "%s/layers", images_dir);
	if ((rc = image_layer_each(dir, cmd_layer_ls_one, &ll)) == -1)
		log_warn("%s", dir);
	free(dir);
	return (rc);
}

struct cmd_layer_prune {
	int		 json;
	int		 removed, kept;
	uint64_t	 bytes;
	struct buf	 b;
};

static void
cmd_layer_prune_one(const struct image_layer *l, int removed, void *arg)
{
	struct cmd_layer_prune	*lp = arg;

	if (removed) {
		lp->removed++;
		lp->bytes += l->size;
	} else
		lp->kept++;
	if (lp->json) {
		buf_puts(&lp->b, lp->removed + lp->kept == 1 ? "" : ",");
		buf_puts(&lp->b, "{\"key\":");
		buf_json_string(&lp->b, l->key);
		buf_puts(&lp->b, ",\"step\":");
		buf_json_string(&lp->b, l->step != NULL ? l->step : "");
		buf_printf(&lp->b, ",\"removed\":%s}", removed ? "true" :
		    "false");
	} else
		printf("%s layer %.12s (%s)%s\n", removed ? "removed" : "kept",
		    l->key, l->step != NULL ? l->step : "?", removed ? "" :
		    ": in use by a run");
}

/*
 * Remove the layers of images_dir no run holds, unused for older_than
 * seconds at least (0: any); a layer kept keeps its parents. more: JSON
 * fields for the object --json prints. Returns qsup's exit status.
 */
int
cmd_image_prune_layers(const char *images_dir, long long older_than, int json,
    const char *more)
{
	struct cmd_layer_prune	 lp;
	struct buf		 d = { 0 };
	char			*dir, *cause = NULL;
	int			 rc = 0;

	memset(&lp, 0, sizeof lp);
	lp.json = json;
	xasprintf(&dir, "%s/layers", images_dir);
	if (image_layer_prune(dir, older_than, cmd_layer_prune_one, &lp,
	    &cause) == -1) {
		log_warnx("image prune: %s", cause);
		free(cause);
		rc = QSUP_EXIT_ERROR;
	} else if (json) {
		buf_json_string(&d, dir);
		printf("{\"dir\":%s,\"removed\":%d,\"kept_in_use\":%d,"
		    "\"bytes\":%llu,\"layers\":[%s]%s}\n", d.data, lp.removed,
		    lp.kept, (unsigned long long)lp.bytes,
		    lp.b.data != NULL ? lp.b.data : "", more);
		buf_free(&d);
	} else
		printf("%d layer%s removed (%.1f MB), %d in use kept\n",
		    lp.removed, lp.removed == 1 ? "" : "s", lp.bytes / 1e6,
		    lp.kept);
	buf_free(&lp.b);
	free(dir);
	return (rc);
}

/* --older-than: seconds, or a number with s, m, h or d; -1 if not. */
int
cmd_image_age(const char *s, long long *secs)
{
	char		*end;
	long long	 v;

	v = strtoll(s, &end, 10);
	if (end == s || v < 0)
		return (-1);
	switch (*end) {
	case '\0':
	case 's':
		break;
	case 'm':
		v *= 60;
		break;
	case 'h':
		v *= 3600;
		break;
	case 'd':
		v *= 86400;
		break;
	default:
		return (-1);
	}
	if (*end != '\0' && end[1] != '\0')
		return (-1);
	*secs = v;
	return (0);
}
