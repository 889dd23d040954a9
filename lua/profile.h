/*
 * lua/: the profile engine. A profile is Lua, run in a sandboxed state,
 * whose result is checked into a struct profile. It uses the base, net
 * and staging layers; host facts only the supervisor can measure (the
 * KVM verdict) are handed to it by its caller.
 */
#ifndef QSUP_PROFILE_H
#define QSUP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "net.h"

/* profile.c (lua/) */
enum profile_kvm {
	PROFILE_KVM_AUTO,	/* use KVM when it is measured to work */
	PROFILE_KVM_ON,		/* KVM or fail */
	PROFILE_KVM_OFF		/* never KVM */
};
enum profile_template_ram {	/* where a template keeps the guest's RAM */
	PROFILE_TRAM_SHARED,	/* its own file, mapped copy-on-write */
	PROFILE_TRAM_STREAM	/* in the migration stream (the old way) */
};

enum profile_display {		/* the guest's screen */
	PROFILE_DISPLAY_NONE,
	PROFILE_DISPLAY_VNC	/* QEMU's VNC server, on a unix socket only */
};
/* display_size's bounds, in pixels (profile_display.c) */
#define PROFILE_DISPLAY_MIN_W	320
#define PROFILE_DISPLAY_MIN_H	200
#define PROFILE_DISPLAY_MAX_W	3840
#define PROFILE_DISPLAY_MAX_H	2160

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
enum profile_boot {		/* what the guest boots */
	PROFILE_BOOT_KERNEL,	/* qsup's kernel and agent, the image as root */
	PROFILE_BOOT_IMAGE	/* the image as a PC: its loader, kernel, init */
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
	int		 rw;		/* 0: read-only (or cow) */
	int		 cow;		/* copy-on-write: read-only on the host,
					   the guest's writes on its own disk */
	char		**ignore;	/* fnmatch(3) globs, left out */
	size_t		 nignore;
	int		 exec;		/* an execution tree: staged when
					   virtfs says so */
	int		 create;	/* host made at the start if missing
					   (rw only) */
};
struct profile_tcp_map {
	char		*name;		/* resolved in the guest, or NULL */
	uint16_t	 guest_port;
	char		*host;		/* the host-side destination */
	uint16_t	 port;
};
/* A setup step: run once over the image, its result a cached layer. */
struct profile_step {
	char		**argv;		/* NULL-terminated */
	int		  shell;	/* written as a string: sh -c STRING */
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
	char		*console_log;	/* the console, kept; NULL: not */
	enum profile_boot boot;
	int		 console_on_failure; /* console lines shown; 0: none */
	int		 warm_start;	/* restore from a saved VM template */
	enum profile_template_ram template_ram;
	uint64_t	 template_cache_max; /* bytes of templates kept */
	/* "qsup serve"'s limits, read from the server's own profile. */
	int		 serve_max_sandboxes;
	uint64_t	 serve_max_memory_mib;	/* 0: 3/4 of the host's */
	uint64_t	 serve_max_body;	/* bytes */
	uint64_t	 serve_max_header;	/* bytes */
	int		 serve_max_connections;
	int		 serve_max_conns_per_addr;	/* 0: no cap */
	int		 serve_max_unauthenticated;	/* 0: half */
	double		 serve_head_timeout;	/* seconds */
	double		 serve_idle_timeout;
	double		 serve_body_timeout;
	char		**serve_pool;	/* "COUNT NAME": sandboxes kept booted
					   and paused per profile (NAME
					   "default": the server's own) */
	size_t		 nserve_pool;
	char		*kernel;	/* NULL: the default guest's */
	char		*initramfs;	/* NULL: the default guest's */
	char		*image;		/* NULL: the built-in guest */
	enum profile_image image_kind;
	char		*image_base_url; /* NULL: qsup's catalog */
	char		*images_dir;	/* NULL: $XDG_DATA_HOME/qsup/images */
	/* Filled by the loader for a NAME or URL image (catalog.lua). */
	char		*image_url;	/* what is downloaded; NULL for a FILE */
	char		*image_sums_url; /* its checksum file; NULL: beside it */
	char		*image_sha256;	/* pinned: 64 lowercase hex digits */
	int		 image_unverified; /* no digest found: use it anyway */
	uint64_t	 image_max_size; /* bytes a download may have */
	char		**registries;	/* "REG 0|1 URL...": a docker:// pull's
					   mirrors, 1: plain http allowed */
	size_t		 nregistries;
	uint64_t	 disk_size;	/* bytes; 0: the base image's own */
	uint64_t	 cow_size;	/* bytes of the cow shares' upper disk */
	char		*image_glibc;	/* the catalog's entry's, "2.36"; NULL:
					   not known (a URL, a file, a name
					   not in the catalog) */
	struct profile_step *setup;	/* each cached as a layer over image */
	size_t		 nsetup;
	enum net_mode	 setup_network;	/* the network setup steps get */
	struct net_rule	*setup_allow;	/* ... its allowlist, if a list */
	size_t		 nsetup_allow;
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
	enum net_mode network;
	struct net_rule *network_allow; /* + network_rules' OUT */
	size_t		 nnetwork_allow;
	int		 network_open_ack;
	int		 guest_firewall; /* the guest loads one too */
	int		 virtfs_cache;	/* keep staged trees between runs */
	struct net_port *ports;	/* + network_rules' IN */
	size_t		 nports;
	struct profile_tcp_map *network_tcp;
	size_t		 nnetwork_tcp;
	char		**network_rules; /* as written; compiled into
					   network_allow and ports */
	size_t		 nnetwork_rules;
	enum profile_display display;
	char		*display_size;	/* "WxH", checked */
	char		**extra_args;	/* checked by extra_args_next() */
	size_t		 nextra_args;
	struct profile_origin *origins;	/* for profile_print() */
};
void		 profile_step_free(struct profile_step *);
int		 profile_pool_count(const struct profile *, const char *);
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
void		 profile_free(struct profile *);
void		 profile_help(struct buf *);
/* profile_complete.c: names for shell completion, one a line */
void		 profile_complete_settings(struct buf *, const char *);
void		 profile_complete_names(struct buf *, const char *);
/* Measures qsup.kvm when a profile first reads it; sets *why. */
typedef int	(*profile_kvm_fact)(char **);
void		 profile_set_kvm_fact(profile_kvm_fact);

/* profile_display.c: display_size's width and height; -1: not one */
int		 profile_display_parse(const char *, int *, int *);
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
uint64_t	 facts_cgroup_limit(const char *);	/* v2: 0 if none */
uint64_t	 facts_memory_mib(void);
int		 facts_python(struct facts_python *);
void		 facts_python_free(struct facts_python *);


#endif
