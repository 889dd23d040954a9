/*
 * The bytes of E2B's protocols that --e2b reads from its clients (any
 * bytes: the client is whoever holds the key): a Connect envelope (one
 * flags byte, a 4-byte big-endian length, the message) and a
 * multipart/form-data body (RFC 7578), its boundary taken from the
 * Content-Type; and a gzip upload's body. All are bounded here, apart from any connection, for
 * tests/fuzz/e2b_envelope_fuzz.c and e2b_multipart_fuzz.c.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <zlib.h>

#include "serve_e2b.h"

int
e2b_gunzip(const char *in, size_t len, size_t max, char **out,
    size_t *outlen, const char **why)
{
	z_stream	 z;
	char		*buf;
	size_t		 size = len < 4096 ? 4096 : len;
	int		 rc;

	*out = NULL;
	*outlen = 0;
	memset(&z, 0, sizeof z);
	if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {	/* gzip only */
		*why = "gzip: zlib would not start";
		return (-1);
	}
	if (size > max)
		size = max;
	buf = xmalloc(size + 1);
	z.next_in = (unsigned char *)(uintptr_t)in;
	z.avail_in = len > UINT_MAX ? UINT_MAX : len;
	for (;;) {
		if (z.total_out == size) {
			if (size == max) {
				*why = "gzip: inflates past --max-body";
				break;
			}
			size = size > max / 2 ? max : size * 2;
			buf = xrealloc(buf, size + 1);
		}
		z.next_out = (unsigned char *)buf + z.total_out;
		z.avail_out = size - z.total_out;
		rc = inflate(&z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			if (z.avail_in != 0) {
				*why = "gzip: bytes after its end";
				break;
			}
			buf[z.total_out] = '\0';
			*out = buf;
			*outlen = z.total_out;
			inflateEnd(&z);
			return (0);
		}
		if (rc == Z_OK && z.avail_out == 0)
			continue;
		*why = rc == Z_OK || rc == Z_BUF_ERROR ? "gzip: truncated" :
		    "gzip: not a gzip stream, or corrupt";
		break;
	}
	inflateEnd(&z);
	free(buf);
	return (-1);
}

ssize_t
e2b_envelope(const char *buf, size_t len, int *flags, const char **msg,
    size_t *mlen, const char **why)
{
	const unsigned char	*p = (const unsigned char *)buf;
	uint32_t		 n;

	*why = NULL;
	if (len < 5)
		return (0);
	if (p[0] & ~(E2B_FLAG_END)) {
		/* 0x01: compressed, which no Connect-Encoding allowed. */
		*why = "envelope: unknown or compressed flags";
		return (-1);
	}
	n = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 8 | (uint32_t)p[4];
	if (n > E2B_MSG_MAX) {
		*why = "envelope: message longer than 1 MiB";
		return (-1);
	}
	if (len - 5 < n)
		return (0);
	*flags = p[0];
	*msg = buf + 5;
	*mlen = n;
	return ((ssize_t)n + 5);
}

void
e2b_frame(struct buf *b, int flags, const char *msg, size_t len)
{
	unsigned char	h[5];

	h[0] = (unsigned char)flags;
	h[1] = (unsigned char)(len >> 24);
	h[2] = (unsigned char)(len >> 16);
	h[3] = (unsigned char)(len >> 8);
	h[4] = (unsigned char)len;
	buf_add(b, h, sizeof h);
	buf_add(b, msg, len);
}

/* s[0..len) without blanks at its ends. */
static void
e2b_trim(const char **s, size_t *len)
{
	while (*len > 0 && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
		(*len)--;
}

/*
 * Parameter want of a header value ("form-data; name=\"file\"", or the
 * Content-Type's "boundary=..."), quoted or not: 1 with its value (within
 * s), 0 when absent, -1 when badly quoted.
 */
static int
e2b_param(const char *s, size_t len, const char *want, const char **v,
    size_t *vlen)
{
	const char	*end = s + len, *semi, *eq, *q;
	const char	*k, *val;
	size_t		 klen, n, wl = strlen(want);

	/* The first piece is the value itself ("form-data"). */
	if ((semi = memchr(s, ';', len)) == NULL)
		return (0);
	s = semi + 1;
	while (s < end) {
		if ((semi = memchr(s, ';', end - s)) == NULL)
			semi = end;
		if ((eq = memchr(s, '=', semi - s)) == NULL) {
			s = semi + 1;
			continue;
		}
		k = s;
		klen = eq - s;
		e2b_trim(&k, &klen);
		s = eq + 1;
		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		if (s < end && *s == '"') {
			if ((q = memchr(s + 1, '"', end - s - 1)) == NULL)
				return (-1);
			val = s + 1;
			n = q - s - 1;
			semi = memchr(q, ';', end - q);
			if (semi == NULL)
				semi = end;
		} else {
			val = s;
			n = semi - s;
			e2b_trim(&val, &n);
		}
		/* *v and *vlen only for want's: an earlier line's stay. */
		if (klen == wl && strncasecmp(k, want, wl) == 0) {
			*v = val;
			*vlen = n;
			return (1);
		}
		s = semi + 1;
	}
	return (0);
}

int
e2b_boundary(const char *ctype, char out[E2B_BOUNDARY_MAX + 1],
    const char **why)
{
	const char	*v;
	size_t		 n, i;

	if (ctype == NULL || strncasecmp(ctype, "multipart/form-data", 19) != 0) {
		*why = "Content-Type: not multipart/form-data";
		return (-1);
	}
	if (e2b_param(ctype, strlen(ctype), "boundary", &v, &n) != 1 ||
	    n == 0 || n > E2B_BOUNDARY_MAX) {
		*why = "Content-Type: no boundary of 1-70 characters";
		return (-1);
	}
	for (i = 0; i < n; i++) {
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] > 0x7e) {
			*why = "Content-Type: a boundary of other than "
			    "printable ASCII";
			return (-1);
		}
	}
	memcpy(out, v, n);
	out[n] = '\0';
	return (0);
}

/* A part's head (its header lines, CRLF each): its name and filename. */
static int
e2b_part_head(const char *h, size_t len, struct e2b_part *pt,
    const char **why)
{
	const char	*end = h + len, *eol, *colon, *v;
	size_t		 n, vlen;

	while (h < end) {
		if ((eol = memchr(h, '\n', end - h)) == NULL)
			eol = end;
		n = eol - h;
		if (n > 0 && h[n - 1] == '\r')
			n--;
		if ((colon = memchr(h, ':', n)) != NULL &&
		    colon - h == 19 &&
		    strncasecmp(h, "Content-Disposition", 19) == 0) {
			v = colon + 1;
			vlen = n - 20;
			if (e2b_param(v, vlen, "name", &pt->name,
			    &pt->nlen) == -1 || e2b_param(v, vlen, "filename",
			    &pt->filename, &pt->flen) == -1) {
				*why = "multipart: a badly quoted "
				    "Content-Disposition";
				return (-1);
			}
		}
		h = eol + 1;
	}
	return (0);
}

int
e2b_multipart(const char *boundary, const char *body, size_t len,
    struct e2b_part *parts, size_t max, size_t *nparts, const char **why)
{
	char		 delim[E2B_BOUNDARY_MAX + 5];
	const char	*p = body, *end = body + len, *hend, *next;
	size_t		 dl, n = 0;

	*nparts = 0;
	dl = (size_t)snprintf(delim, sizeof delim, "\r\n--%s", boundary);
	if (dl >= sizeof delim || dl <= 4) {
		*why = "multipart: a bad boundary";
		return (-1);
	}
	/* The first delimiter may open the body, without its CRLF. */
	if (len >= dl - 2 && memcmp(body, delim + 2, dl - 2) == 0)
		p = body + dl - 2;
	else if ((next = memmem(body, len, delim, dl)) != NULL)
		p = next + dl;
	else {
		*why = "multipart: no boundary in the body";
		return (-1);
	}
	for (;;) {
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			break;		/* the close delimiter */
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n') {
			*why = "multipart: a delimiter not followed by CRLF";
			return (-1);
		}
		p += 2;
		if (n == max) {
			*why = "multipart: too many parts";
			return (-1);
		}
		memset(&parts[n], 0, sizeof parts[n]);
		if (end - p >= 2 && p[0] == '\r' && p[1] == '\n')
			hend = p;	/* no header lines */
		else if ((hend = memmem(p, end - p, "\r\n\r\n", 4)) == NULL ||
		    hend - p > E2B_PART_HEAD_MAX) {
			*why = "multipart: a part's head unended or over 8 KiB";
			return (-1);
		} else
			hend += 2;
		if (e2b_part_head(p, hend - p, &parts[n], why) == -1)
			return (-1);
		p = hend + 2;
		if ((next = memmem(p, end - p, delim, dl)) == NULL) {
			*why = "multipart: a part without its delimiter";
			return (-1);
		}
		parts[n].data = p;
		parts[n].len = next - p;
		n++;
		p = next + dl;
	}
	if (n == 0) {
		*why = "multipart: no part";
		return (-1);
	}
	*nparts = n;
	return (0);
}

/* A number of line's next field, in base, at most max: 0, or -1. */
static int
e2b_field_num(const char **p, const char *end, int base,
    unsigned long long max, unsigned long long *v)
{
	const char	*s = *p;
	int		 d;

	*v = 0;
	if (s == end || *s == ' ')
		return (-1);
	for (; s < end && *s != ' '; s++) {
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			return (-1);
		if (d >= base || *v > (max - d) / base)
			return (-1);
		*v = *v * base + d;
	}
	if (s == end)
		return (-1);
	*p = s + 1;
	return (0);
}

/* A name field of line (a user's, a group's): 0, or -1. */
static int
e2b_field_name(const char **p, const char *end, char *out, size_t size)
{
	const char	*s = *p;
	size_t		 n;

	for (n = 0; s + n < end && s[n] != ' '; n++)
		;
	if (n == 0 || n >= size || s + n == end)
		return (-1);
	memcpy(out, s, n);
	out[n] = '\0';
	*p = s + n + 1;
	return (0);
}

int
e2b_stat_line(const char *line, size_t len, struct e2b_entry *en)
{
	const char		*p = line, *end = line + len;
	unsigned long long	 v;

	memset(en, 0, sizeof *en);
	if (e2b_field_num(&p, end, 16, 0xffffffffULL, &v) == -1)
		return (-1);
	en->mode = (unsigned)v;
	if (e2b_field_num(&p, end, 10, 1ULL << 62, &v) == -1)
		return (-1);
	en->size = v;
	if (e2b_field_num(&p, end, 8, 07777, &v) == -1)
		return (-1);
	if (e2b_field_name(&p, end, en->owner, sizeof en->owner) == -1 ||
	    e2b_field_name(&p, end, en->group, sizeof en->group) == -1)
		return (-1);
	if (e2b_field_num(&p, end, 10, 1ULL << 40, &v) == -1)
		return (-1);
	en->mtime = (long long)v;
	if (p == end || end - p > E2B_PATH_MAX || memchr(p, '\0', end - p))
		return (-1);
	en->path = p;
	en->plen = end - p;
	return (0);
}

void
e2b_entry_json(const struct e2b_entry *en, struct buf *b)
{
	static const char	 rwx[] = "rwxrwxrwx";
	const char		*name, *type;
	char			 perm[11], *path, when[32];
	struct tm		 tm;
	time_t			 t = (time_t)en->mtime;
	size_t			 i;

	switch (en->mode & 0170000) {
	case 0040000:
		type = "FILE_TYPE_DIRECTORY";
		perm[0] = 'd';
		break;
	case 0120000:
		type = "FILE_TYPE_SYMLINK";
		perm[0] = 'l';
		break;
	case 0100000:
		type = "FILE_TYPE_FILE";
		perm[0] = '-';
		break;
	default:
		type = "FILE_TYPE_UNSPECIFIED";
		perm[0] = '?';
		break;
	}
	for (i = 0; i < 9; i++)
		perm[i + 1] = en->mode & (0400 >> i) ? rwx[i] : '-';
	perm[10] = '\0';
	path = xmalloc(en->plen + 1);
	memcpy(path, en->path, en->plen);
	path[en->plen] = '\0';
	name = strrchr(path, '/') != NULL && strrchr(path, '/')[1] != '\0' ?
	    strrchr(path, '/') + 1 : path;
	gmtime_r(&t, &tm);
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
	buf_puts(b, "{\"name\":");
	buf_json_string(b, name);
	buf_printf(b, ",\"type\":\"%s\",\"path\":", type);
	buf_json_string(b, path);
	buf_printf(b, ",\"size\":\"%llu\",\"mode\":%u,\"permissions\":\"%s\","
	    "\"owner\":", en->size, en->mode & 07777, perm);
	buf_json_string(b, en->owner);
	buf_puts(b, ",\"group\":");
	buf_json_string(b, en->group);
	buf_printf(b, ",\"modifiedTime\":\"%s\"}", when);
	free(path);
}
