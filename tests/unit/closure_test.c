/*
 * closure.c's pure parts: which shares are library shares, guest paths to
 * host paths, the library named in a failed command's stderr, and glibc's
 * version in an initramfs cpio.
 */
#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cmd.h"
#include "staging.h"

Test(closure, kind)
{
	char *const	dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64" };

	cr_assert_eq(closure_kind("/usr/lib/x86_64-linux-gnu", dirs, 2),
	    CLOSURE_LIB);
	cr_assert_eq(closure_kind("/usr/lib64", dirs, 2), CLOSURE_LIB);
	cr_assert_eq(closure_kind("/usr/lib", dirs, 2), CLOSURE_PARENT);
	cr_assert_eq(closure_kind("/usr", dirs, 2), CLOSURE_PARENT);
	cr_assert_eq(closure_kind("/", dirs, 2), CLOSURE_PARENT);
	/* Inside one, or a name that only starts the same: neither. */
	cr_assert_eq(closure_kind("/usr/lib/x86_64-linux-gnu/perl5", dirs, 2),
	    CLOSURE_NONE);
	cr_assert_eq(closure_kind("/usr/li", dirs, 2), CLOSURE_NONE);
	cr_assert_eq(closure_kind("/usr/lib6", dirs, 2), CLOSURE_NONE);
	cr_assert_eq(closure_kind("/root/.pyenv", dirs, 2), CLOSURE_NONE);
}

Test(closure, guest_to_host)
{
	struct share	 sh[3];
	char		*p;

	memset(sh, 0, sizeof sh);
	sh[0].host = "/usr/bin";
	sh[0].guest = "/usr/local/bin";
	sh[1].host = "/usr/lib";
	sh[1].guest = "/usr/lib";
	sh[2].host = "/srv/py/lib/python3.11";
	sh[2].guest = "/usr/lib/python3.11";
	cr_assert_str_eq(p = closure_guest_to_host(sh, 3,
	    "/usr/local/bin/python3"), "/usr/bin/python3");
	free(p);
	/* The share mounted deepest wins. */
	cr_assert_str_eq(p = closure_guest_to_host(sh, 3,
	    "/usr/lib/python3.11/os.py"), "/srv/py/lib/python3.11/os.py");
	free(p);
	cr_assert_str_eq(p = closure_guest_to_host(sh, 3, "/usr/lib/x"),
	    "/usr/lib/x");
	free(p);
	cr_assert_str_eq(p = closure_guest_to_host(sh, 3, "/usr/local/bin"),
	    "/usr/bin");
	free(p);
	cr_assert_null(closure_guest_to_host(sh, 3, "/usr/local/binx/y"));
	cr_assert_null(closure_guest_to_host(sh, 3, "/bin/sh"));
	sh[0].host = "/";
	sh[0].guest = "/host";
	cr_assert_str_eq(p = closure_guest_to_host(sh, 1, "/host/etc/x"),
	    "//etc/x");
	free(p);
}

static struct share
share_of(const char *host, const char *guest)
{
	struct share	sh;

	memset(&sh, 0, sizeof sh);
	sh.host = xstrdup(host);
	sh.guest = xstrdup(guest);
	sh.readonly = 1;
	return (sh);
}

static const char *
bound_on(const struct share *cl, const char *dst)
{
	size_t	i;

	for (i = 0; i < cl->nbinds; i++)
		if (strcmp(cl->binds[i].dst, dst) == 0)
			return (cl->binds[i].src);
	return (NULL);
}

/*
 * The system Python's shares under "sparse": the library shares go, the
 * parent stays as it is, and the closure share is bound over every place
 * the guest would see a library directory, the parent's included.
 */
Test(closure, rewrite)
{
	char *const	 dirs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib64" };
	char *const	 keep[] = { "/usr/lib/x86_64-linux-gnu/libc.so.6" };
	struct share	 sh[SHARE_MAX + 1], *cl;
	size_t		 n = 0, i;
	char		*cause = NULL;

	memset(sh, 0, sizeof sh);
	sh[n++] = share_of("/usr/lib", "/usr/lib");
	sh[n++] = share_of("/usr/bin", "/usr/local/bin");
	sh[n++] = share_of("/usr/lib/x86_64-linux-gnu",
	    "/lib/x86_64-linux-gnu");
	sh[n++] = share_of("/usr/lib64", "/lib64");
	sh[n++] = share_of("/srv/app", "/app");
	cr_assert_eq(closure_rewrite(sh, &n, dirs, 2, keep, 1, &cause), 0,
	    "%s", cause);
	cr_assert_eq(n, 4, "two library shares out, the closure in");
	cr_assert_str_eq(sh[0].host, "/usr/lib", "shared as it is");
	cr_assert_null(sh[0].ld_paths);
	cr_assert_str_eq(sh[0].ld_hide[0], "/x86_64-linux-gnu");
	cr_assert_null(sh[0].ld_hide[1], "/usr/lib64 is not in /usr/lib");
	cr_assert_str_eq(sh[1].host, "/usr/bin");
	cr_assert_str_eq(sh[2].host, "/srv/app");
	cl = &sh[3];
	cr_assert_null(cl->host, "made when staged");
	cr_assert_str_eq(cl->guest, CLOSURE_GUEST);
	cr_assert(cl->readonly);
	cr_assert_str_eq(cl->ld_paths[0], keep[0]);
	cr_assert_null(cl->ld_paths[1]);
	cr_assert_eq(cl->nbinds, 3);
	cr_assert_str_eq(bound_on(cl, "/usr/lib/x86_64-linux-gnu"),
	    "/usr/lib/x86_64-linux-gnu", "hidden in the parent share too");
	cr_assert_str_eq(bound_on(cl, "/lib/x86_64-linux-gnu"),
	    "/usr/lib/x86_64-linux-gnu");
	cr_assert_str_eq(bound_on(cl, "/lib64"), "/usr/lib64");
	for (i = 0; i < n; i++)
		share_free(&sh[i]);

	/* A parent shared at /: its guest paths are the host's. */
	n = 0;
	sh[n++] = share_of("/", "/");
	cr_assert_eq(closure_rewrite(sh, &n, dirs, 2, keep, 1, &cause), 0);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(bound_on(&sh[1], "/usr/lib/x86_64-linux-gnu"),
	    "/usr/lib/x86_64-linux-gnu");
	cr_assert_str_eq(bound_on(&sh[1], "/usr/lib64"), "/usr/lib64");
	for (i = 0; i < n; i++)
		share_free(&sh[i]);

	/* No library directory shared: nothing added. */
	n = 0;
	sh[n++] = share_of("/srv/app", "/app");
	cr_assert_eq(closure_rewrite(sh, &n, dirs, 2, keep, 1, &cause), 0);
	cr_assert_eq(n, 1);
	share_free(&sh[0]);

	/* The closure share counts against the limit. */
	n = 0;
	sh[n++] = share_of("/usr/lib", "/usr/lib");
	while (n < SHARE_MAX) {
		char *g;

		xasprintf(&g, "/s%zu", n);
		sh[n++] = share_of("/a", g);
		free(g);
	}
	cr_assert_eq(closure_rewrite(sh, &n, dirs, 2, keep, 1, &cause), -1);
	cr_assert_not_null(strstr(cause, "17 shares; a microVM has room for "
	    "16"), "%s", cause);
	free(cause);
	for (i = 0; i < n; i++)
		share_free(&sh[i]);
}

static void
missing_is(const char *err, const char *want)
{
	char	*got = closure_missing_lib(err, strlen(err));

	if (want == NULL)
		cr_assert_null(got, "%s: got %s", err, got);
	else {
		cr_assert_not_null(got, "%s: none found", err);
		cr_assert_str_eq(got, want);
	}
	free(got);
}

Test(closure, missing_lib)
{
	missing_is("python3: error while loading shared libraries: "
	    "libpython3.11.so.1.0: cannot open shared object file: No such "
	    "file or directory\n", "libpython3.11.so.1.0");
	missing_is("Traceback (most recent call last):\n  File \"<string>\", "
	    "line 1, in <module>\nOSError: libzstd.so.1: cannot open shared "
	    "object file: No such file or directory\n", "libzstd.so.1");
	missing_is("ImportError: libssl.so.3: cannot open shared object "
	    "file: No such file or directory", "libssl.so.3");
	missing_is("OSError: /opt/x/libfoo.so: cannot open shared object "
	    "file: No such file or directory", "/opt/x/libfoo.so");
	/* The last one counts: it is what stopped the command. */
	missing_is("a: liba.so: cannot open shared object file\n"
	    "b: libb.so.2: cannot open shared object file\n", "libb.so.2");
	missing_is("'libq.so.1': cannot open shared object file", "libq.so.1");
	missing_is("Traceback: ZeroDivisionError\n", NULL);
	missing_is(": cannot open shared object file", NULL);
	missing_is("", NULL);
	/* A tail cut anywhere has no partial match. */
	missing_is("cannot open shared object file", NULL);
}

/* One newc entry: header, name, data, each padded to 4 bytes. */
static void
cpio_add(struct buf *b, const char *name, unsigned mode, const void *data,
    size_t len)
{
	static const char	zero[4];

	buf_printf(b, "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X"
	    "%08zX%08X", 1, mode, 0, 0, 1, 0, len, 0, 0, 0, 0,
	    strlen(name) + 1, 0);
	buf_add(b, name, strlen(name) + 1);
	buf_add(b, zero, (4 - b->len % 4) % 4);
	buf_add(b, data, len);
	buf_add(b, zero, (4 - b->len % 4) % 4);
}

static const char banner[] = "\177ELF...GNU C Library (Debian GLIBC "
    "2.41-1) stable release version 2.41.\nCopyright";

Test(closure, cpio_glibc)
{
	struct buf	 b = { 0 };
	char		*where;
	int		 ma = 0, mi = 0;

	/* The default guest: busybox, no C library. */
	cpio_add(&b, "bin", S_IFDIR | 0755, "", 0);
	cpio_add(&b, "bin/busybox", S_IFREG | 0755, "\177ELF", 4);
	cpio_add(&b, "TRAILER!!!", 0, "", 0);
	cr_assert_eq(staging_cpio_glibc(b.data, b.len, &ma, &mi, &where), 0);
	cr_assert_null(where);
	/* A second archive, after padding, with libc.so.6 in it. */
	buf_add(&b, "\0\0\0\0\0\0\0\0", 8);
	cpio_add(&b, "./lib/x86_64-linux-gnu/libc.so.6", S_IFREG | 0755,
	    banner, sizeof banner);
	cpio_add(&b, "TRAILER!!!", 0, "", 0);
	cr_assert_eq(staging_cpio_glibc(b.data, b.len, &ma, &mi, &where), 1);
	cr_assert_eq(ma, 2);
	cr_assert_eq(mi, 41);
	cr_assert_str_eq(where, "/lib/x86_64-linux-gnu/libc.so.6");
	free(where);
	buf_free(&b);

	/* glibc before 2.34: libc.so.6 is a symlink to libc-2.31.so. */
	cpio_add(&b, "lib/libc.so.6", S_IFLNK | 0777, "libc-2.31.so", 12);
	cpio_add(&b, "lib/libc-2.31.so", S_IFREG | 0755,
	    "GNU C Library (Ubuntu GLIBC 2.31-0ubuntu9) stable release "
	    "version 2.31.", 70);
	cpio_add(&b, "TRAILER!!!", 0, "", 0);
	cr_assert_eq(staging_cpio_glibc(b.data, b.len, &ma, &mi, &where), 1);
	cr_assert_eq(ma, 2);
	cr_assert_eq(mi, 31);
	cr_assert_str_eq(where, "/lib/libc-2.31.so");
	free(where);
	buf_free(&b);

	/* A symlink to nothing in the archive, or a loop: no answer. */
	cpio_add(&b, "lib/libc.so.6", S_IFLNK | 0777, "libc.so.6", 9);
	cpio_add(&b, "TRAILER!!!", 0, "", 0);
	cr_assert_eq(staging_cpio_glibc(b.data, b.len, &ma, &mi, &where), 0);
	buf_free(&b);
}

Test(closure, cpio_unreadable)
{
	struct buf	 b = { 0 };
	char		*where;
	int		 ma, mi;
	size_t		 cut, end;

	/* gzip: this does not decompress. */
	cr_assert_eq(staging_cpio_glibc("\037\213\010\000", 4, &ma, &mi,
	    &where), -1);
	cpio_add(&b, "lib/x86_64-linux-gnu/libc.so.6", S_IFREG | 0755,
	    banner, sizeof banner);
	/* Cut anywhere before its end: refused, never read past the end. */
	end = 110 + 4 * ((strlen("lib/x86_64-linux-gnu/libc.so.6") + 1 +
	    110 + 3) / 4) - 110 + sizeof banner;
	cr_assert_lt(end, b.len + 1);
	for (cut = 1; cut < end; cut++) {
		where = NULL;
		cr_assert_eq(staging_cpio_glibc(b.data, cut, &ma, &mi, &where),
		    -1, "cut at %zu", cut);
		cr_assert_null(where);
	}
	/* A bad hex digit in the header. */
	b.data[20] = 'z';
	cr_assert_eq(staging_cpio_glibc(b.data, b.len, &ma, &mi, &where), -1);
	buf_free(&b);
}
