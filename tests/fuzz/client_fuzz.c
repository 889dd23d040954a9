/*
 * core/agent_client.c, qsup's reader of what the agent answers: bytes from
 * the guest, which qsup does not trust (guest root can write to the ports).
 * Responses with Content-Length or chunked bodies, Server-Sent Events
 * split anywhere, for three pending requests. The first byte of an input
 * sets the size of the pieces the rest arrives in; no input may crash the
 * client or make it hand over more than its bounds.
 */
#include <sys/socket.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "client.h"

static struct ev_loop	*fuzz_loop;
static size_t		 fuzz_seen;

static void
fuzz_response_cb(int status, const char *body, size_t len, void *arg)
{
	(void)arg;
	/* A dead port, a broken protocol, or three digits, 100-599. */
	if (status != AGENT_CLOSED && status != AGENT_BROKEN &&
	    (status < 100 || status > 599))
		abort();
	/* Every byte handed over is read, for ASan to see. */
	while (len-- > 0)
		fuzz_seen += body[len] == '\0';
}

static int
fuzz_event_cb(const char *event, const char *data, size_t len, void *arg,
    char **cause)
{
	(void)arg;
	(void)cause;
	fuzz_seen += strlen(event);
	while (len-- > 0)
		fuzz_seen += data[len] == '\0';
	return (0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if ((fuzz_loop = ev_loop_new(EVFLAG_AUTO)) == NULL)
		abort();
	/* The client may hang up before the input is all written. */
	signal(SIGPIPE, SIG_IGN);
	/* log_warnx's "malformed response", not the sanitizers' reports. */
	if ((stderr = fopen("/dev/null", "w")) == NULL)
		abort();
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct agent_conn	*c;
	size_t			 off, piece, n;
	ssize_t			 w;
	int			 sv[2], i;

	if (len == 0)
		return (0);
	piece = data[0] == 0 ? 1 : data[0];
	data++;
	len--;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
	    sv) == -1)
		abort();
	c = agent_conn_new(fuzz_loop, sv[0], "t");
	for (i = 0; i < 3; i++)
		agent_request(c, "GET", "/x", NULL, 0, fuzz_response_cb,
		    fuzz_event_cb, NULL);
	for (off = 0; off < len; off += n) {
		n = len - off < piece ? len - off : piece;
		/* Short, or refused once the client stopped reading. */
		if ((w = write(sv[1], data + off, n)) <= 0)
			break;
		n = w;
		ev_run(fuzz_loop, EVRUN_NOWAIT);
	}
	close(sv[1]);
	ev_run(fuzz_loop, EVRUN_NOWAIT);
	agent_conn_free(c);
	return (0);
}
