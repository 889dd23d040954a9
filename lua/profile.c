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
 * one could not be stopped); print() goes to qsup's log. Host facts come
 * from a "qsup" table. A counting allocator caps memory, and a hook stops
 * a profile that runs too long.
 *
 * Growing the language: a new setting is a row in profile_schema and, if it
 * needs one, a new PROFILE_T_* type with its case in profile_convert() and
 * profile_accepts(). Everything else (defaults, unknown-key suggestions,
 * help, error lines) follows from the table.
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "qsup.h"

#define PROFILE_BUILTIN		"builtin:default"
#define PROFILE_FILE_MAX	(1024 * 1024)
#define PROFILE_MEMORY_LIMIT	((size_t)64 << 20)
#define PROFILE_TIME_LIMIT	1		/* seconds */
#define PROFILE_HOOK_COUNT	1000
#define PROFILE_TRACK_KEYS	256	/* keys followed per table */
#define PROFILE_TRACK_LEVELS	16	/* frames searched for tables */
#define PROFILE_SHOW_MAX	40	/* characters of a value shown */
#define PROFILE_MIB		((uint64_t)1 << 20)

extern const char builtin_profile_default[];

enum profile_type {
	PROFILE_T_BOOL,
	PROFILE_T_CHOICE,	/* one of choices[] */
	PROFILE_T_SIZE,		/* MiB: a number, or a string, "2G" */
	PROFILE_T_INT,
	PROFILE_T_SECONDS,
	PROFILE_T_PATH,		/* host file, relative to the profile */
	PROFILE_T_GUEST_PATH,	/* an absolute path in the guest */
	PROFILE_T_ENV		/* {"K=V", ...} or {K = "V", ...} */
};

/* A choice named "true" or "false" matches that boolean, others a string. */
struct profile_choice {
	const char	*name;
	int		 value;
};

/*
 * A setting: its field in struct profile (and, for PROFILE_T_ENV, the
 * field holding the count), range, choices, default as a Lua expression
 * (NULL: nil) and a line of help.
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

static const struct profile_choice profile_kvm_choices[] = {
	{ "true", PROFILE_KVM_ON },
	{ "false", PROFILE_KVM_OFF },
	{ "auto", PROFILE_KVM_AUTO },
	{ NULL, 0 }
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
	{ .name = "show_boot_console", .type = PROFILE_T_BOOL,
	  .offset = offsetof(struct profile, show_boot_console),
	  .def = "false",
	  .help = "copy the guest's console (kernel, boot) to stderr" },
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
	{ .name = "env", .type = PROFILE_T_ENV,
	  .offset = offsetof(struct profile, env),
	  .offset_n = offsetof(struct profile, nenv), .def = "{}",
	  .help = "environment of every command in the guest" },
	{ .name = "cwd", .type = PROFILE_T_GUEST_PATH,
	  .offset = offsetof(struct profile, cwd), .def = "\"/\"",
	  .help = "working directory of commands in the guest" },
};
#define PROFILE_NSETTINGS (sizeof profile_schema / sizeof profile_schema[0])

#define PROFILE_FIELD(p, s, type) \
	((type *)(void *)((char *)(p) + (s)->offset))

struct profile_error {
	int	 line;
	char	*text;		/* "FILE:LINE: ..." */
};

/* One profile being loaded; reached from Lua as the allocator's ud. */
struct profile_ctx {
	struct profile		*p;
	const char		*path;		/* for messages */
	char			*dir;	/* base of relative paths */
	char			*chunkname;	/* "@path" or "=name" */
	char			 short_src[LUA_IDSIZE];

	size_t			 mem_used;
	size_t			 mem_peak;
	int			 mem_failed;
	double			 deadline;
	unsigned long		 insns;
	int			 timed_out;
	int			 timeout_line;

	int			 line;		/* line running now */
	char			*traceback;	/* of the last error */

	struct profile_error	*errs;
	size_t			 nerrs;
};

/* Registry keys: their addresses are what matters. */
static const char	profile_key_track = 'T';
static const char	profile_key_sandbox = 'S';

static struct profile_ctx *
profile_ctx(lua_State *L)
{
	void	*ud;

	lua_getallocf(L, &ud);
	return (ud);
}

/* The allocator: counts every byte, refuses to grow past the limit. */
static void *
profile_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct profile_ctx	*ctx = ud;
	void			*np;

	if (ptr == NULL)
		osize = 0;	/* then it is a type tag, not a size */
	if (nsize == 0) {
		free(ptr);
		ctx->mem_used -= osize;
		return (NULL);
	}
	if (nsize > osize &&
	    ctx->mem_used + (nsize - osize) > PROFILE_MEMORY_LIMIT) {
		ctx->mem_failed = 1;
		return (NULL);
	}
	if ((np = realloc(ptr, nsize)) == NULL)
		return (NULL);
	ctx->mem_used = ctx->mem_used - osize + nsize;
	if (ctx->mem_used > ctx->mem_peak)
		ctx->mem_peak = ctx->mem_used;
	return (np);
}

static void
profile_verror(struct profile_ctx *ctx, int line, const char *fmt, va_list ap)
{
	struct profile_error	*e;
	char			*msg;

	xvasprintf(&msg, fmt, ap);
	ctx->errs = xreallocarray(ctx->errs, ctx->nerrs + 1, sizeof *ctx->errs);
	e = &ctx->errs[ctx->nerrs++];
	e->line = line;
	if (line > 0)
		xasprintf(&e->text, "%s:%d: %s", ctx->path, line, msg);
	else
		xasprintf(&e->text, "%s: %s", ctx->path, msg);
	free(msg);
}

/* Note a problem at FILE:LINE (line 0: the file as a whole). */
static void
profile_error(struct profile_ctx *ctx, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void
profile_error(struct profile_ctx *ctx, int line, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	profile_verror(ctx, line, fmt, ap);
	va_end(ap);
}

static int
profile_error_cmp(const void *a, const void *b)
{
	const struct profile_error	*ea = a, *eb = b;

	if (ea->line != eb->line)
		return (ea->line < eb->line ? -1 : 1);
	return (strcmp(ea->text, eb->text));
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
 *   that was running: ctx->line.
 * - The tables looked at are those in the registers of the profile's
 *   active Lua functions, temporaries included (lua_getlocal names them
 *   "(temporary)"): a table constructor fills a register, a local or an
 *   argument is in one. A return event does the same for the returning
 *   function, then moves ctx->line back to the caller's line.
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
profile_shadow(lua_State *L, int idx, int line, int create)
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
	lua_newtable(L);		/* [1]: key -> line */
	lua_rawseti(L, -2, 1);
	lua_newtable(L);		/* [2]: key -> value */
	lua_rawseti(L, -2, 2);
	lua_pushinteger(L, line);	/* [3]: first seen */
	lua_rawseti(L, -2, 3);
	lua_pushvalue(L, idx);
	lua_pushvalue(L, -2);
	lua_rawset(L, -4);
	lua_remove(L, -2);
	return (1);
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
profile_track_table(lua_State *L, int idx, int line)
{
	int	top = lua_gettop(L), lines, values, n = 0;

	idx = lua_absindex(L, idx);
	if (line <= 0 || !lua_checkstack(L, 10))
		return;
	profile_shadow(L, idx, line, 1);
	lua_rawgeti(L, -1, 1);
	lines = lua_gettop(L);
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
				lua_pushinteger(L, line);
				lua_rawset(L, lines);
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

	if (ctx->line <= 0)
		return;
	for (level = 0; level < PROFILE_TRACK_LEVELS; level++) {
		if (!lua_getstack(L, level, &d))
			break;
		if (!lua_getinfo(L, "S", &d) ||
		    strcmp(d.source, ctx->chunkname) != 0)
			continue;
		/*
		 * In a hook, level 0's registers run up to the stack top at
		 * the hook's entry; above are the hook's own values.
		 */
		for (n = 1; level != 0 || n <= top0; n++) {
			if (lua_getlocal(L, &d, n) == NULL)
				break;
			if (lua_type(L, -1) == LUA_TTABLE)
				profile_track_table(L, -1, ctx->line);
			lua_pop(L, 1);
		}
	}
}

/* The line where key of the table at idx was set; 0 if unknown. */
static int
profile_key_line(lua_State *L, int idx, const char *key)
{
	int	line = 0;

	if (!profile_shadow(L, idx, 0, 0))
		return (0);
	lua_rawgeti(L, -1, 1);
	if (lua_getfield(L, -1, key) == LUA_TNUMBER)
		line = (int)lua_tointeger(L, -1);
	lua_pop(L, 3);
	return (line);
}

/* The line where the table at idx was first seen; 0 if unknown. */
static int
profile_table_line(lua_State *L, int idx)
{
	int	line = 0;

	if (!profile_shadow(L, idx, 0, 0))
		return (0);
	if (lua_rawgeti(L, -1, 3) == LUA_TNUMBER)
		line = (int)lua_tointeger(L, -1);
	lua_pop(L, 2);
	return (line);
}

/* -------------------------------------------------------------------------
 * Limits.
 */

static __attribute__((noreturn)) void
profile_timeout(lua_State *L, struct profile_ctx *ctx)
{
	if (!ctx->timed_out) {
		ctx->timed_out = 1;
		ctx->timeout_line = ctx->line;
		/* From now on stop at every instruction, pcall or not. */
		lua_sethook(L, lua_gethook(L), LUA_MASKCOUNT, 1);
	}
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
	int			 top = lua_gettop(L), ours;

	/* The clock is read every PROFILE_HOOK_COUNT instructions. */
	if (ar->event == LUA_HOOKCOUNT) {
		ctx->insns += PROFILE_HOOK_COUNT;
		if (ctx->timed_out || util_now() > ctx->deadline)
			profile_timeout(L, ctx);
		return;
	}
	if (ar->event == LUA_HOOKLINE && ar->currentline == ctx->line)
		return;		/* a loop on one line */

	ours = lua_getinfo(L, "S", ar) &&
	    strcmp(ar->source, ctx->chunkname) == 0;
	if (ar->event == LUA_HOOKLINE) {
		if (ours) {
			profile_track_stack(L, ctx, top);
			ctx->line = ar->currentline;
		}
		return;
	}
	if (ours)
		profile_track_stack(L, ctx, top);
	if (lua_getstack(L, 1, &caller) && lua_getinfo(L, "Sl", &caller) &&
	    strcmp(caller.source, ctx->chunkname) == 0 &&
	    caller.currentline > 0)
		ctx->line = caller.currentline;
}

/* Message handler: keep the traceback for the log, return the message. */
static int
profile_msgh_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	const char		*msg = lua_tostring(L, 1);

	if (msg != NULL) {
		luaL_traceback(L, L, msg, 1);
		free(ctx->traceback);
		ctx->traceback = xstrdup(lua_tostring(L, -1));
		lua_pop(L, 1);
	}
	return (1);
}

/* Turn a failed lua_pcall's status and error object into a message. */
static void
profile_lua_error(struct profile_ctx *ctx, lua_State *L, int status)
{
	const char	*msg;
	size_t		 n = strlen(ctx->short_src);

	if (ctx->traceback != NULL)
		log_debug("%s", ctx->traceback);
	if (status == LUA_ERRMEM || (status == LUA_ERRERR && ctx->mem_failed)) {
		profile_error(ctx, ctx->line, "profile needs more than %zu MiB "
		    "of memory", PROFILE_MEMORY_LIMIT >> 20);
		return;
	}
	if (ctx->timed_out) {
		profile_error(ctx, ctx->timeout_line, "profile ran for more "
		    "than %d s; is there an endless loop?", PROFILE_TIME_LIMIT);
		return;
	}
	if ((msg = lua_tostring(L, -1)) == NULL) {
		profile_error(ctx, ctx->line, "profile raised an error that is "
		    "%s, not a message", luaL_typename(L, -1));
		return;
	}
	/* Lua shortens long chunk names: put the whole path back. */
	if (n > 0 && strncmp(msg, ctx->short_src, n) == 0 && msg[n] == ':') {
		ctx->errs = xreallocarray(ctx->errs, ctx->nerrs + 1,
		    sizeof *ctx->errs);
		ctx->errs[ctx->nerrs].line = 0;
		xasprintf(&ctx->errs[ctx->nerrs].text, "%s%s", ctx->path,
		    msg + n);
		ctx->nerrs++;
		return;
	}
	profile_error(ctx, ctx->line, "%s", msg);
}

/* -------------------------------------------------------------------------
 * The environment a profile runs in.
 */

/* print(): to qsup's log, with the line, never to stdout. */
static int
profile_print_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	luaL_Buffer		 b;
	int			 i, n = lua_gettop(L);

	luaL_buffinit(L, &b);
	for (i = 1; i <= n; i++) {
		if (i > 1)
			luaL_addchar(&b, '\t');
		luaL_tolstring(L, i, NULL);
		luaL_addvalue(&b);
	}
	luaL_pushresult(&b);
	log_info("%s:%d: %s", ctx->path, ctx->line, lua_tostring(L, -1));
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
	int	n = lua_gettop(L), status;

	luaL_checktype(L, 2, LUA_TFUNCTION);
	lua_pushvalue(L, 1);		/* f, msgh, args..., f */
	lua_remove(L, 1);		/* msgh, args..., f */
	lua_insert(L, 2);		/* msgh, f, args... */
	status = lua_pcall(L, n - 2, LUA_MULTRET, 0);
	if (status == LUA_OK) {
		lua_pushboolean(L, 1);
		lua_replace(L, 1);
		return (lua_gettop(L));
	}
	if (status != LUA_ERRMEM) {	/* as Lua: no handler for those */
		lua_pushvalue(L, 1);
		lua_insert(L, -2);
		lua_pcall(L, 1, 1, 0);
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
	profile_track_table(L, 1, ctx->line);
	lua_pushvalue(L, 1);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox);
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

static long
profile_host_cpus(void)
{
	cpu_set_t	set;
	long		n;

	if (sched_getaffinity(0, sizeof set, &set) == 0 &&
	    (n = CPU_COUNT(&set)) > 0)
		return (n);
	if ((n = sysconf(_SC_NPROCESSORS_ONLN)) > 0)
		return (n);
	return (1);
}

static void
profile_push_qsup(lua_State *L)
{
	struct utsname	u;
	long		pages, size;

	lua_createtable(L, 0, 4);
	if (uname(&u) == 0)
		lua_pushstring(L, u.machine);
	else
		lua_pushliteral(L, "unknown");
	lua_setfield(L, -2, "arch");
	lua_pushinteger(L, profile_host_cpus());
	lua_setfield(L, -2, "cpus");
	pages = sysconf(_SC_PHYS_PAGES);
	size = sysconf(_SC_PAGESIZE);
	lua_pushinteger(L, pages > 0 && size > 0 ?
	    (lua_Integer)((uint64_t)pages * (uint64_t)size / PROFILE_MIB) : 0);
	lua_setfield(L, -2, "memory_mib");
	lua_pushcfunction(L, profile_qsup_env_cb);
	lua_setfield(L, -2, "env");
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
	lua_Debug		 ar;

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
	lua_pop(L, 1);

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
	profile_push_qsup(L);
	lua_setglobal(L, "qsup");

	lua_newtable(L);
	lua_createtable(L, 0, 1);
	lua_pushliteral(L, "k");
	lua_setfield(L, -2, "__mode");
	lua_setmetatable(L, -2);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_track);

	/* How Lua will name this chunk in its messages. */
	if (luaL_loadbufferx(L, "", 0, ctx->chunkname, "t") != LUA_OK)
		return (lua_error(L));
	lua_getinfo(L, ">S", &ar);
	snprintf(ctx->short_src, sizeof ctx->short_src, "%s", ar.short_src);
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

/* The setting a misspelt name probably meant, or NULL. */
static const char *
profile_suggest(const char *name)
{
	const char	*best = NULL;
	size_t		 i, d, best_d = SIZE_MAX, len = strlen(name);

	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		d = profile_distance(name, profile_schema[i].name);
		if (d < best_d) {
			best_d = d;
			best = profile_schema[i].name;
		}
	}
	if (best_d <= 2 && best_d < len)
		return (best);
	/* "mem" for "memory". */
	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		if (len >= 3 && strncmp(profile_schema[i].name, name, len) == 0)
			return (profile_schema[i].name);
	}
	return (NULL);
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

/* What a setting accepts, for messages and help. */
static void
profile_accepts(struct buf *b, const struct profile_setting *s)
{
	const struct profile_choice	*c;

	switch (s->type) {
	case PROFILE_T_BOOL:
		buf_printf(b, "true or false");
		break;
	case PROFILE_T_CHOICE:
		for (c = s->choices; c->name != NULL; c++) {
			if (c != s->choices)
				buf_printf(b, "%s",
				    c[1].name == NULL ? " or " : ", ");
			if (strcmp(c->name, "true") == 0 ||
			    strcmp(c->name, "false") == 0)
				buf_printf(b, "%s", c->name);
			else
				buf_printf(b, "\"%s\"", c->name);
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

/* "memory: "2GB" is not valid; expected ..." */
static void
profile_bad(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int line, const char *why)
{
	struct buf	shown = { 0 }, accepts = { 0 };

	profile_show(&shown, L, idx);
	profile_accepts(&accepts, s);
	profile_error(ctx, line, "%s: %s %s; expected %s", s->name,
	    shown.data, why, accepts.data);
	buf_free(&shown);
	buf_free(&accepts);
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
profile_whole(lua_State *L, int idx, const struct profile_setting *s,
    long long *v)
{
	lua_Number	f;

	if (lua_type(L, idx) != LUA_TNUMBER)
		return ("is not valid");
	if (lua_isinteger(L, idx)) {
		*v = lua_tointeger(L, idx);
		if ((double)*v < s->min || (double)*v > s->max)
			return ("is out of range");
		return (NULL);
	}
	f = lua_tonumber(L, idx);
	if (isnan(f) || f != floor(f))
		return ("is not a whole number");
	if (f < s->min || f > s->max)
		return ("is out of range");
	*v = (long long)f;
	return (NULL);
}

static void
profile_convert_size(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int line)
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
	} else if ((why = profile_whole(L, idx, s, &v)) == NULL)
		mib = (uint64_t)v;
	else if (strcmp(why, "is not a whole number") == 0)
		why = "is not a whole number of MiB";
	if (why != NULL) {
		profile_bad(ctx, L, idx, s, line, why);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, uint64_t) = mib;
}

static void
profile_convert_path(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int line)
{
	const char	*value;
	size_t		 len;
	struct stat	 sb;
	char		*path;

	if (lua_type(L, idx) != LUA_TSTRING) {
		profile_bad(ctx, L, idx, s, line, "is not valid");
		return;
	}
	value = lua_tolstring(L, idx, &len);
	if (len == 0 || strlen(value) != len || len >= PATH_MAX) {
		profile_bad(ctx, L, idx, s, line, "is not valid");
		return;
	}
	if (s->type == PROFILE_T_GUEST_PATH) {
		if (value[0] != '/') {
			profile_bad(ctx, L, idx, s, line, "is not absolute");
			return;
		}
		path = xstrdup(value);
	} else {
		if (value[0] != '/' && ctx->dir != NULL)
			xasprintf(&path, "%s%s%s", ctx->dir,
			    ctx->dir[strlen(ctx->dir) - 1] == '/' ? "" : "/",
			    value);
		else
			path = xstrdup(value);
		if (stat(path, &sb) == -1) {
			profile_error(ctx, line, "%s: %s: %s", s->name, path,
			    strerror(errno));
			free(path);
			return;
		}
		if (!S_ISREG(sb.st_mode)) {
			profile_error(ctx, line, "%s: %s: not a regular file",
			    s->name, path);
			free(path);
			return;
		}
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = path;
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
    const struct profile_setting *s, int line)
{
	struct buf	  shown = { 0 };
	char		**v = NULL;
	const char	 *key, *item, *value, *eq;
	size_t		  n = 0, i, klen, ilen, vlen;
	int		  tline, eline, bad = 0;

	if (lua_type(L, idx) != LUA_TTABLE) {
		profile_bad(ctx, L, idx, s, line, "is not valid");
		return;
	}
	if ((tline = profile_table_line(L, idx)) == 0)
		tline = line;
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		buf_consume(&shown, shown.len);
		if (lua_type(L, -2) == LUA_TSTRING) {
			key = lua_tolstring(L, -2, &klen);
			if ((eline = profile_key_line(L, idx, key)) == 0)
				eline = tline;
			if (!profile_env_name_ok(key, klen)) {
				profile_show(&shown, L, -2);
				profile_error(ctx, eline, "env: %s is not a "
				    "variable name (letters, digits and _, not "
				    "starting with a digit)", shown.data);
				bad = 1;
			} else if (lua_type(L, -1) != LUA_TSTRING &&
			    lua_type(L, -1) != LUA_TNUMBER) {
				profile_show(&shown, L, -1);
				profile_error(ctx, eline, "env: %s is %s, not "
				    "a string", key, shown.data);
				bad = 1;
			} else {
				lua_pushvalue(L, -1);	/* for tolstring */
				value = lua_tolstring(L, -1, &vlen);
				if (strlen(value) != vlen) {
					profile_error(ctx, eline, "env: %s "
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
				profile_error(ctx, tline, "env: %s is not "
				    "\"NAME=VALUE\"", shown.data);
				bad = 1;
			} else if (!profile_env_name_ok(item, eq - item)) {
				profile_error(ctx, tline, "env: %s: the name "
				    "is not a variable name (letters, digits "
				    "and _, not starting with a digit)",
				    shown.data);
				bad = 1;
			} else if (strlen(item) != ilen) {
				profile_error(ctx, tline, "env: %s holds a NUL "
				    "byte", shown.data);
				bad = 1;
			} else {
				v = xreallocarray(v, n + 1, sizeof *v);
				v[n++] = xstrdup(item);
			}
		} else {
			profile_show(&shown, L, -1);
			profile_error(ctx, tline, "env: %s is not "
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
			profile_error(ctx, tline, "env: %.*s is set twice",
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

/* Check the value at idx against setting s and store it in the profile. */
static void
profile_convert(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int line)
{
	const struct profile_choice	*c;
	const char			*why;
	long long			 v;
	lua_Number			 f;
	int				 b;

	if (lua_isnil(L, idx) && s->def == NULL)
		return;		/* stays NULL: the built-in choice */
	switch (s->type) {
	case PROFILE_T_BOOL:
		if (!lua_isboolean(L, idx)) {
			profile_bad(ctx, L, idx, s, line, "is not valid");
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
			profile_bad(ctx, L, idx, s, line, "is not valid");
			return;
		}
		memcpy(PROFILE_FIELD(ctx->p, s, int), &c->value, sizeof (int));
		return;
	case PROFILE_T_SIZE:
		profile_convert_size(ctx, L, idx, s, line);
		return;
	case PROFILE_T_INT:
		if ((why = profile_whole(L, idx, s, &v)) != NULL) {
			profile_bad(ctx, L, idx, s, line, why);
			return;
		}
		*PROFILE_FIELD(ctx->p, s, int) = (int)v;
		return;
	case PROFILE_T_SECONDS:
		if (lua_type(L, idx) != LUA_TNUMBER) {
			profile_bad(ctx, L, idx, s, line, "is not valid");
			return;
		}
		f = lua_tonumber(L, idx);
		if (isnan(f) || f < s->min || f > s->max) {
			profile_bad(ctx, L, idx, s, line, "is out of range");
			return;
		}
		*PROFILE_FIELD(ctx->p, s, double) = (double)f;
		return;
	case PROFILE_T_PATH:
	case PROFILE_T_GUEST_PATH:
		profile_convert_path(ctx, L, idx, s, line);
		return;
	case PROFILE_T_ENV:
		profile_convert_env(ctx, L, idx, s, line);
		return;
	}
}

/* Push the schema's default of s, from its Lua expression. */
static void
profile_push_default(lua_State *L, const struct profile_setting *s)
{
	if (s->def == NULL) {
		lua_pushnil(L);
		return;
	}
	lua_pushfstring(L, "return %s", s->def);
	if (luaL_loadbufferx(L, lua_tostring(L, -1), lua_rawlen(L, -1),
	    "=schema", "t") != LUA_OK)
		lua_error(L);
	lua_remove(L, -2);
	lua_call(L, 0, 1);
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
	size_t				 i;
	int				 t, tline, line;

	lua_settop(L, 1);
	if (lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_sandbox) ==
	    LUA_TTABLE) {
		if (!lua_isnil(L, 1) && !lua_rawequal(L, 1, 2)) {
			profile_error(ctx, ctx->line, "the profile both calls "
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
			profile_error(ctx, ctx->line, "the profile returns a "
			    "%s, not a table of settings", luaL_typename(L, 1));
			return (0);
		}
		lua_pushvalue(L, 1);
	}
	t = lua_gettop(L);
	profile_track_table(L, t, ctx->line);	/* set on the last line */
	if ((tline = profile_table_line(L, t)) == 0)
		tline = ctx->line;

	lua_pushnil(L);
	while (lua_next(L, t) != 0) {
		if (lua_type(L, -2) != LUA_TSTRING) {
			buf_consume(&b, b.len);
			profile_show(&b, L, -1);
			profile_error(ctx, tline, "%s has no name; settings "
			    "are written name = value", b.data);
		} else if (profile_setting_find(key = lua_tostring(L, -2)) ==
		    NULL) {
			if ((line = profile_key_line(L, t, key)) == 0)
				line = tline;
			buf_consume(&b, b.len);
			lua_pushvalue(L, -2);
			profile_show(&b, L, -1);
			lua_pop(L, 1);
			if ((hint = profile_suggest(key)) != NULL) {
				profile_error(ctx, line, "unknown setting %s "
				    "(did you mean \"%s\"?)", b.data, hint);
			} else {
				buf_printf(&b, "; the settings are");
				for (i = 0; i < PROFILE_NSETTINGS; i++) {
					buf_printf(&b, "%s %s", i == 0 ? "" :
					    ",", profile_schema[i].name);
				}
				profile_error(ctx, line, "unknown setting %s",
				    b.data);
			}
		}
		lua_pop(L, 1);
	}
	buf_free(&b);

	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		lua_pushstring(L, s->name);
		if (lua_rawget(L, t) == LUA_TNIL) {
			lua_pop(L, 1);
			profile_push_default(L, s);
			line = 0;
		} else if ((line = profile_key_line(L, t, s->name)) == 0)
			line = tline;
		profile_convert(ctx, L, lua_gettop(L), s, line);
		lua_pop(L, 1);
	}
	return (0);
}

/* Load, run and check a profile; NULL is the built-in default. */
int
profile_load(struct profile *p, const char *file, char **cause)
{
	struct profile_ctx	 ctx;
	struct buf		 b = { 0 };
	lua_State		*L = NULL;
	char			*src = NULL, *slash;
	const char		*text;
	size_t			 len, i;
	int			 status, rc = -1;

	memset(p, 0, sizeof *p);
	memset(&ctx, 0, sizeof ctx);
	*cause = NULL;
	ctx.p = p;
	if (file == NULL) {
		ctx.path = PROFILE_BUILTIN;
		xasprintf(&ctx.chunkname, "=%s", PROFILE_BUILTIN);
		text = builtin_profile_default;
		len = strlen(text);
	} else {
		ctx.path = file;
		if ((src = util_read_file(file, &len,
		    PROFILE_FILE_MAX)) == NULL) {
			if (errno == EFBIG)
				xasprintf(cause, "%s: larger than %d KiB", file,
				    PROFILE_FILE_MAX / 1024);
			else
				xasprintf(cause, "%s: %s", file,
				    strerror(errno));
			return (-1);
		}
		text = src;
		xasprintf(&ctx.chunkname, "@%s", file);
		ctx.dir = xstrdup(file);
		if ((slash = strrchr(ctx.dir, '/')) == NULL) {
			free(ctx.dir);
			ctx.dir = NULL;	/* the current directory */
		} else if (slash == ctx.dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	p->path = xstrdup(ctx.path);

	if ((L = lua_newstate(profile_alloc, &ctx)) == NULL) {
		profile_error(&ctx, 0, "cannot create a Lua state");
		goto out;
	}
	lua_pushcfunction(L, profile_msgh_cb);		/* index 1 */
	lua_pushcfunction(L, profile_setup_cb);
	if ((status = lua_pcall(L, 0, 0, 1)) != LUA_OK) {
		profile_lua_error(&ctx, L, status);
		goto out;
	}

	if ((status = luaL_loadbufferx(L, text, len, ctx.chunkname,
	    "t")) != LUA_OK) {
		profile_lua_error(&ctx, L, status);
		goto out;
	}
	ctx.deadline = util_now() + PROFILE_TIME_LIMIT;
	lua_sethook(L, profile_hook_cb, LUA_MASKCOUNT|LUA_MASKLINE|LUA_MASKRET,
	    PROFILE_HOOK_COUNT);
	status = lua_pcall(L, 0, 1, 1);
	lua_sethook(L, NULL, 0, 0);
	log_debug("%s: ran %.3f s, about %lu instructions, %zu KiB at most",
	    ctx.path, util_now() - (ctx.deadline - PROFILE_TIME_LIMIT),
	    ctx.insns, ctx.mem_peak >> 10);
	if (status != LUA_OK || ctx.timed_out) {
		profile_lua_error(&ctx, L, status);
		goto out;
	}

	lua_pushcfunction(L, profile_apply_cb);
	lua_insert(L, -2);
	if ((status = lua_pcall(L, 1, 0, 1)) != LUA_OK)
		profile_lua_error(&ctx, L, status);
	if (ctx.nerrs == 0)
		rc = 0;

out:
	if (L != NULL)
		lua_close(L);
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
	free(ctx.errs);
	free(ctx.traceback);
	free(ctx.chunkname);
	free(ctx.dir);
	free(src);
	return (rc);
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
	for (i = 0; i < p->nenv; i++)
		free(p->env[i]);
	free(p->env);
	p->env = NULL;
	p->nenv = 0;
	free(p->cwd);
	p->cwd = NULL;
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
