#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <jansson.h>

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

/* Reading JSON: jansson parses, json_path reaches in (QMP nests). */
Test(util, json_fields)
{
	const char	*qmp = "{\"timestamp\":{\"seconds\":1},\"event\":"
			    "\"MIGRATION\",\"data\":{\"status\":"
			    "\"completed\"}}";
	const char	*flat = "{\"status\": -3 ,\"error\":"
			    "\"x: \\\"y\\\"\\n\"}";
	json_t		*j;
	long long	 v;

	j = json_read(flat, strlen(flat), 0);
	cr_assert_not_null(j);
	cr_assert_eq(json_path_int(j, "status", &v), 0);
	cr_assert_eq(v, -3);
	cr_assert_eq(json_path_int(j, "signal", &v), -1);
	cr_assert_eq(json_path_int(j, "error", &v), -1);
	cr_assert_str_eq(json_path_str(j, "error"), "x: \"y\"\n");
	cr_assert_null(json_path_str(j, "status"));
	json_decref(j);

	/* A key inside a string value is not a key. */
	j = json_read("{\"error\":\"status\"}", 18, 0);
	cr_assert_eq(json_path_int(j, "status", &v), -1);
	json_decref(j);

	j = json_read(qmp, strlen(qmp), 0);
	cr_assert_str_eq(json_path_str(j, "data.status"), "completed");
	cr_assert_null(json_path_str(j, "status"));
	cr_assert_null(json_path_str(j, "event.status"));
	cr_assert_null(json_path(j, "data.status.x"));
	json_decref(j);

	/* Only objects; nothing that does not parse. */
	cr_assert_null(json_read("[1]", 3, 0));
	cr_assert_null(json_read("{\"a\":", 5, 0));
	cr_assert_null(json_path(NULL, "a"));
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
