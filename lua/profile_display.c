/*
 * The display's size, "WIDTHxHEIGHT": a type of its own so that a bad
 * value names the setting and the bounds before QEMU ever sees it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile_int.h"

/* Parse "WxH" within the bounds; -1 if it is not one. */
int
profile_display_parse(const char *v, int *w, int *h)
{
	char	end;

	if (v == NULL || sscanf(v, "%5dx%5d%c", w, h, &end) != 2 ||
	    strspn(v, "0123456789x") != strlen(v))
		return (-1);
	if (*w < PROFILE_DISPLAY_MIN_W || *w > PROFILE_DISPLAY_MAX_W ||
	    *h < PROFILE_DISPLAY_MIN_H || *h > PROFILE_DISPLAY_MAX_H)
		return (-1);
	return (0);
}

void
profile_accepts_geometry(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "a size \"WIDTHxHEIGHT\" in pixels, from %dx%d to %dx%d",
	    PROFILE_DISPLAY_MIN_W, PROFILE_DISPLAY_MIN_H,
	    PROFILE_DISPLAY_MAX_W, PROFILE_DISPLAY_MAX_H);
}

void
profile_convert_geometry(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;
	int		 w, h;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if (profile_display_parse(value, &w, &h) == -1) {
		profile_bad(ctx, L, idx, s, loc, "is not WIDTHxHEIGHT within "
		    "the bounds");
		return;
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = xstrdup(value);
}
