/*
 * Where the guest comes from: the default guest built next to the binary,
 * or the kernel and initramfs a profile names.
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"

/*
 * The places the default guest is looked for, in order, each a directory
 * holding vmlinux and initramfs.cpio: $QSUP_GUEST_DIR alone when it is set;
 * else guest/ beside the binary (the build tree: build/qsup, build/guest),
 * lib/qsup under the binary's prefix (an install, wherever its tree was
 * moved: PREFIX/bin/qsup, PREFIX/lib/qsup), and the install's own prefix,
 * compiled in (QSUP_LIBDIR: a binary copied away from its tree, or one
 * installed through DESTDIR, which it never looks under). Returns how many.
 */
#define GUEST_NDIRS	3
static size_t
guest_default_dirs(char *dirs[GUEST_NDIRS])
{
	char		 exe[PATH_MAX];
	const char	*env;
	char		*slash;
	ssize_t		 len;
	size_t		 n = 0;

	if ((env = getenv("QSUP_GUEST_DIR")) != NULL && *env != '\0') {
		dirs[n++] = xstrdup(env);
		return (n);
	}
	if ((len = readlink("/proc/self/exe", exe, sizeof exe - 1)) != -1) {
		exe[len] = '\0';
		if ((slash = strrchr(exe, '/')) != NULL)
			*slash = '\0';
		xasprintf(&dirs[n++], "%s/guest", exe);
		if ((slash = strrchr(exe, '/')) != NULL) {
			*slash = '\0';
			xasprintf(&dirs[n++], "%s/lib/qsup", exe);
		}
	}
#ifdef QSUP_LIBDIR
	if (n == 0 || strcmp(dirs[n - 1], QSUP_LIBDIR) != 0)
		dirs[n++] = xstrdup(QSUP_LIBDIR);
#endif
	return (n);
}

static int
guest_is_file(const char *path)
{
	struct stat	st;

	return (stat(path, &st) == 0 && S_ISREG(st.st_mode));
}

/*
 * The first of the places that holds the default guest's files the
 * profile did not name itself (kernel, initramfs or both), or NULL and
 * *cause naming every place looked at.
 */
static char *
guest_default_dir(int kernel, int initramfs, char **cause)
{
	char		*dirs[GUEST_NDIRS], *path, *found = NULL;
	struct buf	 b = { 0 };
	size_t		 i, n;
	int		 ok;

	n = guest_default_dirs(dirs);
	for (i = 0; i < n; i++) {
		ok = 1;
		if (kernel) {
			xasprintf(&path, "%s/vmlinux", dirs[i]);
			ok = guest_is_file(path);
			free(path);
		}
		if (ok && initramfs) {
			xasprintf(&path, "%s/initramfs.cpio", dirs[i]);
			ok = guest_is_file(path);
			free(path);
		}
		if (ok && found == NULL) {
			found = dirs[i];
			continue;
		}
		buf_printf(&b, "%s%s", b.len == 0 ? "" : i + 1 == n ?
		    " nor " : ", ", dirs[i]);
		free(dirs[i]);
	}
	if (found == NULL)
		xasprintf(cause, "no default guest (%s%s%s) in %s%s", kernel ?
		    "vmlinux" : "", kernel && initramfs ? ", " : "",
		    initramfs ? "initramfs.cpio" : "", n == 0 ? "any place" :
		    b.data, getenv("QSUP_GUEST_DIR") != NULL &&
		    *getenv("QSUP_GUEST_DIR") != '\0' ? " (QSUP_GUEST_DIR)" :
		    ": run ./build.sh to build it, or ./build.sh install to "
		    "install it; QSUP_GUEST_DIR names another place");
	buf_free(&b);
	return (found);
}

static int
guest_check(const char *what, const char *path, char **cause)
{
	struct stat	st;

	if (stat(path, &st) == -1) {
		xasprintf(cause, "guest %s %s: %s", what, path,
		    strerror(errno));
		return (-1);
	}
	if (!S_ISREG(st.st_mode)) {
		xasprintf(cause, "guest %s %s: not a regular file", what,
		    path);
		return (-1);
	}
	return (0);
}

int
guest_resolve(const struct profile *p, struct guest *g, char **cause)
{
	char	*dir = NULL;

	memset(g, 0, sizeof *g);
	if ((p->kernel == NULL || p->initramfs == NULL) &&
	    (dir = guest_default_dir(p->kernel == NULL, p->initramfs == NULL,
	    cause)) == NULL)
		return (-1);
	if (p->kernel != NULL)
		g->kernel = xstrdup(p->kernel);
	else
		xasprintf(&g->kernel, "%s/vmlinux", dir);
	if (p->initramfs != NULL)
		g->initramfs = xstrdup(p->initramfs);
	else
		xasprintf(&g->initramfs, "%s/initramfs.cpio", dir);
	/* An image's own kernel boots: only the agent is qsup's. */
	if (p->boot == PROFILE_BOOT_IMAGE) {
		xasprintf(&g->agent, "%s/qsup-agent", dir);
		free(dir);
		if (guest_check("agent", g->agent, cause) == -1) {
			guest_free(g);
			return (-1);
		}
		return (0);
	}
	free(dir);
	if (guest_check("kernel", g->kernel, cause) == -1 ||
	    guest_check("initramfs", g->initramfs, cause) == -1) {
		guest_free(g);
		return (-1);
	}
	return (0);
}

void
guest_free(struct guest *g)
{
	free(g->kernel);
	g->kernel = NULL;
	free(g->initramfs);
	g->initramfs = NULL;
	free(g->agent);
	g->agent = NULL;
}

const char *
guest_qemu_binary(void)
{
	const char	*env;

	if ((env = getenv("QSUP_QEMU")) != NULL && *env != '\0')
		return (env);
	return ("qemu-system-x86_64");
}

/*
 * The host's TSC frequency in kHz. Under TCG on microvm the guest cannot
 * calibrate its TSC and may hang, so it is told (tsc_early_khz=).
 */
unsigned long
guest_tsc_khz(void)
{
	static unsigned long	 khz;
	FILE			*f;
	char			 line[256];
	double			 mhz;

	if (khz != 0)
		return (khz);
	if ((f = fopen("/proc/cpuinfo", "re")) != NULL) {
		while (fgets(line, sizeof line, f) != NULL) {
			if (sscanf(line, "cpu MHz : %lf", &mhz) == 1 &&
			    mhz > 0) {
				khz = (unsigned long)(mhz * 1000.0);
				break;
			}
		}
		fclose(f);
	}
	if (khz == 0)
		khz = 2000000;
	return (khz);
}
