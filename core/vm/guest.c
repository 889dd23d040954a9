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

/* The default guest lives in guest/ beside the qsup binary (build/). */
static char *
guest_default_dir(void)
{
	char		 exe[PATH_MAX];
	const char	*env;
	char		*slash, *dir;
	ssize_t		 n;

	if ((env = getenv("QSUP_GUEST_DIR")) != NULL && *env != '\0')
		return (xstrdup(env));
	if ((n = readlink("/proc/self/exe", exe, sizeof exe - 1)) == -1)
		return (xstrdup("/usr/local/share/qsup/guest"));
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) != NULL)
		*slash = '\0';
	xasprintf(&dir, "%s/guest", exe);
	return (dir);
}

static int
guest_check(const char *what, const char *path, char **cause)
{
	struct stat	st;

	if (stat(path, &st) == -1) {
		xasprintf(cause, "guest %s %s: %s%s", what, path,
		    strerror(errno), errno == ENOENT ?
		    " (run ./build.sh to build the default guest)" : "");
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
	char	*dir;

	memset(g, 0, sizeof *g);
	dir = guest_default_dir();
	if (p->kernel != NULL)
		g->kernel = xstrdup(p->kernel);
	else
		xasprintf(&g->kernel, "%s/vmlinux", dir);
	if (p->initramfs != NULL)
		g->initramfs = xstrdup(p->initramfs);
	else
		xasprintf(&g->initramfs, "%s/initramfs.cpio", dir);
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
