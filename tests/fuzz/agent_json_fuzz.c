/*
 * The agent's reader of an exec request's JSON: either an argv that ends
 * in NULL and NAME=VALUE environment strings, or a reason.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct json_exec	 x;
	char			*cause = NULL;
	size_t			 i;

	if (json_parse_exec((const char *)data, len, &x, &cause) == 0) {
		if (x.argc == 0 || x.argv[x.argc] != NULL)
			abort();
		for (i = 0; i < x.nenv; i++) {
			if (strchr(x.env[i], '=') == NULL)
				abort();
		}
		json_exec_free(&x);
	} else if (cause == NULL)
		abort();
	free(cause);
	return (0);
}
