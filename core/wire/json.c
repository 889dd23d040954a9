/*
 * The one JSON string writer, for qsup's own output (qsup run --json, the
 * network's notes, the profile as JSON) and the agent's replies alike:
 * '"' and '\\' escaped, every other byte below 0x20 as \u00XX, the rest
 * (UTF-8 or not) as is. Readers on either side take any valid escape.
 */
#include <stdio.h>

#include "wire.h"

/* Append s as a JSON string literal, quotes included. */
void
wire_json_string(wire_put_cb *put, void *arg, const char *s)
{
	const char	*run;
	char		 esc[8];

	put(arg, "\"", 1);
	for (;;) {
		for (run = s; *s != '\0' && *s != '"' && *s != '\\' &&
		    (unsigned char)*s >= 0x20; s++)
			;
		if (s > run)
			put(arg, run, s - run);
		if (*s == '\0')
			break;
		if (*s == '"' || *s == '\\') {
			esc[0] = '\\';
			esc[1] = *s;
			put(arg, esc, 2);
		} else {
			snprintf(esc, sizeof esc, "\\u%04x", (unsigned char)*s);
			put(arg, esc, 6);
		}
		s++;
	}
	put(arg, "\"", 1);
}
