/*
 * The serve_pool setting: per profile, how many sandboxes "qsup serve"
 * keeps booted and paused for creates to take (core/serve/serve_pool.c).
 * Written { default = 2, ["ci"] = 1 }: a key is a profile's name or path
 * as a create's "profile" gives it, or "default" for the server's own
 * (--profile and --set); a value a count, 0 to PROFILE_POOL_MAX. Stored
 * as one line per entry, "COUNT NAME", sorted by name; entries of 0 are
 * dropped (they keep nothing).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lua.h>

#include "profile_int.h"

/* A key a create's "profile" could give: printable, no blank, not empty. */
static int
profile_pool_name_ok(const char *s, size_t len)
{
	size_t	i;

	if (len == 0 || len > 255 || strlen(s) != len)
		return (0);
	for (i = 0; i < len; i++) {
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return (0);
	}
	return (1);
}

static int
profile_pool_cmp(const void *a, const void *b)
{
	return (strcmp(strchr(*(char *const *)a, ' '),
	    strchr(*(char *const *)b, ' ')));
}

void
profile_convert_pool(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	struct buf	  shown = { 0 };
	char		**v = NULL;
	const char	 *name, *why;
	long long	  count;
	size_t		  n = 0, len;
	int		  tloc, eloc, bad = 0, t;

	if ((tloc = profile_keyed_table(ctx, L, idx, s, loc)) == 0)
		return;
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		t = lua_gettop(L);
		buf_consume(&shown, shown.len);
		profile_show(&shown, L, t - 1);
		if (lua_type(L, t - 1) != LUA_TSTRING) {
			profile_error(ctx, tloc, "serve_pool: the key %s is not "
			    "a profile's name (or \"default\")", shown.data);
			bad = 1;
			goto next;
		}
		name = lua_tolstring(L, t - 1, &len);
		if ((eloc = profile_key_loc(L, idx, name)) == 0)
			eloc = tloc;
		if (!profile_pool_name_ok(name, len)) {
			profile_error(ctx, eloc, "serve_pool: %s is not a "
			    "profile's name (or \"default\"): printable, no "
			    "blanks, 1 to 255 bytes", shown.data);
			bad = 1;
			goto next;
		}
		if ((why = profile_whole(L, t, 0, PROFILE_POOL_MAX,
		    &count)) != NULL) {
			buf_consume(&shown, shown.len);
			profile_show(&shown, L, t);
			profile_error(ctx, eloc, "serve_pool: %s = %s %s: a "
			    "count of sandboxes, 0 to %d", name, shown.data,
			    why, PROFILE_POOL_MAX);
			bad = 1;
			goto next;
		}
		if (count > 0) {
			v = xreallocarray(v, n + 1, sizeof *v);
			xasprintf(&v[n++], "%lld %s", count, name);
		}
next:
		lua_settop(L, t - 1);
	}
	buf_free(&shown);
	if (n > 1)
		qsort(v, n, sizeof *v, profile_pool_cmp);
	profile_strv_store(ctx, s, v, n, bad);
}

void
profile_accepts_pool(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a table of profile names to counts, 0 to %d: "
	    "{ default = 2, [\"ci\"] = 1 }", PROFILE_POOL_MAX);
}

/* As Lua (or JSON) that loads back to the same entries. */
void
profile_put_pool(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	char *const	*v = *PROFILE_CFIELD(p, s, profile_strv);
	const char	*name;
	size_t		 n, i;

	memcpy(&n, (const char *)p + s->offset_n, sizeof n);
	buf_printf(b, "{");
	for (i = 0; i < n; i++) {
		name = strchr(v[i], ' ') + 1;
		buf_printf(b, "%s", i > 0 ? (json ? "," : ", ") : json ? "" :
		    " ");
		if (json) {
			buf_json_string(b, name);
			buf_printf(b, ":");
		} else {
			buf_printf(b, "[");
			profile_put_string(b, name, 0);
			buf_printf(b, "] = ");
		}
		buf_printf(b, "%.*s", (int)(strchr(v[i], ' ') - v[i]), v[i]);
	}
	buf_printf(b, json ? "}" : n > 0 ? " }" : "}");
}

/* The count entry name asks for in p: 0 if none. */
int
profile_pool_count(const struct profile *p, const char *name)
{
	size_t	i;

	for (i = 0; i < p->nserve_pool; i++) {
		if (strcmp(strchr(p->serve_pool[i], ' ') + 1, name) == 0)
			return (atoi(p->serve_pool[i]));
	}
	return (0);
}
