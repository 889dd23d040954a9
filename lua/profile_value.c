/*
 * Values as the converters read them from Lua (whole numbers, strings
 * without NUL bytes, host paths made absolute) and as messages show them.
 * At the bottom with profile_ctx.c: it calls no other file of lua/.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

/* A value as a message shows it: quoted and cut short if a string. */
void
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

/*
 * A whole number in [min, max] from an integer, or a float with an integral
 * value. Returns 0, or a reason.
 */
const char *
profile_whole(lua_State *L, int idx, double min, double max, long long *v)
{
	lua_Number	f;

	if (lua_type(L, idx) != LUA_TNUMBER)
		return ("is not valid");
	if (lua_isinteger(L, idx)) {
		*v = lua_tointeger(L, idx);
		if ((double)*v < min || (double)*v > max)
			return ("is out of range");
		return (NULL);
	}
	f = lua_tonumber(L, idx);
	if (isnan(f) || f != floor(f))
		return ("is not a whole number");
	if (f < min || f > max)
		return ("is out of range");
	*v = (long long)f;
	return (NULL);
}

/* Is the string at idx free of NUL bytes? Its length in *len. */
int
profile_string_ok(lua_State *L, int idx, size_t *len)
{
	const char	*s = lua_tolstring(L, idx, len);

	return (s != NULL && strlen(s) == *len);
}

/* A string without NUL bytes, shorter than PATH_MAX: its text, or NULL. */
const char *
profile_plain_string(lua_State *L, int idx)
{
	const char	*value;
	size_t		 len;

	if (lua_type(L, idx) != LUA_TSTRING)
		return (NULL);
	value = lua_tolstring(L, idx, &len);
	if (len == 0 || strlen(value) != len || len >= PATH_MAX)
		return (NULL);
	return (value);
}

/* An absolute path on the host: real if it exists, else normalized. */
char *
profile_absolute(const char *path)
{
	char	*real;

	if ((real = realpath(path, NULL)) != NULL)
		return (real);
	return (util_path_absolute(path));
}
