/*
 * The allowlist proxy's request parser, fed what a guest can send to
 * 10.0.2.100:3128: the input is written whole to a proxy connection (as
 * slirp would pass it on), then the guest's side half-closes. The rules
 * allow only the discard port on the host's loopback (127.0.0.1:9,
 * [::1]:9, localhost:9 and names under it, which qsup resolves itself),
 * so nothing is ever looked up in DNS and nothing leaves the host. The
 * answer, if any, is one HTTP/1.1 response with a code the proxy gives:
 * 400, 403, 431 or 502 (a tunnel or a request that reached its
 * destination would then fail to connect, the port being closed).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cmd.h"
#include "net_int.h"
#include "net_fuzz.h"

#define PROXY_FUZZ_MAX		(64 * 1024)	/* of an input */
#define PROXY_FUZZ_ROUNDS	64		/* of the loop, at most */

static const char *const	 proxy_rule_text[] = { "127.0.0.1:9",
				    "[::1]:9", "localhost:9",
				    "*.localhost:9" };
static struct net_fuzz		 proxy_fuzz = { .name = "proxy",
				    .text = proxy_rule_text, .nrules =
				    sizeof proxy_rule_text /
				    sizeof proxy_rule_text[0] };

static int
proxy_connect(void)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s/net0.sock",
	    proxy_fuzz.dir);
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, 0);
	if (fd == -1 || connect(fd, (struct sockaddr *)&sun, sizeof sun) ==
	    -1)
		abort();
	return (fd);
}

/* Whatever the proxy answered: nothing, or one of its responses. */
static void
proxy_check(struct buf *b)
{
	int	code;

	if (b->len == 0)
		return;
	buf_add(b, "", 1);
	if (b->len < 13 || strncmp(b->data, "HTTP/1.1 ", 9) != 0)
		abort();
	code = atoi(b->data + 9);
	if (code != 400 && code != 403 && code != 431 && code != 502)
		abort();
	if (strstr(b->data, "\r\n\r\n") == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct net		*net;
	struct buf		 b = { 0 };
	struct pollfd		 pfd;
	char			 chunk[65536];
	size_t			 off = 0;
	ssize_t			 n;
	int			 fd, i, eof = 0;

	if (size > PROXY_FUZZ_MAX)
		size = PROXY_FUZZ_MAX;
	net = net_fuzz_new(&proxy_fuzz, NET_MODE_ALLOWLIST);
	fd = proxy_connect();
	for (i = 0; i < PROXY_FUZZ_ROUNDS && !eof; i++) {
		while (off < size) {
			n = send(fd, data + off, size - off, MSG_NOSIGNAL);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		if (off == size) {
			shutdown(fd, SHUT_WR);
			off++;
		}
		ev_run(proxy_fuzz.loop, EVRUN_NOWAIT);
		/* A refused connect to the loopback is quick, not instant. */
		pfd.fd = fd;
		pfd.events = POLLIN;
		poll(&pfd, 1, i < 4 ? 0 : 1);
		while ((n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT)) > 0)
			buf_add(&b, chunk, (size_t)n);
		if (n == 0 || (n == -1 && errno != EAGAIN))
			eof = 1;
	}
	proxy_check(&b);
	close(fd);
	net_fuzz_free(&proxy_fuzz, net);
	buf_free(&b);
	return (0);
}
