/*
 * Where a docker:// image is kept in images_dir: oci-HEX16.qcow2 (HEX the
 * manifest's digest) with its .meta, and .oci/refs/, what each tag
 * resolved to when it was pulled, so that a first use needs no request.
 */
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

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
