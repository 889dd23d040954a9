#include <stdlib.h>
#include <sys/stat.h>

#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "qsup.h"

static struct share
parse_ok(const char *spec)
{
	struct share	 sh;
	char		*cause = NULL;

	cr_assert_eq(share_parse(spec, &sh, &cause), 0, "%s: %s", spec,
	    cause);
	return (sh);
}

static void
parse_fails(const char *spec, const char *want)
{
	struct share	 sh;
	char		*cause = NULL;

	cr_assert_eq(share_parse(spec, &sh, &cause), -1, "%s parsed", spec);
	cr_assert_not_null(strstr(cause, want), "%s: %s", spec, cause);
	free(cause);
}

Test(share, parse_forms)
{
	struct share	sh;

	sh = parse_ok("/srv");
	cr_assert_str_eq(sh.host, "/srv");
	cr_assert_null(sh.guest);
	cr_assert_eq(sh.readonly, 1);
	share_free(&sh);
	sh = parse_ok("/srv:rw");
	cr_assert_null(sh.guest);
	cr_assert_eq(sh.readonly, 0);
	share_free(&sh);
	sh = parse_ok("/srv:/data");
	cr_assert_str_eq(sh.guest, "/data");
	cr_assert_eq(sh.readonly, 1);
	share_free(&sh);
	sh = parse_ok("rel/dir:/data:rw");
	cr_assert_str_eq(sh.host, "rel/dir");
	cr_assert_str_eq(sh.guest, "/data");
	cr_assert_eq(sh.readonly, 0);
	share_free(&sh);
	sh = parse_ok("/srv:/data:ro");
	cr_assert_eq(sh.readonly, 1);
	share_free(&sh);
}

Test(share, parse_errors)
{
	parse_fails("", "no host path");
	parse_fails(":/x", "no host path");
	parse_fails("/a:rel", "must be absolute");
	parse_fails("/a:/b:xx", "ro or rw");
	parse_fails("/a:/b:ro:more", "expected HOST[:GUEST][:ro|rw]");
}

Test(share, prepare_resolves_sorts_and_tags)
{
	struct share	 sh[3];
	char		 dir[] = "/tmp/qsup-share.XXXXXX", *cause = NULL, *p;

	cr_assert_not_null(mkdtemp(dir));
	memset(sh, 0, sizeof sh);
	sh[0] = parse_ok("/tmp:/z");
	xasprintf(&p, "%s/../%s", dir, strrchr(dir, '/') + 1);
	sh[1] = parse_ok(p);
	free(p);
	sh[2] = parse_ok("/tmp:/a/b");
	cr_assert_eq(share_prepare(sh, 3, &cause), 0, "%s", cause);
	/* Sorted by guest path, so parents mount before children. */
	cr_assert_str_eq(sh[0].guest, "/a/b");
	cr_assert_str_eq(sh[1].host, dir);	/* resolved */
	cr_assert_str_eq(sh[1].guest, dir);	/* defaults to the host's */
	cr_assert_str_eq(sh[2].guest, "/z");
	cr_assert_str_eq(sh[0].tag, "qsup0");
	cr_assert_str_eq(sh[2].tag, "qsup2");
	share_free(&sh[0]);
	share_free(&sh[1]);
	share_free(&sh[2]);
	rmdir(dir);
}

Test(share, prepare_refuses)
{
	struct share	 sh[6];
	char		*cause = NULL;
	int		 i;

	sh[0] = parse_ok("/nonexistent/qsup:/x");
	cr_assert_eq(share_prepare(sh, 1, &cause), -1);
	cr_assert_str_eq(cause, "share /nonexistent/qsup: No such file or "
	    "directory");
	free(cause);
	share_free(&sh[0]);
	sh[0] = parse_ok("/etc/hostname:/x");
	cr_assert_eq(share_prepare(sh, 1, &cause), -1);
	cr_assert_not_null(strstr(cause, "not a directory"), "%s", cause);
	free(cause);
	share_free(&sh[0]);
	sh[0] = parse_ok("/tmp:/same");
	sh[1] = parse_ok("/etc:/same");
	cr_assert_eq(share_prepare(sh, 2, &cause), -1);
	cr_assert_str_eq(cause, "two shares at /same in the guest");
	free(cause);
	share_free(&sh[0]);
	share_free(&sh[1]);
	for (i = 0; i < 6; i++) {
		char *spec;

		xasprintf(&spec, "/tmp:/%d", i);
		sh[i] = parse_ok(spec);
		free(spec);
	}
	cr_assert_eq(share_prepare(sh, 6, &cause), -1);
	cr_assert_not_null(strstr(cause, "room for 5"), "%s", cause);
	free(cause);
	for (i = 0; i < 6; i++)
		share_free(&sh[i]);
}

static void
touch(const char *dir, const char *name)
{
	char	*path;

	xasprintf(&path, "%s/%s", dir, name);
	cr_assert_eq(util_write_file(path, name), 0, "%s", path);
	free(path);
}

static int
exists(const char *dir, const char *name)
{
	struct stat	 sb;
	char		*path;
	int		 yes;

	xasprintf(&path, "%s/%s", dir, name);
	yes = lstat(path, &sb) == 0;
	free(path);
	return (yes);
}

/*
 * "sparse" staging: a library share shows only its closure paths (the
 * symlinks on the way kept); a share containing a library directory shows
 * the rest of its tree, its ignore globs applied, and of the library
 * directory only the closure, all under one root in the run directory.
 */
Test(share, stage_sparse)
{
	struct share	 lib, parent;
	char		 tmpl[] = "/tmp/qsup-share-test.XXXXXX";
	char		*top, *src, *dst, *want, *cause = NULL, *cmd;

	cr_assert_not_null(top = mkdtemp(tmpl));
	xasprintf(&src, "%s/usr", top);
	xasprintf(&dst, "%s/run/qsup0", top);
	xasprintf(&cmd, "mkdir -p %s/lib/tri/sub %s/bin %s/run && "
	    "ln -s libz.so.1.2 %s/lib/tri/libz.so.1", src, src, top, src);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	xasprintf(&want, "%s/lib/tri", src);
	touch(want, "libz.so.1.2");
	touch(want, "libc.so.6");
	touch(want, "libbz2.so.1.0");
	touch(src, "lib/tri/sub/gconv.so");
	touch(src, "lib/keep.py");
	touch(src, "lib/secret.pem");
	touch(src, "bin/python3");
	free(want);

	memset(&lib, 0, sizeof lib);
	xasprintf(&lib.host, "%s/lib/tri", src);
	lib.guest = xstrdup("/lib/tri");
	lib.readonly = 1;
	lib.ld_paths = xcalloc(3, sizeof *lib.ld_paths);
	xasprintf(&lib.ld_paths[0], "%s/lib/tri/libz.so.1", src);
	xasprintf(&lib.ld_paths[1], "%s/lib/tri/libc.so.6", src);
	parent = lib;
	parent.host = xstrdup(src);
	parent.guest = xstrdup("/usr");
	parent.ld_paths = xcalloc(3, sizeof *parent.ld_paths);
	parent.ld_paths[0] = xstrdup(lib.ld_paths[0]);
	parent.ld_paths[1] = xstrdup(lib.ld_paths[1]);
	parent.ld_hide = xcalloc(2, sizeof *parent.ld_hide);
	parent.ld_hide[0] = xstrdup("/lib/tri");
	parent.ignore = xcalloc(2, sizeof *parent.ignore);
	parent.ignore[0] = xstrdup("*.pem");

	cr_assert_eq(share_stage(&lib, dst, 0, &cause), 0, "%s", cause);
	cr_assert_eq(share_stage(&parent, dst, 0, &cause), 0, "%s", cause);
	xasprintf(&want, "%s/run/ld%s/lib/tri", top, src);
	cr_assert_str_eq(lib.host, want);
	cr_assert(lib.staged);
	cr_assert(exists(lib.host, "libz.so.1"));
	cr_assert(exists(lib.host, "libz.so.1.2"), "the link's target");
	cr_assert(exists(lib.host, "libc.so.6"));
	cr_assert(!exists(lib.host, "libbz2.so.1.0"), "not in the closure");
	cr_assert(!exists(lib.host, "sub"), "not in the closure");
	free(want);
	xasprintf(&want, "%s/run/ld%s", top, src);
	cr_assert_str_eq(parent.host, want);
	cr_assert(exists(parent.host, "bin/python3"), "the rest of the tree");
	cr_assert(exists(parent.host, "lib/keep.py"));
	cr_assert(!exists(parent.host, "lib/secret.pem"), "its ignore globs");
	cr_assert(exists(parent.host, "lib/tri/libc.so.6"), "the closure");
	cr_assert(!exists(parent.host, "lib/tri/libbz2.so.1.0"),
	    "the rest of the library directory hidden");
	cr_assert(!exists(parent.host, "lib/tri/sub"));
	free(want);

	share_free(&lib);
	share_free(&parent);
	xasprintf(&cmd, "rm -rf %s", top);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(src);
	free(dst);
}
