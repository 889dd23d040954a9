/*
 * "qsup image build FROM -o OUT": a bootable disk image from a
 * directory, a tarball or an OCI layout, made by an unprivileged user.
 * Every archive is checked first (image_tar.c); then ONE fakeroot session
 * extracts the layers with GNU tar, applies the whiteouts and runs
 * mke2fs -d, so the owners, modes, device nodes and hard links the
 * archives say reach the ext4 file system, never the builder's. sfdisk
 * lays out a GPT whose one partition is typed "Linux root (x86-64)",
 * debugfs sets the xattrs, tune2fs and e2fsck -D add the metadata
 * checksums (at the end: much faster than mke2fs -d keeping them up to
 * date) and qemu-img makes the
 * qcow2. With -v each step's time is logged. Everything is
 * made in a work directory beside OUT and renamed onto OUT at the end:
 * any failure, or SIGINT/SIGTERM/SIGHUP, removes it and leaves no OUT.
 * The tree and the raw disk go to a tmpfs when one has room
 * (image_scratch.c), removed as well.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_build_int.h"

#define IMAGE_BUILD_PART_START	(1024 * 1024)	/* bytes before the root */
#define IMAGE_BUILD_GPT_END	(1024 * 1024)	/* room for the backup */
#define IMAGE_BUILD_SLACK	(64 * 1024 * 1024)
#define IMAGE_BUILD_MIN		(16 * 1024 * 1024)
#define IMAGE_BUILD_ROOT_TYPE	"4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"

/*
 * Run under fakeroot: $1 the directory for the tree and the raw disk (a
 * tmpfs's or the work dir), $2 the file system's KiB, $3 the
 * image.conf to add or "", then per layer: its tar, its whiteouts to
 * remove, its opaque directories (NUL-separated lists) and "oci" or
 * "tar", "-gz" added for a gzip layer that zstd decompresses (zlib's
 * inflate: about five times gzip(1)'s speed on a 150 MB layer). The
 * lists were checked against symlinks before; find and rm get "./" paths
 * so none reads as an option. tar reads records of 1 MiB, not 10 KiB:
 * a fifth faster on a 150 MB layer. mke2fs gets -b 4096: below 512 MiB its
 * "small" type chose 1 KiB blocks, four writes per 4 KiB of a file
 * copied by -d (2.5 times slower on a 150 MB layer), and the guest a
 * slower file system; the raw disk was just made by ftruncate, so it is
 * zero already (assume_storage_prezeroed: no journal or inode table
 * written with zeros; no faster measurably, but nothing to write).
 */
static const char image_build_script[] =
"set -eu\n"
"w=$1 kib=$2 conf=$3\n"
"shift 3\n"
"mkdir \"$w/tree\"\n"
"cd \"$w/tree\"\n"
"while [ $# -ge 4 ]; do\n"
"	if [ -s \"$2\" ]; then xargs -0 rm -rf -- <\"$2\"; fi\n"
"	if [ -s \"$3\" ]; then\n"
"		xargs -0 -I{} find {} -mindepth 1 -delete <\"$3\"\n"
"	fi\n"
"	case $4 in oci*) ex=--exclude=.wh.* ;; *) ex=-- ;; esac\n"
"	z=\n"
"	case $4 in *-gz) z=\"zstd -q -d --format=gzip\" ;; esac\n"
"	tar -x ${z:+-I \"$z\"} -f \"$1\" -C \"$w/tree\" \\\n"
"	    -b 2048 --numeric-owner --same-owner --same-permissions \\\n"
"	    --no-xattrs \\\n"
"	    --no-acls --no-selinux --warning=no-unknown-keyword \\\n"
"	    --warning=no-timestamp \"$ex\"\n"
"	shift 4\n"
"done\n"
"if [ -n \"$conf\" ]; then\n"
"	mkdir -p -m 755 \"$w/tree/etc/qsup\"\n"
"	cp \"$conf\" \"$w/tree/etc/qsup/image.conf\"\n"
"	chown 0:0 \"$w/tree/etc/qsup\" \"$w/tree/etc/qsup/image.conf\"\n"
"	chmod 644 \"$w/tree/etc/qsup/image.conf\"\n"
"fi\n"
"exec mke2fs -q -F -t ext4 -b 4096 -O ^metadata_csum -L root \\\n"
"    -E offset=1048576,nodiscard,assume_storage_prezeroed=1 \\\n"
"    -d \"$w/tree\" \"$w/disk.raw\" \"${kib}k\"\n";

/* Every tool the build runs, or an error naming the Debian package. */
static int
image_build_tools(int dir, char **cause)
{
	static const char *const tools[][2] = {
		{ "mke2fs", "e2fsprogs" }, { "debugfs", "e2fsprogs" },
		{ "tune2fs", "e2fsprogs" }, { "e2fsck", "e2fsprogs" },
		{ "sfdisk", "fdisk" }, { "qemu-img", "qemu-utils" },
		{ "fakeroot", "fakeroot" }, { "tar", "tar" },
		{ "find", "findutils" }, { "xargs", "findutils" },
	};
	char	*p;
	size_t	 i, n = dir ? 6 : sizeof tools / sizeof tools[0];

	for (i = 0; i < n; i++) {
		if ((p = util_which(tools[i][0])) == NULL) {
			xasprintf(cause, "%s not found (Debian package %s)",
			    tools[i][0], tools[i][1]);
			return (-1);
		}
		free(p);
	}
	return (0);
}

static void
image_build_arg(struct image_bstate *b, const char *arg)
{
	b->argv = xreallocarray(b->argv, b->argc + 2, sizeof *b->argv);
	b->argv[b->argc++] = xstrdup(arg);
	b->argv[b->argc] = NULL;
}

/* Does file start as gzip does? */
static int
image_build_is_gzip(const char *file)
{
	unsigned char	m[2];
	int		fd, gz;

	if ((fd = open(file, O_RDONLY|O_CLOEXEC)) == -1)
		return (0);
	gz = read(fd, m, 2) == 2 && m[0] == 0x1f && m[1] == 0x8b;
	close(fd);
	return (gz);
}

/*
 * Can zstd here decompress gzip (built with zlib, as Debian's is)? A
 * gzip of nothing, tried: otherwise GNU tar's gzip(1) does it.
 */
static int
image_build_zstd_gzip(struct image_bstate *b)
{
	static const unsigned char	 empty[] = { 0x1f, 0x8b, 8, 0, 0, 0,
		    0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct buf			 gz = { 0 };
	char				*in, *cause = NULL, *p;
	char				*argv[] = { "zstd", "-q", "-d",
		    "--format=gzip", "-c", NULL };
	int				 ok;

	if ((p = util_which("zstd")) == NULL)
		return (0);
	free(p);
	buf_add(&gz, empty, sizeof empty);
	in = image_build_file(b, "empty.gz", &gz, &cause);
	buf_free(&gz);
	if (in == NULL) {
		free(cause);
		return (0);
	}
	ok = image_build_run(b, argv, in, "zstd", &cause) == 0;
	free(cause);
	(void)unlink(in);
	free(in);
	return (ok);
}

/* One archive checked, and its four arguments for the script. */
static int
image_build_layer(struct image_bstate *b, const char *file, const char *what,
    int layer, char **cause)
{
	struct buf	 rm = { 0 }, opq = { 0 };
	char		*name, *prm = NULL, *popq = NULL, *abs;
	int		 ret = -1;

	if (image_tree_add(b->tree, file, what, layer, b->is_oci, &rm, &opq,
	    cause) == -1)
		goto out;
	xasprintf(&name, "layer%d.rm", layer);
	prm = image_build_file(b, name, &rm, cause);
	free(name);
	xasprintf(&name, "layer%d.opq", layer);
	popq = prm != NULL ? image_build_file(b, name, &opq, cause) : NULL;
	free(name);
	if (popq == NULL)
		goto out;
	/* The script runs in the tree: an absolute path. */
	if ((abs = realpath(file, NULL)) == NULL) {
		xasprintf(cause, "%s: %s", what, strerror(errno));
		goto out;
	}
	image_build_arg(b, abs);
	free(abs);
	image_build_arg(b, prm);
	image_build_arg(b, popq);
	if (b->zgz && image_build_is_gzip(file))
		image_build_arg(b, b->is_oci ? "oci-gz" : "tar-gz");
	else
		image_build_arg(b, b->is_oci ? "oci" : "tar");
	ret = 0;
out:
	buf_free(&rm);
	buf_free(&opq);
	free(prm);
	free(popq);
	return (ret);
}

/*
 * The image's config as image.conf in the work directory, once its
 * layers are checked; refused where a symlink of the image would take
 * it out of the tree.
 */
static int
image_build_conf(struct image_bstate *b, char **confp, char **cause)
{
	if (image_tree_is_link(b->tree, "etc") ||
	    image_tree_is_link(b->tree, "etc/qsup") ||
	    image_tree_is_link(b->tree, "etc/qsup/image.conf")) {
		xasprintf(cause, "the image's /etc, /etc/qsup or %s is "
		    "a symlink: no place for its config", QSUP_IMAGE_CONF);
		return (-1);
	}
	if ((*confp = image_build_file(b, "image.conf", &b->oci.conf,
	    cause)) == NULL)
		return (-1);
	return (0);
}

/* FROM's archives checked, the fakeroot command built. */
static int
image_build_check(struct image_bstate *b, const char *from, char **cause)
{
	char	*what, *conf;
	size_t	 i;
	int	 ret = -1;

	b->tree = image_tree_new();
	b->zgz = image_build_zstd_gzip(b);
	image_build_arg(b, "fakeroot");
	image_build_arg(b, "--");
	image_build_arg(b, "sh");
	image_build_arg(b, "-c");
	image_build_arg(b, image_build_script);
	image_build_arg(b, "sh");
	image_build_arg(b, b->work);
	image_build_arg(b, "0");	/* the size, once known */
	image_build_arg(b, "");		/* image.conf, if any */
	if (b->is_oci) {
		if (image_oci_open(from, b->req->verified, &b->oci,
		    cause) == -1)
			goto out;
		for (i = 0; i < b->oci.nlayers; i++) {
			xasprintf(&what, "layer %s", b->oci.digests[i]);
			ret = image_build_layer(b, b->oci.layers[i], what,
			    (int)i, cause);
			free(what);
			if (ret == -1)
				goto out;
		}
		if ((ret = image_build_conf(b, &conf, cause)) == 0) {
			free(b->argv[8]);
			b->argv[8] = conf;
		}
	} else
		ret = image_build_layer(b, from, from, 0, cause);
out:
	return (ret);
}

/*
 * The layers were extracted as they came (image_build_stream.c): the
 * layout's config now, its layers the very ones extracted.
 */
static int
image_build_streamed(struct image_bstate *b, const char *from, char **cause)
{
	char	*conf = NULL;
	size_t	 i;
	int	 ret;

	if (image_oci_open(from, b->req->verified, &b->oci, cause) == -1)
		return (-1);
	for (i = 0; i < b->oci.nlayers && i < b->req->nstream; i++) {
		if (strcmp(b->oci.digests[i], b->req->stream_layers[i]) != 0)
			break;
	}
	if (i != b->oci.nlayers || i != b->req->nstream) {
		xasprintf(cause, "%s: its layers are not those extracted as "
		    "they came", from);
		return (-1);
	}
	ret = image_build_conf(b, &conf, cause);
	free(conf);
	if (ret == 0)
		ret = image_build_stream_conf(b, &b->oci.conf, cause);
	return (ret);
}

static uint64_t	image_build_dir_bytes;

static int
image_build_du_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)path;
	(void)flag;
	(void)ftw;
	image_build_dir_bytes += (uint64_t)st->st_blocks * 512 + 256;
	return (0);
}

/* The disk's size and the file system's within it. */
static int
image_build_sizes(struct image_bstate *b, uint64_t tree, char **cause)
{
	uint64_t	mib = 1024 * 1024;

	if (b->req->size != 0)
		b->disk = b->req->size / mib * mib;
	else
		b->disk = (tree * 4 / 3 + IMAGE_BUILD_SLACK + mib - 1) / mib *
		    mib + IMAGE_BUILD_PART_START + IMAGE_BUILD_GPT_END;
	if (b->disk < IMAGE_BUILD_MIN) {
		xasprintf(cause, "--size: %llu bytes is too small (at least "
		    "%d MiB)", (unsigned long long)b->req->size,
		    IMAGE_BUILD_MIN / (1024 * 1024));
		return (-1);
	}
	b->fs = b->disk - IMAGE_BUILD_PART_START - IMAGE_BUILD_GPT_END;
	return (0);
}

/* Has dir's file system room for bytes more? */
static int
image_build_room(const char *dir, uint64_t bytes)
{
	struct statvfs	sv;

	return (statvfs(dir, &sv) == 0 &&
	    (uint64_t)sv.f_bavail * sv.f_frsize >= bytes);
}

/* The raw disk: its GPT, one partition of the root type. */
static int
image_build_table(struct image_bstate *b, char **cause)
{
	struct buf	 s = { 0 };
	char		*raw, *in = NULL;
	/* Not a device: nothing to re-read, and no sleep, no sync(2) for
	 * it (a quarter of a second). */
	char		*argv[] = { "sfdisk", "--quiet", "--no-reread",
		    "--no-tell-kernel", NULL, NULL };
	int		 fd, ret = -1;

	xasprintf(&raw, "%s/disk.raw", b->rawdir);
	if ((fd = open(raw, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600)) == -1 ||
	    ftruncate(fd, (off_t)b->disk) == -1 || close(fd) == -1) {
		xasprintf(cause, "%s: %s", raw, strerror(errno));
		goto out;
	}
	buf_printf(&s, "label: gpt\nstart=%d, size=%llu, type=%s, name=root\n",
	    IMAGE_BUILD_PART_START / 512,
	    (unsigned long long)(b->fs / 512), IMAGE_BUILD_ROOT_TYPE);
	if ((in = image_build_file(b, "sfdisk.in", &s, cause)) == NULL)
		goto out;
	argv[4] = raw;
	ret = image_build_run(b, argv, in, "sfdisk", cause);
out:
	buf_free(&s);
	free(in);
	free(raw);
	return (ret);
}

/* The xattrs the archives gave, set on the finished file system. */
static int
image_build_xattrs(struct image_bstate *b, char **cause)
{
	struct buf	 cmds = { 0 };
	char		*script = NULL, *dev, *tail;
	char		*argv[] = { "debugfs", "-w", "-f", NULL, NULL, NULL };
	int		 ret = -1;

	if (b->tree == NULL || image_tree_nxattrs(b->tree) == 0)
		return (0);
	if (image_tree_xattr_script(b->tree, b->work, &cmds, cause) == -1 ||
	    (script = image_build_file(b, "xattrs.debugfs", &cmds,
	    cause)) == NULL)
		goto out;
	xasprintf(&dev, "%s/disk.raw?offset=%d", b->rawdir,
	    IMAGE_BUILD_PART_START);
	argv[3] = script;
	argv[4] = dev;
	ret = image_build_run(b, argv, NULL, "debugfs (setting xattrs)",
	    cause);
	free(dev);
	/* debugfs's status says nothing of its commands: its output does. */
	if (ret == 0) {
		tail = image_build_log_tail(b);
		if (strstr(tail, "ea_set:") != NULL) {
			xasprintf(cause, "debugfs (setting xattrs): %s", tail);
			ret = -1;
		}
		free(tail);
	}
out:
	buf_free(&cmds);
	free(script);
	return (ret);
}

/* The file system, from the checked archives or from the directory. */
static int
image_build_fs(struct image_bstate *b, int dir, char **cause)
{
	char	*kib, *raw, *tree;
	char	*argv[] = { "mke2fs", "-q", "-F", "-t", "ext4", "-b", "4096",
		    "-O", "^metadata_csum", "-L", "root", "-E",
		    "offset=1048576,nodiscard,assume_storage_prezeroed=1",
		    "-d", NULL, NULL, NULL, NULL };
	int	 ret;

	xasprintf(&kib, "%lluk", (unsigned long long)(b->fs / 1024));
	if (dir) {
		xasprintf(&raw, "%s/disk.raw", b->rawdir);
		if ((tree = realpath(b->req->from, NULL)) == NULL)
			tree = xstrdup(b->req->from);
		argv[14] = tree;
		argv[15] = raw;
		argv[16] = kib;
		ret = image_build_run(b, argv, NULL, "mke2fs", cause);
		free(tree);
		free(raw);
	} else {
		free(b->argv[6]);
		b->argv[6] = xstrdup(b->scratch);
		free(b->argv[7]);
		xasprintf(&b->argv[7], "%llu",
		    (unsigned long long)(b->fs / 1024));
		ret = image_build_run(b, b->argv, NULL, "fakeroot (tar, mke2fs)",
		    cause);
	}
	free(kib);
	if (ret == -1 && strstr(*cause, "Could not allocate block") != NULL) {
		kib = *cause;
		xasprintf(cause, "the file system (%llu MiB) is too small for "
		    "the tree: give a larger --size (%s)",
		    (unsigned long long)(b->fs >> 20), kib);
		free(kib);
	}
	return (ret);
}

/*
 * The metadata checksums, computed once over the finished file system:
 * mke2fs -d keeps them up to date on every extent it writes, in software
 * (crc32c), which made it about 2.5 times slower on a 150 MB layer.
 * tune2fs cannot add a directory block's checksum where the block has no
 * room left for it: e2fsck -D rebuilds those (its exit 1 says it did).
 */
static int
image_build_csum(struct image_bstate *b, char **cause)
{
	char	*dev, *argv[] = { "sh", "-c", "tune2fs -O metadata_csum "
		    "\"$1\" && { e2fsck -f -y -D \"$1\"; [ $? -le 1 ]; }", "sh",
		    NULL, NULL };
	int	 ret;

	xasprintf(&dev, "%s/disk.raw?offset=%d", b->rawdir,
	    IMAGE_BUILD_PART_START);
	argv[4] = dev;
	ret = image_build_run(b, argv, NULL, "tune2fs, e2fsck (metadata_csum)",
	    cause);
	free(dev);
	return (ret);
}

/*
 * OUT: the qcow2, written in the work directory, flushed, renamed; or,
 * for the cache (defer_sync, its .meta saying so: image.c), renamed and
 * left to the kernel's writeback.
 */
static int
image_build_out(struct image_bstate *b, char **cause)
{
	/* -W: out of order, the clusters written as they are read (a
	 * little faster on a 150 MB image, within this machine's noise);
	 * OUT is synced before its rename anyway, or left for later. */
	char	*raw, *tmp, *argv[] = { "qemu-img", "convert", "-W", "-f",
		    "raw", "-O", "qcow2", NULL, NULL, NULL };
	int	 fd, ret = -1, rc;

	xasprintf(&raw, "%s/disk.raw", b->rawdir);
	xasprintf(&tmp, "%s/out.qcow2", b->work);
	argv[7] = raw;
	argv[8] = tmp;
	if (b->req->defer_sync)
		rc = image_build_run(b, argv, NULL, "qemu-img convert", cause);
	else
		rc = image_build_run_flushing(b, argv, tmp, "qemu-img convert",
		    cause);
	if (rc == -1)
		goto out;
	if (!b->req->defer_sync) {
		if ((fd = open(tmp, O_RDONLY|O_CLOEXEC)) == -1 ||
		    fsync(fd) == -1) {
			xasprintf(cause, "%s: %s", tmp, strerror(errno));
			if (fd != -1)
				close(fd);
			goto out;
		}
		close(fd);
	}
	if (image_build_sig != 0) {
		xasprintf(cause, "interrupted by signal %d", image_build_sig);
		goto out;
	}
	if (rename(tmp, b->req->out) == -1) {
		xasprintf(cause, "%s: %s", b->req->out, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	free(raw);
	free(tmp);
	return (ret);
}

/*
 * The tree, in mke2fs's file system now: removed by a child while the
 * last steps run (freeing its pages took 50 to 90 ms on a 150 MB layer).
 * Not forked, the cleanup removes it.
 */
static void
image_build_drop_tree(struct image_bstate *b)
{
	char	*tree;
	pid_t	 pid;

	xasprintf(&tree, "%s/tree", b->scratch);
	if ((pid = fork()) == 0) {
		image_scratch_clean(tree);
		_exit(0);
	}
	if (pid > 0)
		b->rm_tree = pid;
	free(tree);
}

/* The work directory, gone: directories made reachable first. */
static void
image_build_cleanup(struct image_bstate *b)
{
	size_t	i;

	image_build_stream_stop(b);
	while (b->rm_tree > 0 && waitpid(b->rm_tree, NULL, 0) == -1 &&
	    errno == EINTR)
		/* nothing */;
	if (b->tmp != NULL)
		image_scratch_clean(b->tmp);
	free(b->tmp);
	if (b->tmp_lock != -1)
		close(b->tmp_lock);
	if (b->work != NULL)
		image_scratch_clean(b->work);
	free(b->work);
	if (b->log != -1)
		close(b->log);
	image_tree_free(b->tree);
	image_oci_free(&b->oci);
	for (i = 0; i < b->argc; i++)
		free(b->argv[i]);
	free(b->argv);
}

static int	image_build_inside(const char *, const char *);

/* With -v, how long each step took: where a build's time goes. */
static void
image_build_phase(struct image_bstate *b, const char *what)
{
	double	now = util_now();

	log_debug("image build: %s %.0f ms", what, (now - b->t) * 1000);
	b->t = now;
}

/* The tree's bytes: checked (or extracted as the layers came). */
static int
image_build_tree(struct image_bstate *b, const char *from, int dir,
    uint64_t *tree, char **cause)
{
	int	r;

	if (dir) {
		image_build_dir_bytes = 0;
		if (nftw(from, image_build_du_cb, 32, FTW_PHYS) == -1) {
			xasprintf(cause, "%s: %s", from, strerror(errno));
			return (-1);
		}
		*tree = image_build_dir_bytes;
		return (0);
	}
	if (b->is_oci && b->req->stream) {
		if ((r = image_build_stream(b, cause)) == -1)
			return (-1);
		if (r == 0) {
			if (image_build_streamed(b, from, cause) == -1)
				return (-1);
			*tree = image_tree_bytes(b->tree);
			image_build_phase(b, "layers extracted as they came");
			return (0);
		}
	}
	if (image_build_check(b, from, cause) == -1)
		return (-1);
	*tree = image_tree_bytes(b->tree);
	image_build_phase(b, "check");
	return (0);
}

/* The build's steps, in its work directory. */
static int
image_build_steps(struct image_bstate *b, const char *from, int dir,
    char **cause)
{
	uint64_t	tree;

	b->t = util_now();
	if (image_build_tools(dir, cause) == -1 ||
	    image_build_tree(b, from, dir, &tree, cause) == -1)
		return (-1);
	/* The tree, and the raw disk about as big, on a tmpfs if it has
	 * room: neither is ever written back to the disk. */
	if (b->session <= 0)
		b->tmp = image_scratch_make(tree * 2 + IMAGE_BUILD_SLACK,
		    &b->tmp_lock);
	if (b->tmp != NULL && dir && image_build_inside(from, b->tmp)) {
		/* mke2fs -d would copy the disk into itself. */
		image_scratch_clean(b->tmp);
		free(b->tmp);
		b->tmp = NULL;
		close(b->tmp_lock);
		b->tmp_lock = -1;
	}
	b->scratch = b->rawdir = b->tmp != NULL ? b->tmp : b->work;
	if (image_build_sizes(b, tree, cause) == -1)
		return (-1);
	/* Extracted as they came, the tree went to a tmpfs before its size
	 * was known: the raw disk goes beside OUT if the tmpfs has no room. */
	if (b->session > 0 && b->tmp != NULL && !image_build_room(b->tmp,
	    b->disk + IMAGE_BUILD_SLACK))
		b->rawdir = b->work;
	if (b->rawdir == b->scratch)
		log_debug("image build: tree and raw disk in %s", b->scratch);
	else
		log_debug("image build: tree in %s, raw disk in %s",
		    b->scratch, b->rawdir);
	if (
	    image_build_table(b, cause) == -1)
		return (-1);
	image_build_phase(b, "sfdisk");
	if (b->session > 0 ? image_build_stream_fs(b, cause) == -1 :
	    image_build_fs(b, dir, cause) == -1)
		return (-1);
	image_build_phase(b, dir ? "mke2fs" : "tar+mke2fs");
	if (!dir)
		image_build_drop_tree(b);
	if (image_build_xattrs(b, cause) == -1)
		return (-1);
	image_build_phase(b, "xattrs");
	if (image_build_csum(b, cause) == -1)
		return (-1);
	image_build_phase(b, "csum");
	if (image_build_out(b, cause) == -1)
		return (-1);
	image_build_phase(b, "qcow2");
	return (0);
}

/* Is the directory path inside (or) dir? */
static int
image_build_inside(const char *dir, const char *path)
{
	char	*d, *p;
	size_t	 n;
	int	 in = 0;

	d = realpath(dir, NULL);
	p = realpath(path, NULL);
	if (d != NULL && p != NULL) {
		n = strlen(d);
		in = strncmp(d, p, n) == 0 && (p[n] == '\0' || p[n] == '/' ||
		    strcmp(d, "/") == 0);
	}
	free(d);
	free(p);
	return (in);
}

int
image_build(const struct image_build_req *req, int *sig, char **cause)
{
	struct image_bstate	 b;
	struct sigaction	 sa, old[3];
	struct stat		 st;
	const char		*from = req->from;
	char			*copy, *parent, *base;
	int			 i, dir = 0, ret = -1;
	static const int	 sigs[3] = { SIGINT, SIGTERM, SIGHUP };

	memset(&b, 0, sizeof b);
	b.log = -1;
	b.tmp_lock = -1;
	b.session = b.session_fd = -1;
	b.req = req;
	*sig = 0;
	if (strncmp(from, "oci:", 4) == 0) {
		b.is_oci = 1;
		from += 4;
	} else if (stat(from, &st) == -1) {
		xasprintf(cause, "%s: %s", from, strerror(errno));
		return (-1);
	} else
		dir = S_ISDIR(st.st_mode);

	/*
	 * The work directory by its real path: the script cds into its tree
	 * and gives tar and mke2fs paths under it, which a relative OUT
	 * would make relative to the tree itself.
	 */
	copy = xstrdup(req->out);
	if ((parent = realpath(dirname(copy), NULL)) == NULL) {
		xasprintf(cause, "%s: %s", req->out, strerror(errno));
		free(copy);
		return (-1);
	}
	free(copy);
	copy = xstrdup(req->out);
	base = basename(copy);
	xasprintf(&b.work, "%s/.%s.build.XXXXXX", parent, base);
	free(copy);
	if (dir && image_build_inside(from, parent)) {
		xasprintf(cause, "%s lies inside the directory %s: mke2fs -d "
		    "would copy the image into itself", req->out, from);
		free(parent);
		free(b.work);
		return (-1);
	}
	free(parent);
	if (mkdtemp(b.work) == NULL) {
		xasprintf(cause, "%s: %s", b.work, strerror(errno));
		free(b.work);
		b.work = NULL;
		return (-1);
	}
	if ((b.log = memfd_create("qsup-image-build", MFD_CLOEXEC)) == -1) {
		xasprintf(cause, "memfd_create: %s", strerror(errno));
		image_build_cleanup(&b);
		return (-1);
	}

	image_build_sig = 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = image_build_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	ret = image_build_steps(&b, from, dir, cause);
	image_build_cleanup(&b);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	*sig = image_build_sig;
	return (ret);
}
