/*
 * qsup: the core's one internal header, a section per file.
 */
#ifndef QSUP_H
#define QSUP_H

#include <sys/types.h>

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

/* Exit codes of qsup itself; the guest command's own status passes through. */
#define QSUP_EXIT_ERROR		125	/* qsup, profile or usage error */
#define QSUP_EXIT_TIMEOUT	124	/* --timeout expired */
#define QSUP_EXIT_NOEXEC	126	/* command found but not executable */
#define QSUP_EXIT_NOTFOUND	127	/* command not found in the guest */

/* QEMU's seccomp filter (-sandbox), for every QEMU qsup starts. */
#define QSUP_QEMU_SANDBOX	"on,obsolete=deny,elevateprivileges=deny," \
				"spawn=deny,resourcecontrol=deny"

/* util.c */
struct buf;
extern volatile sig_atomic_t util_stop_now;	/* give up waiting, now */
void		*xmalloc(size_t);
void		*xcalloc(size_t, size_t);
void		*xrealloc(void *, size_t);
void		*xreallocarray(void *, size_t, size_t);
char		*xstrdup(const char *);
char		*xstrndup(const char *, size_t);
int		 xasprintf(char **, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
int		 xvasprintf(char **, const char *, va_list);
double		 util_now(void);
char		*util_cache_dir(void);
int		 util_mkdir_p(const char *, mode_t);
int		 util_set_nonblock(int);
int		 util_set_cloexec(int, int);
int		 util_rm_rf(const char *);
char		*util_path_normalize(const char *);
char		*util_which(const char *);
char		*util_read_file(const char *, size_t *, size_t);
int		 util_write_file(const char *, const char *);
int		 util_run_capture(char *const [], int, double, const char *,
		     struct buf *, int *);
size_t		 util_base64_decode(const char *, size_t, unsigned char *);
int		 util_json_int(const char *, const char *, long long *);
char		*util_json_str(const char *, const char *);

/* A growable byte buffer, always NUL-terminated. */
struct buf {
	char	*data;
	size_t	 len;
	size_t	 size;
};
void		 buf_add(struct buf *, const void *, size_t);
void		 buf_puts(struct buf *, const char *);
void		 buf_printf(struct buf *, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
void		 buf_json_string(struct buf *, const char *);
void		 buf_consume(struct buf *, size_t);
void		 buf_free(struct buf *);

/* token.c */
void		 token_random(unsigned char *, size_t);
char		*token_hex(size_t);

/* log.c */
extern int	 log_verbose;
void		 log_init(const char *);
struct outq;
void		 log_set_queue(struct outq *);
void		 log_debug(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_info(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_warn(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_warnx(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
__attribute__((noreturn)) void
		 fatalx(const char *, ...)
		     __attribute__((format(printf, 1, 2)));

/* seed_iso.c */
struct seed_file {
	const char	*name;		/* lower-case, e.g. "meta-data" */
	const void	*data;
	size_t		 len;
};
int		 seed_iso_write(const char *, const struct seed_file *, size_t,
		     char **);

/* profile.c (lua/) */
enum profile_kvm {
	PROFILE_KVM_AUTO,	/* use KVM when it is measured to work */
	PROFILE_KVM_ON,		/* KVM or fail */
	PROFILE_KVM_OFF		/* never KVM */
};
enum profile_virtfs {		/* copying shared trees before sharing */
	PROFILE_VIRTFS_AUTO,	/* when qsup runs in a container */
	PROFILE_VIRTFS_ON,
	PROFILE_VIRTFS_OFF
};
enum profile_sm {		/* 9p security_model; profile_sm_name() */
	PROFILE_SM_MAPPED_XATTR,
	PROFILE_SM_MAPPED_FILE,
	PROFILE_SM_PASSTHROUGH,
	PROFILE_SM_NONE
};
enum profile_ld {		/* glibc closure copied with shares */
	PROFILE_LD_FULL,	/* all of /lib/TRIPLET, /usr/lib/TRIPLET */
	PROFILE_LD_SPARSE	/* the ldd closure only */
};
enum profile_net {
	PROFILE_NET_RESTRICTED,	/* SLIRP restrict=on: nothing out, ports in */
	PROFILE_NET_NONE,	/* no network card */
	PROFILE_NET_ALLOWLIST,	/* only network_allow */
	PROFILE_NET_OPEN	/* all, host loopback included (acknowledged) */
};
enum profile_image {
	PROFILE_IMAGE_NONE,	/* the built-in guest */
	PROFILE_IMAGE_NAME,	/* "debian-12": from image_base_url */
	PROFILE_IMAGE_URL,	/* http(s) */
	PROFILE_IMAGE_FILE	/* an absolute path, checked to exist */
};
struct profile_share {
	char		*host;		/* absolute, real, a directory */
	char		*guest;		/* absolute, normalized */
	int		 rw;		/* 0: read-only */
	char		**ignore;	/* fnmatch(3) globs, left out */
	size_t		 nignore;
	int		 exec;		/* an execution tree: staged when
					   virtfs says so */
};
struct profile_net_rule {
	char		*text;		/* as written, for messages */
	char		*host;		/* "example.org", "*.example.org" (all
					   names under it), lower case; "*"
					   any host (deny rules only); NULL
					   for an address */
	int		 family;	/* AF_INET, AF_INET6; 0 for a name */
	unsigned char	 addr[16];
	int		 prefix;	/* bits of addr that must match */
	uint16_t	 port_min;	/* 0: any port */
	uint16_t	 port_max;
	int		 deny;		/* refuses what it matches, whatever
					   else allows it */
	int		 from_rule;	/* made from network_rules[from_rule
					   - 1]; 0: written as is */
};
struct profile_port {
	uint16_t	 guest;
	uint16_t	 host;		/* 0: any free port */
	char		*address;	/* host address to listen on */
	int		 from_rule;	/* as in struct profile_net_rule */
};
struct profile_tcp_map {
	char		*name;		/* resolved in the guest, or NULL */
	uint16_t	 guest_port;
	char		*host;		/* the host-side destination */
	uint16_t	 port;
};
struct profile_origin;
struct profile {
	char		*path;		/* the file, or "builtin:NAME" */
	enum profile_kvm use_kvm;
	uint64_t	 memory_mib;
	int		 cpus;
	double		 start_timeout;	/* seconds; 0: by accelerator */
	double		 timeout;	/* seconds per command; 0: none */
	int		 show_boot_console;
	int		 console_on_failure; /* console lines shown; 0: none */
	int		 warm_start;	/* restore from a saved VM template */
	char		*kernel;	/* NULL: the default guest's */
	char		*initramfs;	/* NULL: the default guest's */
	char		*image;		/* NULL: the built-in guest */
	enum profile_image image_kind;
	char		*image_base_url; /* NULL: qsup's catalog */
	char		*images_dir;	/* NULL: $XDG_DATA_HOME/qsup/images */
	char		**env;		/* "NAME=VALUE", for every command */
	size_t		 nenv;
	char		*cwd;		/* NULL: "/" */
	struct profile_share *shares;
	size_t		 nshares;
	enum profile_virtfs virtfs;
	enum profile_sm	 virtfs_security_model;
	enum profile_ld	 ld_closure_libs;
	char		**ld_closure_extra; /* sonames or paths, for "sparse" */
	size_t		 nld_closure_extra;
	enum profile_net network;
	struct profile_net_rule *network_allow; /* + network_rules' OUT */
	size_t		 nnetwork_allow;
	int		 network_open_ack;
	int		 guest_firewall; /* the guest loads one too */
	int		 virtfs_cache;	/* keep staged trees between runs */
	struct profile_port *ports;	/* + network_rules' IN */
	size_t		 nports;
	struct profile_tcp_map *network_tcp;
	size_t		 nnetwork_tcp;
	char		**network_rules; /* as written; compiled into
					   network_allow and ports */
	size_t		 nnetwork_rules;
	char		**extra_args;	/* checked by extra_args_next() */
	size_t		 nextra_args;
	struct profile_origin *origins;	/* for profile_print() */
};
int		 profile_load(struct profile *, const char *, char **);
int		 profile_load_set(struct profile *, const char *,
		     char *const *, size_t, char **);
int		 profile_load_buffer(struct profile *, const char *,
		     const char *, size_t, char *const *, size_t, char **);
char		*profile_find(const char *, char **);
#define PROFILE_PRINT_JSON	0x1
#define PROFILE_PRINT_BARE	0x2	/* values only, no origins */
void		 profile_print(const struct profile *, int, struct buf *);
const char	*profile_sm_name(enum profile_sm);
const char	*profile_net_name(enum profile_net);
void		 profile_free(struct profile *);
void		 profile_help(struct buf *);

/* netrule.c (lua/): network_allow rules, and network_rules compiled */
#define NETRULE_IN_MAX	64	/* ports of one range forwarded in */
int		 netrule_parse(const char *, struct profile_net_rule *, char **);
#define NETRULE_HOST_ADDR 0x1	/* netrule_host(): an address will do */
int		 netrule_host(const char *, int, char **, char **);
int		 netrule_compile(const char *, int, struct profile_net_rule **,
		     size_t *, struct profile_port **, size_t *, char **);
void		 netrule_free(struct profile_net_rule *);

/* extra_args.c (lua/): QEMU flags a profile may not add */
int		 extra_args_next(char *const *, size_t, size_t *, char **);

/* facts.c (lua/): what profiles know of the host */
struct facts_python {
	char		*path;		/* the python3 found on PATH */
	char		*executable;	/* what it runs, links and shims followed */
	char		*version;	/* "3.11" */
	char		*prefix;	/* the executable's ../.. */
	char		*venv;		/* the virtual environment, or NULL */
};
int		 facts_in_container(void);
const char	*facts_arch(void);
const char	*facts_triplet(void);
const char	*facts_glibc(void);
long		 facts_cpus(void);
uint64_t	 facts_memory_mib(void);
int		 facts_kvm(char **);
int		 facts_python(struct facts_python *);
void		 facts_python_free(struct facts_python *);

/* cmd_profile.c: "qsup profile check|show|settings|facts" */
int		 cmd_profile(int, char **);

struct ev_loop;

/* qmp.c: blocking QMP, for when QEMU is paused and qsup waits anyway */
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
const char	*accel_name(enum accel);

/* share.c */
#define SHARE_MAX	5	/* microvm's eight virtio-mmio slots: console
				   ports, seed disk, network and these */
struct share_bind {		/* a bind mount the guest makes of it */
	char		*src;		/* inside the share, from its root */
	char		*dst;		/* a guest path */
};
struct share {
	char		*host;		/* absolute, resolved */
	char		*guest;		/* absolute */
	int		 readonly;
	char		**ignore;	/* globs hidden from the guest, or NULL */
	int		 exec;		/* an execution tree (staged in containers) */
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

/* closure.c: the sparse library closure and the guest's glibc */
#define CLOSURE_NONE	0
#define CLOSURE_LIB	1	/* a host C-library directory */
#define CLOSURE_PARENT	2	/* contains one */
#define CLOSURE_GUEST	"/run/qsup/ld"	/* where the guest mounts it */
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
struct template {
	char		*dir;
	char		*key;
	char		*shape;
	char		*state;
	char		*shape_path;
	char		*tmp;
	int		 lock_fd;
};
int		 template_init(struct template *, char **, const char *,
		     const char *);
int		 template_exists(struct template *);
int		 template_lock(struct template *);
void		 template_unlock(struct template *);
int		 template_open_tmp(struct template *, char **);
int		 template_commit(struct template *, int, char **);
void		 template_abandon(struct template *);
void		 template_discard(struct template *);
void		 template_free(struct template *);
int		 template_sweep(const char *);
int		 template_cmd(int, char **);

/* guest.c */
struct guest {
	char		*kernel;
	char		*initramfs;
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
void		 serial_set_mark_cb(struct serial *,
		     void (*)(void *, const char *), void *);
char		*serial_find(struct serial *, const char *);
void		 serial_drain(struct serial *);
void		 serial_free(struct serial *);

/* outq.c: a bounded, non-blocking queue onto one of qsup's own fds */
struct outq;
struct outq	*outq_new(struct ev_loop *, int);
void		 outq_write(struct outq *, const void *, size_t);
size_t		 outq_pending(struct outq *);
void		 outq_set_drain_cb(struct outq *, void (*)(void *), void *);
int		 outq_flush_blocking(struct outq *);
void		 outq_free(struct outq *);
int		 outq_reopen_nonblock(int, int);

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

/* sandbox.c */
enum sandbox_state {
	SB_NEW,
	SB_BOOTING,	/* QEMU started, waiting for the agent */
	SB_SAVING,	/* writing a template of the booted guest */
	SB_READY,	/* the agent answered with this sandbox's token */
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
int		 sandbox_start(struct sandbox *, const struct accel_choice *,
		     char **);
void		 sandbox_stop(struct sandbox *, const char *);
enum sandbox_state sandbox_state(struct sandbox *);
struct agent_conn *sandbox_port(struct sandbox *, int);
const struct accel_choice *sandbox_accel(struct sandbox *);
double		 sandbox_boot_seconds(struct sandbox *);
const char	*sandbox_start_kind(struct sandbox *);
const char	*sandbox_fallback(struct sandbox *);
double		 sandbox_save_seconds(struct sandbox *);
long		 sandbox_qemu_rss_kb(struct sandbox *);
struct net	*sandbox_net_of(struct sandbox *);
void		 sandbox_console_tail(struct sandbox *, int, struct buf *);
char		*sandbox_console_oom(struct sandbox *);
void		 sandbox_free(struct sandbox *);

/* run.c: the "run" command */
struct run_options {
	const char	*profile;
	char		**argv;
	char		**env;
	size_t		 nenv;
	const char	*cwd;
	const char	**shares;	/* --share specs */
	size_t		 nshares;
	char		**sets;		/* --set NAME=VALUE, for the profile */
	size_t		 nsets;
	double		 timeout;
	int		 console;
	int		 json;
};
int		 run_main(struct run_options *);

/* net.c: the guest's network, a libslirp stack in qsup's loop (net_*.c) */
#define NET_GUEST_ADDR	QSUP_NET_GUEST	/* the guest's eth0, /24 */
#define NET_HOST_ADDR	QSUP_NET_GATEWAY /* its gateway */
#define NET_DNS_ADDR	QSUP_NET_DNS	/* its resolver (net_dns.c) */
#define NET_PROXY_ADDR	"10.0.2.100"	/* the allowlist's HTTP proxy */
#define NET_PROXY_PORT	3128
#define NET_MAP_FIRST	101		/* TCP maps: 10.0.2.101 and up, */
#define NET_MAPS_MAX	100		/* to 10.0.2.200 */
#define NET_GUEST_MAC	"52:54:00:12:34:56"
#define NET_MTU		16384		/* the guest learns it (host_mtu) */
#define NET_CONNS_MAX	128		/* through the proxy and maps, at once */
struct net_config {
	enum profile_net		 mode;
	const struct profile_net_rule	*rules;	/* for "allowlist" */
	size_t				 nrules;
	const char			*dir;	/* for its unix sockets (the
						   sandbox's run directory);
						   NULL: a private one */
};
struct net_dest {
	const char	*kind;		/* "connect", "http", "tcp", "dns",
					   "udp", "icmp", "fragment" */
	char		*dest;		/* "example.org:443" */
	int		 allowed;
	char		*why;		/* why refused; NULL when allowed */
	unsigned long	 count;
};
struct net_stats {
	unsigned long long	 allowed;	/* connections and DNS answers */
	unsigned long long	 refused;
	unsigned long long	 frames_in;	/* from the guest */
	unsigned long long	 frames_out;	/* to the guest */
	unsigned long long	 frames_dropped; /* QEMU did not keep up */
	unsigned long long	 fragments_dropped; /* IPv4 fragments (also
						   counted in refused) */
	const struct net_dest	*dests;		/* each distinct attempt;
						   valid until net is used */
	size_t			 ndests;
	unsigned long long	 dests_dropped;	/* not in dests: too many */
};
struct net;
struct net	*net_new(struct ev_loop *, const struct net_config *, char **);
int		 net_qemu_fd(struct net *);
char *const	*net_qemu_args(struct net *);
char *const	*net_guest_env(struct net *);
void		 net_qemu_started(struct net *);
int		 net_relink(struct net *, char **);
int		 net_add_hostfwd(struct net *, const char *, int, int, int *,
		     char **);
int		 net_add_tcp_map(struct net *, const char *, int,
		     const char *, int, char **, char **);
void		 net_stats(struct net *, struct net_stats *);
void		 net_stats_json(struct net *, struct buf *);
void		 net_free(struct net *);
/* Shared by net_*.c only. */
struct in_addr;
struct sockaddr;
struct addrinfo;
struct net_resolver;
struct net_lookup;
struct net_proxy;
struct net_dns;
void		 net_send_frame(struct net *, const void *, size_t);
void		 net_note(struct net *, const char *, const char *, int,
		     const char *);
const struct profile_net_rule *net_rules(struct net *, size_t *);
int		 net_conn_open(struct net *);
void		 net_conn_close(struct net *);
enum profile_net net_mode(struct net *);
struct net_resolver *net_resolver(struct net *);
struct ev_loop	*net_loop(struct net *);
int		 net_map_find(struct net *, const char *, struct in_addr *);
/* net_rule.c */
int		 net_host_valid(const char *);
const struct profile_net_rule *net_rule_match(const struct profile_net_rule *,
		     size_t, const char *, const struct sockaddr *, int);
const struct profile_net_rule *net_rule_denied(const struct profile_net_rule *,
		     size_t, const char *, const struct sockaddr *, int);
char		*net_rule_why(const struct profile_net_rule *, size_t,
		     const char *, const struct sockaddr *, int, const char *);
int		 net_rule_addr_special(const struct sockaddr *);
int		 net_rule_addr_local(const struct sockaddr *);
int		 net_rule_addr_allowed(const struct profile_net_rule *, size_t,
		     const struct profile_net_rule *, const struct sockaddr *,
		     int);
/* net_resolve.c: getaddrinfo_a, answered in the loop */
typedef void	(*net_lookup_cb)(const struct addrinfo *, int, void *);
struct net_resolver *net_resolver_new(struct ev_loop *);
struct net_lookup *net_lookup_start(struct net_resolver *, const char *, int,
		     int, net_lookup_cb, void *, int *);
void		 net_lookup_cancel(struct net_lookup *);
int		 net_name_loopback(const char *);
void		 net_resolver_free(struct net_resolver *);
/* net_proxy.c: the HTTP proxy and TCP maps, one unix listener each */
struct net_proxy *net_proxy_new(struct net *, const char *, const char *, int,
		     char **);
void		 net_proxy_accept(struct net_proxy *);
void		 net_proxy_free(struct net_proxy *);
/* net_dns.c: the guest's resolver, answered from the frames */
struct net_dns	*net_dns_new(struct net *);
int		 net_dns_frame(struct net_dns *, const unsigned char *, size_t);
void		 net_dns_free(struct net_dns *);

#endif
