/*
 * The share settings: shares (host trees the guest sees over 9p, with
 * ignore globs), ld_closure_extra, and how shares are shown; the check of
 * virtfs_security_model against read-write shares is profile_check.c's.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

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

void
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

/* shares[k].host: an existing directory; 0, or -1 (reported). */
static int
profile_share_host(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, struct profile_share *sh)
{
	struct stat	 sb;
	const char	*v;
	char		 what[64], *path;
	int		 floc, bad = 0;

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
		if (sh->create && stat(path, &sb) == -1 && errno == ENOENT) {
			/* Made at the start (share_check), not by a check. */
			sh->host = util_path_absolute(path);
			free(sh->guest);
			sh->guest = util_path_absolute(path);
		} else if (stat(path, &sb) == -1) {
			profile_error(ctx, floc, "%s: %s: %s", what, path,
			    strerror(errno));
			bad = 1;
		} else if (!S_ISDIR(sb.st_mode)) {
			profile_error(ctx, floc, "%s: %s: not a directory",
			    what, path);
			bad = 1;
		} else {
			sh->host = profile_absolute(path);
			/*
			 * The guest's default: the path as written, its
			 * links unresolved (a share of /lib64, a link to
			 * usr/lib64, is /lib64 in the guest).
			 */
			free(sh->guest);
			sh->guest = util_path_absolute(path);
		}
		free(path);
	}
	lua_pop(L, 1);
	return (bad ? -1 : 0);
}

/* shares[k].guest: absolute, not the guest system's; 0, or -1. */
static int
profile_share_guest(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, struct profile_share *sh)
{
	const char	*v;
	char		 what[64];
	int		 floc, bad = 0;

	snprintf(what, sizeof what, "shares[%d].guest", k);
	floc = profile_field_loc(L, e, "guest", eloc);
	lua_getfield(L, e, "guest");
	if (lua_isnil(L, -1))
		;	/* the host's path as written (profile_share_host) */
	else if ((v = profile_plain_string(L, -1)) == NULL || v[0] != '/') {
		profile_bad_as(ctx, L, -1, what, floc, v == NULL ?
		    "is not valid" : "is not absolute",
		    "an absolute path in the guest");
		bad = 1;
	} else {
		free(sh->guest);
		sh->guest = util_path_normalize(v);
	}
	if (sh->guest != NULL && profile_guest_reserved(sh->guest)) {
		profile_error(ctx, floc, "%s: %s is the guest system's own "
		    "(/, /proc, /sys and /dev cannot be shared over)", what,
		    sh->guest);
		bad = 1;
	}
	lua_pop(L, 1);
	return (bad ? -1 : 0);
}

/* shares[k].ignore: a list of globs; 0, or -1 (reported). */
static int
profile_share_ignore(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, struct profile_share *sh)
{
	const char	*v, *why;
	char		 what[64];
	size_t		 len;
	int		 floc, bad = 0, i, n;

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
	return (bad ? -1 : 0);
}

/*
 * create = true: a host directory missing when the profile loads is made
 * (mode 0755, its parents too) when a sandbox starts; for the outputs a
 * job brings back and a cache kept between jobs.
 */
static int
profile_share_create(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int eloc, struct profile_share *sh)
{
	char	what[64];
	int	floc, bad = 0;

	snprintf(what, sizeof what, "shares[%d].create", k);
	floc = profile_field_loc(L, e, "create", eloc);
	lua_getfield(L, e, "create");
	if (lua_type(L, -1) == LUA_TBOOLEAN)
		sh->create = lua_toboolean(L, -1);
	else if (!lua_isnil(L, -1)) {
		profile_bad_as(ctx, L, -1, what, floc, "is not valid",
		    "true (the host directory is made if missing) or false");
		bad = 1;
	}
	lua_pop(L, 1);
	return (bad ? -1 : 0);
}

/* One item of shares; returns 0 and fills sh, or -1 (reported). */
static int
profile_share(struct profile_ctx *ctx, lua_State *L, int e, int k,
    int tloc, void *item)
{
	struct profile_share	*sh = item;
	static const char	*fields[] = { "host", "guest", "mode",
	    "ignore", "exec", "create" };
	char			 what[64];
	int			 eloc, floc, bad;

	memset(sh, 0, sizeof *sh);
	snprintf(what, sizeof what, "shares[%d]", k);
	if (lua_type(L, e) != LUA_TTABLE) {
		profile_bad_as(ctx, L, e, what, tloc, "is not valid",
		    PROFILE_ACCEPTS_SHARE);
		return (-1);
	}
	eloc = profile_item_loc(L, e, tloc);
	bad = profile_fields(ctx, L, e, what, fields, 6, eloc);
	if (profile_share_create(ctx, L, e, k, eloc, sh) == -1)
		bad = 1;
	if (profile_share_host(ctx, L, e, k, eloc, sh) == -1)
		bad = 1;
	if (profile_share_guest(ctx, L, e, k, eloc, sh) == -1)
		bad = 1;

	snprintf(what, sizeof what, "shares[%d].mode", k);
	floc = profile_field_loc(L, e, "mode", eloc);
	lua_getfield(L, e, "mode");
	if (lua_isnil(L, -1) || (lua_type(L, -1) == LUA_TSTRING &&
	    strcmp(lua_tostring(L, -1), "ro") == 0))
		sh->rw = 0;
	else if (lua_type(L, -1) == LUA_TSTRING &&
	    strcmp(lua_tostring(L, -1), "rw") == 0)
		sh->rw = 1;
	else if (lua_type(L, -1) == LUA_TSTRING &&
	    strcmp(lua_tostring(L, -1), "cow") == 0)
		sh->cow = 1;
	else {
		profile_bad_as(ctx, L, -1, what, floc, "is not valid",
		    "\"ro\" (read-only), \"rw\" or \"cow\" (copy-on-write: "
		    "the guest's writes stay in the sandbox)");
		bad = 1;
	}
	lua_pop(L, 1);
	if (sh->create && !sh->rw && !bad) {
		profile_error(ctx, profile_field_loc(L, e, "create", eloc),
		    "shares[%d].create: only for mode = \"rw\" (a directory "
		    "made empty is of use only to be written)", k);
		bad = 1;
	}

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

	if (profile_share_ignore(ctx, L, e, k, eloc, sh) == -1)
		bad = 1;
	if (bad) {
		profile_share_free(sh);
		return (-1);
	}
	return (0);
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

void
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

/*
 * ld_closure_extra: library names as DT_NEEDED or dlopen would give them
 * (no slash, no blank), or absolute host paths; whether they exist is for
 * the run to say (the profile may be checked on another host).
 */
void
profile_convert_libs(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	char		**v = NULL, what[64];
	const char	 *str;
	size_t		  nv = 0, len;
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
	profile_strv_store(ctx, s, v, nv, bad);
}

void
profile_put_shares(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	const struct profile_share	*sh;
	size_t				 i;

	(void)s;
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
		profile_put_string(b, sh->rw ? "rw" : sh->cow ? "cow" : "ro", json);
		buf_printf(b, ", ");
		profile_put_key(b, "ignore", json);
		profile_put_list(b, sh->ignore, sh->nignore, json);
		buf_printf(b, ", ");
		profile_put_key(b, "exec", json);
		buf_printf(b, "%s", sh->exec ? "true" : "false");
		if (sh->create) {
			buf_printf(b, ", ");
			profile_put_key(b, "create", json);
			buf_printf(b, "true");
		}
		buf_printf(b, json ? "}" : " }");
	}
	buf_printf(b, json ? "]" : " }");
}

void
profile_free_shares(struct profile *p, const struct profile_setting *s)
{
	size_t	i;

	(void)s;
	for (i = 0; i < p->nshares; i++)
		profile_share_free(&p->shares[i]);
	free(p->shares);
	p->shares = NULL;
	p->nshares = 0;
}

void
profile_accepts_shares(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of %s", PROFILE_ACCEPTS_SHARE);
}

void
profile_accepts_libs(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of library names (\"libbz2.so.1.0\") "
	    "or absolute host paths");
}
