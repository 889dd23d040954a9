/*
 * profile_load: the built-in default, settings and their forms, error
 * messages (golden files: tests/profiles/fail-*.lua and .err), include()
 * and extend(), profile names, print() and help, and attempts to get out
 * of the sandbox. --set and show, the Python found, the network settings
 * and disk images have suites of their own (profile_*_test.c). Run from
 * the top of the tree.
 */
#include "profile_helpers.h"

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
	    "serve_pool", "boot", "kernel", "initramfs", "image",
	    "image_base_url", "images_dir", "image_sha256", "image_unverified",
	    "image_max_size", "registries", "disk_size", "cow_size", "setup",
	    "setup_network", "env", "cwd", "shares", "virtfs",
	    "virtfs_security_model", "virtfs_cache", "ld_closure_libs",
	    "ld_closure_extra", "network", "network_allow", "network_open_ack",
	    "ports", "network_tcp", "network_rules", "guest_firewall",
	    "display", "display_size",
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
