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
	char			**env;
	size_t			 nenv;
	char			*cwd;
	struct agent_mount	*mounts;
	size_t			 nmounts;
	struct agent_bind	*binds;
	size_t			 nbinds;
	char			*firewall;	/* iptables-restore input */
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

/* agent.c */
extern int			 agent_pid1;
extern int			 agent_service;
extern int			 agent_template;
extern struct agent_config	 agent_cfg;
extern char			*agent_error;
extern long long		 agent_ready_ms;
extern char			 agent_kernel[65];
void		 agent_set_error(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 agent_poweroff_request(void);

/* util.c */
void		 log_warn(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_warnx(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 fatalx(const char *, ...)
		     __attribute__((format(printf, 1, 2), noreturn));
void		*xmalloc(size_t);
void		*xcalloc(size_t, size_t);
void		*xreallocarray(void *, size_t, size_t);
char		*xstrdup(const char *);
char		*xstrndup(const char *, size_t);
int		 xasprintf(char **, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
long long	 util_ms(clockid_t);
int		 util_read_fd(int, char **, size_t *, size_t);
int		 util_read_file(const char *, char **, size_t *, size_t);
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
extern char	*root_device;	/* what is mounted as /, once it is */
extern char	*root_glibc;	/* the image's glibc version, if found */
void		 root_setup(void);
void		 root_service(void);
void		 root_probe(void);

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
void		 port_add(int, const char *);
int		 port_has(const char *);
int		 port_count(void);
int		 port_live_count(void);
size_t		 port_pending(const struct port *);
int		 port_pollfds(struct pollfd *, void **, int);
void		 port_handle(struct port *, int);
void		 port_sweep(void);
void		 port_recheck(void);
void		 port_flush_all(int);
void		 port_event(struct port *, const char *, const void *,
		     size_t, int);
void		 port_exec_done(struct port *);
void		 port_stdin_done(struct port *, int, const char *);

/* imageconf.c */
void		 imageconf_load(void);
char		**imageconf_argv(char **, size_t);

/* exec.c */
int		 exec_start(struct port *, struct json_exec *, unsigned *,
		     pid_t *, char **);
struct exec	*exec_find(unsigned);
int		 exec_stdin(struct exec *, struct port *, struct abuf *,
		     const char **);
void		 exec_close_stdin(struct exec *);
int		 exec_signal(struct exec *, int);
int		 exec_resize(struct exec *, unsigned, unsigned);
void		 exec_port_gone(struct port *);
int		 exec_pollfds(struct pollfd *, void **, int);
void		 exec_handle(void *, const struct pollfd *);
void		 exec_reaped(pid_t, int);
void		 exec_sweep(void);
void		 exec_kill_all(int);
int		 exec_count(void);

/* job.c */
int		 job_read(const char *);
int		 job_write(const char *, int, const char *);

/* init.c */
void		 init_console(void);
void		 init_early(void);
int		 init_cmdline(int *, int *, int *);
void		 init_modules(void);
int		 init_modules_root(void);
void		 init_resolv(void);
void		 init_network(void);
void		 init_firewall(void);
int		 init_seed(void);
void		 init_mounts(void);
void		 init_apply_seed(void);
int		 init_ports_scan(void);
void		 init_ports(void);
void		 init_ports_late(void);
int		 init_uevent_fd(void);
void		 init_service(void);
void		 init_poweroff(void) __attribute__((noreturn));
void		 init_probe(void) __attribute__((noreturn));

#endif
