#include <stdlib.h>
#include <sys/stat.h>

#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "qsup.h"

static struct share
parse_ok(const char *spec)
{
	struct share	 sh;
	char		*cause = NULL;

	cr_assert_eq(share_parse(spec, &sh, &cause), 0, "%s: %s", spec,
	    cause);
	return (sh);
}

static void
parse_fails(const char *spec, const char *want)
{
	struct share	 sh;
	char		*cause = NULL;

	cr_assert_eq(share_parse(spec, &sh, &cause), -1, "%s parsed", spec);
	cr_assert_not_null(strstr(cause, want), "%s: %s", spec, cause);
	free(cause);
}

Test(share, parse_forms)
{
	struct share	sh;

	sh = parse_ok("/srv");
	cr_assert_str_eq(sh.host, "/srv");
	cr_assert_null(sh.guest);
	cr_assert_eq(sh.readonly, 1);
	share_free(&sh);
	sh = parse_ok("/srv:rw");
	cr_assert_null(sh.guest);
	cr_assert_eq(sh.readonly, 0);
	share_free(&sh);
	sh = parse_ok("/srv:/data");
	cr_assert_str_eq(sh.guest, "/data");
	cr_assert_eq(sh.readonly, 1);
	share_free(&sh);
	sh = parse_ok("rel/dir:/data:rw");
	cr_assert_str_eq(sh.host, "rel/dir");
	cr_assert_str_eq(sh.guest, "/data");
	cr_assert_eq(sh.readonly, 0);
	share_free(&sh);
	sh = parse_ok("/srv:/data:ro");
	cr_assert_eq(sh.readonly, 1);
	share_free(&sh);
}

Test(share, parse_errors)
{
	parse_fails("", "no host path");
	parse_fails(":/x", "no host path");
	parse_fails("/a:rel", "must be absolute");
	parse_fails("/a:/b:xx", "ro or rw");
	parse_fails("/a:/b:ro:more", "expected HOST[:GUEST][:ro|rw]");
}

Test(share, prepare_resolves_sorts_and_tags)
{
	struct share	 sh[3];
	char		 dir[] = "/tmp/qsup-share.XXXXXX", *cause = NULL, *p;

	cr_assert_not_null(mkdtemp(dir));
	memset(sh, 0, sizeof sh);
	sh[0] = parse_ok("/tmp:/z");
	xasprintf(&p, "%s/../%s", dir, strrchr(dir, '/') + 1);
	sh[1] = parse_ok(p);
	free(p);
	sh[2] = parse_ok("/tmp:/a/b");
	cr_assert_eq(share_prepare(sh, 3, &cause), 0, "%s", cause);
	/* Sorted by guest path, so parents mount before children. */
	cr_assert_str_eq(sh[0].guest, "/a/b");
	cr_assert_str_eq(sh[1].host, dir);	/* resolved */
	cr_assert_str_eq(sh[1].guest, dir);	/* defaults to the host's */
	cr_assert_str_eq(sh[2].guest, "/z");
	cr_assert_str_eq(sh[0].tag, "qsup0");
	cr_assert_str_eq(sh[2].tag, "qsup2");
	share_free(&sh[0]);
	share_free(&sh[1]);
	share_free(&sh[2]);
	rmdir(dir);
}

Test(share, prepare_refuses)
{
	struct share	 sh[6];
	char		*cause = NULL;
	int		 i;

	sh[0] = parse_ok("/nonexistent/qsup:/x");
	cr_assert_eq(share_prepare(sh, 1, &cause), -1);
	cr_assert_str_eq(cause, "share /nonexistent/qsup: No such file or "
	    "directory");
	free(cause);
	share_free(&sh[0]);
	sh[0] = parse_ok("/etc/hostname:/x");
	cr_assert_eq(share_prepare(sh, 1, &cause), -1);
	cr_assert_not_null(strstr(cause, "not a directory"), "%s", cause);
	free(cause);
	share_free(&sh[0]);
	sh[0] = parse_ok("/tmp:/same");
	sh[1] = parse_ok("/etc:/same");
	cr_assert_eq(share_prepare(sh, 2, &cause), -1);
	cr_assert_str_eq(cause, "two shares at /same in the guest");
	free(cause);
	share_free(&sh[0]);
	share_free(&sh[1]);
	for (i = 0; i < 6; i++) {
		char *spec;

		xasprintf(&spec, "/tmp:/%d", i);
		sh[i] = parse_ok(spec);
		free(spec);
	}
	cr_assert_eq(share_prepare(sh, 6, &cause), -1);
	cr_assert_not_null(strstr(cause, "room for 5"), "%s", cause);
	free(cause);
	for (i = 0; i < 6; i++)
		share_free(&sh[i]);
}
