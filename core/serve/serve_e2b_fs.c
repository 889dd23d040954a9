/*
 * --e2b's filesystem.Filesystem (Stat, ListDir, MakeDir, Move, Remove)
 * and /files (GET: a file's bytes; POST: multipart uploads), each a small
 * sh script run in the guest by argv (the path is an argument, never a
 * piece of the script): busybox's stat, find, mkdir, mv, rm and cat are
 * all it needs. A script's exit says what E2B's error is: 3 no such
 * path, 4 it exists already, 5 not a directory (or one, for a read).
 * Relative paths are taken from $HOME, as E2B's are from the user's home.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "serve_int.h"
#include "serve_e2b.h"

#define E2B_SH		"cd \"${HOME:-/}\" 2>/dev/null; "
#define E2B_EXISTS	"{ [ -e \"$1\" ] || [ -L \"$1\" ] || exit 3; }; "
#define E2B_STAT	"stat -c '" E2B_STAT_FMT "' -- "

static const struct {
	const char	*method;
	const char	*script;
	const char	*args[2];	/* the request's fields, in order */
	int		 entries;	/* ListDir: many */
	int		 entry;		/* answered with {"entry":...} */
} e2b_fs_ops[] = {
	{ "Stat", E2B_SH E2B_EXISTS "exec " E2B_STAT "\"$1\"",
	  { "path", NULL }, 0, 1 },
	{ "ListDir", E2B_SH E2B_EXISTS "[ -d \"$1\" ] || exit 5; "
	  "exec find \"$1\" -mindepth 1 -maxdepth \"$2\" -exec "
	  E2B_STAT "{} +", { "path", NULL }, 1, 0 },
	{ "MakeDir", E2B_SH "{ [ -e \"$1\" ] || [ -L \"$1\" ]; } && exit 4; "
	  "mkdir -p -- \"$1\" || exit 1; exec " E2B_STAT "\"$1\"",
	  { "path", NULL }, 0, 1 },
	{ "Move", E2B_SH E2B_EXISTS "mkdir -p -- \"$(dirname -- \"$2\")\" && "
	  "mv -f -- \"$1\" \"$2\" && exec " E2B_STAT "\"$2\"",
	  { "source", "destination" }, 0, 1 },
	{ "Remove", E2B_SH E2B_EXISTS "exec rm -rf -- \"$1\"",
	  { "path", NULL }, 0, 0 },
};
#define E2B_NFS	(sizeof e2b_fs_ops / sizeof e2b_fs_ops[0])

struct e2b_fs {
	struct serve	*srv;
	char		*id;
	size_t		 op;
};

/* A script's failure, as its exit says it. */
static void
e2b_fs_fail(struct httpd_conn *conn, int code, const char *err,
    const char *path)
{
	if (code == 3)
		e2b_rpc_error(conn, "not_found", "%s: no such file or "
		    "directory", path);
	else if (code == 4)
		e2b_rpc_error(conn, "already_exists", "%s: exists already",
		    path);
	else if (code == 5)
		e2b_rpc_error(conn, "invalid_argument", "%s: not a directory",
		    path);
	else
		e2b_rpc_error(conn, "internal", "%s: %.200s", path,
		    *err != '\0' ? err : "the command failed");
}

/* Its output, entries: {"entry":E}, {"entries":[E...]} or {}. */
static void
e2b_fs_done(struct httpd_conn *conn, int code, const char *out, size_t len,
    const char *err, void *arg)
{
	struct e2b_fs		*f = arg;
	struct e2b_entry	 en;
	struct buf		 b = { 0 };
	const char		*p = out, *end = out + len, *nl;
	size_t			 n = 0;

	if (conn == NULL)
		goto out;
	if (code != 0) {
		e2b_fs_fail(conn, code, err, e2b_fs_ops[f->op].method);
		goto out;
	}
	buf_puts(&b, e2b_fs_ops[f->op].entries ? "{\"entries\":[" :
	    e2b_fs_ops[f->op].entry ? "{\"entry\":" : "{");
	while (p < end && (e2b_fs_ops[f->op].entries || e2b_fs_ops[f->op].entry)) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		/* A name with a newline in it splits: its pieces are not
		   lines of stat's, and are left out. */
		if (e2b_stat_line(p, nl - p, &en) == 0) {
			if (n++ > 0)
				buf_puts(&b, ",");
			e2b_entry_json(&en, &b);
			if (!e2b_fs_ops[f->op].entries)
				break;
		}
		p = nl + 1;
	}
	if (e2b_fs_ops[f->op].entry && n == 0) {
		e2b_rpc_error(conn, "internal", "stat said nothing usable");
		goto out;
	}
	buf_puts(&b, e2b_fs_ops[f->op].entries ? "]}" : "}");
	httpd_respond_json(conn, 200, b.data, b.len);
out:
	buf_free(&b);
	free(f->id);
	free(f);
}

static void
e2b_fs_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct e2b_fs		*f = arg;
	struct serve_error	 err = { 0 };
	struct serve_sb		*s;
	json_t			*j = NULL;
	char			*argv[7];
	const char		*a;
	char			 depth[24];
	long long		 d = 1;
	size_t			 i, k = 0;

	if (e2b_find(f->srv, f->id, &s) == NULL) {
		e2b_rpc_error(conn, "not_found", "the sandbox is gone");
		goto fail;
	}
	if ((j = json_loadb(body, len, 0, NULL)) == NULL) {
		e2b_rpc_error(conn, "invalid_argument", "the body is not JSON");
		goto fail;
	}
	/* Strings of the table and of j: not written to, nor freed. */
	argv[k++] = (char *)(uintptr_t)"/bin/sh";
	argv[k++] = (char *)(uintptr_t)"-c";
	argv[k++] = (char *)(uintptr_t)e2b_fs_ops[f->op].script;
	argv[k++] = (char *)(uintptr_t)"sh";
	for (i = 0; i < 2 && e2b_fs_ops[f->op].args[i] != NULL; i++) {
		a = json_string_value(json_object_get(j,
		    e2b_fs_ops[f->op].args[i]));
		if (a == NULL || *a == '\0' || strlen(a) > E2B_PATH_MAX) {
			e2b_rpc_error(conn, "invalid_argument", "%s: a path",
			    e2b_fs_ops[f->op].args[i]);
			goto fail;
		}
		argv[k++] = (char *)(uintptr_t)a;
	}
	if (e2b_fs_ops[f->op].entries) {
		if (json_object_get(j, "depth") != NULL &&
		    (json_path_int(j, "depth", &d) == -1 || d < 0 || d > 64)) {
			e2b_rpc_error(conn, "invalid_argument", "depth: 1-64");
			goto fail;
		}
		snprintf(depth, sizeof depth, "%lld", d < 1 ? 1 : d);
		argv[k++] = depth;
	}
	argv[k] = NULL;
	if (e2b_command(s, conn, argv, NULL, 0, e2b_fs_done, f, &err) == -1) {
		e2b_rpc_error(conn, err.status == 409 ? "unavailable" :
		    "resource_exhausted", "%s", err.msg);
		free(err.msg);
		free(err.fields);
		free(err.allow);
		goto fail;
	}
	json_decref(j);
	return;
fail:
	json_decref(j);
	free(f->id);
	free(f);
}

int
e2b_filesystem(const struct e2b_req *q, const char *method)
{
	struct e2b_fs	*f;
	size_t		 i;

	for (i = 0; i < E2B_NFS; i++) {
		if (strcmp(e2b_fs_ops[i].method, method) == 0)
			break;
	}
	if (i == E2B_NFS || strcmp(q->r->http->method, "POST") != 0) {
		/* WatchDir and the watchers: not done. */
		e2b_rpc_error(q->r->conn, "unimplemented", "filesystem."
		    "Filesystem/%s: not supported by qsup's E2B front end",
		    method);
		return (-1);
	}
	f = xcalloc(1, sizeof *f);
	f->srv = q->r->srv;
	f->id = xstrdup(q->e->id);
	f->op = i;
	httpd_read_body(q->r->conn, e2b_fs_body, f);
	return (0);
}

/* GET /files: a file's bytes, streamed as they come. */
struct e2b_get {
	char	*path;
	int	 started;
};

static void
e2b_get_started(struct serve_exec *e, void *arg)
{
	(void)e;
	(void)arg;
}

static int
e2b_get_output(struct serve_exec *e, enum exec_stream which,
    const char *b64, size_t len, void *arg)
{
	struct e2b_get	*g = arg;
	unsigned char	*raw;
	size_t		 n;

	if (which == EXEC_STDERR)
		return (0);
	if (!g->started) {
		g->started = 1;
		httpd_stream_start(e->conn, 200, "application/octet-stream");
	}
	raw = xmalloc(len * 3 / 4 + 3);
	n = util_base64_decode(b64, len, raw);
	httpd_stream_write(e->conn, raw, n);
	free(raw);
	return (httpd_over(e->conn));
}

static void
e2b_get_done(struct serve_exec *e, const struct exec_result *r,
    const char *error, void *arg)
{
	struct e2b_get	*g = arg;
	int		 ok = error == NULL && r->exit_seen && r->signal == 0;

	if (e->conn == NULL)
		;
	else if (g->started && ok && r->status == 0)
		httpd_end(e->conn);
	else if (g->started)
		httpd_abort(e->conn);	/* cut short: no clean end */
	else if (ok && r->status == 0)
		httpd_respond(e->conn, 200, "application/octet-stream", "", 0);
	else if (ok && r->status == 3)
		e2b_error(e->conn, 404, "%s: no such file", g->path);
	else if (ok && r->status == 5)
		e2b_error(e->conn, 400, "%s: a directory", g->path);
	else
		e2b_error(e->conn, 500, "%s: not read (%s)", g->path,
		    error != NULL ? error : "the command failed");
	free(g->path);
	free(g);
}

static const struct serve_exec_hook e2b_get_hook = {
	e2b_get_started, e2b_get_output, e2b_get_done, 0
};

static int
e2b_files_get(const struct e2b_req *q, char *path)
{
	struct serve_error	 err = { 0 };
	struct exec_spec	 spec;
	struct e2b_get		*g;
	char			*argv[] = {
		"/bin/sh", "-c", E2B_SH E2B_EXISTS "[ -d \"$1\" ] && exit 5; "
		"exec cat -- \"$1\"", "sh", path, NULL
	};

	memset(&spec, 0, sizeof spec);
	spec.kind = EXEC_COMMAND;
	spec.argv = argv;
	g = xcalloc(1, sizeof *g);
	g->path = path;
	if (serve_exec_hooked(q->s, q->r->conn, &spec, &e2b_get_hook, g,
	    &err) == -1) {
		e2b_error(q->r->conn, err.status, "%s", err.msg);
		free(err.msg);
		free(err.fields);
		free(err.allow);
		free(g->path);
		free(g);
		return (-1);
	}
	return (0);
}

/* POST /files: its parts written one after the other. */
struct e2b_up {
	struct serve	*srv;
	char		*id;
	char		**paths;
	char		**data;
	size_t		*lens;
	size_t		 n, at;
	struct buf	 answer;	/* [{"name","type","path"}...] */
};

static void
e2b_up_free(struct e2b_up *u)
{
	size_t	i;

	for (i = 0; i < u->n; i++) {
		free(u->paths[i]);
		free(u->data[i]);
	}
	free(u->paths);
	free(u->data);
	free(u->lens);
	free(u->id);
	buf_free(&u->answer);
	free(u);
}

static void	e2b_up_next(struct httpd_conn *, struct e2b_up *);

static void
e2b_up_done(struct httpd_conn *conn, int code, const char *out, size_t len,
    const char *err, void *arg)
{
	struct e2b_up	*u = arg;
	const char	*path = u->paths[u->at], *name;

	(void)out;
	(void)len;
	if (conn == NULL) {
		e2b_up_free(u);
		return;
	}
	if (code != 0) {
		e2b_error(conn, 500, "%s: not written: %.200s", path,
		    *err != '\0' ? err : "the command failed");
		e2b_up_free(u);
		return;
	}
	name = strrchr(path, '/') != NULL ? strrchr(path, '/') + 1 : path;
	buf_puts(&u->answer, u->at == 0 ? "[" : ",");
	buf_puts(&u->answer, "{\"name\":");
	buf_json_string(&u->answer, name);
	buf_puts(&u->answer, ",\"type\":\"file\",\"path\":");
	buf_json_string(&u->answer, path);
	buf_puts(&u->answer, "}");
	u->at++;
	e2b_up_next(conn, u);
}

static void
e2b_up_next(struct httpd_conn *conn, struct e2b_up *u)
{
	struct serve_error	 err = { 0 };
	struct serve_sb		*s;
	char			*argv[] = {
		"/bin/sh", "-c", E2B_SH "mkdir -p -- \"$(dirname -- \"$1\")\" "
		"&& exec cat > \"$1\"", "sh", NULL, NULL
	};

	if (u->at == u->n) {
		buf_puts(&u->answer, "]");
		httpd_respond_json(conn, 200, u->answer.data, u->answer.len);
		e2b_up_free(u);
		return;
	}
	if (e2b_find(u->srv, u->id, &s) == NULL) {
		e2b_error(conn, 404, "the sandbox is gone");
		e2b_up_free(u);
		return;
	}
	argv[4] = u->paths[u->at];
	if (e2b_command(s, conn, argv, u->data[u->at], u->lens[u->at],
	    e2b_up_done, u, &err) == -1) {
		e2b_error(conn, err.status, "%s", err.msg);
		free(err.msg);
		free(err.fields);
		free(err.allow);
		e2b_up_free(u);
	}
}

/* The upload's parts, each to its path: ?path= for one, its filename. */
static int
e2b_up_parts(struct e2b_up *u, const char *ctype, const char *path,
    const char *body, size_t len, const char **why)
{
	struct e2b_part	 parts[E2B_PARTS_MAX];
	char		 boundary[E2B_BOUNDARY_MAX + 1];
	size_t		 n, i;

	if (e2b_boundary(ctype, boundary, why) == -1 ||
	    e2b_multipart(boundary, body, len, parts, E2B_PARTS_MAX, &n,
	    why) == -1)
		return (-1);
	if (path != NULL && n != 1) {
		*why = "path: given, for more than one part";
		return (-1);
	}
	u->paths = xcalloc(n, sizeof *u->paths);
	u->data = xcalloc(n, sizeof *u->data);
	u->lens = xcalloc(n, sizeof *u->lens);
	for (i = 0; i < n; i++) {
		if (path != NULL)
			u->paths[i] = xstrdup(path);
		else if (parts[i].filename != NULL && parts[i].flen > 0 &&
		    parts[i].flen <= E2B_PATH_MAX &&
		    memchr(parts[i].filename, '\0', parts[i].flen) == NULL)
			u->paths[i] = xstrndup(parts[i].filename,
			    parts[i].flen);
		else {
			*why = "a part without a filename, and no ?path=";
			return (-1);
		}
		u->data[i] = xmalloc(parts[i].len + 1);
		memcpy(u->data[i], parts[i].data, parts[i].len);
		u->lens[i] = parts[i].len;
		u->n++;
	}
	return (0);
}

struct e2b_post {
	struct serve	*srv;
	char		*id;
	char		*path;		/* ?path=, or NULL */
	char		*ctype;
	int		 gzip;		/* Content-Encoding: gzip */
};

static void
e2b_post_body(struct httpd_conn *conn, const char *body, size_t len,
    void *arg)
{
	struct e2b_post	*p = arg;
	struct e2b_up	*u;
	const char	*why = NULL;

	u = xcalloc(1, sizeof *u);
	u->srv = p->srv;
	u->id = p->id;
	if (strncasecmp(p->ctype, "application/octet-stream", 24) == 0) {
		/* The body is the file, ?path= says where. */
		u->paths = xcalloc(1, sizeof *u->paths);
		u->data = xcalloc(1, sizeof *u->data);
		u->lens = xcalloc(1, sizeof *u->lens);
		u->paths[0] = p->path;
		p->path = NULL;
		u->n = 1;
		if (!p->gzip) {
			u->data[0] = xmalloc(len + 1);
			memcpy(u->data[0], body, len);
			u->lens[0] = len;
		} else if (e2b_gunzip(body, len, p->srv->limits.body,
		    &u->data[0], &u->lens[0], &why) == -1) {
			e2b_error(conn, 400, "Content-Encoding: %s", why);
			e2b_up_free(u);
			goto out;
		}
		e2b_up_next(conn, u);
	} else if (e2b_up_parts(u, p->ctype, p->path, body, len, &why) == -1) {
		e2b_error(conn, 400, "%s", why);
		e2b_up_free(u);
	} else
		e2b_up_next(conn, u);
out:
	free(p->path);
	free(p->ctype);
	free(p);
}

int
e2b_files(const struct e2b_req *q)
{
	const struct httpd_req	*h = q->r->http;
	struct e2b_post		*p;
	char			*path, *enc;
	int			 gzip = 0;

	path = httpd_query_param(h->query, "path");
	if (path != NULL && (*path == '\0' || strlen(path) > E2B_PATH_MAX)) {
		free(path);
		e2b_error(q->r->conn, 400, "path: a path in the sandbox");
		return (-1);
	}
	if (strcmp(h->method, "GET") == 0) {
		if (path == NULL) {
			e2b_error(q->r->conn, 400, "path: missing");
			return (-1);
		}
		return (e2b_files_get(q, path));
	}
	if (strcmp(h->method, "POST") != 0) {
		free(path);
		e2b_error(q->r->conn, 405, "/files: GET or POST");
		return (-1);
	}
	if (h->content_type != NULL && strncasecmp(h->content_type,
	    "application/octet-stream", 24) == 0) {
		enc = httpd_field(h, "Content-Encoding");
		gzip = enc != NULL && strcasecmp(enc, "gzip") == 0;
		if ((enc != NULL && !gzip) || path == NULL) {
			free(enc);
			free(path);
			e2b_error(q->r->conn, path == NULL ? 400 : 415,
			    "/files: an octet-stream upload needs ?path=, and "
			    "no Content-Encoding but gzip");
			return (-1);
		}
		free(enc);
	} else if ((enc = httpd_field(h, "Content-Encoding")) != NULL) {
		free(enc);
		free(path);
		e2b_error(q->r->conn, 415, "Content-Encoding: for "
		    "application/octet-stream uploads only");
		return (-1);
	} else if (h->content_type == NULL || strncasecmp(h->content_type,
	    "multipart/form-data", 19) != 0) {
		free(path);
		e2b_error(q->r->conn, 415, "/files: multipart/form-data or "
		    "application/octet-stream");
		return (-1);
	}
	p = xcalloc(1, sizeof *p);
	p->srv = q->r->srv;
	p->id = xstrdup(q->e->id);
	p->path = path;
	p->ctype = xstrdup(h->content_type);
	p->gzip = gzip;
	httpd_read_body(q->r->conn, e2b_post_body, p);
	return (0);
}
