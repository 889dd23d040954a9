/*
 * libFuzzer target for the agent's parsers of untrusted bytes: HTTP heads
 * and chunked bodies, exec JSON, the seed's config text and the seed ISO.
 * The first input byte picks the parser. Not part of `make tests`; run:
 *
 *	clang -g -O1 -fsanitize=fuzzer,address,undefined -std=gnu11 \
 *	    -D_GNU_SOURCE -Iguest tests/unit/agent_fuzz.c guest/agent_http.c \
 *	    guest/agent_json.c guest/agent_config.c guest/agent_iso.c \
 *	    guest/agent_util.c -o build/tests/agent_fuzz
 *	build/tests/agent_fuzz -max_total_time=60
 */
#include <sys/mman.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* What agent_util.c needs from the rest of the agent. */
int	agent_pid1;

void
init_poweroff(void)
{
	abort();
}

void
exec_kill_all(int sig)
{
	(void)sig;
}

int	LLVMFuzzerTestOneInput(const unsigned char *, size_t);

static void
fuzz_http(const char *p, size_t len)
{
	struct http_request	req;
	struct http_chunked	ch;
	struct abuf		out = { 0 };
	const char		*cause;
	size_t			 head, off;
	ssize_t			 n;
	int			 status, done = 0, too_big = 0;

	head = http_head_end(p, len);
	if (head > len)
		abort();
	if (head > 0 && http_parse_head(p, head, &req, &status, &cause) == 0) {
		if (req.content_length < -1 || req.path[0] != '/')
			abort();
		(void)http_token_equal("token", req.auth);
	}
	/* The rest as a chunked body, fed in small pieces. */
	memset(&ch, 0, sizeof ch);
	for (off = head; off < len && !done; off += n) {
		n = http_chunked_feed(&ch, p + off, len - off < 7 ? len - off :
		    7, &out, 4096, &done, &too_big);
		if (n <= 0)
			break;
	}
	if (out.len > 4096)
		abort();
	abuf_free(&out);
}

static void
fuzz_json(const char *p, size_t len)
{
	struct json_exec	 x;
	char			*cause = NULL;
	size_t			 i;

	if (json_parse_exec(p, len, &x, &cause) == 0) {
		if (x.argc == 0 || x.argv[x.argc] != NULL)
			abort();
		for (i = 0; i < x.nenv; i++) {
			if (strchr(x.env[i], '=') == NULL)
				abort();
		}
		json_exec_free(&x);
	} else if (cause == NULL)
		abort();
	free(cause);
}

static void
fuzz_config(const char *p, size_t len)
{
	struct agent_config	 cfg;
	char			*cause = NULL;

	memset(&cfg, 0, sizeof cfg);
	if (config_parse(&cfg, p, len, &cause) == -1 && cause == NULL)
		abort();
	free(cause);
	config_free(&cfg);
}

static void
fuzz_iso(const char *p, size_t len)
{
	char	*data = NULL, *cause = NULL;
	size_t	 dlen;
	int	 fd;

	/* The input is laid out from sector 16, the PVD, onward. */
	if ((fd = memfd_create("iso", 0)) == -1)
		return;
	if (pwrite(fd, p, len, 16 * 2048) == (ssize_t)len) {
		(void)iso_is_seed(fd);
		if (iso_read_config(fd, &data, &dlen, &cause) == 0 &&
		    (data == NULL || data[dlen] != '\0'))
			abort();
	}
	free(data);
	free(cause);
	close(fd);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t len)
{
	const char	*p = (const char *)data + 1;

	if (len == 0)
		return (0);
	switch (data[0] % 4) {
	case 0:
		fuzz_http(p, len - 1);
		break;
	case 1:
		fuzz_json(p, len - 1);
		break;
	case 2:
		fuzz_config(p, len - 1);
		break;
	case 3:
		fuzz_iso(p, len - 1);
		break;
	}
	return (0);
}
