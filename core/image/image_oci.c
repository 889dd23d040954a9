/*
 * An OCI image layout (what "skopeo copy" and "podman save --format
 * oci-dir" write) for "qsup image build oci:DIR[:TAG]": index.json names
 * the manifest (by its org.opencontainers.image.ref.name when a TAG is
 * given), the manifest names the config and the layers, each a blob under
 * blobs/sha256/ whose digest is checked before it is used. The config's
 * Env, WorkingDir, Entrypoint and Cmd become the image's defaults, in the
 * agent's own key/percent-encoded format (image_oci_conf).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "image_int.h"

#define IMAGE_OCI_JSON_MAX	(4 * 1024 * 1024)
#define IMAGE_OCI_REF_NAME	"org.opencontainers.image.ref.name"
#define IMAGE_OCI_INDEX_TYPE	"application/vnd.oci.image.index.v1+json"
#define IMAGE_OCI_DOCKER_LIST	\
	"application/vnd.docker.distribution.manifest.list.v2+json"

/* A blob's file for digest "sha256:HEX", or NULL with *cause. */
static char *
image_oci_blob(const char *dir, const char *digest, char **cause)
{
	char	*path;

	if (digest == NULL || strncmp(digest, "sha256:", 7) != 0 ||
	    !image_is_digest(digest + 7, 64)) {
		xasprintf(cause, "bad digest \"%s\" (want sha256:64 hex "
		    "digits)", digest != NULL ? digest : "");
		return (NULL);
	}
	xasprintf(&path, "%s/blobs/sha256/%s", dir, digest + 7);
	if (access(path, F_OK) == -1) {
		xasprintf(cause, "blob %s missing (%s: %s)", digest, path,
		    strerror(errno));
		free(path);
		return (NULL);
	}
	return (path);
}

/*
 * The SHA-256 of file's bytes as hex; -1 with errno. OpenSSL's, as the
 * pull's hasher: SHA-NI, about six times mbedTLS 2.28's speed here.
 */
int
image_oci_sha256(const char *file, char hex[65])
{
	EVP_MD_CTX	*c;
	unsigned char	 buf[65536], d[EVP_MAX_MD_SIZE];
	ssize_t		 n;
	int		 fd, i, ok;

	if ((fd = open(file, O_RDONLY|O_NONBLOCK|O_CLOEXEC)) == -1)
		return (-1);
	if ((c = EVP_MD_CTX_new()) == NULL)
		fatalx("EVP_MD_CTX_new failed");
	ok = EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1;
	while ((n = read(fd, buf, sizeof buf)) > 0 || (n == -1 &&
	    errno == EINTR)) {
		if (n > 0 && ok)
			ok = EVP_DigestUpdate(c, buf, (size_t)n) == 1;
	}
	close(fd);
	if (ok && n == 0)
		ok = EVP_DigestFinal_ex(c, d, NULL) == 1;
	EVP_MD_CTX_free(c);
	if (n == -1)
		return (-1);
	if (!ok) {
		errno = EIO;
		return (-1);
	}
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return (0);
}

/*
 * The blob of digest, checked: its file, or NULL with *cause. verified:
 * the layout's blobs are qsup's cache (image_registry.c), where a blob
 * is only renamed into place once it hashed to its name as it streamed:
 * hashing it again would only read it once more.
 */
char *
image_oci_blob_checked(const char *dir, const char *digest, int verified,
    char **cause)
{
	char	*path, hex[65];

	if ((path = image_oci_blob(dir, digest, cause)) == NULL)
		return (NULL);
	if (verified)
		return (path);
	if (image_oci_sha256(path, hex) == -1) {
		xasprintf(cause, "blob %s: %s", digest, strerror(errno));
		free(path);
		return (NULL);
	}
	if (strcmp(hex, digest + 7) != 0) {
		xasprintf(cause, "blob %s: digest mismatch (its bytes hash to "
		    "sha256:%s)", digest, hex);
		free(path);
		return (NULL);
	}
	return (path);
}

/* A JSON file, whole; NULL with *cause naming what. */
static json_t *
image_oci_load(const char *path, const char *what, char **cause)
{
	json_error_t	 err;
	json_t		*j;
	char		*text;
	size_t		 len;

	if ((text = util_read_file(path, &len, IMAGE_OCI_JSON_MAX)) == NULL) {
		xasprintf(cause, "%s: %s", what, strerror(errno));
		return (NULL);
	}
	j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	free(text);
	if (j == NULL || !json_is_object(j)) {
		xasprintf(cause, "%s: not a JSON object%s%s", what,
		    j == NULL ? ": " : "", j == NULL ? err.text : "");
		json_decref(j);
		return (NULL);
	}
	return (j);
}

/* The descriptor of an index's manifests to take: tag's, else the one. */
static json_t *
image_oci_pick(json_t *index, const char *tag, const char *what,
    char **cause)
{
	json_t		*ms = json_object_get(index, "manifests"), *m, *pick = NULL;
	const char	*name, *arch, *os;
	size_t		 i;

	if (!json_is_array(ms) || json_array_size(ms) == 0) {
		xasprintf(cause, "%s: no manifests", what);
		return (NULL);
	}
	json_array_foreach(ms, i, m) {
		name = json_string_value(json_object_get(json_object_get(m,
		    "annotations"), IMAGE_OCI_REF_NAME));
		arch = json_string_value(json_object_get(json_object_get(m,
		    "platform"), "architecture"));
		os = json_string_value(json_object_get(json_object_get(m,
		    "platform"), "os"));
		if (tag != NULL && (name == NULL || strcmp(name, tag) != 0))
			continue;
		if (arch != NULL && (strcmp(arch, "amd64") != 0 ||
		    (os != NULL && strcmp(os, "linux") != 0)))
			continue;
		if (pick != NULL && tag == NULL) {
			xasprintf(cause, "%s: several manifests: name one "
			    "(oci:DIR:TAG)", what);
			return (NULL);
		}
		if (pick == NULL)
			pick = m;
	}
	if (pick == NULL)
		xasprintf(cause, "%s: no linux/amd64 manifest%s%s", what,
		    tag != NULL ? " tagged " : "", tag != NULL ? tag : "");
	return (pick);
}

void
image_oci_free(struct image_oci *o)
{
	size_t	i;

	for (i = 0; i < o->nlayers; i++) {
		free(o->layers[i]);
		free(o->digests[i]);
	}
	free(o->layers);
	free(o->digests);
	buf_free(&o->conf);
	memset(o, 0, sizeof *o);
}

/* The manifest: its config's defaults and its layers' checked blobs. */
static int
image_oci_manifest(const char *dir, json_t *man, struct image_oci *o,
    char **cause)
{
	json_t		*cfg = NULL, *layers, *l;
	const char	*digest;
	char		*path, *why = NULL;
	size_t		 i;
	int		 ret = -1;

	digest = json_string_value(json_object_get(json_object_get(man,
	    "config"), "digest"));
	if ((path = image_oci_blob_checked(dir, digest, o->verified,
	    cause)) == NULL)
		return (-1);
	cfg = image_oci_load(path, "the image config", cause);
	free(path);
	if (cfg == NULL)
		return (-1);
	if (image_oci_conf(cfg, &o->conf, &why) == -1) {
		xasprintf(cause, "the image config %s: %s", digest, why);
		free(why);
		goto out;
	}
	layers = json_object_get(man, "layers");
	if (!json_is_array(layers)) {
		xasprintf(cause, "the manifest has no layers");
		goto out;
	}
	json_array_foreach(layers, i, l) {
		digest = json_string_value(json_object_get(l, "digest"));
		if ((path = image_oci_blob_checked(dir, digest, o->verified,
		    cause)) == NULL)
			goto out;
		o->layers = xreallocarray(o->layers, o->nlayers + 1,
		    sizeof *o->layers);
		o->digests = xreallocarray(o->digests, o->nlayers + 1,
		    sizeof *o->digests);
		o->layers[o->nlayers] = path;
		o->digests[o->nlayers++] = xstrdup(digest);
	}
	ret = 0;
out:
	json_decref(cfg);
	return (ret);
}

/*
 * The layout at spec ("DIR" or "DIR:TAG"): its manifest's layers (checked
 * blobs, lowest first) and config. -1 with *cause.
 */
int
image_oci_open(const char *spec, int verified, struct image_oci *o,
    char **cause)
{
	struct stat	 st;
	json_t		*index = NULL, *m, *man = NULL;
	const char	*tag = NULL, *digest, *type;
	char		*dir, *colon, *path;
	int		 depth, ret = -1;

	memset(o, 0, sizeof *o);
	o->verified = verified;
	dir = xstrdup(spec);
	if (stat(dir, &st) == -1 && (colon = strrchr(dir, ':')) != NULL) {
		*colon = '\0';
		tag = spec + (colon - dir) + 1;
	}
	xasprintf(&path, "%s/index.json", dir);
	index = image_oci_load(path, path, cause);
	free(path);
	if (index == NULL)
		goto out;
	/* An index may name an index (one per platform): two levels. */
	for (depth = 0; depth < 2; depth++) {
		if ((m = image_oci_pick(index, depth == 0 ? tag : NULL,
		    depth == 0 ? "index.json" : "the nested index",
		    cause)) == NULL)
			goto out;
		digest = json_string_value(json_object_get(m, "digest"));
		type = json_string_value(json_object_get(m, "mediaType"));
		if ((path = image_oci_blob_checked(dir, digest, verified,
		    cause)) == NULL)
			goto out;
		man = image_oci_load(path, digest, cause);
		free(path);
		if (man == NULL)
			goto out;
		if (type == NULL || (strcmp(type, IMAGE_OCI_INDEX_TYPE) != 0 &&
		    strcmp(type, IMAGE_OCI_DOCKER_LIST) != 0))
			break;
		json_decref(index);
		index = man;
		man = NULL;
	}
	if (man == NULL) {
		xasprintf(cause, "index.json: indexes nested too deep");
		goto out;
	}
	ret = image_oci_manifest(dir, man, o, cause);
out:
	if (ret == -1)
		image_oci_free(o);
	json_decref(man);
	json_decref(index);
	free(dir);
	return (ret);
}

/* An array of strings of the config, each a line of key; -1 with *why. */
static int
image_oci_strings(json_t *c, const char *name, const char *key,
    struct buf *b, char **why)
{
	json_t		*a = json_object_get(c, name), *s;
	const char	*v;
	size_t		 i;

	if (a == NULL || json_is_null(a))
		return (0);
	if (!json_is_array(a)) {
		xasprintf(why, "%s is not an array of strings", name);
		return (-1);
	}
	json_array_foreach(a, i, s) {
		v = json_string_value(s);
		if (v == NULL || strlen(v) != json_string_length(s)) {
			xasprintf(why, "%s[%zu] is not a string (or holds a "
			    "NUL)", name, i);
			return (-1);
		}
		if (strcmp(key, "env") == 0 && (v[0] == '=' ||
		    strchr(v, '=') == NULL)) {
			xasprintf(why, "Env[%zu] \"%.100s\" is not NAME=VALUE",
			    i, v);
			return (-1);
		}
		buf_seed_line(b, key, v);
	}
	return (0);
}

/*
 * An OCI image config's defaults as image.conf lines: "env NAME=VALUE",
 * "cwd DIR", "entrypoint ARG" and "cmd ARG" (in order, repeated).
 * -1 with *why.
 */
int
image_oci_conf(json_t *cfg, struct buf *b, char **why)
{
	json_t		*c = json_object_get(cfg, "config"), *wd;
	const char	*v;

	buf_puts(b, "# written by qsup image build, from the OCI config\n");
	if (c == NULL || json_is_null(c))
		return (0);
	if (!json_is_object(c)) {
		xasprintf(why, "\"config\" is not an object");
		return (-1);
	}
	if (image_oci_strings(c, "Env", "env", b, why) == -1 ||
	    image_oci_strings(c, "Entrypoint", "entrypoint", b, why) == -1 ||
	    image_oci_strings(c, "Cmd", "cmd", b, why) == -1)
		return (-1);
	wd = json_object_get(c, "WorkingDir");
	if (wd != NULL && !json_is_null(wd)) {
		v = json_string_value(wd);
		if (v == NULL || strlen(v) != json_string_length(wd) ||
		    (*v != '\0' && *v != '/')) {
			xasprintf(why, "WorkingDir is not an absolute path");
			return (-1);
		}
		if (*v != '\0')
			buf_seed_line(b, "cwd", v);
	}
	return (0);
}
