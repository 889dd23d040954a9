/*
 * --e2b's multipart/form-data bodies (core/serve/serve_e2b_wire.c), any
 * bytes: the input's first line is the Content-Type, the rest the body.
 * Every part found must lie within the body, its name and filename
 * within the body too, and no more parts than there is room for. Also
 * a stat line of the guest's, from the same bytes (e2b_stat_line), and
 * the body as a gzip upload (e2b_gunzip: never past its bound).
 */
#include <stdlib.h>
#include <string.h>

#include "serve_e2b.h"

static int
within(const char *p, size_t n, const char *base, size_t len)
{
	return (p == NULL || (p >= base && p + n <= base + len));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct e2b_part		 parts[4];
	struct e2b_entry	 en;
	struct buf		 b = { 0 };
	char			 bd[E2B_BOUNDARY_MAX + 1], *ctype, *out;
	const char		*body, *nl, *why;
	size_t			 blen, n, i;

	if ((nl = memchr(data, '\n', len)) == NULL)
		return (0);
	ctype = malloc(nl - (const char *)data + 1);
	memcpy(ctype, data, nl - (const char *)data);
	ctype[nl - (const char *)data] = '\0';
	body = nl + 1;
	blen = len - (body - (const char *)data);
	if (e2b_stat_line((const char *)data, nl - (const char *)data,
	    &en) == 0) {
		e2b_entry_json(&en, &b);
		buf_free(&b);
	}
	why = NULL;
	if (e2b_boundary(ctype, bd, &why) == 0) {
		if (strlen(bd) == 0 || strlen(bd) > E2B_BOUNDARY_MAX)
			abort();
		if (e2b_multipart(bd, body, blen, parts, 4, &n, &why) == 0) {
			if (n == 0 || n > 4)
				abort();
			for (i = 0; i < n; i++) {
				if (!within(parts[i].data, parts[i].len, body,
				    blen) || !within(parts[i].name,
				    parts[i].nlen, body, blen) ||
				    !within(parts[i].filename, parts[i].flen,
				    body, blen))
					abort();
			}
		} else if (why == NULL)
			abort();
	} else if (why == NULL)
		abort();
	out = NULL;
	if (e2b_gunzip(body, blen, 65536, &out, &n, &why) == 0) {
		if (n > 65536 || out == NULL || out[n] != '\0')
			abort();
		free(out);
	} else if (out != NULL || why == NULL)
		abort();
	free(ctype);
	return (0);
}
