/*
 * qemu.c: the one command-line builder (every QEMU under -sandbox, commas
 * doubled), and processes reaped through ev_child only, even one freed
 * while it still runs.
 */
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "cmd.h"

static char *
joined(char *const *argv)
{
	struct buf	b = { 0 };

	for (; *argv != NULL; argv++)
		buf_printf(&b, "%s%s", b.len > 0 ? " " : "", *argv);
	return (b.data);
}

Test(qemu, machine_and_kernel)
{
	struct qemu_argv	 a = { 0 };
	char			*s;

	qemu_argv_machine(&a, "qemu-x", ACCEL_KVM, 0, 128, 1, NULL);
	qemu_argv_kernel(&a, "/k,1", "/i", "console=ttyS0");
	s = joined(a.argv);
	cr_assert_str_eq(s, "qemu-x -M microvm,pcie=on -accel kvm -cpu host "
	    "-m 128 -smp 1 -nodefaults -no-user-config -display none -no-reboot "
	    "-sandbox " QSUP_QEMU_SANDBOX " -kernel /k,,1 -initrd /i "
	    "-append console=ttyS0");
	cr_assert_eq(a.n, 24);
	cr_assert_null(a.argv[a.n]);
	free(s);
	qemu_argv_free(&a);
	cr_assert_null(a.argv);
}

/* boot = "image": a PC, whose BIOS and boot loader need their PIT. */
Test(qemu, pc_for_an_image)
{
	struct qemu_argv	 a = { 0 };
	char			*s;

	qemu_argv_machine(&a, "q", ACCEL_TCG, 1, 1024, 1, NULL);
	s = joined(a.argv);
	cr_assert_str_eq(s, "q -M q35 -accel tcg,tb-size=64 -cpu qemu64,+arat "
	    "-m 1024 -smp 1 -nodefaults -no-user-config -display none "
	    "-no-reboot -sandbox " QSUP_QEMU_SANDBOX);
	free(s);
	qemu_argv_free(&a);
}

Test(qemu, tcg_named)
{
	struct qemu_argv	 a = { 0 };
	char			*s;

	qemu_argv_machine(&a, "q", ACCEL_TCG, 0, 512, 2, "qsup:/run/x");
	s = joined(a.argv);
	cr_assert_str_eq(s, "q -M microvm,pcie=on,pit=off -accel tcg,tb-size=64 -cpu qemu64,+arat "
	    "-m 512 -smp 2 -name qsup:/run/x -nodefaults -no-user-config "
	    "-display none "
	    "-no-reboot -sandbox " QSUP_QEMU_SANDBOX);
	free(s);
	qemu_argv_free(&a);
}

struct seen {
	int	exits;
	int	logs;
};

static void
exit_cb(struct qemu *q, void *arg)
{
	struct seen	*seen = arg;

	(void)q;
	seen->exits++;
	ev_break(ev_default_loop(0), EVBREAK_ONE);
}

static void
log_cb(struct qemu *q, void *arg)
{
	struct seen	*seen = arg;

	(void)q;
	seen->logs++;
}

static struct qemu *
spawn(const char *script, struct seen *seen)
{
	char *const		 argv[] = { "/bin/sh", "-c", (char *)(uintptr_t)script,
	    NULL };
	struct qemu_confine	 c;
	struct qemu		*q;
	char			*cause = NULL;

	memset(&c, 0, sizeof c);
	c.sm = PROFILE_SM_NONE;
	q = qemu_new(ev_default_loop(0), exit_cb, log_cb, seen);
	cr_assert_eq(qemu_spawn(q, argv, &c, &cause), 0, "%s", cause);
	return (q);
}

Test(qemu, reaped_through_the_loop)
{
	struct seen	 seen = { 0 };
	struct qemu	*q = spawn("echo out; echo err >&2; exit 3", &seen);

	cr_assert(qemu_running(q));
	while (!qemu_reaped(q))
		ev_run(ev_default_loop(0), 0);
	cr_assert_eq(seen.exits, 1);
	cr_assert(seen.logs >= 1);
	cr_assert(WIFEXITED(qemu_wstatus(q)));
	cr_assert_eq(WEXITSTATUS(qemu_wstatus(q)), 3);
	cr_assert_str_eq(qemu_log(q)->data, "out\nerr\n");
	cr_assert_eq(qemu_rss_kb(q), -1);
	qemu_free(q);
}

/* Freed while it runs: killed and reaped, no zombie left, no callback. */
Test(qemu, freed_running_is_reaped)
{
	struct seen	 seen = { 0 };
	struct qemu	*q = spawn("exec sleep 100", &seen);
	pid_t		 pid = qemu_pid(q);

	cr_assert_gt(pid, 0);
	cr_assert_eq(kill(pid, 0), 0);
	qemu_free(q);
	cr_assert_eq(seen.exits, 0);
	/* Reaped: not even a zombie of ours is left. */
	cr_assert_eq(waitpid(pid, NULL, WNOHANG), -1);
	cr_assert_eq(errno, ECHILD);
}

Test(qemu, kill_before_exit)
{
	struct seen	 seen = { 0 };
	struct qemu	*q = spawn("exec sleep 100", &seen);

	qemu_kill(q, SIGTERM);
	while (!qemu_reaped(q))
		ev_run(ev_default_loop(0), 0);
	cr_assert(WIFSIGNALED(qemu_wstatus(q)));
	cr_assert_eq(WTERMSIG(qemu_wstatus(q)), SIGTERM);
	cr_assert_not(qemu_running(q));
	qemu_kill(q, SIGKILL);		/* reaped: nothing to do */
	qemu_free(q);
}
