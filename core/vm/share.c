/*
 * Host directories shared with the guest over virtio-9p. A share is a host
 * tree, the path where the guest sees it and whether it is read-only; the
 * read-only part is enforced by QEMU (readonly=on on the fsdev), not by the
 * guest, which mounts it read-only too only as a second line. What a
 * read-write share lets the guest do to the host's files (no setuid or
 * setgid bits, no owners, no device nodes, no extended attributes) is
 * enforced on QEMU itself, by share_confine() before it runs.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vm.h"
#include "staging.h"

/*
 * HOST[:GUEST][:ro|rw|cow], the --share form. The guest path defaults to
 * the host's as given (share_check); the mode to read-only. A path
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
		xasprintf(cause, "--share %s: expected "
		    "HOST[:GUEST][:ro|rw|cow]", spec);
		goto fail;
	}
	/*
	 * A last field of ro, rw or cow is the mode, not a guest path. A cow
	 * share is read-only on the host; the guest's writes go to its own
	 * disk (cow.c).
	 */
	if (n > 1 && (strcmp(f[n - 1], "ro") == 0 ||
	    strcmp(f[n - 1], "rw") == 0 || strcmp(f[n - 1], "cow") == 0)) {
		sh->readonly = strcmp(f[n - 1], "rw") != 0;
		sh->cow = strcmp(f[n - 1], "cow") == 0;
		n--;
	} else if (n == 3) {
		xasprintf(cause, "--share %s: the mode must be ro, rw or cow",
		    spec);
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

	if (sh->create && access(sh->host, F_OK) == -1 && errno == ENOENT &&
	    util_mkdir_p(sh->host, 0755) == -1) {
		xasprintf(cause, "share %s: cannot make it: %s", sh->host,
		    strerror(errno));
		return (-1);
	}
	if (realpath(sh->host, real) == NULL || stat(real, &st) == -1) {
		xasprintf(cause, "share %s: %s", sh->host, strerror(errno));
		return (-1);
	}
	if (!S_ISDIR(st.st_mode)) {
		xasprintf(cause, "share %s: not a directory (9p shares "
		    "directories)", sh->host);
		return (-1);
	}
	/*
	 * The guest's default: the host path as given, made absolute, its
	 * links unresolved: --share /lib64 (a link to usr/lib64) is /lib64
	 * in the guest, where its programs look for their loader.
	 */
	if (sh->guest == NULL)
		sh->guest = util_path_absolute(sh->host);
	free(sh->host);
	sh->host = xstrdup(real);
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
 * The 9p security model QEMU gets for a share. A read-only share, and a
 * staged copy (read-only too), always get "none": nothing is written, and
 * QEMU 7.2's mapped models read a host symlink by opening it as the file
 * holding the link text, with O_NOFOLLOW, which fails with ELOOP, so every
 * symlink of the tree would break. The profile's model is for read-write
 * shares.
 */
enum profile_sm
share_model(const struct share *sh, enum profile_sm sm)
{
	if (sh->readonly || sh->staged)
		return (PROFILE_SM_NONE);
	return (sm);
}

/*
 * Refuse what no filter on QEMU can make safe: "passthrough" exists to
 * give the guest's owners and modes to the host's files, and would fail
 * every file the guest creates once chown is refused (share_confine).
 */
int
share_check_model(const struct share *sh, size_t n, enum profile_sm sm,
    char **cause)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (share_model(&sh[i], sm) != PROFILE_SM_PASSTHROUGH)
			continue;
		xasprintf(cause, "share %s: virtfs_security_model = "
		    "\"passthrough\" would let the guest chown files and set "
		    "setuid bits on the host through this read-write share; "
		    "write \"none\" (the default) or \"mapped-xattr\"",
		    sh[i].host);
		return (-1);
	}
	return (0);
}

/*
 * May QEMU set extended attributes? Only a read-write share under
 * mapped-xattr needs them (the guest's owners and modes live there, and
 * QEMU refuses the guest's own user.virtfs.* names). Under "none" and
 * "mapped-file" QEMU would pass the guest's user.* names through, the
 * user.virtfs.* ones a later mapped-xattr share trusts among them, and
 * under "mapped-file" ACLs too.
 */
int
share_confine_xattrs(const struct share *sh, size_t n, enum profile_sm sm)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (share_model(&sh[i], sm) == PROFILE_SM_MAPPED_XATTR)
			return (1);
	}
	return (0);
}

#if defined(__x86_64__)
#define SHARE_AUDIT_ARCH	AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define SHARE_AUDIT_ARCH	AUDIT_ARCH_AARCH64
#endif
/* Newer than Debian 12's headers; the numbers are the same on both. */
#ifndef __NR_fchmodat2
#define __NR_fchmodat2		452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat		463
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat	466
#endif

#define SHARE_FILTER_MAX	128
#define SHARE_SUGID		(S_ISUID | S_ISGID)
#define SHARE_ARG(i)		(offsetof(struct seccomp_data, args) + \
				    (i) * sizeof(__u64))	/* low half */
#define SHARE_DENY		(SECCOMP_RET_ERRNO | (EPERM & \
				    SECCOMP_RET_DATA))

struct share_filter {
	struct sock_filter	insn[SHARE_FILTER_MAX];
	unsigned short		len;
};

static void
share_filter_add(struct share_filter *f, __u16 code, __u8 jt, __u8 jf,
    __u32 k)
{
	struct sock_filter	insn = BPF_JUMP(code, k, jt, jf);

	/* The program is fixed; running past the array is a bug here. */
	if (f->len < SHARE_FILTER_MAX)
		f->insn[f->len] = insn;
	f->len++;
}

/* nr fails with err. The accumulator holds the syscall number, and keeps it. */
static void
share_filter_deny(struct share_filter *f, int nr, int err)
{
	share_filter_add(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, nr);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO |
	    (err & SECCOMP_RET_DATA));
}

/* nr, which creates, is refused if its mode has a setuid or setgid bit. */
static void
share_filter_mode(struct share_filter *f, int nr, int arg)
{
	share_filter_add(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 4, nr);
	share_filter_add(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, SHARE_ARG(arg));
	share_filter_add(f, BPF_JMP | BPF_JSET | BPF_K, 0, 1, SHARE_SUGID);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SHARE_DENY);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
}

/*
 * chmod: refused with a setuid bit; with a setgid bit, done as if, but not.
 * The guest kernel asks for the setgid bit on every directory it makes in
 * a setgid directory, and QEMU's chmod after mkdir would fail the mkdir;
 * the host kernel has set the bit already, as it does for every process.
 */
static void
share_filter_chmod(struct share_filter *f, int nr, int arg)
{
	share_filter_add(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 6, nr);
	share_filter_add(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, SHARE_ARG(arg));
	share_filter_add(f, BPF_JMP | BPF_JSET | BPF_K, 2, 0, S_ISUID);
	share_filter_add(f, BPF_JMP | BPF_JSET | BPF_K, 2, 0, S_ISGID);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SHARE_DENY);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ERRNO | 0);
}

/* ... and mknod also if it makes a character or block device. */
static void
share_filter_mknod(struct share_filter *f, int nr, int arg)
{
	share_filter_add(f, BPF_JMP | BPF_JEQ | BPF_K, 0, 7, nr);
	share_filter_add(f, BPF_LD | BPF_W | BPF_ABS, 0, 0, SHARE_ARG(arg));
	share_filter_add(f, BPF_JMP | BPF_JSET | BPF_K, 4, 0, SHARE_SUGID);
	share_filter_add(f, BPF_ALU | BPF_AND | BPF_K, 0, 0, S_IFMT);
	share_filter_add(f, BPF_JMP | BPF_JEQ | BPF_K, 2, 0, S_IFCHR);
	share_filter_add(f, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, S_IFBLK);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SHARE_DENY);
}

#ifdef SHARE_AUDIT_ARCH
/*
 * The seccomp program: what QEMU's 9p code would do to a host file on the
 * guest's behalf and must not. Calls are refused with EPERM, which QEMU
 * hands to the guest; everything else is left to QEMU's own -sandbox.
 */
static void
share_filter_build(struct share_filter *f, int xattrs)
{
	static const int	 deny_nr[] = {
#ifdef __NR_chown
		__NR_chown, __NR_lchown,
#endif
		__NR_fchown, __NR_fchownat,
	};
	static const int	 xattr_nr[] = {
		__NR_setxattr, __NR_lsetxattr, __NR_fsetxattr,
		__NR_removexattr, __NR_lremovexattr, __NR_fremovexattr,
		__NR_setxattrat, __NR_removexattrat,
	};
	size_t			 i;

	memset(f, 0, sizeof *f);
	share_filter_add(f, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, arch));
	share_filter_add(f, BPF_JMP | BPF_JEQ | BPF_K, 1, 0,
	    SHARE_AUDIT_ARCH);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);
	share_filter_add(f, BPF_LD | BPF_W | BPF_ABS, 0, 0,
	    offsetof(struct seccomp_data, nr));
#ifdef __x86_64__
	/* The x32 numbers of the same calls. */
	share_filter_add(f, BPF_JMP | BPF_JGE | BPF_K, 0, 1, 0x40000000);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_KILL_PROCESS);
#endif
	for (i = 0; i < sizeof deny_nr / sizeof deny_nr[0]; i++)
		share_filter_deny(f, deny_nr[i], EPERM);
	for (i = 0; !xattrs && i < sizeof xattr_nr / sizeof xattr_nr[0]; i++)
		share_filter_deny(f, xattr_nr[i], EPERM);
	/* Its mode is out of reach behind a pointer: as if it did not exist. */
	share_filter_deny(f, __NR_openat2, ENOSYS);
#ifdef __NR_chmod	/* the old calls, not on aarch64 */
	share_filter_chmod(f, __NR_chmod, 1);
	share_filter_mode(f, __NR_open, 2);
	share_filter_mode(f, __NR_creat, 1);
	share_filter_mknod(f, __NR_mknod, 1);
#endif
	share_filter_chmod(f, __NR_fchmod, 1);
	share_filter_chmod(f, __NR_fchmodat, 2);
	share_filter_chmod(f, __NR_fchmodat2, 2);
	share_filter_mode(f, __NR_openat, 3);
	share_filter_mknod(f, __NR_mknodat, 2);
	share_filter_add(f, BPF_RET | BPF_K, 0, 0, SECCOMP_RET_ALLOW);
}
#endif

/*
 * Confine the process about to exec QEMU (called in the child, so it only
 * makes system calls): no new privileges; without CAP_FSETID, CAP_CHOWN,
 * CAP_MKNOD and CAP_SETFCAP if it has them (qsup as root: a write by QEMU
 * then clears the setuid bit of a host file, as the kernel does for every
 * unprivileged writer, instead of leaving a guest's program setuid root);
 * and the seccomp program above. Returns -1 with errno set and *what naming
 * the step that failed.
 */
int
share_confine(const struct share *sh, size_t n, enum profile_sm sm,
    const char **what)
{
#ifdef SHARE_AUDIT_ARCH
	static const int			 drop[] = { CAP_CHOWN,
	    CAP_FSETID, CAP_MKNOD, CAP_SETFCAP };
	struct __user_cap_header_struct		 hdr;
	struct __user_cap_data_struct		 data[2];
	struct share_filter			 f;
	struct sock_fprog			 prog;
	size_t					 i;

	*what = "PR_SET_NO_NEW_PRIVS";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return (-1);
	for (i = 0; i < sizeof drop / sizeof drop[0]; i++) {
		/* Needs CAP_SETPCAP; the capset below is what counts. */
		(void)prctl(PR_CAPBSET_DROP, drop[i], 0, 0, 0);
	}
	memset(&hdr, 0, sizeof hdr);
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	*what = "capget";
	if (syscall(SYS_capget, &hdr, data) == -1)
		return (-1);
	for (i = 0; i < sizeof drop / sizeof drop[0]; i++) {
		data[drop[i] / 32].effective &= ~(1U << (drop[i] % 32));
		data[drop[i] / 32].permitted &= ~(1U << (drop[i] % 32));
		data[drop[i] / 32].inheritable &= ~(1U << (drop[i] % 32));
	}
	*what = "capset";
	if (syscall(SYS_capset, &hdr, data) == -1)
		return (-1);
	share_filter_build(&f, share_confine_xattrs(sh, n, sm));
	*what = "the seccomp filter";
	if (f.len > SHARE_FILTER_MAX) {
		errno = E2BIG;
		return (-1);
	}
	prog.len = f.len;
	prog.filter = f.insn;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == -1)
		return (-1);
	return (0);
#else
	(void)sh;
	(void)n;
	(void)sm;
	*what = "confining QEMU's 9p on this architecture";
	errno = ENOSYS;
	return (-1);
#endif
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
