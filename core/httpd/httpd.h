/*
 * core/httpd: an HTTP/1.1 server on the libev loop, for "qsup serve".
 * Listeners on unix sockets and TCP (TLS through mbedTLS), bounded
 * connections, a request head parser of its own over the wire layer's
 * pieces (wire_head_end, wire_request_split, wire_field_split), bodies
 * buffered or streamed with backpressure, responses whole or streamed
 * (chunked, or Server-Sent Events), bearer-token checks in constant time.
 * It knows nothing of sandboxes: one handler gets every request. It uses
 * only libc, libev, mbedTLS, the base layer and the wire layer.
 *
 * Nothing here blocks: a client that stops reading fills its own bounded
 * output queue, and the producer (the handler) is told to pause through
 * httpd_pending() and the drain callback; a client that stops sending
 * holds only its own connection, and not for long: a head has
 * head_timeout to arrive whole (counted from the connection, or from the
 * first byte of a later request), a kept-alive connection idle_timeout
 * between requests, a body body_timeout between two of its bytes (as
 * nginx's client_header_timeout, keepalive_timeout, client_body_timeout).
 * A request the handler holds (an event stream, an exec's output) is not
 * timed: it is the handler's.
 *
 * Nor can clients that never authenticate fill the server: a TCP client
 * address holds at most conns_per_addr connections, connections that have
 * not yet carried the token at most unauth_max, and when a new connection
 * finds no room, an idle one is closed for it: the oldest of those not yet
 * authenticated, else (when the unauthenticated are within their share)
 * the oldest kept-alive one between requests. Only when every connection
 * is busy is the new one turned away (503).
 *
 * The connection a handler holds is valid until its response ends
 * (httpd_end, or a whole response) or close_cb has been called; the drain
 * and close callbacks belong to the request and are cleared when its
 * response ends.
 */
#ifndef QSUP_HTTPD_H
#define QSUP_HTTPD_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "base.h"

struct ev_loop;

/* Defaults for struct httpd_limits; 0 in a field means its default. */
#define HTTPD_HEAD_MAX		16384		/* a request's head: 431 */
#define HTTPD_BODY_MAX		(1024 * 1024)	/* a buffered body: 413 */
#define HTTPD_CONNS_MAX		256		/* open connections: 503 */
#define HTTPD_OUT_HIGH		(1024 * 1024)	/* queued output: "pause" */
#define HTTPD_HEAD_TIMEOUT	10.0		/* seconds for a whole head: 408 */
#define HTTPD_IDLE_TIMEOUT	60.0		/* kept alive, no request, no
						   answer going out: closed */
#define HTTPD_BODY_TIMEOUT	60.0		/* no byte of a body: 408 */
#define HTTPD_CONNS_PER_ADDR	64		/* from one TCP address: 503 */
#define HTTPD_TARGET_MAX	4096		/* path and query: 414 */

/*
 * conns_per_addr -1: no cap by address; unauth_max 0: half of conns_max
 * (at least 1), more than conns_max: conns_max.
 */
struct httpd_limits {
	size_t		 head_max;
	size_t		 body_max;
	int		 conns_max;
	size_t		 out_high;
	double		 head_timeout;
	double		 idle_timeout;
	double		 body_timeout;
	int		 conns_per_addr;
	int		 unauth_max;
};

/*
 * One request, its head parsed. Strings point into the connection's copy
 * of the head and live until the response is done (httpd_end, or the
 * connection closed). path is percent-decoded and must begin with '/'
 * (400 otherwise); query is the raw text after '?' (or "").
 */
struct httpd_req {
	const char	*method;	/* "GET", ...: a token, as sent */
	const char	*path;
	const char	*query;
	int		 minor;		/* HTTP/1.minor */
	long long	 content_length;	/* -1: none said */
	int		 chunked;	/* Transfer-Encoding: chunked */
	int		 has_body;	/* chunked, or content_length > 0 */
	int		 keep_alive;	/* the connection may be reused */
	int		 expect_continue;
	const char	*content_type;	/* or NULL */
	const char	*authorization;	/* the header's value, or NULL */
	int		 authorized;	/* httpd_set_token's token matched */
	const char	*head;		/* the head as sent, for httpd_field */
	size_t		 head_len;
};

/*
 * The parser, apart from any connection, for the fuzz target and the unit
 * tests: the head (start line to blank line) in buf, len bytes, parsed
 * into *req with its strings in the storage arena (at least len + 1
 * bytes, the caller's). 0, or the HTTP status to refuse it with (400,
 * 414, 431, 501, 505) and a static reason in *why.
 */
int		 httpd_parse_head(const char *, size_t, struct httpd_req *,
		     char *, const char **);
/*
 * s's len bytes, percent-decoded, to out (len + 1 bytes; s itself will
 * do): the decoded length, or -1 for a bad escape or an escaped NUL.
 */
ssize_t		 httpd_decode(const char *, size_t, char *);
/* The value of query parameter name, percent-decoded (newly allocated),
 * or NULL when absent. */
char		*httpd_query_param(const char *, const char *);
/* The value of the request's first header field name (any case), newly
 * allocated, or NULL when absent (or the head was not kept). */
char		*httpd_field(const struct httpd_req *, const char *);

struct httpd;
struct httpd_conn;

/*
 * The handler: called once per request once its head is in (and checked:
 * size, syntax, the token unless the path is public). The handler then
 * owns the request until it ends the response: it reads the body (or
 * not: httpd_end discards what is left) and answers with one of the
 * response calls below.
 */
typedef void	(*httpd_handler)(struct httpd_conn *, const struct httpd_req *,
		     void *);

struct httpd	*httpd_new(struct ev_loop *, const struct httpd_limits *,
		     httpd_handler, void *);
/*
 * Every request needs "Authorization: Bearer TOKEN" (compared in constant
 * time) but those to the paths listed (NULL-ended, exact matches), which
 * reach the handler with authorized 0 or 1; a listed path ending in '*'
 * is a prefix (its handler checks a key of its own, as --e2b's routes
 * do). Without a token set, none is
 * needed. A request that fails the check is answered 401 with
 * {"error":...} and WWW-Authenticate: Bearer, and never reaches the
 * handler.
 */
void		 httpd_set_token(struct httpd *, const char *,
		     const char *const *);
/*
 * Origins (NULL-ended, "https://host:port" as a browser says them) whose
 * pages may open WebSockets here besides the server's own; none by
 * default. A request with no Origin (not a page's) is not checked.
 */
void		 httpd_set_origins(struct httpd *, const char *const *);

/*
 * WebSockets (httpd_ws.c): a handler's GET upgraded with
 * httpd_ws_accept (0; or -1 with the refusal answered), then whole
 * messages both ways, each at most HTTPD_WS_MESSAGE_MAX bytes. closed is
 * told once when the WebSocket ends (the client's close code, or 1006:
 * gone without one), never after httpd_ws_close. Output backpressure is
 * a response's: httpd_set_drain_cb, httpd_over. A browser's token comes
 * as a "bearer.TOKEN" entry of Sec-WebSocket-Protocol.
 */
#define HTTPD_WS_MESSAGE_MAX	(1024 * 1024)
struct httpd_ws_cbs {
	void	(*message)(void *, int, const void *, size_t);	/* text? */
	void	(*closed)(void *, int);
};
int		 httpd_ws_accept(struct httpd_conn *,
		     const struct httpd_ws_cbs *, void *);
int		 httpd_ws_send(struct httpd_conn *, int, const void *, size_t);
void		 httpd_ws_close(struct httpd_conn *, int, const char *);
void		 httpd_ws_pause(struct httpd_conn *, int);
int		 httpd_ws_token(const struct httpd_req *, const char *);
int		 httpd_upgrading(const struct httpd_req *);
/*
 * Listen on spec: "unix:PATH" (made mode 0600; a stale socket there is
 * replaced, a live one is refused), "tcp:ADDR:PORT" or "tcp:[ADDR6]:PORT"
 * (PORT 0: any; httpd_bound tells which). With cert and key (PEM files),
 * the listener speaks TLS. A TCP listener not bound to a loopback address
 * is refused without TLS. -1 and *cause on failure.
 */
int		 httpd_listen(struct httpd *, const char *, const char *,
		     const char *, char **);
/* The address listener i is bound to, as a spec ("tcp:127.0.0.1:PORT"). */
const char	*httpd_bound(struct httpd *, size_t);
int		 httpd_connections(struct httpd *);
/* Of those, the ones that have not yet carried the token. */
int		 httpd_unauthenticated(struct httpd *);
/*
 * The connection counts as authenticated from now on, as after the
 * bearer token: for a handler of a public path that checked its own key.
 */
void		 httpd_conn_authed(struct httpd_conn *);
/* Responses begun, by status class: 1xx to 5xx, then any other. */
#define HTTPD_CLASSES	6
void		 httpd_answered(struct httpd *, unsigned long long[HTTPD_CLASSES]);

/* Why connections were closed or turned away by a limit, counted. */
enum httpd_shed {
	HTTPD_SHED_HEAD_TIMEOUT = 0,	/* the head late: 408 */
	HTTPD_SHED_IDLE_TIMEOUT,	/* kept alive, no request */
	HTTPD_SHED_BODY_TIMEOUT,	/* the body stalled: 408 */
	HTTPD_SHED_SEND_TIMEOUT,	/* an answer left unread */
	HTTPD_SHED_PER_ADDRESS,		/* its address at conns_per_addr */
	HTTPD_SHED_UNAUTHENTICATED,	/* closed for room, or over unauth_max */
	HTTPD_SHED_IDLE,		/* kept alive, closed for room */
	HTTPD_SHED_FULL,		/* turned away: every one busy */
	HTTPD_SHED_N
};
/* "head_timeout", ...: for metrics' labels. */
extern const char *const httpd_shed_names[HTTPD_SHED_N];
void		 httpd_shed(struct httpd *, unsigned long long[HTTPD_SHED_N]);
/* Stop accepting; open connections go on. */
void		 httpd_close_listeners(struct httpd *);
/* Everything closed, unix sockets unlinked. */
void		 httpd_free(struct httpd *);

/* Request bodies: read whole (at most body_max: 413) ... */
typedef void	(*httpd_body_cb)(struct httpd_conn *, const char *, size_t,
		     void *);
void		 httpd_read_body(struct httpd_conn *, httpd_body_cb, void *);
/*
 * ... or streamed: cb gets each piece as it arrives (len > 0), then once
 * with len 0 at its end. While paused, the connection's socket is not
 * read. Any size: no body_max.
 */
void		 httpd_stream_body(struct httpd_conn *, httpd_body_cb, void *);
void		 httpd_body_pause(struct httpd_conn *, int);

/*
 * Responses. A whole one ends the request (httpd_end is implied); a
 * streamed one is begun, written to, and ended. JSON errors are
 * {"error":"MESSAGE"} plus the fields given as a JSON object's members
 * (e.g. "\"limit\":\"max_sandboxes\",\"max\":16", or NULL).
 */
void		 httpd_respond(struct httpd_conn *, int, const char *,
		     const void *, size_t);
void		 httpd_respond_json(struct httpd_conn *, int, const char *,
		     size_t);
void		 httpd_error(struct httpd_conn *, int, const char *,
		     const char *);
/* Extra header lines ("Name: value\r\n"...) for the next response head. */
void		 httpd_header(struct httpd_conn *, const char *);
/* A chunked response of this status and Content-Type ... */
void		 httpd_stream_start(struct httpd_conn *, int, const char *);
void		 httpd_stream_write(struct httpd_conn *, const void *, size_t);
/* ... or an event stream (text/event-stream, chunked, no caching). */
void		 httpd_sse_start(struct httpd_conn *);
void		 httpd_sse_event(struct httpd_conn *, const char *,
		     const void *, size_t);
void		 httpd_sse_comment(struct httpd_conn *, const char *);
/* The last chunk; the connection then takes its next request. */
void		 httpd_end(struct httpd_conn *);

/*
 * Backpressure and teardown: the bytes queued for the client; drain_cb
 * once they fall below half of out_high after having passed it; close_cb
 * once the client went away or the connection failed (then no call on
 * conn may follow, and it is freed after close_cb returns). A response
 * under way when the server is freed gets close_cb too.
 */
size_t		 httpd_pending(struct httpd_conn *);
int		 httpd_over(struct httpd_conn *);	/* pending >= out_high */
void		 httpd_set_drain_cb(struct httpd_conn *, void (*)(void *),
		     void *);
void		 httpd_set_close_cb(struct httpd_conn *, void (*)(void *),
		     void *);
/* Close at once (a response cut short): close_cb is called. */
void		 httpd_abort(struct httpd_conn *);

/*
 * Every response recorded, a JSON line each, into the file at path
 * (appended): httpd_record.c says what a line holds. route names the
 * pattern the handler matched, for the line (a static string).
 */
int		 httpd_record(struct httpd *, const char *, char **);
void		 httpd_set_route(struct httpd_conn *, const char *);

#endif
