/*
 * What an OCI registry pull reads from untrusted text: references as
 * docker writes them, WWW-Authenticate challenges, auth files, the
 * endpoints of registries.conf, and manifests (indexes resolved to this
 * host's platform, schema 1 and foreign layers refused). The pulls
 * themselves are tests/integration/oci_test.sh's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "image.h"

#define D64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void
ref_is(const char *in, const char *reg, const char *repo, const char *tag,
    const char *digest)
{
	struct image_ref	 r;
	char			*cause = NULL;

	cr_assert_eq(image_ref_parse(in, &r, &cause), 0, "%s: %s", in, cause);
	cr_assert_str_eq(r.registry, reg, "%s", in);
	cr_assert_str_eq(r.repo, repo, "%s", in);
	if (tag == NULL)
		cr_assert_null(r.tag, "%s", in);
	else
		cr_assert_str_eq(r.tag, tag, "%s", in);
	if (digest == NULL)
		cr_assert_null(r.digest, "%s", in);
	else
		cr_assert_str_eq(r.digest, digest, "%s", in);
	image_ref_free(&r);
}

Test(image_ref, docker_forms)
{
	ref_is("debian:bookworm", "docker.io", "library/debian", "bookworm",
	    NULL);
	ref_is("debian", "docker.io", "library/debian", "latest", NULL);
	ref_is("user/app", "docker.io", "user/app", "latest", NULL);
	ref_is("index.docker.io/library/busybox:1", "docker.io",
	    "library/busybox", "1", NULL);
	ref_is("ghcr.io/o/n:tag", "ghcr.io", "o/n", "tag", NULL);
	ref_is("localhost/app", "localhost", "app", "latest", NULL);
	ref_is("127.0.0.1:5000/t/x:1", "127.0.0.1:5000", "t/x", "1", NULL);
	ref_is("name@sha256:" D64, "docker.io", "library/name", NULL,
	    "sha256:" D64);
	ref_is("r.io:443/a/b:t@sha256:" D64, "r.io:443", "a/b", "t",
	    "sha256:" D64);
}

Test(image_ref, canonical)
{
	struct image_ref	 r;
	char			*cause = NULL;

	cr_assert_eq(image_ref_parse("debian:12", &r, &cause), 0);
	cr_assert_str_eq(r.canon, "docker.io/library/debian:12");
	image_ref_free(&r);
}

Test(image_ref, refused)
{
	static const char *const bad[] = {
		"", "Debian", "a b", "x:", "x:-t", "x@sha256:12",
		"x@md5:" D64, "h.io:/x", "h.io:123456/x", "a//b", "/a", "a/",
		"x:" "t\n", "-a", "a/.b",
	};
	struct image_ref	 r;
	char			*cause;
	size_t			 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		cr_assert_eq(image_ref_parse(bad[i], &r, &cause), -1, "\"%s\"",
		    bad[i]);
		cr_assert_not_null(cause);
		free(cause);
	}
}

Test(image_chal, bearer_and_basic)
{
	struct image_chal	 c;

	cr_assert_eq(image_chal_parse("Bearer realm=\"https://auth.docker.io/"
	    "token\",service=\"registry.docker.io\",scope=\"repository:library/"
	    "debian:pull\"", &c), 0);
	cr_assert_str_eq(c.scheme, "Bearer");
	cr_assert_str_eq(c.realm, "https://auth.docker.io/token");
	cr_assert_str_eq(c.service, "registry.docker.io");
	cr_assert_str_eq(c.scope, "repository:library/debian:pull");
	image_chal_free(&c);
	cr_assert_eq(image_chal_parse("Basic realm=\"a \\\"q\\\" b\"", &c), 0);
	cr_assert_str_eq(c.scheme, "Basic");
	cr_assert_str_eq(c.realm, "a \"q\" b");
	image_chal_free(&c);
	cr_assert_eq(image_chal_parse("Bearer realm=\"unterminated", &c), -1);
	cr_assert_eq(image_chal_parse("", &c), -1);
	cr_assert_eq(image_chal_parse("Bearer =x", &c), -1);
}

Test(image_auth, find)
{
	const char	*t = "{\"auths\":{\"r.io\":{\"auth\":\"dTpw\"},"
	    "\"https://index.docker.io/v1/\":{\"auth\":\"aDpw\"},"
	    "\"bad.io\":{\"auth\":\"a\\nb\"}}}";
	char		*a;
	int		 bad;

	a = image_auth_find(t, strlen(t), "r.io", &bad);
	cr_assert_str_eq(a, "dTpw");
	free(a);
	a = image_auth_find(t, strlen(t), "docker.io", &bad);
	cr_assert_str_eq(a, "aDpw");
	free(a);
	cr_assert_null(image_auth_find(t, strlen(t), "none.io", &bad));
	cr_assert_eq(bad, 0);
	cr_assert_null(image_auth_find(t, strlen(t), "bad.io", &bad));
	cr_assert_eq(bad, 1);
	cr_assert_null(image_auth_find("[", 1, "r.io", &bad));
	cr_assert_eq(bad, 1);
	t = "{\"auths\":{},\"credHelpers\":{\"r.io\":\"gcloud\"}}";
	cr_assert_null(image_auth_find(t, strlen(t), "r.io", &bad));
	cr_assert_eq(bad, 2, "a credential helper: said");
}

Test(image_ref, endpoints_and_mirrors)
{
	char	  path[] = "/tmp/qsup-reg-conf.XXXXXX", **u, *cause = NULL;
	size_t	  n, i;
	FILE	 *f;
	int	  fd;

	cr_assert_neq(fd = mkstemp(path), -1);
	f = fdopen(fd, "w");
	fputs("# mirrors\nmirror docker.io https://m1.example/ "
	    "http://127.0.0.1:9\ninsecure reg.lan:5000\n", f);
	fclose(f);
	setenv("QSUP_REGISTRIES_CONF", path, 1);
	cr_assert_eq(image_ref_endpoints("docker.io", NULL, 0, &u, &n, &cause), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(u[0], "https://m1.example");
	cr_assert_str_eq(u[1], "http://127.0.0.1:9");
	cr_assert_str_eq(u[2], "https://registry-1.docker.io");
	for (i = 0; i < n; i++)
		free(u[i]);
	free(u);
	cr_assert_eq(image_ref_endpoints("reg.lan:5000", NULL, 0, &u, &n, &cause), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(u[1], "http://reg.lan:5000");
	for (i = 0; i < n; i++)
		free(u[i]);
	free(u);
	cr_assert_eq(image_ref_endpoints("ghcr.io", NULL, 0, &u, &n, &cause), 0);
	cr_assert_eq(n, 1, "plain http only for loopback or insecure");
	free(u[0]);
	free(u);
	f = fopen(path, "w");
	fputs("mirror docker.io ftp://x\n", f);
	fclose(f);
	cr_assert_eq(image_ref_endpoints("docker.io", NULL, 0, &u, &n, &cause), -1);
	cr_assert(strstr(cause, ":1: mirror ftp://x") != NULL, "%s", cause);
	free(cause);
	cause = NULL;
	f = fopen(path, "w");
	fputs("mirror docker.io http://mirror.lan:5000\n", f);
	fclose(f);
	cr_assert_eq(image_ref_endpoints("docker.io", NULL, 0, &u, &n, &cause),
	    -1, "a plain http mirror that is neither loopback nor insecure");
	cr_assert(strstr(cause, ":1: mirror http://mirror.lan:5000 is plain "
	    "http") != NULL, "%s", cause);
	free(cause);
	cause = NULL;
	{
		/* The profile's mirrors replace the file's; its insecure adds. */
		char *const prof[] = { "docker.io 0 http://mirror.lan:5000",
		    "mirror.lan:5000 1" };
		char *const local[] = { "docker.io 0 http://localhost/v",
		    "mirror.lan:5000 1" };

		cr_assert_eq(image_ref_endpoints("docker.io", local, 2, &u, &n,
		    &cause), 0, "loopback with a path: %s", cause);
		cr_assert_str_eq(u[0], "http://localhost/v");
		for (i = 0; i < n; i++)
			free(u[i]);
		free(u);

		cr_assert_eq(image_ref_endpoints("docker.io", prof, 2, &u, &n,
		    &cause), 0, "%s", cause);
		cr_assert_eq(n, 2);
		cr_assert_str_eq(u[0], "http://mirror.lan:5000");
		cr_assert_str_eq(u[1], "https://registry-1.docker.io");
		for (i = 0; i < n; i++)
			free(u[i]);
		free(u);
		cr_assert_eq(image_ref_endpoints("docker.io", prof, 1, &u, &n,
		    &cause), -1);
		free(cause);
		cause = NULL;
	}
	unlink(path);
	unsetenv("QSUP_REGISTRIES_CONF");
}

static const char man_ok[] =
	"{\"schemaVersion\":2,\"mediaType\":\"application/vnd.docker."
	"distribution.manifest.v2+json\",\"config\":{\"mediaType\":\"x\","
	"\"digest\":\"sha256:" D64 "\",\"size\":7},\"layers\":[{\"mediaType\":"
	"\"application/vnd.docker.image.rootfs.diff.tar.gzip\",\"digest\":"
	"\"sha256:" D64 "\",\"size\":9},{\"mediaType\":\"application/vnd.oci."
	"image.layer.v1.tar+zstd\",\"digest\":\"sha256:" D64 "\",\"size\":3}]}";

Test(image_manifest, image)
{
	struct image_manifest	 m;
	char			*cause = NULL;

	cr_assert_eq(image_manifest_parse(man_ok, strlen(man_ok), NULL, &m,
	    &cause), 0, "%s", cause);
	cr_assert_eq(m.is_index, 0);
	cr_assert_str_eq(m.config, "sha256:" D64);
	cr_assert_eq(m.config_size, 7);
	cr_assert_eq(m.nlayers, 2);
	cr_assert_eq(m.sizes[0], 9);
	image_manifest_free(&m);
}

Test(image_manifest, index_platform)
{
	struct image_manifest	 m;
	char			*cause = NULL, *t;

	xasprintf(&t, "{\"schemaVersion\":2,\"manifests\":["
	    "{\"digest\":\"sha256:%s\",\"size\":1,\"platform\":{\"os\":\"linux\","
	    "\"architecture\":\"arm64\"}},"
	    "{\"digest\":\"sha256:%s\",\"size\":1,\"platform\":{\"os\":"
	    "\"unknown\",\"architecture\":\"unknown\"}},"
	    "{\"digest\":\"sha256:%.63s0\",\"size\":1,\"platform\":{\"os\":"
	    "\"linux\",\"architecture\":\"%s\"}}]}", D64, D64, D64,
	    image_manifest_arch());
	cr_assert_eq(image_manifest_parse(t, strlen(t), NULL, &m, &cause), 0);
	cr_assert_eq(m.is_index, 1);
	cr_assert_str_eq(m.pick, "sha256:" "0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcde0");
	image_manifest_free(&m);
	free(t);
	t = "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"sha256:" D64
	    "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":"
	    "\"s390x\"}}]}";
	cr_assert_eq(image_manifest_parse(t, strlen(t), NULL, &m, &cause), -1);
	cr_assert(strstr(cause, "no manifest for this platform") != NULL &&
	    strstr(cause, "the index has: linux/s390x") != NULL, "%s", cause);
	free(cause);
}

Test(image_manifest, refused)
{
	static const char *const bad[] = {
		"{\"schemaVersion\":1,\"fsLayers\":[]}",
		"{\"schemaVersion\":2}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" D64
		    "\",\"size\":1},\"layers\":[]}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:" D64
		    "\",\"size\":1},\"layers\":[{\"mediaType\":\"application/"
		    "vnd.docker.image.rootfs.foreign.diff.tar.gzip\",\"digest\":"
		    "\"sha256:" D64 "\",\"size\":1}]}",
		"{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:x\","
		    "\"size\":1},\"layers\":[]}",
		"[]", "not json",
	};
	struct image_manifest	 m;
	char			*cause;
	size_t			 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cause = NULL;
		cr_assert_eq(image_manifest_parse(bad[i], strlen(bad[i]), NULL,
		    &m, &cause), -1, "%s", bad[i]);
		cr_assert_not_null(cause);
		free(cause);
	}
}

/* A registry's response: its headers, Retry-After, its error's words. */
Test(image_manifest, response)
{
	static const char	 line[] = "retry-after:  7\r\0junk";
	char			*v;

	v = image_manifest_header(line, sizeof line - 1, "Retry-After");
	cr_assert_str_eq(v, "7");
	free(v);
	cr_assert_null(image_manifest_header("Retry-Afte: 7\r\n", 15,
	    "Retry-After"));
	cr_assert_eq(image_manifest_retry_after("7", 60), 7);
	cr_assert_eq(image_manifest_retry_after("0", 60), 1);
	cr_assert_eq(image_manifest_retry_after("61", 60), -1);
	cr_assert_eq(image_manifest_retry_after("99999999999999999999", 60),
	    -1);
	cr_assert_eq(image_manifest_retry_after("soon", 60), 1);
	cr_assert_eq(image_manifest_retry_after(NULL, 60), 1);
	v = image_manifest_errbody("{\"errors\":[{\"code\":\"DENIED\","
	    "\"message\":\"no \\u001b[31mway\"}]}", 59);
	cr_assert_str_eq(v, ", DENIED: no ?[31mway");
	free(v);
	v = image_manifest_errbody("<html>", 6);
	cr_assert_str_eq(v, "");
	free(v);
}
