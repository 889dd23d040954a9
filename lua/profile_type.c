/*
 * The scalar setting types (booleans, choices, sizes, numbers, paths,
 * URLs, image): how a value of each is checked and converted into struct
 * profile, what it accepts (for messages and help), what to write instead
 * of a near miss, and how it is shown and freed. Their rows of operations
 * are in profile_types (profile_schema.c), above this file; the list,
 * network, share and image_sha256 types have files of their own.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "image.h"
#include "profile_int.h"

/* "16M", "2G", "1T": a MiB count in the largest exact unit. */
static void
profile_show_mib(struct buf *b, uint64_t mib)
{
	if (mib != 0 && mib % (1024 * 1024) == 0)
		buf_printf(b, "%lluT", (unsigned long long)(mib >> 20));
	else if (mib != 0 && mib % 1024 == 0)
		buf_printf(b, "%lluG", (unsigned long long)(mib >> 10));
	else
		buf_printf(b, "%lluM", (unsigned long long)mib);
}

/* A byte count the same way, down to "k"; 0 for a part of a KiB. */
static int
profile_show_bytes(struct buf *b, uint64_t bytes)
{
	if (bytes != 0 && bytes % PROFILE_MIB == 0)
		profile_show_mib(b, bytes / PROFILE_MIB);
	else if (bytes != 0 && bytes % 1024 == 0)
		buf_printf(b, "%lluk", (unsigned long long)(bytes >> 10));
	else
		return (0);
	return (1);
}

void
profile_accepts_bool(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "true or false");
}

void
profile_accepts_choice(struct buf *b, const struct profile_setting *s)
{
	const struct profile_choice	*c, *a;
	int				 n = 0, i = 0;

	for (c = s->choices; c->name != NULL; c++)
		n += !c->alias;
	for (c = s->choices; c->name != NULL; c++) {
		if (c->alias)
			continue;
		if (i > 0)
			buf_printf(b, "%s", i == n - 1 ? " or " : ", ");
		i++;
		if (strcmp(c->name, "true") == 0 ||
		    strcmp(c->name, "false") == 0)
			buf_printf(b, "%s", c->name);
		else
			buf_printf(b, "\"%s\"", c->name);
	}
	for (a = s->choices; a->name != NULL; a++) {
		if (!a->alias)
			continue;
		for (c = s->choices; c->alias || c->value != a->value;
		    c++)
			;
		buf_printf(b, "; \"%s\" means \"%s\"", a->name,
		    c->name);
	}
}

void
profile_accepts_size(struct buf *b, const struct profile_setting *s)
{
	buf_printf(b, "MiB as a whole number (1024) or a string with "
	    "one suffix k, M, G or T (\"512M\", \"2G\"), from ");
	profile_show_mib(b, (uint64_t)s->min);
	buf_printf(b, " to ");
	profile_show_mib(b, (uint64_t)s->max);
}

void
profile_accepts_bytes(struct buf *b, const struct profile_setting *s)
{
	buf_printf(b, "bytes as a whole number (10737418240) or a string with "
	    "one suffix k, M, G or T (\"512M\", \"10G\"), a multiple of "
	    "%u bytes, from ", PROFILE_SECTOR);
	if (!profile_show_bytes(b, (uint64_t)s->min))
		buf_printf(b, "%llu", (unsigned long long)s->min);
	buf_printf(b, " to ");
	(void)profile_show_bytes(b, (uint64_t)s->max);
}

void
profile_accepts_int(struct buf *b, const struct profile_setting *s)
{
	buf_printf(b, "a whole number from %.0f to %.0f", s->min,
	    s->max);
}

void
profile_accepts_seconds(struct buf *b, const struct profile_setting *s)
{
	buf_printf(b, "a number of seconds from %g to %g", s->min,
	    s->max);
}

void
profile_accepts_path(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "the path of a file, absolute or relative to "
	    "the profile's directory");
}

void
profile_accepts_outfile(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "the path of a file to write, absolute or relative to "
	    "the profile's directory, in a directory that exists");
}

void
profile_accepts_guest_path(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "an absolute path in the guest");
}

void
profile_accepts_image(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "an image name (\"debian-12\"), an http(s) URL, "
	    "docker://REF, or the path of an image file (with a /: "
	    "\"./disk.qcow2\")");
}

void
profile_accepts_url(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "an http:// or https:// URL");
}

void
profile_accepts_dir(struct buf *b, const struct profile_setting *s)
{
	(void)s;
	buf_printf(b, "the path of a directory, absolute or relative "
	    "to the profile's directory");
}

/* Is s one of "true", "yes", ... (1) or "false", "no", ... (0)? -1: no. */
static int
profile_truthy(const char *s)
{
	static const char	*yes[] = { "true", "yes", "on", "1", NULL };
	static const char	*no[] = { "false", "no", "off", "0", NULL };
	size_t			 i;

	for (i = 0; yes[i] != NULL; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return (1);
	}
	for (i = 0; no[i] != NULL; i++) {
		if (strcasecmp(s, no[i]) == 0)
			return (0);
	}
	return (-1);
}

/* "2GB", "2 GiB": the size the author meant, "2G"; or NULL. */
static char *
profile_size_hint(const char *s)
{
	const char	*p = s;
	size_t		 n;
	char		 unit, *h;

	while (isdigit((unsigned char)*p) || *p == '.')
		p++;
	n = p - s;
	if (n == 0)
		return (NULL);
	while (*p == ' ')
		p++;
	if (*p == '\0' || strchr("kKmMgGtT", *p) == NULL)
		return (NULL);
	unit = (char)toupper((unsigned char)*p++);
	if (unit == 'K')
		unit = 'k';
	if (*p != '\0' && strcasecmp(p, "B") != 0 && strcasecmp(p, "iB") != 0)
		return (NULL);
	xasprintf(&h, "%.*s%c", (int)n, s, unit);
	if (strcmp(h, s) == 0) {
		free(h);
		return (NULL);
	}
	return (h);
}

char *
profile_hint_bool(const char *v, const struct profile_setting *s)
{
	char	*h = NULL;
	int	 t;

	(void)s;
	if ((t = profile_truthy(v)) != -1)
		xasprintf(&h, "write %s, without quotes",
		    t ? "true" : "false");
	return (h);
}

char *
profile_hint_choice(const char *v, const struct profile_setting *s)
{
	const struct profile_choice	*c;
	const char			*names[16];
	const char			*best;
	char				*h = NULL;
	size_t				 n = 0;
	int				 t, boolean, booleans = 0;

	for (c = s->choices; c->name != NULL && n < 16; c++) {
		boolean = strcmp(c->name, "true") == 0 ||
		    strcmp(c->name, "false") == 0;
		if (strcasecmp(c->name, v) == 0 && boolean) {
			xasprintf(&h, "write %s, without quotes",
			    c->name);
			return (h);
		}
		if (strcasecmp(c->name, v) == 0) {
			xasprintf(&h, "write \"%s\"", c->name);
			return (h);
		}
		booleans |= boolean;
		names[n++] = c->name;
	}
	/* Choices that take true and false (use_kvm): "yes" is true. */
	if (booleans && (t = profile_truthy(v)) != -1) {
		xasprintf(&h, "write %s, without quotes",
		    t ? "true" : "false");
		return (h);
	}
	if ((best = profile_closest(v, names, n)) != NULL) {
		if (strcmp(best, "true") == 0 ||
		    strcmp(best, "false") == 0)
			xasprintf(&h, "write %s", best);
		else
			xasprintf(&h, "write \"%s\"", best);
	}
	return (h);
}

char *
profile_hint_size(const char *v, const struct profile_setting *s)
{
	char	*h = NULL, *size;

	(void)s;
	if ((size = profile_size_hint(v)) != NULL) {
		xasprintf(&h, "write \"%s\"", size);
		free(size);
	}
	return (h);
}

/* For PROFILE_T_INT and PROFILE_T_SECONDS. */
char *
profile_hint_number(const char *v, const struct profile_setting *s)
{
	char	*h = NULL, *end;

	(void)s;
	(void)strtod(v, &end);
	if (end != v && *end == '\0')
		xasprintf(&h, "write %s, without quotes", v);
	else if (end != v && strcmp(end, "s") == 0)
		xasprintf(&h, "write %.*s", (int)(end - v), v);
	return (h);
}

enum profile_size {
	PROFILE_SIZE_OK,
	PROFILE_SIZE_SYNTAX,	/* not a size at all */
	PROFILE_SIZE_PART,	/* not a whole number of bytes */
	PROFILE_SIZE_BIG	/* does not fit */
};

/*
 * "2G", "512M", "1.5G", "2048k", or a bare number of bare_unit bytes
 * (MiB for memory, bytes for disk_size): a size in bytes.
 */
static enum profile_size
profile_parse_size(const char *s, uint64_t bare_unit, uint64_t *bytes)
{
	uint64_t	whole = 0, frac = 0, scale = 1, unit, n;
	const char	*p = s;

	if (!isdigit((unsigned char)*p))
		return (PROFILE_SIZE_SYNTAX);
	for (; isdigit((unsigned char)*p); p++) {
		if (whole > (UINT64_MAX - 9) / 10)
			return (PROFILE_SIZE_BIG);
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		if (!isdigit((unsigned char)*++p))
			return (PROFILE_SIZE_SYNTAX);
		for (; isdigit((unsigned char)*p); p++) {
			if (scale == 1000000)	/* frac * unit < 2^64 */
				return (PROFILE_SIZE_PART);
			frac = frac * 10 + (uint64_t)(*p - '0');
			scale *= 10;
		}
	}
	switch (*p) {
	case 'k':
	case 'K':
		unit = (uint64_t)1 << 10;
		break;
	case 'm':
	case 'M':
		unit = (uint64_t)1 << 20;
		break;
	case '\0':
		unit = bare_unit;
		break;
	case 'g':
	case 'G':
		unit = (uint64_t)1 << 30;
		break;
	case 't':
	case 'T':
		unit = (uint64_t)1 << 40;
		break;
	default:
		return (PROFILE_SIZE_SYNTAX);
	}
	if (*p != '\0' && *++p != '\0')		/* "2GB", "2GiB" */
		return (PROFILE_SIZE_SYNTAX);
	if (whole > UINT64_MAX / unit)
		return (PROFILE_SIZE_BIG);
	if (frac * unit % scale != 0)
		return (PROFILE_SIZE_PART);
	n = whole * unit;
	if (n > UINT64_MAX - frac * unit / scale)
		return (PROFILE_SIZE_BIG);
	*bytes = n + frac * unit / scale;
	return (PROFILE_SIZE_OK);
}

/*
 * A size from a number of unit bytes or a string (profile_parse_size), a
 * whole number of units, in [min, max] units: 0, or why not.
 */
static const char *
profile_size_value(lua_State *L, int idx, const struct profile_setting *s,
    uint64_t unit, const char *part, uint64_t *v)
{
	uint64_t	 bytes = 0;
	size_t		 len;
	long long	 n;
	const char	*why;

	if (lua_type(L, idx) != LUA_TSTRING) {
		if ((why = profile_whole(L, idx, s->min, s->max, &n)) == NULL)
			*v = (uint64_t)n;
		else if (strcmp(why, "is not a whole number") == 0)
			why = part;
		return (why);
	}
	if (!profile_string_ok(L, idx, &len))
		return ("is not a size");
	switch (profile_parse_size(lua_tostring(L, idx), unit, &bytes)) {
	case PROFILE_SIZE_OK:
		break;
	case PROFILE_SIZE_SYNTAX:
		return ("is not a size");
	case PROFILE_SIZE_PART:
		return (part);
	case PROFILE_SIZE_BIG:
		return ("is out of range");
	}
	if (bytes % unit != 0)
		return (part);
	*v = bytes / unit;
	if ((double)*v < s->min || (double)*v > s->max)
		return ("is out of range");
	return (NULL);
}

/* memory: MiB. */
void
profile_convert_size(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*why;
	uint64_t	 mib = 0;

	if ((why = profile_size_value(L, idx, s, PROFILE_MIB,
	    "is not a whole number of MiB", &mib)) != NULL) {
		profile_bad(ctx, L, idx, s, loc, why);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, uint64_t) = mib;
}

/*
 * disk_size: bytes, in whole 512-byte sectors (what a virtio disk has).
 * Refused rather than rounded: the size asked for is the size made.
 */
void
profile_convert_bytes(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*why;
	uint64_t	 bytes = 0;

	if ((why = profile_size_value(L, idx, s, 1,
	    "is not a whole number of bytes", &bytes)) == NULL &&
	    bytes % PROFILE_SECTOR != 0)
		why = "is not a multiple of 512 bytes";
	if (why != NULL) {
		profile_bad(ctx, L, idx, s, loc, why);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, uint64_t) = bytes;
}

/*
 * The absolute path of an existing regular host file, value relative to
 * the profile's folder; NULL, the error reported, otherwise.
 */
static char *
profile_host_file(struct profile_ctx *ctx, const struct profile_setting *s,
    int loc, const char *value)
{
	struct stat	 sb;
	char		*path, *abs;

	path = profile_host_path(ctx, loc, value);
	if (stat(path, &sb) == -1) {
		profile_error(ctx, loc, "%s: %s: %s", s->name, path,
		    strerror(errno));
		free(path);
		return (NULL);
	}
	if (!S_ISREG(sb.st_mode)) {
		profile_error(ctx, loc, "%s: %s: not a regular file",
		    s->name, path);
		free(path);
		return (NULL);
	}
	abs = profile_absolute(path);
	free(path);
	return (abs);
}

void
profile_convert_path(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;
	char		*abs;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if (s->type == PROFILE_T_GUEST_PATH) {
		if (value[0] != '/') {
			profile_bad(ctx, L, idx, s, loc, "is not absolute");
			return;
		}
		abs = xstrdup(value);
	} else {
		if ((abs = profile_host_file(ctx, s, loc, value)) == NULL)
			return;
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = abs;
}

/* A host directory that need not exist yet (it is made when needed). */
void
profile_convert_dir(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;
	struct stat	 sb;
	char		*path;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	path = profile_host_path(ctx, loc, value);
	if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		profile_error(ctx, loc, "%s: %s: not a directory", s->name,
		    path);
		free(path);
		return;
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = profile_absolute(path);
	free(path);
}

/* A host file qsup writes: not a directory, in one that exists. */
void
profile_convert_outfile(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;
	struct stat	 sb;
	char		*path, *abs, *slash;

	if ((value = profile_plain_string(L, idx)) == NULL || *value == '\0') {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	path = profile_host_path(ctx, loc, value);
	abs = profile_absolute(path);
	free(path);
	if (stat(abs, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		profile_error(ctx, loc, "%s: %s: not a regular file", s->name,
		    abs);
		free(abs);
		return;
	}
	slash = strrchr(abs, '/');
	*slash = '\0';
	if (stat(*abs == '\0' ? "/" : abs, &sb) == -1 ||
	    !S_ISDIR(sb.st_mode)) {
		profile_error(ctx, loc, "%s: %s: no such directory", s->name,
		    *abs == '\0' ? "/" : abs);
		free(abs);
		return;
	}
	*slash = '/';
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = abs;
}

/* "http://host/..." or "https://host/...", printable, no spaces. */
static int
profile_url_ok(const char *v)
{
	const char	*p;

	if (strncasecmp(v, "http://", 7) == 0)
		p = v + 7;
	else if (strncasecmp(v, "https://", 8) == 0)
		p = v + 8;
	else
		return (0);
	if (*p == '\0' || *p == '/')
		return (0);
	for (; *v != '\0'; v++) {
		if ((unsigned char)*v <= ' ' || *v == 0x7f)
			return (0);
	}
	return (1);
}

void
profile_convert_url(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*value;

	if ((value = profile_plain_string(L, idx)) == NULL ||
	    !profile_url_ok(value)) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = xstrdup(value);
}

/* A name, a URL or a file: which one is told by its form. */
void
profile_convert_image(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char		*value, *p;
	enum profile_image	 kind;
	struct image_ref	 ref;
	char			*v, *cause;

	if ((value = profile_plain_string(L, idx)) == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	if (strncmp(value, "docker://", 9) == 0) {
		if (image_ref_parse(value + 9, &ref, &cause) == -1) {
			free(cause);
			profile_bad(ctx, L, idx, s, loc, "is not an image "
			    "reference (docker://[REGISTRY/]REPO[:TAG]"
			    "[@sha256:HEX])");
			return;
		}
		image_ref_free(&ref);
		kind = PROFILE_IMAGE_URL;
		v = xstrdup(value);
	} else if (strstr(value, "://") != NULL) {
		if (!profile_url_ok(value)) {
			profile_bad(ctx, L, idx, s, loc, "is not an http(s) "
			    "URL");
			return;
		}
		kind = PROFILE_IMAGE_URL;
		v = xstrdup(value);
	} else if (strchr(value, '/') != NULL) {
		if ((v = profile_host_file(ctx, s, loc, value)) == NULL)
			return;
		kind = PROFILE_IMAGE_FILE;
	} else {
		for (p = value; *p != '\0'; p++) {
			if (!isalnum((unsigned char)*p) &&
			    strchr("._+-", *p) == NULL)
				break;
		}
		if (*p != '\0' || !isalnum((unsigned char)value[0]) ||
		    strlen(value) > 128) {
			profile_bad(ctx, L, idx, s, loc, "is not valid");
			return;
		}
		kind = PROFILE_IMAGE_NAME;
		v = xstrdup(value);
	}
	free(*PROFILE_FIELD(ctx->p, s, char *));
	*PROFILE_FIELD(ctx->p, s, char *) = v;
	memcpy((char *)ctx->p + s->offset_n, &kind, sizeof kind);
}

void
profile_convert_bool(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	if (!lua_isboolean(L, idx)) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	*PROFILE_FIELD(ctx->p, s, int) = lua_toboolean(L, idx);
}

void
profile_convert_choice(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const struct profile_choice	*c;
	int				 b;

	for (c = s->choices; c->name != NULL; c++) {
		b = strcmp(c->name, "true") == 0 ||
		    strcmp(c->name, "false") == 0;
		if (b && lua_isboolean(L, idx) &&
		    lua_toboolean(L, idx) == (c->name[0] == 't'))
			break;
		if (!b && lua_type(L, idx) == LUA_TSTRING &&
		    strcmp(lua_tostring(L, idx), c->name) == 0)
			break;
	}
	if (c->name == NULL) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	memcpy(PROFILE_FIELD(ctx->p, s, int), &c->value, sizeof (int));
}

void
profile_convert_int(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	const char	*why;
	long long	 v;

	if ((why = profile_whole(L, idx, s->min, s->max, &v)) != NULL) {
		profile_bad(ctx, L, idx, s, loc, why);
		return;
	}
	*PROFILE_FIELD(ctx->p, s, int) = (int)v;
}

void
profile_convert_seconds(struct profile_ctx *ctx, lua_State *L, int idx,
    const struct profile_setting *s, int loc)
{
	lua_Number	f;

	if (lua_type(L, idx) != LUA_TNUMBER) {
		profile_bad(ctx, L, idx, s, loc, "is not valid");
		return;
	}
	f = lua_tonumber(L, idx);
	if (isnan(f) || f < s->min || f > s->max) {
		profile_bad(ctx, L, idx, s, loc, "is out of range");
		return;
	}
	*PROFILE_FIELD(ctx->p, s, double) = (double)f;
}

void
profile_put_bool(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	(void)json;
	buf_printf(b, "%s", *PROFILE_CFIELD(p, s, int) ? "true" : "false");
}

void
profile_put_choice(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	const struct profile_choice	*c;
	const char			*name = "?";
	int				 v;

	memcpy(&v, (const char *)p + s->offset, sizeof v);
	for (c = s->choices; c->name != NULL; c++) {
		if (!c->alias && c->value == v) {
			name = c->name;
			break;
		}
	}
	if (strcmp(name, "true") == 0 || strcmp(name, "false") == 0)
		buf_printf(b, "%s", name);
	else
		profile_put_string(b, name, json);
}

void
profile_put_size(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	uint64_t	mib = *PROFILE_CFIELD(p, s, uint64_t);

	if (json)
		buf_printf(b, "%llu", (unsigned long long)mib);
	else {
		buf_add(b, "\"", 1);
		profile_show_mib(b, mib);
		buf_add(b, "\"", 1);
	}
}

/* disk_size: nil for 0 (the base image's own), "10G", or bytes. */
void
profile_put_bytes(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	uint64_t	bytes = *PROFILE_CFIELD(p, s, uint64_t);

	if (bytes == 0)
		buf_printf(b, json ? "null" : "nil");
	else if (json || bytes % 1024 != 0)
		buf_printf(b, "%llu", (unsigned long long)bytes);
	else {
		buf_add(b, "\"", 1);
		(void)profile_show_bytes(b, bytes);
		buf_add(b, "\"", 1);
	}
}

void
profile_put_int(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	(void)json;
	buf_printf(b, "%d", *PROFILE_CFIELD(p, s, int));
}

void
profile_put_seconds(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	(void)json;
	buf_printf(b, "%.17g", *PROFILE_CFIELD(p, s, double));
}

/* A string setting: a path, an image, a URL. */
void
profile_put_str(struct buf *b, const struct profile *p,
    const struct profile_setting *s, int json)
{
	profile_put_string(b, *PROFILE_CFIELD(p, s, profile_str), json);
}

void
profile_free_str(struct profile *p, const struct profile_setting *s)
{
	free(*PROFILE_FIELD(p, s, char *));
	*PROFILE_FIELD(p, s, char *) = NULL;
}
