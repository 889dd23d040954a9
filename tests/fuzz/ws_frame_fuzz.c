/*
 * core/wire/ws.c's decoder, as httpd_ws.c drives it: a client's bytes,
 * arriving in pieces of the size the first byte says, fed until it takes
 * no more or ends with a close code. Whatever the bytes, nothing crashes
 * or leaks, a message never passes its bound, a control frame's payload
 * never passes 125 bytes, and an error is one of the RFC's codes.
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

#define FUZZ_WS_MAX	4096

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct wire_ws	 w;
	unsigned char	*have;
	size_t		 piece, at = 0, hlen = 0, used, take;
	int		 ev, code;

	if (len < 1)
		return (0);
	piece = data[0] % 16 + 1;
	data++;
	len--;
	have = malloc(len + 1);
	wire_ws_init(&w, FUZZ_WS_MAX);
	while (at < len) {
		take = len - at < piece ? len - at : piece;
		memcpy(have + hlen, data + at, take);
		hlen += take;
		at += take;
		do {
			used = wire_ws_feed(&w, have, hlen, &ev, &code);
			if (used > hlen)
				abort();
			memmove(have, have + used, hlen - used);
			hlen -= used;
			if (ev == WIRE_WS_MESSAGE && (w.msg_len > FUZZ_WS_MAX ||
			    (w.ev_op != 1 && w.ev_op != 2)))
				abort();
			if (w.ctl_len > sizeof w.ctl)
				abort();
			if (ev == WIRE_WS_ERROR) {
				if (code != WIRE_WS_PROTOCOL &&
				    code != WIRE_WS_BAD_DATA &&
				    code != WIRE_WS_TOO_BIG)
					abort();
				goto out;
			}
		} while (used > 0 || ev != WIRE_WS_NONE);
	}
out:
	wire_ws_free(&w);
	free(have);
	return (0);
}
