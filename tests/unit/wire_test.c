/*
 * The wire layer's codecs on their own: the head parser in both roles,
 * the chunked codec both ways and in both modes, the SSE writer and
 * reader, the JSON string writer, the seed's value encoding.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "wire.h"

static void
put_cb(void *arg, const void *data, size_t len)
{
	struct wire_buf	*b = arg;

	b->data = realloc(b->data, b->len + len + 1);
	cr_assert_not_null(b->data);
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

Test(wire, head_end)
{
	cr_assert_eq(wire_head_end("", 0), 0);
	cr_assert_eq(wire_head_end(NULL, 0), 0);
	cr_assert_eq(wire_head_end("GET / HTTP/1.1\r\n", 16), 0);
	cr_assert_eq(wire_head_end("GET / HTTP/1.1\r\n\r\nxy", 20), 18);
	cr_assert_eq(wire_head_end("GET / HTTP/1.1\n\nxy", 18), 16);
	cr_assert_eq(wire_head_end("a\r\nb: c\r\n\r", 10), 0);
}

Test(wire, splits)
{
	struct wire_request_line	 rl;
	struct wire_field		 f;
	const char			*s = "CONNECT a:443 HTTP/1.1";

	cr_assert_eq(wire_request_split(s, strlen(s), &rl), 0);
	cr_assert(rl.mlen == 7 && strncmp(rl.method, "CONNECT", 7) == 0);
	cr_assert(rl.tlen == 5 && strncmp(rl.target, "a:443", 5) == 0);
	cr_assert(rl.vlen == 8 && strncmp(rl.version, "HTTP/1.1", 8) == 0);
	cr_assert_eq(wire_request_split("GET /", 5, &rl), -1);
	s = "X-A:  b c \t";
	cr_assert_eq(wire_field_split(s, strlen(s), &f), 0);
	cr_assert(f.nlen == 3 && strncmp(f.name, "X-A", 3) == 0);
	cr_assert(f.vlen == 3 && strncmp(f.value, "b c", 3) == 0);
	cr_assert_eq(wire_field_split(" X: b", 5, &f), -1);
	cr_assert_eq(wire_field_split("X Y: b", 6, &f), -1);
	cr_assert_eq(wire_field_split("X", 1, &f), -1);
	cr_assert_eq(wire_field_split(": b", 3, &f), -1);
	cr_assert(wire_token("GET", 3));
	cr_assert(!wire_token("", 0));
	cr_assert(!wire_token("a b", 3));
}

static int
parse_request(const char *s, struct wire_head *h)
{
	return (wire_head_parse(h, WIRE_REQUEST, s, strlen(s)));
}

Test(wire, request)
{
	struct wire_head	h;

	cr_assert_eq(parse_request("POST /exec/3/stdin?x=1 HTTP/1.1\r\n"
	    "Authorization:  Bearer t \r\nContent-Length: 12\r\n"
	    "content-length: 12\r\nExpect: 100-continue\r\n\r\n", &h), 0);
	cr_assert_str_eq(h.method, "POST");
	cr_assert_str_eq(h.path, "/exec/3/stdin");
	cr_assert_eq(h.minor, 1);
	cr_assert(h.has_auth);
	cr_assert_str_eq(h.auth, "Bearer t");
	cr_assert_eq(h.content_length, 12);
	cr_assert(h.expect_continue);
	cr_assert(!h.chunked);

	cr_assert_eq(parse_request("GET /ping HTTP/1.0\n\n", &h), 0);
	cr_assert_eq(h.content_length, -1);
	cr_assert_eq(h.minor, 0);
}

static void
expect_request_error(const char *s, int status, const char *cause)
{
	struct wire_head	h;

	cr_assert_eq(parse_request(s, &h), -1, "%s", s);
	cr_assert_eq(h.error, status, "%s: %d", s, h.error);
	cr_assert_str_eq(h.cause, cause, "%s", s);
}

Test(wire, request_errors)
{
	expect_request_error("", 400, "empty request line");
	expect_request_error("get / HTTP/1.1\r\n\r\n", 400, "bad request line");
	expect_request_error("GET ping HTTP/1.1\r\n\r\n", 400,
	    "bad request line");
	expect_request_error("GET /a\x01 HTTP/1.1\r\n\r\n", 400,
	    "bad request target");
	expect_request_error("GET /ping HTTP/2.0\r\n\r\n", 505,
	    "bad HTTP version");
	expect_request_error("GET /ping HTTX/1.1\r\n\r\n", 400,
	    "bad HTTP version");
	expect_request_error("GET /ping HTTP/1.1\r\n folded\r\n\r\n", 400,
	    "folded header line");
	expect_request_error("GET /ping HTTP/1.1\r\nA B: c\r\n\r\n", 400,
	    "bad header line");
	expect_request_error("GET /ping HTTP/1.1\r\nA: b\x7f\r\n\r\n", 400,
	    "control character in header");
	expect_request_error("GET /ping HTTP/1.1\r\nContent-Length: 1\r\n"
	    "Content-Length: 2\r\n\r\n", 400, "conflicting Content-Length");
	expect_request_error("GET /ping HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
	    400, "bad Content-Length");
	expect_request_error("GET /ping HTTP/1.1\r\nTransfer-Encoding: gzip"
	    "\r\n\r\n", 501, "unsupported Transfer-Encoding");
	expect_request_error("GET /ping HTTP/1.1\r\nTransfer-Encoding: chunked"
	    "\r\nContent-Length: 1\r\n\r\n", 400,
	    "both Content-Length and Transfer-Encoding");
}

Test(wire, request_bounds)
{
	struct wire_head	 h;
	char			 buf[1024];

	memset(buf, 0, sizeof buf);
	memcpy(buf, "GET /", 5);
	memset(buf + 5, 'a', 300);
	strcat(buf, " HTTP/1.1\r\n\r\n");
	cr_assert_eq(parse_request(buf, &h), -1);
	cr_assert_eq(h.error, 414);
	memset(buf, 0, sizeof buf);
	strcpy(buf, "GET / HTTP/1.1\r\nAuthorization: ");
	memset(buf + strlen(buf), 'a', 600);
	strcat(buf, "\r\n\r\n");
	cr_assert_eq(parse_request(buf, &h), -1);
	cr_assert_eq(h.error, 431);
}

/* Feed a response head a line at a time: what the last line returned. */
static int
response_lines(struct wire_head *h, const char *s)
{
	const char	*end = s + strlen(s), *line;
	size_t		 len;
	int		 rc = 0;

	wire_head_init(h, WIRE_RESPONSE);
	while (rc == 0 && wire_line(&s, end, &line, &len) == 0)
		rc = wire_head_line(h, line, len);
	return (rc);
}

Test(wire, response)
{
	struct wire_head	h;

	cr_assert_eq(response_lines(&h, "HTTP/1.1 200 OK\r\nContent-Type: "
	    "text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"), 1);
	cr_assert_eq(h.status, 200);
	cr_assert(h.sse);
	cr_assert(h.chunked);
	cr_assert_eq(h.content_length, -1);
	cr_assert_eq(response_lines(&h, "HTTP/1.1 204\r\n\r\n"), 1);
	cr_assert_eq(h.status, 204);
	cr_assert_eq(response_lines(&h, "HTTP/1.1 200 OK\r\nContent-Length:"
	    " 00000005\r\nX-Any thing: at all\r\n\r\n"), 1);
	cr_assert_eq(h.content_length, 5);
	cr_assert(!h.sse);
}

static void
expect_response_error(const char *s, const char *cause)
{
	struct wire_head	h;

	cr_assert_eq(response_lines(&h, s), -1, "%s", s);
	cr_assert_str_eq(h.cause, cause, "%s", s);
}

Test(wire, response_errors)
{
	expect_response_error("HTTP/1.0 200 OK\r\n\r\n", "a bad status line");
	expect_response_error("HTTP/1.1 099 X\r\n\r\n", "a bad status line");
	expect_response_error("HTTP/1.1 600 X\r\n\r\n", "a bad status line");
	expect_response_error("HTTP/1.1 2000\r\n\r\n", "a bad status line");
	expect_response_error("HTTP/1.1 20\r\n\r\n", "a bad status line");
	expect_response_error("HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
	    "a header line without a colon");
	expect_response_error("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n"
	    "Content-Length: 1\r\n\r\n", "a bad Content-Length");
	expect_response_error("HTTP/1.1 200 OK\r\nContent-Length: 1048577\r\n"
	    "\r\n", "a bad Content-Length");
	expect_response_error("HTTP/1.1 200 OK\r\nContent-Length: 5 \r\n\r\n",
	    "a bad Content-Length");
	expect_response_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
	    "\r\n", "an unknown Transfer-Encoding");
	expect_response_error("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked"
	    "\r\nContent-Length: 1\r\n\r\n", "both Content-Length and chunked");
}

Test(wire, response_nul)
{
	struct wire_head	h;

	wire_head_init(&h, WIRE_RESPONSE);
	cr_assert_eq(wire_head_line(&h, "HTTP/1.1 200\0 OK", 16), -1);
	cr_assert_str_eq(h.cause, "a NUL byte in the head");
}

/*
 * Decode s in pieces of piece bytes as a connection would, keeping what
 * is not used yet: 1 at the body's end, 0 if it wants more, -1 on error.
 */
static int
chunked_decode(int strict, const char *s, size_t len, size_t piece,
    struct wire_buf *out, const char **cause, size_t *rest)
{
	struct wire_chunked	 c;
	const char		*data;
	size_t			 have = 0, off = 0, dlen;
	ssize_t			 n;
	int			 done = 0;

	wire_chunked_init(&c, strict);
	for (;;) {
		n = wire_chunked_feed(&c, s + off, have - off, &data, &dlen,
		    &done, cause);
		if (n == -1)
			return (-1);
		if (dlen > 0)
			put_cb(out, data, dlen);
		off += n;
		if (done) {
			*rest = len - off;
			return (1);
		}
		if (n == 0) {
			if (have == len)
				return (0);
			have = len - have > piece ? have + piece : len;
		}
	}
}

Test(wire, chunked_roundtrip)
{
	struct wire_buf	 enc = { 0 }, dec = { 0 };
	const char	*cause = NULL;
	size_t		 piece, rest;

	wire_chunk_start(put_cb, &enc, 5);
	put_cb(&enc, "hello", 5);
	wire_chunk_end(put_cb, &enc);
	wire_chunk_start(put_cb, &enc, 26);
	put_cb(&enc, "abcdefghijklmnopqrstuvwxyz", 26);
	wire_chunk_end(put_cb, &enc);
	wire_chunk_last(put_cb, &enc);
	put_cb(&enc, "NEXT", 4);
	cr_assert(strncmp(enc.data, "5\r\nhello\r\n1a\r\n", 14) == 0);
	for (piece = 1; piece < 12; piece++) {
		dec.len = 0;
		cr_assert_eq(chunked_decode(1, enc.data, enc.len, piece, &dec,
		    &cause, &rest), 1, "piece %zu: %s", piece, cause);
		cr_assert_eq(dec.len, 31);
		cr_assert(memcmp(dec.data, "helloabcdefghijklmnopqrstuvwxyz",
		    31) == 0);
		cr_assert_eq(rest, 4);
	}
	free(enc.data);
	free(dec.data);
}

Test(wire, chunked_lenient)
{
	const char	*s = "3;name=value\nabc\n0\nX-Trailer: 1\r\n\r\n";
	struct wire_buf	 dec = { 0 };
	const char	*cause = NULL;
	size_t		 rest;

	cr_assert_eq(chunked_decode(0, s, strlen(s), 3, &dec, &cause, &rest),
	    1, "%s", cause);
	cr_assert_str_eq(dec.data, "abc");
	cr_assert_eq(rest, 0);
	/* Strict: extensions, then trailers, are refused. */
	cr_assert_eq(chunked_decode(1, s, strlen(s), 3, &dec, &cause, &rest),
	    -1);
	cr_assert_str_eq(cause, "a bad chunk size");
	s = "3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n";
	cr_assert_eq(chunked_decode(1, s, strlen(s), 3, &dec, &cause, &rest),
	    -1);
	cr_assert_str_eq(cause, "a trailer after the last chunk");
	/* Half a body: more is wanted. */
	cr_assert_eq(chunked_decode(0, "5\r\nab", 5, 1, &dec, &cause, &rest),
	    0);
	free(dec.data);
}

static void
expect_chunked_error(int strict, const char *s, size_t len, const char *why)
{
	struct wire_buf	 dec = { 0 };
	const char	*cause = NULL;
	size_t		 rest;

	cr_assert_eq(chunked_decode(strict, s, len, 7, &dec, &cause, &rest),
	    -1, "%s", s);
	cr_assert_str_eq(cause, why, "%s", s);
	free(dec.data);
}

Test(wire, chunked_strict_errors)
{
	char	*big;

	expect_chunked_error(1, "5x\r\nhello\r\n", 11, "a bad chunk size");
	expect_chunked_error(1, "+5\r\nhello\r\n", 11, "a bad chunk size");
	expect_chunked_error(1, "\r\nhello\r\n", 9, "a bad chunk size");
	expect_chunked_error(1, "000000005\r\nhello\r\n", 18,
	    "a bad chunk size");
	expect_chunked_error(1, "100001\r\n", 8, "a bad chunk size");
	expect_chunked_error(1, "3\r\nhello\r\n", 10,
	    "a chunk longer than its size");
	expect_chunked_error(1, "5\0\r\n", 4, "a NUL byte in the head");
	big = malloc(WIRE_HEAD_MAX + 2);
	memset(big, '0', WIRE_HEAD_MAX + 1);
	big[WIRE_HEAD_MAX + 1] = '\n';
	expect_chunked_error(1, big, WIRE_HEAD_MAX + 1,
	    "a head or chunk line over 16384 bytes");
	expect_chunked_error(1, big, WIRE_HEAD_MAX + 2,
	    "a head or chunk line over 16384 bytes");
	/* The agent's own bound on a line is smaller. */
	expect_chunked_error(0, big, WIRE_LINE_MAX + 1,
	    "a chunk line too long");
	free(big);
	expect_chunked_error(0, "z\r\n", 3, "a bad chunk size");
	expect_chunked_error(0, "ffffffffffffffff\r\n", 18, "a bad chunk size");
	expect_chunked_error(0, "1\r\nab\r\n", 7,
	    "a chunk longer than its size");
}

/* Read an event stream in pieces: "name=data;" for each event. */
static int
sse_read(const char *s, size_t len, size_t piece, struct wire_buf *out,
    const char **cause, int *pending)
{
	struct wire_sse	 sse;
	size_t		 off, n;
	ssize_t		 used;
	int		 ready;

	memset(&sse, 0, sizeof sse);
	for (off = 0; off < len; off += n) {
		n = len - off < piece ? len - off : piece;
		while (n > 0) {
			used = wire_sse_feed(&sse, s + off, n, &ready, cause);
			if (used == -1) {
				wire_sse_free(&sse);
				return (-1);
			}
			if (ready) {
				put_cb(out, wire_sse_name(&sse),
				    strlen(wire_sse_name(&sse)));
				put_cb(out, "=", 1);
				put_cb(out, sse.data.data, sse.data.len);
				put_cb(out, ";", 1);
			}
			off += used;
			n -= used;
		}
	}
	*pending = wire_sse_pending(&sse);
	wire_sse_free(&sse);
	return (0);
}

Test(wire, sse_roundtrip)
{
	struct wire_buf	 enc = { 0 }, dec = { 0 };
	const char	*cause = NULL;
	size_t		 piece;
	int		 pending;

	wire_sse_start(put_cb, &enc, "start");
	put_cb(&enc, "{\"id\":1}", 8);
	wire_sse_end(put_cb, &enc);
	cr_assert_eq(enc.len, wire_sse_size("start", 8));
	wire_sse_start(put_cb, &enc, "stdout");
	put_cb(&enc, "aGk=", 4);
	wire_sse_end(put_cb, &enc);
	put_cb(&enc, ": a comment\r\ndata: one\r\ndata:two\n\n", 34);
	for (piece = 1; piece < 9; piece++) {
		dec.len = 0;
		cr_assert_eq(sse_read(enc.data, enc.len, piece, &dec, &cause,
		    &pending), 0, "%s", cause);
		cr_assert_str_eq(dec.data, "start={\"id\":1};stdout=aGk=;"
		    "message=one\ntwo;");
		cr_assert(!pending);
	}
	dec.len = 0;
	cr_assert_eq(sse_read("event: x\n", 9, 4, &dec, &cause, &pending), 0);
	cr_assert(pending);
	free(enc.data);
	free(dec.data);
}

static void
expect_sse_error(const char *s, size_t len, const char *why)
{
	struct wire_buf	 dec = { 0 };
	const char	*cause = NULL;
	int		 pending;

	cr_assert_eq(sse_read(s, len, 5, &dec, &cause, &pending), -1, "%s", s);
	cr_assert_str_eq(cause, why, "%s", s);
	free(dec.data);
}

Test(wire, sse_errors)
{
	char	*big;

	expect_sse_error("bogus: 1\n\n", 10, "an unknown event field");
	expect_sse_error("event: a\nevent: b\n\n", 19, "a bad event name");
	expect_sse_error("event:\n\n", 8, "a bad event name");
	expect_sse_error("event: 0123456789012345678901234567890123\n\n", 43,
	    "a bad event name");
	expect_sse_error("data: a\0b\n\n", 11, "a NUL byte in an event");
	big = malloc(WIRE_EVENT_MAX + 32);
	memset(big, 'a', WIRE_EVENT_MAX + 32);
	expect_sse_error(big, WIRE_EVENT_MAX + 32,
	    "an event line over 262144 bytes");
	/* Two lines, each within bounds, one event over them. */
	memcpy(big, "data: ", 6);
	big[WIRE_EVENT_MAX / 2] = '\n';
	memcpy(big + WIRE_EVENT_MAX / 2 + 1, "data: ", 6);
	big[WIRE_EVENT_MAX + 30] = '\n';
	expect_sse_error(big, WIRE_EVENT_MAX + 31,
	    "an event over 262144 bytes");
	free(big);
}

Test(wire, json_string)
{
	struct wire_buf	b = { 0 };

	wire_json_string(put_cb, &b, "a\"b\\c\n\x01\x7f\xc3\xa9/");
	cr_assert_str_eq(b.data, "\"a\\\"b\\\\c\\u000a\\u0001\x7f\xc3\xa9/\"");
	b.len = 0;
	wire_json_string(put_cb, &b, "");
	cr_assert_str_eq(b.data, "\"\"");
	free(b.data);
}

/* The seed's encoding: spaces, control bytes, '%' and high bytes as %XX. */
Test(wire, seed_line)
{
	struct wire_buf	 b = { 0 };

	wire_seed_line(put_cb, &b, "env", "A=x y%\n\x7f\xc3\xa9~!");
	cr_assert_str_eq(b.data, "env A=x%20y%25%0A%7F%C3%A9~!\n");
	b.len = 0;
	wire_seed_value(put_cb, &b, "");
	cr_assert_eq(b.len, 0);
	free(b.data);
}
