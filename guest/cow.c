/*
 * Copy-on-write shares ("mount TAG PATH cow", with "cow SERIAL" naming
 * their disk). The host exports the tree read-only (QEMU's readonly=on),
 * so nothing the guest does reaches it; the guest sees it through an
 * overlay whose lower layer is the 9p tree and whose upper layer is a
 * directory of an empty ext4 on the virtio disk of that serial, which the
 * host made for this sandbox alone. A full disk is ENOSPC to the writer.
 * Once every overlay is mounted, the 9p trees and the disk are detached
 * from the guest's tree (each overlay holds its own private mounts of its
 * layers), so only the overlays show. Part of PID-1 setup (init.c).
 */
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define COW_DIR		"/run/qsup-cow"
#define COW_DISK	COW_DIR "/disk"
#define COW_LOWER	COW_DIR "/lower"
/*
 * redirect_dir: a directory of the host tree can be renamed (else EXDEV,
 * which rename(2) callers other than mv do not expect); metacopy: a chmod
 * copies up the inode, not the data. No index, no xino: the layers live
 * as long as this mount.
 */
#define COW_OVERLAY	"redirect_dir=on,metacopy=on,index=off,xino=off"
/* noinit_itable: no thread zeroing inode tables the host left sparse. */
#define COW_EXT4	"noinit_itable"

#ifndef BLKFLSBUF
#define BLKFLSBUF	_IO(0x12, 97)
#endif

/*
 * At boot with qsup.cow=SERIAL, before any template is taken (as
 * root_probe): the disk's name, so that a restored guest's setup need not
 * read every disk's serial again, a virtio request each under TCG.
 */
void
cow_probe(struct init_state *st)
{
	char	seen[512];

	if (root_find_disk(st->cow_boot, st->cow_probed,
	    sizeof st->cow_probed, seen, sizeof seen) == -1)
		st->cow_probed[0] = '\0';
}

/*
 * Mount the cow disk, once: the config's serial, read afresh (a guest
 * restored from a template probed the template's disk at boot). Without
 * a serial, a cow mount is an error. -1 with the setup error set.
 */
int
cow_setup(struct init_state *st)
{
	char		disk[256], seen[512], dev[300];
	size_t		i;
	int		fd;
	long long	t0 = util_ms(CLOCK_MONOTONIC), t1;

	if (st->cow_ready)
		return (0);
	if (st->cfg.cow == NULL) {
		for (i = 0; i < st->cfg.nmounts; i++) {
			if (!st->cfg.mounts[i].cow)
				continue;
			util_set_error(&st->error, "cow share %s: no cow disk "
			    "in the config", st->cfg.mounts[i].path);
			return (-1);
		}
		return (0);
	}
	/* ext4 (built in, or loaded by the image's own kernel by itself). */
	(void)module_root(st);
	snprintf(dev, sizeof dev, "/sys/block/%s", st->cow_probed);
	if (st->cow_probed[0] != '\0' && strcmp(st->cfg.cow,
	    st->cow_boot) == 0 && access(dev, F_OK) == 0)
		snprintf(disk, sizeof disk, "%s", st->cow_probed);
	else if (root_find_disk(st->cfg.cow, disk, sizeof disk, seen,
	    sizeof seen) == -1) {
		util_set_error(&st->error, "cow disk: no virtio disk with "
		    "serial %s (seen: %s)", st->cfg.cow, seen);
		return (-1);
	}
	snprintf(dev, sizeof dev, "/dev/%s", disk);
	if ((fd = open(dev, O_RDONLY|O_CLOEXEC)) == -1 ||
	    ioctl(fd, BLKFLSBUF, 0) == -1) {
		util_set_error(&st->error, "cow disk %s: %s", dev,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return (-1);
	}
	close(fd);
	t1 = util_ms(CLOCK_MONOTONIC);
	if (util_mkdir_p(COW_DISK, 0700) == -1 ||
	    mount(dev, COW_DISK, "ext4", MS_NODEV|MS_NOSUID, COW_EXT4) == -1) {
		util_set_error(&st->error, "cow disk: mount %s (ext4) on %s: "
		    "%s", dev, COW_DISK, strerror(errno));
		return (-1);
	}
	st->cow_ready = 1;
	log_warnx("cow disk %s found in %lld ms, mounted in %lld ms", dev,
	    t1 - t0, util_ms(CLOCK_MONOTONIC) - t1);
	return (0);
}

/*
 * The upper layer's root takes the host directory's owner, mode and
 * times: the overlay's root shows the upper's, and the guest should see
 * the tree's own.
 */
static int
cow_root_like(const char *upper, const char *lower)
{
	struct stat	st;
	struct timespec	ts[2];

	if (stat(lower, &st) == -1 || chown(upper, st.st_uid, st.st_gid) ==
	    -1 || chmod(upper, st.st_mode & 07777) == -1)
		return (-1);
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	return (utimensat(AT_FDCWD, upper, ts, 0));
}

/* One cow share: its tree read-only, then the overlay over it at m->path. */
int
cow_mount(struct init_state *st, const struct agent_mount *m)
{
	char	*lower, *upper, *work, *opts = NULL;
	int	 rc = -1;

	xasprintf(&lower, "%s/%s", COW_LOWER, m->tag);
	xasprintf(&upper, "%s/%s.upper", COW_DISK, m->tag);
	xasprintf(&work, "%s/%s.work", COW_DISK, m->tag);
	if (util_mkdir_p(lower, 0700) == -1 || mount(m->tag, lower, "9p",
	    MS_RDONLY|MS_NODEV, INIT_9P_OPTIONS) == -1) {
		util_set_error(&st->error, "mount %s on %s: %s", m->tag, lower,
		    strerror(errno));
		goto out;
	}
	if (util_mkdir_p(upper, 0755) == -1 || util_mkdir_p(work, 0700) ==
	    -1 || cow_root_like(upper, lower) == -1) {
		util_set_error(&st->error, "cow share %s: its upper layer: %s",
		    m->path, strerror(errno));
		goto out;
	}
	xasprintf(&opts, "lowerdir=%s,upperdir=%s,workdir=%s," COW_OVERLAY,
	    lower, upper, work);
	if (util_mkdir_p(m->path, 0755) == -1 || mount("qsup-cow", m->path,
	    "overlay", MS_NODEV, opts) == -1) {
		util_set_error(&st->error, "mount %s on %s (overlay over "
		    "9p): %s", m->tag, m->path, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(lower);
	free(upper);
	free(work);
	free(opts);
	return (rc);
}

/*
 * Detach the layers from the guest's tree once the overlays hold them:
 * the guest sees its cow shares only where they are mounted.
 */
void
cow_hide(struct init_state *st)
{
	char	*lower;
	size_t	 i;

	if (!st->cow_ready || st->error != NULL)
		return;
	for (i = 0; i < st->cfg.nmounts; i++) {
		if (!st->cfg.mounts[i].cow)
			continue;
		xasprintf(&lower, "%s/%s", COW_LOWER, st->cfg.mounts[i].tag);
		if (umount2(lower, MNT_DETACH) == -1)
			log_warn("umount %s", lower);
		free(lower);
	}
	if (umount2(COW_DISK, MNT_DETACH) == -1)
		log_warn("umount %s", COW_DISK);
}
