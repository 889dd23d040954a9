/*
 * Choosing the accelerator. "KVM works" is measured, not assumed: on some
 * hosts /dev/kvm opens but cannot boot a Linux guest (a nested,
 * paravirtualised KVM: the guest hangs, -cpu host aborts). The verdict of
 * a probe boot is remembered per host kernel, QEMU and guest kernel.
 *
 * The probe runs before the event loop exists, so it may wait for its own
 * child with waitpid.
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/*
 * Boot the guest kernel under KVM with qsup.probe=1: the agent prints a
 * mark and powers off at once. A working KVM does that in well under a
 * second; a broken one hangs or makes QEMU abort.
 */
static int
kvm_probe(const char *qemu, const char *kernel, const char *initramfs,
    char **why)
{
	char		*argv[] = { (char *)(uintptr_t)qemu, "-M", "microvm",
	    "-accel", "kvm", "-cpu", "host", "-m", "128", "-smp", "1",
	    "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
	    "-sandbox", QSUP_QEMU_SANDBOX, "-serial", "stdio",
	    "-kernel", (char *)(uintptr_t)kernel,
	    "-initrd", (char *)(uintptr_t)initramfs, "-append",
	    "console=ttyS0 quiet panic=-1 pci=off qsup.probe=1", NULL };
	struct buf	 out = { 0 };
	char		*nl;
	int		 ok = 0, timed_out;

	if (util_run_capture(argv, 1, KVM_PROBE_SECONDS, QSUP_PROBE_MARK,
	    &out, &timed_out) == -1)
		xasprintf(why, "KVM probe: cannot run %s: %s", qemu,
		    strerror(errno));
	else if (out.data != NULL && strstr(out.data, QSUP_PROBE_MARK) != NULL) {
		*why = xstrdup("a probe guest booted under KVM");
		ok = 1;
	} else if (timed_out)
		xasprintf(why, "a probe guest did not boot under KVM within "
		    "%.0f s (a nested or broken KVM)", KVM_PROBE_SECONDS);
	else {
		while (out.len > 0 && out.data[out.len - 1] == '\n')
			out.data[--out.len] = '\0';
		nl = out.data != NULL ? strrchr(out.data, '\n') : NULL;
		xasprintf(why, "QEMU failed under KVM: %s", out.data == NULL ?
		    "no output" : nl != NULL ? nl + 1 : out.data);
	}
	buf_free(&out);
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
