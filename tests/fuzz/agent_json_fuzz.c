/*
 * The agent's reader of an exec request's JSON: either one thing to do
 * (an argv that ends in NULL, or a file job's path) with NAME=VALUE
 * environment strings, a terminal's size in range and a mode of 12 bits,
 * or a reason.
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
		if ((x.argv != NULL) + (x.read != NULL) + (x.write != NULL) != 1)
			abort();
		if (x.argv != NULL && (x.argc == 0 || x.argv[x.argc] != NULL))
			abort();
		if ((x.tty && x.argv == NULL) || x.rows > 10000 ||
		    x.cols > 10000 || x.mode < 0 || x.mode > 07777 ||
		    (x.has_mode && x.write == NULL))
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
