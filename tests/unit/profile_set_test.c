/*
 * --set NAME=VALUE on top of a profile, and show's output (as Lua that
 * loads back, as JSON, with what network_rules compiled into). Run from
 * the top of the tree.
 */
#include "profile_helpers.h"

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

/*
 * A setting of text keeps the text whatever its characters: a digest of
 * digits alone was once read as the number 0 and refused; a file named
 * "true" is a file. Numbers and booleans are still read for the others.
 */
Test(profile, set_text_stays_text)
{
	static char	*sets[] = {
		"image=debian-12",
		"image_sha256=0123456789012345678901234567890123456789012345678"
		    "901234567890123",
		"console_log=true", "cpus=2", "warm_start=false",
	};
	struct profile	 p;

	load_ok_set(&p, FIXTURES "/empty.lua", sets, 5);
	cr_assert_str_eq(p.image_sha256, "012345678901234567890123456789012"
	    "3456789012345678901234567890123");
	cr_assert_not_null(strstr(p.console_log, "/true"), "%s",
	    p.console_log);
	cr_assert_eq(p.cpus, 2);
	cr_assert_eq(p.warm_start, 0);
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
