/*
 * lua/'s own declarations, shared by its files and no one else's: the
 * schema's types, one load's context (struct profile_ctx) and the
 * functions the files of the profile engine give each other: a section
 * per file, in the order of the list below, which is the order of the
 * calls. A file calls only files listed before it, never one after
 * (tests/circles.py checks that no two files call each other, however
 * far round); a lower file that needs an upper one's work is handed it,
 * as ctx->types hands the type table to the converters below it.
 * facts.c and extra_args.c, beside them, call none of them.
 *
 * The bottom: one load, its values and its errors.
 *   profile_ctx.c      profile_ctx(), registry keys, the files of a load,
 *                      locations; calls no other file
 *   profile_value.c    values read from Lua and shown in messages; calls
 *                      no other file
 *   profile_error.c    errors, reported sorted; a bad value (profile_bad),
 *                      the closest name
 * The setting types, each file calling the bottom and those before it:
 *   profile_track.c    where each setting was written
 *   profile_list.c     what list settings share; env, extra_args; showing
 *                      strings and lists
 *   profile_type.c     the scalar types: booleans, choices, sizes, paths
 *   profile_net.c      network_allow, ports, network_tcp, network_rules
 *   profile_share.c    shares, ld_closure_extra
 *   profile_setup.c    setup (the steps cached as layers), setup_network
 *   profile_image.c    the image catalog (catalog.lua), image_sha256, and
 *                      turning image into what to download
 *   profile_registry.c registries: a docker:// pull's mirrors, insecure
 *   profile_pool.c     serve_pool: sandboxes qsup serve keeps ready
 *   profile_include.c  include() and extend(), built-in profiles
 * The top, each calling any file before it:
 *   profile_schema.c   the settings table and the type table (a row of
 *                      operations per type), names, show and help
 *   profile_check.c    the settings that only make sense together
 *   profile_lua.c      the sandboxed Lua state: libraries, limits, hooks
 *   profile.c          the loader: --set, defaults, the whole load
 *   profile_complete.c names for shell completion
 */
#ifndef QSUP_PROFILE_INT_H
#define QSUP_PROFILE_INT_H

#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

#include <lua.h>

#include "profile.h"

#define PROFILE_BUILTIN		"builtin:default"
#define PROFILE_FILE_MAX	(1024 * 1024)
#define PROFILE_PRINT_MAX	(16 * 1024)	/* print() per load, in bytes */
#define PROFILE_MEMORY_LIMIT	((size_t)64 << 20)
#define PROFILE_TIME_LIMIT	1		/* seconds */
#define PROFILE_HARD_GRACE	0.25	/* then the alarm, seconds */
#define PROFILE_ALARM_EVERY	0.05	/* seconds, once past the limit */
#define PROFILE_HOOK_COUNT	1000
#define PROFILE_ALLOC_CHECK	((size_t)4 << 20) /* clock read per bytes */
#define PROFILE_TRACK_KEYS	256	/* keys followed per table */
#define PROFILE_TRACK_LEVELS	16	/* frames searched for tables */
#define PROFILE_SHOW_MAX	40	/* characters of a value shown */
#define PROFILE_MIB		((uint64_t)1 << 20)
#define PROFILE_SECTOR		512	/* disk_size is whole sectors of it */
#define PROFILE_FILES_MAX	64	/* files, included or --set, per load */
#define PROFILE_SETS_MAX	32	/* --set per load */
#define PROFILE_DEPTH_MAX	16	/* include() within include() */
#define PROFILE_LIST_MAX	1024	/* items of a list setting */
#define PROFILE_POOL_MAX	64	/* serve_pool: sandboxes per entry */
#define PROFILE_TCP_MAX		NET_MAPS_MAX /* network_tcp: the guest's
					   addresses for maps */

/*
 * Where something was written: a file of the load (ctx->files) and a line
 * in it, in one int. Line 0: the file as a whole. Errors sort by it.
 */
#define PROFILE_LOC(f, l)	((int)(((unsigned)(f) << 24) | (unsigned)(l)))
#define PROFILE_LOC_FILE(loc)	((int)((unsigned)(loc) >> 24))
#define PROFILE_LOC_LINE(loc)	((int)((unsigned)(loc) & 0xffffff))

enum profile_type {
	PROFILE_T_BOOL,
	PROFILE_T_CHOICE,	/* one of choices[] */
	PROFILE_T_SIZE,		/* MiB: a number, or a string, "2G" */
	PROFILE_T_BYTES,	/* bytes: a number, or a string, "10G" */
	PROFILE_T_INT,
	PROFILE_T_SECONDS,
	PROFILE_T_PATH,		/* host file, relative to the profile */
	PROFILE_T_GUEST_PATH,	/* an absolute path in the guest */
	PROFILE_T_ENV,		/* {"K=V", ...} or {K = "V", ...} */
	PROFILE_T_IMAGE,	/* a name, an http(s) URL or an image file */
	PROFILE_T_URL,		/* an http(s) URL */
	PROFILE_T_SHA256,	/* 64 hex digits, kept in lower case */
	PROFILE_T_DIR,		/* host directory, need not exist yet */
	PROFILE_T_OUTFILE,	/* host file written, in a directory that is */
	PROFILE_T_SHARES,	/* { { host =, guest =, mode =, ignore = } } */
	PROFILE_T_ALLOW,	/* { "*.example.org:443", "10.0.0.0/8" } */
	PROFILE_T_PORTS,	/* { { guest =, host =, address = } } */
	PROFILE_T_TCP,		/* { { host =, port =, name = } } */
	PROFILE_T_RULES,	/* { "ALLOW|TCP|deb.debian.org|443|OUT" } */
	PROFILE_T_ARGS,		/* { "-device", "virtio-rng-device" } */
	PROFILE_T_LIBS,		/* { "libbz2.so.1.0", "/usr/lib/x/y.so" } */
	PROFILE_T_STEPS,	/* { "apt-get update", { "make", "-j2" } } */
	PROFILE_T_SETUP_NET,	/* a network mode, or an allowlist's rules */
	PROFILE_T_REGISTRIES,	/* { ["docker.io"] = { mirrors =, insecure = } } */
	PROFILE_T_POOL,		/* { default = 2, ["ci"] = 1 } */
	PROFILE_T_GEOMETRY	/* "WIDTHxHEIGHT", bounded */
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

/*
 * What a setting type does: one row of profile_types (profile_schema.c)
 * per PROFILE_T_*, as tmux's options table. convert checks the value at
 * idx (never nil) against setting s and stores it in ctx->p, or reports
 * why not at loc; accepts says what the type takes, for messages and
 * help; hint, for a string that was refused, what to write instead (or
 * NULL); put shows the stored value, as Lua or as JSON; notes adds Lua
 * comment lines after the setting's own (given where network_rules was
 * written); json_more adds fields to the setting's JSON object; free
 * frees what convert stored. Every type has convert, accepts and put; a
 * NULL hint, notes, json_more or free does nothing.
 */
struct profile_ctx;
struct profile_type_ops {
	void	(*convert)(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
	void	(*accepts)(struct buf *, const struct profile_setting *);
	char	*(*hint)(const char *, const struct profile_setting *);
	void	(*put)(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
	void	(*notes)(struct buf *, const struct profile *,
		    const struct profile_setting *, const char *);
	void	(*json_more)(struct buf *, const struct profile *);
	void	(*free)(struct profile *, const struct profile_setting *);
	int	  set_list;	/* --set NAME=VALUE gives { VALUE } */
	int	  textual;	/* --set NAME=VALUE: VALUE stays a string */
	const char *list_form;	/* expected, for a list with other keys */
};

#define PROFILE_NSETTINGS	54	/* rows of profile_schema */

#define PROFILE_FIELD(p, s, type) \
	((type *)(void *)((char *)(p) + (s)->offset))
typedef char *profile_str;	/* so that a const one is "char *const" */
typedef char **profile_strv;
#define PROFILE_CFIELD(p, s, type) \
	((const type *)(const void *)((const char *)(p) + (s)->offset))

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
 * without lua_close. The header keeps what follows aligned as Lua needs
 * (LUAI_MAXALIGN: numbers and pointers), in 16 bytes on 64-bit hosts.
 */
union profile_block {
	struct {
		union profile_block	*prev;
		union profile_block	*next;
	}			 link;
	lua_Number		 align_n;
	lua_Integer		 align_i;
	void			*align_p;
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

	/*
	 * profile_types, which the converters reach through here, below the
	 * schema that holds it: a bad value is described by its type.
	 */
	const struct profile_type_ops	*types;
};



#define PROFILE_ACCEPTS_SHARE	"{ host = PATH, guest = PATH, mode = \"ro\" " \
	"or \"rw\" or \"cow\", ignore = { GLOB, ... }, exec = false, " \
	"create = false }"
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

/* profile_ctx.c */
extern const char	profile_key_track;	/* registry keys: their */
extern const char	profile_key_sandbox;	/* addresses are what */
extern const char	profile_key_defenv;	/* matters */
struct profile_ctx	*profile_ctx(lua_State *);
char	*profile_dirname(const char *);
int	 profile_file_add(struct profile_ctx *, enum profile_file_kind,
		    const char *, const char *);
int	 profile_file_short_src(lua_State *, struct profile_file *);
int	 profile_file_of(struct profile_ctx *, const char *);
void	 profile_files_free(struct profile_ctx *);
char	*profile_loc_text(struct profile_ctx *, int);
char	*profile_host_path(struct profile_ctx *, int, const char *);

/* profile_value.c */
void	 profile_show(struct buf *, lua_State *, int);
const char	*profile_whole(lua_State *, int, double, double, long long *);
int	 profile_string_ok(lua_State *, int, size_t *);
const char	*profile_plain_string(lua_State *, int);
char	*profile_absolute(const char *);

/* profile_error.c */
void	 profile_add_error(struct profile_ctx *, int, char *);
void	 profile_error(struct profile_ctx *, int, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
char	*profile_error_text(struct profile_ctx *);
void	 profile_raise(lua_State *, char *) __attribute__((noreturn));
void	 profile_bad_as(struct profile_ctx *, lua_State *, int, const char *,
		    int, const char *, const char *);
void	 profile_bad(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int, const char *);
const char	*profile_closest(const char *, const char *const *, size_t);

/* profile_track.c */
void	 profile_shadow_set(lua_State *, int, const char *, int);
void	 profile_track_table(lua_State *, int, int);
void	 profile_track_stack(lua_State *, struct profile_ctx *, int);
int	 profile_key_loc(lua_State *, int, const char *);
int	 profile_item_loc(lua_State *, int, int);
int	 profile_table_loc(lua_State *, int);

/* profile_list.c */
int	 profile_list(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int, int *);
int	 profile_fields(struct profile_ctx *, lua_State *, int, const char *,
		    const char *const *, size_t, int);
int	 profile_field_loc(lua_State *, int, const char *, int);
void	 profile_convert_items(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int,
		    const struct profile_items *);
void	 profile_put_string(struct buf *, const char *, int);
void	 profile_put_list(struct buf *, char *const *, size_t, int);
void	 profile_put_key(struct buf *, const char *, int);
void	 profile_strv_store(struct profile_ctx *,
		    const struct profile_setting *, char **, size_t, int);
int	 profile_keyed_table(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_env(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_args(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_accepts_env(struct buf *, const struct profile_setting *);
void	 profile_accepts_args(struct buf *, const struct profile_setting *);
void	 profile_put_strs(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_free_strs(struct profile *, const struct profile_setting *);

/* profile_registry.c */
void	 profile_convert_registries(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_accepts_registries(struct buf *,
		    const struct profile_setting *);
void	 profile_put_registries(struct buf *, const struct profile *,
		    const struct profile_setting *, int);

/* profile_pool.c */
void	 profile_convert_pool(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_accepts_pool(struct buf *, const struct profile_setting *);
void	 profile_put_pool(struct buf *, const struct profile *,
		    const struct profile_setting *, int);

/* profile_type.c */
void	 profile_accepts_bool(struct buf *, const struct profile_setting *);
void	 profile_accepts_choice(struct buf *, const struct profile_setting *);
void	 profile_accepts_size(struct buf *, const struct profile_setting *);
void	 profile_accepts_bytes(struct buf *, const struct profile_setting *);
void	 profile_accepts_int(struct buf *, const struct profile_setting *);
void	 profile_accepts_seconds(struct buf *, const struct profile_setting *);
void	 profile_accepts_path(struct buf *, const struct profile_setting *);
void	 profile_accepts_outfile(struct buf *, const struct profile_setting *);
void	 profile_accepts_guest_path(struct buf *, const struct profile_setting *);
void	 profile_accepts_image(struct buf *, const struct profile_setting *);
void	 profile_accepts_url(struct buf *, const struct profile_setting *);
void	 profile_accepts_dir(struct buf *, const struct profile_setting *);
char	*profile_hint_bool(const char *, const struct profile_setting *);
char	*profile_hint_choice(const char *, const struct profile_setting *);
char	*profile_hint_size(const char *, const struct profile_setting *);
char	*profile_hint_number(const char *, const struct profile_setting *);
void	 profile_convert_size(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_bytes(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_path(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_dir(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_outfile(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_url(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_image(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_bool(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_choice(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_int(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_seconds(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_put_bool(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_choice(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_size(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_bytes(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_int(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_seconds(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_str(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_free_str(struct profile *, const struct profile_setting *);

/* profile_net.c */
void	 profile_tcp_map_free(void *);
void	 profile_convert_allow(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_ports(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_tcp(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_rules(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_put_ports(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_tcp(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_put_allow(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_free_allow(struct profile *, const struct profile_setting *);
void	 profile_free_ports(struct profile *, const struct profile_setting *);
void	 profile_free_tcp(struct profile *, const struct profile_setting *);
void	 profile_accepts_allow(struct buf *, const struct profile_setting *);
void	 profile_accepts_ports(struct buf *, const struct profile_setting *);
void	 profile_accepts_tcp(struct buf *, const struct profile_setting *);
void	 profile_accepts_rules(struct buf *, const struct profile_setting *);
void	 profile_put_compiled(struct buf *, const struct profile *,
		    const struct profile_setting *, const char *);
void	 profile_put_compiled_json(struct buf *, const struct profile *);

/* profile_share.c */
void	 profile_share_free(void *);
void	 profile_convert_shares(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_convert_libs(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_put_shares(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_free_shares(struct profile *, const struct profile_setting *);
void	 profile_accepts_shares(struct buf *, const struct profile_setting *);
void	 profile_accepts_libs(struct buf *, const struct profile_setting *);

/* profile_setup.c */
void	 profile_convert_steps(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_accepts_steps(struct buf *, const struct profile_setting *);
void	 profile_put_steps(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_free_steps(struct profile *, const struct profile_setting *);
void	 profile_convert_setup_net(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_accepts_setup_net(struct buf *,
		    const struct profile_setting *);
void	 profile_put_setup_net(struct buf *, const struct profile *,
		    const struct profile_setting *, int);
void	 profile_free_setup_net(struct profile *,
		    const struct profile_setting *);

/* profile_display.c */
void	 profile_convert_geometry(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_accepts_geometry(struct buf *, const struct profile_setting *);

/* profile_image.c */
extern const char	profile_key_catalog;	/* catalog.lua's table */
extern const char	profile_key_views;	/* table -> its read-only view */
void	 profile_catalog_push(lua_State *);
void	 profile_convert_sha256(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);
void	 profile_accepts_sha256(struct buf *, const struct profile_setting *);
char	*profile_hint_sha256(const char *, const struct profile_setting *);
void	 profile_image_notes(struct buf *, const struct profile *,
		    const struct profile_setting *, const char *);
void	 profile_image_json(struct buf *, const struct profile *);
void	 profile_image_free(struct profile *, const struct profile_setting *);
void	 profile_image_resolve(struct profile_ctx *, lua_State *, int, int);

/* profile_include.c */
const char	*profile_builtin(const char *);
void	 profile_builtin_names(struct buf *);
char	*profile_read_file(const char *, size_t *, char **);
int	 profile_include_cb(lua_State *);
int	 profile_extend_cb(lua_State *);

/* profile_schema.c */
extern const struct profile_type_ops profile_types[];
extern const struct profile_setting profile_schema[PROFILE_NSETTINGS];
const struct profile_setting	*profile_setting_find(const char *);
int	 profile_setting_index(const char *);
const char	*profile_suggest(const char *);
void	 profile_convert(struct profile_ctx *, lua_State *, int,
		    const struct profile_setting *, int);

/* profile_check.c */
void	 profile_check(struct profile_ctx *, lua_State *, const int *);

/* profile_lua.c */
void	 profile_blocks_free(struct profile_ctx *);
void	*profile_alloc(void *, void *, size_t, size_t);
void	 profile_hook_cb(lua_State *, lua_Debug *);
int	 profile_msgh_cb(lua_State *);
int	 profile_lua_message(struct profile_ctx *, const char *);
void	 profile_lua_error(struct profile_ctx *, lua_State *, int);
void	 profile_watch(struct profile_ctx *);
void	 profile_unwatch(void);
int	 profile_setup_cb(lua_State *);
int	 profile_pcall(struct profile_ctx *, int, int);

/* profile.c */
char	*profile_user_dir(void);

#endif
