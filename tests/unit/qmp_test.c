/*
 * qmp.c's script: commands written at once, before QEMU's greeting, and
 * the replies read on the loop. The QEMU here is a socketpair this test
 * writes replies into.
 */
#include <sys/socket.h>

#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>
#include <jansson.h>

#include "cmd.h"

struct told {
	int	 n;
	char	*error;
};

static void
told_cb(const char *error, void *arg)
{
	struct told	*t = arg;

	t->n++;
	free(t->error);
	t->error = error != NULL ? xstrdup(error) : NULL;
}

/* Feed the "QEMU" end these bytes, then run the loop until it is idle. */
static void
feed(struct ev_loop *loop, int fd, const char *bytes, size_t len)
{
	int	i;

	cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
	for (i = 0; i < 20; i++)
		ev_run(loop, EVRUN_NOWAIT);
}

static void
script(const char *replies, size_t len, struct told *t, char *sent,
    size_t sentmax)
{
	const char		*cmds[] = { "{\"execute\":\"a\"}",
				    "{\"execute\":\"b\"}" };
	struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
	struct qmp_script	*s;
	char			*cause = NULL;
	ssize_t			 n;
	int			 sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	s = qmp_script_new(loop, sv[0], cmds, 2, told_cb, t, &cause);
	cr_assert_not_null(s, "%s", cause);
	cr_assert_eq(t->n, 0, "told before any reply");
	n = read(sv[1], sent, sentmax - 1);
	cr_assert_gt(n, 0);
	sent[n] = '\0';
	feed(loop, sv[1], replies, len);
	qmp_script_free(s);
	close(sv[0]);
	close(sv[1]);
	ev_loop_destroy(loop);
}

Test(qmp, script_sent_at_once_and_every_return_awaited)
{
	static const char	 ok[] = "{\"QMP\": {\"version\": {}}}\n"
	    "{\"return\": {}}\n{\"event\": \"RESUME\"}\n{\"return\": {}}\n";
	static const char	 all[] = "{\"QMP\": {}}\n{\"return\": {}}\n"
	    "{\"return\": {}}\n{\"return\": {}}\n{\"event\": \"STOP\"}\n";
	struct told		 t = { 0 };
	char			 sent[512];

	/* Three returns awaited (capabilities, a, b): two are not enough. */
	script(ok, sizeof ok - 1, &t, sent, sizeof sent);
	cr_assert_str_eq(sent, "{\"execute\":\"qmp_capabilities\"}\n"
	    "{\"execute\":\"a\"}\n{\"execute\":\"b\"}\n");
	cr_assert_eq(t.n, 0);
	script(all, sizeof all - 1, &t, sent, sizeof sent);
	cr_assert_eq(t.n, 1);
	cr_assert_null(t.error);
}

Test(qmp, script_error_told_once)
{
	static const char	 bad[] = "{\"QMP\": {}}\n{\"return\": {}}\n"
	    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no such "
	    "fd\"}}\n{\"return\": {}}\n{\"error\": {\"desc\": \"later\"}}\n";
	struct told		 t = { 0 };
	char			 sent[512];

	script(bad, sizeof bad - 1, &t, sent, sizeof sent);
	cr_assert_eq(t.n, 1);
	cr_assert_str_eq(t.error, "QMP: no such fd");
	free(t.error);
}

Test(qmp, script_refuses_what_is_not_json_or_too_long)
{
	static const char	 junk[] = "{\"QMP\": {}}\nnot json\n";
	struct told		 t = { 0 };
	char			 sent[512], *big;
	size_t			 len = 2 * 1024 * 1024;

	script(junk, sizeof junk - 1, &t, sent, sizeof sent);
	cr_assert_eq(t.n, 1);
	cr_assert_str_eq(t.error, "QMP: a reply that is not JSON");
	free(t.error);

	/* A line without end is not kept without end. */
	memset(&t, 0, sizeof t);
	big = xmalloc(len);
	memset(big, 'x', len);
	{
		const char		*cmds[] = { "{\"execute\":\"a\"}" };
		struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
		struct qmp_script	*s;
		char			*cause = NULL;
		size_t			 off = 0;
		ssize_t			 n;
		int			 sv[2], i;

		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		util_set_nonblock(sv[1]);
		s = qmp_script_new(loop, sv[0], cmds, 1, told_cb, &t, &cause);
		cr_assert_not_null(s);
		while (off < len) {
			n = write(sv[1], big + off, len - off);
			if (n > 0)
				off += n;
			for (i = 0; i < 4; i++)
				ev_run(loop, EVRUN_NOWAIT);
		}
		cr_assert_eq(t.n, 1);
		cr_assert_str_eq(t.error, "QMP: reply too long");
		qmp_script_free(s);
		close(sv[0]);
		close(sv[1]);
		ev_loop_destroy(loop);
	}
	free(t.error);
	free(big);
}

/*
 * qmp.c's monitor client: capabilities first, each command answered by
 * its id, whatever else the monitor says (an earlier client's leftovers,
 * events, the greeting, "already negotiated") passed over.
 */
Test(qmp, conn_answers_by_id)
{
	static const char	 noise[] =
	    "{\"QMP\":{\"version\":{}}}\n"
	    "{\"error\":{\"class\":\"CommandNotFound\",\"desc\":\"Capabilities "
	    "negotiation is already complete\"},\"id\":1}\n"
	    "{\"return\":{}}\n"
	    "{\"event\":\"STOP\",\"data\":{}}\n"
	    "not json\n";
	struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
	struct qmp_conn		*c;
	struct told		 stop = { 0 }, cont = { 0 };
	char			 sent[512], *cause = NULL;
	ssize_t			 n;
	int			 sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c = qmp_conn_new(loop, sv[0]);
	cr_assert_eq(qmp_conn_command(c, "stop", told_cb, &stop, &cause), 0);
	cr_assert_eq(qmp_conn_command(c, "cont", told_cb, &cont, &cause), 0);
	n = read(sv[1], sent, sizeof sent - 1);
	cr_assert_gt(n, 0);
	sent[n] = '\0';
	cr_assert_str_eq(sent, "{\"execute\":\"qmp_capabilities\",\"id\":1}\n"
	    "{\"execute\":\"stop\",\"id\":2}\n{\"execute\":\"cont\",\"id\":3}\n");
	feed(loop, sv[1], noise, sizeof noise - 1);
	cr_assert_eq(stop.n + cont.n, 0, "told by lines not its own");
	feed(loop, sv[1], "{\"error\":{\"desc\":\"no\"},\"id\":3}\n", 31);
	cr_assert_eq(cont.n, 1);
	cr_assert_str_eq(cont.error, "QMP: no");
	cr_assert_eq(stop.n, 0);
	feed(loop, sv[1], "{\"return\":{},\"id\":2}\n", 21);
	cr_assert_eq(stop.n, 1);
	cr_assert_null(stop.error);
	/* QEMU gone: the next command is refused, one under way told. */
	cr_assert_eq(qmp_conn_command(c, "stop", told_cb, &stop, &cause), 0);
	close(sv[1]);
	for (n = 0; n < 20; n++)
		ev_run(loop, EVRUN_NOWAIT);
	cr_assert_eq(stop.n, 2);
	cr_assert_str_eq(stop.error, "QMP: QEMU closed its monitor");
	cr_assert_eq(qmp_conn_command(c, "cont", told_cb, &cont, &cause), -1);
	cr_assert_str_eq(cause, "QMP: QEMU closed its monitor");
	free(cause);
	free(stop.error);
	free(cont.error);
	qmp_conn_free(c);
	close(sv[0]);
	ev_loop_destroy(loop);
}

/* A monitor that never answers: the command fails at its deadline. */
Test(qmp, conn_deadline)
{
	struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
	struct qmp_conn		*c;
	struct told		 stop = { 0 };
	char			*cause = NULL;
	double			 t0;
	int			 sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c = qmp_conn_new(loop, sv[0]);
	qmp_conn_set_timeout(c, 0.2);
	t0 = util_now();
	cr_assert_eq(qmp_conn_command(c, "stop", told_cb, &stop, &cause), 0);
	while (stop.n == 0 && util_now() - t0 < 5)
		ev_run(loop, EVRUN_ONCE);
	cr_assert_eq(stop.n, 1);
	cr_assert_str_eq(stop.error, "QMP: no answer to stop within 0.2 s");
	cr_assert_geq(util_now() - t0, 0.19);
	cr_assert_lt(util_now() - t0, 2);
	free(stop.error);
	qmp_conn_free(c);
	close(sv[0]);
	close(sv[1]);
	ev_loop_destroy(loop);
}

struct told_ret {
	int	 n;
	char	*error;
	char	*status;	/* the return's "status" */
};

static void
told_ret_cb(const char *error, json_t *ret, void *arg)
{
	struct told_ret	*t = arg;

	t->n++;
	t->error = error != NULL ? xstrdup(error) : NULL;
	if (json_string_value(json_object_get(ret, "status")) != NULL)
		t->status = xstrdup(json_string_value(json_object_get(ret,
		    "status")));
}

/* Arguments sent, a descriptor with them, the return handed back. */
Test(qmp, conn_call_args_fd_and_return)
{
	struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
	struct qmp_conn		*c;
	struct told_ret		 mig = { 0 }, fd = { 0 };
	struct msghdr		 msg;
	struct cmsghdr		*cmsg;
	struct iovec		 iov;
	union {
		char		buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	align;
	} u;
	char			 sent[512], *cause = NULL;
	ssize_t			 n;
	int			 sv[2], pass[2], got = -1;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(pipe(pass), 0);
	c = qmp_conn_new(loop, sv[0]);
	n = read(sv[1], sent, sizeof sent - 1);	/* qmp_capabilities */
	cr_assert_gt(n, 0);
	cr_assert_eq(qmp_conn_call(c, "getfd", "{\"fdname\":\"x\"}", pass[1],
	    told_ret_cb, &fd, &cause), 0);
	memset(&msg, 0, sizeof msg);
	iov.iov_base = sent;
	iov.iov_len = sizeof sent - 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof u.buf;
	n = recvmsg(sv[1], &msg, 0);
	cr_assert_gt(n, 0);
	sent[n] = '\0';
	cr_assert_str_eq(sent, "{\"execute\":\"getfd\",\"arguments\":"
	    "{\"fdname\":\"x\"},\"id\":2}\n");
	cmsg = CMSG_FIRSTHDR(&msg);
	cr_assert_not_null(cmsg, "no descriptor passed");
	cr_assert_eq(cmsg->cmsg_type, SCM_RIGHTS);
	memcpy(&got, CMSG_DATA(cmsg), sizeof got);
	cr_assert_geq(got, 0);
	close(got);
	cr_assert_eq(qmp_conn_call(c, "query-migrate", NULL, -1, told_ret_cb,
	    &mig, &cause), 0);
	n = read(sv[1], sent, sizeof sent - 1);
	sent[n] = '\0';
	cr_assert_str_eq(sent, "{\"execute\":\"query-migrate\",\"id\":3}\n");
	feed(loop, sv[1], "{\"return\":{},\"id\":2}\n"
	    "{\"return\":{\"status\":\"completed\",\"downtime\":12},\"id\":3}\n",
	    21 + 56);
	cr_assert_eq(fd.n, 1);
	cr_assert_null(fd.error);
	cr_assert_null(fd.status);
	cr_assert_eq(mig.n, 1);
	cr_assert_str_eq(mig.status, "completed");
	free(mig.status);
	qmp_conn_free(c);
	close(pass[0]);
	close(pass[1]);
	close(sv[0]);
	close(sv[1]);
	ev_loop_destroy(loop);
}

/*
 * A connection freed with commands unanswered (its QEMU reaped before the
 * monitor's end was read): those of qmp_conn_call_told are told, with an
 * error; those of qmp_conn_call, whose owners go with the connection, not.
 */
Test(qmp, conn_free_tells_told_calls)
{
	struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
	struct qmp_conn		*c;
	struct told_ret		 told = { 0 }, quiet = { 0 };
	char			*cause = NULL;
	int			 sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	c = qmp_conn_new(loop, sv[0]);
	cr_assert_eq(qmp_conn_call_told(c, "screendump",
	    "{\"filename\":\"/x\"}", -1, told_ret_cb, &told, &cause), 0);
	cr_assert_eq(qmp_conn_call(c, "query-status", NULL, -1, told_ret_cb,
	    &quiet, &cause), 0);
	cr_assert_eq(told.n, 0, "told before the free");
	qmp_conn_free(c);
	cr_assert_eq(told.n, 1);
	cr_assert_str_eq(told.error, "QMP: QEMU closed its monitor");
	cr_assert_eq(quiet.n, 0, "a plain call was told after its free");
	free(told.error);
	close(sv[0]);
	close(sv[1]);
	ev_loop_destroy(loop);
}
