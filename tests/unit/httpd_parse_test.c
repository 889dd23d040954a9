/*
 * The HTTP server layer's head parser and query parameters
 * (core/httpd/httpd_parse.c), on their own: no server, no loop.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "httpd.h"

/* --- The parser ---------------------------------------------------------- */

static struct httpd_req	 preq;
static char		 pstore[65536];
static const char	*pwhy;

static int
parse(const char *head)
{
	return (httpd_parse_head(head, strlen(head), &preq, pstore, &pwhy));
}

Test(httpd_parse, good_request)
{
	cr_assert_eq(parse("POST /v1/sandboxes/a%20b/files?path=%2Fx&mode=0644 "
	    "HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n"
	    "Content-Type: application/json\r\n"
	    "Authorization: Bearer abc\r\nExpect: 100-continue\r\n\r\n"), 0,
	    "%s", pwhy);
	cr_assert_str_eq(preq.method, "POST");
	cr_assert_str_eq(preq.path, "/v1/sandboxes/a b/files");
	cr_assert_str_eq(preq.query, "path=%2Fx&mode=0644");
	cr_assert_eq(preq.minor, 1);
	cr_assert_eq(preq.content_length, 12);
	cr_assert_eq(preq.has_body, 1);
	cr_assert_eq(preq.chunked, 0);
	cr_assert_eq(preq.keep_alive, 1);
	cr_assert_eq(preq.expect_continue, 1);
	cr_assert_str_eq(preq.content_type, "application/json");
	cr_assert_str_eq(preq.authorization, "Bearer abc");
}

Test(httpd_parse, connection_and_versions)
{
	cr_assert_eq(parse("GET / HTTP/1.1\nConnection: keep-alive, close\n\n"),
	    0);
	cr_assert_eq(preq.keep_alive, 0);
	cr_assert_eq(preq.content_length, -1);
	cr_assert_eq(preq.has_body, 0);
	cr_assert_str_eq(preq.query, "");
	cr_assert_null(preq.content_type);
	cr_assert_null(preq.authorization);
	cr_assert_eq(parse("GET /x HTTP/1.0\r\n\r\n"), 0);
	cr_assert_eq(preq.minor, 0);
	cr_assert_eq(preq.keep_alive, 0);
	cr_assert_eq(parse("PUT /f HTTP/1.1\r\ntransfer-encoding: Chunked\r\n"
	    "\r\n"), 0);
	cr_assert_eq(preq.chunked, 1);
	cr_assert_eq(preq.has_body, 1);
	cr_assert_eq(parse("GET /a HTTP/1.1\r\nContent-Length: 3\r\n"
	    "Content-Length: 3\r\n\r\n"), 0, "the same length twice is one");
}

/* Each refusal, with the status it is owed. */
Test(httpd_parse, refusals)
{
	static const struct {
		const char	*head;
		int		 status;
	} bad[] = {
		{ "", 400 },
		{ "\r\n\r\n", 400 },
		{ "GET\r\n\r\n", 400 },
		{ "GET / HTTP/1.1 x\r\n\r\n", 400 },
		{ "G(T / HTTP/1.1\r\n\r\n", 400 },
		{ "GET x HTTP/1.1\r\n\r\n", 400 },
		{ "GET http://a/ HTTP/1.1\r\n\r\n", 400 },
		{ "GET /%zz HTTP/1.1\r\n\r\n", 400 },
		{ "GET /a%00b HTTP/1.1\r\n\r\n", 400 },
		{ "GET /a\x7f HTTP/1.1\r\n\r\n", 400 },
		{ "GET / HTTX/1.1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nno colon\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nBad Name: b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nA: b\x01\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1\r\n"
		    "Content-Length: 2\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nContent-Length: 1\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n", 400 },
		{ "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nAuthorization: a\r\n"
		    "Authorization: b\r\n\r\n", 400 },
		{ "GET / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", 501 },
		{ "GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n", 501 },
		{ "GET / HTTP/2.0\r\n\r\n", 505 },
		{ "GET / HTTP/1.2\r\n\r\n", 505 },
	};
	size_t	i;
	int	rc;

	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		rc = parse(bad[i].head);
		cr_expect_eq(rc, bad[i].status, "%zu \"%s\": %d (%s), not %d",
		    i, bad[i].head, rc, pwhy ? pwhy : "-", bad[i].status);
		if (rc != 0)
			cr_expect_not_null(pwhy);
	}
	cr_assert_eq(httpd_parse_head("GET / HTTP/1.1\r\n\0\r\n\r\n", 20,
	    &preq, pstore, &pwhy), 400);
}

Test(httpd_parse, sizes)
{
	struct buf	b = { 0 };
	size_t		i;

	buf_puts(&b, "GET /");
	for (i = 0; i < HTTPD_TARGET_MAX; i++)
		buf_puts(&b, "a");
	buf_puts(&b, " HTTP/1.1\r\n\r\n");
	cr_assert_eq(parse(b.data), 414);
	b.len = 0;
	buf_puts(&b, "GET / HTTP/1.1\r\n");
	for (i = 0; i < 200; i++)
		buf_printf(&b, "X-%zu: y\r\n", i);
	buf_puts(&b, "\r\n");
	cr_assert_eq(parse(b.data), 431);
	buf_free(&b);
}

static void
expect_param(const char *query, const char *name, const char *want)
{
	char	*v = httpd_query_param(query, name);

	if (want == NULL)
		cr_expect_null(v, "%s in %s: \"%s\"", name, query, v);
	else {
		cr_expect_not_null(v, "%s in %s", name, query);
		if (v != NULL)
			cr_expect_str_eq(v, want, "%s in %s", name, query);
	}
	free(v);
}

Test(httpd_parse, query_params)
{
	expect_param("path=%2Fa%20b&mode=0644", "path", "/a b");
	expect_param("path=%2Fa%20b&mode=0644", "mode", "0644");
	expect_param("path=%2Fa%20b&mode=0644", "pat", NULL);
	expect_param("path=%2Fa%20b&mode=0644", "mod", NULL);
	expect_param("", "path", NULL);
	expect_param("flag&x=1", "flag", "");
	expect_param("x=&y=2", "x", "");
	expect_param("a%3Db=1&a=2", "a=b", "1");
	expect_param("a%3Db=1&a=2", "a", "2");
	expect_param("a=1&a=2", "a", "1");
	expect_param("p=a+b", "p", "a+b");
	expect_param("p=%zz", "p", NULL);
	expect_param("p=%2", "p", NULL);
	expect_param("p=a%00b", "p", NULL);
	expect_param("p=%C3%A9", "p", "\xc3\xa9");
}
