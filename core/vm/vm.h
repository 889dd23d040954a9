/*
 * core/vm: one sandbox: its guest files, its QEMU (command line, QMP,
 * console, KVM choice), its shares and library closure, its warm-start
 * templates and the client of its agent. It uses every layer below it:
 * base, wire, staging, net and the profile engine.
 */
#ifndef QSUP_VM_H
#define QSUP_VM_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "net.h"
#include "profile.h"

struct ev_loop;

/* QEMU's seccomp filter (-sandbox), for every QEMU qsup starts. */
#define QSUP_QEMU_SANDBOX	"on,obsolete=deny,elevateprivileges=deny," \
				"spawn=deny,resourcecontrol=deny"

/* seed_iso.c */
struct seed_file {
	const char	*name;		/* lower-case, e.g. "meta-data" */
	const void	*data;
	size_t		 len;
};
int		 seed_iso_write(const char *, const struct seed_file *, size_t,
		     char **);

/*
 * qmp.c: QMP, blocking while QEMU is paused, a script on the loop, or a
 * running QEMU's monitor on the loop
 */
struct qmp {
	int		 fd;
	struct buf	 in;
	struct buf	 events;
};
int		 qmp_open(struct qmp *, int, double, char **);
int		 qmp_command(struct qmp *, const char *, int, double, char **,
		     char **);
int		 qmp_wait_event(struct qmp *, const char *, const char *,
		     const char *, double, char **);
void		 qmp_close(struct qmp *);
struct qmp_script;
typedef void	(*qmp_script_cb)(const char *, void *);
struct qmp_script *qmp_script_new(struct ev_loop *, int, const char *const *,
		     size_t, qmp_script_cb, void *, char **);
void		 qmp_script_free(struct qmp_script *);
struct qmp_conn;
struct qmp_conn	*qmp_conn_new(struct ev_loop *, int);
int		 qmp_conn_command(struct qmp_conn *, const char *,
		     qmp_script_cb, void *, char **);
struct json_t;
typedef void	(*qmp_conn_ret_cb)(const char *, struct json_t *, void *);
int		 qmp_conn_call(struct qmp_conn *, const char *, const char *,
		     int, qmp_conn_ret_cb, void *, char **);
int		 qmp_conn_call_told(struct qmp_conn *, const char *, const char *,
		     int, qmp_conn_ret_cb, void *, char **);
void		 qmp_conn_set_timeout(struct qmp_conn *, double);
void		 qmp_conn_free(struct qmp_conn *);

/* kvm.c */
enum accel {
	ACCEL_TCG,
	ACCEL_KVM
};
struct accel_choice {
	enum accel	 accel;
	char		*why;		/* for -v and --json */
	int		 remembered;	/* from the cache, not measured now */
};
int		 kvm_choose(const struct profile *, const char *, const char *,
		     const char *, struct accel_choice *, char **);
void		 kvm_forget(void);
int		 kvm_verdict(char **);
const char	*accel_name(enum accel);

/* qemu.c: the one QEMU command line builder, and QEMU processes */
struct qemu_argv {
	char		**argv;		/* NULL-terminated */
	size_t		  n;
};
void		 qemu_arg(struct qemu_argv *, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
char		*qemu_escape(const char *);
void		 qemu_argv_machine(struct qemu_argv *, const char *,
		     enum accel, int, unsigned long long, int, const char *);
void		 qemu_argv_kernel(struct qemu_argv *, const char *,
		     const char *, const char *);
void		 qemu_argv_free(struct qemu_argv *);
void		 qemu_argv_log(char *const *);
struct share;
struct qemu_confine {		/* what a QEMU process keeps and may do */
	const int		*fds;	/* inherited (-1s are skipped) */
	size_t			 nfds;
	const struct share	*shares;	/* share_confine */
	size_t			 nshares;
	enum profile_sm		 sm;
	int			 no_thp;	/* no transparent huge pages */
};
struct qemu;
typedef void	(*qemu_cb)(struct qemu *, void *);
struct qemu	*qemu_new(struct ev_loop *, qemu_cb, qemu_cb, void *);
int		 qemu_spawn(struct qemu *, char *const *,
		     const struct qemu_confine *, char **);
int		 qemu_running(const struct qemu *);
int		 qemu_reaped(const struct qemu *);
pid_t		 qemu_pid(const struct qemu *);
int		 qemu_wstatus(const struct qemu *);
struct buf	*qemu_log(struct qemu *);
void		 qemu_kill(struct qemu *, int);
void		 qemu_wait(struct qemu *);
void		 qemu_free(struct qemu *);
void		 qemu_take(struct qemu *, struct qemu *);
long		 qemu_rss_kb(const struct qemu *);

/* share.c */
#define SHARE_MAX	16	/* on the PCIe bus of microvm,pcie=on */
struct share_bind {		/* a bind mount the guest makes of it */
	char		*src;		/* inside the share, from its root */
	char		*dst;		/* a guest path */
};
struct share {
	char		*host;		/* absolute, resolved */
	char		*guest;		/* absolute */
	int		 readonly;	/* on the host: a cow share is too */
	int		 cow;		/* the guest writes to an overlay whose
					   upper layer is on its cow disk */
	char		**ignore;	/* globs hidden from the guest, or NULL */
	int		 exec;		/* an execution tree (staged in containers) */
	int		 create;	/* host made at the start if missing */
	int		 staged;	/* host is a copy in the run directory */
	int		 use_cache;	/* a copy may come from the cache */
	int		 cache_fd;	/* > 0: host is a copy in the cache,
					   this is its lock (staging/cache.c) */
	char		*tag;		/* the 9p mount tag */
	char		**ld_paths;	/* "sparse": the closure share, which
					   holds these host files (closure.c),
					   or NULL */
	struct share_bind *binds;	/* ... and is bound over the library
					   directories the guest sees */
	size_t		 nbinds;
	char		**ld_hide;	/* a share containing library
					   directories: their paths relative
					   to it, which a staged copy leaves
					   out (the closure covers them) */
	int		 host_libs;	/* shows host library directories
					   (closure_prepare) */
};
int		 share_parse(const char *, struct share *, char **);
int		 share_check(struct share *, char **);
int		 share_prepare(struct share *, size_t, char **);
int		 share_stage(struct share *, const char *, int, char **);
enum profile_sm	 share_model(const struct share *, enum profile_sm);
int		 share_check_model(const struct share *, size_t,
		     enum profile_sm, char **);
int		 share_confine_xattrs(const struct share *, size_t,
		     enum profile_sm);
int		 share_confine(const struct share *, size_t, enum profile_sm,
		     const char **);
void		 share_free(struct share *);

/* plan.c: what a profile asks of a sandbox before it starts */
struct image_req;
void		 plan_image(const struct profile *, int, struct image_req *);
int		 plan_shares(const struct profile *, const char *const *,
		     size_t, char *const *, char *const *, size_t,
		     struct share **, size_t *, char **);

/* closure.c: the sparse library closure and the guest's glibc */
#define CLOSURE_NONE	0
#define CLOSURE_LIB	1	/* a host C-library directory */
#define CLOSURE_PARENT	2	/* contains one */
#define CLOSURE_GUEST	"/run/qsup/ld"	/* where the guest mounts it */
int		 closure_glibc_newer(const char *, char **);
int		 closure_prepare(const struct profile *, struct share *,
		     size_t *, char *const *, char *const *, size_t, char **);
int		 closure_kind(const char *, char *const *, size_t);
int		 closure_rewrite(struct share *, size_t *, char *const *,
		     size_t, char *const *, size_t, char **);
char		*closure_guest_to_host(const struct share *, size_t,
		     const char *);
char		*closure_missing_lib(const char *, size_t);
char		*closure_hint(const char *, size_t);

/* template.c */
#define TEMPLATE_STREAM		1	/* format 1: the RAM in KEY.state */
#define TEMPLATE_SHARED		2	/* format 2: the RAM in KEY.ram */
#define TEMPLATE_RAM_ID		"ram"	/* format 2's memory backend */
struct template {
	int		 format;	/* TEMPLATE_STREAM or _SHARED */
	char		*dir;
	char		*key;
	char		*shape;
	char		*state;
	char		*ram;		/* format 2: KEY.ram */
	char		*shape_path;
	char		*tmp;		/* KEY.state.PID, while saving */
	char		*ram_tmp;	/* KEY.ram.PID, while building */
	char		*disk;		/* KEY.disk: an image's disk as the
					   guest left it, for boot = "image" */
	char		*disk_tmp;	/* KEY.disk.PID, while saving */
	int		 with_disk;	/* the template has (needs) a disk */
	int		 lock_fd;
};
int		 template_init(struct template *, char **, const char *,
		     const char *, int);
int		 template_exists(struct template *);
int		 template_open(struct template *, int *, int *, char **);
int		 template_ram_tmp(struct template *, char **);
int		 template_lock(struct template *);
void		 template_unlock(struct template *);
int		 template_open_tmp(struct template *, char **);
int		 template_commit(struct template *, int, char **);
int		 template_save_disk(struct template *, const char *, char **);
int		 template_copy_file(const char *, const char *, char **);
void		 template_abandon(struct template *);
void		 template_discard(struct template *);
void		 template_free(struct template *);
int		 template_sweep(const char *);
/*
 * What "qsup cache" lists and clears (core/cmd/cmd_cache.c), and how the
 * cache keeps under template_cache_max (template_cache.c).
 */
struct template_info {
	const char	*name;		/* KEY, or a half-written file's name */
	off_t		 size;		/* of the state, or of that file */
	time_t		 mtime;		/* 0: no state file */
	int		 stale;		/* its QEMU, kernel or initramfs changed */
	long		 writer;	/* a half-written file's writer, else 0 */
	int		 writer_alive;
	int		 format;	/* TEMPLATE_*; 0: one qsup cannot read */
	off_t		 ram_size;	/* of KEY.ram (apparent); 0: none */
	uint64_t	 ram_allocated;	/* bytes on disk of KEY.ram */
	uint64_t	 state_allocated; /* ... and of KEY.state */
	uint64_t	 allocated;	/* bytes on disk of all its files */
	time_t		 used;		/* last saved or restored */
};
char		*template_dir(void);
int		 template_each(const char *,
		     void (*)(const struct template_info *, void *), void *);
void		 template_touch(struct template *);
int		 template_evict(const char *, uint64_t, const char *);
void		 template_remove(const char *, const char *);

/* gate.c: a start waits for one of a few slots, shared by every qsup */
struct gate;
typedef void	(*gate_cb)(void *);
struct gate	*gate_new(struct ev_loop *, const char *, int, gate_cb,
		     void *);
int		 gate_slots(void);
int		 gate_ahead(const struct gate *);
double		 gate_waited(const struct gate *);
void		 gate_release(struct gate *);
void		 gate_free(struct gate *);

/* disk.c: a disk image, its base never written, on a fresh overlay */
#define DISK_NODE		"root"		/* the overlay's node */
#define QSUP_ROOT_SERIAL	"qsup-root"	/* how the guest finds it */
struct disk_info {
	const char	*format;	/* "raw" or "qcow2", from the header */
	uint64_t	 virtual_size;	/* bytes */
};
struct disk {
	char		*base;		/* real path */
	struct disk_info info;
	struct stat	 before;	/* the base, before the run */
	char		*overlay;	/* in the run directory */
	char		**mids;		/* disks kept read-only between the
					   base (and layers) and the overlay,
					   bottom first: a template's, a
					   snapshot's */
	size_t		 nmids;
	uint64_t	 size;		/* the overlay's, bytes */
	int		 grow;		/* larger than the base */
	double		 overlay_seconds;
	char		**layers;	/* setup's layers over the base, bottom
					   first, each backed by the one
					   before (real paths in the store) */
	size_t		 nlayers;
	uint64_t	 top_size;	/* the top layer's virtual size */
	struct stat	 top;		/* ... and its file, before the run */
	int		 writable;	/* the guest writes the base itself:
					   no overlay (a disk of its own) */
};
int		 disk_parse_header(const unsigned char *, size_t, uint64_t,
		     struct disk_info *, char **);
int		 disk_probe(const char *, struct disk *, char **);
int		 disk_add_layer(struct disk *, const char *, const char *,
		     char **);
int		 disk_overlay(struct disk *, const char *, uint64_t, char **);
int		 disk_overlay_plan(struct disk *, const char *, uint64_t,
		     char **);
int		 disk_overlay_copy(struct disk *, const char *, const char *,
		     const char *, char **);
int		 disk_overlay_on(struct disk *, const char *, char *const *,
		     size_t, char **);
void		 disk_qemu_args(const struct disk *, struct qemu_argv *, int);
int		 disk_untouched(const struct disk *, struct buf *);
void		 disk_free(struct disk *);

/* disk_reg.c: the registry of disks in use */
struct disk_reg {
	char		*dir;
	int		 lock_fd;
};
int		 disk_reg_open(struct disk_reg *, int, char **);
void		 disk_reg_close(struct disk_reg *);
int		 disk_reg_find(struct disk_reg *, const struct stat *, int,
		     char *, char **);
char		*disk_reg_add(struct disk_reg *, const struct stat *,
		     const char *, int, const char *, unsigned long long,
		     char **);
int		 disk_reg_check_base(const char *, char **);

/* cow.c */
#define COW_NODE		"cow"		/* the cow disk's node */
struct cow {
	char		*path;		/* in the run directory; NULL: none */
	uint64_t	 size;		/* bytes */
	char		 serial[32];	/* at most virtio-blk's 20 bytes (cow_size
					   is at most 2 TiB): the guest
					   finds it by this */
	double		 seconds;	/* to make it */
};
int		 cow_wanted(const struct share *, size_t);
int		 cow_make(struct cow *, const char *, uint64_t, char **);
void		 cow_qemu_args(const struct cow *, struct qemu_argv *);
void		 cow_free(struct cow *);

/* guest.c */
struct guest {
	char		*kernel;
	char		*initramfs;
	char		*agent;		/* boot = "image": put on the seed */
};
int		 guest_resolve(const struct profile *, struct guest *, char **);
void		 guest_free(struct guest *);
const char	*guest_qemu_binary(void);
unsigned long	 guest_tsc_khz(void);

/* serial.c: the guest's console, drained without ever blocking */
struct serial;
struct serial	*serial_new(struct ev_loop *, int, const char *, int);
void		 serial_tail(struct serial *, int, struct buf *);
int		 serial_closed(struct serial *);
void		 serial_set_close_cb(struct serial *, void (*)(void *), void *);
int		 serial_copy_to(struct serial *, const char *, int, char **);
void		 serial_set_line_cb(struct serial *,
		     void (*)(void *, const char *), void *);
void		 serial_set_mark_cb(struct serial *,
		     void (*)(void *, const char *), void *);
char		*serial_find(struct serial *, const char *);
void		 serial_drain(struct serial *);
void		 serial_free(struct serial *);

/* agent_client.c: HTTP/1.1 + SSE to the agent over one virtio-serial port */
struct agent_conn;
struct agent_req;
/*
 * A response's status is the HTTP status, or AGENT_CLOSED (the port went
 * away: QEMU is exiting) or AGENT_BROKEN (the agent broke the protocol);
 * then the body says what happened. An event callback returns -1 with a
 * cause when the event itself breaks the protocol.
 */
#define AGENT_CLOSED		(-1)
#define AGENT_BROKEN		(-2)
#define AGENT_SIGNAL_MAX	64	/* Linux's SIGRTMAX */
#define AGENT_ERROR_MAX		512	/* of the agent's error text, shown */
typedef void	(*agent_response_cb)(int, const char *, size_t, void *);
typedef int	(*agent_event_cb)(const char *, const char *, size_t, void *,
		     char **);
struct agent_exit {
	int	 status;
	int	 signal;	/* 0 or the signal that ended the command */
	char	*error;		/* NULL, or the agent's text, escaped */
};
struct agent_conn *agent_conn_new(struct ev_loop *, int, const char *);
void		 agent_request(struct agent_conn *, const char *, const char *,
		     const void *, size_t, agent_response_cb, agent_event_cb,
		     void *);
void		 agent_conn_pause(struct agent_conn *, int);
int		 agent_conn_busy(struct agent_conn *);
void		 agent_conn_free(struct agent_conn *);
int		 agent_parse_exit(const char *, size_t, struct agent_exit *,
		     char **);
void		 agent_escape(struct buf *, const char *, size_t, size_t);

/*
 * sandbox*.c: one sandbox, a state table (sandbox_int.h has its states
 * and events). Its owner sees these states, which only move forward,
 * but for a pause's way back to ready.
 */
enum sandbox_state {
	SB_NEW,
	SB_BOOTING,	/* QEMU started, waiting for the agent (booting,
			   building a template, restoring, relaunching) */
	SB_SAVING,	/* writing a template of the booted guest, then
			   configuring it */
	SB_READY,	/* the agent answered with this sandbox's token */
	SB_PAUSED,	/* its vCPUs stopped (QMP stop) until resumed */
	SB_STOPPING,	/* QEMU asked to stop, waiting for it to be reaped */
	SB_DEAD		/* reaped and its console closed */
};
struct sandbox;
struct sandbox_cbs {
	void	(*ready)(struct sandbox *, void *);
	void	(*failed)(struct sandbox *, const char *, void *);
	void	(*dead)(struct sandbox *, void *);
	void	*arg;
};
struct sandbox	*sandbox_new(struct ev_loop *, const struct profile *,
		     const struct sandbox_cbs *);
void		 sandbox_set_shares(struct sandbox *, struct share *, size_t);
void		 sandbox_set_image(struct sandbox *, const char *);
void		 sandbox_set_disk_writable(struct sandbox *);
void		 sandbox_set_layers(struct sandbox *, char *const *, size_t,
		     const char *);
const char	*sandbox_overlay_path(struct sandbox *);
int		 sandbox_qemu_exited(struct sandbox *);
char		*sandbox_run_path(void);
char		*sandbox_run_base(char **);
void		 sandbox_disk_report(struct sandbox *, struct buf *);
double		 sandbox_overlay_seconds(struct sandbox *);
int		 sandbox_start(struct sandbox *, const struct accel_choice *,
		     char **);
void		 sandbox_stop(struct sandbox *, const char *);
typedef void	(*sandbox_done_cb)(struct sandbox *, const char *, void *);
int		 sandbox_pause(struct sandbox *, sandbox_done_cb, void *,
		     char **);
int		 sandbox_resume(struct sandbox *, sandbox_done_cb, void *,
		     char **);
enum sandbox_state sandbox_state(struct sandbox *);
/* sandbox_snap.c: snapshots of a ready or paused sandbox */
struct sandbox_snap_result {
	double		 pause_ms;	/* the guest stood still this long */
	uint64_t	 bytes;		/* on disk */
};
typedef void	(*sandbox_snap_cb)(struct sandbox *, const char *,
		     const struct sandbox_snap_result *, void *);
const char	*sandbox_snapshot_refused(struct sandbox *);
int		 sandbox_snapshot_busy(struct sandbox *);
int		 sandbox_snapshot(struct sandbox *, const char *,
		     sandbox_snap_cb, void *, char **);
void		 sandbox_snapshot_json(struct sandbox *, struct buf *);
/*
 * How a booted guest got its configuration (a snapshot's "cold"): from
 * /setup sent at launch, waiting in the socket until the agent reads it
 * (qsup.setup=1), or, in snapshots of guests booted by qsup before that,
 * from a seed ISO, whose disk their restores must have again (the device
 * state names it). 0: a template's guest.
 */
#define SANDBOX_COLD_SEED	1
#define SANDBOX_COLD_SETUP	2
void		 sandbox_set_snapshot(struct sandbox *, const char *,
		     const char *, int, int);
/* sandbox_refresh.c: what a guest is told after a pause, a restore */
#define SANDBOX_MAC_LEN	18	/* "52:54:00:xx:xx:xx" and its NUL */
struct sandbox_fresh {		/* besides the host's clock, always */
	int		 entropy;	/* host bytes into its pool */
	const char	*mac;		/* its card's new address, or NULL */
	int		 machine_id;	/* a new /etc/machine-id */
};
struct exec;
struct exec_ports;
struct exec_cbs;
void		 sandbox_mac_new(char [SANDBOX_MAC_LEN]);
/* gone: QEMU is going (error says so); else error NULL once done */
typedef void	(*sandbox_fresh_cb)(struct sandbox *, int, const char *,
		     void *);
int		 sandbox_fresh_send(struct sandbox *, int, const char *,
		     sandbox_fresh_cb, void *, char **);
void		 sandbox_fresh_cancel(struct sandbox *);
int		 sandbox_fresh_early(struct sandbox *, const char *, char **);
int		 sandbox_fresh_then(struct sandbox *, sandbox_fresh_cb, void *);
struct exec	*sandbox_fresh_exec(struct sandbox *,
		     const struct sandbox_fresh *, const struct exec_ports *,
		     const struct exec_cbs *);
int		 sandbox_refresh(struct sandbox *, int,
		     const struct sandbox_fresh *, sandbox_done_cb, void *,
		     char **);
struct agent_conn *sandbox_port(struct sandbox *, int);
const struct accel_choice *sandbox_accel(struct sandbox *);
double		 sandbox_boot_seconds(struct sandbox *);
void		 sandbox_boot_split(struct sandbox *, double *, double *);
const char	*sandbox_start_kind(struct sandbox *);
const char	*sandbox_fallback(struct sandbox *);
double		 sandbox_save_seconds(struct sandbox *);
double		 sandbox_queued_seconds(struct sandbox *);
long		 sandbox_qemu_rss_kb(struct sandbox *);
/* Spare QEMUs started ahead for restores (sandbox_spare.c). */
void		 sandbox_spares(size_t);
void		 sandbox_spares_free(void);
size_t		 sandbox_spares_count(unsigned long long *);
struct net	*sandbox_net_of(struct sandbox *);
void		 sandbox_console_tail(struct sandbox *, int, struct buf *);
char		*sandbox_console_oom(struct sandbox *);
/* sandbox_screen.c: the screen's VNC socket, or NULL (caller frees) */
char		*sandbox_display_socket(struct sandbox *);
int		 sandbox_screen_qmp(struct sandbox *, const char *,
		     const char *, qmp_conn_ret_cb, void *, char **);
char		*sandbox_screen_file(struct sandbox *);
int		 sandbox_display_size(struct sandbox *, int *, int *);
void		 sandbox_free(struct sandbox *);

/*
 * exec.c: one command, or file job, the agent runs: its /exec request
 * built from a typed spec, its stream (start, output, exit) held to the
 * protocol, stdin paced by the agent's 204s, signals, terminal sizes, a
 * timeout, and its end. A state table (exec_actions) says what each event
 * does in each state. Its user (qsup run, qsup serve) may detach early
 * (its client went away: the command is killed, its output read and
 * dropped); the exec is freed once its stream has ended, nothing of it is
 * in flight, and its user has released it (exec_free), as tmux's jobs are.
 */
#define EXEC_STDIN_PIECE	(256 * 1024)	/* the most one upload holds */
enum exec_kind {
	EXEC_COMMAND,
	EXEC_READ,		/* a file job: the file's bytes as stdout */
	EXEC_WRITE		/* a file job: stdin becomes the file */
};
struct exec_spec {
	enum exec_kind	 kind;
	char *const	*argv;		/* EXEC_COMMAND: NULL-terminated */
	char *const	*env;		/* "K=V" each */
	size_t		 nenv;
	const char	*cwd;		/* NULL: the agent's */
	int		 entrypoint;	/* the image's entrypoint goes first */
	int		 tty;
	unsigned	 rows, cols;	/* with tty; 0: the agent's 24x80 */
	double		 timeout;	/* seconds; 0: none */
	int		 feed_stdin;	/* EXEC_COMMAND: else closed at start */
	const char	*path;		/* EXEC_READ, EXEC_WRITE */
	unsigned	 mode;		/* EXEC_WRITE */
};
struct exec_ports {		/* agent ports, as sandbox_port numbers them */
	int		 stream;	/* the /exec request and its events */
	int		 in;		/* stdin uploads; -1: none */
	int		 control;	/* signals, resizes, stdin's close */
};
enum exec_state {
	EXEC_STARTING,		/* /exec sent, no start event yet */
	EXEC_RUNNING,		/* started: output may come */
	EXEC_EXITED,		/* the exit event came, the stream goes on */
	EXEC_DONE,		/* the stream ended, one way or another */
	EXEC_NSTATES
};
enum exec_end {
	EXEC_END_EXITED,	/* a stream that ended well after its exit */
	EXEC_END_NO_EXIT,	/* ... without one */
	EXEC_END_BROKEN,	/* the agent broke the protocol */
	EXEC_END_REFUSED,	/* the agent answered /exec with an error */
	EXEC_END_CLOSED,	/* the port closed: QEMU is going */
	EXEC_END_GONE		/* the sandbox went first (exec_gone) */
};
struct exec_result {
	enum exec_end	 end;
	int		 exit_seen;	/* the exit event came (the guest's
					   word until end is EXITED) */
	int		 status;	/* of the exit event */
	int		 signal;	/* 0 or the signal that ended it */
	const char	*exit_error;	/* the exit event's, or NULL */
	int		 timed_out;	/* the exec's timeout killed it */
	const char	*error;		/* NULL when EXITED, else why: the
					   port's reason when CLOSED */
};
enum exec_stream {
	EXEC_STDOUT,
	EXEC_STDERR
};
enum exec_stdin_news {
	EXEC_STDIN_SENT,	/* an upload was taken (204) */
	EXEC_STDIN_REFUSED,	/* stdin is closed: what was queued dropped */
	EXEC_STDIN_CLOSED	/* the close was answered */
};
struct exec;
struct exec_cbs {		/* each may be NULL; arg is theirs */
	void	(*started)(struct exec *, void *);
	/* Base64 as the agent sent it, checked; nonzero: pause the stream
	   until exec_resume. */
	int	(*output)(struct exec *, enum exec_stream, const char *,
		    size_t, void *);
	void	(*stdin_news)(struct exec *, enum exec_stdin_news, void *);
	void	(*timed_out)(struct exec *, void *);	/* killed already */
	void	(*done)(struct exec *, const struct exec_result *, void *);
	void	*arg;
};
void		 exec_request(const struct exec_spec *, struct buf *);
struct exec	*exec_new(struct ev_loop *, struct sandbox *,
		     const struct exec_spec *, const struct exec_ports *,
		     const struct exec_cbs *);
void		 exec_start(struct exec *);
enum exec_state	 exec_state(const struct exec *);
long long	 exec_id(const struct exec *);
int		 exec_tty(const struct exec *);
int		 exec_signal(struct exec *, int, agent_response_cb, void *);
int		 exec_resize(struct exec *, unsigned, unsigned,
		     agent_response_cb, void *);
void		 exec_set_timeout(struct exec *, double);
void		 exec_freeze(struct exec *, int);
void		 exec_resume(struct exec *);
int		 exec_stdin_write(struct exec *, const void *, size_t);
void		 exec_stdin_close(struct exec *);
void		 exec_stdin_drop(struct exec *);
int		 exec_stdin_open(const struct exec *);
size_t		 exec_stdin_queued(const struct exec *);
int		 exec_stdin_busy(const struct exec *);
void		 exec_detach(struct exec *);
void		 exec_gone(struct exec *, const char *);
void		 exec_free(struct exec *);

#endif
