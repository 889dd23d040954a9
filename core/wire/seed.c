/*
 * The seed's value encoding (wire.h, QSUP_SEED_CONFIG): every byte
 * outside 0x21-0x7e, and '%', as %XX. The one writer of it, for the
 * seed qsup writes and for the image config "qsup image build" writes;
 * the agent's config.c reads it.
 */
#include <stdio.h>
#include <string.h>

#include "wire.h"

void
wire_seed_value(wire_put_cb *put, void *arg, const char *s)
{
	char	hex[4];

	for (; *s != '\0'; s++) {
		if (*s <= 0x20 || *s >= 0x7f || *s == '%') {
			snprintf(hex, sizeof hex, "%%%02X", (unsigned char)*s);
			put(arg, hex, 3);
		} else
			put(arg, s, 1);
	}
}

/* "KEY VALUE\n", the value encoded. */
void
wire_seed_line(wire_put_cb *put, void *arg, const char *key, const char *value)
{
	put(arg, key, strlen(key));
	put(arg, " ", 1);
	wire_seed_value(put, arg, value);
	put(arg, "\n", 1);
}
