/*
 * A disk image under a sandbox: the base, probed by its header (never by
 * its name) and never written, and a fresh qcow2 overlay in the run
 * directory whose backing file it is. QEMU opens the base read-only
 * through its own node, with its image locking left on; every write of
 * the guest lands in the overlay, which goes with the run directory.
 * After the run, the base's size, inode, mtime and ctime say whether
 * anything reached it (disk_untouched).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"

#define DISK_HEADER		512
#define DISK_QEMU_IMG_MAX	30.0	/* seconds for qemu-img create */
#define DISK_SIZE_MAX		(2ULL << 40)

static uint64_t
disk_be64(const unsigned char *p)
{
	uint64_t	v = 0;
	int		i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return (v);
}

static uint32_t
disk_be32(const unsigned char *p)
{
	return ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3]);
}

/*
 * What the first bytes of an image file say it is: qcow2 (version 2 or
 * 3, without a backing file or an external data file of its own, which
 * would let an image downloaded from anywhere point QEMU at any file of
 * this host), or raw. Formats QEMU would otherwise guess (VMDK, VDI,
 * VHDX, QED, LUKS) are refused by name, so their headers are never
 * handed to the guest as raw bytes by mistake either. size is the file's
 * length. -1 with *cause.
 */
int
disk_parse_header(const unsigned char *h, size_t len, uint64_t size,
    struct disk_info *info, char **cause)
{
	static const struct {
		const char	*magic;
		size_t		 off, len;
		const char	*name;
	} others[] = {
		{ "KDMV", 0, 4, "VMDK" },
		{ "# Disk DescriptorFile", 0, 21, "VMDK descriptor" },
		{ "<<< ", 0, 4, "VDI" },
		{ "vhdxfile", 0, 8, "VHDX" },
		{ "QED\0", 0, 4, "QED" },
		{ "LUKS\xba\xbe", 0, 6, "LUKS" },
		{ "QFI\xfb", 0, 4, NULL },
	};
	uint64_t	 backing, vsize, incompat;
	uint32_t	 version, cluster_bits;
	size_t		 i;

	memset(info, 0, sizeof *info);
	for (i = 0; i < sizeof others / sizeof others[0]; i++) {
		if (len >= others[i].off + others[i].len &&
		    memcmp(h + others[i].off, others[i].magic,
		    others[i].len) == 0)
			break;
	}
	if (i == sizeof others / sizeof others[0]) {
		if (size == 0 || size % 512 != 0) {
			xasprintf(cause, "a raw image must be a whole number "
			    "of 512-byte sectors (this one has %" PRIu64
			    " bytes)", size);
			return (-1);
		}
		info->format = "raw";
		info->virtual_size = size;
		return (0);
	}
	if (others[i].name != NULL) {
		xasprintf(cause, "a %s image; qsup runs raw and qcow2 images "
		    "(qemu-img convert -O qcow2 makes one)", others[i].name);
		return (-1);
	}
	if (len < 72) {
		*cause = xstrdup("a truncated qcow2 header");
		return (-1);
	}
	version = disk_be32(h + 4);
	backing = disk_be64(h + 8);
	cluster_bits = disk_be32(h + 20);
	vsize = disk_be64(h + 24);
	if (version != 2 && version != 3) {
		xasprintf(cause, "qcow2 version %" PRIu32 " (2 and 3 are "
		    "known)", version);
		return (-1);
	}
	if (cluster_bits < 9 || cluster_bits > 21 || vsize == 0 ||
	    vsize % 512 != 0) {
		*cause = xstrdup("a qcow2 header with an impossible cluster "
		    "or disk size");
		return (-1);
	}
	if (backing != 0) {
		*cause = xstrdup("a qcow2 image with a backing file of its "
		    "own; qsup uses only self-contained bases (qemu-img "
		    "convert -O qcow2 makes one)");
		return (-1);
	}
	if (version == 3) {
		if (len < 80) {
			*cause = xstrdup("a truncated qcow2 header");
			return (-1);
		}
		incompat = disk_be64(h + 72);
		if (incompat & 0x1) {
			*cause = xstrdup("a qcow2 image marked dirty (not "
			    "closed cleanly); qemu-img check -r all repairs "
			    "it");
			return (-1);
		}
		if (incompat & 0x2) {
			*cause = xstrdup("a qcow2 image marked corrupt");
			return (-1);
		}
		if (incompat & 0x4) {
			*cause = xstrdup("a qcow2 image with an external data "
			    "file; qsup uses only self-contained bases");
			return (-1);
		}
	}
	info->format = "qcow2";
	info->virtual_size = vsize;
	return (0);
}

/* Probe path: its real path, format and size. -1 with *cause. */
int
disk_probe(const char *path, struct disk *d, char **cause)
{
	unsigned char	 h[DISK_HEADER];
	struct stat	 st;
	ssize_t		 n;
	char		*why = NULL;
	int		 fd;

	memset(d, 0, sizeof *d);
	if ((d->base = realpath(path, NULL)) == NULL) {
		xasprintf(cause, "image %s: %s", path, strerror(errno));
		return (-1);
	}
	if ((fd = open(d->base, O_RDONLY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "image %s: %s", path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		xasprintf(cause, "image %s: not a regular file", path);
		close(fd);
		goto fail;
	}
	n = pread(fd, h, sizeof h, 0);
	close(fd);
	if (n == -1) {
		xasprintf(cause, "image %s: %s", path, strerror(errno));
		goto fail;
	}
	if (disk_parse_header(h, (size_t)n, (uint64_t)st.st_size, &d->info,
	    &why) == -1) {
		xasprintf(cause, "image %s: %s", path, why);
		free(why);
		goto fail;
	}
	d->before = st;
	return (0);
fail:
	free(d->base);
	d->base = NULL;
	return (-1);
}

/*
 * A layer over the disk so far (the base, or the last layer added): a
 * qcow2 file qsup made in its layer store (store, a real path), whose
 * header names as its backing file exactly the link below it, and which
 * is otherwise as a base must be (no data file, not dirty). QEMU is given
 * the chain node by node (disk_qemu_args), never left to follow the
 * names in the headers. -1 with *cause.
 */
int
disk_add_layer(struct disk *d, const char *path, const char *store,
    char **cause)
{
	unsigned char	 h[DISK_HEADER];
	struct disk_info info;
	struct stat	 st;
	const char	*below;
	char		*real, *why = NULL, name[PATH_MAX + 1];
	uint64_t	 off;
	uint32_t	 len;
	ssize_t		 n;
	size_t		 sl = strlen(store);
	int		 fd, rc = -1;

	below = d->nlayers > 0 ? d->layers[d->nlayers - 1] : d->base;
	if ((real = realpath(path, NULL)) == NULL) {
		xasprintf(cause, "layer %s: %s", path, strerror(errno));
		return (-1);
	}
	if (strncmp(real, store, sl) != 0 || real[sl] != '/' ||
	    strchr(real + sl + 1, '/') != NULL) {
		xasprintf(cause, "layer %s: not in the layer store %s", real,
		    store);
		goto out;
	}
	if ((fd = open(real, O_RDONLY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "layer %s: %s", real, strerror(errno));
		goto out;
	}
	n = fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ? -1 :
	    pread(fd, h, sizeof h, 0);
	if (n >= 24 && memcmp(h, "QFI\xfb", 4) == 0) {
		off = disk_be64(h + 8);
		len = disk_be32(h + 16);
		if (off == 0 || len == 0 || len > PATH_MAX ||
		    pread(fd, name, len, (off_t)off) != (ssize_t)len)
			n = -2;
		else
			name[len] = '\0';
	} else if (n != -1)
		n = -2;
	close(fd);
	if (n < 0) {
		xasprintf(cause, "layer %s: %s", real, n == -1 ? "not a "
		    "readable regular file" : "not a qcow2 layer with a "
		    "backing file");
		goto out;
	}
	if (strcmp(name, below) != 0) {
		xasprintf(cause, "layer %s: its backing file is %s, not %s",
		    real, name, below);
		goto out;
	}
	memset(h + 8, 0, 12);	/* the rest is checked as for a base */
	if (disk_parse_header(h, (size_t)n, (uint64_t)st.st_size, &info,
	    &why) == -1 || strcmp(info.format, "qcow2") != 0) {
		xasprintf(cause, "layer %s: %s", real, why != NULL ? why :
		    "not qcow2");
		free(why);
		goto out;
	}
	d->layers = xreallocarray(d->layers, d->nlayers + 1,
	    sizeof *d->layers);
	d->layers[d->nlayers++] = real;
	real = NULL;
	d->top_size = info.virtual_size;
	d->top = st;
	rc = 0;
out:
	free(real);
	return (rc);
}

/* What the overlay goes over: the top layer, else the base. */
static const char *
disk_top(const struct disk *d, uint64_t *vsize, const char **fmt)
{
	if (d->nlayers == 0) {
		*vsize = d->info.virtual_size;
		*fmt = d->info.format;
		return (d->base);
	}
	*vsize = d->top_size;
	*fmt = "qcow2";
	return (d->layers[d->nlayers - 1]);
}

/* qemu-img create: d->overlay, of d->size, over backing in format fmt. */
static int
disk_create(struct disk *d, const char *backing_path, const char *fmt,
    char **cause)
{
	struct buf	 out = { 0 };
	char		*argv[12], opts[64], size[32], *backing;
	double		 t0 = util_now();
	int		 timed_out, n = 0, rc = -1;

	xasprintf(&backing, "backing_file=%s", backing_path);
	snprintf(opts, sizeof opts, "backing_fmt=%s", fmt);
	snprintf(size, sizeof size, "%" PRIu64, d->size);
	argv[n++] = "qemu-img";
	argv[n++] = "create";
	argv[n++] = "-q";
	argv[n++] = "-f";
	argv[n++] = "qcow2";
	argv[n++] = "-o";
	argv[n++] = backing;
	argv[n++] = "-o";
	argv[n++] = opts;
	argv[n++] = d->overlay;
	argv[n++] = size;
	argv[n] = NULL;
	if (util_run_capture(argv, 1, DISK_QEMU_IMG_MAX, NULL, &out,
	    &timed_out) == -1) {
		xasprintf(cause, "qemu-img: %s", strerror(errno));
		goto out;
	}
	if (timed_out || access(d->overlay, F_OK) == -1 || out.len > 0) {
		xasprintf(cause, "qemu-img create: %s", timed_out ?
		    "took too long" : out.len > 0 ? out.data :
		    "no overlay written");
		goto out;
	}
	d->overlay_seconds = util_now() - t0;
	log_debug("overlay %s over %s (%s, %" PRIu64 " MiB) in %.3f s",
	    d->overlay, backing_path, fmt, d->size >> 20, d->overlay_seconds);
	rc = 0;
out:
	buf_free(&out);
	free(backing);
	return (rc);
}

/*
 * The overlay: a qcow2 file in dir whose backing file is the base, of
 * the base's size or want bytes (disk_size), never smaller. qemu-img is
 * told the base's format, so it never guesses one. -1 with *cause.
 */
int
disk_overlay(struct disk *d, const char *dir, uint64_t want, char **cause)
{
	if (disk_overlay_plan(d, dir, want, cause) == -1)
		return (-1);
	return (disk_overlay_on(d, dir, NULL, 0, cause));
}

/*
 * The overlay's size and path, checked, but not made yet: a launch makes
 * it (disk_overlay_on) over what its mode needs, the base or a kept disk,
 * so a restore makes one overlay, not one over the base and then another.
 */
int
disk_overlay_plan(struct disk *d, const char *dir, uint64_t want,
    char **cause)
{
	const char	*fmt, *top;
	uint64_t	 vsize;

	top = disk_top(d, &vsize, &fmt);
	if (want != 0 && want < vsize) {
		xasprintf(cause, "disk_size (%" PRIu64 " MiB) is smaller than "
		    "the image %s (%" PRIu64 " MiB); an overlay cannot shrink "
		    "it", want >> 20, top, vsize >> 20);
		return (-1);
	}
	if (want > DISK_SIZE_MAX) {
		xasprintf(cause, "disk_size: at most 2 TiB");
		return (-1);
	}
	d->size = want > vsize ? want : vsize;
	d->grow = d->size > vsize;
	free(d->overlay);
	xasprintf(&d->overlay, "%s/disk.qcow2", dir);
	return (0);
}

static void
disk_mids_free(struct disk *d)
{
	size_t	i;

	for (i = 0; i < d->nmids; i++)
		free(d->mids[i]);
	free(d->mids);
	d->mids = NULL;
	d->nmids = 0;
}

/*
 * The overlay made again over the n disks of mids, bottom first, each a
 * qcow2 overlay of the one below it, the first of the base (or the top
 * layer), all of the same size: a template's disk, or a snapshot's and
 * those it was made over. With none, over the base again: where the boot
 * that follows a failed restore goes back.
 */
int
disk_overlay_on(struct disk *d, const char *dir, char *const *mids,
    size_t n, char **cause)
{
	const char	*fmt, *top;
	uint64_t	 vsize;
	size_t		 i;

	free(d->overlay);
	xasprintf(&d->overlay, "%s/disk.qcow2", dir);
	top = disk_top(d, &vsize, &fmt);
	disk_mids_free(d);
	if (n > 0) {
		d->mids = xreallocarray(NULL, n, sizeof *d->mids);
		for (i = 0; i < n; i++)
			d->mids[i] = xstrdup(mids[i]);
		d->nmids = n;
	}
	return (disk_create(d, n > 0 ? mids[n - 1] : top,
	    n > 0 ? "qcow2" : fmt, cause));
}

/* All of from into the new file to (0600), in the kernel where it can. */
static int
disk_copy(const char *from, const char *to)
{
	char	 buf[65536];
	ssize_t	 n, w, off;
	int	 in, out, rc = -1;

	if ((in = open(from, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	if ((out = open(to, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600)) == -1) {
		close(in);
		return (-1);
	}
	while ((n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0)) > 0)
		;
	if (n == -1 && (errno == EXDEV || errno == ENOSYS ||
	    errno == EINVAL || errno == EOPNOTSUPP)) {
		if (lseek(in, 0, SEEK_SET) == -1 || ftruncate(out, 0) == -1 ||
		    lseek(out, 0, SEEK_SET) == -1)
			goto out;
		while ((n = read(in, buf, sizeof buf)) > 0) {
			for (off = 0; off < n; off += w) {
				if ((w = write(out, buf + off, n - off)) == -1)
					goto out;
			}
		}
	}
	if (n == 0)
		rc = 0;
out:
	close(in);
	if (close(out) == -1)
		rc = -1;
	if (rc == -1)
		unlink(to);
	return (rc);
}

/*
 * The overlay over one kept disk, mid (a template's), copied from
 * pristine: a fresh overlay of this size over mid is the same file every
 * time, so qemu-img makes it once (into pristine, renamed into place
 * whole) and every later restore copies it, rather than running
 * qemu-img each time (7 ms on a quiet machine, 25 ms and more on a
 * loaded one). pristine is never written once in place; anything amiss
 * falls back to qemu-img.
 */
int
disk_overlay_copy(struct disk *d, const char *dir, const char *mid,
    const char *pristine, char **cause)
{
	struct disk_info info;
	unsigned char	 h[DISK_HEADER];
	struct stat	 st;
	char		*tmp, *why = NULL, *m;
	double		 t0 = util_now();
	ssize_t		 n = -1;
	int		 fd, rc;

	m = xstrdup(mid);
	if (access(pristine, R_OK) == -1) {
		xasprintf(&tmp, "%s.%ld", pristine, (long)getpid());
		(void)unlink(tmp);
		rc = disk_overlay_on(d, dir, &m, 1, cause);
		if (rc == 0 && disk_copy(d->overlay, tmp) == 0 &&
		    rename(tmp, pristine) == 0)
			log_debug("overlay kept as %s for the next ones",
			    pristine);
		(void)unlink(tmp);
		free(tmp);
		free(m);
		return (rc);
	}
	/* A qcow2 of this size, as qemu-img wrote it. */
	if ((fd = open(pristine, O_RDONLY|O_CLOEXEC)) != -1) {
		if (fstat(fd, &st) == 0)
			n = pread(fd, h, sizeof h, 0);
		close(fd);
	}
	rc = n >= 24 && memcmp(h, "QFI\xfb", 4) == 0;
	if (rc) {
		memset(h + 8, 0, 12);	/* its backing file: mid */
		rc = disk_parse_header(h, (size_t)n, (uint64_t)st.st_size,
		    &info, &why) == 0 && info.virtual_size == d->size;
		free(why);
	}
	if (!rc) {
		log_debug("%s is no overlay of this disk; qemu-img instead",
		    pristine);
		goto qemu_img;
	}
	free(d->overlay);
	xasprintf(&d->overlay, "%s/disk.qcow2", dir);
	(void)unlink(d->overlay);
	if (disk_copy(pristine, d->overlay) == -1) {
		log_debug("copying %s: %s; qemu-img instead", pristine,
		    strerror(errno));
		goto qemu_img;
	}
	disk_mids_free(d);
	d->mids = xreallocarray(NULL, 1, sizeof *d->mids);
	d->mids[0] = m;
	d->nmids = 1;
	d->overlay_seconds = util_now() - t0;
	log_debug("overlay %s over %s, copied from %s in %.3f s", d->overlay,
	    mid, pristine, d->overlay_seconds);
	return (0);
qemu_img:
	rc = disk_overlay_on(d, dir, &m, 1, cause);
	free(m);
	return (rc);
}

/*
 * A disk of the guest's own (serve's "disk" with "writable": true): the
 * file opened read-write, image locking on, so no other QEMU can open it
 * for writing meanwhile (nor qemu-img without -U); the guest's writes go
 * to the file itself, flushed as the guest asks. No layers, no overlay.
 */
static void
disk_qemu_args_writable(const struct disk *d, struct qemu_argv *a, int boot)
{
	char	*base;

	base = qemu_escape(d->base);
	qemu_arg(a, "-blockdev");
	qemu_arg(a, "driver=file,node-name=base-file,filename=%s,"
	    "locking=on", base);
	qemu_arg(a, "-blockdev");
	qemu_arg(a, "driver=%s,node-name=" DISK_NODE ",file=base-file,"
	    "discard=unmap", d->info.format);
	qemu_arg(a, "-device");
	qemu_arg(a, "virtio-blk-pci,drive=" DISK_NODE ",serial=%s,"
	    "werror=report,rerror=report%s",
	    QSUP_ROOT_SERIAL, boot ? ",bootindex=0" : "");
	free(base);
}

/*
 * QEMU's nodes: the base opened read-only, in the format its header
 * said; the kept disks over it (a template's, a snapshot's), read-only
 * too; the overlay over those; the disk the guest sees, found there by its
 * serial. A template's key leaves out the overlay's file name
 * (template.c), not the base's. An overlay that cannot grow (its file
 * system full) gives the guest I/O errors: QEMU's default for ENOSPC
 * would pause the VM, which qsup would then find not answering. With
 * boot, the BIOS boots from it (it boots only the first disk it lists).
 */
void
disk_qemu_args(const struct disk *d, struct qemu_argv *a, int boot)
{
	char	*base, *overlay, *layer, below[32], node[32];
	size_t	 i;

	if (d->writable) {
		disk_qemu_args_writable(d, a, boot);
		return;
	}
	base = qemu_escape(d->base);
	overlay = qemu_escape(d->overlay);
	qemu_arg(a, "-blockdev");
	qemu_arg(a, "driver=file,node-name=base-file,filename=%s,"
	    "read-only=on", base);
	qemu_arg(a, "-blockdev");
	qemu_arg(a, "driver=%s,node-name=base,file=base-file,read-only=on",
	    d->info.format);
	/* setup's layers, each over the node below, read-only too. */
	snprintf(below, sizeof below, "base");
	for (i = 0; i < d->nlayers; i++) {
		snprintf(node, sizeof node, "layer%zu", i);
		layer = qemu_escape(d->layers[i]);
		qemu_arg(a, "-blockdev");
		qemu_arg(a, "driver=qcow2,node-name=%s,file.driver=file,"
		    "file.filename=%s,backing=%s,read-only=on", node, layer,
		    below);
		free(layer);
		memcpy(below, node, sizeof below);
	}
	/* The kept disks (a template's, a snapshot's), read-only too. */
	for (i = 0; i < d->nmids; i++) {
		snprintf(node, sizeof node, "tdisk%zu", i);
		layer = qemu_escape(d->mids[i]);
		qemu_arg(a, "-blockdev");
		qemu_arg(a, "driver=qcow2,node-name=%s,file.driver=file,"
		    "file.filename=%s,backing=%s,read-only=on", node, layer,
		    below);
		free(layer);
		memcpy(below, node, sizeof below);
	}
	qemu_arg(a, "-blockdev");
	qemu_arg(a, "driver=qcow2,node-name=" DISK_NODE ",file.driver=file,"
	    "file.filename=%s,backing=%s,discard=unmap", overlay, below);
	qemu_arg(a, "-device");
	qemu_arg(a, "virtio-blk-pci,drive=" DISK_NODE ",serial=%s,"
	    "werror=report,rerror=report%s",
	    QSUP_ROOT_SERIAL, boot ? ",bootindex=0" : "");
	free(base);
	free(overlay);
}

/*
 * Did anything reach the base? Its size, inode, mtime and ctime against
 * those before the run (any write, even one that put the mtime back,
 * moves the ctime). Writes the JSON object of --json's
 * base_image_untouched; 1 untouched, 0 not.
 */
int
disk_untouched(const struct disk *d, struct buf *b)
{
	struct stat	st;
	int		same;

	if (d->writable) {
		/* Written on purpose: say so, never "untouched". */
		buf_puts(b, "{\"path\":");
		buf_json_string(b, d->base);
		buf_puts(b, ",\"untouched\":false,\"format\":");
		buf_json_string(b, d->info.format);
		buf_puts(b, ",\"how\":\"a writable disk: QEMU wrote to the "
		    "file itself, with no overlay\"}");
		return (0);
	}
	same = stat(d->base, &st) == 0 && st.st_dev == d->before.st_dev &&
	    st.st_ino == d->before.st_ino &&
	    st.st_size == d->before.st_size &&
	    st.st_mtim.tv_sec == d->before.st_mtim.tv_sec &&
	    st.st_mtim.tv_nsec == d->before.st_mtim.tv_nsec &&
	    st.st_ctim.tv_sec == d->before.st_ctim.tv_sec &&
	    st.st_ctim.tv_nsec == d->before.st_ctim.tv_nsec;
	buf_puts(b, "{\"path\":");
	buf_json_string(b, d->base);
	buf_printf(b, ",\"untouched\":%s,\"format\":", same ? "true" :
	    "false");
	buf_json_string(b, d->info.format);
	buf_puts(b, ",\"how\":\"the guest wrote only to a qcow2 overlay in "
	    "the run directory; QEMU opened the base read-only as its "
	    "backing file; the base's size, inode, mtime and ctime ");
	buf_puts(b, same ? "are unchanged after the run\"}" :
	    "changed during the run\"}");
	return (same);
}

void
disk_free(struct disk *d)
{
	size_t	i;

	free(d->base);
	free(d->overlay);
	disk_mids_free(d);
	for (i = 0; i < d->nlayers; i++)
		free(d->layers[i]);
	free(d->layers);
	memset(d, 0, sizeof *d);
}
