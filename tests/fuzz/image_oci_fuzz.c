/*
 * What "qsup image build" reads from a container image before anything
 * is extracted: an OCI config (JSON) made into image.conf lines, and an
 * archive entry's name and link target (image_tar_path,
 * image_tar_link_inside). Any bytes: a config's lines are "KEY VALUE"
 * with nothing but printable ASCII in the value; a name taken is relative,
 * without "." or ".." components, and never empty between slashes.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "image.h"

static void
image_oci_fuzz_conf(const uint8_t *data, size_t len)
{
	struct buf	 b = { 0 };
	json_t		*j;
	char		*why = NULL;
	size_t		 i;

	if ((j = json_loadb((const char *)data, len, 0, NULL)) == NULL)
		return;
	if (image_oci_conf(j, &b, &why) == -1) {
		if (why == NULL)
			abort();
		free(why);
	} else {
		for (i = 0; i < b.len; i++) {
			if (b.data[i] != '\n' && (b.data[i] < 0x20 ||
			    b.data[i] >= 0x7f))
				abort();
		}
	}
	buf_free(&b);
	json_decref(j);
}

static void
image_oci_fuzz_path(const uint8_t *data, size_t len)
{
	const char	*why = NULL, *target;
	char		*s, *path, *seg, *save = NULL, *copy;

	/* "NAME\0TARGET": the bytes whole, NUL-terminated. */
	s = xmalloc(len + 1);
	memcpy(s, data, len);
	s[len] = '\0';
	target = strlen(s) < len ? s + strlen(s) + 1 : "";
	if ((path = image_tar_path(s, &why)) == NULL) {
		if (why == NULL)
			abort();
		free(s);
		return;
	}
	if (path[0] == '/' || strstr(path, "//") != NULL ||
	    (path[0] != '\0' && path[strlen(path) - 1] == '/'))
		abort();
	copy = xstrdup(path);
	for (seg = strtok_r(copy, "/", &save); seg != NULL;
	    seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0 || strcmp(seg, "..") == 0)
			abort();
	}
	free(copy);
	(void)image_tar_link_inside(path, target);
	free(path);
	free(s);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	image_oci_fuzz_conf(data, len);
	image_oci_fuzz_path(data, len);
	return (0);
}
