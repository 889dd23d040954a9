/*
 * The server's insides, shared by core/serve's files only. They lean one
 * way, bottom up: serve_error.c (an error as a response, JSON bodies),
 * serve_event.c (states' names, the event stream, the requests waiting
 * for a state or for their body, a sandbox found by name), serve_exec.c
 * (execs, stdin, signals, terminals, files), serve_life.c (the sandbox as
 * the API shows it; pause, resume, time limits: serve.c calls it as a
 * sandbox comes and goes, and it stops one through srv->sb_stop),
 * serve_setup.c (setup layers built in a child, "qsup run --setup-only",
 * off the loop), serve_qga.c (what
 * an attached QEMU's monitor and qemu-guest-agent write back, parsed),
 * serve_attach.c (QEMUs started by hand, attached: it answers through
 * srv->sb_json), serve_disk.c (a sandbox on a real disk, the registry of
 * disks in use), serve_pool.c (the warm pool: paused sandboxes a create
 * takes; it boots and stops them through srv->sb_boot and srv->sb_stop),
 * serve.c (the named sandboxes and their lives), serve_metrics.c
 * (/metrics), serve_openapi.c (/v1/openapi.json, docs/openapi.json
 * compiled in), serve_route.c (the route table: a request matched into a
 * typed serve_req and its handler).
 */
#ifndef QSUP_SERVE_INT_H
#define QSUP_SERVE_INT_H

#include <sys/queue.h>

#include <time.h>

#include <ev.h>
#include <jansson.h>

#include "serve.h"
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

enum serve_state {
	SERVE_BOOTING,
	SERVE_READY,
	SERVE_PAUSED,
	SERVE_STOPPING,
	SERVE_DEAD
};
#define SERVE_NSTATES	(SERVE_DEAD + 1)

/* What a time limit does when it expires. */
enum serve_on_ttl {
	SERVE_TTL_DELETE,
	SERVE_TTL_PAUSE
};
#define SERVE_TTL_MAX	(10.0 * 366 * 86400)	/* a sane deadline */

enum serve_job {
	SERVE_EXEC,
	SERVE_READ,
	SERVE_WRITE
};

struct serve_exec;
/*
 * An exec whose client speaks another protocol (serve_e2b_proc.c): its
 * start, output (base64, as the agent sent it; nonzero pauses the guest
 * until the client drains) and end go to these instead of the SSE
 * stream. done is called once, always: it answers or ends the client's
 * response (e->conn, NULL when the client went) and frees its arg.
 */
struct serve_exec_hook {
	void	(*started)(struct serve_exec *, void *);
	int	(*output)(struct serve_exec *, enum exec_stream, const char *,
		    size_t, void *);
	void	(*done)(struct serve_exec *, const struct exec_result *,
		    const char *, void *);
	int	  outlive;	/* runs on without its client, output told */
};

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
	const struct serve_exec_hook *hook;	/* or NULL: SSE */
	void			*hook_arg;
};
TAILQ_HEAD(serve_execs, serve_exec);

/*
 * A request waiting for its sandbox (created, or deleted). With fn, its
 * answer is fn's (another protocol's: serve_e2b.c): fn gets the status
 * and the JSON body (a failed create: its reason) and frees arg; a waiter
 * never answered frees arg with free().
 */
typedef void	 serve_wait_fn(struct httpd_conn *, int, const char *, void *);
struct serve_waiter {
	struct httpd_conn	*conn;
	struct serve_sb		*sb;
	TAILQ_ENTRY(serve_waiter) entry;
	serve_wait_fn		*fn;
	void			*arg;
};
TAILQ_HEAD(serve_waiters, serve_waiter);

/* The snapshot a sandbox starts from (serve_snap.c). */
struct serve_snapref {
	char			*dir;		/* NULL: none */
	char			*token;
	int			 cold;
	int			 ram_backend;
	char			*profile;	/* the source's */
	char			**sets;
	size_t			 nsets;
	char			**extra;	/* its extra_args, whole */
	long			 nextra;	/* -1: not recorded */
};

/* One named sandbox. */
struct serve_sb {
	struct serve		*srv;
	TAILQ_ENTRY(serve_sb)	 entry;
	char			*name;
	unsigned long long	 serial;		/* none other had it */
	enum serve_state	 state;
	struct profile		 profile;
	struct accel_choice	 accel;
	struct sandbox		*sb;		/* NULL once dead */
	char			*image;
	struct image_pull	*pull;		/* getting the image */
	struct serve_setup	*setup;		/* building its layers */
	char			*phase;		/* "building setup step N/M:
						   STEP" meanwhile */
	char			*layer_store;	/* its layers' images_dir/layers */
	struct image_layer	*layers;	/* its chain, held shared */
	size_t			 nlayers;
	char			*profile_arg;	/* as the create gave it, and */
	char			**sets;		/* its settings: for the build */
	size_t			 nsets;
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
	unsigned long long	 execs_total;	/* commands it was given */
	unsigned		 ports_busy;	/* bit i: port i taken */
	ev_timer		 reap;		/* frees sb off its callback */
	/* serve_life.c: pause, resume, time limits */
	struct serve_waiters	 qmp_waiters;	/* a pause's or resume's */
	enum serve_state	 qmp_want;	/* what it goes to, or DEAD:
						   none under way */
	double			 ttl;		/* from its creation; 0: none */
	double			 idle_ttl;	/* without an exec; 0: none */
	enum serve_on_ttl	 on_ttl;
	double			 t_active;	/* the last exec's, or ready */
	ev_timer		 ttl_timer;
	ev_timer		 idle_timer;
	/* serve_disk.c: its "disk", and its record in the registry */
	char			*disk_path;	/* real path, or NULL */
	int			 disk_writable;
	char			*disk_record;	/* held, or NULL */
	struct serve_attach	*attach;	/* a QEMU started by hand */
	struct attach_snap	*attach_snap;	/* ... its save, load or
						   delete under way */
	/* serve_pool.c: kept booted and paused until a create takes it */
	char			*pool;		/* its pool entry, while in it:
						   hidden from the API */
	int			 pool_evicted;	/* stopping for a user's room */
	double			 t_taken;	/* by a create */
	struct exec		*clock;		/* setting its guest's clock
						   (serve_life_clock) */
	int			 clock_port;
	int			 clocking;	/* ... or its agent's refresh */
	void			(*clock_done)(struct serve_sb *);
	int			 clocked;	/* from a snapshot: set once */
	char			*mac;		/* its card's, set by a fork */
	struct serve_snapref	 snap;		/* started from a snapshot */
	struct serve_persist	*persist;	/* "persistent": its record */
};

/*
 * A persistent sandbox's record (serve_persist.c): what it was made from,
 * its latest save, and where it came back from at this server's start.
 */
struct serve_persist {
	json_t		*body;		/* its create's, without "wait" */
	char		*snapshot;	/* its latest save (hidden), or NULL */
	char		*taken;		/* ... when, ISO 8601 */
	int		 paused;	/* ... it was paused then */
	json_t		*under;		/* saves its disk lies on */
	double		 every;		/* persist_every, or 0 */
	ev_timer	 timer;		/* ... its saves */
	int		 saving;	/* a save under way */
	char		*from;		/* "snapshot", "boot"; NULL: made
					   by a create */
	char		*from_snap;	/* the save it came back from */
	char		*from_taken;
	char		*from_why;	/* why a boot */
	int		 pause;		/* paused once ready */
};

/* What guest-exec-status said (serve_attach.c). */
struct attach_status {
	int		 exited;
	int		 has_code;
	int		 code;
	int		 signal;
	int		 truncated;
	struct buf	 out;		/* decoded */
	struct buf	 err;
};

/* An /v1/events subscriber. */
struct serve_sub {
	struct serve		*srv;
	struct httpd_conn	*conn;
	TAILQ_ENTRY(serve_sub)	 entry;
};



/*
 * An error, as the server answers it: the status, the message, more
 * members of the JSON error object (fields, e.g. "\"field\":\"name\""), and
 * a 405's Allow. Handlers and body checks fill one and return -1;
 * serve_error_answer, the one place errors become responses, sends it.
 */
struct serve_error {
	int		 status;
	char		*msg;
	char		*fields;	/* or NULL */
	char		*allow;		/* or NULL */
};

/*
 * A request, as the route table matched it: what its handler gets. sb is
 * the {name} of its path, found; exec the {id}, a number.
 */
struct serve_req {
	struct serve		*srv;
	struct httpd_conn	*conn;
	const struct httpd_req	*http;
	struct serve_sb		*sb;
	unsigned		 exec;
};
typedef int	 serve_handler(const struct serve_req *, struct serve_error *);

/* serve_screen_input.c: POST .../input's events as QMP calls */
#define SCREEN_EVENTS_MAX	256
#define SCREEN_TEXT_MAX		4096
#define SCREEN_CALLS_MAX	20000	/* QMP calls of one request */
struct screen_calls {
	char		**args;		/* input-send-event's, in order */
	size_t		  n;
};
const char	*screen_qcode(const char *);
int		 screen_input_parse(json_t *, int, int, struct screen_calls *,
		     struct serve_error *);
void		 screen_calls_free(struct screen_calls *);
/* serve_screen.c */
serve_handler	 serve_screenshot, serve_input;

/* serve_error.c */
int		 serve_fail(struct serve_error *, int, const char *,
		     const char *, ...)
		     __attribute__((format(printf, 4, 5)));
int		 serve_bad_field(struct serve_error *, const char *,
		     const char *);
int		 serve_limit(struct serve_error *, const char *, const char *,
		     unsigned long long);
void		 serve_error_answer(struct httpd_conn *, struct serve_error *);
void		 serve_error_now(struct httpd_conn *, int, const char *,
		     const char *);
int		 serve_json_body(const char *, size_t, json_t **,
		     struct serve_error *);
int		 serve_check_fields(json_t *, const char *const *,
		     struct serve_error *);

/* serve_event.c */
const char	*serve_state_name(enum serve_state);
void		 serve_event(struct serve *, const char *, const char *);
void		 serve_events_init(struct serve *);
void		 serve_sb_event(struct serve_sb *);
void		 serve_wait(struct serve_waiters *, struct serve_sb *,
		     struct httpd_conn *);
void		 serve_answer(struct serve_waiters *, int, const char *);
int		 serve_wait_hook(struct serve_waiters *, struct httpd_conn *,
		     serve_wait_fn *, void *);
void		 serve_waiters_free(struct serve_waiters *);
serve_handler	 serve_events;
struct serve_sb	*serve_find(struct serve *, const char *);
int		 serve_name_ok(const char *);
/*
 * A request's body read, then fn called with the sandbox the request
 * named, found again: it may have been deleted meanwhile (then 404, and
 * fn is not called). fn owns arg (freed with free() if the client goes
 * before the body is in).
 */
typedef void	 serve_body_fn(struct httpd_conn *, struct serve_sb *,
		     const char *, size_t, void *);
void		 serve_sb_read_body(const struct serve_req *, serve_body_fn *,
		     void *);

/* serve_exec.c */
extern const double serve_exec_le[11];	/* qsup_exec_seconds' buckets */
int		 serve_exec_running(const struct serve_exec *);
int		 serve_exec_busy(const struct serve_sb *);
void		 serve_exec_sandbox_gone(struct serve_sb *, const char *);
int		 serve_signal_number(const char *);
int		 serve_port_take(struct serve_sb *);
void		 serve_port_give(struct serve_sb *, int);
serve_handler	 serve_exec_post;
serve_handler	 serve_exec_stdin;
serve_handler	 serve_exec_signal;
serve_handler	 serve_exec_resize;
serve_handler	 serve_files;
struct serve_exec *serve_exec_find(struct serve_sb *, unsigned);
int		 serve_exec_hooked(struct serve_sb *, struct httpd_conn *,
		     const struct exec_spec *, const struct serve_exec_hook *,
		     void *, struct serve_error *);
/* serve_ws.c */
int		 serve_exec_ws(const struct serve_req *, struct serve_error *);
int		 serve_display_ws(const struct serve_req *, struct serve_error *);
int		 serve_exec_json(struct serve_sb *, struct httpd_conn *,
		     const char *, size_t, const struct serve_exec_hook *,
		     void *, struct serve_error *);
void		 serve_exit_json(const struct exec_result *, const char *,
		     struct buf *);

/* serve_setup.c */
struct serve_setup_cbs {
	void	(*progress)(struct serve_sb *, const char *);
	void	(*done)(struct serve_sb *, const char *);	/* NULL: built */
};
int		 serve_setup_start(struct serve_sb *, const char *,
		     char *const *, size_t, const struct serve_setup_cbs *,
		     char **);
void		 serve_setup_leave(struct serve_sb *);
int		 serve_setup_busy(struct serve *);
void		 serve_setup_free_all(struct serve *);

/* serve.c */
extern const char *const serve_boot_kinds[3];	/* as qsup_boots_total */
serve_handler	 serve_list;
serve_handler	 serve_create;
struct serve_sb	*serve_create_json(struct serve *, struct httpd_conn *,
		     const char *, size_t, struct serve_error *);
serve_handler	 serve_get;
serve_handler	 serve_delete;

/* serve_pool.c (serve_pool_init: serve.h) */
size_t		 serve_live(struct serve *, uint64_t *);
int		 serve_pool_take(struct serve *, json_t *, const char *,
		     const char *, char *const *, size_t, int,
		     struct httpd_conn *, struct serve_error *);
void		 serve_pool_evict(struct serve *, uint64_t);
void		 serve_pool_ready(struct serve_sb *);
void		 serve_pool_gone(struct serve_sb *);
void		 serve_pool_kick(struct serve *);
void		 serve_pool_metrics(struct serve *, struct buf *);
void		 serve_pool_free(struct serve *);


/* serve_life.c */
void		 serve_life_init(struct serve_sb *);
int		 serve_life_fields(struct serve_sb *, json_t *,
		     struct serve_error *);
void		 serve_life_arm(struct serve_sb *);
void		 serve_life_gone(struct serve_sb *);
void		 serve_sb_json(struct serve_sb *, struct buf *);
void		 serve_life_pause(struct serve_sb *, const char *);
int		 serve_life_clock(struct serve_sb *, int,
		     void (*)(struct serve_sb *));
int		 serve_life_restored(struct serve_sb *,
		     void (*)(struct serve_sb *));
void		 serve_life_restore_early(struct serve_sb *);
serve_handler	 serve_pause;
serve_handler	 serve_resume;
serve_handler	 serve_patch;

/* serve_qga.c */
#define ATTACH_LINE_MAX	(4 * 1024 * 1024)	/* a reply's bytes */
int		 attach_parse_reply(const char *, size_t, json_t **, char **);
int		 attach_qga_status(json_t *, struct attach_status *, char **);
void		 attach_status_free(struct attach_status *);
int		 attach_qga_pid(json_t *, long long *);

/* serve_attach.c */
int		 serve_attach_create(struct serve_sb *, json_t *,
		     struct httpd_conn *, int, struct serve_error *);
void		 serve_attach_json(struct serve_sb *, struct buf *);
int		 serve_attach_move(struct serve_sb *, int,
		     void (*)(struct sandbox *, const char *, void *), void *,
		     char **);
int		 serve_attach_delete(const struct serve_req *,
		     struct serve_error *);
int		 serve_attach_exec(struct httpd_conn *, struct serve_sb *,
		     json_t *, struct serve_error *);
void		 serve_attach_gone(struct serve_sb *);
typedef void	 serve_qmp_cb(json_t *, const char *, void *);
int		 serve_attach_qmp(struct serve_sb *, const char *, json_t *,
		     serve_qmp_cb *, void *, char **);
const char	*serve_attach_qmp_path(const struct serve_sb *);

/* serve_attach_snap.c: snapshots inside an attached QEMU's disks */
void		 serve_attach_snap_gone(struct serve_sb *);
serve_handler	 serve_attach_snap_post;
serve_handler	 serve_attach_snap_del;
serve_handler	 serve_attach_restore;

/* serve_disk.c */
int		 serve_check_members(json_t *, const char *,
		     const char *const *, struct serve_error *);
int		 serve_disk_fields(struct serve_sb *, json_t *,
		     struct serve_error *);
int		 serve_disk_profile(struct serve_sb *, struct serve_error *);
int		 serve_disk_hold(struct serve_sb *, struct serve_error *);
int		 serve_disk_hold_late(struct serve_sb *, char **);
void		 serve_disk_release(struct serve_sb *);
void		 serve_disk_json(struct serve_sb *, struct buf *);

/* serve_snap.c */
#define SERVE_SNAP_HIDDEN	".fork-"	/* a fork's snapshot */
extern const char *serve_snap_hidden;	/* restorable now, for a fork */
char		*serve_snap_root(void);
int		 serve_snap_write_ref(struct serve_sb *, const char *,
		     char **);
int		 serve_snap_write(const char *, const char *, struct serve_sb *,
		     const struct sandbox_snap_result *, const struct buf *,
		     struct buf *);
json_t		*serve_snap_record(const char *, const char *);
int		 serve_snap_reserve(struct serve_sb *, const char *, size_t,
		     json_t **, const char **, char **, struct serve_error *);
void		 serve_snap_sweep(void);
int		 serve_snap_can(struct serve_sb *, const char *, const char *,
		     struct serve_error *);
int		 serve_snap_from(json_t *, struct serve_snapref *,
		     struct serve_error *);
void		 serve_snapref_free(struct serve_snapref *);
serve_handler	 serve_snap_post;
serve_handler	 serve_snap_list;
serve_handler	 serve_snap_get;
serve_handler	 serve_snap_delete;

/* serve_snap_args.c */
void		 serve_snap_args_json(struct serve_sb *, struct buf *);
void		 serve_snap_args_from(json_t *, struct serve_snapref *);
int		 serve_snap_args(struct profile *,
		     const struct serve_snapref *, const char *,
		     struct serve_error *);

/* serve_persist.c (serve_persist_open, _close: serve.h) */
#define SERVE_PERSIST_HIDDEN	".persist-"	/* its saves' names */
extern struct serve_persist *serve_persist_restoring;
char		**serve_persist_names(struct serve *);
json_t		*serve_persist_load(struct serve *, const char *);
struct serve_persist *serve_persist_from_json(json_t *);
void		 serve_persist_free(struct serve_persist *);
void		 serve_persist_sweep(struct serve *);
int		 serve_persist_fields(struct serve *, json_t *,
		     struct serve_error *);
int		 serve_persist_profile(struct serve_sb *, json_t *,
		     struct serve_error *);
int		 serve_persist_begin(struct serve_sb *, struct serve_error *);
void		 serve_persist_abort(struct serve_sb *);
void		 serve_persist_gone(struct serve_sb *);
int		 serve_persist_ready(struct serve_sb *);
int		 serve_persist_save_all(struct serve *,
		     void (*)(struct serve *));
void		 serve_persist_json(struct serve_sb *, struct buf *);

/* serve_fork.c */
serve_handler	 serve_fork;

/* serve_metrics.c */
serve_handler	 serve_metrics;

/* serve_console.c: a request for the web console answered (1), or not (0) */
int		 serve_console_handle(const struct serve_req *);
void		 serve_console_routes(FILE *);
int		 serve_console_name_ok(const char *);	/* a path under /console/ */

/* serve_e2b.c: an E2B route's request answered (1), or not one (0) */
int		 serve_e2b_handle(const struct serve_req *);

/* serve_openapi.c */
serve_handler	 serve_openapi;

#endif
