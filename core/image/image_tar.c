/*
 * The archives of "qsup image build", read with libarchive before
 * anything is extracted: every entry's name, symlink target and hard link
 * target is checked (no absolute name, no "..", nothing written through a
 * symlink, no link out of the tree), OCI whiteouts are collected for the
 * extraction to apply, and the xattrs are kept for debugfs to set on the
 * finished file system (fakeroot 1.31 loses the file type of a file that
 * GNU tar gives xattrs, see docs/images.md). GNU tar extracts afterwards; what
 * it is given has passed these checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "image_int.h"

#define IMAGE_TAR_WH		".wh."
#define IMAGE_TAR_OPQ		".wh..wh..opq"
#define IMAGE_TAR_BLOCK		4096

/* One symlink of the tree so far, or one xattr, and the layer it is from. */
struct image_tree_rec {
	char		*path;
	int		 layer;
	char		*name;		/* xattrs: its name, value */
	void		*value;
	size_t		 len;
};

struct image_tree {
	/* The symlinks: an open-addressing set, path -> layer. */
	struct image_tree_rec	*links;
	size_t			 nlinks, slots;	/* slots: a power of 2 */
	struct image_tree_rec	*xattrs;
	size_t			 nxattrs;
	uint64_t		 bytes;
	uint64_t		 entries;
};

struct image_tree *
image_tree_new(void)
{
	struct image_tree	*t;

	t = xcalloc(1, sizeof *t);
	t->slots = 1024;
	t->links = xcalloc(t->slots, sizeof *t->links);
	return (t);
}

void
image_tree_free(struct image_tree *t)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; i < t->slots; i++)
		free(t->links[i].path);
	free(t->links);
	for (i = 0; i < t->nxattrs; i++) {
		free(t->xattrs[i].path);
		free(t->xattrs[i].name);
		free(t->xattrs[i].value);
	}
	free(t->xattrs);
	free(t);
}

uint64_t
image_tree_bytes(const struct image_tree *t)
{
	return (t->bytes + t->entries * 256);
}

static size_t
image_tree_hash(const char *s)
{
	size_t	h = 14695981039346656037ULL;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return (h);
}

/* path's slot in the set: its own, or the empty one where it would go. */
static struct image_tree_rec *
image_tree_slot(const struct image_tree *t, const char *path, size_t len)
{
	struct image_tree_rec	*r;
	char			*key;
	size_t			 i;

	key = xstrndup(path, len);
	i = image_tree_hash(key) & (t->slots - 1);
	for (;; i = (i + 1) & (t->slots - 1)) {
		r = &t->links[i];
		if (r->path == NULL || strcmp(r->path, key) == 0)
			break;
	}
	free(key);
	return (r);
}

static void
image_tree_link_add(struct image_tree *t, const char *path, int layer)
{
	struct image_tree_rec	*old;
	size_t			 i, n;
	struct image_tree_rec	*r;

	if ((t->nlinks + 1) * 2 > t->slots) {
		old = t->links;
		n = t->slots;
		t->slots *= 2;
		t->links = xcalloc(t->slots, sizeof *t->links);
		for (i = 0; i < n; i++) {
			if (old[i].path == NULL)
				continue;
			r = image_tree_slot(t, old[i].path,
			    strlen(old[i].path));
			*r = old[i];
		}
		free(old);
	}
	r = image_tree_slot(t, path, strlen(path));
	if (r->path == NULL) {
		r->path = xstrdup(path);
		t->nlinks++;
	}
	r->layer = layer;
}

/* Rebuild the set without the symlinks matching (path, under, below). */
static void
image_tree_link_drop(struct image_tree *t, const char *path, int under,
    int below)
{
	struct image_tree_rec	*old = t->links, *r;
	size_t			 i, n = t->slots, plen = strlen(path);
	int			 hit;

	t->links = xcalloc(t->slots, sizeof *t->links);
	t->nlinks = 0;
	for (i = 0; i < n; i++) {
		if (old[i].path == NULL)
			continue;
		hit = strcmp(old[i].path, path) == 0 || (under &&
		    (plen == 0 || (strncmp(old[i].path, path, plen) == 0 &&
		    old[i].path[plen] == '/')));
		if (hit && (below < 0 || old[i].layer < below)) {
			free(old[i].path);
			continue;
		}
		r = image_tree_slot(t, old[i].path, strlen(old[i].path));
		*r = old[i];
		t->nlinks++;
	}
	free(old);
}

/* Is path (or, with len, its first len bytes) a symlink of the tree? */
int
image_tree_is_link(const struct image_tree *t, const char *path)
{
	return (image_tree_slot(t, path, strlen(path))->path != NULL);
}

/* The first proper prefix of path that is a symlink, or NULL. */
static char *
image_tree_through(const struct image_tree *t, const char *path)
{
	const char	*p;

	for (p = strchr(path, '/'); p != NULL; p = strchr(p + 1, '/')) {
		if (image_tree_slot(t, path, p - path)->path != NULL)
			return (xstrndup(path, p - path));
	}
	return (NULL);
}

/* Forget xattrs of path (and under it) from layers below "below" (-1: any). */
static void
image_tree_xattr_drop(struct image_tree *t, const char *path, int under,
    int below)
{
	struct image_tree_rec	*x;
	size_t			 i, j = 0, plen = strlen(path);
	int			 hit;

	for (i = 0; i < t->nxattrs; i++) {
		x = &t->xattrs[i];
		hit = strcmp(x->path, path) == 0 || (under && (plen == 0 ||
		    (strncmp(x->path, path, plen) == 0 &&
		    x->path[plen] == '/')));
		if (hit && (below < 0 || x->layer < below)) {
			free(x->path);
			free(x->name);
			free(x->value);
			continue;
		}
		t->xattrs[j++] = *x;
	}
	t->nxattrs = j;
}

/*
 * An archive's entry name as a path relative to the tree ("" for the
 * tree itself), or NULL with *why: absolute names and ".." are refused.
 */
char *
image_tar_path(const char *name, const char **why)
{
	char	*copy, *seg, *save = NULL, *out;
	size_t	 len = 0;

	if (name == NULL || *name == '\0') {
		*why = "an empty name";
		return (NULL);
	}
	if (name[0] == '/') {
		*why = "an absolute path";
		return (NULL);
	}
	copy = xstrdup(name);
	out = xmalloc(strlen(name) + 1);
	out[0] = '\0';
	for (seg = strtok_r(copy, "/", &save); seg != NULL;
	    seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			free(copy);
			free(out);
			*why = "a \"..\" component";
			return (NULL);
		}
		if (len > 0)
			out[len++] = '/';
		memcpy(out + len, seg, strlen(seg) + 1);
		len += strlen(seg);
	}
	free(copy);
	return (out);
}

/*
 * Does the symlink at path (relative to the tree) with target stay in the
 * tree? An absolute target is read in the tree, as the guest will; a
 * relative one may not climb above the tree's top. 0 or -1.
 */
int
image_tar_link_inside(const char *path, const char *target)
{
	const char	*p = target, *end;
	long		 depth = 0;

	if (target == NULL || *target == '\0')
		return (-1);
	if (target[0] == '/')
		return (0);
	/* Where the link is: one level per component of its directory. */
	for (end = path; (end = strchr(end, '/')) != NULL; end++)
		depth++;
	while (*p != '\0') {
		if ((end = strchr(p, '/')) == NULL)
			end = p + strlen(p);
		if (end - p == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return (-1);
		} else if (end - p > 0 && !(end - p == 1 && p[0] == '.'))
			depth++;
		p = *end == '/' ? end + 1 : end;
	}
	return (0);
}

/* A whiteout of an OCI layer: its path to remove, or its opaque dir. */
static int
image_tar_whiteout(struct image_tree *t, const char *path, int layer,
    struct buf *rm, struct buf *opq)
{
	const char	*base = strrchr(path, '/');
	char		*victim;
	size_t		 dlen;

	base = base != NULL ? base + 1 : path;
	if (strncmp(base, IMAGE_TAR_WH, strlen(IMAGE_TAR_WH)) != 0)
		return (0);
	dlen = base - path;
	if (strcmp(base, IMAGE_TAR_OPQ) == 0) {
		victim = xstrndup(path, dlen > 0 ? dlen - 1 : 0);
		buf_printf(opq, "./%s", victim);
		buf_add(opq, "", 1);
	} else {
		xasprintf(&victim, "%.*s%s", (int)dlen, path,
		    base + strlen(IMAGE_TAR_WH));
		buf_printf(rm, "./%s", victim);
		buf_add(rm, "", 1);
	}
	image_tree_link_drop(t, victim, 1, layer);
	image_tree_xattr_drop(t, victim, 1, layer);
	free(victim);
	return (1);
}

/* The entry's xattrs, kept for the file system (those of a layer above
 * replace these). */
static void
image_tar_xattrs(struct image_tree *t, struct archive_entry *e,
    const char *path, int layer)
{
	struct image_tree_rec	*x;
	const char		*name;
	const void		*value;
	size_t			 len;

	image_tree_xattr_drop(t, path, 0, -1);
	if (archive_entry_xattr_reset(e) == 0)
		return;
	while (archive_entry_xattr_next(e, &name, &value, &len) ==
	    ARCHIVE_OK) {
		t->xattrs = xreallocarray(t->xattrs, t->nxattrs + 1,
		    sizeof *t->xattrs);
		x = &t->xattrs[t->nxattrs++];
		x->path = xstrdup(path);
		x->layer = layer;
		x->name = xstrdup(name);
		x->value = xmalloc(len > 0 ? len : 1);
		memcpy(x->value, value, len);
		x->len = len;
	}
}

/*
 * One entry of layer number layer: checked, then recorded; 1 for an OCI
 * whiteout (its path gone to rm or opq: not to extract), 0 for an entry
 * to extract, -1 with *cause naming it.
 */
int
image_tree_entry(struct image_tree *t, struct archive_entry *e, int layer,
    int oci, struct buf *rm, struct buf *opq, char **cause)
{
	const char	*name = archive_entry_pathname(e), *why = NULL;
	const char	*hard = archive_entry_hardlink(e);
	const char	*sym = archive_entry_symlink(e);
	char		*path, *via = NULL, *hpath = NULL;
	mode_t		 type = archive_entry_filetype(e);
	int64_t		 size;

	if ((path = image_tar_path(name, &why)) == NULL) {
		xasprintf(cause, "entry \"%s\": %s", name != NULL ? name : "",
		    why);
		return (-1);
	}
	if ((via = image_tree_through(t, path)) != NULL) {
		xasprintf(cause, "entry \"%s\" lies under the symlink \"%s\"",
		    name, via);
		goto fail;
	}
	if (oci && image_tar_whiteout(t, path, layer, rm, opq)) {
		free(path);
		return (1);
	}
	if (hard != NULL) {
		if ((hpath = image_tar_path(hard, &why)) == NULL) {
			xasprintf(cause, "entry \"%s\": hard link to \"%s\", "
			    "out of the tree (%s)", name, hard, why);
			goto fail;
		}
		if (*hpath == '\0' ||
		    (via = image_tree_through(t, hpath)) != NULL) {
			xasprintf(cause, "entry \"%s\": hard link to \"%s\" "
			    "through a symlink, or to the tree itself", name,
			    hard);
			goto fail;
		}
	} else if (type == AE_IFLNK) {
		if (*path == '\0' || image_tar_link_inside(path, sym) == -1) {
			xasprintf(cause, "entry \"%s\": symlink to \"%s\" "
			    "points out of the tree", name, sym != NULL ? sym :
			    "");
			goto fail;
		}
	}
	if (*path != '\0') {
		if (type == AE_IFLNK && hard == NULL)
			image_tree_link_add(t, path, layer);
		else if (image_tree_is_link(t, path))
			image_tree_link_drop(t, path, 0, -1);
	}
	image_tar_xattrs(t, e, path, layer);
	size = archive_entry_size(e);
	if (type == AE_IFREG && hard == NULL && size > 0)
		t->bytes += ((uint64_t)size + IMAGE_TAR_BLOCK - 1) /
		    IMAGE_TAR_BLOCK * IMAGE_TAR_BLOCK;
	else if (type == AE_IFDIR)
		t->bytes += IMAGE_TAR_BLOCK;
	t->entries++;
	free(path);
	free(hpath);
	return (0);
fail:
	free(via);
	free(path);
	free(hpath);
	return (-1);
}

/*
 * Check the archive at file (what names it in messages: its path, or a
 * layer's digest) as layer number layer of the tree; an OCI layer's
 * whiteouts go to rm and opq, NUL-terminated "./PATH"s. -1 with *cause.
 */
int
image_tree_add(struct image_tree *t, const char *file, const char *what,
    int layer, int oci, struct buf *rm, struct buf *opq, char **cause)
{
	struct archive		*a;
	struct archive_entry	*e;
	const char		*err;
	int			 r, n = 0, ret = -1;

	a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open_filename(a, file, 64 * 1024) != ARCHIVE_OK) {
		err = archive_error_string(a) != NULL ?
		    archive_error_string(a) : "cannot read";
		xasprintf(cause, "%s: %s%s", what, strstr(err,
		    "Unrecognized archive format") != NULL ?
		    "not a tar archive: " : "", err);
		goto out;
	}
	for (;;) {
		r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			xasprintf(cause, "%s: %s%s", what, n == 0 ?
			    "not a tar archive: " : "", archive_error_string(a));
			goto out;
		}
		if (image_tree_entry(t, e, layer, oci, rm, opq, cause) == -1) {
			char *c = *cause;

			xasprintf(cause, "%s: %s", what, c);
			free(c);
			goto out;
		}
		n++;
	}
	ret = 0;
out:
	archive_read_free(a);
	return (ret);
}

/*
 * The xattrs left, as a debugfs script setting each from a file of its
 * own under dir. Names debugfs's parser cannot take are refused.
 */
int
image_tree_xattr_script(const struct image_tree *t, const char *dir,
    struct buf *cmds, char **cause)
{
	const struct image_tree_rec	*x;
	char				*vf;
	size_t				 i;
	int				 fd;

	for (i = 0; i < t->nxattrs; i++) {
		x = &t->xattrs[i];
		if (strpbrk(x->path, "\"\\\n") != NULL ||
		    strpbrk(x->name, "\"\\\n ") != NULL) {
			xasprintf(cause, "entry \"%s\": xattr %s: a name debugfs "
			    "cannot set", x->path, x->name);
			return (-1);
		}
		xasprintf(&vf, "%s/xattr.%zu", dir, i);
		if ((fd = open(vf, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600)) ==
		    -1 || write(fd, x->value, x->len) != (ssize_t)x->len) {
			xasprintf(cause, "%s: %s", vf, strerror(errno));
			if (fd != -1)
				close(fd);
			free(vf);
			return (-1);
		}
		close(fd);
		buf_printf(cmds, "ea_set -f \"%s\" \"/%s\" \"%s\"\n", vf,
		    x->path, x->name);
		free(vf);
	}
	return (0);
}

size_t
image_tree_nxattrs(const struct image_tree *t)
{
	return (t->nxattrs);
}
