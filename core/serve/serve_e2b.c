/*
 * --e2b: E2B's routes beside qsup's own (none of them begins with /v1/).
 * The control API (sandboxes made, listed, timed, paused, resumed and
 * killed; X-API-KEY must be the server's token) maps onto qsup's own
 * sandboxes, a template naming a qsup profile; the in-sandbox API picks
 * its sandbox by the E2b-Sandbox-Id header, and the sandbox's own
 * envdAccessToken (X-Access-Token) must come with it. What E2B has and
 * qsup does not is refused, 501, by name (docs/e2b.md's table).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve_int.h"
#include "serve_e2b.h"

/* The paths httpd lets by without the bearer token: ours checks keys. */
const char *const serve_e2b_public[] = {
	"/v1/healthz", "/v1/openapi.json", "/v2/sandboxes*", "/sandboxes*",
	"/snapshots*", "/templates*", "/health", "/files",
	"/process.Process/*", "/filesystem.Filesystem/*", "/", "/console/*",
	NULL
};

void
serve_e2b_init(struct serve *srv, const char *token)
{
	struct serve_e2b	*x;

	x = xcalloc(1, sizeof *x);
	x->key = xstrdup(token);
	TAILQ_INIT(&x->sbs);
	srv->e2b = x;
}

void
serve_e2b_free(struct serve *srv)
{
	struct serve_e2b	*x = srv->e2b;
	struct e2b_sb		*e;

	if (x == NULL)
		return;
	while ((e = TAILQ_FIRST(&x->sbs)) != NULL) {
		TAILQ_REMOVE(&x->sbs, e, entry);
		e2b_sb_free(e);
	}
	explicit_bzero(x->key, strlen(x->key));
	free(x->key);
	free(x);
	srv->e2b = NULL;
}

/* a and b alike, in a time that says nothing of where they differ. */
static int
e2b_same(const char *a, const char *b)
{
	size_t			 al, bl, i;
	volatile unsigned char	 d;

	if (a == NULL || b == NULL)
		return (0);
	al = strlen(a);
	bl = strlen(b);
	d = al != bl;
	for (i = 0; i < bl; i++)
		d |= (unsigned char)b[i] ^ (unsigned char)a[i < al ? i : 0];
	return (d == 0);
}

/* qsup's error, as E2B's control API says one. */
static void
e2b_error_from(struct httpd_conn *conn, struct serve_error *err)
{
	e2b_error(conn, err->status, "%s", err->msg != NULL ? err->msg :
	    "failed");
	free(err->msg);
	free(err->fields);
	free(err->allow);
	memset(err, 0, sizeof *err);
}

/* When, as E2B's timestamps are (RFC 3339, UTC). */
static void
e2b_time(struct buf *b, time_t t)
{
	struct tm	tm;
	char		when[32];

	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_printf(b, "\"%s\"", when);
}

/* What create and connect answer. */
static void
e2b_created_json(struct e2b_sb *e, struct buf *b)
{
	buf_puts(b, "{\"sandboxID\":");
	buf_json_string(b, e->id);
	buf_puts(b, ",\"clientID\":\"qsup\",\"templateID\":");
	buf_json_string(b, e->template);
	buf_puts(b, ",\"alias\":");
	buf_json_string(b, e->template);
	buf_puts(b, ",\"envdVersion\":\"" E2B_ENVD_VERSION "\","
	    "\"envdAccessToken\":");
	buf_json_string(b, e->token);
	buf_puts(b, ",\"trafficAccessToken\":null,\"domain\":null}");
}

/* What get and list answer. */
static void
e2b_info_json(struct e2b_sb *e, struct serve_sb *s, struct buf *b)
{
	char	*meta;

	buf_puts(b, "{\"sandboxID\":");
	buf_json_string(b, e->id);
	buf_puts(b, ",\"clientID\":\"qsup\",\"templateID\":");
	buf_json_string(b, e->template);
	buf_puts(b, ",\"alias\":");
	buf_json_string(b, e->template);
	meta = json_dumps(e->metadata, JSON_COMPACT);
	buf_printf(b, ",\"metadata\":%s,\"startedAt\":", meta);
	free(meta);
	e2b_time(b, s->created);
	buf_puts(b, ",\"endAt\":");
	e2b_time(b, s->ttl > 0 ? s->created + (time_t)s->ttl :
	    s->created + (time_t)SERVE_TTL_MAX);
	buf_printf(b, ",\"state\":\"%s\",\"cpuCount\":%d,\"memoryMB\":%llu,"
	    "\"diskSizeMB\":0,\"envdVersion\":\"" E2B_ENVD_VERSION "\","
	    "\"envdAccessToken\":", s->state == SERVE_PAUSED ? "paused" :
	    "running", s->profile.cpus,
	    (unsigned long long)s->profile.memory_mib);
	buf_json_string(b, e->token);
	buf_puts(b, ",\"domain\":null,\"allowInternetAccess\":false}");
}

/* An object of strings, or absent: 0, or -1 with *why. */
static int
e2b_strings(json_t *v, const char **why)
{
	const char	*k;
	json_t		*x;

	if (v == NULL || json_is_null(v))
		return (0);
	if (!json_is_object(v)) {
		*why = "must be an object of strings";
		return (-1);
	}
	json_object_foreach(v, k, x) {
		if (!json_is_string(x)) {
			*why = "must be an object of strings";
			return (-1);
		}
	}
	return (0);
}

/*
 * A template's profile: "base" is the server's own (NULL); any other
 * name must be a qsup profile's. 0, or -1 and the client told.
 */
static int
e2b_template(struct httpd_conn *conn, const char *tpl, const char **profile)
{
	char	*path, *cause = NULL;
	size_t	 i;

	*profile = NULL;
	if (strcmp(tpl, "base") == 0)
		return (0);
	for (i = 0; tpl[i] != '\0'; i++) {
		if (!(tpl[i] >= 'a' && tpl[i] <= 'z') &&
		    !(tpl[i] >= 'A' && tpl[i] <= 'Z') &&
		    !(tpl[i] >= '0' && tpl[i] <= '9') &&
		    tpl[i] != '-' && tpl[i] != '_' && tpl[i] != '.')
			break;
	}
	if (i == 0 || i > SERVE_NAME_MAX || tpl[i] != '\0' || tpl[0] == '.') {
		e2b_error(conn, 400, "templateID \"%.64s\": not a name of a "
		    "qsup profile (letters, digits, '-', '_', '.')", tpl);
		return (-1);
	}
	if ((path = profile_find(tpl, &cause)) == NULL) {
		e2b_error(conn, 404, "template %s: no qsup profile of that "
		    "name (%s)", tpl, cause != NULL ? cause : "not found");
		free(cause);
		return (-1);
	}
	free(path);
	*profile = tpl;
	return (0);
}

/* The fields of E2B's create that qsup cannot honour: refused by name. */
static const char *const e2b_refused[] = {
	"mcp", "network", "volumeMounts", "autoResume", "iam", NULL
};

/* A create's body checked, and its qsup create's made: 0, or -1, told. */
static int
e2b_create_check(struct httpd_conn *conn, json_t *j, const char **tpl,
    const char **profile, long long *timeout)
{
	json_t		*v;
	const char	*why = NULL;
	size_t		 i;

	if (!json_is_object(j)) {
		e2b_error(conn, 400, "the body must be a JSON object");
		return (-1);
	}
	for (i = 0; e2b_refused[i] != NULL; i++) {
		if ((v = json_object_get(j, e2b_refused[i])) != NULL &&
		    !json_is_null(v)) {
			e2b_error(conn, 400, "%s: not supported by qsup's E2B "
			    "front end", e2b_refused[i]);
			return (-1);
		}
	}
	if (json_is_false(json_object_get(j, "autoPauseMemory"))) {
		/* qsup's pause keeps the guest's memory, always. */
		e2b_error(conn, 400, "autoPauseMemory: false (keepMemory: false) "
		    "is not supported: a paused qsup sandbox keeps its memory");
		return (-1);
	}
	if (json_is_true(json_object_get(j, "allow_internet_access"))) {
		e2b_error(conn, 400, "allow_internet_access: true is not "
		    "supported: a qsup profile says what the guest reaches");
		return (-1);
	}
	v = json_object_get(j, "templateID");
	*tpl = v == NULL ? "base" : json_string_value(v);
	if (*tpl == NULL) {
		e2b_error(conn, 400, "templateID: must be a string");
		return (-1);
	}
	if (e2b_strings(json_object_get(j, "metadata"), &why) == -1 ||
	    e2b_strings(json_object_get(j, "envVars"), &why) == -1) {
		e2b_error(conn, 400, "metadata, envVars: %s", why);
		return (-1);
	}
	*timeout = E2B_TIMEOUT_DEFAULT;
	if ((v = json_object_get(j, "timeout")) != NULL && (!json_is_integer(v) ||
	    (*timeout = json_integer_value(v)) < 1 ||
	    *timeout > (long long)SERVE_TTL_MAX)) {
		e2b_error(conn, 400, "timeout: seconds, an integer from 1");
		return (-1);
	}
	return (e2b_template(conn, *tpl, profile));
}

/* The sandbox is ready (201), or failed to come up. */
static void
e2b_create_done(struct httpd_conn *conn, int status, const char *body,
    void *arg)
{
	struct serve	*srv = *(struct serve **)arg;
	const char	*id = (const char *)arg + sizeof srv;
	struct serve_sb	*s;
	struct e2b_sb	*e;
	struct buf	 b = { 0 };

	if (conn == NULL)
		;
	else if (status != 201)
		e2b_error(conn, status, "the sandbox did not come up: %s",
		    body);
	else if ((e = e2b_find(srv, id, &s)) == NULL)
		e2b_error(conn, 500, "sandbox %s went as it came up", id);
	else {
		e2b_created_json(e, &b);
		httpd_respond_json(conn, 201, b.data, b.len);
		buf_free(&b);
	}
	free(arg);
}

/* The qsup create of an E2B create, and its record. */
static void
e2b_create_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct serve		*srv = arg;
	struct serve_error	 err = { 0 };
	struct serve_sb		*s;
	struct e2b_sb		*e;
	json_t			*j, *q;
	const char		*tpl, *profile;
	char			*id, *hex, *qbody;
	long long		 timeout;
	void			*w;

	if ((j = json_loadb(body, len, 0, NULL)) == NULL) {
		e2b_error(conn, 400, "the body is not JSON");
		return;
	}
	if (e2b_create_check(conn, j, &tpl, &profile, &timeout) == -1) {
		json_decref(j);
		return;
	}
	hex = token_hex(10);
	xasprintf(&id, "e2b%s", hex);
	free(hex);
	q = json_pack("{s:s, s:I}", "name", id, "ttl", (json_int_t)timeout);
	if (profile != NULL)
		json_object_set_new(q, "profile", json_string(profile));
	if (json_is_true(json_object_get(j, "autoPause")))
		json_object_set_new(q, "on_ttl", json_string("pause"));
	qbody = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	if ((s = serve_create_json(srv, NULL, qbody, strlen(qbody),
	    &err)) == NULL) {
		if (err.status == 0)
			serve_fail(&err, 500, NULL, "the sandbox was not made");
		e2b_error_from(conn, &err);
		goto out;
	}
	e = xcalloc(1, sizeof *e);
	e->id = xstrdup(id);
	e->serial = s->serial;
	e->token = token_hex(16);
	e->template = xstrdup(tpl);
	e->metadata = json_incref(json_object_get(j, "metadata"));
	if (e->metadata == NULL || json_is_null(e->metadata)) {
		json_decref(e->metadata);
		e->metadata = json_object();
	}
	e->envs = json_incref(json_object_get(j, "envVars"));
	TAILQ_INSERT_TAIL(&srv->e2b->sbs, e, entry);
	/* The answer once it is ready: the server, then the id. */
	w = xmalloc(sizeof srv + strlen(id) + 1);
	memcpy(w, &srv, sizeof srv);
	strcpy((char *)w + sizeof srv, id);
	serve_wait(&s->create_waiters, s, conn);
	serve_wait_hook(&s->create_waiters, conn, e2b_create_done, w);
out:
	free(qbody);
	free(id);
	json_decref(j);
}

/*
 * Decoded twice, in place: the SDK sends metadata=URLSearchParams of
 * encodeURIComponent'd keys and values, and the query's own decoding
 * undoes only the encoding of the whole parameter. -1 for a bad escape.
 */
static int
e2b_decode2(char *s)
{
	ssize_t	n;

	if ((n = httpd_decode(s, strlen(s), s)) == -1 ||
	    httpd_decode(s, (size_t)n, s) == -1)
		return (-1);
	return (0);
}

/* Whether the sandbox's metadata holds every k=v of the query's. */
static int
e2b_meta_match(struct e2b_sb *e, const char *filter)
{
	char		*f, *p, *amp, *eq, *k, *v;
	const char	*have;
	int		 ok = 1;

	if (filter == NULL || *filter == '\0')
		return (1);
	p = f = xstrdup(filter);
	while (ok && p != NULL && *p != '\0') {
		if ((amp = strchr(p, '&')) != NULL)
			*amp++ = '\0';
		if ((eq = strchr(p, '=')) != NULL) {
			*eq = '\0';
			k = p;
			v = eq + 1;
			if (e2b_decode2(k) == -1 || e2b_decode2(v) == -1) {
				ok = 0;
				break;
			}
			have = json_string_value(json_object_get(e->metadata,
			    k));
			ok = have != NULL && strcmp(have, v) == 0;
		}
		p = amp;
	}
	free(f);
	return (ok);
}

/* list's filters, from its query. */
struct e2b_filter {
	const char	*query;
	char		*meta;		/* metadata=, or NULL */
	char		*tpl;		/* template=, or NULL */
	time_t		 after;		/* startedAfter=, or 0 */
};

/* Whether list shows e (of sandbox s) under f. */
static int
e2b_list_match(struct e2b_sb *e, struct serve_sb *s, struct e2b_filter *f)
{
	if (!e2b_meta_match(e, f->meta) ||
	    s->state == SERVE_STOPPING || s->state == SERVE_DEAD)
		return (0);
	/* state=running&state=paused: any of those listed. */
	if (strstr(f->query, "state=") != NULL && strstr(f->query,
	    s->state == SERVE_PAUSED ? "state=paused" : "state=running") ==
	    NULL)
		return (0);
	if (f->tpl != NULL && strcmp(f->tpl, e->template) != 0)
		return (0);
	return (f->after == 0 || s->created > f->after);
}

/* An ISO 8601 time in UTC, as the SDK's toISOString: -1 when not one. */
static time_t
e2b_iso_time(const char *v)
{
	struct tm	 tm;
	const char	*end;

	memset(&tm, 0, sizeof tm);
	if ((end = strptime(v, "%Y-%m-%dT%H:%M:%S", &tm)) == NULL)
		return (-1);
	if (*end == '.')
		for (end++; *end >= '0' && *end <= '9'; end++)
			;
	if (strcmp(end, "Z") != 0)
		return (-1);
	return (timegm(&tm));
}

/*
 * GET /v2/sandboxes (and /sandboxes): E2B's, limit at a time (all without
 * one), x-next-token naming the first of the next page, nextToken= from it.
 */
static void
e2b_list(const struct serve_req *r)
{
	struct serve		*srv = r->srv;
	struct e2b_filter	 f;
	struct e2b_sb		*e;
	struct serve_sb		*s;
	struct buf		 b = { 0 };
	char			*v, *next, *end, hdr[128];
	long			 limit = -1, n = 0;

	memset(&f, 0, sizeof f);
	f.query = r->http->query != NULL ? r->http->query : "";
	if ((v = httpd_query_param(f.query, "limit")) != NULL) {
		limit = strtol(v, &end, 10);
		if (*v == '\0' || *end != '\0' || limit < 1 || limit > 1000)
			limit = 0;
		free(v);
		if (limit == 0) {
			e2b_error(r->conn, 400, "limit: a number, 1-1000");
			return;
		}
	}
	if ((v = httpd_query_param(f.query, "startedAfter")) != NULL) {
		f.after = e2b_iso_time(v);
		free(v);
		if (f.after == -1) {
			e2b_error(r->conn, 400, "startedAfter: an ISO 8601 "
			    "time in UTC (2026-12-04T19:00:00.000Z)");
			return;
		}
	}
	f.meta = httpd_query_param(f.query, "metadata");
	f.tpl = httpd_query_param(f.query, "template");
	next = httpd_query_param(f.query, "nextToken");
	buf_puts(&b, "[");
	/* The records of sandboxes gone dropped first: none below is. */
	(void)e2b_find(srv, "", &s);
	TAILQ_FOREACH(e, &srv->e2b->sbs, entry) {
		s = serve_find(srv, e->id);
		if (next != NULL && strcmp(next, e->id) != 0)
			continue;	/* before the page */
		free(next);
		next = NULL;
		if (!e2b_list_match(e, s, &f))
			continue;
		if (n++ == limit) {
			(void)snprintf(hdr, sizeof hdr, "x-next-token: %s\r\n",
			    e->id);
			httpd_header(r->conn, hdr);
			break;
		}
		if (b.len > 1)
			buf_puts(&b, ",");
		e2b_info_json(e, s, &b);
	}
	buf_puts(&b, "]");
	httpd_respond_json(r->conn, 200, b.data, b.len);
	buf_free(&b);
	free(next);
	free(f.meta);
	free(f.tpl);
}

/* A waiter's answer (a delete's, a pause's) as E2B's: 204, or its error. */
static void
e2b_moved(struct httpd_conn *conn, int status, const char *body, void *arg)
{
	(void)arg;
	if (conn == NULL)
		return;
	if (status / 100 == 2)
		httpd_respond(conn, 204, NULL, NULL, 0);
	else
		e2b_error(conn, status, "%s", body);
}

/* A resume's end: the sandbox as create says it, or the error. */
static void
e2b_resumed(struct httpd_conn *conn, int status, const char *body,
    void *arg)
{
	e2b_create_done(conn, status == 200 ? 201 : status, body, arg);
}

/* A qsup handler's answer, to become E2B's through fn (a waiter's). */
static void
e2b_through(const struct serve_req *r, struct serve_sb *s,
    serve_handler *h, struct serve_waiters *w, serve_wait_fn *fn, void *arg)
{
	struct serve_req	 q = *r;
	struct serve_error	 err = { 0 };

	q.sb = s;
	if (h(&q, &err) == -1) {
		free(arg);
		e2b_error_from(r->conn, &err);
	} else if (serve_wait_hook(w, r->conn, fn, arg) == -1)
		free(arg);	/* answered at once, as qsup does */
}

struct e2b_op {
	struct serve	*srv;
	char		*id;
	int		 connect;	/* else a timeout */
};

/* POST /sandboxes/{id}/timeout and /v2/sandboxes/{id}/connect's body. */
static void
e2b_op_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct e2b_op	*op = arg;
	struct serve_req r = { 0 };
	struct serve_sb	*s;
	struct e2b_sb	*e;
	struct buf	 b = { 0 };
	json_t		*j = NULL, *v;
	void		*w;

	if ((e = e2b_find(op->srv, op->id, &s)) == NULL ||
	    s->state == SERVE_STOPPING || s->state == SERVE_DEAD) {
		e2b_error(conn, 404, "sandbox %s not found", op->id);
		goto out;
	}
	if (len > 0 && (j = json_loadb(body, len, 0, NULL)) == NULL) {
		e2b_error(conn, 400, "the body is not JSON");
		goto out;
	}
	v = json_object_get(j, "timeout");
	if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > (json_int_t)SERVE_TTL_MAX)) {
		e2b_error(conn, 400, "timeout: seconds, an integer");
		goto out;
	}
	if (v == NULL && !op->connect) {
		e2b_error(conn, 400, "timeout: missing");
		goto out;
	}
	if (v != NULL) {
		/* E2B's counts from now; qsup's ttl from the creation. */
		s->ttl = util_now() - s->t_created + json_integer_value(v);
		serve_life_arm(s);
	}
	if (!op->connect)
		httpd_respond(conn, 204, NULL, NULL, 0);
	else if (s->state == SERVE_PAUSED) {
		r.srv = op->srv;
		r.conn = conn;
		w = xmalloc(sizeof op->srv + strlen(op->id) + 1);
		memcpy(w, &op->srv, sizeof op->srv);
		strcpy((char *)w + sizeof op->srv, op->id);
		e2b_through(&r, s, serve_resume, &s->qmp_waiters, e2b_resumed,
		    w);
	} else {
		e2b_created_json(e, &b);
		httpd_respond_json(conn, 200, b.data, b.len);
		buf_free(&b);
	}
out:
	json_decref(j);
	free(op->id);
	free(op);
}

/* The routes of /sandboxes/{id}[/verb] and /v2/sandboxes/{id}[/verb]. */
static void
e2b_sandbox(const struct serve_req *r, const char *rest, int v2)
{
	struct serve	*srv = r->srv;
	const char	*m = r->http->method, *verb;
	char		 id[SERVE_NAME_MAX + 1];
	struct serve_sb	*s;
	struct e2b_sb	*e;
	struct e2b_op	*op;
	struct serve_req q;
	struct serve_error err = { 0 };
	struct buf	 b = { 0 };
	size_t		 n;

	n = strcspn(rest, "/");
	verb = rest + n;
	if (n == 0 || n > SERVE_NAME_MAX) {
		e2b_error(r->conn, 404, "no such sandbox");
		return;
	}
	memcpy(id, rest, n);
	id[n] = '\0';
	if ((e = e2b_find(srv, id, &s)) == NULL) {
		e2b_error(r->conn, 404, "sandbox %s not found", id);
		return;
	}
	if (!v2 && *verb == '\0' && strcmp(m, "GET") == 0 &&
	    (s->state == SERVE_STOPPING || s->state == SERVE_DEAD))
		e2b_error(r->conn, 404, "sandbox %s is gone: %s", id,
		    s->reason != NULL ? s->reason : serve_state_name(s->state));
	else if (!v2 && *verb == '\0' && strcmp(m, "GET") == 0) {
		e2b_info_json(e, s, &b);
		httpd_respond_json(r->conn, 200, b.data, b.len);
		buf_free(&b);
	} else if (!v2 && *verb == '\0' && strcmp(m, "DELETE") == 0 &&
	    s->state == SERVE_DEAD) {
		/* Freed as it is answered (200): nothing to wait for. */
		q = *r;
		q.sb = s;
		(void)serve_delete(&q, &err);
	} else if (!v2 && *verb == '\0' && strcmp(m, "DELETE") == 0)
		e2b_through(r, s, serve_delete, &s->delete_waiters, e2b_moved,
		    NULL);
	else if (!v2 && strcmp(verb, "/pause") == 0 && strcmp(m, "POST") == 0) {
		if (s->state == SERVE_PAUSED)
			e2b_error(r->conn, 409, "sandbox %s is already paused",
			    id);
		else
			e2b_through(r, s, serve_pause, &s->qmp_waiters,
			    e2b_moved, NULL);
	} else if (strcmp(m, "POST") == 0 && ((!v2 &&
	    strcmp(verb, "/timeout") == 0) || (v2 &&
	    strcmp(verb, "/connect") == 0))) {
		op = xcalloc(1, sizeof *op);
		op->srv = srv;
		op->id = xstrdup(id);
		op->connect = v2;
		httpd_read_body(r->conn, e2b_op_body, op);
	} else
		e2b_error(r->conn, 501, "%s %s: not supported by qsup's E2B "
		    "front end", m, r->http->path);
}

/* The control API: the key checked, then its route. */
static void
e2b_control(const struct serve_req *r)
{
	const char	*p = r->http->path, *m = r->http->method;
	char		*key;
	int		 ok;

	key = httpd_field(r->http, "X-API-KEY");
	ok = e2b_same(key, r->srv->e2b->key);
	free(key);
	if (!ok) {
		e2b_error(r->conn, 401, "X-API-KEY: missing or not the "
		    "server's token");
		return;
	}
	/* Else the SDK's idle keep-alives are the first closed for room. */
	httpd_conn_authed(r->conn);
	if (strcmp(p, "/v2/sandboxes") == 0 && strcmp(m, "POST") == 0)
		httpd_read_body(r->conn, e2b_create_body, r->srv);
	else if ((strcmp(p, "/v2/sandboxes") == 0 ||
	    strcmp(p, "/sandboxes") == 0) && strcmp(m, "GET") == 0)
		e2b_list(r);
	else if (strncmp(p, "/v2/sandboxes/", 14) == 0)
		e2b_sandbox(r, p + 14, 1);
	else if (strncmp(p, "/sandboxes/", 11) == 0)
		e2b_sandbox(r, p + 11, 0);
	else
		e2b_error(r->conn, 501, "%s %s: not supported by qsup's E2B "
		    "front end", m, p);
}

/* The sandbox an envd request names (its header, or its Host). */
static char *
e2b_envd_id(const struct httpd_req *h)
{
	char	*id, *host, *dot;

	if ((id = httpd_field(h, "E2b-Sandbox-Id")) != NULL)
		return (id);
	/* 49983-ID.DOMAIN, as the SDK makes it without E2B_SANDBOX_URL. */
	if ((host = httpd_field(h, "Host")) == NULL)
		return (NULL);
	if (strncmp(host, "49983-", 6) == 0 &&
	    (dot = strchr(host + 6, '.')) != NULL) {
		id = xstrndup(host + 6, dot - host - 6);
		free(host);
		return (id);
	}
	free(host);
	return (NULL);
}

/*
 * The user the SDK's user option names (Authorization: Basic USER:, or
 * ?username= on /files), newly allocated, or NULL when none.
 */
static char *
e2b_user(const struct httpd_req *h)
{
	char		*auth, *user = NULL, *colon;
	const char	*p;
	size_t		 n;

	if ((auth = httpd_field(h, "Authorization")) != NULL &&
	    strncasecmp(auth, "Basic ", 6) == 0) {
		for (p = auth + 6; *p == ' '; p++)
			;
		user = xmalloc(strlen(p) * 3 / 4 + 3);
		n = util_base64_decode(p, strlen(p), (unsigned char *)user);
		user[n] = '\0';
		if ((colon = strchr(user, ':')) != NULL)
			*colon = '\0';
	}
	free(auth);
	if (user == NULL && h->query != NULL)
		user = httpd_query_param(h->query, "username");
	return (user);
}

/* The in-sandbox API: its sandbox found, its token checked. */
static void
e2b_envd(const struct serve_req *r)
{
	const char	*p = r->http->path;
	struct e2b_req	 q;
	char		*id, *tok, *user, *msg;
	int		 ok;

	memset(&q, 0, sizeof q);
	q.r = r;
	if ((id = e2b_envd_id(r->http)) == NULL) {
		e2b_rpc_error(r->conn, "invalid_argument", "E2b-Sandbox-Id: "
		    "missing (set E2B_SANDBOX_URL to this server)");
		return;
	}
	q.e = e2b_find(r->srv, id, &q.s);
	free(id);
	if (q.e == NULL) {
		e2b_rpc_error(r->conn, "not_found", "no such sandbox");
		return;
	}
	tok = httpd_field(r->http, "X-Access-Token");
	ok = e2b_same(tok, q.e->token);
	free(tok);
	if (strcmp(p, "/health") == 0) {
		httpd_respond(r->conn, q.s->state == SERVE_READY ? 204 : 502,
		    NULL, NULL, 0);
		return;
	}
	if (!ok) {
		e2b_rpc_error(r->conn, "unauthenticated", "X-Access-Token: "
		    "missing or not this sandbox's envdAccessToken");
		return;
	}
	httpd_conn_authed(r->conn);
	/*
	 * The agent runs commands and files as its own user (root): another
	 * one is refused rather than silently run as root.
	 */
	if ((user = e2b_user(r->http)) != NULL && *user != '\0' &&
	    strcmp(user, "root") != 0) {
		if (strcmp(p, "/files") == 0)
			e2b_error(r->conn, 400, "user %.64s: qsup runs files "
			    "as the agent's user, root, only", user);
		else {
			xasprintf(&msg, "user %.64s: qsup runs commands and "
			    "files as the agent's user, root, only", user);
			if (strcmp(p, "/process.Process/Start") == 0 ||
			    strcmp(p, "/process.Process/Connect") == 0)
				e2b_stream_fail(r->conn, "invalid_argument",
				    msg);
			else
				e2b_rpc_error(r->conn, "invalid_argument",
				    "%s", msg);
			free(msg);
		}
		free(user);
		return;
	}
	free(user);
	if (strcmp(p, "/files") == 0)
		(void)e2b_files(&q);
	else if (strncmp(p, "/process.Process/", 17) == 0)
		(void)e2b_process(&q, p + 17);
	else
		(void)e2b_filesystem(&q, p + 23);
}

/* An E2B request: 1 when it was one (and is answered), else 0. */
int
serve_e2b_handle(const struct serve_req *r)
{
	const char	*p = r->http->path;

	if (r->srv->e2b == NULL || strncmp(p, "/v1/", 4) == 0)
		return (0);
	if (strcmp(p, "/v2/sandboxes") == 0 ||
	    strncmp(p, "/v2/sandboxes/", 14) == 0 ||
	    strcmp(p, "/sandboxes") == 0 || strncmp(p, "/sandboxes/", 11) == 0 ||
	    strncmp(p, "/snapshots", 10) == 0 ||
	    strncmp(p, "/templates", 10) == 0) {
		httpd_set_route(r->conn, "e2b control");
		e2b_control(r);
		return (1);
	}
	if (strcmp(p, "/health") == 0 || strcmp(p, "/files") == 0 ||
	    strncmp(p, "/process.Process/", 17) == 0 ||
	    strncmp(p, "/filesystem.Filesystem/", 23) == 0) {
		httpd_set_route(r->conn, "e2b envd");
		e2b_envd(r);
		return (1);
	}
	return (0);
}
