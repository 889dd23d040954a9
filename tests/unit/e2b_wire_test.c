/*
 * --e2b's parsers of client and guest bytes (core/serve/serve_e2b_wire.c)
 * on their own: Connect envelopes, multipart bodies as the e2b SDK sends
 * them (recorded), stat lines; and httpd_field, the header lookup the
 * front end reads its keys with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "httpd.h"
#include "serve_e2b.h"

Test(e2b_envelope, one_message_and_the_end)
{
	static const char	 in[] = "\x00\x00\x00\x00\x02{}"
				    "\x02\x00\x00\x00\x00";
	const char		*msg, *why;
	size_t			 mlen;
	int			 flags;

	cr_assert_eq(e2b_envelope(in, sizeof in - 1, &flags, &msg, &mlen,
	    &why), 7);
	cr_assert_eq(flags, 0);
	cr_assert_eq(mlen, 2);
	cr_assert_eq(memcmp(msg, "{}", 2), 0);
	cr_assert_eq(e2b_envelope(in + 7, 5, &flags, &msg, &mlen, &why), 5);
	cr_assert_eq(flags, E2B_FLAG_END);
	cr_assert_eq(mlen, 0);
}

Test(e2b_envelope, short_compressed_and_huge)
{
	const char	*msg, *why;
	size_t		 mlen;
	int		 flags;

	/* Not all there yet: more is needed, no error. */
	cr_assert_eq(e2b_envelope("\x00\x00\x00", 3, &flags, &msg, &mlen,
	    &why), 0);
	cr_assert_eq(e2b_envelope("\x00\x00\x00\x00\x09{}", 7, &flags, &msg,
	    &mlen, &why), 0);
	cr_assert_eq(e2b_envelope("\x01\x00\x00\x00\x00", 5, &flags, &msg,
	    &mlen, &why), -1);
	cr_assert_not_null(why);
	cr_assert_eq(e2b_envelope("\x00\x7f\x00\x00\x00", 5, &flags, &msg,
	    &mlen, &why), -1);
	cr_assert_not_null(strstr(why, "1 MiB"));
}

Test(e2b_envelope, frame_round_trip)
{
	struct buf	 b = { 0 };
	const char	*msg, *why;
	size_t		 mlen;
	int		 flags;

	e2b_frame(&b, E2B_FLAG_END, "{\"a\":1}", 7);
	cr_assert_eq(b.len, 12);
	cr_assert_eq(e2b_envelope(b.data, b.len, &flags, &msg, &mlen, &why),
	    12);
	cr_assert_eq(flags, E2B_FLAG_END);
	cr_assert_eq(memcmp(msg, "{\"a\":1}", 7), 0);
	buf_free(&b);
}

/* As the SDK wrote it (undici's FormData), recorded. */
static const char sdk_body[] =
    "------formdata-undici-0123\r\n"
    "Content-Disposition: form-data; name=\"file\"; "
    "filename=\"/tmp/a.txt\"\r\n"
    "Content-Type: application/octet-stream\r\n\r\n"
    "hello\r\n"
    "------formdata-undici-0123\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"b\"\r\n\r\n"
    "two\r\nlines\r\n"
    "------formdata-undici-0123--\r\n";

Test(e2b_multipart, the_sdk_s_body)
{
	struct e2b_part	 parts[4];
	char		 bd[E2B_BOUNDARY_MAX + 1];
	const char	*why = NULL;
	size_t		 n;

	cr_assert_eq(e2b_boundary("multipart/form-data; "
	    "boundary=----formdata-undici-0123", bd, &why), 0, "%s", why);
	cr_assert_str_eq(bd, "----formdata-undici-0123");
	cr_assert_eq(e2b_multipart(bd, sdk_body, sizeof sdk_body - 1, parts,
	    4, &n, &why), 0, "%s", why);
	cr_assert_eq(n, 2);
	cr_assert_eq(parts[0].flen, 10);
	cr_assert_eq(memcmp(parts[0].filename, "/tmp/a.txt", 10), 0);
	cr_assert_eq(parts[0].nlen, 4);
	cr_assert_eq(memcmp(parts[0].name, "file", 4), 0);
	cr_assert_eq(parts[0].len, 5);
	cr_assert_eq(memcmp(parts[0].data, "hello", 5), 0);
	cr_assert_eq(parts[1].len, 10);
	cr_assert_eq(memcmp(parts[1].data, "two\r\nlines", 10), 0);
}

Test(e2b_multipart, refused)
{
	struct e2b_part	 parts[1];
	char		 bd[E2B_BOUNDARY_MAX + 1];
	const char	*why;
	size_t		 n;

	cr_assert_eq(e2b_boundary("application/json", bd, &why), -1);
	cr_assert_eq(e2b_boundary("multipart/form-data", bd, &why), -1);
	cr_assert_eq(e2b_boundary("multipart/form-data; boundary=\"x", bd,
	    &why), -1);
	/* More parts than room: refused, not overrun. */
	cr_assert_eq(e2b_multipart("----formdata-undici-0123", sdk_body,
	    sizeof sdk_body - 1, parts, 1, &n, &why), -1);
	cr_assert_not_null(strstr(why, "too many"));
	/* Cut before its last delimiter. */
	cr_assert_eq(e2b_multipart("----formdata-undici-0123", sdk_body, 60,
	    parts, 1, &n, &why), -1);
	cr_assert_eq(e2b_multipart("zz", sdk_body, sizeof sdk_body - 1,
	    parts, 1, &n, &why), -1);
}

Test(e2b_stat, lines)
{
	static const char	 good[] = "81a4 1309 644 root root 1796369923 "
				    "/etc/my file";
	struct e2b_entry	 en;
	struct buf		 b = { 0 };

	cr_assert_eq(e2b_stat_line(good, sizeof good - 1, &en), 0);
	cr_assert_eq(en.mode, 0100644);
	cr_assert_eq(en.size, 1309);
	cr_assert_str_eq(en.owner, "root");
	cr_assert_eq(en.plen, 12);
	e2b_entry_json(&en, &b);
	cr_assert_str_eq(b.data, "{\"name\":\"my file\",\"type\":"
	    "\"FILE_TYPE_FILE\",\"path\":\"/etc/my file\",\"size\":\"1309\","
	    "\"mode\":420,\"permissions\":\"-rw-r--r--\",\"owner\":\"root\","
	    "\"group\":\"root\",\"modifiedTime\":\"2026-12-04T07:38:43Z\"}");
	buf_free(&b);
	cr_assert_eq(e2b_stat_line("41ed 4096 755 root root", 23, &en), -1);
	cr_assert_eq(e2b_stat_line("zz 1 1 a b 1 /x", 15, &en), -1);
	cr_assert_eq(e2b_stat_line("41ed 99999999999999999999 755 a b 1 /x",
	    38, &en), -1);
}

Test(httpd_field, any_case_first_one)
{
	static const char	 head[] = "POST /x HTTP/1.1\r\nX-API-KEY: k1 \r\n"
				    "e2b-sandbox-id: abc\r\nX-Api-Key: k2\r\n\r\n";
	static char		 store[sizeof head];
	struct httpd_req	 req;
	const char		*why;
	char			*v;

	cr_assert_eq(httpd_parse_head(head, sizeof head - 1, &req, store,
	    &why), 0);
	cr_assert_null(httpd_field(&req, "X-API-KEY"));	/* not kept */
	req.head = head;
	req.head_len = sizeof head - 1;
	v = httpd_field(&req, "x-api-key");
	cr_assert_str_eq(v, "k1");
	free(v);
	v = httpd_field(&req, "E2b-Sandbox-Id");
	cr_assert_str_eq(v, "abc");
	free(v);
	cr_assert_null(httpd_field(&req, "X-Access-Token"));
}

/* "hello\n" and 4096 zeros, gzip'd by gzip -9n. */
Test(e2b_gunzip, inflates_bounded)
{
	static const unsigned char hello[] = {
		0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03,
		0xcb, 0x48, 0xcd, 0xc9, 0xc9, 0xe7, 0x02, 0x00, 0x20, 0x30,
		0x3a, 0x36, 0x06, 0x00, 0x00, 0x00
	};
	const char	*why = NULL;
	char		*out;
	size_t		 n;

	cr_assert_eq(e2b_gunzip((const char *)hello, sizeof hello, 100,
	    &out, &n, &why), 0);
	cr_assert_eq(n, 6);
	cr_assert_str_eq(out, "hello\n");
	free(out);
	/* Exactly the bound is fine; one byte less is not. */
	cr_assert_eq(e2b_gunzip((const char *)hello, sizeof hello, 6, &out,
	    &n, &why), 0);
	free(out);
	cr_assert_eq(e2b_gunzip((const char *)hello, sizeof hello, 5, &out,
	    &n, &why), -1);
	cr_assert_str_eq(why, "gzip: inflates past --max-body");
	cr_assert_null(out);
	cr_assert_eq(e2b_gunzip((const char *)hello, sizeof hello - 4, 100,
	    &out, &n, &why), -1);
	cr_assert_str_eq(why, "gzip: truncated");
	cr_assert_eq(e2b_gunzip("hello", 5, 100, &out, &n, &why), -1);
	cr_assert_str_eq(why, "gzip: not a gzip stream, or corrupt");
}
