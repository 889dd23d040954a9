/*
 * Profiles: a Lua chunk that returns a table of settings (or passes one to
 * sandbox{...}), run in a fresh, sandboxed lua_State and checked against
 * profile_schema, the one description of every setting: its type, range or
 * choices, default and help. All problems of a profile are reported at
 * once, one per line, each as "FILE:LINE: ...".
 *
 * The sandbox: base, string, table, math and utf8 only; no dofile,
 * loadfile, collectgarbage, warn or string.dump; load() compiles text only;
 * setmetatable() refuses __gc (finalizers run with hooks off, so a looping
 * one could not be stopped); string.rep and table.move cannot spin in C;
 * print() goes to qsup's log. Host facts come from a "qsup" table
 * (facts.c). A counting allocator caps memory, a hook (and the allocator)
 * stop a profile that runs too long, and a watchdog ends qsup if a library
 * function never returns to Lua (a backtracking string pattern).
 *
 * A profile may build on another of its own directory tree (or a built-in
 * one) with include(NAME) and extend(NAME, {...}); each file keeps its own
 * line numbers in messages, and a cycle is refused. Settings given on the
 * command line (--set NAME=VALUE) go through the same checks, and each
 * setting remembers where it came from, for "qsup profile show".
 *
 * Growing the language: a new setting is a row in profile_schema and, if it
 * needs one, a new PROFILE_T_* type with its case in profile_convert(),
 * profile_accepts() and profile_put(). Everything else (defaults,
 * unknown-key suggestions, help, error lines, show) follows from the table.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "profile.h"

#define PROFILE_BUILTIN		"builtin:default"
#define PROFILE_FILE_MAX	(1024 * 1024)
#define PROFILE_PRINT_MAX	(16 * 1024)	/* print() per load, in bytes */
#define PROFILE_MEMORY_LIMIT	((size_t)64 << 20)
#define PROFILE_TIME_LIMIT	1		/* seconds */
#define PROFILE_ALARM_EVERY	0.05	/* seconds, once past the limit */
#define PROFILE_HOOK_COUNT	1000
#define PROFILE_ALLOC_CHECK	((size_t)4 << 20) /* clock read per bytes */
#define PROFILE_TRACK_KEYS	256	/* keys followed per table */
#define PROFILE_TRACK_LEVELS	16	/* frames searched for tables */
#define PROFILE_SHOW_MAX	40	/* characters of a value shown */
#define PROFILE_MIB		((uint64_t)1 << 20)
#define PROFILE_FILES_MAX	64	/* files, included or --set, per load */
#define PROFILE_SETS_MAX	32	/* --set per load */
#define PROFILE_DEPTH_MAX	16	/* include() within include() */
#define PROFILE_LIST_MAX	1024	/* items of a list setting */
#define PROFILE_TCP_MAX		NET_MAPS_MAX /* network_tcp: the guest's
					   addresses for maps */

/*
 * Where something was written: a file of the load (ctx->files) and a line
 * in it, in one int. Line 0: the file as a whole. Errors sort by it.
 */
#define PROFILE_LOC(f, l)	((int)(((unsigned)(f) << 24) | (unsigned)(l)))
#define PROFILE_LOC_FILE(loc)	((int)((unsigned)(loc) >> 24))
#define PROFILE_LOC_LINE(loc)	((int)((unsigned)(loc) & 0xffffff))

/* Profiles compiled into the binary (builtin.S), NUL-terminated. */
extern const char builtin_profile_default[];
extern const char builtin_profile_ci[];
extern const char builtin_profile_dev[];
extern const char builtin_profile_python[];
extern const char builtin_profile_nested_container[];

static const struct {
	const char	*name;
	const char	*text;
} profile_builtins[] = {
	{ "default", builtin_profile_default },
	{ "ci", builtin_profile_ci },
	{ "dev", builtin_profile_dev },
	{ "python", builtin_profile_python },
	{ "nested-container", builtin_profile_nested_container },
};
#define PROFILE_NBUILTINS (sizeof profile_builtins / sizeof profile_builtins[0])

enum profile_type {
	PROFILE_T_BOOL,
	PROFILE_T_CHOICE,	/* one of choices[] */
	PROFILE_T_SIZE,		/* MiB: a number, or a string, "2G" */
	PROFILE_T_INT,
	PROFILE_T_SECONDS,
	PROFILE_T_PATH,		/* host file, relative to the profile */
	PROFILE_T_GUEST_PATH,	/* an absolute path in the guest */
	PROFILE_T_ENV,		/* {"K=V", ...} or {K = "V", ...} */
	PROFILE_T_IMAGE,	/* a name, an http(s) URL or an image file */
	PROFILE_T_URL,		/* an http(s) URL */
	PROFILE_T_DIR,		/* host directory, need not exist yet */
	PROFILE_T_SHARES,	/* { { host =, guest =, mode =, ignore = } } */
	PROFILE_T_ALLOW,	/* { "*.example.org:443", "10.0.0.0/8" } */
	PROFILE_T_PORTS,	/* { { guest =, host =, address = } } */
	PROFILE_T_TCP,		/* { { host =, port =, name = } } */
	PROFILE_T_RULES,	/* { "ALLOW|TCP|deb.debian.org|443|OUT" } */
	PROFILE_T_ARGS,		/* { "-device", "virtio-rng-device" } */
	PROFILE_T_LIBS		/* { "libbz2.so.1.0", "/usr/lib/x/y.so" } */
};

/*
 * A choice named "true" or "false" matches that boolean, others a string.
 * An alias is accepted and stored as its value, but not offered.
 */
struct profile_choice {
	const char	*name;
	int		 value;
	int		 alias;
};

/*
 * A setting: its field in struct profile (and, for lists, the field
 * holding the count; for PROFILE_T_IMAGE, the kind), range, choices,
 * default as a Lua expression (NULL: nil; it may read qsup.env) and a line
 * of help.
 */
struct profile_setting {
	const char			*name;
	enum profile_type		 type;
	size_t				 offset;
	size_t				 offset_n;
	double				 min;
	double				 max;
	const struct profile_choice	*choices;
	const char			*def;
	const char			*help;
};

/* Choices are stored with memcpy into an int-sized enum. */
_Static_assert(sizeof(enum profile_kvm) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_virtfs) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_sm) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_ld) == sizeof(int), "enum size");
_Static_assert(sizeof(enum net_mode) == sizeof(int), "enum size");
_Static_assert(sizeof(enum profile_image) == sizeof(int), "enum size");

static const struct profile_choice profile_kvm_choices[] = {
	{ "true", PROFILE_KVM_ON, 0 },
	{ "false", PROFILE_KVM_OFF, 0 },
	{ "auto", PROFILE_KVM_AUTO, 0 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_virtfs_choices[] = {
	{ "auto", PROFILE_VIRTFS_AUTO, 0 },
	{ "on", PROFILE_VIRTFS_ON, 0 },
	{ "off", PROFILE_VIRTFS_OFF, 0 },
	{ NULL, 0, 0 }
};

/*
 * QEMU's own names; the seed's "auto" (QEMU has none) is qsup's choice,
 * "none": the mapped models break every host symlink (core/share.c).
 */
static const struct profile_choice profile_sm_choices[] = {
	{ "none", PROFILE_SM_NONE, 0 },
	{ "mapped-xattr", PROFILE_SM_MAPPED_XATTR, 0 },
	{ "mapped-file", PROFILE_SM_MAPPED_FILE, 0 },
	{ "passthrough", PROFILE_SM_PASSTHROUGH, 0 },
	{ "auto", PROFILE_SM_NONE, 1 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_ld_choices[] = {
	{ "full", PROFILE_LD_FULL, 0 },
	{ "sparse", PROFILE_LD_SPARSE, 0 },
	{ "minimal", PROFILE_LD_SPARSE, 1 },
	{ "ldd", PROFILE_LD_SPARSE, 1 },
	{ NULL, 0, 0 }
};

static const struct profile_choice profile_net_choices[] = {
	{ "none", NET_MODE_NONE, 0 },
	{ "restricted", NET_MODE_RESTRICTED, 0 },
	{ "allowlist", NET_MODE_ALLOWLIST, 0 },
	{ "open", NET_MODE_OPEN, 0 },
	{ NULL, 0, 0 }
};

/*
 * Every setting. The defaults here and in profiles/default.lua must agree
 * (a test loads both).
 */
static const struct profile_setting profile_schema[] = {
	{ .name = "use_kvm", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, use_kvm),
	  .choices = profile_kvm_choices, .def = "\"auto\"",
	  .help = "true: KVM or fail; false: never KVM; \"auto\": KVM when "
	  "it is measured to work, emulation otherwise" },
	{ .name = "memory", .type = PROFILE_T_SIZE,
	  .offset = offsetof(struct profile, memory_mib),
	  .min = 16, .max = 1024 * 1024, .def = "512",
	  .help = "guest RAM" },
	{ .name = "cpus", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, cpus),
	  .min = 1, .max = 64, .def = "1",
	  .help = "virtual CPUs" },
	{ .name = "start_timeout", .type = PROFILE_T_SECONDS,
	  .offset = offsetof(struct profile, start_timeout),
	  .min = 0, .max = 3600, .def = "0",
	  .help = "seconds the guest has to answer, boot included; 0: by "
	  "accelerator (short with KVM, long when emulated)" },
	{ .name = "timeout", .type = PROFILE_T_SECONDS,
	  .offset = offsetof(struct profile, timeout),
	  .min = 0, .max = 7 * 86400, .def = "0",
	  .help = "seconds a command may run before it is killed and qsup "
	  "exits 124; 0: no limit; --timeout overrides it" },
	{ .name = "show_boot_console", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, show_boot_console),
	  .def = "false",
	  .help = "copy the guest's console (kernel, boot) to stderr" },
	{ .name = "console_on_failure", .type = PROFILE_T_INT,
	  .offset = offsetof(struct profile, console_on_failure),
	  .min = 0, .max = 100000, .def = "20",
	  .help = "lines of the guest's console shown when the sandbox "
	  "fails (it does not start, QEMU dies); 0: none" },
	{ .name = "warm_start", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, warm_start),
	  .def = "true",
	  .help = "start from a saved VM state (a template) of this guest "
	  "shape instead of booting, when one exists; the first run of a "
	  "shape boots and saves it" },
	{ .name = "kernel", .type = PROFILE_T_PATH,
	  .offset = offsetof(struct profile, kernel),
	  .help = "guest kernel image; nil: the built-in guest's" },
	{ .name = "initramfs", .type = PROFILE_T_PATH,
	  .offset = offsetof(struct profile, initramfs),
	  .help = "guest initramfs; nil: the built-in guest's" },
	{ .name = "image", .type = PROFILE_T_IMAGE,
	  .offset = offsetof(struct profile, image),
	  .offset_n = offsetof(struct profile, image_kind),
	  .def = "qsup.env(\"QSUP_IMAGE\") or "
	  "qsup.env(\"PYSANDBOXES_QEMU_IMAGE_URL\")",
	  .help = "the guest's disk image: a name, an http(s) URL or a file; "
	  "nil: the built-in guest, which needs none" },
	{ .name = "image_base_url", .type = PROFILE_T_URL,
	  .offset = offsetof(struct profile, image_base_url),
	  .def = "qsup.env(\"QSUP_IMAGE_BASE_URL\") or "
	  "qsup.env(\"PYSANDBOXES_QEMU_IMAGE_BASE_URL\")",
	  .help = "where image names are downloaded from; nil: qsup's "
	  "catalog" },
	{ .name = "images_dir", .type = PROFILE_T_DIR,
	  .offset = offsetof(struct profile, images_dir),
	  .def = "qsup.env(\"QSUP_IMAGES_DIR\") or "
	  "qsup.env(\"PYSANDBOXES_VM_IMAGES_DIR\")",
	  .help = "where downloaded images are kept; nil: "
	  "$XDG_DATA_HOME/qsup/images" },
	{ .name = "env", .type = PROFILE_T_ENV,
	  .offset = offsetof(struct profile, env),
	  .offset_n = offsetof(struct profile, nenv), .def = "{}",
	  .help = "environment of every command in the guest" },
	{ .name = "cwd", .type = PROFILE_T_GUEST_PATH,
	  .offset = offsetof(struct profile, cwd), .def = "\"/\"",
	  .help = "working directory of commands in the guest" },
	{ .name = "shares", .type = PROFILE_T_SHARES,
	  .offset = offsetof(struct profile, shares),
	  .offset_n = offsetof(struct profile, nshares), .def = "{}",
	  .help = "host directories the guest sees (virtio-9p): read-only "
	  "unless mode = \"rw\"; at the same path unless guest = ...; names "
	  "matching an ignore glob left out" },
	{ .name = "virtfs", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, virtfs),
	  .choices = profile_virtfs_choices, .def = "\"auto\"",
	  .help = "copy shared trees to a temporary directory before sharing "
	  "them (against overlayfs + mmap crashes in nested containers); "
	  "\"auto\": when qsup runs in a container" },
	{ .name = "virtfs_security_model", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, virtfs_security_model),
	  .choices = profile_sm_choices, .def = "\"none\"",
	  .help = "QEMU's 9p security model for read-write shares (read-only "
	  "ones and copies use \"none\"): \"none\", the host's files as "
	  "they are; \"mapped-xattr\", the guest's owners and modes kept in "
	  "xattrs, but no symlinks; never \"passthrough\" with a read-write "
	  "share" },
	{ .name = "virtfs_cache", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, virtfs_cache),
	  .def = "false",
	  .help = "keep copied trees (hard links) in the cache directory "
	  "between runs and use them again while their source is unchanged "
	  "(checked entry by entry); false: a fresh copy in the run "
	  "directory every run, removed with the sandbox" },
	{ .name = "ld_closure_libs", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, ld_closure_libs),
	  .choices = profile_ld_choices, .def = "\"full\"",
	  .help = "what shares of the host's C-library directories show: "
	  "\"full\" all of them, \"sparse\" only the closure of what can "
	  "run, found as the loader would (smaller; may miss what a program "
	  "dlopens: see ld_closure_extra)" },
	{ .name = "ld_closure_extra", .type = PROFILE_T_LIBS,
	  .offset = offsetof(struct profile, ld_closure_extra),
	  .offset_n = offsetof(struct profile, nld_closure_extra),
	  .def = "{}",
	  .help = "libraries added to the \"sparse\" closure, with what "
	  "they need: sonames searched as the loader does (\"libbz2.so.1.0\", "
	  "for what a program dlopens) or absolute host paths" },
	{ .name = "network", .type = PROFILE_T_CHOICE,
	  .offset = offsetof(struct profile, network),
	  .choices = profile_net_choices, .def = "\"restricted\"",
	  .help = "\"none\": no network card; \"restricted\": the guest "
	  "reaches nothing, ports still forwarded in; \"allowlist\": only "
	  "network_allow; \"open\": everything, the host's 127.0.0.1 "
	  "included (needs network_open_ack = true)" },
	{ .name = "network_allow", .type = PROFILE_T_ALLOW,
	  .offset = offsetof(struct profile, network_allow),
	  .offset_n = offsetof(struct profile, nnetwork_allow), .def = "{}",
	  .help = "what the guest may reach with network = \"allowlist\"" },
	{ .name = "network_open_ack", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, network_open_ack),
	  .def = "false",
	  .help = "true accepts that network = \"open\" lets the guest reach "
	  "services listening on the host's 127.0.0.1 (as 10.0.2.2)" },
	{ .name = "ports", .type = PROFILE_T_PORTS,
	  .offset = offsetof(struct profile, ports),
	  .offset_n = offsetof(struct profile, nports), .def = "{}",
	  .help = "guest ports forwarded from the host" },
	{ .name = "network_tcp", .type = PROFILE_T_TCP,
	  .offset = offsetof(struct profile, network_tcp),
	  .offset_n = offsetof(struct profile, nnetwork_tcp), .def = "{}",
	  .help = "plain TCP destinations on the host's side (a database), "
	  "each mapped to an address and port of the guest's network, found "
	  "in the guest by name when one is given; with network = "
	  "\"restricted\" or \"allowlist\"" },
	{ .name = "network_rules", .type = PROFILE_T_RULES,
	  .offset = offsetof(struct profile, network_rules),
	  .offset_n = offsetof(struct profile, nnetwork_rules), .def = "{}",
	  .help = "the seed's socket rules, compiled into network_allow and "
	  "ports: ALLOW ... OUT allows (with network = \"allowlist\"), DENY "
	  "... OUT refuses whatever else allows, ALLOW ... IN forwards each "
	  "port from a free host port on 127.0.0.1: inbound never binds "
	  "beyond loopback unless HOST names an address" },
	{ .name = "guest_firewall", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, guest_firewall),
	  .def = "false",
	  .help = "the guest loads a firewall of its own too (iptables-restore "
	  "in the guest, or the sandbox does not start): defence in depth "
	  "only, the policy is enforced on the host either way; with "
	  "network = \"restricted\" or \"allowlist\"" },
	{ .name = "extra_args", .type = PROFILE_T_ARGS,
	  .offset = offsetof(struct profile, extra_args),
	  .offset_n = offsetof(struct profile, nextra_args), .def = "{}",
	  .help = "raw QEMU flags added to its command line; flags that "
	  "weaken isolation or that qsup manages are refused" },
};
#define PROFILE_NSETTINGS (sizeof profile_schema / sizeof profile_schema[0])

#define PROFILE_FIELD(p, s, type) \
	((type *)(void *)((char *)(p) + (s)->offset))
typedef char *profile_str;	/* so that a const one is "char *const" */
#define PROFILE_CFIELD(p, s, type) \
	((const type *)(const void *)((const char *)(p) + (s)->offset))

/* Seed and other names a profile may write for a setting. */
static const struct {
	const char	*from;
	const char	*to;
} profile_aliases[] = {
	{ "virtfs_stage", "virtfs" },
	{ "kvm", "use_kvm" },
	{ "mem", "memory" },
	{ "ram", "memory" },
	{ "smp", "cpus" },
	{ "environment", "env" },
	{ "workdir", "cwd" },
	{ "net", "network" },
	{ "allow", "network_allow" },
	{ "forwards", "ports" },
	{ "qemu_args", "extra_args" },
};

enum profile_file_kind {
	PROFILE_FILE_DISK,
	PROFILE_FILE_BUILTIN,
	PROFILE_FILE_CMDLINE	/* one --set */
};

/* A file of the load: the profile, what it includes, each --set. */
struct profile_file {
	enum profile_file_kind	 kind;
	char			*name;		/* as messages show it */
	char			*chunkname;	/* "@path" or "=name" */
	char			 short_src[LUA_IDSIZE];
	char			*dir;		/* base of relative paths */
	char			*key;		/* identity, for cycles */
};

struct profile_error {
	int	 loc;
	char	*text;		/* "FILE:LINE: ..." */
};

enum profile_from {
	PROFILE_FROM_DEFAULT,
	PROFILE_FROM_PROFILE,
	PROFILE_FROM_CMDLINE
};

/* Where a setting came from; p->origins has one per schema row. */
struct profile_origin {
	enum profile_from	 from;
	char			*at;	/* "FILE:LINE" or "--set K=V" */
};

/*
 * Every block a state allocates is on a list, so that a state abandoned
 * in the middle of a library call (see profile_alarm_cb) can be freed
 * without lua_close.
 */
union profile_block {
	struct {
		union profile_block	*prev;
		union profile_block	*next;
	}			 link;
	max_align_t		 align;
};

/* One profile being loaded; reached from Lua as the allocator's ud. */
struct profile_ctx {
	struct profile		*p;
	lua_State		*L;
	const char		*path;		/* for messages, before files */
	char			*root;	/* real directory includes stay in */

	struct profile_file	 files[PROFILE_FILES_MAX];
	int			 nfiles;
	int			 stack[PROFILE_DEPTH_MAX];
	int			 depth;
	int			 last_file;	/* of profile_file_of() */

	char *const		*sets;		/* "NAME=VALUE" */
	size_t			 nsets;

	size_t			 mem_used;
	size_t			 mem_peak;
	size_t			 mem_since;	/* allocated since a clock read */
	int			 mem_failed;
	union profile_block	*blocks;
	double			 deadline;
	unsigned long		 insns;
	int			 timed_out;
	int			 timeout_loc;

	/* The alarm's: see profile_alarm_cb. */
	volatile sig_atomic_t	 in_lib;	/* in a guarded library call */
	volatile sig_atomic_t	 in_alloc;	/* in malloc(3) and friends */
	volatile sig_atomic_t	 expired;	/* jump once out of them */
	int			 abandoned;
	sigjmp_buf		 abandon;

	int			 loc;		/* line running now */
	char			*traceback;	/* of the last error */

	int			 kvm_done;
	int			 python_done;
	size_t			 printed;	/* by print(), of PROFILE_PRINT_MAX */

	/* Per setting: where it was set and by what. */
	int			 set_loc[PROFILE_NSETTINGS];
	enum profile_from	 set_from[PROFILE_NSETTINGS];

	struct profile_error	*errs;
	size_t			 nerrs;
};

/* Registry keys: their addresses are what matters. */
static const char	profile_key_track = 'T';
static const char	profile_key_sandbox = 'S';
static const char	profile_key_defenv = 'D';

static const struct profile_setting *profile_setting_find(const char *);
static const char	*profile_suggest(const char *);
static void		 profile_show(struct buf *, lua_State *, int);

static struct profile_ctx *
profile_ctx(lua_State *L)
{
	void	*ud;

	lua_getallocf(L, &ud);
	return (ud);
}

static void	profile_hook_cb(lua_State *, lua_Debug *);

/*
 * Out of time, found anywhere: from now on every instruction raises the
 * time-limit error, pcall or not.
 */
static void
profile_set_timed_out(struct profile_ctx *ctx)
{
	if (ctx->timed_out)
		return;
	ctx->timed_out = 1;
	ctx->timeout_loc = ctx->loc;
	lua_sethook(ctx->L, profile_hook_cb, LUA_MASKCOUNT, 1);
}

static void
profile_block_link(struct profile_ctx *ctx, union profile_block *bl)
{
	bl->link.prev = NULL;
	bl->link.next = ctx->blocks;
	if (ctx->blocks != NULL)
		ctx->blocks->link.prev = bl;
	ctx->blocks = bl;
}

static void
profile_block_unlink(struct profile_ctx *ctx, union profile_block *bl)
{
	if (bl->link.prev != NULL)
		bl->link.prev->link.next = bl->link.next;
	else
		ctx->blocks = bl->link.next;
	if (bl->link.next != NULL)
		bl->link.next->link.prev = bl->link.prev;
}

/* What an abandoned state (or a closed one) still holds. */
static void
profile_blocks_free(struct profile_ctx *ctx)
{
	union profile_block	*bl;

	while ((bl = ctx->blocks) != NULL) {
		ctx->blocks = bl->link.next;
		free(bl);
	}
}

/* Into malloc(3), where the alarm must not jump from. */
static void
profile_alloc_enter(struct profile_ctx *ctx)
{
	ctx->in_alloc = 1;
	atomic_signal_fence(memory_order_seq_cst);
}

/* Out of it: the jump the alarm held back, if it did. */
static void
profile_alloc_leave(struct profile_ctx *ctx)
{
	atomic_signal_fence(memory_order_seq_cst);
	ctx->in_alloc = 0;
	if (ctx->expired && ctx->in_lib)
		siglongjmp(ctx->abandon, 1);
}

/*
 * The allocator: counts every byte, refuses to grow past the limit. It
 * reads the clock too, every few MiB: one instruction that copies big
 * strings can take long, and the hook only looks every so many of them.
 */
static void *
profile_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct profile_ctx	*ctx = ud;
	union profile_block	*bl = NULL, *nb;

	if (ptr == NULL)
		osize = 0;	/* then it is a type tag, not a size */
	else
		bl = (union profile_block *)ptr - 1;
	if (nsize == 0) {
		if (bl != NULL) {
			profile_alloc_enter(ctx);
			profile_block_unlink(ctx, bl);
			free(bl);
			ctx->mem_used -= osize;
			profile_alloc_leave(ctx);
		}
		return (NULL);
	}
	if (nsize > osize &&
	    ctx->mem_used + (nsize - osize) > PROFILE_MEMORY_LIMIT) {
		ctx->mem_failed = 1;
		return (NULL);
	}
	if (nsize > osize && ctx->deadline > 0 &&
	    (ctx->mem_since += nsize - osize) > PROFILE_ALLOC_CHECK) {
		ctx->mem_since = 0;
		if (ctx->timed_out || util_now() > ctx->deadline) {
			profile_set_timed_out(ctx);
			return (NULL);
		}
	}
	profile_alloc_enter(ctx);
	if (bl != NULL)
		profile_block_unlink(ctx, bl);
	if ((nb = realloc(bl, sizeof *nb + nsize)) == NULL) {
		if (bl != NULL)
			profile_block_link(ctx, bl);
		profile_alloc_leave(ctx);
		return (NULL);
	}
	profile_block_link(ctx, nb);
	ctx->mem_used = ctx->mem_used - osize + nsize;
	if (ctx->mem_used > ctx->mem_peak)
		ctx->mem_peak = ctx->mem_used;
	profile_alloc_leave(ctx);
	return (nb + 1);
}

/* "FILE:LINE", "FILE" or "--set K=V" for a location. */
static char *
profile_loc_text(struct profile_ctx *ctx, int loc)
{
	const struct profile_file	*f;
	int				 fi = PROFILE_LOC_FILE(loc);
	int				 line = PROFILE_LOC_LINE(loc);
	char				*s;

	if (fi >= ctx->nfiles)
		return (xstrdup(ctx->path));
	f = &ctx->files[fi];
	if (line == 0 || f->kind == PROFILE_FILE_CMDLINE)
		return (xstrdup(f->name));
	xasprintf(&s, "%s:%d", f->name, line);
	return (s);
}

/*
 * Record an error (text is taken). One error is one line, whatever a
 * profile's strings or a --set hold: control characters are escaped.
 */
static void
profile_add_error(struct profile_ctx *ctx, int loc, char *text)
{
	struct profile_error	*e;
	struct buf		 b = { 0 };
	const unsigned char	*u;

	for (u = (const unsigned char *)text; *u != '\0'; u++) {
		if (*u < 0x20 || *u == 0x7f)
			break;
	}
	if (*u != '\0') {
		for (u = (const unsigned char *)text; *u != '\0'; u++) {
			if (*u == '\n')
				buf_printf(&b, "\\n");
			else if (*u == '\t')
				buf_printf(&b, "\\t");
			else if (*u < 0x20 || *u == 0x7f)
				buf_printf(&b, "\\%03o", *u);
			else
				buf_add(&b, u, 1);
		}
		free(text);
		text = b.data;
	}
	ctx->errs = xreallocarray(ctx->errs, ctx->nerrs + 1, sizeof *ctx->errs);
	e = &ctx->errs[ctx->nerrs++];
	e->loc = loc;
	e->text = text;
}

static void
profile_verror(struct profile_ctx *ctx, int loc, const char *fmt, va_list ap)
{
	char	*msg, *where, *text;

	xvasprintf(&msg, fmt, ap);
	where = profile_loc_text(ctx, loc);
	xasprintf(&text, "%s: %s", where, msg);
	profile_add_error(ctx, loc, text);
	free(where);
	free(msg);
}

/* Note a problem at FILE:LINE (line 0: the file as a whole). */
static void
profile_error(struct profile_ctx *ctx, int loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void
profile_error(struct profile_ctx *ctx, int loc, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	profile_verror(ctx, loc, fmt, ap);
	va_end(ap);
}

/* strcmp, but runs of digits compare as numbers: "[2]" before "[10]". */
static int
profile_natcmp(const char *a, const char *b)
{
	const char	*ea, *eb;
	size_t		 la, lb;
	int		 c;

	while (*a != '\0' && *b != '\0') {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			for (ea = a; isdigit((unsigned char)*ea); ea++)
				;
			for (eb = b; isdigit((unsigned char)*eb); eb++)
				;
			la = ea - a;
			lb = eb - b;
			if (la != lb)
				return (la < lb ? -1 : 1);
			if ((c = strncmp(a, b, la)) != 0)
				return (c);
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return ((unsigned char)*a < (unsigned char)*b ? -1 : 1);
		a++;
		b++;
	}
	return (*a == *b ? 0 : *a == '\0' ? -1 : 1);
}

/* By place, then by text: the same for the same profile, run after run. */
static int
profile_error_cmp(const void *a, const void *b)
{
	const struct profile_error	*ea = a, *eb = b;

	if (ea->loc != eb->loc)
		return (ea->loc < eb->loc ? -1 : 1);
	return (profile_natcmp(ea->text, eb->text));
}

/* -------------------------------------------------------------------------
 * The files of a load.
 */

/* Directory part of a path, as a base for relative ones; NULL: ".". */
static char *
profile_dirname(const char *path)
{
	char	*dir, *slash;

	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) == NULL) {
		free(dir);
		return (NULL);
	}
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	return (dir);
}

/* Register a file; returns its index, or -1 if there are too many. */
static int
profile_file_add(struct profile_ctx *ctx, enum profile_file_kind kind,
    const char *name, const char *key)
{
	struct profile_file	*f;

	if (ctx->nfiles == PROFILE_FILES_MAX)
		return (-1);
	f = &ctx->files[ctx->nfiles];
	memset(f, 0, sizeof *f);
	f->kind = kind;
	f->name = xstrdup(name);
	f->key = xstrdup(key);
	if (kind == PROFILE_FILE_DISK) {
		xasprintf(&f->chunkname, "@%s", name);
		f->dir = profile_dirname(name);
	} else
		xasprintf(&f->chunkname, "=%s", name);
	return (ctx->nfiles++);
}

/* How Lua will shorten this file's name in its messages. */
static int
profile_file_short_src(lua_State *L, struct profile_file *f)
{
	lua_Debug	ar;

	if (luaL_loadbufferx(L, "", 0, f->chunkname, "t") != LUA_OK)
		return (-1);
	lua_getinfo(L, ">S", &ar);
	snprintf(f->short_src, sizeof f->short_src, "%s", ar.short_src);
	return (0);
}

/* The file a running function comes from, or -1 if not one of ours. */
static int
profile_file_of(struct profile_ctx *ctx, const char *source)
{
	int	i;

	if (source == NULL)
		return (-1);
	if (ctx->last_file < ctx->nfiles &&
	    strcmp(ctx->files[ctx->last_file].chunkname, source) == 0)
		return (ctx->last_file);
	for (i = 0; i < ctx->nfiles; i++) {
		if (strcmp(ctx->files[i].chunkname, source) == 0) {
			ctx->last_file = i;
			return (i);
		}
	}
	return (-1);
}

static void
profile_files_free(struct profile_ctx *ctx)
{
	int	i;

	for (i = 0; i < ctx->nfiles; i++) {
		free(ctx->files[i].name);
		free(ctx->files[i].chunkname);
		free(ctx->files[i].dir);
		free(ctx->files[i].key);
	}
	ctx->nfiles = 0;
}

/* -------------------------------------------------------------------------
 * Where each setting was written.
 *
 * Messages must name the line of the offending setting, but Lua records
 * lines for instructions, not for table fields. Scanning the source for
 * "name =" is fooled by comments, strings, nested tables, conditionals and
 * settings assigned more than once; so instead the chunk runs under a line
 * and return hook that watches its tables being filled in:
 *
 * - In Lua every instruction between two line events belongs to one line,
 *   and a line event comes whenever a new line starts (or a loop jumps
 *   back). So at each event, a string key that has appeared in a table, or
 *   whose value has changed, since the previous event was set on the line
 *   that was running: ctx->loc (a file of the load and a line in it).
 * - The tables looked at are those in the registers of the profile's
 *   active Lua functions (of any of its files), temporaries included
 *   (lua_getlocal names them "(temporary)"): a table constructor fills a
 *   register, a local or an argument is in one. A return event does the
 *   same for the returning function, then moves ctx->loc back to the
 *   caller's line.
 * - What was seen is kept beside each table, in a weak-keyed registry
 *   table: per table, its first line and, per key, the value and line.
 *
 * This follows what the profile did, not how it is spelt: a key set in a
 * branch or a helper function gets the line that actually set it. List
 * items are stored when their constructor closes, so they get the table's
 * own line. A key the hook never saw (a table that lived only in upvalues)
 * falls back to its table's first line, then to the last line run. The
 * watching is bounded (PROFILE_TRACK_KEYS keys per table, PROFILE_TRACK_LEVELS
 * frames) and is paid for by the same time limit as the profile.
 */

/* Push the shadow of the table at idx, creating it if create is set. */
static int
profile_shadow(lua_State *L, int idx, int loc, int create)
{
	idx = lua_absindex(L, idx);
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_track);
	lua_pushvalue(L, idx);
	if (lua_rawget(L, -2) == LUA_TTABLE) {
		lua_remove(L, -2);
		return (1);
	}
	lua_pop(L, 2);
	if (!create)
		return (0);
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_track);
	lua_createtable(L, 3, 0);
	lua_newtable(L);		/* [1]: key -> loc */
	lua_rawseti(L, -2, 1);
	lua_newtable(L);		/* [2]: key -> value */
	lua_rawseti(L, -2, 2);
	lua_pushinteger(L, loc);	/* [3]: first seen */
	lua_rawseti(L, -2, 3);
	lua_pushvalue(L, idx);
	lua_pushvalue(L, -2);
	lua_rawset(L, -4);
	lua_remove(L, -2);
	return (1);
}

/* Record that key (a string) of the table at t got value (top) at loc. */
static void
profile_shadow_set(lua_State *L, int t, const char *key, int loc)
{
	int	v = lua_gettop(L);

	t = lua_absindex(L, t);
	profile_shadow(L, t, loc, 1);
	lua_rawgeti(L, -1, 1);
	lua_pushinteger(L, loc);
	lua_setfield(L, -2, key);
	lua_pop(L, 1);
	lua_rawgeti(L, -1, 2);
	lua_pushvalue(L, v);
	lua_setfield(L, -2, key);
	lua_settop(L, v);
}

/* Raw equality, except that NaN is the same as NaN. */
static int
profile_same(lua_State *L, int a, int b)
{
	if (lua_rawequal(L, a, b))
		return (1);
	return (lua_type(L, a) == LUA_TNUMBER && !lua_isinteger(L, a) &&
	    lua_type(L, b) == LUA_TNUMBER && !lua_isinteger(L, b) &&
	    isnan(lua_tonumber(L, a)) && isnan(lua_tonumber(L, b)));
}

/* Note the string keys of the table at idx that are new or changed. */
static void
profile_track_table(lua_State *L, int idx, int loc)
{
	int	top = lua_gettop(L), locs, values, n = 0;

	idx = lua_absindex(L, idx);
	if (loc <= 0 || !lua_checkstack(L, 10))
		return;
	profile_shadow(L, idx, loc, 1);
	lua_rawgeti(L, -1, 1);
	locs = lua_gettop(L);
	lua_rawgeti(L, -2, 2);
	values = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		if (lua_type(L, -2) == LUA_TSTRING) {
			lua_pushvalue(L, -2);
			lua_rawget(L, values);
			if (!profile_same(L, -1, -2)) {
				lua_pushvalue(L, -3);
				lua_pushvalue(L, -3);
				lua_rawset(L, values);
				lua_pushvalue(L, -3);
				lua_pushinteger(L, loc);
				lua_rawset(L, locs);
			}
			lua_pop(L, 1);
		}
		lua_pop(L, 1);
		if (++n == PROFILE_TRACK_KEYS)
			break;
	}
	lua_settop(L, top);
}

/* Note changes in every table held by the profile's active functions. */
static void
profile_track_stack(lua_State *L, struct profile_ctx *ctx, int top0)
{
	lua_Debug	d;
	int		level, n;

	if (ctx->loc <= 0)
		return;
	for (level = 0; level < PROFILE_TRACK_LEVELS; level++) {
		if (!lua_getstack(L, level, &d))
			break;
		if (!lua_getinfo(L, "S", &d) ||
		    profile_file_of(ctx, d.source) < 0)
			continue;
		/*
		 * In a hook, level 0's registers run up to the stack top at
		 * the hook's entry; above are the hook's own values.
		 */
		for (n = 1; level != 0 || n <= top0; n++) {
			if (lua_getlocal(L, &d, n) == NULL)
				break;
			if (lua_type(L, -1) == LUA_TTABLE)
				profile_track_table(L, -1, ctx->loc);
			lua_pop(L, 1);
		}
	}
}

/* Where key of the table at idx was set; 0 if unknown. */
static int
profile_key_loc(lua_State *L, int idx, const char *key)
{
	int	loc = 0;

	if (!profile_shadow(L, idx, 0, 0))
		return (0);
	lua_rawgeti(L, -1, 1);
	if (lua_getfield(L, -1, key) == LUA_TNUMBER)
		loc = (int)lua_tointeger(L, -1);
	lua_pop(L, 3);
	return (loc);
}

/*
 * Where an item table ({ host = ..., mode = ... } in a list) was written:
 * its first field's line. Lua gives a constructor the line of the token
 * before its '{', so the table's own first line may be the one above.
 */
static int
profile_item_loc(lua_State *L, int idx, int fallback)
{
	int	loc = 0, l;

	if (!profile_shadow(L, idx, 0, 0))
		return (fallback);
	lua_rawgeti(L, -1, 1);
	lua_pushnil(L);
	while (lua_next(L, -2) != 0) {
		l = (int)lua_tointeger(L, -1);
		if (l > 0 && (loc == 0 || l < loc))
			loc = l;
		lua_pop(L, 1);
	}
	lua_pop(L, 2);
	if (loc == 0 || PROFILE_LOC_FILE(loc) != PROFILE_LOC_FILE(fallback))
		return (fallback);
	return (loc);
}

/* Where the table at idx was first seen; 0 if unknown. */
static int
profile_table_loc(lua_State *L, int idx)
{
	int	loc = 0;

	if (!profile_shadow(L, idx, 0, 0))
		return (0);
	if (lua_rawgeti(L, -1, 3) == LUA_TNUMBER)
		loc = (int)lua_tointeger(L, -1);
	lua_pop(L, 2);
	return (loc);
}

/* -------------------------------------------------------------------------
 * Limits.
 */

static __attribute__((noreturn)) void
profile_timeout(lua_State *L, struct profile_ctx *ctx)
{
	profile_set_timed_out(ctx);
	lua_pushfstring(L, "profile ran for more than %d s",
	    PROFILE_TIME_LIMIT);
	lua_error(L);
	abort();	/* not reached */
}

/* Time limit, and following the profile's lines (see above). */
static void
profile_hook_cb(lua_State *L, lua_Debug *ar)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	lua_Debug		 caller;
	int			 top = lua_gettop(L), f, loc;

	/* The clock is read every PROFILE_HOOK_COUNT instructions. */
	if (ar->event == LUA_HOOKCOUNT) {
		ctx->insns += PROFILE_HOOK_COUNT;
		if (ctx->timed_out || util_now() > ctx->deadline)
			profile_timeout(L, ctx);
		return;
	}
	if (!lua_getinfo(L, "S", ar))
		return;
	f = profile_file_of(ctx, ar->source);
	if (ar->event == LUA_HOOKLINE) {
		if (f < 0)
			return;
		loc = PROFILE_LOC(f, ar->currentline);
		if (loc == ctx->loc)
			return;		/* a loop on one line */
		profile_track_stack(L, ctx, top);
		ctx->loc = loc;
		return;
	}
	if (f >= 0)
		profile_track_stack(L, ctx, top);
	if (lua_getstack(L, 1, &caller) && lua_getinfo(L, "Sl", &caller) &&
	    caller.currentline > 0 &&
	    (f = profile_file_of(ctx, caller.source)) >= 0)
		ctx->loc = PROFILE_LOC(f, caller.currentline);
}

/* Message handler: keep the traceback for the log, return the message. */
static int
profile_msgh_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	const char		*msg;

	ctx->in_lib = 0;	/* an error out of a guarded call: it is over */
	if ((msg = lua_tostring(L, 1)) != NULL) {
		luaL_traceback(L, L, msg, 1);
		free(ctx->traceback);
		ctx->traceback = xstrdup(lua_tostring(L, -1));
		lua_pop(L, 1);
	}
	return (1);
}

/*
 * A message from Lua, "SHORT_SRC:LINE: text", with the file's whole name
 * put back (Lua shortens long ones). Returns 0 if it names no file of ours.
 */
static int
profile_lua_message(struct profile_ctx *ctx, const char *msg)
{
	struct profile_file	*f;
	const char		*p;
	char			*text, *end;
	size_t			 n;
	long			 line;
	int			 i;

	for (i = 0; i < ctx->nfiles; i++) {
		f = &ctx->files[i];
		n = strlen(f->short_src);
		if (n == 0 || strncmp(msg, f->short_src, n) != 0 ||
		    msg[n] != ':')
			continue;
		p = msg + n + 1;
		line = 0;
		if (isdigit((unsigned char)*p)) {
			line = strtol(p, &end, 10);
			if (*end != ':' || line < 0 || line > 0xffffff)
				continue;
			p = end + 1;
		}
		while (*p == ' ')
			p++;
		if (f->kind == PROFILE_FILE_CMDLINE || line == 0)
			xasprintf(&text, "%s: %s", f->name, p);
		else
			xasprintf(&text, "%s:%ld: %s", f->name, line, p);
		profile_add_error(ctx, PROFILE_LOC(i, line), text);
		return (1);
	}
	return (0);
}

/* Turn a failed lua_pcall's status and error object into a message. */
static void
profile_lua_error(struct profile_ctx *ctx, lua_State *L, int status)
{
	const char	*msg;

	if (ctx->traceback != NULL)
		log_debug("%s", ctx->traceback);
	msg = lua_tostring(L, -1);
	if (ctx->timed_out) {
		profile_error(ctx, ctx->timeout_loc, "profile ran for more "
		    "than %d s; is there an endless loop?", PROFILE_TIME_LIMIT);
		return;
	}
	if (status == LUA_ERRMEM || (status == LUA_ERRERR && ctx->mem_failed) ||
	    (ctx->mem_failed && msg != NULL &&
	    strstr(msg, "not enough memory") != NULL)) {
		profile_error(ctx, ctx->loc, "profile needs more than %zu MiB "
		    "of memory", PROFILE_MEMORY_LIMIT >> 20);
		return;
	}
	if (msg == NULL) {
		profile_error(ctx, ctx->loc, "profile raised an error that is "
		    "%s, not a message", luaL_typename(L, -1));
		return;
	}
	if (!profile_lua_message(ctx, msg))
		profile_error(ctx, ctx->loc, "%s", msg);
}

/* -------------------------------------------------------------------------
 * Library calls that run long in C. string.find with a pattern that
 * backtracks over a long string never returns to Lua, where the hook
 * would stop it; so the pattern functions are guarded: while one runs,
 * ctx->in_lib is set, and SIGALRM, past the time limit, jumps out of it
 * to profile_pcall, which abandons the state. Such a call runs only
 * Lua's own code and the allocator (gsub's replacement functions and
 * tables are called with in_lib clear), so nothing else is left half
 * done; the allocator holds the jump back while in malloc(3), and every
 * block of the state is freed from ctx->blocks, without lua_close. The
 * process lives on, and the error is the profile's like any other.
 */

static struct profile_ctx *volatile	profile_watched;
static struct sigaction			profile_watch_old_sa;
static struct itimerval			profile_watch_old_it;

/* The pattern functions, as the string library has them. */
static lua_CFunction	profile_lib_find;
static lua_CFunction	profile_lib_match;
static lua_CFunction	profile_lib_gmatch;
static lua_CFunction	profile_lib_gmatch_aux;
static lua_CFunction	profile_lib_gsub;
static lua_CFunction	profile_lib_pcall;

/* Past the limit, out of a guarded call, or once it leaves malloc(3). */
static void
profile_alarm_cb(int sig)
{
	struct profile_ctx	*ctx = profile_watched;
	int			 saved_errno = errno;

	(void)sig;
	if (ctx != NULL && ctx->in_lib && util_now() > ctx->deadline) {
		if (!ctx->in_alloc)
			siglongjmp(ctx->abandon, 1);
		ctx->expired = 1;
	}
	errno = saved_errno;
}

/* Arm the alarm for what is left of the time limit, then again and again. */
static void
profile_watch(struct profile_ctx *ctx)
{
	struct sigaction	sa;
	struct itimerval	it;
	double			left = ctx->deadline - util_now();

	if (left < 0.01)
		left = 0.01;
	memset(&it, 0, sizeof it);
	it.it_value.tv_sec = (time_t)left;
	it.it_value.tv_usec = (suseconds_t)((left - (double)(time_t)left) *
	    1e6);
	it.it_interval.tv_usec = (suseconds_t)(PROFILE_ALARM_EVERY * 1e6);
	if (profile_watched == NULL) {
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = profile_alarm_cb;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGALRM, &sa, &profile_watch_old_sa);
		profile_watched = ctx;
		setitimer(ITIMER_REAL, &it, &profile_watch_old_it);
	} else
		setitimer(ITIMER_REAL, &it, NULL);
}

static void
profile_unwatch(void)
{
	if (profile_watched == NULL)
		return;
	setitimer(ITIMER_REAL, &profile_watch_old_it, NULL);
	sigaction(SIGALRM, &profile_watch_old_sa, NULL);
	profile_watched = NULL;
}

/* While facts are measured: their time is not the profile's. */
static void
profile_watch_pause(void)
{
	struct itimerval	it;

	if (profile_watched == NULL)
		return;
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
}

/* -------------------------------------------------------------------------
 * The environment a profile runs in.
 */

/*
 * print(): to qsup's log, with the line, never to stdout. A budget of
 * PROFILE_PRINT_MAX bytes per load, then one line saying the rest was
 * cut: a loop of print() must not flood the terminal within its second.
 */
static int
profile_print_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	luaL_Buffer		 b;
	const char		*text;
	char			*where;
	size_t			 len, left;
	int			 i, n = lua_gettop(L);

	if (ctx->printed > PROFILE_PRINT_MAX)
		return (0);

	luaL_buffinit(L, &b);
	for (i = 1; i <= n; i++) {
		if (i > 1)
			luaL_addchar(&b, '\t');
		luaL_tolstring(L, i, NULL);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	text = lua_tolstring(L, -1, &len);
	where = profile_loc_text(ctx, ctx->loc);
	left = PROFILE_PRINT_MAX - ctx->printed;
	/* Each line counts whole: print("") in a loop floods as well. */
	if (len + strlen(where) + 3 <= left) {
		log_info("%s: %s", where, text);
		ctx->printed += len + strlen(where) + 3;
	} else {
		log_info("%s: %.*s", where, (int)left, text);
		log_info("%s: print(): output cut after %d bytes", where,
		    PROFILE_PRINT_MAX);
		ctx->printed = PROFILE_PRINT_MAX + 1;
	}
	free(where);
	return (0);
}

/* load(): text only, whatever mode is asked for. */
static int
profile_load_cb(lua_State *L)
{
	int	n = lua_gettop(L);

	if (n < 3)
		n = 3;
	if (n > 4)
		n = 4;
	lua_settop(L, n);	/* keeps "no env" apart from "env = nil" */
	lua_pushliteral(L, "t");
	lua_replace(L, 3);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, n, LUA_MULTRET);
	return (lua_gettop(L));
}

/*
 * xpcall(f, msgh, ...): the handler runs once the error has unwound. Lua
 * would run it where the error was raised, and when that is the time-limit
 * hook, hooks are off: a looping handler could never be stopped.
 */
static int
profile_xpcall_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	int			 n = lua_gettop(L), status;

	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_pushvalue(L, 1);		/* f, msgh, args..., f */
	lua_remove(L, 1);		/* msgh, args..., f */
	lua_insert(L, 2);		/* msgh, f, args... */
	status = lua_pcall(L, n - 2, LUA_MULTRET, 0);
	ctx->in_lib = 0;
	if (status == LUA_OK) {
		lua_pushboolean(L, 1);
		lua_replace(L, 1);
		return (lua_gettop(L));
	}
	if (status != LUA_ERRMEM) {	/* as Lua: no handler for those */
		lua_pushvalue(L, 1);
		lua_insert(L, -2);
		lua_pcall(L, 1, 1, 0);
		ctx->in_lib = 0;
	}
	lua_pushboolean(L, 0);
	lua_insert(L, -2);
	return (2);
}

/* setmetatable(): no finalizers, since they run with hooks off. */
static int
profile_setmetatable_cb(lua_State *L)
{
	if (lua_type(L, 2) == LUA_TTABLE) {
		lua_pushliteral(L, "__gc");
		if (lua_rawget(L, 2) != LUA_TNIL)
			return (luaL_error(L, "__gc metamethods are not "
			    "allowed in profiles"));
		lua_pop(L, 1);
	}
	lua_settop(L, 2);
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, 2, 1);
	return (1);
}

/* Run a library function with the alarm allowed to abandon the state. */
static int
profile_guard(lua_State *L, lua_CFunction fn)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	int			 n;

	ctx->in_lib = 1;
	n = fn(L);
	ctx->in_lib = 0;
	return (n);
}

static int
profile_find_cb(lua_State *L)
{
	return (profile_guard(L, profile_lib_find));
}

static int
profile_match_cb(lua_State *L)
{
	return (profile_guard(L, profile_lib_match));
}

/* gmatch's iterator, with the upvalues of the library's own. */
static int
profile_gmatch_aux_cb(lua_State *L)
{
	return (profile_guard(L, profile_lib_gmatch_aux));
}

/* gmatch(): its iterator, guarded as it matches. */
static int
profile_gmatch_cb(lua_State *L)
{
	int	it, n;

	(void)profile_lib_gmatch(L);
	it = lua_gettop(L);
	profile_lib_gmatch_aux = lua_tocfunction(L, it);
	for (n = 0; lua_getupvalue(L, it, n + 1) != NULL; n++)
		;
	lua_pushcclosure(L, profile_gmatch_aux_cb, n);
	return (1);
}

/* A replacement function or table of gsub: Lua runs, out of the guard. */
static int
profile_gsub_repl_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);

	ctx->in_lib = 0;
	lua_pushvalue(L, lua_upvalueindex(1));
	if (lua_type(L, -1) == LUA_TTABLE) {
		lua_pushvalue(L, 1);
		lua_gettable(L, -2);
	} else {
		lua_insert(L, 1);
		lua_call(L, lua_gettop(L) - 1, 1);
	}
	ctx->in_lib = 1;
	return (1);
}

/*
 * gsub(s, pattern, repl): a table repl is looked up with the whole match
 * or first capture, which is what a function repl gets first.
 */
static int
profile_gsub_cb(lua_State *L)
{
	if (lua_type(L, 3) == LUA_TFUNCTION || lua_type(L, 3) == LUA_TTABLE) {
		lua_pushvalue(L, 3);
		lua_pushcclosure(L, profile_gsub_repl_cb, 1);
		lua_replace(L, 3);
	}
	return (profile_guard(L, profile_lib_gsub));
}

/* pcall(): an error out of a guarded call ends the guard. */
static int
profile_pcall_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	int			 n;

	n = profile_lib_pcall(L);
	ctx->in_lib = 0;
	return (n);
}

/* Put the guarded versions of the pattern functions and pcall in place. */
static void
profile_guard_libs(lua_State *L)
{
	static const struct {
		const char	 *name;
		lua_CFunction	 *lib;
		lua_CFunction	  fn;
	} guarded[] = {
		{ "find", &profile_lib_find, profile_find_cb },
		{ "match", &profile_lib_match, profile_match_cb },
		{ "gmatch", &profile_lib_gmatch, profile_gmatch_cb },
		{ "gsub", &profile_lib_gsub, profile_gsub_cb },
	};
	size_t	i;

	lua_getglobal(L, LUA_STRLIBNAME);
	for (i = 0; i < sizeof guarded / sizeof guarded[0]; i++) {
		lua_getfield(L, -1, guarded[i].name);
		*guarded[i].lib = lua_tocfunction(L, -1);
		lua_pop(L, 1);
		lua_pushcfunction(L, guarded[i].fn);
		lua_setfield(L, -2, guarded[i].name);
	}
	lua_pop(L, 1);
	lua_getglobal(L, "pcall");
	profile_lib_pcall = lua_tocfunction(L, -1);
	lua_pop(L, 1);
	lua_pushcfunction(L, profile_pcall_cb);
	lua_setglobal(L, "pcall");
}

/*
 * string.rep(s, n, sep): "" at once when there is nothing to repeat. Lua
 * would loop n times copying nothing, where no hook can stop it.
 */
static int
profile_rep_cb(lua_State *L)
{
	size_t		l, lsep;
	lua_Integer	n;

	(void)luaL_checklstring(L, 1, &l);
	n = luaL_checkinteger(L, 2);
	(void)luaL_optlstring(L, 3, "", &lsep);
	if (n <= 0 || l + lsep == 0) {
		lua_pushliteral(L, "");
		return (1);
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return (1);
}

/* table.move(a1, f, e, t, a2): not billions of elements, in C. */
static int
profile_move_cb(lua_State *L)
{
	lua_Integer	f = luaL_checkinteger(L, 2);
	lua_Integer	e = luaL_checkinteger(L, 3);

	if (e >= f && (lua_Unsigned)e - (lua_Unsigned)f >= (1U << 24))
		return (luaL_error(L, "table.move: more than %d elements",
		    1 << 24));
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_insert(L, 1);
	lua_call(L, lua_gettop(L) - 1, 1);
	return (1);
}

/* sandbox{...}: the other way to give the settings. */
static int
profile_sandbox_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);

	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1);
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox) != LUA_TNIL)
		return (luaL_error(L, "sandbox{} is called twice"));
	lua_pop(L, 1);
	profile_track_table(L, 1, ctx->loc);
	lua_pushvalue(L, 1);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox);
	return (1);
}

/* Raise "WHERE: msg" at the Lua function calling us, freeing msg. */
static __attribute__((noreturn)) void
profile_raise(lua_State *L, char *msg)
{
	luaL_where(L, 1);
	lua_pushstring(L, msg);
	free(msg);
	lua_concat(L, 2);
	lua_error(L);
	abort();	/* not reached */
}

/* The profile file that called the running C function. */
static int
profile_caller_file(lua_State *L, struct profile_ctx *ctx)
{
	lua_Debug	ar;
	int		level, f;

	for (level = 1; level < PROFILE_TRACK_LEVELS; level++) {
		if (!lua_getstack(L, level, &ar))
			break;
		if (lua_getinfo(L, "S", &ar) &&
		    (f = profile_file_of(ctx, ar.source)) >= 0)
			return (f);
	}
	return (ctx->depth > 0 ? ctx->stack[ctx->depth - 1] : 0);
}

static const char *
profile_builtin(const char *name)
{
	size_t	i, len = strlen(name);

	if (len > 4 && strcmp(name + len - 4, ".lua") == 0)
		len -= 4;
	for (i = 0; i < PROFILE_NBUILTINS; i++) {
		if (strlen(profile_builtins[i].name) == len &&
		    strncmp(profile_builtins[i].name, name, len) == 0)
			return (profile_builtins[i].text);
	}
	return (NULL);
}

static void
profile_builtin_names(struct buf *b)
{
	size_t	i;

	for (i = 0; i < PROFILE_NBUILTINS; i++)
		buf_printf(b, "%s%s", i == 0 ? "" : ", ",
		    profile_builtins[i].name);
}

/* A profile file's text, or NULL and *cause ("PATH: why"). */
static char *
profile_read_file(const char *path, size_t *lenp, char **cause)
{
	char	*text;

	if ((text = util_read_file(path, lenp, PROFILE_FILE_MAX)) != NULL)
		return (text);
	if (errno == EFBIG)
		xasprintf(cause, "%s: larger than %d KiB", path,
		    PROFILE_FILE_MAX / 1024);
	else if (errno == EINVAL)
		xasprintf(cause, "%s: not a regular file", path);
	else
		xasprintf(cause, "%s: %s", path, strerror(errno));
	return (NULL);
}

/*
 * Find what include(name) in file `from` means and read it: a file of the
 * same tree, or a built-in profile. Returns its index and text (to free),
 * or -1 and *cause.
 */
static int
profile_include_open(struct profile_ctx *ctx, int from, const char *name,
    char **text, size_t *len, char **cause)
{
	struct profile_file	*ff = &ctx->files[from];
	struct buf		 b = { 0 };
	char			*why;
	const char		*builtin, *asked = name;
	char			*path = NULL, *real = NULL, *key = NULL;
	char			*shown = NULL;
	size_t			 n = strlen(name), rootlen;
	int			 i, d, fi = -1;

	*text = NULL;
	*cause = NULL;
	if (n == 0 || n >= PATH_MAX) {
		xasprintf(cause, "include(): give the name of a profile");
		return (-1);
	}
	if (strncmp(name, "builtin:", 8) == 0 ||
	    ff->kind == PROFILE_FILE_BUILTIN) {
		if (strncmp(name, "builtin:", 8) == 0)
			name += 8;
		if ((builtin = profile_builtin(name)) == NULL) {
			profile_builtin_names(&b);
			xasprintf(cause, "include(\"%s\"): no such built-in "
			    "profile (they are %s)", asked, b.data);
			buf_free(&b);
			return (-1);
		}
		n = strlen(name);
		if (n > 4 && strcmp(name + n - 4, ".lua") == 0)
			n -= 4;
		xasprintf(&key, "builtin:%.*s", (int)n, name);
		shown = xstrdup(key);
		*text = xstrdup(builtin);
		*len = strlen(builtin);
	} else if (ff->kind == PROFILE_FILE_CMDLINE) {
		xasprintf(cause, "include() is for profiles, not --set");
		return (-1);
	} else {
		if (name[0] == '/') {
			xasprintf(cause, "include(\"%s\"): name a profile of "
			    "the same directory tree, relative to this one",
			    name);
			return (-1);
		}
		xasprintf(&path, "%s%s%s%s", ff->dir == NULL ? "" : ff->dir,
		    ff->dir == NULL || ff->dir[strlen(ff->dir) - 1] == '/' ?
		    "" : "/", name, n > 4 && strcmp(name + n - 4, ".lua") == 0 ?
		    "" : ".lua");
		if ((real = realpath(path, NULL)) == NULL) {
			xasprintf(cause, "include(\"%s\"): %s: %s", name, path,
			    strerror(errno));
			goto fail;
		}
		rootlen = strlen(ctx->root);
		if (strcmp(ctx->root, "/") != 0 &&
		    (strncmp(real, ctx->root, rootlen) != 0 ||
		    real[rootlen] != '/')) {
			xasprintf(cause, "include(\"%s\"): %s is outside %s, "
			    "the profile's directory tree", name, path,
			    ctx->files[0].dir == NULL ? "." :
			    ctx->files[0].dir);
			goto fail;
		}
		if ((*text = profile_read_file(real, len, &why)) == NULL) {
			xasprintf(cause, "include(\"%s\"): %s", name, why);
			free(why);
			goto fail;
		}
		key = real;
		real = NULL;
		shown = path;
		path = NULL;
	}

	for (d = 0; d < ctx->depth; d++) {
		if (strcmp(ctx->files[ctx->stack[d]].key, key) != 0)
			continue;
		for (i = d; i < ctx->depth; i++)
			buf_printf(&b, "%s -> ",
			    ctx->files[ctx->stack[i]].name);
		xasprintf(cause, "include cycle: %s%s", b.data, shown);
		buf_free(&b);
		goto done;
	}
	if (ctx->depth == PROFILE_DEPTH_MAX) {
		xasprintf(cause, "includes nest more than %d deep",
		    PROFILE_DEPTH_MAX);
		goto done;
	}
	for (i = 0; i < ctx->nfiles; i++) {
		if (strcmp(ctx->files[i].key, key) == 0) {
			fi = i;
			goto done;
		}
	}
	fi = profile_file_add(ctx, ff->kind == PROFILE_FILE_BUILTIN ||
	    strncmp(key, "builtin:", 8) == 0 ? PROFILE_FILE_BUILTIN :
	    PROFILE_FILE_DISK, shown, key);
	if (fi == -1)
		xasprintf(cause, "more than %d files in one profile",
		    PROFILE_FILES_MAX);
done:
	free(key);
	free(shown);
	if (fi == -1) {
		free(*text);
		*text = NULL;
	}
	return (fi);
fail:
	free(path);
	free(real);
	return (-1);
}

/* Run the profile include(name) names; push the settings it gives. */
static void
profile_include(lua_State *L, struct profile_ctx *ctx, const char *name)
{
	char	*text, *cause;
	size_t	 len;
	int	 fi, saved_loc, status, sv;

	fi = profile_include_open(ctx, profile_caller_file(L, ctx), name,
	    &text, &len, &cause);
	if (fi == -1)
		profile_raise(L, cause);
	if (ctx->files[fi].short_src[0] == '\0' &&
	    profile_file_short_src(L, &ctx->files[fi]) == -1) {
		free(text);
		lua_error(L);
	}
	status = luaL_loadbufferx(L, text, len, ctx->files[fi].chunkname, "t");
	free(text);
	if (status != LUA_OK)
		lua_error(L);

	/* Its own sandbox{}: set aside the includer's. */
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox);
	lua_insert(L, -2);		/* saved, chunk */
	sv = lua_gettop(L) - 1;
	lua_pushnil(L);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox);

	ctx->stack[ctx->depth++] = fi;
	saved_loc = ctx->loc;
	status = lua_pcall(L, 0, 1, 0);
	ctx->in_lib = 0;
	ctx->depth--;
	ctx->loc = saved_loc;

	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox);
	lua_pushvalue(L, sv);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox);
	if (status != LUA_OK) {
		lua_pop(L, 1);
		lua_error(L);		/* the error, as it came */
	}
	/* saved, result, sandbox */
	if (!lua_isnil(L, -2) && !lua_isnil(L, -1) && !lua_rawequal(L, -1, -2))
		profile_raise(L, xstrdup("the included profile both calls "
		    "sandbox{} and returns a value"));
	if (lua_isnil(L, -2))
		lua_remove(L, -2);
	else
		lua_pop(L, 1);
	lua_remove(L, sv);
	if (lua_isnil(L, -1)) {
		xasprintf(&cause, "%s gives no settings",
		    ctx->files[fi].name);
		profile_raise(L, cause);
	}
	if (!lua_istable(L, -1)) {
		xasprintf(&cause, "%s returns a %s, not a table of settings",
		    ctx->files[fi].name, luaL_typename(L, -1));
		profile_raise(L, cause);
	}
}

/* include(NAME): the settings of another profile, to change or return. */
static int
profile_include_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	const char		*name = luaL_checkstring(L, 1);

	lua_settop(L, 1);
	profile_include(L, ctx, name);
	return (1);
}

/* extend(NAME, {...}): include(NAME) with these settings replaced. */
static int
profile_extend_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	const char		*name = luaL_checkstring(L, 1);
	int			 tloc, loc;

	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2);
	profile_track_table(L, 2, ctx->loc);
	if ((tloc = profile_table_loc(L, 2)) == 0)
		tloc = ctx->loc;
	profile_include(L, ctx, name);		/* 3 */
	lua_pushnil(L);
	while (lua_next(L, 2) != 0) {
		lua_pushvalue(L, -2);
		lua_pushvalue(L, -2);
		lua_rawset(L, 3);
		if (lua_type(L, -2) == LUA_TSTRING) {
			if ((loc = profile_key_loc(L, 2,
			    lua_tostring(L, -2))) == 0)
				loc = tloc;
			profile_shadow_set(L, 3, lua_tostring(L, -2), loc);
		}
		lua_pop(L, 1);
	}
	lua_settop(L, 3);
	return (1);
}

/* qsup.env(NAME): the host's environment variable, or nil. */
static int
profile_qsup_env_cb(lua_State *L)
{
	size_t		 len;
	const char	*name = luaL_checklstring(L, 1, &len), *value;

	if (strlen(name) != len || (value = getenv(name)) == NULL)
		lua_pushnil(L);
	else
		lua_pushstring(L, value);
	return (1);
}

static void
profile_set_string(lua_State *L, const char *name, const char *value)
{
	if (value == NULL)
		return;
	lua_pushstring(L, value);
	lua_setfield(L, -2, name);
}

/*
 * The KVM verdict is the supervisor's to measure (a probe boot): its
 * caller hands the profile engine the function that does it.
 */
static profile_kvm_fact	 profile_kvm_fact_fn;

void
profile_set_kvm_fact(profile_kvm_fact fn)
{
	profile_kvm_fact_fn = fn;
}

/*
 * The facts that cost something, computed when a profile first reads them:
 * qsup.kvm and qsup.kvm_why (a probe boot, the first time on a host) and
 * qsup.python. The time they take is not the profile's.
 */
static int
profile_qsup_index_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	struct facts_python	 py;
	const char		*key = lua_tostring(L, 2);
	char			*why = NULL;
	double			 t0 = util_now();
	int			 ok;

	if (key == NULL)
		return (0);
	profile_watch_pause();
	if ((strcmp(key, "kvm") == 0 || strcmp(key, "kvm_why") == 0) &&
	    !ctx->kvm_done) {
		ctx->kvm_done = 1;
		if (profile_kvm_fact_fn != NULL)
			ok = profile_kvm_fact_fn(&why);
		else {
			ok = 0;
			why = xstrdup("not measured: nothing here measures it");
		}
		lua_pushboolean(L, ok);
		lua_setfield(L, 1, "kvm");
		lua_pushstring(L, why != NULL ? why : "");
		free(why);
		lua_setfield(L, 1, "kvm_why");
	} else if (strcmp(key, "python") == 0 && !ctx->python_done) {
		ctx->python_done = 1;
		if (facts_python(&py) == 0) {
			lua_createtable(L, 0, 5);
			profile_set_string(L, "path", py.path);
			profile_set_string(L, "executable", py.executable);
			profile_set_string(L, "version", py.version);
			profile_set_string(L, "prefix", py.prefix);
			profile_set_string(L, "venv", py.venv);
			facts_python_free(&py);
			lua_setfield(L, 1, "python");
		}
	} else {
		profile_watch(ctx);
		return (0);
	}
	ctx->deadline += util_now() - t0;
	profile_watch(ctx);
	lua_rawget(L, 1);
	return (1);
}

static void
profile_push_qsup(lua_State *L)
{
	char	cwd[PATH_MAX];

	lua_createtable(L, 0, 12);
	profile_set_string(L, "arch", facts_arch());
	profile_set_string(L, "triplet", facts_triplet());
	profile_set_string(L, "glibc", facts_glibc());
	lua_pushinteger(L, facts_cpus());
	lua_setfield(L, -2, "cpus");
	lua_pushinteger(L, (lua_Integer)facts_memory_mib());
	lua_setfield(L, -2, "memory_mib");
	lua_pushboolean(L, facts_in_container());
	lua_setfield(L, -2, "in_container");
	if (getcwd(cwd, sizeof cwd) != NULL)
		profile_set_string(L, "cwd", cwd);
	lua_pushcfunction(L, profile_qsup_env_cb);
	lua_setfield(L, -2, "env");
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, profile_qsup_index_cb);
	lua_setfield(L, -2, "__index");
	lua_setmetatable(L, -2);
}

/* Build the sandbox (run under lua_pcall: all of this may allocate). */
static int
profile_setup_cb(lua_State *L)
{
	static const luaL_Reg	 libs[] = {
		{ LUA_GNAME, luaopen_base },
		{ LUA_STRLIBNAME, luaopen_string },
		{ LUA_TABLIBNAME, luaopen_table },
		{ LUA_MATHLIBNAME, luaopen_math },
		{ LUA_UTF8LIBNAME, luaopen_utf8 },
		{ NULL, NULL }
	};
	static const char	*drop[] = {
		"dofile", "loadfile", "collectgarbage", "warn", "require", NULL
	};
	struct profile_ctx	*ctx = profile_ctx(L);
	const luaL_Reg		*lib;
	const char		**name;

	for (lib = libs; lib->name != NULL; lib++) {
		luaL_requiref(L, lib->name, lib->func, 1);
		lua_pop(L, 1);
	}
	for (name = drop; *name != NULL; name++) {
		lua_pushnil(L);
		lua_setglobal(L, *name);
	}
	lua_getglobal(L, LUA_STRLIBNAME);
	lua_pushnil(L);
	lua_setfield(L, -2, "dump");
	lua_getfield(L, -1, "rep");
	lua_pushcclosure(L, profile_rep_cb, 1);
	lua_setfield(L, -2, "rep");
	lua_pop(L, 1);
	lua_getglobal(L, LUA_TABLIBNAME);
	lua_getfield(L, -1, "move");
	lua_pushcclosure(L, profile_move_cb, 1);
	lua_setfield(L, -2, "move");
	lua_pop(L, 1);

	profile_guard_libs(L);
	lua_pushcfunction(L, profile_print_cb);
	lua_setglobal(L, "print");
	lua_getglobal(L, "load");
	lua_pushcclosure(L, profile_load_cb, 1);
	lua_setglobal(L, "load");
	lua_pushcfunction(L, profile_xpcall_cb);
	lua_setglobal(L, "xpcall");
	lua_getglobal(L, "setmetatable");
	lua_pushcclosure(L, profile_setmetatable_cb, 1);
	lua_setglobal(L, "setmetatable");
	lua_pushcfunction(L, profile_sandbox_cb);
	lua_setglobal(L, "sandbox");
	lua_pushcfunction(L, profile_include_cb);
	lua_setglobal(L, "include");
	lua_pushcfunction(L, profile_extend_cb);
	lua_setglobal(L, "extend");
	profile_push_qsup(L);
	lua_setglobal(L, "qsup");

	/* What defaults see, whatever the profile did to its globals. */
	lua_createtable(L, 0, 1);
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, profile_qsup_env_cb);
	lua_setfield(L, -2, "env");
	lua_setfield(L, -2, "qsup");
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_defenv);

	lua_newtable(L);
	lua_createtable(L, 0, 1);
	lua_pushliteral(L, "k");
	lua_setfield(L, -2, "__mode");
	lua_setmetatable(L, -2);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_track);

	if (profile_file_short_src(L, &ctx->files[0]) == -1)
		return (lua_error(L));
	return (0);
}

/* -------------------------------------------------------------------------
 * Checking the settings against the schema.
 */

static const struct profile_setting *
profile_setting_find(const char *name)
{
	size_t	i;

	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		if (strcmp(profile_schema[i].name, name) == 0)
			return (&profile_schema[i]);
	}
	return (NULL);
}

/* Edit distance, case-blind, with transpositions (optimal string alignment). */
static size_t
profile_distance(const char *a, const char *b)
{
	size_t	la = strlen(a), lb = strlen(b), w = lb + 1;
	size_t	i, j, best, *d;
	int	ca, cb;

	if (la > 64 || lb > 64)
		return (SIZE_MAX);
	d = xcalloc((la + 1) * w, sizeof *d);
	for (i = 0; i <= la; i++)
		d[i * w] = i;
	for (j = 0; j <= lb; j++)
		d[j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			ca = tolower((unsigned char)a[i - 1]);
			cb = tolower((unsigned char)b[j - 1]);
			best = d[(i - 1) * w + j - 1] + (ca != cb);
			if (d[(i - 1) * w + j] + 1 < best)
				best = d[(i - 1) * w + j] + 1;
			if (d[i * w + j - 1] + 1 < best)
				best = d[i * w + j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] &&
			    d[(i - 2) * w + j - 2] + 1 < best)
				best = d[(i - 2) * w + j - 2] + 1;
			d[i * w + j] = best;
		}
	}
	best = d[la * w + lb];
	free(d);
	return (best);
}

/* The name in names[] a misspelt one probably meant, or NULL. */
static const char *
profile_closest(const char *name, const char *const *names, size_t n)
{
	const char	*best = NULL;
	size_t		 i, d, best_d = SIZE_MAX, len = strlen(name);

	for (i = 0; i < n; i++) {
		d = profile_distance(name, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	if (best_d <= 2 && best_d < len)
		return (best);
	/* "mem" for "memory". */
	for (i = 0; i < n; i++) {
		if (len >= 3 && strncmp(names[i], name, len) == 0)
			return (names[i]);
	}
	return (NULL);
}

/* The setting a misspelt name probably meant, or NULL. */
static const char *
profile_suggest(const char *name)
{
	const char	*names[PROFILE_NSETTINGS];
	size_t		 i;

	/* The seed's "qemu.memory". */
	if (strncmp(name, "qemu.", 5) == 0 && name[5] != '\0')
		name += 5;
	if (profile_setting_find(name) != NULL)
		return (profile_setting_find(name)->name);
	for (i = 0; i < sizeof profile_aliases / sizeof profile_aliases[0];
	    i++) {
		if (strcmp(profile_aliases[i].from, name) == 0)
			return (profile_aliases[i].to);
	}
	for (i = 0; i < PROFILE_NSETTINGS; i++)
		names[i] = profile_schema[i].name;
	return (profile_closest(name, names, PROFILE_NSETTINGS));
}

/* "16M", "2G", "1T": a MiB count in the largest exact unit. */
static void
profile_show_mib(struct buf *b, uint64_t mib)
{
	if (mib != 0 && mib % (1024 * 1024) == 0)
		buf_printf(b, "%lluT", (unsigned long long)(mib >> 20));
	else if (mib != 0 && mib % 1024 == 0)
		buf_printf(b, "%lluG", (unsigned long long)(mib >> 10));
	else
		buf_printf(b, "%lluM", (unsigned long long)mib);
}

#define PROFILE_ACCEPTS_SHARE	"{ host = PATH, guest = PATH, mode = \"ro\" " \
	"or \"rw\", ignore = { GLOB, ... }, exec = false }"
#define PROFILE_ACCEPTS_PORT	"a guest port (8080) or { guest = PORT, " \
	"host = PORT or 0 (any free one), address = \"127.0.0.1\" }"
#define PROFILE_ACCEPTS_TCP	"{ host = NAME or ADDRESS, port = PORT, " \
	"name = NAME (in the guest; optional), guest_port = PORT (port's if " \
	"left out) }"
#define PROFILE_ACCEPTS_SOCKET	"\"ALLOW|TCP|HOST|PORTS|OUT\", " \
	"\"DENY|TCP|HOST|PORTS|OUT\" or \"ALLOW|TCP|HOST|PORTS|IN\": HOST " \
	"as in network_allow or * for any, PORTS a comma list of ports and " \
	"ranges (\"80,443,8000-8010\") or * for any (not IN)"
#define PROFILE_ACCEPTS_RULE	"\"HOST[:PORT]\": a host name " \
	"(\"*.example.org\" for names under it), an address or network " \
	"(\"10.0.0.0/8\", \"[2001:db8::/32]\"), a port or range (\":443\", " \
	"\":8000-8099\")"

/* What a setting accepts, for messages and help. */
static void
profile_accepts(struct buf *b, const struct profile_setting *s)
{
	const struct profile_choice	*c, *a;
	int				 n = 0, i = 0;

	switch (s->type) {
	case PROFILE_T_BOOL:
		buf_printf(b, "true or false");
		break;
	case PROFILE_T_CHOICE:
		for (c = s->choices; c->name != NULL; c++)
			n += !c->alias;
		for (c = s->choices; c->name != NULL; c++) {
			if (c->alias)
				continue;
			if (i > 0)
				buf_printf(b, "%s", i == n - 1 ? " or " : ", ");
			i++;
			if (strcmp(c->name, "true") == 0 ||
			    strcmp(c->name, "false") == 0)
				buf_printf(b, "%s", c->name);
			else
				buf_printf(b, "\"%s\"", c->name);
		}
		for (a = s->choices; a->name != NULL; a++) {
			if (!a->alias)
				continue;
			for (c = s->choices; c->alias || c->value != a->value;
			    c++)
				;
			buf_printf(b, "; \"%s\" means \"%s\"", a->name,
			    c->name);
		}
		break;
	case PROFILE_T_SIZE:
		buf_printf(b, "MiB as a whole number (1024) or a string with "
		    "one suffix k, M, G or T (\"512M\", \"2G\"), from ");
		profile_show_mib(b, (uint64_t)s->min);
		buf_printf(b, " to ");
		profile_show_mib(b, (uint64_t)s->max);
		break;
	case PROFILE_T_INT:
		buf_printf(b, "a whole number from %.0f to %.0f", s->min,
		    s->max);
		break;
	case PROFILE_T_SECONDS:
		buf_printf(b, "a number of seconds from %g to %g", s->min,
		    s->max);
		break;
	case PROFILE_T_PATH:
		buf_printf(b, "the path of a file, absolute or relative to "
		    "the profile's directory");
		break;
	case PROFILE_T_GUEST_PATH:
		buf_printf(b, "an absolute path in the guest");
		break;
	case PROFILE_T_ENV:
		buf_printf(b, "a table of \"NAME=VALUE\" strings or of "
		    "NAME = \"VALUE\" fields");
		break;
	case PROFILE_T_IMAGE:
		buf_printf(b, "an image name (\"debian-12\"), an http(s) URL, "
		    "or the path of an image file (with a /: "
		    "\"./disk.qcow2\")");
		break;
	case PROFILE_T_URL:
		buf_printf(b, "an http:// or https:// URL");
		break;
	case PROFILE_T_DIR:
		buf_printf(b, "the path of a directory, absolute or relative "
		    "to the profile's directory");
		break;
	case PROFILE_T_SHARES:
		buf_printf(b, "a list of %s", PROFILE_ACCEPTS_SHARE);
		break;
	case PROFILE_T_ALLOW:
		buf_printf(b, "a list of %s", PROFILE_ACCEPTS_RULE);
		break;
	case PROFILE_T_PORTS:
		buf_printf(b, "a list of %s", PROFILE_ACCEPTS_PORT);
		break;
	case PROFILE_T_TCP:
		buf_printf(b, "a list of at most %d %s", PROFILE_TCP_MAX,
		    PROFILE_ACCEPTS_TCP);
		break;
	case PROFILE_T_RULES:
		buf_printf(b, "a list of %s", PROFILE_ACCEPTS_SOCKET);
		break;
	case PROFILE_T_ARGS:
		buf_printf(b, "a list of strings, QEMU's flags and their "
		    "values: { \"-device\", \"virtio-rng-device\" }");
		break;
	case PROFILE_T_LIBS:
		buf_printf(b, "a list of library names (\"libbz2.so.1.0\") "
		    "or absolute host paths");
		break;
	}
}

/* A value as a message shows it: quoted and cut short if a string. */
static void
profile_show(struct buf *b, lua_State *L, int idx)
{
	const unsigned char	*s;
	size_t			 len, i;

	switch (lua_type(L, idx)) {
	case LUA_TSTRING:
		s = (const unsigned char *)lua_tolstring(L, idx, &len);
		buf_add(b, "\"", 1);
		for (i = 0; i < len && i < PROFILE_SHOW_MAX; i++) {
			if (s[i] == '"' || s[i] == '\\')
				buf_printf(b, "\\%c", s[i]);
			else if (s[i] < 0x20 || s[i] == 0x7f)
				buf_printf(b, "\\%u", s[i]);
			else
				buf_add(b, &s[i], 1);
		}
		buf_add(b, len > PROFILE_SHOW_MAX ? "\"..." : "\"",
		    len > PROFILE_SHOW_MAX ? 4 : 1);
		break;
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx))
			buf_printf(b, "%lld", (long long)lua_tointeger(L, idx));
		else if (isnan(lua_tonumber(L, idx)))
			buf_printf(b, "nan");
		else
			buf_printf(b, "%.14g", (double)lua_tonumber(L, idx));
		break;
	case LUA_TBOOLEAN:
		buf_printf(b, "%s", lua_toboolean(L, idx) ? "true" : "false");
		break;
	case LUA_TNIL:
		buf_printf(b, "nil");
		break;
	default:
		buf_printf(b, "a %s", luaL_typename(L, idx));
		break;
	}
}

/* "NAME: VALUE WHY; expected ACCEPTS" */
static void
profile_bad_as(struct profile_ctx *ctx, lua_State *L, int idx,
    const char *name, int loc, const char *why, const char *accepts)
{
	struct buf	shown = { 0 };

	profile_show(&shown, L, idx);
	profile_error(ctx, loc, "%s: %s %s; expected %s", name, shown.data,
	    why, accepts);
	buf_free(&shown);
}

/* Is s one of "true", "yes", ... (1) or "false", "no", ... (0)? -1: no. */
static int
profile_truthy(const char *s)
{
	static const char	*yes[] = { "true", "yes", "on", "1", NULL };
	static const char	*no[] = { "false", "no", "off", "0", NULL };
	size_t			 i;

	for (i = 0; yes[i] != NULL; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return (1);
	}
	for (i = 0; no[i] != NULL; i++) {
		if (strcasecmp(s, no[i]) == 0)
			return (0);
	}
	return (-1);
}

/* "2GB", "2 GiB": the size the author meant, "2G"; or NULL. */
static char *
profile_size_hint(const char *s)
{
	const char	*p = s;
	size_t		 n;
	char		 unit, *h;

	while (isdigit((unsigned char)*p) || *p == '.')
		p++;
	n = p - s;
	if (n == 0)
		return (NULL);
	while (*p == ' ')
		p++;
	if (*p == '\0' || strchr("kKmMgGtT", *p) == NULL)
		return (NULL);
	unit = (char)toupper((unsigned char)*p++);
	if (unit == 'K')
		unit = 'k';
	if (*p != '\0' && strcasecmp(p, "B") != 0 && strcasecmp(p, "iB") != 0)
		return (NULL);
	xasprintf(&h, "%.*s%c", (int)n, s, unit);
	if (strcmp(h, s) == 0) {
		free(h);
		return (NULL);
	}
	return (h);
}

/*
 * What to write instead, when a wrong value is a near miss: a quoted
 * number or boolean, a unit with a B, a choice in the wrong case.
 */
static char *
profile_hint(lua_State *L, int idx, const struct profile_setting *s)
{
	const struct profile_choice	*c;
	const char			*v, *names[16];
	const char			*best;
	char				*h = NULL, *end, *size;
	size_t				 n = 0;
	int				 t;

	if (lua_type(L, idx) != LUA_TSTRING)
		return (NULL);
	v = lua_tostring(L, idx);
	switch (s->type) {
	case PROFILE_T_BOOL:
		if ((t = profile_truthy(v)) != -1)
			xasprintf(&h, "write %s, without quotes",
			    t ? "true" : "false");
		break;
	case PROFILE_T_CHOICE:
		for (c = s->choices; c->name != NULL && n < 16; c++) {
			if (strcasecmp(c->name, v) == 0 &&
			    (strcmp(c->name, "true") == 0 ||
			    strcmp(c->name, "false") == 0)) {
				xasprintf(&h, "write %s, without quotes",
				    c->name);
				return (h);
			}
			if (strcasecmp(c->name, v) == 0) {
				xasprintf(&h, "write \"%s\"", c->name);
				return (h);
			}
			names[n++] = c->name;
		}
		if (s->choices == profile_kvm_choices &&
		    (t = profile_truthy(v)) != -1) {
			xasprintf(&h, "write %s, without quotes",
			    t ? "true" : "false");
			return (h);
		}
		if ((best = profile_closest(v, names, n)) != NULL) {
			if (strcmp(best, "true") == 0 ||
			    strcmp(best, "false") == 0)
				xasprintf(&h, "write %s", best);
			else
				xasprintf(&h, "write \"%s\"", best);
		}
		break;
	case PROFILE_T_SIZE:
		if ((size = profile_size_hint(v)) != NULL) {
			xasprintf(&h, "write \"%s\"", size);
			free(size);
		}
		break;
	case PROFILE_T_INT:
	case PROFILE_T_SECONDS:
		(void)strtod(v, &end);
		if (end != v && *end == '\0')
			xasprintf(&h, "write %s, without quotes", v);
		else if (end != v && strcmp(end, "s") == 0)
			xasprintf(&h, "write %.*s", (int)(end - v), v);
		break;
	default:
		break;
	}
	return (h);
}

/* "memory: "2GB" is not a size (write "2G"); expected ..." */
static void
profile_bad(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc, const char *why)
{
	struct buf	 accepts = { 0 }, w = { 0 };
	char		*hint;

	profile_accepts(&accepts, s);
	buf_printf(&w, "%s", why);
	if ((hint = profile_hint(L, idx, s)) != NULL) {
		buf_printf(&w, " (%s)", hint);
		free(hint);
	}
	profile_bad_as(ctx, L, idx, s->name, loc, w.data, accepts.data);
	buf_free(&accepts);
	buf_free(&w);
}

enum profile_size {
	PROFILE_SIZE_OK,
	PROFILE_SIZE_SYNTAX,	/* not a size at all */
	PROFILE_SIZE_PART,	/* not a whole number of MiB */
	PROFILE_SIZE_BIG	/* does not fit */
};

/* "2G", "512M", "1.5G", "2048k", "1024" (MiB): a size in MiB. */
static enum profile_size
profile_parse_size(const char *s, uint64_t *mib)
{
	uint64_t	whole = 0, frac = 0, scale = 1, unit, bytes;
	const char	*p = s;

	if (!isdigit((unsigned char)*p))
		return (PROFILE_SIZE_SYNTAX);
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return (PROFILE_SIZE_BIG);
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return (PROFILE_SIZE_SYNTAX);
		for (; isdigit((unsigned char)*p); p++) {
			if (scale == 1000000)	/* frac * unit < 2^64 */
				return (PROFILE_SIZE_PART);
			frac = frac * 10 + (uint64_t)(*p - '0');
			scale *= 10;
		}
	}
	switch (*p) {
	case 'k':
	case 'K':
		unit = (uint64_t)1 << 10;
		break;
	case 'm':
	case 'M':
	case '\0':
		unit = (uint64_t)1 << 20;
		break;
	case 'g':
	case 'G':
		unit = (uint64_t)1 << 30;
		break;
	case 't':
	case 'T':
		unit = (uint64_t)1 << 40;
		break;
	default:
		return (PROFILE_SIZE_SYNTAX);
	}
	if (*p != '\0' && *++p != '\0')		/* "2GB", "2GiB" */
		return (PROFILE_SIZE_SYNTAX);
	if (whole > UINT64_MAX / unit)
		return (PROFILE_SIZE_BIG);
	if (frac * unit % scale != 0)
		return (PROFILE_SIZE_PART);
	bytes = whole * unit;
	if (bytes > UINT64_MAX - frac * unit / scale)
		return (PROFILE_SIZE_BIG);
	bytes += frac * unit / scale;
	if (bytes % PROFILE_MIB != 0)
		return (PROFILE_SIZE_PART);
	*mib = bytes / PROFILE_MIB;
	return (PROFILE_SIZE_OK);
}

/*
 * A whole number in [min, max] from an integer, or a float with an integral
 * value. Returns 0, or a reason.
 */
static const char *
profile_whole(lua_State *L, int idx, double min, double max, long long *v)
{
	lua_Number	f;

	if (lua_type(L, idx) != LUA_TNUMBER)
		return ("is not valid");
	if (lua_isinteger(L, idx)) {
		*v = lua_tointeger(L, idx);
		if ((double)*v < min || (double)*v > max)
			return ("is out of range");
		return (NULL);
	}
	f = lua_tonumber(L, idx);
	if (isnan(f) || f != floor(f))
		return ("is not a whole number");
	if (f < min || f > max)
		return ("is out of range");
	*v = (long long)f;
	return (NULL);
}

static void
profile_convert_size(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*why = NULL;
	long long	 v;
	uint64_t	 mib = 0;

	if (lua_type(L, idx) == LUA_TSTRING) {
		switch (profile_parse_size(lua_tostring(L, idx), &mib)) {
		case PROFILE_SIZE_OK:
			if ((double)mib < s->min || (double)mib > s->max)
				why = "is out of range";
			break;
		case PROFILE_SIZE_SYNTAX:
			why = "is not a size";
			break;
		case PROFILE_SIZE_PART:
			why = "is not a whole number of MiB";
			break;
		case PROFILE_SIZE_BIG:
			why = "is out of range";
			break;
		}
	} else if ((why = profile_whole(L, idx, s->min, s->max, &v)) == NULL)
		mib = (uint64_t)v;
	else if (strcmp(why, "is not a whole number") == 0)
		why = "is not a whole number of MiB";
	if (why != NULL) {
		profile_bad(ctx, L, idx, s, loc, why);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, uint64_t) = mib;
}

/* The directory relative paths written at loc are relative to. */
static const char *
profile_loc_dir(struct profile_ctx *ctx, int loc)
{
	int	f = PROFILE_LOC_FILE(loc);

	if (f >= ctx->nfiles || ctx->files[f].kind != PROFILE_FILE_DISK)
		return (NULL);
	return (ctx->files[f].dir);
}

/* A host path as written at loc, joined to its file's directory. */
static char *
profile_host_path(struct profile_ctx *ctx, int loc, const char *value)
{
	const char	*dir = profile_loc_dir(ctx, loc);
	char		*path;

	if (value[0] == '/' || dir == NULL)
		return (xstrdup(value));
	xasprintf(&path, "%s%s%s", dir,
	    dir[strlen(dir) - 1] == '/' ? "" : "/", value);
	return (path);
}

/* An absolute path on the host: real if it exists, else normalized. */
static char *
profile_absolute(const char *path)
{
	char	cwd[PATH_MAX], *real, *full, *norm;

	if ((real = realpath(path, NULL)) != NULL)
		return (real);
	if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return (util_path_normalize(path));
	xasprintf(&full, "%s/%s", cwd, path);
	norm = util_path_normalize(full);
	free(full);
	return (norm);
}

/* Is the string at idx free of NUL bytes? Its length in *len. */
static int
profile_string_ok(lua_State *L, int idx, size_t *len)
{
	const char	*s = lua_tolstring(L, idx, len);

	return (s != NULL && strlen(s) == *len);
}

/* A string without NUL bytes, shorter than PATH_MAX: its text, or NULL. */
static const char *
profile_plain_string(lua_State *L, int idx)
{
	const char	*value;
	size_t		 len;

	if (lua_type(L, idx) != LUA_TSTRING)
		return (NULL);
	value = lua_tolstring(L, idx, &len);
	if (len == 0 || strlen(value) != len || len >= PATH_MAX)
		return (NULL);
	return (value);
}

static void
profile_convert_path(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;
	struct stat	 sb;
	char		*path, *abs;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if (s->type == PROFILE_T_GUEST_PATH) {
		if (value[0] != '/') {
			profile_bad(ctx, L, idx, s, loc, "is not absolute");
			return;
		}
		abs = xstrdup(value);
	} else {
		path = profile_host_path(ctx, loc, value);
		if (stat(path, &sb) == -1) {
			profile_error(ctx, loc, "%s: %s: %s", s->name, path,
			    strerror(errno));
			free(path);
			return;
		}
		if (!S_ISREG(sb.st_mode)) {
			profile_error(ctx, loc, "%s: %s: not a regular file",
			    s->name, path);
			free(path);
			return;
		}
		abs = profile_absolute(path);
		free(path);
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = abs;
}

/* A host directory that need not exist yet (it is made when needed). */
static void
profile_convert_dir(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;
	struct stat	 sb;
	char		*path;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	path = profile_host_path(ctx, loc, value);
	if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		profile_error(ctx, loc, "%s: %s: not a directory", s->name,
		    path);
		free(path);
		return;
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = profile_absolute(path);
	free(path);
}

/* "http://host/..." or "https://host/...", printable, no spaces. */
static int
profile_url_ok(const char *v)
{
	const char	*p;

	if (strncasecmp(v, "http://", 7) == 0)
		p = v + 7;
	else if (strncasecmp(v, "https://", 8) == 0)
		p = v + 8;
	else
		return (0);
	if (*p == '\0' || *p == '/')
		return (0);
	for (; *v != '\0'; v++) {
		if ((unsigned char)*v <= ' ' || *v == 0x7f)
			return (0);
	}
	return (1);
}

static void
profile_convert_url(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;

	if ((value = profile_plain_string(L, idx)) == NULL ||
	    !profile_url_ok(value)) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = xstrdup(value);
}

/* A name, a URL or a file: which one is told by its form. */
static void
profile_convert_image(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char		*value, *p;
	enum profile_image	 kind;
	struct stat		 sb;
	char			*path, *v;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if (strstr(value, "://") != NULL) {
		if (!profile_url_ok(value)) {
			profile_bad(ctx, L, idx, s, loc, "is not an http(s) "
			    "URL");
			return;
		}
		kind = PROFILE_IMAGE_URL;
		v = xstrdup(value);
	} else if (strchr(value, '/') != NULL) {
		path = profile_host_path(ctx, loc, value);
		if (stat(path, &sb) == -1) {
			profile_error(ctx, loc, "%s: %s: %s", s->name, path,
			    strerror(errno));
			free(path);
			return;
		}
		if (!S_ISREG(sb.st_mode)) {
			profile_error(ctx, loc, "%s: %s: not a regular file",
			    s->name, path);
			free(path);
			return;
		}
		kind = PROFILE_IMAGE_FILE;
		v = profile_absolute(path);
		free(path);
	} else {
		for (p = value; *p != '\0'; p++) {
			if (!isalnum((unsigned char)*p) &&
			    strchr("._+-", *p) == NULL)
				break;
		}
		if (*p != '\0' || !isalnum((unsigned char)value[0]) ||
		    strlen(value) > 128) {
			profile_bad(ctx, L, idx, s, loc, "is not valid");
			return;
		}
		kind = PROFILE_IMAGE_NAME;
		v = xstrdup(value);
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = v;
	memcpy((char *)ctx->p + s->offset_n, &kind, sizeof kind);
}

static int
profile_env_name_ok(const char *name, size_t len)
{
	size_t	i;

	if (len == 0 || isdigit((unsigned char)name[0]))
		return (0);
	for (i = 0; i < len; i++) {
		if (!isalnum((unsigned char)name[i]) && name[i] != '_')
			return (0);
	}
	return (1);
}

static int
profile_env_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* env = {"NAME=VALUE", ...} or {NAME = "VALUE", ...}, or both mixed. */
static void
profile_convert_env(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct buf	  shown = { 0 };
	char		**v = NULL;
	const char	 *key, *item, *value, *eq;
	size_t		  n = 0, i, klen, ilen, vlen;
	int		  tloc, eloc, bad = 0;

	if (lua_type(L, idx) != LUA_TTABLE) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if ((tloc = profile_table_loc(L, idx)) == 0 ||
	    PROFILE_LOC_FILE(loc) != PROFILE_LOC_FILE(tloc))
		tloc = loc;
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		buf_consume(&shown, shown.len);
		if (lua_type(L, -2) == LUA_TSTRING) {
			key = lua_tolstring(L, -2, &klen);
			if ((eloc = profile_key_loc(L, idx, key)) == 0)
				eloc = tloc;
			if (!profile_env_name_ok(key, klen)) {
				profile_show(&shown, L, -2);
				profile_error(ctx, eloc, "env: %s is not a "
				    "variable name (letters, digits and _, not "
				    "starting with a digit)", shown.data);
				bad = 1;
			} else if (lua_type(L, -1) != LUA_TSTRING &&
			    lua_type(L, -1) != LUA_TNUMBER) {
				profile_show(&shown, L, -1);
				profile_error(ctx, eloc, "env: %s is %s, not "
				    "a string", key, shown.data);
				bad = 1;
			} else {
				lua_pushvalue(L, -1);	/* for tolstring */
				value = lua_tolstring(L, -1, &vlen);
				if (strlen(value) != vlen) {
					profile_error(ctx, eloc, "env: %s "
					    "holds a NUL byte", key);
					bad = 1;
				} else {
					v = xreallocarray(v, n + 1, sizeof *v);
					xasprintf(&v[n++], "%s=%s", key, value);
				}
				lua_pop(L, 1);
			}
		} else if (lua_type(L, -2) == LUA_TNUMBER &&
		    lua_type(L, -1) == LUA_TSTRING) {
			item = lua_tolstring(L, -1, &ilen);
			eq = memchr(item, '=', ilen);
			profile_show(&shown, L, -1);
			if (eq == NULL) {
				profile_error(ctx, tloc, "env: %s is not "
				    "\"NAME=VALUE\"", shown.data);
				bad = 1;
			} else if (!profile_env_name_ok(item, eq - item)) {
				profile_error(ctx, tloc, "env: %s: the name "
				    "is not a variable name (letters, digits "
				    "and _, not starting with a digit)",
				    shown.data);
				bad = 1;
			} else if (strlen(item) != ilen) {
				profile_error(ctx, tloc, "env: %s holds a NUL "
				    "byte", shown.data);
				bad = 1;
			} else {
				v = xreallocarray(v, n + 1, sizeof *v);
				v[n++] = xstrdup(item);
			}
		} else {
			profile_show(&shown, L, -1);
			profile_error(ctx, tloc, "env: %s is not "
			    "\"NAME=VALUE\" or NAME = \"VALUE\"", shown.data);
			bad = 1;
		}
		lua_pop(L, 1);
	}
	buf_free(&shown);

	/* Sorted, a name given twice ends up next to itself. */
	if (n > 0)
		qsort(v, n, sizeof *v, profile_env_cmp);
	for (i = 1; i < n; i++) {
		klen = strcspn(v[i], "=");
		if (strncmp(v[i - 1], v[i], klen + 1) == 0) {
			profile_error(ctx, tloc, "env: %.*s is set twice",
			    (int)klen, v[i]);
			bad = 1;
		}
	}
	if (bad) {
		for (i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, char **) = v;
	memcpy((char *)ctx->p + s->offset_n, &n, sizeof n);
}

/*
 * A list setting: a table whose keys are 1..n. Returns n, or -1 once the
 * mistake is reported. *tloc: where the list was written.
 */
static int
profile_list(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc, int *tloc)
{
	struct buf	b = { 0 };
	lua_Integer	n, k;

	*tloc = loc;
	if (lua_type(L, idx) != LUA_TTABLE) {
		profile_bad(ctx, L, idx, s, loc, "is not a list");
		return (-1);
	}
	if ((*tloc = profile_table_loc(L, idx)) == 0 ||
	    PROFILE_LOC_FILE(loc) != PROFILE_LOC_FILE(*tloc))
		*tloc = loc;
	n = (lua_Integer)lua_rawlen(L, idx);
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		lua_pop(L, 1);
		if (lua_isinteger(L, -1) && (k = lua_tointeger(L, -1)) >= 1 &&
		    k <= n)
			continue;
		profile_show(&b, L, -1);
		profile_error(ctx, *tloc, "%s: has a field %s; expected %s",
		    s->name, b.data, s->type == PROFILE_T_SHARES ||
		    s->type == PROFILE_T_TCP ?
		    "a list: { { host = ... }, ... }" : "a list: { ..., ... }");
		buf_free(&b);
		lua_pop(L, 1);
		return (-1);
	}
	if (n > PROFILE_LIST_MAX) {
		profile_error(ctx, *tloc, "%s: more than %d items", s->name,
		    PROFILE_LIST_MAX);
		return (-1);
	}
	return ((int)n);
}

/* Unknown fields of an item table: reported, with the closest known one. */
static int
profile_fields(struct profile_ctx *ctx, lua_State *L, int idx,
    const char *what, const char *const *fields, size_t nfields, int tloc)
{
	struct buf	 b = { 0 };
	const char	*hint;
	size_t		 i;
	int		 bad = 0, loc;

	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		lua_pop(L, 1);
		if (lua_type(L, -1) == LUA_TSTRING) {
			for (i = 0; i < nfields; i++) {
				if (strcmp(fields[i], lua_tostring(L, -1)) == 0)
					break;
			}
			if (i < nfields)
				continue;
		}
		buf_consume(&b, b.len);
		profile_show(&b, L, -1);
		loc = lua_type(L, -1) == LUA_TSTRING ?
		    profile_key_loc(L, idx, lua_tostring(L, -1)) : 0;
		hint = lua_type(L, -1) == LUA_TSTRING ? profile_closest(
		    lua_tostring(L, -1), fields, nfields) : NULL;
		if (hint != NULL)
			profile_error(ctx, loc != 0 ? loc : tloc, "%s: unknown "
			    "field %s (did you mean \"%s\"?)", what, b.data,
			    hint);
		else {
			buf_printf(&b, "; the fields are");
			for (i = 0; i < nfields; i++)
				buf_printf(&b, "%s %s", i == 0 ? "" : ",",
				    fields[i]);
			profile_error(ctx, loc != 0 ? loc : tloc, "%s: unknown "
			    "field %s", what, b.data);
		}
		bad = 1;
	}
	buf_free(&b);
	return (bad);
}

/* Where field key of the item table at idx was written. */
static int
profile_field_loc(lua_State *L, int idx, const char *key, int tloc)
{
	int	loc = profile_key_loc(L, idx, key);

	return (loc != 0 ? loc : tloc);
}

/* fnmatch(3) patterns: no NUL, no "..", brackets closed. */
static const char *
profile_glob_bad(const char *g, size_t len)
{
	const char	*p, *end = g + len;

	if (len == 0)
		return ("is empty");
	if (strlen(g) != len)
		return ("holds a NUL byte");
	if (strcmp(g, "..") == 0 || strncmp(g, "../", 3) == 0 ||
	    strstr(g, "/../") != NULL ||
	    (len >= 3 && strcmp(g + len - 3, "/..") == 0))
		return ("goes up with \"..\"");
	for (p = g; p < end; p++) {
		if (*p == '\\' && p + 1 < end)
			p++;
		else if (*p == '[') {
			p++;
			if (p < end && (*p == '!' || *p == '^'))
				p++;
			if (p < end && *p == ']')
				p++;
			while (p < end && *p != ']')
				p++;
			if (p == end)
				return ("has a [ without its ]");
		}
	}
	return (NULL);
}

static void
profile_share_free(void *item)
{
	struct profile_share	*sh = item;
	size_t	i;

	free(sh->host);
	sh->host = NULL;
	free(sh->guest);
	sh->guest = NULL;
	for (i = 0; i < sh->nignore; i++)
		free(sh->ignore[i]);
	free(sh->ignore);
	sh->ignore = NULL;
	sh->nignore = 0;
}

/* Guest paths a share may not cover: the guest system's own. */
static int
profile_guest_reserved(const char *path)
{
	static const char	*sys[] = { "/proc", "/sys", "/dev", NULL };
	size_t			 i, n;

	if (strcmp(path, "/") == 0)
		return (1);
	for (i = 0; sys[i] != NULL; i++) {
		n = strlen(sys[i]);
		if (strncmp(path, sys[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/'))
			return (1);
	}
	return (0);
}

/* One item of shares; returns 0 and fills sh, or -1 (reported). */
static int
profile_share(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int tloc, void *item)
{
	struct profile_share	*sh = item;
	static const char	*fields[] = { "host", "guest", "mode",
	    "ignore", "exec" };
	struct stat		 sb;
	const char		*v, *why;
	char			 what[64], *path;
	size_t			 len;
	int			 eloc, floc, bad, i, n;

	memset(sh, 0, sizeof *sh);
	snprintf(what, sizeof what, "shares[%d]", k);
	if (lua_type(L, e) != LUA_TTABLE) {
		profile_bad_as(ctx, L, e, what, tloc, "is not valid",
		    PROFILE_ACCEPTS_SHARE);
		return (-1);
	}
	eloc = profile_item_loc(L, e, tloc);
	bad = profile_fields(ctx, L, e, what, fields, 5, eloc);

	snprintf(what, sizeof what, "shares[%d].host", k);
	floc = profile_field_loc(L, e, "host", eloc);
	lua_getfield(L, e, "host");
	if (lua_isnil(L, -1)) {
		profile_error(ctx, eloc, "shares[%d]: has no host; every share "
		    "needs host = PATH", k);
		bad = 1;
	} else if ((v = profile_plain_string(L, -1)) == NULL) {
		profile_bad_as(ctx, L, -1, what, floc, "is not valid",
		    "the path of a host directory");
		bad = 1;
	} else {
		path = profile_host_path(ctx, floc, v);
		if (stat(path, &sb) == -1) {
			profile_error(ctx, floc, "%s: %s: %s", what, path,
			    strerror(errno));
			bad = 1;
		} else if (!S_ISDIR(sb.st_mode)) {
			profile_error(ctx, floc, "%s: %s: not a directory",
			    what, path);
			bad = 1;
		} else
			sh->host = profile_absolute(path);
		free(path);
	}
	lua_pop(L, 1);

	snprintf(what, sizeof what, "shares[%d].guest", k);
	floc = profile_field_loc(L, e, "guest", eloc);
	lua_getfield(L, e, "guest");
	if (lua_isnil(L, -1)) {
		if (sh->host != NULL)
			sh->guest = xstrdup(sh->host);
	} else if ((v = profile_plain_string(L, -1)) == NULL || v[0] != '/') {
		profile_bad_as(ctx, L, -1, what, floc, v == NULL ?
		    "is not valid" : "is not absolute",
		    "an absolute path in the guest");
		bad = 1;
	} else
		sh->guest = util_path_normalize(v);
	if (sh->guest != NULL && profile_guest_reserved(sh->guest)) {
		profile_error(ctx, floc, "%s: %s is the guest system's own "
		    "(/, /proc, /sys and /dev cannot be shared over)", what,
		    sh->guest);
		bad = 1;
	}
	lua_pop(L, 1);

	snprintf(what, sizeof what, "shares[%d].mode", k);
	floc = profile_field_loc(L, e, "mode", eloc);
	lua_getfield(L, e, "mode");
	if (lua_isnil(L, -1) || (lua_type(L, -1) == LUA_TSTRING &&
	    strcmp(lua_tostring(L, -1), "ro") == 0))
		sh->rw = 0;
	else if (lua_type(L, -1) == LUA_TSTRING &&
	    strcmp(lua_tostring(L, -1), "rw") == 0)
		sh->rw = 1;
	else {
		profile_bad_as(ctx, L, -1, what, floc, "is not valid",
		    "\"ro\" (read-only) or \"rw\"");
		bad = 1;
	}
	lua_pop(L, 1);

	snprintf(what, sizeof what, "shares[%d].exec", k);
	floc = profile_field_loc(L, e, "exec", eloc);
	lua_getfield(L, e, "exec");
	if (lua_type(L, -1) == LUA_TBOOLEAN)
		sh->exec = lua_toboolean(L, -1);
	else if (!lua_isnil(L, -1)) {
		profile_bad_as(ctx, L, -1, what, floc, "is not valid",
		    "true (an execution tree, staged in nested containers) or "
		    "false");
		bad = 1;
	}
	lua_pop(L, 1);

	snprintf(what, sizeof what, "shares[%d].ignore", k);
	floc = profile_field_loc(L, e, "ignore", eloc);
	lua_getfield(L, e, "ignore");
	if (!lua_isnil(L, -1) && lua_type(L, -1) != LUA_TTABLE) {
		profile_bad_as(ctx, L, -1, what, floc, "is not a list",
		    "a list of glob patterns: { \".git\", \"*.pyc\" }");
		bad = 1;
	} else if (!lua_isnil(L, -1)) {
		n = (int)lua_rawlen(L, -1);
		if (n > PROFILE_LIST_MAX)
			n = PROFILE_LIST_MAX;
		for (i = 1; i <= n; i++) {
			lua_rawgeti(L, -1, i);
			snprintf(what, sizeof what, "shares[%d].ignore[%d]", k,
			    i);
			if (lua_type(L, -1) != LUA_TSTRING) {
				profile_bad_as(ctx, L, -1, what, floc,
				    "is not valid", "a glob pattern");
				bad = 1;
			} else if ((v = lua_tolstring(L, -1, &len)) != NULL &&
			    (why = profile_glob_bad(v, len)) != NULL) {
				profile_bad_as(ctx, L, -1, what, floc, why,
				    "a glob pattern (\"*.pyc\", \"build/\")");
				bad = 1;
			} else {
				sh->ignore = xreallocarray(sh->ignore,
				    sh->nignore + 1, sizeof *sh->ignore);
				sh->ignore[sh->nignore++] =
				    xstrdup(lua_tostring(L, -1));
			}
			lua_pop(L, 1);
		}
	}
	lua_pop(L, 1);
	if (bad) {
		profile_share_free(sh);
		return (-1);
	}
	return (0);
}

/*
 * How one kind of list item is read, compared and freed, for
 * profile_convert_items: the lists of tables (shares, ports, network_tcp).
 */
struct profile_items {
	size_t	  size;			/* of one item */
	int	  max;			/* items at most; 0: no limit */
	const char *max_why;		/* printf: max, max */
	int	(*read)(struct profile_ctx *, lua_State *, int, int, int,
		    void *);
	/* Reports it and returns 1 when item k repeats prev (item from). */
	int	(*twice)(struct profile_ctx *, lua_State *, int, int,
		    const void *, const void *, int);
	void	(*free)(void *);
};

/* A list of tables, each item read, checked against the earlier ones. */
static void
profile_convert_items(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc, const struct profile_items *it)
{
	char	*v = NULL, *item;
	size_t	 nv = 0, i, j;
	int	 n, k, tloc, bad = 0, *from = NULL;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	if (it->max > 0 && n > it->max) {
		profile_error(ctx, tloc, it->max_why, it->max, it->max);
		return;
	}
	item = xmalloc(it->size);
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, idx, k);
		if (it->read(ctx, L, lua_gettop(L), k, tloc, item) == 0) {
			for (j = 0; j < nv; j++) {
				if (it->twice(ctx, L, tloc, k, item,
				    v + j * it->size, from[j]))
					break;
			}
			if (j < nv) {
				it->free(item);
				bad = 1;
			} else {
				v = xreallocarray(v, nv + 1, it->size);
				from = xreallocarray(from, nv + 1,
				    sizeof *from);
				from[nv] = k;
				memcpy(v + nv++ * it->size, item, it->size);
			}
		} else
			bad = 1;
		lua_pop(L, 1);
	}
	free(item);
	free(from);
	if (bad) {
		for (i = 0; i < nv; i++)
			it->free(v + i * it->size);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, void *) = v;
	memcpy((char *)ctx->p + s->offset_n, &nv, sizeof nv);
}

static int
profile_share_twice(struct profile_ctx *ctx, lua_State *L, int tloc, int k,
    const void *item, const void *prev, int from)
{
	const struct profile_share	*sh = item, *o = prev;

	if (strcmp(o->guest, sh->guest) != 0)
		return (0);
	profile_error(ctx, profile_field_loc(L, -1, "guest",
	    profile_item_loc(L, -1, tloc)), "shares[%d].guest: %s is shared "
	    "twice (shares[%d] too)", k, sh->guest, from);
	return (1);
}

static void
profile_convert_shares(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	static const struct profile_items it = {
		.size = sizeof (struct profile_share),
		.read = profile_share,
		.twice = profile_share_twice,
		.free = profile_share_free
	};

	profile_convert_items(ctx, L, idx, s, loc, &it);
}

static void
profile_convert_allow(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct net_rule	*v = NULL, r;
	struct buf		 w = { 0 };
	char			 what[64], *why;
	size_t			 nv = 0, i, len;
	int			 n, k, tloc, bad = 0;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, idx, k);
		snprintf(what, sizeof what, "network_allow[%d]", k);
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len)) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not valid",
			    PROFILE_ACCEPTS_RULE);
			bad = 1;
		} else if (net_rule_parse(lua_tostring(L, -1), &r, &why) == -1) {
			buf_consume(&w, w.len);
			profile_show(&w, L, -1);
			profile_error(ctx, tloc, "%s: %s %s", what, w.data,
			    why);
			free(why);
			bad = 1;
		} else {
			v = xreallocarray(v, nv + 1, sizeof *v);
			v[nv++] = r;
		}
		lua_pop(L, 1);
	}
	buf_free(&w);
	if (bad) {
		for (i = 0; i < nv; i++)
			net_rule_free(&v[i]);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, struct net_rule *) = v;
	memcpy((char *)ctx->p + s->offset_n, &nv, sizeof nv);
}

/* One item of ports; returns 0 and fills pt, or -1 (reported). */
static int
profile_port(struct profile_ctx *ctx, lua_State *L, int e, int k, int tloc,
    void *item)
{
	struct net_port	*pt = item;
	static const char	*fields[] = { "guest", "host", "address" };
	unsigned char		 addr[16];
	const char		*why, *v;
	char			 what[64];
	long long		 n;
	int			 eloc, floc, bad = 0;

	memset(pt, 0, sizeof *pt);
	snprintf(what, sizeof what, "ports[%d]", k);
	if (lua_type(L, e) == LUA_TNUMBER) {
		if ((why = profile_whole(L, e, 1, 65535, &n)) != NULL) {
			profile_bad_as(ctx, L, e, what, tloc, why,
			    PROFILE_ACCEPTS_PORT);
			return (-1);
		}
		pt->guest = (uint16_t)n;
		pt->address = xstrdup("127.0.0.1");
		return (0);
	}
	if (lua_type(L, e) != LUA_TTABLE) {
		profile_bad_as(ctx, L, e, what, tloc, "is not valid",
		    PROFILE_ACCEPTS_PORT);
		return (-1);
	}
	eloc = profile_item_loc(L, e, tloc);
	bad = profile_fields(ctx, L, e, what, fields, 3, eloc);

	snprintf(what, sizeof what, "ports[%d].guest", k);
	floc = profile_field_loc(L, e, "guest", eloc);
	lua_getfield(L, e, "guest");
	if (lua_isnil(L, -1)) {
		profile_error(ctx, eloc, "ports[%d]: has no guest port; write "
		    "guest = PORT", k);
		bad = 1;
	} else if ((why = profile_whole(L, -1, 1, 65535, &n)) != NULL) {
		profile_bad_as(ctx, L, -1, what, floc, why,
		    "a port from 1 to 65535");
		bad = 1;
	} else
		pt->guest = (uint16_t)n;
	lua_pop(L, 1);

	snprintf(what, sizeof what, "ports[%d].host", k);
	floc = profile_field_loc(L, e, "host", eloc);
	lua_getfield(L, e, "host");
	if (!lua_isnil(L, -1)) {
		if ((why = profile_whole(L, -1, 0, 65535, &n)) != NULL) {
			profile_bad_as(ctx, L, -1, what, floc, why,
			    "a port from 1 to 65535, or 0 for any free one");
			bad = 1;
		} else
			pt->host = (uint16_t)n;
	}
	lua_pop(L, 1);

	snprintf(what, sizeof what, "ports[%d].address", k);
	floc = profile_field_loc(L, e, "address", eloc);
	lua_getfield(L, e, "address");
	if (lua_isnil(L, -1))
		pt->address = xstrdup("127.0.0.1");
	else if ((v = profile_plain_string(L, -1)) == NULL ||
	    (inet_pton(AF_INET, v, addr) != 1 &&
	    inet_pton(AF_INET6, v, addr) != 1)) {
		profile_bad_as(ctx, L, -1, what, floc, "is not an IP address",
		    "a host address to listen on (\"127.0.0.1\", \"::1\")");
		bad = 1;
	} else
		pt->address = xstrdup(v);
	lua_pop(L, 1);
	if (bad) {
		free(pt->address);
		pt->address = NULL;
		return (-1);
	}
	return (0);
}

static int
profile_port_twice(struct profile_ctx *ctx, lua_State *L, int tloc, int k,
    const void *item, const void *prev, int from)
{
	const struct net_port	*pt = item, *o = prev;

	if (pt->host == 0 || o->host != pt->host ||
	    strcmp(o->address, pt->address) != 0)
		return (0);
	profile_error(ctx, lua_istable(L, -1) ? profile_item_loc(L, -1, tloc) :
	    tloc, "ports[%d]: host port %u on %s is forwarded twice "
	    "(ports[%d] too)", k, pt->host, pt->address, from);
	return (1);
}

static void
profile_port_free_item(void *item)
{
	struct net_port	*pt = item;

	free(pt->address);
}

static void
profile_convert_ports(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	static const struct profile_items it = {
		.size = sizeof (struct net_port),
		.read = profile_port,
		.twice = profile_port_twice,
		.free = profile_port_free_item
	};

	profile_convert_items(ctx, L, idx, s, loc, &it);
}

static void
profile_tcp_map_free(void *item)
{
	struct profile_tcp_map	*m = item;

	free(m->name);
	m->name = NULL;
	free(m->host);
	m->host = NULL;
}

/* A host or name field of network_tcp item k: 0, -1 (reported). */
static int
profile_tcp_host(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, const char *key, int flags, char **out)
{
	const char	*v;
	char		 what[64], *why = NULL;
	int		 floc, rc = 0;

	snprintf(what, sizeof what, "network_tcp[%d].%s", k, key);
	floc = profile_field_loc(L, e, key, eloc);
	lua_getfield(L, e, key);
	if (lua_isnil(L, -1)) {
		if (flags & NET_RULE_HOST_ADDR) {
			profile_error(ctx, eloc, "network_tcp[%d]: has no "
			    "host; write host = \"127.0.0.1\" or a host name",
			    k);
			rc = -1;
		}
	} else if ((v = profile_plain_string(L, -1)) == NULL ||
	    net_rule_parse_host(v, flags, out, &why) == -1) {
		profile_bad_as(ctx, L, -1, what, floc, why != NULL ? why :
		    "is not valid", (flags & NET_RULE_HOST_ADDR) ? "a host name "
		    "or an address on the host's side (\"127.0.0.1\", "
		    "\"db.example.org\")" : "a host name for the guest to "
		    "resolve (\"db\", \"db.internal\")");
		rc = -1;
	}
	free(why);
	lua_pop(L, 1);
	return (rc);
}

/* A port field of network_tcp item k: 0 (*port set if given), -1. */
static int
profile_tcp_port(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, const char *key, uint16_t *port)
{
	const char	*why;
	char		 what[64];
	long long	 n;
	int		 rc = 0;

	snprintf(what, sizeof what, "network_tcp[%d].%s", k, key);
	lua_getfield(L, e, key);
	if (lua_isnil(L, -1)) {
		if (strcmp(key, "port") == 0) {
			profile_error(ctx, eloc, "network_tcp[%d]: has no "
			    "port; write port = PORT (the host's)", k);
			rc = -1;
		}
	} else if ((why = profile_whole(L, -1, 1, 65535, &n)) != NULL) {
		profile_bad_as(ctx, L, -1, what, profile_field_loc(L, e, key,
		    eloc), why, "a port from 1 to 65535");
		rc = -1;
	} else
		*port = (uint16_t)n;
	lua_pop(L, 1);
	return (rc);
}

/* One item of network_tcp; returns 0 and fills m, or -1 (reported). */
static int
profile_tcp_map(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int tloc, void *item)
{
	struct profile_tcp_map	*m = item;
	static const char	*fields[] = { "host", "port", "name",
	    "guest_port" };
	char			 what[64];
	int			 eloc, bad;

	memset(m, 0, sizeof *m);
	snprintf(what, sizeof what, "network_tcp[%d]", k);
	if (lua_type(L, e) != LUA_TTABLE) {
		profile_bad_as(ctx, L, e, what, tloc, "is not valid",
		    PROFILE_ACCEPTS_TCP);
		return (-1);
	}
	eloc = profile_item_loc(L, e, tloc);
	bad = profile_fields(ctx, L, e, what, fields, 4, eloc);
	if (profile_tcp_host(ctx, L, e, k, eloc, "host", NET_RULE_HOST_ADDR,
	    &m->host) == -1)
		bad = 1;
	if (profile_tcp_port(ctx, L, e, k, eloc, "port", &m->port) == -1)
		bad = 1;
	if (profile_tcp_host(ctx, L, e, k, eloc, "name", 0, &m->name) == -1)
		bad = 1;
	m->guest_port = m->port;
	if (profile_tcp_port(ctx, L, e, k, eloc, "guest_port",
	    &m->guest_port) == -1)
		bad = 1;
	if (bad) {
		profile_tcp_map_free(m);
		return (-1);
	}
	return (0);
}

static int
profile_tcp_map_twice(struct profile_ctx *ctx, lua_State *L, int tloc, int k,
    const void *item, const void *prev, int from)
{
	const struct profile_tcp_map	*m = item, *o = prev;

	if (m->name == NULL || o->name == NULL ||
	    strcmp(o->name, m->name) != 0 || o->guest_port != m->guest_port)
		return (0);
	profile_error(ctx, profile_item_loc(L, -1, tloc), "network_tcp[%d]: "
	    "%s:%u in the guest is mapped twice (network_tcp[%d] too)", k,
	    m->name, m->guest_port, from);
	return (1);
}

static void
profile_convert_tcp(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	static const struct profile_items it = {
		.size = sizeof (struct profile_tcp_map),
		.max = PROFILE_TCP_MAX,
		.max_why = "network_tcp: more than %d maps (the guest's "
		    "network has addresses for %d)",
		.read = profile_tcp_map,
		.twice = profile_tcp_map_twice,
		.free = profile_tcp_map_free
	};

	profile_convert_items(ctx, L, idx, s, loc, &it);
}

/*
 * Does forward i of p->ports, compiled from network_rules[k], repeat one
 * before it? Reported, and 1.
 */
static int
profile_rule_port_twice(struct profile_ctx *ctx, int tloc, int k, size_t i)
{
	const struct net_port	*pt = &ctx->p->ports[i], *o;
	size_t				 j;

	for (j = 0; j < i; j++) {
		o = &ctx->p->ports[j];
		if (o->guest != pt->guest || o->host != 0 ||
		    strcmp(o->address, pt->address) != 0)
			continue;
		if (o->from_rule == 0)
			profile_error(ctx, tloc, "network_rules[%d]: forwards "
			    "guest port %u on %s, which ports forwards "
			    "already", k, pt->guest, pt->address);
		else
			profile_error(ctx, tloc, "network_rules[%d]: forwards "
			    "guest port %u on %s, which network_rules[%d] "
			    "forwards already", k, pt->guest, pt->address,
			    o->from_rule);
		return (1);
	}
	return (0);
}

/*
 * The seed's socket rules: kept as written (for show), and compiled into
 * network_allow and ports, which come before them in the schema.
 */
static void
profile_convert_rules(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct profile	 *p = ctx->p;
	struct buf	  w = { 0 };
	char		**v = NULL, what[64], *why;
	size_t		  nv = 0, i, len, np;
	int		  n, k, tloc, bad = 0;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		if (p->nports > PROFILE_LIST_MAX ||
		    p->nnetwork_allow > PROFILE_LIST_MAX) {
			profile_error(ctx, tloc, "network_rules: make more "
			    "than %d rules or port forwards in all",
			    PROFILE_LIST_MAX);
			bad = 1;
			break;
		}
		lua_rawgeti(L, idx, k);
		snprintf(what, sizeof what, "network_rules[%d]", k);
		np = p->nports;
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len)) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not valid",
			    PROFILE_ACCEPTS_SOCKET);
			bad = 1;
		} else if (net_rule_compile(lua_tostring(L, -1), k,
		    &p->network_allow, &p->nnetwork_allow, &p->ports,
		    &p->nports, &why) == -1) {
			buf_consume(&w, w.len);
			profile_show(&w, L, -1);
			profile_error(ctx, tloc, "%s: %s %s", what, w.data,
			    why);
			free(why);
			bad = 1;
		} else {
			v = xreallocarray(v, nv + 1, sizeof *v);
			v[nv++] = xstrdup(lua_tostring(L, -1));
		}
		lua_pop(L, 1);
		for (i = np; i < p->nports; i++) {
			if (profile_rule_port_twice(ctx, tloc, k, i)) {
				bad = 1;
				break;
			}
		}
	}
	buf_free(&w);
	if (!bad && (p->nports > PROFILE_LIST_MAX ||
	    p->nnetwork_allow > PROFILE_LIST_MAX)) {
		profile_error(ctx, tloc, "network_rules: make more than %d "
		    "rules or port forwards in all", PROFILE_LIST_MAX);
		bad = 1;
	}
	if (bad) {
		for (i = 0; i < nv; i++)
			free(v[i]);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, char **) = v;
	memcpy((char *)ctx->p + s->offset_n, &nv, sizeof nv);
}

static void
profile_convert_args(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct buf	  w = { 0 };
	char		**v = NULL, what[64], *why;
	size_t		  nv = 0, i, j, len;
	int		  n, k, tloc, bad = 0, refused = 0;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, idx, k);
		snprintf(what, sizeof what, "extra_args[%d]", k);
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len) || len == 0) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not valid",
			    "a non-empty string");
			bad = 1;
		} else {
			v = xreallocarray(v, nv + 1, sizeof *v);
			v[nv++] = xstrdup(lua_tostring(L, -1));
		}
		lua_pop(L, 1);
	}
	for (i = 0; bad == 0 && i < nv; ) {
		j = i;
		if (extra_args_next(v, nv, &i, &why) == 0)
			continue;
		buf_consume(&w, w.len);
		buf_printf(&w, "extra_args[%zu]: ", j + 1);
		for (; j < i; j++) {
			lua_pushstring(L, v[j]);
			if (w.data[w.len - 1] != ' ')
				buf_printf(&w, " ");
			profile_show(&w, L, -1);
			lua_pop(L, 1);
		}
		profile_error(ctx, tloc, "%s is refused: %s", w.data, why);
		free(why);
		refused = 1;
	}
	buf_free(&w);
	if (bad || refused) {
		for (i = 0; i < nv; i++)
			free(v[i]);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, char **) = v;
	memcpy((char *)ctx->p + s->offset_n, &nv, sizeof nv);
}

/*
 * ld_closure_extra: library names as DT_NEEDED or dlopen would give them
 * (no slash, no blank), or absolute host paths; whether they exist is for
 * the run to say (the profile may be checked on another host).
 */
static void
profile_convert_libs(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	char		**v = NULL, what[64];
	const char	 *str;
	size_t		  nv = 0, i, len;
	int		  n, k, tloc, bad = 0;

	if ((n = profile_list(ctx, L, idx, s, loc, &tloc)) == -1)
		return;
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, idx, k);
		snprintf(what, sizeof what, "%s[%d]", s->name, k);
		if (lua_type(L, -1) != LUA_TSTRING ||
		    !profile_string_ok(L, -1, &len) || len == 0) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not valid",
			    "a non-empty string");
			bad = 1;
		} else if (*(str = lua_tostring(L, -1)) != '/' &&
		    (strchr(str, '/') != NULL || strpbrk(str, " \t\n") !=
		    NULL || strcmp(str, ".") == 0 || strcmp(str, "..") == 0)) {
			profile_bad_as(ctx, L, -1, what, tloc, "is not a "
			    "library name", "a name as the loader takes it "
			    "(\"libbz2.so.1.0\") or an absolute path");
			bad = 1;
		} else {
			v = xreallocarray(v, nv + 1, sizeof *v);
			v[nv++] = xstrdup(str);
		}
		lua_pop(L, 1);
	}
	if (bad) {
		for (i = 0; i < nv; i++)
			free(v[i]);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, char **) = v;
	memcpy((char *)ctx->p + s->offset_n, &nv, sizeof nv);
}

/* Check the value at idx against setting s and store it in the profile. */
static void
profile_convert(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const struct profile_choice	*c;
	const char			*why;
	long long			 v;
	lua_Number			 f;
	int				 b;

	if (lua_isnil(L, idx))
		return;		/* stays NULL: the built-in choice */
	switch (s->type) {
	case PROFILE_T_BOOL:
		if (!lua_isboolean(L, idx)) {
			profile_bad(ctx, L, idx, s, loc, "is not valid");
			return;
		}
		*PROFILE_FIELD(ctx->p, s, int) = lua_toboolean(L, idx);
		return;
	case PROFILE_T_CHOICE:
		for (c = s->choices; c->name != NULL; c++) {
			b = strcmp(c->name, "true") == 0 ||
			    strcmp(c->name, "false") == 0;
			if (b && lua_isboolean(L, idx) &&
			    lua_toboolean(L, idx) == (c->name[0] == 't'))
				break;
			if (!b && lua_type(L, idx) == LUA_TSTRING &&
			    strcmp(lua_tostring(L, idx), c->name) == 0)
				break;
		}
		if (c->name == NULL) {
			profile_bad(ctx, L, idx, s, loc, "is not valid");
			return;
		}
		memcpy(PROFILE_FIELD(ctx->p, s, int), &c->value, sizeof (int));
		return;
	case PROFILE_T_SIZE:
		profile_convert_size(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_INT:
		if ((why = profile_whole(L, idx, s->min, s->max, &v)) != NULL) {
			profile_bad(ctx, L, idx, s, loc, why);
			return;
		}
		*PROFILE_FIELD(ctx->p, s, int) = (int)v;
		return;
	case PROFILE_T_SECONDS:
		if (lua_type(L, idx) != LUA_TNUMBER) {
			profile_bad(ctx, L, idx, s, loc, "is not valid");
			return;
		}
		f = lua_tonumber(L, idx);
		if (isnan(f) || f < s->min || f > s->max) {
			profile_bad(ctx, L, idx, s, loc, "is out of range");
			return;
		}
		*PROFILE_FIELD(ctx->p, s, double) = (double)f;
		return;
	case PROFILE_T_PATH:
	case PROFILE_T_GUEST_PATH:
		profile_convert_path(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_ENV:
		profile_convert_env(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_IMAGE:
		profile_convert_image(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_URL:
		profile_convert_url(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_DIR:
		profile_convert_dir(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_SHARES:
		profile_convert_shares(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_ALLOW:
		profile_convert_allow(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_PORTS:
		profile_convert_ports(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_TCP:
		profile_convert_tcp(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_RULES:
		profile_convert_rules(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_ARGS:
		profile_convert_args(ctx, L, idx, s, loc);
		return;
	case PROFILE_T_LIBS:
		profile_convert_libs(ctx, L, idx, s, loc);
		return;
	}
}

/* -------------------------------------------------------------------------
 * Defaults, the command line, and the profile as a whole.
 */

static int
profile_setting_index(const char *name)
{
	const struct profile_setting	*s = profile_setting_find(name);

	return (s == NULL ? -1 : (int)(s - profile_schema));
}

/* Push the schema's default of s, from its Lua expression. */
static void
profile_push_default(lua_State *L, const struct profile_setting *s)
{
	const char	*d = s->def;
	size_t		 len;

	if (d == NULL) {
		lua_pushnil(L);
		return;
	}
	/* Literals need no compiler. */
	len = strlen(d);
	if (strcmp(d, "{}") == 0) {
		lua_newtable(L);
		return;
	}
	if (strcmp(d, "true") == 0 || strcmp(d, "false") == 0) {
		lua_pushboolean(L, d[0] == 't');
		return;
	}
	if (lua_stringtonumber(L, d) != 0)
		return;
	if (len >= 2 && d[0] == '"' && d[len - 1] == '"' &&
	    strcspn(d + 1, "\"\\") == len - 2) {
		lua_pushlstring(L, d + 1, len - 2);
		return;
	}
	lua_pushfstring(L, "return %s", d);
	if (luaL_loadbufferx(L, lua_tostring(L, -1), lua_rawlen(L, -1),
	    "=schema", "t") != LUA_OK)
		lua_error(L);
	lua_remove(L, -2);
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_defenv);
	lua_setupvalue(L, -2, 1);
	lua_call(L, 0, 1);
}

/*
 * Push the value of --set NAME=VALUE: true, false, nil, a number, a Lua
 * table or string literal, else VALUE as a string (for a list setting, a
 * list of it). Returns -1 if it is not valid Lua (reported).
 */
static int
profile_set_value(struct profile_ctx *ctx, lua_State *L, int fi,
    const struct profile_setting *s, const char *value)
{
	char	*code;
	int	 status;

	if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0) {
		lua_pushboolean(L, value[0] == 't');
		return (0);
	}
	if (strcmp(value, "nil") == 0) {
		lua_pushnil(L);
		return (0);
	}
	if (*value != '\0' && lua_stringtonumber(L, value) != 0)
		return (0);
	if (*value == '{' || *value == '"' || *value == '\'' ||
	    strncmp(value, "[[", 2) == 0 || strncmp(value, "[=", 2) == 0) {
		/* A literal: no globals, and the profile's limits. */
		xasprintf(&code, "return %s", value);
		status = luaL_loadbufferx(L, code, strlen(code),
		    ctx->files[fi].chunkname, "t");
		free(code);
		if (status == LUA_OK) {
			lua_newtable(L);
			lua_setupvalue(L, -2, 1);
			status = lua_pcall(L, 0, 1, 0);
			ctx->in_lib = 0;
		}
		if (status != LUA_OK) {
			if (ctx->timed_out || status == LUA_ERRMEM)
				lua_error(L);
			if (lua_tostring(L, -1) == NULL ||
			    !profile_lua_message(ctx, lua_tostring(L, -1)))
				profile_error(ctx, PROFILE_LOC(fi, 0), "not "
				    "a value");
			lua_pop(L, 1);
			return (-1);
		}
		return (0);
	}
	lua_pushstring(L, value);
	if (s->type == PROFILE_T_ENV || s->type == PROFILE_T_ALLOW ||
	    s->type == PROFILE_T_RULES || s->type == PROFILE_T_ARGS ||
	    s->type == PROFILE_T_LIBS) {
		lua_createtable(L, 1, 0);
		lua_insert(L, -2);
		lua_rawseti(L, -2, 1);
	}
	return (0);
}

/* Apply each --set NAME=VALUE to the settings table at t. */
static void
profile_apply_sets(struct profile_ctx *ctx, lua_State *L, int t)
{
	const struct profile_setting	*s;
	struct buf			 b = { 0 };
	const char			*arg, *eq, *hint;
	char				*name;
	size_t				 i, j;
	int				 fi, loc;

	for (i = 0; i < ctx->nsets; i++) {
		arg = ctx->sets[i];
		xasprintf(&name, "--set %s", arg);
		fi = profile_file_add(ctx, PROFILE_FILE_CMDLINE, name, name);
		free(name);
		if (fi == -1) {
			profile_error(ctx, 0, "more than %d --set",
			    PROFILE_SETS_MAX);
			return;
		}
		if (profile_file_short_src(L, &ctx->files[fi]) == -1)
			lua_error(L);
		loc = PROFILE_LOC(fi, 0);
		if ((eq = strchr(arg, '=')) == NULL || eq == arg) {
			profile_error(ctx, loc, "expected NAME=VALUE");
			continue;
		}
		name = xstrndup(arg, eq - arg);
		if ((s = profile_setting_find(name)) == NULL) {
			if ((hint = profile_suggest(name)) != NULL)
				profile_error(ctx, loc, "unknown setting "
				    "\"%s\" (did you mean \"%s\"?)", name,
				    hint);
			else {
				buf_consume(&b, b.len);
				for (j = 0; j < PROFILE_NSETTINGS; j++)
					buf_printf(&b, "%s%s", j == 0 ? "" :
					    ", ", profile_schema[j].name);
				profile_error(ctx, loc, "unknown setting "
				    "\"%s\"; the settings are %s", name,
				    b.data);
			}
			free(name);
			continue;
		}
		free(name);
		if (profile_set_value(ctx, L, fi, s, eq + 1) == -1)
			continue;
		lua_pushstring(L, s->name);
		lua_pushvalue(L, -2);
		lua_rawset(L, t);
		profile_shadow_set(L, t, s->name, loc);
		lua_pop(L, 1);
		ctx->set_from[s - profile_schema] = PROFILE_FROM_CMDLINE;
		ctx->set_loc[s - profile_schema] = loc;
	}
	buf_free(&b);
}

/* The name of value in a table of choices, aliases aside. */
static const char *
profile_choice_name(const struct profile_choice *c, int value,
    const char *otherwise)
{
	for (; c->name != NULL; c++) {
		if (!c->alias && c->value == value)
			return (c->name);
	}
	return (otherwise);
}

/* What network_rules compiled into, against the network mode. */
static void
profile_cross_check_rules(struct profile_ctx *ctx, int loc)
{
	const struct profile			*p = ctx->p;
	const struct net_rule		*r;
	const char				*mode;
	size_t					 i;
	int					 out = 0, deny = 0, in = 0;

	mode = net_mode_name(p->network);
	for (i = 0; i < p->nnetwork_allow; i++) {
		r = &p->network_allow[i];
		if (r->from_rule != 0 && !r->deny && out == 0)
			out = r->from_rule;
		if (r->from_rule != 0 && r->deny && deny == 0)
			deny = r->from_rule;
	}
	for (i = 0; i < p->nports && in == 0; i++)
		in = p->ports[i].from_rule;
	if (out != 0 && p->network != NET_MODE_ALLOWLIST)
		profile_error(ctx, loc, "network_rules[%d]: ALLOW ... OUT "
		    "needs network = \"allowlist\", and network is \"%s\"; "
		    "write network = \"allowlist\" for qsup to let the rules "
		    "through", out, mode);
	if (deny != 0 && p->network == NET_MODE_OPEN)
		profile_error(ctx, loc, "network_rules[%d]: DENY ... OUT is "
		    "enforced with network = \"allowlist\" only, and "
		    "network = \"open\" lets everything through", deny);
	if (in != 0 && p->network == NET_MODE_NONE)
		profile_error(ctx, loc, "network_rules[%d]: ALLOW ... IN "
		    "forwards ports, which needs a network card, and network "
		    "is \"none\"; write network = \"restricted\" (the guest "
		    "still reaches nothing)", in);
}

/*
 * "passthrough" gives the guest's owners and modes to the host's files: never
 * with a read-write share (core/share.c checks --share ones at start).
 */
static void
profile_cross_check_shares(struct profile_ctx *ctx, const int *bad)
{
	const struct profile	*p = ctx->p;
	int			 sm =
	    profile_setting_index("virtfs_security_model");
	int			 shares = profile_setting_index("shares");
	size_t			 i;

	if (bad[sm] || bad[shares] ||
	    p->virtfs_security_model != PROFILE_SM_PASSTHROUGH)
		return;
	for (i = 0; i < p->nshares && !p->shares[i].rw; i++)
		;
	if (i == p->nshares)
		return;
	profile_error(ctx, ctx->set_loc[sm], "virtfs_security_model: "
	    "\"passthrough\" would let the guest chown files and set setuid "
	    "bits on the host through the read-write share of %s; write "
	    "\"none\" (the default) or \"mapped-xattr\"", p->shares[i].host);
}

/* Settings that only make sense together. */
static void
profile_cross_check(struct profile_ctx *ctx, const int *bad)
{
	const struct profile	*p = ctx->p;
	int			 net = profile_setting_index("network");
	int			 allow = profile_setting_index("network_allow");
	int			 ack =
	    profile_setting_index("network_open_ack");
	int			 ports = profile_setting_index("ports");
	int			 tcp = profile_setting_index("network_tcp");
	int			 rules = profile_setting_index("network_rules");
	int			 fw = profile_setting_index("guest_firewall");
	size_t			 i, nallow = 0, nwritten = 0, nports = 0;

	profile_cross_check_shares(ctx, bad);
	if (bad[net] || bad[allow] || bad[ack] || bad[ports] || bad[tcp] ||
	    bad[rules] || bad[fw])
		return;
	for (i = 0; i < p->nnetwork_allow; i++) {
		nallow += !p->network_allow[i].deny;
		nwritten += p->network_allow[i].from_rule == 0;
	}
	for (i = 0; i < p->nports; i++)
		nports += p->ports[i].from_rule == 0;
	if (p->network == NET_MODE_OPEN && !p->network_open_ack)
		profile_error(ctx, ctx->set_loc[net], "network: \"open\" lets "
		    "the guest reach the internet and every service listening "
		    "on the host's 127.0.0.1 (as 10.0.2.2); to accept that, "
		    "also write network_open_ack = true, or list what it needs "
		    "with network = \"allowlist\" and network_allow");
	if (p->network == NET_MODE_ALLOWLIST && nallow == 0)
		profile_error(ctx, ctx->set_loc[net], "network: \"allowlist\" "
		    "with an empty network_allow lets nothing through; list "
		    "what the guest may reach in network_allow, or write "
		    "network = \"restricted\"");
	if (p->network != NET_MODE_ALLOWLIST && nwritten > 0)
		profile_error(ctx, ctx->set_loc[allow], "network_allow: has "
		    "no effect unless network = \"allowlist\"");
	if (p->network == NET_MODE_NONE && nports > 0)
		profile_error(ctx, ctx->set_loc[ports], "ports: forwarding "
		    "needs a network card, and network is \"none\"; write "
		    "network = \"restricted\" (the guest still reaches "
		    "nothing)");
	if ((p->network == NET_MODE_NONE ||
	    p->network == NET_MODE_OPEN) && p->nnetwork_tcp > 0)
		profile_error(ctx, ctx->set_loc[tcp], "network_tcp: maps need "
		    "network = \"restricted\" or \"allowlist\", and network "
		    "is \"%s\"%s", net_mode_name(p->network),
		    p->network == NET_MODE_NONE ? " (no network card)" :
		    " (the guest reaches everything without them)");
	if (p->guest_firewall && (p->network == NET_MODE_NONE ||
	    p->network == NET_MODE_OPEN))
		profile_error(ctx, ctx->set_loc[fw], "guest_firewall: needs "
		    "network = \"restricted\" or \"allowlist\", and network "
		    "is \"%s\"%s", net_mode_name(p->network),
		    p->network == NET_MODE_NONE ? " (no network card to "
		    "guard)" : " (it would let everything through)");
	profile_cross_check_rules(ctx, ctx->set_loc[rules]);
}

/*
 * Check the settings and fill the profile (under lua_pcall). Argument 1 is
 * what the chunk returned.
 */
static int
profile_apply_cb(lua_State *L)
{
	struct profile_ctx		*ctx = profile_ctx(L);
	const struct profile_setting	*s;
	struct buf			 b = { 0 };
	const char			*key, *hint;
	size_t				 i, nerrs;
	int				 t, tloc, loc, bad[PROFILE_NSETTINGS];

	lua_settop(L, 1);
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox) ==
	    LUA_TTABLE) {
		if (!lua_isnil(L, 1) && !lua_rawequal(L, 1, 2)) {
			profile_error(ctx, ctx->loc, "the profile both calls "
			    "sandbox{} and returns a value; do one or the "
			    "other");
			return (0);
		}
	} else {
		lua_pop(L, 1);
		if (lua_isnil(L, 1)) {
			profile_error(ctx, 0, "the profile gives no settings; "
			    "end it with return { ... } or call "
			    "sandbox { ... }");
			return (0);
		}
		if (!lua_istable(L, 1)) {
			profile_error(ctx, ctx->loc, "the profile returns a "
			    "%s, not a table of settings", luaL_typename(L, 1));
			return (0);
		}
		lua_pushvalue(L, 1);
	}
	t = lua_gettop(L);
	profile_track_table(L, t, ctx->loc);	/* set on the last line */
	if ((tloc = profile_table_loc(L, t)) == 0)
		tloc = ctx->loc;
	profile_apply_sets(ctx, L, t);

	lua_pushnil(L);
	while (lua_next(L, t) != 0) {
		if (lua_type(L, -2) != LUA_TSTRING) {
			buf_consume(&b, b.len);
			profile_show(&b, L, -1);
			profile_error(ctx, tloc, "%s has no name; settings "
			    "are written name = value", b.data);
		} else if (profile_setting_find(key = lua_tostring(L, -2)) ==
		    NULL) {
			if ((loc = profile_key_loc(L, t, key)) == 0)
				loc = tloc;
			buf_consume(&b, b.len);
			lua_pushvalue(L, -2);
			profile_show(&b, L, -1);
			lua_pop(L, 1);
			if ((hint = profile_suggest(key)) != NULL) {
				profile_error(ctx, loc, "unknown setting %s "
				    "(did you mean \"%s\"?)", b.data, hint);
			} else {
				buf_printf(&b, "; the settings are");
				for (i = 0; i < PROFILE_NSETTINGS; i++) {
					buf_printf(&b, "%s %s", i == 0 ? "" :
					    ",", profile_schema[i].name);
				}
				profile_error(ctx, loc, "unknown setting %s",
				    b.data);
			}
		}
		lua_pop(L, 1);
	}
	buf_free(&b);

	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		lua_pushstring(L, s->name);
		if (lua_rawget(L, t) == LUA_TNIL &&
		    ctx->set_from[i] != PROFILE_FROM_CMDLINE) {
			lua_pop(L, 1);
			profile_push_default(L, s);
			ctx->set_from[i] = PROFILE_FROM_DEFAULT;
			loc = 0;
		} else if (ctx->set_from[i] == PROFILE_FROM_CMDLINE) {
			if (lua_isnil(L, -1)) {
				lua_pop(L, 1);
				profile_push_default(L, s);
			}
			loc = ctx->set_loc[i];
		} else {
			ctx->set_from[i] = PROFILE_FROM_PROFILE;
			if ((loc = profile_key_loc(L, t, s->name)) == 0)
				loc = tloc;
		}
		ctx->set_loc[i] = loc;
		nerrs = ctx->nerrs;
		profile_convert(ctx, L, lua_gettop(L), s, loc);
		bad[i] = ctx->nerrs != nerrs;
		lua_pop(L, 1);
	}
	profile_cross_check(ctx, bad);
	return (0);
}

/* Remember where each setting came from, for profile_print(). */
static void
profile_set_origins(struct profile_ctx *ctx)
{
	struct profile_origin	*o;
	size_t			 i;

	o = xcalloc(PROFILE_NSETTINGS, sizeof *o);
	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		o[i].from = ctx->set_from[i];
		if (o[i].from != PROFILE_FROM_DEFAULT)
			o[i].at = profile_loc_text(ctx, ctx->set_loc[i]);
	}
	ctx->p->origins = o;
}

/* $XDG_CONFIG_HOME/qsup/profiles, or ~/.config/qsup/profiles; or NULL. */
static char *
profile_user_dir(void)
{
	const char	*base, *home;
	char		*dir;

	if ((base = getenv("XDG_CONFIG_HOME")) != NULL && *base == '/')
		xasprintf(&dir, "%s/qsup/profiles", base);
	else if ((home = getenv("HOME")) != NULL && *home == '/')
		xasprintf(&dir, "%s/.config/qsup/profiles", home);
	else
		dir = NULL;
	return (dir);
}

static int
profile_is_file(const char *path)
{
	struct stat	sb;

	return (stat(path, &sb) == 0 && S_ISREG(sb.st_mode));
}

/*
 * What --profile NAME means: a path if it has a '/'; else ./NAME.lua,
 * $XDG_CONFIG_HOME/qsup/profiles/NAME.lua, then the built-in NAME
 * ("builtin:NAME" says so outright). Returns the path or "builtin:NAME".
 */
char *
profile_find(const char *name, char **cause)
{
	struct buf	 b = { 0 };
	char		*path, *dir, *bare;
	const char	*ext;
	size_t		 len = strlen(name);

	*cause = NULL;
	if (strchr(name, '/') != NULL && strncmp(name, "builtin:", 8) != 0)
		return (xstrdup(name));
	ext = len > 4 && strcmp(name + len - 4, ".lua") == 0 ? "" : ".lua";
	bare = xstrndup(name, len - (*ext == '\0' ? 4 : 0));
	if (strncmp(name, "builtin:", 8) == 0) {
		if (profile_builtin(name + 8) != NULL) {
			xasprintf(&path, "builtin:%s", bare + 8);
			free(bare);
			return (path);
		}
		profile_builtin_names(&b);
		xasprintf(cause, "%s: no such built-in profile (they are %s)",
		    name, b.data);
		goto fail;
	}
	if (len == 0 || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		xasprintf(cause, "\"%s\" does not name a profile", name);
		goto fail;
	}
	xasprintf(&path, "%s%s", name, ext);
	if (profile_is_file(path))
		goto found;
	free(path);
	if ((dir = profile_user_dir()) != NULL) {
		xasprintf(&path, "%s/%s%s", dir, name, ext);
		if (profile_is_file(path)) {
			free(dir);
			goto found;
		}
		free(path);
	}
	if (profile_builtin(name) != NULL) {
		free(dir);
		xasprintf(&path, "builtin:%s", bare);
		goto found;
	}
	profile_builtin_names(&b);
	xasprintf(cause, "profile %s not found: there is no ./%s%s%s%s%s, "
	    "and the built-in profiles are %s", name, name, ext,
	    dir != NULL ? " nor " : "", dir != NULL ? dir : "",
	    dir != NULL ? "/..." : "", b.data);
	free(dir);
fail:
	buf_free(&b);
	free(bare);
	return (NULL);
found:
	free(bare);
	return (path);
}

/*
 * lua_pcall with the message handler at 1, unless the alarm abandons the
 * state stuck in a library call (profile_alarm_cb): then LUA_ERRRUN and
 * ctx->abandoned, and the state is not to be touched again.
 */
static int
profile_pcall(struct profile_ctx *ctx, int nargs, int nresults)
{
	int	status;

	if (sigsetjmp(ctx->abandon, 1) != 0) {
		ctx->in_lib = 0;
		ctx->abandoned = 1;
		return (LUA_ERRRUN);
	}
	status = lua_pcall(ctx->L, nargs, nresults, 1);
	ctx->in_lib = 0;
	return (status);
}

/* Run a profile's text and check it; the common part of the loaders. */
static int
profile_run(struct profile *p, enum profile_file_kind kind, const char *name,
    const char *text, size_t len, char *const *sets, size_t nsets,
    char **cause)
{
	struct profile_ctx	 ctx;
	struct buf		 b = { 0 };
	lua_State		*L = NULL;
	char			*key, *dir;
	size_t			 i;
	int			 status, rc = -1;
	double			 t0 = util_now();

	memset(p, 0, sizeof *p);
	memset(&ctx, 0, sizeof ctx);
	*cause = NULL;
	ctx.p = p;
	ctx.path = name;
	ctx.sets = sets;
	ctx.nsets = nsets;
	p->path = xstrdup(name);
	if (kind == PROFILE_FILE_DISK) {
		if ((key = realpath(name, NULL)) == NULL)
			key = xstrdup(name);
		dir = profile_dirname(name);
		if ((ctx.root = realpath(dir == NULL ? "." : dir, NULL)) ==
		    NULL)
			ctx.root = xstrdup(dir == NULL ? "." : dir);
		free(dir);
	} else
		key = xstrdup(name);
	profile_file_add(&ctx, kind, name, key);
	free(key);
	ctx.stack[ctx.depth++] = 0;
	if (nsets > PROFILE_SETS_MAX) {
		profile_error(&ctx, 0, "more than %d --set", PROFILE_SETS_MAX);
		goto out;
	}

	if ((L = lua_newstate(profile_alloc, &ctx)) == NULL) {
		profile_error(&ctx, 0, "cannot create a Lua state");
		goto out;
	}
	ctx.L = L;
	lua_pushcfunction(L, profile_msgh_cb);		/* index 1 */
	lua_pushcfunction(L, profile_setup_cb);
	if ((status = lua_pcall(L, 0, 0, 1)) != LUA_OK) {
		profile_lua_error(&ctx, L, status);
		goto out;
	}

	if ((status = luaL_loadbufferx(L, text, len, ctx.files[0].chunkname,
	    "t")) != LUA_OK) {
		profile_lua_error(&ctx, L, status);
		goto out;
	}
	ctx.deadline = t0 + PROFILE_TIME_LIMIT;
	profile_watch(&ctx);
	lua_sethook(L, profile_hook_cb, LUA_MASKCOUNT|LUA_MASKLINE|LUA_MASKRET,
	    PROFILE_HOOK_COUNT);
	status = profile_pcall(&ctx, 0, 1);
	if (status == LUA_OK && !ctx.timed_out) {
		/* --set values run under the same limits. */
		lua_pushcfunction(L, profile_apply_cb);
		lua_insert(L, -2);
		status = profile_pcall(&ctx, 1, 0);
	}
	profile_unwatch();
	if (ctx.abandoned) {
		profile_error(&ctx, ctx.loc, "profile ran for more than %d s, "
		    "stuck in a library function (a string pattern that "
		    "backtracks?)", PROFILE_TIME_LIMIT);
		L = NULL;
		goto out;
	}
	lua_sethook(L, NULL, 0, 0);
	if (status != LUA_OK || ctx.timed_out) {
		profile_lua_error(&ctx, L, status);
		goto out;
	}
	if (ctx.nerrs == 0) {
		profile_set_origins(&ctx);
		rc = 0;
	}

out:
	log_debug("%s: loaded in %.2f ms, about %lu instructions, %zu KiB at "
	    "most", name, (util_now() - t0) * 1000, ctx.insns,
	    ctx.mem_peak >> 10);
	if (L != NULL)
		lua_close(L);
	profile_blocks_free(&ctx);
	if (ctx.nerrs > 0) {
		qsort(ctx.errs, ctx.nerrs, sizeof *ctx.errs, profile_error_cmp);
		for (i = 0; i < ctx.nerrs; i++) {
			buf_printf(&b, "%s%s", i == 0 ? "" : "\n",
			    ctx.errs[i].text);
			free(ctx.errs[i].text);
		}
		*cause = b.data;
	}
	if (rc != 0) {
		profile_free(p);
		memset(p, 0, sizeof *p);
	}
	profile_files_free(&ctx);
	free(ctx.errs);
	free(ctx.traceback);
	free(ctx.root);
	return (rc);
}

/*
 * Load, run and check a profile with these --set NAME=VALUE on top; file
 * is a path or a name (profile_find), NULL for the built-in default.
 */
int
profile_load_set(struct profile *p, const char *file, char *const *sets,
    size_t nsets, char **cause)
{
	char	*path, *src;
	size_t	 len;
	int	 rc;

	memset(p, 0, sizeof *p);
	*cause = NULL;
	if ((path = profile_find(file == NULL ? PROFILE_BUILTIN : file,
	    cause)) == NULL)
		return (-1);
	if (strncmp(path, "builtin:", 8) == 0) {
		src = (char *)(uintptr_t)profile_builtin(path + 8);
		rc = profile_run(p, PROFILE_FILE_BUILTIN, path, src,
		    strlen(src), sets, nsets, cause);
		free(path);
		return (rc);
	}
	if ((src = profile_read_file(path, &len, cause)) == NULL) {
		free(path);
		return (-1);
	}
	rc = profile_run(p, PROFILE_FILE_DISK, path, src, len, sets, nsets,
	    cause);
	free(src);
	free(path);
	return (rc);
}

/* Load, run and check a profile; NULL is the built-in default. */
int
profile_load(struct profile *p, const char *file, char **cause)
{
	return (profile_load_set(p, file, NULL, 0, cause));
}

/* A profile from memory, as if read from the file name (for fuzzing). */
int
profile_load_buffer(struct profile *p, const char *name, const char *text,
    size_t len, char *const *sets, size_t nsets, char **cause)
{
	return (profile_run(p, PROFILE_FILE_DISK, name, text, len, sets, nsets,
	    cause));
}

void
profile_free(struct profile *p)
{
	size_t	i;

	free(p->path);
	p->path = NULL;
	free(p->kernel);
	p->kernel = NULL;
	free(p->initramfs);
	p->initramfs = NULL;
	free(p->image);
	p->image = NULL;
	free(p->image_base_url);
	p->image_base_url = NULL;
	free(p->images_dir);
	p->images_dir = NULL;
	for (i = 0; i < p->nenv; i++)
		free(p->env[i]);
	free(p->env);
	p->env = NULL;
	p->nenv = 0;
	free(p->cwd);
	p->cwd = NULL;
	for (i = 0; i < p->nshares; i++)
		profile_share_free(&p->shares[i]);
	free(p->shares);
	p->shares = NULL;
	p->nshares = 0;
	for (i = 0; i < p->nnetwork_allow; i++)
		net_rule_free(&p->network_allow[i]);
	free(p->network_allow);
	p->network_allow = NULL;
	p->nnetwork_allow = 0;
	for (i = 0; i < p->nports; i++)
		free(p->ports[i].address);
	free(p->ports);
	p->ports = NULL;
	p->nports = 0;
	for (i = 0; i < p->nnetwork_tcp; i++)
		profile_tcp_map_free(&p->network_tcp[i]);
	free(p->network_tcp);
	p->network_tcp = NULL;
	p->nnetwork_tcp = 0;
	for (i = 0; i < p->nnetwork_rules; i++)
		free(p->network_rules[i]);
	free(p->network_rules);
	p->network_rules = NULL;
	p->nnetwork_rules = 0;
	for (i = 0; i < p->nextra_args; i++)
		free(p->extra_args[i]);
	free(p->extra_args);
	p->extra_args = NULL;
	p->nextra_args = 0;
	for (i = 0; i < p->nld_closure_extra; i++)
		free(p->ld_closure_extra[i]);
	free(p->ld_closure_extra);
	p->ld_closure_extra = NULL;
	p->nld_closure_extra = 0;
	if (p->origins != NULL) {
		for (i = 0; i < PROFILE_NSETTINGS; i++)
			free(p->origins[i].at);
		free(p->origins);
		p->origins = NULL;
	}
}

/* The name QEMU's -virtfs security_model= wants. */
const char *
profile_sm_name(enum profile_sm sm)
{
	return (profile_choice_name(profile_sm_choices, sm, "none"));
}

/* -------------------------------------------------------------------------
 * Showing a profile: as Lua that loads back to the same settings, or JSON.
 */

static void
profile_put_string(struct buf *b, const char *s, int json)
{
	const unsigned char	*u;

	if (s == NULL) {
		buf_printf(b, json ? "null" : "nil");
		return;
	}
	if (json) {
		buf_json_string(b, s);
		return;
	}
	buf_add(b, "\"", 1);
	for (u = (const unsigned char *)s; *u != '\0'; u++) {
		if (*u == '"' || *u == '\\')
			buf_printf(b, "\\%c", *u);
		else if (*u == '\n')
			buf_printf(b, "\\n");
		else if (*u < 0x20 || *u == 0x7f)
			buf_printf(b, "\\%03u", *u);
		else
			buf_add(b, u, 1);
	}
	buf_add(b, "\"", 1);
}

static void
profile_put_list(struct buf *b, char *const *v, size_t n, int json)
{
	size_t	i;

	if (n == 0) {
		buf_printf(b, json ? "[]" : "{}");
		return;
	}
	buf_printf(b, json ? "[" : "{ ");
	for (i = 0; i < n; i++) {
		if (i > 0)
			buf_printf(b, ", ");
		profile_put_string(b, v[i], json);
	}
	buf_printf(b, json ? "]" : " }");
}

/* "key = " in Lua, "\"key\":" in JSON. */
static void
profile_put_key(struct buf *b, const char *key, int json)
{
	if (json)
		buf_printf(b, "\"%s\":", key);
	else
		buf_printf(b, "%s = ", key);
}

static void
profile_put_shares(struct buf *b, const struct profile *p, int json)
{
	const struct profile_share	*sh;
	size_t				 i;

	if (p->nshares == 0) {
		buf_printf(b, json ? "[]" : "{}");
		return;
	}
	buf_printf(b, json ? "[" : "{ ");
	for (i = 0; i < p->nshares; i++) {
		sh = &p->shares[i];
		buf_printf(b, "%s%s", i == 0 ? "" : ", ", json ? "{" : "{ ");
		profile_put_key(b, "host", json);
		profile_put_string(b, sh->host, json);
		buf_printf(b, ", ");
		profile_put_key(b, "guest", json);
		profile_put_string(b, sh->guest, json);
		buf_printf(b, ", ");
		profile_put_key(b, "mode", json);
		profile_put_string(b, sh->rw ? "rw" : "ro", json);
		buf_printf(b, ", ");
		profile_put_key(b, "ignore", json);
		profile_put_list(b, sh->ignore, sh->nignore, json);
		buf_printf(b, ", ");
		profile_put_key(b, "exec", json);
		buf_printf(b, "%s", sh->exec ? "true" : "false");
		buf_printf(b, json ? "}" : " }");
	}
	buf_printf(b, json ? "]" : " }");
}

static void
profile_put_port(struct buf *b, const struct net_port *pt, int json)
{
	buf_printf(b, json ? "{" : "{ ");
	profile_put_key(b, "guest", json);
	buf_printf(b, "%u, ", pt->guest);
	profile_put_key(b, "host", json);
	buf_printf(b, "%u, ", pt->host);
	profile_put_key(b, "address", json);
	profile_put_string(b, pt->address, json);
	buf_printf(b, json ? "}" : " }");
}

/* The ports written as such; network_rules' are shown apart. */
static void
profile_put_ports(struct buf *b, const struct profile *p, int json)
{
	size_t	i, n = 0;

	for (i = 0; i < p->nports; i++) {
		if (p->ports[i].from_rule != 0)
			continue;
		buf_printf(b, "%s", n++ == 0 ? (json ? "[" : "{ ") : ", ");
		profile_put_port(b, &p->ports[i], json);
	}
	if (n == 0)
		buf_printf(b, json ? "[]" : "{}");
	else
		buf_printf(b, json ? "]" : " }");
}

static void
profile_put_tcp(struct buf *b, const struct profile *p, int json)
{
	const struct profile_tcp_map	*m;
	size_t				 i;

	if (p->nnetwork_tcp == 0) {
		buf_printf(b, json ? "[]" : "{}");
		return;
	}
	buf_printf(b, json ? "[" : "{ ");
	for (i = 0; i < p->nnetwork_tcp; i++) {
		m = &p->network_tcp[i];
		buf_printf(b, "%s%s", i == 0 ? "" : ", ", json ? "{" : "{ ");
		profile_put_key(b, "host", json);
		profile_put_string(b, m->host, json);
		buf_printf(b, ", ");
		profile_put_key(b, "port", json);
		buf_printf(b, "%u, ", m->port);
		if (m->name != NULL || json) {
			profile_put_key(b, "name", json);
			profile_put_string(b, m->name, json);
			buf_printf(b, ", ");
		}
		profile_put_key(b, "guest_port", json);
		buf_printf(b, "%u", m->guest_port);
		buf_printf(b, json ? "}" : " }");
	}
	buf_printf(b, json ? "]" : " }");
}

/*
 * After a setting's line, Lua comments for what network_rules added to it
 * (network_allow or ports), each with its rule and where that was written.
 */
static void
profile_put_compiled(struct buf *b, const struct profile *p,
    const struct profile_setting *s, const char *at)
{
	const struct net_rule	*r;
	size_t				 i, start;
	int				 from;

	for (i = 0; ; i++) {
		if (s->type == PROFILE_T_ALLOW && i < p->nnetwork_allow)
			from = p->network_allow[i].from_rule;
		else if (s->type == PROFILE_T_PORTS && i < p->nports)
			from = p->ports[i].from_rule;
		else
			break;
		if (from == 0)
			continue;
		start = b->len;
		if (s->type == PROFILE_T_ALLOW) {
			r = &p->network_allow[i];
			buf_printf(b, "\t-- %s ", r->deny ? "but not" : "and");
			profile_put_string(b, r->text, 0);
		} else {
			buf_printf(b, "\t-- and ");
			profile_put_port(b, &p->ports[i], 0);
		}
		buf_printf(b, ",");
		do
			buf_add(b, " ", 1);
		while (b->len - start < 44);
		buf_printf(b, "-- network_rules[%d]%s%s\n", from,
		    at != NULL ? ", " : "", at != NULL ? at : "");
	}
}

/* In JSON, network_rules' "compiled": each allow, deny and forward. */
static void
profile_put_compiled_json(struct buf *b, const struct profile *p)
{
	const struct net_rule	*r;
	size_t				 i, n = 0;

	buf_printf(b, ",\"compiled\":[");
	for (i = 0; i < p->nnetwork_allow; i++) {
		r = &p->network_allow[i];
		if (r->from_rule == 0)
			continue;
		buf_printf(b, "%s{\"rule\":%d,\"%s\":", n++ == 0 ? "" : ",",
		    r->from_rule, r->deny ? "deny" : "allow");
		profile_put_string(b, r->text, 1);
		buf_printf(b, "}");
	}
	for (i = 0; i < p->nports; i++) {
		if (p->ports[i].from_rule == 0)
			continue;
		buf_printf(b, "%s{\"rule\":%d,\"forward\":",
		    n++ == 0 ? "" : ",", p->ports[i].from_rule);
		profile_put_port(b, &p->ports[i], 1);
		buf_printf(b, "}");
	}
	buf_printf(b, "]");
}

/* The value of setting s in p. */
static void
profile_put(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	const struct profile_choice	*c;
	const char			*name = "?";
	char				**rules;
	uint64_t			 mib;
	size_t				 i, n;
	int				 v;

	switch (s->type) {
	case PROFILE_T_BOOL:
		v = *PROFILE_CFIELD(p, s, int);
		buf_printf(b, "%s", v ? "true" : "false");
		break;
	case PROFILE_T_CHOICE:
		memcpy(&v, (const char *)p + s->offset, sizeof v);
		for (c = s->choices; c->name != NULL; c++) {
			if (!c->alias && c->value == v) {
				name = c->name;
				break;
			}
		}
		if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0)
			buf_printf(b, "%s", name);
		else
			profile_put_string(b, name, json);
		break;
	case PROFILE_T_SIZE:
		mib = *PROFILE_CFIELD(p, s, uint64_t);
		if (json)
			buf_printf(b, "%llu", (unsigned long long)mib);
		else {
			buf_add(b, "\"", 1);
			profile_show_mib(b, mib);
			buf_add(b, "\"", 1);
		}
		break;
	case PROFILE_T_INT:
		buf_printf(b, "%d", *PROFILE_CFIELD(p, s, int));
		break;
	case PROFILE_T_SECONDS:
		buf_printf(b, "%.17g", *PROFILE_CFIELD(p, s, double));
		break;
	case PROFILE_T_PATH:
	case PROFILE_T_GUEST_PATH:
	case PROFILE_T_IMAGE:
	case PROFILE_T_URL:
	case PROFILE_T_DIR:
		profile_put_string(b, *PROFILE_CFIELD(p, s, profile_str), json);
		break;
	case PROFILE_T_ENV:
		profile_put_list(b, p->env, p->nenv, json);
		break;
	case PROFILE_T_SHARES:
		profile_put_shares(b, p, json);
		break;
	case PROFILE_T_ALLOW:
		/* As written; network_rules' are shown apart. */
		rules = xcalloc(p->nnetwork_allow + 1, sizeof *rules);
		for (i = n = 0; i < p->nnetwork_allow; i++) {
			if (p->network_allow[i].from_rule == 0)
				rules[n++] = p->network_allow[i].text;
		}
		profile_put_list(b, rules, n, json);
		free(rules);
		break;
	case PROFILE_T_PORTS:
		profile_put_ports(b, p, json);
		break;
	case PROFILE_T_TCP:
		profile_put_tcp(b, p, json);
		break;
	case PROFILE_T_RULES:
		profile_put_list(b, p->network_rules, p->nnetwork_rules, json);
		break;
	case PROFILE_T_ARGS:
		profile_put_list(b, p->extra_args, p->nextra_args, json);
		break;
	case PROFILE_T_LIBS:
		profile_put_list(b, p->ld_closure_extra, p->nld_closure_extra,
		    json);
		break;
	}
}

/*
 * Every setting of a loaded profile and where it came from: as a Lua
 * profile (it loads back to the same settings), as one JSON object
 * (PROFILE_PRINT_JSON), or as Lua without comments (PROFILE_PRINT_BARE).
 */
void
profile_print(const struct profile *p, int flags, struct buf *b)
{
	static const char		*from[] = { "default", "profile",
	    "command line" };
	const struct profile_setting	*s;
	const struct profile_origin	*o;
	const char			*rules_at = NULL;
	size_t				 i, start;
	int				 json = flags & PROFILE_PRINT_JSON;

	if (flags & PROFILE_PRINT_BARE) {
		buf_printf(b, "return {\n");
		for (i = 0; i < PROFILE_NSETTINGS; i++) {
			buf_printf(b, "\t%s = ", profile_schema[i].name);
			profile_put(b, p, &profile_schema[i], 0);
			buf_printf(b, ",\n");
		}
		buf_printf(b, "}\n");
		return;
	}
	for (i = 0; i < PROFILE_NSETTINGS && p->origins != NULL; i++) {
		if (profile_schema[i].type == PROFILE_T_RULES)
			rules_at = p->origins[i].at;
	}
	if (json) {
		buf_printf(b, "{\"profile\":");
		buf_json_string(b, p->path != NULL ? p->path : "");
		buf_printf(b, ",\"settings\":{");
	} else
		buf_printf(b, "-- %s, as qsup will use it; after each setting, "
		    "where it came from\nreturn {\n", p->path);
	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		o = p->origins != NULL ? &p->origins[i] : NULL;
		if (json) {
			buf_printf(b, "%s\"%s\":{\"value\":", i == 0 ? "" : ",",
			    s->name);
			profile_put(b, p, s, 1);
			buf_printf(b, ",\"from\":\"%s\"", from[o == NULL ?
			    0 : o->from]);
			if (o != NULL && o->at != NULL) {
				buf_printf(b, ",\"at\":");
				buf_json_string(b, o->at);
			}
			if (s->type == PROFILE_T_RULES)
				profile_put_compiled_json(b, p);
			buf_printf(b, "}");
			continue;
		}
		start = b->len;
		buf_printf(b, "\t%s = ", s->name);
		profile_put(b, p, s, 0);
		buf_printf(b, ",");
		do
			buf_add(b, " ", 1);
		while (b->len - start < 44);
		buf_printf(b, "-- %s", from[o == NULL ? 0 : o->from]);
		if (o != NULL && o->at != NULL)
			buf_printf(b, ", %s", o->at);
		buf_printf(b, "\n");
		profile_put_compiled(b, p, s, rules_at);
	}
	buf_printf(b, json ? "}}\n" : "}\n");
}

/* Every setting with its default, what it accepts and what it does. */
void
profile_help(struct buf *b)
{
	const struct profile_setting	*s;
	size_t				 i;

	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		buf_printf(b, "%s = %s\n\t%s\n\t(", s->name,
		    s->def == NULL ? "nil" : s->def, s->help);
		profile_accepts(b, s);
		buf_printf(b, ")\n");
	}
}
