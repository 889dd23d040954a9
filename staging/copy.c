/*
 * Copies of host trees into the run directory, made as cheaply as the file
 * systems allow: a hard link when the copy will only be shared read-only
 * (a hard link is the host's inode itself, so a writable share of one
 * would write to the host file), else a reflink (FICLONE), else an
 * in-kernel copy (copy_file_range), else read and write. Symlinks are
 * copied as symlinks with their targets unchanged and never followed;
 * sockets, fifos and devices are counted and left out. Modes, times and,
 * as root, owners are kept. Everything is reached through directory fds
 * with O_NOFOLLOW, so a symlink swapped in during the copy is not followed
 * either.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>

#include <linux/fs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "staging.h"

#ifndef FICLONE
#define FICLONE		_IOW(0x94, 9, int)
#endif
#define OVERLAYFS_MAGIC	0x794c7630
#define COPY_BUFSIZE	(256 * 1024)
#define COPY_MAX_DEPTH	256
#define COPY_MAX_HOPS	40	/* symlinks followed per path, as the kernel */

/*
 * Names left out of staged trees wherever they appear: version control,
 * virtual environments, dependency and tool caches, editor and agent
 * state, and the seed's "samples". They are large, change while qsup
 * runs, or hit per-file errors on network mounts (the seed's OSError 526
 * under minikube mount), and a program run in the guest needs none of
 * them. __pycache__ is in the list as the seed has it; see README.md for
 * its cost on a read-only interpreter tree.
 */
const char *const staging_default_skip[] = {
	".git", ".hg", ".svn",
	".venv", "node_modules",
	"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
	".tox", ".nox", ".cache",
	"samples",
	".cursor", ".claude", ".idea", ".vscode",
	NULL
};

struct copy_ctx {
	int			 flags;
	const char *const	*skip;
	const char *const	*globs;
	struct staging_stats	*st;
	const char		*src;		/* roots, for messages */
	const char		*dst;
	struct buf		 rel;		/* path below the roots */
	dev_t			 src_dev;
	dev_t			 dst_dev;
	ino_t			 dst_ino;
	dev_t			 nolink_dev;	/* link() said EXDEV from here */
	dev_t			 noclone_dev;	/* FICLONE unsupported from here */
	dev_t			 nocfr_dev;	/* copy_file_range likewise */
	int			 nolink, noclone, nocfr;
	int			 root;		/* euid 0: owners are kept */
	char			*buf;
	char			*fatal;		/* set: stop, this is why */
};

/* Errors on the destination that make going on pointless. */
static int
copy_errno_fatal(int e)
{
	return (e == ENOSPC || e == EDQUOT || e == EROFS || e == EMFILE ||
	    e == ENFILE || e == ENOMEM || e == ECANCELED);
}

/* An error on one entry: fatal when the destination is unusable, else
 * counted (the first kept) and the copy goes on. */
static void
copy_error(struct copy_ctx *c, int e, int on_dst, const char *what)
{
	char	*msg;

	xasprintf(&msg, "%s%s%s: %s%s%s", on_dst ? c->dst : c->src,
	    c->rel.len != 0 ? "/" : "", c->rel.len != 0 ? c->rel.data : "",
	    what != NULL ? what : "", what != NULL ? ": " : "", strerror(e));
	if (on_dst && copy_errno_fatal(e) && c->fatal == NULL) {
		c->fatal = msg;
		return;
	}
	c->st->errors++;
	if (c->st->first_error == NULL)
		c->st->first_error = msg;
	else
		free(msg);
}

static int
glob_bracket(const char **pp, char ch)
{
	const char	*p = *pp, *end;
	char		*set, s[2] = { ch, '\0' };
	int		 m;

	end = p + 1;
	if (*end == '!' || *end == '^')
		end++;
	if (*end == ']')
		end++;
	while (*end != '\0' && *end != ']')
		end++;
	if (*end != ']')
		return (-1);	/* not a bracket: a literal '[' */
	set = xstrndup(p, end - p + 1);
	m = fnmatch(set, s, FNM_PATHNAME) == 0;
	free(set);
	*pp = end + 1;
	return (m);
}

/*
 * fnmatch with FNM_PATHNAME, plus a double star, which also matches across
 * slashes; a double star and a slash also match no directory at all, as in
 * gitignore.
 */
static int
glob_match(const char *p, const char *s)
{
	const char	*q;
	int		 m;

	while (*p != '\0') {
		if (p[0] == '*' && p[1] == '*') {
			p += 2;
			if (*p == '/' && glob_match(p + 1, s))
				return (1);
			for (q = s;; q++) {
				if (glob_match(p, q))
					return (1);
				if (*q == '\0')
					return (0);
			}
		}
		switch (*p) {
		case '*':
			p++;
			for (q = s;; q++) {
				if (glob_match(p, q))
					return (1);
				if (*q == '\0' || *q == '/')
					return (0);
			}
		case '?':
			if (*s == '\0' || *s == '/')
				return (0);
			p++;
			s++;
			continue;
		case '[':
			if (*s == '\0' || *s == '/')
				return (0);
			q = p;
			if ((m = glob_bracket(&q, *s)) == 0)
				return (0);
			if (m == 1) {
				p = q;
				s++;
				continue;
			}
			break;
		case '\\':
			if (p[1] != '\0')
				p++;
			break;
		}
		if (*p != *s)
			return (0);
		p++;
		s++;
	}
	return (*s == '\0');
}

/*
 * Whether rel (a path below a share's root, no leading slash) is hidden by
 * one of the globs, gitignore-like: a glob without a slash matches the
 * last component at any depth ("*.pem"); one with a slash matches the
 * whole path from the root ("keys/id_*", a leading slash is allowed); a
 * trailing slash matches directories only. A hidden directory hides all
 * below it.
 */
int
staging_ignored(const char *const *globs, const char *rel, int is_dir)
{
	const char	*g, *base;
	char		*pat;
	size_t		 i, len;
	int		 m;

	if (globs == NULL)
		return (0);
	base = strrchr(rel, '/');
	base = base != NULL ? base + 1 : rel;
	for (i = 0; (g = globs[i]) != NULL; i++) {
		len = strlen(g);
		if (len == 0)
			continue;
		if (g[len - 1] == '/') {
			if (!is_dir)
				continue;
			len--;
		}
		pat = xstrndup(g, len);
		if (strchr(pat, '/') == NULL)
			m = glob_match(pat, base);
		else
			m = glob_match(pat + (pat[0] == '/'), rel);
		free(pat);
		if (m)
			return (1);
	}
	return (0);
}

static int
copy_skipped_name(const struct copy_ctx *c, const char *name)
{
	size_t	i;

	for (i = 0; c->skip != NULL && c->skip[i] != NULL; i++)
		if (strcmp(c->skip[i], name) == 0)
			return (1);
	return (0);
}

/* Owner, mode and times of a new file or directory, from the source's. */
static void
copy_attrs(struct copy_ctx *c, int fd, const struct stat *sb)
{
	struct timespec	ts[2] = { sb->st_atim, sb->st_mtim };
	mode_t		mode = sb->st_mode & 07777;
	int		owned = 0;

	if (c->root) {
		if (sb->st_uid == 0 && sb->st_gid == 0)
			owned = 1;
		else
			owned = fchown(fd, sb->st_uid, sb->st_gid) == 0;
	}
	if (!owned)
		mode &= ~(S_ISUID|S_ISGID);	/* as cp -p when it cannot chown */
	if (fchmod(fd, mode) == -1)
		copy_error(c, errno, 1, "chmod");
	if (futimens(fd, ts) == -1)
		copy_error(c, errno, 1, "utimens");
}

/* Bytes from sfd to dfd, by the cheapest means that works. */
static int
copy_data(struct copy_ctx *c, int sfd, int dfd, const struct stat *sb)
{
	off_t	 done = 0;
	ssize_t	 n = 0, w, off;

	if (!(c->flags & STAGING_NOCLONE) &&
	    !(c->noclone && c->noclone_dev == sb->st_dev)) {
		if (ioctl(dfd, FICLONE, sfd) == 0) {
			c->st->reflinked++;
			return (0);
		}
		if (errno == EOPNOTSUPP || errno == ENOTTY || errno == EXDEV ||
		    errno == EINVAL || errno == ENOSYS || errno == EPERM) {
			c->noclone = 1;
			c->noclone_dev = sb->st_dev;
		}
	}
	if (!(c->flags & STAGING_NOCLONE) &&
	    !(c->nocfr && c->nocfr_dev == sb->st_dev)) {
		while (done < sb->st_size) {
			n = copy_file_range(sfd, NULL, dfd, NULL,
			    sb->st_size - done, 0);
			if (n <= 0)
				break;
			done += n;
		}
		if (done >= sb->st_size) {
			c->st->copied++;
			return (0);
		}
		if (n == -1 && copy_errno_fatal(errno))
			return (-1);
		if (done == 0) {
			/* EXDEV, EOPNOTSUPP, ENOSYS...: not here. */
			c->nocfr = 1;
			c->nocfr_dev = sb->st_dev;
		}
	}
	/* read/write from where copy_file_range stopped (file offsets). */
	for (;;) {
		if (util_stop_now) {
			errno = ECANCELED;
			return (-1);
		}
		n = read(sfd, c->buf, COPY_BUFSIZE);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return (-1);
		if (n == 0)
			break;
		for (off = 0; off < n; off += w) {
			w = write(dfd, c->buf + off, n - off);
			if (w == -1 && errno == EINTR) {
				w = 0;
				continue;
			}
			if (w == -1)
				return (-1);
		}
	}
	c->st->copied++;
	return (0);
}

/*
 * One regular file. In a tree, sname and dname are the same name under
 * the two directory fds and nothing is followed; for a file given as the
 * root (follow), they are paths and the caller's symlink is followed.
 */
static void
copy_file(struct copy_ctx *c, int sdir, const char *sname, int ddir,
    const char *dname, const struct stat *sb, int follow)
{
	struct stat	sb2;
	int		sfd = -1, dfd = -1, e, nofollow;

	nofollow = follow ? 0 : O_NOFOLLOW;
	if ((c->flags & STAGING_LINK) &&
	    !(c->nolink && c->nolink_dev == sb->st_dev)) {
		if (linkat(sdir, sname, ddir, dname,
		    follow ? AT_SYMLINK_FOLLOW : 0) == 0) {
			c->st->files++;
			c->st->linked++;
			c->st->bytes += sb->st_size;
			return;
		}
		if (errno == EXDEV) {
			c->nolink = 1;
			c->nolink_dev = sb->st_dev;
		} else if (errno != EPERM && errno != EMLINK &&
		    errno != EACCES) {
			copy_error(c, errno, 1, "link");
			return;
		}
	}
	if ((sfd = openat(sdir, sname, O_RDONLY|O_CLOEXEC|O_NONBLOCK|
	    nofollow)) == -1) {
		copy_error(c, errno, 0, NULL);
		return;
	}
	if (fstat(sfd, &sb2) == -1 || !S_ISREG(sb2.st_mode) ||
	    sb2.st_ino != sb->st_ino || sb2.st_dev != sb->st_dev) {
		copy_error(c, ESTALE, 0, "changed during the copy");
		goto out;
	}
	if ((dfd = openat(ddir, dname, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC|
	    O_NOFOLLOW, 0600)) == -1) {
		copy_error(c, errno, 1, NULL);
		goto out;
	}
	if (copy_data(c, sfd, dfd, &sb2) == -1) {
		e = errno;
		unlinkat(ddir, dname, 0);
		/* Whose error it was: the write side's are the fatal ones. */
		copy_error(c, e, copy_errno_fatal(e), NULL);
		goto out;
	}
	copy_attrs(c, dfd, &sb2);
	c->st->files++;
	c->st->bytes += sb2.st_size;
out:
	if (dfd != -1)
		close(dfd);
	if (sfd != -1)
		close(sfd);
}

static void
copy_symlink(struct copy_ctx *c, int sdir, int ddir, const char *name,
    const struct stat *sb)
{
	struct timespec	 ts[2] = { sb->st_atim, sb->st_mtim };
	char		*target;
	size_t		 size = sb->st_size > 0 ? sb->st_size + 1 : 256;
	ssize_t		 n;

	for (;;) {
		target = xmalloc(size);
		if ((n = readlinkat(sdir, name, target, size)) == -1) {
			copy_error(c, errno, 0, "readlink");
			free(target);
			return;
		}
		if ((size_t)n < size)
			break;
		free(target);
		size *= 2;
	}
	target[n] = '\0';
	if (symlinkat(target, ddir, name) == -1) {
		copy_error(c, errno, 1, "symlink");
		free(target);
		return;
	}
	free(target);
	if (c->root && (sb->st_uid != 0 || sb->st_gid != 0))
		fchownat(ddir, name, sb->st_uid, sb->st_gid,
		    AT_SYMLINK_NOFOLLOW);
	utimensat(ddir, name, ts, AT_SYMLINK_NOFOLLOW);
	c->st->symlinks++;
}

static int
copy_name_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* The names in a directory, sorted (a stable order for messages). */
static char **
copy_read_dir(int fd, size_t *np)
{
	DIR		 *d;
	struct dirent	 *de;
	char		**names = NULL;
	size_t		  n = 0;
	int		  dfd;

	*np = 0;
	if ((dfd = dup(fd)) == -1)
		return (NULL);
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return (NULL);
	}
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		names = xreallocarray(names, n + 1, sizeof *names);
		names[n++] = xstrdup(de->d_name);
		errno = 0;
	}
	if (errno != 0) {
		while (n > 0)
			free(names[--n]);
		free(names);
		closedir(d);
		return (NULL);
	}
	/* Rewind for the next reader of fd: the copy shares its offset. */
	rewinddir(d);
	closedir(d);
	/* qsort's base is declared nonnull: an empty directory gets an
	 * empty array, not NULL, or the compiler drops the check. */
	if (names == NULL)
		return (xcalloc(1, sizeof *names));
	qsort(names, n, sizeof *names, copy_name_cmp);
	*np = n;
	return (names);
}

/*
 * One manifest line (cache.c keeps the manifest; the copy writes it as it
 * goes): "INO SIZE SEC.NSEC MODE PATH", PATH %-escaped.
 */
void
staging_manifest_add(struct buf *b, const char *rel, const struct stat *sb)
{
	const char	*p;

	buf_printf(b, "%llu %lld %lld.%09ld %o ",
	    (unsigned long long)sb->st_ino, (long long)sb->st_size,
	    (long long)sb->st_mtim.tv_sec, sb->st_mtim.tv_nsec,
	    (unsigned int)sb->st_mode);
	for (p = rel; *p != '\0'; p++) {
		if (*p == '\n' || *p == '%')
			buf_printf(b, "%%%02X", (unsigned char)*p);
		else
			buf_add(b, p, 1);
	}
	buf_add(b, "\n", 1);
}

static void copy_dir(struct copy_ctx *, int, int, int);

/* One directory entry; c->rel already names it. */
static void
copy_entry(struct copy_ctx *c, int sdir, int ddir, const char *name,
    int depth)
{
	struct stat	sb, db;
	int		sfd = -1, dfd = -1;

	if (fstatat(sdir, name, &sb, AT_SYMLINK_NOFOLLOW) == -1) {
		copy_error(c, errno, 0, NULL);
		return;
	}
	if (staging_ignored(c->globs, c->rel.data, S_ISDIR(sb.st_mode))) {
		c->st->skipped++;
		return;
	}
	if (c->st->manifest != NULL && (S_ISREG(sb.st_mode) ||
	    S_ISLNK(sb.st_mode) || S_ISDIR(sb.st_mode)))
		staging_manifest_add(c->st->manifest, c->rel.data, &sb);
	if (S_ISREG(sb.st_mode)) {
		copy_file(c, sdir, name, ddir, name, &sb, 0);
		return;
	}
	if (S_ISLNK(sb.st_mode)) {
		copy_symlink(c, sdir, ddir, name, &sb);
		return;
	}
	if (!S_ISDIR(sb.st_mode)) {
		c->st->special++;
		return;
	}
	if (sb.st_dev == c->dst_dev && sb.st_ino == c->dst_ino) {
		c->st->skipped++;	/* the copy itself, inside the source */
		return;
	}
	if (depth >= COPY_MAX_DEPTH) {
		copy_error(c, ELOOP, 0, "too deep");
		return;
	}
	if (mkdirat(ddir, name, 0700) == -1 && errno != EEXIST) {
		copy_error(c, errno, 1, NULL);
		return;
	}
	if ((dfd = openat(ddir, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
	    O_CLOEXEC)) == -1 || fstat(dfd, &db) == -1) {
		copy_error(c, errno, 1, NULL);
		goto out;
	}
	if (sb.st_dev != c->src_dev && !(c->flags & STAGING_XDEV)) {
		/* A mount point: the directory, empty, and a note. */
		c->st->mounts++;
		if (c->st->first_mount == NULL)
			xasprintf(&c->st->first_mount, "%s/%s", c->src,
			    c->rel.data);
	} else {
		if ((sfd = openat(sdir, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
		    O_CLOEXEC)) == -1) {
			copy_error(c, errno, 0, NULL);
			goto out;
		}
		copy_dir(c, sfd, dfd, depth + 1);
	}
	copy_attrs(c, dfd, &sb);
	c->st->dirs++;
out:
	if (sfd != -1)
		close(sfd);
	if (dfd != -1)
		close(dfd);
}

static void
copy_dir(struct copy_ctx *c, int sdir, int ddir, int depth)
{
	char	**names;
	size_t	  n, i, rellen = c->rel.len;

	if ((names = copy_read_dir(sdir, &n)) == NULL) {
		copy_error(c, errno, 0, NULL);
		return;
	}
	for (i = 0; i < n && c->fatal == NULL; i++) {
		/* A second signal: a large copy must not keep qsup. */
		if (util_stop_now) {
			copy_error(c, ECANCELED, 1, "stopped by a signal");
			break;
		}
		if (copy_skipped_name(c, names[i])) {
			c->st->skipped++;
			continue;
		}
		if (rellen != 0)
			buf_add(&c->rel, "/", 1);
		buf_puts(&c->rel, names[i]);
		copy_entry(c, sdir, ddir, names[i], depth);
		c->rel.len = rellen;
		c->rel.data[rellen] = '\0';
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* mkdir -p for the parents of path, mode 0700 (inside the run dir). */
static int
copy_mkdir_parents(const char *path)
{
	char	*p, *slash;
	int	 rc = 0;

	p = xstrdup(path);
	if ((slash = strrchr(p, '/')) != NULL && slash != p) {
		*slash = '\0';
		rc = util_mkdir_p(p, 0700);
	}
	free(p);
	return (rc);
}

static void
copy_ctx_init(struct copy_ctx *c, int flags, const char *src,
    const char *dst, struct staging_stats *st)
{
	memset(c, 0, sizeof *c);
	c->flags = flags;
	c->st = st;
	c->src = src;
	c->dst = dst;
	c->root = geteuid() == 0;
	c->buf = xmalloc(COPY_BUFSIZE);
	buf_add(&c->rel, "", 0);
}

static void
copy_ctx_free(struct copy_ctx *c)
{
	free(c->buf);
	c->buf = NULL;
	buf_free(&c->rel);
	free(c->fatal);
	c->fatal = NULL;
}

/*
 * Copy src, a directory or a file, to dst. A directory's copy is made at
 * dst (created, with missing parents, or merged into when it exists); a
 * file's copy is the file dst. The source root itself may be a symlink:
 * the caller named it.
 */
static int
copy_root(struct copy_ctx *c, char **cause)
{
	struct stat	 sb, db;
	uint64_t	 errors;
	int		 sfd = -1, dfd = -1, rc = -1;

	if (stat(c->src, &sb) == -1) {
		xasprintf(cause, "%s: %s", c->src, strerror(errno));
		return (-1);
	}
	c->src_dev = sb.st_dev;
	/*
	 * On overlayfs a hard link copies the file up into the container's
	 * upper layer (a write to the source tree) and leaves it on overlay,
	 * which is what staging is for getting away from.
	 */
	if ((c->flags & STAGING_LINK) && staging_on_overlay(c->src) == 1)
		c->flags &= ~STAGING_LINK;
	if (!S_ISDIR(sb.st_mode) && !S_ISREG(sb.st_mode)) {
		xasprintf(cause, "%s: not a directory or a regular file",
		    c->src);
		return (-1);
	}
	if (copy_mkdir_parents(c->dst) == -1) {
		xasprintf(cause, "%s: %s", c->dst, strerror(errno));
		return (-1);
	}
	if (S_ISREG(sb.st_mode)) {
		errors = c->st->errors;
		copy_file(c, AT_FDCWD, c->src, AT_FDCWD, c->dst, &sb, 1);
		if (c->fatal == NULL && c->st->errors == errors)
			return (0);
		if (c->fatal == NULL) {
			c->st->errors--;	/* reported as the failure */
			*cause = xstrdup(c->st->first_error);
		}
		return (-1);
	}
	if (mkdir(c->dst, 0700) == -1 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", c->dst, strerror(errno));
		return (-1);
	}
	if ((dfd = open(c->dst, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|
	    O_CLOEXEC)) == -1 || fstat(dfd, &db) == -1) {
		xasprintf(cause, "%s: %s", c->dst, strerror(errno));
		goto out;
	}
	c->dst_dev = db.st_dev;
	c->dst_ino = db.st_ino;
	if ((sfd = open(c->src, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", c->src, strerror(errno));
		goto out;
	}
	if (c->st->manifest != NULL)
		staging_manifest_add(c->st->manifest, ".", &sb);
	copy_dir(c, sfd, dfd, 0);
	copy_attrs(c, dfd, &sb);
	rc = 0;
out:
	if (sfd != -1)
		close(sfd);
	if (dfd != -1)
		close(dfd);
	return (rc);
}

int
staging_copy_tree(const char *src, const char *dst, int flags,
    const char *const *skip_names, const char *const *ignore_globs,
    struct staging_stats *st, char **cause)
{
	struct copy_ctx	c;
	int		rc;

	copy_ctx_init(&c, flags, src, dst, st);
	c.skip = skip_names;
	c.globs = ignore_globs;
	rc = copy_root(&c, cause);
	if (rc == 0 && c.fatal != NULL) {
		*cause = c.fatal;
		c.fatal = NULL;
		rc = -1;
	}
	copy_ctx_free(&c);
	return (rc);
}

/*
 * Take the next component off rest, "" for an empty one; *last says
 * whether it was the final one. The caller frees it.
 */
static char *
copy_mirror_next(struct buf *rest, int *last)
{
	char	*comp, *at, *next;
	size_t	 len;

	at = rest->data + strspn(rest->data, "/");
	len = strcspn(at, "/");
	comp = xstrndup(at, len);
	at += len;
	at += strspn(at, "/");
	*last = *at == '\0';
	next = xstrdup(at);
	buf_free(rest);
	buf_puts(rest, next);
	free(next);
	return (comp);
}

/*
 * cur is a symlink: recreate it at dst, then go on from its target,
 * relative to cur's parent (or to / if it is absolute): cur becomes that
 * parent and the target goes in front of rest.
 */
static int
copy_mirror_link(struct copy_ctx *c, struct buf *cur, struct buf *rest,
    const char *dst, char **cause)
{
	char	 target[PATH_MAX], *at, *next;
	ssize_t	 n;

	if ((n = readlink(cur->data, target, sizeof target - 1)) == -1) {
		xasprintf(cause, "%s: %s", cur->data, strerror(errno));
		return (-1);
	}
	target[n] = '\0';
	if (symlink(target, dst) == 0)
		c->st->symlinks++;
	else if (errno != EEXIST) {
		xasprintf(cause, "%s: %s", dst, strerror(errno));
		return (-1);
	}
	at = strrchr(cur->data, '/');
	cur->len = at - cur->data;
	*at = '\0';
	if (*target == '/') {
		cur->len = 0;
		*cur->data = '\0';
	}
	xasprintf(&next, "%s/%s", target, rest->data);
	buf_free(rest);
	buf_puts(rest, next);
	free(next);
	return (0);
}

/* The path's last component, not a directory: a file is copied to dst. */
static int
copy_mirror_file(struct copy_ctx *c, const char *src, const char *dst,
    const struct stat *sb, char **cause)
{
	int	flags;

	if (!S_ISREG(sb->st_mode)) {
		c->st->special++;
		return (0);
	}
	if (access(dst, F_OK) == 0)
		return (0);		/* staged already */
	c->src = src;
	c->dst = dst;
	flags = c->flags;
	if (staging_on_overlay(src) == 1)
		c->flags &= ~STAGING_LINK;	/* see copy_root */
	copy_file(c, AT_FDCWD, src, AT_FDCWD, dst, sb, 0);
	c->flags = flags;
	c->src = c->dst = NULL;
	if (c->fatal != NULL) {
		*cause = c->fatal;
		c->fatal = NULL;
		return (-1);
	}
	return (0);
}

/* Mirror one host path under root, symlinks along the way included. */
static int
copy_mirror(struct copy_ctx *c, const char *root, const char *path,
    char **cause)
{
	struct stat	 sb;
	struct buf	 cur = { 0 }, rest = { 0 };
	char		*comp, *at, *dst = NULL;
	int		 hops = 0, rc = -1, last;

	if (*path != '/') {
		xasprintf(cause, "%s: not an absolute path", path);
		return (-1);
	}
	buf_puts(&rest, path);
	buf_add(&cur, "", 0);
	while (rest.len != 0) {
		comp = copy_mirror_next(&rest, &last);
		if (*comp == '\0' || strcmp(comp, ".") == 0) {
			free(comp);
			continue;
		}
		if (strcmp(comp, "..") == 0) {
			/* cur holds no symlink: its parent is textual. */
			if ((at = strrchr(cur.data, '/')) != NULL) {
				cur.len = at - cur.data;
				*at = '\0';
			}
			free(comp);
			continue;
		}
		buf_printf(&cur, "/%s", comp);
		free(comp);
		if (lstat(cur.data, &sb) == -1) {
			xasprintf(cause, "%s: %s", cur.data, strerror(errno));
			goto out;
		}
		free(dst);
		xasprintf(&dst, "%s%s", root, cur.data);
		if (S_ISLNK(sb.st_mode)) {
			if (++hops > COPY_MAX_HOPS) {
				xasprintf(cause, "%s: %s", path,
				    strerror(ELOOP));
				goto out;
			}
			if (copy_mirror_link(c, &cur, &rest, dst, cause) == -1)
				goto out;
			continue;
		}
		if (S_ISDIR(sb.st_mode) && last) {
			if (staging_copy_tree(cur.data, dst, c->flags, NULL,
			    NULL, c->st, cause) == -1)
				goto out;
			break;
		}
		if (S_ISDIR(sb.st_mode)) {
			if (mkdir(dst, sb.st_mode & 07777) == 0)
				c->st->dirs++;
			else if (errno != EEXIST) {
				xasprintf(cause, "%s: %s", dst,
				    strerror(errno));
				goto out;
			}
			continue;
		}
		if (!last) {
			xasprintf(cause, "%s: %s", cur.data, strerror(ENOTDIR));
			goto out;
		}
		if (copy_mirror_file(c, cur.data, dst, &sb, cause) == -1)
			goto out;
		break;
	}
	rc = 0;
out:
	free(dst);
	buf_free(&cur);
	buf_free(&rest);
	return (rc);
}

/*
 * Stage single host paths (a library closure, say) under root, each at
 * root + its own path, with the symlinks met on the way recreated as
 * symlinks (/lib -> usr/lib, libz.so.1 -> libz.so.1.2.13): the guest
 * resolves the same names the same way. A directory is copied whole.
 * Paths staged already are left as they are.
 */
int
staging_copy_paths(const char *const *paths, const char *root, int flags,
    struct staging_stats *st, char **cause)
{
	struct copy_ctx	 c;
	size_t		 i;
	int		 rc = 0;

	if (copy_mkdir_parents(root) == -1 ||
	    (mkdir(root, 0700) == -1 && errno != EEXIST)) {
		xasprintf(cause, "%s: %s", root, strerror(errno));
		return (-1);
	}
	copy_ctx_init(&c, flags, NULL, NULL, st);
	for (i = 0; paths[i] != NULL && rc == 0; i++)
		rc = copy_mirror(&c, root, paths[i], cause);
	copy_ctx_free(&c);
	return (rc);
}

void
staging_stats_free(struct staging_stats *st)
{
	free(st->first_error);
	free(st->first_mount);
	memset(st, 0, sizeof *st);
}

/*
 * Remove a staged tree. Directories are made writable first (a copy of a
 * read-only directory cannot be emptied otherwise, unless by root); files
 * are never chmod-ed, as a hard-linked one is the host's own file. Other
 * file systems mounted inside are not entered.
 */
static int
remove_dir(int fd, dev_t dev)
{
	struct stat	  sb;
	char		**names;
	size_t		  n, i;
	int		  sub, rc = 0;

	if (fstat(fd, &sb) == -1 || sb.st_dev != dev)
		return (-1);
	if ((sb.st_mode & 0700) != 0700 && fchmod(fd, sb.st_mode | 0700) == -1)
		rc = -1;
	if ((names = copy_read_dir(fd, &n)) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		if (fstatat(fd, names[i], &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(sb.st_mode)) {
			if ((sub = openat(fd, names[i], O_RDONLY|O_DIRECTORY|
			    O_NOFOLLOW|O_CLOEXEC)) == -1 ||
			    remove_dir(sub, dev) == -1)
				rc = -1;
			if (sub != -1)
				close(sub);
			if (unlinkat(fd, names[i], AT_REMOVEDIR) == -1)
				rc = -1;
		} else if (unlinkat(fd, names[i], 0) == -1 && errno != ENOENT)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return (rc);
}

int
staging_remove(const char *dst)
{
	struct stat	sb;
	int		fd, rc;

	if (lstat(dst, &sb) == -1)
		return (errno == ENOENT ? 0 : -1);
	if (!S_ISDIR(sb.st_mode))
		return (unlink(dst));
	if ((fd = open(dst, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC)) == -1)
		return (-1);
	rc = remove_dir(fd, sb.st_dev);
	close(fd);
	if (rmdir(dst) == -1)
		rc = -1;
	return (rc);
}

/* 1 when path is on overlayfs, where staging into it would not help. */
int
staging_on_overlay(const char *path)
{
	struct statfs	sf;

	if (statfs(path, &sf) == -1)
		return (-1);
	return (sf.f_type == OVERLAYFS_MAGIC);
}
