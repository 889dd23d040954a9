/*
 * qsup mcp's reading of what an MCP client sends (core/cmd/cmd_mcp.c):
 * lines of JSON-RPC from an agent, which qsup does not trust. The input
 * is split into lines, each handled against a stub of the server that
 * answers every call; no line may crash it, and every answer must be one
 * line of JSON.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "client.h"

static int
fuzz_call(void *arg, const char *method, const char *path, json_t *body,
    json_t **reply, char **cause)
{
	(void)arg;
	(void)body;
	(void)cause;
	*reply = json_pack("{s:s, s:s, s:[]}", "method", method, "path", path,
	    "sandboxes");
	return (0);
}

static int
fuzz_exec(void *arg, const char *name, json_t *req, const char *in,
    size_t inlen, struct mcp_exec_result *r, char **cause)
{
	(void)arg;
	(void)req;
	if (name[0] == 'x') {
		*cause = xstrdup("refused");
		return (CLIENT_REFUSED);
	}
	r->exit = json_pack("{s:i}", "status", 0);
	if (in != NULL)
		buf_add(&r->out[0], in, inlen);
	buf_add(&r->out[1], "\xff\xfe", 2);
	return (0);
}

static int
fuzz_put(void *arg, const char *name, const char *path, int mode,
    const void *data, size_t len, char **cause)
{
	(void)arg;
	(void)path;
	(void)mode;
	(void)data;
	(void)len;
	if (name[0] == 'x') {
		*cause = xstrdup("refused");
		return (CLIENT_REFUSED);
	}
	return (0);
}

static int
fuzz_get(void *arg, const char *name, const char *path, size_t max,
    struct buf *b, int *truncated, char **cause)
{
	(void)arg;
	(void)max;
	if (name[0] == 'x') {
		*cause = xstrdup("refused");
		return (CLIENT_REFUSED);
	}
	/* The path's bytes as the file's: any bytes, text or not. */
	buf_add(b, path, strlen(path));
	*truncated = name[0] == 't';
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mcp_backend	 be = { fuzz_call, fuzz_exec, fuzz_put,
				    fuzz_get, NULL, NULL };
	struct mcp		*m;
	const char		*p = (const char *)data, *end = p + size, *nl;
	json_t			*j;
	char			*answer;

	m = mcp_new(&be, "fuzz");
	while (p < end) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		if ((answer = mcp_handle(m, p, nl - p)) != NULL) {
			if (strchr(answer, '\n') != NULL ||
			    (j = json_loads(answer, JSON_DECODE_ANY, NULL)) ==
			    NULL)
				abort();
			json_decref(j);
			free(answer);
		}
		p = nl + (nl < end);
	}
	mcp_free(m);
	return (0);
}
