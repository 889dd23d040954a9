/*
 * Where an image build unpacks its tree and lays out its raw disk: a
 * tmpfs when one has room, else the work directory beside OUT. Both are
 * written once and read once before the qcow2 is made; on the disk, their
 * writeback (twice the image's bytes) competed with the qcow2's fsync,
 * the one write that has to reach it. Measured on a 150 MB layer: see
 * the README's Speed section.
 *
 * A tmpfs's pages are RAM: it is used only if the build's bytes fit in
 * half its free room and in half the memory available, and a scratch
 * directory left by a build that was killed is removed by the next build
 * that finds it: its name holds its pid, which must be gone, and its
 * builder holds a lock on it (a build of another pid namespace sharing
 * the tmpfs has a pid this one cannot see).
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_int.h"

#define IMAGE_SCRATCH_PREFIX	"qsup-build."
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC		0x01021994
#endif

/* /proc/meminfo's MemAvailable, in bytes; 0 if unknown. */
static uint64_t
image_scratch_mem(void)
{
	FILE			*f;
	char			 line[128];
	unsigned long long	 kib = 0;

	if ((f = fopen("/proc/meminfo", "r")) == NULL)
		return (0);
	while (fgets(line, sizeof line, f) != NULL) {
		if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1)
			break;
	}
	fclose(f);
	return ((uint64_t)kib * 1024);
}

/* Scratch directories of builds no longer running, in dir: removed. */
static void
image_scratch_sweep(const char *dir)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 st;
	char		*path, *end;
	long		 pid;
	int		 fd;

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, IMAGE_SCRATCH_PREFIX,
		    strlen(IMAGE_SCRATCH_PREFIX)) != 0)
			continue;
		errno = 0;
		pid = strtol(de->d_name + strlen(IMAGE_SCRATCH_PREFIX), &end,
		    10);
		if (errno != 0 || *end != '.' || pid <= 0 || pid > INT_MAX ||
		    pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		xasprintf(&path, "%s/%s", dir, de->d_name);
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == geteuid() && (fd = open(path, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
				log_debug("%s: left by build %ld, removed",
				    path, pid);
				image_scratch_clean(path);
			}
			close(fd);
		}
		free(path);
	}
	closedir(d);
}

/* A tmpfs directory with room for bytes, locked by *lock; or NULL. */
static char *
image_scratch_tmpfs(const char *dir, uint64_t bytes, int *lock)
{
	struct statfs	 sf;
	struct statvfs	 sv;
	uint64_t	 mem;
	char		*path;

	if (dir == NULL || *dir != '/' || statfs(dir, &sf) == -1 ||
	    sf.f_type != TMPFS_MAGIC || access(dir, W_OK | X_OK) == -1)
		return (NULL);
	image_scratch_sweep(dir);
	mem = image_scratch_mem();
	if (statvfs(dir, &sv) == -1 ||
	    bytes > (uint64_t)sv.f_bavail * sv.f_frsize / 2 ||
	    mem == 0 || bytes > mem / 2)
		return (NULL);
	xasprintf(&path, "%s/" IMAGE_SCRATCH_PREFIX "%ld.XXXXXX", dir,
	    (long)getpid());
	if (mkdtemp(path) == NULL) {
		free(path);
		return (NULL);
	}
	if ((*lock = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    flock(*lock, LOCK_EX | LOCK_NB) == -1) {
		if (*lock != -1)
			close(*lock);
		*lock = -1;
		(void)rmdir(path);
		free(path);
		return (NULL);
	}
	return (path);
}

/*
 * A scratch directory for a build whose tree and disk hold about bytes:
 * in $XDG_RUNTIME_DIR or /dev/shm if either is a tmpfs with room, else
 * NULL (the work directory serves). QSUP_IMAGE_SCRATCH=disk keeps it
 * beside OUT (to compare, and for the tests). *lock: held until the
 * directory is removed.
 */
char *
image_scratch_make(uint64_t bytes, int *lock)
{
	const char	*env = getenv("QSUP_IMAGE_SCRATCH");
	char		*path;

	*lock = -1;
	if (env != NULL && strcmp(env, "disk") == 0)
		return (NULL);
	*lock = -1;
	if ((path = image_scratch_tmpfs(getenv("XDG_RUNTIME_DIR"), bytes,
	    lock)) == NULL)
		path = image_scratch_tmpfs("/dev/shm", bytes, lock);
	return (path);
}

static int
image_scratch_chmod_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)ftw;
	if (flag == FTW_D || flag == FTW_DNR)
		(void)chmod(path, (st->st_mode & 07777) | S_IRWXU);
	return (0);
}

/* A build's directory, gone: its directories made reachable first. */
void
image_scratch_clean(const char *dir)
{
	(void)nftw(dir, image_scratch_chmod_cb, 32, FTW_PHYS);
	if (util_rm_rf(dir) == -1)
		log_warn("%s: not all removed", dir);
}
