/*
 * Where a docker:// image is kept in images_dir: oci-HEX16.qcow2 (HEX the
 * manifest's digest) with its .meta, and .oci/refs/, what each tag
 * resolved to when it was pulled, so that a first use needs no request;
 * the blob cache's lock, size and pruning.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_int.h"

/* The file of the image pulled for manifest digest hex, in dir. */
char *
image_reg_image_path(const char *dir, const char *hex)
{
	char	*path;

	xasprintf(&path, "%s/oci-%.16s.qcow2", dir, hex);
	return (path);
}

/* Where a tag's last resolution is remembered: .oci/refs/HEX(canon). */
char *
image_reg_ref_path(const char *oci, const char *canon)
{
	unsigned char	 d[32];
	char		*hex, *path;

	mbedtls_sha256_ret((const unsigned char *)canon, strlen(canon), d, 0);
	hex = token_hex_of(d, 16);
	xasprintf(&path, "%s/refs/%s", oci, hex);
	free(hex);
	return (path);
}

/* What tag canon resolved to (digest), for the next use without a request. */
void
image_reg_ref_remember(const char *oci, const char *canon, const char *digest)
{
	char	*path, *d;

	path = image_reg_ref_path(oci, canon);
	xasprintf(&d, "%s/refs", oci);
	if (util_mkdir_p(d, 0700) == -1 || util_write_file(path, digest) == -1)
		log_warn("%s", path);
	free(d);
	free(path);
}

/* The image of digest "sha256:HEX" if dir has it whole, else NULL. */
char *
image_reg_have(const char *dir, const char *digest)
{
	struct image_info	 ii;
	struct stat		 st;
	char			*path, *meta;
	int			 ok = 0;

	path = image_reg_image_path(dir, digest + 7);
	xasprintf(&meta, "%s.meta", path);
	if (image_meta_read(meta, &ii) == 0) {
		ok = ii.sha256 != NULL && strcmp(ii.sha256, digest + 7) == 0 &&
		    stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size == ii.size;
		image_info_free(&ii);
	}
	free(meta);
	if (!ok) {
		free(path);
		return (NULL);
	}
	return (path);
}

/*
 * docker://REF's image if images_dir has it: by its digest, or by what
 * its tag resolved to when it was pulled. Makes no request.
 */
char *
image_reg_cached(const struct image_req *req)
{
	struct image_ref	 ref;
	char			*dir, *cause, *rp, *digest, *path = NULL;

	if (req->out != NULL ||
	    image_ref_parse(req->url + 9, &ref, &cause) == -1) {
		if (req->out == NULL)
			free(cause);
		return (NULL);
	}
	dir = req->dir != NULL ? xstrdup(req->dir) : image_default_dir();
	if (dir != NULL && ref.digest != NULL)
		path = image_reg_have(dir, ref.digest);
	else if (dir != NULL) {
		xasprintf(&cause, "%s/%s", dir, IMAGE_REG_DIR);
		rp = image_reg_ref_path(cause, ref.canon);
		digest = util_read_file(rp, NULL, 128);
		if (digest != NULL && image_ref_digest_ok(digest))
			path = image_reg_have(dir, digest);
		free(digest);
		free(rp);
		free(cause);
	}
	free(dir);
	image_ref_free(&ref);
	return (path);
}

/*
 * The blob cache's lock, images_dir/.oci/lock: a docker:// pull holds it
 * shared from its start to its end (its blobs, once cached, are not
 * locked one by one while the image is built from them), a prune
 * exclusive. Never waits: -1 with errno EWOULDBLOCK when it is held the
 * other way. The fd is the caller's to close.
 */
int
image_reg_lock(const char *dir, int exclusive)
{
	char	*oci, *path;
	int	 fd, saved;

	xasprintf(&oci, "%s/%s", dir, IMAGE_REG_DIR);
	xasprintf(&path, "%s/lock", oci);
	if (util_mkdir_p(oci, 0700) == -1 ||
	    (fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600)) == -1) {
		saved = errno;
		free(path);
		free(oci);
		errno = saved;
		return (-1);
	}
	free(path);
	free(oci);
	if (flock(fd, (exclusive ? LOCK_EX : LOCK_SH) | LOCK_NB) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return (-1);
	}
	return (fd);
}

/* Is name 64 hex digits, a blob's file (not its .meta or a part)? */
static int
image_reg_blob_name(const char *name)
{
	return (strlen(name) == 64 && strspn(name, "0123456789abcdef") == 64);
}

/* The blob cache's files and bytes (blobs and their .meta). */
void
image_reg_cache_size(const char *dir, uint64_t *bytes, size_t *nblobs)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		*blobs, *path;

	*bytes = 0;
	*nblobs = 0;
	xasprintf(&blobs, "%s/%s/blobs/sha256", dir, IMAGE_REG_DIR);
	if ((d = opendir(blobs)) == NULL) {
		free(blobs);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		xasprintf(&path, "%s/%s", blobs, de->d_name);
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			*bytes += (uint64_t)st.st_size;
			*nblobs += image_reg_blob_name(de->d_name);
		}
		free(path);
	}
	closedir(d);
	free(blobs);
}

/* Add the digests (hex) image oci-HEX16.qcow2's manifest names to keep. */
static void
image_reg_keep_image(const char *dir, const char *name, char ***keep,
    size_t *nkeep)
{
	struct image_manifest	 m;
	struct image_info	 ii;
	char			*meta, *path, *text, *cause;
	size_t			 len, i;

	xasprintf(&meta, "%s/%s.meta", dir, name);
	if (image_meta_read(meta, &ii) == -1) {
		free(meta);
		return;
	}
	free(meta);
	if (ii.sha256 == NULL || !image_reg_blob_name(ii.sha256)) {
		image_info_free(&ii);
		return;
	}
	xasprintf(&path, "%s/%s/blobs/sha256/%s", dir, IMAGE_REG_DIR,
	    ii.sha256);
	*keep = xreallocarray(*keep, *nkeep + 1, sizeof **keep);
	(*keep)[(*nkeep)++] = xstrdup(ii.sha256);
	text = util_read_file(path, &len, 4 * 1024 * 1024);
	if (text != NULL && image_manifest_parse(text, len, NULL, &m,
	    &cause) == 0) {
		if (!m.is_index && m.config != NULL) {
			*keep = xreallocarray(*keep, *nkeep + m.nlayers + 1,
			    sizeof **keep);
			(*keep)[(*nkeep)++] = xstrdup(m.config + 7);
			for (i = 0; i < m.nlayers; i++)
				(*keep)[(*nkeep)++] = xstrdup(m.layers[i] + 7);
		}
		image_manifest_free(&m);
	} else if (text != NULL)
		free(cause);
	free(text);
	free(path);
	image_info_free(&ii);
}

static int
image_reg_kept(char *const *keep, size_t nkeep, const char *hex)
{
	size_t	i;

	for (i = 0; i < nkeep; i++) {
		if (strncmp(keep[i], hex, 64) == 0)
			return (1);
	}
	return (0);
}

/*
 * Remove the blobs no docker:// image of dir uses (its manifest, config
 * and layers) and the tag records whose image is gone, under the cache's
 * lock taken exclusive: 1, nothing done, when a pull holds it. Parts of
 * interrupted blobs (.partial) are kept for the next pull to resume.
 * -1 with *cause.
 */
int
image_reg_prune(const char *dir, struct image_reg_pruned *pr, char **cause)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		**keep = NULL, *blobs, *refs, *path, *digest, *img;
	size_t		 nkeep = 0, i;
	int		 fd;

	memset(pr, 0, sizeof *pr);
	if ((fd = image_reg_lock(dir, 1)) == -1) {
		if (errno == EWOULDBLOCK)
			return (1);
		xasprintf(cause, "%s/%s/lock: %s", dir, IMAGE_REG_DIR,
		    strerror(errno));
		return (-1);
	}
	if ((d = opendir(dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strncmp(de->d_name, "oci-", 4) == 0 &&
			    strlen(de->d_name) == 4 + 16 + 6 &&
			    strcmp(de->d_name + 20, ".qcow2") == 0)
				image_reg_keep_image(dir, de->d_name, &keep,
				    &nkeep);
		}
		closedir(d);
	}
	xasprintf(&blobs, "%s/%s/blobs/sha256", dir, IMAGE_REG_DIR);
	if ((d = opendir(blobs)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.' ||
			    strlen(de->d_name) < 64 ||
			    strspn(de->d_name, "0123456789abcdef") != 64 ||
			    (de->d_name[64] != '\0' &&
			    strcmp(de->d_name + 64, ".meta") != 0) ||
			    image_reg_kept(keep, nkeep, de->d_name))
				continue;
			xasprintf(&path, "%s/%s", blobs, de->d_name);
			if (lstat(path, &st) == 0 && unlink(path) == 0) {
				pr->bytes += (uint64_t)st.st_size;
				pr->blobs += de->d_name[64] == '\0';
			}
			free(path);
		}
		closedir(d);
	}
	xasprintf(&refs, "%s/%s/refs", dir, IMAGE_REG_DIR);
	if ((d = opendir(refs)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			xasprintf(&path, "%s/%s", refs, de->d_name);
			digest = util_read_file(path, NULL, 128);
			img = digest != NULL && image_ref_digest_ok(digest) ?
			    image_reg_have(dir, digest) : NULL;
			if (img == NULL && unlink(path) == 0)
				pr->refs++;
			free(img);
			free(digest);
			free(path);
		}
		closedir(d);
	}
	for (i = 0; i < nkeep; i++)
		free(keep[i]);
	free(keep);
	free(refs);
	free(blobs);
	close(fd);
	return (0);
}
