/*
 * The shared libraries a program needs, found the way glibc's dynamic
 * loader finds them (elf/dl-load.c), by reading ELF headers only: ldd runs
 * the program, and the programs named here are not trusted. One "process"
 * is simulated per program: its objects are loaded breadth first, a
 * DT_NEEDED name already answered by a loaded object (by name, soname or
 * the same file) is not searched again, and each search follows the
 * loader's order: DT_RPATH of the needing object and of the objects that
 * loaded it (only when it has no DT_RUNPATH), DT_RUNPATH of the needing
 * object, /etc/ld.so.cache, then the default directories. LD_LIBRARY_PATH
 * and LD_PRELOAD are not used: they are the guest command's business.
 * Not followed: the glibc-hwcaps and legacy hwcap subdirectories (Debian
 * ships none), relative search directories, and secure (setuid) mode.
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "staging.h"

/*
 * Libraries glibc or common tools open with dlopen, which no DT_NEEDED
 * shows: libgcc_s (pthread_cancel, pthread_exit and backtrace unwind
 * through it), the NSS modules (getpwnam, getaddrinfo through
 * /etc/nsswitch.conf), libresolv; and the seed's own list for coreutils
 * and util-linux run against the host's /lib (mkdir, mount: libselinux,
 * libpcre2, libz). Seeds absent from the host are left out silently.
 */
const char *const staging_compat_seeds[] = {
	"libgcc_s.so.1",
	"libnss_files.so.2",
	"libnss_dns.so.2",
	"libresolv.so.2",
	"libselinux.so.1",
	"libpcre2-8.so.0",
	"libz.so.1",
	NULL
};

#define LD_CACHE	"/etc/ld.so.cache"
#define LD_MAX_SCRIPT	4	/* #! nesting, as the kernel allows */
#define LD_MAX_OBJS	4096

struct ld_obj {
	char		 *path;		/* as opened */
	char		 *origin;	/* $ORIGIN */
	char		**names;	/* the names it answers to */
	size_t		  nnames;
	struct staging_elf elf;
	dev_t		  dev;
	ino_t		  ino;
	ssize_t		  loader;	/* the object that loaded it; -1: root */
	int		  module;	/* loaded as an extension module */
	int		  listed;	/* ... and listed as needed since */
};

struct ld_proc {
	struct ld_obj		*objs;
	size_t			 nobjs;
	int			 elfclass;
	int			 machine;
	char			*cache;
	size_t			 cachelen;
	struct staging_list	*out;
};

/* A candidate file, checked like the loader's open_verify. */
struct ld_cand {
	char		 *path;
	struct staging_elf elf;
	dev_t		  dev;
	ino_t		  ino;
};

/* Read and parse an ELF file without executing or blocking on it. */
static int
ld_read_elf(const char *path, struct staging_elf *elf, dev_t *dev,
    ino_t *ino, char **cause)
{
	struct stat	 sb;
	void		*map = MAP_FAILED;
	char		*why = NULL;
	int		 fd, rc = -1;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC|O_NONBLOCK)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (-1);
	}
	if (fstat(fd, &sb) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size < EI_NIDENT) {
		xasprintf(cause, "%s: not an ELF file", path);
		goto out;
	}
	map = mmap(NULL, sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (map == MAP_FAILED) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (staging_elf_parse(map, sb.st_size, elf, &why) == -1) {
		xasprintf(cause, "%s: %s", path, why);
		goto out;
	}
	*dev = sb.st_dev;
	*ino = sb.st_ino;
	rc = 0;
out:
	free(why);
	if (map != MAP_FAILED)
		munmap(map, sb.st_size);
	close(fd);
	return (rc);
}

/* Whether path is a loadable object for this process. */
static int
ld_try(struct ld_proc *p, const char *path, struct ld_cand *c)
{
	char	*why = NULL;

	if (ld_read_elf(path, &c->elf, &c->dev, &c->ino, &why) == -1) {
		free(why);
		return (-1);
	}
	if (c->elf.elfclass != p->elfclass || c->elf.machine != p->machine ||
	    c->elf.type != ET_DYN) {
		staging_elf_free(&c->elf);
		return (-1);
	}
	c->path = xstrdup(path);
	return (0);
}

static char *
ld_dirname(const char *path)
{
	const char	*slash = strrchr(path, '/');

	if (slash == NULL)
		return (xstrdup("."));
	if (slash == path)
		return (xstrdup("/"));
	return (xstrndup(path, slash - path));
}

/* Expand $ORIGIN, $LIB and $PLATFORM (also in braces), as dl-load.c. */
static char *
ld_expand(const struct ld_obj *o, const char *s)
{
	static const char *const names[] = { "ORIGIN", "LIB", "PLATFORM" };
	struct buf	 b = { 0 };
	struct utsname	 u;
	const char	*val;
	size_t		 i, n;
	int		 brace;

	buf_add(&b, "", 0);
	while (*s != '\0') {
		if (*s != '$') {
			buf_add(&b, s++, 1);
			continue;
		}
		brace = s[1] == '{';
		for (i = 0; i < sizeof names / sizeof names[0]; i++) {
			n = strlen(names[i]);
			if (strncmp(s + 1 + brace, names[i], n) != 0)
				continue;
			if (brace ? s[1 + brace + n] != '}' :
			    (s[1 + n] != '\0' && s[1 + n] != '/' &&
			    s[1 + n] != ':'))
				continue;
			break;
		}
		if (i == sizeof names / sizeof names[0]) {
			buf_add(&b, s++, 1);
			continue;
		}
		if (i == 0)
			val = o->origin;
		else if (i == 1) {
			buf_printf(&b, "lib/%s", staging_host_triplet());
			val = "";
		} else
			val = uname(&u) == 0 ? u.machine : "";
		buf_puts(&b, val);
		s += 1 + brace + strlen(names[i]) + brace;
	}
	return (b.data);
}

/* Try name in each directory of a colon-separated search path. */
static int
ld_search_path(struct ld_proc *p, const struct ld_obj *o, const char *spec,
    const char *name, struct ld_cand *c)
{
	char	*copy, *dir, *save = NULL, *exp, *path;
	int	 rc = -1;

	copy = xstrdup(spec);
	for (dir = strtok_r(copy, ":", &save); dir != NULL && rc == -1;
	    dir = strtok_r(NULL, ":", &save)) {
		exp = ld_expand(o, dir);
		if (*exp == '/') {
			xasprintf(&path, "%s%s%s", exp,
			    exp[strlen(exp) - 1] == '/' ? "" : "/", name);
			rc = ld_try(p, path, c);
			free(path);
		}
		free(exp);
	}
	free(copy);
	return (rc);
}

struct ld_cache_arg {
	struct ld_proc	*p;
	struct ld_cand	*c;
	int		 nodeflib;
};

static int
ld_is_default_dir(const char *path)
{
	const char	*t = staging_host_triplet();
	char		*dir;
	int		 yes;

	dir = ld_dirname(path);
	yes = strcmp(dir, "/lib") == 0 || strcmp(dir, "/usr/lib") == 0 ||
	    (strncmp(dir, "/lib/", 5) == 0 && strcmp(dir + 5, t) == 0) ||
	    (strncmp(dir, "/usr/lib/", 9) == 0 && strcmp(dir + 9, t) == 0);
	free(dir);
	return (yes);
}

static int
ld_cache_cb(const char *path, void *arg)
{
	struct ld_cache_arg	*a = arg;

	if (a->nodeflib && ld_is_default_dir(path))
		return (0);
	return (ld_try(a->p, path, a->c) == 0);
}

/* The DT_RPATH the loader uses: none when DT_RUNPATH is present. */
static const char *
ld_rpath(const struct ld_obj *o)
{
	return (o->elf.runpath != NULL ? NULL : o->elf.rpath);
}

static int
ld_search(struct ld_proc *p, ssize_t loader, const char *name,
    struct ld_cand *c, enum staging_via *via)
{
	const struct ld_obj	*o = &p->objs[loader];
	struct ld_cache_arg	 a = { p, c, o->elf.nodeflib };
	char			*exp, *dirs;
	ssize_t			 l;
	int			 saw_main = 0, rc;

	if (strchr(name, '/') != NULL) {
		*via = STAGING_VIA_PATH;
		exp = ld_expand(o, name);
		rc = ld_try(p, exp, c);
		free(exp);
		return (rc);
	}
	if (o->elf.runpath == NULL) {
		*via = STAGING_VIA_RPATH;
		for (l = loader; l != -1; l = p->objs[l].loader) {
			if (l == 0)
				saw_main = 1;
			if (ld_rpath(&p->objs[l]) != NULL &&
			    ld_search_path(p, &p->objs[l],
			    ld_rpath(&p->objs[l]), name, c) == 0)
				return (0);
		}
		if (!saw_main && ld_rpath(&p->objs[0]) != NULL &&
		    ld_search_path(p, &p->objs[0], ld_rpath(&p->objs[0]),
		    name, c) == 0)
			return (0);
	} else {
		*via = STAGING_VIA_RUNPATH;
		if (ld_search_path(p, o, o->elf.runpath, name, c) == 0)
			return (0);
	}
	*via = STAGING_VIA_CACHE;
	if (p->cache != NULL && staging_ldcache_lookup(p->cache, p->cachelen,
	    name, ld_cache_cb, &a) == 0)
		return (0);
	if (o->elf.nodeflib)
		return (-1);
	*via = STAGING_VIA_DEFAULT;
	xasprintf(&dirs, "/lib/%s:/usr/lib/%s:/lib:/usr/lib",
	    staging_host_triplet(), staging_host_triplet());
	rc = ld_search_path(p, o, dirs, name, c);
	free(dirs);
	return (rc);
}

static void
ld_add_name(struct ld_obj *o, const char *name)
{
	o->names = xreallocarray(o->names, o->nnames + 1, sizeof *o->names);
	o->names[o->nnames++] = xstrdup(name);
}

/* The loaded object that already answers to name, or -1. */
static ssize_t
ld_find_name(const struct ld_proc *p, const char *name)
{
	size_t	i, j;

	for (i = 0; i < p->nobjs; i++) {
		for (j = 0; j < p->objs[i].nnames; j++)
			if (strcmp(p->objs[i].names[j], name) == 0)
				return ((ssize_t)i);
		if (p->objs[i].elf.soname != NULL &&
		    strcmp(p->objs[i].elf.soname, name) == 0)
			return ((ssize_t)i);
	}
	return (-1);
}

static ssize_t
ld_find_file(const struct ld_proc *p, dev_t dev, ino_t ino)
{
	size_t	i;

	for (i = 0; i < p->nobjs; i++)
		if (p->objs[i].dev == dev && p->objs[i].ino == ino)
			return ((ssize_t)i);
	return (-1);
}

/* Take over a candidate as a loaded object. */
static struct ld_obj *
ld_add_obj(struct ld_proc *p, struct ld_cand *c, const char *name,
    ssize_t loader)
{
	struct ld_obj	*o;

	p->objs = xreallocarray(p->objs, p->nobjs + 1, sizeof *p->objs);
	o = &p->objs[p->nobjs++];
	memset(o, 0, sizeof *o);
	o->path = c->path;
	o->elf = c->elf;
	o->dev = c->dev;
	o->ino = c->ino;
	o->loader = loader;
	o->origin = ld_dirname(c->path);
	if (name != NULL)
		ld_add_name(o, name);
	memset(c, 0, sizeof *c);
	return (o);
}

static void
ld_proc_free(struct ld_proc *p)
{
	size_t	i, j;

	for (i = 0; i < p->nobjs; i++) {
		free(p->objs[i].path);
		free(p->objs[i].origin);
		for (j = 0; j < p->objs[i].nnames; j++)
			free(p->objs[i].names[j]);
		free(p->objs[i].names);
		staging_elf_free(&p->objs[i].elf);
	}
	free(p->objs);
	p->objs = NULL;
	p->nobjs = 0;
}

/* Add one result, once per path (or per name when missing). */
static void
ld_list_add(struct staging_list *l, const char *name, const char *path,
    const char *needed_by, enum staging_via via)
{
	struct staging_lib	*e;
	size_t			 i;

	for (i = 0; i < l->nlibs; i++) {
		e = &l->libs[i];
		if (path != NULL && e->path != NULL &&
		    strcmp(e->path, path) == 0)
			return;
		if (path == NULL && e->path == NULL &&
		    strcmp(e->name, name) == 0)
			return;
	}
	l->libs = xreallocarray(l->libs, l->nlibs + 1, sizeof *l->libs);
	e = &l->libs[l->nlibs++];
	e->name = xstrdup(name);
	e->path = path != NULL ? xstrdup(path) : NULL;
	e->needed_by = xstrdup(needed_by);
	e->via = via;
	if (path == NULL)
		l->nmissing++;
}

/* Load, breadth first, what the objects from index first on need. */
static void
ld_load_needed(struct ld_proc *p, size_t first)
{
	struct ld_cand	 c;
	struct ld_obj	*o;
	enum staging_via via;
	const char	*name;
	ssize_t		 found;
	size_t		 i, j;

	for (i = first; i < p->nobjs; i++) {
		for (j = 0; j < p->objs[i].elf.nneeded; j++) {
			name = p->objs[i].elf.needed[j];
			if ((found = ld_find_name(p, name)) != -1 &&
			    !p->objs[found].module)
				continue;
			memset(&c, 0, sizeof c);
			if (found != -1) {
				/*
				 * Needed, and also a module of the dirs: listed
				 * where a search finds it (import order decides
				 * which is loaded first).
				 */
				if (!p->objs[found].listed && ld_search(p,
				    (ssize_t)i, name, &c, &via) == 0) {
					ld_list_add(p->out, name, c.path,
					    p->objs[i].path, via);
					free(c.path);
					staging_elf_free(&c.elf);
				}
				p->objs[found].listed = 1;
				continue;
			}
			if (p->nobjs >= LD_MAX_OBJS ||
			    ld_search(p, (ssize_t)i, name, &c, &via) == -1) {
				ld_list_add(p->out, name, NULL,
				    p->objs[i].path, STAGING_VIA_MISSING);
				continue;
			}
			if ((found = ld_find_file(p, c.dev, c.ino)) != -1) {
				ld_add_name(&p->objs[found], name);
				if (p->objs[found].module &&
				    !p->objs[found].listed) {
					ld_list_add(p->out, name, c.path,
					    p->objs[i].path, via);
					p->objs[found].listed = 1;
				}
				free(c.path);
				staging_elf_free(&c.elf);
				continue;
			}
			o = ld_add_obj(p, &c, name, (ssize_t)i);
			ld_list_add(p->out, name, o->path, p->objs[i].path,
			    via);
		}
	}
}

/* The interpreter of a "#!" script, or NULL. */
static char *
ld_script_interp(const char *path)
{
	char	 head[256], *s, *e;
	ssize_t	 n;
	int	 fd;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC|O_NONBLOCK)) == -1)
		return (NULL);
	n = read(fd, head, sizeof head - 1);
	close(fd);
	if (n < 3 || head[0] != '#' || head[1] != '!')
		return (NULL);
	head[n] = '\0';
	s = head + 2;
	s += strspn(s, " \t");
	e = s + strcspn(s, " \t\n");
	if (e == s || *s != '/')
		return (NULL);
	return (xstrndup(s, e - s));
}

/* Start a process for the program at path: the program, then PT_INTERP. */
static int
ld_proc_start(struct ld_proc *p, const char *program, char **cause)
{
	struct ld_cand	 c;
	struct ld_obj	*o;
	char		*real, *why = NULL, *interp, *cur;
	int		 depth, rc = -1;

	cur = xstrdup(program);
	memset(&c, 0, sizeof c);
	for (depth = 0;; depth++) {
		if (ld_read_elf(cur, &c.elf, &c.dev, &c.ino, &why) == 0)
			break;
		if (depth == LD_MAX_SCRIPT ||
		    (interp = ld_script_interp(cur)) == NULL) {
			xasprintf(cause, "%s", why);
			goto out;
		}
		free(why);
		why = NULL;
		free(cur);
		cur = interp;
	}
	p->elfclass = c.elf.elfclass;
	p->machine = c.elf.machine;
	c.path = xstrdup(cur);
	o = ld_add_obj(p, &c, NULL, -1);
	/* The kernel gives the loader the resolved path (/proc/self/exe). */
	if ((real = realpath(cur, NULL)) != NULL) {
		free(o->origin);
		o->origin = ld_dirname(real);
		free(real);
	}
	if (o->elf.interp != NULL) {
		interp = xstrdup(o->elf.interp);
		memset(&c, 0, sizeof c);
		if (ld_read_elf(interp, &c.elf, &c.dev, &c.ino, &why) == -1) {
			ld_list_add(p->out, interp, NULL, cur,
			    STAGING_VIA_MISSING);
			free(why);
			why = NULL;
		} else {
			c.path = xstrdup(interp);
			o = ld_add_obj(p, &c, interp, 0);
			ld_list_add(p->out, interp, interp, cur,
			    STAGING_VIA_INTERP);
		}
		free(interp);
	}
	rc = 0;
out:
	free(why);
	free(cur);
	return (rc);
}

static void
ld_proc_init(struct ld_proc *p, struct staging_list *out)
{
	memset(p, 0, sizeof *p);
	p->out = out;
	p->cache = util_read_file(LD_CACHE, &p->cachelen, 64 << 20);
}

static void
ld_proc_done(struct ld_proc *p)
{
	ld_proc_free(p);
	free(p->cache);
	p->cache = NULL;
}

/* The closure of each program, added to out (a program's own file is not). */
int
staging_ldd_closure(const char *const *programs, struct staging_list *out,
    char **cause)
{
	struct ld_proc	 p;
	size_t		 i;

	for (i = 0; programs[i] != NULL; i++) {
		ld_proc_init(&p, out);
		if (ld_proc_start(&p, programs[i], cause) == -1) {
			ld_proc_done(&p);
			return (-1);
		}
		ld_load_needed(&p, 0);
		ld_proc_done(&p);
	}
	return (0);
}

static int
ld_is_module_name(const char *name)
{
	size_t	len = strlen(name);

	/* Python imports *.so only; libfoo.so.1 is loaded when needed. */
	return (len > 3 && strcmp(name + len - 3, ".so") == 0);
}

/* Load every ELF shared object under dir into the process, as dlopen. */
static void
ld_load_dir(struct ld_proc *p, const char *dir, dev_t dev, int depth)
{
	struct ld_cand	 c;
	struct stat	 sb;
	struct dirent	*de;
	DIR		*d;
	char		*path;
	size_t		 first;

	if (depth > 64 || (d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		/* Most entries are neither: spare them the lstat. */
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN &&
		    (de->d_type != DT_REG || !ld_is_module_name(de->d_name)))
			continue;
		xasprintf(&path, "%s/%s", dir, de->d_name);
		if (lstat(path, &sb) == -1 || sb.st_dev != dev) {
			free(path);
			continue;
		}
		if (S_ISDIR(sb.st_mode))
			ld_load_dir(p, path, dev, depth + 1);
		else if (S_ISREG(sb.st_mode) && ld_is_module_name(de->d_name) &&
		    ld_find_file(p, sb.st_dev, sb.st_ino) == -1 &&
		    p->nobjs < LD_MAX_OBJS) {
			memset(&c, 0, sizeof c);
			if (ld_try(p, path, &c) == 0) {
				first = p->nobjs;
				ld_add_obj(p, &c, NULL, 0)->module = 1;
				ld_load_needed(p, first);
			}
		}
		free(path);
	}
	closedir(d);
}

/*
 * The closure of program and of the shared objects found under dirs (a
 * Python's lib-dynload and site-packages), each loaded into the program's
 * process as dlopen would: a module's libpython3.x or libc is the one the
 * program already has. The modules themselves are not listed.
 */
int
staging_ldd_closure_ext(const char *program, const char *const *dirs,
    struct staging_list *out, char **cause)
{
	struct ld_proc	 p;
	struct stat	 sb;
	size_t		 i;

	ld_proc_init(&p, out);
	if (ld_proc_start(&p, program, cause) == -1) {
		ld_proc_done(&p);
		return (-1);
	}
	ld_load_needed(&p, 0);
	for (i = 0; dirs != NULL && dirs[i] != NULL; i++) {
		if (stat(dirs[i], &sb) == -1)
			xasprintf(cause, "%s: %s", dirs[i], strerror(errno));
		else if (!S_ISDIR(sb.st_mode))
			xasprintf(cause, "%s: not a directory", dirs[i]);
		else {
			ld_load_dir(&p, dirs[i], sb.st_dev, 0);
			continue;
		}
		ld_proc_done(&p);
		return (-1);
	}
	ld_proc_done(&p);
	return (0);
}

/*
 * Start a process of the host's own ABI (qsup's) whose program needs
 * nothing and has no search path of its own.
 */
static int
ld_proc_start_self(struct ld_proc *p, char **cause)
{
	struct ld_cand	 c;

	memset(&c, 0, sizeof c);
	if (ld_read_elf("/proc/self/exe", &c.elf, &c.dev, &c.ino,
	    cause) == -1)
		return (-1);
	p->elfclass = c.elf.elfclass;
	p->machine = c.elf.machine;
	staging_elf_free(&c.elf);
	c.elf.elfclass = p->elfclass;
	c.elf.machine = p->machine;
	c.path = xstrdup("/proc/self/exe");
	ld_add_obj(p, &c, NULL, -1);
	return (0);
}

/*
 * The closure of program and of the shared objects named in modules (found
 * by the caller: an interpreter's extension modules), each loaded into the
 * program's process as dlopen would load it, as staging_ldd_closure_ext
 * does for the *.so under a directory. With program NULL, the modules are
 * loaded into a process of qsup's own ABI that needs nothing. A module that
 * is not a shared object of the process's class and machine is passed
 * over, as dlopen would refuse it. The modules themselves are not listed.
 */
int
staging_ldd_closure_mods(const char *program, const char *const *modules,
    struct staging_list *out, char **cause)
{
	struct ld_proc	 p;
	struct ld_cand	 c;
	struct stat	 sb;
	size_t		 i, first;

	ld_proc_init(&p, out);
	if ((program != NULL ? ld_proc_start(&p, program, cause) :
	    ld_proc_start_self(&p, cause)) == -1) {
		ld_proc_done(&p);
		return (-1);
	}
	ld_load_needed(&p, 0);
	for (i = 0; modules != NULL && modules[i] != NULL; i++) {
		if (stat(modules[i], &sb) == -1 || !S_ISREG(sb.st_mode) ||
		    ld_find_file(&p, sb.st_dev, sb.st_ino) != -1 ||
		    p.nobjs >= LD_MAX_OBJS)
			continue;
		memset(&c, 0, sizeof c);
		if (ld_try(&p, modules[i], &c) == 0) {
			first = p.nobjs;
			ld_add_obj(&p, &c, NULL, 0)->module = 1;
			ld_load_needed(&p, first);
		}
	}
	ld_proc_done(&p);
	return (0);
}

/*
 * Libraries by soname (staging_compat_seeds, say), searched as a program of
 * the host's own ABI would, with their closure. A name found nowhere is
 * left out, not reported missing: seeds are a convenience.
 */
int
staging_ldd_seeds(const char *const *names, struct staging_list *out,
    char **cause)
{
	struct ld_proc	 p;
	struct ld_cand	 c;
	struct ld_obj	*o;
	enum staging_via via;
	size_t		 i, first;
	ssize_t		 found;

	ld_proc_init(&p, out);
	if (ld_proc_start_self(&p, cause) == -1) {
		ld_proc_done(&p);
		return (-1);
	}
	for (i = 0; names[i] != NULL; i++) {
		if (ld_find_name(&p, names[i]) != -1)
			continue;
		memset(&c, 0, sizeof c);
		if (ld_search(&p, 0, names[i], &c, &via) == -1)
			continue;
		if ((found = ld_find_file(&p, c.dev, c.ino)) != -1) {
			ld_add_name(&p.objs[found], names[i]);
			free(c.path);
			staging_elf_free(&c.elf);
			continue;
		}
		first = p.nobjs;
		o = ld_add_obj(&p, &c, names[i], 0);
		ld_list_add(out, names[i], o->path, "(seed)", via);
		ld_load_needed(&p, first);
	}
	ld_proc_done(&p);
	return (0);
}

/* "libfoo.so.1 (needed by /x/y), ..." for the missing ones, or NULL. */
char *
staging_list_missing(const struct staging_list *l)
{
	struct buf	 b = { 0 };
	size_t		 i;

	for (i = 0; i < l->nlibs; i++) {
		if (l->libs[i].path != NULL)
			continue;
		buf_printf(&b, "%s%s (needed by %s)", b.len == 0 ? "" : ", ",
		    l->libs[i].name, l->libs[i].needed_by);
	}
	return (b.data);
}

void
staging_list_free(struct staging_list *l)
{
	size_t	i;

	for (i = 0; i < l->nlibs; i++) {
		free(l->libs[i].name);
		free(l->libs[i].path);
		free(l->libs[i].needed_by);
	}
	free(l->libs);
	memset(l, 0, sizeof *l);
}
