/*
 * What an OCI registry pull reads from untrusted text (fuzzed): an image
 * reference as docker writes it ("debian:bookworm", "ghcr.io/o/n:tag",
 * "name@sha256:HEX"), a WWW-Authenticate challenge, and the credentials
 * of an auth file (containers' auth.json, docker's config.json), and
 * where a registry is reached: https, or plain http for loopback and the
 * registries named insecure, through the mirrors of registries.conf.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "image_int.h"

#define IMAGE_REF_MAX		512
#define IMAGE_REF_TAG_MAX	128
#define IMAGE_REF_HUB		"docker.io"
#define IMAGE_REF_AUTH_MAX	(1024 * 1024)
#define IMAGE_REF_CONF_MAX	(64 * 1024)

void
image_ref_free(struct image_ref *r)
{
	free(r->registry);
	free(r->repo);
	free(r->tag);
	free(r->digest);
	free(r->canon);
	memset(r, 0, sizeof *r);
}

/* A registry host[:port]: letters, digits, dots, dashes; a port's digits. */
static int
image_ref_host_ok(const char *s, size_t n)
{
	size_t	i, colon = n;

	if (n == 0 || n > 255)
		return (0);
	for (i = 0; i < n; i++) {
		if (s[i] == ':' && colon == n && i > 0)
			colon = i;
		else if (colon < n ? !isdigit((unsigned char)s[i]) :
		    !isalnum((unsigned char)s[i]) && s[i] != '.' &&
		    s[i] != '-')
			return (0);
	}
	return (colon == n || (n - colon - 1 >= 1 && n - colon - 1 <= 5));
}

/* A repository path: lower-case components of [a-z0-9._-], alnum-bound. */
static int
image_ref_repo_ok(const char *s)
{
	const char	*c = s;
	size_t		 n, i;

	for (;;) {
		n = strcspn(c, "/");
		if (n == 0 || !isalnum((unsigned char)c[0]) ||
		    !isalnum((unsigned char)c[n - 1]))
			return (0);
		for (i = 0; i < n; i++) {
			if (!islower((unsigned char)c[i]) &&
			    !isdigit((unsigned char)c[i]) &&
			    strchr("._-", c[i]) == NULL)
				return (0);
		}
		if (c[n] == '\0')
			return (1);
		c += n + 1;
	}
}

/* A tag: [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}. */
static int
image_ref_tag_ok(const char *s)
{
	size_t	i, n = strlen(s);

	if (n == 0 || n > IMAGE_REF_TAG_MAX || s[0] == '.' || s[0] == '-')
		return (0);
	for (i = 0; i < n; i++) {
		if (!isalnum((unsigned char)s[i]) && strchr("_.-", s[i]) ==
		    NULL)
			return (0);
	}
	return (1);
}

/* "sha256:" and 64 lower-case hex digits. */
int
image_ref_digest_ok(const char *s)
{
	size_t	i;

	if (s == NULL || strncmp(s, "sha256:", 7) != 0 || strlen(s) != 71)
		return (0);
	for (i = 7; i < 71; i++) {
		if (!isdigit((unsigned char)s[i]) && (s[i] < 'a' || s[i] > 'f'))
			return (0);
	}
	return (1);
}

/*
 * A reference as docker writes it (without "docker://"): [REGISTRY/]
 * REPO[:TAG][@DIGEST]. The first component is a registry when it has a
 * dot or a port or is "localhost"; else it is Docker Hub, where a name
 * alone is under library/. No tag and no digest: "latest". -1 with *cause.
 */
int
image_ref_parse(const char *s, struct image_ref *r, char **cause)
{
	char		*name = NULL, *at, *slash, *colon;
	size_t		 n, i;

	memset(r, 0, sizeof *r);
	n = strlen(s);
	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			break;
	}
	if (n == 0 || n > IMAGE_REF_MAX || i < n) {
		xasprintf(cause, "docker://%.*s: not a reference (empty, over "
		    "%d bytes, or a space or control character in it)",
		    n > 100 ? 100 : (int)n, s, IMAGE_REF_MAX);
		return (-1);
	}
	name = xstrdup(s);
	if ((at = strchr(name, '@')) != NULL) {
		*at++ = '\0';
		if (!image_ref_digest_ok(at)) {
			xasprintf(cause, "docker://%s: the digest is not "
			    "sha256: and 64 lower-case hex digits", s);
			goto bad;
		}
		r->digest = xstrdup(at);
	}
	slash = strrchr(name, '/');
	if ((colon = strrchr(slash != NULL ? slash : name, ':')) != NULL) {
		*colon++ = '\0';
		if (!image_ref_tag_ok(colon)) {
			xasprintf(cause, "docker://%s: the tag \"%s\" is not "
			    "valid", s, colon);
			goto bad;
		}
		r->tag = xstrdup(colon);
	}
	slash = strchr(name, '/');
	if (slash != NULL && (memchr(name, '.', slash - name) != NULL ||
	    memchr(name, ':', slash - name) != NULL ||
	    (slash - name == 9 && strncmp(name, "localhost", 9) == 0))) {
		if (!image_ref_host_ok(name, slash - name)) {
			xasprintf(cause, "docker://%s: the registry \"%.*s\" is "
			    "not a host[:port]", s, (int)(slash - name), name);
			goto bad;
		}
		r->registry = xstrndup(name, slash - name);
		r->repo = xstrdup(slash + 1);
	} else {
		r->registry = xstrdup(IMAGE_REF_HUB);
		r->repo = xstrdup(name);
	}
	if (strcmp(r->registry, "index.docker.io") == 0) {
		free(r->registry);
		r->registry = xstrdup(IMAGE_REF_HUB);
	}
	if (strcmp(r->registry, IMAGE_REF_HUB) == 0 &&
	    strchr(r->repo, '/') == NULL) {
		free(name);
		xasprintf(&name, "library/%s", r->repo);
		free(r->repo);
		r->repo = name;
		name = NULL;
	}
	if (!image_ref_repo_ok(r->repo)) {
		xasprintf(cause, "docker://%s: the repository \"%s\" is not "
		    "valid (lower-case letters, digits, \".\", \"_\", \"-\", "
		    "\"/\")", s, r->repo);
		goto bad;
	}
	if (r->tag == NULL && r->digest == NULL)
		r->tag = xstrdup("latest");
	xasprintf(&r->canon, "%s/%s%s%s%s%s", r->registry, r->repo,
	    r->tag != NULL ? ":" : "", r->tag != NULL ? r->tag : "",
	    r->digest != NULL ? "@" : "", r->digest != NULL ? r->digest : "");
	free(name);
	return (0);
bad:
	free(name);
	image_ref_free(r);
	return (-1);
}

void
image_chal_free(struct image_chal *c)
{
	free(c->scheme);
	free(c->realm);
	free(c->service);
	free(c->scope);
	memset(c, 0, sizeof *c);
}

/* One value at *pp: a quoted string (with \ escapes) or a token. */
static char *
image_chal_value(const char **pp)
{
	const char	*p = *pp;
	struct buf	 b = { 0 };

	if (*p == '"') {
		for (p++; *p != '\0' && *p != '"'; p++) {
			if (*p == '\\' && p[1] != '\0')
				p++;
			buf_add(&b, p, 1);
		}
		if (*p != '"') {
			buf_free(&b);
			return (NULL);
		}
		p++;
	} else {
		while (*p != '\0' && *p != ',' && *p != ' ' && *p != '\t')
			buf_add(&b, p++, 1);
	}
	buf_add(&b, "", 1);
	*pp = p;
	return (b.data);
}

/*
 * A WWW-Authenticate value: 'Bearer realm="...",service="...",
 * scope="..."' (or Basic). -1 when it is not one.
 */
int
image_chal_parse(const char *h, struct image_chal *c)
{
	const char	*p = h, *k;
	char		*v, **slot;
	size_t		 kn;

	memset(c, 0, sizeof *c);
	while (*p == ' ' || *p == '\t')
		p++;
	kn = strcspn(p, " \t");
	if (kn == 0 || kn > 32)
		return (-1);
	c->scheme = xstrndup(p, kn);
	p += kn;
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '\0' || *p == '\r' || *p == '\n')
			break;
		k = p;
		kn = strcspn(p, "= \t,");
		if (kn == 0 || p[kn] != '=')
			goto bad;
		p += kn + 1;
		if ((v = image_chal_value(&p)) == NULL)
			goto bad;
		slot = NULL;
		if (kn == 5 && strncasecmp(k, "realm", 5) == 0)
			slot = &c->realm;
		else if (kn == 7 && strncasecmp(k, "service", 7) == 0)
			slot = &c->service;
		else if (kn == 5 && strncasecmp(k, "scope", 5) == 0)
			slot = &c->scope;
		if (slot != NULL) {
			free(*slot);
			*slot = v;
		} else
			free(v);
	}
	return (0);
bad:
	image_chal_free(c);
	return (-1);
}

/* The auth files to read, in the order podman and docker read them. */
static char **
image_auth_files(size_t *n)
{
	const char	*e, *home = getenv("HOME");
	char		**v = xcalloc(4, sizeof *v);

	*n = 0;
	if ((e = getenv("REGISTRY_AUTH_FILE")) != NULL && *e != '\0')
		v[(*n)++] = xstrdup(e);
	if ((e = getenv("XDG_RUNTIME_DIR")) != NULL && *e == '/')
		xasprintf(&v[(*n)++], "%s/containers/auth.json", e);
	if (home != NULL && *home == '/') {
		xasprintf(&v[(*n)++], "%s/.config/containers/auth.json", home);
		xasprintf(&v[(*n)++], "%s/.docker/config.json", home);
	}
	return (v);
}

/*
 * registry's "auth" (base64 of USER:PASSWORD) in an auth file's text:
 * auths[registry], or docker's own key for Docker Hub. NULL if none;
 * *bad 1 when the file is not JSON or the value not base64, 2 when a
 * credential helper (credHelpers, credsStore) keeps them instead
 * (image_cred.c runs it).
 */
char *
image_auth_find(const char *text, size_t len, const char *registry,
    int *bad)
{
	json_t		*j, *auths, *e;
	const char	*keys[2] = { registry, NULL }, *a;
	char		*out = NULL;
	size_t		 i, k;

	*bad = 0;
	if ((j = json_loadb(text, len, 0, NULL)) == NULL ||
	    !json_is_object(j)) {
		*bad = 1;
		json_decref(j);
		return (NULL);
	}
	if (strcmp(registry, IMAGE_REF_HUB) == 0)
		keys[1] = "https://index.docker.io/v1/";
	auths = json_object_get(j, "auths");
	for (k = 0; k < 2 && keys[k] != NULL && out == NULL; k++) {
		e = json_object_get(auths, keys[k]);
		if ((a = json_string_value(json_object_get(e, "auth"))) ==
		    NULL || *a == '\0')
			continue;
		for (i = 0; a[i] != '\0'; i++) {
			if (!isalnum((unsigned char)a[i]) &&
			    strchr("+/=", a[i]) == NULL)
				break;
		}
		if (a[i] != '\0' || i > 4096)
			*bad = 1;
		else
			out = xstrdup(a);
	}
	/* Credentials kept by a helper program: the caller runs it. */
	if (out == NULL && !*bad && (json_object_get(json_object_get(j,
	    "credHelpers"), registry) != NULL ||
	    json_is_string(json_object_get(j, "credsStore"))))
		*bad = 2;
	json_decref(j);
	return (out);
}

/*
 * The credentials for registry from the credential helper file's text
 * names for it; NULL when it has none (*from then says so, unless an
 * earlier file said something) or with *cause.
 */
static char *
image_auth_helper(const char *file, const char *text, size_t len,
    const char *registry, char **from, char **cause)
{
	char	*name, *a, *why;

	if ((name = image_cred_helper(text, len, registry, &why)) == NULL) {
		if (why != NULL) {
			xasprintf(cause, "%s: %s", file, why);
			free(why);
		}
		return (NULL);
	}
	/* Docker Hub's credentials are kept under its old URL. */
	a = image_cred_get(name, strcmp(registry, IMAGE_REF_HUB) == 0 ?
	    "https://index.docker.io/v1/" : registry, &why);
	if (why != NULL)
		xasprintf(cause, "%s (named by %s)", why, file);
	else if (a != NULL) {
		free(*from);
		xasprintf(from, "credential helper docker-credential-%s "
		    "(named by %s)", name, file);
	} else if (*from == NULL)
		xasprintf(from, "credential helper docker-credential-%s (named "
		    "by %s) has none for it", name, file);
	free(why);
	free(name);
	return (a);
}

/*
 * The credentials for registry from the first auth file that has them
 * ($REGISTRY_AUTH_FILE, containers' auth.json, ~/.docker/config.json),
 * as base64, or from the credential helper (credHelpers, credsStore) the
 * file names for it; *from names the file or helper. NULL: none
 * (anonymous; *from then says so if a helper had none), or NULL with
 * *cause for a file that cannot be read as one or a helper that failed.
 */
char *
image_auth_get(const char *registry, char **from, char **cause)
{
	char	**files, *text, *a = NULL;
	size_t	  n, i, len;
	int	  bad;

	*from = *cause = NULL;
	files = image_auth_files(&n);
	for (i = 0; i < n && a == NULL && *cause == NULL; i++) {
		if ((text = util_read_file(files[i], &len,
		    IMAGE_REF_AUTH_MAX)) == NULL) {
			if (errno != ENOENT)
				xasprintf(cause, "%s: %s", files[i],
				    strerror(errno));
			continue;
		}
		a = image_auth_find(text, len, registry, &bad);
		if (bad == 2)
			a = image_auth_helper(files[i], text, len, registry,
			    from, cause);
		free(text);
		if (bad == 1)
			xasprintf(cause, "%s: not an auth file (JSON with "
			    "\"auths\": {\"%s\": {\"auth\": BASE64}})",
			    files[i], registry);
		else if (a != NULL && bad != 2) {
			free(*from);
			*from = xstrdup(files[i]);
		}
	}
	for (i = 0; i < n; i++)
		free(files[i]);
	free(files);
	if (*cause != NULL) {
		free(a);
		return (NULL);
	}
	return (a);
}

/* Is host (no port) a loopback address or name? */
static int
image_ref_loopback(const char *reg)
{
	size_t	n = strcspn(reg, ":");

	return ((n == 9 && strncmp(reg, "localhost", 9) == 0) ||
	    (n >= 4 && strncmp(reg, "127.", 4) == 0) ||
	    strncmp(reg, "[::1]", 5) == 0);
}

/* Is reg named insecure by the profile's lines or by conf's text? */
static int
image_ref_insecure(const char *reg, size_t len, char *const *prof,
    size_t nprof, const char *text)
{
	const char	*l, *w;
	char		*host;
	size_t		 i, wl;
	int		 yes;

	host = xstrndup(reg, len);	/* reg may go on: a URL's path */
	yes = image_ref_loopback(host);
	free(host);
	if (yes)
		return (1);
	for (i = 0; i < nprof; i++) {
		wl = strcspn(prof[i], " ");
		if (wl == len && strncmp(prof[i], reg, len) == 0 &&
		    strncmp(prof[i] + wl, " 1", 2) == 0)
			return (1);
	}
	for (l = text; l != NULL && *l != '\0'; l += strcspn(l, "\n"),
	    l += *l == '\n') {
		l += strspn(l, " \t");
		if (strncmp(l, "insecure", 8) != 0 || strchr(" \t", l[8]) == NULL)
			continue;
		for (w = l + 8; *w != '\0' && *w != '\n'; w += wl) {
			w += strspn(w, " \t\r");
			wl = strcspn(w, " \t\r\n");
			if (wl == len && strncmp(w, reg, len) == 0)
				return (1);
		}
	}
	return (0);
}

/* May a mirror at url be used: https, or http to an allowed host? */
static int
image_ref_mirror_ok(const char *url, char *const *prof, size_t nprof,
    const char *text)
{
	if (strncmp(url, "https://", 8) == 0)
		return (1);
	return (image_ref_insecure(url + 7, strcspn(url + 7, "/"), prof,
	    nprof, text));
}

static void
image_ref_add(char ***urls, size_t *n, const char *u, size_t len)
{
	*urls = xreallocarray(*urls, *n + 2, sizeof **urls);
	(*urls)[(*n)++] = xstrndup(u, len - (len > 0 && u[len - 1] == '/'));
}

/*
 * registries.conf ($QSUP_REGISTRIES_CONF, else
 * $XDG_CONFIG_HOME/qsup/registries.conf, ~/.config/...): lines
 * "mirror REGISTRY URL..." (tried in order, before the registry itself)
 * and "insecure REGISTRY" (plain http allowed, after https); "#"
 * comments. prof: the profile's registries setting, "REG 0|1 URL..."
 * lines: its mirrors for a registry replace the file's, its insecure ones
 * are added. A mirror may be plain http only on loopback or for a
 * registry named insecure (in either). The endpoints for reg go into
 * *urls (base URLs, no /v2, NULL-terminated): the mirrors, the registry
 * over https, then over http if it is loopback or insecure. -1 with
 * *cause for a bad line.
 */
int
image_ref_endpoints(const char *reg, char *const *prof, size_t nprof,
    char ***urls, size_t *n, char **cause)
{
	const char	*e, *home;
	char		*path = NULL, *text, *orig = NULL, *line, *save, *w, *ws;
	char		*host, *pw, *psave, *pline;
	int		 insecure, lineno = 0, profiled = 0;
	size_t		 len, i;

	*urls = NULL;
	*n = 0;
	if ((e = getenv("QSUP_REGISTRIES_CONF")) != NULL && *e != '\0')
		path = xstrdup(e);
	else if ((e = getenv("XDG_CONFIG_HOME")) != NULL && *e == '/')
		xasprintf(&path, "%s/qsup/registries.conf", e);
	else if ((home = getenv("HOME")) != NULL && *home == '/')
		xasprintf(&path, "%s/.config/qsup/registries.conf", home);
	text = path != NULL ? util_read_file(path, &len, IMAGE_REF_CONF_MAX) :
	    NULL;
	if (text != NULL)
		orig = xstrdup(text);
	insecure = image_ref_insecure(reg, strlen(reg), prof, nprof, orig);
	for (i = 0; i < nprof; i++) {
		pline = xstrdup(prof[i]);
		pw = strtok_r(pline, " ", &psave);
		if (pw != NULL && strcmp(pw, reg) == 0) {
			(void)strtok_r(NULL, " ", &psave);
			while ((pw = strtok_r(NULL, " ", &psave)) != NULL) {
				if (!image_ref_mirror_ok(pw, prof, nprof,
				    orig)) {
					xasprintf(cause, "registries: %s: "
					    "mirror %s is plain http, allowed "
					    "only on loopback or for a registry "
					    "named insecure", reg, pw);
					free(pline);
					goto bad;
				}
				image_ref_add(urls, n, pw, strlen(pw));
				profiled = 1;
			}
		}
		free(pline);
	}
	for (line = text != NULL ? strtok_r(text, "\n", &save) : NULL;
	    line != NULL; line = strtok_r(NULL, "\n", &save)) {
		lineno++;
		if ((w = strtok_r(line, " \t\r", &ws)) == NULL || *w == '#')
			continue;
		if (strcmp(w, "insecure") == 0)
			continue;
		if (strcmp(w, "mirror") != 0 ||
		    (host = strtok_r(NULL, " \t\r", &ws)) == NULL) {
			xasprintf(cause, "%s:%d: not \"mirror REGISTRY URL...\" "
			    "or \"insecure REGISTRY...\"", path, lineno);
			goto bad;
		}
		while ((w = strtok_r(NULL, " \t\r", &ws)) != NULL) {
			if (strncmp(w, "https://", 8) != 0 &&
			    strncmp(w, "http://", 7) != 0) {
				xasprintf(cause, "%s:%d: mirror %s is not an "
				    "http(s) URL", path, lineno, w);
				goto bad;
			}
			if (!image_ref_mirror_ok(w, prof, nprof, orig)) {
				xasprintf(cause, "%s:%d: mirror %s is plain "
				    "http, allowed only on loopback or for a "
				    "registry named insecure", path, lineno, w);
				goto bad;
			}
			if (strcmp(host, reg) != 0 || profiled)
				continue;
			image_ref_add(urls, n, w, strlen(w));
		}
	}
	/* Plain http only after https, and only where it is allowed. */
	*urls = xreallocarray(*urls, *n + 3, sizeof **urls);
	xasprintf(&(*urls)[(*n)++], "https://%s",
	    strcmp(reg, IMAGE_REF_HUB) == 0 ? "registry-1.docker.io" : reg);
	if (insecure)
		xasprintf(&(*urls)[(*n)++], "http://%s", reg);
	(*urls)[*n] = NULL;
	free(orig);
	free(text);
	free(path);
	return (0);
bad:
	while (*n > 0)
		free((*urls)[--*n]);
	free(*urls);
	*urls = NULL;
	free(orig);
	free(text);
	free(path);
	return (-1);
}
