/*
 * "qsup serve"'s insides, shared by its files only: cmd_serve.c (the
 * command: options, listeners, signals, the loop), serve.c (the named
 * sandboxes, the router, events, metrics) and serve_exec.c (exec streams,
 * stdin, signals, terminals, files). The README's "Serving sandboxes" is the API they serve.
 */
#ifndef QSUP_SERVE_INT_H
#define QSUP_SERVE_INT_H

#include <sys/queue.h>

#include <time.h>

#include <ev.h>
#include <jansson.h>

#include "cmd.h"
#include "httpd.h"
#include "image.h"

/* glibc's <sys/queue.h> has no TAILQ_FOREACH_SAFE. */
#ifndef TAILQ_FOREACH_SAFE
#define TAILQ_FOREACH_SAFE(var, head, field, tvar)			\
	for ((var) = TAILQ_FIRST(head);					\
	    (var) != NULL && ((tvar) = TAILQ_NEXT(var, field), 1);	\
	    (var) = (tvar))
#endif

#define SERVE_NAME_MAX		63
#define SERVE_TAIL_LINES	20	/* of a dead sandbox's console */
#define SERVE_PORT_CONTROL	(QSUP_PORT_COUNT - 2)	/* signals, close,
							   resize */
#define SERVE_PORTS		(QSUP_PORT_COUNT - 2)	/* 0..: execs,
							   uploads */
#define SERVE_CHUNK		EXEC_STDIN_PIECE /* a stdin or file upload piece */
#define SERVE_EVENTS_PING	15.0	/* a comment on /v1/events */
#define SERVE_EVENTS_HIGH	(256 * 1024)	/* a subscriber this far
						   behind is dropped */
#define SERVE_DEFAULT_SANDBOXES	16

struct serve_limits {
	int		 sandboxes;
	uint64_t	 memory_mib;
	size_t		 body;
	size_t		 header;
	int		 connections;
};

enum serve_state {
	SERVE_BOOTING,
	SERVE_READY,
	SERVE_STOPPING,
	SERVE_DEAD
};

enum serve_job {
	SERVE_EXEC,
	SERVE_READ,
	SERVE_WRITE
};

struct serve;
struct serve_sb;

/*
 * One exec (or file job) in a sandbox, from its request to its exit: the
 * HTTP side of it (its client, its stdin uploads, its ports); the agent's
 * side is its exec (core/vm/exec.c).
 */
struct serve_exec {
	struct serve_sb		*sb;
	TAILQ_ENTRY(serve_exec)	 entry;
	unsigned		 id;		/* the API's */
	enum serve_job		 job;
	struct exec		*x;
	int			 port;		/* its stream's */
	int			 in_port;	/* its uploads', or -1 */
	int			 want_stdin;
	char			*path;		/* a file job's */
	struct httpd_conn	*conn;		/* its client, NULL once gone */
	int			 started;	/* the client got its head */
	double			 t_start;
	uint64_t		 bytes;		/* a file job's, so far */
	struct buf		 err;		/* a file job's stderr, bounded */
	/* stdin: one request's body at a time, queued in the exec */
	struct httpd_conn	*in_conn;
	int			 in_eof;	/* that body ended */
};
TAILQ_HEAD(serve_execs, serve_exec);

/* A request waiting for its sandbox (created, or deleted). */
struct serve_waiter {
	struct httpd_conn	*conn;
	struct serve_sb		*sb;
	TAILQ_ENTRY(serve_waiter) entry;
};
TAILQ_HEAD(serve_waiters, serve_waiter);

/* One named sandbox. */
struct serve_sb {
	struct serve		*srv;
	TAILQ_ENTRY(serve_sb)	 entry;
	char			*name;
	enum serve_state	 state;
	struct profile		 profile;
	struct accel_choice	 accel;
	struct sandbox		*sb;		/* NULL once dead */
	char			*image;
	struct image_pull	*pull;		/* getting the image */
	time_t			 created;
	double			 t_created;
	double			 boot_s;
	char			*start;		/* its start kind, once ready */
	char			*reason;	/* why it stopped, or died */
	char			*tail;		/* its console's, once dead */
	char			*report;	/* its teardown report (JSON) */
	int			 deleting;
	int			 failed;	/* failed before it was ready */
	uint16_t		*host_ports;	/* as bound, for "ports" */
	struct serve_waiters	 create_waiters;
	struct serve_waiters	 delete_waiters;
	struct serve_execs	 execs;
	unsigned		 ports_busy;	/* bit i: port i taken */
	ev_timer		 reap;		/* frees sb off its callback */
};
TAILQ_HEAD(serve_sbs, serve_sb);

/* An /v1/events subscriber. */
struct serve_sub {
	struct serve		*srv;
	struct httpd_conn	*conn;
	TAILQ_ENTRY(serve_sub)	 entry;
};
TAILQ_HEAD(serve_subs, serve_sub);

struct serve_metrics {
	unsigned long long	 boots[3];	/* cold, warm, template-build */
	unsigned long long	 execs;
	unsigned long long	 exec_buckets[12];
	double			 exec_seconds;
	unsigned long long	 proxy_up;	/* bytes, of sandboxes gone */
	unsigned long long	 proxy_down;
	unsigned long long	 deaths;
};

struct serve {
	struct ev_loop		*loop;
	struct httpd		*httpd;
	struct serve_limits	 limits;
	const char		*profile;	/* --profile, or NULL */
	char			**sets;		/* --set, for every sandbox */
	size_t			 nsets;
	struct serve_sbs	 sbs;
	struct serve_subs	 subs;
	unsigned		 next_name;
	unsigned		 next_exec;
	int			 stopping;	/* SIGTERM: tearing down */
	ev_timer		 events_ping;
	struct serve_metrics	 m;
};

/* serve.c */
extern const char *const serve_boot_kinds[3];	/* as qsup_boots_total */
void		 serve_sb_json(struct serve_sb *, struct buf *);
void		 serve_list(struct serve *, struct httpd_conn *);
void		 serve_delete(struct serve_sb *, struct httpd_conn *);
void		 serve_create_body(struct httpd_conn *, const char *, size_t,
		     void *);
void		 serve_stop_all(struct serve *);
int		 serve_idle(struct serve *);
void		 serve_free(struct serve *);
struct serve_sb	*serve_find(struct serve *, const char *);
void		 serve_sb_event(struct serve_sb *);
int		 serve_port_take(struct serve_sb *);
void		 serve_port_give(struct serve_sb *, int);
const char	*serve_state_name(enum serve_state);

/* serve_http.c */
void		 serve_init(struct serve *, struct ev_loop *);
void		 serve_handle(struct httpd_conn *, const struct httpd_req *,
		     void *);
int		 serve_json_body(struct httpd_conn *, const char *, size_t,
		     json_t **);
int		 serve_check_fields(struct httpd_conn *, json_t *,
		     const char *const *);
int		 serve_bad_field(struct httpd_conn *, const char *,
		     const char *);
void		 serve_limit(struct httpd_conn *, const char *, const char *,
		     unsigned long long);
void		 serve_event(struct serve *, const char *, const char *);
void		 serve_exec_observe(struct serve *, double);

/* serve_exec.c */
void		 serve_exec_post(struct serve_sb *, struct httpd_conn *,
		     const struct httpd_req *);
void		 serve_exec_op(struct serve_sb *, struct httpd_conn *,
		     const struct httpd_req *, unsigned, const char *);
void		 serve_files(struct serve_sb *, struct httpd_conn *,
		     const struct httpd_req *);
void		 serve_exec_sandbox_gone(struct serve_sb *, const char *);
int		 serve_exec_running(const struct serve_exec *);
int		 serve_signal_number(const char *);

#endif
