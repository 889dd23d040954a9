/*
 * core/httpd's own header: the server, its listeners and its connections,
 * shared by the files of the layer and nothing else. The files lean one
 * way, a section each below in that order (httpd_parse.c's is httpd.h's):
 * httpd.c (the server, on top), httpd_admit.c (who gets a connection),
 * httpd_conn.c (a connection's state machine), httpd_body.c (request
 * bodies), httpd_resp.c (responses), httpd_queue.c (what those may do to
 * a connection without re-entering it), httpd_peer.c (client addresses),
 * and httpd_tls.c at the bottom. What a connection needs of the server
 * (its limits, the token and public paths, the lists and counts) it reads
 * from struct httpd, which the server hands down as c->h.
 */
#ifndef QSUP_HTTPD_INT_H
#define QSUP_HTTPD_INT_H

#include <sys/queue.h>
#include <sys/types.h>

#include <ev.h>

#include "httpd.h"

#define HTTPD_READ_MAX		65536	/* input held at once, past a head */
#define HTTPD_FIELDS_MAX	128	/* header lines in one head: 431 */
#define HTTPD_TLS_RECORD	16384	/* the most one TLS write takes */
#define HTTPD_ACCEPT_PAUSE	0.5	/* out of fds: seconds before trying again */
#define HTTPD_LINGER_MAX	32	/* turned-away connections draining */
#define HTTPD_LINGER_TIME	1.0	/* seconds one may drain */
#define HTTPD_PEER_BUCKETS	256	/* the client addresses' hash table */

struct sockaddr;
struct httpd_tls;
struct httpd_tls_conn;
struct httpd_rec;
TAILQ_HEAD(httpd_conns, httpd_conn);

struct httpd_listener {
	struct httpd	*h;
	int		 fd;
	ev_io		 io;
	ev_timer	 pause;		/* out of fds: accept again later */
	char		*bound;		/* "unix:PATH", "tcp:ADDR:PORT" */
	char		*unix_path;	/* to unlink, if still ours */
	dev_t		 unix_dev;
	ino_t		 unix_ino;
	struct httpd_tls *tls;		/* or NULL: plain */
};

/* Where a connection is between requests and inside one. */
enum httpd_conn_state {
	HTTPD_C_HEAD = 0,	/* waiting for a request head */
	HTTPD_C_REQ,		/* the handler owns the request */
	HTTPD_C_DISCARD,	/* the response ended: dropping its body */
	HTTPD_C_CLOSING		/* the last response out, then closed */
};

/*
 * Which deadline the connection's timer keeps. HEAD's is counted from
 * c->head_start and not moved by progress, so a head sent a byte at a time
 * still ends; BODY and SEND move with each byte; LINGER does not.
 */
enum httpd_clock {
	HTTPD_K_NONE = 0,	/* the handler holds the request */
	HTTPD_K_HEAD,		/* head_timeout for the (first) head */
	HTTPD_K_IDLE,		/* kept alive, nothing sent: idle_timeout */
	HTTPD_K_BODY,		/* a body wanted: body_timeout a byte */
	HTTPD_K_SEND,		/* an answer after its end: idle_timeout */
	HTTPD_K_LINGER		/* closing: HTTPD_LINGER at most */
};

/*
 * One client address (IPv4, or an IPv6 /64: the least one site is given)
 * and its connections; a unix socket's peers have none.
 */
struct httpd_peer {
	unsigned char		 addr[8];
	int			 family;
	int			 nconns;
	LIST_ENTRY(httpd_peer)	 entry;
};
LIST_HEAD(httpd_peers, httpd_peer);

/* What becomes of a request body's bytes. */
enum httpd_body_mode {
	HTTPD_B_NONE = 0,	/* nobody asked yet: they wait in c->in */
	HTTPD_B_BUFFER,		/* httpd_read_body */
	HTTPD_B_STREAM,		/* httpd_stream_body */
	HTTPD_B_DISCARD		/* the response ended without them */
};

/* Where the response to the current request is. */
enum httpd_resp_state {
	HTTPD_R_NONE = 0,
	HTTPD_R_STREAM,		/* its head out, chunks follow */
	HTTPD_R_DONE
};

/* A connection upgraded to a WebSocket (httpd_ws.c). */
struct httpd_ws {
	struct wire_ws		 dec;
	struct httpd_ws_cbs	 cbs;
	void			*arg;
	int			 closing;	/* our close frame is out */
	int			 told;		/* closed called, or not to be */
};

struct httpd_conn {
	struct httpd		*h;
	struct httpd_listener	*l;
	int			 fd;
	ev_io			 rd;
	ev_io			 wr;
	ev_timer		 timer;		/* the deadline c->clock says */
	ev_timer		 kick;		/* process c->in, next turn */
	struct httpd_tls_conn	*tls;		/* or NULL */
	struct httpd_peer	*peer;		/* or NULL: a unix socket's */

	enum httpd_clock	 clock;
	ev_tstamp		 clock_from;	/* the head_start it counts from */
	ev_tstamp		 head_start;	/* the head's first byte, or 0 */
	int			 requests;	/* heads taken */
	int			 authed;	/* a request carried the token */
	struct httpd_conns	*parked;	/* idle_unauth or idle_auth */

	enum httpd_conn_state	 state;
	int			 depth;		/* inside our own callbacks */
	int			 dead;		/* closed: freed at depth 0 */
	int			 eof;		/* the peer sent no more */
	int			 shut;		/* closing: our side shut down */
	int			 tls_want;	/* the handshake waits for */
	struct buf		 in;
	struct buf		 out;
	size_t			 out_off;	/* sent of out */
	int			 over;		/* passed out_high: drain due */

	struct httpd_req	 req;
	char			*store;		/* the req's strings */
	struct httpd_ws		*ws;		/* upgraded, or NULL */
	int			 keep_alive;	/* after this response */
	int			 continued;	/* "100 Continue" sent */

	enum httpd_body_mode	 body_mode;
	long long		 body_left;	/* Content-Length still due */
	struct wire_chunked	 chunked;
	int			 body_done;
	int			 body_started;	/* some of it was taken */
	int			 paused;
	struct buf		 body;		/* a buffered body */
	size_t			 discarded;
	httpd_body_cb		 body_cb;
	void			*body_arg;

	enum httpd_resp_state	 resp;
	int			 resp_raw;	/* HTTP/1.0: no chunks, close */
	int			 head_only;	/* HEAD: no body goes out */
	struct buf		 headers;	/* httpd_header's, for the next */

	void			(*drain_cb)(void *);
	void			*drain_arg;
	void			(*close_cb)(void *);
	void			*close_arg;

	/* httpd_record.c: this response, as --record writes it */
	const char		*route;		/* httpd_set_route's */
	int			 rejecting;	/* no request: httpd_reject */
	int			 rec_on;
	int			 rec_text;	/* its body kept */
	int			 rec_sse;
	int			 rec_cut;
	size_t			 rec_bytes;
	struct buf		 rec;		/* the line so far */
	struct buf		 rec_events;	/* its events, or its body */

	TAILQ_ENTRY(httpd_conn)	 entry;
	TAILQ_ENTRY(httpd_conn)	 park;		/* in c->parked */
};

/*
 * A connection turned away over the limit: its 503 is out and our side
 * shut, and what the client still sends is read and dropped until it
 * closes or HTTPD_LINGER_TIME passes. Closing at once, with a request
 * arriving just after, would reset the connection under the answer.
 */
struct httpd_linger {
	struct httpd		*h;
	int			 fd;
	ev_io			 rd;
	ev_timer		 timer;
	TAILQ_ENTRY(httpd_linger) entry;
};
TAILQ_HEAD(httpd_lingers, httpd_linger);

struct httpd {
	struct ev_loop		*loop;
	struct httpd_limits	 limits;
	httpd_handler		 handler;
	void			*arg;
	char			*token;
	char			**public;	/* NULL-ended */
	char			**origins;	/* NULL-ended, or NULL */
	struct httpd_listener	**listeners;
	size_t			 nlisteners;
	struct httpd_conns	 conns;
	int			 nconns;
	int			 nunauth;	/* of them, not authed */
	/* Waiting for a head, oldest first: the first to close for room. */
	struct httpd_conns	 idle_unauth;
	struct httpd_conns	 idle_auth;
	struct httpd_peers	 peers[HTTPD_PEER_BUCKETS];
	unsigned long long	 shed[HTTPD_SHED_N];
	struct httpd_lingers	 lingers;
	int			 nlingers;
	unsigned long long	 answered[HTTPD_CLASSES];	/* by class */
	struct httpd_rec	*rec;		/* --record's, or NULL */
};

/* httpd_admit.c */
int		 httpd_admit(struct httpd *, const struct sockaddr *,
		     struct httpd_peer **);

/* httpd_conn.c */
void		 httpd_conn_new(struct httpd *, struct httpd_listener *, int,
		     struct httpd_peer *);

/* httpd_ws.c */
void		 httpd_ws_input(struct httpd_conn *);
void		 httpd_ws_gone_cb(void *);

/* httpd_body.c */
int		 httpd_body_feed(struct httpd_conn *);
void		 httpd_body_failed(struct httpd_conn *, int, const char *,
		     const char *);

/* httpd_resp.c */
void		 httpd_error_json(struct buf *, const char *, const char *);
void		 httpd_count(struct httpd *, int);
void		 httpd_resp_done(struct httpd_conn *);
void		 httpd_reject(struct httpd_conn *, int, const char *,
		     const char *);

/* httpd_record.c */
void		 httpd_record_free(struct httpd *);
void		 httpd_rec_head(struct httpd_conn *, int, const char *);
void		 httpd_rec_body(struct httpd_conn *, const void *, size_t);
void		 httpd_rec_event(struct httpd_conn *, const char *,
		     const void *, size_t);
void		 httpd_rec_end(struct httpd_conn *, int);

/* httpd_queue.c */
void		 httpd_conn_queue(struct httpd_conn *, const void *, size_t);
void		 httpd_conn_kick(struct httpd_conn *);
void		 httpd_conn_next(struct httpd_conn *);
void		 httpd_notify_close(struct httpd_conn *);
void		 httpd_conn_park(struct httpd_conn *);
void		 httpd_conn_close(struct httpd_conn *, int);
void		 httpd_conn_free(struct httpd_conn *);

/* httpd_peer.c */
struct httpd_peer *httpd_peer_get(struct httpd *, const struct sockaddr *);
void		 httpd_peer_put(struct httpd *, struct httpd_peer *);

/* httpd_tls.c */
struct httpd_tls *httpd_tls_new(const char *, const char *, char **);
void		 httpd_tls_free(struct httpd_tls *);
struct httpd_tls_conn *httpd_tls_conn_new(struct httpd_tls *, int);
void		 httpd_tls_conn_free(struct httpd_tls_conn *);
#define HTTPD_TLS_OK	0
#define HTTPD_TLS_READ	1	/* wants the fd readable */
#define HTTPD_TLS_WRITE	2	/* wants the fd writable */
#define HTTPD_TLS_FAIL	-1
int		 httpd_tls_handshake(struct httpd_tls_conn *);
int		 httpd_tls_done(struct httpd_tls_conn *);
ssize_t		 httpd_tls_read(struct httpd_tls_conn *, void *, size_t);
ssize_t		 httpd_tls_write(struct httpd_tls_conn *, const void *, size_t);
int		 httpd_tls_pending(struct httpd_tls_conn *);
void		 httpd_tls_notify(struct httpd_tls_conn *);

#endif
