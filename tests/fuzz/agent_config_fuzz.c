/*
 * The agent's reader of the seed's config text (the seed ISO is written by
 * qsup, but the guest's disk is the guest's): a refusal always says why,
 * and what was read is freed whatever happened.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct agent_config	 cfg;
	char			*cause = NULL;

	memset(&cfg, 0, sizeof cfg);
	if (config_parse(&cfg, (const char *)data, len, &cause) == -1 &&
	    cause == NULL)
		abort();
	free(cause);
	config_free(&cfg);
	return (0);
}
