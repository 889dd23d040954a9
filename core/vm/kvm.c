/*
 * Choosing the accelerator. "KVM works" is measured, not assumed: on some
 * hosts /dev/kvm opens but cannot boot a Linux guest (a nested,
 * paravirtualised KVM: the guest hangs, -cpu host aborts). The verdict of
 * a probe boot is remembered per host kernel, QEMU and guest kernel.
 *
 * The probe's QEMU comes from the same builder and spawner as a run's
 * (qemu.c), and is reaped the same way, through ev_child.
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"
#include "wire.h"

#define KVM_PROBE_SECONDS	5.0

const char *
accel_name(enum accel a)
{
	return (a == ACCEL_KVM ? "kvm" : "tcg");
}

static char *
kvm_cache_path(void)
{
	char	*dir, *path;

	if ((dir = util_cache_dir()) == NULL)
		return (NULL);
	xasprintf(&path, "%s/kvm-verdict", dir);
	free(dir);
	return (path);
}

/* What the verdict depends on: host kernel, QEMU binary, guest kernel. */
static char *
kvm_cache_key(const char *qemu, const char *kernel)
{
	struct utsname	 u;
	struct stat	 qs, ks;
	char		*key, *qpath;

	uname(&u);
	memset(&qs, 0, sizeof qs);
	qpath = util_which(qemu);
	if (stat(qpath, &qs) == -1)
		memset(&qs, 0, sizeof qs);
	memset(&ks, 0, sizeof ks);
	stat(kernel, &ks);
	xasprintf(&key, "host %s %s; qemu %s %lld %lld; kernel %lld %lld",
	    u.release, u.version, qpath,
	    (long long)qs.st_size, (long long)qs.st_mtime,
	    (long long)ks.st_size, (long long)ks.st_mtime);
	free(qpath);
	return (key);
}

static int
kvm_cache_read(const char *key, struct accel_choice *c)
{
	char	*path, *text, *nl, *verdict, *why;
	int	 rc = -1;

	if ((path = kvm_cache_path()) == NULL)
		return (-1);
	text = util_read_file(path, NULL, 65536);
	free(path);
	if (text == NULL)
		return (-1);
	/* Three lines: key, "kvm" or "tcg", reason. */
	if ((nl = strchr(text, '\n')) == NULL)
		goto out;
	*nl = '\0';
	if (strcmp(text, key) != 0)
		goto out;
	verdict = nl + 1;
	if ((nl = strchr(verdict, '\n')) == NULL)
		goto out;
	*nl = '\0';
	why = nl + 1;
	if ((nl = strchr(why, '\n')) != NULL)
		*nl = '\0';
	c->accel = strcmp(verdict, "kvm") == 0 ? ACCEL_KVM : ACCEL_TCG;
	xasprintf(&c->why, "%s (remembered)", why);
	c->remembered = 1;
	rc = 0;
out:
	free(text);
	return (rc);
}

static void
kvm_cache_write(const char *key, const struct accel_choice *c)
{
	char	*path, *tmp;
	FILE	*f;

	if ((path = kvm_cache_path()) == NULL)
		return;
	xasprintf(&tmp, "%s.%ld", path, (long)getpid());
	if ((f = fopen(tmp, "we")) != NULL) {
		fprintf(f, "%s\n%s\n%s\n", key, accel_name(c->accel), c->why);
		if (fclose(f) == 0 && rename(tmp, path) == 0)
			tmp[0] = '\0';
	}
	if (tmp[0] != '\0')
		unlink(tmp);
	free(tmp);
	free(path);
}

/*
 * The remembered verdict no longer holds (run.c: QEMU failed under KVM
 * after a "kvm" verdict): the next run measures again.
 */
void
kvm_forget(void)
{
	char	*path;

	if ((path = kvm_cache_path()) == NULL)
		return;
	if (unlink(path) == -1 && errno != ENOENT)
		log_warn("%s", path);
	free(path);
}

/* One probe boot, followed in its own short run of the loop. */
struct kvm_probe {
	struct ev_loop	*loop;
	struct qemu	*q;
	double		 deadline;
	int		 marked;	/* the agent said it booted */
	int		 timed_out;
};

static void
kvm_probe_log_cb(struct qemu *q, void *arg)
{
	struct kvm_probe	*kp = arg;

	struct buf		*log = qemu_log(q);

	if (!kp->marked && log->data != NULL &&
	    strstr(log->data, QSUP_PROBE_MARK) != NULL) {
		kp->marked = 1;
		qemu_kill(q, SIGKILL);
	}
}

static void
kvm_probe_exit_cb(struct qemu *q, void *arg)
{
	struct kvm_probe	*kp = arg;

	(void)q;
	ev_break(kp->loop, EVBREAK_ONE);
}

/* In short steps: util_stop_now (a signal) and the deadline end it. */
static void
kvm_probe_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct kvm_probe	*kp = w->data;

	(void)loop;
	(void)revents;
	if (kp->marked || qemu_reaped(kp->q))
		return;
	if (!util_stop_now && util_now() < kp->deadline)
		return;
	kp->timed_out = !util_stop_now;
	qemu_kill(kp->q, SIGKILL);
}

/* The probe's QEMU, from the builder every QEMU of qsup's comes from. */
static void
kvm_probe_argv(struct qemu_argv *a, const char *qemu, const char *kernel,
    const char *initramfs)
{
	qemu_argv_machine(a, qemu, ACCEL_KVM, 0, 128, 1, NULL);
	qemu_argv_kernel(a, kernel, initramfs,
	    "console=ttyS0 quiet panic=-1 pci=off qsup.probe=1");
	qemu_arg(a, "-serial");
	qemu_arg(a, "stdio");
}

/* Why QEMU failed under KVM: the last line it wrote. */
static void
kvm_probe_failed(struct buf *out, char **why)
{
	char	*nl;

	while (out->len > 0 && out->data[out->len - 1] == '\n')
		out->data[--out->len] = '\0';
	nl = out->data != NULL ? strrchr(out->data, '\n') : NULL;
	xasprintf(why, "QEMU failed under KVM: %s", out->data == NULL ?
	    "no output" : nl != NULL ? nl + 1 : out->data);
}

/*
 * Boot the guest kernel under KVM with qsup.probe=1: the agent prints a
 * mark and powers off at once. A working KVM does that in well under a
 * second; a broken one hangs or makes QEMU abort. The probe runs before
 * qsup's own loop does: it runs the default loop itself, until its QEMU
 * has been reaped through ev_child.
 */
static int
kvm_probe(const char *qemu, const char *kernel, const char *initramfs,
    char **why)
{
	struct ev_loop		*loop = ev_default_loop(0);
	struct kvm_probe	 kp;
	struct qemu_argv	 a = { 0 };
	struct qemu_confine	 c;
	ev_timer		 tick;
	char			*cause = NULL;
	int			 ok = 0;

	memset(&kp, 0, sizeof kp);
	memset(&c, 0, sizeof c);
	c.sm = PROFILE_SM_NONE;
	kp.loop = loop;
	kp.q = qemu_new(loop, kvm_probe_exit_cb, kvm_probe_log_cb, &kp);
	kvm_probe_argv(&a, qemu, kernel, initramfs);
	qemu_argv_log(a.argv);
	kp.deadline = util_now() + KVM_PROBE_SECONDS;
	if (qemu_spawn(kp.q, a.argv, &c, &cause) == -1) {
		xasprintf(why, "KVM probe: cannot run %s: %s", qemu, cause);
		free(cause);
		qemu_argv_free(&a);
		qemu_free(kp.q);
		return (0);
	}
	qemu_argv_free(&a);
	ev_timer_init(&tick, kvm_probe_tick_cb, 0.05, 0.05);
	tick.data = &kp;
	ev_timer_start(loop, &tick);
	while (!qemu_reaped(kp.q))
		ev_run(loop, 0);
	ev_timer_stop(loop, &tick);

	if (kp.marked) {
		*why = xstrdup("a probe guest booted under KVM");
		ok = 1;
	} else if (kp.timed_out)
		xasprintf(why, "a probe guest did not boot under KVM within "
		    "%.0f s (a nested or broken KVM)", KVM_PROBE_SECONDS);
	else
		kvm_probe_failed(qemu_log(kp.q), why);
	qemu_free(kp.q);
	return (ok);
}

int
kvm_choose(const struct profile *p, const char *qemu, const char *kernel,
    const char *initramfs, struct accel_choice *c, char **cause)
{
	char	*key, *why = NULL;
	int	 fd;

	memset(c, 0, sizeof *c);
	c->accel = ACCEL_TCG;
	if (p->use_kvm == PROFILE_KVM_OFF) {
		c->why = xstrdup("use_kvm is false in the profile");
		return (0);
	}
	if ((fd = open("/dev/kvm", O_RDWR|O_CLOEXEC)) == -1)
		xasprintf(&why, "/dev/kvm: %s", strerror(errno));
	else {
		close(fd);
		/* QSUP_KVM_FORCE_PROBE=1 measures even where we know. */
		if (access("/sys/module/kvm_pvm", F_OK) == 0 &&
		    getenv("QSUP_KVM_FORCE_PROBE") == NULL)
			why = xstrdup("this host's KVM is nested and "
			    "paravirtualised (kvm_pvm), which cannot boot an "
			    "ordinary guest kernel");
	}
	if (why == NULL) {
		key = kvm_cache_key(qemu, kernel);
		if (kvm_cache_read(key, c) == -1) {
			if (kvm_probe(qemu, kernel, initramfs, &why))
				c->accel = ACCEL_KVM;
			c->why = why;
			why = NULL;
			/* A probe cut short by a signal measured nothing. */
			if (util_stop_now) {
				free(key);
				*cause = xstrdup("interrupted");
				return (-1);
			}
			kvm_cache_write(key, c);
		}
		free(key);
		if (c->accel == ACCEL_KVM)
			return (0);
		why = c->why;
		c->why = NULL;
	}
	if (p->use_kvm == PROFILE_KVM_ON) {
		xasprintf(cause, "use_kvm is true but KVM is unusable: %s", why);
		free(why);
		return (-1);
	}
	xasprintf(&c->why, "KVM unusable: %s", why);
	free(why);
	return (0);
}

/*
 * The measured KVM verdict, as qsup run would find it with use_kvm =
 * "auto" and the default guest: kvm.c's checks, remembered verdict and,
 * the first time, its probe boot. Returns 1 if KVM works. The profile engine is
 * handed this (profile_set_kvm_fact) to answer qsup.kvm.
 */
int
kvm_verdict(char **why)
{
	struct profile		p;
	struct guest		g;
	struct accel_choice	c;
	char			*cause = NULL;
	int			 ok;

	memset(&p, 0, sizeof p);
	p.use_kvm = PROFILE_KVM_AUTO;
	if (guest_resolve(&p, &g, &cause) == -1) {
		xasprintf(why, "not measured: %s", cause);
		free(cause);
		return (0);
	}
	if (kvm_choose(&p, guest_qemu_binary(), g.kernel, g.initramfs, &c,
	    &cause) == -1) {
		*why = cause;
		guest_free(&g);
		return (0);
	}
	guest_free(&g);
	ok = c.accel == ACCEL_KVM;
	*why = c.why;
	return (ok);
}
