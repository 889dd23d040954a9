/*
 * The agent's replies are bytes from the guest, which qsup does not trust:
 * mutated and random responses must never crash the client or make it
 * hold more than its bounds. A fixed, seeded budget, so a failure repeats.
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <ev.h>

#include "cmd.h"

#define FUZZ_ROUNDS	3000

static const char *corpus[] = {
	"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
	"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	"Transfer-Encoding: chunked\r\n\r\n"
	"1d\r\nevent: start\ndata: {\"id\":1}\n\n\r\n"
	"1a\r\nevent: stdout\ndata: aGk=\n\n\r\n"
	"1f\r\nevent: exit\ndata: {\"status\":0}\n\n\r\n0\r\n\r\n",
	"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 24\r\n\r\n"
	"{\"error\":\"no seed disk\"}",
	/* Exit events a hostile guest might forge. */
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	"Transfer-Encoding: chunked\r\n\r\n"
	"1d\r\nevent: start\ndata: {\"id\":1}\n\n\r\n"
	"23\r\nevent: exit\ndata: {\"signal\":1000}\n\n\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
	"Transfer-Encoding: chunked\r\n\r\n"
	"40\r\nevent: exit\ndata: {\"status\":126,\"error\":"
	"\"\\u001b[2J\\\"x\\n\\t\\\\y\"}\n\n\r\n0\r\n\r\n",
};
#define NCORPUS	(sizeof corpus / sizeof corpus[0])

static int	nresponses;

static void
response_cb(int status, const char *body, size_t len, void *arg)
{
	(void)status;
	(void)arg;
	/* Touch every byte the client hands over. */
	while (len-- > 0)
		nresponses += body[len] == '\0';
	nresponses++;
}

static int
event_cb(const char *event, const char *data, size_t len, void *arg,
    char **cause)
{
	struct agent_exit	x;

	(void)arg;
	/* The client's bounds hold whatever the guest sends. */
	cr_assert(strlen(event) <= 32);
	cr_assert(len <= 256 * 1024);
	if (strcmp(event, "exit") == 0) {
		if (agent_parse_exit(data, len, &x, cause) == -1)
			return (-1);
		cr_assert(x.status >= 0 && x.status <= 255);
		cr_assert(x.signal >= 0 && x.signal <= AGENT_SIGNAL_MAX);
		free(x.error);
	}
	while (len-- > 0)
		nresponses += data[len] == '\0';
	return (0);
}

static void
mutate(unsigned char *buf, size_t *len, size_t max)
{
	size_t	n = rand() % 8 + 1, at;

	while (n-- > 0) {
		at = *len > 0 ? (size_t)rand() % *len : 0;
		switch (rand() % 5) {
		case 0:		/* flip a byte */
			if (*len > 0)
				buf[at] = rand();
			break;
		case 1:		/* a hex digit, a CR, a LF or a colon */
			if (*len > 0)
				buf[at] = "0123456789abcdefF\r\n: "[rand() % 21];
			break;
		case 2:		/* cut */
			*len = at;
			break;
		case 3:		/* duplicate a stretch */
			if (*len > 0 && *len * 2 < max) {
				memcpy(buf + *len, buf + at, *len - at);
				*len += *len - at;
			}
			break;
		case 4:		/* a huge chunk size */
			if (*len + 12 < max) {
				memmove(buf + at + 10, buf + at, *len - at);
				memcpy(buf + at, "ffffffffff", 10);
				*len += 10;
			}
			break;
		}
	}
}

Test(agent_client_fuzz, mutated_responses_never_crash)
{
	unsigned char	 buf[65536];
	struct ev_loop	*loop;
	struct agent_conn *c;
	size_t		 len, i, off, piece;
	int		 sv[2], round;
	ssize_t		 w;

	/* Each dropped connection is logged; that is not the point here. */
	cr_redirect_stderr();
	srand(20261129);
	loop = ev_loop_new(EVFLAG_AUTO);
	for (round = 0; round < FUZZ_ROUNDS; round++) {
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		c = agent_conn_new(loop, sv[0], "t");
		for (i = 0; i < 3; i++)
			agent_request(c, "GET", "/x", NULL, 0, response_cb,
			    event_cb, NULL);
		if (round % 10 == 0) {
			len = rand() % 4096;
			for (i = 0; i < len; i++)
				buf[i] = rand();
		} else {
			len = strlen(corpus[round % NCORPUS]);
			memcpy(buf, corpus[round % NCORPUS], len);
			mutate(buf, &len, sizeof buf / 2);
		}
		for (off = 0; off < len; off += piece) {
			piece = rand() % 512 + 1;
			if (piece > len - off)
				piece = len - off;
			w = write(sv[1], buf + off, piece);
			cr_assert_eq(w, (ssize_t)piece);
			ev_run(loop, EVRUN_NOWAIT);
		}
		close(sv[1]);
		ev_run(loop, EVRUN_NOWAIT);
		agent_conn_free(c);
	}
	ev_loop_destroy(loop);
	cr_assert_gt(nresponses, 0);
}
