/*
 * include(NAME) and extend(NAME, {...}): a profile builds on another of
 * its own directory tree, or on a built-in one (compiled in, builtin.S).
 * Each file keeps its own line numbers in messages; a cycle is refused,
 * and so is a file outside the tree of the profile loaded.
 */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

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

const char *
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

void
profile_builtin_names(struct buf *b)
{
	size_t	i;

	for (i = 0; i < PROFILE_NBUILTINS; i++)
		buf_printf(b, "%s%s", i == 0 ? "" : ", ",
		    profile_builtins[i].name);
}

/* A profile file's text, or NULL and *cause ("PATH: why"). */
char *
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
int
profile_include_cb(lua_State *L)
{
	struct profile_ctx	*ctx = profile_ctx(L);
	const char		*name = luaL_checkstring(L, 1);

	lua_settop(L, 1);
	profile_include(L, ctx, name);
	return (1);
}

/* extend(NAME, {...}): include(NAME) with these settings replaced. */
int
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
