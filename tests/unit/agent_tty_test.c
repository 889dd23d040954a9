/*
 * qsup-agent's terminals ("tty" in an exec), through the real binary in
 * test mode (agent_helpers.h): size, controlling terminal, typed input
 * and ^C, close, output at exit, resize and hangup.
 */
#include "agent_helpers.h"

/* --- Terminals ("tty"). */

/* Read stdout events of an exec until its output holds needle. */
static void
exec_until(struct conn *c, struct result *r, const char *needle)
{
	char		name[32];
	struct tbuf	data, raw;

	while (strstr(r->out.data, needle) == NULL) {
		cr_assert(next_event(c, name, sizeof name, &data),
		    "stream ended before \"%s\": %s", needle, r->out.data);
		cr_assert_str_eq(name, QSUP_EVENT_STDOUT, "%s before \"%s\"",
		    name, needle);
		memset(&raw, 0, sizeof raw);
		b64_decode(data.data, data.len, &raw);
		tbuf_add(&r->out, raw.data, raw.len);
		free(raw.data);
		free(data.data);
	}
}

Test(agent, tty_command_has_a_terminal_of_the_size_asked)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"tty; test -t 0 && "
	    "test -t 1 && test -t 2 && echo all-three; stty size; "
	    "echo to-stderr >&2; exit 7\"],\"tty\":true,\"rows\":33,"
	    "\"cols\":101}", &r);
	cr_assert_not_null(strstr(r.out.data, "/dev/pts/"), "%s", r.out.data);
	cr_assert_not_null(strstr(r.out.data, "all-three\r\n"), "%s",
	    r.out.data);
	cr_assert_not_null(strstr(r.out.data, "33 101\r\n"), "%s", r.out.data);
	/* stderr is the terminal too: it comes as stdout. */
	cr_assert_not_null(strstr(r.out.data, "to-stderr"), "%s", r.out.data);
	cr_assert_eq(r.err.len, 0);
	cr_assert_eq(r.status, 7, "exit: %s", r.exit);
	result_free(&r);

	/* No size said: 24x80. Without tty, no terminal. */
	exec_run(&ag.c[0], "{\"argv\":[\"stty\",\"size\"],\"tty\":true}", &r);
	cr_assert_str_eq(r.out.data, "24 80\r\n");
	result_free(&r);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"test -t 0 || "
	    "test -t 1 || echo none\"],\"tty\":false}", &r);
	cr_assert_str_eq(r.out.data, "none\n");
	result_free(&r);
}

Test(agent, tty_is_the_controlling_terminal_of_a_new_session)
{
	struct result	r;
	char		want[64];

	spawn_agent(1, NULL);
	/* ps-free: /proc says the session and the terminal's group. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo $$; "
	    "cut -d' ' -f6,8 /proc/$$/stat; exec </dev/tty && echo opened\"],"
	    "\"tty\":true}", &r);
	cr_assert_eq(r.status, 0, "exit: %s (%s)", r.exit, r.out.data);
	snprintf(want, sizeof want, "%ld\r\n", r.pid);
	cr_assert_eq(strncmp(r.out.data, want, strlen(want)), 0, "%s",
	    r.out.data);
	cr_assert_not_null(strstr(r.out.data, "opened"), "%s", r.out.data);
	result_free(&r);
}

Test(agent, tty_stdin_is_typed_and_ctrl_c_interrupts)
{
	struct result	r;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"read x; "
	    "echo got:$x\"],\"tty\":true}", &r);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "stdin", "hello\r"), 204);
	exec_end(&ag.c[0], &r);
	/* The terminal echoes what was typed, then the command answers. */
	cr_assert_not_null(strstr(r.out.data, "hello\r\n"), "%s", r.out.data);
	cr_assert_not_null(strstr(r.out.data, "got:hello\r\n"), "%s",
	    r.out.data);
	cr_assert_eq(r.status, 0);
	result_free(&r);

	/* ^C is a byte; the line discipline makes it SIGINT. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo ready; "
	    "exec sleep 30\"],\"tty\":true}", &r);
	exec_until(&ag.c[0], &r, "ready");
	cr_assert_eq(exec_op(&ag.c[1], r.id, "stdin", "\003"), 204);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.signal, SIGINT, "exit: %s", r.exit);
	result_free(&r);
}

Test(agent, tty_close_stops_uploads_but_not_output)
{
	struct result	r;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo before; "
	    "sleep 0.3; echo after\"],\"tty\":true}", &r);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "close", NULL), 204);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "stdin", "x"), 409);
	exec_end(&ag.c[0], &r);
	cr_assert_str_eq(r.out.data, "before\r\nafter\r\n");
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, tty_output_written_just_before_exit_is_all_there)
{
	struct result	r;
	size_t		n = 300000, i, lines = 0;

	spawn_agent(1, NULL);
	/* More than the terminal buffers hold, written as the shell exits. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"i=0; while [ $i -lt "
	    "3000 ]; do echo 0123456789012345678901234567890123456789"
	    "0123456789012345678901234567890123456789; i=$((i+1)); done\"],"
	    "\"tty\":true}", &r);
	for (i = 0; i < r.out.len; i++)
		lines += r.out.data[i] == '\n';
	cr_assert_eq(lines, 3000, "%zu lines, %zu bytes", lines, r.out.len);
	cr_assert_eq(r.out.len, 3000 * 82);
	cr_assert(r.out.len < n);
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, tty_resize_sends_sigwinch_and_checks_its_body)
{
	struct result	r, plain;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"trap 'stty size; "
	    "exit 3' WINCH; echo ready; while :; do sleep 0.05; done\"],"
	    "\"tty\":true,\"rows\":10,\"cols\":20}", &r);
	exec_until(&ag.c[0], &r, "ready");
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", ""), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "0 80"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40 10001"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40 80 1"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40x80"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "-4 80"), 400);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", " 41\t121\n"), 204);
	exec_end(&ag.c[0], &r);
	cr_assert_not_null(strstr(r.out.data, "41 121\r\n"), "%s", r.out.data);
	cr_assert_eq(r.status, 3, "exit: %s", r.exit);
	/* Gone: 404 as for the other operations. */
	cr_assert_eq(exec_op(&ag.c[1], r.id, "resize", "40 80"), 404);
	result_free(&r);

	/* Not a terminal: 409. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sleep\",\"0.2\"]}", &plain);
	cr_assert_eq(exec_op(&ag.c[1], plain.id, "resize", "40 80"), 409);
	exec_end(&ag.c[0], &plain);
	result_free(&plain);
}

Test(agent, tty_hangup_kills_the_command)
{
	struct result	r;
	long		pid;
	int		i;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sleep\",\"30\"],\"tty\":true}",
	    &r);
	pid = r.pid;
	close(ag.c[0].fd);
	ag.c[0].fd = -1;
	for (i = 0; i < 300 && kill(pid, 0) == 0; i++)
		usleep(10000);
	cr_assert_eq(kill(pid, 0), -1, "the command outlived its host");
	assert_serving(&ag.c[1]);
	result_free(&r);
}

/* What the agent must take as a resize body: "ROWS COLS", 1-10000 each. */
static int
resize_valid(const char *s)
{
	const char	*blank = " \t\r\n";
	long		 v[2];
	size_t		 n;
	int		 i;

	s += strspn(s, blank);
	for (i = 0; i < 2; i++) {
		n = strspn(s, "0123456789");
		if (n == 0 || n > 5)
			return (0);
		v[i] = strtol(s, NULL, 10);
		if (v[i] < 1 || v[i] > 10000)
			return (0);
		s += n;
		n = strspn(s, blank);
		if (i == 0 && n == 0)
			return (0);
		s += n;
	}
	return (*s == '\0');
}

Test(agent, random_resize_bodies_are_204_or_400_as_they_should)
{
	static const char	 set[] = " \t\r\n0123456789000011x-+";
	struct result		 r;
	char			 body[32];
	unsigned		 seed = 4321;
	int			 round, i, n, want, got, valid = 0;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sleep\",\"30\"],\"tty\":true}",
	    &r);
	for (round = 0; round < 400; round++) {
		n = rand_r(&seed) % 16;
		for (i = 0; i < n; i++)
			body[i] = set[rand_r(&seed) % (sizeof set - 1)];
		body[n] = '\0';
		want = resize_valid(body) ? 204 : 400;
		valid += want == 204;
		got = exec_op(&ag.c[1], r.id, "resize", body);
		cr_assert_eq(got, want, "\"%s\": %d", body, got);
	}
	cr_assert(valid > 10, "only %d valid bodies tried", valid);
	cr_assert_eq(exec_op(&ag.c[1], r.id, "signal", "9"), 204);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.signal, SIGKILL);
	result_free(&r);
}
