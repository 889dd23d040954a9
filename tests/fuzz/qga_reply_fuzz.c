/*
 * core/serve/serve_attach.c's reading of what a QMP monitor or a
 * qemu-guest-agent writes back (any bytes: the agent is the guest's):
 * each line classified (greeting, event, reply, dropped), and a reply's
 * return read as guest-exec's pid and as guest-exec-status, its base64
 * output decoded within its bounds.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct attach_status	 st;
	const char		*p = (const char *)data, *nl;
	json_t			*ret;
	char			*error, *cause;
	long long		 pid;
	size_t			 left = len, n;
	int			 kind;

	while (left > 0) {
		nl = memchr(p, '\n', left);
		n = nl != NULL ? (size_t)(nl - p) : left;
		kind = attach_parse_reply(p, n, &ret, &error);
		if (kind < 0 || kind > 2 || (kind != 0 && (ret != NULL ||
		    error != NULL)))
			abort();
		if (ret != NULL) {
			if (attach_qga_pid(ret, &pid) == 0 && pid <= 0)
				abort();
			cause = NULL;
			if (attach_qga_status(ret, &st, &cause) == 0) {
				if (st.out.len > len || st.err.len > len)
					abort();
				attach_status_free(&st);
			} else if (cause == NULL)
				abort();
			free(cause);
			json_decref(ret);
		}
		free(error);
		if (nl == NULL)
			break;
		p = nl + 1;
		left -= n + 1;
	}
	return (0);
}
