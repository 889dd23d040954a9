/*
 * What a registry pull reads from the network or a user: an image
 * reference, a WWW-Authenticate challenge, an auth file and a manifest,
 * each given the same bytes. A reference taken has a registry of
 * host[:port] characters and a lower-case repository; a challenge taken
 * has a scheme; a manifest taken is an index with a sha256 digest picked
 * or an image of at least one layer, every digest sha256:64 hex.
 */
#include <stdlib.h>
#include <string.h>

#include "image.h"

static void
image_ref_fuzz_ref(const char *s)
{
	struct image_ref	 r;
	char			*cause = NULL;
	const char		*p;

	if (image_ref_parse(s, &r, &cause) == -1) {
		if (cause == NULL)
			abort();
		free(cause);
		return;
	}
	for (p = r.repo; *p != '\0'; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (unsigned char)*p <= ' ')
			abort();
	}
	if (strchr(r.registry, '/') != NULL || r.canon == NULL ||
	    (r.tag == NULL && r.digest == NULL) ||
	    (r.digest != NULL && !image_ref_digest_ok(r.digest)))
		abort();
	image_ref_free(&r);
}

static void
image_ref_fuzz_manifest(const char *s, size_t len)
{
	struct image_manifest	 m;
	char			*cause = NULL;
	size_t			 i;

	if (image_manifest_parse(s, len, NULL, &m, &cause) == -1) {
		if (cause == NULL)
			abort();
		free(cause);
		return;
	}
	if (m.is_index && !image_ref_digest_ok(m.pick))
		abort();
	if (!m.is_index && (m.nlayers == 0 || !image_ref_digest_ok(m.config)))
		abort();
	for (i = 0; i < m.nlayers; i++) {
		if (!image_ref_digest_ok(m.layers[i]))
			abort();
	}
	image_manifest_free(&m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct image_chal	 c;
	char			*s, *a;
	int			 bad;

	s = xmalloc(len + 1);
	memcpy(s, data, len);
	s[len] = '\0';
	image_ref_fuzz_ref(s);
	if (image_chal_parse(s, &c) == 0) {
		if (c.scheme == NULL || *c.scheme == '\0')
			abort();
		image_chal_free(&c);
	}
	a = image_auth_find(s, len, "docker.io", &bad);
	if (a != NULL && strpbrk(a, "\r\n ") != NULL)
		abort();
	free(a);
	image_ref_fuzz_manifest(s, len);
	free(s);
	return (0);
}
