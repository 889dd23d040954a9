/*
 * The serve_pool setting (lua/profile_pool.c): a table of profile names
 * to counts, stored sorted as "COUNT NAME", shown as Lua and JSON that
 * load back the same, and refused entry by entry.
 */
#include "profile_helpers.h"

Test(profile, pool_default_empty)
{
	struct profile	p;

	load_ok(&p, NULL);
	cr_assert_eq(p.nserve_pool, 0);
	cr_assert_eq(profile_pool_count(&p, "default"), 0);
	profile_free(&p);
}

Test(profile, pool_entries_sorted_zero_dropped)
{
	struct profile	 p;
	char		*path;

	path = write_profile("p.lua", "return { serve_pool = { default = 2, "
	    "[\"ci.lua\"] = 1, zero = 0, [\"/abs/x.lua\"] = 64 } }\n");
	load_ok(&p, path);
	cr_assert_eq(p.nserve_pool, 3);
	cr_assert_str_eq(p.serve_pool[0], "64 /abs/x.lua");
	cr_assert_str_eq(p.serve_pool[1], "1 ci.lua");
	cr_assert_str_eq(p.serve_pool[2], "2 default");
	cr_assert_eq(profile_pool_count(&p, "default"), 2);
	cr_assert_eq(profile_pool_count(&p, "ci.lua"), 1);
	cr_assert_eq(profile_pool_count(&p, "zero"), 0);
	cr_assert_eq(profile_pool_count(&p, "ci"), 0);
	profile_free(&p);
	free(path);
}

Test(profile, pool_shown_loads_back)
{
	struct profile	 p, q;
	char		*line, *set, *json;

	set = "serve_pool={default=2,[\"ci\"]=1}";
	load_ok_set(&p, NULL, &set, 1);
	line = show_line(&p, "serve_pool");
	assert_contains(line, "serve_pool = { [\"ci\"] = 1, [\"default\"] = 2 },");
	strstr(line, " },")[2] = '\0';	/* the value, not the comment */
	xasprintf(&set, "serve_pool=%s", strchr(line, '{'));
	load_ok_set(&q, NULL, &set, 1);
	cr_assert_eq(q.nserve_pool, 2);
	cr_assert_str_eq(q.serve_pool[0], p.serve_pool[0]);
	cr_assert_str_eq(q.serve_pool[1], p.serve_pool[1]);
	json = show(&p, PROFILE_PRINT_JSON);
	assert_contains(json, "\"serve_pool\":{\"value\":{\"ci\":1,"
	    "\"default\":2}");
	free(json);
	free(set);
	free(line);
	profile_free(&q);
	profile_free(&p);
}

Test(profile, pool_bad_values_named)
{
	static char *cases[][2] = {
		{ "serve_pool=2", "serve_pool" },
		{ "serve_pool={default=65}",
		  "serve_pool: default = 65 is out of range" },
		{ "serve_pool={default=true}",
		  "serve_pool: default = true is not valid" },
		{ "serve_pool={[\"a b\"]=1}",
		  "serve_pool: \"a b\" is not a profile's name" },
		{ "serve_pool={1}",
		  "serve_pool: the key 1 is not a profile's name" },
	};
	char	*cause, *set;
	size_t	 i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		set = cases[i][0];
		cause = load_fails_set(NULL, &set, 1);
		assert_contains(cause, cases[i][1]);
		free(cause);
	}
}
