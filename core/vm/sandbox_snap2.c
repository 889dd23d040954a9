/*
 * Snapshots of format 2: the RAM of a sandbox restored from a shared-RAM
 * template is the template's RAM file mapped private in its QEMU, so it
 * differs from the template only in the pages QEMU copied on write. The
 * save keeps those pages (found in /proc/PID/pagemap: present or swapped,
 * and not file-backed; read through /proc/PID/mem, qsup being QEMU's
 * parent) in ram.pages, one bit a page in ram.map, and the template's
 * file pinned by a hard link (tpl.ram), so a rebuild of the template or
 * its eviction does not change what the snapshot restores. The devices
 * go in the state file through QMP xen-save-devices-state (no RAM).
 * A restore maps tpl.ram private, as a template restore does, with
 * -incoming from a pipe: once QEMU runs (and waits on the pipe), the
 * pages are written into its RAM through /proc/PID/mem (a write to a
 * private mapping copies the page, the file is never written) and the
 * device state goes into the pipe. QEMU 7.2's xen-load-devices-state
 * aborts outside a migration (yank_unregister_instance), so the state is
 * loaded as an incoming migration without RAM; the stream has no
 * configuration section, hence migration.send-configuration=off.
 */
#include <sys/stat.h>

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "sandbox_int.h"

#define SNAP2_PAGE	4096
#define SNAP2_RUN	256		/* pages a read or write at most */
#define SNAP2_STATE_MAX	(1024 * 1024)	/* a device state's bytes at most */
#define PM_PRESENT	(1ULL << 63)
#define PM_SWAPPED	(1ULL << 62)
#define PM_FILE		(1ULL << 61)

/* Is sb's RAM a private mapping of a file qsup gave it? */
int
sandbox_snap2_able(struct sandbox *sb)
{
	if (sb->snap != NULL)
		return (sb->snap->format == 2);
	return (sb->mode == SB_RESTORE &&
	    sandbox_template_format(sb) == TEMPLATE_SHARED);
}

static uint64_t
snap2_size(struct sandbox *sb)
{
	return (sb->profile->memory_mib << 20);
}

/*
 * The guest's RAM in QEMU pid: the private file mapping of its size. Its
 * start into *start, the file's path (as the kernel shows it) into *path
 * and its inode into *ino; -1 with *cause if there is none.
 */
static int
snap2_find(pid_t pid, uint64_t size, uint64_t *start, char **path,
    uint64_t *ino, char **cause)
{
	FILE		*f;
	char		*maps, line[8192], perms[8], dev[16], file[4096];
	unsigned long long a, b, off, inode;
	int		 found = 0;

	xasprintf(&maps, "/proc/%ld/maps", (long)pid);
	if ((f = fopen(maps, "re")) == NULL) {
		xasprintf(cause, "%s: %s", maps, strerror(errno));
		free(maps);
		return (-1);
	}
	while (!found && fgets(line, sizeof line, f) != NULL) {
		file[0] = '\0';
		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %4095[^\n]", &a,
		    &b, perms, &off, dev, &inode, file) < 6)
			continue;
		if (b - a != size || off != 0 || perms[3] != 'p' ||
		    inode == 0 || file[0] != '/')
			continue;
		found = 1;
		*start = a;
		*ino = inode;
		*path = xstrdup(file);
	}
	fclose(f);
	if (!found)
		xasprintf(cause, "%s has no private file mapping of the guest's "
		    "%" PRIu64 " bytes of RAM", maps, size);
	free(maps);
	return (found ? 0 : -1);
}

/* The pagemap entries of the npages pages at start in pid. */
static uint64_t *
snap2_pagemap(pid_t pid, uint64_t start, size_t npages, char **cause)
{
	uint64_t	*pm;
	char		*path;
	ssize_t		 n;
	int		 fd;

	xasprintf(&path, "/proc/%ld/pagemap", (long)pid);
	pm = xcalloc(npages, sizeof *pm);
	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1 ||
	    (n = pread(fd, pm, npages * sizeof *pm, (off_t)(start /
	    SNAP2_PAGE * sizeof *pm))) != (ssize_t)(npages * sizeof *pm)) {
		xasprintf(cause, "%s: %s", path, fd == -1 || n == -1 ?
		    strerror(errno) : "short read");
		if (fd != -1)
			close(fd);
		free(path);
		free(pm);
		return (NULL);
	}
	close(fd);
	free(path);
	return (pm);
}

/* A page QEMU copied on write (or wrote and the kernel swapped out). */
static int
snap2_dirty(uint64_t e)
{
	return ((e & (PM_PRESENT|PM_SWAPPED)) != 0 && (e & PM_FILE) == 0);
}

/* Writes all of len bytes at fd's offset off, or -1. */
static int
snap2_pwrite(int fd, const void *p, size_t len, off_t off)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = pwrite(fd, p, len, off)) <= 0)
			return (-1);
		p = (const char *)p + n;
		len -= n;
		off += n;
	}
	return (0);
}

/* Reads all of len bytes at fd's offset off, or -1. */
static int
snap2_pread(int fd, void *p, size_t len, off_t off)
{
	ssize_t	n;

	while (len > 0) {
		if ((n = pread(fd, p, len, off)) <= 0)
			return (-1);
		p = (char *)p + n;
		len -= n;
		off += n;
	}
	return (0);
}

/*
 * QEMU's own descriptor of the file of inode ino (it keeps its RAM
 * backend's open): "/proc/PID/fd/N", or NULL.
 */
static char *
snap2_qemu_fd(pid_t pid, uint64_t ino)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		*dir, *path = NULL;

	xasprintf(&dir, "/proc/%ld/fd", (long)pid);
	if ((d = opendir(dir)) == NULL) {
		free(dir);
		return (NULL);
	}
	while (path == NULL && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		xasprintf(&path, "%s/%s", dir, de->d_name);
		if (stat(path, &st) == -1 || (uint64_t)st.st_ino != ino ||
		    !S_ISREG(st.st_mode)) {
			free(path);
			path = NULL;
		}
	}
	closedir(d);
	free(dir);
	return (path);
}

/*
 * A copy of the RAM file QEMU maps (its name gone: a fork's hidden
 * snapshot removed, a snapshot deleted, the template evicted), its holes
 * kept: only the extents with data are copied, at their offsets.
 */
static int
snap2_copy(pid_t pid, uint64_t ino, const char *to, char **cause)
{
	struct stat	 st;
	char		*from;
	off_t		 data, hole, o, w;
	int		 in = -1, out = -1, rc = -1;

	if ((from = snap2_qemu_fd(pid, ino)) == NULL) {
		xasprintf(cause, "QEMU %ld holds no descriptor of its RAM file "
		    "(inode %" PRIu64 ")", (long)pid, ino);
		return (-1);
	}
	if ((in = open(from, O_RDONLY|O_CLOEXEC)) == -1 ||
	    fstat(in, &st) == -1 || (out = open(to, O_WRONLY|O_CREAT|O_EXCL|
	    O_CLOEXEC, 0600)) == -1 || ftruncate(out, st.st_size) == -1)
		goto fail;
	for (data = 0; (data = lseek(in, data, SEEK_DATA)) != -1;
	    data = hole) {
		if ((hole = lseek(in, data, SEEK_HOLE)) == -1)
			goto fail;
		/* Each call moves both offsets on by what it copied. */
		for (o = data, w = data; o < hole; )
			if (copy_file_range(in, &o, out, &w, hole - o, 0) <= 0)
				goto fail;
	}
	if (errno != ENXIO || fsync(out) == -1)
		goto fail;
	rc = 0;
	goto out;
fail:
	xasprintf(cause, "copying %s to %s: %s", from, to, strerror(errno));
	if (out != -1)
		unlink(to);
out:
	if (in != -1)
		close(in);
	if (out != -1)
		close(out);
	free(from);
	return (rc);
}

/*
 * The template's RAM file, pinned in dir: a hard link to the inode the
 * guest's RAM maps, or, when its name is gone or on another file system,
 * a copy of it through QEMU's descriptor.
 */
static int
snap2_pin(pid_t pid, const char *path, uint64_t ino, const char *dir,
    char **cause)
{
	struct stat	 st;
	char		*to;
	int		 rc = 0;

	xasprintf(&to, "%s/" SANDBOX_SNAP_TPL, dir);
	if (link(path, to) == 0 && stat(to, &st) == 0 &&
	    (uint64_t)st.st_ino == ino) {
		free(to);
		return (0);
	}
	unlink(to);
	log_debug("snapshot: %s cannot be linked; copying it", path);
	rc = snap2_copy(pid, ino, to, cause);
	free(to);
	return (rc);
}

/* Opens dir/name for writing, new. */
static int
snap2_create(const char *dir, const char *name, char **cause)
{
	char	*path;
	int	 fd;

	xasprintf(&path, "%s/%s", dir, name);
	if ((fd = open(path, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600)) == -1)
		xasprintf(cause, "%s: %s", path, strerror(errno));
	free(path);
	return (fd);
}

/*
 * Save the stopped guest's RAM of sb into dir: its dirty pages, their
 * map, its template pinned. Adds the bytes written to *bytes.
 */
int
sandbox_snap2_save(struct sandbox *sb, const char *dir, uint64_t *bytes,
    char **cause)
{
	pid_t		 pid = qemu_pid(sb->qemu);
	uint64_t	 size = snap2_size(sb), start, ino, *pm = NULL;
	size_t		 npages = size / SNAP2_PAGE, i, n, out = 0;
	uint8_t		*map = NULL;
	char		*path = NULL, *mem = NULL, *buf = NULL;
	int		 memfd = -1, pfd = -1, mfd = -1, rc = -1;

	if (snap2_find(pid, size, &start, &path, &ino, cause) == -1 ||
	    snap2_pin(pid, path, ino, dir, cause) == -1 ||
	    (pm = snap2_pagemap(pid, start, npages, cause)) == NULL)
		goto out;
	xasprintf(&mem, "/proc/%ld/mem", (long)pid);
	if ((memfd = open(mem, O_RDONLY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", mem, strerror(errno));
		goto out;
	}
	if ((pfd = snap2_create(dir, SANDBOX_SNAP_PAGES, cause)) == -1 ||
	    (mfd = snap2_create(dir, SANDBOX_SNAP_MAP, cause)) == -1)
		goto out;
	map = xcalloc(1, npages / 8);
	buf = xmalloc(SNAP2_RUN * SNAP2_PAGE);
	/* Runs of dirty pages, each read and written in one piece. */
	for (i = 0; i < npages; i += n) {
		if (!snap2_dirty(pm[i])) {
			n = 1;
			continue;
		}
		for (n = 1; n < SNAP2_RUN && i + n < npages &&
		    snap2_dirty(pm[i + n]); n++)
			;
		if (snap2_pread(memfd, buf, n * SNAP2_PAGE, (off_t)(start +
		    i * SNAP2_PAGE)) == -1) {
			xasprintf(cause, "%s: %s", mem, strerror(errno));
			goto out;
		}
		if (snap2_pwrite(pfd, buf, n * SNAP2_PAGE, (off_t)(out *
		    SNAP2_PAGE)) == -1) {
			xasprintf(cause, "%s/" SANDBOX_SNAP_PAGES ": %s", dir,
			    strerror(errno));
			goto out;
		}
		for (out += n; n > 0; n--, i++)
			map[i / 8] |= 1 << (i % 8);
		n = 0;
	}
	if (snap2_pwrite(mfd, map, npages / 8, 0) == -1 || fsync(pfd) == -1 ||
	    fsync(mfd) == -1) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		goto out;
	}
	*bytes += out * SNAP2_PAGE + npages / 8;
	log_debug("snapshot: %zu dirty pages of %zu", out, npages);
	rc = 0;
out:
	if (memfd != -1)
		close(memfd);
	if (pfd != -1)
		close(pfd);
	if (mfd != -1)
		close(mfd);
	free(buf);
	free(map);
	free(pm);
	free(mem);
	free(path);
	return (rc);
}

/* Reads dir/name whole, of exactly want bytes (or at most max if 0). */
static uint8_t *
snap2_slurp(const char *dir, const char *name, size_t want, size_t max,
    size_t *len, char **cause)
{
	struct stat	 st;
	uint8_t		*p;
	char		*path;
	int		 fd;

	xasprintf(&path, "%s/%s", dir, name);
	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto fail;
	}
	if ((want != 0 && (uint64_t)st.st_size != want) || (want == 0 &&
	    ((uint64_t)st.st_size > max || st.st_size == 0))) {
		xasprintf(cause, "%s: %lld bytes, not %s %zu", path,
		    (long long)st.st_size, want != 0 ? "the" : "at most",
		    want != 0 ? want : max);
		goto fail;
	}
	p = xmalloc(st.st_size);
	if (snap2_pread(fd, p, st.st_size, 0) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(p);
		goto fail;
	}
	close(fd);
	free(path);
	*len = st.st_size;
	return (p);
fail:
	if (fd != -1)
		close(fd);
	free(path);
	return (NULL);
}

/*
 * The pipe QEMU's -incoming reads (p[0]), large enough that the state
 * goes in at once (p[1]), QEMU reading it or not. -1 with *cause (if
 * cause is not NULL) and errno.
 */
int
sandbox_snap2_pipe(int p[2], char **cause)
{
	int	e;

	if (pipe2(p, O_CLOEXEC) == -1) {
		if (cause != NULL)
			xasprintf(cause, "pipe: %s", strerror(errno));
		return (-1);
	}
	if (fcntl(p[1], F_SETPIPE_SZ, SNAP2_STATE_MAX) == -1 ||
	    fcntl(p[1], F_SETFL, O_NONBLOCK) == -1) {
		e = errno;
		if (cause != NULL)
			xasprintf(cause, "pipe of %d bytes: %s",
			    SNAP2_STATE_MAX, strerror(e));
		close(p[0]);
		close(p[1]);
		errno = e;
		return (-1);
	}
	return (0);
}

/*
 * A restore's launch: the pinned template for the RAM backend (checked:
 * there, of the guest's size), its map and device state read (checked:
 * their sizes), and a pipe for -incoming that QEMU waits on.
 */
int
sandbox_snap2_launch(struct sandbox *sb, char **cause)
{
	struct sandbox_snapref	*r = sb->snap;
	struct stat		 st;
	uint64_t		 size = snap2_size(sb);
	size_t			 len, i, n = 0;
	char			*path;
	int			 p[2];

	xasprintf(&path, "%s/" SANDBOX_SNAP_TPL, r->dir);
	if ((sb->ram_fd = open(path, O_RDONLY|O_CLOEXEC)) == -1 ||
	    fstat(sb->ram_fd, &st) == -1 || (uint64_t)st.st_size != size) {
		xasprintf(cause, "the snapshot's template RAM file %s is gone "
		    "or changed: %s", path, sb->ram_fd == -1 ? strerror(errno) :
		    "not the guest's size");
		free(path);
		return (-1);
	}
	free(path);
	if ((r->tpl_fd = fcntl(sb->ram_fd, F_DUPFD_CLOEXEC, 0)) == -1) {
		xasprintf(cause, "dup: %s", strerror(errno));
		return (-1);
	}
	if ((r->map = snap2_slurp(r->dir, SANDBOX_SNAP_MAP, size / SNAP2_PAGE /
	    8, 0, &len, cause)) == NULL || (r->state = snap2_slurp(r->dir,
	    SANDBOX_SNAP_STATE, 0, SNAP2_STATE_MAX, &r->state_len,
	    cause)) == NULL)
		return (-1);
	for (i = 0; i < len; i++)
		n += __builtin_popcount(r->map[i]);
	r->npages = n;
	/* Checked before QEMU starts: after, a bad file only kills it. */
	xasprintf(&path, "%s/" SANDBOX_SNAP_PAGES, r->dir);
	if (stat(path, &st) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		return (-1);
	}
	if ((uint64_t)st.st_size != n * SNAP2_PAGE) {
		xasprintf(cause, "%s: %lld bytes, its map lists %zu pages",
		    path, (long long)st.st_size, n);
		free(path);
		return (-1);
	}
	free(path);
	if (sandbox_snap2_pipe(p, cause) == -1)
		return (-1);
	sb->state_fd = p[0];
	r->pipe = p[1];
	return (0);
}

/*
 * QEMU of a restore runs (it answered its monitor), waiting on the pipe:
 * its RAM made the snapshot's (pages it copied at its start that the
 * snapshot does not have get the template's bytes back), then the device
 * state sent. -1 with *cause: the pipe is closed empty, QEMU exits.
 */
int
sandbox_snap2_load(struct sandbox *sb, char **cause)
{
	struct sandbox_snapref	*r = sb->snap;
	pid_t			 pid = qemu_pid(sb->qemu);
	uint64_t		 size = snap2_size(sb), start, ino, *pm = NULL;
	size_t			 npages = size / SNAP2_PAGE, i, k = 0;
	struct stat		 st;
	char			*path = NULL, *mem = NULL, *pages = NULL;
	char			 page[SNAP2_PAGE];
	int			 memfd = -1, pfd = -1, rc = -1;
	ssize_t			 w;

	if (snap2_find(pid, size, &start, &path, &ino, cause) == -1 ||
	    (pm = snap2_pagemap(pid, start, npages, cause)) == NULL)
		goto out;
	xasprintf(&mem, "/proc/%ld/mem", (long)pid);
	xasprintf(&pages, "%s/" SANDBOX_SNAP_PAGES, r->dir);
	if ((memfd = open(mem, O_RDWR|O_CLOEXEC)) == -1 ||
	    (pfd = open(pages, O_RDONLY|O_CLOEXEC)) == -1 ||
	    fstat(pfd, &st) == -1) {
		xasprintf(cause, "%s: %s", memfd == -1 ? mem : pages,
		    strerror(errno));
		goto out;
	}
	if ((uint64_t)st.st_size != r->npages * SNAP2_PAGE) {
		xasprintf(cause, "%s: %lld bytes, its map says %zu pages",
		    pages, (long long)st.st_size, r->npages);
		goto out;
	}
	for (i = 0; i < npages; i++) {
		if (r->map[i / 8] & (1 << (i % 8))) {
			if (snap2_pread(pfd, page, sizeof page, (off_t)(k++ *
			    SNAP2_PAGE)) == -1)
				goto io;
		} else if (!snap2_dirty(pm[i]))
			continue;
		else if (snap2_pread(r->tpl_fd, page, sizeof page,
		    (off_t)(i * SNAP2_PAGE)) == -1)
			goto io;
		if (snap2_pwrite(memfd, page, sizeof page, (off_t)(start + i *
		    SNAP2_PAGE)) == -1)
			goto io;
	}
	w = write(r->pipe, r->state, r->state_len);
	if (w != (ssize_t)r->state_len) {
		xasprintf(cause, "the device state into QEMU's pipe: %s",
		    w == -1 ? strerror(errno) : "short write");
		goto out;
	}
	rc = 0;
	goto out;
io:
	xasprintf(cause, "%s: %s", mem, strerror(errno));
out:
	close(r->pipe);
	r->pipe = -1;
	if (memfd != -1)
		close(memfd);
	if (pfd != -1)
		close(pfd);
	free(pages);
	free(mem);
	free(path);
	free(pm);
	return (rc);
}
