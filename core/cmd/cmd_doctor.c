/*
 * "qsup doctor": can a sandbox run here, and if not, why and what to do.
 * Each check has a verdict (ok, warn, fail), what it found and a remedy.
 * Nothing here boots a guest, but for the KVM probe that qsup run would
 * boot too (once per host, remembered: kvm.c).
 */
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "image.h"

#define DOCTOR_TMPFS_MAGIC	0x01021994
#define DOCTOR_OVERLAY_MAGIC	0x794c7630
#define DOCTOR_MIB		(1024ULL * 1024)
/* What a guest's QEMU takes beyond the guest's RAM (a measured 512M run:
   about 150 MiB of QEMU and libslirp), rounded up. */
#define DOCTOR_QEMU_OVERHEAD_MIB	256
#define DOCTOR_EXIT_FAIL	1	/* a check failed: no sandbox here */

static int	cmd_doctor_exec(const struct cmd_entry *, int, char **);

#define DOCTOR_JSON	CMD_O_LONG

static const struct cmd_option cmd_doctor_options[] = {
	{ DOCTOR_JSON, "json", CMD_V_NONE, NULL, 0,
	  "one JSON document on stdout" },
	{ 'p', "profile", CMD_V_PROFILE, "PROFILE", 0,
	  "the profile to check against (default: the\n"
	  "built-in default)" },
	CMD_OPTION_HELP,
	{ 0, NULL, 0, NULL, 0, NULL }
};

const struct cmd_entry cmd_doctor_entry = {
	.name = "doctor",
	.usage = "doctor [--json] [--profile PROFILE]",
	.summary = "check this host: can a sandbox run here, and if not, why",
	.help =
"Check what a sandbox needs, each with a verdict (ok, warn, fail), what\n"
"was found and what to do: QEMU and its version, KVM (and why not),\n"
"QEMU's seccomp sandbox, the guest's files and its agent's protocol, the\n"
"cache's free space and templates, the run directory's file system, a\n"
"container and what it changes, cgroup limits against the profile, and\n"
"images_dir. Finding out whether KVM works may boot a probe VM, once per\n"
"host, as qsup run would.\n"
"\n",
	.options = cmd_doctor_options,
	.column = 25,
	.notes =
"\n"
"Exit status: 0 when a sandbox can run here (warnings or not), 1 when a\n"
"check failed (they are named), 125 on a usage error.\n",
	.exec = cmd_doctor_exec
};

enum doctor_verdict {
	DOCTOR_OK,
	DOCTOR_WARN,
	DOCTOR_FAIL
};

struct doctor_check {
	const char		*name;
	enum doctor_verdict	 verdict;
	char			*detail;	/* what was found */
	char			*remedy;	/* what to do, or NULL */
	json_t			*facts;		/* more, for --json */
};

struct doctor {
	struct doctor_check	*checks;
	size_t			 n;
	struct profile		 p;
	const char		*profile;	/* as named, or NULL */
	char			*qemu;		/* its path, or NULL */
	struct guest		 g;
	int			 have_guest;
};

static const char *
doctor_verdict_name(enum doctor_verdict v)
{
	switch (v) {
	case DOCTOR_OK:
		return ("ok");
	case DOCTOR_WARN:
		return ("warn");
	case DOCTOR_FAIL:
		break;
	}
	return ("fail");
}

/* A check's result; facts (or NULL) are taken over. */
static struct doctor_check *
doctor_add(struct doctor *d, const char *name, enum doctor_verdict v,
    json_t *facts, const char *fmt, ...)
{
	struct doctor_check	*c;
	va_list			 ap;

	d->checks = xreallocarray(d->checks, d->n + 1, sizeof *d->checks);
	c = &d->checks[d->n++];
	memset(c, 0, sizeof *c);
	c->name = name;
	c->verdict = v;
	c->facts = facts != NULL ? facts : json_object();
	va_start(ap, fmt);
	xvasprintf(&c->detail, fmt, ap);
	va_end(ap);
	return (c);
}

static void
doctor_remedy(struct doctor_check *c, const char *fmt, ...)
{
	va_list	ap;

	free(c->remedy);
	va_start(ap, fmt);
	xvasprintf(&c->remedy, fmt, ap);
	va_end(ap);
}

/* path, or the nearest of its ancestors that exists (what mkdir -p makes
   it in); NULL if none does. */
static char *
doctor_existing(const char *path)
{
	struct stat	 st;
	char		*p, *slash;

	p = xstrdup(path);
	while (stat(p, &st) == -1) {
		if ((slash = strrchr(p, '/')) == NULL || slash == p) {
			free(p);
			return (xstrdup("/"));
		}
		*slash = '\0';
	}
	return (p);
}

/* Free bytes for an unprivileged writer of path's file system; -1: none. */
static long long
doctor_free_bytes(const char *path)
{
	struct statvfs	 sv;
	char		*at;
	int		 rc;

	at = doctor_existing(path);
	rc = statvfs(at, &sv);
	free(at);
	if (rc == -1)
		return (-1);
	return ((long long)sv.f_bavail * (long long)sv.f_frsize);
}

/* ------------------------------------------------------------------------
 * QEMU, KVM, seccomp.
 */

/* "QEMU emulator version 7.2.22 (...)": the binary's first line. */
static void
doctor_qemu(struct doctor *d)
{
	const char		*bin = guest_qemu_binary();
	char			*argv[] = { NULL, (char *)"-version", NULL };
	struct buf		 out = { 0 };
	struct doctor_check	*c;
	char			*nl;
	int			 timed_out, major = 0, minor = 0;
	json_t			*f;

	if ((d->qemu = util_which(bin)) == NULL) {
		c = doctor_add(d, "qemu", DOCTOR_FAIL, NULL, "%s: not found on "
		    "PATH", bin);
		doctor_remedy(c, "apt-get install qemu-system-x86 (or set "
		    "QSUP_QEMU to a qemu-system-x86_64)");
		return;
	}
	argv[0] = d->qemu;
	if (util_run_capture(argv, 1, 10.0, NULL, &out, &timed_out) == -1 ||
	    out.data == NULL || timed_out) {
		c = doctor_add(d, "qemu", DOCTOR_FAIL, NULL, "%s -version: %s",
		    d->qemu, timed_out ? "no answer in 10 s" : "no output");
		doctor_remedy(c, "reinstall qemu-system-x86");
		buf_free(&out);
		return;
	}
	if ((nl = strchr(out.data, '\n')) != NULL)
		*nl = '\0';
	f = json_pack("{s:s, s:s}", "path", d->qemu, "version", out.data);
	if (sscanf(out.data, "QEMU emulator version %d.%d", &major,
	    &minor) != 2 || major < 6) {
		c = doctor_add(d, "qemu", DOCTOR_WARN, f, "%s: %s", d->qemu,
		    out.data);
		doctor_remedy(c, "qsup is tested with QEMU 7.2 (Debian 12's); "
		    "an older one may refuse its options");
	} else
		doctor_add(d, "qemu", DOCTOR_OK, f, "%s: %s", d->qemu,
		    out.data);
	buf_free(&out);
}

/* libcurl, libarchive and libcrypto, which qsup loads at their first call. */
static void
doctor_libraries(struct doctor *d)
{
	struct doctor_check	*c;
	char			*cause = NULL;

	if (lazylib_load_all(&cause) == 0) {
		doctor_add(d, "libraries", DOCTOR_OK, NULL, "libcurl, "
		    "libarchive and libcrypto load (qsup loads them when "
		    "first needed)");
		return;
	}
	c = doctor_add(d, "libraries", DOCTOR_FAIL, NULL, "%s", cause);
	doctor_remedy(c, "apt-get install libcurl4 libarchive13 libssl3");
	free(cause);
}

/* Why /dev/kvm cannot be opened, and how to give it to this process. */
static void
doctor_kvm_device(json_t *f, struct doctor_check *c)
{
	struct stat	 st;
	struct group	*gr;
	char		 gname[64];
	int		 fd;

	if (stat("/dev/kvm", &st) == -1) {
		json_object_set_new(f, "device", json_string("absent"));
		if (facts_in_container())
			doctor_remedy(c, "give the container the host's "
			    "/dev/kvm: docker/podman run --device /dev/kvm "
			    "(and --group-add kvm, or the device's gid, when "
			    "not root); on Kubernetes a device plugin's "
			    "resource (contrib/kubernetes)");
		else
			doctor_remedy(c, "load kvm_intel or kvm_amd (modprobe) "
			    "and enable virtualisation in the firmware; in a "
			    "VM, enable nested virtualisation");
		return;
	}
	if ((gr = getgrgid(st.st_gid)) != NULL)
		snprintf(gname, sizeof gname, "%s", gr->gr_name);
	else
		snprintf(gname, sizeof gname, "%ld", (long)st.st_gid);
	json_object_set_new(f, "device", json_string("present"));
	json_object_set_new(f, "group", json_string(gname));
	json_object_set_new(f, "mode", json_integer(st.st_mode & 07777));
	if ((fd = open("/dev/kvm", O_RDWR|O_CLOEXEC)) == -1) {
		json_object_set_new(f, "open", json_string(strerror(errno)));
		if (errno == EACCES || errno == EPERM)
			doctor_remedy(c, "join group %s (usermod -aG %s USER, "
			    "then log in again; in a container: --group-add "
			    "%s, or --group-add %ld)", gname, gname, gname,
			    (long)st.st_gid);
		else
			doctor_remedy(c, "/dev/kvm does not open (%s): check "
			    "the kvm module (dmesg)", strerror(errno));
		return;
	}
	close(fd);
	json_object_set_new(f, "open", json_string("ok"));
	if (access("/sys/module/kvm_pvm", F_OK) == 0)
		doctor_remedy(c, "nothing to do: this host's KVM cannot boot an "
		    "ordinary guest, so qsup emulates (TCG); boots are slower, "
		    "warm_start (templates) hides most of it");
}

/* The profile's accelerator, as qsup run would choose it (kvm_choose). */
static void
doctor_kvm(struct doctor *d)
{
	struct accel_choice	 ac;
	struct doctor_check	*c;
	const char		*use;
	char			*cause = NULL;
	json_t			*f;

	use = d->p.use_kvm == PROFILE_KVM_ON ? "true" :
	    d->p.use_kvm == PROFILE_KVM_OFF ? "false" : "auto";
	f = json_pack("{s:s}", "use_kvm", use);
	if (!d->have_guest || d->qemu == NULL) {
		c = doctor_add(d, "kvm", DOCTOR_WARN, f, "not measured: %s",
		    d->qemu == NULL ? "no QEMU" : "no guest to probe with");
		doctor_kvm_device(f, c);
		return;
	}
	if (kvm_choose(&d->p, d->qemu, d->g.kernel, d->g.initramfs, &ac,
	    &cause) == -1) {
		c = doctor_add(d, "kvm", DOCTOR_FAIL, f, "%s", cause);
		free(cause);
		doctor_kvm_device(f, c);
		if (c->remedy == NULL)
			doctor_remedy(c, "set use_kvm = \"auto\" to emulate "
			    "where KVM does not work");
		return;
	}
	json_object_set_new(f, "accel", json_string(accel_name(ac.accel)));
	if (ac.accel == ACCEL_KVM)
		doctor_add(d, "kvm", DOCTOR_OK, f, "KVM works: %s", ac.why);
	else {
		c = doctor_add(d, "kvm", d->p.use_kvm == PROFILE_KVM_OFF ?
		    DOCTOR_OK : DOCTOR_WARN, f, "emulated (TCG), several times "
		    "slower: %s", ac.why);
		if (d->p.use_kvm != PROFILE_KVM_OFF)
			doctor_kvm_device(f, c);
	}
	free(ac.why);
}

/* This process's Seccomp: and NoNewPrivs: lines (/proc/self/status). */
static void
doctor_seccomp_status(json_t *f, int *mode)
{
	char	*text, *s;
	int	 v;

	*mode = -1;
	if ((text = util_read_file("/proc/self/status", NULL, 65536)) == NULL)
		return;
	if ((s = strstr(text, "\nSeccomp:")) != NULL &&
	    sscanf(s + 9, "%d", &v) == 1)
		*mode = v;
	if ((s = strstr(text, "\nNoNewPrivs:")) != NULL &&
	    sscanf(s + 12, "%d", &v) == 1)
		json_object_set_new(f, "no_new_privs", json_boolean(v));
	free(text);
}

/*
 * Whether QEMU installs the filter every run asks for (-sandbox, qemu.c):
 * a QEMU that does greets on QMP, and is killed then; one that cannot
 * says why and exits.
 */
static void
doctor_seccomp(struct doctor *d)
{
	char			*argv[] = { d->qemu, (char *)"-M",
				    (char *)"none", (char *)"-nodefaults",
				    (char *)"-display", (char *)"none",
				    (char *)"-S", (char *)"-sandbox",
				    (char *)QSUP_QEMU_SANDBOX, (char *)"-qmp",
				    (char *)"stdio", NULL };
	static const char	*modes[] = { "none", "strict", "filter" };
	struct buf		 out = { 0 };
	struct doctor_check	*c;
	char			*nl;
	int			 mode, timed_out;
	json_t			*f;

	f = json_object();
	doctor_seccomp_status(f, &mode);
	if (mode >= 0 && mode <= 2)
		json_object_set_new(f, "seccomp", json_string(modes[mode]));
	if (d->qemu == NULL) {
		doctor_add(d, "seccomp", DOCTOR_FAIL, f, "not tested: no QEMU");
		return;
	}
	if (util_run_capture(argv, 1, 10.0, "{\"QMP\"", &out, &timed_out) ==
	    -1 || out.data == NULL || strstr(out.data, "{\"QMP\"") == NULL) {
		if (out.data != NULL && (nl = strchr(out.data, '\n')) != NULL)
			*nl = '\0';
		c = doctor_add(d, "seccomp", DOCTOR_FAIL, f, "QEMU refuses "
		    "-sandbox on: %s", out.data != NULL ? out.data :
		    timed_out ? "no answer in 10 s" : "no output");
		doctor_remedy(c, "use Debian's qemu-system-x86 (built with "
		    "libseccomp); in a container, a seccomp profile that "
		    "allows seccomp(2) and prctl(2), as Docker's default does");
	} else
		doctor_add(d, "seccomp", DOCTOR_OK, f, "QEMU installs its "
		    "seccomp filter (-sandbox on); this process: %s",
		    mode == 2 ? "already filtered (a container's), "
		    "QEMU's filter stacks on it" : mode == 0 ? "unfiltered" :
		    "strict");
	buf_free(&out);
}

/* ------------------------------------------------------------------------
 * The guest, the cache, the run directory.
 */

/*
 * The protocol mark of the agent in an uncompressed initramfs
 * (QSUP_PROTOCOL_MARK), or -1 if there is none.
 */
static int
doctor_agent_protocol(const char *path)
{
	static const char	 pre[] = QSUP_PROTOCOL_MARK_PREFIX;
	char			 chunk[65536 + sizeof pre + 16], *at;
	size_t			 keep = 0, len;
	ssize_t			 n;
	int			 fd, v = -1;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	/* Each read keeps the previous one's tail: a mark split across. */
	while (v == -1 && (n = read(fd, chunk + keep, sizeof chunk - keep -
	    1)) > 0) {
		len = keep + (size_t)n;
		chunk[len] = '\0';
		if ((at = memmem(chunk, len, pre, sizeof pre - 1)) != NULL &&
		    (size_t)(at - chunk) + sizeof pre + 8 <= len)
			sscanf(at + sizeof pre - 1, "%d", &v);
		else {
			keep = len < sizeof pre + 16 ? len : sizeof pre + 16;
			memmove(chunk, chunk + len - keep, keep);
		}
	}
	close(fd);
	return (v);
}

/* One guest file, readable (into f); -1 with errno if not. */
static int
doctor_guest_file(const char *what, const char *path, json_t *f)
{
	int	fd;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	close(fd);
	json_object_set_new(f, what, json_string(path));
	return (0);
}

static void
doctor_guest(struct doctor *d)
{
	struct doctor_check	*c;
	const char		*env = getenv("QSUP_GUEST_DIR");
	char			*cause = NULL;
	int			 v;
	json_t			*f;

	f = json_object();
	if (env != NULL)
		json_object_set_new(f, "QSUP_GUEST_DIR", json_string(env));
	if (guest_resolve(&d->p, &d->g, &cause) == -1) {
		c = doctor_add(d, "guest", DOCTOR_FAIL, f, "%s", cause);
		free(cause);
		doctor_remedy(c, "%s", env != NULL ? "QSUP_GUEST_DIR names a "
		    "directory without the guest: unset it, or point it at one "
		    "holding vmlinux and initramfs.cpio" : "./build.sh builds "
		    "the guest beside the binary (build/guest); QSUP_GUEST_DIR "
		    "names another directory");
		return;
	}
	if (doctor_guest_file("kernel", d->g.kernel, f) == -1 ||
	    doctor_guest_file("initramfs", d->g.initramfs, f) == -1) {
		c = doctor_add(d, "guest", DOCTOR_FAIL, f, "%s: %s",
		    json_object_get(f, "kernel") == NULL ? d->g.kernel :
		    d->g.initramfs, strerror(errno));
		doctor_remedy(c, "make the guest's files readable by this user");
		guest_free(&d->g);
		return;
	}
	d->have_guest = 1;
	v = doctor_agent_protocol(d->g.initramfs);
	json_object_set_new(f, "agent_protocol", v == -1 ? json_null() :
	    json_integer(v));
	json_object_set_new(f, "protocol", json_integer(QSUP_PROTOCOL_VERSION));
	if (v == QSUP_PROTOCOL_VERSION)
		doctor_add(d, "guest", DOCTOR_OK, f, "%s, %s; its agent speaks "
		    "protocol %d, as this qsup does", d->g.kernel,
		    d->g.initramfs, v);
	else if (v == -1) {
		c = doctor_add(d, "guest", DOCTOR_WARN, f, "%s: no agent "
		    "protocol mark found (a compressed initramfs, a profile's "
		    "own, or an older agent): a run will tell", d->g.initramfs);
		doctor_remedy(c, "./build.sh rebuilds the default guest");
	} else {
		c = doctor_add(d, "guest", DOCTOR_FAIL, f, "%s: its agent speaks "
		    "protocol %d, this qsup %d", d->g.initramfs, v,
		    QSUP_PROTOCOL_VERSION);
		doctor_remedy(c, "rebuild the guest with this qsup (./build.sh), "
		    "or use the qsup it was built with");
	}
}

/* The templates directory: free space, size against the cap, staleness. */
static void
doctor_cache(struct doctor *d)
{
	struct cmd_cache_tally	 t;
	struct doctor_check	*c;
	char			*dir;
	long long		 avail;
	unsigned long long	 need;
	json_t			*f;

	if ((dir = template_dir()) == NULL) {
		c = doctor_add(d, "cache", DOCTOR_WARN, NULL, "no cache "
		    "directory: warm starts are off");
		doctor_remedy(c, "set XDG_CACHE_HOME or HOME to a writable "
		    "directory");
		return;
	}
	avail = doctor_free_bytes(dir);
	/* A template holds about the guest's RAM, its state besides. */
	need = (d->p.memory_mib + 64) * DOCTOR_MIB;
	f = json_pack("{s:s, s:I, s:I}", "dir", dir, "free", (json_int_t)avail,
	    "cap", (json_int_t)d->p.template_cache_max);
	if (cmd_cache_tally(dir, &t) == -1) {
		c = doctor_add(d, "cache", DOCTOR_WARN, f, "%s: %s", dir,
		    strerror(errno));
		doctor_remedy(c, "make it readable, or qsup cache clear");
		free(dir);
		return;
	}
	json_object_set_new(f, "allocated", json_integer(t.allocated));
	if (d->p.warm_start && avail >= 0 && (unsigned long long)avail < need) {
		c = doctor_add(d, "cache", DOCTOR_WARN, f, "%s: %.1f MB free, "
		    "a template of this profile takes about %.1f MB", dir,
		    avail / 1e6, need / 1e6);
		doctor_remedy(c, "free space there, qsup cache prune, or set "
		    "XDG_CACHE_HOME elsewhere (warm starts fail to save, runs "
		    "boot instead)");
	} else if (d->p.template_cache_max != 0 &&
	    t.allocated > d->p.template_cache_max) {
		c = doctor_add(d, "cache", DOCTOR_WARN, f, "%s: %.1f MB of "
		    "templates, over template_cache_max (%.1f MB)", dir,
		    t.allocated / 1e6, d->p.template_cache_max / 1e6);
		doctor_remedy(c, "qsup cache prune (the next save prunes too)");
	} else
		doctor_add(d, "cache", DOCTOR_OK, f, "%s: %.1f MB of templates, "
		    "%.1f MB free", dir, t.allocated / 1e6, avail / 1e6);
	free(dir);

	f = json_pack("{s:i, s:i, s:i, s:i, s:i}", "templates", t.n, "stale",
	    t.stale, "unknown_format", t.unknown, "writing", t.writing,
	    "abandoned", t.abandoned);
	if (t.stale + t.unknown + t.abandoned > 0) {
		c = doctor_add(d, "templates", DOCTOR_WARN, f, "%d template%s: "
		    "%d stale, %d of an unknown format, %d half-written by a "
		    "writer now gone", t.n, t.n == 1 ? "" : "s", t.stale,
		    t.unknown, t.abandoned);
		doctor_remedy(c, "qsup cache clear --stale (they take space "
		    "and will not be used again)");
	} else
		doctor_add(d, "templates", DOCTOR_OK, f, "%d template%s, none "
		    "stale%s", t.n, t.n == 1 ? "" : "s", t.writing > 0 ?
		    "; one being saved" : "");
}

/* A file system's type, by name where qsup cares. */
static const char *
doctor_fs_name(long type)
{
	switch (type) {
	case DOCTOR_TMPFS_MAGIC:
		return ("tmpfs");
	case DOCTOR_OVERLAY_MAGIC:
		return ("overlayfs");
	case 0xEF53:
		return ("ext4");
	case 0x58465342:
		return ("xfs");
	case 0x9123683E:
		return ("btrfs");
	}
	return ("other");
}

/*
 * The run directory: sockets, the guest's seed and, with virtfs, the
 * staged copies of shared trees, which exist to be off overlayfs.
 */
static void
doctor_run_dir(struct doctor *d)
{
	struct statfs		 sf;
	struct doctor_check	*c;
	const char		*fs;
	char			*base, *at;
	json_t			*f;

	base = sandbox_run_path();
	at = doctor_existing(base);
	if (statfs(at, &sf) == -1)
		memset(&sf, 0, sizeof sf);
	fs = doctor_fs_name((long)sf.f_type);
	f = json_pack("{s:s, s:s, s:I}", "dir", base, "fs", fs,
	    "free", (json_int_t)doctor_free_bytes(base));
	if (access(at, W_OK | X_OK) == -1) {
		c = doctor_add(d, "run_dir", DOCTOR_FAIL, f, "%s: %s cannot be "
		    "written: %s", base, at, strerror(errno));
		doctor_remedy(c, "set XDG_RUNTIME_DIR to a directory of this "
		    "user's (mode 0700), ideally a tmpfs");
	} else if (sf.f_type == DOCTOR_OVERLAY_MAGIC) {
		c = doctor_add(d, "run_dir", DOCTOR_WARN, f, "%s is on "
		    "overlayfs: staged copies of shared trees land there, where "
		    "a guest that maps them can crash", base);
		doctor_remedy(c, "give the container a tmpfs for it: docker run "
		    "--tmpfs /tmp (or set XDG_RUNTIME_DIR to one)");
	} else if (sf.f_type != DOCTOR_TMPFS_MAGIC) {
		c = doctor_add(d, "run_dir", DOCTOR_WARN, f, "%s is on %s, not "
		    "tmpfs: sockets and staged copies go to disk", base, fs);
		doctor_remedy(c, "set XDG_RUNTIME_DIR to a tmpfs (systemd's "
		    "/run/user/UID is one)");
	} else
		doctor_add(d, "run_dir", DOCTOR_OK, f, "%s: tmpfs", base);
	free(at);
	free(base);
}

/* ------------------------------------------------------------------------
 * The container, cgroup limits, images_dir.
 */

static void
doctor_container(struct doctor *d)
{
	struct doctor_check	*c;
	const char		*v;
	int			 in = facts_in_container();
	json_t			*f;

	v = d->p.virtfs == PROFILE_VIRTFS_ON ? "on" :
	    d->p.virtfs == PROFILE_VIRTFS_OFF ? "off" : "auto";
	f = json_pack("{s:b, s:s, s:b}", "in_container", in, "virtfs", v,
	    "staging", d->p.virtfs == PROFILE_VIRTFS_ON ||
	    (d->p.virtfs == PROFILE_VIRTFS_AUTO && in));
	if (!in)
		doctor_add(d, "container", DOCTOR_OK, f, "not in a container: "
		    "shared trees are shared as they are (virtfs = \"%s\")", v);
	else if (d->p.virtfs == PROFILE_VIRTFS_OFF) {
		c = doctor_add(d, "container", DOCTOR_WARN, f, "in a container, "
		    "with virtfs = \"off\": shared trees on overlayfs are "
		    "shared as they are, and a guest that maps their files "
		    "(a binary, a library) can crash");
		doctor_remedy(c, "virtfs = \"auto\" (or the nested-container "
		    "profile) copies them first");
	} else
		doctor_add(d, "container", DOCTOR_OK, f, "in a container "
		    "(/.dockerenv, /.containerenv or $container): shared trees "
		    "are copied to the run directory first (virtfs = \"%s\"), "
		    "off overlayfs; KVM only with --device /dev/kvm", v);
}

/* A cgroup v1 number; 0 if none (or "unlimited", 2^63 rounded down). */
static uint64_t
doctor_cgroup_v1(const char *file)
{
	char			*text;
	long long		 v = 0;

	if ((text = util_read_file(file, NULL, 4096)) == NULL)
		return (0);
	if (sscanf(text, "%lld", &v) != 1 || v < 0 || v >= (1LL << 62))
		v = 0;
	free(text);
	return ((uint64_t)v);
}

/* The memory and CPU limits of this process's cgroup, v2 or v1. */
static void
doctor_cgroup_limits(uint64_t *mem, uint64_t *cpus, const char **version)
{
	uint64_t	quota, period;

	if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0) {
		*version = "v2";
		*mem = facts_cgroup_limit("memory.max");
		*cpus = facts_cgroup_limit("cpu.max");
		return;
	}
	*version = access("/sys/fs/cgroup/memory", F_OK) == 0 ? "v1" : "none";
	*mem = doctor_cgroup_v1("/sys/fs/cgroup/memory/memory.limit_in_bytes");
	quota = doctor_cgroup_v1("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
	period = doctor_cgroup_v1("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
	*cpus = quota > 0 && period > 0 ? (quota + period - 1) / period : 0;
}

static void
doctor_cgroup(struct doctor *d)
{
	struct doctor_check	*c;
	const char		*version;
	uint64_t		 mem, cpus, need;
	json_t			*f;

	doctor_cgroup_limits(&mem, &cpus, &version);
	need = (d->p.memory_mib + DOCTOR_QEMU_OVERHEAD_MIB) * DOCTOR_MIB;
	f = json_pack("{s:s, s:I, s:I, s:I, s:i}", "version", version,
	    "memory_max", (json_int_t)mem, "cpus_max", (json_int_t)cpus,
	    "profile_memory_mib", (json_int_t)d->p.memory_mib,
	    "profile_cpus", d->p.cpus);
	if (mem != 0 && mem < d->p.memory_mib * DOCTOR_MIB) {
		c = doctor_add(d, "cgroup", DOCTOR_FAIL, f, "cgroup %s memory "
		    "limit %.0f MiB is below the profile's memory (%llu MiB): "
		    "QEMU would be killed", version, mem / (double)DOCTOR_MIB,
		    (unsigned long long)d->p.memory_mib);
		doctor_remedy(c, "raise the limit (docker run --memory, a "
		    "pod's resources.limits.memory) or lower memory "
		    "(--set memory=...)");
	} else if (mem != 0 && mem < need) {
		c = doctor_add(d, "cgroup", DOCTOR_WARN, f, "cgroup %s memory "
		    "limit %.0f MiB leaves under %d MiB beyond the guest's %llu "
		    "MiB for QEMU itself", version, mem / (double)DOCTOR_MIB,
		    DOCTOR_QEMU_OVERHEAD_MIB, (unsigned long long)
		    d->p.memory_mib);
		doctor_remedy(c, "raise the limit by %d MiB or lower memory",
		    DOCTOR_QEMU_OVERHEAD_MIB);
	} else if (cpus != 0 && cpus < (uint64_t)d->p.cpus) {
		c = doctor_add(d, "cgroup", DOCTOR_WARN, f, "cgroup %s CPU quota "
		    "%llu is below the profile's cpus (%d): the guest's CPUs "
		    "share it", version, (unsigned long long)cpus, d->p.cpus);
		doctor_remedy(c, "cpus = math.min(N, qsup.cpus) in the profile "
		    "follows the quota");
	} else
		doctor_add(d, "cgroup", DOCTOR_OK, f, "cgroup %s: memory %s, "
		    "CPUs %s; the profile wants %llu MiB and %d CPU%s", version,
		    mem == 0 ? "unlimited" : "limited, enough", cpus == 0 ?
		    "unlimited" : "enough", (unsigned long long)d->p.memory_mib,
		    d->p.cpus, d->p.cpus == 1 ? "" : "s");
}

/* Where images are kept: there (or makeable), writable, with room. */
static void
doctor_images_dir(struct doctor *d)
{
	struct doctor_check	*c;
	struct stat		 st;
	char			*dir, *at;
	long long		 avail;
	enum doctor_verdict	 bad;
	json_t			*f;

	/* Only a profile with an image needs it. */
	bad = d->p.image != NULL ? DOCTOR_FAIL : DOCTOR_WARN;
	dir = d->p.images_dir != NULL ? xstrdup(d->p.images_dir) :
	    image_default_dir();
	if (dir == NULL) {
		c = doctor_add(d, "images_dir", bad, NULL, "no images_dir");
		doctor_remedy(c, "set XDG_DATA_HOME or HOME, or images_dir");
		return;
	}
	at = doctor_existing(dir);
	avail = doctor_free_bytes(dir);
	f = json_pack("{s:s, s:b, s:I}", "dir", dir, "exists", stat(dir, &st) ==
	    0, "free", (json_int_t)avail);
	if (access(at, W_OK | X_OK) == -1) {
		c = doctor_add(d, "images_dir", bad, f, "%s: %s is not "
		    "writable: %s", dir, at, strerror(errno));
		doctor_remedy(c, "set images_dir (or QSUP_IMAGES_DIR) to a "
		    "directory of this user's");
	} else if (avail >= 0 && avail < 2000000000LL) {
		c = doctor_add(d, "images_dir", DOCTOR_WARN, f, "%s: %.1f MB "
		    "free, a cloud image takes 0.4 to 1 GB", dir, avail / 1e6);
		doctor_remedy(c, "free space, or set images_dir elsewhere");
	} else
		doctor_add(d, "images_dir", DOCTOR_OK, f, "%s%s: writable, %.1f "
		    "GB free", dir, strcmp(at, dir) == 0 ? "" : " (made when "
		    "first needed)", avail / 1e9);
	free(at);
	free(dir);
}

/* ------------------------------------------------------------------------
 * The report.
 */

static void
doctor_print(const struct doctor *d, int nfail, int nwarn)
{
	const struct doctor_check	*c;
	size_t				 i;

	for (i = 0; i < d->n; i++) {
		c = &d->checks[i];
		printf("%-4s  %-10s  %s\n", doctor_verdict_name(c->verdict),
		    c->name, c->detail);
		if (c->remedy != NULL && c->verdict != DOCTOR_OK)
			printf("%18s-> %s\n", "", c->remedy);
	}
	if (nfail == 0)
		printf("a sandbox can run here (%d warning%s)\n", nwarn,
		    nwarn == 1 ? "" : "s");
	else {
		printf("no sandbox can run here: ");
		for (i = 0; i < d->n; i++) {
			if (d->checks[i].verdict == DOCTOR_FAIL)
				printf("%s%s", d->checks[i].name,
				    --nfail > 0 ? ", " : "");
		}
		printf(" failed\n");
	}
}

static void
doctor_print_json(const struct doctor *d, int nfail)
{
	const struct doctor_check	*c;
	json_t				*root, *checks, *failed, *o;
	char				*s;
	size_t				 i;

	checks = json_array();
	failed = json_array();
	for (i = 0; i < d->n; i++) {
		c = &d->checks[i];
		o = json_pack("{s:s, s:s, s:s, s:o}", "name", c->name,
		    "verdict", doctor_verdict_name(c->verdict), "detail",
		    c->detail, "facts", json_incref(c->facts));
		json_object_set_new(o, "remedy", c->remedy != NULL ?
		    json_string(c->remedy) : json_null());
		json_array_append_new(checks, o);
		if (c->verdict == DOCTOR_FAIL)
			json_array_append_new(failed, json_string(c->name));
	}
	root = json_pack("{s:b, s:s, s:s, s:o, s:o}", "ok", nfail == 0,
	    "version", QSUP_VERSION, "profile", d->p.path != NULL ? d->p.path :
	    "builtin:default", "checks", checks, "failed", failed);
	s = json_dumps(root, JSON_INDENT(2));
	printf("%s\n", s);
	free(s);
	json_decref(root);
}

static void
doctor_free(struct doctor *d)
{
	size_t	i;

	for (i = 0; i < d->n; i++) {
		free(d->checks[i].detail);
		free(d->checks[i].remedy);
		json_decref(d->checks[i].facts);
	}
	free(d->checks);
	d->checks = NULL;
	free(d->qemu);
	d->qemu = NULL;
	guest_free(&d->g);
	profile_free(&d->p);
}

/* The profile checked against: as named, or the default if it fails. */
static void
doctor_profile(struct doctor *d)
{
	struct doctor_check	*c;
	char			*cause = NULL;

	if (profile_load(&d->p, d->profile, &cause) == 0) {
		doctor_add(d, "profile", DOCTOR_OK, json_pack("{s:s}", "path",
		    d->p.path), "%s loads: %llu MiB, %d CPU%s", d->p.path,
		    (unsigned long long)d->p.memory_mib, d->p.cpus,
		    d->p.cpus == 1 ? "" : "s");
		return;
	}
	c = doctor_add(d, "profile", DOCTOR_FAIL, NULL, "%s", cause);
	free(cause);
	doctor_remedy(c, "qsup profile check %s shows each mistake; the other "
	    "checks use the built-in default", d->profile);
	cause = NULL;
	if (profile_load(&d->p, NULL, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		exit(QSUP_EXIT_ERROR);
	}
}

static int
cmd_doctor_exec(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_args	a;
	struct doctor	d;
	size_t		i;
	int		json, r, nfail = 0, nwarn = 0;

	memset(&d, 0, sizeof d);
	if ((r = cmd_args_parse(self, argc, argv, &a)) == 0 && a.argc > 0)
		r = -1;
	if (r == 1)
		cmd_usage(self, stdout);
	else if (r == -1)
		log_warnx("usage: qsup %s", self->usage);
	json = cmd_args_has(&a, DOCTOR_JSON);
	d.profile = cmd_args_get(&a, 'p');
	cmd_args_free(&a);	/* d.profile is argv's */
	if (r != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	doctor_profile(&d);
	doctor_qemu(&d);
	doctor_libraries(&d);
	doctor_guest(&d);
	doctor_kvm(&d);
	doctor_seccomp(&d);
	doctor_cache(&d);
	doctor_run_dir(&d);
	doctor_container(&d);
	doctor_cgroup(&d);
	doctor_images_dir(&d);
	for (i = 0; i < d.n; i++) {
		nfail += d.checks[i].verdict == DOCTOR_FAIL;
		nwarn += d.checks[i].verdict == DOCTOR_WARN;
	}
	if (json)
		doctor_print_json(&d, nfail);
	else
		doctor_print(&d, nfail, nwarn);
	fflush(stdout);
	doctor_free(&d);
	return (nfail == 0 ? 0 : DOCTOR_EXIT_FAIL);
}
