/*
 * The registry of disks in use, shared by every qsup of this user: in
 * the run directory (sandbox_run_path()/disks), one record per sandbox of
 * a "qsup serve" holding a disk, named DEV-INO.PID.SERIAL after the
 * file's device and inode (a disk reached by two names is one disk), and
 * holding "w" or "r", the sandbox's name, and the path. Records are read
 * and made under an flock(2) of disks/lock, so two servers cannot both
 * take a disk. A record whose process is gone (a server killed) is stale:
 * it is dropped when met. core/serve/serve_disk.c makes the records; a
 * "qsup run" reads them too, so it does not boot on a disk a server's
 * sandbox writes.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"

#define DISK_REG_RECORD_MAX	(PATH_MAX + 128)

/*
 * The registry, locked; made if need be with create, else 1 when there
 * is none (no server ever held a disk here). -1 with *cause.
 */
int
disk_reg_open(struct disk_reg *r, int create, char **cause)
{
	char	*base, *lock;

	memset(r, 0, sizeof *r);
	r->lock_fd = -1;
	if (!create) {
		base = sandbox_run_path();
		xasprintf(&lock, "%s/disks/lock", base);
		free(base);
		if (access(lock, F_OK) == -1) {
			free(lock);
			return (1);
		}
		free(lock);
	}
	if ((base = sandbox_run_base(cause)) == NULL)
		return (-1);
	xasprintf(&r->dir, "%s/disks", base);
	free(base);
	if (mkdir(r->dir, 0700) == -1 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", r->dir, strerror(errno));
		goto fail;
	}
	xasprintf(&lock, "%s/lock", r->dir);
	if ((r->lock_fd = open(lock, O_RDWR|O_CREAT|O_CLOEXEC, 0600)) == -1 ||
	    flock(r->lock_fd, LOCK_EX) == -1) {
		xasprintf(cause, "%s: %s", lock, strerror(errno));
		free(lock);
		goto fail;
	}
	free(lock);
	return (0);
fail:
	disk_reg_close(r);
	return (-1);
}

/* Unlocked (the flock goes with the descriptor). */
void
disk_reg_close(struct disk_reg *r)
{
	if (r->lock_fd != -1)
		close(r->lock_fd);
	r->lock_fd = -1;
	free(r->dir);
	r->dir = NULL;
}

/* A record's name prefix for the file st: "DEV-INO." */
static char *
disk_reg_prefix(const struct stat *st)
{
	char	*p;

	xasprintf(&p, "%llx-%llx.", (unsigned long long)st->st_dev,
	    (unsigned long long)st->st_ino);
	return (p);
}

/*
 * One record: 0 if it is of this disk (prefix) and its process lives,
 * with its mode and holder's name; 1 if it was stale (and is gone now)
 * or another disk's; -1 if unreadable (ignored).
 */
static int
disk_reg_record(const char *dir, const char *file, const char *prefix,
    char *mode, char **name)
{
	char	*path, *text, *nl;
	long	 pid;

	*name = NULL;
	if (strncmp(file, prefix, strlen(prefix)) != 0)
		return (1);
	pid = strtol(file + strlen(prefix), NULL, 10);
	xasprintf(&path, "%s/%s", dir, file);
	if (pid <= 0 || (kill((pid_t)pid, 0) == -1 && errno == ESRCH)) {
		log_info("disk registry: dropping %s (process %ld is gone)",
		    file, pid);
		unlink(path);
		free(path);
		return (1);
	}
	text = util_read_file(path, NULL, DISK_REG_RECORD_MAX);
	free(path);
	if (text == NULL || (text[0] != 'w' && text[0] != 'r') ||
	    text[1] != ' ') {
		free(text);
		return (-1);
	}
	*mode = text[0];
	if ((nl = strchr(text + 2, '\n')) != NULL)
		*nl = '\0';
	*name = xstrdup(text + 2);
	free(text);
	return (0);
}

/*
 * Would a use of the file st (writable or not) clash with a record? 1
 * with *holder (the sandbox's name) and *mode ('w' or 'r'), else 0.
 */
int
disk_reg_find(struct disk_reg *r, const struct stat *st, int writable,
    char *mode, char **holder)
{
	struct dirent	*de;
	DIR		*d;
	char		*prefix;
	int		 found = 0;

	*holder = NULL;
	if ((d = opendir(r->dir)) == NULL)
		return (0);
	prefix = disk_reg_prefix(st);
	while (!found && (de = readdir(d)) != NULL) {
		if (disk_reg_record(r->dir, de->d_name, prefix, mode,
		    holder) != 0)
			continue;
		if (writable || *mode == 'w')
			found = 1;
		else {
			free(*holder);
			*holder = NULL;
		}
	}
	closedir(d);
	free(prefix);
	return (found);
}

/*
 * A record for sandbox name (its serial unique in this process) holding
 * path (st) writable or not: its path, or NULL with *cause.
 */
char *
disk_reg_add(struct disk_reg *r, const struct stat *st, const char *path,
    int writable, const char *name, unsigned long long serial, char **cause)
{
	char	*prefix, *rec, *text;
	int	 rc;

	prefix = disk_reg_prefix(st);
	xasprintf(&rec, "%s/%s%ld.%llu", r->dir, prefix, (long)getpid(),
	    serial);
	free(prefix);
	xasprintf(&text, "%c %s\n%s\n", writable ? 'w' : 'r', name, path);
	rc = util_write_file(rec, text);
	free(text);
	if (rc == -1) {
		xasprintf(cause, "%s: %s", rec, strerror(errno));
		free(rec);
		return (NULL);
	}
	return (rec);
}

/*
 * For a "qsup run" on the base path: refused (-1 with *cause) when a
 * server's sandbox holds it writable.
 */
int
disk_reg_check_base(const char *path, char **cause)
{
	struct disk_reg	 r;
	struct stat	 st;
	char		*holder = NULL, *why = NULL, mode;
	int		 rc = 0;

	if (stat(path, &st) == -1)
		return (0);	/* disk_probe says what is wrong */
	if ((rc = disk_reg_open(&r, 0, &why)) != 0) {
		if (rc == -1)
			log_debug("disk registry: %s", why);
		free(why);
		return (0);
	}
	if (disk_reg_find(&r, &st, 0, &mode, &holder)) {
		xasprintf(cause, "disk %s is in use by sandbox %s (written "
		    "by it)", path, holder);
		rc = -1;
	}
	free(holder);
	disk_reg_close(&r);
	return (rc);
}
