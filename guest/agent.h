/*
 * qsup-agent: the in-guest agent's one internal header, a section per
 * file. The wire protocol itself lives in wire.h, shared with qsup.
 */
#ifndef AGENT_H
#define AGENT_H

#include <sys/types.h>

#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "wire.h"

/* Bounds on what a port holds; the host is not trusted to be sane. */
#define AGENT_HEAD_MAX		WIRE_HEAD_MAX	/* head */
#define AGENT_BODY_MAX		WIRE_BODY_MAX	/* any body */
#define AGENT_IN_MAX		(64 * 1024)	/* unparsed input */
#define AGENT_OUT_HIGH		(256 * 1024)	/* backpressure */
#define AGENT_CONFIG_MAX	(1024 * 1024)	/* qsup-config */
#define AGENT_PATH		QSUP_GUEST_PATH

/* A byte buffer consumed from the front; data is NUL-terminated. */
struct abuf {
	char	*data;
	size_t	 off;		/* consumed prefix */
	size_t	 len;		/* end of valid bytes */
	size_t	 size;
};

struct agent_mount {
	char	*tag;
	char	*path;
	int	 ro;
	int	 cow;	/* an overlay over it, its upper on the cow disk */
};

/* A bind mount of one guest path over another, after the 9p mounts. */
struct agent_bind {
	char	*src;
	char	*dst;
	int	 ro;
};

/* What the seed says; a missing token means there was no seed at all. */
struct agent_config {
	char			*token;
	char			*hostname;
	int			 has_time;
	struct timespec		 time;
	unsigned char		*entropy;
	size_t			 entropy_len;
	int			 has_mac;	/* /refresh: the card's new */
	unsigned char		 mac[6];	/* address */
	char			**env;
	size_t			 nenv;
	char			*cwd;
	struct agent_mount	*mounts;
	size_t			 nmounts;
	struct agent_bind	*binds;
	size_t			 nbinds;
	char			*firewall;	/* iptables-restore input */
	char			*cow;		/* the cow disk's serial */
	char			*root;		/* the root disk's serial */
	int			 root_grow;	/* grow it to fill the disk */
	unsigned long long	 root_size;	/* its size in bytes; 0: unsaid */
	int			 root_glibc;	/* look for the image's glibc */
	int			 template;	/* boot to template state: the
						   rest comes with /setup */
	char			**entrypoint;	/* QSUP_IMAGE_CONF only */
	size_t			 nentrypoint;
	char			**cmd;
	size_t			 ncmd;
};

struct port;
struct exec;

/*
 * PID-1 setup (init.c and the files below it: netcfg.c, module.c,
 * root.c, imageconf.c, config.c, iso.c, disk.c): what it found and
 * made. main owns it; setup fills it in and never calls into the
 * service, which reads it through struct agent.
 */
struct init_state {
	int			 pid1;
	int			 service;	/* --service: not PID 1 */
	/*
	 * Booted to become a VM state template (qsup.template=1): no seed
	 * is read; the configuration arrives with POST /setup after a
	 * restore.
	 */
	int			 template;
	struct agent_config	 cfg;
	char			*error;		/* the first setup error */
	char			 kernel[65];	/* uname's release */
	int			 nports;	/* agent ports to wait for */
	int			 ports_told;	/* qsup.ports= was given */
	int			 dev_mounted;	/* by init_console */
	int			 root_wanted;	/* qsup.root=1: a disk image */
	int			 display;	/* qsup.display=1: a screen */
	int			 root_loaded;	/* the root's modules are in */
	int			 share_loaded;	/* and the 9p shares' */
	int			 disk_loaded;	/* and virtio's disk driver */
	int			 net_loaded;	/* and the network card's */
	int			 setup_boot;	/* qsup.setup=1: configured by
						   /setup, not a template */
	int			 seed_ok;
	char			*root_device;	/* what is mounted as /, once
						   it is */
	int			 cow_ready;	/* the cow disk is mounted */
	char			 cow_boot[32];	/* qsup.cow=SERIAL */
	char			 cow_probed[256]; /* its disk, found at boot */
	char			*root_glibc;	/* the image's glibc version */
	char			 root_probed[256];	/* root_probe's find */
	/*
	 * The root mounted in template state (POST /root): what was asked,
	 * for /setup to check its own "root" line against.
	 */
	int			 root_early;
	int			 root_early_grow;
	unsigned long long	 root_early_size;
	char			*root_early_serial;
	char			**entrypoint;	/* the image's (imageconf.c) */
	size_t			 nentrypoint;
};

/*
 * The request service (agent.c's loop, port.c, exec.c, job.c,
 * vport.c): its ports and execs, and what setup made, which it reads
 * and, on POST /setup, asks setup to fill in.
 */
struct agent {
	struct init_state	*init;
	struct port		*ports;
	struct exec		*execs;
	unsigned		 exec_next_id;
	int			 sigfd;
	int			 poweroff;	/* asked to power off */
	long long		 ready_ms;
	long long		 setup_us;	/* POST /setup's own work, or 0 */
	int			 uevent;	/* while ports are missing */
	struct exec_runner	*runner;	/* spawned ahead (exec.c) */
	int			 runner_off;	/* its spawn failed here */
};

/*
 * How an exec reports to the connection its events stream to (port.c
 * gives these): exec.c sits below port.c and calls it only through them.
 */
struct exec_cb {
	void	(*event)(void *, const char *, const void *, size_t, int);
	void	(*exited)(void *);	/* the exit event has been sent */
	void	(*stdin_done)(void *, int, const char *);
	size_t	(*pending)(const void *);	/* output not yet written */
};

/* agent.c: main, the loop; nothing calls into it. */

/* util.c */
void		 log_warn(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_warnx(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 fatalx(const char *, ...)
		     __attribute__((format(printf, 1, 2), noreturn));
void		 util_set_fatal(void (*)(void *), void *);
void		 util_set_error(char **, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
void		*xmalloc(size_t);
void		*xcalloc(size_t, size_t);
void		*xreallocarray(void *, size_t, size_t);
char		*xstrdup(const char *);
char		*xstrndup(const char *, size_t);
int		 xasprintf(char **, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
long long	 util_ms(clockid_t);
long long	 util_us(clockid_t);
int		 util_read_fd(int, char **, size_t *, size_t);
int		 util_read_file(const char *, char **, size_t *, size_t);
int		 util_file_is(const char *, const char *);
int		 util_mkdir_p(const char *, mode_t);
void		 abuf_add(struct abuf *, const void *, size_t);
void		 abuf_printf(struct abuf *, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
size_t		 abuf_used(const struct abuf *);
char		*abuf_start(const struct abuf *);
void		 abuf_consume(struct abuf *, size_t);
void		 abuf_reset(struct abuf *);
void		 abuf_free(struct abuf *);
void		 abuf_base64(struct abuf *, const void *, size_t);
void		 abuf_put(void *, const void *, size_t);

/* config.c */
int		 config_parse(struct agent_config *, const char *, size_t,
		     char **);
void		 config_free(struct agent_config *);

/* disk.c */
enum disk_scheme {
	DISK_NONE,
	DISK_WHOLE,		/* a file system on the whole disk */
	DISK_MBR,
	DISK_GPT
};
enum {				/* partition kinds */
	DISK_T_UNKNOWN,		/* a GPT type not known here */
	DISK_T_OTHER,		/* known, never the root: ESP, swap, /home */
	DISK_T_DATA,		/* GPT Linux file system data */
	DISK_T_MBR,		/* any MBR partition */
	DISK_T_ROOT_X86_64,
	DISK_T_ROOT_ARM64
};
/* Where a disk's bytes come from: read() is 0 for all len bytes, or -1. */
struct disk_reader {
	int		(*read)(void *, uint64_t, void *, size_t);
	void		 *arg;
	uint64_t	  size;		/* bytes */
	uint32_t	  sector;	/* logical sector: 512 or 4096 */
};
struct disk_fs {
	uint32_t	block_size;
	uint64_t	blocks;
	char		label[17];	/* printable */
};
struct disk_root {
	enum disk_scheme scheme;
	int		 partno;	/* 1-based; 0: the whole disk */
	uint64_t	 start;		/* bytes */
	uint64_t	 len;		/* bytes */
	int		 last;		/* no partition ends after it */
	int		 rank;		/* how it was found: 3 type ... 1 content */
	const char	*how;
	struct disk_fs	 fs;
	unsigned char	*table;		/* the GPT header sector, or the MBR */
	unsigned char	*ents;		/* the GPT entry array */
	size_t		 ents_len;
	int		 gpt_backup;	/* read from the backup copy */
	const char	*odd;		/* why the table is not to be grown */
	char		 seen[512];	/* what the disk holds, for errors */
};
/* What growing writes: sectors to put back, each with its place. */
struct disk_grow {
	unsigned char	*mbr;		/* sector 0 (MBR tables) */
	unsigned char	*primary;	/* GPT header at LBA 1 */
	unsigned char	*backup;	/* GPT header at backup_lba */
	unsigned char	*ents;		/* entry array, at both places */
	size_t		 ents_len;
	uint64_t	 primary_ents_lba;
	uint64_t	 backup_ents_lba;
	uint64_t	 backup_lba;
	uint64_t	 new_len;	/* the root's new length, bytes */
};
#define DISK_GLIBC_OVERLAP	32	/* overlap of disk_glibc_scan pieces */
uint16_t	 disk_le16(const unsigned char *);
uint32_t	 disk_le32(const unsigned char *);
uint64_t	 disk_le64(const unsigned char *);
uint32_t	 disk_crc32(const void *, size_t);
void		 disk_guid_text(const unsigned char *, char[37]);
int		 disk_ext4_parse(const unsigned char *, size_t,
		     struct disk_fs *);
int		 disk_find_root(const struct disk_reader *, struct disk_root *);
void		 disk_root_free(struct disk_root *);
int		 disk_grow_plan(struct disk_root *, uint32_t, uint64_t,
		     struct disk_grow *, const char **);
int		 disk_grow_pmbr(unsigned char *, uint64_t);
void		 disk_grow_free(struct disk_grow *);
void		 disk_glibc_scan(const unsigned char *, size_t, int *, int *);

/* root.c */
int		 root_find_disk(const char *, char *, size_t, char *, size_t);
void		 root_setup(struct init_state *);
void		 root_service(struct init_state *);
void		 root_probe(struct init_state *);
int		 root_template(struct init_state *, const char *, size_t,
		     char **);

/* iso.c */
int		 iso_is_seed(int);
int		 iso_read_config(int, char **, size_t *, char **);

/* json.c */
struct json_exec {
	char	**argv;		/* NULL-terminated; NULL for a file job */
	size_t	  argc;
	char	**env;		/* NULL-terminated */
	size_t	  nenv;
	char	 *cwd;
	int	  tty;		/* on a new pseudo-terminal */
	unsigned  rows;		/* its size; 0: unsaid */
	unsigned  cols;
	char	 *read;		/* file jobs: the path, as sent */
	char	 *write;
	int	  mode;		/* write's mode; 0644 unless said */
	int	  has_mode;
	int	  entrypoint;	/* the image's entrypoint goes first */
};
int		 json_parse_exec(const char *, size_t, struct json_exec *,
		     char **);
void		 json_exec_free(struct json_exec *);

/* port.c */
void		 port_add(struct agent *, int, const char *);
int		 port_has(struct agent *, const char *);
int		 port_count(struct agent *);
int		 port_pollfds(struct agent *, struct pollfd *, void **, int);
void		 port_handle(struct port *, int);
void		 port_sweep(struct agent *);
void		 port_recheck(struct agent *);
void		 port_flush_all(struct agent *, int);

/* vport.c */
void		 vport_wait(struct agent *);
int		 vport_uevent_fd(struct agent *);
void		 vport_late(struct agent *);

/* imageconf.c */
void		 imageconf_load(struct init_state *);
char		**imageconf_argv(const struct init_state *, char **, size_t);

/* exec.c */
int		 exec_start(struct agent *, const struct exec_cb *, void *,
		     struct json_exec *, unsigned *, pid_t *, char **);
struct exec	*exec_find(struct agent *, unsigned);
int		 exec_stdin(struct exec *, void *, struct abuf *,
		     const char **);
void		 exec_close_stdin(struct exec *);
int		 exec_signal(struct exec *, int);
int		 exec_resize(struct exec *, unsigned, unsigned);
void		 exec_port_gone(struct agent *, void *);
int		 exec_pollfds(struct agent *, struct pollfd *, void **, int);
void		 exec_handle(void *, const struct pollfd *);
void		 exec_reaped(struct agent *, pid_t, int);
void		 exec_sweep(struct agent *);
void		 exec_runner_fill(struct agent *);
void		 exec_runner_ready(struct agent *, int);
void		 exec_runner_run(const char *, const char *)
		     __attribute__((noreturn));
void		 exec_kill_all(struct agent *, int);
int		 exec_count(struct agent *);

/* job.c */
int		 job_read(const char *);
int		 job_write(const char *, int, const char *);

/* netcfg.c */
void		 netcfg_loopback(void);
void		 netcfg_up(struct init_state *);
void		 netcfg_resolv(void);

/* module.c */
int		 module_load(const char *, const char *);
int		 module_root(struct init_state *);
int		 module_share(struct init_state *);
int		 module_disk(struct init_state *);
int		 module_has_disk(void);
int		 module_net(struct init_state *);

/* init.c */
/*
 * 512000 is the most the virtio transport takes. cache=mmap rather than
 * none: running programs from a share took half the time (50 execs of
 * busybox: 1.3 s against 2.5-3.0 s under TCG), MAP_SHARED writable maps
 * work, and host-side rewrites, appends and replaced files were seen at
 * once, as with none. loose was faster still but may serve stale data.
 */
#define INIT_9P_OPTIONS \
	"trans=virtio,version=9p2000.L,msize=512000,cache=mmap"
void		 init_console(struct init_state *);
void		 init_early(struct init_state *);
int		 init_cmdline(struct init_state *, int *, int *);
void		 init_modules(struct init_state *);
int		 init_seed(struct init_state *);
void		 init_mounts(struct init_state *);

/* cow.c */
void		 cow_probe(struct init_state *);
int		 cow_setup(struct init_state *);
int		 cow_mount(struct init_state *, const struct agent_mount *);
void		 cow_hide(struct init_state *);
void		 init_apply_seed(struct init_state *);
int		 init_apply_fresh(struct agent_config *);
int		 init_set_mac(const unsigned char [6]);
void		 init_service(struct init_state *);
int		 init_setup(struct init_state *, const char *, size_t, char **);
void		 init_poweroff(struct init_state *, void (*)(int, void *),
		     void *) __attribute__((noreturn));
void		 init_probe(void) __attribute__((noreturn));

#endif
