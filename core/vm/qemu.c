/*
 * QEMU itself: the one command-line builder every QEMU qsup starts goes
 * through (runs and the KVM probe alike), and its process: spawned with
 * the same confinement each time, its messages kept, and reaped only
 * through the loop's ev_child, never by a blocking waitpid.
 */
#include <sys/prctl.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"

#define QEMU_LOG_MAX	16384	/* of QEMU's own messages, kept */

struct qemu {
	struct ev_loop	*loop;
	pid_t		 pid;		/* -1: never started */
	ev_child	 child;
	int		 reaped;
	int		 wstatus;
	int		 log_fd;
	ev_io		 log;
	struct buf	 log_buf;	/* the last of what QEMU wrote */
	qemu_cb		 exit_cb;	/* reaped */
	qemu_cb		 log_cb;	/* it wrote */
	void		*arg;
};

/* Append one argument, formatted. */
void
qemu_arg(struct qemu_argv *a, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	a->argv = xreallocarray(a->argv, a->n + 2, sizeof *a->argv);
	a->argv[a->n++] = s;
	a->argv[a->n] = NULL;
}

/* QEMU doubles commas inside option values; the caller frees. */
char *
qemu_escape(const char *s)
{
	struct buf	b = { 0 };

	buf_add(&b, "", 0);
	for (; *s != '\0'; s++) {
		if (*s == ',')
			buf_add(&b, ",", 1);
		buf_add(&b, s, 1);
	}
	return (b.data);
}

/*
 * The machine every QEMU of qsup's is: a microVM (or, with pc, a PC for
 * an image that boots itself) under the accelerator, with this much
 * memory and these CPUs, optionally named, with nothing QEMU would add
 * by itself, and always under QEMU's own seccomp filter.
 */
void
qemu_argv_machine(struct qemu_argv *a, const char *binary, enum accel accel,
    int pc, unsigned long long mib, int cpus, const char *name)
{
	qemu_arg(a, "%s", binary);
	qemu_arg(a, "-M");
	/*
	 * No PIT under TCG: the guest never uses it (microvm's ACPI is
	 * hardware-reduced, so Linux sets up no legacy timer), yet QEMU's
	 * runs at 18.2 Hz from reset, ~40 wakeups a second of an idle QEMU.
	 * Under KVM it would be the kernel's PIT, not measured here. A PC's
	 * BIOS and boot loader need theirs.
	 */
	if (pc)
		qemu_arg(a, "q35");
	else
		qemu_arg(a, "%s", accel == ACCEL_KVM ? "microvm,pcie=on" :
		    "microvm,pcie=on,pit=off");
	qemu_arg(a, "-accel");
	if (accel == ACCEL_KVM) {
		qemu_arg(a, "kvm");
		qemu_arg(a, "-cpu");
		qemu_arg(a, "host");
	} else {
		qemu_arg(a, "tcg,tb-size=64");
		/*
		 * ARAT (the APIC timer runs in every sleep state), true of
		 * QEMU's emulated APIC: without it Linux needs a broadcast
		 * timer to stop the tick, microvm has none, and an idle guest
		 * takes 250 timer interrupts a second, each costly under TCG.
		 */
		qemu_arg(a, "-cpu");
		qemu_arg(a, "qemu64,+arat");
	}
	qemu_arg(a, "-m");
	qemu_arg(a, "%llu", mib);
	qemu_arg(a, "-smp");
	qemu_arg(a, "%d", cpus);
	if (name != NULL) {
		qemu_arg(a, "-name");
		qemu_arg(a, "%s", name);
	}
	qemu_arg(a, "-nodefaults");
	qemu_arg(a, "-no-user-config");
	qemu_arg(a, "-display");
	qemu_arg(a, "none");
	qemu_arg(a, "-no-reboot");
	qemu_arg(a, "-sandbox");
	qemu_arg(a, "%s", QSUP_QEMU_SANDBOX);
}

/* The guest kernel, its initramfs and its command line. */
void
qemu_argv_kernel(struct qemu_argv *a, const char *kernel,
    const char *initramfs, const char *append)
{
	char	*s;

	s = qemu_escape(kernel);
	qemu_arg(a, "-kernel");
	qemu_arg(a, "%s", s);
	free(s);
	s = qemu_escape(initramfs);
	qemu_arg(a, "-initrd");
	qemu_arg(a, "%s", s);
	free(s);
	qemu_arg(a, "-append");
	qemu_arg(a, "%s", append);
}

void
qemu_argv_free(struct qemu_argv *a)
{
	size_t	i;

	for (i = 0; i < a->n; i++)
		free(a->argv[i]);
	free(a->argv);
	a->argv = NULL;
	a->n = 0;
}

/* The command line under -v, quoted where a shell would need it. */
void
qemu_argv_log(char *const *argv)
{
	struct buf	b = { 0 };
	char *const	*a;

	for (a = argv; *a != NULL; a++) {
		if (b.len > 0)
			buf_add(&b, " ", 1);
		if (strpbrk(*a, " \t'\"$\\") != NULL) {
			buf_add(&b, "'", 1);
			buf_add(&b, *a, strlen(*a));
			buf_add(&b, "'", 1);
		} else
			buf_add(&b, *a, strlen(*a));
	}
	log_debug("qemu: %s", b.data);
	buf_free(&b);
}

/* A QEMU process to be, told of its exit and of what it writes. */
struct qemu *
qemu_new(struct ev_loop *loop, qemu_cb exit_cb, qemu_cb log_cb, void *arg)
{
	struct qemu	*q;

	q = xcalloc(1, sizeof *q);
	q->loop = loop;
	q->pid = -1;
	q->log_fd = -1;
	q->exit_cb = exit_cb;
	q->log_cb = log_cb;
	q->arg = arg;
	return (q);
}

/* Stop reading QEMU's messages. */
static void
qemu_log_close(struct qemu *q)
{
	if (q->log_fd == -1)
		return;
	ev_io_stop(q->loop, &q->log);
	close(q->log_fd);
	q->log_fd = -1;
}

/* QEMU said something: keep its last QEMU_LOG_MAX bytes. */
static void
qemu_log_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qemu	*q = w->data;
	char		 chunk[4096];
	ssize_t		 n;

	(void)loop;
	(void)revents;
	for (;;) {
		n = read(q->log_fd, chunk, sizeof chunk);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n <= 0) {
			qemu_log_close(q);
			break;
		}
		buf_add(&q->log_buf, chunk, n);
		if (q->log_buf.len > QEMU_LOG_MAX)
			buf_consume(&q->log_buf, q->log_buf.len - QEMU_LOG_MAX);
	}
	if (q->log_cb != NULL)
		q->log_cb(q, q->arg);
}

/* Reaped: read what QEMU said last, then tell the owner. */
static void
qemu_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct qemu	*q = w->data;

	(void)revents;
	ev_child_stop(loop, w);
	q->reaped = 1;
	q->wstatus = w->rstatus;
	if (q->log_fd != -1)
		qemu_log_cb(loop, &q->log, EV_READ);
	qemu_log_close(q);
	if (q->exit_cb != NULL)
		q->exit_cb(q, q->arg);
}

/*
 * In the child, before exec: default signals, a process group of its own
 * (the terminal's signals are qsup's to pass on), death with qsup, stdin
 * from /dev/null, stdout and stderr to the log pipe, the descriptors it
 * is given kept open, and the 9p confinement of the shares.
 */
static void
qemu_child(char *const *argv, const struct qemu_confine *c,
    const sigset_t *mask, int log_fd)
{
	const char	*what;
	size_t		 i;
	int		 devnull, sig;

	for (sig = 1; sig < NSIG; sig++)
		signal(sig, SIG_DFL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (c->no_thp)
		(void)prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	if ((devnull = open("/dev/null", O_RDONLY)) == -1 ||
	    dup2(devnull, STDIN_FILENO) == -1 ||
	    dup2(log_fd, STDOUT_FILENO) == -1 ||
	    dup2(log_fd, STDERR_FILENO) == -1)
		_exit(127);
	for (i = 0; i < c->nfds; i++) {
		if (c->fds[i] != -1)
			util_set_cloexec(c->fds[i], 0);
	}
	/* What the guest may do to the host's files through 9p. */
	if (share_confine(c->shares, c->nshares, c->sm, &what) == -1) {
		dprintf(STDERR_FILENO, "qsup: cannot confine QEMU (%s): %s\n",
		    what, strerror(errno));
		_exit(127);
	}
	execvp(argv[0], argv);
	dprintf(STDERR_FILENO, "%s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

/*
 * Start QEMU. Its exit is heard through ev_child (q->exit_cb); what it
 * writes is kept in q->log_buf (q->log_cb, after each read).
 */
int
qemu_spawn(struct qemu *q, char *const *argv, const struct qemu_confine *c,
    char **cause)
{
	sigset_t	all, old;
	int		logp[2];

	if (pipe2(logp, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return (-1);
	}
	buf_consume(&q->log_buf, q->log_buf.len);
	/* The watcher exists before the child can be reaped. */
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	q->pid = fork();
	if (q->pid == 0)
		qemu_child(argv, c, &old, logp[1]);
	if (q->pid == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		xasprintf(cause, "fork: %s", strerror(errno));
		close(logp[0]);
		close(logp[1]);
		return (-1);
	}
	q->reaped = 0;
	ev_child_init(&q->child, qemu_child_cb, q->pid, 0);
	q->child.data = q;
	ev_child_start(q->loop, &q->child);
	sigprocmask(SIG_SETMASK, &old, NULL);

	close(logp[1]);
	q->log_fd = logp[0];
	util_set_nonblock(q->log_fd);
	ev_io_init(&q->log, qemu_log_cb, q->log_fd, EV_READ);
	q->log.data = q;
	ev_io_start(q->loop, &q->log);
	return (0);
}

/*
 * src's running QEMU becomes dst's (which never ran): its pid, its
 * reaping and its messages now tell dst's owner; src is left empty. The
 * watchers move without a turn of the loop, so no exit is missed.
 */
void
qemu_take(struct qemu *dst, struct qemu *src)
{
	if (src->pid > 0 && !src->reaped)
		ev_child_stop(src->loop, &src->child);
	if (src->log_fd != -1)
		ev_io_stop(src->loop, &src->log);
	dst->pid = src->pid;
	dst->reaped = src->reaped;
	dst->wstatus = src->wstatus;
	dst->log_fd = src->log_fd;
	buf_consume(&dst->log_buf, dst->log_buf.len);
	if (src->log_buf.len > 0)
		buf_add(&dst->log_buf, src->log_buf.data,
		    src->log_buf.len);
	if (dst->pid > 0 && !dst->reaped) {
		ev_child_init(&dst->child, qemu_child_cb, dst->pid, 0);
		dst->child.data = dst;
		ev_child_start(dst->loop, &dst->child);
	}
	if (dst->log_fd != -1) {
		ev_io_init(&dst->log, qemu_log_cb, dst->log_fd, EV_READ);
		dst->log.data = dst;
		ev_io_start(dst->loop, &dst->log);
	}
	src->pid = -1;
	src->reaped = 0;
	src->log_fd = -1;
}

/* Is a QEMU running (not yet reaped)? */
int
qemu_running(const struct qemu *q)
{
	return (q->pid > 0 && !q->reaped);
}

void
qemu_kill(struct qemu *q, int sig)
{
	if (qemu_running(q))
		kill(q->pid, sig);
}

/*
 * Kill QEMU and run the loop until ev_child has reaped it: no QEMU
 * outlives its owner, and no zombie is left for init. The owner is told
 * nothing more. SIGKILL makes this a matter of milliseconds.
 */
void
qemu_wait(struct qemu *q)
{
	q->exit_cb = NULL;
	q->log_cb = NULL;
	if (qemu_running(q)) {
		kill(q->pid, SIGKILL);
		while (!q->reaped)
			ev_run(q->loop, EVRUN_ONCE);
	}
}

/* Reaped, or never run? */
int
qemu_reaped(const struct qemu *q)
{
	return (q->pid <= 0 || q->reaped);
}

/* Its process id, or -1 if it never ran. */
pid_t
qemu_pid(const struct qemu *q)
{
	return (q->pid);
}

/* How it ended (a waitpid status), once reaped. */
int
qemu_wstatus(const struct qemu *q)
{
	return (q->wstatus);
}

/* The last of what it wrote. */
struct buf *
qemu_log(struct qemu *q)
{
	return (&q->log_buf);
}

/* Free it, killed and reaped first if it still runs (qemu_wait). */
void
qemu_free(struct qemu *q)
{
	if (q == NULL)
		return;
	qemu_wait(q);
	qemu_log_close(q);
	buf_free(&q->log_buf);
	free(q);
}

/* QEMU's resident memory now, or -1. */
long
qemu_rss_kb(const struct qemu *q)
{
	char	 path[64], *text, *p;
	long	 kb = -1;

	if (!qemu_running(q))
		return (-1);
	snprintf(path, sizeof path, "/proc/%ld/status", (long)q->pid);
	if ((text = util_read_file(path, NULL, 65536)) == NULL)
		return (-1);
	if ((p = strstr(text, "\nVmRSS:")) != NULL)
		kb = strtol(p + 7, NULL, 10);
	free(text);
	return (kb);
}
