/*
 * The web console's paths (core/serve/serve_console.c), any bytes: a
 * path under /console/ it takes is segments of [A-Za-z0-9._-], none empty
 * nor beginning with a dot, so that joined to the console's directory it
 * names nothing above it (no "..", no "/" at either end, no "//").
 */
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char	*p, *seg, *save = NULL;
	size_t	 i;

	if (len > 4096)
		return (0);
	p = malloc(len + 1);
	memcpy(p, data, len);
	p[len] = '\0';
	len = strlen(p);	/* a path is a C string: httpd refuses %00 */
	if (serve_console_name_ok(p)) {
		if (len == 0 || p[0] == '/' ||
		    p[len - 1] == '/' || strstr(p, "//") != NULL)
			abort();
		for (i = 0; i < len; i++)
			if (strchr("abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/",
			    p[i]) == NULL)
				abort();
		for (seg = strtok_r(p, "/", &save); seg != NULL;
		    seg = strtok_r(NULL, "/", &save))
			if (seg[0] == '.')
				abort();
	}
	free(p);
	return (0);
}
