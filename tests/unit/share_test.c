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
 * "sparse" staging: the closure share holds only the closure's paths (the
 * symlinks on the way kept) at their host paths, and every directory the
 * guest binds from it, even one the closure has nothing in; a share
 * containing a library directory is not copied for it.
 */
Test(share, stage_sparse)
{
	struct share	 cl, parent;
	char		 tmpl[] = "/tmp/qsup-share-test.XXXXXX";
	char		*top, *src, *dst, *want, *cause = NULL, *cmd;

	cr_assert_not_null(top = mkdtemp(tmpl));
	xasprintf(&src, "%s/usr", top);
	xasprintf(&dst, "%s/run/qsup0", top);
	xasprintf(&cmd, "mkdir -p %s/lib/tri/sub %s/lib64 %s/bin %s/run && "
	    "ln -s libz.so.1.2 %s/lib/tri/libz.so.1", src, src, src, top, src);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	xasprintf(&want, "%s/lib/tri", src);
	touch(want, "libz.so.1.2");
	touch(want, "libc.so.6");
	touch(want, "libbz2.so.1.0");
	touch(src, "lib/tri/sub/gconv.so");
	touch(src, "lib/keep.py");
	touch(src, "bin/python3");
	free(want);

	memset(&cl, 0, sizeof cl);
	cl.guest = xstrdup(CLOSURE_GUEST);
	cl.readonly = 1;
	cl.ld_paths = xcalloc(3, sizeof *cl.ld_paths);
	xasprintf(&cl.ld_paths[0], "%s/lib/tri/libz.so.1", src);
	xasprintf(&cl.ld_paths[1], "%s/lib/tri/libc.so.6", src);
	cl.binds = xcalloc(2, sizeof *cl.binds);
	xasprintf(&cl.binds[0].src, "%s/lib/tri", src);
	cl.binds[0].dst = xstrdup("/usr/lib/tri");
	xasprintf(&cl.binds[1].src, "%s/lib64", src);
	cl.binds[1].dst = xstrdup("/lib64");
	cl.nbinds = 2;
	memset(&parent, 0, sizeof parent);
	parent.host = xstrdup(src);
	parent.guest = xstrdup("/usr");
	parent.readonly = 1;
	parent.ld_hide = xcalloc(3, sizeof *parent.ld_hide);
	parent.ld_hide[0] = xstrdup("/lib/tri");
	parent.ld_hide[1] = xstrdup("/lib64");

	cr_assert_eq(share_stage(&cl, dst, 0, &cause), 0, "%s", cause);
	cr_assert_str_eq(cl.host, dst);
	cr_assert(cl.staged);
	xasprintf(&want, "%s%s/lib/tri", dst, src);
	cr_assert(exists(want, "libz.so.1"));
	cr_assert(exists(want, "libz.so.1.2"), "the link's target");
	cr_assert(exists(want, "libc.so.6"));
	cr_assert(!exists(want, "libbz2.so.1.0"), "not in the closure");
	cr_assert(!exists(want, "sub"), "not in the closure");
	free(want);
	xasprintf(&want, "%s%s", dst, src);
	cr_assert(exists(want, "lib64"), "bound, though empty");
	cr_assert(!exists(want, "bin"), "only the closure");
	cr_assert(!exists(want, "lib/keep.py"));
	free(want);

	/* Not staged for the closure: shared as it is. */
	cr_assert_eq(share_stage(&parent, dst, 0, &cause), 0, "%s", cause);
	cr_assert_str_eq(parent.host, src);
	cr_assert(!parent.staged);
	/* Staged as an execution tree: its library directories left out. */
	parent.exec = 1;
	free(dst);
	xasprintf(&dst, "%s/run/qsup1", top);
	cr_assert_eq(share_stage(&parent, dst, 1, &cause), 0, "%s", cause);
	cr_assert_str_eq(parent.host, dst);
	cr_assert(exists(dst, "bin/python3"), "the rest of the tree");
	cr_assert(exists(dst, "lib/keep.py"));
	cr_assert(exists(dst, "lib/tri"), "there to bind over");
	cr_assert(!exists(dst, "lib/tri/libc.so.6"), "the closure covers it");
	cr_assert(exists(dst, "lib64"));

	share_free(&cl);
	share_free(&parent);
	xasprintf(&cmd, "rm -rf %s", top);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(src);
	free(dst);
}
