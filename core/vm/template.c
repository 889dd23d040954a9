/*
 * VM state templates for warm starts. A template is the saved state of a
 * guest booted to the agent's template state (no seed, no token, no share
 * mounted), keyed by everything that makes QEMU's state loadable: the QEMU
 * command line (file descriptor numbers and paths aside), the identity of
 * the QEMU binary, kernel and initramfs, and the template's format. Its
 * files in the cache directory are template_int.h's.
 *
 * Format 2 (template_ram = "shared") keeps the guest's RAM in a file of
 * its own, KEY.ram: the build's QEMU maps it shared, so the guest's memory
 * is the file, and migrates with x-ignore-shared, so KEY.state holds only
 * the devices (tens of KB); every restore maps KEY.ram private
 * (copy-on-write): what a restored guest writes stays its own, the pages
 * it only reads are the page cache's, shared by every restore. KEY.ram is
 * never written again once in place: the build's QEMU, the one writer,
 * is gone before it is renamed there. It is not fsync'ed (that would cost
 * the save a writeback of the guest's whole memory): KEY.meta names the
 * boot it was written in, and after a reboot the template is rebuilt.
 * Format 1 (template_ram = "stream") keeps the RAM in the stream.
 *
 * An image that boots itself (boot = "image") writes to its disk while it
 * boots to template state, and its RAM (the page cache) holds what it
 * read and wrote: KEY.disk keeps that disk, the overlay as it was at the
 * save, and every restore's overlay goes over KEY.disk (with the base
 * below it), never over the base alone. Like KEY.ram it is never written
 * again once in place; QEMU opens it read-only.
 *
 * The state file is renamed into place last, so a template exists only
 * once it is whole. Until then its files are KEY.*.PID, PID its writer's:
 * a qsup killed outright leaves them, and template_sweep removes those
 * whose writer is gone.
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
 * Remove NAME of dir if it is a KEY.lock that no one holds (its holder was
 * killed outright, or an older qsup kept it): taken first, and removed
 * only if still the file at its path, as template_lock takes it.
 */
static int
template_sweep_lock(const char *dir, const char *name)
{
	struct stat	 sf, sp;
	size_t		 len = strlen(name);
	char		*path;
	int		 fd, gone = 0;

	if (len <= 5 || strcmp(name + len - 5, ".lock") != 0 ||
	    !template_is_key(name, len - 5))
		return (0);
	xasprintf(&path, "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY|O_CLOEXEC|O_NOFOLLOW)) != -1) {
		if (flock(fd, LOCK_EX|LOCK_NB) == 0 && fstat(fd, &sf) == 0 &&
		    lstat(path, &sp) == 0 && sf.st_dev == sp.st_dev &&
		    sf.st_ino == sp.st_ino && unlink(path) == 0)
			gone = 1;
		close(fd);
	}
	free(path);
	return (gone);
}

/*
 * Remove the half-written files of templates/ whose writer is gone (a
 * qsup killed outright while it saved one), and locks no one holds;
 * never a file whose writer is alive. Returns how many went.
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
		if (template_sweep_lock(dir, de->d_name)) {
			n++;
			continue;
		}
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
    const char *initramfs, int format)
{
	unsigned char	 digest[32];
	struct buf	 b = { 0 };
	char		*qemu;
	size_t		 i;

	memset(t, 0, sizeof *t);
	t->lock_fd = -1;
	t->format = format;
	if ((t->dir = template_dir()) == NULL)
		return (-1);
	template_sweep(t->dir);
	buf_printf(&b, "%s protocol %d\n", format == TEMPLATE_SHARED ?
	    TEMPLATE_SHAPE_SHARED : TEMPLATE_SHAPE_STREAM,
	    QSUP_PROTOCOL_VERSION);
	qemu = util_which(argv[0]);
	template_file_id(&b, "qemu", qemu);
	free(qemu);
	template_file_id(&b, "kernel", kernel);
	template_file_id(&b, "initramfs", initramfs);
	for (i = 1; argv[i] != NULL; i++) {
		/*
		 * The run directory, and what a share exports and how: only
		 * QEMU's side of it, not the guest's state. The overlay's and
		 * the seed's files are the run's own (an image that boots
		 * itself has its seed attached in every mode), and so is the
		 * cow disk (its serial, in the key, says its size), and the
		 * VNC socket's path (the screen's devices and size count).
		 */
		if (strcmp(argv[i - 1], "-name") == 0 ||
		    strcmp(argv[i - 1], "-fsdev") == 0 ||
		    strcmp(argv[i - 1], "-vnc") == 0 ||
		    (strcmp(argv[i - 1], "-object") == 0 &&
		    strncmp(argv[i], "memory-backend-file,id=" TEMPLATE_RAM_ID
		    ",", 24 + strlen(TEMPLATE_RAM_ID)) == 0) ||
		    (strcmp(argv[i - 1], "-blockdev") == 0 &&
		    (strncmp(argv[i], "driver=qcow2,node-name=" DISK_NODE ",",
		    24 + strlen(DISK_NODE)) == 0 ||
		    strncmp(argv[i], "driver=raw,node-name=seed,", 26) == 0 ||
		    strncmp(argv[i], "driver=raw,node-name=" COW_NODE ",",
		    22 + strlen(COW_NODE)) == 0)))
			buf_puts(&b, "*\n");
		else
			template_arg(&b, argv[i]);
	}
	t->shape = b.data;
	mbedtls_sha256_ret((const unsigned char *)b.data, b.len, digest, 0);
	t->key = token_hex_of(digest, 16);
	xasprintf(&t->state, "%s/%s.state", t->dir, t->key);
	xasprintf(&t->shape_path, "%s/%s.shape", t->dir, t->key);
	xasprintf(&t->ram, "%s/%s.ram", t->dir, t->key);
	xasprintf(&t->disk, "%s/%s.disk", t->dir, t->key);
	return (0);
}

static char *
template_meta_path(struct template *t)
{
	char	*path;

	xasprintf(&path, "%s/%s.meta", t->dir, t->key);
	return (path);
}

/* This boot's id: a shared template's RAM is trusted within it only. */
static char *
template_boot_id(void)
{
	char	*id;
	size_t	 len;

	id = util_read_file("/proc/sys/kernel/random/boot_id", &len, 128);
	if (id == NULL)
		return (xstrdup("unknown"));
	id[strcspn(id, "\n")] = '\0';
	return (id);
}

/*
 * What KEY.meta says of a template whose state (and, for format 2, RAM)
 * file is st (and ram): format 1, the state's size and mtime as qsup has
 * always written them; format 2, the boot, then each file's size, inode
 * and mtime.
 */
static char *
template_meta(const struct template *t, const struct stat *st,
    const struct stat *ram)
{
	char	*meta, *boot;

	if (t->format != TEMPLATE_SHARED) {
		xasprintf(&meta, "%lld %lld.%09ld\n", (long long)st->st_size,
		    (long long)st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
		return (meta);
	}
	boot = template_boot_id();
	xasprintf(&meta, "2 boot %s\nstate %lld %llu %lld.%09ld\n"
	    "ram %lld %llu %lld.%09ld\n", boot, (long long)st->st_size,
	    (unsigned long long)st->st_ino, (long long)st->st_mtim.tv_sec,
	    st->st_mtim.tv_nsec, (long long)ram->st_size,
	    (unsigned long long)ram->st_ino, (long long)ram->st_mtim.tv_sec,
	    ram->st_mtim.tv_nsec);
	free(boot);
	return (meta);
}

/*
 * Is the template whose files are st (and ram) the one KEY.meta and
 * KEY.shape describe: of this shape and format, unchanged since written
 * (and, for format 2, written in this boot)? A cheap check: hashing the
 * files would cost more than a restore.
 */
static int
template_same(struct template *t, const struct stat *st,
    const struct stat *ram)
{
	char	*shape, *meta, *want, *path;
	int	 same;

	if (st->st_size == 0 ||
	    (t->format == TEMPLATE_SHARED && ram->st_size == 0))
		return (0);
	if ((shape = util_read_file(t->shape_path, NULL, 1 << 20)) == NULL)
		return (0);
	same = strcmp(shape, t->shape) == 0;
	free(shape);
	path = template_meta_path(t);
	meta = util_read_file(path, NULL, 4096);
	free(path);
	want = template_meta(t, st, ram);
	if (meta == NULL || strcmp(meta, want) != 0) {
		if (same)
			log_debug("template %s changed since it was written%s",
			    t->key, t->format == TEMPLATE_SHARED ?
			    ", or in another boot" : "");
		same = 0;
	}
	free(meta);
	free(want);
	return (same);
}

/* A whole template of exactly this shape and format is on disk. */
int
template_exists(struct template *t)
{
	struct stat	 st, ram;

	memset(&ram, 0, sizeof ram);
	if (stat(t->state, &st) == -1)
		return (0);
	if (t->format == TEMPLATE_SHARED && stat(t->ram, &ram) == -1)
		return (0);
	if (t->with_disk && access(t->disk, R_OK) == -1)
		return (0);
	return (template_same(t, &st, &ram));
}

/*
 * Open the template for a restore: its state (for -incoming) and, for
 * format 2, its RAM (the restore maps exactly the file checked here,
 * through /proc/self/fd, whatever happens to the name meanwhile). -1 when
 * it went, or changed, since template_exists looked.
 */
int
template_open(struct template *t, int *state_fd, int *ram_fd, char **cause)
{
	struct stat	 st, ram;

	memset(&ram, 0, sizeof ram);
	*state_fd = *ram_fd = -1;
	if ((*state_fd = open(t->state, O_RDONLY|O_CLOEXEC)) == -1 ||
	    fstat(*state_fd, &st) == -1) {
		xasprintf(cause, "%s: %s", t->state, strerror(errno));
		goto fail;
	}
	if (t->format == TEMPLATE_SHARED &&
	    ((*ram_fd = open(t->ram, O_RDONLY|O_CLOEXEC)) == -1 ||
	    fstat(*ram_fd, &ram) == -1)) {
		xasprintf(cause, "%s: %s", t->ram, strerror(errno));
		goto fail;
	}
	if (!template_same(t, &st, &ram)) {
		xasprintf(cause, "template %s changed since it was checked",
		    t->key);
		goto fail;
	}
	return (0);
fail:
	if (*state_fd != -1)
		close(*state_fd);
	if (*ram_fd != -1)
		close(*ram_fd);
	*state_fd = *ram_fd = -1;
	return (-1);
}

/*
 * Become the one builder of this template, without waiting. KEY.lock is
 * removed by whoever holds it when it lets go, so a failed build leaves
 * nothing: a lock taken on a file that is no longer at its path (removed
 * after we opened it) is let go and taken again on the new one.
 */
int
template_lock(struct template *t)
{
	struct stat	 sf, sp;
	char		*path;
	int		 tries;

	xasprintf(&path, "%s/%s.lock", t->dir, t->key);
	for (tries = 0; tries < 8; tries++) {
		t->lock_fd = open(path, O_RDWR|O_CREAT|O_CLOEXEC, 0600);
		if (t->lock_fd == -1)
			break;
		if (flock(t->lock_fd, LOCK_EX|LOCK_NB) == -1) {
			close(t->lock_fd);
			t->lock_fd = -1;
			break;
		}
		if (fstat(t->lock_fd, &sf) == 0 && stat(path, &sp) == 0 &&
		    sf.st_dev == sp.st_dev && sf.st_ino == sp.st_ino)
			break;
		close(t->lock_fd);
		t->lock_fd = -1;
	}
	free(path);
	if (t->lock_fd == -1)
		return (-1);
	/* Someone may have finished it while we looked. */
	if (template_exists(t)) {
		template_unlock(t);
		return (-1);
	}
	return (0);
}

/* Let go of the lock, removing its file while it is still ours. */
void
template_unlock(struct template *t)
{
	char	*path;

	if (t->lock_fd != -1) {
		xasprintf(&path, "%s/%s.lock", t->dir, t->key);
		unlink(path);
		free(path);
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

/*
 * Format 2: the new, empty file the build's QEMU keeps the guest's RAM
 * in (mapped shared; QEMU sizes it). Its path is t->ram_tmp.
 */
int
template_ram_tmp(struct template *t, char **cause)
{
	int	fd;

	free(t->ram_tmp);
	xasprintf(&t->ram_tmp, "%s/%s.ram.%ld", t->dir, t->key,
	    (long)getpid());
	fd = open(t->ram_tmp, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600);
	if (fd == -1) {
		xasprintf(cause, "%s: %s", t->ram_tmp, strerror(errno));
		free(t->ram_tmp);
		t->ram_tmp = NULL;
		return (-1);
	}
	close(fd);
	return (0);
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

/*
 * boot = "image": the guest's disk as it is at the save (the image's
 * boot wrote to it), copied from the run's overlay once QEMU has stopped
 * and flushed it at the migration's end, to KEY.disk.PID; committed with
 * the state. Every restore's overlay has it as its backing file, and the
 * base below it.
 */
int
template_save_disk(struct template *t, const char *overlay, char **cause)
{
	free(t->disk_tmp);
	xasprintf(&t->disk_tmp, "%s/%s.disk.%ld", t->dir, t->key,
	    (long)getpid());
	if (template_copy_file(overlay, t->disk_tmp, cause) == -1) {
		free(t->disk_tmp);
		t->disk_tmp = NULL;
		return (-1);
	}
	return (0);
}

/*
 * A copy of the file from, made to (new, or truncated), synced: a
 * stopped guest's overlay, which QEMU flushed at the migration's end.
 * In the kernel where it can (a reflink on some file systems). -1 with
 * *cause, and no file to left behind.
 */
int
template_copy_file(const char *from, const char *to, char **cause)
{
	char	 buf[65536];
	ssize_t	 n, w;
	off_t	 off;
	int	 in, out = -1, rc = -1;

	if ((in = open(from, O_RDONLY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", from, strerror(errno));
		return (-1);
	}
	if ((out = open(to, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC,
	    0600)) == -1) {
		xasprintf(cause, "%s: %s", to, strerror(errno));
		goto out;
	}
	while ((n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0)) > 0)
		;
	if (n == -1 && (errno == EXDEV || errno == ENOSYS ||
	    errno == EINVAL || errno == EOPNOTSUPP)) {
		off = lseek(out, 0, SEEK_CUR);
		if (off == -1 || lseek(in, off, SEEK_SET) == -1)
			goto fail;
		while ((n = read(in, buf, sizeof buf)) > 0) {
			for (off = 0; off < n; off += w) {
				if ((w = write(out, buf + off, n - off)) == -1)
					goto fail;
			}
		}
	}
	if (n == -1 || fsync(out) == -1)
		goto fail;
	rc = 0;
	goto out;
fail:
	xasprintf(cause, "copying %s to %s: %s", from, to, strerror(errno));
out:
	close(in);
	if (out != -1)
		close(out);
	if (rc == -1 && out != -1)
		unlink(to);
	return (rc);
}

/*
 * The state is whole (fd is the file QEMU wrote; for format 2, the QEMU
 * that wrote t->ram_tmp through its mapping is stopped and writes no
 * more): put it in place, the RAM before the state.
 */
int
template_commit(struct template *t, int fd, char **cause)
{
	struct stat	 st, ram;
	char		*meta, *path;
	int		 rc;

	memset(&ram, 0, sizeof ram);
	if (fsync(fd) == -1 || fstat(fd, &st) == -1)
		goto fail;
	if (t->format == TEMPLATE_SHARED &&
	    (t->ram_tmp == NULL || stat(t->ram_tmp, &ram) == -1))
		goto fail;
	meta = template_meta(t, &st, &ram);
	path = template_meta_path(t);
	rc = template_write_file(path, meta, strlen(meta));
	free(path);
	free(meta);
	if (rc == -1 || template_write_file(t->shape_path, t->shape,
	    strlen(t->shape)) == -1)
		goto fail;
	if (t->format == TEMPLATE_SHARED && rename(t->ram_tmp, t->ram) == -1)
		goto fail;
	if (t->with_disk && (t->disk_tmp == NULL ||
	    rename(t->disk_tmp, t->disk) == -1))
		goto fail;
	if (rename(t->tmp, t->state) == -1)
		goto fail;
	free(t->tmp);
	t->tmp = NULL;
	free(t->ram_tmp);
	t->ram_tmp = NULL;
	free(t->disk_tmp);
	t->disk_tmp = NULL;
	return (0);

fail:
	xasprintf(cause, "saving template %s: %s", t->key, strerror(errno));
	template_abandon(t);
	return (-1);
}

/* A save given up: its half-written files go at once. */
void
template_abandon(struct template *t)
{
	if (t->tmp != NULL)
		unlink(t->tmp);
	free(t->tmp);
	t->tmp = NULL;
	if (t->ram_tmp != NULL)
		unlink(t->ram_tmp);
	free(t->ram_tmp);
	t->ram_tmp = NULL;
	if (t->disk_tmp != NULL)
		unlink(t->disk_tmp);
	free(t->disk_tmp);
	t->disk_tmp = NULL;
}

/* A template that would not restore: gone, so the next run rebuilds it. */
void
template_discard(struct template *t)
{
	template_remove(t->dir, t->key);
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
	free(t->ram);
	free(t->disk);
	memset(t, 0, sizeof *t);
	t->lock_fd = -1;
}
