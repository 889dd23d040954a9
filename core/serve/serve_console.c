/*
 * The web console (contrib/console, docs/serve-api.md "Web console"): its
 * static files, served at / (index.html) and under /console/, without the
 * token (they hold no data; every call the page makes carries it), from
 * the directory found at start: build/console beside a built binary, or
 * PREFIX/share/qsup/console beside an installed one. Every answer carries
 * a Content-Security-Policy that lets the page reach its own origin only.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve_int.h"

/* No file of the console is near this; a bigger one is refused. */
#define SERVE_CONSOLE_FILE_MAX	(16 * 1024 * 1024)
/* The longest path under /console/ looked at. */
#define SERVE_CONSOLE_PATH_MAX	256

static const char serve_console_headers[] =
    "Content-Security-Policy: default-src 'none'; script-src 'self'; "
    "style-src 'self'; img-src 'self' data: blob:; font-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'none'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Referrer-Policy: no-referrer\r\n"
    "Cross-Origin-Opener-Policy: same-origin\r\n"
    "Cache-Control: no-cache\r\n";

static const struct serve_console_type {
	const char	*ext;
	const char	*type;
} serve_console_types[] = {
	{ ".html",	"text/html; charset=utf-8" },
	{ ".js",	"text/javascript; charset=utf-8" },
	{ ".mjs",	"text/javascript; charset=utf-8" },
	{ ".css",	"text/css; charset=utf-8" },
	{ ".json",	"application/json" },
	{ ".map",	"application/json" },
	{ ".svg",	"image/svg+xml" },
	{ ".png",	"image/png" },
	{ ".ico",	"image/x-icon" },
	{ ".woff2",	"font/woff2" },
	{ ".txt",	"text/plain; charset=utf-8" },
};

/* A directory that holds an index.html, as its real path, or NULL. */
static char *
serve_console_try(const char *dir)
{
	char		 real[PATH_MAX], *index;
	struct stat	 st;
	int		 ok;

	if (realpath(dir, real) == NULL)
		return (NULL);
	xasprintf(&index, "%s/index.html", real);
	ok = stat(index, &st) == 0 && S_ISREG(st.st_mode);
	free(index);
	return (ok ? xstrdup(real) : NULL);
}

/*
 * Where the console's files are: beside the binary's build (BUILD/qsup,
 * BUILD/console) or its install (PREFIX/bin/qsup,
 * PREFIX/share/qsup/console). NULL when neither holds them: / then says
 * how to build them.
 */
static void
serve_console_find(struct serve *srv)
{
	char		 exe[PATH_MAX], *dir, *slash;
	ssize_t		 len;

	free(srv->console);
	srv->console = NULL;
	if ((len = readlink("/proc/self/exe", exe, sizeof exe - 1)) == -1)
		return;
	exe[len] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return;
	*slash = '\0';
	xasprintf(&dir, "%s/console", exe);
	srv->console = serve_console_try(dir);
	free(dir);
	if (srv->console != NULL || (slash = strrchr(exe, '/')) == NULL)
		return;
	*slash = '\0';
	xasprintf(&dir, "%s/share/qsup/console", exe);
	srv->console = serve_console_try(dir);
	free(dir);
}

/* Where the console was found, said once at start. */
void
serve_console_init(struct serve *srv)
{
	serve_console_find(srv);
	log_info("web console at /: %s", srv->console != NULL ? srv->console :
	    "not built (./build.sh builds it with npm)");
}

/*
 * A path under the directory is a few segments of [A-Za-z0-9._-], none
 * empty nor beginning with a dot (so neither "." nor ".." nor a hidden
 * file): 1, or 0.
 */
int
serve_console_name_ok(const char *p)
{
	size_t	n = 0, i;

	if (strlen(p) > SERVE_CONSOLE_PATH_MAX)
		return (0);
	for (i = 0;; i++) {
		if (p[i] == '/' || p[i] == '\0') {
			if (n == 0)
				return (0);
			if (p[i] == '\0')
				return (1);
			n = 0;
			continue;
		}
		if (n == 0 && p[i] == '.')
			return (0);
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789._-", p[i]) == NULL)
			return (0);
		n++;
	}
}

static const char *
serve_console_type(const char *name)
{
	const char	*dot;
	size_t		 i;

	if ((dot = strrchr(name, '.')) != NULL)
		for (i = 0; i < sizeof serve_console_types /
		    sizeof serve_console_types[0]; i++)
			if (strcmp(dot, serve_console_types[i].ext) == 0)
				return (serve_console_types[i].type);
	return ("application/octet-stream");
}

/*
 * The file name (checked) under dir, read whole: 0 with *data and *len,
 * or -1 with the error. Its real path must lie inside dir: a symbolic
 * link that leads out of it is refused as no file at all.
 */
static int
serve_console_read(const char *dir, const char *name, char **data,
    size_t *len, struct serve_error *err)
{
	char		*path, real[PATH_MAX];
	struct stat	 st;
	size_t		 dlen = strlen(dir), got = 0;
	ssize_t		 n;
	int		 fd = -1;

	xasprintf(&path, "%s/%s", dir, name);
	if (realpath(path, real) == NULL || strncmp(real, dir, dlen) != 0 ||
	    real[dlen] != '/' ||
	    (fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		if (fd != -1)
			close(fd);
		free(path);
		return (serve_fail(err, 404, NULL, "no file %s in the console",
		    name));
	}
	free(path);
	if (st.st_size > SERVE_CONSOLE_FILE_MAX) {
		close(fd);
		return (serve_fail(err, 500, NULL, "console file %s is over "
		    "%d bytes", name, SERVE_CONSOLE_FILE_MAX));
	}
	*data = xmalloc(st.st_size > 0 ? st.st_size : 1);
	while (got < (size_t)st.st_size) {
		n = read(fd, *data + got, st.st_size - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	*len = got;
	return (0);
}

/*
 * A request for the console (/, or a path under /console/): answered, 1;
 * any other, 0. Every path under /console/ is answered here, so none
 * reaches the API's routes without the token.
 */
int
serve_console_handle(const struct serve_req *r)
{
	struct serve_error	 err = { 0 };
	const char		*path = r->http->path, *name;
	char			*data = NULL;
	size_t			 len = 0;

	if (strcmp(path, "/") == 0)
		name = "index.html";
	else if (strncmp(path, "/console/", 9) == 0)
		name = path + 9;
	else
		return (0);
	httpd_set_route(r->conn, strcmp(path, "/") == 0 ? "/" :
	    "/console/{file}");
	httpd_header(r->conn, serve_console_headers);
	if (strcmp(r->http->method, "GET") != 0 &&
	    strcmp(r->http->method, "HEAD") != 0) {
		serve_fail(&err, 405, NULL, "method not allowed here");
		err.allow = xstrdup("GET, HEAD");
	} else if (r->srv->console == NULL)
		serve_fail(&err, 404, NULL, "the web console is not built: "
		    "./build.sh builds it into build/console with npm and the "
		    "npm registry (contrib/console), ./build.sh install copies "
		    "it to PREFIX/share/qsup/console");
	else if (!serve_console_name_ok(name))
		serve_fail(&err, 404, NULL, "no file %s in the console", name);
	else if (serve_console_read(r->srv->console, name, &data, &len,
	    &err) == 0) {
		httpd_respond(r->conn, 200, serve_console_type(name), data,
		    len);
		free(data);
		return (1);
	}
	serve_error_answer(r->conn, &err);
	return (1);
}

/* Its routes, for serve --routes (GET and HEAD, as the 405 says). */
static const struct serve_console_route {
	const char	*method;
	const char	*path;
} serve_console_routes_list[] = {
	{ "GET",  "/" },
	{ "HEAD", "/" },
	{ "GET",  "/console/{file}" },
	{ "HEAD", "/console/{file}" },
};

void
serve_console_routes(FILE *f)
{
	size_t	i;

	for (i = 0; i < sizeof serve_console_routes_list /
	    sizeof serve_console_routes_list[0]; i++)
		fprintf(f, "%s %s\n", serve_console_routes_list[i].method,
		    serve_console_routes_list[i].path);
}
