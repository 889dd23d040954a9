#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"

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
	cr_assert_eq(sh.cow, 0);
	share_free(&sh);
	/* Copy-on-write: read-only on the host, whatever the guest does. */
	sh = parse_ok("/srv:/data:cow");
	cr_assert_eq(sh.readonly, 1);
	cr_assert_eq(sh.cow, 1);
	cr_assert_str_eq(sh.guest, "/data");
	share_free(&sh);
	sh = parse_ok("/srv:cow");
	cr_assert_eq(sh.cow, 1);
	cr_assert_null(sh.guest);
	share_free(&sh);
}

Test(share, parse_errors)
{
	parse_fails("", "no host path");
	parse_fails(":/x", "no host path");
	parse_fails("/a:rel", "must be absolute");
	parse_fails("/a:/b:xx", "ro, rw or cow");
	parse_fails("/a:/b:ro:more", "expected HOST[:GUEST][:ro|rw|cow]");
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
	struct share	 sh[SHARE_MAX + 1];
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
	for (i = 0; i < SHARE_MAX + 1; i++) {
		char *spec;

		xasprintf(&spec, "/tmp:/%d", i);
		sh[i] = parse_ok(spec);
		free(spec);
	}
	cr_assert_eq(share_prepare(sh, SHARE_MAX + 1, &cause), -1);
	cr_assert_not_null(strstr(cause, "room for 16"), "%s", cause);
	free(cause);
	for (i = 0; i < SHARE_MAX + 1; i++)
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

/* Read-only shares and copies are "none" whatever the profile says. */
Test(share, model_per_share)
{
	struct share	 sh;

	sh = parse_ok("/srv:/s");
	cr_assert_eq(share_model(&sh, PROFILE_SM_MAPPED_XATTR), PROFILE_SM_NONE,
	    "mapped models break every symlink of a read-only share");
	cr_assert_eq(share_model(&sh, PROFILE_SM_PASSTHROUGH), PROFILE_SM_NONE);
	sh.readonly = 0;
	cr_assert_eq(share_model(&sh, PROFILE_SM_MAPPED_XATTR),
	    PROFILE_SM_MAPPED_XATTR);
	cr_assert_eq(share_model(&sh, PROFILE_SM_NONE), PROFILE_SM_NONE);
	sh.staged = 1;
	cr_assert_eq(share_model(&sh, PROFILE_SM_MAPPED_XATTR), PROFILE_SM_NONE);
	share_free(&sh);
}

Test(share, passthrough_refused_with_rw)
{
	struct share	 sh[2];
	char		*cause = NULL;

	sh[0] = parse_ok("/srv:/ro");
	sh[1] = parse_ok("/out:/out:rw");
	cr_assert_eq(share_check_model(sh, 1, PROFILE_SM_PASSTHROUGH, &cause),
	    0, "read-only: nothing written, so no owner given");
	cr_assert_eq(share_check_model(sh, 2, PROFILE_SM_NONE, &cause), 0);
	cr_assert_eq(share_check_model(sh, 2, PROFILE_SM_MAPPED_XATTR, &cause),
	    0);
	cr_assert_eq(share_check_model(sh, 2, PROFILE_SM_PASSTHROUGH, &cause),
	    -1);
	cr_assert_str_eq(cause, "share /out: virtfs_security_model = "
	    "\"passthrough\" would let the guest chown files and set setuid "
	    "bits on the host through this read-write share; write \"none\" "
	    "(the default) or \"mapped-xattr\"");
	free(cause);
	cr_assert_eq(share_confine_xattrs(sh, 2, PROFILE_SM_NONE), 0);
	cr_assert_eq(share_confine_xattrs(sh, 2, PROFILE_SM_MAPPED_FILE), 0,
	    "mapped-file would pass the guest's xattrs through");
	cr_assert_eq(share_confine_xattrs(sh, 1, PROFILE_SM_MAPPED_XATTR), 0);
	cr_assert_eq(share_confine_xattrs(sh, 2, PROFILE_SM_MAPPED_XATTR), 1);
	share_free(&sh[0]);
	share_free(&sh[1]);
}

/* What a confined process did: a line per call, "NAME 0" or "NAME errno". */
static char *
confined_run(const char *dir, enum profile_sm sm)
{
	static char	 out[4096];
	struct share	 sh;
	char		*path, *cmd;
	const char	*what;
	FILE		*f;
	pid_t		 pid;
	int		 st, fd;

	sh = parse_ok("/out:/out:rw");
	xasprintf(&path, "%s/log", dir);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		if ((f = fopen(path, "w")) == NULL)
			_exit(2);
		setvbuf(f, NULL, _IONBF, 0);
		if (share_confine(&sh, 1, sm, &what) == -1) {
			fprintf(f, "confine %s: %s\n", what, strerror(errno));
			_exit(3);
		}
#define CALL(name, call) fprintf(f, "%s %d\n", name, (call) == -1 ? errno : 0)
		if (chdir(dir) == -1)
			_exit(4);
		CALL("chmod-plain", chmod("plain", 0700));
		CALL("chmod-suid", chmod("plain", 04755));
		CALL("chmod-sgid", chmod("plain", 02755));
		CALL("fchmodat-suid", fchmodat(AT_FDCWD, "plain", 06755, 0));
		fd = open("plain", O_RDONLY);
		CALL("fchmod-suid", fchmod(fd, 04700));
		close(fd);
		CALL("creat-suid", open("c1", O_CREAT|O_WRONLY, 04755));
		CALL("openat-sgid", openat(AT_FDCWD, "c2", O_CREAT|O_WRONLY,
		    02755));
		CALL("creat-plain", open("c3", O_CREAT|O_WRONLY, 0644));
		CALL("mknod-chr", mknod("chr", S_IFCHR | 0600, makedev(1, 3)));
		CALL("mknodat-blk", mknodat(AT_FDCWD, "blk", S_IFBLK | 0600,
		    makedev(7, 0)));
		CALL("mknod-reg-suid", mknod("reg", S_IFREG | 04755, 0));
		CALL("mknod-fifo", mknod("fifo", S_IFIFO | 0600, 0));
		CALL("chown", chown("plain", getuid(), getgid()));
		CALL("fchownat", fchownat(AT_FDCWD, "plain", getuid(),
		    getgid(), AT_SYMLINK_NOFOLLOW));
		CALL("setxattr", setxattr("plain", "user.virtfs.mode", "x", 1,
		    0));
		CALL("removexattr", removexattr("plain", "user.kept"));
		/* A write drops the setuid bit of the file it changes. */
		fd = open("suid", O_WRONLY|O_TRUNC);
		CALL("write-suid", write(fd, "payload", 7));
		close(fd);
		CALL("mkdir", mkdir("d", 0755));
		CALL("symlink", symlink("/etc/shadow", "link"));
		/* Caps after exec, as QEMU gets them. */
		xasprintf(&cmd, "grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' "
		    "/proc/self/status >>%s", path);
		fflush(f);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(5);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	out[fread(out, 1, sizeof out - 1, f)] = '\0';
	fclose(f);
	free(path);
	share_free(&sh);
	return (out);
}

static void
expect_line(const char *out, const char *line)
{
	char	*want;

	xasprintf(&want, "\n%s\n", line);
	cr_assert(strncmp(out, want + 1, strlen(want + 1)) == 0 ||
	    strstr(out, want) != NULL, "no line \"%s\" in:\n%s", line, out);
	free(want);
}

static unsigned long long
cap_field(const char *out, const char *name)
{
	const char	*p = strstr(out, name);

	cr_assert_not_null(p, "no %s in:\n%s", name, out);
	return (strtoull(p + strlen(name) + 2, NULL, 16));
}

static mode_t
mode_of(const char *dir, const char *name)
{
	struct stat	 sb;
	char		*path;

	xasprintf(&path, "%s/%s", dir, name);
	cr_assert_eq(lstat(path, &sb), 0, "%s: %s", path, strerror(errno));
	free(path);
	return (sb.st_mode);
}

/*
 * share_confine(): what QEMU's 9p code would do for a hostile guest on a
 * read-write share fails with EPERM, as root or not; a write clears the
 * setuid bit; the capabilities that would keep it are gone after exec.
 */
static void
confined_check(enum profile_sm sm)
{
	char		 tmpl[] = "/tmp/qsup-confine.XXXXXX", *dir, *out, *p;
	unsigned long long caps, drop;

	cr_assert_not_null(dir = mkdtemp(tmpl));
	touch(dir, "plain");
	touch(dir, "suid");
	xasprintf(&p, "%s/suid", dir);
	cr_assert_eq(chmod(p, 04755), 0);
	free(p);
	xasprintf(&p, "%s/plain", dir);
	if (setxattr(p, "user.kept", "1", 1, 0) == -1)
		cr_log_warn("no user xattrs here: %s", strerror(errno));
	cr_assert_eq(chmod(p, 0644), 0);
	free(p);
	out = confined_run(dir, sm);

	expect_line(out, "chmod-suid 1");
	expect_line(out, "chmod-sgid 0");	/* done as if */
	expect_line(out, "chmod-plain 0");
	expect_line(out, "fchmodat-suid 1");
	expect_line(out, "fchmod-suid 1");
	expect_line(out, "creat-suid 1");
	expect_line(out, "openat-sgid 1");
	expect_line(out, "creat-plain 0");
	expect_line(out, "mknod-chr 1");
	expect_line(out, "mknodat-blk 1");
	expect_line(out, "mknod-reg-suid 1");
	expect_line(out, "mknod-fifo 0");
	expect_line(out, "chown 1");
	expect_line(out, "fchownat 1");
	expect_line(out, "write-suid 0");
	expect_line(out, "mkdir 0");
	expect_line(out, "symlink 0");
	if (sm == PROFILE_SM_MAPPED_XATTR) {
		cr_assert_null(strstr(out, "setxattr 1\n"), "%s", out);
		cr_assert_null(strstr(out, "removexattr 1\n"), "%s", out);
	} else {
		expect_line(out, "setxattr 1");
		expect_line(out, "removexattr 1");
	}
	cr_assert_eq(mode_of(dir, "plain") & 07777, 0700,
	    "the plain mode applied, the setgid one not");
	cr_assert_eq(mode_of(dir, "suid") & 07777, 0755,
	    "the write dropped the setuid bit");
	cr_assert(!exists(dir, "c1") && !exists(dir, "c2"));
	cr_assert(!exists(dir, "chr") && !exists(dir, "blk") &&
	    !exists(dir, "reg"));
	expect_line(strstr(out, "NoNewPrivs"), "NoNewPrivs:\t1");
	drop = 1ULL << 0 | 1ULL << 4 | 1ULL << 27 | 1ULL << 31;
	caps = cap_field(out, "CapEff") | cap_field(out, "CapPrm");
	cr_assert_eq(caps & drop, 0, "CAP_CHOWN, CAP_FSETID, CAP_MKNOD, "
	    "CAP_SETFCAP kept: %llx", caps);
	if (geteuid() == 0)
		cr_assert_neq(caps, 0, "root keeps the rest");
	xasprintf(&p, "rm -rf %s", dir);
	cr_assert_eq(system(p), 0);
	free(p);
}

Test(share, confine_none)
{
	confined_check(PROFILE_SM_NONE);
}

Test(share, confine_mapped_xattr)
{
	confined_check(PROFILE_SM_MAPPED_XATTR);
}
