/*
 * One load's context, at the bottom of the profile engine: reached from
 * Lua through the allocator's ud (profile_ctx), the registry keys of the
 * state it runs, the files of the load (the profile, what it includes,
 * each --set) and where in them something was written. It calls no other
 * file of lua/: every other file may call it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

const char	profile_key_track = 'T';
const char	profile_key_sandbox = 'S';
const char	profile_key_defenv = 'D';

/* The load a Lua state runs: the allocator's ud (profile_run). */
struct profile_ctx *
profile_ctx(lua_State *L)
{
	void	*ud;

	lua_getallocf(L, &ud);
	return (ud);
}

/* -------------------------------------------------------------------------
 * The files of a load.
 */

/* Directory part of a path, as a base for relative ones; NULL: ".". */
char *
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
int
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
int
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
int
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

/* What the files of a load hold. */
void
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
 * Locations: a file of the load and a line in it (PROFILE_LOC).
 */

/* "FILE:LINE", "FILE" or "--set K=V" for a location. */
char *
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
char *
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
