/*
 * An exec's state table, driven without a guest: its three agent ports
 * are socketpairs whose far ends play the agent, so every event goes
 * through the same callbacks a real stream does.
 */
#include <sys/socket.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "cmd.h"
#include "sandbox_int.h"

#define HEAD	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" \
		"Transfer-Encoding: chunked\r\n\r\n"
#define END	"0\r\n\r\n"
#define NO_BODY	"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
#define REFUSE	"HTTP/1.1 409 Conflict\r\nContent-Length: 0\r\n\r\n"

static struct ev_loop	*loop;
static struct profile	 prof;
static struct sandbox	*sb;
static int		 peer[3];	/* stream, stdin, control */
static struct buf	 said;		/* what the user was told */
static struct buf	 got[3];	/* what each peer read */
static int		 pause_output;
static int		 release_in_done;

static void
setup(void)
{
	struct sandbox_cbs	cbs;
	int			i, sv[2];

	loop = ev_loop_new(EVFLAG_AUTO);
	memset(&prof, 0, sizeof prof);
	memset(&cbs, 0, sizeof cbs);
	sb = sandbox_new(loop, &prof, &cbs);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		sb->ports[i] = agent_conn_new(loop, sv[0], "tok");
		peer[i] = sv[1];
		util_set_nonblock(peer[i]);
		memset(&got[i], 0, sizeof got[i]);
		buf_add(&got[i], "", 0);
	}
	memset(&said, 0, sizeof said);
	buf_add(&said, "", 0);
	pause_output = 0;
	release_in_done = 0;
}

static void
teardown(void)
{
	int	i;

	sandbox_free(sb);
	for (i = 0; i < 3; i++) {
		close(peer[i]);
		buf_free(&got[i]);
	}
	buf_free(&said);
	ev_loop_destroy(loop);
}

TestSuite(exec, .init = setup, .fini = teardown);

/* Let the loop and the peers talk until neither has more to say. */
static void
spin(void)
{
	char	b[65536];
	ssize_t	n;
	int	i, quiet = 0;

	while (quiet < 3) {
		ev_run(loop, EVRUN_NOWAIT);
		quiet++;
		for (i = 0; i < 3; i++) {
			while ((n = read(peer[i], b, sizeof b)) > 0) {
				buf_add(&got[i], b, n);
				quiet = 0;
			}
		}
	}
}

static void
agent_says(int i, const char *s)
{
	size_t	len = strlen(s);
	ssize_t	w;

	while (len > 0) {
		w = write(peer[i], s, len);
		if (w == -1 && errno == EAGAIN) {
			spin();
			continue;
		}
		cr_assert_gt(w, 0);
		s += w;
		len -= w;
	}
	spin();
}

/* One event of the stream, in its own chunk. */
static void
event(const char *name, const char *data)
{
	struct buf	e = { 0 }, c = { 0 };

	buf_printf(&e, "event: %s\ndata: %s\n\n", name, data);
	buf_printf(&c, "%zx\r\n%s\r\n", e.len, e.data);
	agent_says(0, c.data);
	buf_free(&e);
	buf_free(&c);
}

/* How many times s is in what peer i read; what it read is forgotten. */
static int
heard(int i, const char *s)
{
	const char	*p = got[i].data;
	int		 n = 0;

	spin();
	while ((p = strstr(p, s)) != NULL) {
		n++;
		p += strlen(s);
	}
	return (n);
}

static void
forget(void)
{
	int	i;

	spin();
	for (i = 0; i < 3; i++) {
		got[i].len = 0;
		buf_add(&got[i], "", 0);
	}
}

static void
started_cb(struct exec *x, void *arg)
{
	(void)arg;
	buf_printf(&said, "started %lld|", exec_id(x));
}

static int
output_cb(struct exec *x, enum exec_stream s, const char *data, size_t len,
    void *arg)
{
	(void)x;
	(void)arg;
	buf_printf(&said, "%s %.*s|", s == EXEC_STDERR ? "err" : "out",
	    (int)len, data);
	return (pause_output);
}

static void
stdin_cb(struct exec *x, enum exec_stdin_news news, void *arg)
{
	(void)x;
	(void)arg;
	buf_printf(&said, "stdin %s|", news == EXEC_STDIN_SENT ? "sent" :
	    news == EXEC_STDIN_REFUSED ? "refused" : "closed");
}

static void
timed_out_cb(struct exec *x, void *arg)
{
	(void)x;
	(void)arg;
	buf_puts(&said, "timed out|");
}

static void
done_cb(struct exec *x, const struct exec_result *r, void *arg)
{
	(void)arg;
	buf_printf(&said, "done %d exit_seen=%d status=%d signal=%d "
	    "timed_out=%d error=%s|", r->end, r->exit_seen, r->status,
	    r->signal, r->timed_out, r->error != NULL ? r->error : "-");
	if (release_in_done)
		exec_free(x);
}

static struct exec *
new_exec(int feed_stdin, double timeout)
{
	static char *const	 argv[] = { "cat", NULL };
	struct exec_spec	 spec;
	struct exec_ports	 ports = { 0, 1, 2 };
	struct exec_cbs		 cbs;
	struct exec		*x;

	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.feed_stdin = feed_stdin;
	spec.timeout = timeout;
	memset(&cbs, 0, sizeof cbs);
	cbs.started = started_cb;
	cbs.output = output_cb;
	cbs.stdin_news = stdin_cb;
	cbs.timed_out = timed_out_cb;
	cbs.done = done_cb;
	x = exec_new(loop, sb, &spec, &ports, &cbs);
	exec_start(x);
	return (x);
}

Test(exec, request_from_spec)
{
	static char *const	 argv[] = { "sh", "-c", "echo \"hi\"", NULL };
	static char *const	 env[] = { "A=1", "TERM=xterm" };
	struct exec_spec	 spec;
	struct buf		 b = { 0 };

	memset(&spec, 0, sizeof spec);
	spec.argv = argv;
	spec.env = env;
	spec.nenv = 2;
	spec.cwd = "/src";
	spec.entrypoint = 1;
	spec.tty = 1;
	spec.rows = 40;
	spec.cols = 120;
	exec_request(&spec, &b);
	cr_assert_str_eq(b.data, "{\"argv\":[\"sh\",\"-c\",\"echo \\\"hi\\\"\"],"
	    "\"env\":[\"A=1\",\"TERM=xterm\"],\"entrypoint\":true,"
	    "\"tty\":true,\"rows\":40,\"cols\":120,\"cwd\":\"/src\"}");
	b.len = 0;
	spec.nenv = 0;
	spec.rows = 0;
	spec.cwd = NULL;
	spec.entrypoint = 0;
	exec_request(&spec, &b);
	cr_assert_str_eq(b.data, "{\"argv\":[\"sh\",\"-c\",\"echo \\\"hi\\\"\"],"
	    "\"env\":[],\"tty\":true}");
	b.len = 0;
	spec.kind = EXEC_WRITE;
	spec.path = "/tmp/a";
	spec.mode = 0600;
	exec_request(&spec, &b);
	cr_assert_str_eq(b.data, "{\"write\":\"/tmp/a\",\"mode\":384}");
	b.len = 0;
	spec.kind = EXEC_READ;
	exec_request(&spec, &b);
	cr_assert_str_eq(b.data, "{\"read\":\"/tmp/a\"}");
	buf_free(&b);
}

Test(exec, wire_paths)
{
	char		 path[WIRE_EXEC_PATH_MAX];
	const char	*op;
	unsigned	 id;

	wire_exec_path(path, sizeof path, 42, WIRE_OP_SIGNAL);
	cr_assert_str_eq(path, "/exec/42/signal");
	cr_assert_eq(wire_exec_path_parse(path, &id, &op), 0);
	cr_assert_eq(id, 42);
	cr_assert_str_eq(op, "signal");
	cr_assert(wire_exec_op(op));
	cr_assert(!wire_exec_op("kill"));
	cr_assert_eq(wire_exec_path_parse("/exec/x/stdin", &id, &op), -1);
	cr_assert_eq(wire_exec_path_parse("/exec/1234567890/stdin", &id, &op),
	    -1);
	cr_assert_eq(wire_exec_path_parse("/exec", &id, &op), -1);
	cr_assert_eq(wire_exec_path_parse("/execs/1/stdin", &id, &op), -1);
}

/* start, output, exit, the stream's end: each state in turn. */
Test(exec, a_command_from_start_to_end)
{
	struct exec	*x;

	x = new_exec(0, 0);
	cr_assert_eq(heard(0, "POST /exec HTTP/1.1\r\n"), 1);
	cr_assert_eq(heard(0, "{\"argv\":[\"cat\"],\"env\":[]}"), 1);
	cr_assert_eq(exec_state(x), EXEC_STARTING);
	cr_assert_eq(exec_signal(x, 15, NULL, NULL), -1);
	agent_says(0, HEAD);
	event("start", "{\"id\":7,\"pid\":1}");
	cr_assert_eq(exec_state(x), EXEC_RUNNING);
	/* No stdin: closed at once. */
	cr_assert_eq(heard(2, "POST /exec/7/close HTTP/1.1\r\n"), 1);
	cr_assert(!exec_stdin_open(x));
	event("stdout", "aGk=");
	event("stderr", "");
	event("exit", "{\"status\":3}");
	cr_assert_eq(exec_state(x), EXEC_EXITED);
	/* The guest's word only: it may still be signalled. */
	cr_assert_eq(exec_signal(x, 15, NULL, NULL), 0);
	cr_assert_eq(heard(2, "POST /exec/7/signal HTTP/1.1\r\n"), 1);
	agent_says(0, END);
	cr_assert_eq(exec_state(x), EXEC_DONE);
	cr_assert_str_eq(said.data, "started 7|out aGk=|err |done 0 "
	    "exit_seen=1 status=3 signal=0 timed_out=0 error=-|");
	cr_assert_eq(exec_signal(x, 15, NULL, NULL), -1);
	exec_free(x);
}

/* Each stream that breaks the protocol, and what the user is told. */
Test(exec, the_guests_word_is_held_to_the_protocol)
{
	static const struct {
		const char	*events[3][2];
		const char	*why;
	} t[] = {
		{ { { "stdout", "aGk=" } }, "an event before the start event" },
		{ { { "bogus", "" } }, "an event before the start event" },
		{ { { "start", "{\"id\":-1}" } }, "a bad start event" },
		{ { { "start", "nope" } }, "a bad start event" },
		{ { { "start", "{\"id\":1}" }, { "start", "{\"id\":2}" } },
		    "a bad start event" },
		{ { { "start", "{\"id\":1}" }, { "bogus\x1b", "" } },
		    "an unknown event \"bogus\\x1b\"" },
		{ { { "start", "{\"id\":1}" }, { "stdout", "a b" } },
		    "output that is not base64" },
		{ { { "start", "{\"id\":1}" }, { "exit", "{\"signal\":99}" } },
		    "signal 99 out of range (1-64)" },
		{ { { "start", "{\"id\":1}" }, { "exit", "{\"status\":0}" },
		    { "stdout", "aGk=" } }, "an event after the exit event" },
		{ { { "start", "{\"id\":1}" }, { "exit", "{\"status\":0}" },
		    { "start", "{\"id\":1}" } }, "an event after the exit event" },
	};
	struct exec	*x;
	struct buf	 want = { 0 };
	size_t		 i, j;

	for (i = 0; i < sizeof t / sizeof t[0]; i++) {
		said.len = 0;
		buf_add(&said, "", 0);
		x = new_exec(1, 0);
		agent_says(0, HEAD);
		for (j = 0; j < 3 && t[i].events[j][0] != NULL; j++)
			event(t[i].events[j][0], t[i].events[j][1]);
		cr_assert_eq(exec_state(x), EXEC_DONE, "%zu", i);
		want.len = 0;
		buf_printf(&want, "the agent broke the protocol: %s|",
		    t[i].why);
		cr_assert(strstr(said.data, want.data) != NULL, "%zu: %s", i,
		    said.data);
		cr_assert(strstr(said.data, "done 2 ") != NULL, "%zu: %s", i,
		    said.data);
		exec_free(x);
		/* The port is dead now: the next exec gets another. */
		agent_conn_free(sb->ports[0]);
		close(peer[0]);
		{
			int	sv[2];

			cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv),
			    0);
			sb->ports[0] = agent_conn_new(loop, sv[0], "tok");
			peer[0] = sv[1];
			util_set_nonblock(peer[0]);
		}
	}
	buf_free(&want);
}

Test(exec, ends_without_exit_refused_or_closed)
{
	struct exec	*x;

	x = new_exec(1, 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":1}");
	agent_says(0, END);
	cr_assert(strstr(said.data, "done 1 exit_seen=0 status=0 signal=0 "
	    "timed_out=0 error=the agent ended the stream without an exit "
	    "event|") != NULL, "%s", said.data);
	exec_free(x);

	said.len = 0;
	x = new_exec(1, 0);
	agent_says(0, "HTTP/1.1 400 Bad Request\r\nContent-Length: 5\r\n\r\n"
	    "no\x1b!!");
	cr_assert(strstr(said.data, "done 3 exit_seen=0 status=0 signal=0 "
	    "timed_out=0 error=the agent refused the command (400): "
	    "no\\x1b!!|") != NULL, "%s", said.data);
	exec_free(x);

	said.len = 0;
	x = new_exec(1, 0);
	close(peer[0]);
	peer[0] = -1;
	spin();
	cr_assert(strstr(said.data, "done 4 ") != NULL, "%s", said.data);
	exec_free(x);
}

/* The timeout kills it, and says so at its end. */
Test(exec, timeout_kills)
{
	struct exec	*x;

	x = new_exec(1, 0.01);
	agent_says(0, HEAD);
	event("start", "{\"id\":5}");
	usleep(20000);
	spin();
	cr_assert_str_eq(said.data, "started 5|timed out|");
	cr_assert_eq(heard(2, "POST /exec/5/signal HTTP/1.1\r\n"), 1);
	cr_assert_eq(heard(2, "\r\n\r\n9"), 1);
	event("exit", "{\"signal\":9}");
	agent_says(0, END);
	cr_assert(strstr(said.data, "done 0 exit_seen=1 status=0 signal=9 "
	    "timed_out=1 error=-|") != NULL, "%s", said.data);
	exec_free(x);
}

/* Before its start, the timeout holds until it starts: then it is killed. */
Test(exec, timeout_before_start_kills_at_start)
{
	struct exec	*x;

	x = new_exec(1, 0.01);
	usleep(20000);
	spin();
	cr_assert_str_eq(said.data, "timed out|");
	cr_assert_eq(heard(2, "signal"), 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":5}");
	cr_assert_eq(heard(2, "POST /exec/5/signal HTTP/1.1\r\n"), 1);
	exec_gone(x, "over");
	exec_free(x);
}

/*
 * Detached before its start: killed as it starts, never started for its
 * user, its output read and dropped; its end still told.
 */
Test(exec, detached_before_start)
{
	struct exec	*x;

	x = new_exec(0, 0);
	exec_detach(x);
	agent_says(0, HEAD);
	event("start", "{\"id\":3}");
	cr_assert_eq(heard(2, "POST /exec/3/signal HTTP/1.1\r\n"), 1);
	cr_assert_eq(heard(2, "close"), 0);
	event("stdout", "aGk=");
	event("exit", "{\"signal\":9}");
	agent_says(0, END);
	cr_assert_str_eq(said.data, "done 0 exit_seen=1 status=0 signal=9 "
	    "timed_out=0 error=-|");
	exec_free(x);
}

/* Paused by its user, detached: the stream flows again, to its end. */
Test(exec, detached_while_paused)
{
	struct exec	*x;

	pause_output = 1;
	x = new_exec(0, 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":3}");
	event("stdout", "aGk=");
	event("stdout", "aGk=");
	cr_assert_str_eq(said.data, "started 3|out aGk=|");
	exec_detach(x);
	spin();
	cr_assert_eq(heard(2, "POST /exec/3/signal HTTP/1.1\r\n"), 1);
	event("exit", "{\"signal\":9}");
	agent_says(0, END);
	cr_assert_str_eq(said.data, "started 3|out aGk=|done 0 exit_seen=1 "
	    "status=0 signal=9 timed_out=0 error=-|");
	exec_free(x);
}

/* Released before its end: no more callbacks, freed at its end (ASan). */
Test(exec, released_early_is_freed_at_its_end)
{
	struct exec	*x;

	x = new_exec(0, 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":3}");
	exec_free(x);
	cr_assert_eq(heard(2, "POST /exec/3/signal HTTP/1.1\r\n"), 1);
	event("stdout", "aGk=");
	event("exit", "{\"status\":0}");
	agent_says(0, END);
	cr_assert_str_eq(said.data, "started 3|");
}

/* Released from its own done callback: freed once that returns. */
Test(exec, released_in_done)
{
	release_in_done = 1;
	(void)new_exec(0, 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":3}");
	event("exit", "{\"status\":0}");
	agent_says(0, END);
	cr_assert(strstr(said.data, "done 0") != NULL);
}

/* stdin: one piece in flight at a time, the close after the last. */
Test(exec, stdin_paced_by_204)
{
	struct exec	*x;
	static char	 big[EXEC_STDIN_PIECE + 100];

	memset(big, 'z', sizeof big);
	x = new_exec(1, 0);
	/* Before its start, it waits. */
	cr_assert_eq(exec_stdin_write(x, big, sizeof big), 0);
	cr_assert_eq(heard(1, "POST"), 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":4}");
	cr_assert_eq(heard(2, "close"), 0);
	cr_assert_eq(heard(1, "POST /exec/4/stdin HTTP/1.1\r\n"), 1);
	cr_assert_eq(heard(1, "Content-Length: 262144\r\n"), 1);
	cr_assert_eq(exec_stdin_queued(x), 100);
	cr_assert(exec_stdin_busy(x));
	exec_stdin_close(x);
	cr_assert(!exec_stdin_open(x));
	cr_assert_eq(exec_stdin_write(x, "x", 1), -1);
	forget();
	agent_says(1, NO_BODY);
	cr_assert_eq(heard(1, "Content-Length: 100\r\n"), 1);
	cr_assert_eq(heard(2, "close"), 0);
	agent_says(1, NO_BODY);
	cr_assert_eq(heard(2, "POST /exec/4/close HTTP/1.1\r\n"), 1);
	agent_says(2, NO_BODY);
	cr_assert_str_eq(said.data, "started 4|stdin sent|stdin sent|"
	    "stdin closed|");
	exec_free(x);
	agent_says(0, END);
}

/* The agent refuses stdin: what is queued is dropped, nothing more goes. */
Test(exec, stdin_refused)
{
	struct exec	*x;

	x = new_exec(1, 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":4}");
	cr_assert_eq(exec_stdin_write(x, "abc", 3), 0);
	cr_assert_eq(exec_stdin_write(x, "def", 3), 0);
	cr_assert_eq(exec_stdin_queued(x), 3);
	agent_says(1, REFUSE);
	cr_assert_eq(exec_stdin_queued(x), 0);
	cr_assert(!exec_stdin_open(x));
	cr_assert_eq(exec_stdin_write(x, "x", 1), -1);
	cr_assert_str_eq(said.data, "started 4|stdin refused|");
	exec_free(x);
	agent_says(0, END);
}

/* The sandbox goes first: the exec ends with its reason, nothing leaks. */
Test(exec, gone_ends_it)
{
	struct exec	*x;

	x = new_exec(1, 0);
	agent_says(0, HEAD);
	event("start", "{\"id\":4}");
	cr_assert_eq(exec_stdin_write(x, "abc", 3), 0);
	cr_assert(exec_stdin_busy(x));
	exec_gone(x, "deleted");
	cr_assert(!exec_stdin_busy(x));
	cr_assert_eq(exec_state(x), EXEC_DONE);
	cr_assert_str_eq(said.data, "started 4|done 5 exit_seen=0 status=0 "
	    "signal=0 timed_out=0 error=deleted|");
	exec_free(x);
}
