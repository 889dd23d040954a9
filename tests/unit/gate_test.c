#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "vm.h"

static char		 tmp[] = "/tmp/qsup-gate.XXXXXX";
static char		*dir;
static struct ev_loop	*loop;

/* Which gates' callbacks ran, in the order they ran. */
static int		 order[16];
static int		 norder;
static double		 called_at[16];

struct who {
	int	 id;
};

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(tmp));
	xasprintf(&dir, "%s/gate", tmp);
	loop = ev_loop_new(EVFLAG_AUTO);
	norder = 0;
}

static void
teardown(void)
{
	ev_loop_destroy(loop);
	util_rm_rf(tmp);
	free(dir);
}

TestSuite(gate, .init = setup, .fini = teardown, .timeout = 20);

static void
called_cb(void *arg)
{
	struct who	*w = arg;

	cr_assert_lt(norder, 16);
	called_at[w->id] = util_now();
	order[norder++] = w->id;
}

static void
stop_cb(struct ev_loop *l, ev_timer *t, int revents)
{
	(void)t;
	(void)revents;
	ev_break(l, EVBREAK_ONE);
}

/* Run the loop until n callbacks have run in all, or for at most secs. */
static void
run_until(int n, double secs)
{
	ev_timer	t;

	ev_timer_init(&t, stop_cb, secs, 0);
	ev_timer_start(loop, &t);
	while (norder < n && ev_is_active(&t))
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &t);
}

static int
count_files(const char *prefix)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	cr_assert_not_null(d = opendir(dir));
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0)
			n++;
	closedir(d);
	return (n);
}

static struct who	w[8] = { {0}, {1}, {2}, {3}, {4}, {5}, {6}, {7} };

Test(gate, one_slot_serves_in_order_and_never_calls_back_synchronously)
{
	struct gate	*g[4];
	double		 released;
	int		 i;

	g[0] = gate_new(loop, dir, 1, called_cb, &w[0]);
	cr_assert_eq(norder, 0, "cb must come from the loop, not gate_new");
	cr_assert_eq(gate_ahead(g[0]), 0);
	run_until(1, 2);
	cr_assert_eq(norder, 1);
	cr_assert_eq(order[0], 0);

	for (i = 1; i < 4; i++) {
		g[i] = gate_new(loop, dir, 1, called_cb, &w[i]);
		/* Those waiting before it, and the one start holding it. */
		cr_assert_eq(gate_ahead(g[i]), i, "gate %d: %d ahead", i,
		    gate_ahead(g[i]));
	}
	run_until(2, 0.3);
	cr_assert_eq(norder, 1, "a slot taken is not given twice");
	cr_assert_eq(count_files("wait."), 3);

	for (i = 0; i < 3; i++) {
		released = util_now();
		if (i % 2 == 0)
			gate_release(g[i]);
		else
			gate_free(g[i]);
		run_until(i + 2, 2);
		cr_assert_eq(norder, i + 2);
		cr_assert_eq(order[i + 1], i + 1, "served out of order");
		/* inotify wakes it; the 1 s backstop would fail this. */
		cr_assert_lt(called_at[i + 1] - released, 0.2,
		    "woken %.3f s after the release",
		    called_at[i + 1] - released);
	}
	cr_assert_geq(gate_waited(g[3]), 0.3);
	cr_assert_lt(gate_waited(g[0]), 0.2, "it had the slot at once");
	cr_assert_eq(count_files("wait."), 0, "a ticket was left");
	gate_release(g[0]);	/* idempotent */
	gate_free(g[0]);
	gate_free(g[2]);
	gate_free(g[3]);
	gate_free(NULL);
}

Test(gate, two_slots_two_at_once_then_the_oldest_waiter)
{
	struct gate	*g[5];
	int		 i;

	for (i = 0; i < 5; i++)
		g[i] = gate_new(loop, dir, 2, called_cb, &w[i]);
	run_until(3, 0.3);
	cr_assert_eq(norder, 2);
	cr_assert(order[0] + order[1] == 1, "gates 0 and 1 first");
	cr_assert_eq(gate_ahead(g[0]), 0);
	cr_assert_eq(gate_ahead(g[1]), 0);
	cr_assert_eq(gate_ahead(g[2]), 2);
	cr_assert_eq(gate_ahead(g[3]), 3);
	cr_assert_eq(gate_ahead(g[4]), 4);

	gate_free(g[1]);
	run_until(3, 2);
	cr_assert_eq(norder, 3);
	cr_assert_eq(order[2], 2);
	run_until(4, 0.2);
	cr_assert_eq(norder, 3, "only one slot was freed");
	gate_free(g[0]);
	gate_free(g[2]);
	run_until(5, 2);
	cr_assert_eq(norder, 5);
	cr_assert(order[3] + order[4] == 7, "then 3 and 4");
	gate_free(g[3]);
	gate_free(g[4]);
}

Test(gate, a_waiter_that_leaves_is_never_called_nor_blocks_the_queue)
{
	struct gate	*g[3];
	int		 i;

	for (i = 0; i < 3; i++)
		g[i] = gate_new(loop, dir, 1, called_cb, &w[i]);
	run_until(1, 2);
	gate_free(g[1]);
	gate_release(g[0]);
	run_until(2, 2);
	cr_assert_eq(norder, 2);
	cr_assert_eq(order[1], 2);
	run_until(3, 0.2);
	cr_assert_eq(norder, 2);
	gate_free(g[0]);
	gate_free(g[2]);
}

static void
noop_cb(void *arg)
{
	(void)arg;
}

/* A child process with a gate of its own, queued or holding the slot. */
static pid_t
child_gate(int *rd)
{
	struct ev_loop	*l;
	struct gate	*g;
	int		 p[2];
	pid_t		 pid;

	cr_assert_eq(pipe(p), 0);
	cr_assert_neq(pid = fork(), -1);
	if (pid == 0) {
		close(p[0]);
		alarm(10);	/* gone, should the test fail before its kill */
		l = ev_loop_new(EVFLAG_AUTO);
		g = gate_new(l, dir, 1, noop_cb, NULL);
		/* Queued (or holding): the parent may go on. */
		if (write(p[1], "q", 1) != 1)
			_exit(1);
		for (;;)
			pause();
		gate_free(g);
		_exit(0);
	}
	close(p[1]);
	*rd = p[0];
	return (pid);
}

static void
child_wait(int rd)
{
	struct pollfd	pfd = { .fd = rd, .events = POLLIN };
	char		c;

	cr_assert_eq(poll(&pfd, 1, 5000), 1, "the child did not queue");
	cr_assert_eq(read(rd, &c, 1), 1);
	close(rd);
}

Test(gate, a_holder_killed_outright_gives_its_slot_back)
{
	struct gate	*g;
	double		 killed;
	pid_t		 pid;
	int		 rd;

	pid = child_gate(&rd);
	child_wait(rd);
	g = gate_new(loop, dir, 1, called_cb, &w[0]);
	cr_assert_eq(gate_ahead(g), 1, "the child holds the slot");
	run_until(1, 0.3);
	cr_assert_eq(norder, 0, "the child's slot was taken from it");
	killed = util_now();
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	run_until(1, 3);
	cr_assert_eq(norder, 1);
	cr_assert_lt(called_at[0] - killed, 0.2, "woken %.3f s after the kill",
	    called_at[0] - killed);
	gate_free(g);
}

Test(gate, a_dead_waiter_does_not_hold_the_queue)
{
	struct gate	*g[2];
	pid_t		 pid;
	int		 rd;

	g[0] = gate_new(loop, dir, 1, called_cb, &w[0]);
	run_until(1, 2);
	pid = child_gate(&rd);
	child_wait(rd);
	g[1] = gate_new(loop, dir, 1, called_cb, &w[1]);
	cr_assert_eq(gate_ahead(g[1]), 2, "the child waits before us");
	kill(pid, SIGKILL);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	gate_release(g[0]);
	run_until(2, 2);
	cr_assert_eq(norder, 2, "a dead waiter blocked the queue");
	cr_assert_eq(order[1], 1);
	cr_assert_eq(count_files("wait."), 0, "the dead waiter's ticket");
	gate_free(g[0]);
	gate_free(g[1]);
}

Test(gate, waiting_is_not_a_busy_loop)
{
	struct gate	*g[2];
	struct rusage	 r0, r1;
	double		 cpu;

	g[0] = gate_new(loop, dir, 1, called_cb, &w[0]);
	g[1] = gate_new(loop, dir, 1, called_cb, &w[1]);
	run_until(1, 2);
	getrusage(RUSAGE_SELF, &r0);
	run_until(2, 1.5);
	getrusage(RUSAGE_SELF, &r1);
	cr_assert_eq(norder, 1);
	cpu = (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
	    (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
	    ((r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
	    (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec)) / 1e6;
	cr_assert_lt(cpu, 0.02, "%.3f s of CPU waiting 1.5 s", cpu);
	gate_free(g[0]);
	gate_free(g[1]);
}

Test(gate, dir_is_made_private)
{
	struct gate	*g;
	struct stat	 st;
	char		*deep;

	xasprintf(&deep, "%s/a/b", dir);
	g = gate_new(loop, deep, 1, called_cb, &w[0]);
	run_until(1, 2);
	cr_assert_eq(norder, 1);
	cr_assert_eq(stat(deep, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0700);
	gate_free(g);
	free(deep);
}

Test(gate, an_unusable_dir_opens_the_gate)
{
	struct gate	*g;
	char		*file, *under;

	xasprintf(&file, "%s/file", tmp);
	xasprintf(&under, "%s/gate", file);
	cr_assert_eq(util_write_file(file, "x"), 0);
	g = gate_new(loop, under, 1, called_cb, &w[0]);
	cr_assert_eq(norder, 0);
	run_until(1, 2);
	cr_assert_eq(norder, 1, "a start must not wait on a broken gate");
	gate_free(g);
	free(file);
	free(under);
}

Test(gate, slots_default_to_the_cpus_we_may_use)
{
	cpu_set_t	set;

	cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
	cr_assert_geq(gate_slots(), 1);
	cr_assert_leq(gate_slots(), CPU_COUNT(&set));
}

/* Shared by a crowd of processes: how many hold a slot, and who got one. */
struct crowd {
	int	 holding;
	int	 most;
	int	 next;
	int	 got[8];
};

static struct crowd	*crowd;
static int		 crowd_id;

static void
crowd_cb(void *arg)
{
	(void)arg;
	crowd->got[__atomic_fetch_add(&crowd->next, 1, __ATOMIC_SEQ_CST)] =
	    crowd_id;
	ev_break(loop, EVBREAK_ONE);
}

/* Each child queues, 20 ms after the one before, and holds 50 ms. */
static void
crowd_run(int slots, int n)
{
	struct gate	*g;
	pid_t		 pids[8];
	int		 i, h, st, most;

	crowd = mmap(NULL, sizeof *crowd, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(crowd, MAP_FAILED);
	memset(crowd, 0, sizeof *crowd);
	g = gate_new(loop, dir, slots, called_cb, &w[0]);
	run_until(1, 2);	/* the slots are held while the crowd queues */
	for (i = 0; i < n; i++) {
		cr_assert_neq(pids[i] = fork(), -1);
		if (pids[i] == 0) {
			alarm(20);
			ev_loop_destroy(loop);
			loop = ev_loop_new(EVFLAG_AUTO);
			crowd_id = i;
			g = gate_new(loop, dir, slots, crowd_cb, NULL);
			ev_run(loop, 0);
			h = __atomic_add_fetch(&crowd->holding, 1,
			    __ATOMIC_SEQ_CST);
			do {
				most = __atomic_load_n(&crowd->most,
				    __ATOMIC_SEQ_CST);
			} while (h > most && !__atomic_compare_exchange_n(
			    &crowd->most, &most, h, 0, __ATOMIC_SEQ_CST,
			    __ATOMIC_SEQ_CST));
			usleep(50000);
			__atomic_sub_fetch(&crowd->holding, 1,
			    __ATOMIC_SEQ_CST);
			gate_free(g);
			_exit(0);
		}
		usleep(20000);
	}
	gate_free(g);
	for (i = 0; i < n; i++) {
		cr_assert_eq(waitpid(pids[i], &st, 0), pids[i]);
		cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		    "child %d did not get a slot", i);
	}
	cr_assert_eq(crowd->next, n);
	cr_assert_leq(crowd->most, slots, "%d held a slot at once",
	    crowd->most);
	cr_assert_eq(crowd->most, slots, "the slots were not all used");
	if (slots == 1)
		for (i = 0; i < n; i++)
			cr_assert_eq(crowd->got[i], i, "served out of order");
	munmap(crowd, sizeof *crowd);
}

Test(gate, a_crowd_of_processes_takes_one_slot_in_turn)
{
	crowd_run(1, 6);
}

Test(gate, a_crowd_of_processes_never_holds_more_than_the_slots)
{
	crowd_run(2, 8);
}
