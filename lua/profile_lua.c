/*
 * The sandboxed Lua state a profile runs in. Its libraries: base, string,
 * table, math and utf8 only; no dofile, loadfile, collectgarbage, warn or
 * string.dump; load() compiles text only; setmetatable() refuses __gc
 * (finalizers run with hooks off, so a looping one could not be stopped);
 * string.rep and table.move cannot spin in C; print() goes to qsup's log,
 * PROFILE_PRINT_MAX bytes of it per load. Host facts come from a "qsup"
 * table (facts.c; the KVM verdict from the caller's profile_kvm_fact),
 * and the image catalog, read-only, as qsup.images (profile_image.c).
 *
 * Its limits: a counting allocator caps memory; a count hook (and the
 * allocator, every few MiB) stops a profile that runs past the time
 * limit, by raising an error at every instruction from then on, so pcall
 * and xpcall cannot keep it alive; and SIGALRM abandons a state stuck in
 * a library function that never returns to Lua (a string pattern that
 * backtracks), freeing its memory block by block. Either way the
 * process lives on and the load fails with the profile's FILE:LINE.
 */
#include <sys/time.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "profile_int.h"

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
void
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
void *
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
void
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
int
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
int
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
void
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
 * ctx->in_lib is set, and SIGALRM, past the time limit and a grace,
 * jumps out of it to profile_pcall, which abandons the state (the hook
 * stops what returns to Lua within the grace). Such a call runs only
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

/*
 * Past the limit and a grace (the hook's turn, if Lua runs at all), out of
 * a guarded call, or once it leaves malloc(3).
 */
static void
profile_alarm_cb(int sig)
{
	struct profile_ctx	*ctx = profile_watched;
	int			 saved_errno = errno;

	(void)sig;
	if (ctx != NULL && ctx->in_lib &&
	    util_now() > ctx->deadline + PROFILE_HARD_GRACE) {
		if (!ctx->in_alloc)
			siglongjmp(ctx->abandon, 1);
		ctx->expired = 1;
	}
	errno = saved_errno;
}

/* Arm the alarm for what is left of the limit and the grace, then again. */
void
profile_watch(struct profile_ctx *ctx)
{
	struct sigaction	sa;
	struct itimerval	it;
	double			left = ctx->deadline - util_now() +
	    PROFILE_HARD_GRACE;

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

void
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

/*
 * lua_pcall with the message handler at 1, unless the alarm abandons the
 * state stuck in a library call (profile_alarm_cb): then LUA_ERRRUN and
 * ctx->abandoned, and the state is not to be touched again.
 */
int
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

	lua_createtable(L, 0, 13);
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
	profile_catalog_push(L);
	lua_setfield(L, -2, "images");
	lua_createtable(L, 0, 1);
	lua_pushcfunction(L, profile_qsup_index_cb);
	lua_setfield(L, -2, "__index");
	lua_setmetatable(L, -2);
}

/* Build the sandbox (run under lua_pcall: all of this may allocate). */
int
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
