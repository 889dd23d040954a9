/*
 * Staged trees kept between runs. Staging an execution tree (a Python with
 * its 40,000 files) costs seconds a run, making the copy and removing it;
 * the tree rarely changes between two runs. So a staged copy is kept in
 * the cache directory (staged/KEY, KEY from the source path and what the
 * copy leaves out) with a manifest: every entry of the source it was made
 * from, with its inode, size and modification time. A later run checks
 * the manifest against the source (one lstat an entry, no reading) and
 * uses the copy when nothing changed. A file changed in place keeps its
 * inode but not its mtime; an entry added, removed or renamed changes its
 * directory's mtime: either way the copy is made again.
 *
 * Locks (flock on staged/KEY.lock): a sandbox holds a shared lock on the
 * copy it shows for as long as it runs; making or replacing a copy needs
 * the exclusive lock. When the copy is stale and in use by another
 * sandbox, the caller stages into its own run directory, as without a
 * cache.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <mbedtls/sha256.h>

#include "base.h"
#include "staging.h"

#define CACHE_MAGIC	"qsup-staged 1"
#define CACHE_MANIFEST_MAX (256 << 20)

/* Does the source still match the manifest? 1 yes, 0 no. */
static int
cache_fresh(const char *src, const char *manifest)
{
	struct stat	 sb;
	struct buf	 rel = { 0 }, now = { 0 };
	const char	*p, *nl, *q;
	size_t		 prefix;
	int		 dirfd, fields, fresh = 0;

	if (strncmp(manifest, CACHE_MAGIC "\n", sizeof CACHE_MAGIC) != 0)
		return (0);
	if ((dirfd = open(src, O_RDONLY|O_DIRECTORY|O_CLOEXEC)) == -1)
		return (0);
	for (p = strchr(manifest, '\n') + 1; *p != '\0'; p = nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL)
			goto out;
		/* Four numbers, then the path (its escapes undone). */
		for (q = p, fields = 0; q < nl && fields < 4; q++)
			fields += *q == ' ';
		if (fields != 4)
			goto out;
		prefix = (size_t)(q - p);
		buf_consume(&rel, rel.len);
		for (; q < nl; q++) {
			if (*q == '%' && nl - q >= 3) {
				buf_add(&rel, (char[]){ (char)strtol((char[]){
				    q[1], q[2], '\0' }, NULL, 16) }, 1);
				q += 2;
			} else
				buf_add(&rel, q, 1);
		}
		buf_add(&rel, "", 1);
		if (fstatat(dirfd, rel.data, &sb, AT_SYMLINK_NOFOLLOW) == -1)
			goto out;
		buf_consume(&now, now.len);
		staging_manifest_add(&now, "", &sb);
		if (now.len < prefix || memcmp(now.data, p, prefix) != 0)
			goto out;
	}
	fresh = 1;
out:
	buf_free(&rel);
	buf_free(&now);
	close(dirfd);
	return (fresh);
}

/* KEY: the source and what the copy leaves out. */
static char *
cache_key(const char *src, int flags, const char *const *skip,
    const char *const *globs)
{
	unsigned char	 digest[32];
	struct buf	 b = { 0 };
	size_t		 i;

	buf_printf(&b, "%s\n%d\n", src, flags);
	for (i = 0; skip != NULL && skip[i] != NULL; i++)
		buf_printf(&b, "skip %s\n", skip[i]);
	for (i = 0; globs != NULL && globs[i] != NULL; i++)
		buf_printf(&b, "ignore %s\n", globs[i]);
	mbedtls_sha256_ret((const unsigned char *)b.data, b.len, digest, 0);
	buf_free(&b);
	return (token_hex_of(digest, 16));
}

/*
 * Make the copy of src at dir afresh, with its manifest (the source path
 * first, for qsup cache ls). Hard links only: a copy of bytes would not
 * follow the source's changes in place, so it is not kept (1).
 */
static int
cache_build(const char *src, const char *dir, int flags,
    const char *const *skip, const char *const *globs,
    struct staging_stats *st, char **cause)
{
	struct buf	 m = { 0 };
	char		*tree, *path;
	int		 rc;

	staging_remove(dir);
	if (mkdir(dir, 0700) == -1) {
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		return (-1);
	}
	buf_puts(&m, CACHE_MAGIC "\n");
	st->manifest = &m;
	xasprintf(&tree, "%s/tree", dir);
	rc = staging_copy_tree(src, tree, flags, skip, globs, st, cause);
	st->manifest = NULL;
	free(tree);
	if (rc == 0 && (st->copied > 0 || st->reflinked > 0 ||
	    st->errors > 0)) {
		log_debug("staging %s: not kept (%llu copied, %llu errors)",
		    src, (unsigned long long)(st->copied + st->reflinked),
		    (unsigned long long)st->errors);
		rc = 1;
	}
	if (rc == 0) {
		xasprintf(&path, "%s/source", dir);
		buf_add(&m, "", 1);
		if (util_write_file(path, src) == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			rc = -1;
		}
		free(path);
		xasprintf(&path, "%s/manifest", dir);
		if (rc == 0 && util_write_file(path, m.data) == -1) {
			xasprintf(cause, "%s: %s", path, strerror(errno));
			rc = -1;
		}
		free(path);
	}
	buf_free(&m);
	if (rc != 0)
		staging_remove(dir);
	return (rc);
}

/*
 * The staged copy of src from the cache, made or made again if need be:
 * 0 and *path (the copy; to free) and *lock_fd (held shared until
 * staging_cache_release) when it can be used; 1 when it cannot (no cache,
 * copies of bytes, in use and stale): the caller stages for itself; -1 on
 * an error, with *cause.
 */
int
staging_cache_stage(const char *cache, const char *src, int flags,
    const char *const *skip, const char *const *globs, char **path,
    int *lock_fd, struct staging_stats *st, char **cause)
{
	char	*base, *key, *dir, *lock, *mpath, *manifest;
	int	 fd, rc = 1, exclusive;

	*path = NULL;
	*lock_fd = -1;
	xasprintf(&base, "%s/staged", cache);
	if (mkdir(base, 0700) == -1 && errno != EEXIST) {
		free(base);
		return (1);
	}
	key = cache_key(src, flags, skip, globs);
	xasprintf(&dir, "%s/%s", base, key);
	xasprintf(&lock, "%s/%s.lock", base, key);
	xasprintf(&mpath, "%s/manifest", dir);
	free(key);
	free(base);
	if ((fd = open(lock, O_RDWR|O_CREAT|O_CLOEXEC, 0600)) == -1)
		goto out;
	/* In use by no one: free to make it again. Else share it. */
	exclusive = flock(fd, LOCK_EX|LOCK_NB) == 0;
	if (!exclusive && flock(fd, LOCK_SH) == -1)
		goto out;
	manifest = util_read_file(mpath, NULL, CACHE_MANIFEST_MAX);
	/* The caller says which of the two it was (st is empty if kept). */
	if (manifest != NULL && cache_fresh(src, manifest))
		rc = 0;
	else if (exclusive)
		rc = cache_build(src, dir, flags, skip, globs, st, cause);
	else
		log_debug("staging %s: the copy in %s is stale and in use",
		    src, dir);
	free(manifest);
	if (rc == 0 && exclusive && flock(fd, LOCK_SH) == -1)
		rc = 1;
out:
	if (rc == 0) {
		xasprintf(path, "%s/tree", dir);
		*lock_fd = fd;
	} else if (fd != -1)
		close(fd);
	free(mpath);
	free(lock);
	free(dir);
	return (rc);
}

/* The sandbox using the copy is gone. */
void
staging_cache_release(int lock_fd)
{
	if (lock_fd != -1)
		close(lock_fd);
}

/*
 * qsup cache ls | clear [--stale], for staged copies: list them, or
 * remove those no sandbox uses (only the stale ones with only_stale).
 * Returns how many were listed or removed.
 */
int
staging_cache_cmd(const char *cache, int clear, int only_stale)
{
	struct dirent	*de;
	DIR		*d;
	char		*base, *dir, *p, *src, *manifest, when[32];
	struct stat	 sb;
	int		 fd, fresh, n = 0;

	xasprintf(&base, "%s/staged", cache);
	if ((d = opendir(base)) == NULL) {
		free(base);
		return (0);
	}
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 32 || strchr(de->d_name, '.'))
			continue;
		xasprintf(&dir, "%s/%s", base, de->d_name);
		xasprintf(&p, "%s/source", dir);
		src = util_read_file(p, NULL, 65536);
		free(p);
		xasprintf(&p, "%s/manifest", dir);
		manifest = util_read_file(p, NULL, CACHE_MANIFEST_MAX);
		if (stat(p, &sb) == -1)
			memset(&sb, 0, sizeof sb);
		free(p);
		fresh = src != NULL && manifest != NULL &&
		    cache_fresh(src, manifest);
		if (!clear) {
			strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S",
			    localtime(&sb.st_mtime));
			printf("staged %s  %s  %s%s\n", de->d_name,
			    src != NULL ? src : "?", sb.st_mtime != 0 ? when :
			    "(incomplete)", fresh ? "" : "  stale");
			n++;
		} else if (!only_stale || !fresh) {
			xasprintf(&p, "%s.lock", dir);
			fd = open(p, O_RDWR|O_CREAT|O_CLOEXEC, 0600);
			if (fd != -1 && flock(fd, LOCK_EX|LOCK_NB) == 0) {
				staging_remove(dir);
				n++;
			}
			if (fd != -1)
				close(fd);
			free(p);
		}
		free(src);
		free(manifest);
		free(dir);
	}
	closedir(d);
	free(base);
	return (n);
}
