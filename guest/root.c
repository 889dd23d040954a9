/*
 * A disk image as the command's root ("root SERIAL grow|keep" in the
 * config). The agent finds the virtio disk with that serial, drops every
 * cached view of it (a guest restored from a template probed another
 * overlay of the same base), finds the root file system (disk.c), grows
 * the partition and the file system when asked, mounts it, moves the
 * kernel file systems into it and makes it the root, as switch_root does,
 * but staying PID 1: the agent is static and needs nothing from the image.
 * The shares are mounted after this, inside the new root. Every failure
 * is a setup error: a sandbox never starts on the wrong root.
 *
 * A template build of an image mounts the root before the save (POST
 * /root, root_template): a restore then has it mounted, its disk being
 * the build's overlay kept under the restore's own (the host's side),
 * and /setup only checks it and writes what is the sandbox's own.
 */
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define ROOT_STAGE		"/mnt/root"
#define ROOT_PROBE_SERIAL	"qsup-root"	/* the one qsup gives */
#define ROOT_WAIT_MS		2000
#define ROOT_LIBC_MAX		(4 * 1024 * 1024)	/* bytes scanned */
#define ROOT_LIBC_CHUNK		(256 * 1024)
#define ROOT_GROW_SLACK		(1024 * 1024)

/* From <linux/fs.h>, <linux/blkpg.h>, <linux/ext4.h>: musl has none. */
#ifndef BLKRRPART
#define BLKRRPART		_IO(0x12, 95)
#endif
#ifndef BLKFLSBUF
#define BLKFLSBUF		_IO(0x12, 97)
#endif
#ifndef BLKSSZGET
#define BLKSSZGET		_IO(0x12, 104)
#endif
#ifndef BLKGETSIZE64
#define BLKGETSIZE64		_IOR(0x12, 114, size_t)
#endif
#define ROOT_BLKPG		_IO(0x12, 105)
#define ROOT_BLKPG_RESIZE	3
#define ROOT_EXT4_RESIZE_FS	_IOW('f', 16, uint64_t)

struct root_blkpg_part {
	long long	start;
	long long	length;
	int		pno;
	char		devname[64];
	char		volname[64];
};

struct root_blkpg_arg {
	int		 op;
	int		 flags;
	int		 datalen;
	void		*data;
};

static void
root_sleep_ms(int ms)
{
	struct timespec	ts = { 0, ms * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* All of len bytes at off, read (buf) or written (wbuf); -1 short. */
static int
root_io(int fd, uint64_t off, void *buf, const void *wbuf, size_t len)
{
	ssize_t	n;
	size_t	done = 0;

	while (done < len) {
		if (buf != NULL)
			n = pread(fd, (char *)buf + done, len - done,
			    (off_t)(off + done));
		else
			n = pwrite(fd, (const char *)wbuf + done, len - done,
			    (off_t)(off + done));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return (-1);
		done += (size_t)n;
	}
	return (0);
}

/* disk_reader's read over a block device. */
static int
root_pread(void *arg, uint64_t off, void *buf, size_t len)
{
	return (root_io(*(int *)arg, off, buf, NULL, len));
}

static int
root_pwrite(int fd, uint64_t off, const void *buf, size_t len)
{
	return (root_io(fd, off, NULL, buf, len));
}

/*
 * The virtio disk whose serial is serial, as its /sys/block name; it may
 * still be appearing, so look for a bounded time. seen says what was
 * there otherwise.
 */
int
root_find_disk(const char *serial, char *name, size_t size, char *seen,
    size_t seensize)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[300], *text;
	size_t		 len, off;
	long long	 deadline;
	int		 found = 0;

	deadline = util_ms(CLOCK_MONOTONIC) + ROOT_WAIT_MS;
	for (;;) {
		off = 0;
		seen[0] = '\0';
		if ((d = opendir("/sys/block")) != NULL) {
			while (!found && (de = readdir(d)) != NULL) {
				if (strncmp(de->d_name, "vd", 2) != 0)
					continue;
				snprintf(path, sizeof path,
				    "/sys/block/%s/serial", de->d_name);
				if (util_read_file(path, &text, &len, 256) ==
				    -1)
					text = xstrdup("");
				text[strcspn(text, "\n")] = '\0';
				if (strcmp(text, serial) == 0) {
					snprintf(name, size, "%s", de->d_name);
					found = 1;
				} else if (off < seensize) {
					off += snprintf(seen + off,
					    seensize - off, "%s%s (serial "
					    "\"%.40s\")", off > 0 ? ", " : "",
					    de->d_name, text);
				}
				free(text);
			}
			closedir(d);
		}
		if (found || util_ms(CLOCK_MONOTONIC) >= deadline)
			break;
		root_sleep_ms(10);
	}
	if (!found && seen[0] == '\0')
		snprintf(seen, seensize, "no virtio disks");
	return (found ? 0 : -1);
}

/*
 * Grow the root partition to the end of the disk: write the new tables
 * (GPT: backup entries and header first, then the primary ones, and the
 * protective MBR's size), then tell the kernel the partition's new size.
 */
static int
root_grow_table(int fd, const char *disk, struct disk_root *r,
    const struct disk_reader *d, char **why)
{
	struct disk_grow	 g;
	struct root_blkpg_part	 part;
	struct root_blkpg_arg	 arg;
	unsigned char		 mbr[512];
	const char		*cause = NULL;
	uint64_t		 nlba = d->size / d->sector, s = d->sector;
	int			 ret;

	if ((ret = disk_grow_plan(r, d->sector, nlba, &g, &cause)) == -1) {
		xasprintf(why, "cannot grow partition %d: %s", r->partno,
		    cause);
		return (-1);
	}
	if (ret == 1)
		return (0);
	if (g.mbr != NULL) {
		if (root_pwrite(fd, 0, g.mbr, 512) == -1)
			goto fail;
	} else {
		if (root_pwrite(fd, g.backup_ents_lba * s, g.ents,
		    g.ents_len) == -1 ||
		    root_pwrite(fd, g.backup_lba * s, g.backup, s) == -1 ||
		    root_pwrite(fd, g.primary_ents_lba * s, g.ents,
		    g.ents_len) == -1 ||
		    root_pwrite(fd, s, g.primary, s) == -1)
			goto fail;
		if (root_pread(&fd, 0, mbr, sizeof mbr) == 0 &&
		    disk_grow_pmbr(mbr, nlba) &&
		    root_pwrite(fd, 0, mbr, sizeof mbr) == -1)
			goto fail;
	}
	if (fsync(fd) == -1)
		goto fail;
	disk_grow_free(&g);
	r->len = g.new_len;

	memset(&part, 0, sizeof part);
	part.start = (long long)r->start;
	part.length = (long long)r->len;
	part.pno = r->partno;
	memset(&arg, 0, sizeof arg);
	arg.op = ROOT_BLKPG_RESIZE;
	arg.datalen = sizeof part;
	arg.data = &part;
	if (ioctl(fd, ROOT_BLKPG, &arg) == -1 &&
	    ioctl(fd, BLKRRPART, 0) == -1) {
		xasprintf(why, "partition %d grown, but the kernel was not "
		    "told: %s", r->partno, strerror(errno));
		return (-1);
	}
	log_warnx("%s: partition %d grown to %llu MiB", disk, r->partno,
	    (unsigned long long)(r->len >> 20));
	return (0);
fail:
	xasprintf(why, "writing the grown partition table: %s",
	    strerror(errno));
	disk_grow_free(&g);
	return (-1);
}

/* Grow the mounted ext4 at dir to fill the r->len bytes under it. */
static int
root_grow_fs(const char *dir, const struct disk_root *r, char **why)
{
	uint64_t	blocks = r->len / r->fs.block_size;
	int		fd, ret;

	if (blocks <= r->fs.blocks ||
	    (blocks - r->fs.blocks) * r->fs.block_size < ROOT_GROW_SLACK)
		return (0);
	if ((fd = open(dir, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1) {
		xasprintf(why, "%s: %s", dir, strerror(errno));
		return (-1);
	}
	ret = ioctl(fd, ROOT_EXT4_RESIZE_FS, &blocks);
	close(fd);
	if (ret == -1) {
		xasprintf(why, "growing ext4 from %llu to %llu blocks: %s",
		    (unsigned long long)r->fs.blocks,
		    (unsigned long long)blocks, strerror(errno));
		return (-1);
	}
	log_warnx("ext4 grown to %llu MiB", (unsigned long long)
	    (blocks * r->fs.block_size >> 20));
	return (0);
}

/*
 * Make dir the root: move the file systems the agent mounted at top-level
 * points (/proc, /sys, /dev with /dev/pts and /dev/shm, /tmp, /run) into
 * it, then move it onto / and chroot there, as switch_root does.
 */
static int
root_switch(const char *dir, char **why)
{
	struct stat	 st;
	char		*text, *line, *save = NULL, *p, *dst;
	size_t		 len;
	int		 ret = -1;

	if (util_read_file("/proc/mounts", &text, &len, 1024 * 1024) == -1) {
		xasprintf(why, "/proc/mounts: %s", strerror(errno));
		return (-1);
	}
	/* Read whole before /proc moves away. */
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((p = strchr(line, ' ')) == NULL)
			continue;
		p++;
		p[strcspn(p, " ")] = '\0';
		if (p[0] != '/' || p[1] == '\0' || strchr(p + 1, '/') != NULL ||
		    strchr(p, '\\') != NULL)
			continue;
		xasprintf(&dst, "%s%s", dir, p);
		/* A link there would be followed outside the image. */
		if (lstat(dst, &st) == 0 && !S_ISDIR(st.st_mode)) {
			xasprintf(why, "the image's %s is not a directory", p);
			free(dst);
			goto out;
		}
		if ((mkdir(dst, 0755) == -1 && errno != EEXIST) ||
		    mount(p, dst, NULL, MS_MOVE, NULL) == -1) {
			xasprintf(why, "moving %s into the root: %s", p,
			    strerror(errno));
			free(dst);
			goto out;
		}
		free(dst);
	}
	if (chdir(dir) == -1 || mount(dir, "/", NULL, MS_MOVE, NULL) == -1 ||
	    chroot(".") == -1 || chdir("/") == -1) {
		xasprintf(why, "making %s the root: %s", dir, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	free(text);
	return (ret);
}

/* "2.N" of the first libc of the image found, read for a bounded length. */
static void
root_find_glibc(struct init_state *st)
{
	static const char *const pats[] = { "/lib/*/libc.so.6",
	    "/usr/lib/*/libc.so.6", "/lib64/libc.so.6", "/usr/lib64/libc.so.6",
	    "/lib/libc.so.6", "/usr/lib/libc.so.6", NULL };
	glob_t		 gl;
	struct stat	 sb;
	unsigned char	*buf;
	uint64_t	 size, end, off;
	size_t		 i, total = 0, len;
	int		 fd = -1, banner = -1, best = -1;

	for (i = 0; pats[i] != NULL && fd == -1; i++) {
		if (glob(pats[i], 0, NULL, &gl) != 0)
			continue;
		if (gl.gl_pathc > 0) {
			/* No FIFO or device may stall PID 1. */
			fd = open(gl.gl_pathv[0], O_RDONLY|O_NONBLOCK|
			    O_CLOEXEC);
			if (fd != -1 && (fstat(fd, &sb) == -1 ||
			    !S_ISREG(sb.st_mode))) {
				close(fd);
				fd = -1;
			}
		}
		globfree(&gl);
	}
	if (fd == -1)
		return;
	/*
	 * From the end: the banner is in .rodata, near the end of the file
	 * (Debian 12's: 1.68 MB into 1.93 MB), the symbol versions near
	 * the start. Each piece reaches DISK_GLIBC_OVERLAP bytes into the
	 * one after it, so no match is cut.
	 */
	buf = xmalloc(ROOT_LIBC_CHUNK + DISK_GLIBC_OVERLAP);
	size = (uint64_t)sb.st_size;
	end = size;
	while (banner == -1 && total < ROOT_LIBC_MAX && end > 0) {
		off = end > ROOT_LIBC_CHUNK ? end - ROOT_LIBC_CHUNK : 0;
		len = (size_t)(end - off);
		len += size - end < DISK_GLIBC_OVERLAP ? (size_t)(size - end) :
		    DISK_GLIBC_OVERLAP;
		if (root_pread(&fd, off, buf, len) == -1)
			break;
		disk_glibc_scan(buf, len, &banner, &best);
		total += (size_t)(end - off);
		end = off;
	}
	free(buf);
	close(fd);
	if (banner == -1)
		banner = best;
	if (banner != -1)
		xasprintf(&st->root_glibc, "2.%d", banner);
}

/*
 * --service: the image booted itself, and its root is mounted already.
 * Say which device it is (the host expects a root from an image), and
 * find its glibc if the host asks.
 */
void
root_service(struct init_state *st)
{
	FILE	*f;
	char	 dev[256], dir[256];

	if (st->root_device != NULL)
		return;		/* after a restore: found before the save */
	if ((f = fopen("/proc/self/mounts", "re")) != NULL) {
		while (fscanf(f, "%255s %255s %*[^\n]", dev, dir) == 2) {
			if (strcmp(dir, "/") == 0 && st->root_device == NULL)
				st->root_device = xstrdup(dev);
		}
		fclose(f);
	}
	if (st->root_device == NULL)
		st->root_device = xstrdup("/");
	if (st->cfg.root_glibc)
		root_find_glibc(st);
	log_warnx("root %s (the image's own), glibc %s", st->root_device,
	    st->root_glibc != NULL ? st->root_glibc : "not found");
}

/*
 * What the image gets from qsup: DNS when there is a network, its name.
 * Files that say so already (written at the template) are not written.
 */
static void
root_files(const struct agent_config *cfg)
{
	char	*want;
	int	 fd;

	netcfg_resolv();
	if (cfg->hostname == NULL)
		return;
	xasprintf(&want, "%s\n", cfg->hostname);
	if (util_file_is("/etc/hostname", want)) {
		free(want);
		return;
	}
	if ((fd = open("/etc/hostname", O_WRONLY|O_CREAT|O_TRUNC|O_NOFOLLOW|
	    O_CLOEXEC, 0644)) == -1) {
		log_warn("/etc/hostname");
		free(want);
		return;
	}
	dprintf(fd, "%s", want);
	close(fd);
	free(want);
}

/*
 * At boot with qsup.root=1, before any template is taken: the disk qsup
 * attaches, found by the serial qsup gives it, so that a setup (a
 * restored guest's above all) need not read every disk's serial again,
 * a virtio request each (about 30 ms under TCG). The config still names
 * the serial, and only that one is taken from here.
 */
void
root_probe(struct init_state *st)
{
	char	seen[512];

	if (root_find_disk(ROOT_PROBE_SERIAL, st->root_probed,
	    sizeof st->root_probed, seen, sizeof seen) == -1)
		st->root_probed[0] = '\0';
}

/* Is /sys/block/name still there? */
static int
root_disk_present(const char *name)
{
	char	path[300];

	snprintf(path, sizeof path, "/sys/block/%s", name);
	return (access(path, F_OK) == 0);
}

/* The partition's device node, once devtmpfs has made it. */
static char *
root_node(const char *disk, int partno)
{
	char		*dev;
	size_t		 n = strlen(disk);
	long long	 deadline;

	if (partno == 0)
		xasprintf(&dev, "/dev/%s", disk);
	else
		xasprintf(&dev, "/dev/%s%s%d", disk, n > 0 && disk[n - 1] >=
		    '0' && disk[n - 1] <= '9' ? "p" : "", partno);
	deadline = util_ms(CLOCK_MONOTONIC) + ROOT_WAIT_MS;
	while (access(dev, F_OK) == -1 && util_ms(CLOCK_MONOTONIC) < deadline)
		root_sleep_ms(5);
	return (dev);
}

/*
 * When the host says how big the disk is, wait (bounded) until the kernel
 * agrees: a guest restored from a template knows its template's disk size
 * until the host's block_resize reaches it, and growing to the wrong size
 * would be silent.
 */
static int
root_wait_size(const struct agent_config *cfg, int fd, const char *path,
    char **why)
{
	uint64_t	size = 0;
	long long	deadline;

	if (cfg->root_size == 0)
		return (0);
	deadline = util_ms(CLOCK_MONOTONIC) + ROOT_WAIT_MS;
	for (;;) {
		if (ioctl(fd, BLKGETSIZE64, &size) == -1) {
			xasprintf(why, "%s: size: %s", path, strerror(errno));
			return (-1);
		}
		if (size == cfg->root_size)
			return (0);
		if (util_ms(CLOCK_MONOTONIC) >= deadline)
			break;
		root_sleep_ms(10);
	}
	xasprintf(why, "%s is %llu bytes, the host says %llu (a guest restored "
	    "from a template sees the template's disk size until the host "
	    "resizes the disk)", path, (unsigned long long)size,
	    cfg->root_size);
	return (-1);
}

/* Open the disk and read it afresh: never a view cached at template time. */
static int
root_open(const struct agent_config *cfg, const char *disk,
    struct disk_reader *d, int *fd, char **why)
{
	char		path[300];
	uint64_t	size;
	int		sector;

	snprintf(path, sizeof path, "/dev/%s", disk);
	if ((*fd = open(path, O_RDWR|O_CLOEXEC)) == -1) {
		xasprintf(why, "%s: %s", path, strerror(errno));
		return (-1);
	}
	if (root_wait_size(cfg, *fd, path, why) == -1)
		return (-1);
	if (ioctl(*fd, BLKFLSBUF, 0) == -1 || ioctl(*fd, BLKRRPART, 0) == -1) {
		xasprintf(why, "%s: re-reading the disk: %s", path,
		    strerror(errno));
		return (-1);
	}
	if (ioctl(*fd, BLKGETSIZE64, &size) == -1 ||
	    ioctl(*fd, BLKSSZGET, &sector) == -1) {
		xasprintf(why, "%s: size: %s", path, strerror(errno));
		return (-1);
	}
	d->read = root_pread;
	d->arg = fd;
	d->size = size;
	d->sector = (uint32_t)sector;
	return (0);
}

/*
 * Find cfg's root disk, read it afresh, grow it if asked, mount its root
 * file system and make it /. 0 and *dev (the device mounted), or -1 and
 * *why.
 */
static int
root_mount(struct init_state *st, const struct agent_config *cfg,
    char **dev, char **why)
{
	struct disk_reader	 d;
	struct disk_root	 r;
	char			 disk[256], seen[512];
	long long		 t0 = util_ms(CLOCK_MONOTONIC);
	int			 fd = -1, rc = -1;

	memset(&r, 0, sizeof r);
	*dev = NULL;
	if (module_root(st) == -1)
		log_warnx("no list of the root's modules; mounting anyway");
	if (st->root_probed[0] != '\0' && strcmp(cfg->root,
	    ROOT_PROBE_SERIAL) == 0 && root_disk_present(st->root_probed))
		snprintf(disk, sizeof disk, "%s", st->root_probed);
	else if (root_find_disk(cfg->root, disk, sizeof disk, seen,
	    sizeof seen) == -1) {
		xasprintf(why, "no virtio disk with serial %s (seen: %s)",
		    cfg->root, seen);
		return (-1);
	}
	if (root_open(cfg, disk, &d, &fd, why) == -1)
		goto out;
	if (disk_find_root(&d, &r) == -1) {
		xasprintf(why, "/dev/%s: no root file system found: %s",
		    disk, r.seen);
		goto out;
	}
	if (cfg->root_grow && root_grow_table(fd, disk, &r, &d, why) == -1)
		goto out;
	*dev = root_node(disk, r.partno);
	if (util_mkdir_p(ROOT_STAGE, 0755) == -1 ||
	    mount(*dev, ROOT_STAGE, "ext4", 0, NULL) == -1) {
		xasprintf(why, "mount %s (ext4, found %s): %s%s", *dev, r.how,
		    strerror(errno), errno == ENODEV ? " (no ext4 module)" :
		    "");
		goto out;
	}
	if (cfg->root_grow && root_grow_fs(ROOT_STAGE, &r, why) == -1)
		goto out;
	if (root_switch(ROOT_STAGE, why) == -1)
		goto out;
	log_warnx("root %s (found %s) mounted in %lld ms", *dev, r.how,
	    util_ms(CLOCK_MONOTONIC) - t0);
	rc = 0;
out:
	if (rc == -1) {
		free(*dev);
		*dev = NULL;
	}
	disk_root_free(&r);
	if (fd != -1)
		close(fd);
	return (rc);
}

/*
 * The image's first dynamically linked program, run once in template
 * state: its loader, libc and ld.so.cache are then in the page cache of
 * every restore, which would otherwise read them through the disk's
 * layers (and translate the reads' drivers) on its first command. Its
 * failure is no error: an image without true only misses the head start.
 */
static void
root_warm(void)
{
	static char	 usr_true[] = "/usr/bin/true", bin_true[] = "/bin/true";
	static char	 path[] = "PATH=" AGENT_PATH;
	char		*progs[] = { usr_true, bin_true, NULL };
	char		*argv[2], *envp[] = { path, NULL };
	long long	 deadline;
	pid_t		 pid;
	size_t		 i;
	int		 status, fd;

	for (i = 0; progs[i] != NULL && access(progs[i], X_OK) == -1; i++)
		;
	if (progs[i] == NULL)
		return;
	if ((pid = fork()) == 0) {
		if ((fd = open("/dev/null", O_RDWR)) != -1) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		argv[0] = progs[i];
		argv[1] = NULL;
		execve(progs[i], argv, envp);
		_exit(127);
	}
	if (pid == -1)
		return;
	deadline = util_ms(CLOCK_MONOTONIC) + ROOT_WAIT_MS;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (util_ms(CLOCK_MONOTONIC) >= deadline) {
			kill(pid, SIGKILL);
			(void)waitpid(pid, &status, 0);
			break;
		}
		root_sleep_ms(5);
	}
}

/*
 * POST /root, in template state (a template build of a disk image, before
 * its save): the root the body's "root" line names, mounted and made / as
 * /setup would, its files written as its "hostname" line says, and its
 * first program run, so that a restore finds all that done, in its page
 * cache and (the host keeps the build's overlay under every restore's) on
 * its disk. Synced, so no restore writes back what the template dirtied.
 * /setup then checks that its root is the one mounted here.
 */
int
root_template(struct init_state *st, const char *text, size_t len,
    char **cause)
{
	struct agent_config	 cfg;
	char			*dev = NULL, *why = NULL;
	long long		 t0 = util_ms(CLOCK_MONOTONIC);

	memset(&cfg, 0, sizeof cfg);
	if (config_parse(&cfg, text, len, cause) == -1)
		return (-1);
	if (cfg.root == NULL || cfg.token != NULL || cfg.nmounts > 0 ||
	    cfg.nbinds > 0 || cfg.nenv > 0) {
		*cause = xstrdup("/root takes a root and a hostname only");
		goto fail;
	}
	if (!st->pid1 || st->root_device != NULL) {
		*cause = xstrdup(st->pid1 ? "a root is mounted already" :
		    "no root to mount: not PID 1");
		goto fail;
	}
	if (root_mount(st, &cfg, &dev, &why) == -1) {
		xasprintf(cause, "root disk: %s", why);
		free(why);
		goto fail;
	}
	root_files(&cfg);
	root_warm();
	sync();
	st->root_device = dev;
	st->root_early = 1;
	st->root_early_grow = cfg.root_grow;
	st->root_early_size = cfg.root_size;
	st->root_early_serial = cfg.root;
	cfg.root = NULL;
	log_warnx("root %s ready for the template in %lld ms", dev,
	    util_ms(CLOCK_MONOTONIC) - t0);
	config_free(&cfg);
	return (0);
fail:
	config_free(&cfg);
	return (-1);
}

/*
 * Mount the config's root disk and make it /, before the shares; or, on
 * a guest whose template mounted it (root_template), check that it is
 * the one asked for. Then what each sandbox gets in it: its files, the
 * image's config, its glibc when asked. Only as PID 1: in test mode
 * there is no disk, and the host's root stays.
 */
void
root_setup(struct init_state *st)
{
	char		*why = NULL, *dev = NULL;
	long long	 t0 = util_ms(CLOCK_MONOTONIC), t1;

	if (st->cfg.root == NULL || !st->pid1)
		return;
	if (st->root_early) {
		if (strcmp(st->cfg.root, st->root_early_serial) != 0 ||
		    st->cfg.root_grow != st->root_early_grow ||
		    st->cfg.root_size != st->root_early_size) {
			util_set_error(&st->error, "root disk: the template "
			    "mounted %s (%s, %llu bytes), setup asks for %s "
			    "(%s, %llu bytes)", st->root_early_serial,
			    st->root_early_grow ? "grow" : "keep",
			    st->root_early_size, st->cfg.root,
			    st->cfg.root_grow ? "grow" : "keep",
			    st->cfg.root_size);
			return;
		}
		st->root_early = 0;
	} else if (st->root_device != NULL)
		return;
	else if (root_mount(st, &st->cfg, &dev, &why) == -1) {
		util_set_error(&st->error, "root disk: %s", why);
		free(why);
		return;
	} else
		st->root_device = dev;
	root_files(&st->cfg);
	imageconf_load(st);
	t1 = util_ms(CLOCK_MONOTONIC);
	/* Only when the host asks: about 40 ms under TCG. */
	if (st->cfg.root_glibc)
		root_find_glibc(st);
	log_warnx("root %s set up in %lld ms, glibc %s in %lld ms",
	    st->root_device, t1 - t0, st->root_glibc != NULL ?
	    st->root_glibc : "not found", util_ms(CLOCK_MONOTONIC) - t1);
}
