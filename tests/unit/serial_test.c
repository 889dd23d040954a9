/*
 * The console: its tail keeps the lines that say why a guest died even
 * after they scrolled out of the ring, and shows no raw control bytes.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "cmd.h"

static struct ev_loop	*loop;
static int		 peer;
static struct serial	*con;
static struct buf	 marks;

static void
mark_cb(void *arg, const char *line)
{
	(void)arg;
	buf_printf(&marks, "%s|", line);
}

static void
setup(void)
{
	int	sv[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	loop = ev_loop_new(EVFLAG_AUTO);
	con = serial_new(loop, sv[0], NULL, 0);
	serial_set_mark_cb(con, mark_cb, NULL);
	peer = sv[1];
	memset(&marks, 0, sizeof marks);
}

static void
teardown(void)
{
	serial_free(con);
	close(peer);
	ev_loop_destroy(loop);
	buf_free(&marks);
}

static void
say(const char *s)
{
	size_t	len = strlen(s);
	ssize_t	n;

	while (len > 0) {
		n = write(peer, s, len);
		if (n == -1 && errno == EAGAIN) {
			ev_run(loop, EVRUN_NOWAIT);
			continue;
		}
		cr_assert_gt(n, 0);
		s += n;
		len -= n;
		ev_run(loop, EVRUN_NOWAIT);
	}
	ev_run(loop, EVRUN_NOWAIT);
}

TestSuite(serial, .init = setup, .fini = teardown);

/* A panic, then a stack trace far longer than the ring. */
Test(serial, panic_line_survives_the_ring)
{
	struct buf	 out = { 0 };
	char		 line[128], *found;
	int		 i;

	say("[    1.1] booting\r\n");
	say("[    1.2] Kernel panic - not syncing: deadlocked on memory\r\n");
	for (i = 0; i < 2000; i++) {
		snprintf(line, sizeof line, "[    1.3]  frame_%d+0x10/0x20\r\n",
		    i);
		say(line);
	}
	serial_tail(con, 3, &out);
	cr_assert_str_eq(out.data,
	    "[    1.2] Kernel panic - not syncing: deadlocked on memory\n"
	    "...\n"
	    "[    1.3]  frame_1997+0x10/0x20\n"
	    "[    1.3]  frame_1998+0x10/0x20\n"
	    "[    1.3]  frame_1999+0x10/0x20");
	found = serial_find(con, "Kernel panic");
	cr_assert_str_eq(found,
	    "[    1.2] Kernel panic - not syncing: deadlocked on memory");
	free(found);
	cr_assert_null(serial_find(con, "reboot: "));
	buf_free(&out);
}

/* A mark still in the tail is shown once; the callback sees each mark. */
Test(serial, marks_in_the_tail_are_not_repeated)
{
	struct buf	out = { 0 };

	say("a\nOut of memory: Killed process 7 (x)\nb\n");
	serial_tail(con, 5, &out);
	cr_assert_str_eq(out.data, "a\nOut of memory: Killed process 7 (x)\nb");
	cr_assert_str_eq(marks.data, "Out of memory: Killed process 7 (x)|");
	buf_free(&out);
}

/* The first few and the last few marks of a long run are kept. */
Test(serial, first_and_last_marks_are_kept)
{
	char	 line[64], *found;
	int	 i;

	for (i = 0; i < 100; i++) {
		snprintf(line, sizeof line, "BUG: number %d\n", i);
		say(line);
	}
	found = serial_find(con, "BUG: number 0");
	cr_assert_not_null(found);
	free(found);
	found = serial_find(con, "BUG: number 99");
	cr_assert_not_null(found);
	free(found);
	cr_assert_null(serial_find(con, "BUG: number 50"));
	found = serial_find(con, "BUG:");
	cr_assert_str_eq(found, "BUG: number 99");
	free(found);
}

/* A guest's escape sequences and endless lines stay harmless. */
Test(serial, marks_are_bounded_and_escaped)
{
	struct buf	 b = { 0 }, out = { 0 };
	char		*found;
	int		 i;

	buf_puts(&b, "Oops: \x1b]0;pwned\x07");
	for (i = 0; i < 100000; i++)
		buf_puts(&b, "x");
	buf_puts(&b, "\n");
	say(b.data);
	found = serial_find(con, "Oops");
	cr_assert_not_null(found);
	cr_assert_eq(strlen(found), 200);
	cr_assert(strncmp(found, "Oops: ?]0;pwned?xxx", 19) == 0, "%s", found);
	cr_assert_null(strchr(found, '\x1b'));
	free(found);
	serial_tail(con, 2, &out);
	cr_assert_null(strchr(out.data, '\x1b'));
	cr_assert_null(strchr(out.data, '\x07'));
	buf_free(&b);
	buf_free(&out);
}

/* What QEMU wrote before it exited is read to the end, then EOF. */
Test(serial, drain_reads_to_the_end)
{
	char	*found;

	cr_assert_eq(write(peer, "reboot: System halted\r\n", 23), 23);
	close(peer);
	peer = -1;
	serial_drain(con);
	cr_assert(serial_closed(con));
	found = serial_find(con, "reboot: System halted");
	cr_assert_not_null(found);
	free(found);
}
