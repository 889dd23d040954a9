/*
 * Host directories shared with the guest over virtio-9p. A share is a host
 * tree, the path where the guest sees it and whether it is read-only; the
 * read-only part is enforced by QEMU (readonly=on on the fsdev), not by the
 * guest, which mounts it read-only too only as a second line.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qsup.h"
#include "staging.h"

/*
 * HOST[:GUEST][:ro|rw], the --share form. The guest path defaults to the
 * host's (resolved by share_check); the mode to read-only. A path
 * containing ':' cannot be given this way (use a profile).
 */
int
share_parse(const char *spec, struct share *sh, char **cause)
{
	char	*copy, *f[3], *p;
	int	 n = 0;

	memset(sh, 0, sizeof *sh);
	sh->readonly = 1;
	copy = xstrdup(spec);
	for (p = copy; n < 3; n++) {
		f[n] = p;
		if ((p = strchr(p, ':')) == NULL) {
			n++;
			break;
		}
		*p++ = '\0';
	}
	if (p != NULL) {
		xasprintf(cause, "--share %s: expected HOST[:GUEST][:ro|rw]",
		    spec);
		goto fail;
	}
	/* A last field of ro or rw is the mode, not a guest path. */
	if (n > 1 && (strcmp(f[n - 1], "ro") == 0 ||
	    strcmp(f[n - 1], "rw") == 0)) {
		sh->readonly = strcmp(f[n - 1], "ro") == 0;
		n--;
	} else if (n == 3) {
		xasprintf(cause, "--share %s: the mode must be ro or rw", spec);
		goto fail;
	}
	if (*f[0] == '\0') {
		xasprintf(cause, "--share %s: no host path", spec);
		goto fail;
	}
	sh->host = xstrdup(f[0]);
	if (n > 1 && *f[1] != '\0')
		sh->guest = xstrdup(f[1]);
	if (sh->guest != NULL && *sh->guest != '/') {
		xasprintf(cause, "--share %s: the guest path must be absolute",
		    spec);
		share_free(sh);
		goto fail;
	}
	free(copy);
	return (0);
fail:
	free(copy);
	return (-1);
}

/* The host side must be there, and a directory, at start. */
int
share_check(struct share *sh, char **cause)
{
	char		 real[PATH_MAX];
	struct stat	 st;

	if (realpath(sh->host, real) == NULL || stat(real, &st) == -1) {
		xasprintf(cause, "share %s: %s", sh->host, strerror(errno));
		return (-1);
	}
	if (!S_ISDIR(st.st_mode)) {
		xasprintf(cause, "share %s: not a directory (9p shares "
		    "directories)", sh->host);
		return (-1);
	}
	free(sh->host);
	sh->host = xstrdup(real);
	if (sh->guest == NULL)
		sh->guest = xstrdup(real);
	return (0);
}

static int
share_cmp(const void *a, const void *b)
{
	const struct share	*x = a, *y = b;

	return (strcmp(x->guest, y->guest));
}

/*
 * Check every share, order them so a parent is mounted before what is
 * mounted inside it, and name their tags (qsup0, qsup1, ...).
 */
int
share_prepare(struct share *sh, size_t n, char **cause)
{
	size_t	i;

	if (n > SHARE_MAX) {
		xasprintf(cause, "%zu shares; a microVM has room for %d",
		    n, SHARE_MAX);
		return (-1);
	}
	for (i = 0; i < n; i++) {
		/* The closure share is made when staged. */
		if (sh[i].ld_paths == NULL && share_check(&sh[i], cause) == -1)
			return (-1);
	}
	qsort(sh, n, sizeof *sh, share_cmp);
	for (i = 0; i < n; i++) {
		if (i > 0 && strcmp(sh[i].guest, sh[i - 1].guest) == 0) {
			xasprintf(cause, "two shares at %s in the guest",
			    sh[i].guest);
			return (-1);
		}
		free(sh[i].tag);
		xasprintf(&sh[i].tag, "qsup%zu", i);
	}
	return (0);
}

/*
 * What staging leaves out of an execution tree: the seed's bulky names, but
 * not __pycache__: an interpreter's compiled bytecode is part of it, and
 * without it every import compiles afresh (read-only, so never saved),
 * which under emulation costs seconds.
 */
static const char *const share_exec_skip[] = {
	".git", ".hg", ".svn", ".venv", "node_modules", ".mypy_cache",
	".pytest_cache", ".ruff_cache", ".tox", ".nox", ".cache", "samples",
	".cursor", ".claude", ".idea", ".vscode", NULL
};

static size_t
share_count(char *const *v)
{
	size_t	n = 0;

	while (v != NULL && v[n] != NULL)
		n++;
	return (n);
}

/*
 * "sparse" (closure.c): the closure share, staged in dst: each path of the
 * closure (sh->ld_paths) at its own host path, with the symlinks on the
 * way, so names resolve as on the host; and every directory a bind takes
 * from it, even one the closure has nothing in, since the guest binds it
 * over a library directory.
 */
static int
share_stage_closure(struct share *sh, const char *dst, char **cause)
{
	struct staging_stats	 st;
	char			*why = NULL, *dir;
	size_t			 i;
	int			 rc = -1;
	double			 t0 = util_now();

	memset(&st, 0, sizeof st);
	if (staging_copy_paths((const char *const *)sh->ld_paths, dst,
	    STAGING_LINK, &st, &why) == -1) {
		xasprintf(cause, "the sparse library closure: %s", why);
		goto out;
	}
	for (i = 0; i < sh->nbinds; i++) {
		xasprintf(&dir, "%s%s", dst, sh->binds[i].src);
		if (util_mkdir_p(dir, 0755) == -1) {
			xasprintf(cause, "%s: %s", dir, strerror(errno));
			free(dir);
			goto out;
		}
		free(dir);
	}
	log_debug("sparse: the closure staged in %s (%zu paths: %llu files, "
	    "%llu symlinks, %llu linked, %llu copied, in %.3f s), mounted at "
	    "%s", dst, share_count(sh->ld_paths),
	    (unsigned long long)st.files, (unsigned long long)st.symlinks,
	    (unsigned long long)st.linked, (unsigned long long)st.copied,
	    util_now() - t0, sh->guest);
	free(sh->host);
	sh->host = xstrdup(dst);
	sh->staged = 1;
	rc = 0;
out:
	staging_stats_free(&st);
	free(why);
	return (rc);
}

/*
 * Show a share through a copy in the run directory (dst) when it must be:
 *  - it has ignore globs: 9p exports a whole tree, so hiding part of it
 *    means not exporting it;
 *  - it is an execution tree and stage_exec says so (qsup in a container,
 *    where 9p over the container's overlay breaks mmap in the guest): the
 *    seed's staging, without its bulky names (.git, .venv, ...).
 * The copy is made of hard links where it can be, so it costs little; that
 * is only safe because the share is read-only (QEMU refuses every write),
 * which is why a read-write share cannot hide anything and is not staged.
 */
int
share_stage(struct share *sh, const char *dst, int stage_exec, char **cause)
{
	struct staging_stats	  st;
	const char *const	 *skip = NULL;
	char			 *why = NULL, **ign, *dir, *cache, *path = NULL;
	size_t			  i, n = 0;
	int			  ignore, rc = -1, kept = 1;

	ignore = sh->ignore != NULL && sh->ignore[0] != NULL;
	if (sh->exec && stage_exec)
		skip = share_exec_skip;
	if (sh->ld_paths != NULL)
		return (share_stage_closure(sh, dst, cause));
	if (!ignore && skip == NULL)
		return (0);
	if (!sh->readonly) {
		if (!ignore) {
			log_debug("share %s: read-write, so not staged",
			    sh->host);
			return (0);
		}
		xasprintf(cause, "share %s: ignore needs a read-only share (a "
		    "read-write share is the host tree itself)", sh->host);
		return (-1);
	}
	/*
	 * The library directories in it are covered by the closure: not
	 * copied, but there, for the guest to bind over.
	 */
	ign = xcalloc(share_count(sh->ignore) + share_count(sh->ld_hide) + 1,
	    sizeof *ign);
	for (i = 0; i < share_count(sh->ignore); i++)
		ign[n++] = sh->ignore[i];
	for (i = 0; i < share_count(sh->ld_hide); i++)
		ign[n++] = sh->ld_hide[i];
	memset(&st, 0, sizeof st);
	/* A copy kept from an earlier run, or made now and kept. */
	if (sh->use_cache && (cache = util_cache_dir()) != NULL) {
		kept = staging_cache_stage(cache, sh->host, STAGING_LINK, skip,
		    (const char *const *)ign, &path, &sh->cache_fd, &st, &why);
		free(cache);
		if (kept == -1) {
			xasprintf(cause, "share %s: %s", sh->host, why);
			goto out;
		}
		if (kept == 0 && st.files + st.dirs == 0)
			log_debug("share %s: shown through %s, kept from an "
			    "earlier run (unchanged since)", sh->host, path);
		else if (kept == 0)
			log_debug("share %s: %llu files shown through %s, kept "
			    "for later runs (%llu linked)", sh->host,
			    (unsigned long long)st.files, path,
			    (unsigned long long)st.linked);
		else {
			staging_stats_free(&st);
			memset(&st, 0, sizeof st);
		}
	}
	if (kept != 0) {
		path = xstrdup(dst);
		if (staging_copy_tree(sh->host, path, STAGING_LINK, skip,
		    (const char *const *)ign, &st, &why) == -1) {
			xasprintf(cause, "share %s: %s", sh->host, why);
			goto out;
		}
		log_debug("share %s: %llu files shown through %s (%llu "
		    "linked, %llu copied)", sh->host,
		    (unsigned long long)st.files, path,
		    (unsigned long long)st.linked,
		    (unsigned long long)st.copied);
	}
	for (i = 0; i < share_count(sh->ld_hide); i++) {
		xasprintf(&dir, "%s%s", path, sh->ld_hide[i]);
		if (util_mkdir_p(dir, 0755) == -1) {
			xasprintf(cause, "%s: %s", dir, strerror(errno));
			free(dir);
			goto out;
		}
		free(dir);
	}
	free(sh->host);
	sh->host = path;
	path = NULL;
	sh->staged = 1;
	rc = 0;
out:
	free(path);
	staging_stats_free(&st);
	free(why);
	free(ign);
	return (rc);
}

void
share_free(struct share *sh)
{
	size_t	i;

	free(sh->host);
	free(sh->guest);
	free(sh->tag);
	for (i = 0; sh->ignore != NULL && sh->ignore[i] != NULL; i++)
		free(sh->ignore[i]);
	free(sh->ignore);
	for (i = 0; sh->ld_paths != NULL && sh->ld_paths[i] != NULL; i++)
		free(sh->ld_paths[i]);
	free(sh->ld_paths);
	for (i = 0; i < sh->nbinds; i++) {
		free(sh->binds[i].src);
		free(sh->binds[i].dst);
	}
	free(sh->binds);
	for (i = 0; sh->ld_hide != NULL && sh->ld_hide[i] != NULL; i++)
		free(sh->ld_hide[i]);
	free(sh->ld_hide);
	if (sh->cache_fd > 0)
		staging_cache_release(sh->cache_fd);
	memset(sh, 0, sizeof *sh);
}
