/*
 * The frame filter, fed what guest root can make QEMU send: Ethernet
 * frames (ARP, IPv4 with UDP, TCP, ICMP, fragments, anything) read from
 * QEMU's end of the socketpair, through qsup's DNS, the filter and a
 * restricted libslirp. Open mode is left out: its slirp would send the
 * fuzzed packets to real hosts.
 *
 * The input: one byte of flags (bit 0: allowlist, else restricted; bit 1:
 * the bytes as QEMU's stream, 4-byte lengths and all, else frames each
 * preceded by a 2-byte length), then the frames. What comes back must be
 * well framed, and nothing may answer a ping: in these modes that would be
 * the host answering.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cmd.h"
#include "net_int.h"
#include "net_fuzz.h"

#define FRAME_FUZZ_MAX	(128 * 1024)	/* of an input, the rest ignored */

/* Names under localhost only: resolved by qsup, never by DNS. */
static const char *const	 frame_rule_text[] = { "localhost:9",
				    "*.localhost:9" };
static struct net_fuzz		 frame_fuzz = { .name = "frame",
				    .text = frame_rule_text, .nrules = 2 };

/* Write what we can; a full socket is QEMU's backpressure, not ours. */
static void
frame_write(int fd, const void *p, size_t len)
{
	ssize_t	n;

	while (len > 0) {
		n = send(fd, p, len, MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n <= 0) {
			if (n == -1 && errno == EAGAIN) {
				ev_run(frame_fuzz.loop, EVRUN_NOWAIT);
				continue;
			}
			return;
		}
		p = (const char *)p + n;
		len -= (size_t)n;
	}
}

/* Frames the stack sent "QEMU": each well framed, none a ping's answer. */
static void
frame_check(struct buf *in)
{
	const unsigned char	*p, *f;
	size_t			 len, off = 0, ihl;

	while (in->len - off >= 4) {
		p = (const unsigned char *)in->data + off;
		len = ((size_t)p[0] << 24) | ((size_t)p[1] << 16) |
		    ((size_t)p[2] << 8) | p[3];
		if (len < 14 || len > 65535 + 14)
			abort();
		if (in->len - off - 4 < len)
			break;
		f = p + 4;
		if (len >= 14 + 20 && f[12] == 0x08 && f[13] == 0x00 &&
		    f[23] == 1) {
			ihl = (size_t)(f[14] & 0x0f) * 4;
			if (len > 14 + ihl && f[14 + ihl] == 0)
				abort();		/* an echo reply */
		}
		off += 4 + len;
	}
	buf_consume(in, off);
}

static void
frame_drain(int fd, struct buf *in)
{
	char	chunk[65536];
	ssize_t	n;

	while ((n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT)) > 0) {
		buf_add(in, chunk, (size_t)n);
		frame_check(in);
	}
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* net.c's warnings about bad frames, not the sanitizers' reports. */
	if ((stderr = fopen("/dev/null", "w")) == NULL)
		abort();
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net			*net;
	struct buf			 in = { 0 };
	unsigned char			 hdr[4];
	char				*cause = NULL;
	size_t				 off, len;
	int				 qfd, i;

	if (size < 1)
		return (0);
	if (size > FRAME_FUZZ_MAX)
		size = FRAME_FUZZ_MAX;
	net = net_fuzz_new(&frame_fuzz, (data[0] & 1) ?
	    NET_MODE_ALLOWLIST : NET_MODE_RESTRICTED);
	/* A map to the discard port: whatever the guest sends is lost. */
	if (net_add_tcp_map(net, "db.internal", 5432, "127.0.0.1", 9, NULL,
	    &cause) == -1)
		abort();
	qfd = dup(net_qemu_fd(net));
	net_qemu_started(net);
	if (qfd == -1)
		abort();
	if (data[0] & 2)
		frame_write(qfd, data + 1, size - 1);
	else {
		for (off = 1; off + 2 <= size; off += 2 + len) {
			len = ((size_t)data[off] << 8) | data[off + 1];
			if (len > size - off - 2)
				len = size - off - 2;
			hdr[0] = hdr[1] = 0;
			hdr[2] = (unsigned char)(len >> 8);
			hdr[3] = (unsigned char)len;
			frame_write(qfd, hdr, 4);
			frame_write(qfd, data + off + 2, len);
			frame_drain(qfd, &in);
		}
	}
	for (i = 0; i < 4; i++) {
		ev_run(frame_fuzz.loop, EVRUN_NOWAIT);
		frame_drain(qfd, &in);
	}
	net_fuzz_free(&frame_fuzz, net);
	close(qfd);
	buf_free(&in);
	return (0);
}
