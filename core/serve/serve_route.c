/*
 * The server's routes: one table of (method, path pattern, handler), one
 * match that turns a request into a typed serve_req (the {name} of its
 * path found as a sandbox, its {id} a number) and answers 404 and 405
 * itself, and one place, after the handler, where an error is answered.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "serve_int.h"

static serve_handler	serve_healthz;

/*
 * Every route. A pattern's segments are literal, or {name} (any segment;
 * a sandbox's name, looked up before anything else is said of the
 * request), {snap} (a snapshot's name, its handler's to find) or {id}
 * (digits, an exec's number). A path that some pattern
 * fits but not the method is 405, with the methods that fit, in this
 * order, as its Allow.
 */
static const struct serve_route {
	const char	*method;
	const char	*path;
	serve_handler	*handler;
} serve_routes[] = {
	{ "GET",    "/v1/healthz",			serve_healthz },
	{ "GET",    "/v1/openapi.json",			serve_openapi },
	{ "GET",    "/metrics",				serve_metrics },
	{ "GET",    "/v1/events",			serve_events },
	{ "GET",    "/v1/sandboxes",			serve_list },
	{ "POST",   "/v1/sandboxes",			serve_create },
	{ "GET",    "/v1/sandboxes/{name}",		serve_get },
	{ "DELETE", "/v1/sandboxes/{name}",		serve_delete },
	{ "PATCH",  "/v1/sandboxes/{name}",		serve_patch },
	{ "POST",   "/v1/sandboxes/{name}/pause",	serve_pause },
	{ "POST",   "/v1/sandboxes/{name}/resume",	serve_resume },
	{ "POST",   "/v1/sandboxes/{name}/exec",	serve_exec_post },
	{ "GET",    "/v1/sandboxes/{name}/exec/ws",	serve_exec_ws },
	{ "GET",    "/v1/sandboxes/{name}/display",	serve_display_ws },
	{ "POST",   "/v1/sandboxes/{name}/snapshots",	serve_attach_snap_post },
	{ "POST",   "/v1/sandboxes/{name}/fork",	serve_fork },
	{ "POST",   "/v1/sandboxes/{name}/restore",	serve_attach_restore },
	{ "GET",    "/v1/sandboxes/{name}/screenshot",	serve_screenshot },
	{ "POST",   "/v1/sandboxes/{name}/input",	serve_input },
	{ "GET",    "/v1/snapshots",			serve_snap_list },
	{ "GET",    "/v1/snapshots/{snap}",		serve_snap_get },
	{ "DELETE", "/v1/snapshots/{snap}",		serve_attach_snap_del },
	{ "GET",    "/v1/sandboxes/{name}/files",	serve_files },
	{ "PUT",    "/v1/sandboxes/{name}/files",	serve_files },
	{ "POST",   "/v1/sandboxes/{name}/exec/{id}/stdin",
	    serve_exec_stdin },
	{ "POST",   "/v1/sandboxes/{name}/exec/{id}/signal",
	    serve_exec_signal },
	{ "POST",   "/v1/sandboxes/{name}/exec/{id}/resize",
	    serve_exec_resize },
};
#define SERVE_NROUTES	(sizeof serve_routes / sizeof serve_routes[0])

/* How far a path follows a pattern. */
enum serve_fit {
	SERVE_FIT_NONE,
	SERVE_FIT_NAME,		/* up to its {name}, at least */
	SERVE_FIT_ALL
};

/* What a path's parameters are, as a pattern took them. */
struct serve_params {
	const char	*name;		/* {name}, not NUL-ended */
	size_t		 nlen;
	unsigned	 id;		/* {id} */
};

/* An {id}: n digits, a number that fits: 1 with *id, or 0. */
static int
serve_route_id(const char *s, size_t n, unsigned *id)
{
	unsigned long long	v = 0;
	size_t			i;

	if (n == 0)
		return (0);
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return (0);
		v = v * 10 + (s[i] - '0');
		if (v > UINT_MAX)
			return (0);
	}
	*id = (unsigned)v;
	return (1);
}

/* path against pat, segment by segment, its parameters into p. */
static enum serve_fit
serve_route_fit(const char *pat, const char *path, struct serve_params *p)
{
	enum serve_fit	fit = SERVE_FIT_NONE;
	size_t		pn, n;

	while (*pat != '\0' || *path != '\0') {
		if (*pat != '/' || *path != '/')
			return (fit);
		pat++;
		path++;
		pn = strcspn(pat, "/");
		n = strcspn(path, "/");
		if (pn == 6 && strncmp(pat, "{name}", pn) == 0) {
			p->name = path;
			p->nlen = n;
			fit = SERVE_FIT_NAME;
		} else if (pn == 6 && strncmp(pat, "{snap}", pn) == 0) {
			/* A snapshot's name: its handler looks it up. */
			if (n == 0)
				return (fit);
		} else if (pn == 4 && strncmp(pat, "{id}", pn) == 0) {
			if (!serve_route_id(path, n, &p->id))
				return (fit);
		} else if (pn != n || strncmp(pat, path, n) != 0)
			return (fit);
		pat += pn;
		path += n;
	}
	return (SERVE_FIT_ALL);
}

/* The {name} of a path, as a sandbox: 0 with r->sb, or -1 (404). */
static int
serve_route_sandbox(struct serve_req *r, const struct serve_params *p,
    struct serve_error *err)
{
	char	name[SERVE_NAME_MAX + 1];

	if (p->nlen == 0 || p->nlen > SERVE_NAME_MAX)
		return (serve_fail(err, 404, NULL, "no such sandbox"));
	memcpy(name, p->name, p->nlen);
	name[p->nlen] = '\0';
	if ((r->sb = serve_find(r->srv, name)) == NULL)
		return (serve_fail(err, 404, NULL, "no sandbox named %s",
		    name));
	return (0);
}

/*
 * The request matched against every route: 0 with its handler and r's
 * parameters, or -1 with the error (its sandbox unknown, no route for its
 * path, or none for its method).
 */
static int
serve_route(struct serve_req *r, serve_handler **handler,
    struct serve_error *err)
{
	const struct serve_route	*rt, *hit = NULL;
	struct serve_params		 p, at, named = { 0 };
	struct buf			 allow = { 0 };
	size_t				 i;
	enum serve_fit			 fit;

	for (i = 0; i < SERVE_NROUTES; i++) {
		rt = &serve_routes[i];
		memset(&p, 0, sizeof p);
		if ((fit = serve_route_fit(rt->path, r->http->path, &p)) ==
		    SERVE_FIT_NONE)
			continue;
		if (named.name == NULL)
			named = p;
		if (fit != SERVE_FIT_ALL)
			continue;
		if (hit == NULL && strcmp(rt->method, r->http->method) == 0) {
			hit = rt;
			at = p;
		}
		/* For --record: the pattern answered, or refused (405). */
		if (hit == rt || allow.len == 0)
			httpd_set_route(r->conn, rt->path);
		buf_printf(&allow, "%s%s", allow.len > 0 ? ", " : "",
		    rt->method);
	}
	if (named.name != NULL && serve_route_sandbox(r, &named, err) == -1)
		goto fail;
	if (hit != NULL) {
		buf_free(&allow);
		r->exec = at.id;
		*handler = hit->handler;
		return (0);
	}
	if (allow.len == 0) {
		serve_fail(err, 404, NULL, "no such path");
		goto fail;
	}
	serve_fail(err, 405, NULL, "method not allowed here");
	err->allow = xstrdup(allow.data);
fail:
	buf_free(&allow);
	return (-1);
}

void
serve_routes_print(FILE *f)
{
	size_t	i;

	for (i = 0; i < SERVE_NROUTES; i++)
		fprintf(f, "%s %s\n", serve_routes[i].method,
		    serve_routes[i].path);
	serve_console_routes(f);
}

/* GET /v1/healthz, answered without the token (as /v1/openapi.json). */
static int
serve_healthz(const struct serve_req *r, struct serve_error *err)
{
	static const char	ok[] = "{\"ok\":true,\"version\":\""
				    QSUP_VERSION "\"}";

	(void)err;
	httpd_respond_json(r->conn, 200, ok, strlen(ok));
	return (0);
}

/* Every request: routed, handled, and its error, if any, answered. */
void
serve_handle(struct httpd_conn *conn, const struct httpd_req *req,
    void *arg)
{
	struct serve_req	 r;
	struct serve_error	 err = { 0 };
	serve_handler		*handler;

	memset(&r, 0, sizeof r);
	r.srv = arg;
	r.conn = conn;
	r.http = req;
	if (serve_console_handle(&r) || serve_e2b_handle(&r))
		return;
	if (serve_route(&r, &handler, &err) == -1 ||
	    handler(&r, &err) == -1)
		serve_error_answer(conn, &err);
}
