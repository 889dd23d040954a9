/*
 * docker://REF: an image pulled from an OCI registry (the distribution
 * protocol) on the caller's loop. The manifest first, by tag or digest,
 * through the endpoints (the mirrors of registries.conf, the registry
 * over https, then plain http for loopback or an insecure registry), a
 * 401's bearer challenge answered with a token (anonymous, or with the
 * auth file's credentials); an index is resolved to this host's platform.
 * Then the config and the layers: each an image_pull of its own into the
 * blob cache (images_dir/.oci/blobs/sha256/HEX), pinned to its digest and
 * so verified as it streams, resumed, locked against a second puller,
 * and shared by every image that names it; several at once, one progress
 * for them all. Then the image is built as "qsup image build oci:DIR"
 * builds one, from a layout whose blobs are the cache's, into
 * images_dir/oci-HEX16.qcow2 (HEX: the manifest's digest), with a .meta
 * naming the reference, and .oci/refs/ remembering what a tag resolved to.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "image_int.h"

#define IMAGE_REG_BODY_MAX	(4 * 1024 * 1024)
#define IMAGE_REG_PARALLEL	3	/* blobs at once */
#define IMAGE_REG_WAIT_MAX	60	/* seconds a 429 is waited out */
#define IMAGE_REG_WAITS		2	/* 429s waited out per endpoint */
#define IMAGE_REG_ACCEPT \
	"Accept: application/vnd.oci.image.index.v1+json, " \
	"application/vnd.docker.distribution.manifest.list.v2+json, " \
	"application/vnd.oci.image.manifest.v1+json, " \
	"application/vnd.docker.distribution.manifest.v2+json"

enum image_reg_phase {
	IMAGE_REG_MANIFEST,
	IMAGE_REG_TOKEN,
	IMAGE_REG_BLOBS
};

struct image_reg_sock {
	ev_io			 io;
	curl_socket_t		 fd;
	struct image_reg	*r;
	struct image_reg_sock	*next;
};

struct image_reg_blob {
	struct image_reg	*r;
	char			*digest;
	uint64_t		 size, have;
	struct image_url_pull	*pull;
	int			 started, done;
};

struct image_reg {
	struct ev_loop		*loop;
	struct image_ref	 ref;
	char			*url;		/* docker://canon */
	char			*dir, *oci, *blobs;
	char			*out;
	uint64_t		 out_size, max_size;
	enum image_progress	 progress;
	double			 stall;
	image_reg_cb		 cb;
	void			*arg;
	char			*early;
	ev_timer		 start;
	int			 lock_fd;	/* the blob cache's, shared */

	char			**eps;		/* endpoints, in order */
	size_t			 neps, ep;
	struct buf		 errs;		/* what each one said */
	char			*auth, *auth_from;
	char			*bearer;	/* the token */
	int			 basic;		/* the 401 asked Basic */
	int			 challenged;
	int			 tls_plain;	/* https met plain http */

	enum image_reg_phase	 phase;
	CURLM			*multi;
	CURL			*easy;
	struct curl_slist	*hdrs;
	struct image_reg_sock	*socks;
	ev_timer		 timer, stall_timer;
	double			 last;
	char			 errbuf[CURL_ERROR_SIZE];
	struct buf		 body;
	char			*ctype, *www, *what;
	char			*retry_after;	/* the response's */
	int			 over;
	ev_timer		 wait;		/* a 429's Retry-After */
	int			 waits;		/* ... at this endpoint */

	char			*asked;		/* tag or digest */
	int			 depth;
	char			*man_digest;
	struct buf		 man;
	struct image_manifest	 m;

	struct image_reg_blob	*bv;
	size_t			 nb, active;
	char			*token_url;	/* to ask again */
	int			 refresh, retokens;
	uint64_t		 total;
	struct image_progress_state *ps;

	char			*target, *layout;	/* the build's */
	struct image_build_job	*job;
	struct image_reg_stream	*stream;	/* the job's, if it streams */
	double			 t_blobs, t_build;	/* -v's phases */
};

static void	image_reg_manifest(struct image_reg *);
static void	image_reg_next_blob(struct image_reg *);

void
image_reg_cancel(struct image_reg *r)
{
	struct image_reg_sock	*sk;
	size_t			 i;

	if (r == NULL)
		return;
	if (r->easy != NULL) {
		curl_multi_remove_handle(r->multi, r->easy);
		curl_easy_cleanup(r->easy);
	}
	if (r->multi != NULL)
		curl_multi_cleanup(r->multi);
	while ((sk = r->socks) != NULL) {
		r->socks = sk->next;
		ev_io_stop(r->loop, &sk->io);
		free(sk);
	}
	ev_timer_stop(r->loop, &r->timer);
	ev_timer_stop(r->loop, &r->stall_timer);
	ev_timer_stop(r->loop, &r->start);
	ev_timer_stop(r->loop, &r->wait);
	if (r->lock_fd != -1)
		close(r->lock_fd);
	for (i = 0; i < r->nb; i++) {
		image_url_pull_cancel(r->bv[i].pull);
		free(r->bv[i].digest);
	}
	free(r->bv);
	image_build_job_cancel(r->job);
	image_reg_stream_free(r->stream);
	if (r->layout != NULL)
		(void)util_rm_rf(r->layout);
	free(r->layout);
	free(r->target);
	image_progress_end(r->ps, 0);
	curl_slist_free_all(r->hdrs);
	image_ref_free(&r->ref);
	for (i = 0; i < r->neps; i++)
		free(r->eps[i]);
	free(r->eps);
	buf_free(&r->errs);
	buf_free(&r->body);
	buf_free(&r->man);
	image_manifest_free(&r->m);
	free(r->url);
	free(r->dir);
	free(r->oci);
	free(r->blobs);
	free(r->out);
	free(r->early);
	free(r->auth);
	free(r->auth_from);
	free(r->bearer);
	free(r->token_url);
	free(r->ctype);
	free(r->www);
	free(r->retry_after);
	free(r->what);
	free(r->asked);
	free(r->man_digest);
	free(r);
}

/* The end: cb once with the path or the cause, then r is gone. */
static void
image_reg_finish(struct image_reg *r, const char *path, const char *cause)
{
	if (path != NULL && r->ps != NULL) {
		image_progress_end(r->ps, 1);
		r->ps = NULL;
	}
	r->cb(path, cause, r->arg);
	image_reg_cancel(r);
}

static void	image_reg_fail(struct image_reg *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

static void
image_reg_fail(struct image_reg *r, const char *fmt, ...)
{
	va_list	 ap;
	char	*s, *cause;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	xasprintf(&cause, "%s: %s", r->url, s);
	free(s);
	image_reg_finish(r, NULL, cause);
	free(cause);
}

/* libcurl's sockets and timer on the loop. */
static void
image_reg_check(struct image_reg *);

static void
image_reg_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct image_reg_sock	*sk = w->data;
	struct image_reg	*r = sk->r;
	int			 running, f = 0;

	(void)loop;
	if (revents & EV_READ)
		f |= CURL_CSELECT_IN;
	if (revents & EV_WRITE)
		f |= CURL_CSELECT_OUT;
	curl_multi_socket_action(r->multi, sk->fd, f, &running);
	image_reg_check(r);
}

static int
image_reg_socket_cb(CURL *e, curl_socket_t s, int what, void *userp,
    void *sockp)
{
	struct image_reg	*r = userp;
	struct image_reg_sock	*sk = sockp, **pp;
	int			 ev = 0;

	(void)e;
	if (what == CURL_POLL_REMOVE) {
		for (pp = &r->socks; *pp != NULL; pp = &(*pp)->next) {
			if (*pp == sk) {
				*pp = sk->next;
				break;
			}
		}
		if (sk != NULL) {
			ev_io_stop(r->loop, &sk->io);
			free(sk);
		}
		return (0);
	}
	if (what & CURL_POLL_IN)
		ev |= EV_READ;
	if (what & CURL_POLL_OUT)
		ev |= EV_WRITE;
	if (sk == NULL) {
		sk = xcalloc(1, sizeof *sk);
		sk->fd = s;
		sk->r = r;
		sk->next = r->socks;
		r->socks = sk;
		ev_init(&sk->io, image_reg_io_cb);
		sk->io.data = sk;
		curl_multi_assign(r->multi, s, sk);
	} else
		ev_io_stop(r->loop, &sk->io);
	ev_io_set(&sk->io, s, ev);
	ev_io_start(r->loop, &sk->io);
	return (0);
}

static void
image_reg_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_reg	*r = w->data;
	int			 running;

	(void)loop;
	(void)revents;
	curl_multi_socket_action(r->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	image_reg_check(r);
}

static int
image_reg_timer_set_cb(CURLM *m, long ms, void *userp)
{
	struct image_reg	*r = userp;

	(void)m;
	ev_timer_stop(r->loop, &r->timer);
	if (ms >= 0) {
		ev_timer_set(&r->timer, ms / 1000.0, 0);
		ev_timer_start(r->loop, &r->timer);
	}
	return (0);
}

/* No byte for the stall timeout: the registry stalls. */
static void
image_reg_stall_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_reg	*r = w->data;

	(void)revents;
	if (r->easy == NULL || ev_now(loop) - r->last < r->stall)
		return;
	image_reg_fail(r, "%s: the registry stalls: no data for %.0f s",
	    r->what, r->stall);
}

/* The response's body, bounded: it is the network's. */
static size_t
image_reg_body_cb(char *data, size_t size, size_t n, void *arg)
{
	struct image_reg	*r = arg;

	r->last = ev_now(r->loop);
	if (r->body.len + size * n > IMAGE_REG_BODY_MAX) {
		r->over = 1;
		return (0);
	}
	buf_add(&r->body, data, size * n);
	return (size * n);
}

static size_t
image_reg_header_cb(char *data, size_t size, size_t n, void *arg)
{
	struct image_reg	*r = arg;
	char			*v;

	n *= size;
	r->last = ev_now(r->loop);
	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		free(r->ctype);
		free(r->www);
		free(r->retry_after);
		r->ctype = r->www = r->retry_after = NULL;
	} else if ((v = image_manifest_header(data, n, "Retry-After")) != NULL) {
		free(r->retry_after);
		r->retry_after = v;
	} else if ((v = image_manifest_header(data, n, "Content-Type")) != NULL) {
		free(r->ctype);
		r->ctype = v;
	} else if ((v = image_manifest_header(data, n, "WWW-Authenticate")) !=
	    NULL) {
		free(r->www);
		r->www = v;
	}
	return (n);
}

/* One small request (a manifest, a token) on r's multi handle. */
static void
image_reg_get(struct image_reg *r, const char *url, const char *accept)
{
	CURL		*e;
	const char	*ca;
	char		*h;

	if (r->easy != NULL) {
		curl_multi_remove_handle(r->multi, r->easy);
		curl_easy_cleanup(r->easy);
	}
	curl_slist_free_all(r->hdrs);
	r->hdrs = NULL;
	if (accept != NULL)
		r->hdrs = curl_slist_append(r->hdrs, accept);
	if (r->phase == IMAGE_REG_TOKEN && r->auth != NULL) {
		xasprintf(&h, "Authorization: Basic %s", r->auth);
		r->hdrs = curl_slist_append(r->hdrs, h);
		free(h);
	} else if (r->phase != IMAGE_REG_TOKEN && (r->bearer != NULL ||
	    (r->basic && r->auth != NULL))) {
		xasprintf(&h, "Authorization: %s %s", r->bearer != NULL ?
		    "Bearer" : "Basic", r->bearer != NULL ? r->bearer :
		    r->auth);
		r->hdrs = curl_slist_append(r->hdrs, h);
		free(h);
	}
	if ((e = curl_easy_init()) == NULL)
		fatalx("curl_easy_init failed");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, (long)IMAGE_REDIRS_MAX);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "qsup");
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, (long)r->stall);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->hdrs);
	if ((ca = getenv("CURL_CA_BUNDLE")) != NULL && *ca != '\0')
		curl_easy_setopt(e, CURLOPT_CAINFO, ca);
	else if ((ca = getenv("SSL_CERT_FILE")) != NULL && *ca != '\0')
		curl_easy_setopt(e, CURLOPT_CAINFO, ca);
	if ((ca = getenv("SSL_CERT_DIR")) != NULL && *ca != '\0')
		curl_easy_setopt(e, CURLOPT_CAPATH, ca);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, image_reg_body_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, image_reg_header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
	r->errbuf[0] = '\0';
	r->over = 0;
	buf_consume(&r->body, r->body.len);
	free(r->what);
	r->what = xstrdup(url);
	r->easy = e;
	r->last = ev_now(r->loop);
	curl_multi_add_handle(r->multi, e);
	if (!ev_is_active(&r->stall_timer)) {
		ev_timer_set(&r->stall_timer, 0.25, 0.25);
		ev_timer_start(r->loop, &r->stall_timer);
	}
}

/* Is endpoint i the plain http of the https endpoint before it? */
static int
image_reg_fallback(struct image_reg *r, size_t i)
{
	return (i > 0 && strncmp(r->eps[i], "http://", 7) == 0 &&
	    strncmp(r->eps[i - 1], "https://", 8) == 0 &&
	    strcmp(r->eps[i] + 7, r->eps[i - 1] + 8) == 0);
}

/*
 * This endpoint failed (why; answered: with an HTTP status), try the
 * next one, with no token (it was the other's), or fail naming what each
 * said.
 */
static void
image_reg_next_endpoint(struct image_reg *r, const char *why, int answered)
{
	/*
	 * The plain fallback answered, https having met a server that does
	 * not speak TLS: that refusal was expected. (A certificate that
	 * failed is said.)
	 */
	if (answered && image_reg_fallback(r, r->ep) && r->tls_plain)
		buf_consume(&r->errs, r->errs.len);
	buf_printf(&r->errs, "%s%s", r->errs.len > 0 ? "; " : "", why);
	if (++r->ep < r->neps) {
		if (image_reg_fallback(r, r->ep))
			log_debug("%s: %s; trying %s", r->ref.canon, why,
			    r->eps[r->ep]);
		else
			log_info("%s: %s; trying %s", r->ref.canon, why,
			    r->eps[r->ep]);
		free(r->bearer);
		r->bearer = NULL;
		r->challenged = r->basic = 0;
		r->depth = 0;
		r->waits = 0;
		free(r->asked);
		r->asked = xstrdup(r->ref.digest != NULL ? r->ref.digest :
		    r->ref.tag);
		image_reg_manifest(r);
		return;
	}
	buf_add(&r->errs, "", 1);
	image_reg_fail(r, "%s", r->errs.data);
}

/* Ask for the manifest r->asked from the current endpoint. */
static void
image_reg_manifest(struct image_reg *r)
{
	char	*url;

	r->phase = IMAGE_REG_MANIFEST;
	xasprintf(&url, "%s/v2/%s/manifests/%s", r->eps[r->ep], r->ref.repo,
	    r->asked);
	log_debug("%s: GET %s", r->ref.canon, url);
	image_reg_get(r, url, IMAGE_REG_ACCEPT);
	free(url);
}

/* A 401: its challenge answered (a token asked for), or the end. */
static void
image_reg_challenge(struct image_reg *r)
{
	struct image_chal	 c;
	struct buf		 u = { 0 };
	char			*e, *scope;

	if (r->www == NULL || image_chal_parse(r->www, &c) == -1) {
		image_reg_fail(r, "%s: HTTP 401 without a challenge (no "
		    "WWW-Authenticate the registry could be asked with)",
		    r->what);
		return;
	}
	if (r->challenged++ || (strcasecmp(c.scheme, "Bearer") != 0 &&
	    (strcasecmp(c.scheme, "Basic") != 0 || r->auth == NULL))) {
		image_reg_fail(r, "%s: HTTP 401 Unauthorized (%s realm \"%s\")"
		    "%s%s%s", r->what, c.scheme, c.realm != NULL ? c.realm :
		    "", r->auth != NULL ? ": the credentials of " :
		    r->auth_from != NULL ? ": no credentials: " :
		    ": no credentials for this registry in $REGISTRY_AUTH_FILE, "
		    "containers' auth.json or ~/.docker/config.json",
		    r->auth_from != NULL ? r->auth_from : "",
		    r->auth != NULL ? " were refused" : "");
		image_chal_free(&c);
		return;
	}
	if (strcasecmp(c.scheme, "Basic") == 0) {
		r->basic = 1;
		image_chal_free(&c);
		image_reg_manifest(r);
		return;
	}
	if (c.realm == NULL || (strncmp(c.realm, "https://", 8) != 0 &&
	    strncmp(c.realm, "http://", 7) != 0)) {
		image_reg_fail(r, "%s: HTTP 401 whose bearer realm \"%s\" is "
		    "not an http(s) URL", r->what, c.realm != NULL ? c.realm :
		    "");
		image_chal_free(&c);
		return;
	}
	/* Credentials go in clear only where the registry itself is plain. */
	if (r->auth != NULL && strncmp(c.realm, "http://", 7) == 0 &&
	    strncmp(r->eps[r->ep], "http://", 7) != 0) {
		image_reg_fail(r, "%s: the bearer realm %s is plain http: the "
		    "credentials of %s are not sent there", r->what, c.realm,
		    r->auth_from);
		image_chal_free(&c);
		return;
	}
	buf_printf(&u, "%s%c", c.realm, strchr(c.realm, '?') ? '&' : '?');
	if (c.service != NULL) {
		e = curl_easy_escape(NULL, c.service, 0);
		buf_printf(&u, "service=%s&", e);
		curl_free(e);
	}
	xasprintf(&scope, "repository:%s:pull", r->ref.repo);
	e = curl_easy_escape(NULL, scope, 0);
	buf_printf(&u, "scope=%s", e);
	curl_free(e);
	free(scope);
	buf_add(&u, "", 1);
	r->phase = IMAGE_REG_TOKEN;
	free(r->token_url);
	r->token_url = xstrdup(u.data);
	log_debug("%s: a token from %s", r->ref.canon, u.data);
	image_reg_get(r, u.data, NULL);
	buf_free(&u);
	image_chal_free(&c);
}

/* The token's response: {"token": T} or {"access_token": T}. */
static void
image_reg_token_done(struct image_reg *r, long code)
{
	json_t		*j;
	const char	*t;
	size_t		 i;

	if (code != 200) {
		image_reg_fail(r, "%s: HTTP %ld from the token realm%s%s%s",
		    r->what, code, r->auth != NULL ? " (the credentials of " :
		    "", r->auth != NULL ? r->auth_from : "",
		    r->auth != NULL ? ")" : "");
		return;
	}
	j = json_loadb(r->body.data, r->body.len, 0, NULL);
	t = json_string_value(json_object_get(j, "token"));
	if (t == NULL)
		t = json_string_value(json_object_get(j, "access_token"));
	for (i = 0; t != NULL && t[i] != '\0'; i++) {
		if ((unsigned char)t[i] <= 0x20 || t[i] == 0x7f)
			break;
	}
	if (t == NULL || t[0] == '\0' || t[i] != '\0' || i > 16384) {
		image_reg_fail(r, "%s: no token in the realm's answer",
		    r->what);
		json_decref(j);
		return;
	}
	free(r->bearer);
	r->bearer = xstrdup(t);
	json_decref(j);
	if (r->refresh) {
		r->refresh = 0;
		r->phase = IMAGE_REG_BLOBS;
		image_reg_next_blob(r);
	} else
		image_reg_manifest(r);
}

/* The manifest's bytes: checked against its digest, an index resolved. */
static void
image_reg_manifest_body(struct image_reg *r)
{
	unsigned char	 d[32];
	char		*hex, *digest, *cause;
	struct image_manifest m;

	mbedtls_sha256_ret((const unsigned char *)r->body.data, r->body.len,
	    d, 0);
	hex = token_hex_of(d, 32);
	xasprintf(&digest, "sha256:%s", hex);
	free(hex);
	if (strncmp(r->asked, "sha256:", 7) == 0 &&
	    strcmp(r->asked, digest) != 0) {
		image_reg_fail(r, "%s: digest mismatch: expected %s, got %s",
		    r->what, r->asked, digest);
		free(digest);
		return;
	}
	if (image_manifest_parse(r->body.data, r->body.len, r->ctype, &m,
	    &cause) == -1) {
		image_reg_fail(r, "%s (%s): %s", r->what, digest, cause);
		free(cause);
		free(digest);
		return;
	}
	if (m.is_index) {
		free(digest);
		if (r->depth++ > 0) {
			image_manifest_free(&m);
			image_reg_fail(r, "%s: an index inside an index",
			    r->what);
			return;
		}
		free(r->asked);
		r->asked = xstrdup(m.pick);
		image_manifest_free(&m);
		image_reg_manifest(r);
		return;
	}
	r->m = m;
	r->man_digest = digest;
	buf_add(&r->man, r->body.data, r->body.len);
	image_reg_next_blob(r);
}

/* A 429's wait is over: the same manifest from the same endpoint. */
static void
image_reg_wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_reg	*r = w->data;

	(void)loop;
	(void)revents;
	image_reg_manifest(r);
}

/* A manifest's response with code: on, to a token, or the next endpoint. */
static void
image_reg_manifest_done(struct image_reg *r, long code)
{
	char	*why, *said;
	long	 wait;

	if (code == 429 && r->waits < IMAGE_REG_WAITS &&
	    (wait = image_manifest_retry_after(r->retry_after,
	    IMAGE_REG_WAIT_MAX)) > 0) {
		/* The registry's own limit: wait it out, then it again. */
		r->waits++;
		log_info("%s: %s: HTTP 429 Too Many Requests: waiting %ld s "
		    "(Retry-After) to ask it again", r->ref.canon, r->what,
		    wait);
		ev_timer_set(&r->wait, (double)wait, 0);
		ev_timer_start(r->loop, &r->wait);
		return;
	}
	if (code == 200) {
		image_reg_manifest_body(r);
		return;
	}
	if (code == 401) {
		image_reg_challenge(r);
		return;
	}
	said = image_manifest_errbody(r->body.data, r->body.len);
	if (code == 404 && strncmp(r->asked, "sha256:", 7) != 0)
		xasprintf(&why, "%s: unknown tag \"%s\" in %s (HTTP 404%s)",
		    r->what, r->asked, r->ref.repo, said);
	else if (code == 404)
		xasprintf(&why, "%s: no manifest %s in %s (HTTP 404%s)",
		    r->what, r->asked, r->ref.repo, said);
	else if (code == 429 && r->waits < IMAGE_REG_WAITS)
		xasprintf(&why, "%s: HTTP 429 Too Many Requests (the "
		    "registry's rate limit%s; Retry-After %s s is more than "
		    "the %d s qsup waits)", r->what, said, r->retry_after,
		    IMAGE_REG_WAIT_MAX);
	else if (code == 429)
		xasprintf(&why, "%s: HTTP 429 Too Many Requests (the "
		    "registry's rate limit%s; still after %d waits)", r->what,
		    said, r->waits);
	else
		xasprintf(&why, "%s: HTTP %ld from the registry%s", r->what,
		    code, said);
	image_reg_next_endpoint(r, why, 1);
	free(said);
	free(why);
}

/* What curl has finished, handled; r may be gone after. */
static void
image_reg_check(struct image_reg *r)
{
	CURLMsg		*msg;
	CURLcode	 rc;
	long		 code = 0;
	int		 left;
	char		*why;

	while (r->multi != NULL &&
	    (msg = curl_multi_info_read(r->multi, &left)) != NULL) {
		if (msg->msg != CURLMSG_DONE || msg->easy_handle != r->easy)
			continue;
		rc = msg->data.result;
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
		curl_multi_remove_handle(r->multi, r->easy);
		curl_easy_cleanup(r->easy);
		r->easy = NULL;
		ev_timer_stop(r->loop, &r->stall_timer);
		if (r->over) {
			image_reg_fail(r, "%s: over %d bytes: not a manifest",
			    r->what, IMAGE_REG_BODY_MAX);
			return;
		}
		if (rc != CURLE_OK) {
			r->tls_plain = rc == CURLE_SSL_CONNECT_ERROR;
			xasprintf(&why, "%s: %s", r->what, r->errbuf[0] != '\0' ?
			    r->errbuf : curl_easy_strerror(rc));
			if (r->phase == IMAGE_REG_TOKEN)
				image_reg_fail(r, "%s", why);
			else
				image_reg_next_endpoint(r, why, 0);
			free(why);
			return;
		}
		if (r->phase == IMAGE_REG_TOKEN)
			image_reg_token_done(r, code);
		else
			image_reg_manifest_done(r, code);
		return;
	}
}

/* Bytes of one blob so far: the one progress of the whole pull. */
static void
image_reg_bytes_cb(void *arg, uint64_t have, uint64_t total)
{
	struct image_reg_blob	*b = arg;
	struct image_reg	*r = b->r;
	uint64_t		 sum = 0;
	size_t			 i;

	(void)total;
	image_reg_stream_bytes(r->stream, b->digest, have);
	b->have = have;
	for (i = 0; i < r->nb; i++)
		sum += r->bv[i].have;
	image_progress_set(r->ps, sum, r->total);
}

static void	image_reg_built(struct image_reg *);
static void	image_reg_job(struct image_reg *, int);

/*
 * A blob failed: the others stop, their parts removed (the pull failed,
 * it was not interrupted: a blob's part stays only if its own pull kept
 * it). Unlinked while their pulls still hold their locks.
 */
static void
image_reg_discard(struct image_reg *r)
{
	struct image_req	 req;
	struct image_paths	 ip;
	char			*cause;
	size_t			 i;

	for (i = 0; i < r->nb; i++) {
		if (r->bv[i].pull == NULL)
			continue;
		memset(&req, 0, sizeof req);
		req.name = r->bv[i].digest + 7;
		req.dir = r->blobs;
		if (image_paths_make(&req, &ip, &cause) == 0) {
			(void)unlink(ip.partial);
			(void)unlink(ip.partial_url);
			image_paths_free(&ip);
		} else
			free(cause);
		image_url_pull_cancel(r->bv[i].pull);
		r->bv[i].pull = NULL;
	}
}

/*
 * The token expired under a blob (a 401): once the blobs still coming are
 * done, a new one from the same realm, and the blobs refused go again.
 */
static void
image_reg_retoken(struct image_reg *r)
{
	r->retokens++;
	log_info("%s: the registry's token expired: asking for another",
	    r->ref.canon);
	r->phase = IMAGE_REG_TOKEN;
	image_reg_get(r, r->token_url, NULL);
}

/* One blob is in the cache, or failed (the others are stopped). */
static void
image_reg_blob_done(const char *path, const char *cause, void *arg)
{
	struct image_reg_blob	*b = arg;
	struct image_reg	*r = b->r;

	(void)path;
	b->pull = NULL;
	r->active--;
	if (cause != NULL && r->token_url != NULL && r->retokens < 3 &&
	    strstr(cause, ": HTTP 401 from the server") != NULL) {
		b->started = 0;
		b->have = 0;
		r->refresh = 1;
		image_reg_stream_again(r->stream);
	} else if (cause != NULL) {
		image_reg_discard(r);
		image_reg_fail(r, "blob %s: %s", b->digest, cause);
		return;
	} else {
		b->done = 1;
		b->have = b->size;
		image_reg_stream_done(r->stream, b->digest);
	}
	if (r->refresh && r->active == 0)
		image_reg_retoken(r);
	else if (!r->refresh)
		image_reg_next_blob(r);
}

/* The blobs to fetch: the config, then the layers, each digest once. */
static void
image_reg_blob_list(struct image_reg *r)
{
	size_t	i, j;

	r->bv = xcalloc(r->m.nlayers + 1, sizeof *r->bv);
	r->bv[0].digest = xstrdup(r->m.config);
	r->bv[0].size = r->m.config_size;
	r->nb = 1;
	for (i = 0; i < r->m.nlayers; i++) {
		for (j = 0; j < r->nb; j++) {
			if (strcmp(r->bv[j].digest, r->m.layers[i]) == 0)
				break;
		}
		if (j < r->nb)
			continue;
		r->bv[r->nb].digest = xstrdup(r->m.layers[i]);
		r->bv[r->nb++].size = r->m.sizes[i];
	}
	for (i = 0; i < r->nb; i++) {
		r->bv[i].r = r;
		r->total += r->bv[i].size;
	}
}

/* Start blobs until IMAGE_REG_PARALLEL run; all done: build. */
static void
image_reg_next_blob(struct image_reg *r)
{
	struct image_req	 req;
	struct image_reg_blob	*b;
	char			*url, *hdr = NULL, *path;
	uint64_t		 max;
	size_t			 i;

	if (r->phase != IMAGE_REG_BLOBS) {
		r->phase = IMAGE_REG_BLOBS;
		r->t_blobs = util_now();
		if (r->out == NULL &&
		    (path = image_reg_have(r->dir, r->man_digest)) != NULL) {
			free(path);
			image_reg_built(r);
			return;
		}
		image_reg_blob_list(r);
		max = r->max_size != 0 ? r->max_size : IMAGE_MAX_SIZE_DEFAULT;
		if (r->total > max) {
			image_reg_fail(r, "its blobs are %llu bytes, more than "
			    "image_max_size (%llu): not downloaded",
			    (unsigned long long)r->total,
			    (unsigned long long)max);
			return;
		}
		r->ps = image_progress_new(r->progress, r->ref.canon, 0);
		image_reg_job(r, 1);
	}
	for (i = 0; i < r->nb && r->active < IMAGE_REG_PARALLEL; i++) {
		b = &r->bv[i];
		if (b->done || b->started)
			continue;
		b->started = 1;
		memset(&req, 0, sizeof req);
		xasprintf(&url, "%s/v2/%s/blobs/%s", r->eps[r->ep], r->ref.repo,
		    b->digest);
		if (r->bearer != NULL || (r->basic && r->auth != NULL))
			xasprintf(&hdr, "Authorization: %s %s", r->bearer !=
			    NULL ? "Bearer" : "Basic", r->bearer != NULL ?
			    r->bearer : r->auth);
		req.url = url;
		req.sha256 = b->digest + 7;
		req.name = b->digest + 7;
		req.dir = r->blobs;
		req.progress = IMAGE_PROGRESS_QUIET;
		req.stall_timeout = r->stall;
		req.max_size = r->max_size;
		req.header = hdr;
		req.bytes_cb = image_reg_bytes_cb;
		req.bytes_arg = b;
		if ((path = image_url_cached(&req)) != NULL) {
			log_debug("%s: blob %s cached", r->ref.canon,
			    b->digest);
			b->done = 1;
			b->have = b->size;
			image_reg_stream_done(r->stream, b->digest);
			free(path);
		} else {
			r->active++;
			b->pull = image_url_pull_start(r->loop, &req,
			    image_reg_blob_done, b);
		}
		free(url);
		free(hdr);
		hdr = NULL;
	}
	for (i = 0; i < r->nb && r->bv[i].done; i++)
		/* nothing */;
	if (i == r->nb)
		image_reg_built(r);
}

/* The build's child ended: the image's .meta and its tag; the end. */
static void
image_reg_build_cb(const char *why, void *arg)
{
	struct image_reg	*r = arg;
	struct image_info	 ii;
	struct stat		 st;
	char			*cause = NULL, *meta, *checked;

	r->job = NULL;
	log_debug("image pull: build %.0f ms", (util_now() - r->t_build) * 1000);
	(void)util_rm_rf(r->layout);
	if (why != NULL || r->out != NULL) {
		if (why != NULL)
			image_reg_fail(r, "building the image: %s", why);
		else
			image_reg_finish(r, r->out, NULL);
		return;
	}
	xasprintf(&meta, "%s.meta", r->target);
	xasprintf(&checked, "OCI manifest %s, every blob's SHA-256",
	    r->man_digest);
	memset(&ii, 0, sizeof ii);
	ii.url = r->url;
	ii.sha256 = r->man_digest + 7;
	ii.checked = checked;
	ii.pulled = time(NULL);
	ii.unsynced = r->out == NULL && image_boot_id() != NULL; /* image.c */
	if (stat(r->target, &st) == 0) {
		ii.size = st.st_size;
		if (image_meta_write(meta, &ii, &cause) == 0) {
			if (r->ref.digest == NULL)
				image_reg_ref_remember(r->oci, r->ref.canon,
				    r->man_digest);
			image_reg_finish(r, r->target, NULL);
			goto out;
		}
	}
	if (cause == NULL)
		xasprintf(&cause, "%s: %s", r->target, strerror(errno));
	(void)unlink(r->target);
	image_reg_fail(r, "%s", cause);
out:
	free(cause);
	free(checked);
	free(meta);
}

/*
 * The image's build in a child, from a layout whose blobs are the
 * cache's: once every blob is there, or (stream) from the start, its
 * layers extracted as they download (image_build_stream.c); a streaming
 * build that cannot be started is left for the end.
 */
static void
image_reg_job(struct image_reg *r, int stream)
{
	struct image_build_req	 breq;
	char			*from, *lock, *cause = NULL;

	r->target = r->out != NULL ? xstrdup(r->out) :
	    image_reg_image_path(r->dir, r->man_digest + 7);
	xasprintf(&r->layout, "%s/build-XXXXXX", r->oci);
	if (mkdtemp(r->layout) == NULL) {
		xasprintf(&cause, "%s: %s", r->layout, strerror(errno));
		free(r->layout);
		r->layout = NULL;
		goto fail;
	}
	if (image_reg_layout_write(r->blobs, r->oci, &r->man, r->man_digest,
	    r->ctype, r->layout, &cause) == -1)
		goto fail;
	if (stream && (r->stream = image_reg_stream_new(r->m.layers,
	    r->m.nlayers, &cause)) == NULL)
		goto fail;
	r->t_build = util_now();
	xasprintf(&from, "oci:%s", r->layout);
	memset(&breq, 0, sizeof breq);
	breq.from = from;
	breq.out = r->target;
	breq.size = r->out_size;
	breq.verified = 1;	/* the layout's blobs are the cache's */
	breq.defer_sync = r->out == NULL && image_boot_id() != NULL;
	if (stream) {
		breq.stream = 1;
		breq.stream_fd = image_reg_stream_fd(r->stream, 1);
		breq.stream_peer = image_reg_stream_fd(r->stream, 0);
		breq.stream_blobs = r->blobs;
		breq.stream_layers = r->m.layers;
		breq.nstream = r->m.nlayers;
		breq.stream_bytes = r->total;
	}
	log_info("%s: building %s", r->ref.canon, r->target);
	xasprintf(&lock, "%s/%s.lock", r->oci, r->man_digest + 7);
	r->job = image_build_job_start(r->loop, &breq, r->out == NULL ? lock :
	    NULL, image_reg_build_cb, r, &cause);
	free(lock);
	free(from);
	if (r->job != NULL) {
		image_reg_stream_started(r->stream);
		return;
	}
fail:
	image_reg_stream_free(r->stream);
	r->stream = NULL;
	if (r->layout != NULL)
		(void)util_rm_rf(r->layout);
	free(r->layout);
	r->layout = NULL;
	free(r->target);
	r->target = NULL;
	if (stream)
		log_debug("%s: no build while the layers download: %s",
		    r->ref.canon, cause);
	else
		image_reg_fail(r, "building the image: %s", cause);
	free(cause);
}

/*
 * Every blob is in the cache: the image (unless it is there already),
 * built in a child, or its build (started with the blobs) told.
 */
static void
image_reg_built(struct image_reg *r)
{
	/* The download's progress ends here: the build is not its rate. */
	image_progress_end(r->ps, r->ps != NULL);
	r->ps = NULL;
	log_debug("image pull: blobs %.0f ms", (util_now() - r->t_blobs) * 1000);
	if (r->job != NULL) {
		image_reg_stream_all(r->stream);
		return;
	}
	if (r->out == NULL &&
	    (r->target = image_reg_have(r->dir, r->man_digest)) != NULL) {
		if (r->ref.digest == NULL)
			image_reg_ref_remember(r->oci, r->ref.canon,
			    r->man_digest);
		image_reg_finish(r, r->target, NULL);
		return;
	}
	image_reg_job(r, 0);
}

/* The pull's first step, on the loop (its cb never runs from start). */
static void
image_reg_start_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_reg	*r = w->data;
	char			*path;

	(void)loop;
	(void)revents;
	if (r->early != NULL) {
		image_reg_finish(r, NULL, r->early);
		return;
	}
	/* A prune of the blob cache holds it a moment: after it, then. */
	if (r->lock_fd == -1 && (r->lock_fd = image_reg_lock(r->dir, 0)) == -1) {
		if (errno == EWOULDBLOCK) {
			ev_timer_set(&r->start, 0.1, 0);
			ev_timer_start(loop, &r->start);
			return;
		}
		image_reg_fail(r, "%s/%s/lock: %s", r->dir, IMAGE_REG_DIR,
		    strerror(errno));
		return;
	}
	if (r->out == NULL && r->ref.digest != NULL &&
	    (path = image_reg_have(r->dir, r->ref.digest)) != NULL) {
		image_reg_finish(r, path, NULL);
		free(path);
		return;
	}
	if ((r->multi = curl_multi_init()) == NULL)
		fatalx("curl_multi_init failed");
	curl_multi_setopt(r->multi, CURLMOPT_SOCKETFUNCTION,
	    image_reg_socket_cb);
	curl_multi_setopt(r->multi, CURLMOPT_SOCKETDATA, r);
	curl_multi_setopt(r->multi, CURLMOPT_TIMERFUNCTION,
	    image_reg_timer_set_cb);
	curl_multi_setopt(r->multi, CURLMOPT_TIMERDATA, r);
	r->asked = xstrdup(r->ref.digest != NULL ? r->ref.digest : r->ref.tag);
	image_reg_manifest(r);
}

/* What r needs before its first request; -1 with *cause. */
static int
image_reg_setup(struct image_reg *r, const struct image_req *req,
    char **cause)
{
	if (req->sha256 != NULL || req->sums_url != NULL) {
		xasprintf(cause, "%s: image_sha256 and image_sums_url do not "
		    "apply to docker:// (every blob is checked against its "
		    "digest; pin one with docker://NAME@sha256:HEX)", req->url);
		return (-1);
	}
	if (image_ref_parse(req->url + 9, &r->ref, cause) == -1)
		return (-1);
	xasprintf(&r->url, "docker://%s", r->ref.canon);
	r->dir = req->dir != NULL ? xstrdup(req->dir) : image_default_dir();
	if (r->dir == NULL) {
		xasprintf(cause, "no images_dir (set XDG_DATA_HOME or HOME)");
		return (-1);
	}
	xasprintf(&r->oci, "%s/%s", r->dir, IMAGE_REG_DIR);
	xasprintf(&r->blobs, "%s/blobs/sha256", r->oci);
	if (util_mkdir_p(r->blobs, 0700) == -1) {
		xasprintf(cause, "%s: %s", r->blobs, strerror(errno));
		return (-1);
	}
	if (image_ref_endpoints(r->ref.registry, req->registries,
	    req->nregistries, &r->eps, &r->neps, cause) == -1)
		return (-1);
	r->auth = image_auth_get(r->ref.registry, &r->auth_from, cause);
	return (*cause != NULL ? -1 : 0);
}

/*
 * Pull req->url, "docker://REF", on loop: cb once, later, with the
 * image's path (or req->out) or the cause.
 */
struct image_reg *
image_reg_start(struct ev_loop *loop, const struct image_req *req,
    image_reg_cb cb, void *arg)
{
	struct image_reg	*r;

	r = xcalloc(1, sizeof *r);
	r->loop = loop;
	r->lock_fd = -1;
	r->cb = cb;
	r->arg = arg;
	r->out = req->out != NULL ? xstrdup(req->out) : NULL;
	r->out_size = req->out_size;
	r->max_size = req->max_size;
	r->progress = req->progress;
	r->stall = image_stall_timeout(req);
	ev_init(&r->timer, image_reg_timer_cb);
	r->timer.data = r;
	ev_init(&r->stall_timer, image_reg_stall_cb);
	r->stall_timer.data = r;
	ev_timer_init(&r->start, image_reg_start_cb, 0, 0);
	r->start.data = r;
	ev_init(&r->wait, image_reg_wait_cb);
	r->wait.data = r;
	(void)image_reg_setup(r, req, &r->early);
	ev_timer_start(loop, &r->start);
	return (r);
}
