/*
 * VM state templates for warm starts. A template is the saved state of a
 * guest booted to the agent's template state (no seed, no token, no share
 * mounted), keyed by everything that makes QEMU's state loadable: the QEMU
 * command line (file descriptor numbers aside) and the identity of the
 * QEMU binary, kernel and initramfs. In the cache directory:
 *	templates/KEY.state	QEMU's migration stream
 *	templates/KEY.shape	what the key was made of, for people
 *	templates/KEY.meta	the state file's size and mtime when written:
 *				a state changed since is not used
 *	templates/KEY.lock	held by the one process building KEY
 * The state file is renamed into place last, so a template exists only
 * once it is whole. Until then it is KEY.state.PID (and the others
 * KEY.meta.PID, KEY.shape.PID), PID its writer's: a qsup killed outright
 * leaves them, and template_sweep removes those whose writer is gone.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mbedtls/sha256.h>

#include "template_int.h"
#include "wire.h"

#define TEMPLATE_VERSION	1

/* The templates directory of the cache, made if need be; NULL: none. */
char *
template_dir(void)
{
	char	*cache, *dir;

	if ((cache = util_cache_dir()) == NULL)
		return (NULL);
	xasprintf(&dir, "%s/templates", cache);
	free(cache);
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		free(dir);
		return (NULL);
	}
	return (dir);
}

void
template_file_id(struct buf *b, const char *what, const char *path)
{
	struct stat	st;

	if (stat(path, &st) == -1)
		buf_printf(b, "%s %s missing\n", what, path);
	else
		buf_printf(b, "%s %s %lld %lld.%09ld\n", what, path,
		    (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		    st.st_mtim.tv_nsec);
}

/*
 * "fd=12" says nothing about the VM's state: it is written "fd=*" (and
 * -netdev stream's "addr.str=12", "addr.str=*").
 */
static void
template_arg(struct buf *b, const char *arg)
{
	const char	*p;

	for (p = arg; *p != '\0'; p++) {
		if (strncmp(p, "fd=", 3) == 0 && isdigit((unsigned char)p[3])) {
			buf_add(b, "fd=*", 4);
			p += 3;
			while (isdigit((unsigned char)p[1]))
				p++;
		} else if (strncmp(p, "addr.str=", 9) == 0 &&
		    isdigit((unsigned char)p[9])) {
			/* -netdev stream's descriptor. */
			buf_add(b, "addr.str=*", 10);
			p += 9;
			while (isdigit((unsigned char)p[1]))
				p++;
		} else
			buf_add(b, p, 1);
	}
	buf_add(b, "\n", 1);
}

/*
 * Is name a half-written file, KEY.{state,meta,shape}.PID? Then *pid is
 * its writer's and the return the length of its KEY.
 */
size_t
template_partial(const char *name, long *pid)
{
	static const char *const kinds[] = { ".state.", ".meta.", ".shape." };
	const char	*dot, *p;
	size_t		 i, n, end;

	if ((dot = strrchr(name, '.')) == NULL || dot[1] == '\0')
		return (0);
	for (p = dot + 1; *p != '\0'; p++) {
		if (!isdigit((unsigned char)*p))
			return (0);
	}
	end = dot + 1 - name;		/* KEY.kind. */
	for (i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		n = strlen(kinds[i]);
		if (end > n && strncmp(name + end - n, kinds[i], n) == 0) {
			*pid = strtol(dot + 1, NULL, 10);
			return (*pid > 0 ? end - n : 0);
		}
	}
	return (0);
}

/* Is the process that writes a half-written file still there? */
int
template_writer_alive(long pid)
{
	return (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

/*
 * Remove the half-written files of templates/ whose writer is gone (a
 * qsup killed outright while it saved one); never one whose writer is
 * alive. Returns how many went.
 */
int
template_sweep(const char *dir)
{
	struct dirent	*de;
	DIR		*d;
	char		*path;
	long		 pid;
	int		 n = 0;

	if ((d = opendir(dir)) == NULL)
		return (0);
	while ((de = readdir(d)) != NULL) {
		if (template_partial(de->d_name, &pid) == 0 ||
		    template_writer_alive(pid))
			continue;
		xasprintf(&path, "%s/%s", dir, de->d_name);
		if (unlink(path) == 0) {
			log_debug("removed %s, left by process %ld", path, pid);
			n++;
		}
		free(path);
	}
	closedir(d);
	return (n);
}

int
template_init(struct template *t, char **argv, const char *kernel,
    const char *initramfs)
{
	unsigned char	 digest[32];
	struct buf	 b = { 0 };
	char		*qemu;
	size_t		 i;

	memset(t, 0, sizeof *t);
	t->lock_fd = -1;
	if ((t->dir = template_dir()) == NULL)
		return (-1);
	template_sweep(t->dir);
	buf_printf(&b, "qsup-template %d protocol %d\n", TEMPLATE_VERSION,
	    QSUP_PROTOCOL_VERSION);
	qemu = util_which(argv[0]);
	template_file_id(&b, "qemu", qemu);
	free(qemu);
	template_file_id(&b, "kernel", kernel);
	template_file_id(&b, "initramfs", initramfs);
	for (i = 1; argv[i] != NULL; i++) {
		/*
		 * The run directory, and what a share exports and how: only
		 * QEMU's side of it, not the guest's state.
		 */
		if (strcmp(argv[i - 1], "-name") == 0 ||
		    strcmp(argv[i - 1], "-fsdev") == 0 ||
		    (strcmp(argv[i - 1], "-blockdev") == 0 &&
		    strncmp(argv[i], "driver=qcow2,node-name=" DISK_NODE ",",
		    24 + strlen(DISK_NODE)) == 0))
			buf_puts(&b, "*\n");
		else
			template_arg(&b, argv[i]);
	}
	t->shape = b.data;
	mbedtls_sha256_ret((const unsigned char *)b.data, b.len, digest, 0);
	t->key = token_hex_of(digest, 16);
	xasprintf(&t->state, "%s/%s.state", t->dir, t->key);
	xasprintf(&t->shape_path, "%s/%s.shape", t->dir, t->key);
	return (0);
}

static char *
template_meta_path(struct template *t)
{
	char	*path;

	xasprintf(&path, "%s/%s.meta", t->dir, t->key);
	return (path);
}

static char *
template_meta(const struct stat *st)
{
	char	*meta;

	xasprintf(&meta, "%lld %lld.%09ld\n", (long long)st->st_size,
	    (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	return (meta);
}

/*
 * A whole template of exactly this shape is on disk, unchanged since it
 * was written (a cheap check: hashing it would cost more than a restore).
 */
int
template_exists(struct template *t)
{
	struct stat	 st;
	char		*shape, *meta, *want, *path;
	int		 same;

	if (stat(t->state, &st) == -1 || st.st_size == 0)
		return (0);
	if ((shape = util_read_file(t->shape_path, NULL, 1 << 20)) == NULL)
		return (0);
	same = strcmp(shape, t->shape) == 0;
	free(shape);
	path = template_meta_path(t);
	meta = util_read_file(path, NULL, 4096);
	free(path);
	want = template_meta(&st);
	if (meta == NULL || strcmp(meta, want) != 0) {
		if (same)
			log_debug("template %s changed since it was written",
			    t->key);
		same = 0;
	}
	free(meta);
	free(want);
	return (same);
}

/* Become the one builder of this template, without waiting. */
int
template_lock(struct template *t)
{
	char	*path;

	xasprintf(&path, "%s/%s.lock", t->dir, t->key);
	t->lock_fd = open(path, O_RDWR|O_CREAT|O_CLOEXEC, 0600);
	free(path);
	if (t->lock_fd == -1)
		return (-1);
	if (flock(t->lock_fd, LOCK_EX|LOCK_NB) == -1) {
		close(t->lock_fd);
		t->lock_fd = -1;
		return (-1);
	}
	/* Someone may have finished it while we looked. */
	if (template_exists(t)) {
		template_unlock(t);
		return (-1);
	}
	return (0);
}

void
template_unlock(struct template *t)
{
	if (t->lock_fd != -1) {
		close(t->lock_fd);
		t->lock_fd = -1;
	}
}

/* A new, empty file for QEMU to write the state into. */
int
template_open_tmp(struct template *t, char **cause)
{
	int	fd;

	free(t->tmp);
	xasprintf(&t->tmp, "%s/%s.state.%ld", t->dir, t->key, (long)getpid());
	fd = open(t->tmp, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
	if (fd == -1)
		xasprintf(cause, "%s: %s", t->tmp, strerror(errno));
	return (fd);
}

static int
template_write_file(const char *path, const char *data, size_t len)
{
	char	*tmp;
	int	 fd, rc = -1;

	xasprintf(&tmp, "%s.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
	if (fd != -1 && write(fd, data, len) == (ssize_t)len &&
	    fsync(fd) == 0 && close(fd) == 0) {
		fd = -1;
		rc = rename(tmp, path);
	}
	if (fd != -1)
		close(fd);
	if (rc == -1)
		unlink(tmp);
	free(tmp);
	return (rc);
}

/* The state is whole (fd is the file QEMU wrote): put it in place. */
int
template_commit(struct template *t, int fd, char **cause)
{
	struct stat	 st;
	char		*meta, *path;
	int		 rc;

	if (fsync(fd) == -1 || fstat(fd, &st) == -1)
		goto fail;
	meta = template_meta(&st);
	path = template_meta_path(t);
	rc = template_write_file(path, meta, strlen(meta));
	free(path);
	free(meta);
	if (rc == -1 || template_write_file(t->shape_path, t->shape,
	    strlen(t->shape)) == -1 || rename(t->tmp, t->state) == -1)
		goto fail;
	free(t->tmp);
	t->tmp = NULL;
	return (0);

fail:
	xasprintf(cause, "saving template %s: %s", t->key, strerror(errno));
	unlink(t->tmp);
	return (-1);
}

/* A save given up: its half-written state goes at once. */
void
template_abandon(struct template *t)
{
	if (t->tmp != NULL)
		unlink(t->tmp);
	free(t->tmp);
	t->tmp = NULL;
}

/* A template that would not restore: gone, so the next run rebuilds it. */
void
template_discard(struct template *t)
{
	char	*path;

	unlink(t->state);
	unlink(t->shape_path);
	path = template_meta_path(t);
	unlink(path);
	free(path);
}

void
template_free(struct template *t)
{
	template_unlock(t);
	template_abandon(t);
	free(t->dir);
	free(t->key);
	free(t->state);
	free(t->shape_path);
	free(t->shape);
	memset(t, 0, sizeof *t);
	t->lock_fd = -1;
}
