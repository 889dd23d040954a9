/*
 * The client of "qsup serve"'s API (docs/api.md), through libcurl: which
 * server and token (QSUP_HOST, QSUP_TOKEN, ...), JSON calls, files up and
 * down streamed, and an exec: its event stream turned back into bytes on
 * our stdout and stderr (or collected, for MCP), with its stdin uploaded
 * beside it on a curl multi handle. The commands (cmd_client.c) and MCP
 * (cmd_mcp.c) share it.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "client.h"

/* Our stdin goes up in pieces this big, one POST at a time. */
#define CLIENT_STDIN_PIECE	65536

struct client {
	char		*host;		/* as given: for messages */
	char		*unix_path;	/* or NULL: TCP */
	char		*url;		/* "http://localhost", or the host's */
	char		*cacert;	/* or NULL */
	char		*token;		/* or NULL: none found */
	char		*token_cause;	/* why there is none */
};

/* One request's answer, whole, within a bound. */
struct client_body {
	struct buf	 b;
	size_t		 max;
	int		 over;
};

static int	client_inited;

/*
 * Which server a host spec names: a unix socket, or an http(s) URL with
 * no path. 0, or -1 with *cause.
 */
int
client_host_parse(const char *spec, char **unix_path, char **url,
    char **cause)
{
	const char	*rest;
	size_t		 len;

	*unix_path = *url = NULL;
	if (strncmp(spec, "unix:", 5) == 0) {
		if (spec[5] == '\0') {
			xasprintf(cause, "%s: no socket path after unix:",
			    spec);
			return (-1);
		}
		*unix_path = xstrdup(spec + 5);
		*url = xstrdup("http://localhost");
		return (0);
	}
	if (strncmp(spec, "http://", 7) == 0)
		rest = spec + 7;
	else if (strncmp(spec, "https://", 8) == 0)
		rest = spec + 8;
	else if (strncmp(spec, "tcp:", 4) == 0) {
		/* What --listen takes, for a loopback listener. */
		rest = spec + 4;
		if (*rest == '\0' || strchr(rest, '/') != NULL)
			goto bad;
		xasprintf(url, "http://%s", rest);
		return (0);
	} else
		goto bad;
	len = strlen(rest);
	while (len > 0 && rest[len - 1] == '/')
		len--;
	if (len == 0 || memchr(rest, '/', len) != NULL ||
	    memchr(rest, '?', len) != NULL || memchr(rest, '#', len) != NULL)
		goto bad;
	*url = xstrndup(spec, (rest - spec) + len);
	return (0);
bad:
	xasprintf(cause, "%s: not a host (unix:PATH, http://HOST:PORT or "
	    "https://HOST:PORT)", spec);
	return (-1);
}

/* The default host: the socket qsup serve listens on by default. */
char *
client_default_host(void)
{
	char	*base, *host;

	base = sandbox_run_path();
	xasprintf(&host, "unix:%s/qsup.sock", base);
	free(base);
	return (host);
}

/* The token: QSUP_TOKEN, else QSUP_TOKEN_FILE's, else the default file's. */
static void
client_read_token(struct client *c)
{
	const char	*env;
	char		*path, *text, *base;
	size_t		 len;

	if ((env = getenv("QSUP_TOKEN")) != NULL && *env != '\0') {
		c->token = xstrdup(env);
		return;
	}
	if ((env = getenv("QSUP_TOKEN_FILE")) != NULL && *env != '\0')
		path = xstrdup(env);
	else {
		base = sandbox_run_path();
		xasprintf(&path, "%s/token", base);
		free(base);
	}
	if ((text = util_read_file(path, &len, 4096)) == NULL) {
		xasprintf(&c->token_cause, "no token: QSUP_TOKEN is not set "
		    "and %s: %s", path, strerror(errno));
		free(path);
		return;
	}
	while (len > 0 && isspace((unsigned char)text[len - 1]))
		text[--len] = '\0';
	if (len == 0)
		xasprintf(&c->token_cause, "no token: %s is empty", path);
	else
		c->token = xstrdup(text);
	free(text);
	free(path);
}

/*
 * A client of the server at host (NULL: QSUP_HOST, else the default),
 * with cacert (NULL: QSUP_CACERT, if set) for https. NULL with *cause if
 * host does not parse.
 */
struct client *
client_new(const char *host, const char *cacert, char **cause)
{
	struct client	*c;
	const char	*env;

	if (!client_inited) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		client_inited = 1;
	}
	c = xcalloc(1, sizeof *c);
	if (host == NULL && (env = getenv("QSUP_HOST")) != NULL &&
	    *env != '\0')
		host = env;
	c->host = host != NULL ? xstrdup(host) : client_default_host();
	if (client_host_parse(c->host, &c->unix_path, &c->url, cause) == -1) {
		client_free(c);
		return (NULL);
	}
	if (cacert == NULL && (env = getenv("QSUP_CACERT")) != NULL &&
	    *env != '\0')
		cacert = env;
	if (cacert != NULL)
		c->cacert = xstrdup(cacert);
	client_read_token(c);
	return (c);
}

/* The token to send, whatever the environment said. */
void
client_set_token(struct client *c, const char *token)
{
	free(c->token);
	free(c->token_cause);
	c->token = xstrdup(token);
	c->token_cause = NULL;
}

void
client_free(struct client *c)
{
	if (c == NULL)
		return;
	free(c->host);
	free(c->unix_path);
	free(c->url);
	free(c->cacert);
	free(c->token);
	free(c->token_cause);
	free(c);
}

const char *
client_host(const struct client *c)
{
	return (c->host);
}

/* The path of a sandbox's resource, its name escaped: /v1/sandboxes/N/... */
char *
client_path(const char *name, const char *rest)
{
	char	*esc, *path;

	esc = curl_escape(name, 0);
	xasprintf(&path, "/v1/sandboxes/%s%s", esc != NULL ? esc : "",
	    rest != NULL ? rest : "");
	curl_free(esc);
	return (path);
}

struct client_handle {
	CURL			*h;
	struct curl_slist	*hdrs;
	char			 err[CURL_ERROR_SIZE];
};

/* An easy handle for path, set up for this client's host and token. */
static void
client_handle_init(struct client *c, struct client_handle *ch,
    const char *method, const char *path)
{
	char	*url, *auth;

	memset(ch, 0, sizeof *ch);
	if ((ch->h = curl_easy_init()) == NULL)
		fatalx("curl_easy_init failed");
	xasprintf(&url, "%s%s", c->url, path);
	curl_easy_setopt(ch->h, CURLOPT_URL, url);
	free(url);
	if (c->unix_path != NULL)
		curl_easy_setopt(ch->h, CURLOPT_UNIX_SOCKET_PATH,
		    c->unix_path);
	if (c->cacert != NULL)
		curl_easy_setopt(ch->h, CURLOPT_CAINFO, c->cacert);
	curl_easy_setopt(ch->h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(ch->h, CURLOPT_ERRORBUFFER, ch->err);
	curl_easy_setopt(ch->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(ch->h, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(ch->h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->token != NULL) {
		xasprintf(&auth, "Authorization: Bearer %s", c->token);
		ch->hdrs = curl_slist_append(ch->hdrs, auth);
		free(auth);
	}
}

/* Headers are final once the body is set: the handle takes them. */
static void
client_handle_headers(struct client_handle *ch, const char *extra)
{
	if (extra != NULL)
		ch->hdrs = curl_slist_append(ch->hdrs, extra);
	curl_easy_setopt(ch->h, CURLOPT_HTTPHEADER, ch->hdrs);
}

static void
client_handle_free(struct client_handle *ch)
{
	if (ch->h != NULL)
		curl_easy_cleanup(ch->h);
	curl_slist_free_all(ch->hdrs);
	ch->h = NULL;
	ch->hdrs = NULL;
}

/* Why a transfer failed, for a person: a server not there named as such. */
static char *
client_curl_cause(struct client *c, struct client_handle *ch, CURLcode rc)
{
	char	*cause, why[128];
	long	 oserr = 0;

	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST) {
		curl_easy_getinfo(ch->h, CURLINFO_OS_ERRNO, &oserr);
		if (oserr != 0)
			snprintf(why, sizeof why, "%s", strerror(oserr));
		else
			snprintf(why, sizeof why, "%s", curl_easy_strerror(rc));
		why[0] = tolower((unsigned char)why[0]);
		xasprintf(&cause, "no qsup serve at %s: %s; start one with "
		    "qsup serve", c->host, why);
		return (cause);
	}
	xasprintf(&cause, "%s: %s", c->host, ch->err[0] != '\0' ? ch->err :
	    curl_easy_strerror(rc));
	return (cause);
}

/*
 * What an error answer says: its JSON "error" (and the field or limit it
 * names), else its status. A 401 also says where the token came from.
 */
char *
client_error_text(struct client *c, long status, const char *body,
    size_t len)
{
	json_t		*j;
	const char	*err, *field, *limit;
	char		*text;
	long long	 max;

	j = body != NULL ? json_read(body, len, 0) : NULL;
	err = j != NULL ? json_path_str(j, "error") : NULL;
	if (err == NULL && strcmp(wire_reason(status), "Unknown") == 0)
		xasprintf(&text, "the server answered %ld", status);
	else if (err == NULL) {
		xasprintf(&text, "the server answered %ld %s", status,
		    wire_reason(status));
	} else if ((field = json_path_str(j, "field")) != NULL &&
	    strstr(err, field) == NULL)
		xasprintf(&text, "%s: %s", field, err);
	else if ((limit = json_path_str(j, "limit")) != NULL &&
	    json_path_int(j, "max", &max) == 0 && strstr(err, limit) == NULL)
		xasprintf(&text, "%s (limit %s, at most %lld)", err, limit,
		    max);
	else
		text = xstrdup(err);
	json_decref(j);
	if (status == 401 && c != NULL && c->token_cause != NULL) {
		free(text);
		text = xstrdup(c->token_cause);
	} else if (status == 401 && c != NULL) {
		free(text);
		xasprintf(&text, "the server at %s refused the token (401); "
		    "is QSUP_TOKEN or QSUP_TOKEN_FILE that server's?",
		    c->host);
	}
	return (text);
}

static size_t
client_body_cb(char *p, size_t size, size_t n, void *arg)
{
	struct client_body	*cb = arg;

	n *= size;
	if (cb->b.len + n > cb->max) {
		cb->over = 1;
		return (0);
	}
	buf_add(&cb->b, p, n);
	return (n);
}

/*
 * A call with an optional JSON body whose answer is JSON: 0 with *reply
 * (NULL when the answer had no body, e.g. 204) on a 2xx; CLIENT_REFUSED
 * with the server's error in *cause; -1 when there was no answer.
 */
int
client_call(struct client *c, const char *method, const char *path,
    json_t *body, json_t **reply, char **cause)
{
	struct client_handle	 ch;
	struct client_body	 rb;
	CURLcode		 rc;
	char			*text = NULL;
	long			 status = 0;
	int			 ret = -1;

	*reply = NULL;
	memset(&rb, 0, sizeof rb);
	rb.max = CLIENT_RESPONSE_MAX;
	client_handle_init(c, &ch, method, path);
	if (body != NULL) {
		text = json_dumps(body, JSON_COMPACT);
		curl_easy_setopt(ch.h, CURLOPT_POSTFIELDS, text);
		client_handle_headers(&ch, "Content-Type: application/json");
	} else
		client_handle_headers(&ch, NULL);
	curl_easy_setopt(ch.h, CURLOPT_WRITEFUNCTION, client_body_cb);
	curl_easy_setopt(ch.h, CURLOPT_WRITEDATA, &rb);
	rc = curl_easy_perform(ch.h);
	curl_easy_getinfo(ch.h, CURLINFO_RESPONSE_CODE, &status);
	if (rc != CURLE_OK && !(rc == CURLE_WRITE_ERROR && rb.over)) {
		*cause = client_curl_cause(c, &ch, rc);
		goto out;
	}
	if (rb.over) {
		xasprintf(cause, "%s: an answer over %d bytes", c->host,
		    CLIENT_RESPONSE_MAX);
		goto out;
	}
	if (status < 200 || status > 299) {
		*cause = client_error_text(c, status, rb.b.data, rb.b.len);
		ret = CLIENT_REFUSED;
		goto out;
	}
	if (rb.b.len > 0 && (*reply = json_loadb(rb.b.data, rb.b.len, 0,
	    NULL)) == NULL) {
		xasprintf(cause, "%s: the answer to %s %s is not JSON",
		    c->host, method, path);
		goto out;
	}
	ret = 0;
out:
	free(text);
	buf_free(&rb.b);
	client_handle_free(&ch);
	return (ret);
}

/* Is a qsup serve answering there? 0 if so (healthz needs no token). */
int
client_healthz(struct client *c, char **version, char **cause)
{
	json_t		*reply;
	const char	*v;
	int		 ret;

	if ((ret = client_call(c, "GET", "/v1/healthz", NULL, &reply,
	    cause)) != 0)
		return (-1);
	if (reply == NULL || json_is_true(json_path(reply, "ok")) == 0) {
		xasprintf(cause, "%s: not a qsup serve (no \"ok\" from "
		    "/v1/healthz)", c->host);
		json_decref(reply);
		return (-1);
	}
	if (version != NULL) {
		v = json_path_str(reply, "version");
		*version = xstrdup(v != NULL ? v : "unknown");
	}
	json_decref(reply);
	return (0);
}

/* An upload's source: an fd, or bytes in memory. */
struct client_source {
	int		 fd;
	const char	*data;
	size_t		 len;
	size_t		 off;
	int		 error;		/* the read's errno */
};

static size_t
client_source_cb(char *p, size_t size, size_t n, void *arg)
{
	struct client_source	*s = arg;
	ssize_t			 r;

	n *= size;
	if (s->fd == -1) {
		if (n > s->len - s->off)
			n = s->len - s->off;
		memcpy(p, s->data + s->off, n);
		s->off += n;
		return (n);
	}
	for (;;) {
		if ((r = read(s->fd, p, n)) != -1)
			return (r);
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN) {
			/* A non-blocking stdin: wait for it, blocking. */
			struct pollfd	pfd = { s->fd, POLLIN, 0 };

			poll(&pfd, 1, -1);
			continue;
		}
		s->error = errno;
		return (CURL_READFUNC_ABORT);
	}
}

/*
 * PUT a file into a sandbox: from fd (to its end; size -1 when not
 * known), or from data if fd is -1. mode -1: the server's default. 0, or
 * CLIENT_REFUSED / -1 with *cause; *size the size the server wrote.
 */
int
client_put(struct client *c, const char *name, const char *path, int mode,
    int fd, long long size, const void *data, size_t len,
    long long *written, char **cause)
{
	struct client_handle	 ch;
	struct client_body	 rb;
	struct client_source	 src;
	CURLcode		 rc;
	json_t			*j;
	char			*esc, *rest, *url;
	long			 status = 0;
	int			 ret = -1;
	long long		 n;

	memset(&rb, 0, sizeof rb);
	rb.max = CLIENT_RESPONSE_MAX;
	memset(&src, 0, sizeof src);
	src.fd = fd;
	src.data = data;
	src.len = len;
	esc = curl_escape(path, 0);
	if (mode >= 0)
		xasprintf(&rest, "/files?path=%s&mode=%04o", esc, mode);
	else
		xasprintf(&rest, "/files?path=%s", esc);
	curl_free(esc);
	url = client_path(name, rest);
	free(rest);
	client_handle_init(c, &ch, "PUT", url);
	free(url);
	client_handle_headers(&ch, "Content-Type: application/octet-stream");
	curl_easy_setopt(ch.h, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(ch.h, CURLOPT_READFUNCTION, client_source_cb);
	curl_easy_setopt(ch.h, CURLOPT_READDATA, &src);
	if (fd == -1)
		size = len;
	if (size >= 0)
		curl_easy_setopt(ch.h, CURLOPT_INFILESIZE_LARGE,
		    (curl_off_t)size);
	curl_easy_setopt(ch.h, CURLOPT_WRITEFUNCTION, client_body_cb);
	curl_easy_setopt(ch.h, CURLOPT_WRITEDATA, &rb);
	rc = curl_easy_perform(ch.h);
	curl_easy_getinfo(ch.h, CURLINFO_RESPONSE_CODE, &status);
	if (src.error != 0) {
		xasprintf(cause, "reading: %s", strerror(src.error));
		goto out;
	}
	if (rc != CURLE_OK) {
		*cause = client_curl_cause(c, &ch, rc);
		goto out;
	}
	if (status < 200 || status > 299) {
		*cause = client_error_text(c, status, rb.b.data, rb.b.len);
		ret = CLIENT_REFUSED;
		goto out;
	}
	if (written != NULL) {
		*written = -1;
		if ((j = json_read(rb.b.data, rb.b.len, 0)) != NULL &&
		    json_path_int(j, "size", &n) == 0)
			*written = n;
		json_decref(j);
	}
	ret = 0;
out:
	buf_free(&rb.b);
	client_handle_free(&ch);
	return (ret);
}

/* A download's sink: an fd, or memory within a bound; errors collected. */
struct client_sink {
	CURL		*h;
	int		 fd;
	struct buf	 b;
	size_t		 max;
	int		 truncated;
	int		 error;		/* the write's errno */
	struct buf	 err;		/* an error answer's body */
	size_t		 total;
};

/* Write all of p to fd, waiting for it if it is non-blocking. */
int
client_write_all(int fd, const void *p, size_t len)
{
	struct pollfd	 pfd;
	ssize_t		 n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				pfd.fd = fd;
				pfd.events = POLLOUT;
				poll(&pfd, 1, -1);
				continue;
			}
			return (-1);
		}
		p = (const char *)p + n;
		len -= n;
	}
	return (0);
}

static size_t
client_sink_cb(char *p, size_t size, size_t n, void *arg)
{
	struct client_sink	*s = arg;
	long			 status = 0;
	size_t			 take;

	n *= size;
	curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		if (s->err.len + n <= CLIENT_RESPONSE_MAX)
			buf_add(&s->err, p, n);
		return (n);
	}
	s->total += n;
	if (s->fd != -1) {
		if (client_write_all(s->fd, p, n) == -1) {
			s->error = errno;
			return (0);
		}
		return (n);
	}
	take = n;
	if (s->b.len + take > s->max) {
		take = s->max - s->b.len;
		s->truncated = 1;
	}
	buf_add(&s->b, p, take);
	return (n);
}

/*
 * GET url (a path of the API): its bytes to fd, or, with fd -1, into
 * *out (at most max of them: *truncated says if there were more). 0, or
 * CLIENT_REFUSED / -1 with *cause.
 */
int
client_fetch(struct client *c, const char *url, int fd, struct buf *out,
    size_t max, int *truncated, char **cause)
{
	struct client_handle	 ch;
	struct client_sink	 s;
	CURLcode		 rc;
	long			 status = 0;
	int			 ret = -1;

	memset(&s, 0, sizeof s);
	s.fd = fd;
	s.max = max;
	client_handle_init(c, &ch, "GET", url);
	client_handle_headers(&ch, NULL);
	s.h = ch.h;
	curl_easy_setopt(ch.h, CURLOPT_WRITEFUNCTION, client_sink_cb);
	curl_easy_setopt(ch.h, CURLOPT_WRITEDATA, &s);
	rc = curl_easy_perform(ch.h);
	curl_easy_getinfo(ch.h, CURLINFO_RESPONSE_CODE, &status);
	if (s.error != 0) {
		xasprintf(cause, "writing: %s", strerror(s.error));
		goto out;
	}
	if (rc != CURLE_OK) {
		*cause = client_curl_cause(c, &ch, rc);
		goto out;
	}
	if (status < 200 || status > 299) {
		*cause = client_error_text(c, status, s.err.data, s.err.len);
		ret = CLIENT_REFUSED;
		goto out;
	}
	if (out != NULL) {
		*out = s.b;
		memset(&s.b, 0, sizeof s.b);
		if (out->data == NULL)
			buf_add(out, "", 0);
	}
	if (truncated != NULL)
		*truncated = s.truncated;
	ret = 0;
out:
	buf_free(&s.b);
	buf_free(&s.err);
	client_handle_free(&ch);
	return (ret);
}

/* GET a file of a sandbox, as client_fetch. */
int
client_get(struct client *c, const char *name, const char *path, int fd,
    struct buf *out, size_t max, int *truncated, char **cause)
{
	char	*esc, *rest, *url;
	int	 ret;

	esc = curl_escape(path, 0);
	xasprintf(&rest, "/files?path=%s", esc);
	curl_free(esc);
	url = client_path(name, rest);
	free(rest);
	ret = client_fetch(c, url, fd, out, max, truncated, cause);
	free(url);
	return (ret);
}

/* A small request beside the stream: stdin, signal, resize. */
struct client_aux {
	struct client_handle	 ch;
	char			*body;
	size_t			 len;
	int			 kind;
#define CLIENT_AUX_STDIN	0
#define CLIENT_AUX_OTHER	1
	struct client_aux	*next;
};

struct client_exec {
	struct client		*c;
	char			*name;
	CURLM			*multi;
	struct client_handle	 stream;
	char			*req;
	long			 status;	/* the stream's HTTP status */
	struct buf		 errbody;	/* a refusal's body */
	int			 paused;
	int			 done;
	int			 refused;
	char			*cause;
	struct client_stream	 s;

	/* the command's stdin, when it has one */
	int			 in_fd;		/* or -1 */
	const char		*in_data;	/* or NULL */
	size_t			 in_len;
	size_t			 in_off;
	int			 in_busy;	/* an upload in flight */
	int			 in_done;	/* closed, or no more wanted */
	int			 in_eof;	/* the empty body is sent */

	struct client_aux	*aux;
	const char		*pending_sig;	/* before its id came */
};

static size_t
client_exec_write_cb(char *p, size_t size, size_t n, void *arg)
{
	struct client_exec	*e = arg;

	n *= size;
	if (e->status == 0)
		curl_easy_getinfo(e->stream.h, CURLINFO_RESPONSE_CODE,
		    &e->status);
	if (e->status != 200) {
		if (e->errbody.len + n <= CLIENT_RESPONSE_MAX)
			buf_add(&e->errbody, p, n);
		return (n);
	}
	/* Our stdout is full: curl holds the bytes until it drains. */
	if (client_stream_pending(&e->s)) {
		e->paused = 1;
		return (CURL_WRITEFUNC_PAUSE);
	}
	if (client_stream_feed(&e->s, p, n) == -1)
		return (0);
	return (n);
}

/*
 * Start an exec of req (the body of POST .../exec) in sandbox name; its
 * stdin from in_fd, or in_data, when req has "stdin": true; its output to
 * out_fd and err_fd (non-blocking ones are waited for), or collected
 * (-1), at most max bytes each.
 */
struct client_exec *
client_exec_start(struct client *c, const char *name, json_t *req,
    int in_fd, const void *in_data, size_t in_len, int out_fd, int err_fd,
    size_t max)
{
	struct client_exec	*e;
	char			*path;

	e = xcalloc(1, sizeof *e);
	e->c = c;
	e->name = xstrdup(name);
	e->in_fd = in_fd;
	e->in_data = in_data;
	e->in_len = in_len;
	if (!json_is_true(json_object_get(req, "stdin")))
		e->in_done = e->in_eof = 1;
	client_stream_init(&e->s, out_fd, err_fd, max);
	if ((e->multi = curl_multi_init()) == NULL)
		fatalx("curl_multi_init failed");
	path = client_path(name, "/exec");
	client_handle_init(c, &e->stream, "POST", path);
	free(path);
	e->req = json_dumps(req, JSON_COMPACT);
	curl_easy_setopt(e->stream.h, CURLOPT_POSTFIELDS, e->req);
	client_handle_headers(&e->stream, "Content-Type: application/json");
	curl_easy_setopt(e->stream.h, CURLOPT_WRITEFUNCTION,
	    client_exec_write_cb);
	curl_easy_setopt(e->stream.h, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->stream.h, CURLOPT_PRIVATE, NULL);
	curl_multi_add_handle(e->multi, e->stream.h);
	return (e);
}

static size_t
client_discard_cb(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return (size * n);
}

/* A POST of body (len bytes, taken) beside the stream. */
static void
client_exec_aux(struct client_exec *e, int kind, const char *rest,
    char *body, size_t len)
{
	struct client_aux	*a;
	char			*path, *tail;

	a = xcalloc(1, sizeof *a);
	a->kind = kind;
	a->body = body;
	a->len = len;
	xasprintf(&tail, "/exec/%lld/%s", e->s.id, rest);
	path = client_path(e->name, tail);
	free(tail);
	client_handle_init(e->c, &a->ch, "POST", path);
	free(path);
	curl_easy_setopt(a->ch.h, CURLOPT_POSTFIELDS, a->body != NULL ?
	    a->body : "");
	curl_easy_setopt(a->ch.h, CURLOPT_POSTFIELDSIZE_LARGE,
	    (curl_off_t)len);
	client_handle_headers(&a->ch, kind == CLIENT_AUX_STDIN ?
	    "Content-Type: application/octet-stream" :
	    "Content-Type: application/json");
	/* Their answers are small, and only their status matters. */
	curl_easy_setopt(a->ch.h, CURLOPT_WRITEFUNCTION, client_discard_cb);
	curl_easy_setopt(a->ch.h, CURLOPT_PRIVATE, a);
	a->next = e->aux;
	e->aux = a;
	if (kind == CLIENT_AUX_STDIN)
		e->in_busy = 1;
	curl_multi_add_handle(e->multi, a->ch.h);
}

/* Send signal sig (a static name: "INT") to the command, once it can. */
void
client_exec_signal(struct client_exec *e, const char *sig)
{
	char	*body;

	if (e->done)
		return;
	if (e->s.id < 0) {
		e->pending_sig = sig;
		return;
	}
	xasprintf(&body, "{\"signal\":\"%s\"}", sig);
	client_exec_aux(e, CLIENT_AUX_OTHER, "signal", body, strlen(body));
}

/* Tell the command's terminal its new size. */
void
client_exec_resize(struct client_exec *e, int rows, int cols)
{
	char	*body;

	if (e->s.id < 0 || e->done)
		return;
	xasprintf(&body, "{\"rows\":%d,\"cols\":%d}", rows, cols);
	client_exec_aux(e, CLIENT_AUX_OTHER, "resize", body, strlen(body));
}

/* The next piece of stdin, if one is due: from memory, or read from in_fd. */
static void
client_exec_stdin(struct client_exec *e, int readable)
{
	char	*piece;
	size_t	 n;
	ssize_t	 r;

	if (e->in_done || e->in_busy || e->s.id < 0 || e->done)
		return;
	if (e->in_fd == -1) {
		n = e->in_len - e->in_off;
		if (n > CLIENT_STDIN_PIECE)
			n = CLIENT_STDIN_PIECE;
		piece = n > 0 ? xmalloc(n) : NULL;
		if (n > 0)
			memcpy(piece, e->in_data + e->in_off, n);
		e->in_off += n;
		if (n == 0)
			e->in_done = e->in_eof = 1;
		client_exec_aux(e, CLIENT_AUX_STDIN, "stdin", piece, n);
		return;
	}
	if (!readable)
		return;
	piece = xmalloc(CLIENT_STDIN_PIECE);
	r = read(e->in_fd, piece, CLIENT_STDIN_PIECE);
	if (r == -1 && (errno == EINTR || errno == EAGAIN)) {
		free(piece);
		return;
	}
	if (r <= 0) {
		/* End of file, or an error reading it: the same to it. */
		free(piece);
		piece = NULL;
		r = 0;
		e->in_done = e->in_eof = 1;
	}
	client_exec_aux(e, CLIENT_AUX_STDIN, "stdin", piece, r);
}

/* An aux request finished. */
static void
client_exec_aux_done(struct client_exec *e, struct client_aux *a,
    CURLcode rc)
{
	struct client_aux	**pp;
	long			  status = 0;

	curl_easy_getinfo(a->ch.h, CURLINFO_RESPONSE_CODE, &status);
	if (a->kind == CLIENT_AUX_STDIN) {
		e->in_busy = 0;
		/*
		 * 409: its stdin is closed or it exited; anything else
		 * but 204 is no better: stop sending, as the agent's
		 * clients do, and let the exit event say what happened.
		 */
		if (rc != CURLE_OK || status != 204)
			e->in_done = 1;
	}
	for (pp = &e->aux; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == a) {
			*pp = a->next;
			break;
		}
	}
	curl_multi_remove_handle(e->multi, a->ch.h);
	client_handle_free(&a->ch);
	free(a->body);
	free(a);
}

/* The stream finished: how. */
static void
client_exec_stream_done(struct client_exec *e, CURLcode rc)
{
	e->done = 1;
	if (e->status == 0)
		curl_easy_getinfo(e->stream.h, CURLINFO_RESPONSE_CODE,
		    &e->status);
	if (e->s.exit != NULL)
		return;
	if (e->s.cause != NULL) {
		e->cause = xstrdup(e->s.cause);
		return;
	}
	if (rc != CURLE_OK && e->status == 0) {
		e->cause = client_curl_cause(e->c, &e->stream, rc);
		return;
	}
	if (e->status != 200) {
		e->cause = client_error_text(e->c, e->status, e->errbody.data,
		    e->errbody.len);
		e->refused = 1;
		return;
	}
	if (rc != CURLE_OK)
		e->cause = client_curl_cause(e->c, &e->stream, rc);
	else
		e->cause = xstrdup("the exec's stream ended before its exit "
		    "event");
}

/*
 * One round: wait (at most timeout ms; wake_fd, if not -1, also wakes
 * it, *woken then set) and move every transfer on. 1 while the exec
 * runs, 0 once its exit event came (or its stream ended: see
 * client_exec_result), -1 on a write error of our own (e->s.cause).
 */
int
client_exec_step(struct client_exec *e, int wake_fd, int timeout, int *woken)
{
	struct curl_waitfd	 fds[4];
	struct client_aux	*a;
	CURLMsg			*m;
	unsigned int		 nfds = 0;
	int			 running, left, i, in_slot = -1, wake_slot = -1;

	if (woken != NULL)
		*woken = 0;
	if (e->done && !client_stream_pending(&e->s))
		return (0);
	for (i = 0; i < 2; i++) {
		if (e->s.pend[i].len > 0) {
			fds[nfds].fd = e->s.fd[i];
			fds[nfds].events = CURL_WAIT_POLLOUT;
			fds[nfds++].revents = 0;
		}
	}
	if (e->in_fd != -1 && !e->in_done && !e->in_busy && e->s.id >= 0 &&
	    !e->done) {
		in_slot = nfds;
		fds[nfds].fd = e->in_fd;
		fds[nfds].events = CURL_WAIT_POLLIN;
		fds[nfds++].revents = 0;
	}
	if (wake_fd != -1) {
		wake_slot = nfds;
		fds[nfds].fd = wake_fd;
		fds[nfds].events = CURL_WAIT_POLLIN;
		fds[nfds++].revents = 0;
	}
	if (e->done) {
		/* Only our output is left to write. */
		struct pollfd	pfd[3];

		for (i = 0; i < (int)nfds; i++) {
			pfd[i].fd = fds[i].fd;
			pfd[i].events = fds[i].events == CURL_WAIT_POLLOUT ?
			    POLLOUT : POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, nfds, timeout) > 0 && wake_slot != -1 &&
		    pfd[wake_slot].revents != 0 && woken != NULL)
			*woken = 1;
	} else if (curl_multi_poll(e->multi, fds, nfds, timeout, NULL) !=
	    CURLM_OK)
		fatalx("curl_multi_poll failed");
	if (wake_slot != -1 && fds[wake_slot].revents != 0 && woken != NULL)
		*woken = 1;
	if (client_stream_flush(&e->s) == -1)
		return (-1);
	if (e->done)
		return (client_stream_pending(&e->s) ? 1 : 0);
	if (e->paused && !client_stream_pending(&e->s)) {
		e->paused = 0;
		curl_easy_pause(e->stream.h, CURLPAUSE_CONT);
	}
	client_exec_stdin(e, in_slot != -1 && fds[in_slot].revents != 0);
	if (e->pending_sig != NULL && e->s.id >= 0) {
		client_exec_signal(e, e->pending_sig);
		e->pending_sig = NULL;
	}
	curl_multi_perform(e->multi, &running);
	while ((m = curl_multi_info_read(e->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		if (m->easy_handle == e->stream.h) {
			client_exec_stream_done(e, m->data.result);
			continue;
		}
		a = NULL;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE,
		    (char **)&a);
		if (a != NULL)
			client_exec_aux_done(e, a, m->data.result);
	}
	if (e->s.write_errno != 0)
		return (-1);
	if (e->done)
		return (client_stream_pending(&e->s) ? 1 : 0);
	/* What the start event allows now, without waiting for more. */
	if (e->in_fd == -1)
		client_exec_stdin(e, 0);
	if (e->pending_sig != NULL && e->s.id >= 0) {
		client_exec_signal(e, e->pending_sig);
		e->pending_sig = NULL;
	}
	return (1);
}

/* Its stream: the output collected, the exit event. */
struct client_stream *
client_exec_stream(struct client_exec *e)
{
	return (&e->s);
}

/*
 * How it ended, once client_exec_step returned 0 or -1: the exit status
 * as client_stream_status says it; when the exec did not run to its
 * exit, 125 and *cause (and *refused, if the server said no).
 */
int
client_exec_result(struct client_exec *e, int *refused, char **cause)
{
	*refused = 0;
	if (e->s.exit == NULL && e->cause != NULL) {
		*refused = e->refused;
		*cause = xstrdup(e->cause);
		return (QSUP_EXIT_ERROR);
	}
	return (client_stream_status(&e->s, cause));
}

void
client_exec_free(struct client_exec *e)
{
	struct client_aux	*a;

	if (e == NULL)
		return;
	while ((a = e->aux) != NULL) {
		e->aux = a->next;
		curl_multi_remove_handle(e->multi, a->ch.h);
		client_handle_free(&a->ch);
		free(a->body);
		free(a);
	}
	if (e->stream.h != NULL)
		curl_multi_remove_handle(e->multi, e->stream.h);
	client_handle_free(&e->stream);
	curl_multi_cleanup(e->multi);
	client_stream_free(&e->s);
	buf_free(&e->errbody);
	free(e->req);
	free(e->cause);
	free(e->name);
	free(e);
}
