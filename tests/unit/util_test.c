#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"

Test(util, base64_decode)
{
	unsigned char	out[64];
	size_t		n;

	n = util_base64_decode("aGVsbG8K", 8, out);
	cr_assert_eq(n, 6);
	cr_assert(memcmp(out, "hello\n", 6) == 0);
	n = util_base64_decode("AP8A/w==", 8, out);
	cr_assert_eq(n, 4);
	cr_assert(out[0] == 0 && out[1] == 0xff && out[2] == 0 &&
	    out[3] == 0xff);
	cr_assert_eq(util_base64_decode("", 0, out), 0);
}

Test(util, json_string_escapes)
{
	struct buf	b = { 0 };

	buf_json_string(&b, "a\"b\\c\n\x01");
	cr_assert_str_eq(b.data, "\"a\\\"b\\\\c\\u000a\\u0001\"");
	buf_free(&b);
}

Test(util, json_fields)
{
	long long	 v;
	char		*s;

	cr_assert_eq(util_json_int("{\"status\":42}", "status", &v), 0);
	cr_assert_eq(v, 42);
	cr_assert_eq(util_json_int("{\"status\": -3 }", "status", &v), 0);
	cr_assert_eq(v, -3);
	cr_assert_eq(util_json_int("{\"signal\":9}", "status", &v), -1);
	/* A key inside a string value is not a key. */
	cr_assert_eq(util_json_int("{\"error\":\"status\"}", "status", &v),
	    -1);
	s = util_json_str("{\"status\":127,\"error\":\"x: \\\"y\\\"\\n\"}",
	    "error");
	cr_assert_str_eq(s, "x: \"y\"\n");
	free(s);
}

Test(util, buf_consume)
{
	struct buf	b = { 0 };

	buf_printf(&b, "%s-%d", "abc", 12);
	cr_assert_str_eq(b.data, "abc-12");
	buf_consume(&b, 4);
	cr_assert_str_eq(b.data, "12");
	buf_consume(&b, 10);
	cr_assert_eq(b.len, 0);
	buf_free(&b);
}

Test(util, rm_rf)
{
	char	dir[] = "/tmp/qsup-rmrf.XXXXXX", *p;

	cr_assert_not_null(mkdtemp(dir));
	xasprintf(&p, "%s/a/b", dir);
	*strrchr(p, '/') = '\0';
	cr_assert_eq(mkdir(p, 0700), 0);
	free(p);
	xasprintf(&p, "%s/a/f", dir);
	cr_assert_eq(close(open(p, O_CREAT|O_WRONLY, 0600)), 0);
	free(p);
	cr_assert_eq(util_rm_rf(dir), 0);
	cr_assert_eq(access(dir, F_OK), -1);
	cr_assert_eq(util_rm_rf(dir), 0);
}

Test(util, mkdir_p)
{
	char		dir[] = "/tmp/qsup-mkdirp.XXXXXX", *p;
	struct stat	sb;

	cr_assert_not_null(mkdtemp(dir));
	xasprintf(&p, "%s/a/b/c", dir);
	cr_assert_eq(util_mkdir_p(p, 0750), 0);
	cr_assert_eq(stat(p, &sb), 0);
	cr_assert(S_ISDIR(sb.st_mode));
	cr_assert_eq(sb.st_mode & 0777 & ~0750, 0, "mode %o", sb.st_mode);
	cr_assert_eq(util_mkdir_p(p, 0750), 0, "existing is not an error");
	free(p);
	/* A file on the way: the first failure's errno. */
	xasprintf(&p, "%s/a/f", dir);
	cr_assert_eq(close(open(p, O_CREAT|O_WRONLY, 0600)), 0);
	free(p);
	xasprintf(&p, "%s/a/f/g/h", dir);
	cr_assert_eq(util_mkdir_p(p, 0700), -1);
	cr_assert_eq(errno, ENOTDIR);
	free(p);
	cr_assert_eq(util_rm_rf(dir), 0);
}
