/*
 * What a registry pull reads from the network or a user: an image
 * reference, a WWW-Authenticate challenge, an auth file and a manifest,
 * a credential helper's output, each given the same bytes. A reference taken has a registry of
 * host[:port] characters and a lower-case repository; a challenge taken
 * has a scheme; a manifest taken is an index with a sha256 digest picked
 * or an image of at least one layer, every digest sha256:64 hex. And a
 * registry's response: a header's value, Retry-After, its error body.
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

/*
 * A response's bits: a header line's value (no line end kept), the error
 * body's words (no control byte for the terminal), Retry-After (-1, or
 * 1 to the most allowed).
 */
static void
image_ref_fuzz_response(const char *s, size_t len)
{
	char	*v;
	long	 r;
	size_t	 n;

	if ((v = image_manifest_header(s, len, "Retry-After")) != NULL) {
		n = strlen(v);
		if (n > 0 && (v[n - 1] == '\r' || v[n - 1] == '\n'))
			abort();
		r = image_manifest_retry_after(v, 60);
		if (r != -1 && (r < 1 || r > 60))
			abort();
		free(v);
	}
	r = image_manifest_retry_after(s, 60);
	if (r != -1 && (r < 1 || r > 60))
		abort();
	v = image_manifest_errbody(s, len);
	for (n = 0; v[n] != '\0'; n++) {
		if ((unsigned char)v[n] < 0x20 || (unsigned char)v[n] == 0x7f)
			abort();
	}
	free(v);
}

/*
 * A credential helper's output and an auth file's helper name: base64
 * taken (no line end, no space); a name that is no path, nothing but
 * letters, digits, '.', '_', '-'.
 */
static void
image_ref_fuzz_cred(const char *s, size_t len)
{
	char	*a, *cause, *p;

	if ((a = image_cred_parse(s, len, &cause)) == NULL) {
		if (cause == NULL)
			abort();
		free(cause);
	} else {
		if (*a == '\0' || strspn(a, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789+/=") != strlen(a))
			abort();
		free(a);
	}
	if ((a = image_cred_helper(s, len, "127.0.0.1:5000", &cause)) !=
	    NULL) {
		if (cause != NULL || *a == '.' || strchr(a, '/') != NULL)
			abort();
		for (p = a; *p != '\0'; p++) {
			if ((unsigned char)*p <= ' ' || *p == 0x7f)
				abort();
		}
		free(a);
	}
	free(cause);
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
	image_ref_fuzz_response(s, len);
	if (image_chal_parse(s, &c) == 0) {
		if (c.scheme == NULL || *c.scheme == '\0')
			abort();
		image_chal_free(&c);
	}
	a = image_auth_find(s, len, "docker.io", &bad);
	if (a != NULL && strpbrk(a, "\r\n ") != NULL)
		abort();
	free(a);
	image_ref_fuzz_cred(s, len);
	image_ref_fuzz_manifest(s, len);
	free(s);
	return (0);
}
