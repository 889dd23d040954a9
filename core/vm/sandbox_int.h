/*
 * The sandbox's insides, shared by its files (and its unit test) only.
 * They lean one way, a section each below in that order: sandbox.c (the
 * state table and the API) on top; sandbox_launch.c (one QEMU launch);
 * sandbox_warm.c (the warm-start choice and the template save);
 * sandbox_argv.c (QEMU's command line, which keys the templates);
 * sandbox_seed.c (the guest's configuration, and the agent's answer to
 * it); sandbox_live.c (the start's deadline and the liveness pings);
 * sandbox_boot.c (what boot = "image" changes) at the bottom. What the
 * files below sandbox.c see happen goes up as an event through
 * sb->event; only sandbox.c's table acts on it.
 */
#ifndef QSUP_SANDBOX_INT_H
#define QSUP_SANDBOX_INT_H

#include "vm.h"
#include "wire.h"

#define SANDBOX_KILL_GRACE	2.0	/* SIGTERM to SIGKILL */
#define SANDBOX_RESTORE_MAX	10.0	/* a restore slower than this failed */
#define SANDBOX_SAVE_MAX	60.0	/* writing a template */
#define SANDBOX_BUILDER_POLL	0.05	/* another's template: look again */

/* The migration capability of shared RAM, for the save and the restore. */
#define SANDBOX_QMP_IGNORE_SHARED \
	"{\"capability\":\"x-ignore-shared\",\"state\":true}"

/*
 * What the sandbox is doing; each maps to one public enum sandbox_state,
 * which only moves forward (sandbox_public).
 */
enum sbs {
	SBS_NEW,
	SBS_QUEUED,		/* waiting for a start slot, or for another
				   qsup to finish the template it builds */
	SBS_BOOTING,		/* cold boot, /setup configures the guest */
	SBS_BUILDING,		/* boot to template state, to save it */
	SBS_SAVING,		/* writing the template of the booted guest */
	SBS_CONFIGURING,	/* saved; /setup sent, waiting for its answer */
	SBS_RESTARTING,		/* saved with shared RAM: the build's QEMU
				   killed, its template to be restored */
	SBS_CLONING,		/* restoring the template just saved */
	SBS_RECOVERING,		/* that restore failed: QEMU killed, to boot */
	SBS_RESTORING,		/* restoring a template; /setup sent */
	SBS_RELAUNCHING,	/* the restore failed: QEMU killed, to boot */
	SBS_READY,		/* the agent is configured and answers */
	SBS_PAUSED,		/* QMP stop returned: no vCPU runs, no
				   pings go, until QMP cont returns */
	SBS_STOPPING,		/* QEMU asked to stop, waiting for it and
				   the console to end */
	SBS_DEAD,		/* reaped and its console closed */
	SBS_COUNT
};

/* What happens to it. */
enum sbe {
	SBE_UP,			/* the agent answered 200: up, or set up */
	SBE_REFUSED,		/* ... an error (not 503) */
	SBE_SETUP_FAILED,	/* ... 503: the guest's setup failed */
	SBE_BROKEN,		/* the agent broke the protocol */
	SBE_SAVED,		/* the template save is over, saved or not */
	SBE_DEADLINE,		/* the start took too long */
	SBE_LOST,		/* a liveness ping went unanswered */
	SBE_HALTED,		/* the console says the guest halted */
	SBE_EXITED,		/* QEMU was reaped */
	SBE_EOF,		/* the console reached its end */
	SBE_STOP,		/* the owner asked it to stop */
	SBE_KILL,		/* QEMU did not stop in time */
	SBE_GO,			/* a start slot is ours: launch */
	SBE_PAUSED,		/* QMP stop returned */
	SBE_RESUMED,		/* QMP cont returned */
	SBE_COUNT
};

/* How the guest comes up (the start kind). */
enum sandbox_mode {
	SB_COLD,	/* boot; /setup configures the guest */
	SB_BUILD,	/* boot to template state, save it, then /setup */
	SB_RESTORE	/* restore a template, then /setup */
};

struct sandbox {
	struct ev_loop		*loop;
	const struct profile	*profile;
	struct sandbox_cbs	 cbs;
	/*
	 * sandbox.c's sandbox_event, set by sandbox_new: the files below it
	 * report what happens through it, and never change the state.
	 */
	void			(*event)(struct sandbox *, enum sbe,
				    const char *);
	enum sbs		 state;
	enum sandbox_mode	 mode;
	struct accel_choice	 accel;
	struct guest		 guest;
	struct template		 tpl;		/* used if tpl.dir != NULL */
	char			*fallback;	/* why a restore was given up */

	char			*rundir;
	char			*token;
	struct share		*shares;
	size_t			 nshares;
	struct net		*net;		/* NULL: no card */
	char			*image;		/* the base's path, or NULL */
	int			 image_writable; /* written in place */
	char			**layers;	/* setup's over it, bottom first */
	size_t			 nlayers;
	char			*layer_store;	/* where they must be */
	struct disk		 disk;		/* when image is set */
	struct cow		 cow;		/* when a share is cow */

	/* One launch of QEMU; a failed restore is followed by another. */
	struct qemu		*qemu;
	struct serial		*console;
	int			 console_guest_fd;
	struct agent_conn	*ports[QSUP_PORT_COUNT];
	int			 port_guest_fd[QSUP_PORT_COUNT];
	int			 qmp_fd;
	int			 qmp_guest_fd;
	int			 state_fd;	/* the template, for -incoming */
	int			 ram_fd;	/* its RAM, format 2 */
	struct qmp_script	*incoming;	/* a format 2 restore's QMP */
	struct qmp_conn		*qmp;		/* the monitor, once ready */
	sandbox_done_cb		 qmp_cb;	/* a pause or resume's owner */
	void			*qmp_arg;
	int			 built;		/* this run saved the template */
	struct gate		*gate;		/* our start slot, held until
						   ready */
	ev_timer		 builder;	/* polls for its template */
	ev_timer		 spare;		/* ready: a spare QEMU of its shape */
	double			 t_queued;	/* queued for a slot since */
	double			 queued_seconds;
	int			 keep_template;	/* a restore too slow: boot, but
						   neither discard nor rebuild */

	ev_timer		 deadline;
	ev_timer		 kill_timer;
	ev_timer		 live;		/* liveness pings, once ready */
	double			 ping_sent;	/* 0: none unanswered */
	double			 live_tick;	/* the last live timer run */
	double			 ping_slowest;	/* the slowest answer, for -v */
	unsigned		 pings;
	double			 t_spawn;
	double			 t_loading;	/* a restore: QEMU took the state */
	double			 guest_setup;	/* the agent's /setup, its own */
	double			 t_ready;
	double			 save_seconds;

	/* snapshots (sandbox_snap.c) */
	struct sandbox_snap_job	*snap_job;	/* a save under way */
	struct sandbox_snapref	*snap;		/* started from one, or NULL */

	/* a POST /refresh under way (sandbox_refresh.c): its owner's */
	sandbox_fresh_cb	 fresh_cb;	/* NULL: none, or cancelled */
	void			*fresh_arg;
	int			 fresh_busy;	/* sent, not answered */
	/* ... or sent with the restore's first request (sandbox_fresh_early) */
	int			 early;		/* SANDBOX_EARLY_* */
	char			 early_mac[SANDBOX_MAC_LEN];	/* "": none */
	char			*early_error;
	sandbox_fresh_cb	 early_cb;	/* its owner's, once asked */
	void			*early_arg;

	/* boot = "image" (sandbox_boot.c) */
	int			 boot_phase;
	ev_timer		 boot_tick;	/* progress on stderr */
};

#define SANDBOX_EARLY_NONE	0
#define SANDBOX_EARLY_PENDING	1	/* sent once launched */
#define SANDBOX_EARLY_SENT	2
#define SANDBOX_EARLY_DONE	3	/* early_error says how */

void		 sandbox_early_launch(struct sandbox *);
void		 sandbox_early_free(struct sandbox *);

typedef void	(*sandbox_action)(struct sandbox *, enum sbe, const char *);

/* sandbox.c */
extern const sandbox_action sandbox_actions[SBS_COUNT][SBE_COUNT];
void		 sandbox_event(struct sandbox *, enum sbe, const char *);
const char	*sandbox_sbs_name(enum sbs);
const char	*sandbox_sbe_name(enum sbe);
enum sandbox_state sandbox_public(enum sbs);

/* sandbox_launch.c */
int		 sandbox_stage_exec(struct sandbox *);
int		 sandbox_net(struct sandbox *, char **);
int		 sandbox_launch(struct sandbox *, char **);
void		 sandbox_launch_free(struct sandbox *);
char		*sandbox_death(struct sandbox *);

/* sandbox_warm.c */
int		 sandbox_choose_mode(struct sandbox *);
void		 sandbox_rechoose_mode(struct sandbox *);
int		 sandbox_builder_done(struct sandbox *, double);
void		 sandbox_save(struct sandbox *);

/* sandbox_snap.c */
#define SANDBOX_VNC_SOCK	"vnc.sock"	/* QEMU's VNC server (display) */
#define SANDBOX_HOSTNAME	"qsup"		/* every guest's */
#define SANDBOX_SNAP_STATE	"state"		/* files of a snapshot */
#define SANDBOX_SNAP_DISK	"disk.qcow2"
#define SANDBOX_SNAP_UNDER	"under%zu.qcow2" /* the disks below it */
#define SANDBOX_SNAP_PAGES	"ram.pages"	/* format 2 (sandbox_snap2.c) */
#define SANDBOX_SNAP_MAP	"ram.map"
#define SANDBOX_SNAP_TPL	"tpl.ram"
struct sandbox_snapref {	/* the snapshot a sandbox starts from */
	char		*dir;
	char		*token;		/* the source's: the guest keeps it */
	int		 cold;		/* the source booted: SANDBOX_COLD_*,
					   or 0 (a template's) */
	int		 ram_backend;	/* its RAM was a template's backend */
	int		 format;	/* 1: RAM in the stream; 2: dirty pages */
	uint8_t		*map;		/* format 2: a bit a page, and */
	size_t		 npages;	/* how many are set */
	uint8_t		*state;		/* the device state, for */
	size_t		 state_len;
	int		 pipe;		/* QEMU's -incoming, or -1 */
	int		 tpl_fd;	/* tpl.ram, or -1 */
	struct sandbox	*sb;
	ev_timer	 status;	/* polls the restore's run state */
	struct exec	*refresh;	/* a fork's fresh identity, under way */
	sandbox_done_cb	 refresh_cb;
	void		*refresh_arg;
	void		(*refresh_gone)(struct exec *, const char *);
};
struct sandbox_snap_job;
int		 sandbox_snap_launch(struct sandbox *, char **);
void		 sandbox_snap_launched(struct sandbox *);
void		 sandbox_snap_abort(struct sandbox *);

/* sandbox_snap2.c */
int		 sandbox_snap2_able(struct sandbox *);
int		 sandbox_snap2_save(struct sandbox *, const char *, uint64_t *,
		     char **);
int		 sandbox_snap2_launch(struct sandbox *, char **);
int		 sandbox_snap2_load(struct sandbox *, char **);
int		 sandbox_snap2_pipe(int [2], char **);

/* sandbox_spare.c: ours (the console, the ports, QMP) of a spare QEMU */
#define SANDBOX_SPARE_NFDS	(QSUP_PORT_COUNT + 2)
int		 sandbox_spare_take(struct sandbox *, int [SANDBOX_SPARE_NFDS]);
void		 sandbox_spare_make(struct sandbox *);

/* sandbox_argv.c */
int		 sandbox_template_format(struct sandbox *);
int		 sandbox_cold(struct sandbox *);
void		 sandbox_build_argv(struct sandbox *, struct qemu_argv *);
#define SANDBOX_SPAWN_NFDS	(QSUP_PORT_COUNT + 5)
void		 sandbox_confine(struct sandbox *, int, int *,
		     struct qemu_confine *);

/* sandbox_seed.c */
int		 sandbox_write_seed(struct sandbox *, char **);
void		 sandbox_reply_cb(int, const char *, size_t, void *);
void		 sandbox_send_setup(struct sandbox *);
int		 sandbox_root_early(const struct sandbox *);
void		 sandbox_send_root(struct sandbox *);

/* sandbox_live.c */
double		 sandbox_start_timeout(struct sandbox *);
void		 sandbox_live_start(struct sandbox *);
void		 sandbox_live_stop(struct sandbox *);
void		 sandbox_live_resume(struct sandbox *);
void		 sandbox_console_mark_cb(void *, const char *);

/* sandbox_boot.c */
#define SANDBOX_BOOT_AGENT	"qsup-agent"	/* its name on the seed */
int		 sandbox_boot_image(const struct sandbox *);
void		 sandbox_boot_watch(struct sandbox *);
void		 sandbox_boot_unwatch(struct sandbox *);
const char	*sandbox_boot_phase(const struct sandbox *);
void		 sandbox_boot_user_data(struct sandbox *, struct buf *);
const char	*sandbox_boot_network_config(void);
int		 sandbox_boot_agent(struct sandbox *, char **, size_t *,
		     char **);

#endif
