/*
 * Reading JSON on the host: QMP's replies and events, the agent's replies.
 * jansson parses; these helpers only reach into the result by a dotted
 * path ("error.desc"), so that callers neither walk objects by hand nor
 * scan text for keys. Writing JSON is the wire layer's (buf_json_string).
 */
#include <string.h>

#include <jansson.h>

#include "base.h"

/* A JSON object from buf (a new reference), or NULL if it is not one. */
json_t *
json_read(const char *buf, size_t len, size_t flags)
{
	json_error_t	 err;
	json_t		*j;

	if ((j = json_loadb(buf, len, flags, &err)) == NULL)
		return (NULL);
	if (!json_is_object(j)) {
		json_decref(j);
		return (NULL);
	}
	return (j);
}

/* The value at path, a key or keys joined by '.', in j; or NULL. */
json_t *
json_path(json_t *j, const char *path)
{
	const char	*dot;
	char		 key[128];
	size_t		 len;

	while (j != NULL && json_is_object(j)) {
		if ((dot = strchr(path, '.')) == NULL)
			return (json_object_get(j, path));
		if ((len = dot - path) >= sizeof key)
			return (NULL);
		memcpy(key, path, len);
		key[len] = '\0';
		j = json_object_get(j, key);
		path = dot + 1;
	}
	return (NULL);
}

/* The integer at path; -1 if there is none, or another type. */
int
json_path_int(json_t *j, const char *path, long long *v)
{
	json_t	*x;

	if ((x = json_path(j, path)) == NULL || !json_is_integer(x))
		return (-1);
	*v = json_integer_value(x);
	return (0);
}

/* The string at path, owned by j; NULL if there is none. */
const char *
json_path_str(json_t *j, const char *path)
{
	json_t	*x;

	if ((x = json_path(j, path)) == NULL || !json_is_string(x))
		return (NULL);
	return (json_string_value(x));
}
