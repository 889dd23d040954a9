/*
 * What the profile suites (tests/unit/profile*_test.c, each its own
 * binary) share: the suite's temporary directory and environment, writing
 * and loading profiles, and show's output. Its functions are static and
 * marked unused, since each suite takes only some of them.
 */
#ifndef QSUP_PROFILE_HELPERS_H
#define QSUP_PROFILE_HELPERS_H

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <lauxlib.h>
#include <lua.h>

#include "cmd.h"

#define FIXTURES	"tests/profiles"
#define NSETTINGS	54

static char	*tmpdir;
static char	 top[PATH_MAX];

static void
setup(void)
{
	char	tmpl[] = "/tmp/profile_test.XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	tmpdir = xstrdup(tmpl);
	cr_assert_not_null(getcwd(top, sizeof top));
	/* The defaults read these: keep the host's out of the tests. */
	unsetenv("QSUP_IMAGE");
	unsetenv("QSUP_IMAGE_BASE_URL");
	unsetenv("QSUP_IMAGES_DIR");
	unsetenv("PYSANDBOXES_QEMU_IMAGE_URL");
	unsetenv("PYSANDBOXES_QEMU_IMAGE_BASE_URL");
	unsetenv("PYSANDBOXES_VM_IMAGES_DIR");
	setenv("XDG_CACHE_HOME", tmpdir, 1);
	setenv("XDG_CONFIG_HOME", tmpdir, 1);
}

static void
teardown(void)
{
	if (chdir(top) == -1)
		abort();
	util_rm_rf(tmpdir);
	free(tmpdir);
}

TestSuite(profile, .init = setup, .fini = teardown);

/* Write a file into the temporary directory; returns its path. */
static __attribute__((unused)) char *
write_file(const char *name, const char *fmt, ...)
{
	va_list	 ap;
	char	*path, *slash;
	FILE	*f;

	xasprintf(&path, "%s/%s", tmpdir, name);
	for (slash = strchr(path + strlen(tmpdir) + 1, '/'); slash != NULL;
	    slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	cr_assert_not_null(f = fopen(path, "w"));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	cr_assert_eq(fclose(f), 0);
	return (path);
}

#define write_profile write_file

/* Load a profile that must fail; returns the cause. */
static __attribute__((unused)) char *
load_fails_set(const char *path, char *const *sets, size_t nsets)
{
	struct profile	 p;
	char		*cause = NULL;

	cr_assert_eq(profile_load_set(&p, path, sets, nsets, &cause), -1,
	    "%s loaded", path);
	cr_assert_not_null(cause);
	cr_assert_null(p.path, "a failed load leaves nothing behind");
	return (cause);
}

static __attribute__((unused)) char *
load_fails(const char *path)
{
	return (load_fails_set(path, NULL, 0));
}

static __attribute__((unused)) void
load_ok_set(struct profile *p, const char *path, char *const *sets,
    size_t nsets)
{
	char	*cause = NULL;

	cr_assert_eq(profile_load_set(p, path, sets, nsets, &cause), 0,
	    "%s: %s", path, cause);
	cr_assert_null(cause);
}

static __attribute__((unused)) void
load_ok(struct profile *p, const char *path)
{
	load_ok_set(p, path, NULL, 0);
}

static __attribute__((unused)) void
assert_contains(const char *s, const char *part)
{
	cr_assert_not_null(strstr(s, part), "\"%s\" not in \"%s\"", part, s);
}

static __attribute__((unused)) char *
show(const struct profile *p, int flags)
{
	struct buf	b = { 0 };

	profile_print(p, flags, &b);
	return (b.data);
}

/* The line of show's output for one setting. */
static __attribute__((unused)) char *
show_line(const struct profile *p, const char *name)
{
	char	*text = show(p, 0), *want, *line, *end, *copy;

	xasprintf(&want, "\n\t%s = ", name);
	cr_assert_not_null(line = strstr(text, want), "%s not shown", name);
	line += 2;
	end = strchr(line, '\n');
	copy = xstrndup(line, end - line);
	free(want);
	free(text);
	return (copy);
}

static __attribute__((unused)) void
assert_defaults(const struct profile *p)
{
	cr_assert_eq(p->use_kvm, PROFILE_KVM_AUTO);
	cr_assert_eq(p->memory_mib, 512);
	cr_assert_eq(p->cpus, 1);
	cr_assert_float_eq(p->start_timeout, 0.0, 1e-9);
	cr_assert_float_eq(p->timeout, 0.0, 1e-9);
	cr_assert_eq(p->show_boot_console, 0);
	cr_assert_eq(p->console_on_failure, 20);
	cr_assert_eq(p->warm_start, 1);
	cr_assert_eq(p->template_ram, PROFILE_TRAM_SHARED);
	cr_assert_eq(p->template_cache_max, (uint64_t)4 << 30);
	cr_assert_null(p->kernel);
	cr_assert_null(p->initramfs);
	cr_assert_null(p->image);
	cr_assert_eq(p->image_kind, PROFILE_IMAGE_NONE);
	cr_assert_null(p->image_base_url);
	cr_assert_null(p->images_dir);
	cr_assert_eq(p->nenv, 0);
	cr_assert_str_eq(p->cwd, "/");
	cr_assert_eq(p->nshares, 0);
	cr_assert_eq(p->virtfs, PROFILE_VIRTFS_AUTO);
	cr_assert_eq(p->virtfs_security_model, PROFILE_SM_NONE);
	cr_assert_eq(p->ld_closure_libs, PROFILE_LD_FULL);
	cr_assert_eq(p->nld_closure_extra, 0);
	cr_assert_eq(p->network, NET_MODE_RESTRICTED);
	cr_assert_eq(p->nnetwork_allow, 0);
	cr_assert_eq(p->network_open_ack, 0);
	cr_assert_eq(p->nports, 0);
	cr_assert_eq(p->nnetwork_tcp, 0);
	cr_assert_eq(p->nnetwork_rules, 0);
	cr_assert_eq(p->nextra_args, 0);
}

/* An executable file of the temporary directory, holding text. */
static __attribute__((unused)) void
make_exec(const char *name, const char *text)
{
	char	*path = write_file(name, "%s", text);

	cr_assert_eq(chmod(path, 0755), 0);
	free(path);
}

/* A symbolic link of the temporary directory, to target. */
static __attribute__((unused)) void
make_link(const char *target, const char *name)
{
	char	*path, *slash;

	xasprintf(&path, "%s/%s", tmpdir, name);
	for (slash = strchr(path + strlen(tmpdir) + 1, '/'); slash != NULL;
	    slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	cr_assert_eq(symlink(target, path), 0, "%s: %s", path,
	    strerror(errno));
	free(path);
}

/* PATH: these directories ("a:b") of the temporary directory. */
static __attribute__((unused)) void
set_path(const char *dirs)
{
	char	*path, *copy, *d, *save;
	struct buf b = { 0 };

	copy = xstrdup(dirs);
	for (d = strtok_r(copy, ":", &save); d != NULL;
	    d = strtok_r(NULL, ":", &save))
		buf_printf(&b, "%s%s/%s", b.len == 0 ? "" : ":", tmpdir, d);
	xasprintf(&path, "%s", b.data);
	cr_assert_eq(setenv("PATH", path, 1), 0);
	free(path);
	free(copy);
	buf_free(&b);
}

#endif
