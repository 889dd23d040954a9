/*
 * The host's C library in the guest: the sparse closure (ld_closure_libs =
 * "sparse") and the check of the guest's own glibc against the host's.
 *
 * A "library share" is a share whose host path is one of the host's
 * C-library directories (the real paths of /lib/TRIPLET, /usr/lib/TRIPLET,
 * /lib64 and /usr/lib64); a "parent share" is one that contains such a
 * directory (the system Python's /usr/lib). Under "full" they are shared as
 * they are. Under "sparse" the closure, the libraries what runs needs,
 * found as glibc's loader finds them (staging/ldd.c), the symlinks on the
 * way included, is staged (hard links) in the run directory at its host
 * paths and shared once, read-only, at CLOSURE_GUEST. Library shares go:
 * the guest binds the closure's copy of each at its guest path instead.
 * Parent shares are shared as they are, and the guest binds the closure's
 * copy of each library directory inside them over it, after every mount
 * (the seed's bind lines, core/wire/wire.h): sparse hides the rest
 * wherever the guest would see it, without copying the rest of a parent
 * (60,000 files for /usr/lib: seconds to copy, as many to remove). The
 * closure share takes a share slot; the library shares give theirs back.
 *
 * The closure's roots: the command (argv[0] found through the guest's PATH
 * on the shares), every ELF program and every *.so extension module in the
 * execution trees (exec = true; a parent share's library directories
 * excepted), the modules loaded into the command's process as dlopen
 * would; then staging_compat_seeds and the profile's ld_closure_extra.
 * What the command itself needs and the host lacks stops the start (it
 * could not run); what only another program or a module needs is said
 * with -v, since it fails only when that is loaded.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"
#include "staging.h"

#define CLOSURE_MAX_DIRS	4
#define CLOSURE_MAX_DEPTH	64
struct closure_dirs {
	char	*dir[CLOSURE_MAX_DIRS];
	size_t	 n;
};

/* A list of paths, NULL-terminated, each once. */
struct closure_paths {
	char	**v;
	size_t	  n;
};

static void
closure_paths_add(struct closure_paths *l, const char *path)
{
	size_t	i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], path) == 0)
			return;
	l->v = xreallocarray(l->v, l->n + 2, sizeof *l->v);
	l->v[l->n++] = xstrdup(path);
	l->v[l->n] = NULL;
}

static void
closure_paths_free(struct closure_paths *l)
{
	size_t	i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof *l);
}

/* path is dir or lies below it (both normalized, absolute). */
static int
closure_under(const char *path, const char *dir)
{
	size_t	len = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return (1);
	return (strncmp(path, dir, len) == 0 &&
	    (path[len] == '\0' || path[len] == '/'));
}

/* The real paths of the host's C-library directories that exist. */
static void
closure_libdirs(struct closure_dirs *d)
{
	const char	*t = staging_host_triplet();
	char		*cand[CLOSURE_MAX_DIRS], *real;
	size_t		 i, j;

	memset(d, 0, sizeof *d);
	xasprintf(&cand[0], "/lib/%s", t);
	xasprintf(&cand[1], "/usr/lib/%s", t);
	cand[2] = xstrdup("/lib64");
	cand[3] = xstrdup("/usr/lib64");
	for (i = 0; i < CLOSURE_MAX_DIRS; i++) {
		if ((real = realpath(cand[i], NULL)) != NULL) {
			for (j = 0; j < d->n; j++)
				if (strcmp(d->dir[j], real) == 0)
					break;
			if (j == d->n)
				d->dir[d->n++] = real;
			else
				free(real);
		}
		free(cand[i]);
	}
}

static void
closure_libdirs_free(struct closure_dirs *d)
{
	size_t	i;

	for (i = 0; i < d->n; i++)
		free(d->dir[i]);
	memset(d, 0, sizeof *d);
}

/*
 * What a share (its real host path) is to the closure: CLOSURE_LIB if it is
 * one of dirs, CLOSURE_PARENT if one of them lies inside it, else
 * CLOSURE_NONE.
 */
int
closure_kind(const char *host, char *const *dirs, size_t n)
{
	size_t	i;
	int	kind = CLOSURE_NONE;

	for (i = 0; i < n; i++) {
		if (strcmp(host, dirs[i]) == 0)
			return (CLOSURE_LIB);
		if (closure_under(dirs[i], host))
			kind = CLOSURE_PARENT;
	}
	return (kind);
}

/*
 * The host path behind a guest path, through the share mounted deepest on
 * it, or NULL when no share shows it.
 */
char *
closure_guest_to_host(const struct share *sh, size_t n, const char *guest)
{
	const struct share	*best = NULL;
	char			*path;
	size_t			 i, len;

	for (i = 0; i < n; i++) {
		if (sh[i].guest == NULL || !closure_under(guest, sh[i].guest))
			continue;
		if (best == NULL || strlen(sh[i].guest) > strlen(best->guest))
			best = &sh[i];
	}
	if (best == NULL)
		return (NULL);
	len = strcmp(best->guest, "/") == 0 ? 0 : strlen(best->guest);
	xasprintf(&path, "%s%s", best->host, guest + len);
	return (path);
}

/* The guest PATH the command is found in: -e, the profile's, the agent's. */
static const char *
closure_guest_path(const struct profile *p, char *const *env, size_t nenv)
{
	const char	*path = NULL;
	size_t		 i;

	for (i = 0; i < nenv; i++)
		if (strncmp(env[i], "PATH=", 5) == 0)
			path = env[i] + 5;
	for (i = 0; path == NULL && i < p->nenv; i++)
		if (strncmp(p->env[i], "PATH=", 5) == 0)
			path = p->env[i] + 5;
	return (path != NULL ? path : QSUP_GUEST_PATH);
}

/* The host file the guest runs as argv0, when it comes from a share. */
static char *
closure_command(const struct share *sh, size_t n, const char *argv0,
    const char *path)
{
	struct stat	 sb;
	char		*copy, *dir, *save = NULL, *guest, *host = NULL;

	if (strchr(argv0, '/') != NULL) {
		if (*argv0 != '/')
			return (NULL);
		return (closure_guest_to_host(sh, n, argv0));
	}
	copy = xstrdup(path);
	for (dir = strtok_r(copy, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		if (*dir != '/')
			continue;
		xasprintf(&guest, "%s/%s", dir, argv0);
		host = closure_guest_to_host(sh, n, guest);
		free(guest);
		if (host != NULL && stat(host, &sb) == 0 &&
		    S_ISREG(sb.st_mode) && access(host, X_OK) == 0)
			break;
		free(host);
		host = NULL;
	}
	free(copy);
	return (host);
}

static int
closure_is_module(const char *name)
{
	size_t	len = strlen(name);

	return (len > 3 && strcmp(name + len - 3, ".so") == 0);
}

static int
closure_is_elf(const char *path)
{
	char	magic[4];
	int	fd, yes;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC|O_NONBLOCK|O_NOFOLLOW)) == -1)
		return (0);
	yes = read(fd, magic, 4) == 4 && memcmp(magic, "\177ELF", 4) == 0;
	close(fd);
	return (yes);
}

/*
 * The ELF programs (executable, not named *.so) and the *.so modules under
 * dir, on its file system, the library directories excepted.
 */
static void
closure_walk(const char *dir, dev_t dev, const struct closure_dirs *libs,
    struct closure_paths *progs, struct closure_paths *mods, int depth)
{
	struct dirent	*de;
	struct stat	 sb;
	DIR		*d;
	char		*path;
	size_t		 i;

	if (depth > CLOSURE_MAX_DEPTH || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 || de->d_type == DT_LNK)
			continue;
		xasprintf(&path, "%s/%s", strcmp(dir, "/") == 0 ? "" : dir,
		    de->d_name);
		if (lstat(path, &sb) == -1 || sb.st_dev != dev) {
			free(path);
			continue;
		}
		if (S_ISDIR(sb.st_mode)) {
			for (i = 0; i < libs->n; i++)
				if (strcmp(path, libs->dir[i]) == 0)
					break;
			if (i == libs->n)
				closure_walk(path, dev, libs, progs, mods,
				    depth + 1);
		} else if (S_ISREG(sb.st_mode) && closure_is_module(de->d_name))
			closure_paths_add(mods, path);
		else if (progs != NULL && S_ISREG(sb.st_mode) &&
		    (sb.st_mode & 0111) != 0 && closure_is_elf(path))
			closure_paths_add(progs, path);
		free(path);
	}
	closedir(d);
}

/*
 * Whether path is one the library shares must show: the file, or a
 * directory entry on the way to it, lies in a library directory.
 */
static int
closure_in_libdirs(const char *path, const struct closure_dirs *libs)
{
	char	*real, *dir, *slash;
	size_t	 i;
	int	 yes = 0;

	if ((real = realpath(path, NULL)) != NULL) {
		for (i = 0; i < libs->n && !yes; i++)
			yes = closure_under(real, libs->dir[i]);
		free(real);
	}
	if (yes)
		return (1);
	dir = xstrdup(path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	if ((real = realpath(*dir == '\0' ? "/" : dir, NULL)) != NULL) {
		for (i = 0; i < libs->n && !yes; i++)
			yes = closure_under(real, libs->dir[i]);
		free(real);
	}
	free(dir);
	return (yes);
}

/*
 * The host's own dynamic loader at the path programs name it by
 * (PT_INTERP, /lib64/ld-linux-x86-64.so.2): a program the closure did not
 * see (run by a shell from a tree that is not exec) then still starts, and
 * the loader says what it lacks.
 */
static int
closure_interp(struct staging_list *out, char **cause)
{
	struct staging_list	 self = { 0 };
	const char *const	 qsup[] = { "/proc/self/exe", NULL };
	size_t			 i;

	if (staging_ldd_closure(qsup, &self, cause) == -1)
		return (-1);
	for (i = 0; i < self.nlibs; i++) {
		if (self.libs[i].via != STAGING_VIA_INTERP ||
		    self.libs[i].path == NULL)
			continue;
		out->libs = xreallocarray(out->libs, out->nlibs + 1,
		    sizeof *out->libs);
		out->libs[out->nlibs++] = self.libs[i];
		self.libs[i] = self.libs[--self.nlibs];
		break;
	}
	staging_list_free(&self);
	return (0);
}

/* The profile's ld_closure_extra: sonames searched as seeds, or paths. */
static int
closure_extra(const struct profile *p, struct staging_list *out,
    char **cause)
{
	struct staging_list	 one;
	struct stat		 sb;
	const char		*name;
	const char		*names[2] = { NULL, NULL };
	char			*why = NULL;
	size_t			 i, j;

	for (i = 0; i < p->nld_closure_extra; i++) {
		name = p->ld_closure_extra[i];
		memset(&one, 0, sizeof one);
		names[0] = name;
		if (*name == '/') {
			if (stat(name, &sb) == -1) {
				xasprintf(cause, "ld_closure_extra: %s: %s",
				    name, strerror(errno));
				return (-1);
			}
			/* An ELF object brings what it needs. */
			if (S_ISREG(sb.st_mode) && closure_is_elf(name) &&
			    staging_ldd_closure(names, &one, &why) == -1) {
				free(why);
				why = NULL;
			}
			one.libs = xreallocarray(one.libs, one.nlibs + 1,
			    sizeof *one.libs);
			one.libs[one.nlibs].name = xstrdup(name);
			one.libs[one.nlibs].path = xstrdup(name);
			one.libs[one.nlibs].needed_by =
			    xstrdup("(ld_closure_extra)");
			one.libs[one.nlibs++].via = STAGING_VIA_PATH;
		} else if (staging_ldd_seeds(names, &one, cause) == -1)
			return (-1);
		else if (one.nlibs == 0) {
			xasprintf(cause, "ld_closure_extra: %s is not on the "
			    "host (searched /etc/ld.so.cache and /lib/%s, "
			    "/usr/lib/%s, /lib, /usr/lib)", name,
			    staging_host_triplet(), staging_host_triplet());
			staging_list_free(&one);
			return (-1);
		}
		for (j = 0; j < one.nlibs; j++) {
			out->libs = xreallocarray(out->libs, out->nlibs + 1,
			    sizeof *out->libs);
			out->libs[out->nlibs++] = one.libs[j];
			if (one.libs[j].path == NULL)
				out->nmissing++;
		}
		free(one.libs);
	}
	return (0);
}

/*
 * Find the closure of what this run may execute; fails when the command's
 * own closure lacks a library the host does not have.
 */
static int
closure_compute(const struct profile *p, const struct share *sh, size_t n,
    const struct closure_dirs *libs, char *const *argv, char *const *env,
    size_t nenv, struct staging_list *all, char **cause)
{
	struct closure_paths	 progs = { 0 }, mods = { 0 };
	struct staging_list	 cmd = { 0 };
	struct stat		 sb;
	const char		*one[2] = { NULL, NULL };
	char			*command, *why = NULL, *missing;
	size_t			 i;
	int			 kind, rc = -1;

	command = closure_command(sh, n, argv[0],
	    closure_guest_path(p, env, nenv));
	if (command != NULL) {
		log_debug("sparse: the command is %s on the host", command);
		one[0] = command;
		if (staging_ldd_closure(one, &cmd, &why) == -1) {
			log_debug("sparse: %s", why);
			free(why);
			why = NULL;
		}
		if (cmd.nmissing > 0) {
			missing = staging_list_missing(&cmd);
			xasprintf(cause, "ld_closure_libs = \"sparse\": %s: "
			    "found nowhere on the host, so %s cannot start; "
			    "not starting the sandbox", missing, argv[0]);
			free(missing);
			goto out;
		}
	}
	/*
	 * A tree that holds library directories is a system directory (the
	 * system Python's /usr/lib): its programs are other packages'
	 * helpers, its modules may be the interpreter's.
	 */
	for (i = 0; i < n; i++) {
		kind = closure_kind(sh[i].host, libs->dir, libs->n);
		if (!sh[i].exec || kind == CLOSURE_LIB ||
		    stat(sh[i].host, &sb) == -1)
			continue;
		closure_walk(sh[i].host, sb.st_dev, libs, kind == CLOSURE_NONE ?
		    &progs : NULL, &mods, 0);
	}
	log_debug("sparse: roots: %s, %zu programs and %zu modules in the "
	    "execution trees", command != NULL ? "the command" : "no command",
	    progs.n, mods.n);
	for (i = 0; i < progs.n; i++) {
		one[0] = progs.v[i];
		if (staging_ldd_closure(one, all, &why) == -1) {
			log_debug("sparse: %s", why);
			free(why);
			why = NULL;
		}
	}
	/* Modules go into the command's process, else the first program's. */
	if (mods.n > 0 && staging_ldd_closure_mods(command != NULL ? command :
	    progs.n > 0 ? progs.v[0] : NULL, (const char *const *)mods.v, all,
	    &why) == -1) {
		log_debug("sparse: %s", why);
		free(why);
		why = NULL;
	}
	if (all->nmissing > 0) {
		missing = staging_list_missing(all);
		log_debug("sparse: not on the host, needed only by what the "
		    "command may load (it fails then): %s", missing);
		free(missing);
	}
	for (i = 0; i < cmd.nlibs; i++) {
		all->libs = xreallocarray(all->libs, all->nlibs + 1,
		    sizeof *all->libs);
		all->libs[all->nlibs++] = cmd.libs[i];
	}
	free(cmd.libs);
	memset(&cmd, 0, sizeof cmd);
	if (staging_ldd_seeds(staging_compat_seeds, all, cause) == -1 ||
	    closure_interp(all, cause) == -1 ||
	    closure_extra(p, all, cause) == -1)
		goto out;
	rc = 0;
out:
	staging_list_free(&cmd);
	closure_paths_free(&progs);
	closure_paths_free(&mods);
	free(command);
	return (rc);
}

/*
 * A guest image's glibc ("2.41", as its agent found it once the image's
 * root was mounted) against the host's, whose libraries are shared over
 * the image's: 1 and *cause when the image's is newer, so its programs
 * would fail on the host's older C library; 0 when not, or not known.
 */
int
closure_glibc_newer(const char *version, char **cause)
{
	char	*libc;
	int	 gmaj, gmin, hmaj, hmin, rc = 0;

	if (version == NULL || sscanf(version, "%d.%d", &gmaj, &gmin) != 2)
		return (0);
	xasprintf(&libc, "/lib/%s/libc.so.6", staging_host_triplet());
	if (staging_glibc_version(libc, &hmaj, &hmin) == 0 &&
	    (gmaj > hmaj || (gmaj == hmaj && gmin > hmin))) {
		xasprintf(cause, "the image's glibc is %d.%d and the host's is "
		    "%d.%d (%s): the image's programs would run on the host's "
		    "older C library shared over theirs, which they refuse; "
		    "use an image with glibc %d.%d or older, or share no host "
		    "library directory", gmaj, gmin, hmaj, hmin, libc, hmaj,
		    hmin);
		rc = 1;
	}
	free(libc);
	return (rc);
}

/*
 * Host libraries replace the guest's in the directories shared over them:
 * a guest whose own glibc is newer than the host's would run its programs
 * on an older one, which they refuse (GLIBC_2.x not found). Refuse it
 * before it boots.
 */
static int
closure_check_guest(const struct profile *p, const char *what, char **cause)
{
	struct guest	 g;
	struct stat	 sb;
	void		*map = MAP_FAILED;
	char		*libc, *where = NULL;
	int		 fd = -1, gmaj, gmin, hmaj, hmin, rc = -1, found;

	/*
	 * A catalog image's glibc is known now; an image file's once its
	 * root is mounted (sandbox.c asks its agent).
	 */
	if (p->image_kind != PROFILE_IMAGE_NONE)
		return (-closure_glibc_newer(p->image_glibc, cause));
	if (guest_resolve(p, &g, cause) == -1)
		return (-1);
	xasprintf(&libc, "/lib/%s/libc.so.6", staging_host_triplet());
	if (staging_glibc_version(libc, &hmaj, &hmin) == -1) {
		log_debug("%s: %s: not checking the guest's glibc", libc,
		    strerror(errno));
		rc = 0;
		goto out;
	}
	if ((fd = open(g.initramfs, O_RDONLY|O_CLOEXEC)) == -1 ||
	    fstat(fd, &sb) == -1) {
		xasprintf(cause, "%s: %s", g.initramfs, strerror(errno));
		goto out;
	}
	if (sb.st_size == 0 || (map = mmap(NULL, sb.st_size, PROT_READ,
	    MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		xasprintf(cause, "%s: %s", g.initramfs, sb.st_size == 0 ?
		    "empty" : strerror(errno));
		goto out;
	}
	found = staging_cpio_glibc(map, sb.st_size, &gmaj, &gmin, &where);
	if (found == -1)
		log_debug("%s: not an uncompressed cpio: its glibc is not "
		    "checked", g.initramfs);
	else if (found == 0)
		log_debug("the guest has no glibc of its own (no libc.so.6 "
		    "in %s)", g.initramfs);
	else if (gmaj > hmaj || (gmaj == hmaj && gmin > hmin)) {
		xasprintf(cause, "the guest's glibc is %d.%d (%s in %s) and "
		    "the host's is %d.%d (%s): the guest's programs would run "
		    "on the host's older C library shared at %s, which they "
		    "refuse; use a guest with glibc %d.%d or older, or share "
		    "no host library directory", gmaj, gmin, where,
		    g.initramfs, hmaj, hmin, libc, what, hmaj, hmin);
		goto out;
	} else
		log_debug("the guest's glibc %d.%d (%s) is not newer than the "
		    "host's %d.%d", gmaj, gmin, where, hmaj, hmin);
	rc = 0;
out:
	if (map != MAP_FAILED)
		munmap(map, sb.st_size);
	if (fd != -1)
		close(fd);
	free(where);
	free(libc);
	guest_free(&g);
	return (rc);
}

/* Add a bind of the closure's src over dst, once per dst. */
static void
closure_bind(struct share *cl, const char *src, const char *dst)
{
	size_t	i;

	for (i = 0; i < cl->nbinds; i++)
		if (strcmp(cl->binds[i].dst, dst) == 0)
			return;
	cl->binds = xreallocarray(cl->binds, cl->nbinds + 1,
	    sizeof *cl->binds);
	cl->binds[cl->nbinds].src = xstrdup(src);
	cl->binds[cl->nbinds++].dst = xstrdup(dst);
}

/*
 * Show the closure (keep: host paths) wherever the guest would see a
 * library directory (dirs: their real host paths): a share of one goes,
 * and the guest binds the closure's copy of it at its guest path; a share
 * containing one stays as it is, and the guest binds the closure's copy
 * over each inside it. The closure share, mounted at CLOSURE_GUEST, is
 * added at sh[*n], for which sh has room, if any share needs it.
 */
int
closure_rewrite(struct share *sh, size_t *n, char *const *dirs, size_t ndirs,
    char *const *keep, size_t nkeep, char **cause)
{
	struct share	 cl;
	size_t		 i, j, k, left = 0, len;
	char		*dst;
	int		 kind;

	memset(&cl, 0, sizeof cl);
	for (i = 0; i < *n; i++) {
		kind = closure_kind(sh[i].host, dirs, ndirs);
		if (kind == CLOSURE_LIB) {
			closure_bind(&cl, sh[i].host, sh[i].guest);
			share_free(&sh[i]);
			continue;
		}
		if (kind == CLOSURE_PARENT) {
			len = strcmp(sh[i].host, "/") == 0 ? 0 :
			    strlen(sh[i].host);
			sh[i].ld_hide = xcalloc(ndirs + 1,
			    sizeof *sh[i].ld_hide);
			for (j = k = 0; j < ndirs; j++) {
				if (!closure_under(dirs[j], sh[i].host))
					continue;
				xasprintf(&dst, "%s%s", strcmp(sh[i].guest,
				    "/") == 0 ? "" : sh[i].guest, dirs[j] + len);
				closure_bind(&cl, dirs[j], dst);
				free(dst);
				sh[i].ld_hide[k++] = xstrdup(dirs[j] + len);
			}
		}
		sh[left++] = sh[i];
	}
	for (i = left; i < *n; i++)
		memset(&sh[i], 0, sizeof sh[i]);
	*n = left;
	if (cl.nbinds == 0)
		return (0);
	if (*n + 1 > SHARE_MAX) {
		xasprintf(cause, "ld_closure_libs = \"sparse\" shows the "
		    "library closure through a share of its own, and with it "
		    "there would be %zu shares; a microVM has room for %d: "
		    "share less, or use ld_closure_libs = \"full\"", *n + 1,
		    SHARE_MAX);
		for (i = 0; i < cl.nbinds; i++) {
			free(cl.binds[i].src);
			free(cl.binds[i].dst);
		}
		free(cl.binds);
		return (-1);
	}
	cl.guest = xstrdup(CLOSURE_GUEST);
	cl.readonly = 1;
	cl.ld_paths = xcalloc(nkeep + 1, sizeof *cl.ld_paths);
	for (i = 0; i < nkeep; i++)
		cl.ld_paths[i] = xstrdup(keep[i]);
	sh[(*n)++] = cl;
	return (0);
}

/*
 * Before the sandbox starts: check the guest's glibc when host library
 * directories are shared, and under "sparse" find the closure and show it
 * over them (closure_rewrite; *n changes, and sh has room for one more).
 * Returns 1 if the closure applies, 0 if not, -1 on error.
 */
int
closure_prepare(const struct profile *p, struct share *sh, size_t *n,
    char *const *argv, char *const *env, size_t nenv, char **cause)
{
	struct closure_dirs	 libs;
	struct closure_paths	 keep = { 0 };
	struct staging_list	 all = { 0 };
	struct buf		 what = { 0 };
	size_t			 i, j, nlib = 0;
	int			 rc = -1;
	double			 t0 = util_now();

	closure_libdirs(&libs);
	for (i = 0; i < *n; i++) {
		if (share_check(&sh[i], cause) == -1)
			goto out;
		if (closure_kind(sh[i].host, libs.dir, libs.n) == CLOSURE_NONE)
			continue;
		buf_printf(&what, "%s%s", nlib++ == 0 ? "" : ", ",
		    sh[i].guest);
		sh[i].host_libs = 1;
		if (p->ld_closure_libs == PROFILE_LD_SPARSE &&
		    !sh[i].readonly) {
			xasprintf(cause, "share %s: ld_closure_libs = "
			    "\"sparse\" shows the host's library directories "
			    "in it through hard links to the host's files, "
			    "which a read-write share would let the guest "
			    "reach; make it read-only", sh[i].host);
			goto out;
		}
	}
	if (nlib == 0) {
		if (p->ld_closure_libs == PROFILE_LD_SPARSE)
			log_debug("sparse: no host library directory is "
			    "shared: nothing to do");
		rc = 0;
		goto out;
	}
	if (closure_check_guest(p, what.data, cause) == -1)
		goto out;
	if (p->ld_closure_libs != PROFILE_LD_SPARSE) {
		rc = 0;
		goto out;
	}
	if (closure_compute(p, sh, *n, &libs, argv, env, nenv, &all,
	    cause) == -1)
		goto out;
	for (i = 0; i < all.nlibs; i++) {
		if (all.libs[i].path == NULL)
			continue;
		if (closure_in_libdirs(all.libs[i].path, &libs))
			closure_paths_add(&keep, all.libs[i].path);
		else if (strcmp(all.libs[i].needed_by,
		    "(ld_closure_extra)") == 0)
			log_warnx("ld_closure_extra: %s is not in the host's "
			    "library directories: the guest sees it only if a "
			    "share shows it", all.libs[i].path);
	}
	log_debug("sparse: %zu libraries in the closure, %zu of them from "
	    "the shared library directories (found in %.3f s)", all.nlibs,
	    keep.n, util_now() - t0);
	if (closure_rewrite(sh, n, libs.dir, libs.n, keep.v, keep.n,
	    cause) == -1)
		goto out;
	for (i = 0; i < *n; i++) {
		if (sh[i].ld_paths == NULL)
			continue;
		for (j = 0; j < sh[i].nbinds; j++)
			log_debug("sparse: the guest binds %s%s on %s",
			    CLOSURE_GUEST, sh[i].binds[j].src,
			    sh[i].binds[j].dst);
	}
	rc = 1;
out:
	closure_paths_free(&keep);
	staging_list_free(&all);
	closure_libdirs_free(&libs);
	buf_free(&what);
	return (rc);
}

/*
 * The library a failed command's stderr says could not be opened: the
 * loader's "error while loading shared libraries: NAME: cannot open shared
 * object file", or dlopen's "NAME: cannot open shared object file" as
 * Python's ctypes and import show it. The last one in buf, or NULL.
 */
char *
closure_missing_lib(const char *buf, size_t len)
{
	static const char	 needle[] = ": cannot open shared object file";
	const char		*p, *at = NULL, *s;
	size_t			 left = len;

	for (p = buf; (p = memmem(p, left, needle, sizeof needle - 1)) !=
	    NULL; p++) {
		at = p;
		left = len - (p + 1 - buf);
	}
	if (at == NULL)
		return (NULL);
	while (at > buf && (at[-1] == '\'' || at[-1] == '"'))
		at--;
	for (s = at; s > buf && s[-1] != ' ' && s[-1] != '\t' &&
	    s[-1] != '\n' && s[-1] != '\'' && s[-1] != '"'; s--)
		;
	if (s == at)
		return (NULL);
	return (xstrndup(s, at - s));
}

/*
 * One line for stderr after a command failed under "sparse" for want of a
 * library, naming it and the remedy; NULL if stderr says no such thing.
 */
char *
closure_hint(const char *buf, size_t len)
{
	struct staging_list	 l = { 0 };
	struct stat		 sb;
	const char		*names[2] = { NULL, NULL };
	char			*name, *line, *why = NULL;
	int			 on_host;

	if ((name = closure_missing_lib(buf, len)) == NULL)
		return (NULL);
	if (strchr(name, '/') != NULL)
		on_host = stat(name, &sb) == 0;
	else {
		names[0] = name;
		on_host = staging_ldd_seeds(names, &l, &why) == 0 &&
		    l.nlibs > 0;
		free(why);
		staging_list_free(&l);
	}
	if (on_host)
		xasprintf(&line, "qsup: %s is on the host but not in the "
		    "sparse library closure the guest sees (ld_closure_libs = "
		    "\"sparse\"): add it with ld_closure_extra = { \"%s\" }, "
		    "or use ld_closure_libs = \"full\"\n", name, name);
	else
		xasprintf(&line, "qsup: %s is not in the guest, nor on the "
		    "host (ld_closure_libs = \"sparse\" shows only host "
		    "libraries)\n", name);
	free(name);
	return (line);
}
