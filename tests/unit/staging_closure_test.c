/*
 * staging/: the library closure checked against ldd's own answer (ldd
 * runs here only, on the host's own trusted binaries), programs built on
 * the spot with a missing library or with RPATH and RUNPATH, the ELF and
 * ld.so.cache parsers, glibc's version, and the container signs.
 */
#include "staging_test.h"

TestSuite(staging, .init = setup, .fini = teardown, .timeout = 120);

/* ---- library closure ---- */

static int
str_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* ldd's answer (paths found, "!name" for missing), sorted. */
static char **
ldd_paths(const char *program, size_t *np)
{
	FILE	 *f;
	char	 *cmd, line[4096], *s, *e, **v = NULL;
	size_t	  n = 0;

	xasprintf(&cmd, "ldd '%s' 2>&1", program);
	cr_assert_not_null(f = popen(cmd, "r"));
	while (fgets(line, sizeof line, f) != NULL) {
		s = line + strspn(line, " \t");
		if (strncmp(s, "linux-vdso", 10) == 0)
			continue;
		v = xreallocarray(v, n + 1, sizeof *v);
		if ((e = strstr(s, " => ")) != NULL) {
			if (strncmp(e + 4, "not found", 9) == 0) {
				*e = '\0';
				xasprintf(&v[n++], "!%s", s);
				continue;
			}
			s = e + 4;
		}
		if (*s != '/')
			cr_assert_fail("ldd %s: %s", program, line);
		s[strcspn(s, " \n")] = '\0';
		v[n++] = xstrdup(s);
	}
	pclose(f);
	free(cmd);
	qsort(v, n, sizeof *v, str_cmp);
	*np = n;
	return (v);
}

static char **
list_paths(const struct staging_list *l, size_t *np)
{
	char	**v = xreallocarray(NULL, l->nlibs + 1, sizeof *v);
	size_t	  i;

	for (i = 0; i < l->nlibs; i++) {
		if (l->libs[i].path != NULL)
			v[i] = xstrdup(l->libs[i].path);
		else
			xasprintf(&v[i], "!%s", l->libs[i].name);
	}
	qsort(v, l->nlibs, sizeof *v, str_cmp);
	*np = l->nlibs;
	return (v);
}

static void
free_strv(char **v, size_t n)
{
	while (n > 0)
		free(v[--n]);
	free(v);
}

static void
assert_same_as_ldd(const char *program)
{
	struct staging_list	 l = { 0 };
	const char		*one[2] = { program, NULL };
	char			*cause = NULL, **want, **got;
	size_t			 nwant, ngot, i;

	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	want = ldd_paths(program, &nwant);
	got = list_paths(&l, &ngot);
	for (i = 0; i < nwant || i < ngot; i++)
		cr_assert(i < nwant && i < ngot && strcmp(want[i],
		    got[i]) == 0, "%s: ldd says %s, staging says %s", program,
		    i < nwant ? want[i] : "(nothing)",
		    i < ngot ? got[i] : "(nothing)");
	cr_assert_gt(ngot, 1);
	free_strv(want, nwant);
	free_strv(got, ngot);
	staging_list_free(&l);
}

Test(staging, closure_of_ls_matches_ldd)
{
	assert_same_as_ldd("/bin/ls");
}

Test(staging, closure_of_pythons_matches_ldd)
{
	glob_t	g;
	size_t	i, checked = 0;

	if (access("/usr/bin/python3", X_OK) == 0) {
		assert_same_as_ldd("/usr/bin/python3");
		checked++;
	}
	if (glob("/root/.pyenv/versions/*/bin/python3.11", 0, NULL, &g) == 0) {
		for (i = 0; i < g.gl_pathc; i++)
			assert_same_as_ldd(g.gl_pathv[i]);
		checked += g.gl_pathc;
		globfree(&g);
	}
	if (checked == 0)
		skip("no python3 on this host");
}

/* Build in dir: each command is run by sh -c, and must succeed. */
static void
sh(const char *fmt, ...)
{
	va_list	 ap;
	char	*cmd;
	int	 status;

	va_start(ap, fmt);
	xvasprintf(&cmd, fmt, ap);
	va_end(ap);
	status = system(cmd);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s", cmd);
	free(cmd);
}

static int
has_path(const struct staging_list *l, const char *path)
{
	size_t	i;

	for (i = 0; i < l->nlibs; i++)
		if (l->libs[i].path != NULL &&
		    strcmp(l->libs[i].path, path) == 0)
			return (1);
	return (0);
}

Test(staging, missing_needed_is_reported)
{
	struct staging_list	 l = { 0 };
	const char		*one[2];
	char			*cause = NULL, *prog, *missing, *want;

	sh("cd %s && echo 'int qsup_gone(void) { return 7; }' > gone.c && "
	    "cc -shared -fPIC -Wl,-soname,libqsupgone.so.1 -o "
	    "libqsupgone.so.1 gone.c && ln -s libqsupgone.so.1 "
	    "libqsupgone.so && echo 'int qsup_gone(void); int main(void) "
	    "{ return qsup_gone(); }' > main.c && cc -o prog main.c -L. "
	    "-lqsupgone && rm libqsupgone.so libqsupgone.so.1", dir);
	prog = path_in(dir, "prog");
	one[0] = prog;
	one[1] = NULL;
	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	cr_assert_eq(l.nmissing, 1);
	cr_assert_not_null(missing = staging_list_missing(&l));
	xasprintf(&want, "libqsupgone.so.1 (needed by %s)", prog);
	cr_assert_str_eq(missing, want);
	free(want);
	free(missing);
	/* What ldd says, too. */
	assert_same_as_ldd(prog);
	/* The rest is still there. */
	xasprintf(&want, "/lib/%s/libc.so.6", staging_host_triplet());
	cr_assert(has_path(&l, want));
	free(want);
	free(prog);
	staging_list_free(&l);
}

/*
 * DT_RPATH is inherited by the libraries the program loads; DT_RUNPATH is
 * not: the same layout resolves with one and not with the other.
 */
Test(staging, rpath_runpath_and_origin)
{
	char	*prog;

	sh("cd %s && mkdir -p bin lib && "
	    "echo 'int b(void) { return 2; }' > b.c && "
	    "echo 'int b(void); int a(void) { return b(); }' > a.c && "
	    "echo 'int a(void); int main(void) { return a(); }' > m.c && "
	    "cc -shared -fPIC -Wl,-soname,libqb.so -o lib/libqb.so b.c && "
	    "cc -shared -fPIC -Wl,-soname,libqa.so -o lib/libqa.so a.c "
	    "-Llib -lqb && "
	    "cc -o bin/rpath m.c -Llib -lqa -Wl,-rpath-link,lib "
	    "-Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' && "
	    "cc -o bin/runpath m.c -Llib -lqa -Wl,-rpath-link,lib "
	    "-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../lib' && "
	    "cc -o bin/lib m.c -Llib -lqa -Wl,-rpath-link,lib "
	    "-Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../$LIB' && "
	    "mkdir -p lib/$(cc -print-multiarch) && "
	    "cp lib/*.so lib/$(cc -print-multiarch)/",
	    dir);
	prog = path_in(dir, "bin/rpath");
	assert_same_as_ldd(prog);
	free(prog);
	prog = path_in(dir, "bin/runpath");
	assert_same_as_ldd(prog);
	free(prog);
	prog = path_in(dir, "bin/lib");
	assert_same_as_ldd(prog);
	free(prog);
}

Test(staging, script_and_never_run)
{
	struct staging_list	 l = { 0 };
	const char		*one[2];
	char			*cause = NULL, *script;

	put(dir, "script", "#!/bin/sh\ntouch \"$0.ran\"\n", 0755);
	script = path_in(dir, "script");
	one[0] = script;
	one[1] = NULL;
	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	cr_assert(has_path(&l, "/lib64/ld-linux-x86-64.so.2"));
	cr_assert_eq(l.nmissing, 0);
	cr_assert(!exists(dir, "script.ran"), "the script was run");
	free(script);
	staging_list_free(&l);
}

Test(staging, closure_errors)
{
	struct staging_list	 l = { 0 };
	const char		*one[2] = { "/etc/passwd", NULL };
	char			*cause = NULL;

	cr_assert_eq(staging_ldd_closure(one, &l, &cause), -1);
	cr_assert_str_eq(cause, "/etc/passwd: not an ELF file");
	free(cause);
	one[0] = "/nonexistent/prog";
	cr_assert_eq(staging_ldd_closure(one, &l, &cause), -1);
	cr_assert_str_eq(cause,
	    "/nonexistent/prog: No such file or directory");
	free(cause);
	staging_list_free(&l);
}

/* Extension modules are loaded into the program's process: their own
 * needs, missing ones included, on top of the program's. */
Test(staging, extension_modules)
{
	struct staging_list	 l = { 0 };
	const char		*dirs[2];
	char			*cause = NULL, *mods, *missing;

	sh("cd %s && mkdir -p mods/pkg/sub mods/pkg/libs && "
	    "echo 'int dep(void) { return 1; }' > dep.c && "
	    "echo 'int dep(void); int mod(void) { return dep(); }' > mod.c && "
	    "cc -shared -fPIC -Wl,-soname,libqdep.so.1 -o "
	    "mods/pkg/libs/libqdep.so.1 dep.c && "
	    "ln -s libqdep.so.1 mods/pkg/libs/libqdep.so && "
	    "cc -shared -fPIC -o mods/pkg/sub/mod.cpython-311-x86_64-linux-gnu"
	    ".so mod.c -Lmods/pkg/libs -lqdep "
	    "-Wl,-rpath,'$ORIGIN/../libs' && "
	    "cc -shared -fPIC -Wl,-soname,libqlost.so -o libqlost.so dep.c && "
	    "cc -shared -fPIC -o mods/lost.so mod.c -L. -lqlost && "
	    "rm libqlost.so && echo 'not elf' > mods/notelf.so && "
	    "cc -shared -fPIC -Wl,-soname,libqboth.so -o mods/pkg/libs/"
	    "libqboth.so dep.c && cc -shared -fPIC -o mods/pkg/sub/zz.so "
	    "mod.c -Lmods/pkg/libs -lqboth -Wl,-rpath,'$ORIGIN/../libs'",
	    dir);
	mods = path_in(dir, "mods");
	dirs[0] = mods;
	dirs[1] = NULL;
	cr_assert_eq(staging_ldd_closure_ext("/bin/ls", dirs, &l, &cause), 0,
	    "%s", cause);
	cr_assert(has_path(&l, "/lib/x86_64-linux-gnu/libselinux.so.1"));
	cr_assert_eq(l.nmissing, 1);
	cr_assert_not_null(missing = staging_list_missing(&l));
	cr_assert_not_null(strstr(missing, "libqlost.so (needed by "),
	    "%s", missing);
	cr_assert_not_null(strstr(missing, "/mods/lost.so)"), "%s", missing);
	free(missing);
	free(mods);
	xasprintf(&mods, "%s/mods/pkg/sub/../libs/libqdep.so.1", dir);
	cr_assert(has_path(&l, mods), "the module's $ORIGIN RUNPATH");
	free(mods);
	/* Needed by a module, and loadable as a module itself. */
	xasprintf(&mods, "%s/mods/pkg/sub/../libs/libqboth.so", dir);
	cr_assert(has_path(&l, mods), "a module that is also needed");
	free(mods);
	staging_list_free(&l);

	dirs[0] = "/nonexistent";
	cr_assert_eq(staging_ldd_closure_ext("/bin/ls", dirs, &l, &cause), -1);
	cr_assert_str_eq(cause, "/nonexistent: No such file or directory");
	free(cause);
	staging_list_free(&l);
}

Test(staging, compat_seeds)
{
	struct staging_list	 l = { 0 };
	char			*cause = NULL, *p;
	const char *const	 extra[] = { "libqsup-no-such.so.9", NULL };
	size_t			 i;

	cr_assert_eq(staging_ldd_seeds(staging_compat_seeds, &l, &cause), 0,
	    "%s", cause);
	cr_assert_eq(l.nmissing, 0);
	for (i = 0; staging_compat_seeds[i] != NULL; i++) {
		xasprintf(&p, "/lib/%s/%s", staging_host_triplet(),
		    staging_compat_seeds[i]);
		if (access(p, F_OK) == 0)
			cr_assert(has_path(&l, p), "%s not listed", p);
		free(p);
	}
	/* libselinux brings libpcre2 and libc with it. */
	xasprintf(&p, "/lib/%s/libc.so.6", staging_host_triplet());
	cr_assert(has_path(&l, p));
	free(p);
	staging_list_free(&l);
	cr_assert_eq(staging_ldd_seeds(extra, &l, &cause), 0);
	cr_assert_eq(l.nlibs, 0);
	staging_list_free(&l);
}

/* Where RESOLVE_IN_ROOT finds path inside root: as the guest would. */
static int
open_in_root(const char *root, const char *path, struct stat *sb)
{
	struct open_how	how = { .flags = O_RDONLY|O_CLOEXEC,
	    .resolve = RESOLVE_IN_ROOT };
	int		rfd, fd;

	if ((rfd = open(root, O_RDONLY|O_DIRECTORY)) == -1)
		return (-1);
	fd = (int)syscall(SYS_openat2, rfd, path, &how, sizeof how);
	close(rfd);
	if (fd == -1)
		return (-1);
	fstat(fd, sb);
	close(fd);
	return (0);
}

/* The closure staged path by path resolves inside the copy as on the host,
 * symlinks (/lib -> usr/lib, /lib64/ld-linux...) included. */
Test(staging, copy_paths_mirrors_the_closure)
{
	struct staging_list	 l = { 0 };
	struct staging_stats	 st = { 0 };
	const char		*one[2] = { "/bin/ls", NULL };
	const char		**paths;
	char			*cause = NULL, *root;
	struct stat		 host, staged;
	size_t			 i, n = 0;

	cr_assert_eq(staging_ldd_closure(one, &l, &cause), 0, "%s", cause);
	paths = xreallocarray(NULL, l.nlibs + 2, sizeof *paths);
	for (i = 0; i < l.nlibs; i++)
		paths[n++] = l.libs[i].path;
	paths[n++] = "/bin/ls";
	paths[n] = NULL;
	root = path_in(dir, "run/libs");
	cr_assert_eq(staging_copy_paths(paths, root, STAGING_LINK, &st,
	    &cause), 0, "%s", cause);
	/* Twice: what is there already is left alone. */
	cr_assert_eq(staging_copy_paths(paths, root, STAGING_LINK, &st,
	    &cause), 0, "%s", cause);
	for (i = 0; paths[i] != NULL; i++) {
		cr_assert_eq(stat(paths[i], &host), 0);
		cr_assert_eq(open_in_root(root, paths[i], &staged), 0,
		    "%s is not reachable in the copy", paths[i]);
		/* Root may link the host's files; a user gets copies. */
		if (geteuid() == 0)
			cr_assert_eq(host.st_ino, staged.st_ino, "%s",
			    paths[i]);
		cr_assert_eq(host.st_size, staged.st_size, "%s", paths[i]);
	}
	cr_assert_eq(st.errors, 0, "%s", st.first_error);
	cr_assert_gt(st.symlinks, 0);
	/* Only what was asked for. */
	cr_assert(!exists(root, "usr/lib/x86_64-linux-gnu/libm.so.6"));
	free(root);
	free(paths);
	staging_stats_free(&st);
	staging_list_free(&l);
}

/* ---- ELF and ld.so.cache parsers ---- */

Test(staging, elf_parser_survives_corruption)
{
	struct staging_elf	 e;
	unsigned char		*orig, *buf;
	char			*why = NULL;
	size_t			 len, i, cut;
	unsigned		 seed = 1;

	orig = (unsigned char *)util_read_file("/bin/ls", &len, 64 << 20);
	cr_assert_not_null(orig);
	cr_assert_eq(staging_elf_parse(orig, len, &e, &why), 0, "%s", why);
	cr_assert_eq(e.nneeded, 2);
	cr_assert_str_eq(e.interp, "/lib64/ld-linux-x86-64.so.2");
	staging_elf_free(&e);
	/* Truncations at every header-ish length. */
	for (cut = 0; cut < 8192 && cut < len; cut += 7) {
		buf = xmalloc(cut + 1);
		memcpy(buf, orig, cut);
		if (staging_elf_parse(buf, cut, &e, &why) == 0)
			staging_elf_free(&e);
		free(why);
		why = NULL;
		free(buf);
	}
	/* Random bytes flipped in the headers and the dynamic section. */
	buf = xmalloc(len);
	for (i = 0; i < 3000; i++) {
		memcpy(buf, orig, len);
		for (cut = 0; cut < 8; cut++) {
			seed = seed * 1103515245 + 12345;
			buf[(seed >> 8) % (len < 65536 ? len : 65536)] =
			    (unsigned char)(seed >> 16);
		}
		if (staging_elf_parse(buf, len, &e, &why) == 0)
			staging_elf_free(&e);
		free(why);
		why = NULL;
	}
	free(buf);
	free(orig);
}

struct found {
	char	*path;
};

static int
take_first(const char *path, void *arg)
{
	struct found	*f = arg;

	f->path = xstrdup(path);
	return (1);
}

Test(staging, ld_so_cache)
{
	struct found	 f = { NULL };
	unsigned char	 cache[48 + 2 * 24 + 64];
	char		*real;
	size_t		 len, k1, v1;

	real = util_read_file("/etc/ld.so.cache", &len, 64 << 20);
	cr_assert_not_null(real);
	cr_assert_eq(staging_ldcache_lookup(real, len, "libc.so.6",
	    take_first, &f), 0);
	cr_assert_not_null(strstr(f.path, "/libc.so.6"));
	free(f.path);
	f.path = NULL;
	cr_assert_eq(staging_ldcache_lookup(real, len, "libqsup-none.so",
	    take_first, &f), -1);
	/* Cut anywhere: no answer, no crash. */
	for (k1 = 0; k1 < len && k1 < 4096; k1 += 3)
		if (staging_ldcache_lookup(real, k1, "libc.so.6", take_first,
		    &f) == 0) {
			free(f.path);
			f.path = NULL;
		}
	free(real);

	/* A cache of our own: one entry with hwcap (skipped), one without. */
	memset(cache, 0, sizeof cache);
	memcpy(cache, "glibc-ld.so.cache1.1", 20);
	cache[20] = 2;				/* nlibs */
	k1 = 48 + 2 * 24;
	v1 = k1 + 8;
	memcpy(cache + k1, "libq.so", 8);
	memcpy(cache + v1, "/opt/q/libq.so", 15);
	cache[48] = 3;				/* flags: ELF libc6 */
	cache[48 + 4] = (unsigned char)k1;
	cache[48 + 8] = (unsigned char)v1;
	cache[48 + 16] = 1;			/* hwcap */
	cache[72] = 3;
	cache[72 + 4] = (unsigned char)k1;
	cache[72 + 8] = (unsigned char)v1;
	cr_assert_eq(staging_ldcache_lookup(cache, sizeof cache, "libq.so",
	    take_first, &f), 0);
	cr_assert_str_eq(f.path, "/opt/q/libq.so");
	free(f.path);
	cr_assert_eq(staging_ldcache_lookup(cache, sizeof cache, "libq.s",
	    take_first, &f), -1);
	cache[72] = 0;				/* not libc6: skipped */
	cr_assert_eq(staging_ldcache_lookup(cache, sizeof cache, "libq.so",
	    take_first, &f), -1);
}

/* ---- host facts ---- */

Test(staging, glibc_version_of_the_host)
{
	struct staging_elf	 e;
	char			*libc, *want, *why = NULL, *data;
	int			 major, minor;
	size_t			 len;

	xasprintf(&libc, "/lib/%s/libc.so.6", staging_host_triplet());
	cr_assert_eq(staging_glibc_version(libc, &major, &minor), 0, "%s",
	    libc);
	xasprintf(&want, "%d.%d", major, minor);
	cr_assert_str_eq(want, gnu_get_libc_version());
	/* The version definitions agree (they can only lag the release). */
	data = util_read_file(libc, &len, 64 << 20);
	cr_assert_eq(staging_elf_parse(data, len, &e, &why), 0, "%s", why);
	cr_assert_eq(e.verdef_major, major);
	cr_assert_leq(e.verdef_minor, minor);
	cr_assert_geq(e.verdef_minor, 34);
	staging_elf_free(&e);
	free(data);
	free(want);
	free(libc);
	cr_assert_eq(staging_glibc_version("/bin/ls", &major, &minor), -1);
	cr_assert_eq(staging_glibc_version("/nonexistent", &major, &minor),
	    -1);
	cr_assert_eq(errno, ENOENT);
}

Test(staging, glibc_banner)
{
	static const char	 b1[] = "xx\0GNU C Library (Ubuntu GLIBC "
	    "2.43-0ubuntu1) development release version 2.43.\0yy";
	static const char	 b2[] = "GNU C Library is free\0release "
	    "version 9.9";
	int			 major = 0, minor = 0;

	cr_assert_eq(staging_glibc_banner(b1, sizeof b1, &major, &minor), 0);
	cr_assert_eq(major, 2);
	cr_assert_eq(minor, 43);
	cr_assert_eq(staging_glibc_banner(b2, sizeof b2, &major, &minor), -1);
	cr_assert_eq(staging_glibc_banner("GNU C Library", 13, &major,
	    &minor), -1);
}

Test(staging, host_triplet)
{
	char	*p;

	xasprintf(&p, "/usr/lib/%s", staging_host_triplet());
	cr_assert_eq(access(p, F_OK), 0, "%s", p);
	free(p);
#if defined(__x86_64__) && !defined(__ILP32__)
	cr_assert_str_eq(staging_host_triplet(), "x86_64-linux-gnu");
#endif
}

Test(staging, container_signs)
{
	char	*root, *p;

	unsetenv("container");
	root = path_in(dir, "root");
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(staging_container_signs(root), 0);
	put(root, ".dockerenv", "", 0644);
	cr_assert_eq(staging_container_signs(root), 1);
	p = path_in(root, ".dockerenv");
	cr_assert_eq(unlink(p), 0);
	free(p);
	put(root, ".containerenv", "", 0644);
	cr_assert_eq(staging_container_signs(root), 1);
	free(root);
	root = path_in(dir, "root2");
	cr_assert_eq(mkdir(root, 0755), 0);
	cr_assert_eq(setenv("container", "podman", 1), 0);
	cr_assert_eq(staging_container_signs(root), 1);
	cr_assert_eq(staging_in_container(), 1);
	unsetenv("container");
	/* The real root, as it is on this host. */
	unsetenv("QSUP_IN_CONTAINER");
	cr_assert_eq(staging_in_container(),
	    access("/.dockerenv", F_OK) == 0 ||
	    access("/.containerenv", F_OK) == 0);
	/* Both answers forced, whatever the host's signs say. */
	cr_assert_eq(setenv("QSUP_IN_CONTAINER", "0", 1), 0);
	cr_assert_eq(setenv("container", "podman", 1), 0);
	cr_assert_eq(staging_in_container(), 0);
	cr_assert_eq(facts_in_container(), 0);
	unsetenv("container");
	cr_assert_eq(setenv("QSUP_IN_CONTAINER", "1", 1), 0);
	cr_assert_eq(staging_in_container(), 1);
	cr_assert_eq(facts_in_container(), 1);
	unsetenv("QSUP_IN_CONTAINER");
	free(root);
}
