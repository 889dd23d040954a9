/*
 * The errors of a load, at the bottom of the profile engine with
 * profile_ctx.c and profile_value.c, whose helpers are all it calls: every
 * error is kept with its location (one line each, "FILE:LINE: ..."), and
 * they are reported at once, sorted by place. Here too is what every
 * setting type calls to report a bad value (profile_bad: what the type
 * accepts, and what to write instead of a near miss, from the type's row
 * of ctx->types) and the closest of some names to a misspelt one.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "profile_int.h"

/*
 * Record an error (text is taken). One error is one line, whatever a
 * profile's strings or a --set hold: control characters are escaped.
 */
void
profile_add_error(struct profile_ctx *ctx, int loc, char *text)
{
	struct profile_error	*e;
	struct buf		 b = { 0 };
	const unsigned char	*u;

	for (u = (const unsigned char *)text; *u != '\0'; u++) {
		if (*u < 0x20 || *u == 0x7f)
			break;
	}
	if (*u != '\0') {
		for (u = (const unsigned char *)text; *u != '\0'; u++) {
			if (*u == '\n')
				buf_printf(&b, "\\n");
			else if (*u == '\t')
				buf_printf(&b, "\\t");
			else if (*u < 0x20 || *u == 0x7f)
				buf_printf(&b, "\\%03o", *u);
			else
				buf_add(&b, u, 1);
		}
		free(text);
		text = b.data;
	}
	ctx->errs = xreallocarray(ctx->errs, ctx->nerrs + 1, sizeof *ctx->errs);
	e = &ctx->errs[ctx->nerrs++];
	e->loc = loc;
	e->text = text;
}

static void
profile_verror(struct profile_ctx *ctx, int loc, const char *fmt, va_list ap)
{
	char	*msg, *where, *text;

	xvasprintf(&msg, fmt, ap);
	where = profile_loc_text(ctx, loc);
	xasprintf(&text, "%s: %s", where, msg);
	profile_add_error(ctx, loc, text);
	free(where);
	free(msg);
}

void
profile_error(struct profile_ctx *ctx, int loc, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	profile_verror(ctx, loc, fmt, ap);
	va_end(ap);
}

/* strcmp, but runs of digits compare as numbers: "[2]" before "[10]". */
static int
profile_natcmp(const char *a, const char *b)
{
	const char	*ea, *eb;
	size_t		 la, lb;
	int		 c;

	while (*a != '\0' && *b != '\0') {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			for (ea = a; isdigit((unsigned char)*ea); ea++)
				;
			for (eb = b; isdigit((unsigned char)*eb); eb++)
				;
			la = ea - a;
			lb = eb - b;
			if (la != lb)
				return (la < lb ? -1 : 1);
			if ((c = strncmp(a, b, la)) != 0)
				return (c);
			a = ea;
			b = eb;
			continue;
		}
		if (*a != *b)
			return ((unsigned char)*a < (unsigned char)*b ? -1 : 1);
		a++;
		b++;
	}
	return (*a == *b ? 0 : *a == '\0' ? -1 : 1);
}

/* By place, then by text: the same for the same profile, run after run. */
static int
profile_error_cmp(const void *a, const void *b)
{
	const struct profile_error	*ea = a, *eb = b;

	if (ea->loc != eb->loc)
		return (ea->loc < eb->loc ? -1 : 1);
	return (profile_natcmp(ea->text, eb->text));
}

/*
 * Every error of the load, sorted by place, one a line; or NULL if there
 * is none. The errors are freed.
 */
char *
profile_error_text(struct profile_ctx *ctx)
{
	struct buf	b = { 0 };
	size_t		i;

	if (ctx->nerrs == 0)
		return (NULL);
	qsort(ctx->errs, ctx->nerrs, sizeof *ctx->errs, profile_error_cmp);
	for (i = 0; i < ctx->nerrs; i++) {
		buf_printf(&b, "%s%s", i == 0 ? "" : "\n", ctx->errs[i].text);
		free(ctx->errs[i].text);
	}
	free(ctx->errs);
	ctx->errs = NULL;
	ctx->nerrs = 0;
	return (b.data);
}

/* Raise "WHERE: msg" at the Lua function calling us, freeing msg. */
__attribute__((noreturn)) void
profile_raise(lua_State *L, char *msg)
{
	luaL_where(L, 1);
	lua_pushstring(L, msg);
	free(msg);
	lua_concat(L, 2);
	lua_error(L);
	abort();	/* not reached */
}

/* -------------------------------------------------------------------------
 * A bad value, and what the profile probably meant.
 */

/* "NAME: VALUE WHY; expected ACCEPTS" */
void
profile_bad_as(struct profile_ctx *ctx, lua_State *L, int idx,
    const char *name, int loc, const char *why, const char *accepts)
{
	struct buf	shown = { 0 };

	profile_show(&shown, L, idx);
	profile_error(ctx, loc, "%s: %s %s; expected %s", name, shown.data,
	    why, accepts);
	buf_free(&shown);
}

/*
 * What to write instead, when a wrong value is a near miss: a quoted
 * number or boolean, a unit with a B, a choice in the wrong case.
 */
static char *
profile_hint(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s)
{
	char	*(*hint)(const char *, const struct profile_setting *);

	if (lua_type(L, idx) != LUA_TSTRING ||
	    (hint = ctx->types[s->type].hint) == NULL)
		return (NULL);
	return (hint(lua_tostring(L, idx), s));
}

/* "memory: "2GB" is not a size (write "2G"); expected ..." */
void
profile_bad(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc, const char *why)
{
	struct buf	 accepts = { 0 }, w = { 0 };
	char		*hint;

	ctx->types[s->type].accepts(&accepts, s);
	buf_printf(&w, "%s", why);
	if ((hint = profile_hint(ctx, L, idx, s)) != NULL) {
		buf_printf(&w, " (%s)", hint);
		free(hint);
	}
	profile_bad_as(ctx, L, idx, s->name, loc, w.data, accepts.data);
	buf_free(&accepts);
	buf_free(&w);
}

/* Edit distance, case-blind, with transpositions (optimal string alignment). */
static size_t
profile_distance(const char *a, const char *b)
{
	size_t	la = strlen(a), lb = strlen(b), w = lb + 1;
	size_t	i, j, best, *d;
	int	ca, cb;

	if (la > 64 || lb > 64)
		return (SIZE_MAX);
	d = xcalloc((la + 1) * w, sizeof *d);
	for (i = 0; i <= la; i++)
		d[i * w] = i;
	for (j = 0; j <= lb; j++)
		d[j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			ca = tolower((unsigned char)a[i - 1]);
			cb = tolower((unsigned char)b[j - 1]);
			best = d[(i - 1) * w + j - 1] + (ca != cb);
			if (d[(i - 1) * w + j] + 1 < best)
				best = d[(i - 1) * w + j] + 1;
			if (d[i * w + j - 1] + 1 < best)
				best = d[i * w + j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] &&
			    d[(i - 2) * w + j - 2] + 1 < best)
				best = d[(i - 2) * w + j - 2] + 1;
			d[i * w + j] = best;
		}
	}
	best = d[la * w + lb];
	free(d);
	return (best);
}

/* The name in names[] a misspelt one probably meant, or NULL. */
const char *
profile_closest(const char *name, const char *const *names, size_t n)
{
	const char	*best = NULL;
	size_t		 i, d, best_d = SIZE_MAX, len = strlen(name);

	for (i = 0; i < n; i++) {
		d = profile_distance(name, names[i]);
		if (d < best_d) {
			best_d = d;
			best = names[i];
		}
	}
	if (best_d <= 2 && best_d < len)
		return (best);
	/* "mem" for "memory". */
	for (i = 0; i < n; i++) {
		if (len >= 3 && strncmp(names[i], name, len) == 0)
			return (names[i]);
	}
	return (NULL);
}
