/*
 * --record (core/httpd/httpd_record.c): a real server on a real loop
 * (httpd_helpers.h) writes one JSON line per response, with the route
 * the handler named, the body of JSON and text (and only the count of
 * other bytes), each event of a stream, a head refused before any
 * request, and a stream its client cut.
 */
#include "httpd_helpers.h"

TestSuite(httpd_record, .init = setup, .fini = teardown, .timeout = 20);

/* The helpers' handler, with a route named for the record. */
static void
routed(struct httpd_conn *c, const struct httpd_req *req, void *arg)
{
	if (strcmp(req->path, "/hello") == 0)
		httpd_set_route(c, "/{greeting}");
	handler(c, req, arg);
}

/* What the record holds so far. */
static char *
record(const char *path)
{
	size_t	len;
	char	*s;

	cr_assert_not_null(s = util_read_file(path, &len, 1 << 20), "%s",
	    path);
	return (s);
}

Test(httpd_record, a_line_per_response)
{
	struct buf	 got = { 0 };
	char		*cause, spec[300], rec[300], *s;
	int		 fd;

	srv = httpd_new(loop, NULL, routed, &app);
	snprintf(spec, sizeof spec, "unix:%s", sock);
	snprintf(rec, sizeof rec, "%s/rec.jsonl", dir);
	cr_assert_eq(httpd_record(srv, rec, &cause), 0);
	if (httpd_listen(srv, spec, NULL, NULL, &cause) == -1)
		cr_assert_fail("%s", cause);
	fd = client_unix();
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\nGET /blob HTTP/1.1\r\n\r\n"
	    "GET /sse HTTP/1.1\r\n\r\nGET /nope HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "no such path", 5), 0, "%s", got.data);
	puts_(fd, "GET /quiet HTTP/1.1\r\n\r\n");
	buf_free(&got);
	cr_assert_eq(get(fd, &got, "text/event-stream", 5), 0);
	close(fd);
	while (app.closed == 0)
		turn();
	fd = client_unix();
	puts_(fd, "NOT A REQUEST\r\n\r\n");
	buf_free(&got);
	cr_assert_eq(get(fd, &got, NULL, 5), 1);
	close(fd);
	s = record(rec);
	cr_assert_eq(count(s, "\n"), 6, "%s", s);
	cr_assert_not_null(strstr(s, "{\"method\":\"GET\",\"path\":\"/hello\","
	    "\"route\":\"/{greeting}\",\"status\":200,\"type\":\"text/plain\","
	    "\"allow\":null,\"body\":\"hello\",\"body_bytes\":5,"
	    "\"body_cut\":false,\"ended\":true}\n"), "%s", s);
	cr_assert_not_null(strstr(s, "\"path\":\"/blob\",\"route\":null,"
	    "\"status\":200,\"type\":null,\"allow\":null,\"body\":null,"
	    "\"body_bytes\":65536,"), "%s", s);
	cr_assert_not_null(strstr(s, "\"type\":\"text/event-stream\","
	    "\"allow\":null,\"events\":[{\"event\":\"x\",\"data\":\"a\\u000ab\"}],"
	    "\"events_cut\":false,\"ended\":true}"), "%s", s);
	cr_assert_not_null(strstr(s, "\"status\":404,\"type\":"
	    "\"application/json\",\"allow\":null,\"body\":\"{\\\"error\\\":"
	    "\\\"no such path\\\",\\\"path\\\":\\\"?\\\"}\""), "%s", s);
	cr_assert_not_null(strstr(s, "\"path\":\"/quiet\",\"route\":null,"
	    "\"status\":200,\"type\":\"text/event-stream\",\"allow\":null,"
	    "\"events\":[],\"events_cut\":false,\"ended\":false}"), "%s", s);
	cr_assert_not_null(strstr(s, "{\"method\":null,\"path\":null,"
	    "\"route\":null,\"status\":400,"), "%s", s);
	free(s);
	buf_free(&got);
}

Test(httpd_record, a_file_that_cannot_be_made)
{
	char	*cause = NULL;

	srv = httpd_new(loop, NULL, handler, &app);
	cr_assert_eq(httpd_record(srv, "/nonexistent/dir/rec.jsonl", &cause),
	    -1);
	cr_assert_str_eq(cause, "--record /nonexistent/dir/rec.jsonl: No "
	    "such file or directory");
	free(cause);
}
