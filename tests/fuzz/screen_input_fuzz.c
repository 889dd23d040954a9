/*
 * core/serve/serve_screen_input.c's reading of POST .../input's body (a
 * client's bytes): each event turned into QMP input-send-event calls, or
 * refused with a 400 naming its field; every call a JSON object QEMU can
 * parse, never more calls than the bounds allow.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve_int.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct serve_error	 err;
	struct screen_calls	 c = { 0 };
	json_t			*j, *call;
	size_t			 i;
	int			 rc;

	if ((j = json_loadb((const char *)data, len, 0, NULL)) == NULL)
		return (0);
	memset(&err, 0, sizeof err);
	rc = screen_input_parse(j, 640, 480, &c, &err);
	if (rc == 0 && (c.n == 0 || err.status != 0))
		abort();
	if (rc == -1 && err.status != 400)
		abort();
	/* The last event may take the count past the cap, by one text. */
	if (c.n > SCREEN_CALLS_MAX + SCREEN_TEXT_MAX * 4 ||
	    (rc == 0 && c.n > SCREEN_CALLS_MAX))
		abort();
	for (i = 0; i < c.n; i++) {
		if ((call = json_loads(c.args[i], 0, NULL)) == NULL ||
		    !json_is_array(json_object_get(call, "events")))
			abort();
		json_decref(call);
	}
	screen_calls_free(&c);
	free(err.msg);
	free(err.fields);
	free(err.allow);
	json_decref(j);
	return (0);
}
