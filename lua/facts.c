/*
 * Facts about the host that profiles decide from (the "qsup" table). Each
 * is cheap, except the two a profile must ask for: whether KVM works (may
 * boot a probe guest, once per host, QEMU and guest kernel) and the host's
 * Python (may run the interpreter once, when neither its name nor a shim
 * manager says which version it is).
 */
#include <sys/stat.h>
#include <sys/utsname.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <gnu/libc-version.h>
#endif

#include "profile.h"
#include "staging.h"

#define FACTS_PYTHON_SECONDS	2.0
#define FACTS_MIB		((uint64_t)1 << 20)

/*
 * The seed's three signs, /.dockerenv, /.containerenv, $container, or
 * $QSUP_IN_CONTAINER: staging's answer, so a profile and staging agree.
 */
int
facts_in_container(void)
{
	return (staging_in_container());
}

/* The machine, as uname -m says: "x86_64", "aarch64". */
const char *
facts_arch(void)
{
	static struct utsname	u;

	if (u.machine[0] == '\0' && uname(&u) == -1)
		return ("unknown");
	return (u.machine);
}

/* Debian's multiarch triplet of this build, or NULL. */
const char *
facts_triplet(void)
{
#if !defined(__linux__) || !defined(__GLIBC__)
	return (NULL);
#elif defined(__x86_64__) && defined(__ILP32__)
	return ("x86_64-linux-gnux32");
#elif defined(__x86_64__)
	return ("x86_64-linux-gnu");
#elif defined(__i386__)
	return ("i386-linux-gnu");
#elif defined(__aarch64__)
	return ("aarch64-linux-gnu");
#elif defined(__arm__) && defined(__ARM_PCS_VFP)
	return ("arm-linux-gnueabihf");
#elif defined(__arm__)
	return ("arm-linux-gnueabi");
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return ("powerpc64le-linux-gnu");
#elif defined(__powerpc64__)
	return ("powerpc64-linux-gnu");
#elif defined(__s390x__)
	return ("s390x-linux-gnu");
#elif defined(__riscv) && __riscv_xlen == 64
	return ("riscv64-linux-gnu");
#elif defined(__loongarch64)
	return ("loongarch64-linux-gnu");
#else
	return (NULL);
#endif
}

/* "2.36", or NULL on a C library other than glibc. */
const char *
facts_glibc(void)
{
#ifdef __GLIBC__
	return (gnu_get_libc_version());
#else
	return (NULL);
#endif
}

/* This process's cgroup (v2) directory, or NULL. */
static char *
facts_cgroup_dir(void)
{
	char	*text, *line, *next, *dir = NULL;

	if ((text = util_read_file("/proc/self/cgroup", NULL, 65536)) == NULL)
		return (NULL);
	for (line = text; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, "0::/", 4) == 0) {
			xasprintf(&dir, "/sys/fs/cgroup%s",
			    strcmp(line + 3, "/") == 0 ? "" : line + 3);
			break;
		}
	}
	free(text);
	return (dir);
}

/*
 * The tightest limit of a cgroup file up the hierarchy, as a number; 0 if
 * none. For cpu.max, "QUOTA PERIOD" gives ceil(QUOTA / PERIOD).
 */
uint64_t
facts_cgroup_limit(const char *file)
{
	char			*dir, *path, *text, *slash;
	unsigned long long	 v, period;
	uint64_t		 best = 0, n;

	if ((dir = facts_cgroup_dir()) == NULL)
		return (0);
	for (;;) {
		xasprintf(&path, "%s/%s", dir, file);
		text = util_read_file(path, NULL, 4096);
		free(path);
		n = 0;
		if (text != NULL && strcmp(file, "cpu.max") == 0) {
			if (sscanf(text, "%llu %llu", &v, &period) == 2 &&
			    period > 0)
				n = (v + period - 1) / period;
		} else if (text != NULL && sscanf(text, "%llu", &v) == 1)
			n = v;
		free(text);
		if (n > 0 && (best == 0 || n < best))
			best = n;
		if (strcmp(dir, "/sys/fs/cgroup") == 0 ||
		    (slash = strrchr(dir, '/')) == NULL)
			break;
		*slash = '\0';
	}
	free(dir);
	return (best);
}

/* CPUs qsup may run on: affinity, then the cgroup's quota. */
long
facts_cpus(void)
{
	cpu_set_t	set;
	long		n = 0;
	uint64_t	quota;

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n <= 0)
		n = 1;
	if ((quota = facts_cgroup_limit("cpu.max")) > 0 && quota < (uint64_t)n)
		n = (long)quota;
	return (n);
}

/* RAM in MiB: the machine's, or its cgroup's limit if lower. */
uint64_t
facts_memory_mib(void)
{
	long		pages = sysconf(_SC_PHYS_PAGES);
	long		size = sysconf(_SC_PAGESIZE);
	uint64_t	bytes = 0, limit;
	char		*text;
	unsigned long long v;

	if (pages > 0 && size > 0)
		bytes = (uint64_t)pages * (uint64_t)size;
	if ((limit = facts_cgroup_limit("memory.max")) > 0 && limit < bytes)
		bytes = limit;
	/* cgroup v1 */
	text = util_read_file("/sys/fs/cgroup/memory/memory.limit_in_bytes",
	    NULL, 4096);
	if (text != NULL && sscanf(text, "%llu", &v) == 1 && v > 0 && v < bytes)
		bytes = v;
	free(text);
	return (bytes / FACTS_MIB);
}

/* ------------------------------------------------------------------------
 * The host's Python: the python3 found on PATH, as a shell would run it.
 */

/* The first executable NAME in PATH, skipping directories under skip. */
static char *
facts_which(const char *name, const char *skip)
{
	const char	*path = getenv("PATH");
	char		*copy, *dir, *save, *file = NULL;
	struct stat	 sb;
	size_t		 skiplen = skip == NULL ? 0 : strlen(skip);

	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	copy = xstrdup(path);
	for (dir = strtok_r(copy, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		if (*dir != '/')
			continue;	/* "." and friends: not for this */
		if (skip != NULL && strncmp(dir, skip, skiplen) == 0 &&
		    (dir[skiplen] == '/' || dir[skiplen] == '\0'))
			continue;
		xasprintf(&file, "%s/%s", dir, name);
		if (stat(file, &sb) == 0 && S_ISREG(sb.st_mode) &&
		    access(file, X_OK) == 0)
			break;
		free(file);
		file = NULL;
	}
	free(copy);
	return (file);
}

/* "python3.11" gives "3.11"; NULL for other names. */
static char *
facts_python_version_of(const char *path)
{
	const char	*base = strrchr(path, '/'), *p;

	base = base == NULL ? path : base + 1;
	if (strncmp(base, "python", 6) != 0)
		return (NULL);
	p = base + 6;
	if (!isdigit((unsigned char)*p))
		return (NULL);
	while (isdigit((unsigned char)*p))
		p++;
	if (*p != '.' || !isdigit((unsigned char)p[1]))
		return (NULL);
	for (p++; isdigit((unsigned char)*p); p++)
		;
	return (xstrndup(base + 6, p - (base + 6)));
}

/*
 * A pyenv shim: a script that execs "pyenv exec". Returns its PYENV_ROOT,
 * or NULL if the file is not one.
 */
static char *
facts_pyenv_root(const char *shim)
{
	char	*text, *p, *end, *root = NULL;

	if ((text = util_read_file(shim, NULL, 16384)) == NULL)
		return (NULL);
	if (strncmp(text, "#!", 2) != 0 || strstr(text, "pyenv") == NULL ||
	    strstr(text, " exec ") == NULL)
		goto out;
	if ((p = strstr(text, "export PYENV_ROOT=\"")) != NULL) {
		p += 19;
		if ((end = strchr(p, '"')) != NULL)
			root = xstrndup(p, end - p);
	}
	if (root == NULL && (p = getenv("PYENV_ROOT")) != NULL && *p == '/')
		root = xstrdup(p);
out:
	free(text);
	return (root);
}

/* The first word of a pyenv version file. */
static char *
facts_pyenv_file(const char *path)
{
	char	*text, *word = NULL;
	size_t	 n;

	if ((text = util_read_file(path, NULL, 4096)) == NULL)
		return (NULL);
	n = strspn(text, " \t\r\n");
	if (text[n] != '\0' && text[n] != '#')
		word = xstrndup(text + n, strcspn(text + n, " \t\r\n:"));
	free(text);
	return (word);
}

/*
 * What pyenv would run: $PYENV_VERSION, else .python-version here or
 * above, else $PYENV_ROOT/version. NULL for "system" or when unsure.
 */
static char *
facts_pyenv_resolve(const char *root, int *system)
{
	char		 cwd[PATH_MAX], *version = NULL, *file, *slash, *exe;
	const char	*env;
	struct stat	 sb;

	*system = 0;
	if ((env = getenv("PYENV_VERSION")) != NULL && *env != '\0')
		version = xstrndup(env, strcspn(env, ":"));
	else if (getcwd(cwd, sizeof cwd) != NULL) {
		for (;;) {
			xasprintf(&file, "%s/.python-version",
			    strcmp(cwd, "/") == 0 ? "" : cwd);
			version = facts_pyenv_file(file);
			free(file);
			if (version != NULL || strcmp(cwd, "/") == 0)
				break;
			slash = strrchr(cwd, '/');
			if (slash == cwd)
				slash[1] = '\0';
			else
				*slash = '\0';
		}
	}
	if (version == NULL) {
		xasprintf(&file, "%s/version", root);
		version = facts_pyenv_file(file);
		free(file);
	}
	if (version == NULL || strcmp(version, "system") == 0) {
		free(version);
		*system = 1;
		return (NULL);
	}
	xasprintf(&exe, "%s/versions/%s/bin/python3", root, version);
	free(version);
	if (stat(exe, &sb) == -1 || !S_ISREG(sb.st_mode)) {
		free(exe);
		return (NULL);
	}
	return (exe);
}

/*
 * Ask the interpreter itself, with a deadline: for shims we cannot see
 * through. Fills version and executable.
 */
static int
facts_python_run(const char *python, struct facts_python *py)
{
	char		*argv[] = { (char *)(uintptr_t)python, "-I", "-S", "-c",
	    "import sys; print('%d.%d' % sys.version_info[:2]); "
	    "print(sys.executable)", NULL };
	struct buf	 out = { 0 };
	char		*nl;
	int		 rc = -1, timed_out;

	if (util_run_capture(argv, 0, FACTS_PYTHON_SECONDS, NULL, &out,
	    &timed_out) == -1)
		return (-1);
	if (out.data != NULL && (nl = strchr(out.data, '\n')) != NULL) {
		*nl++ = '\0';
		nl[strcspn(nl, "\n")] = '\0';
		if (*nl == '/' && strchr(out.data, '.') != NULL) {
			py->version = xstrdup(out.data);
			py->executable = realpath(nl, NULL);
			if (py->executable == NULL)
				py->executable = xstrdup(nl);
			rc = 0;
		}
	}
	buf_free(&out);
	return (rc);
}

/* The python3 a shell here would run; -1 if there is none. */
int
facts_python(struct facts_python *py)
{
	char		*found = NULL, *root, *exe, *real, *slash, *cfg;
	const char	*skip = NULL;
	char		*skipbuf = NULL;
	int		 system, i;

	memset(py, 0, sizeof py[0]);
	for (i = 0; i < 4; i++) {
		free(found);
		if ((found = facts_which("python3", skip)) == NULL)
			goto fail;
		if ((root = facts_pyenv_root(found)) == NULL) {
			exe = xstrdup(found);
			break;
		}
		exe = facts_pyenv_resolve(root, &system);
		if (system) {
			/* pyenv's "system": the next python3 outside it. */
			free(skipbuf);
			skip = skipbuf = root;
			continue;
		}
		free(root);
		if (exe == NULL) {
			/* A version pyenv names some other way: ask it. */
			if (facts_python_run(found, py) == -1)
				goto fail;
			py->path = found;
			goto prefix;
		}
		break;
	}
	if (i == 4)
		goto fail;
	free(skipbuf);
	skipbuf = NULL;
	py->path = found;
	found = NULL;
	if ((real = realpath(exe, NULL)) == NULL)
		real = xstrdup(exe);
	free(exe);
	py->executable = real;
	if ((py->version = facts_python_version_of(real)) == NULL &&
	    (py->version = facts_python_version_of(py->path)) == NULL) {
		/* A "python3" that is no link: ask it. */
		free(py->executable);
		py->executable = NULL;
		if (facts_python_run(py->path, py) == -1) {
			facts_python_free(py);
			return (-1);
		}
	}
prefix:
	free(skipbuf);
	py->prefix = xstrdup(py->executable);
	for (i = 0; i < 2; i++) {
		if ((slash = strrchr(py->prefix, '/')) != NULL)
			*slash = '\0';
	}
	if (*py->prefix == '\0') {
		free(py->prefix);
		py->prefix = xstrdup("/");
	}
	/* A virtual environment: bin/python3 beside pyvenv.cfg. */
	py->venv = xstrdup(py->path);
	for (i = 0; i < 2; i++) {
		if ((slash = strrchr(py->venv, '/')) != NULL)
			*slash = '\0';
	}
	xasprintf(&cfg, "%s/pyvenv.cfg", py->venv);
	if (*py->venv == '\0' || access(cfg, F_OK) == -1) {
		free(py->venv);
		py->venv = NULL;
	}
	free(cfg);
	return (0);

fail:
	free(found);
	free(skipbuf);
	facts_python_free(py);
	return (-1);
}

void
facts_python_free(struct facts_python *py)
{
	free(py->path);
	py->path = NULL;
	free(py->executable);
	py->executable = NULL;
	free(py->version);
	py->version = NULL;
	free(py->prefix);
	py->prefix = NULL;
	free(py->venv);
	py->venv = NULL;
}
