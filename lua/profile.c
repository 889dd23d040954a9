/*
 * Profiles: a Lua chunk that returns a table of settings (or passes one to
 * sandbox{...}), run in a fresh, sandboxed lua_State (profile_lua.c) and
 * checked against profile_schema (profile_schema.c), the one description
 * of every setting. All problems of a profile are reported at once, one
 * per line, each as "FILE:LINE: ..." (profile_error.c). This file, the
 * loader, runs a load from its text to a struct profile, above every other
 * file of the engine but the completion's.
 *
 * Settings given on the command line (--set NAME=VALUE) go through the
 * same checks, and each setting remembers where it came from, for "qsup
 * profile show".
 *
 * Growing the language: a new setting is a row in profile_schema and, if it
 * needs one, a new PROFILE_T_* type with its row of operations in
 * profile_types (profile_schema.c). Everything else (defaults, unknown-key
 * suggestions, help, error lines, show) follows from the tables.
 */
#include <sys/stat.h>

#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

/* -------------------------------------------------------------------------
 * Defaults, the command line, and the profile as a whole.
 */

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
 * Push the value of --set NAME=VALUE: nil; true, false or a number but
 * for a setting of text; a Lua table or string literal; else VALUE as a
 * string (for a list setting, a list of it). Returns -1 if it is not
 * valid Lua (reported).
 */
static int
profile_set_value(struct profile_ctx *ctx, lua_State *L, int fi,
    const struct profile_setting *s, const char *value)
{
	char	*code;
	int	 status;

	if (strcmp(value, "nil") == 0) {
		lua_pushnil(L);
		return (0);
	}
	/* A digest of digits alone, a file named "true": still strings. */
	if (!profile_types[s->type].textual) {
		if (strcmp(value, "true") == 0 || strcmp(value, "false") == 0) {
			lua_pushboolean(L, value[0] == 't');
			return (0);
		}
		if (*value != '\0' && lua_stringtonumber(L, value) != 0)
			return (0);
	}
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
	if (profile_types[s->type].set_list) {
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
	profile_check(ctx, L, bad);	/* settings together; image_url */
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
char *
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

/* Run a profile's text and check it; the common part of the loaders. */
static int
profile_run(struct profile *p, enum profile_file_kind kind, const char *name,
    const char *text, size_t len, char *const *sets, size_t nsets,
    char **cause)
{
	struct profile_ctx	 ctx;
	lua_State		*L = NULL;
	char			*key, *dir;
	int			 status, rc = -1;
	double			 t0 = util_now();

	memset(p, 0, sizeof *p);
	memset(&ctx, 0, sizeof ctx);
	*cause = NULL;
	ctx.p = p;
	ctx.types = profile_types;
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
	*cause = profile_error_text(&ctx);
	if (rc != 0) {
		profile_free(p);
		memset(p, 0, sizeof *p);
	}
	profile_files_free(&ctx);
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
	const struct profile_setting	*s;
	size_t				 i;

	free(p->path);
	p->path = NULL;
	for (i = 0; i < PROFILE_NSETTINGS; i++) {
		s = &profile_schema[i];
		if (profile_types[s->type].free != NULL)
			profile_types[s->type].free(p, s);
	}
	if (p->origins != NULL) {
		for (i = 0; i < PROFILE_NSETTINGS; i++)
			free(p->origins[i].at);
		free(p->origins);
		p->origins = NULL;
	}
}
