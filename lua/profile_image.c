/*
 * Disk images, the profile's side: the catalog (catalog.lua, compiled
 * in), given to every profile as qsup.images through read-only views;
 * image_sha256; and, once the profile ran, turning image into what the
 * host downloads (image_url, image_sums_url) and the glibc the image
 * ships (image_glibc), from the catalog's own tables, which no profile
 * can reach.
 */

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "profile_int.h"

/* The catalog (builtin.S), NUL-terminated. */
extern const char builtin_catalog[];

const char	profile_key_catalog = 'C';
const char	profile_key_views = 'V';

#define PROFILE_CATALOG_NAMES	64	/* names listed in a message */

/* -------------------------------------------------------------------------
 * Read-only views. A view is an empty table whose metatable reads through
 * to the real one (tables read as their own views), refuses writes, and
 * is protected (__metatable), so getmetatable cannot hand the real table
 * out and setmetatable cannot change it. rawset() on a view changes the
 * view only, which the loader never reads.
 */

static void	profile_view_push(lua_State *, int);

static int
profile_view_index_cb(lua_State *L)
{
	lua_settop(L, 2);
	if (lua_rawget(L, lua_upvalueindex(1)) == LUA_TTABLE)
		profile_view_push(L, -1);
	return (1);
}

static int
profile_view_newindex_cb(lua_State *L)
{
	return (luaL_error(L, "qsup.images is read-only; copy what you "
	    "change into a table of your own"));
}

static int
profile_view_len_cb(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)lua_rawlen(L, lua_upvalueindex(1)));
	return (1);
}

/* pairs()'s iterator: the real table's keys, tables as views. */
static int
profile_view_next_cb(lua_State *L)
{
	lua_settop(L, 2);
	if (lua_next(L, lua_upvalueindex(1)) == 0) {
		lua_pushnil(L);
		return (1);
	}
	if (lua_type(L, -1) == LUA_TTABLE)
		profile_view_push(L, -1);
	return (2);
}

/* __pairs: the view, never the real table, goes back to the loop. */
static int
profile_view_pairs_cb(lua_State *L)
{
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushcclosure(L, profile_view_next_cb, 1);
	lua_pushvalue(L, 1);
	lua_pushnil(L);
	return (3);
}

/* Push the view of the table at idx, made once per table, then kept. */
static void
profile_view_push(lua_State *L, int idx)
{
	static const struct {
		const char	*name;
		lua_CFunction	 fn;
	} mms[] = {
		{ "__index", profile_view_index_cb },
		{ "__len", profile_view_len_cb },
		{ "__pairs", profile_view_pairs_cb },
	};
	size_t	i;
	int	views;

	idx = lua_absindex(L, idx);
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_views);
	views = lua_gettop(L);
	lua_pushvalue(L, idx);
	if (lua_rawget(L, views) == LUA_TTABLE) {
		lua_remove(L, views);
		lua_replace(L, idx);
		return;
	}
	lua_pop(L, 1);
	lua_newtable(L);			/* the view */
	lua_createtable(L, 0, 5);		/* its metatable */
	for (i = 0; i < sizeof mms / sizeof mms[0]; i++) {
		lua_pushvalue(L, idx);
		lua_pushcclosure(L, mms[i].fn, 1);
		lua_setfield(L, -2, mms[i].name);
	}
	lua_pushcfunction(L, profile_view_newindex_cb);
	lua_setfield(L, -2, "__newindex");
	lua_pushliteral(L, "read-only");
	lua_setfield(L, -2, "__metatable");
	lua_setmetatable(L, -2);
	lua_pushvalue(L, idx);
	lua_pushvalue(L, -2);
	lua_rawset(L, views);
	lua_remove(L, views);
	lua_replace(L, idx);
}

/* A copy of the fields of table t (a library) named in names. */
static void
profile_catalog_lib(lua_State *L, int t, const char *const *names)
{
	lua_newtable(L);
	for (; *names != NULL; names++) {
		lua_getfield(L, t, *names);
		lua_setfield(L, -2, *names);
	}
}

/*
 * Run catalog.lua (before any profile code: setup), keep what it returns
 * in the registry for the loader, and push qsup.images, its view. The
 * chunk's environment holds copies of the library functions it may use,
 * so that a profile's changes to its own globals do not reach it.
 */
void
profile_catalog_push(lua_State *L)
{
	static const char	*base[] = { "error", "ipairs", "next", "pairs",
	    "select", "tonumber", "tostring", "type", NULL };
	static const char	*str[] = { "find", "format", "gsub", "len",
	    "lower", "match", "rep", "sub", "upper", NULL };
	static const char	*tab[] = { "concat", "insert", "sort", "unpack",
	    NULL };
	int			 env;

	lua_newtable(L);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_views);

	lua_pushglobaltable(L);
	profile_catalog_lib(L, lua_gettop(L), base);
	env = lua_gettop(L);
	lua_getglobal(L, LUA_STRLIBNAME);
	profile_catalog_lib(L, lua_gettop(L), str);
	lua_setfield(L, env, LUA_STRLIBNAME);
	lua_pop(L, 1);
	lua_getglobal(L, LUA_TABLIBNAME);
	profile_catalog_lib(L, lua_gettop(L), tab);
	lua_setfield(L, env, LUA_TABLIBNAME);
	lua_pop(L, 1);

	if (luaL_loadbufferx(L, builtin_catalog, strlen(builtin_catalog),
	    "=qsup.images", "t") != LUA_OK)
		lua_error(L);
	lua_pushvalue(L, env);
	lua_setupvalue(L, -2, 1);
	lua_call(L, 0, 1);
	if (!lua_istable(L, -1))
		luaL_error(L, "qsup.images: the catalog is no table");
	lua_replace(L, env - 1);		/* the global table's slot */
	lua_settop(L, env - 1);
	lua_pushvalue(L, -1);
	lua_rawsetp(L, LUA_REGISTRYINDEX, &profile_key_catalog);
	profile_view_push(L, -1);
}

/* -------------------------------------------------------------------------
 * image_sha256.
 */

void
profile_accepts_sha256(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a SHA-256 digest: 64 hexadecimal digits, as "
	    "sha256sum prints them, in either case");
}

/* Does s start with 64 hex digits? */
static int
profile_is_sha256(const char *s)
{
	size_t	i;

	for (i = 0; i < 64; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return (0);
	}
	return (1);
}

/* "sha256:HEX", a line of SHA256SUMS: what to write instead. */
char *
profile_hint_sha256(const char *v, const struct profile_setting *s)
{
	char	*h = NULL;

	(void)s;
	if (strncasecmp(v, "sha256:", 7) == 0 && strlen(v) == 71 &&
	    profile_is_sha256(v + 7))
		xasprintf(&h, "write the digits without \"%.7s\"", v);
	else if (strlen(v) > 64 && profile_is_sha256(v) &&
	    isspace((unsigned char)v[64]))
		xasprintf(&h, "write the 64 digits alone, without the "
		    "file name");
	else if (strlen(v) == 128 && strspn(v, "0123456789abcdefABCDEF") ==
	    128)
		xasprintf(&h, "that is a SHA-512 digest; pin the image's "
		    "SHA-256");
	return (h);
}

void
profile_convert_sha256(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;
	char		*v;
	size_t		 i;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if (strlen(value) != 64 || !profile_is_sha256(value)) {
		profile_bad(ctx, L, idx, s, loc, "is not 64 hexadecimal "
		    "digits");
		return;
	}
	v = xstrdup(value);
	for (i = 0; v[i] != '\0'; i++)
		v[i] = (char)tolower((unsigned char)v[i]);
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = v;
}

/* -------------------------------------------------------------------------
 * The image: what it resolved to, shown and freed.
 */

/* Under image in "qsup profile show": what is downloaded, as comments. */
void
profile_image_notes(struct buf *b, const struct profile *p,
    const struct profile_setting *s, const char *at)
{
	size_t	start;

	(void)s;
	(void)at;
	if (p->image_url == NULL)
		return;
	buf_printf(b, "\t-- image_url = ");
	profile_put_string(b, p->image_url, 0);
	buf_printf(b, ",\n");
	start = b->len;
	buf_printf(b, "\t-- image_sums_url = ");
	profile_put_string(b, p->image_sums_url, 0);
	buf_printf(b, ",");
	if (p->image_sums_url == NULL) {
		do
			buf_add(b, " ", 1);
		while (b->len - start < 44);
		buf_printf(b, "-- SHA256SUMS or SHA512SUMS beside it");
	}
	buf_printf(b, "\n");
	if (p->image_glibc != NULL)
		buf_printf(b, "\t-- image_glibc = \"%s\",\n", p->image_glibc);
}

/* In JSON, image's "url", "sums_url" and "glibc" (null: not known). */
void
profile_image_json(struct buf *b, const struct profile *p)
{
	buf_printf(b, ",\"url\":");
	profile_put_string(b, p->image_url, 1);
	buf_printf(b, ",\"sums_url\":");
	profile_put_string(b, p->image_sums_url, 1);
	buf_printf(b, ",\"glibc\":");
	profile_put_string(b, p->image_glibc, 1);
}

void
profile_image_free(struct profile *p, const struct profile_setting *s)
{
	profile_free_str(p, s);
	free(p->image_url);
	p->image_url = NULL;
	free(p->image_sums_url);
	p->image_sums_url = NULL;
	free(p->image_glibc);
	p->image_glibc = NULL;
}

/* -------------------------------------------------------------------------
 * Resolution, after the profile ran.
 */

/* Push t[k], raw; its type. */
static int
profile_raw_field(lua_State *L, int t, const char *k)
{
	t = lua_absindex(L, t);
	lua_pushstring(L, k);
	return (lua_rawget(L, t));
}

/* base + "/" + file, one slash between them. */
static char *
profile_url_join(const char *base, const char *file)
{
	size_t	 len = strlen(base);
	char	*url;

	xasprintf(&url, "%s%s%s", base, len > 0 && base[len - 1] == '/' ?
	    "" : "/", file);
	return (url);
}

/* The last part of a URL: "SHA512SUMS". */
static const char *
profile_url_file(const char *url)
{
	const char	*slash = strrchr(url, '/');

	return (slash == NULL ? url : slash + 1);
}

/* A name the catalog does not have: said, with the names it has. */
static void
profile_image_unknown(struct profile_ctx *ctx, lua_State *L, int cat,
    int loc)
{
	const char	*names[PROFILE_CATALOG_NAMES], *hint;
	struct buf	 b = { 0 };
	size_t		 n = 0, i;
	int		 list, top = lua_gettop(L);

	profile_raw_field(L, cat, "names");
	list = lua_gettop(L);
	for (i = 1; i <= lua_rawlen(L, list) && n < PROFILE_CATALOG_NAMES;
	    i++) {
		/* The list keeps the string alive once it is popped. */
		if (lua_rawgeti(L, list, (lua_Integer)i) == LUA_TSTRING) {
			names[n] = lua_tostring(L, -1);
			buf_printf(&b, "%s%s", n == 0 ? "" : ", ", names[n]);
			n++;
		}
		lua_pop(L, 1);
	}
	hint = profile_closest(ctx->p->image, names, n);
	profile_error(ctx, loc, "image: \"%s\" is not in qsup's catalog%s%s%s; "
	    "it has %s; set image_base_url to take it from a mirror, or "
	    "give an http(s) URL or a file", ctx->p->image,
	    hint != NULL ? " (did you mean \"" : "", hint != NULL ? hint : "",
	    hint != NULL ? "\"?)" : "", b.data != NULL ? b.data : "nothing");
	buf_free(&b);
	lua_settop(L, top);
}

/*
 * image = NAME: the catalog's entry for the host's architecture, its file
 * from image_base_url when that is set (a mirror); a name the catalog
 * does not have, from image_base_url only.
 */
static void
profile_image_name(struct profile_ctx *ctx, lua_State *L, int loc)
{
	struct profile	*p = ctx->p;
	const char	*arch = NULL, *url, *sums, *file;
	int		 top = lua_gettop(L), cat, entry;

	luaL_checkstack(L, 16, "the image catalog");
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_catalog);
	cat = lua_gettop(L);
	if (profile_raw_field(L, cat, "arches") == LUA_TTABLE &&
	    profile_raw_field(L, -1, facts_arch()) == LUA_TSTRING)
		arch = lua_tostring(L, -1);
	if (profile_raw_field(L, cat, "entries") != LUA_TTABLE ||
	    profile_raw_field(L, -1, p->image) != LUA_TTABLE) {
		if (p->image_base_url != NULL)
			p->image_url = profile_url_join(p->image_base_url,
			    p->image);
		else
			profile_image_unknown(ctx, L, cat, loc);
		lua_settop(L, top);
		return;
	}
	entry = lua_gettop(L);
	if (arch == NULL ||
	    profile_raw_field(L, entry, "url") != LUA_TTABLE ||
	    profile_raw_field(L, -1, arch) != LUA_TSTRING ||
	    profile_raw_field(L, entry, "sums") != LUA_TTABLE ||
	    profile_raw_field(L, -1, arch) != LUA_TSTRING ||
	    profile_raw_field(L, entry, "file") != LUA_TTABLE ||
	    profile_raw_field(L, -1, arch) != LUA_TSTRING) {
		profile_error(ctx, loc, "image: \"%s\" has no image for this "
		    "host's architecture (%s) in qsup's catalog, which has "
		    "amd64 and arm64 ones", p->image, facts_arch());
		lua_settop(L, top);
		return;
	}
	url = lua_tostring(L, entry + 2);
	sums = lua_tostring(L, entry + 4);
	file = lua_tostring(L, entry + 6);
	if (p->image_base_url != NULL) {
		p->image_url = profile_url_join(p->image_base_url, file);
		p->image_sums_url = profile_url_join(p->image_base_url,
		    profile_url_file(sums));
	} else {
		p->image_url = xstrdup(url);
		p->image_sums_url = xstrdup(sums);
	}
	if (profile_raw_field(L, entry, "glibc") == LUA_TSTRING)
		p->image_glibc = xstrdup(lua_tostring(L, -1));
	lua_settop(L, top);
}

/*
 * Once the settings are converted and checked (profile_check.c): what the
 * host downloads for image, from image itself or the catalog, written at
 * loc; a name is looked up only if image_base_url was taken (!base_bad).
 */
void
profile_image_resolve(struct profile_ctx *ctx, lua_State *L, int loc,
    int base_bad)
{
	struct profile	*p = ctx->p;

	if (p->image_kind == PROFILE_IMAGE_URL)
		p->image_url = xstrdup(p->image);
	else if (p->image_kind == PROFILE_IMAGE_NAME && !base_bad)
		profile_image_name(ctx, L, loc);
}
