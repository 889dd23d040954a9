/*
 * Where each setting was written.
 *
 * Messages must name the line of the offending setting, but Lua records
 * lines for instructions, not for table fields. Scanning the source for
 * "name =" is fooled by comments, strings, nested tables, conditionals and
 * settings assigned more than once; so instead the chunk runs under a line
 * and return hook that watches its tables being filled in:
 *
 * - In Lua every instruction between two line events belongs to one line,
 *   and a line event comes whenever a new line starts (or a loop jumps
 *   back). So at each event, a string key that has appeared in a table, or
 *   whose value has changed, since the previous event was set on the line
 *   that was running: ctx->loc (a file of the load and a line in it).
 * - The tables looked at are those in the registers of the profile's
 *   active Lua functions (of any of its files), temporaries included
 *   (lua_getlocal names them "(temporary)"): a table constructor fills a
 *   register, a local or an argument is in one. A return event does the
 *   same for the returning function, then moves ctx->loc back to the
 *   caller's line.
 * - What was seen is kept beside each table, in a weak-keyed registry
 *   table: per table, its first line and, per key, the value and line.
 *
 * This follows what the profile did, not how it is spelt: a key set in a
 * branch or a helper function gets the line that actually set it. List
 * items are stored when their constructor closes, so they get the table's
 * own line. A key the hook never saw (a table that lived only in upvalues)
 * falls back to its table's first line, then to the last line run. The
 * watching is bounded (PROFILE_TRACK_KEYS keys per table, PROFILE_TRACK_LEVELS
 * frames) and is paid for by the same time limit as the profile.
 */

#include <math.h>

#include <lua.h>

#include "profile_int.h"

/* Push the shadow of the table at idx, creating it if create is set. */
static int
profile_shadow(lua_State *L, int idx, int loc, int create)
{
	idx = lua_absindex(L, idx);
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_track);
	lua_pushvalue(L, idx);
	if (lua_rawget(L, -2) == LUA_TTABLE) {
		lua_remove(L, -2);
		return (1);
	}
	lua_pop(L, 2);
	if (!create)
		return (0);
	lua_rawgetp(L, LUA_REGISTRYINDEX, &profile_key_track);
	lua_createtable(L, 3, 0);
	lua_newtable(L);		/* [1]: key -> loc */
	lua_rawseti(L, -2, 1);
	lua_newtable(L);		/* [2]: key -> value */
	lua_rawseti(L, -2, 2);
	lua_pushinteger(L, loc);	/* [3]: first seen */
	lua_rawseti(L, -2, 3);
	lua_pushvalue(L, idx);
	lua_pushvalue(L, -2);
	lua_rawset(L, -4);
	lua_remove(L, -2);
	return (1);
}

/* Record that key (a string) of the table at t got value (top) at loc. */
void
profile_shadow_set(lua_State *L, int t, const char *key, int loc)
{
	int	v = lua_gettop(L);

	t = lua_absindex(L, t);
	profile_shadow(L, t, loc, 1);
	lua_rawgeti(L, -1, 1);
	lua_pushinteger(L, loc);
	lua_setfield(L, -2, key);
	lua_pop(L, 1);
	lua_rawgeti(L, -1, 2);
	lua_pushvalue(L, v);
	lua_setfield(L, -2, key);
	lua_settop(L, v);
}

/* Raw equality, except that NaN is the same as NaN. */
static int
profile_same(lua_State *L, int a, int b)
{
	if (lua_rawequal(L, a, b))
		return (1);
	return (lua_type(L, a) == LUA_TNUMBER && !lua_isinteger(L, a) &&
	    lua_type(L, b) == LUA_TNUMBER && !lua_isinteger(L, b) &&
	    isnan(lua_tonumber(L, a)) && isnan(lua_tonumber(L, b)));
}

/* Note the string keys of the table at idx that are new or changed. */
void
profile_track_table(lua_State *L, int idx, int loc)
{
	int	top = lua_gettop(L), locs, values, n = 0;

	idx = lua_absindex(L, idx);
	if (loc <= 0 || !lua_checkstack(L, 10))
		return;
	profile_shadow(L, idx, loc, 1);
	lua_rawgeti(L, -1, 1);
	locs = lua_gettop(L);
	lua_rawgeti(L, -2, 2);
	values = lua_gettop(L);
	lua_pushnil(L);
	while (lua_next(L, idx) != 0) {
		if (lua_type(L, -2) == LUA_TSTRING) {
			lua_pushvalue(L, -2);
			lua_rawget(L, values);
			if (!profile_same(L, -1, -2)) {
				lua_pushvalue(L, -3);
				lua_pushvalue(L, -3);
				lua_rawset(L, values);
				lua_pushvalue(L, -3);
				lua_pushinteger(L, loc);
				lua_rawset(L, locs);
			}
			lua_pop(L, 1);
		}
		lua_pop(L, 1);
		if (++n == PROFILE_TRACK_KEYS)
			break;
	}
	lua_settop(L, top);
}

/* Note changes in every table held by the profile's active functions. */
void
profile_track_stack(lua_State *L, struct profile_ctx *ctx, int top0)
{
	lua_Debug	d;
	int		level, n;

	if (ctx->loc <= 0)
		return;
	for (level = 0; level < PROFILE_TRACK_LEVELS; level++) {
		if (!lua_getstack(L, level, &d))
			break;
		if (!lua_getinfo(L, "S", &d) ||
		    profile_file_of(ctx, d.source) < 0)
			continue;
		/*
		 * In a hook, level 0's registers run up to the stack top at
		 * the hook's entry; above are the hook's own values.
		 */
		for (n = 1; level != 0 || n <= top0; n++) {
			if (lua_getlocal(L, &d, n) == NULL)
				break;
			if (lua_type(L, -1) == LUA_TTABLE)
				profile_track_table(L, -1, ctx->loc);
			lua_pop(L, 1);
		}
	}
}

/* Where key of the table at idx was set; 0 if unknown. */
int
profile_key_loc(lua_State *L, int idx, const char *key)
{
	int	loc = 0;

	if (!profile_shadow(L, idx, 0, 0))
		return (0);
	lua_rawgeti(L, -1, 1);
	if (lua_getfield(L, -1, key) == LUA_TNUMBER)
		loc = (int)lua_tointeger(L, -1);
	lua_pop(L, 3);
	return (loc);
}

/*
 * Where an item table ({ host = ..., mode = ... } in a list) was written:
 * its first field's line. Lua gives a constructor the line of the token
 * before its '{', so the table's own first line may be the one above.
 */
int
profile_item_loc(lua_State *L, int idx, int fallback)
{
	int	loc = 0, l;

	if (!profile_shadow(L, idx, 0, 0))
		return (fallback);
	lua_rawgeti(L, -1, 1);
	lua_pushnil(L);
	while (lua_next(L, -2) != 0) {
		l = (int)lua_tointeger(L, -1);
		if (l > 0 && (loc == 0 || l < loc))
			loc = l;
		lua_pop(L, 1);
	}
	lua_pop(L, 2);
	if (loc == 0 || PROFILE_LOC_FILE(loc) != PROFILE_LOC_FILE(fallback))
		return (fallback);
	return (loc);
}

/* Where the table at idx was first seen; 0 if unknown. */
int
profile_table_loc(lua_State *L, int idx)
{
	int	loc = 0;

	if (!profile_shadow(L, idx, 0, 0))
		return (0);
	if (lua_rawgeti(L, -1, 3) == LUA_TNUMBER)
		loc = (int)lua_tointeger(L, -1);
	lua_pop(L, 2);
	return (loc);
}
