/*
 * core/vm/qmp.c's monitor client: what a running QEMU's monitor writes
 * back (any bytes, should QEMU be the guest's), read on the loop, in
 * lines; each command it sent is told once at most, whatever the lines'
 * ids say, and never one it did not send; a return handed back is read.
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "vm.h"

static int	told[3];

static void
qmp_conn_fuzz_cb(const char *error, void *arg)
{
	int	*n = arg;

	(void)error;
	if (++*n > 1)
		abort();
}

/* A return handed back is an object's member, or NULL. */
static void
qmp_conn_fuzz_ret_cb(const char *error, json_t *ret, void *arg)
{
	qmp_conn_fuzz_cb(error, arg);
	if (ret != NULL)
		(void)json_string_value(json_object_get(ret, "status"));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static struct ev_loop	*loop;
	struct qmp_conn		*c;
	char			*cause = NULL;
	size_t			 off = 0;
	ssize_t			 n;
	int			 sv[2], i;

	if (loop == NULL)
		loop = ev_loop_new(EVFLAG_AUTO);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
		abort();
	util_set_nonblock(sv[1]);
	told[0] = told[1] = told[2] = 0;
	c = qmp_conn_new(loop, sv[0]);
	if (qmp_conn_command(c, "stop", qmp_conn_fuzz_cb, &told[0],
	    &cause) == -1 || qmp_conn_command(c, "cont", qmp_conn_fuzz_cb,
	    &told[1], &cause) == -1 || qmp_conn_call(c, "query-migrate",
	    NULL, -1, qmp_conn_fuzz_ret_cb, &told[2], &cause) == -1)
		abort();
	while (off < len) {
		if ((n = write(sv[1], data + off, len - off)) > 0)
			off += n;
		for (i = 0; i < 4; i++)
			ev_run(loop, EVRUN_NOWAIT);
	}
	for (i = 0; i < 4; i++)
		ev_run(loop, EVRUN_NOWAIT);
	qmp_conn_free(c);
	close(sv[0]);
	close(sv[1]);
	return (0);
}
