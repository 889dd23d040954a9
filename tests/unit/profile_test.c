/*
 * profile_load: the built-in default, settings and their forms, error
 * messages (golden files: tests/profiles/fail-*.lua and .err), include()
 * and extend(), --set, show's output, profile names, host facts, and
 * attempts to get out of the sandbox. Run from the top of the tree.
 */
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
#define NSETTINGS	46

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
static char *
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
static char *
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

static char *
load_fails(const char *path)
{
	return (load_fails_set(path, NULL, 0));
}

static void
load_ok_set(struct profile *p, const char *path, char *const *sets,
    size_t nsets)
{
	char	*cause = NULL;

	cr_assert_eq(profile_load_set(p, path, sets, nsets, &cause), 0,
	    "%s: %s", path, cause);
	cr_assert_null(cause);
}

static void
load_ok(struct profile *p, const char *path)
{
	load_ok_set(p, path, NULL, 0);
}

static void
assert_contains(const char *s, const char *part)
{
	cr_assert_not_null(strstr(s, part), "\"%s\" not in \"%s\"", part, s);
}

static char *
show(const struct profile *p, int flags)
{
	struct buf	b = { 0 };

	profile_print(p, flags, &b);
	return (b.data);
}

/* The line of show's output for one setting. */
static char *
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

static void
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

Test(profile, builtin_default)
{
	struct profile	 p;

	load_ok(&p, NULL);
	cr_assert_str_eq(p.path, "builtin:default");
	assert_defaults(&p);
	profile_free(&p);
}

/* An empty profile gets the schema's defaults: the same as the built-in. */
Test(profile, schema_defaults_match_builtin)
{
	struct profile	 p;

	load_ok(&p, FIXTURES "/empty.lua");
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
	cr_assert_eq(n, NSETTINGS);
	buf_free(&help);
	free(lua);
}

Test(profile, every_setting)
{
	struct profile	 p;
	char		 real[PATH_MAX];
	char		*want;
	size_t		 i;

	load_ok(&p, FIXTURES "/full.lua");
	cr_assert_eq(p.use_kvm, PROFILE_KVM_OFF);
	cr_assert_eq(p.memory_mib, 2048);
	cr_assert_eq(p.cpus, 4);
	cr_assert_float_eq(p.start_timeout, 90.5, 1e-9);
	cr_assert_float_eq(p.timeout, 30, 1e-9);
	cr_assert_eq(p.show_boot_console, 1);
	cr_assert_eq(p.console_on_failure, 0);
	cr_assert_eq(p.warm_start, 0);
	/* Relative to the profile's directory, not to ours; made absolute. */
	cr_assert_not_null(realpath(FIXTURES "/files/vmlinuz", real));
	cr_assert_str_eq(p.kernel, real);
	cr_assert_not_null(realpath(FIXTURES "/files/initrd.img", real));
	cr_assert_str_eq(p.initramfs, real);
	cr_assert_str_eq(p.image, "debian-12");
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_NAME);
	cr_assert_str_eq(p.image_base_url, "https://example.org/images/");
	cr_assert_not_null(realpath(FIXTURES "/files", real));
	cr_assert_str_eq(p.images_dir, real);
	cr_assert_str_eq(p.cwd, "/work");
	/* Sorted by name, whichever form each came in. */
	cr_assert_eq(p.nenv, 4);
	cr_assert_str_eq(p.env[0], "EQ=a=b");
	cr_assert_str_eq(p.env[1], "LANG=C.UTF-8");
	cr_assert_str_eq(p.env[2], "N=42");
	cr_assert_str_eq(p.env[3], "TZ=UTC");

	cr_assert_eq(p.nshares, 2);
	cr_assert_str_eq(p.shares[0].host, real);
	cr_assert_str_eq(p.shares[0].guest, "/data");
	cr_assert_eq(p.shares[0].rw, 1);
	cr_assert_eq(p.shares[0].nignore, 2);
	cr_assert_str_eq(p.shares[0].ignore[0], "*.img");
	cr_assert_str_eq(p.shares[0].ignore[1], ".git");
	xasprintf(&want, "%s/share", real);
	cr_assert_str_eq(p.shares[1].host, want);
	cr_assert_str_eq(p.shares[1].guest, want, "the guest path is the "
	    "host's unless told");
	cr_assert_eq(p.shares[1].rw, 0, "read-only unless told");
	free(want);

	cr_assert_eq(p.virtfs, PROFILE_VIRTFS_ON);
	cr_assert_eq(p.virtfs_security_model, PROFILE_SM_NONE,
	    "the seed's auto is none");
	cr_assert_str_eq(profile_sm_name(p.virtfs_security_model), "none");
	cr_assert_eq(p.ld_closure_libs, PROFILE_LD_SPARSE, "ldd is sparse");
	cr_assert_eq(p.nld_closure_extra, 2);
	cr_assert_str_eq(p.ld_closure_extra[0], "libbz2.so.1.0");
	cr_assert_str_eq(p.ld_closure_extra[1], "/usr/lib/x86_64-linux-gnu/gconv");

	cr_assert_eq(p.network, NET_MODE_ALLOWLIST);
	/* Then network_rules' OUT, marked with where they came from. */
	cr_assert_eq(p.nnetwork_allow, 8);
	for (i = 0; i < 5; i++) {
		cr_assert_eq(p.network_allow[i].from_rule, 0);
		cr_assert_eq(p.network_allow[i].deny, 0);
	}
	cr_assert_str_eq(p.network_allow[0].host, "deb.debian.org");
	cr_assert_eq(p.network_allow[0].port_min, 80);
	cr_assert_str_eq(p.network_allow[1].host, "*.pypi.org");
	cr_assert_eq(p.network_allow[2].family, AF_INET);
	cr_assert_eq(p.network_allow[2].prefix, 16);
	cr_assert_eq(p.network_allow[2].port_min, 8000);
	cr_assert_eq(p.network_allow[2].port_max, 8099);
	cr_assert_eq(p.network_allow[3].family, AF_INET6);
	cr_assert_eq(p.network_allow[3].prefix, 32);
	cr_assert_eq(p.network_allow[4].port_min, 0, "any port");
	cr_assert_str_eq(p.network_allow[5].text, "ftp.debian.org:80");
	cr_assert_eq(p.network_allow[5].from_rule, 1);
	cr_assert_eq(p.network_allow[5].deny, 0);
	cr_assert_str_eq(p.network_allow[6].text, "ftp.debian.org:443");
	cr_assert_str_eq(p.network_allow[7].host, "*.internal.example");
	cr_assert_eq(p.network_allow[7].port_min, 0);
	cr_assert_eq(p.network_allow[7].from_rule, 2);
	cr_assert_eq(p.network_allow[7].deny, 1);
	cr_assert_eq(p.network_open_ack, 1);

	/* Then network_rules' IN, on loopback. */
	cr_assert_eq(p.nports, 5);
	cr_assert_eq(p.ports[0].guest, 8080);
	cr_assert_eq(p.ports[0].host, 0);
	cr_assert_str_eq(p.ports[0].address, "127.0.0.1");
	cr_assert_eq(p.ports[0].from_rule, 0);
	cr_assert_eq(p.ports[1].guest, 22);
	cr_assert_eq(p.ports[1].host, 2222);
	cr_assert_str_eq(p.ports[1].address, "::1");
	for (i = 2; i < 5; i++) {
		cr_assert_eq(p.ports[i].guest, 8000 + i - 2);
		cr_assert_eq(p.ports[i].host, 0);
		cr_assert_str_eq(p.ports[i].address, "127.0.0.1");
		cr_assert_eq(p.ports[i].from_rule, 3);
	}

	cr_assert_eq(p.nnetwork_tcp, 2);
	cr_assert_str_eq(p.network_tcp[0].host, "127.0.0.1");
	cr_assert_eq(p.network_tcp[0].port, 5432);
	cr_assert_str_eq(p.network_tcp[0].name, "db");
	cr_assert_eq(p.network_tcp[0].guest_port, 5432, "port's if not given");
	cr_assert_str_eq(p.network_tcp[1].host, "cache.example");
	cr_assert_eq(p.network_tcp[1].port, 6379);
	cr_assert_null(p.network_tcp[1].name);
	cr_assert_eq(p.network_tcp[1].guest_port, 7000);

	cr_assert_eq(p.nnetwork_rules, 3);
	cr_assert_str_eq(p.network_rules[1],
	    "deny|tcp|*.internal.example|*|out", "kept as written");

	cr_assert_eq(p.nextra_args, 4);
	cr_assert_str_eq(p.extra_args[0], "-device");
	cr_assert_str_eq(p.extra_args[3],
	    "rng-random,id=r,filename=/dev/urandom");
	profile_free(&p);
	cr_assert_null(p.env);
	cr_assert_null(p.path);
	cr_assert_null(p.shares);
	cr_assert_null(p.network_tcp);
	cr_assert_null(p.network_rules);
	cr_assert_null(p.origins);
}

Test(profile, sandbox_call)
{
	struct profile	 p;

	load_ok(&p, FIXTURES "/sandbox-call.lua");
	cr_assert_eq(p.memory_mib, 1024);
	cr_assert_eq(p.cpus, 2);
	profile_free(&p);
}

Test(profile, qsup_table)
{
	struct profile	 p;
	struct utsname	 u;
	char		*want;
	long		 cpus = sysconf(_SC_NPROCESSORS_ONLN);

	cr_assert_eq(setenv("QSUP_TEST_MEMORY", "3G", 1), 0);
	unsetenv("QSUP_TEST_SURELY_UNSET");
	load_ok(&p, FIXTURES "/computed.lua");
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

/* Every fact, through a profile that copies them into env. */
Test(profile, host_facts)
{
	struct profile	 p;
	char		*path, *want, cwd[PATH_MAX];
	size_t		 i;

	setenv("container", "podman", 1);
	path = write_profile("facts.lua", "local e = {}\n"
	    "for _, k in ipairs({ 'arch', 'triplet', 'glibc', 'cpus',\n"
	    "    'memory_mib', 'in_container', 'cwd', 'kvm', 'kvm_why' }) do\n"
	    "\te[k:upper()] = tostring(qsup[k])\n"
	    "end\n"
	    "e.KVM_TYPE = type(qsup.kvm)\n"
	    "return { env = e }\n");
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	load_ok(&p, path);
	for (i = 0; i < p.nenv; i++) {
		if (strncmp(p.env[i], "ARCH=", 5) == 0)
			cr_assert_str_eq(p.env[i] + 5, facts_arch());
		if (strncmp(p.env[i], "TRIPLET=", 8) == 0)
			cr_assert_not_null(strstr(p.env[i], "-linux-gnu"));
		if (strncmp(p.env[i], "GLIBC=", 6) == 0)
			cr_assert_eq(strncmp(p.env[i] + 6, "2.", 2), 0);
		if (strncmp(p.env[i], "IN_CONTAINER=", 13) == 0)
			cr_assert_str_eq(p.env[i] + 13, "true",
			    "$container is one of the seed's signs");
		if (strncmp(p.env[i], "CWD=", 4) == 0)
			cr_assert_str_eq(p.env[i] + 4, cwd);
		if (strncmp(p.env[i], "KVM_TYPE=", 9) == 0)
			cr_assert_str_eq(p.env[i] + 9, "boolean");
		if (strncmp(p.env[i], "KVM_WHY=", 8) == 0)
			cr_assert_gt(strlen(p.env[i]), 8);
	}
	xasprintf(&want, "TRIPLET=%s", facts_triplet());
	cr_assert_str_eq(p.env[9], want, "sorted: TRIPLET is last");
	free(want);
	cr_assert_eq(p.nenv, 10);
	profile_free(&p);
	free(path);
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
	char		*path;
	size_t		 i;

	for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		path = write_profile("mem.lua", "return {\n\tmemory = %s,\n}\n",
		    ok[i].lua);
		load_ok(&p, path);
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

/* What a user gets for "2GB" and friends: what to write instead. */
Test(profile, near_misses_say_what_to_write)
{
	static const struct {
		const char	*lua;
		const char	*hint;
	} cases[] = {
		{ "memory = \"2GB\"", "(write \"2G\")" },
		{ "memory = \"2GiB\"", "(write \"2G\")" },
		{ "memory = \"512 MB\"", "(write \"512M\")" },
		{ "start_timeout = \"60\"", "(write 60, without quotes)" },
		{ "timeout = \"90s\"", "(write 90)" },
		{ "show_boot_console = \"yes\"",
		  "(write true, without quotes)" },
		{ "warm_start = 0", "expected true or false" },
		{ "use_kvm = \"off\"", "(write false, without quotes)" },
		{ "network = \"None\"", "(write \"none\")" },
		{ "network = \"restricetd\"", "(write \"restricted\")" },
		{ "virtfs = \"yes\"", "expected \"auto\", \"on\" or \"off\"" },
		{ "cpus = \"4\"", "(write 4, without quotes)" },
		{ "memroy = 512", "(did you mean \"memory\"?)" },
		{ "cpu = 2", "(did you mean \"cpus\"?)" },
		{ "start_timout = 2", "(did you mean \"start_timeout\"?)" },
		{ "[\"qemu.start_timeout\"] = 90",
		  "(did you mean \"start_timeout\"?)" },
		{ "virtfs_stage = \"on\"", "(did you mean \"virtfs\"?)" },
		{ "net = \"none\"", "(did you mean \"network\"?)" },
	};
	char	*path, *cause;
	size_t	 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		path = write_profile("hint.lua", "return {\n\t%s,\n}\n",
		    cases[i].lua);
		cause = load_fails(path);
		assert_contains(cause, ":2: ");
		assert_contains(cause, cases[i].hint);
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
		load_ok(&p, path);
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

/* The seed's aliases are taken, and stored as what they mean. */
Test(profile, choice_aliases)
{
	struct profile	 p;
	char		*path, *line;

	path = write_profile("alias.lua", "return {\n"
	    "\tvirtfs_security_model = \"auto\",\n"
	    "\tld_closure_libs = \"minimal\",\n}\n");
	load_ok(&p, path);
	cr_assert_eq(p.virtfs_security_model, PROFILE_SM_NONE);
	cr_assert_eq(p.ld_closure_libs, PROFILE_LD_SPARSE);
	line = show_line(&p, "ld_closure_libs");
	cr_assert_eq(strncmp(line, "ld_closure_libs = \"sparse\",", 27), 0,
	    "%s", line);
	free(line);
	profile_free(&p);
	free(path);
}

/* Every fail-*.lua fixture fails with exactly the message in its .err. */
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
		if (strncmp(de->d_name, "fail-", 5) != 0 || len < 6 ||
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
	cr_assert_geq(n, 28);
}

Test(profile, missing_file)
{
	char	*cause = load_fails(FIXTURES "/no-such-profile.lua");

	cr_assert_str_eq(cause, FIXTURES "/no-such-profile.lua: "
	    "No such file or directory");
	free(cause);
}

/*
 * A FIFO, a directory or a device is refused, named, without blocking
 * (a FIFO nobody writes would block open() for good).
 */
Test(profile, non_regular_file_refused, .timeout = 10)
{
	char	*fifo, *cause, *want, *path;

	xasprintf(&fifo, "%s/fifo.lua", tmpdir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cause = load_fails(fifo);
	xasprintf(&want, "%s: not a regular file", fifo);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);

	cause = load_fails(tmpdir);
	xasprintf(&want, "%s: not a regular file", tmpdir);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);

	cause = load_fails("/dev/zero");
	cr_assert_str_eq(cause, "/dev/zero: not a regular file");
	free(cause);

	/* Nor through include(). */
	path = write_profile("inc-fifo.lua", "include(\"fifo\")\nreturn {}\n");
	cause = load_fails(path);
	cr_assert_not_null(strstr(cause, "include(\"fifo\"): "), "%s", cause);
	cr_assert_not_null(strstr(cause, "fifo.lua: not a regular file"),
	    "%s", cause);
	free(cause);
	free(path);
	free(fifo);
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

/* -------------------------------------------------------------------------
 * include() and extend().
 */

Test(profile, extend_replaces_settings)
{
	struct profile	 p;
	char		*line;

	load_ok(&p, FIXTURES "/include-extend.lua");
	cr_assert_eq(p.memory_mib, 1024);
	cr_assert_eq(p.cpus, 3);
	cr_assert_float_eq(p.timeout, 60, 1e-9);
	cr_assert_eq(p.network, NET_MODE_NONE);
	/* Each setting is placed in the file that set it. */
	line = show_line(&p, "memory");
	assert_contains(line, "-- profile, " FIXTURES "/include/base.lua:3");
	free(line);
	line = show_line(&p, "cpus");
	assert_contains(line, "-- profile, " FIXTURES "/include-extend.lua:3");
	free(line);
	line = show_line(&p, "use_kvm");
	assert_contains(line, "-- default");
	free(line);
	profile_free(&p);
}

Test(profile, include_gives_a_table_to_change)
{
	struct profile	 p;

	load_ok(&p, FIXTURES "/include-modify.lua");
	cr_assert_eq(p.memory_mib, 2048);
	cr_assert_eq(p.cpus, 2);
	cr_assert_eq(p.nenv, 2);
	cr_assert_str_eq(p.env[1], "TZ=UTC");
	profile_free(&p);
}

Test(profile, extend_a_builtin)
{
	struct profile	 p, ci;

	load_ok(&p, FIXTURES "/include-builtin.lua");
	load_ok(&ci, "builtin:ci");
	cr_assert_float_eq(p.timeout, 30, 1e-9);
	cr_assert_float_neq(ci.timeout, 30, 1e-9);
	cr_assert_eq(p.network, ci.network);
	cr_assert_eq(p.nshares, ci.nshares);
	profile_free(&p);
	profile_free(&ci);
}

/* The same base twice is no cycle; a sandbox{} base works too. */
Test(profile, include_twice_and_sandbox_base)
{
	struct profile	 p;
	char		*path;

	free(write_file("tree/sub/base.lua",
	    "sandbox { memory = \"768M\" }\n"));
	path = write_file("tree/top.lua", "local a = include(\"sub/base\")\n"
	    "local b = include(\"sub/base.lua\")\n"
	    "assert(a ~= b, \"each include runs the profile afresh\")\n"
	    "a.cpus = 3\n"
	    "return a\n");
	load_ok(&p, path);
	cr_assert_eq(p.memory_mib, 768);
	cr_assert_eq(p.cpus, 3);
	profile_free(&p);
	free(path);
}

/* A cycle is found however it is reached, and says which files. */
Test(profile, include_self)
{
	char	*path, *cause;

	path = write_file("self.lua", "return extend(\"self\", {})\n");
	cause = load_fails(path);
	assert_contains(cause, "self.lua:1: include cycle: ");
	free(cause);
	free(path);
}

/* An include that failed under pcall does not leave a false cycle. */
Test(profile, include_under_pcall)
{
	struct profile	 p;
	char		*path;

	free(write_file("broken.lua", "error(\"no\")\n"));
	free(write_file("good.lua", "return { cpus = 2 }\n"));
	path = write_file("pc.lua", "assert(not pcall(include, \"broken\"))\n"
	    "assert(not pcall(include, \"broken\"))\n"
	    "return include(\"good\")\n");
	load_ok(&p, path);
	cr_assert_eq(p.cpus, 2);
	profile_free(&p);
	free(path);
}

/* Built-in profiles include built-in ones only, by name. */
Test(profile, builtins_include_builtins)
{
	DIR		*d;
	struct dirent	*de;
	struct profile	 p;
	char		*name;
	size_t		 len;
	int		 n = 0;

	cr_assert_not_null(d = opendir("profiles"));
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 5 || strcmp(de->d_name + len - 4, ".lua") != 0)
			continue;
		xasprintf(&name, "builtin:%.*s", (int)len - 4, de->d_name);
		load_ok(&p, name);
		cr_assert_str_eq(p.path, name);
		profile_free(&p);
		free(name);
		n++;
	}
	closedir(d);
	cr_assert_eq(n, 5, "every shipped profile is built in");
}

/* -------------------------------------------------------------------------
 * --set NAME=VALUE.
 */

Test(profile, set_overrides)
{
	static char	*sets[] = {
		"memory=1G", "cpus=3", "use_kvm=false", "cwd=/srv",
		"env={FOO=\"bar\", \"A=1\"}", "extra_args=-no-hpet",
		"network=allowlist", "network_allow=deb.debian.org:443",
		"timeout=2.5", "show_boot_console=true", "cpus=4",
	};
	struct profile	 p;
	char		*line;

	load_ok_set(&p, FIXTURES "/include-extend.lua", sets,
	    sizeof sets / sizeof sets[0]);
	cr_assert_eq(p.memory_mib, 1024);
	cr_assert_eq(p.cpus, 4, "the last --set wins");
	cr_assert_eq(p.use_kvm, PROFILE_KVM_OFF);
	cr_assert_str_eq(p.cwd, "/srv");
	cr_assert_eq(p.nenv, 2);
	cr_assert_str_eq(p.env[0], "A=1");
	cr_assert_str_eq(p.env[1], "FOO=bar");
	cr_assert_eq(p.nextra_args, 1, "a plain string is a list of one");
	cr_assert_str_eq(p.extra_args[0], "-no-hpet");
	cr_assert_eq(p.network, NET_MODE_ALLOWLIST);
	cr_assert_eq(p.nnetwork_allow, 1);
	cr_assert_float_eq(p.timeout, 2.5, 1e-9);
	cr_assert_eq(p.show_boot_console, 1);
	line = show_line(&p, "cpus");
	assert_contains(line, "-- command line, --set cpus=4");
	free(line);
	line = show_line(&p, "warm_start");
	assert_contains(line, "-- default");
	free(line);
	profile_free(&p);
}

/* nil puts the default back, and says it came from the command line. */
Test(profile, set_nil_is_the_default)
{
	static char	*sets[] = { "cpus=nil" };
	struct profile	 p;
	char		*line;

	load_ok_set(&p, FIXTURES "/include-extend.lua", sets, 1);
	cr_assert_eq(p.cpus, 1);
	line = show_line(&p, "cpus");
	assert_contains(line, "-- command line, --set cpus=nil");
	free(line);
	profile_free(&p);
}

/* Checked as a profile is, every mistake at once, named by its --set. */
Test(profile, set_mistakes)
{
	static char	*sets[] = {
		"memory=2GB", "memroy=1G", "cpus=0", "env={", "noequals",
		"network=open", "extra_args={\"-virtfs\", \"local\"}",
	};
	char		*cause;

	cause = load_fails_set(FIXTURES "/empty.lua", sets, 7);
	cr_assert_str_eq(cause,
	    "--set memory=2GB: memory: \"2GB\" is not a size (write \"2G\"); "
	    "expected MiB as a whole number (1024) or a string with one suffix "
	    "k, M, G or T (\"512M\", \"2G\"), from 16M to 1T\n"
	    "--set memroy=1G: unknown setting \"memroy\" (did you mean "
	    "\"memory\"?)\n"
	    "--set cpus=0: cpus: 0 is out of range; expected a whole number "
	    "from 1 to 64\n"
	    "--set env={: unexpected symbol near <eof>\n"
	    "--set noequals: expected NAME=VALUE\n"
	    "--set network=open: network: \"open\" lets the guest reach the "
	    "internet and every service listening on the host's 127.0.0.1 (as "
	    "10.0.2.2); to accept that, also write network_open_ack = true, or "
	    "list what it needs with network = \"allowlist\" and "
	    "network_allow\n"
	    "--set extra_args={\"-virtfs\", \"local\"}: extra_args[1]: "
	    "\"-virtfs\" \"local\" is refused: it passes a host directory "
	    "through to the guest; use shares = { ... }");
	free(cause);
}

/* A --set value is a literal: no globals, and the profile's time limit. */
Test(profile, set_values_are_literals)
{
	static char	*loop[] = {
		"env={X=(function() while true do end end)()}" };
	static char	*global[] = { "env={X=tostring(1)}" };
	static char	*word[] = { "cwd=qsup.cwd" };
	double		 t0 = util_now();
	char		*cause;

	cause = load_fails_set(FIXTURES "/empty.lua", loop, 1);
	assert_contains(cause, "ran for more than 1 s");
	cr_assert_lt(util_now() - t0, 2.0);
	free(cause);
	cause = load_fails_set(FIXTURES "/empty.lua", global, 1);
	assert_contains(cause, "--set env={X=tostring(1)}: attempt to call a "
	    "nil value (global 'tostring')");
	free(cause);
	cause = load_fails_set(FIXTURES "/empty.lua", word, 1);
	assert_contains(cause, "--set cwd=qsup.cwd: cwd: \"qsup.cwd\" is not "
	    "absolute");
	free(cause);
}

/* -------------------------------------------------------------------------
 * Show: Lua that loads back to the same settings, and JSON.
 */

static void
assert_round_trip(const char *profile)
{
	struct profile	 p, q;
	char		*bare, *again, *full, *path;

	load_ok(&p, profile);
	full = show(&p, 0);
	path = write_file("shown.lua", "%s", full);
	load_ok(&q, path);
	bare = show(&p, PROFILE_PRINT_BARE);
	again = show(&q, PROFILE_PRINT_BARE);
	cr_assert_str_eq(again, bare, "%s does not load back the same:\n%s",
	    profile, full);
	free(bare);
	free(again);
	free(full);
	free(path);
	profile_free(&p);
	profile_free(&q);
}

Test(profile, show_loads_back)
{
	assert_round_trip(FIXTURES "/full.lua");
	assert_round_trip(FIXTURES "/include-extend.lua");
	assert_round_trip("builtin:default");
	assert_round_trip("builtin:ci");
	assert_round_trip("builtin:dev");
	assert_round_trip("builtin:nested-container");
}

Test(profile, show_json)
{
	struct profile	 p;
	char		*json;

	load_ok(&p, FIXTURES "/include-extend.lua");
	json = show(&p, PROFILE_PRINT_JSON);
	assert_contains(json, "{\"profile\":\"" FIXTURES
	    "/include-extend.lua\","
	    "\"settings\":{\"use_kvm\":{\"value\":\"auto\",\"from\":"
	    "\"default\"},\"memory\":{\"value\":1024,\"from\":\"profile\","
	    "\"at\":\"" FIXTURES "/include/base.lua:3\"},");
	assert_contains(json, "\"network\":{\"value\":\"none\",");
	assert_contains(json, "\"shares\":{\"value\":[],\"from\":\"default\"}");
	cr_assert_eq(json[strlen(json) - 1], '\n');
	free(json);
	profile_free(&p);
}

/*
 * What network_rules compiled to is shown under network_allow and ports,
 * each with its rule and the rules' line, as comments: show's output
 * loads back to the same (the rules compile again), not to twice as many.
 */
Test(profile, show_compiled_rules)
{
	struct profile	 p, q;
	char		*path, *text, *json, *again;

	path = write_file("rules.lua", "return {\n"
	    "\tnetwork = \"allowlist\",\n"
	    "\tnetwork_allow = { \"pypi.org:443\" },\n"
	    "\tnetwork_rules = { \"ALLOW|TCP|a.example|80,443|OUT\",\n"
	    "\t\t\"DENY|TCP|*|25|OUT\", \"ALLOW|TCP|*|8000|IN\" },\n"
	    "\tnetwork_tcp = { { host = \"127.0.0.1\", port = 5432 } },\n"
	    "}\n");
	load_ok(&p, path);
	text = show(&p, 0);
	assert_contains(text, "\tnetwork_allow = { \"pypi.org:443\" },");
	assert_contains(text, "\n\t-- and \"a.example:80\","
	    "                     -- network_rules[1], ");
	assert_contains(text, "\n\t-- and \"a.example:443\","
	    "                    -- network_rules[1], ");
	assert_contains(text, "\n\t-- but not \"*:25\","
	    "                         -- network_rules[2], ");
	assert_contains(text, "\n\tports = {},");
	assert_contains(text, "\n\t-- and { guest = 8000, host = 0, address = "
	    "\"127.0.0.1\" }, -- network_rules[3], ");
	assert_contains(text, "\n\tnetwork_tcp = { { host = \"127.0.0.1\", "
	    "port = 5432, guest_port = 5432 } },");
	free(text);
	text = show_line(&p, "network_rules");
	assert_contains(text, "-- profile, ");
	assert_contains(text, "rules.lua:");
	free(text);

	json = show(&p, PROFILE_PRINT_JSON);
	assert_contains(json, "\"network_allow\":{\"value\":"
	    "[\"pypi.org:443\"],");
	assert_contains(json, "\"compiled\":[{\"rule\":1,\"allow\":"
	    "\"a.example:80\"},{\"rule\":1,\"allow\":\"a.example:443\"},"
	    "{\"rule\":2,\"deny\":\"*:25\"},{\"rule\":3,\"forward\":"
	    "{\"guest\":8000, \"host\":0, \"address\":\"127.0.0.1\"}}]");
	assert_contains(json, "\"network_tcp\":{\"value\":[{\"host\":"
	    "\"127.0.0.1\", \"port\":5432, \"name\":null, \"guest_port\":"
	    "5432}],");
	free(json);

	text = show(&p, 0);
	free(path);
	path = write_file("shown.lua", "%s", text);
	load_ok(&q, path);
	cr_assert_eq(q.nnetwork_allow, 4);
	cr_assert_eq(q.nports, 1);
	again = show(&q, PROFILE_PRINT_BARE);
	free(text);
	text = show(&p, PROFILE_PRINT_BARE);
	cr_assert_str_eq(again, text);
	free(again);
	free(text);
	free(path);
	profile_free(&p);
	profile_free(&q);
}

/* --set network_rules=RULE is a list of one, checked like the file. */
Test(profile, set_network_rules)
{
	static char	*sets[] = { "network=allowlist",
	    "network_rules=ALLOW|TCP|a.example|443|OUT",
	    "network_tcp={{host=\"db.example\",port=5432,name=\"db\"}}" };
	char		*one[1];
	struct profile	 p;
	char		*cause, *line;

	load_ok_set(&p, FIXTURES "/empty.lua", sets, 3);
	cr_assert_eq(p.nnetwork_rules, 1);
	cr_assert_eq(p.nnetwork_allow, 1);
	cr_assert_str_eq(p.network_allow[0].text, "a.example:443");
	cr_assert_eq(p.nnetwork_tcp, 1);
	cr_assert_str_eq(p.network_tcp[0].name, "db");
	line = show_line(&p, "network_rules");
	assert_contains(line, "-- command line, --set network_rules=");
	free(line);
	profile_free(&p);

	/* With the default network, DENY and IN are fine: they document. */
	one[0] = "network_rules={\"DENY|TCP|*|25|OUT\", "
	    "\"ALLOW|TCP|*|22|IN\"}";
	load_ok_set(&p, FIXTURES "/empty.lua", one, 1);
	cr_assert_eq(p.network, NET_MODE_RESTRICTED);
	cr_assert_eq(p.nnetwork_allow, 1);
	cr_assert(p.network_allow[0].deny);
	cr_assert_eq(p.nports, 1);
	cr_assert_eq(p.ports[0].guest, 22);
	profile_free(&p);

	one[0] = "network_rules=ALLOW|TCP|a.example|443|OUT";
	cause = load_fails_set(FIXTURES "/empty.lua", one, 1);
	cr_assert_str_eq(cause, "--set network_rules=ALLOW|TCP|a.example|443|"
	    "OUT: network_rules[1]: ALLOW ... OUT needs network = "
	    "\"allowlist\", and network is \"restricted\"; write network = "
	    "\"allowlist\" for qsup to let the rules through");
	free(cause);
}

/* -------------------------------------------------------------------------
 * Finding a profile by name.
 */

Test(profile, find_by_name)
{
	struct profile	 p;
	char		*cause, *dir, *want;

	xasprintf(&dir, "%s/work", tmpdir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_assert_eq(chdir(dir), 0);

	/* Built-in, when nothing nearer has the name. */
	load_ok(&p, "ci");
	cr_assert_str_eq(p.path, "builtin:ci");
	profile_free(&p);
	/* $XDG_CONFIG_HOME/qsup/profiles/NAME.lua. */
	want = write_file("qsup/profiles/ci.lua", "return { cpus = 3 }\n");
	load_ok(&p, "ci");
	cr_assert_str_eq(p.path, want);
	cr_assert_eq(p.cpus, 3);
	profile_free(&p);
	free(want);
	/* ./NAME.lua first. */
	want = write_file("work/ci.lua", "return { cpus = 2 }\n");
	load_ok(&p, "ci");
	cr_assert_str_eq(p.path, "ci.lua");
	cr_assert_eq(p.cpus, 2);
	profile_free(&p);
	load_ok(&p, "ci.lua");
	cr_assert_str_eq(p.path, "ci.lua");
	profile_free(&p);
	/* And builtin:NAME outright. */
	load_ok(&p, "builtin:ci");
	cr_assert_str_eq(p.path, "builtin:ci");
	profile_free(&p);
	free(want);

	cr_assert_null(profile_find("nosuch", &cause));
	assert_contains(cause, "profile nosuch not found: there is no "
	    "./nosuch.lua nor ");
	assert_contains(cause, "the built-in profiles are default, ci, dev, "
	    "python, nested-container");
	free(cause);
	cr_assert_null(profile_find("builtin:nosuch", &cause));
	free(cause);
	free(dir);
}

/* -------------------------------------------------------------------------
 * Host facts: the Python a shell would run.
 */

static void
make_exec(const char *name, const char *text)
{
	char	*path = write_file(name, "%s", text);

	cr_assert_eq(chmod(path, 0755), 0);
	free(path);
}

static void
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

static void
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

Test(profile, python_by_its_link)
{
	struct facts_python	py;
	char			*want;

	make_exec("opt/py/bin/python3.12", "#!/bin/sh\nexit 1\n");
	make_link("python3.12", "opt/py/bin/python3");
	set_path("empty:opt/py/bin");
	cr_assert_eq(facts_python(&py), 0);
	xasprintf(&want, "%s/opt/py/bin/python3", tmpdir);
	cr_assert_str_eq(py.path, want);
	free(want);
	xasprintf(&want, "%s/opt/py/bin/python3.12", tmpdir);
	cr_assert_str_eq(py.executable, want);
	free(want);
	cr_assert_str_eq(py.version, "3.12");
	xasprintf(&want, "%s/opt/py", tmpdir);
	cr_assert_str_eq(py.prefix, want);
	free(want);
	cr_assert_null(py.venv);
	facts_python_free(&py);
}

Test(profile, python_in_a_venv)
{
	struct facts_python	py;
	char			*want;

	make_exec("opt/py/bin/python3.11", "#!/bin/sh\nexit 1\n");
	free(write_file("venv/pyvenv.cfg", "home = x\n"));
	xasprintf(&want, "%s/opt/py/bin/python3.11", tmpdir);
	make_link(want, "venv/bin/python3");
	free(want);
	set_path("venv/bin");
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.11");
	xasprintf(&want, "%s/venv", tmpdir);
	cr_assert_str_eq(py.venv, want);
	free(want);
	facts_python_free(&py);
}

/* pyenv's shims are read, not run: PYENV_VERSION, then the version file. */
Test(profile, python_through_pyenv)
{
	struct facts_python	py;
	char			*shim, *want;

	xasprintf(&shim, "#!/usr/bin/env bash\nset -e\n"
	    "export PYENV_ROOT=\"%s/pyenv\"\n"
	    "exec \"%s/pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n",
	    tmpdir, tmpdir);
	make_exec("pyenv/shims/python3", shim);
	free(shim);
	make_exec("pyenv/versions/3.10.4/bin/python3.10", "");
	make_link("python3.10", "pyenv/versions/3.10.4/bin/python3");
	make_exec("pyenv/versions/3.13.1/bin/python3.13", "");
	make_link("python3.13", "pyenv/versions/3.13.1/bin/python3");
	free(write_file("pyenv/version", "3.10.4\n"));
	make_exec("usr/bin/python3.9", "");
	make_link("python3.9", "usr/bin/python3");
	set_path("pyenv/shims:usr/bin");
	unsetenv("PYENV_VERSION");
	cr_assert_eq(chdir(tmpdir), 0);

	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.10");
	xasprintf(&want, "%s/pyenv/versions/3.10.4", tmpdir);
	cr_assert_str_eq(py.prefix, want);
	free(want);
	facts_python_free(&py);

	free(write_file(".python-version", "3.13.1\n"));
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.13", ".python-version wins");
	facts_python_free(&py);

	setenv("PYENV_VERSION", "system", 1);
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.9", "system: the next on PATH");
	facts_python_free(&py);
}

/* A python3 whose name says nothing is asked, once, with a deadline. */
Test(profile, python_asked)
{
	struct facts_python	py;

	make_exec("bin/python3", "#!/bin/sh\necho 3.8\n"
	    "echo /opt/python/bin/python3.8\n");
	set_path("bin");
	cr_assert_eq(facts_python(&py), 0);
	cr_assert_str_eq(py.version, "3.8");
	cr_assert_str_eq(py.executable, "/opt/python/bin/python3.8");
	cr_assert_str_eq(py.prefix, "/opt/python");
	facts_python_free(&py);

	set_path("empty");
	cr_assert_eq(facts_python(&py), -1, "no python3 at all");
}

/* python.lua, with a Python of our making: it loads and resolves. */
Test(profile, python_profile)
{
	struct profile	 p;
	char		*want;

	make_exec("opt/py/bin/python3.12", "");
	make_link("python3.12", "opt/py/bin/python3");
	set_path("opt/py/bin");
	load_ok(&p, "profiles/python.lua");
	/* The default guest: no image; the interpreter on the host's glibc. */
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_NONE);
	cr_assert_eq(p.nshares, 4);
	xasprintf(&want, "%s/opt/py", tmpdir);
	cr_assert_str_eq(p.shares[0].host, want);
	cr_assert_str_eq(p.shares[0].guest, want);
	cr_assert_eq(p.shares[0].rw, 0);
	free(want);
	cr_assert_str_eq(p.shares[1].guest, "/lib/x86_64-linux-gnu");
	cr_assert_str_eq(p.shares[2].guest, "/lib64");
	cr_assert_str_eq(p.shares[3].guest, "/app");
	cr_assert_str_eq(p.cwd, "/app");
	cr_assert_eq(p.virtfs_security_model, PROFILE_SM_NONE);
	profile_free(&p);

	/* The seed's variable names the image outright. */
	setenv("PYSANDBOXES_QEMU_IMAGE_URL", "https://example.org/x.img", 1);
	load_ok(&p, "profiles/python.lua");
	cr_assert_str_eq(p.image, "https://example.org/x.img");
	profile_free(&p);
}

/* The default profile (and every other) honours the image variables. */
Test(profile, image_variables)
{
	struct profile	 p;
	char		*dir, *path;

	setenv("PYSANDBOXES_QEMU_IMAGE_URL", "https://example.org/a.img", 1);
	setenv("PYSANDBOXES_QEMU_IMAGE_BASE_URL", "https://example.org/", 1);
	xasprintf(&dir, "%s/images", tmpdir);
	setenv("PYSANDBOXES_VM_IMAGES_DIR", dir, 1);
	load_ok(&p, NULL);
	cr_assert_str_eq(p.image, "https://example.org/a.img");
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_URL);
	cr_assert_str_eq(p.image_base_url, "https://example.org/");
	cr_assert_str_eq(p.images_dir, dir);
	profile_free(&p);

	setenv("QSUP_IMAGE", "debian-12", 1);
	load_ok(&p, FIXTURES "/empty.lua");
	cr_assert_str_eq(p.image, "debian-12", "qsup's own wins");
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_NAME);
	profile_free(&p);

	/* A profile cannot take qsup.env away from the defaults. */
	path = write_file("clobber.lua", "qsup = nil\nreturn {}\n");
	load_ok(&p, path);
	cr_assert_str_eq(p.image, "debian-12");
	profile_free(&p);
	free(path);
	free(dir);
}

/* -------------------------------------------------------------------------
 * extra_args and network rules on their own.
 */

static int
args_ok(const char *first, ...)
{
	va_list	  ap;
	char	**v = NULL, *why;
	size_t	  n = 0, i = 0;
	int	  rc = 0;

	va_start(ap, first);
	for (; first != NULL; first = va_arg(ap, const char *)) {
		v = xreallocarray(v, n + 1, sizeof *v);
		v[n++] = (char *)(uintptr_t)first;
	}
	va_end(ap);
	while (i < n) {
		if (extra_args_next(v, n, &i, &why) == -1) {
			free(why);
			rc = -1;
		}
	}
	free(v);
	return (rc);
}

Test(profile, extra_args_refused)
{
	char	*link;

	cr_assert_eq(args_ok("-device", "virtio-rng-device", NULL), 0);
	cr_assert_eq(args_ok("-object", "rng-random,id=r,filename=/dev/random",
	    NULL), 0);
	cr_assert_eq(args_ok("-drive", "file=/tmp/disk.img,if=virtio", NULL),
	    0);
	cr_assert_eq(args_ok("-chardev", "null,id=n", NULL), 0);
	cr_assert_eq(args_ok("-serial", "none", NULL), 0);

	cr_assert_eq(args_ok("-virtfs", "local,path=/", NULL), -1);
	cr_assert_eq(args_ok("--virtfs", "local,path=/", NULL), -1);
	cr_assert_eq(args_ok("-virtfs=local,path=/", NULL), -1);
	cr_assert_eq(args_ok("--fsdev=local,path=/", NULL), -1);
	cr_assert_eq(args_ok("-drive", "file=/dev/sda", NULL), -1);
	cr_assert_eq(args_ok("-drive", "if=virtio,file=/dev/sda", NULL), -1);
	cr_assert_eq(args_ok("-drive", "file=../../../../../../dev/sda", NULL),
	    -1);
	cr_assert_eq(args_ok("-drive", "file=json:{\"file\":{\"filename\":"
	    "\"/dev/sda\"}}", NULL), -1);
	cr_assert_eq(args_ok("-blockdev", "{\"driver\":\"host_device\","
	    "\"filename\":\"/tmp/x\"}", NULL), -1);
	cr_assert_eq(args_ok("-blockdev", "{\"filename\":\"\\u002fdev/sda\"}",
	    NULL), -1);
	cr_assert_eq(args_ok("-cdrom", "/dev/sr0", NULL), -1);
	cr_assert_eq(args_ok("-no-hpet", "/dev/sda", NULL), -1,
	    "a bare value is a disk to QEMU");
	cr_assert_eq(args_ok("-chardev", "spawn,id=x", NULL), -1);
	cr_assert_eq(args_ok("-chardev", "id=x,backend=spawn", NULL), -1);
	cr_assert_eq(args_ok("-chardev", "file,id=x,path=/tmp/f", NULL), -1);
	cr_assert_eq(args_ok("-runas", "nobody", NULL), -1);
	cr_assert_eq(args_ok("-monitor", "none", NULL), -1);
	cr_assert_eq(args_ok("-mon", "chardev=x", NULL), -1);
	cr_assert_eq(args_ok("-qmp", "tcp::4444", NULL), -1);
	cr_assert_eq(args_ok("-pidfile", "/tmp/p", NULL), -1);
	cr_assert_eq(args_ok("-daemonize", NULL), -1);
	cr_assert_eq(args_ok("-sandbox", "off", NULL), -1);
	cr_assert_eq(args_ok("--sandbox=off", NULL), -1);
	cr_assert_eq(args_ok("-nic", "user", NULL), -1);
	cr_assert_eq(args_ok("-readconfig", "/tmp/q.cfg", NULL), -1);

	/* A link to a device is a device. */
	xasprintf(&link, "%s/tty", tmpdir);
	cr_assert_eq(symlink("/dev/tty", link), 0);
	cr_assert_eq(args_ok("-drive", link, NULL), -1);
	free(link);
}

Test(profile, network_rules)
{
	struct net_rule	r;
	char			*why;
	static const char	*bad[] = {
		"", "a b", "*", "*.", "foo.*.org", "-a.org", "a-.org", "1.2.3",
		"10.0.0.0/33", "10.0.0.0/0", "10.0.0.1/24", "a.org:0",
		"a.org:70000", "a.org:90-80", "a.org:", ":80", "[::1", "[::1]x",
		"::1/129", "a.org/8", "300.1.1.1",
	};
	size_t			 i;

	cr_assert_eq(net_rule_parse("Deb.Debian.ORG", &r, &why), 0);
	cr_assert_str_eq(r.host, "deb.debian.org");
	cr_assert_str_eq(r.text, "Deb.Debian.ORG");
	cr_assert_eq(r.port_min, 0);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("*.pypi.org:443", &r, &why), 0);
	cr_assert_str_eq(r.host, "*.pypi.org");
	cr_assert_eq(r.port_min, 443);
	cr_assert_eq(r.port_max, 443);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("192.0.2.7", &r, &why), 0);
	cr_assert_null(r.host);
	cr_assert_eq(r.family, AF_INET);
	cr_assert_eq(r.prefix, 32);
	cr_assert_eq(r.addr[3], 7);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("[2001:db8::/32]:1-1024", &r, &why), 0);
	cr_assert_eq(r.family, AF_INET6);
	cr_assert_eq(r.prefix, 32);
	cr_assert_eq(r.port_max, 1024);
	net_rule_free(&r);
	cr_assert_eq(net_rule_parse("::1", &r, &why), 0);
	cr_assert_eq(r.family, AF_INET6);
	net_rule_free(&r);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(net_rule_parse(bad[i], &r, &why), -1, "%s", bad[i]);
		cr_assert_not_null(why);
		cr_assert_null(r.text);
		free(why);
	}
}

/* Compile one socket rule into fresh lists; returns net_rule_compile's. */
static int
compile(const char *text, struct net_rule **v, size_t *nv,
    struct net_port **pt, size_t *npt, char **why)
{
	*v = NULL;
	*pt = NULL;
	*nv = *npt = 0;
	return (net_rule_compile(text, 3, v, nv, pt, npt, why));
}

static void
compiled_free(struct net_rule *v, size_t nv, struct net_port *pt,
    size_t npt)
{
	size_t	i;

	for (i = 0; i < nv; i++)
		net_rule_free(&v[i]);
	free(v);
	for (i = 0; i < npt; i++)
		free(pt[i].address);
	free(pt);
}

/* The seed's socket rules become allow and deny rules, or forwards. */
Test(profile, socket_rules_compile)
{
	static const struct {
		const char	*rule;
		const char	*texts;		/* rules, "|"-joined */
		int		 deny;
	} out[] = {
		{ "ALLOW|TCP|deb.debian.org|80,443|OUT",
		  "deb.debian.org:80|deb.debian.org:443", 0 },
		{ "allow|tcp|Deb.Debian.Org|*|out", "Deb.Debian.Org", 0 },
		{ " ALLOW | TCP | a.example | 8000-8099 | OUT ",
		  "a.example:8000-8099", 0 },
		{ "ALLOW|TCP|10.0.0.0/8|5432|OUT", "10.0.0.0/8:5432", 0 },
		{ "ALLOW|TCP|[2001:db8::/32]|443|OUT",
		  "[2001:db8::/32]:443", 0 },
		{ "ALLOW|TCP|2001:db8::1|443|OUT", "[2001:db8::1]:443", 0 },
		{ "ALLOW|TCP|2001:db8::1|*|OUT", "2001:db8::1", 0 },
		{ "DENY|TCP|*.internal.example|*|OUT",
		  "*.internal.example", 1 },
		{ "Deny|Tcp|*|25,465|Out", "*:25|*:465", 1 },
		{ "DENY|TCP|*|*|OUT", "*", 1 },
	};
	static const struct {
		const char	*rule;
		int		 first, n;
		const char	*address;
	} in[] = {
		{ "ALLOW|TCP|127.0.0.1|8000-8010|IN", 8000, 11, "127.0.0.1" },
		{ "ALLOW|TCP|*|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|192.0.2.5|22|IN", 22, 1, "192.0.2.5" },
		{ "ALLOW|TCP|::1|22|IN", 22, 1, "::1" },
		{ "ALLOW|TCP|localhost|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|ci.example|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|10.0.0.0/8|22|IN", 22, 1, "127.0.0.1" },
		{ "ALLOW|TCP|*|1000-1063|IN", 1000, 64, "127.0.0.1" },
	};
	static const char	*bad[] = {
		"", "ALLOW", "ALLOW|TCP|a.example|443", "ALLOW|TCP|a|1|OUT|x",
		"PERMIT|TCP|a.example|443|OUT", "ALLOW|UDP|a.example|53|OUT",
		"ALLOW|ICMP|a.example|*|OUT", "ALLOW|TCP|a.example|443|BOTH",
		"DENY|TCP|127.0.0.1|22|IN", "ALLOW|TCP|*|443|OUT",
		"ALLOW|TCP|*|*|OUT", "ALLOW|TCP||443|OUT",
		"ALLOW|TCP|a..example|443|OUT",
		"ALLOW|TCP|a.example:80|443|OUT",
		"ALLOW|TCP|[::1]:80|443|OUT", "ALLOW|TCP|10.0.0.1/8|443|OUT",
		"ALLOW|TCP|0.0.0.0/0|443|OUT", "ALLOW|TCP|a.example||OUT",
		"ALLOW|TCP|a.example|80,,443|OUT", "ALLOW|TCP|a.example|0|OUT",
		"ALLOW|TCP|a.example|90-80|OUT", "ALLOW|TCP|a.example|x|OUT",
		"ALLOW|TCP|a.example|65536|OUT", "ALLOW|TCP|127.0.0.1|*|IN",
		"ALLOW|TCP|*|1000-1064|IN",
		/* 65 ports and ranges */
		"ALLOW|TCP|a.example|1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,"
		"17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,"
		"37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,"
		"57,58,59,60,61,62,63,64,65|OUT",
	};
	struct net_rule	*v;
	struct net_port	*pt;
	struct buf		 b = { 0 };
	char			*why;
	size_t			 nv, npt, i, j;

	for (i = 0; i < sizeof out / sizeof out[0]; i++) {
		cr_assert_eq(compile(out[i].rule, &v, &nv, &pt, &npt, &why),
		    0, "%s: %s", out[i].rule, why);
		cr_assert_eq(npt, 0);
		buf_consume(&b, b.len);
		for (j = 0; j < nv; j++) {
			buf_printf(&b, "%s%s", j == 0 ? "" : "|", v[j].text);
			cr_assert_eq(v[j].deny, out[i].deny, "%s", out[i].rule);
			cr_assert_eq(v[j].from_rule, 3);
		}
		cr_assert_str_eq(b.data, out[i].texts, "%s", out[i].rule);
		compiled_free(v, nv, pt, npt);
	}
	buf_free(&b);

	/* What each compiled rule matches: the host and the ports. */
	cr_assert_eq(compile("ALLOW|TCP|Deb.Debian.Org|80,8000-8010|OUT", &v,
	    &nv, &pt, &npt, &why), 0);
	cr_assert_eq(nv, 2);
	cr_assert_str_eq(v[0].host, "deb.debian.org");
	cr_assert_eq(v[0].port_min, 80);
	cr_assert_eq(v[0].port_max, 80);
	cr_assert_eq(v[1].port_min, 8000);
	cr_assert_eq(v[1].port_max, 8010);
	compiled_free(v, nv, pt, npt);
	cr_assert_eq(compile("DENY|TCP|*|25|OUT", &v, &nv, &pt, &npt, &why),
	    0);
	cr_assert_str_eq(v[0].host, "*");
	cr_assert_eq(v[0].family, 0);
	cr_assert_eq(v[0].port_min, 25);
	compiled_free(v, nv, pt, npt);
	cr_assert_eq(compile("DENY|TCP|10.9.0.0/16|*|OUT", &v, &nv, &pt, &npt,
	    &why), 0);
	cr_assert_null(v[0].host);
	cr_assert_eq(v[0].family, AF_INET);
	cr_assert_eq(v[0].prefix, 16);
	cr_assert_eq(v[0].port_min, 0);
	compiled_free(v, nv, pt, npt);

	for (i = 0; i < sizeof in / sizeof in[0]; i++) {
		cr_assert_eq(compile(in[i].rule, &v, &nv, &pt, &npt, &why), 0,
		    "%s: %s", in[i].rule, why);
		cr_assert_eq(nv, 0);
		cr_assert_eq(npt, (size_t)in[i].n, "%s", in[i].rule);
		for (j = 0; j < npt; j++) {
			cr_assert_eq(pt[j].guest, in[i].first + (int)j);
			cr_assert_eq(pt[j].host, 0, "any free host port");
			cr_assert_str_eq(pt[j].address, in[i].address, "%s",
			    in[i].rule);
			cr_assert_eq(pt[j].from_rule, 3);
		}
		compiled_free(v, nv, pt, npt);
	}

	/* Refused: why, and nothing added to what was there. */
	v = xcalloc(1, sizeof *v);
	cr_assert_eq(net_rule_parse("kept.example", &v[0], &why), 0);
	nv = 1;
	pt = xcalloc(1, sizeof *pt);
	pt[0].guest = 80;
	pt[0].address = xstrdup("127.0.0.1");
	npt = 1;
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		why = NULL;
		cr_assert_eq(net_rule_compile(bad[i], 1, &v, &nv, &pt, &npt,
		    &why), -1, "%s", bad[i]);
		cr_assert_not_null(why, "%s", bad[i]);
		cr_assert_eq(nv, 1, "%s", bad[i]);
		cr_assert_eq(npt, 1, "%s", bad[i]);
		free(why);
	}
	cr_assert_str_eq(v[0].text, "kept.example");
	compiled_free(v, nv, pt, npt);
	cr_assert_eq(compile("ALLOW|UDP|a.example|53|OUT", &v, &nv, &pt, &npt,
	    &why), -1);
	assert_contains(why, "DNS");
	free(why);
	cr_assert_eq(compile("DENY|TCP|*|22|IN", &v, &nv, &pt, &npt, &why),
	    -1);
	assert_contains(why, "inbound is closed by default");
	free(why);
}

/* Hosts of network_tcp: a name, or an address where one will do. */
Test(profile, tcp_hosts)
{
	static const char	*names[] = { "db", "DB.Internal", "a-b.c" };
	static const char	*addrs[] = { "127.0.0.1", "::1", "192.0.2.7" };
	static const char	*bad[] = { "", "a b", "*.example", "a..b",
	    "-a", "1.2.3", "10.0.0.0/8", "a.example:80", "[::1]", "a/b",
	    "300.1.1.1" };
	char			*out, *why;
	size_t			 i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		cr_assert_eq(net_rule_parse_host(names[i], 0, &out, &why), 0, "%s",
		    names[i]);
		cr_assert_eq(strcasecmp(out, names[i]), 0);
		cr_assert_eq(strpbrk(out, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"), NULL,
		    "lower case");
		free(out);
		cr_assert_eq(net_rule_parse_host(names[i], NET_RULE_HOST_ADDR, &out,
		    &why), 0, "%s", names[i]);
		free(out);
	}
	for (i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
		cr_assert_eq(net_rule_parse_host(addrs[i], NET_RULE_HOST_ADDR, &out,
		    &why), 0, "%s", addrs[i]);
		cr_assert_str_eq(out, addrs[i]);
		free(out);
		cr_assert_eq(net_rule_parse_host(addrs[i], 0, &out, &why), -1,
		    "%s is not a name", addrs[i]);
		cr_assert_null(out);
		free(why);
	}
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(net_rule_parse_host(bad[i], NET_RULE_HOST_ADDR, &out,
		    &why), -1, "%s", bad[i]);
		cr_assert_null(out);
		cr_assert_not_null(why);
		free(why);
	}
}

/* -------------------------------------------------------------------------
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
	assert_escape_fails("escape-os.lua", 1, "(global 'os')");
	cr_assert_eq(access("/tmp/qsup-escaped", F_OK), -1);
	assert_escape_fails("escape-io.lua", 1, "(global 'io')");
	assert_escape_fails("escape-require.lua", 1, "(global 'require')");
}

Test(profile, escape_dofile_loadfile)
{
	assert_escape_fails("escape-dofile.lua", 1, "(global 'dofile')");
	assert_escape_fails("escape-loadfile.lua", 1, "(global 'loadfile')");
}

Test(profile, escape_bytecode)
{
	assert_escape_fails("escape-dump.lua", 1, "(field 'dump')");
	assert_escape_fails("escape-binary.lua", 4,
	    "attempt to load a binary chunk (mode is 't')");
}

Test(profile, escape_finalizer)
{
	assert_escape_fails("escape-gc.lua", 2, "__gc metamethods are not "
	    "allowed");
}

/* include() is not a way to read a file outside the tree, or a non-profile. */
Test(profile, escape_include)
{
	char	*path, *cause;

	path = write_file("tree/p.lua", "return include(\"../../../../../../"
	    "etc/passwd\")\n");
	cause = load_fails(path);
	assert_contains(cause, "No such file or directory");
	free(cause);
	free(path);
	make_link("/etc/passwd", "tree/pw.lua");
	path = write_file("tree/q.lua", "return include(\"pw\")\n");
	cause = load_fails(path);
	assert_contains(cause, "is outside");
	free(cause);
	free(path);
	path = write_file("tree/r.lua", "return include(\"/etc/passwd\")\n");
	cause = load_fails(path);
	assert_contains(cause, "name a profile of the same directory tree");
	free(cause);
	free(path);
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
	assert_stops_in_time("escape-loop.lua", 3);
}

Test(profile, escape_endless_loop_under_pcall)
{
	assert_stops_in_time("escape-loop-pcall.lua", 3);
}

Test(profile, escape_endless_xpcall_handler)
{
	assert_stops_in_time("escape-xpcall.lua", 3);
}

/* An endless loop in an included profile is stopped there. */
Test(profile, escape_endless_loop_included)
{
	char	*path, *cause;
	double	 t0 = util_now();

	free(write_file("inc/loop.lua", "local n = 0\nwhile true do\n"
	    "\tn = n + 1\nend\n"));
	path = write_file("inc/top.lua", "return pcall(include, \"loop\")\n");
	cause = load_fails(path);
	assert_contains(cause, "inc/loop.lua:3: profile ran for more than 1 s");
	cr_assert_lt(util_now() - t0, 2.0);
	free(cause);
	free(path);
}

Test(profile, escape_memory_churn)
{
	assert_stops_in_time("escape-memory-churn.lua", 6);
}

/*
 * Stuck in C, where no hook runs: the alarm abandons the Lua state soon
 * after the limit, and the process lives on.
 */
Test(profile, escape_pattern)
{
	assert_stops_in_time("escape-pattern.lua", 4);
}

/*
 * A runaway profile of each kind, then a good one, in the same process:
 * nothing of the abandoned states is left over (a leak fails the ASan
 * copy), SIGALRM is as it was, and the next load is unaffected.
 */
Test(profile, runaway_then_load_again)
{
	static const char	*runaway[] = { "escape-pattern.lua",
	    "escape-loop-pcall.lua", "escape-xpcall.lua" };
	struct sigaction	 sa;
	struct profile		 p;
	char			*path;
	size_t			 i;

	for (i = 0; i < sizeof runaway / sizeof runaway[0]; i++) {
		xasprintf(&path, "%s/%s", FIXTURES, runaway[i]);
		free(load_fails(path));
		free(path);
		cr_assert_eq(sigaction(SIGALRM, NULL, &sa), 0);
		cr_assert_eq(sa.sa_handler, SIG_DFL);
		path = write_profile("after.lua", "local s = (\"ab\"):rep(10)\n"
		    "assert(s:find(\"b\") == 2 and s:match(\"(a)b\") == \"a\")\n"
		    "local n = 0\nfor w in s:gmatch(\"ab\") do n = n + 1 end\n"
		    "assert(n == 10)\n"
		    "assert(s:gsub(\"a\", { a = \"x\" }):sub(1, 2) == \"xb\")\n"
		    "assert(s:gsub(\"(a)(b)\", function(a, b) return b .. a end)"
		    ":sub(1, 2) == \"ba\")\n"
		    "return { memory = 1024 }\n");
		load_ok(&p, path);
		cr_assert_eq(p.memory_mib, 1024);
		profile_free(&p);
		free(path);
	}
}

/* Library calls that would spin in C are answered, or refused, at once. */
Test(profile, escape_c_loops)
{
	struct profile	 p;
	char		*path, *cause;
	double		 t0 = util_now();

	path = write_profile("rep.lua", "local s = string.rep(\"\", 1e15)\n"
	    "assert(s == \"\" and (\"\"):rep(2^62, \"\") == \"\")\n"
	    "assert(string.rep(\"ab\", 3, \",\") == \"ab,ab,ab\")\n"
	    "assert(table.move({ 1, 2, 3 }, 1, 3, 2)[4] == 3)\n"
	    "return {}\n");
	load_ok(&p, path);
	profile_free(&p);
	free(path);
	path = write_profile("move.lua",
	    "table.move({}, 1, math.maxinteger - 1, 2)\nreturn {}\n");
	cause = load_fails(path);
	assert_contains(cause, "move.lua:1: table.move: more than 16777216 "
	    "elements");
	free(cause);
	free(path);
	cr_assert_lt(util_now() - t0, 0.5);
}

Test(profile, escape_memory)
{
	double	t0 = util_now();

	assert_escape_fails("escape-memory.lua", 4, "needs more than 64 MiB "
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
	char		*path, *want;

	path = write_profile("print.lua", "print(\"memory is\", 1024)\n"
	    "return { memory = 1024 }\n");
	load_ok(&p, path);
	profile_free(&p);
	fflush(stdout);
	fflush(stderr);
	cr_assert_stdout_eq_str("");
	xasprintf(&want, "qsup: %s:1: memory is\t1024\n", path);
	cr_assert_stderr_eq_str(want);
	free(want);
	free(path);
}

/* A print() loop cannot flood stderr: a budget, then one line. */
Test(profile, print_is_capped, .init = capture_output)
{
	struct profile	 p;
	char		*path, buf[4096];
	FILE		*f;
	size_t		 n, total = 0;
	int		 cut = 0;

	/* The line is made once: string.rep copies byte by byte. */
	path = write_profile("flood.lua", "local s = string.rep(\"x\", 640)\n"
	    "for i = 1, 100000 do print(s) end\nreturn {}\n");
	load_ok(&p, path);
	profile_free(&p);
	fflush(stderr);
	f = cr_get_redirected_stderr();
	while (fgets(buf, sizeof buf, f) != NULL) {
		n = strlen(buf);
		total += n;
		if (strstr(buf, "print(): output cut after") != NULL)
			cut++;
	}
	cr_assert_eq(cut, 1, "no single line saying output was cut");
	cr_assert_lt(total, 64 * 1024, "%zu bytes printed", total);
	free(path);
}

Test(profile, help_lists_every_setting)
{
	static const char	*names[] = { "use_kvm", "memory", "cpus",
	    "start_timeout", "timeout", "show_boot_console", "console_log",
	    "console_on_failure", "warm_start", "template_ram",
	    "template_cache_max", "serve_max_sandboxes", "serve_max_memory",
	    "serve_max_body", "serve_max_header", "serve_max_connections",
	    "serve_max_connections_per_address", "serve_max_unauthenticated",
	    "serve_head_timeout", "serve_idle_timeout", "serve_body_timeout",
	    "boot", "kernel", "initramfs", "image",
	    "image_base_url", "images_dir", "image_sha256", "image_unverified",
	    "disk_size", "env", "cwd", "shares", "virtfs",
	    "virtfs_security_model", "virtfs_cache", "ld_closure_libs",
	    "ld_closure_extra", "network", "network_allow", "network_open_ack",
	    "ports", "network_tcp", "network_rules", "guest_firewall",
	    "extra_args" };
	struct buf		 b = { 0 };
	char			*want;
	size_t			 i;

	cr_assert_eq(sizeof names / sizeof names[0], NSETTINGS);
	profile_help(&b);
	for (i = 0; i < sizeof names / sizeof names[0]; i++) {
		xasprintf(&want, "%s = ", names[i]);
		assert_contains(b.data, want);
		free(want);
	}
	buf_free(&b);
}

/* -------------------------------------------------------------------------
 * Disk images: image_sha256, image_unverified, disk_size, the catalog
 * (qsup.images) and what image resolves to.
 */

/* The catalog's name for this host's architecture, or NULL. */
static const char *
catalog_arch(void)
{
	if (strcmp(facts_arch(), "x86_64") == 0)
		return ("amd64");
	if (strcmp(facts_arch(), "aarch64") == 0)
		return ("arm64");
	return (NULL);
}

/* Load "return { image = "debian-12", LUA }", which must work. */
static void
load_image_ok(struct profile *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*lua, *path;

	va_start(ap, fmt);
	xvasprintf(&lua, fmt, ap);
	va_end(ap);
	path = write_profile("image.lua", "return {\n\timage = "
	    "\"debian-12\",\n\t%s,\n}\n", lua);
	load_ok(p, path);
	free(path);
	free(lua);
}

/* The same, which must fail on line 3 with want in its one message. */
static void
load_image_fails(const char *lua, const char *want)
{
	char	*path, *cause, *where;

	path = write_profile("image.lua", "return {\n\timage = "
	    "\"debian-12\",\n\t%s,\n}\n", lua);
	cause = load_fails(path);
	xasprintf(&where, "%s:3: ", path);
	cr_assert_eq(strncmp(cause, where, strlen(where)), 0, "%s: %s", lua,
	    cause);
	assert_contains(cause, want);
	cr_assert_null(strchr(cause, '\n'), "one error: %s", cause);
	free(where);
	free(cause);
	free(path);
}

Test(profile, image_sha256)
{
	static const struct {
		const char	*lua;
		const char	*want;
	} bad[] = {
		{ "\"abc\"", "is not 64 hexadecimal digits" },
		{ "\"\"", "is not valid" },
		{ "42", "is not valid" },
		{ "true", "is not valid" },
		{ "string.rep(\"0\", 63)", "is not 64 hexadecimal digits" },
		{ "string.rep(\"0\", 65)", "is not 64 hexadecimal digits" },
		{ "string.rep(\"g\", 64)", "is not 64 hexadecimal digits" },
		{ "\"sha256:\" .. string.rep(\"0\", 64)",
		  "(write the digits without \"sha256:\")" },
		{ "string.rep(\"0\", 64) .. \"  debian-12.qcow2\"",
		  "(write the 64 digits alone, without the file name)" },
		{ "string.rep(\"0\", 128)", "(that is a SHA-512 digest" },
		{ "string.rep(\"0\", 63) .. \"\\0\"", "is not valid" },
	};
	struct profile	 p;
	char		*line, *want;
	size_t		 i;

	load_image_ok(&p, "image_sha256 = string.rep(\"aB\", 32)");
	want = xstrdup("abababababababababababababababababababababababababab"
	    "abababababab");
	cr_assert_str_eq(p.image_sha256, want, "in lower case");
	line = show_line(&p, "image_sha256");
	assert_contains(line, want);
	free(line);
	free(want);
	profile_free(&p);
	cr_assert_null(p.image_sha256);

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		xasprintf(&want, "image_sha256 = %s", bad[i].lua);
		load_image_fails(want, bad[i].want);
		load_image_fails(want, "image_sha256: ");
		load_image_fails(want, "expected a SHA-256 digest: 64 "
		    "hexadecimal digits");
		free(want);
	}
	/* The variable, read by the default. */
	setenv("QSUP_IMAGE", "debian-12", 1);
	setenv("QSUP_IMAGE_SHA256", "0123456789ABCDEF0123456789ABCDEF"
	    "0123456789ABCDEF0123456789ABCDEF", 1);
	load_ok(&p, NULL);
	cr_assert_str_eq(p.image_sha256, "0123456789abcdef0123456789abcdef"
	    "0123456789abcdef0123456789abcdef");
	profile_free(&p);
	unsetenv("QSUP_IMAGE_SHA256");
	unsetenv("QSUP_IMAGE");
}

Test(profile, image_unverified)
{
	struct profile	 p;

	load_image_ok(&p, "cpus = 1");
	cr_assert_eq(p.image_unverified, 0, "refused unless told");
	profile_free(&p);
	load_image_ok(&p, "image_unverified = true");
	cr_assert_eq(p.image_unverified, 1);
	profile_free(&p);
	load_image_fails("image_unverified = \"yes\"",
	    "image_unverified: \"yes\" is not valid (write true, without "
	    "quotes); expected true or false");
	load_image_fails("image_unverified = 1", "expected true or false");
}

Test(profile, disk_size_forms)
{
	static const struct {
		const char	*lua;
		uint64_t	 bytes;
		const char	*shown;
	} ok[] = {
		{ "\"10G\"", (uint64_t)10 << 30, "\"10G\"" },
		{ "\"512M\"", (uint64_t)512 << 20, "\"512M\"" },
		{ "\"512m\"", (uint64_t)512 << 20, "\"512M\"" },
		{ "\"1.5G\"", (uint64_t)1536 << 20, "\"1536M\"" },
		{ "\"2T\"", (uint64_t)2 << 40, "\"2T\"" },
		{ "\"1M\"", (uint64_t)1 << 20, "\"1M\"" },
		{ "\"1025k\"", (uint64_t)1025 << 10, "\"1025k\"" },
		{ "10737418240", (uint64_t)10 << 30, "\"10G\"" },
		{ "1048576.0", (uint64_t)1 << 20, "\"1M\"" },
		{ "\"1049088\"", 1049088, "1049088" },	/* bytes, not MiB */
		{ "1049088", 1049088, "1049088" },
	};
	struct profile	 p;
	char		*line, *want;
	size_t		 i;

	for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		load_image_ok(&p, "disk_size = %s", ok[i].lua);
		cr_assert_eq(p.disk_size, ok[i].bytes, "%s: %llu", ok[i].lua,
		    (unsigned long long)p.disk_size);
		line = show_line(&p, "disk_size");
		xasprintf(&want, "disk_size = %s,", ok[i].shown);
		cr_assert_eq(strncmp(line, want, strlen(want)), 0, "%s", line);
		free(want);
		free(line);
		profile_free(&p);
	}
	load_image_ok(&p, "cpus = 1");
	cr_assert_eq(p.disk_size, 0, "the base image's own");
	line = show_line(&p, "disk_size");
	cr_assert_eq(strncmp(line, "disk_size = nil,", 16), 0, "%s", line);
	free(line);
	profile_free(&p);
}

/* Refused loudly, saying what would be taken; never rounded. */
Test(profile, disk_size_refused)
{
	static const struct {
		const char	*lua;
		const char	*want;
	} bad[] = {
		{ "\"10GB\"", "\"10GB\" is not a size (write \"10G\")" },
		{ "\"10GiB\"", "is not a size (write \"10G\")" },
		{ "\"10 G\"", "is not a size (write \"10G\")" },
		{ "\"G\"", "is not a size" },
		{ "\"\"", "is not a size" },
		{ "\"-1G\"", "is not a size" },
		{ "\"10G\\0\"", "is not a size" },
		{ "\"2P\"", "is not a size" },
		{ "\"1048577\"", "is not a multiple of 512 bytes" },
		{ "1048577", "is not a multiple of 512 bytes" },
		{ "\"1.0000001G\"", "is not a whole number of bytes" },
		{ "1048576.5", "is not a whole number of bytes" },
		{ "0", "is out of range" },
		{ "\"0\"", "is out of range" },
		{ "-1", "is out of range" },
		{ "\"512k\"", "is out of range" },
		{ "\"3T\"", "is out of range" },
		{ "\"2049G\"", "is out of range" },
		{ "\"99999999999999999999\"", "is out of range" },
		{ "1e300", "is out of range" },
		{ "0/0", "is not a whole number of bytes" },
		{ "true", "is not valid" },
		{ "{}", "is not valid" },
	};
	char	*lua;
	size_t	 i;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		xasprintf(&lua, "disk_size = %s", bad[i].lua);
		load_image_fails(lua, bad[i].want);
		load_image_fails(lua, "disk_size: ");
		load_image_fails(lua, "a multiple of 512 bytes, from 1M to 2T");
		free(lua);
	}
}

/* Settings that would do nothing are refused, not ignored. */
Test(profile, image_settings_need_an_image)
{
	char	*path, *cause, *want;

	path = write_profile("needs.lua", "return {\n"
	    "\tdisk_size = \"10G\",\n"
	    "\timage_sha256 = string.rep(\"0\", 64),\n}\n");
	cause = load_fails(path);
	xasprintf(&want, "%s:2: disk_size: the built-in guest has no disk; "
	    "set image too\n%s:3: image_sha256: pins a downloaded image, and "
	    "image is nil (the built-in guest)", path, path);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	path = write_profile("needs.lua", "return {\n"
	    "\timage = \"%s/" FIXTURES "/files/vmlinuz\",\n"
	    "\timage_sha256 = string.rep(\"0\", 64),\n"
	    "\tdisk_size = \"10G\",\n}\n", top);
	cause = load_fails(path);
	xasprintf(&want, "%s:3: image_sha256: pins a downloaded image, and "
	    "image is a file (nothing is downloaded)", path);
	cr_assert_str_eq(cause, want, "a file image takes a disk_size");
	free(want);
	free(cause);
	free(path);
}

/* A profile of image settings only, loaded. */
static void
load_images(struct profile *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*lua, *path;

	va_start(ap, fmt);
	xvasprintf(&lua, fmt, ap);
	va_end(ap);
	path = write_profile("resolve.lua", "return {\n%s\n}\n", lua);
	load_ok(p, path);
	free(path);
	free(lua);
}

/* image = NAME: the catalog's URLs for this host; a mirror's; its glibc. */
Test(profile, image_names_resolve)
{
	struct profile	 p;
	const char	*arch;
	char		*want, *text;

	if ((arch = catalog_arch()) == NULL)
		cr_skip_test("the catalog has no images for %s", facts_arch());

	load_images(&p, "image = \"debian-12\"");
	xasprintf(&want, "https://cloud.debian.org/images/cloud/bookworm/"
	    "latest/debian-12-generic-%s.qcow2", arch);
	cr_assert_str_eq(p.image_url, want);
	free(want);
	cr_assert_str_eq(p.image_sums_url, "https://cloud.debian.org/images/"
	    "cloud/bookworm/latest/SHA512SUMS");
	cr_assert_str_eq(p.image_glibc, "2.36");
	/* show says what it resolved to, as comments that load back. */
	text = show(&p, 0);
	xasprintf(&want, "\n\t-- image_url = \"https://cloud.debian.org/"
	    "images/cloud/bookworm/latest/debian-12-generic-%s.qcow2\",\n"
	    "\t-- image_sums_url = \"https://cloud.debian.org/images/cloud/"
	    "bookworm/latest/SHA512SUMS\",\n\t-- image_glibc = \"2.36\",\n",
	    arch);
	assert_contains(text, want);
	free(want);
	free(text);
	text = show(&p, PROFILE_PRINT_JSON);
	assert_contains(text, "\"sums_url\":\"https://cloud.debian.org/"
	    "images/cloud/bookworm/latest/SHA512SUMS\",\"glibc\":\"2.36\"}");
	free(text);
	profile_free(&p);
	cr_assert_null(p.image_url);
	cr_assert_null(p.image_sums_url);
	cr_assert_null(p.image_glibc);

	load_images(&p, "image = \"ubuntu-24.04\"");
	xasprintf(&want, "https://cloud-images.ubuntu.com/releases/24.04/"
	    "release/ubuntu-24.04-server-cloudimg-%s.img", arch);
	cr_assert_str_eq(p.image_url, want);
	free(want);
	cr_assert_str_eq(p.image_sums_url, "https://cloud-images.ubuntu.com/"
	    "releases/24.04/release/SHA256SUMS");
	cr_assert_str_eq(p.image_glibc, "2.39");
	profile_free(&p);

	/* A mirror: the catalog's file name there, its sums beside it. */
	load_images(&p, "image = \"ubuntu-22.04\", image_base_url = "
	    "\"https://mirror.example/vm\"");
	xasprintf(&want, "https://mirror.example/vm/ubuntu-22.04-server-"
	    "cloudimg-%s.img", arch);
	cr_assert_str_eq(p.image_url, want);
	free(want);
	cr_assert_str_eq(p.image_sums_url, "https://mirror.example/vm/"
	    "SHA256SUMS");
	cr_assert_str_eq(p.image_glibc, "2.35", "the same file");
	profile_free(&p);
	load_images(&p, "image = \"debian-13\", image_base_url = "
	    "\"http://10.0.0.1:8080/images/\"");
	xasprintf(&want, "http://10.0.0.1:8080/images/debian-13-generic-"
	    "%s.qcow2", arch);
	cr_assert_str_eq(p.image_url, want, "one slash");
	free(want);
	cr_assert_str_eq(p.image_sums_url, "http://10.0.0.1:8080/images/"
	    "SHA512SUMS");
	profile_free(&p);

	/* A name the catalog lacks: the mirror's file of that name. */
	load_images(&p, "image = \"my-image.qcow2\", image_base_url = "
	    "\"https://mirror.example/vm/\"");
	cr_assert_str_eq(p.image_url, "https://mirror.example/vm/"
	    "my-image.qcow2");
	cr_assert_null(p.image_sums_url, "beside it");
	cr_assert_null(p.image_glibc, "not known");
	text = show(&p, 0);
	assert_contains(text, "\n\t-- image_sums_url = nil,");
	assert_contains(text, "-- SHA256SUMS or SHA512SUMS beside it\n");
	free(text);
	profile_free(&p);
}

Test(profile, image_unknown_name)
{
	char	*path, *cause, *want;

	path = write_profile("unknown.lua", "return {\n"
	    "\timage = \"ubuntu-2404\",\n}\n");
	cause = load_fails(path);
	xasprintf(&want, "%s:2: image: \"ubuntu-2404\" is not in qsup's "
	    "catalog (did you mean \"ubuntu-24.04\"?); it has debian-12, "
	    "debian-13, ubuntu-22.04, ubuntu-23.04, ubuntu-24.04, "
	    "ubuntu-25.04, ubuntu-25.10, ubuntu-26.04; set image_base_url to "
	    "take it from "
	    "a mirror, or give an http(s) URL or a file", path);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	/* From --set too, named as such. */
	path = write_profile("unknown.lua", "return {}\n");
	cause = load_fails_set(path, (char *[]){ "image=centos-9" }, 1);
	cr_assert_eq(strncmp(cause, "--set image=centos-9: image: "
	    "\"centos-9\" is not in qsup's catalog; it has debian-12, ", 76),
	    0, "%s", cause);
	free(cause);
	free(path);
}

Test(profile, image_url_and_file_resolve)
{
	struct profile	 p;
	char		 real[PATH_MAX];

	load_images(&p, "image = \"https://example.org/x/disk.img\"");
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_URL);
	cr_assert_str_eq(p.image_url, "https://example.org/x/disk.img");
	cr_assert_null(p.image_sums_url, "beside it");
	cr_assert_null(p.image_glibc);
	profile_free(&p);

	load_images(&p, "image = \"%s/" FIXTURES "/files/vmlinuz\", "
	    "disk_size = \"2G\"", top);
	cr_assert_eq(p.image_kind, PROFILE_IMAGE_FILE);
	cr_assert_not_null(realpath(FIXTURES "/files/vmlinuz", real));
	cr_assert_str_eq(p.image, real);
	cr_assert_null(p.image_url, "nothing to download");
	cr_assert_null(p.image_sums_url);
	cr_assert_eq(p.disk_size, (uint64_t)2 << 30);
	profile_free(&p);

	load_images(&p, "cpus = 1");
	cr_assert_null(p.image_url, "the built-in guest");
	cr_assert_null(p.image_glibc);
	profile_free(&p);
}

/* Every name in the catalog resolves, for both of its architectures. */
Test(profile, catalog_entries)
{
	struct profile	 p;

	load_ok(&p, FIXTURES "/images.lua");
	cr_assert_str_eq(p.image, "ubuntu-24.04");
	cr_assert_eq(p.disk_size, (uint64_t)10 << 30);
	cr_assert_eq(p.image_unverified, 1);
	profile_free(&p);

	load_images(&p, "env = { NAMES = table.concat(qsup.images.names, "
	    "\",\"), N = #qsup.images.names,\n"
	    "\tARM = qsup.images[\"debian-13\"].url.arm64,\n"
	    "\tUARM = qsup.images[\"ubuntu-25.10\"].sums.arm64 }");
	cr_assert_eq(p.nenv, 4);
	cr_assert_str_eq(p.env[0], "ARM=https://cloud.debian.org/images/cloud/"
	    "trixie/latest/debian-13-generic-arm64.qcow2");
	cr_assert_str_eq(p.env[1], "N=8");
	cr_assert_str_eq(p.env[2], "NAMES=debian-12,debian-13,ubuntu-22.04,"
	    "ubuntu-23.04,ubuntu-24.04,ubuntu-25.04,ubuntu-25.10,ubuntu-26.04");
	cr_assert_str_eq(p.env[3], "UARM=https://cloud-images.ubuntu.com/"
	    "releases/25.10/release/SHA256SUMS");
	profile_free(&p);
}

/* The seed's Python -> image table, and with the host's glibc. */
Test(profile, catalog_for_python)
{
	static const struct {
		const char	*call;
		const char	*want;
	} cases[] = {
		{ "\"3.11\"", "ubuntu-23.04" },
		{ "\"3.12\"", "ubuntu-24.04" },
		{ "\"3.13\"", "ubuntu-25.04" },
		{ "\"3.14\"", "ubuntu-25.04" },
		{ "\"3.12.3\"", "ubuntu-24.04" },
		{ "\"3.11\", \"2.36\"", "debian-12" },	/* 23.04 has 2.37 */
		{ "\"3.11\", \"2.37\"", "ubuntu-23.04" },
		{ "\"3.11\", \"2.41\"", "ubuntu-23.04" },
		{ "\"3.12\", \"2.39\"", "ubuntu-24.04" },
		{ "\"3.12\", \"2.40\"", "ubuntu-24.04" },
		{ "\"3.12\", \"2.38\"", "nil no image of qsup's catalog has "
		  "Python 3.12 and a glibc no newer than 2.38 (ubuntu-24.04 "
		  "has 2.39)" },
		{ "\"3.13\", \"2.41\"", "ubuntu-25.04" },
		{ "\"3.13\", \"2.36\"", "nil no image of qsup's catalog has "
		  "Python 3.13 and a glibc no newer than 2.36 (ubuntu-25.04 "
		  "has 2.41)" },
		{ "\"3.11\", \"10.1\"", "ubuntu-23.04" },  /* numbers, not text */
		{ "\"3.9\"", "nil no image of qsup's catalog is mapped to "
		  "Python 3.9 (mapped: 3.11, 3.12, 3.13, 3.14)" },
	};
	struct profile	 p;
	char		*want;
	size_t		 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		load_images(&p, "env = { R = (function(a, b) return "
		    "tostring(a) .. (b and \" \" .. b or \"\") end)("
		    "qsup.images.for_python(%s)) }", cases[i].call);
		xasprintf(&want, "R=%s", cases[i].want);
		cr_assert_str_eq(p.env[0], want, "for_python(%s)",
		    cases[i].call);
		free(want);
		profile_free(&p);
	}
	/* As the data, and as the image. */
	load_images(&p, "image = qsup.images.for_python(\"3.12\"),\n"
	    "env = { T = qsup.images.python[\"3.13\"] }");
	cr_assert_str_eq(p.image, "ubuntu-24.04");
	cr_assert_str_eq(p.image_glibc, "2.39");
	cr_assert_str_eq(p.env[0], "T=ubuntu-25.04");
	profile_free(&p);
	/* With this host's own glibc: never an image with a newer one. */
	load_images(&p, "image = qsup.images.for_python(\"3.11\", "
	    "qsup.glibc) or qsup.images.default");
	cr_assert_not_null(p.image_glibc);
	profile_free(&p);
}

/* Wrong arguments are the profile's error, at its line. */
Test(profile, catalog_for_python_refused)
{
	static const struct {
		const char	*call;
		const char	*want;
	} cases[] = {
		{ "3.12", "the Python version is a string (\"3.12\"), not a "
		  "number" },
		{ "", "the Python version is a string (\"3.12\"), not a nil" },
		{ "\"python3\"", "\"python3\" is not a Python version "
		  "(\"3.12\")" },
		{ "\"3.12\", 2.36", "the glibc version is a string (\"2.36\", "
		  "as qsup.glibc), not a number" },
		{ "\"3.12\", \"new\"", "the glibc version is a string "
		  "(\"2.36\", as qsup.glibc), not \"new\"" },
	};
	char	*path, *cause, *want;
	size_t	 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		path = write_profile("py.lua", "local x = 1\n"
		    "return { image = qsup.images.for_python(%s) }\n",
		    cases[i].call);
		cause = load_fails(path);
		xasprintf(&want, "%s:2: qsup.images.for_python: %s", path,
		    cases[i].want);
		cr_assert_str_eq(cause, want);
		free(want);
		free(cause);
		free(path);
	}
}

/*
 * qsup.images is read-only, and what a profile does to its view, its
 * globals or the string library never reaches what the loader resolves.
 */
Test(profile, catalog_read_only)
{
	static const char	*writes[] = {
		"qsup.images.default = \"evil\"",
		"qsup.images[\"debian-12\"].url.amd64 = \"https://evil.example/\"",
		"qsup.images.entries[\"debian-12\"].glibc = \"9.99\"",
		"table.insert(qsup.images.names, \"evil\")",
		"setmetatable(qsup.images, nil)",
		"getmetatable(qsup.images).__index = {}",
	};
	struct profile	 p;
	const char	*arch;
	char		*path, *cause, *want;
	size_t		 i;

	for (i = 0; i < sizeof writes / sizeof writes[0]; i++) {
		path = write_profile("ro.lua", "local x = 1\n%s\n"
		    "return {}\n", writes[i]);
		cause = load_fails(path);
		xasprintf(&want, "%s:2: ", path);
		cr_assert_eq(strncmp(cause, want, strlen(want)), 0, "%s: %s",
		    writes[i], cause);
		cr_assert_null(strchr(cause, '\n'), "%s", cause);
		free(want);
		free(cause);
		free(path);
	}
	path = write_profile("ro.lua", "qsup.images.default = 1\n"
	    "return {}\n");
	cause = load_fails(path);
	xasprintf(&want, "%s:1: qsup.images is read-only; copy what you "
	    "change into a table of your own", path);
	cr_assert_str_eq(cause, want);
	free(want);
	free(cause);
	free(path);

	/* rawset() changes a view only; string.match is the catalog's own. */
	path = write_profile("ro.lua", "local e = qsup.images[\"debian-12\"]\n"
	    "rawset(e.url, \"amd64\", \"https://evil.example/a\")\n"
	    "rawset(e.url, \"arm64\", \"https://evil.example/b\")\n"
	    "rawset(qsup.images.entries, \"debian-12\", { url = {} })\n"
	    "string.match = function() return nil end\n"
	    "tonumber = nil\n"
	    "return { image = \"debian-12\", env = { R = qsup.images."
	    "for_python(\"3.11\", \"2.36\") } }\n");
	load_ok(&p, path);
	cr_assert_str_eq(p.env[0], "R=debian-12");
	if ((arch = catalog_arch()) != NULL)
		cr_assert_not_null(strstr(p.image_url, "cloud.debian.org"),
		    "%s", p.image_url);
	cr_assert_str_eq(p.image_glibc, "2.36");
	profile_free(&p);
	/* And the next load is untouched by the last. */
	load_images(&p, "env = { U = qsup.images[\"debian-12\"].url.arm64 }");
	cr_assert_str_eq(p.env[0], "U=https://cloud.debian.org/images/cloud/"
	    "bookworm/latest/debian-12-generic-arm64.qcow2");
	profile_free(&p);
	free(path);
}
