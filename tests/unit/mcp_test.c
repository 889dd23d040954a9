/*
 * qsup mcp's JSON-RPC (core/cmd/cmd_mcp.c) against a stub of the server:
 * the handshake, the tools and their schemas, each tool's calls of the
 * API and its result, and JSON-RPC's errors.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <jansson.h>

#include "cmd.h"
#include "client.h"

/* What the stub was asked, and what it answers. */
struct stub {
	char		 method[16];
	char		 path[256];
	char		*body;		/* the JSON sent, or the file's bytes */
	size_t		 len;
	char		*in;		/* exec's stdin */
	size_t		 inlen;
	int		 mode;
	int		 calls;
	int		 fail;		/* answer CLIENT_REFUSED */
	const char	*reply;		/* JSON */
	const char	*file;		/* get's bytes */
	size_t		 filelen;
	int		 truncated;
	const char	*out;		/* exec's stdout */
	size_t		 outlen;
	const char	*exit;		/* exec's exit event */
};

static struct stub	stub;

static void
stub_reset(void)
{
	free(stub.body);
	free(stub.in);
	memset(&stub, 0, sizeof stub);
}

static int
stub_call(void *arg, const char *method, const char *path, json_t *body,
    json_t **reply, char **cause)
{
	(void)arg;
	stub.calls++;
	snprintf(stub.method, sizeof stub.method, "%s", method);
	snprintf(stub.path, sizeof stub.path, "%s", path);
	free(stub.body);
	stub.body = body != NULL ? json_dumps(body, JSON_COMPACT |
	    JSON_SORT_KEYS) : NULL;
	if (stub.fail) {
		*cause = xstrdup("no such sandbox");
		return (CLIENT_REFUSED);
	}
	*reply = stub.reply != NULL ? json_loads(stub.reply, 0, NULL) : NULL;
	return (0);
}

static int
stub_exec(void *arg, const char *name, json_t *req, const char *in,
    size_t inlen, struct mcp_exec_result *r, char **cause)
{
	(void)arg;
	stub.calls++;
	snprintf(stub.path, sizeof stub.path, "%s", name);
	free(stub.body);
	stub.body = json_dumps(req, JSON_COMPACT|JSON_SORT_KEYS);
	if (in != NULL) {
		stub.in = xmalloc(inlen + 1);
		memcpy(stub.in, in, inlen);
		stub.inlen = inlen;
	}
	if (stub.fail) {
		*cause = xstrdup("no such sandbox");
		return (CLIENT_REFUSED);
	}
	r->exit = json_loads(stub.exit, 0, NULL);
	r->code = json_integer_value(json_object_get(r->exit, "status"));
	if (stub.out != NULL)
		buf_add(&r->out[0], stub.out, stub.outlen);
	buf_add(&r->out[1], "warn\n", 5);
	r->truncated[0] = stub.truncated;
	return (0);
}

static int
stub_put(void *arg, const char *name, const char *path, int mode,
    const void *data, size_t len, char **cause)
{
	(void)arg;
	stub.calls++;
	snprintf(stub.method, sizeof stub.method, "%s", name);
	snprintf(stub.path, sizeof stub.path, "%s", path);
	free(stub.body);
	stub.body = xmalloc(len + 1);
	memcpy(stub.body, data, len);
	stub.len = len;
	stub.mode = mode;
	if (stub.fail) {
		*cause = xstrdup("a directory is there");
		return (CLIENT_REFUSED);
	}
	return (0);
}

static int
stub_get(void *arg, const char *name, const char *path, size_t max,
    struct buf *b, int *truncated, char **cause)
{
	(void)arg;
	(void)max;
	stub.calls++;
	snprintf(stub.method, sizeof stub.method, "%s", name);
	snprintf(stub.path, sizeof stub.path, "%s", path);
	if (stub.fail) {
		*cause = xstrdup("no such file");
		return (CLIENT_REFUSED);
	}
	buf_add(b, stub.file, stub.filelen);
	*truncated = stub.truncated;
	return (0);
}

static struct mcp *
stub_mcp(void)
{
	struct mcp_backend	be = { stub_call, stub_exec, stub_put,
				    stub_get, NULL, NULL };

	stub_reset();
	return (mcp_new(&be, "9.9"));
}

/* The answer to line, parsed; NULL when there is none. */
static json_t *
ask(struct mcp *m, const char *line)
{
	json_t	*j;
	char	*text;

	if ((text = mcp_handle(m, line, strlen(line))) == NULL)
		return (NULL);
	cr_assert(strchr(text, '\n') == NULL, "an answer is one line");
	j = json_loads(text, 0, NULL);
	cr_assert_not_null(j, "not JSON: %s", text);
	free(text);
	return (j);
}

static void
expect_error(struct mcp *m, const char *line, int code, json_t *id)
{
	json_t	*r;

	r = ask(m, line);
	cr_assert_not_null(r, "%s: no answer", line);
	cr_assert_eq(json_integer_value(json_path(r, "error.code")), code,
	    "%s: %s", line, json_dumps(r, 0));
	cr_assert(json_is_string(json_path(r, "error.message")));
	cr_assert(json_equal(json_object_get(r, "id"), id), "%s: id", line);
	cr_assert_null(json_object_get(r, "result"));
	json_decref(r);
}

/* A tools/call's result: its text, and whether it is an error. */
static char *
call(struct mcp *m, const char *tool, const char *args, int *error)
{
	json_t	*r, *res;
	char	*line, *text;

	xasprintf(&line, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"%s\",\"arguments\":%s}}",
	    tool, args);
	r = ask(m, line);
	free(line);
	cr_assert_not_null(r);
	cr_assert_eq(json_integer_value(json_object_get(r, "id")), 42, "%s",
	    json_dumps(r, 0));
	res = json_object_get(r, "result");
	cr_assert_not_null(res, "%s: %s", tool, json_dumps(r, 0));
	*error = json_is_true(json_object_get(res, "isError"));
	cr_assert_str_eq(json_string_value(json_path(json_array_get(
	    json_object_get(res, "content"), 0), "type")), "text");
	text = xstrdup(json_string_value(json_path(json_array_get(
	    json_object_get(res, "content"), 0), "text")));
	json_decref(r);
	return (text);
}

Test(mcp, initialize)
{
	struct mcp	*m = stub_mcp();
	json_t		*r;

	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"2024-11-05\",\"capabilities\":"
	    "{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
	cr_assert_str_eq(json_path_str(r, "jsonrpc"), "2.0");
	cr_assert_eq(json_integer_value(json_object_get(r, "id")), 1);
	cr_assert_str_eq(json_path_str(r, "result.protocolVersion"),
	    "2024-11-05");
	cr_assert(json_is_object(json_path(r, "result.capabilities.tools")));
	cr_assert_str_eq(json_path_str(r, "result.serverInfo.name"), "qsup");
	cr_assert_str_eq(json_path_str(r, "result.serverInfo.version"), "9.9");
	json_decref(r);
	/* A newer version we speak is answered as asked; others with ours. */
	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":"
	    "\"initialize\",\"params\":{\"protocolVersion\":\"2025-03-26\"}}");
	cr_assert_str_eq(json_path_str(r, "id"), "a");
	cr_assert_str_eq(json_path_str(r, "result.protocolVersion"),
	    "2025-03-26");
	json_decref(r);
	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\","
	    "\"params\":{\"protocolVersion\":\"1999-01-01\"}}");
	cr_assert_str_eq(json_path_str(r, "result.protocolVersion"),
	    "2024-11-05");
	json_decref(r);
	/* Notifications get no answer, known or not. */
	cr_assert_null(ask(m, "{\"jsonrpc\":\"2.0\",\"method\":"
	    "\"notifications/initialized\"}"));
	cr_assert_null(ask(m, "{\"jsonrpc\":\"2.0\",\"method\":\"whatever\"}"));
	cr_assert_null(ask(m, "   "));
	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
	cr_assert(json_is_object(json_object_get(r, "result")));
	cr_assert_eq(json_object_size(json_object_get(r, "result")), 0);
	json_decref(r);
	mcp_free(m);
	stub_reset();
}

Test(mcp, tools_list)
{
	static const char	*names[] = { "sandbox_create", "sandbox_exec",
				    "sandbox_file_write", "sandbox_file_read",
				    "sandbox_list", "sandbox_destroy",
				    "sandbox_pause", "sandbox_resume",
				    "sandbox_snapshot", "sandbox_snapshot_list",
				    "sandbox_snapshot_delete", "sandbox_fork",
				    "screenshot", "click", "type", "key",
				    "scroll" };
	struct mcp		*m = stub_mcp();
	json_t			*r, *tools, *t, *s;
	size_t			 i;

	r = ask(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	tools = json_path(r, "result.tools");
	cr_assert_eq(json_array_size(tools), 17);
	json_array_foreach(tools, i, t) {
		cr_assert_str_eq(json_path_str(t, "name"), names[i]);
		cr_assert(strlen(json_path_str(t, "description")) > 20);
		s = json_object_get(t, "inputSchema");
		cr_assert_str_eq(json_path_str(s, "type"), "object");
		cr_assert(json_is_object(json_object_get(s, "properties")));
	}
	s = json_object_get(json_array_get(tools, 1), "inputSchema");
	t = json_pack("[s,s]", "name", "argv");
	cr_assert(json_equal(json_object_get(s, "required"), t));
	json_decref(t);
	cr_assert_str_eq(json_path_str(s, "properties.argv.type"), "array");
	cr_assert_str_eq(json_path_str(s, "properties.argv.items.type"),
	    "string");
	cr_assert_str_eq(json_path_str(s, "properties.timeout.type"),
	    "number");
	s = json_object_get(json_array_get(tools, 2), "inputSchema");
	cr_assert_eq(json_array_size(json_object_get(s, "required")), 3);
	cr_assert_eq(json_array_size(json_path(s,
	    "properties.encoding.enum")), 2);
	s = json_object_get(json_array_get(tools, 4), "inputSchema");
	cr_assert_null(json_object_get(s, "required"));
	json_decref(r);
	mcp_free(m);
	stub_reset();
}

Test(mcp, rpc_errors)
{
	struct mcp	*m = stub_mcp();
	json_t		*one = json_integer(1), *r;

	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,", -32700,
	    json_null());
	expect_error(m, "garbage", -32700, json_null());
	expect_error(m, "5", -32600, json_null());
	expect_error(m, "[]", -32600, json_null());
	expect_error(m, "{\"id\":1,\"method\":\"ping\"}", -32600, one);
	expect_error(m, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
	    -32600, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}",
	    -32600, json_null());
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1}", -32600, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope\"}",
	    -32601, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\","
	    "\"params\":5}", -32600, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_nope\"}}", -32602,
	    one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{}}", -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_exec\","
	    "\"arguments\":{\"name\":\"a\"}}}", -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_exec\","
	    "\"arguments\":{\"name\":\"a\",\"argv\":[]}}}", -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_exec\","
	    "\"arguments\":{\"name\":\"a\",\"argv\":[1]}}}", -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_exec\","
	    "\"arguments\":{\"name\":\"a\",\"argv\":[\"x\"],\"user\":\"r\"}}}",
	    -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_destroy\","
	    "\"arguments\":{\"name\":\"../etc\"}}}", -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_file_read\","
	    "\"arguments\":{\"name\":\"a\",\"path\":\"rel\"}}}", -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_file_write\","
	    "\"arguments\":{\"name\":\"a\",\"path\":\"/f\",\"content\":\"\","
	    "\"mode\":\"999\"}}}", -32602, one);
	expect_error(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":"
	    "\"tools/call\",\"params\":{\"name\":\"sandbox_create\","
	    "\"arguments\":{\"settings\":{\"x\":[1]}}}}", -32602, one);
	cr_assert_eq(stub.calls, 0, "no bad call reached the server");

	/* A batch: an answer for each request, none for notifications. */
	r = ask(m, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"},"
	    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"nope\"}]");
	cr_assert_eq(json_array_size(r), 2);
	cr_assert_eq(json_integer_value(json_path(json_array_get(r, 1),
	    "error.code")), -32601);
	json_decref(r);
	cr_assert_null(ask(m, "[{\"jsonrpc\":\"2.0\",\"method\":\"x\"}]"));
	/* A response to us (we ask nothing) is dropped. */
	cr_assert_null(ask(m, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"));
	json_decref(one);
	mcp_free(m);
	stub_reset();
}

Test(mcp, tool_calls)
{
	struct mcp	*m = stub_mcp();
	json_t		*j;
	char		*text;
	int		 err;

	stub.reply = "{\"name\":\"sb-1\",\"state\":\"ready\"}";
	text = call(m, "sandbox_create", "{\"profile\":\"default\","
	    "\"settings\":{\"memory\":\"1G\",\"cpus\":2}}", &err);
	cr_assert(!err);
	cr_assert_str_eq(stub.method, "POST");
	cr_assert_str_eq(stub.path, "/v1/sandboxes");
	cr_assert_str_eq(stub.body, "{\"profile\":\"default\",\"settings\":"
	    "{\"cpus\":2,\"memory\":\"1G\"}}");
	cr_assert(strstr(text, "\"sb-1\"") != NULL, "%s", text);
	free(text);

	stub.reply = "{\"sandboxes\":[]}";
	text = call(m, "sandbox_list", "{}", &err);
	cr_assert(!err);
	cr_assert_str_eq(stub.method, "GET");
	cr_assert_str_eq(stub.path, "/v1/sandboxes");
	cr_assert_str_eq(text, "{\"sandboxes\":[]}");
	free(text);

	stub.reply = "{\"name\":\"sb-1\",\"state\":\"deleted\"}";
	text = call(m, "sandbox_destroy", "{\"name\":\"sb-1\"}", &err);
	cr_assert(!err);
	cr_assert_str_eq(stub.method, "DELETE");
	cr_assert_str_eq(stub.path, "/v1/sandboxes/sb-1");
	free(text);

	/* The server's refusal is the tool's error, not JSON-RPC's. */
	stub.fail = 1;
	text = call(m, "sandbox_destroy", "{\"name\":\"sb-2\"}", &err);
	cr_assert(err);
	cr_assert_str_eq(text, "no such sandbox");
	free(text);
	mcp_free(m);
	stub_reset();

	/* exec: the request, stdin, and output made UTF-8. */
	m = stub_mcp();
	stub.exit = "{\"status\":3,\"signal\":null,\"timed_out\":false,"
	    "\"error\":null}";
	stub.out = "ok\xff\n";
	stub.outlen = 4;
	stub.truncated = 1;
	text = call(m, "sandbox_exec", "{\"name\":\"sb-1\",\"argv\":[\"sh\","
	    "\"-c\",\"cat\"],\"stdin\":\"in\\u0000put\",\"env\":{\"A\":\"1\"},"
	    "\"cwd\":\"/tmp\",\"timeout\":5}", &err);
	cr_assert(!err, "%s", text);
	cr_assert_str_eq(stub.path, "sb-1");
	cr_assert_str_eq(stub.body, "{\"argv\":[\"sh\",\"-c\",\"cat\"],"
	    "\"cwd\":\"/tmp\",\"env\":{\"A\":\"1\"},\"stdin\":true,"
	    "\"timeout\":5}");
	cr_assert_eq(stub.inlen, 6);
	cr_assert(memcmp(stub.in, "in\0put", 6) == 0);
	j = json_loads(text, 0, NULL);
	cr_assert_eq(json_integer_value(json_object_get(j, "exit_code")), 3);
	cr_assert_eq(json_integer_value(json_object_get(j, "status")), 3);
	cr_assert(json_is_null(json_object_get(j, "signal")));
	cr_assert_str_eq(json_path_str(j, "stdout"), "ok\xef\xbf\xbd\n");
	cr_assert_str_eq(json_path_str(j, "stderr"), "warn\n");
	cr_assert(json_is_true(json_object_get(j, "stdout_truncated")));
	cr_assert(json_is_false(json_object_get(j, "stderr_truncated")));
	json_decref(j);
	free(text);
	/* Without stdin the command reads end of file. */
	stub_reset();
	stub.exit = "{\"status\":0}";
	text = call(m, "sandbox_exec", "{\"name\":\"x\",\"argv\":[\"true\"]}",
	    &err);
	cr_assert_str_eq(stub.body, "{\"argv\":[\"true\"]}");
	cr_assert_null(stub.in);
	free(text);
	stub.fail = 1;
	text = call(m, "sandbox_exec", "{\"name\":\"x\",\"argv\":[\"true\"]}",
	    &err);
	cr_assert(err);
	free(text);
	mcp_free(m);
	stub_reset();
}

Test(mcp, files)
{
	struct mcp	*m = stub_mcp();
	char		*text;
	int		 err;

	text = call(m, "sandbox_file_write", "{\"name\":\"a\",\"path\":"
	    "\"/etc/x\",\"content\":\"h\\u00e9\\n\"}", &err);
	cr_assert(!err, "%s", text);
	cr_assert_str_eq(stub.method, "a");
	cr_assert_str_eq(stub.path, "/etc/x");
	cr_assert_eq(stub.len, 4);
	cr_assert(memcmp(stub.body, "h\xc3\xa9\n", 4) == 0);
	cr_assert_eq(stub.mode, -1);
	cr_assert(strstr(text, "\"size\":4") != NULL, "%s", text);
	free(text);
	text = call(m, "sandbox_file_write", "{\"name\":\"a\",\"path\":"
	    "\"/bin/x\",\"content\":\"AP8K\",\"encoding\":\"base64\","
	    "\"mode\":\"0755\"}", &err);
	cr_assert(!err);
	cr_assert_eq(stub.len, 3);
	cr_assert(memcmp(stub.body, "\0\xff\n", 3) == 0);
	cr_assert_eq(stub.mode, 0755);
	free(text);
	text = call(m, "sandbox_file_write", "{\"name\":\"a\",\"path\":"
	    "\"/x\",\"content\":\"no*t\",\"encoding\":\"base64\"}", &err);
	cr_assert(err);
	cr_assert(strstr(text, "base64") != NULL);
	free(text);

	stub.file = "text\n";
	stub.filelen = 5;
	text = call(m, "sandbox_file_read", "{\"name\":\"a\",\"path\":\"/f\"}",
	    &err);
	cr_assert(!err);
	cr_assert_str_eq(text, "text\n");
	free(text);
	stub.file = "\0\xff";
	stub.filelen = 2;
	text = call(m, "sandbox_file_read", "{\"name\":\"a\",\"path\":\"/f\"}",
	    &err);
	cr_assert(err);
	cr_assert(strstr(text, "base64") != NULL, "%s", text);
	free(text);
	text = call(m, "sandbox_file_read", "{\"name\":\"a\",\"path\":\"/f\","
	    "\"encoding\":\"base64\"}", &err);
	cr_assert(!err);
	cr_assert_str_eq(text, "AP8=");
	free(text);
	/* Cut inside a character: the part before it is whole text. */
	stub.file = "ab\xc3";
	stub.filelen = 3;
	stub.truncated = 1;
	text = call(m, "sandbox_file_read", "{\"name\":\"a\",\"path\":\"/f\"}",
	    &err);
	cr_assert(!err);
	cr_assert_str_eq(text, "ab");
	free(text);
	stub.fail = 1;
	text = call(m, "sandbox_file_read", "{\"name\":\"a\",\"path\":\"/f\"}",
	    &err);
	cr_assert(err);
	cr_assert_str_eq(text, "no such file");
	free(text);
	mcp_free(m);
	stub_reset();
}

static void
clean_is(const char *in, size_t len, const char *want)
{
	struct buf	b;

	memset(&b, 0, sizeof b);
	mcp_utf8_clean(in, len, &b);
	cr_assert_eq(b.len, len == 3 && in[1] == '\0' ? 3 : strlen(want),
	    "%zu bytes", len);
	cr_assert(memcmp(b.data, want, b.len) == 0);
	buf_free(&b);
}

Test(mcp, utf8_and_base64)
{
	char	*s;

	clean_is("", 0, "");
	clean_is("abc", 3, "abc");
	clean_is("h\xc3\xa9", 3, "h\xc3\xa9");
	clean_is("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80");
	clean_is("a\xff" "b", 3, "a\xef\xbf\xbd" "b");
	clean_is("\xc3", 1, "\xef\xbf\xbd");
	clean_is("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd");	/* overlong */
	clean_is("\xed\xa0\x80", 3,
	    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");		/* surrogate */
	clean_is("\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd"
	    "\xef\xbf\xbd\xef\xbf\xbd");			/* > U+10FFFF */
	clean_is("a\0b", 3, "a\0b");
	s = mcp_base64("", 0);
	cr_assert_str_eq(s, "");
	free(s);
	s = mcp_base64("f", 1);
	cr_assert_str_eq(s, "Zg==");
	free(s);
	s = mcp_base64("fo", 2);
	cr_assert_str_eq(s, "Zm8=");
	free(s);
	s = mcp_base64("foobar", 6);
	cr_assert_str_eq(s, "Zm9vYmFy");
	free(s);
}
