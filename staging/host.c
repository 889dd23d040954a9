/*
 * Host facts that decide staging: the Debian multiarch triplet, whether
 * qsup runs inside a container, and the glibc version of a libc.so.6.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "staging.h"

/* The triplet Debian's gcc -print-multiarch gives for this build. */
#if defined(__x86_64__) && defined(__ILP32__)
#define STAGING_TRIPLET	"x86_64-linux-gnux32"
#elif defined(__x86_64__)
#define STAGING_TRIPLET	"x86_64-linux-gnu"
#elif defined(__i386__)
#define STAGING_TRIPLET	"i386-linux-gnu"
#elif defined(__aarch64__) && !defined(__AARCH64EB__)
#define STAGING_TRIPLET	"aarch64-linux-gnu"
#elif defined(__arm__) && defined(__ARM_PCS_VFP)
#define STAGING_TRIPLET	"arm-linux-gnueabihf"
#elif defined(__arm__)
#define STAGING_TRIPLET	"arm-linux-gnueabi"
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define STAGING_TRIPLET	"powerpc64le-linux-gnu"
#elif defined(__s390x__)
#define STAGING_TRIPLET	"s390x-linux-gnu"
#elif defined(__riscv) && __riscv_xlen == 64
#define STAGING_TRIPLET	"riscv64-linux-gnu"
#elif defined(__loongarch64)
#define STAGING_TRIPLET	"loongarch64-linux-gnu"
#elif defined(__mips64) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define STAGING_TRIPLET	"mips64el-linux-gnuabi64"
#endif

/* The multiarch directory name under /lib and /usr/lib. */
const char *
staging_host_triplet(void)
{
#ifdef STAGING_TRIPLET
	return (STAGING_TRIPLET);
#else
	static char	triplet[sizeof ((struct utsname *)0)->machine + 16];
	struct utsname	u;

	if (triplet[0] == '\0') {
		if (uname(&u) == -1)
			strcpy(u.machine, "unknown");
		snprintf(triplet, sizeof triplet, "%s-linux-gnu", u.machine);
	}
	return (triplet);
#endif
}

/*
 * The seed's three signs of a container: Docker's /.dockerenv, Podman's
 * /.containerenv, and "container" in the environment (systemd-nspawn,
 * LXC and Podman set it). root is "" for the real root; the tests give
 * another.
 */
int
staging_container_signs(const char *root)
{
	char	*path;
	int	 yes;

	if (getenv("container") != NULL)
		return (1);
	xasprintf(&path, "%s/.dockerenv", root);
	yes = access(path, F_OK) == 0;
	free(path);
	if (yes)
		return (1);
	xasprintf(&path, "%s/.containerenv", root);
	yes = access(path, F_OK) == 0;
	free(path);
	return (yes);
}

/*
 * $QSUP_IN_CONTAINER, 0 or 1, overrides the signs: for a host whose signs
 * mislead (a stale /.dockerenv), and for tests of both answers anywhere.
 */
int
staging_in_container(void)
{
	const char	*force = getenv("QSUP_IN_CONTAINER");

	if (force != NULL && strcmp(force, "0") == 0)
		return (0);
	if (force != NULL && strcmp(force, "1") == 0)
		return (1);
	return (staging_container_signs(""));
}

/*
 * glibc's version from a libc.so.6, read, never run: its release banner,
 * else the highest GLIBC_x.y version it defines (which can be lower than
 * the release when a release adds no symbol).
 */
int
staging_glibc_version(const char *path, int *major, int *minor)
{
	struct staging_elf	 e;
	struct stat		 sb;
	void			*map = MAP_FAILED;
	char			*why = NULL;
	int			 fd, rc = -1, saved;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC|O_NONBLOCK)) == -1)
		return (-1);
	if (fstat(fd, &sb) == -1)
		goto out;
	if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
		errno = EINVAL;
		goto out;
	}
	map = mmap(NULL, sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED)
		goto out;
	if (staging_glibc_banner(map, sb.st_size, major, minor) == 0) {
		rc = 0;
		goto out;
	}
	if (staging_elf_parse(map, sb.st_size, &e, &why) == 0) {
		if (e.verdef_major != 0) {
			*major = e.verdef_major;
			*minor = e.verdef_minor;
			rc = 0;
		}
		staging_elf_free(&e);
	}
	if (rc == -1)
		errno = EINVAL;
out:
	saved = errno;
	free(why);
	if (map != MAP_FAILED)
		munmap(map, sb.st_size);
	close(fd);
	errno = saved;
	return (rc);
}
