/*
 * The disk under a sandbox's copy-on-write shares. A cow share is exported
 * read-only by QEMU (readonly=on on its fsdev, as a read-only share), so no
 * guest action reaches the host tree; the guest lays an overlay over it
 * whose upper layer is on this disk. One disk holds every cow share's
 * upper and work directories: a sparse raw file in the run directory, of
 * cow_size bytes, made an empty ext4 by mke2fs (about 10 ms for 4 GiB), so
 * it goes with the run directory and costs the host only what the guest
 * writes. A raw file of fixed size cannot grow past it: a full upper layer
 * is a full ext4, ENOSPC in the guest. A host file system that fills first
 * gives the guest I/O errors rather than a paused VM (werror=report).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"

#define COW_MKE2FS_MAX	30.0	/* seconds */

/* Does any of the shares want the disk? */
int
cow_wanted(const struct share *sh, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (sh[i].cow)
			return (1);
	}
	return (0);
}

/* mke2fs: on PATH, or in the sbin directories a user's PATH may lack. */
static char *
cow_mke2fs(void)
{
	static const char	*dirs[] = { "/usr/sbin", "/sbin", NULL };
	char			*path;
	size_t			 i;

	path = util_which("mke2fs");
	if (strchr(path, '/') != NULL)
		return (path);
	free(path);
	for (i = 0; dirs[i] != NULL; i++) {
		xasprintf(&path, "%s/mke2fs", dirs[i]);
		if (access(path, X_OK) == 0)
			return (path);
		free(path);
	}
	return (NULL);
}

/* Is there an ext4 superblock (its magic) where mke2fs was to write one? */
static int
cow_check(const char *path)
{
	unsigned char	magic[2];
	int		fd, rc = -1;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	if (pread(fd, magic, sizeof magic, 1024 + 0x38) == sizeof magic &&
	    magic[0] == 0x53 && magic[1] == 0xef)
		rc = 0;
	close(fd);
	return (rc);
}

/*
 * The disk: dir/cow.img, size bytes, an empty ext4 without a journal
 * (nothing on it outlives the sandbox, so there is nothing to recover)
 * and without reserved blocks (root in the guest fills it as anyone
 * would), its root directory root's. The serial names the size: a
 * template's guest knows the size of the disk it was booted with, so
 * templates of different sizes must be different templates (template.c
 * keys them by QEMU's command line). -1 with *cause.
 */
int
cow_make(struct cow *c, const char *dir, uint64_t size, char **cause)
{
	struct buf	 out = { 0 };
	char		*argv[16], *mke2fs = NULL;
	double		 t0 = util_now();
	int		 fd, timed_out, n = 0, rc = -1;

	memset(c, 0, sizeof *c);
	xasprintf(&c->path, "%s/cow.img", dir);
	c->size = size;
	snprintf(c->serial, sizeof c->serial, "qsup-cow-%" PRIu64,
	    size >> 9);
	if ((fd = open(c->path, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600)) ==
	    -1 || ftruncate(fd, (off_t)size) == -1) {
		xasprintf(cause, "cow disk %s: %s", c->path, strerror(errno));
		if (fd != -1)
			close(fd);
		goto out;
	}
	close(fd);
	if ((mke2fs = cow_mke2fs()) == NULL) {
		xasprintf(cause, "cow shares need mke2fs (Debian's e2fsprogs), "
		    "found neither on PATH nor in /usr/sbin or /sbin");
		goto out;
	}
	argv[n++] = mke2fs;
	argv[n++] = "-q";
	argv[n++] = "-F";
	argv[n++] = "-t";
	argv[n++] = "ext4";
	argv[n++] = "-O";
	argv[n++] = "^has_journal";
	argv[n++] = "-m";
	argv[n++] = "0";
	argv[n++] = "-E";
	argv[n++] = "lazy_itable_init=1,nodiscard,root_owner=0:0";
	argv[n++] = "-L";
	argv[n++] = "qsup-cow";
	argv[n++] = c->path;
	argv[n] = NULL;
	if (util_run_capture(argv, 1, COW_MKE2FS_MAX, NULL, &out,
	    &timed_out) == -1) {
		xasprintf(cause, "%s: %s", mke2fs, strerror(errno));
		goto out;
	}
	if (timed_out || out.len > 0 || cow_check(c->path) == -1) {
		xasprintf(cause, "mke2fs %s: %s", c->path, timed_out ?
		    "took too long" : out.len > 0 ? out.data :
		    "no ext4 written");
		goto out;
	}
	c->seconds = util_now() - t0;
	log_debug("cow disk %s: ext4 of %" PRIu64 " MiB in %.3f s", c->path,
	    size >> 20, c->seconds);
	rc = 0;
out:
	buf_free(&out);
	free(mke2fs);
	return (rc);
}

/*
 * QEMU's node and device for it. template.c leaves the file's name out
 * of a template's key, not the serial. discard=unmap: what the guest
 * frees may be given back to the host.
 */
void
cow_qemu_args(const struct cow *c, struct qemu_argv *a)
{
	char	*path;

	path = qemu_escape(c->path);
	qemu_arg(a, "-blockdev");
	qemu_arg(a, "driver=raw,node-name=" COW_NODE ",file.driver=file,"
	    "file.filename=%s,discard=unmap", path);
	qemu_arg(a, "-device");
	qemu_arg(a, "virtio-blk-pci,drive=" COW_NODE ",serial=%s,"
	    "werror=report,rerror=report", c->serial);
	free(path);
}

void
cow_free(struct cow *c)
{
	free(c->path);
	memset(c, 0, sizeof *c);
}
