/*
 * The registries setting: per OCI registry, the mirrors a docker:// pull
 * tries first and whether plain http is allowed (as registries.conf's
 * "mirror" and "insecure" lines, which image_ref.c merges with it).
 * Stored as one line per registry, "REG 0|1 URL...", the 1 for insecure.
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

static const char *const profile_registry_fields[] = { "mirrors", "insecure" };

/* A registry as a reference names one: host[:port], no scheme or path. */
static int
profile_registry_name_ok(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > 255 || strlen(s) != len)
		return (0);
	for (i = 0; i < len; i++) {
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "0123456789.-_:[]", s[i]) == NULL)
			return (0);
	}
	return (1);
}

/* Is the host of registry (or URL authority) reg loopback? */
static int
profile_registry_loopback(const char *reg)
{
	size_t	n = strcspn(reg, ":/");

	return ((n == 9 && strncmp(reg, "localhost", 9) == 0) ||
	    (n >= 4 && strncmp(reg, "127.", 4) == 0) ||
	    strncmp(reg, "[::1]", 5) == 0);
}

/* Is registry reg named insecure in the table at idx? */
static int
profile_registry_insecure(lua_State *L, int idx, const char *reg, size_t n)
{
	int	yes = 0;

	lua_pushlstring(L, reg, n);
	if (lua_rawget(L, idx) == LUA_TTABLE) {
		lua_getfield(L, -1, "insecure");
		yes = lua_toboolean(L, -1);
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return (yes);
}

/* The mirrors of reg (a list at the top of L) onto line; 0, or -1. */
static int
profile_registry_mirrors(struct profile_ctx *ctx, lua_State *L, int idx,
    const char *reg, int eloc, struct buf *line)
{
	struct buf	 shown = { 0 };
	const char	*u, *host;
	lua_Integer	 n, k;
	size_t		 len;
	int		 bad = 0, t = lua_gettop(L);

	if (lua_type(L, t) != LUA_TTABLE) {
		profile_show(&shown, L, t);
		profile_error(ctx, eloc, "registries: %s: mirrors is %s, not "
		    "a list of URLs", reg, shown.data);
		buf_free(&shown);
		return (-1);
	}
	n = (lua_Integer)lua_rawlen(L, t);
	lua_pushnil(L);
	while (lua_next(L, t) != 0) {
		lua_pop(L, 1);
		if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 ||
		    lua_tointeger(L, -1) > n) {
			profile_show(&shown, L, -1);
			profile_error(ctx, eloc, "registries: %s: mirrors has "
			    "a field %s; expected a list of URLs", reg,
			    shown.data);
			lua_pop(L, 1);
			buf_free(&shown);
			return (-1);
		}
	}
	for (k = 1; k <= n; k++) {
		lua_rawgeti(L, t, k);
		buf_consume(&shown, shown.len);
		profile_show(&shown, L, -1);
		u = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) :
		    NULL;
		host = u == NULL ? NULL : strncmp(u, "https://", 8) == 0 ?
		    u + 8 : strncmp(u, "http://", 7) == 0 ? u + 7 : NULL;
		if (host == NULL || strlen(u) != len ||
		    strcspn(u, " \t\r\n") != len || *host == '\0' ||
		    *host == '/') {
			profile_error(ctx, eloc, "registries: %s: mirror %s is "
			    "not an http(s) URL", reg, shown.data);
			bad = 1;
		} else if (host == u + 7 && !profile_registry_loopback(host) &&
		    !profile_registry_insecure(L, idx, host,
		    strcspn(host, "/"))) {
			profile_error(ctx, eloc, "registries: %s: mirror %s is "
			    "plain http, allowed only on loopback or for a "
			    "registry with insecure = true", reg, shown.data);
			bad = 1;
		} else
			buf_printf(line, " %.*s", (int)(len - (u[len - 1] ==
			    '/')), u);
		lua_pop(L, 1);
	}
	buf_free(&shown);
	return (bad ? -1 : 0);
}

static int
profile_registry_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

void
profile_convert_registries(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct buf	  shown = { 0 }, line = { 0 };
	char		**v = NULL;
	const char	 *reg;
	size_t		  n = 0, len;
	int		  tloc, eloc, bad = 0, t, insecure;

	if (lua_type(L, idx) != LUA_TTABLE) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if ((tloc = profile_table_loc(L, idx)) == 0 ||
	    PROFILE_LOC_FILE(loc) != PROFILE_LOC_FILE(tloc))
		tloc = loc;
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		t = lua_gettop(L);
		buf_consume(&shown, shown.len);
		profile_show(&shown, L, t - 1);
		if (lua_type(L, t - 1) != LUA_TSTRING) {
			profile_error(ctx, tloc, "registries: the key %s is not "
			    "a registry name (\"docker.io\", \"host:5000\")",
			    shown.data);
			bad = 1;
			goto next;
		}
		reg = lua_tolstring(L, t - 1, &len);
		if ((eloc = profile_key_loc(L, idx, reg)) == 0)
			eloc = tloc;
		if (!profile_registry_name_ok(reg, len)) {
			profile_error(ctx, eloc, "registries: %s is not a "
			    "registry name (\"docker.io\", \"host:5000\")",
			    shown.data);
			bad = 1;
			goto next;
		}
		if (lua_type(L, t) != LUA_TTABLE) {
			buf_consume(&shown, shown.len);
			profile_show(&shown, L, t);
			profile_error(ctx, eloc, "registries: %s is %s, not "
			    "{ mirrors = { URL, ... }, insecure = BOOL }", reg,
			    shown.data);
			bad = 1;
			goto next;
		}
		buf_consume(&shown, shown.len);
		buf_printf(&shown, "registries: %s", reg);
		if (profile_fields(ctx, L, t, shown.data,
		    profile_registry_fields, 2, eloc)) {
			bad = 1;
			goto next;
		}
		lua_getfield(L, t, "insecure");
		if (!lua_isnil(L, -1) && !lua_isboolean(L, -1)) {
			profile_error(ctx, eloc, "registries: %s: insecure is "
			    "not true or false", reg);
			bad = 1;
		}
		insecure = lua_toboolean(L, -1);
		lua_pop(L, 1);
		buf_consume(&line, line.len);
		buf_printf(&line, "%s %d", reg, insecure);
		lua_getfield(L, t, "mirrors");
		if (!lua_isnil(L, -1) &&
		    profile_registry_mirrors(ctx, L, idx, reg, eloc, &line) == -1)
			bad = 1;
		lua_pop(L, 1);
		if (!bad) {
			v = xreallocarray(v, n + 1, sizeof *v);
			v[n++] = xstrdup(line.data);
		}
next:
		lua_settop(L, t - 1);
	}
	buf_free(&shown);
	buf_free(&line);
	if (n > 1)
		qsort(v, n, sizeof *v, profile_registry_cmp);
	profile_strv_store(ctx, s, v, n, bad);
}

void
profile_accepts_registries(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a table of registries: { [\"docker.io\"] = { mirrors "
	    "= { \"https://mirror.example.org\" } }, [\"reg.lan:5000\"] = "
	    "{ insecure = true } }");
}

/* As Lua (or JSON) that loads back to the same lines. */
void
profile_put_registries(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	char *const	*v = *PROFILE_CFIELD(p, s, profile_strv);
	char		*copy, *w, *save;
	size_t		 n, i, k;

	memcpy(&n, (const char *)p + s->offset_n, sizeof n);
	buf_printf(b, "{");
	for (i = 0; i < n; i++) {
		copy = xstrdup(v[i]);
		w = strtok_r(copy, " ", &save);
		buf_printf(b, "%s", i > 0 ? ", " : json ? "" : " ");
		if (json)
			buf_json_string(b, w);
		else
			buf_printf(b, "[\"%s\"]", w);
		buf_printf(b, json ? ":{" : " = { ");
		w = strtok_r(NULL, " ", &save);
		profile_put_key(b, "insecure", json);
		buf_printf(b, "%s, ", strcmp(w, "1") == 0 ? "true" : "false");
		profile_put_key(b, "mirrors", json);
		buf_printf(b, json ? "[" : "{ ");
		for (k = 0; (w = strtok_r(NULL, " ", &save)) != NULL; k++) {
			if (k > 0)
				buf_printf(b, ", ");
			profile_put_string(b, w, json);
		}
		buf_printf(b, json ? "]}" : " } }");
		free(copy);
	}
	buf_printf(b, json ? "}" : n > 0 ? " }" : "}");
}
