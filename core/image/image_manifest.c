/*
 * A registry's manifest, as its bytes came (fuzzed): an OCI index or a
 * Docker manifest list, resolved to this host's platform, or an image
 * manifest (OCI or Docker schema 2): its config and layers, each a digest
 * and a size, the layers plain, gzip or zstd tars. Schema 1 and foreign
 * layers are refused by name. And the rest of a registry's answers: a
 * header's value, its JSON error body, a 429's Retry-After.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#include <jansson.h>

#include "image_int.h"

#if defined(__x86_64__)
#define IMAGE_MAN_ARCH	"amd64"
#elif defined(__aarch64__)
#define IMAGE_MAN_ARCH	"arm64"
#else
#define IMAGE_MAN_ARCH	"unknown"
#endif

static const char *const image_man_layer_types[] = {
	"application/vnd.oci.image.layer.v1.tar",
	"application/vnd.oci.image.layer.v1.tar+gzip",
	"application/vnd.oci.image.layer.v1.tar+zstd",
	"application/vnd.docker.image.rootfs.diff.tar.gzip",
	"application/vnd.docker.image.rootfs.diff.tar",
	NULL
};

/* The platform an index is resolved to: linux/ARCH. */
const char *
image_manifest_arch(void)
{
	return (IMAGE_MAN_ARCH);
}

void
image_manifest_free(struct image_manifest *m)
{
	size_t	i;

	free(m->pick);
	free(m->config);
	for (i = 0; i < m->nlayers; i++)
		free(m->layers[i]);
	free(m->layers);
	free(m->sizes);
	memset(m, 0, sizeof *m);
}

/* A descriptor's digest and size; -1 with *cause naming what. */
static int
image_manifest_desc(json_t *d, const char *what, char **digest,
    uint64_t *size, char **cause)
{
	const char	*s = json_string_value(json_object_get(d, "digest"));
	json_t		*z = json_object_get(d, "size");

	if (!image_ref_digest_ok(s)) {
		xasprintf(cause, "%s: its digest is not sha256:HEX", what);
		return (-1);
	}
	if (!json_is_integer(z) || json_integer_value(z) < 0) {
		xasprintf(cause, "%s: no size", what);
		return (-1);
	}
	*digest = xstrdup(s);
	*size = (uint64_t)json_integer_value(z);
	return (0);
}

/* An index's entry for linux/ARCH into m->pick; -1 naming what it has. */
static int
image_manifest_pick(json_t *ms, struct image_manifest *m, char **cause)
{
	json_t		*e, *pl;
	const char	*os, *arch;
	struct buf	 had = { 0 };
	uint64_t	 size;
	size_t		 i;

	json_array_foreach(ms, i, e) {
		pl = json_object_get(e, "platform");
		os = json_string_value(json_object_get(pl, "os"));
		arch = json_string_value(json_object_get(pl, "architecture"));
		if (os == NULL || arch == NULL)
			continue;
		if (strcmp(os, "linux") == 0 && strcmp(arch, IMAGE_MAN_ARCH) ==
		    0) {
			buf_free(&had);
			return (image_manifest_desc(e, "the index's linux/"
			    IMAGE_MAN_ARCH " entry", &m->pick, &size, cause));
		}
		if (had.len < 512)
			buf_printf(&had, "%s%.32s/%.32s", had.len > 0 ? ", " :
			    "", os, arch);
	}
	xasprintf(cause, "no manifest for this platform, linux/%s (the "
	    "index has: %s)", IMAGE_MAN_ARCH, had.len > 0 ? had.data :
	    "none");
	buf_free(&had);
	return (-1);
}

/* An image manifest's config and layers into m. */
static int
image_manifest_image(json_t *j, struct image_manifest *m, char **cause)
{
	json_t		*ls = json_object_get(j, "layers"), *l;
	const char	*t;
	char		 what[64];
	size_t		 i, k;

	if (image_manifest_desc(json_object_get(j, "config"), "the config",
	    &m->config, &m->config_size, cause) == -1)
		return (-1);
	if (!json_is_array(ls) || json_array_size(ls) == 0 ||
	    json_array_size(ls) > 1000) {
		xasprintf(cause, "the manifest has no layers (or over 1000)");
		return (-1);
	}
	m->layers = xcalloc(json_array_size(ls), sizeof *m->layers);
	m->sizes = xcalloc(json_array_size(ls), sizeof *m->sizes);
	json_array_foreach(ls, i, l) {
		t = json_string_value(json_object_get(l, "mediaType"));
		for (k = 0; t != NULL && image_man_layer_types[k] != NULL; k++) {
			if (strcmp(t, image_man_layer_types[k]) == 0)
				break;
		}
		if (t == NULL || image_man_layer_types[k] == NULL) {
			xasprintf(cause, "layer %zu: media type \"%.100s\" is "
			    "not a tar, gzip or zstd layer (foreign layers are "
			    "not fetched)", i, t != NULL ? t : "");
			return (-1);
		}
		snprintf(what, sizeof what, "layer %zu", i);
		if (image_manifest_desc(l, what, &m->layers[i], &m->sizes[i],
		    cause) == -1)
			return (-1);
		m->nlayers++;
	}
	return (0);
}

/*
 * A manifest's bytes (ctype: the response's Content-Type, or NULL): an
 * index (m->pick, this platform's manifest) or an image (m->config,
 * m->layers). -1 with *cause.
 */
int
image_manifest_parse(const char *text, size_t len, const char *ctype,
    struct image_manifest *m, char **cause)
{
	json_error_t	 err;
	json_t		*j, *ms;
	json_int_t	 v;
	const char	*t;
	int		 ret = -1;

	memset(m, 0, sizeof *m);
	if ((j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err)) == NULL ||
	    !json_is_object(j)) {
		xasprintf(cause, "the manifest is not a JSON object%s%s",
		    j == NULL ? ": " : "", j == NULL ? err.text : "");
		goto out;
	}
	v = json_integer_value(json_object_get(j, "schemaVersion"));
	t = json_string_value(json_object_get(j, "mediaType"));
	if (t == NULL)
		t = ctype;
	if (v == 1 || (t != NULL && strstr(t, "distribution.manifest.v1") != NULL)) {
		xasprintf(cause, "a Docker schema 1 manifest: not supported "
		    "(only schema 2 and OCI)");
		goto out;
	}
	if (v != 2) {
		xasprintf(cause, "the manifest's schemaVersion is not 2");
		goto out;
	}
	if ((ms = json_object_get(j, "manifests")) != NULL) {
		if (!json_is_array(ms)) {
			xasprintf(cause, "the index's manifests is not an "
			    "array");
			goto out;
		}
		m->is_index = 1;
		ret = image_manifest_pick(ms, m, cause);
	} else
		ret = image_manifest_image(j, m, cause);
out:
	if (ret == -1)
		image_manifest_free(m);
	json_decref(j);
	return (ret);
}

/* A header value of line if it is name's (no CRLF, no NUL), else NULL. */
char *
image_manifest_header(const char *data, size_t n, const char *name)
{
	size_t	k = strlen(name);

	if (n <= k + 1 || strncasecmp(data, name, k) != 0 || data[k] != ':')
		return (NULL);
	data += k + 1;
	n = strnlen(data, n - (k + 1));	/* a NUL ends it: not kept */
	while (n > 0 && (*data == ' ' || *data == '\t')) {
		data++;
		n--;
	}
	while (n > 0 && (data[n - 1] == '\r' || data[n - 1] == '\n'))
		n--;
	return (xstrndup(data, n));
}

/*
 * A registry's words go to a terminal: its control bytes (an escape
 * sequence, say) become '?'.
 */
static void
image_manifest_printable(char *s)
{
	for (; *s != '\0'; s++) {
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			*s = '?';
	}
}

/*
 * The registry's own words for a failure, from its JSON error body
 * ({"errors": [{"code", "message"}]}): ", CODE: message", or "".
 */
char *
image_manifest_errbody(const char *data, size_t len)
{
	json_t		*j, *e;
	const char	*code, *msg;
	char		*s = NULL;

	j = json_loadb(data, len, 0, NULL);
	e = json_array_get(json_object_get(j, "errors"), 0);
	code = json_string_value(json_object_get(e, "code"));
	msg = json_string_value(json_object_get(e, "message"));
	if (code != NULL && strcspn(code, "\r\n") == strlen(code) &&
	    (msg == NULL || strcspn(msg, "\r\n") == strlen(msg)))
		xasprintf(&s, ", %.64s%s%.200s", code, msg != NULL ? ": " : "",
		    msg != NULL ? msg : "");
	json_decref(j);
	if (s == NULL)
		return (xstrdup(""));
	image_manifest_printable(s);
	return (s);
}

/*
 * Seconds a 429's Retry-After asks (a number or an HTTP date; none: 1),
 * or -1 when it asks more than max seconds (the next endpoint, then).
 */
long
image_manifest_retry_after(const char *v, long max)
{
	char		*end;
	long		 s;
	time_t		 t;

	if (v == NULL || *v == '\0')
		return (1);
	if (*v >= '0' && *v <= '9') {
		s = strtol(v, &end, 10);
		if (*end != '\0')
			return (1);
	} else {
		if ((t = curl_getdate(v, NULL)) == -1)
			return (1);
		s = (long)(t - time(NULL));
	}
	if (s > max)
		return (-1);
	return (s < 1 ? 1 : s);
}
