/*
 * profile_load: the built-in default, settings and their forms, error
 * messages (golden files: tests/unit/profiles/bad_*.lua and .err), and
 * attempts to get out of the sandbox. Run from the top of the tree.
 */
#include <sys/utsname.h>

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <lauxlib.h>
#include <lua.h>

#include "qsup.h"

#define FIXTURES	"tests/unit/profiles"

static char	*tmpdir;

static void
setup(void)
{
	char	tmpl[] = "/tmp/profile_test.XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	tmpdir = xstrdup(tmpl);
}

static void
teardown(void)
{
	util_rm_rf(tmpdir);
	free(tmpdir);
}

TestSuite(profile, .init = setup, .fini = teardown);

/* Write a profile into the temporary directory; returns its path. */
static char *
write_profile(const char *name, const char *fmt, ...)
{
	va_list	 ap;
	char	*path;
	FILE	*f;

	xasprintf(&path, "%s/%s", tmpdir, name);
	cr_assert_not_null(f = fopen(path, "w"));
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	cr_assert_eq(fclose(f), 0);
	return (path);
}

/* Load a profile that must fail; returns the cause. */
static char *
load_fails(const char *path)
{
	struct profile	 p;
	char		*cause = NULL;

	cr_assert_eq(profile_load(&p, path, &cause), -1, "%s loaded", path);
	cr_assert_not_null(cause);
	cr_assert_null(p.path, "a failed load leaves nothing behind");
	return (cause);
}

static void
assert_contains(const char *s, const char *part)
{
	cr_assert_not_null(strstr(s, part), "\"%s\" not in \"%s\"", part, s);
}

static void
assert_defaults(const struct profile *p)
{
	cr_assert_eq(p->use_kvm, PROFILE_KVM_AUTO);
	cr_assert_eq(p->memory_mib, 512);
	cr_assert_eq(p->cpus, 1);
	cr_assert_float_eq(p->start_timeout, 0.0, 1e-9);
	cr_assert_eq(p->show_boot_console, 0);
	cr_assert_null(p->kernel);
	cr_assert_null(p->initramfs);
	cr_assert_eq(p->nenv, 0);
	cr_assert_str_eq(p->cwd, "/");
}

Test(profile, builtin_default)
{
	struct profile	 p;
	char		*cause = NULL;

	cr_assert_eq(profile_load(&p, NULL, &cause), 0, "%s", cause);
	cr_assert_str_eq(p.path, "builtin:default");
	assert_defaults(&p);
	profile_free(&p);
}

/* An empty profile gets the schema's defaults: the same as the built-in. */
Test(profile, schema_defaults_match_builtin)
{
	struct profile	 p;
	char		*cause = NULL;

	cr_assert_eq(profile_load(&p, FIXTURES "/empty.lua", &cause), 0,
	    "%s", cause);
	cr_assert_str_eq(p.path, FIXTURES "/empty.lua");
	assert_defaults(&p);
	profile_free(&p);
}

/* profiles/default.lua spells out each default exactly as the schema. */
Test(profile, default_lua_shows_every_default)
{
	struct buf	 help = { 0 };
	char		*lua, *line, *next, *eq, *want;
	int		 n = 0;

	cr_assert_not_null(lua = util_read_file("profiles/default.lua", NULL,
	    1 << 20));
	profile_help(&help);
	for (line = help.data; line != NULL && *line != '\0'; line = next) {
		next = strchr(line, '\n');
		if (next != NULL)
			*next++ = '\0';
		if (*line == '\t' || (eq = strstr(line, " = ")) == NULL)
			continue;
		xasprintf(&want, "\n\t%s,\n", line);
		cr_assert_not_null(strstr(lua, want), "default.lua lacks %s",
		    line);
		free(want);
		n++;
	}
	cr_assert_eq(n, 10);
	buf_free(&help);
	free(lua);
}

Test(profile, every_setting)
{
	struct profile	 p;
	char		*cause = NULL;

	cr_assert_eq(profile_load(&p, FIXTURES "/full.lua", &cause), 0, "%s",
	    cause);
	cr_assert_eq(p.use_kvm, PROFILE_KVM_OFF);
	cr_assert_eq(p.memory_mib, 2048);
	cr_assert_eq(p.cpus, 4);
	cr_assert_float_eq(p.start_timeout, 90.5, 1e-9);
	cr_assert_eq(p.show_boot_console, 1);
	/* Relative to the profile's directory, not to ours. */
	cr_assert_str_eq(p.kernel, FIXTURES "/files/vmlinuz");
	cr_assert_str_eq(p.initramfs, FIXTURES "/files/initrd.img");
	cr_assert_str_eq(p.cwd, "/work");
	/* Sorted by name, whichever form each came in. */
	cr_assert_eq(p.nenv, 4);
	cr_assert_str_eq(p.env[0], "EQ=a=b");
	cr_assert_str_eq(p.env[1], "LANG=C.UTF-8");
	cr_assert_str_eq(p.env[2], "N=42");
	cr_assert_str_eq(p.env[3], "TZ=UTC");
	profile_free(&p);
	cr_assert_null(p.env);
	cr_assert_null(p.path);
}

Test(profile, sandbox_call)
{
	struct profile	 p;
	char		*cause = NULL;

	cr_assert_eq(profile_load(&p, FIXTURES "/sandbox_call.lua", &cause),
	    0, "%s", cause);
	cr_assert_eq(p.memory_mib, 1024);
	cr_assert_eq(p.cpus, 2);
	profile_free(&p);
}

Test(profile, qsup_table)
{
	struct profile	 p;
	struct utsname	 u;
	char		*cause = NULL, *want;
	long		 cpus = sysconf(_SC_NPROCESSORS_ONLN);

	cr_assert_eq(setenv("QSUP_TEST_MEMORY", "3G", 1), 0);
	unsetenv("QSUP_TEST_SURELY_UNSET");
	cr_assert_eq(profile_load(&p, FIXTURES "/computed.lua", &cause), 0,
	    "%s", cause);
	cr_assert_eq(p.memory_mib, 3072);
	cr_assert_geq(p.cpus, 1);
	cr_assert_leq(p.cpus, cpus > 64 ? 64 : cpus);
	cr_assert_eq(uname(&u), 0);
	xasprintf(&want, "/%s", u.machine);
	cr_assert_str_eq(p.cwd, want);
	free(want);
	cr_assert_eq(p.nenv, 2);
	cr_assert_eq(strncmp(p.env[0], "HOST_MIB=", 9), 0);
	cr_assert_gt(atol(p.env[0] + 9), 0);
	cr_assert_str_eq(p.env[1], "UNSET=nil");
	profile_free(&p);
}

Test(profile, memory_forms)
{
	static const struct {
		const char	*lua;
		uint64_t	 mib;
	} ok[] = {
		{ "\"2G\"", 2048 },
		{ "\"512M\"", 512 },
		{ "1024", 1024 },
		{ "1024.0", 1024 },
		{ "\"1.5G\"", 1536 },
		{ "\"32768k\"", 32 },
		{ "\"768\"", 768 },
		{ "\"1T\"", 1024 * 1024 },
		{ "\"16m\"", 16 },
	};
	struct profile	 p;
	char		*path, *cause;
	size_t		 i;

	for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		path = write_profile("mem.lua", "return {\n\tmemory = %s,\n}\n",
		    ok[i].lua);
		cause = NULL;
		cr_assert_eq(profile_load(&p, path, &cause), 0, "%s: %s",
		    ok[i].lua, cause);
		cr_assert_eq(p.memory_mib, ok[i].mib, "%s", ok[i].lua);
		profile_free(&p);
		free(path);
	}
}

/* Refused, at FILE:LINE, saying what would have been accepted. */
Test(profile, memory_refused)
{
	static const char	*bad[] = {
		"\"2GB\"", "\"2GiB\"", "0", "-1", "\"0\"", "\"-1G\"",
		"\"1.3G\"", "\"512k\"", "\"2048k\"", "1.5", "\"2 G\"", "\"G\"",
		"\"\"", "\"8M\"", "\"2P\"", "\"99999999999999999999\"", "1e300",
		"0/0", "true", "{}",
	};
	char			*path, *cause, *where;
	size_t			 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		path = write_profile("mem.lua", "return {\n\tcpus = 1,\n"
		    "\tmemory = %s,\n}\n", bad[i]);
		cause = load_fails(path);
		xasprintf(&where, "%s:3: memory: ", path);
		cr_assert_eq(strncmp(cause, where, strlen(where)), 0,
		    "%s: %s", bad[i], cause);
		assert_contains(cause, "one suffix k, M, G or T");
		cr_assert_null(strchr(cause, '\n'), "one error: %s", cause);
		free(where);
		free(cause);
		free(path);
	}
}

Test(profile, use_kvm)
{
	static const struct {
		const char	*lua;
		enum profile_kvm kvm;
	} ok[] = {
		{ "true", PROFILE_KVM_ON },
		{ "false", PROFILE_KVM_OFF },
		{ "\"auto\"", PROFILE_KVM_AUTO },
	};
	static const char	*bad[] = { "\"true\"", "\"on\"", "1", "nil_" };
	struct profile		 p;
	char			*path, *cause;
	size_t			 i;

	for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		path = write_profile("kvm.lua", "return { use_kvm = %s }\n",
		    ok[i].lua);
		cause = NULL;
		cr_assert_eq(profile_load(&p, path, &cause), 0, "%s", cause);
		cr_assert_eq(p.use_kvm, ok[i].kvm, "%s", ok[i].lua);
		profile_free(&p);
		free(path);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		path = write_profile("kvm.lua", "local nil_ = {}\n"
		    "return { use_kvm = %s }\n", bad[i]);
		cause = load_fails(path);
		assert_contains(cause, ":2: use_kvm: ");
		assert_contains(cause, "expected true, false or \"auto\"");
		free(cause);
		free(path);
	}
}

/* Every bad_*.lua fixture fails with exactly the message in its .err. */
Test(profile, golden_errors)
{
	DIR		*d;
	struct dirent	*de;
	char		*lua, *err, *want, *cause;
	size_t		 len;
	int		 n = 0;

	cr_assert_not_null(d = opendir(FIXTURES));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (strncmp(de->d_name, "bad_", 4) != 0 || len < 5 ||
		    strcmp(de->d_name + len - 4, ".lua") != 0)
			continue;
		xasprintf(&lua, "%s/%s", FIXTURES, de->d_name);
		xasprintf(&err, "%s/%.*s.err", FIXTURES, (int)len - 4,
		    de->d_name);
		want = util_read_file(err, &len, 1 << 20);
		cr_assert_not_null(want, "%s: %s", err, strerror(errno));
		while (len > 0 && want[len - 1] == '\n')
			want[--len] = '\0';
		cause = load_fails(lua);
		cr_expect_str_eq(cause, want, "%s:\n got: %s\nwant: %s", lua,
		    cause, want);
		free(cause);
		free(want);
		free(err);
		free(lua);
		n++;
	}
	closedir(d);
	cr_assert_geq(n, 12);
}

Test(profile, missing_file)
{
	char	*cause = load_fails(FIXTURES "/no-such-profile.lua");

	cr_assert_str_eq(cause, FIXTURES "/no-such-profile.lua: "
	    "No such file or directory");
	free(cause);
}

/* Long paths are shortened in Lua's own messages; ours keep them whole. */
Test(profile, long_path_in_lua_errors)
{
	char	*path, *cause, *want;

	path = write_profile("a-rather-long-profile-name-that-lua-would-"
	    "shorten-in-its-messages.lua", "return {\n\tcpus = 1 +,\n}\n");
	cause = load_fails(path);
	xasprintf(&want, "%s:2: ", path);
	cr_assert_eq(strncmp(cause, want, strlen(want)), 0, "%s", cause);
	free(want);
	free(cause);
	free(path);
}

static int
dump_writer(lua_State *L, const void *p, size_t size, void *ud)
{
	(void)L;
	return (fwrite(p, 1, size, ud) == size ? 0 : 1);
}

/* A precompiled profile is refused: only text is loaded. */
Test(profile, binary_profile_file)
{
	lua_State	*L;
	FILE		*f;
	char		*path, *cause;

	xasprintf(&path, "%s/compiled.lua", tmpdir);
	cr_assert_not_null(f = fopen(path, "w"));
	L = luaL_newstate();
	cr_assert_eq(luaL_loadstring(L, "return { cpus = 2 }"), LUA_OK);
	cr_assert_eq(lua_dump(L, dump_writer, f, 1), 0);
	lua_close(L);
	fclose(f);
	cause = load_fails(path);
	assert_contains(cause, path);
	assert_contains(cause, "binary chunk");
	free(cause);
	free(path);
}

/*
 * Getting out of the sandbox. Each fixture tries one way and must fail at
 * its own FILE:LINE with the expected complaint.
 */
static void
assert_escape_fails(const char *name, int line, const char *part)
{
	char	*path, *cause, *where;

	xasprintf(&path, "%s/%s", FIXTURES, name);
	cause = load_fails(path);
	xasprintf(&where, "%s:%d: ", path, line);
	cr_assert_eq(strncmp(cause, where, strlen(where)), 0, "%s", cause);
	assert_contains(cause, part);
	free(where);
	free(cause);
	free(path);
}

Test(profile, escape_os_io_require)
{
	assert_escape_fails("escape_os.lua", 1, "(global 'os')");
	cr_assert_eq(access("/tmp/qsup-escaped", F_OK), -1);
	assert_escape_fails("escape_io.lua", 1, "(global 'io')");
	assert_escape_fails("escape_require.lua", 1, "(global 'require')");
}

Test(profile, escape_dofile_loadfile)
{
	assert_escape_fails("escape_dofile.lua", 1, "(global 'dofile')");
	assert_escape_fails("escape_loadfile.lua", 1, "(global 'loadfile')");
}

Test(profile, escape_bytecode)
{
	assert_escape_fails("escape_dump.lua", 1, "(field 'dump')");
	assert_escape_fails("escape_binary.lua", 4,
	    "attempt to load a binary chunk (mode is 't')");
}

Test(profile, escape_finalizer)
{
	assert_escape_fails("escape_gc.lua", 2, "__gc metamethods are not "
	    "allowed");
}

static void
assert_stops_in_time(const char *name, int line)
{
	double	t0 = util_now(), dt;

	assert_escape_fails(name, line, "ran for more than 1 s");
	dt = util_now() - t0;
	cr_assert_geq(dt, 0.9, "%s stopped after %.2f s", name, dt);
	cr_assert_lt(dt, 2.0, "%s stopped after %.2f s", name, dt);
}

Test(profile, escape_endless_loop)
{
	assert_stops_in_time("escape_loop.lua", 3);
}

Test(profile, escape_endless_loop_under_pcall)
{
	assert_stops_in_time("escape_loop_pcall.lua", 3);
}

Test(profile, escape_endless_xpcall_handler)
{
	assert_stops_in_time("escape_xpcall.lua", 3);
}

Test(profile, escape_memory)
{
	double	t0 = util_now();

	assert_escape_fails("escape_memory.lua", 3, "needs more than 64 MiB "
	    "of memory");
	cr_assert_lt(util_now() - t0, 2.0);
}

/* print() is for the profile's author: to the log on stderr, not stdout. */
static void
capture_output(void)
{
	cr_redirect_stdout();
	cr_redirect_stderr();
}

Test(profile, print_goes_to_stderr, .init = capture_output)
{
	struct profile	 p;
	char		*path, *cause = NULL, *want;

	path = write_profile("print.lua", "print(\"memory is\", 1024)\n"
	    "return { memory = 1024 }\n");
	cr_assert_eq(profile_load(&p, path, &cause), 0, "%s", cause);
	profile_free(&p);
	fflush(stdout);
	fflush(stderr);
	cr_assert_stdout_eq_str("");
	xasprintf(&want, "qsup: %s:1: memory is\t1024\n", path);
	cr_assert_stderr_eq_str(want);
	free(want);
	free(path);
}

Test(profile, help_lists_every_setting)
{
	static const char	*names[] = { "use_kvm", "memory", "cpus",
	    "start_timeout", "show_boot_console", "kernel", "initramfs", "env",
	    "cwd" };
	struct buf		 b = { 0 };
	char			*want;
	size_t			 i;

	profile_help(&b);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		xasprintf(&want, "%s = ", names[i]);
		assert_contains(b.data, want);
		free(want);
	}
	buf_free(&b);
}
