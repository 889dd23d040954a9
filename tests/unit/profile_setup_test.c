/*
 * setup and setup_network: steps as strings (sh -c) and as argv lists,
 * an allowlist written as its rules, --set, and show's round trip. The
 * refusals are golden files (tests/profiles/fail-setup*.lua).
 */
#include "profile_helpers.h"

Test(profile, setup_steps_parsed)
{
	struct profile	 p;
	char		*path;

	path = write_profile("s.lua", "return {\n"
	    "  image = \"debian-12\",\n"
	    "  setup = { \"apt-get update\", { \"make\", \"-j2\", \"\" } },\n"
	    "  setup_network = { \"deb.debian.org:80\", \"10.0.0.0/8\" },\n"
	    "}\n");
	load_ok(&p, path);
	cr_assert_eq(p.nsetup, 2);
	cr_assert(p.setup[0].shell);
	cr_assert_str_eq(p.setup[0].argv[0], "sh");
	cr_assert_str_eq(p.setup[0].argv[1], "-c");
	cr_assert_str_eq(p.setup[0].argv[2], "apt-get update");
	cr_assert_null(p.setup[0].argv[3]);
	cr_assert(!p.setup[1].shell);
	cr_assert_str_eq(p.setup[1].argv[0], "make");
	cr_assert_str_eq(p.setup[1].argv[1], "-j2");
	cr_assert_str_eq(p.setup[1].argv[2], "");
	cr_assert_null(p.setup[1].argv[3]);
	cr_assert_eq(p.setup_network, NET_MODE_ALLOWLIST);
	cr_assert_eq(p.nsetup_allow, 2);
	cr_assert_str_eq(p.setup_allow[0].text, "deb.debian.org:80");
	/* network itself is untouched by setup_network. */
	cr_assert_eq(p.network, NET_MODE_RESTRICTED);
	profile_free(&p);
	free(path);
}

Test(profile, setup_defaults)
{
	struct profile	 p;

	load_ok(&p, NULL);
	cr_assert_eq(p.nsetup, 0);
	cr_assert_null(p.setup);
	cr_assert_eq(p.setup_network, NET_MODE_NONE);
	cr_assert_eq(p.nsetup_allow, 0);
	profile_free(&p);
}

Test(profile, setup_network_modes)
{
	struct profile	 p;
	char		*path, *cause;

	path = write_profile("r.lua", "return { image = \"debian-12\", "
	    "setup = { \"true\" }, setup_network = \"restricted\" }\n");
	load_ok(&p, path);
	cr_assert_eq(p.setup_network, NET_MODE_RESTRICTED);
	profile_free(&p);
	free(path);
	path = write_profile("o.lua", "return { image = \"debian-12\", "
	    "setup = { \"true\" }, setup_network = \"open\", "
	    "network_open_ack = true }\n");
	load_ok(&p, path);
	cr_assert_eq(p.setup_network, NET_MODE_OPEN);
	profile_free(&p);
	free(path);
	/* A network for no steps would do nothing: refused, named. */
	path = write_profile("n.lua", "return {\n image = \"debian-12\",\n"
	    " setup_network = { \"deb.debian.org\" } }\n");
	cause = load_fails(path);
	cr_assert(strstr(cause, "n.lua:3: setup_network: has no effect "
	    "without setup steps") != NULL, "%s", cause);
	free(cause);
	free(path);
	/* Another kind of value: what it takes is said. */
	path = write_profile("b.lua", "return {\n image = \"debian-12\",\n"
	    " setup = { \"true\" }, setup_network = 3 }\n");
	cause = load_fails(path);
	cr_assert(strstr(cause, "b.lua:3: setup_network: 3 is not") != NULL,
	    "%s", cause);
	free(cause);
	free(path);
}

/* --set gives one string: a rule is an allowlist of it, a word is not. */
Test(profile, setup_network_one_rule_set)
{
	struct profile	 p;
	char		*path, *cause;
	char		*sets[] = { "setup_network=deb.debian.org:80" };
	char		*bad[] = { "setup_network=restrcted" };

	path = write_profile("s.lua", "return { image = \"debian-12\", "
	    "setup = { \"true\" } }\n");
	load_ok_set(&p, path, sets, 1);
	cr_assert_eq(p.setup_network, NET_MODE_ALLOWLIST);
	cr_assert_eq(p.nsetup_allow, 1);
	cr_assert_str_eq(p.setup_allow[0].text, "deb.debian.org:80");
	profile_free(&p);
	cause = load_fails_set(path, bad, 1);
	cr_assert(strstr(cause, "\"restrcted\" is not valid") != NULL, "%s",
	    cause);
	free(cause);
	free(path);
}

/* What show prints loads back to the same steps. */
Test(profile, setup_show_round_trip)
{
	struct profile	 p, q;
	struct buf	 b = { 0 };
	char		*path, *again;

	path = write_profile("s.lua", "return { image = \"debian-12\", "
	    "setup = { \"echo 'a b'\", { \"touch\", \"/x y\" } }, "
	    "setup_network = { \"deb.debian.org:443\" } }\n");
	load_ok(&p, path);
	profile_print(&p, 0, &b);
	again = write_profile("again.lua", "%s", b.data);
	load_ok(&q, again);
	cr_assert_eq(q.nsetup, 2);
	cr_assert_str_eq(q.setup[0].argv[2], "echo 'a b'");
	cr_assert_str_eq(q.setup[1].argv[1], "/x y");
	cr_assert_eq(q.nsetup_allow, 1);
	profile_free(&q);
	profile_free(&p);
	buf_free(&b);
	free(again);
	free(path);
}

/* boot = "image" takes setup too: its steps run over the image's own boot. */
Test(profile, setup_with_boot_image)
{
	struct profile	 p;
	char		*path;

	path = write_profile("i.lua", "return { image = \"debian-12\", "
	    "boot = \"image\", setup = { \"true\" } }\n");
	load_ok(&p, path);
	cr_assert_eq(p.nsetup, 1);
	cr_assert_eq(p.boot, PROFILE_BOOT_IMAGE);
	profile_free(&p);
	free(path);
}
