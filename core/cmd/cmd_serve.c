/*
 * "qsup serve": named sandboxes behind a REST + SSE API (docs/serve-api.md), on
 * one loop. This file is the command: its options, the server's own
 * profile and limits, the token, the listeners, what a killed server left
 * behind, and the signals that end it. serve.c and serve_exec.c answer.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cmd.h"
#include "serve.h"

#define SERVE_TOKEN_BYTES	32
#define SERVE_STOP_MAX		15.0	/* SIGTERM: then everything is
					   killed outright */

static int	cmd_serve_exec(const struct cmd_entry *, int, char **);

#define SERVE_LISTEN		(CMD_O_LONG + 0)
#define SERVE_TOKEN_FILE	(CMD_O_LONG + 1)
#define SERVE_TLS_CERT		(CMD_O_LONG + 2)
#define SERVE_TLS_KEY		(CMD_O_LONG + 3)
#define SERVE_SET		(CMD_O_LONG + 4)
#define SERVE_LIMIT		(CMD_O_LONG + 5)	/* + serve_limits[i] */
#define SERVE_RECORD		(CMD_O_LONG + 20)
#define SERVE_ROUTES		(CMD_O_LONG + 21)
#define SERVE_E2B		(CMD_O_LONG + 22)
#define SERVE_ORIGIN		(CMD_O_LONG + 23)
#define SERVE_SPARES		(CMD_O_LONG + 24)
#define SERVE_SPARES_MAX	16

/* The options that set one of the profile's serve_* settings. */
static const char *const serve_limits[] = {
	"serve_max_sandboxes", "serve_max_memory", "serve_max_body",
	"serve_max_header", "serve_max_connections",
	"serve_max_connections_per_address", "serve_max_unauthenticated",
	"serve_head_timeout", "serve_idle_timeout", "serve_body_timeout"
};

static const struct cmd_option cmd_serve_options[] = {
	{ SERVE_LISTEN, "listen", CMD_V_STRING, "SPEC", CMD_O_REPEAT,
	  "unix:PATH, tcp:ADDR:PORT or fd:N, a socket\n"
	  "inherited (repeatable; default: systemd's\n"
	  "sockets, LISTEN_FDS, else unix:$XDG_RUNTIME_DIR/\n"
	  "qsup/qsup.sock, mode 0600). A TCP address other\n"
	  "than loopback needs TLS." },
	{ SERVE_TOKEN_FILE, "token-file", CMD_V_FILE, "FILE", 0,
	  "the bearer token every request but GET\n"
	  "/v1/healthz and /v1/openapi.json must carry\n"
	  "(default: token beside the default socket);\n"
	  "made, mode 0600, if missing" },
	{ SERVE_TLS_CERT, "tls-cert", CMD_V_FILE, "FILE", 0,
	  "PEM certificate (chain) and key: TCP listeners" },
	{ SERVE_TLS_KEY, "tls-key", CMD_V_FILE, "FILE", 0,
	  "speak TLS (mbedTLS)" },
	{ 'p', "profile", CMD_V_PROFILE, "FILE", 0,
	  "the profile of sandboxes created without one, and\n"
	  "of the server's limits (serve_max_* settings) and\n"
	  "warm pool (serve_pool)" },
	{ SERVE_SET, "set", CMD_V_SETTING, "NAME=VALUE", CMD_O_REPEAT,
	  "a setting for that profile (repeatable); a\n"
	  "request's own settings win" },
	{ SERVE_LIMIT + 0, "max-sandboxes", CMD_V_NUMBER, "N", 0,
	  "sandboxes at once (default 16)" },
	{ SERVE_LIMIT + 1, "max-memory", CMD_V_SIZE, "SIZE", 0,
	  "their guest memory together (default: three\n"
	  "quarters of the host's)" },
	{ SERVE_LIMIT + 2, "max-body", CMD_V_SIZE, "SIZE", 0,
	  "a JSON body (default 1M)" },
	{ SERVE_LIMIT + 3, "max-header", CMD_V_SIZE, "SIZE", 0,
	  "a request's head (default 16K)" },
	{ SERVE_LIMIT + 4, "max-connections", CMD_V_NUMBER, "N", 0,
	  "(default 256)" },
	{ SERVE_LIMIT + 5, "max-connections-per-address", CMD_V_NUMBER, "N",
	  0,
	  "from one TCP address, an IPv6 /64 (default 64;\n"
	  "0: no cap); unix socket clients are not counted" },
	{ SERVE_LIMIT + 6, "max-unauthenticated", CMD_V_NUMBER, "N", 0,
	  "connections that have not sent the token yet\n"
	  "(default: half of --max-connections); the oldest\n"
	  "idle one is closed to let a new one in" },
	{ SERVE_LIMIT + 7, "head-timeout", CMD_V_SECONDS, "S", 0,
	  "seconds for a request's head to arrive (10)" },
	{ SERVE_LIMIT + 8, "idle-timeout", CMD_V_SECONDS, "S", 0,
	  "seconds a kept-alive connection waits for its\n"
	  "next request (60)" },
	{ SERVE_LIMIT + 9, "body-timeout", CMD_V_SECONDS, "S", 0,
	  "seconds a request body may send nothing (60);\n"
	  "event and exec streams are never cut" },
	{ SERVE_RECORD, "record", CMD_V_FILE, "FILE", 0,
	  "append every response to FILE, a JSON line\n"
	  "each (method, route, status, type, body and\n"
	  "events, bounded): for debugging, and the\n"
	  "contract test against docs/openapi.json" },
	{ SERVE_E2B, "e2b", CMD_V_NONE, NULL, 0,
	  "also speak E2B's control and in-sandbox APIs\n"
	  "(the e2b SDK, X-API-KEY: the token), on the\n"
	  "TCP listeners: docs/e2b.md" },
	{ SERVE_ORIGIN, "allow-origin", CMD_V_STRING, "ORIGIN", CMD_O_REPEAT,
	  "a page's origin (https://HOST[:PORT]) whose\n"
	  "scripts may open the API's WebSockets besides\n"
	  "the server's own (repeatable; default: none)" },
	{ SERVE_SPARES, "spares", CMD_V_NUMBER, "N", 0,
	  "QEMUs kept started ahead (0-16, default 0) for\n"
	  "the next snapshot restore or fork copy of the\n"
	  "shape the last one had: its QEMU's own start\n"
	  "is not waited for (docs/speed.md)" },
	{ SERVE_ROUTES, "routes", CMD_V_NONE, NULL, 0,
	  "print the API's routes (METHOD PATH) and exit" },
	{ 'v', "verbose", CMD_V_NONE, NULL, 0,
	  "say what happens on stderr" },
	{ 0, NULL, 0, NULL, 0, NULL }
};

const struct cmd_entry cmd_serve_entry = {
	.name = "serve",
	.usage = "serve [--listen SPEC]... [--token-file FILE] "
	    "[--tls-cert FILE --tls-key FILE] [options]",
	.summary = "keep named sandboxes behind a REST + SSE API",
	.help =
"Serve the API of qsup-serve(8) and docs/serve-api.md (docs/openapi.json,\n"
"also served as GET /v1/openapi.json) until SIGTERM or SIGINT, which stop\n"
"every sandbox (nothing is left behind) and exit 0; a second one kills\n"
"them at once. The client commands (sandbox create, exec, cp, ls, rm,\n"
"mcp) talk to it.\n"
"\n",
	.options = cmd_serve_options,
	.flags = CMD_IN_ORDER,
	.column = 25,
	.exec = cmd_serve_exec
};

struct serve_opts {
	const char	**listen;
	size_t		  nlisten;
	const char	 *token_file;
	const char	 *tls_cert;
	const char	 *tls_key;
	const char	 *profile;
	const char	 *record;
	int		  routes;
	int		  e2b;
	const char	**origins;	/* NULL-ended, or NULL */
	size_t		  norigins;
	char		**sets;
	size_t		  nsets;
};

static volatile sig_atomic_t	serve_signals;

static void
serve_add_set(struct serve_opts *o, const char *name, const char *value)
{
	o->sets = xreallocarray(o->sets, o->nsets + 2, sizeof *o->sets);
	xasprintf(&o->sets[o->nsets++], "%s=%s", name, value);
}

/* An origin as a browser says it: a scheme and a host, no path. */
static int
serve_origin_ok(const char *v)
{
	const char	*host;

	if (strncmp(v, "http://", 7) == 0)
		host = v + 7;
	else if (strncmp(v, "https://", 8) == 0)
		host = v + 8;
	else
		return (0);
	return (*host != '\0' && strcspn(host, "/?# \t") == strlen(host));
}

/*
 * serve's options into o, the limits as settings among the --set ones, in
 * the order given: 0, or -1 on a usage error (said).
 */
static int
serve_parse(const struct cmd_entry *self, struct serve_opts *o, int argc,
    char **argv)
{
	struct cmd_args	 a;
	const char	*v;
	char		*value, *end;
	long		 n;
	size_t		 i;
	int		 key, rc = -1;

	memset(o, 0, sizeof *o);
	if (cmd_args_parse(self, argc, argv, &a) != 0)
		goto usage;
	for (i = 0; i < a.nitems; i++) {
		key = a.items[i].key;
		value = a.items[i].value;
		if (key == SERVE_LISTEN) {
			o->listen = xreallocarray(o->listen, o->nlisten + 1,
			    sizeof *o->listen);
			o->listen[o->nlisten++] = value;
		} else if (key == SERVE_ORIGIN) {
			if (!serve_origin_ok(value)) {
				log_warnx("--allow-origin %s: an origin is "
				    "http:// or https:// and a host, with "
				    "a port perhaps, and no path", value);
				goto out;
			}
			o->origins = xreallocarray(o->origins,
			    o->norigins + 2, sizeof *o->origins);
			o->origins[o->norigins++] = value;
			o->origins[o->norigins] = NULL;
		} else if (key == SERVE_SET) {
			o->sets = xreallocarray(o->sets, o->nsets + 2,
			    sizeof *o->sets);
			o->sets[o->nsets++] = xstrdup(value);
		} else if (key >= SERVE_LIMIT && key < SERVE_LIMIT +
		    (int)(sizeof serve_limits / sizeof serve_limits[0]))
			serve_add_set(o, serve_limits[key - SERVE_LIMIT], value);
	}
	o->token_file = cmd_args_get(&a, SERVE_TOKEN_FILE);
	o->tls_cert = cmd_args_get(&a, SERVE_TLS_CERT);
	o->tls_key = cmd_args_get(&a, SERVE_TLS_KEY);
	o->profile = cmd_args_get(&a, 'p');
	o->record = cmd_args_get(&a, SERVE_RECORD);
	o->routes = cmd_args_has(&a, SERVE_ROUTES);
	if (cmd_args_has(&a, 'v'))
		log_verbose = 1;
	if ((o->tls_cert == NULL) != (o->tls_key == NULL)) {
		log_warnx("--tls-cert and --tls-key go together");
		goto out;
	}
	if ((v = cmd_args_get(&a, SERVE_SPARES)) != NULL) {
		n = strtol(v, &end, 10);
		if (*v == '\0' || *end != '\0' || n < 0 ||
		    n > SERVE_SPARES_MAX) {
			log_warnx("--spares %s: a number from 0 to %d", v,
			    SERVE_SPARES_MAX);
			goto out;
		}
		sandbox_spares((size_t)n);
	}
	o->e2b = cmd_args_has(&a, SERVE_E2B);
	for (i = 0; o->e2b && i < o->nlisten; i++) {
		if (strncmp(o->listen[i], "tcp:", 4) == 0 ||
		    strncmp(o->listen[i], "fd:", 3) == 0)
			break;
	}
	if (o->e2b && i == o->nlisten) {
		log_warnx("--e2b: E2B's SDK speaks HTTP over TCP only: give "
		    "a --listen tcp:127.0.0.1:PORT (docs/e2b.md)");
		goto out;
	}
	if (a.argc == 0)
		rc = 0;
usage:
	if (rc == -1)
		log_warnx("usage: qsup %s", self->usage);
out:
	cmd_args_free(&a);
	if (rc == -1) {
		/* Refused: what was gathered goes with it. */
		for (i = 0; i < o->nsets; i++)
			free(o->sets[i]);
		free(o->sets);
		free(o->listen);
		free(o->origins);
		memset(o, 0, sizeof *o);
	}
	return (rc);
}

/* --routes: the route table, and nothing else. */
static int
serve_routes(struct serve_opts *o)
{
	size_t	i;

	serve_routes_print(stdout);
	for (i = 0; i < o->nsets; i++)
		free(o->sets[i]);
	free(o->sets);
	free(o->listen);
	free(o->origins);
	return (fflush(stdout) == 0 ? 0 : QSUP_EXIT_ERROR);
}

/*
 * The token: read from path, which must be ours alone, or made there (*made
 * set: a start that fails takes it back). A token readable by others
 * would let them drive every sandbox.
 */
static char *
serve_token(const char *path, int *made, char **cause)
{
	struct stat	 st;
	char		*t, *tok;
	size_t		 len;
	int		 fd;

	if ((fd = open(path, O_RDONLY|O_NOFOLLOW|O_CLOEXEC)) == -1 &&
	    errno == ENOENT) {
		tok = token_hex(SERVE_TOKEN_BYTES);
		fd = open(path, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC,
		    0600);
		if (fd == -1 || write(fd, tok, strlen(tok)) !=
		    (ssize_t)strlen(tok) || write(fd, "\n", 1) != 1 ||
		    close(fd) == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			if (fd != -1)
				unlink(path);
			free(tok);
			return (NULL);
		}
		log_debug("a new token in %s", path);
		*made = 1;
		return (tok);
	}
	if (fd == -1 || fstat(fd, &st) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return (NULL);
	}
	close(fd);
	if (!S_ISREG(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) != 0) {
		xasprintf(cause, "%s: the token file must be a file of this "
		    "user's that no one else may read (chmod 600 %s)", path,
		    path);
		return (NULL);
	}
	if ((t = util_read_file(path, &len, 4096)) == NULL) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	t[strcspn(t, "\r\n")] = '\0';
	if (strlen(t) < 16) {
		xasprintf(cause, "%s: a token of 16 characters or more "
		    "expected", path);
		free(t);
		return (NULL);
	}
	return (t);
}

/*
 * QEMUs a killed server left running: each holds its run directory
 * (under base) open on its command line, and its parent is gone. They
 * die with qsup (PDEATHSIG), but not if qsup's thread that spawned them
 * was not the one that died, or a debugger held them: killed here.
 */
static void
serve_sweep_qemus(const char *base)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 st;
	char		*path, *cmd, *p, *stat_text, *end;
	size_t		 len, prefix = strlen(base);
	long		 pid, ppid;

	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		pid = strtol(de->d_name, &end, 10);
		if (*end != '\0' || pid <= 1 || pid == getpid())
			continue;
		xasprintf(&path, "/proc/%ld", pid);
		if (stat(path, &st) == -1 || st.st_uid != getuid()) {
			free(path);
			continue;
		}
		free(path);
		xasprintf(&path, "/proc/%ld/cmdline", pid);
		cmd = util_read_file(path, &len, 65536);
		free(path);
		if (cmd == NULL)
			continue;
		/* Arguments are NUL-separated: look at each. */
		for (p = cmd; p < cmd + len; p += strlen(p) + 1) {
			if (strstr(p, base) != NULL &&
			    strncmp(strstr(p, base) + prefix, "/sb-", 4) == 0)
				break;
		}
		if (p >= cmd + len || strstr(cmd, "qemu-system") == NULL) {
			free(cmd);
			continue;
		}
		free(cmd);
		xasprintf(&path, "/proc/%ld/stat", pid);
		stat_text = util_read_file(path, NULL, 4096);
		free(path);
		if (stat_text == NULL || (p = strrchr(stat_text, ')')) == NULL ||
		    sscanf(p + 1, " %*c %ld", &ppid) != 1) {
			free(stat_text);
			continue;
		}
		free(stat_text);
		if (ppid > 1 && kill((pid_t)ppid, 0) == 0) {
			xasprintf(&path, "/proc/%ld/comm", ppid);
			stat_text = util_read_file(path, NULL, 64);
			free(path);
			if (stat_text != NULL && strncmp(stat_text, "qsup", 4)
			    == 0) {
				free(stat_text);
				continue;	/* a live qsup's */
			}
			free(stat_text);
		}
		log_info("killing QEMU %ld, left by a qsup that is gone", pid);
		kill((pid_t)pid, SIGKILL);
	}
	closedir(d);
}

static void
serve_signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct serve	*srv = w->data;

	(void)revents;
	if (++serve_signals >= 2) {
		log_info("second signal: killing every sandbox");
		ev_break(loop, EVBREAK_ALL);
		return;
	}
	log_info("got signal %d: stopping every sandbox", w->signum);
	httpd_close_listeners(srv->httpd);
	serve_stop_all(srv);
	if (serve_idle(srv))
		ev_break(loop, EVBREAK_ALL);
}

static void
serve_stop_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	log_warnx("the sandboxes did not stop in %g s: killing them",
	    SERVE_STOP_MAX);
	ev_break(loop, EVBREAK_ALL);
}

static void
serve_watch_stop(struct ev_loop *loop, ev_prepare *w, int revents)
{
	static ev_timer	 t;
	struct serve	*srv = w->data;

	(void)revents;
	if (!srv->stopping || ev_is_active(&t))
		return;
	ev_timer_init(&t, serve_stop_timeout_cb, SERVE_STOP_MAX, 0);
	ev_timer_start(loop, &t);
	ev_prepare_stop(loop, w);
}

/*
 * systemd's socket activation (sd_listen_fds(3), by hand): the sockets
 * passed from fd 3 on, when LISTEN_PID names this process; they become
 * listeners fd:N. Their variables go, so no child sees them.
 */
#define SERVE_LISTEN_FDS_MAX	16
static void
serve_listen_fds(struct serve_opts *o)
{
	static char	 specs[SERVE_LISTEN_FDS_MAX][32];
	const char	*pid, *fds;
	long		 n, i;

	pid = getenv("LISTEN_PID");
	fds = getenv("LISTEN_FDS");
	if (pid == NULL || fds == NULL || atol(pid) != (long)getpid())
		return;
	n = atol(fds);
	if (n < 0)
		n = 0;
	if (n > SERVE_LISTEN_FDS_MAX)
		n = SERVE_LISTEN_FDS_MAX;
	for (i = 0; i < n; i++) {
		snprintf(specs[i], sizeof specs[i], "fd:%ld", 3 + i);
		o->listen = xreallocarray(o->listen, o->nlisten + 1,
		    sizeof *o->listen);
		o->listen[o->nlisten++] = specs[i];
	}
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
}

/*
 * The listeners: the options', systemd's, or the default socket in base;
 * and --record's file, open before the first request.
 */
static int
serve_listen(struct serve *srv, struct serve_opts *o, const char *base,
    char **sock)
{
	char	*cause = NULL;
	size_t	 i;

	if (o->record != NULL && httpd_record(srv->httpd, o->record,
	    &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return (-1);
	}
	if (o->nlisten == 0)
		serve_listen_fds(o);
	if (o->nlisten == 0) {
		xasprintf(sock, "unix:%s/qsup.sock", base);
		o->listen = xreallocarray(o->listen, 1, sizeof *o->listen);
		o->listen[o->nlisten++] = *sock;
	}
	for (i = 0; i < o->nlisten; i++) {
		if (httpd_listen(srv->httpd, o->listen[i], o->tls_cert,
		    o->tls_key, &cause) == -1) {
			log_warnx("%s", cause);
			free(cause);
			return (-1);
		}
		log_info("listening on %s%s", httpd_bound(srv->httpd, i),
		    o->tls_cert != NULL && strncmp(o->listen[i], "tcp:", 4) ==
		    0 ? " (TLS)" : "");
	}
	return (0);
}

/*
 * The token every request must carry but the public ones', and with
 * --e2b, E2B's routes, which check it (X-API-KEY) themselves.
 */
static void
serve_keys(struct serve *srv, struct serve_opts *o, const char *token)
{
	static const char *const public[] = {
		"/v1/healthz", "/v1/openapi.json", "/", "/console/*", NULL
	};

	httpd_set_token(srv->httpd, token, o->e2b ? serve_e2b_public :
	    public);
	httpd_set_origins(srv->httpd, o->origins);
	if (o->e2b)
		serve_e2b_init(srv, token);
}

/*
 * The server's open files: each sandbox holds 21 descriptors here
 * (measured with 128 of them: the console's and QMP's sockets, one for
 * each of the agent's QSUP_PORT_COUNT ports, its console.log, QEMU's
 * pipes), each connection one. The usual soft limit, 1024, stopped 128
 * creates at once after 46 ("socketpair: Too many open files"), so the
 * soft limit is raised as far as the limits can need, within the hard
 * one (which only root raises); not further, as QEMU inherits it. When
 * even the hard limit is short, said at the start, not at the 47th.
 */
#define SERVE_FDS_PER_SANDBOX	(QSUP_PORT_COUNT + 8)
#define SERVE_FDS_SPARE		64	/* the server's own, a pull's */

static void
serve_nofile(const struct serve *srv)
{
	struct rlimit	rl;
	rlim_t		need;

	need = (rlim_t)srv->limits.sandboxes * SERVE_FDS_PER_SANDBOX +
	    (rlim_t)srv->limits.connections + SERVE_FDS_SPARE;
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("getrlimit RLIMIT_NOFILE");
		return;
	}
	if (rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max < need ? rl.rlim_max : need;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1) {
		log_warn("setrlimit RLIMIT_NOFILE to %llu",
		    (unsigned long long)rl.rlim_cur);
		if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
			return;
	}
	if (rl.rlim_cur < need)
		log_warnx("open files: the limit is %llu, and %d sandboxes "
		    "(max_sandboxes) with %d connections may need %llu; "
		    "creates past about %llu sandboxes may fail: raise the "
		    "hard limit (ulimit -Hn, systemd's LimitNOFILE=)",
		    (unsigned long long)rl.rlim_cur, srv->limits.sandboxes,
		    srv->limits.connections, (unsigned long long)need,
		    (unsigned long long)(rl.rlim_cur > SERVE_FDS_SPARE +
		    (rlim_t)srv->limits.connections ? (rl.rlim_cur -
		    SERVE_FDS_SPARE - srv->limits.connections) /
		    SERVE_FDS_PER_SANDBOX : 0));
	else
		log_debug("open files: soft limit %llu (%d sandboxes, %d "
		    "connections)", (unsigned long long)rl.rlim_cur,
		    srv->limits.sandboxes, srv->limits.connections);
}

/* The server's limits, from its profile: its own and its HTTP server's. */
static void
serve_set_limits(struct serve *srv, const struct profile *p,
    struct httpd_limits *hl)
{
	srv->limits.sandboxes = p->serve_max_sandboxes;
	srv->limits.memory_mib = p->serve_max_memory_mib != 0 ?
	    p->serve_max_memory_mib : facts_memory_mib() * 3 / 4;
	srv->limits.body = p->serve_max_body;
	srv->limits.header = p->serve_max_header;
	srv->limits.connections = p->serve_max_connections;
	memset(hl, 0, sizeof *hl);
	hl->head_max = srv->limits.header;
	hl->body_max = srv->limits.body;
	hl->conns_max = srv->limits.connections;
	/* The profile's 0 is "no cap"; httpd's 0 is "its default". */
	hl->conns_per_addr = p->serve_max_conns_per_addr != 0 ?
	    p->serve_max_conns_per_addr : -1;
	hl->unauth_max = p->serve_max_unauthenticated;
	hl->head_timeout = p->serve_head_timeout;
	hl->idle_timeout = p->serve_idle_timeout;
	hl->body_timeout = p->serve_body_timeout;
	serve_nofile(srv);
}

/*
 * libcurl, libarchive and libcrypto, then the profile. The libraries
 * now: one that cannot be loaded at a first pull would end the server
 * with its sandboxes (core/base/lazylib.c).
 */
static int
serve_load(struct serve_opts *o, struct profile *p, char **cause)
{
	if (lazylib_load_all(cause) == -1)
		return (-1);
	return (profile_load_set(p, o->profile, o->sets, o->nsets, cause));
}

static int
cmd_serve_exec(const struct cmd_entry *self, int argc, char **argv)
{
	struct serve_opts	 o;
	struct serve		 srv;
	struct profile		 p;
	struct httpd_limits	 hl = { 0 };
	struct accel_choice	 accel = { 0 };
	struct guest		 g;
	struct ev_loop		*loop;
	struct outq		*err;
	ev_signal		 sterm, sint, shup;
	ev_prepare		 watch;
	char			*base = NULL, *cause = NULL, *token = NULL;
	char			*token_path = NULL, *sock = NULL;
	size_t			 i;
	int			 rc = QSUP_EXIT_ERROR, made_token = 0;

	if (serve_parse(self, &o, argc, argv) == -1)
		return (QSUP_EXIT_ERROR);
	if (o.routes)
		return (serve_routes(&o));
	memset(&p, 0, sizeof p);
	if (serve_load(&o, &p, &cause) == -1) {
		log_warnx("%s", cause);
		goto out;	/* its --set and --listen freed too */
	}
	if ((base = sandbox_run_base(&cause)) == NULL) {
		log_warnx("%s", cause);
		goto out;
	}
	serve_sweep_qemus(base);
	if (o.token_file != NULL)
		token_path = xstrdup(o.token_file);
	else
		xasprintf(&token_path, "%s/token", base);
	if ((token = serve_token(token_path, &made_token, &cause)) == NULL) {
		log_warnx("%s", cause);
		goto out;
	}
	/* Measured now, so the first create does not wait for the probe. */
	if (guest_resolve(&p, &g, &cause) == -1) {
		log_warnx("%s", cause);
		goto out;
	}
	if (kvm_choose(&p, guest_qemu_binary(), g.kernel, g.initramfs,
	    &accel, &cause) == -1) {
		guest_free(&g);
		log_warnx("%s", cause);
		goto out;
	}
	guest_free(&g);
	log_debug("accelerator: %s (%s)", accel_name(accel.accel), accel.why);

	signal(SIGPIPE, SIG_IGN);
	loop = ev_default_loop(EVFLAG_AUTO);
	err = outq_new(loop, STDERR_FILENO);
	log_set_output(outq_put, err);
	serve_init(&srv, loop);
	srv.profile = o.profile;
	srv.sets = o.sets;
	srv.nsets = o.nsets;
	serve_set_limits(&srv, &p, &hl);
	srv.httpd = httpd_new(loop, &hl, serve_handle, &srv);
	serve_keys(&srv, &o, token);
	serve_console_init(&srv);
	if (serve_restore(&srv, &cause) == -1 ||	/* before the pool */
	    serve_pool_init(&srv, &p, &cause) == -1) {
		log_warnx("%s", cause);
		goto stop;
	}
	if (serve_listen(&srv, &o, base, &sock) == -1)
		goto stop;
	log_info("token in %s; %s, up to %d sandboxes, %llu MiB of guest "
	    "memory", token_path, accel_name(accel.accel),
	    srv.limits.sandboxes, (unsigned long long)srv.limits.memory_mib);

	ev_signal_init(&sterm, serve_signal_cb, SIGTERM);
	ev_signal_init(&sint, serve_signal_cb, SIGINT);
	ev_signal_init(&shup, serve_signal_cb, SIGHUP);
	sterm.data = sint.data = shup.data = &srv;
	ev_signal_start(loop, &sterm);
	ev_signal_start(loop, &sint);
	ev_signal_start(loop, &shup);
	ev_prepare_init(&watch, serve_watch_stop);
	watch.data = &srv;
	ev_prepare_start(loop, &watch);
	ev_run(loop, 0);
	rc = 0;
	ev_signal_stop(loop, &sterm);
	ev_signal_stop(loop, &sint);
	ev_signal_stop(loop, &shup);
	ev_prepare_stop(loop, &watch);
stop:
	serve_free(&srv);
	serve_e2b_free(&srv);
	httpd_free(srv.httpd);
	log_info("stopped");
	outq_flush_blocking(err);
	log_set_output(NULL, NULL);
	outq_free(err);
out:
	free(cause);
	if (rc != 0 && made_token)
		unlink(token_path);
	if (token != NULL) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	free(token_path);
	free(sock);
	free(base);
	free(accel.why);
	for (i = 0; i < o.nsets; i++)
		free(o.sets[i]);
	free(o.sets);
	free(o.listen);
	free(o.origins);
	profile_free(&p);
	return (rc);
}
