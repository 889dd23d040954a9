/*
 * core/serve: the server of "qsup serve", its named sandboxes behind a
 * REST and SSE API (docs/serve-api.md) on core/httpd. It
 * uses every layer below; the command (options, listeners, the token,
 * signals) is core/cmd's cmd_serve.c, which owns a struct serve and hands
 * serve_handle to its HTTP server. serve_int.h is private to the folder.
 */
#ifndef QSUP_SERVE_H
#define QSUP_SERVE_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include <ev.h>

#include "vm.h"
#include "httpd.h"

struct serve_limits {
	int		 sandboxes;
	uint64_t	 memory_mib;
	size_t		 body;
	size_t		 header;
	int		 connections;
};

struct serve_metrics {
	unsigned long long	 boots[3];	/* cold, warm, template-build */
	unsigned long long	 execs;
	unsigned long long	 exec_buckets[12];
	double			 exec_seconds;
	unsigned long long	 proxy_up;	/* bytes, of sandboxes gone */
	unsigned long long	 proxy_down;
	unsigned long long	 deaths;
	unsigned long long	 pool_hits;	/* creates answered from it */
	unsigned long long	 pool_misses;	/* ... of its profiles, not */
	unsigned long long	 pool_refills;	/* its sandboxes booted */
};

struct serve_sb;
struct serve_sub;
struct serve_setup;
struct serve_pool;
struct serve_persist_srv;
struct serve_e2b;
TAILQ_HEAD(serve_sbs, serve_sb);
TAILQ_HEAD(serve_subs, serve_sub);
TAILQ_HEAD(serve_setups, serve_setup);

/* The server: serve_init sets it up, its caller fills in the rest. */
struct serve {
	struct ev_loop		*loop;
	struct httpd		*httpd;
	struct serve_limits	 limits;
	const char		*profile;	/* --profile, or NULL */
	char			**sets;		/* --set, for every sandbox */
	size_t			 nsets;
	struct serve_sbs	 sbs;
	struct serve_subs	 subs;
	struct serve_setups	 setups;	/* setup layers building */
	unsigned		 next_name;
	unsigned		 next_exec;
	unsigned long long	 next_serial;	/* each sandbox's serial */
	int			 stopping;	/* SIGTERM: tearing down */
	ev_timer		 events_ping;
	struct serve_metrics	 m;
	struct serve_pool	*pool;		/* serve_pool.c's, or NULL */
	struct serve_persist_srv *persist;	/* serve_persist.c's, or NULL */
	struct serve_e2b	*e2b;		/* --e2b: serve_e2b.c's, or NULL */
	char			*console;	/* the web console's files, or NULL */
	/* serve.c's stop, for serve_life.c's expiries (it lies below) */
	void			(*sb_stop)(struct serve_sb *, const char *);
	/* ... and its boot of a pool sandbox, for serve_pool.c */
	struct serve_sb		*(*sb_boot)(struct serve *, const char *,
				    const char *, char **);
	/* serve_life.c's sandbox object, for serve_attach.c (below it) */
	void			(*sb_json)(struct serve_sb *, struct buf *);
};

/* serve.c */
void		 serve_init(struct serve *, struct ev_loop *);
void		 serve_stop_all(struct serve *);
int		 serve_idle(struct serve *);
void		 serve_free(struct serve *);
int		 serve_pool_init(struct serve *, const struct profile *,
		     char **);
/* serve_persist.c, serve_restore.c: persistent sandboxes */
int		 serve_persist_open(struct serve *, char **);
void		 serve_persist_close(struct serve *);
int		 serve_restore(struct serve *, char **);

/* serve_e2b.c: --e2b, E2B's API beside qsup's (docs/e2b.md); the
 * paths httpd must let by without the bearer token (E2B's have keys). */
extern const char *const serve_e2b_public[];
void		 serve_e2b_init(struct serve *, const char *);
void		 serve_e2b_free(struct serve *);

/* serve_console.c: the web console's directory found (srv->console) */
void		 serve_console_init(struct serve *);

/* serve_route.c: every request, httpd's handler (arg: the server) */
void		 serve_handle(struct httpd_conn *, const struct httpd_req *,
		     void *);
/* The route table, "METHOD PATH" a line ("qsup serve --routes"). */
void		 serve_routes_print(FILE *);

#endif
