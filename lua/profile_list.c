/*
 * The list settings: what every one of them is checked for (profile_list;
 * item tables, profile_fields and profile_convert_items), the string lists
 * env and extra_args, and showing strings and lists, as Lua or JSON.
 */

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

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

/*
 * A setting written as a table of keys (env, serve_pool): where the
 * table was written (its own line when it is in the setting's file, else
 * the setting's), or 0 once a value that is no table is reported.
 */
int
profile_keyed_table(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	int	tloc;

	if (lua_type(L, idx) != LUA_TTABLE) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return (0);
	}
	if ((tloc = profile_table_loc(L, idx)) == 0 ||
	    PROFILE_LOC_FILE(loc) != PROFILE_LOC_FILE(tloc))
		tloc = loc;
	return (tloc);
}

/* env = {"NAME=VALUE", ...} or {NAME = "VALUE", ...}, or both mixed. */
void
profile_convert_env(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct buf	  shown = { 0 };
	char		**v = NULL;
	const char	 *key, *item, *value, *eq;
	size_t		  n = 0, i, klen, ilen, vlen;
	int		  tloc, eloc, bad = 0;

	if ((tloc = profile_keyed_table(ctx, L, idx, s, loc)) == 0)
		return;
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
	profile_strv_store(ctx, s, v, n, bad);
}

/*
 * A list setting: a table whose keys are 1..n. Returns n, or -1 once the
 * mistake is reported. *tloc: where the list was written.
 */
int
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
		    s->name, b.data, ctx->types[s->type].list_form != NULL ?
		    ctx->types[s->type].list_form : "a list: { ..., ... }");
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
int
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
int
profile_field_loc(lua_State *L, int idx, const char *key, int tloc)
{
	int	loc = profile_key_loc(L, idx, key);

	return (loc != 0 ? loc : tloc);
}

/* A list of tables, each item read, checked against the earlier ones. */
void
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

void
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
	profile_strv_store(ctx, s, v, nv, bad || refused);
}

void
profile_accepts_env(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a table of \"NAME=VALUE\" strings or of "
	    "NAME = \"VALUE\" fields");
}

void
profile_accepts_args(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a list of strings, QEMU's flags and their "
	    "values: { \"-device\", \"virtio-rng-device\" }");
}

void
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

void
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
void
profile_put_key(struct buf *b, const char *key, int json)
{
	if (json)
		buf_printf(b, "\"%s\":", key);
	else
		buf_printf(b, "%s = ", key);
}

/*
 * The end of converting a list of strings: v and its count n become the
 * setting's, or, after a mistake (bad), are freed and the setting is left
 * as it was.
 */
void
profile_strv_store(struct profile_ctx *ctx, const struct profile_setting *s,
    char **v, size_t n, int bad)
{
	size_t	i;

	if (bad) {
		for (i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, char **) = v;
	memcpy((char *)ctx->p + s->offset_n, &n, sizeof n);
}

/* A list of strings, its count at offset_n. */
void
profile_put_strs(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	size_t	n;

	memcpy(&n, (const char *)p + s->offset_n, sizeof n);
	profile_put_list(b, *PROFILE_CFIELD(p, s, profile_strv), n, json);
}

void
profile_free_strs(struct profile *p, const struct profile_setting *s)
{
	char	**v = *PROFILE_FIELD(p, s, char **);
	size_t	  i, n;

	memcpy(&n, (char *)p + s->offset_n, sizeof n);
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
	*PROFILE_FIELD(p, s, char **) = NULL;
	n = 0;
	memcpy((char *)p + s->offset_n, &n, sizeof n);
}
