/*
 * Reading a checksum file as Ubuntu and Debian publish them (SHA256SUMS,
 * SHA512SUMS: coreutils' format, "HEX  NAME" or "HEX *NAME" a line). The
 * file comes from the network: untrusted, read within its bounds only,
 * never copied whole; tests/fuzz/image_sums_fuzz.c feeds it anything.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "image_int.h"

/* Is s[0..n) a digest's hex: 64 (SHA-256) or 128 (SHA-512) digits? */
int
image_is_digest(const char *s, size_t n)
{
	size_t	i;

	if (n != 64 && n != 128)
		return (0);
	for (i = 0; i < n; i++) {
		if (!isxdigit((unsigned char)s[i]))
			return (0);
	}
	return (1);
}

/*
 * One line, s[0..n) without its newline: its digest's hex if it names
 * name (with or without a "./"), else NULL. Lines for other files, blank
 * lines and anything else are not ours.
 */
static char *
image_sums_line(const char *s, size_t n, const char *name)
{
	const char	*sp, *f;
	size_t		 hlen, flen, i;
	char		*hex;

	if (n > 0 && s[n - 1] == '\r')
		n--;
	if ((sp = memchr(s, ' ', n)) == NULL)
		return (NULL);
	hlen = sp - s;
	if (!image_is_digest(s, hlen) || hlen + 2 > n)
		return (NULL);
	if (sp[1] != ' ' && sp[1] != '*')
		return (NULL);
	f = sp + 2;
	flen = n - hlen - 2;
	if (flen >= 2 && f[0] == '.' && f[1] == '/') {
		f += 2;
		flen -= 2;
	}
	if (flen != strlen(name) || memcmp(f, name, flen) != 0)
		return (NULL);
	hex = xstrndup(s, hlen);
	for (i = 0; i < hlen; i++)
		hex[i] = tolower((unsigned char)hex[i]);
	return (hex);
}

/*
 * The digest that text[0..len) gives name, in lowercase hex (64 or 128
 * digits), or NULL: none, the text over IMAGE_SUMS_MAX, or two lines for
 * name that disagree (which to believe?).
 */
char *
image_sums_find(const char *text, size_t len, const char *name)
{
	const char	*p, *end, *nl;
	char		*hex, *found = NULL;

	if (len > IMAGE_SUMS_MAX || name == NULL || *name == '\0')
		return (NULL);
	end = text + len;
	for (p = text; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		if ((hex = image_sums_line(p, nl - p, name)) == NULL)
			continue;
		if (found != NULL && strcmp(found, hex) != 0) {
			free(found);
			free(hex);
			return (NULL);
		}
		free(found);
		found = hex;
	}
	return (found);
}

/* url's directory with file at its end (no query: the sums sit beside). */
char *
image_sums_beside(const char *url, const char *file)
{
	const char	*end, *slash;
	char		*s;

	end = url + strcspn(url, "?#");
	for (slash = end; slash > url && slash[-1] != '/'; slash--)
		/* nothing */;
	xasprintf(&s, "%.*s%s", (int)(slash - url), url, file);
	return (s);
}
