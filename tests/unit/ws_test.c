/*
 * The WebSocket frame decoder and encoder (core/wire/ws.c): RFC 6455's
 * own examples (section 5.7), a message in pieces with a ping between,
 * every example cut at every byte, and the frames no client may send,
 * each refused with its close code.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "wire.h"

/* Feed p to w n bytes at a time: the events, as letters, into ev. */
static void
feed(struct wire_ws *w, const unsigned char *p, size_t len, size_t n,
    char *ev, size_t evlen, unsigned char *msg, size_t *msglen, int *code)
{
	unsigned char	have[4096];
	size_t		hlen = 0, used, k = 0, at = 0, take;
	int		e;

	*code = 0;
	for (;;) {
		take = len - at < n ? len - at : n;
		memcpy(have + hlen, p + at, take);
		hlen += take;
		at += take;
		do {
			used = wire_ws_feed(w, have, hlen, &e, code);
			memmove(have, have + used, hlen - used);
			hlen -= used;
			if (e == WIRE_WS_MESSAGE) {
				memcpy(msg, w->msg, w->msg_len);
				*msglen = w->msg_len;
			}
			if (e != WIRE_WS_NONE && k + 1 < evlen)
				ev[k++] = "-mpPce"[e];
			if (e == WIRE_WS_ERROR)
				goto out;
		} while (used > 0 || e != WIRE_WS_NONE);
		if (at == len)
			break;
	}
out:
	ev[k] = '\0';
}

Test(ws, rfc_examples_cut_anywhere)
{
	/* A masked "Hello", then a fragmented unmasked one is not ours. */
	static const unsigned char hello[] = {
		0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51,
		0x58
	};
	struct wire_ws	w;
	unsigned char	msg[64];
	size_t		n, mlen = 0;
	char		ev[16];
	int		code;

	for (n = 1; n <= sizeof hello; n++) {
		wire_ws_init(&w, 1024);
		feed(&w, hello, sizeof hello, n, ev, sizeof ev, msg, &mlen,
		    &code);
		cr_assert_str_eq(ev, "m", "in pieces of %zu", n);
		cr_assert_eq(mlen, 5);
		cr_assert_eq(memcmp(msg, "Hello", 5), 0);
		cr_assert_eq(w.ev_op, 1);
		wire_ws_free(&w);
	}
}

/* A masked frame of op, fin, payload p (mask 01 02 03 04) into out. */
static size_t
frame(unsigned char *out, int op, int fin, const char *p, size_t len)
{
	static const unsigned char k[4] = { 1, 2, 3, 4 };
	size_t	i, h = 2;

	out[0] = (fin ? 0x80 : 0) | op;
	if (len < 126)
		out[1] = 0x80 | len;
	else {
		out[1] = 0x80 | 126;
		out[2] = len >> 8;
		out[3] = len & 0xff;
		h = 4;
	}
	memcpy(out + h, k, 4);
	for (i = 0; i < len; i++)
		out[h + 4 + i] = p[i] ^ k[i % 4];
	return (h + 4 + len);
}

Test(ws, fragments_with_a_ping_between)
{
	unsigned char	in[512], msg[64];
	struct wire_ws	w;
	size_t		len = 0, n, mlen = 0;
	char		ev[16];
	int		code;

	len += frame(in + len, 2, 0, "abc", 3);
	len += frame(in + len, 9, 1, "hi", 2);
	len += frame(in + len, 0, 0, "", 0);
	len += frame(in + len, 0, 1, "def", 3);
	len += frame(in + len, 8, 1, "\x03\xe8", 2);
	for (n = 1; n <= len; n++) {
		wire_ws_init(&w, 1024);
		feed(&w, in, len, n, ev, sizeof ev, msg, &mlen, &code);
		cr_assert_str_eq(ev, "pmc", "in pieces of %zu", n);
		cr_assert_eq(mlen, 6);
		cr_assert_eq(memcmp(msg, "abcdef", 6), 0);
		cr_assert_eq(w.ev_op, 2);
		cr_assert_eq(w.ctl_len, 2);
		wire_ws_free(&w);
	}
}

/* One input, its expected close code. */
static void
refused(const unsigned char *in, size_t len, size_t max, int want)
{
	struct wire_ws	w;
	unsigned char	msg[2048];
	size_t		mlen;
	char		ev[16];
	int		code;

	wire_ws_init(&w, max);
	feed(&w, in, len, len, ev, sizeof ev, msg, &mlen, &code);
	cr_assert_eq(ev[strlen(ev) - 1], 'e', "events %s", ev);
	cr_assert_eq(code, want, "code %d, not %d", code, want);
	wire_ws_free(&w);
}

Test(ws, what_no_client_may_send)
{
	unsigned char	in[2048];
	char		big[200];
	size_t		len;

	memset(big, 'x', sizeof big);
	/* unmasked */
	refused((const unsigned char *)"\x81\x02hi", 4, 64, WIRE_WS_PROTOCOL);
	/* reserved bits, reserved opcodes */
	len = frame(in, 1, 1, "a", 1);
	in[0] |= 0x40;
	refused(in, len, 64, WIRE_WS_PROTOCOL);
	len = frame(in, 3, 1, "a", 1);
	refused(in, len, 64, WIRE_WS_PROTOCOL);
	len = frame(in, 11, 1, "a", 1);
	refused(in, len, 64, WIRE_WS_PROTOCOL);
	/* a control frame in pieces, or past 125 bytes */
	len = frame(in, 9, 0, "a", 1);
	refused(in, len, 64, WIRE_WS_PROTOCOL);
	len = frame(in, 9, 1, big, 126);
	refused(in, len, 1024, WIRE_WS_PROTOCOL);
	/* a continuation of nothing; a new message inside one */
	len = frame(in, 0, 1, "a", 1);
	refused(in, len, 64, WIRE_WS_PROTOCOL);
	len = frame(in, 1, 0, "a", 1);
	len += frame(in + len, 1, 1, "b", 1);
	refused(in, len, 64, WIRE_WS_PROTOCOL);
	/* past the bound, in one frame and in pieces */
	len = frame(in, 2, 1, big, 100);
	refused(in, len, 99, WIRE_WS_TOO_BIG);
	len = frame(in, 2, 0, big, 60);
	len += frame(in + len, 0, 1, big, 60);
	refused(in, len, 100, WIRE_WS_TOO_BIG);
	/* a 64-bit length with its top bit set */
	refused((const unsigned char *)"\x82\xff\x80\0\0\0\0\0\0\0\1\2\3\4",
	    14, 64, WIRE_WS_PROTOCOL);
	/* text that is not UTF-8; a close with a one-byte payload */
	len = frame(in, 1, 1, "\xc0\xaf", 2);
	refused(in, len, 64, WIRE_WS_BAD_DATA);
	len = frame(in, 8, 1, "\x03", 1);
	refused(in, len, 64, WIRE_WS_PROTOCOL);
}

Test(ws, utf8)
{
	cr_assert(wire_ws_utf8((const unsigned char *)"h\xc3\xa9llo \xe2\x82\xac"
	    "\xf0\x9f\x98\x80", 14));
	cr_assert(!wire_ws_utf8((const unsigned char *)"\xed\xa0\x80", 3));
	cr_assert(!wire_ws_utf8((const unsigned char *)"\xf4\x90\x80\x80", 4));
	cr_assert(!wire_ws_utf8((const unsigned char *)"\xe2\x82", 2));
}

Test(ws, server_frame_heads)
{
	unsigned char	h[WIRE_WS_HEAD_MAX];

	cr_assert_eq(wire_ws_frame(h, 1, 5), 2);
	cr_assert_eq(h[0], 0x81);
	cr_assert_eq(h[1], 5);
	cr_assert_eq(wire_ws_frame(h, 2, 300), 4);
	cr_assert_eq(h[1], 126);
	cr_assert_eq(h[2] << 8 | h[3], 300);
	cr_assert_eq(wire_ws_frame(h, 2, 70000), 10);
	cr_assert_eq(h[1], 127);
	cr_assert_eq(h[7] << 16 | h[8] << 8 | h[9], 70000);
}
