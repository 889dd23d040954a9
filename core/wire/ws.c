/*
 * The WebSocket framing of RFC 6455, a server's side: an incremental
 * decoder of a client's frames (masked, as a client's must be), which
 * assembles messages up to a bound and hands control frames apart, and
 * the encoder of a server's frame heads. It copies what it keeps into its
 * own bounded buffers and never trusts a length it has not checked: a
 * message past max, a control frame past 125 bytes or in pieces, a
 * continuation of nothing, reserved bits or opcodes, an unmasked frame,
 * or text that is not UTF-8 each end the decoder with the close code the
 * RFC gives (1002, 1007, 1009).
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

void
wire_ws_init(struct wire_ws *w, size_t max)
{
	memset(w, 0, sizeof *w);
	w->max = max;
}

void
wire_ws_free(struct wire_ws *w)
{
	free(w->msg);
	w->msg = NULL;
	w->msg_len = w->msg_cap = 0;
}

/*
 * A frame's head from p: its size, 0 while more is needed, or -1 with
 * *code for a frame no client may send.
 */
static int
wire_ws_head(struct wire_ws *w, const unsigned char *p, size_t len,
    int *code)
{
	uint64_t	n;
	size_t		need = 2, i;
	int		op;

	if (len < 2)
		return (0);
	*code = WIRE_WS_PROTOCOL;
	op = p[0] & 0x0f;
	if ((p[0] & 0x70) != 0 || (op > 2 && op < 8) || op > 10)
		return (-1);
	if ((p[1] & 0x80) == 0)
		return (-1);		/* a client's frames are masked */
	n = p[1] & 0x7f;
	if (n == 126)
		need += 2;
	else if (n == 127)
		need += 8;
	need += 4;
	if (len < need)
		return (0);
	if (n == 126)
		n = (uint64_t)p[2] << 8 | p[3];
	else if (n == 127) {
		if (p[2] & 0x80)
			return (-1);
		for (n = 0, i = 2; i < 10; i++)
			n = n << 8 | p[i];
	}
	if (op >= 8 && (n > 125 || (p[0] & 0x80) == 0))
		return (-1);		/* control frames: short and whole */
	if (op == 0 && w->msg_op == 0)
		return (-1);		/* a continuation of nothing */
	if ((op == 1 || op == 2) && w->msg_op != 0)
		return (-1);		/* a new message inside one */
	if (op < 8 && n > w->max - (op == 0 ? w->msg_len : 0)) {
		*code = WIRE_WS_TOO_BIG;
		return (-1);
	}
	w->fin = (p[0] & 0x80) != 0;
	w->op = op;
	w->left = n;
	w->at = 0;
	memcpy(w->mask, p + need - 4, 4);
	if (op == 1 || op == 2)
		w->msg_op = op;
	w->ctl_len = 0;
	return ((int)need);
}

/* Whether p holds UTF-8 alone: no overlong forms, surrogates or > U+10FFFF. */
int
wire_ws_utf8(const unsigned char *p, size_t n)
{
	size_t		i = 0, k, more;
	uint32_t	c, min;

	while (i < n) {
		c = p[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			more = 1;
			c &= 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			more = 2;
			c &= 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			more = 3;
			c &= 0x07;
			min = 0x10000;
		} else
			return (0);
		if (n - i <= more)
			return (0);
		for (k = 1; k <= more; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return (0);
			c = c << 6 | (p[i + k] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return (0);
		i += more + 1;
	}
	return (1);
}

/*
 * Take what of p (len bytes) the decoder can: the bytes used, with *ev
 * what became whole (WIRE_WS_NONE: nothing yet). A message is in w->msg
 * (w->msg_len bytes, w->ev_op 1 text or 2 binary) until the next call; a
 * ping's, pong's or close's payload in w->ctl. On WIRE_WS_ERROR, *code is
 * the close code and the decoder takes nothing more. Call again while it
 * uses bytes or gives events.
 */
size_t
wire_ws_feed(struct wire_ws *w, const unsigned char *p, size_t len, int *ev,
    int *code)
{
	unsigned char	*m;
	size_t		 used = 0, n, i, cap;
	int		 h;

	*ev = WIRE_WS_NONE;
	*code = 0;
	if (w->failed) {
		*ev = WIRE_WS_ERROR;
		*code = w->failed;
		return (0);
	}
	if (w->done_msg) {		/* the last message was handed over */
		w->done_msg = 0;
		w->msg_len = 0;
	}
	if (!w->in_frame) {
		if ((h = wire_ws_head(w, p, len, code)) == 0)
			return (0);
		if (h < 0) {
			w->failed = *code;
			*ev = WIRE_WS_ERROR;
			return (0);
		}
		w->in_frame = 1;
		used = (size_t)h;
	}
	n = len - used;
	if (n > w->left)
		n = (size_t)w->left;
	if (w->op >= 8) {
		for (i = 0; i < n; i++)
			w->ctl[w->ctl_len++] = p[used + i] ^ w->mask[w->at++ % 4];
	} else if (n > 0) {
		if (w->msg_len + n > w->msg_cap) {
			cap = w->msg_len + n > 2 * w->msg_cap ?
			    w->msg_len + n : 2 * w->msg_cap;
			if (cap > w->max)
				cap = w->max;
			if ((m = realloc(w->msg, cap)) == NULL) {
				w->failed = WIRE_WS_TOO_BIG;
				*ev = WIRE_WS_ERROR;
				*code = w->failed;
				return (used);
			}
			w->msg = m;
			w->msg_cap = cap;
		}
		for (i = 0; i < n; i++)
			w->msg[w->msg_len++] = p[used + i] ^
			    w->mask[w->at++ % 4];
	}
	used += n;
	w->left -= n;
	if (w->left > 0)
		return (used);
	w->in_frame = 0;
	switch (w->op) {
	case 8:
		*ev = WIRE_WS_CLOSE;
		if (w->ctl_len == 1 || (w->ctl_len > 2 &&
		    !wire_ws_utf8(w->ctl + 2, w->ctl_len - 2))) {
			w->failed = WIRE_WS_PROTOCOL;
			*ev = WIRE_WS_ERROR;
			*code = w->failed;
		}
		return (used);
	case 9:
		*ev = WIRE_WS_PING;
		return (used);
	case 10:
		*ev = WIRE_WS_PONG;
		return (used);
	}
	if (!w->fin)
		return (used);
	w->ev_op = w->msg_op;
	w->msg_op = 0;
	w->done_msg = 1;
	if (w->ev_op == 1 && !wire_ws_utf8(w->msg, w->msg_len)) {
		w->failed = WIRE_WS_BAD_DATA;
		*ev = WIRE_WS_ERROR;
		*code = w->failed;
		return (used);
	}
	*ev = WIRE_WS_MESSAGE;
	return (used);
}

/* A server's frame head for len bytes of opcode op, whole: its size. */
size_t
wire_ws_frame(unsigned char out[WIRE_WS_HEAD_MAX], int op, uint64_t len)
{
	int	i;

	out[0] = 0x80 | (op & 0x0f);
	if (len < 126) {
		out[1] = (unsigned char)len;
		return (2);
	}
	if (len < 65536) {
		out[1] = 126;
		out[2] = (unsigned char)(len >> 8);
		out[3] = (unsigned char)len;
		return (4);
	}
	out[1] = 127;
	for (i = 0; i < 8; i++)
		out[2 + i] = (unsigned char)(len >> (56 - 8 * i));
	return (10);
}
