/*
 * What an attached QEMU's monitor or its qemu-guest-agent writes back,
 * parsed: untrusted bytes (the guest may own either), so these are pure
 * functions of a line, with a fuzz target of their own (qga_reply).
 * serve_attach.c reads the sockets and calls them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve_int.h"

/*
 * One line from a monitor or an agent: 2 if it is QMP's greeting, 1 if
 * it is an event or not an object (dropped), 0 if it is a reply: *ret its
 * "return" (a new reference; NULL with *error, its "error"'s desc).
 */
int
attach_parse_reply(const char *line, size_t len, json_t **ret,
    char **error)
{
	json_t		*j, *v;
	const char	*desc;

	*ret = NULL;
	*error = NULL;
	if ((j = json_read(line, len, JSON_REJECT_DUPLICATES)) == NULL)
		return (1);
	if (json_is_object(json_object_get(j, "QMP"))) {
		json_decref(j);
		return (2);
	}
	if (json_object_get(j, "event") != NULL) {
		json_decref(j);
		return (1);
	}
	if ((v = json_object_get(j, "return")) != NULL) {
		*ret = json_incref(v);
		json_decref(j);
		return (0);
	}
	if ((v = json_object_get(j, "error")) != NULL) {
		desc = json_is_object(v) ? json_string_value(json_object_get(v,
		    "desc")) : NULL;
		xasprintf(error, "%.512s", desc != NULL ? desc :
		    "an error without a description");
		json_decref(j);
		return (0);
	}
	json_decref(j);
	return (1);
}

/*
 * guest-exec-status's return: whether it exited, its exit code or
 * signal, and its output decoded (out, err: at most ATTACH_LINE_MAX
 * each, as the line was). -1 with *cause when it is not one.
 */
int
attach_qga_status(json_t *ret, struct attach_status *st, char **cause)
{
	json_t		*v;
	const char	*data;
	size_t		 len, i;
	struct buf	*b;
	static const char *const keys[] = { "out-data", "err-data" };

	memset(st, 0, sizeof *st);
	if (!json_is_object(ret) ||
	    !json_is_boolean(json_object_get(ret, "exited"))) {
		*cause = xstrdup("guest-exec-status: no \"exited\"");
		return (-1);
	}
	st->exited = json_is_true(json_object_get(ret, "exited"));
	if ((v = json_object_get(ret, "exitcode")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < -1 ||
		    json_integer_value(v) > 255) {
			*cause = xstrdup("guest-exec-status: a bad exitcode");
			return (-1);
		}
		st->code = (int)json_integer_value(v);
		st->has_code = 1;
	}
	if ((v = json_object_get(ret, "signal")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > 127) {
			*cause = xstrdup("guest-exec-status: a bad signal");
			return (-1);
		}
		st->signal = (int)json_integer_value(v);
	}
	st->truncated = json_is_true(json_object_get(ret, "out-truncated")) ||
	    json_is_true(json_object_get(ret, "err-truncated"));
	for (i = 0; i < 2; i++) {
		b = i == 0 ? &st->out : &st->err;
		if ((v = json_object_get(ret, keys[i])) == NULL)
			continue;
		if (!json_is_string(v)) {
			xasprintf(cause, "guest-exec-status: %s is not a "
			    "string", keys[i]);
			attach_status_free(st);
			return (-1);
		}
		data = json_string_value(v);
		len = json_string_length(v);
		if (len > ATTACH_LINE_MAX ||
		    strspn(data, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
		    "qrstuvwxyz0123456789+/=") != len) {
			xasprintf(cause, "guest-exec-status: %s is not "
			    "base64", keys[i]);
			attach_status_free(st);
			return (-1);
		}
		b->data = xmalloc(len * 3 / 4 + 4);
		b->size = len * 3 / 4 + 4;
		b->len = util_base64_decode(data, len, (unsigned char *)b->data);
		b->data[b->len] = '\0';
	}
	return (0);
}

void
attach_status_free(struct attach_status *st)
{
	buf_free(&st->out);
	buf_free(&st->err);
}

/* guest-exec's return: the guest's pid. -1 if it is not one. */
int
attach_qga_pid(json_t *ret, long long *pid)
{
	json_t	*v;

	if (!json_is_object(ret) ||
	    !json_is_integer(v = json_object_get(ret, "pid")) ||
	    json_integer_value(v) <= 0)
		return (-1);
	*pid = json_integer_value(v);
	return (0);
}
