/*
 * qsup-agent, tested as qsup uses it: the real binary in test mode
 * serving HTTP/1.1 and Server-Sent Events over socketpairs
 * (agent_helpers.h): ping and the token, execs and their output, stdin,
 * signals, backpressure, hangups, malformed requests and the exec
 * request's JSON. The seed, terminals and file jobs have their own
 * suites (agent_setup_test.c, agent_tty_test.c, agent_files_test.c).
 */
#include <dirent.h>

#include "agent_helpers.h"

/* --- Authentication and ping. */

Test(agent, ping_answers_version_and_kernel)
{
	struct tbuf	body;

	spawn_agent(1, NULL);
	cr_assert_eq(request(&ag.c[0], "GET", "/ping", NULL, 0, &body), 200);
	cr_assert_eq(json_num(body.data, "version"), QSUP_PROTOCOL_VERSION,
	    "%s", body.data);
	cr_assert(json_num(body.data, "boot_ms") >= 0);
	cr_assert_not_null(strstr(body.data, "\"kernel\":\""), "%s",
	    body.data);
	cr_assert_not_null(strstr(ag.c[0].head, "application/json"));
	free(body.data);
}

Test(agent, requests_without_the_token_get_401)
{
	struct tbuf	 body;
	struct conn	*c = &ag.c[0];
	const char	*bad[] = { "wrong", TOKEN "x", "t0k3n-Secret_4",
	    "T0K3N-SECRET_42", "" };
	char		 head[256];
	size_t		 i;

	spawn_agent(1, NULL);
	send_request(c, "GET", "/ping", NULL, NULL, 0);
	cr_assert_eq(read_response(c, &body), 401);
	cr_assert_not_null(strstr(body.data, "\"error\""));
	free(body.data);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		send_request(c, "GET", "/ping", bad[i], NULL, 0);
		cr_assert_eq(read_response(c, &body), 401, "token '%s'",
		    bad[i]);
		free(body.data);
	}
	/* Another scheme with the right token is still wrong. */
	snprintf(head, sizeof head, "GET /ping HTTP/1.1\r\n"
	    "Authorization: Basic %s\r\n\r\n", TOKEN);
	send_all(c, head, strlen(head));
	cr_assert_eq(read_response(c, &body), 401);
	free(body.data);
	/* An unauthenticated exec must not run anything. */
	send_request(c, "POST", "/exec", "nope", "{\"argv\":[\"true\"]}", 17);
	cr_assert_eq(read_response(c, &body), 401);
	free(body.data);
	assert_serving(c);
}

Test(agent, pipelined_requests_are_answered_in_order)
{
	struct tbuf	 body;
	struct conn	*c = &ag.c[0];
	char		 two[512];

	spawn_agent(1, NULL);
	snprintf(two, sizeof two,
	    "GET /nope HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n"
	    "GET /ping HTTP/1.1\r\nAuthorization: Bearer %s\r\n\r\n",
	    TOKEN, TOKEN);
	send_all(c, two, strlen(two));
	cr_assert_eq(read_response(c, &body), 404);
	free(body.data);
	cr_assert_eq(read_response(c, &body), 200);
	free(body.data);
}

/* --- Exec. */

Test(agent, exec_echo_streams_start_stdout_exit)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"echo\",\"hi\"]}", &r);
	cr_assert_eq(r.out.len, 3);
	cr_assert_str_eq(r.out.data, "hi\n");
	cr_assert_eq(r.err.len, 0);
	cr_assert_eq(r.status, 0, "exit: %s", r.exit);
	cr_assert_eq(r.signal, -1);
	cr_assert_str_eq(r.exit, "{\"status\":0}");
	result_free(&r);
	/* The port is free again, and ids go up. */
	exec_run(&ag.c[0], "{\"argv\":[\"true\"]}", &r);
	cr_assert_eq(r.id, 2);
	result_free(&r);
}

Test(agent, exit_statuses_pass_through)
{
	static const int	codes[] = { 0, 1, 42, 255 };
	struct result		r;
	char			json[128];
	size_t			i;

	spawn_agent(1, NULL);
	for (i = 0; i < sizeof codes / sizeof codes[0]; i++) {
		snprintf(json, sizeof json,
		    "{\"argv\":[\"sh\",\"-c\",\"exit %d\"]}", codes[i]);
		exec_run(&ag.c[0], json, &r);
		cr_assert_eq(r.status, codes[i], "exit: %s", r.exit);
		result_free(&r);
	}
}

Test(agent, death_by_signal_is_reported)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"kill -9 $$\"]}", &r);
	cr_assert_eq(r.signal, 9, "exit: %s", r.exit);
	cr_assert_eq(r.status, -1);
	result_free(&r);
}

Test(agent, missing_command_is_127_not_executable_is_126)
{
	struct result	r;
	char		path[256], json[512];

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"no-such-command-qsup\"]}", &r);
	cr_assert_eq(r.status, 127, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.exit, "\"error\":\"no-such-command-qsup"),
	    "%s", r.exit);
	cr_assert_eq(r.out.len + r.err.len, 0);
	result_free(&r);

	tmp_path(path, sizeof path, "not-executable");
	write_file(path, "#!/bin/sh\necho ran\n", 19, 0644);
	snprintf(json, sizeof json, "{\"argv\":[\"%s\"]}", path);
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 126, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.exit, "\"error\":"), "%s", r.exit);
	cr_assert_eq(r.out.len, 0);
	result_free(&r);

	/* A missing working directory cannot start the command either. */
	exec_run(&ag.c[0], "{\"argv\":[\"true\"],\"cwd\":\"/no/such/dir\"}",
	    &r);
	cr_assert_eq(r.status, 127, "exit: %s", r.exit);
	cr_assert_not_null(strstr(r.exit, "/no/such/dir"), "%s", r.exit);
	result_free(&r);
}

Test(agent, stdout_and_stderr_stay_separate)
{
	struct result	r;

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"printf out1; printf err1 >&2; printf out2; printf err2 >&2\"]}",
	    &r);
	cr_assert_str_eq(r.out.data, "out1out2");
	cr_assert_str_eq(r.err.data, "err1err2");
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, environment_and_working_directory)
{
	struct result	r;

	spawn_agent(1, NULL);
	/* Seed env (percent-decoded), request env overriding it, defaults. */
	exec_run(&ag.c[0], "{\"cwd\":null,\"argv\":[\"sh\",\"-c\","
	    "\"echo \\\"$FOO|$SHADOWED|$REQ|$HOME|$PATH\\\"; pwd\"],"
	    "\"env\":[\"SHADOWED=from-request\",\"REQ=a b=c\"],"
	    "\"ignored\":{\"nested\":[1,2.5e3,-0.1,true,false,null,\"x\"]}}",
	    &r);
	cr_assert_str_eq(r.out.data, "hello world|from-request|a b=c|/root|"
	    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	    "/tmp\n");
	result_free(&r);

	/* Only what the seed and the request give, nothing of ours. */
	setenv("QSUP_TEST_LEAK", "1", 1);
	exec_run(&ag.c[0], "{\"argv\":[\"env\"],\"cwd\":\"/\"}", &r);
	cr_assert_null(strstr(r.out.data, "QSUP_TEST_LEAK"));
	cr_assert_not_null(strstr(r.out.data, "TERM="));
	result_free(&r);

	exec_run(&ag.c[0], "{\"argv\":[\"pwd\"],\"cwd\":\"/usr\"}", &r);
	cr_assert_str_eq(r.out.data, "/usr\n");
	result_free(&r);
}

Test(agent, json_string_escapes_reach_argv)
{
	struct result		r;
	static const char	want[] = "caf\xc3\xa9 \xf0\x9f\x98\x80 "
	    "\"q\" \\ / \b\f\n\r\t|";

	spawn_agent(1, NULL);
	exec_run(&ag.c[0], "{\"argv\":[\"printf\",\"%s|\","
	    "\"caf\\u00e9 \\ud83d\\ude00 \\\"q\\\" \\\\ \\/ "
	    "\\b\\f\\n\\r\\t\"]}",
	    &r);
	cr_assert_eq(r.out.len, sizeof want - 1, "got %zu bytes", r.out.len);
	cr_assert_eq(memcmp(r.out.data, want, sizeof want - 1), 0);
	result_free(&r);
}

Test(agent, commands_start_clean)
{
	struct result	r;

	spawn_agent(2, NULL);
	/* Only 0-2 (and the fd ls itself opens to read the folder). */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"ls /proc/self/fd | wc -l; ls -l /proc/self/fd/0\"]}", &r);
	cr_assert(strncmp(r.out.data, "4\n", 2) == 0, "%s", r.out.data);
	cr_assert_not_null(strstr(r.out.data, "pipe:"), "%s", r.out.data);
	result_free(&r);

	/* No signal blocked or ignored, a session of its own. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"grep -E '^Sig(Blk|Ign)' /proc/self/status;"
	    " test $(ps -o sid= -p $$) -eq $$ && echo leader\"]}", &r);
	cr_assert_str_eq(r.out.data, "SigBlk:\t0000000000000000\n"
	    "SigIgn:\t0000000000000000\nleader\n");
	result_free(&r);
}

/*
 * The agent's runner (guest/exec.c): a child spawned ahead with
 * "--runner", found by its parent and command line; 0 if none comes
 * within 10 s. not: one other than this pid.
 */
static pid_t
runner_of_agent(pid_t not)
{
	char		 path[320], buf[256];
	struct dirent	*d;
	DIR		*dir;
	FILE		*f;
	pid_t		 found = 0;
	long		 ppid;
	size_t		 n;
	int		 i;

	for (i = 0; i < 1000 && found == 0; i++) {
		cr_assert_not_null(dir = opendir("/proc"));
		while (found == 0 && (d = readdir(dir)) != NULL) {
			if (atoi(d->d_name) <= 0 || atoi(d->d_name) == not)
				continue;
			snprintf(path, sizeof path, "/proc/%s/stat", d->d_name);
			if ((f = fopen(path, "r")) == NULL)
				continue;
			n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			buf[n] = '\0';
			/* pid (comm) state ppid: comm may hold blanks. */
			if (strrchr(buf, ')') == NULL || sscanf(strrchr(buf,
			    ')') + 2, "%*c %ld", &ppid) != 1 || ppid != ag.pid)
				continue;
			snprintf(path, sizeof path, "/proc/%s/cmdline",
			    d->d_name);
			if ((f = fopen(path, "r")) == NULL)
				continue;
			n = fread(buf, 1, sizeof buf - 1, f);
			fclose(f);
			if (n > 0 && memmem(buf, n, "--runner", 9) != NULL)
				found = atoi(d->d_name);
		}
		closedir(dir);
		if (found == 0)
			usleep(10000);
	}
	return (found);
}

/* How many descriptors pid has open. */
static int
fd_count(pid_t pid)
{
	char		 path[64];
	struct dirent	*d;
	DIR		*dir;
	int		 n = 0;

	snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
	cr_assert_not_null(dir = opendir(path), "%s", path);
	while ((d = readdir(dir)) != NULL)
		n += d->d_name[0] != '.';
	closedir(dir);
	return (n);
}

/*
 * A command without a tty runs in the runner the agent spawned ahead,
 * which holds only its three pipes and its two of the agent's, and the
 * next is spawned once the agent is idle; a command too large for its
 * pipe forks and leaves it for the next; one with a tty forks too.
 */
Test(agent, commands_run_in_the_runner_spawned_ahead)
{
	struct result	 r;
	pid_t		 first, next;
	char		*json, *big;
	size_t		 n = 70000;

	spawn_agent(1, NULL);
	cr_assert_neq(first = runner_of_agent(0), 0, "no runner");
	cr_assert_eq(fd_count(first), 5);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo $$\"]}", &r);
	cr_assert_eq(r.pid, first, "pid %ld, runner %ld", r.pid, (long)first);
	cr_assert_eq(atol(r.out.data), first, "%s", r.out.data);
	result_free(&r);

	cr_assert_neq(next = runner_of_agent(first), 0, "no runner after");
	cr_assert(next != first);
	big = malloc(n + 1);
	memset(big, 'x', n);
	big[n] = '\0';
	cr_assert_gt(asprintf(&json, "{\"argv\":[\"sh\",\"-c\","
	    "\"echo ${#1}\",\"sh\",\"%s\"]}", big), 0);
	exec_run(&ag.c[0], json, &r);
	cr_assert_str_eq(r.out.data, "70000\n");
	cr_assert_neq(r.pid, next);
	result_free(&r);
	free(json);
	free(big);
	/* Still there, for the next command that fits. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"echo $$\"]}", &r);
	cr_assert_eq(r.pid, next, "pid %ld, runner %ld", r.pid, (long)next);
	result_free(&r);
}

/* --- Stdin (agent_helpers.h sends and closes it). */

Test(agent, stdin_is_forwarded_byte_exact)
{
	struct result	 r;
	unsigned char	*big;
	size_t		 i, total = 0, mib = 1024 * 1024;
	int		 fd;
	char		 want[32];

	spawn_agent(2, NULL);
	big = malloc(mib);
	cr_assert_not_null(big);
	fd = open("/dev/urandom", O_RDONLY);
	cr_assert_eq(read(fd, big, mib), (ssize_t)mib);
	close(fd);

	exec_begin(&ag.c[0], "{\"argv\":[\"wc\",\"-c\"]}", &r);
	stdin_send(&ag.c[1], r.id, "hello", 5, 204);
	total += 5;
	for (i = 0; i < 3; i++) {
		stdin_send(&ag.c[1], r.id, big, mib, 204);
		total += mib;
	}
	stdin_send(&ag.c[1], r.id, "", 0, 204);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	snprintf(want, sizeof want, "%zu\n", total);
	cr_assert_str_eq(r.out.data, want);
	cr_assert_eq(r.status, 0);
	result_free(&r);

	/* Binary content survives: the command echoes it back. */
	exec_begin(&ag.c[0], "{\"argv\":[\"cat\"]}", &r);
	stdin_send(&ag.c[1], r.id, big, 200000, 204);
	stdin_close(&ag.c[1], r.id);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.out.len, 200000);
	cr_assert_eq(memcmp(r.out.data, big, 200000), 0);
	result_free(&r);
	free(big);
}

Test(agent, stdin_after_close_is_409_and_unknown_ids_404)
{
	struct result	 r;
	struct tbuf	 body;

	spawn_agent(2, NULL);
	/*
	 * It lives on after its stdin closes: a plain cat could exit and its
	 * exec be gone (404) before the late write comes, on a loaded host.
	 */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"cat; sleep 1\"]}",
	    &r);
	stdin_send(&ag.c[1], r.id, "abc", 3, 204);
	stdin_close(&ag.c[1], r.id);
	stdin_close(&ag.c[1], r.id);	/* twice is fine */
	stdin_send(&ag.c[1], r.id, "late", 4, 409);
	exec_end(&ag.c[0], &r);
	cr_assert_str_eq(r.out.data, "abc");
	result_free(&r);

	/* The exec is over: its id is gone. */
	stdin_send(&ag.c[1], r.id, "x", 1, 404);
	cr_assert_eq(request(&ag.c[1], "POST", "/exec/999/close", NULL, 0,
	    &body), 404);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", "/exec/999/signal", "9", 1,
	    &body), 404);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", "/exec/abc/stdin", "9", 1,
	    &body), 404);
	free(body.data);
}

Test(agent, stdin_to_a_command_that_stopped_reading_is_409)
{
	struct result	 r;
	char		*big;
	size_t		 len = 1024 * 1024;

	spawn_agent(2, NULL);
	big = malloc(len);
	memset(big, 'x', len);
	/* Closes its stdin at once but lives on. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"exec 0<&-; echo closed; sleep 0.5\"]}", &r);
	usleep(200000);
	stdin_send(&ag.c[1], r.id, big, len, 409);
	exec_end(&ag.c[0], &r);
	cr_assert_str_eq(r.out.data, "closed\n");
	cr_assert_eq(r.status, 0);
	result_free(&r);
	free(big);
}

/* --- Concurrency, signals, large output. */

Test(agent, execs_on_different_ports_run_at_once)
{
	struct result	a, b;

	spawn_agent(3, NULL);
	/* a waits for a line on stdin; b runs and ends meanwhile. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"read x; echo got $x\"]}", &a);
	exec_run(&ag.c[1], "{\"argv\":[\"echo\",\"b\"]}", &b);
	cr_assert_str_eq(b.out.data, "b\n");
	cr_assert_neq(a.id, b.id);
	stdin_send(&ag.c[2], a.id, "line\n", 5, 204);
	exec_end(&ag.c[0], &a);
	cr_assert_str_eq(a.out.data, "got line\n");
	cr_assert_eq(a.status, 0);
	result_free(&a);
	result_free(&b);
}

Test(agent, signal_reaches_the_process_group)
{
	struct result	 r;
	struct tbuf	 body, data, raw;
	char		 path[64], name[32];
	long		 child;
	int		 i;

	spawn_agent(2, NULL);
	/* The shell waits on a child; both are in the command's group. */
	exec_begin(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"sleep 30 & echo $!; wait; echo no\"]}", &r);
	cr_assert(next_event(&ag.c[0], name, sizeof name, &data));
	cr_assert_str_eq(name, QSUP_EVENT_STDOUT);
	memset(&raw, 0, sizeof raw);
	b64_decode(data.data, data.len, &raw);
	child = strtol(raw.data, NULL, 10);
	cr_assert(child > 0);
	free(data.data);
	free(raw.data);

	snprintf(path, sizeof path, "/exec/%ld/signal", r.id);
	cr_assert_eq(request(&ag.c[1], "POST", path, "abc", 3, &body), 400);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", path, "0", 1, &body), 400);
	free(body.data);
	cr_assert_eq(request(&ag.c[1], "POST", path, "15\n", 3, &body), 204);
	free(body.data);
	exec_end(&ag.c[0], &r);
	cr_assert_eq(r.signal, 15, "exit: %s", r.exit);
	cr_assert_eq(r.out.len, 0);
	/* The background sleep got it too (and the agent reaped it). */
	for (i = 0; i < 300 && kill(child, 0) == 0; i++)
		usleep(10000);
	cr_assert_eq(kill(child, 0), -1, "the group's other process lives");
	result_free(&r);
}

Test(agent, large_binary_output_is_byte_exact, .timeout = 120)
{
	struct result	 r;
	char		 path[256], json[512];
	unsigned char	*data;
	size_t		 len = 5 * 1024 * 1024 + 12345;
	int		 fd;

	spawn_agent(1, NULL);
	data = malloc(len);
	fd = open("/dev/urandom", O_RDONLY);
	cr_assert_eq(read(fd, data, len), (ssize_t)len);
	close(fd);
	tmp_path(path, sizeof path, "big.bin");
	write_file(path, data, len, 0644);
	snprintf(json, sizeof json, "{\"argv\":[\"cat\",\"%s\"]}", path);
	exec_run(&ag.c[0], json, &r);
	cr_assert_eq(r.status, 0);
	cr_assert_eq(r.out.len, len, "got %zu bytes", r.out.len);
	cr_assert_eq(memcmp(r.out.data, data, len), 0, "output differs");
	cr_assert(r.max_event_raw <= QSUP_CHUNK);
	cr_assert(r.nevents >= (int)(len / QSUP_CHUNK), "%d events",
	    r.nevents);
	result_free(&r);
	free(data);
}

/* The agent's peak resident memory. */
static long
agent_hwm_kb(void)
{
	char	path[64], line[256];
	FILE	*f;
	long	kb = -1;

	snprintf(path, sizeof path, "/proc/%d/status", (int)ag.pid);
	cr_assert_not_null(f = fopen(path, "r"));
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "VmHWM:", 6) == 0)
			kb = atol(line + 6);
	}
	fclose(f);
	cr_assert(kb > 0);
	return (kb);
}

Test(agent, slow_reader_gets_everything)
{
	struct result	 r;
	struct conn	*c = &ag.c[0];
	size_t		 len = 32 * 1024 * 1024;
	long		 base;

	spawn_agent(1, NULL);
	base = agent_hwm_kb();
	exec_begin(c, "{\"argv\":[\"head\",\"-c\",\"33554432\","
	    "\"/dev/zero\"]}", &r);
	/* The agent must hold the command back, not buffer 32 MB. */
	usleep(500000);
	/* Buffered, 32 MB of output would be 43 MB of events. */
	cr_assert_lt(agent_hwm_kb() - base, 12 * 1024, "agent grew by %ld kB",
	    agent_hwm_kb() - base);
	exec_end(c, &r);
	cr_assert_eq(r.out.len, len);
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, background_process_does_not_hold_the_exit)
{
	struct result	r;
	struct timespec	t0, t1;
	double		s;

	spawn_agent(1, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\","
	    "\"sleep 5 & echo started\"]}", &r);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	s = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	cr_assert(s < 3.0, "exit took %.1f s", s);
	cr_assert_str_eq(r.out.data, "started\n");
	cr_assert_eq(r.status, 0);
	result_free(&r);
}

Test(agent, hangup_kills_the_command)
{
	struct result	r;
	int		i;

	spawn_agent(2, NULL);
	exec_begin(&ag.c[0], "{\"argv\":[\"sleep\",\"60\"]}", &r);
	close(ag.c[0].fd);
	ag.c[0].fd = -1;
	for (i = 0; i < 300 && kill(r.pid, 0) == 0; i++)
		usleep(10000);
	cr_assert_eq(kill(r.pid, 0), -1, "sleep still runs");
	assert_serving(&ag.c[1]);
	result_free(&r);
}

/* --- Malformed input. */

static void
expect_status(struct conn *c, const void *raw, size_t len, int want)
{
	struct tbuf	body;
	int		status;

	send_all(c, raw, len);
	status = read_response(c, &body);
	cr_assert_eq(status, want, "got %d (%s) for %.40s", status, body.data,
	    (const char *)raw);
	free(body.data);
}

static void
expect_str(struct conn *c, const char *raw, int want)
{
	expect_status(c, raw, strlen(raw), want);
}

static void
expect_exec_status(struct conn *c, const char *json, int want,
    const char *needle)
{
	struct tbuf	body;

	cr_assert_eq(request(c, "POST", "/exec", json, strlen(json), &body),
	    want, "%s -> %s", json, body.data);
	if (needle != NULL)
		cr_assert_not_null(strstr(body.data, needle), "%s", body.data);
	free(body.data);
}

Test(agent, malformed_requests_get_4xx_and_serving_goes_on)
{
	struct conn	*c = &ag.c[0];
	char		*huge, head[256];
	size_t		 n = 20000;

	spawn_agent(1, NULL);
	expect_str(c, "garbage\r\n\r\n", 400);
	expect_str(c, "GET /ping\r\n\r\n", 400);
	expect_str(c, "GET /ping HTTP/2.0\r\n\r\n", 505);
	expect_str(c, "GET ping HTTP/1.1\r\n\r\n", 400);
	expect_str(c, "GET /ping HTTP/1.1\r\nNo colon\r\n\r\n", 400);
	expect_str(c, "GET /ping HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400);
	expect_str(c, "POST /exec HTTP/1.1\r\nTransfer-Encoding: gzip\r\n"
	    "\r\n", 501);
	assert_serving(c);

	/* A head larger than the limit. */
	huge = malloc(n + 64);
	memcpy(huge, "GET /ping HTTP/1.1\r\nX-Big: ", 27);
	memset(huge + 27, 'a', n);
	memcpy(huge + 27 + n, "\r\n\r\n", 4);
	expect_status(c, huge, 27 + n + 4, 431);
	free(huge);
	assert_serving(c);

	/* A body over the limit is refused and skipped, not buffered. */
	n = 2 * 1024 * 1024;
	huge = calloc(1, n);
	snprintf(head, sizeof head, "POST /exec HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\nContent-Length: %zu\r\n\r\n", TOKEN,
	    n);
	send_all(c, head, strlen(head));
	send_all(c, huge, n);
	expect_str(c, "", 413);
	free(huge);
	assert_serving(c);

	/* Bad exec bodies. */
	expect_exec_status(c, "", 400, "bad JSON");
	expect_exec_status(c, "{", 400, "bad JSON");
	expect_exec_status(c, "[\"ls\"]", 400, "bad JSON");
	expect_exec_status(c, "{\"argv\":\"ls\"}", 400, NULL);
	expect_exec_status(c, "{\"argv\":[]}", 400, "argv");
	expect_exec_status(c, "{\"env\":[\"A=1\"]}", 400, "argv");
	expect_exec_status(c, "{\"argv\":[1]}", 400, NULL);
	expect_exec_status(c, "{\"argv\":[\"ls\"],}", 400, NULL);
	expect_exec_status(c, "{\"argv\":[\"ls\"]} x", 400, "trailing");
	expect_exec_status(c, "{\"argv\":[\"a\\u0000b\"]}", 400, "NUL");
	expect_exec_status(c, "{\"argv\":[\"\\ud800\"]}", 400, "surrogate");
	expect_exec_status(c, "{\"argv\":[\"a\nb\"]}", 400, "control");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"env\":[\"NOEQUALS\"]}", 400,
	    "env");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"x\":"
	    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
	    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
	    400, "deep");

	/* Wrong methods and paths. */
	expect_str(c, "POST /ping HTTP/1.1\r\nAuthorization: Bearer "
	    TOKEN "\r\n\r\n", 405);
	{
		struct tbuf	body;

		cr_assert_eq(request(c, "GET", "/nothing", NULL, 0, &body),
		    404);
		free(body.data);
		cr_assert_eq(request(c, "GET", "/exec", NULL, 0, &body), 405);
		free(body.data);
	}
	assert_serving(c);
	cr_assert_eq(waitpid(ag.pid, NULL, WNOHANG), 0, "agent died");
}

Test(agent, random_garbage_never_kills_the_agent)
{
	struct conn	*c = &ag.c[0];
	struct tbuf	 body;
	unsigned char	 junk[4096];
	char		 ping[256];
	unsigned	 seed;
	int		 round, i, status, n;

	spawn_agent(1, NULL);
	snprintf(ping, sizeof ping, "\r\n\r\nGET /ping HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\n\r\n", TOKEN);
	for (round = 0; round < 40; round++) {
		seed = 1234 + round;
		n = 1 + rand_r(&seed) % (int)sizeof junk;
		for (i = 0; i < n; i++) {
			junk[i] = (unsigned char)rand_r(&seed);
			/* Half the rounds: text-like junk, with line ends. */
			if (round % 2 == 0)
				junk[i] = " \r\nGET/HTTP:1.ab"[junk[i] % 16];
		}
		send_all(c, junk, n);
		send_all(c, ping, strlen(ping));
		/* Some 4xx answers, then the ping's 200. */
		for (i = 0; i < 2000; i++) {
			status = read_response(c, &body);
			free(body.data);
			if (status == 200)
				break;
			cr_assert(status >= 400 && status < 500,
			    "round %d: status %d", round, status);
		}
		cr_assert_eq(status, 200, "round %d", round);
	}
	cr_assert_eq(waitpid(ag.pid, NULL, WNOHANG), 0, "agent died");
}

Test(agent, chunked_and_expect_continue_requests)
{
	struct conn	*c = &ag.c[0];
	struct result	 r;
	char		 buf[512];
	const char	*json = "{\"argv\":[\"echo\",\"chunked\"]}";

	spawn_agent(1, NULL);
	snprintf(buf, sizeof buf, "POST /exec HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "5;ext=1\r\n%.5s\r\n%zx\r\n%s\r\n0\r\nTrailer: x\r\n\r\n",
	    TOKEN, json, strlen(json) - 5, json + 5);
	send_all(c, buf, strlen(buf));
	memset(&r, 0, sizeof r);
	tbuf_add(&r.out, "", 0);
	tbuf_add(&r.err, "", 0);
	cr_assert_eq(read_head(c), 200);
	{
		char		name[32];
		struct tbuf	data;

		cr_assert(next_event(c, name, sizeof name, &data));
		cr_assert_str_eq(name, QSUP_EVENT_START);
		free(data.data);
	}
	exec_end(c, &r);
	cr_assert_str_eq(r.out.data, "chunked\n");
	result_free(&r);

	snprintf(buf, sizeof buf, "GET /ping HTTP/1.1\r\n"
	    "Authorization: Bearer %s\r\nExpect: 100-continue\r\n"
	    "Content-Length: 0\r\n\r\n", TOKEN);
	send_all(c, buf, strlen(buf));
	cr_assert_eq(read_head(c), 100);
	{
		struct tbuf	body;

		cr_assert_eq(read_response(c, &body), 200);
		free(body.data);
	}
}

/* --- Poweroff. */

Test(agent, poweroff_answers_204_then_exits)
{
	struct tbuf	body;
	int		status;

	spawn_agent(2, NULL);
	cr_assert_eq(request(&ag.c[0], "POST", "/poweroff", NULL, 0, &body),
	    204);
	free(body.data);
	status = agent_wait(3000);
	cr_assert(status != -1 && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "status %d", status);
}

/* --- The exec request's JSON. */

Test(agent, exec_json_for_tty_and_file_jobs)
{
	struct conn	*c = &ag.c[0];

	spawn_agent(1, NULL);
	expect_exec_status(c, "{}", 400, "argv");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"read\":\"/a\"}", 400,
	    "only one");
	expect_exec_status(c, "{\"read\":\"/a\",\"write\":\"/b\"}", 400,
	    "only one");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"write\":\"/b\"}", 400,
	    "only one");
	expect_exec_status(c, "{\"read\":1}", 400, "string");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":\"644\"}", 400,
	    "whole number");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":-1}", 400,
	    "whole number");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":4096}", 400,
	    "range");
	expect_exec_status(c, "{\"write\":\"/b\",\"mode\":4.5}", 400,
	    "whole number");
	expect_exec_status(c, "{\"read\":\"/b\",\"mode\":420}", 400,
	    "mode");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"mode\":420}", 400,
	    "mode");
	expect_exec_status(c, "{\"read\":\"/b\",\"tty\":true}", 400, "tty");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":1}", 400,
	    "true or false");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":\"yes\"}", 400,
	    "true or false");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,\"rows\":0}",
	    400, "range");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,"
	    "\"cols\":10001}", 400, "range");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,"
	    "\"rows\":1e2}", 400, "whole number");
	expect_exec_status(c, "{\"argv\":[\"ls\"],\"tty\":true,"
	    "\"rows\":99999999999999999999}", 400, "range");
	assert_serving(c);
}

Test(agent, exec_json_accepts_the_new_fields)
{
	struct result	r;

	spawn_agent(1, NULL);
	/* null is the default, and a later key wins, as for cwd. */
	exec_run(&ag.c[0], "{\"argv\":[\"sh\",\"-c\",\"test -t 1 || "
	    "echo no-tty\"],\"tty\":null,\"read\":null,\"write\":null}", &r);
	cr_assert_str_eq(r.out.data, "no-tty\n");
	result_free(&r);
	exec_run(&ag.c[0], "{\"tty\":false,\"argv\":[\"stty\",\"size\"],"
	    "\"rows\":5,\"cols\":7,\"tty\":true,\"rows\":10000,"
	    "\"cols\":1}", &r);
	cr_assert_str_eq(r.out.data, "10000 1\r\n");
	result_free(&r);
}
