/*
 * "qsup mcp"'s text: a tool's results are JSON strings, so bytes that are
 * not UTF-8 are cleaned, checked or cut whole, and files go as base64;
 * and the results themselves, text, JSON or an error.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"

/*
 * Copy len bytes of p to b as UTF-8: valid sequences as they are, each
 * byte of an invalid one as U+FFFD (a JSON string must be UTF-8).
 */
void
mcp_utf8_clean(const char *p, size_t len, struct buf *b)
{
	const unsigned char	*s = (const unsigned char *)p;
	size_t			 i = 0, n, k;
	uint32_t		 cp, min;

	while (i < len) {
		if (s[i] < 0x80) {
			for (k = i; k < len && s[k] < 0x80; k++)
				/* nothing */;
			buf_add(b, s + i, k - i);
			i = k;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0) {
			n = 2;
			cp = s[i] & 0x1f;
			min = 0x80;
		} else if ((s[i] & 0xf0) == 0xe0) {
			n = 3;
			cp = s[i] & 0x0f;
			min = 0x800;
		} else if ((s[i] & 0xf8) == 0xf0) {
			n = 4;
			cp = s[i] & 0x07;
			min = 0x10000;
		} else
			goto bad;
		if (i + n > len)
			goto bad;
		for (k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				goto bad;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			goto bad;
		buf_add(b, s + i, n);
		i += n;
		continue;
bad:
		buf_add(b, "\xef\xbf\xbd", 3);
		i++;
	}
	if (b->data == NULL)
		buf_add(b, "", 0);
}

/* Is it all UTF-8? */
int
mcp_utf8_valid(const char *p, size_t len)
{
	struct buf	b;
	int		ok;

	memset(&b, 0, sizeof b);
	mcp_utf8_clean(p, len, &b);
	ok = b.len == len && memcmp(b.data, p, len) == 0;
	buf_free(&b);
	return (ok);
}

/* len, less a last UTF-8 sequence that a cut left incomplete. */
size_t
mcp_utf8_whole(const char *p, size_t len)
{
	const unsigned char	*s = (const unsigned char *)p;
	size_t			 i, need;

	for (i = len; i > 0 && len - i < 4; i--) {
		if ((s[i - 1] & 0xc0) == 0x80)
			continue;
		if ((s[i - 1] & 0xe0) == 0xc0)
			need = 2;
		else if ((s[i - 1] & 0xf0) == 0xe0)
			need = 3;
		else if ((s[i - 1] & 0xf8) == 0xf0)
			need = 4;
		else
			return (len);
		return (len - (i - 1) < need ? i - 1 : len);
	}
	return (len);
}

/* Base64 of len bytes, NUL-terminated. */
char *
mcp_base64(const void *p, size_t len)
{
	static const char	 abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char	*s = p;
	char			*out, *o;
	uint32_t		 v;
	size_t			 i;

	o = out = xmalloc((len + 2) / 3 * 4 + 1);
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		*o++ = abc[(v >> 6) & 63];
		*o++ = abc[v & 63];
	}
	if (i < len) {
		v = (uint32_t)s[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		*o++ = abc[v >> 18];
		*o++ = abc[(v >> 12) & 63];
		*o++ = i + 1 < len ? abc[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return (out);
}

/* Strict base64 (whitespace allowed) into *out; -1 if it is not. */
int
mcp_unbase64(const char *in, size_t len, unsigned char **out, size_t *n)
{
	size_t	i, chars = 0, pad = 0;
	int	c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		if (pad > 0 || !((c >= 'A' && c <= 'Z') ||
		    (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '+' || c == '/'))
			return (-1);
		chars++;
	}
	if (pad > 2 || (chars + pad) % 4 != 0 || chars % 4 == 1)
		return (-1);
	*out = xmalloc(len * 3 / 4 + 3);
	*n = util_base64_decode(in, len, *out);
	return (0);
}

/* A tool's result: text, as an error or not. */
json_t *
mcp_result_text(const char *text, int error)
{
	json_t	*r, *item, *content;

	item = json_pack("{s:s, s:s}", "type", "text", "text", text);
	content = json_array();
	json_array_append_new(content, item);
	r = json_pack("{s:o, s:b}", "content", content, "isError", error);
	return (r);
}

/* A tool's result: j (taken) as its text. */
json_t *
mcp_result_json(json_t *j)
{
	json_t	*r;
	char	*text;

	text = json_dumps(j, JSON_COMPACT|JSON_PRESERVE_ORDER);
	r = mcp_result_text(text != NULL ? text : "null", 0);
	free(text);
	json_decref(j);
	return (r);
}

/* A failed call's result: what the server said, or why there was none. */
json_t *
mcp_result_error(char *cause)
{
	json_t	*r;

	r = mcp_result_text(cause != NULL ? cause : "failed", 1);
	free(cause);
	return (r);
}
