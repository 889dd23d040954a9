/*
 * core/vm/qmp.c's script reader: what QEMU's monitor writes back (any
 * bytes, should QEMU be the guest's), read on the loop, in lines; it may
 * tell its callback once, at most.
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"

static int	told;

static void
qmp_script_fuzz_cb(const char *error, void *arg)
{
	(void)error;
	(void)arg;
	if (++told > 1)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct ev_loop	*loop;
	const char		*cmds[] = { "{\"execute\":\"a\"}",
				    "{\"execute\":\"b\"}" };
	struct qmp_script	*s;
	char			*cause = NULL;
	size_t			 off = 0;
	ssize_t			 n;
	int			 sv[2], i;

	if (loop == NULL)
		loop = ev_loop_new(EVFLAG_AUTO);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		abort();
	util_set_nonblock(sv[1]);
	told = 0;
	if ((s = qmp_script_new(loop, sv[0], cmds, 2, qmp_script_fuzz_cb,
	    NULL, &cause)) == NULL)
		abort();
	while (off < len) {
		if ((n = write(sv[1], data + off, len - off)) > 0)
			off += n;
		for (i = 0; i < 4; i++)
			ev_run(loop, EVRUN_NOWAIT);
	}
	for (i = 0; i < 4; i++)
		ev_run(loop, EVRUN_NOWAIT);
	qmp_script_free(s);
	close(sv[0]);
	close(sv[1]);
	return (0);
}
