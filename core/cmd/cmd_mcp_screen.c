/*
 * "qsup mcp"'s tools for computer use: screenshot (an MCP image content
 * block, the PNG in base64), click, type, key and scroll, each a call of
 * qsup serve's screen routes (GET .../screenshot, POST .../input) for a
 * sandbox created with display = "vnc". They check their arguments' types
 * here; the server checks the rest and names the field when it refuses.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client.h"
#include "cmd.h"

#define MCP_SCREEN_PNG_MAX	(32 * 1024 * 1024)	/* a screenshot */

/* Each tool's description and JSON Schema, in JSON. */
static const struct {
	const char	*name;
	const char	*help;
	const char	*schema;
} mcp_screen_tools_table[] = {
	{ "screenshot",
	  "Take a screenshot of a sandbox's screen (a sandbox created with the "
	  "setting display = \"vnc\"). Returns a PNG image.",
	  "{\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"name\"],\"properties\":{"
	  "\"name\":{\"type\":\"string\",\"description\":\"the sandbox's name\"},"
	  "\"scale\":{\"type\":\"number\",\"minimum\":0.1,\"maximum\":1,"
	  "\"description\":\"scale the picture down, 0.1 to 1 (default 1)\"}}}" },
	{ "click",
	  "Click on a sandbox's screen at pixel (x, y), 0-based from the top "
	  "left.",
	  "{\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"name\",\"x\",\"y\"],\"properties\":{"
	  "\"name\":{\"type\":\"string\",\"description\":\"the sandbox's name\"},"
	  "\"x\":{\"type\":\"integer\",\"minimum\":0},"
	  "\"y\":{\"type\":\"integer\",\"minimum\":0},"
	  "\"button\":{\"type\":\"string\",\"enum\":[\"left\",\"right\","
	  "\"middle\"],\"description\":\"default left\"},"
	  "\"double\":{\"type\":\"boolean\",\"description\":\"a double "
	  "click\"}}}" },
	{ "type",
	  "Type text on a sandbox's keyboard (US layout; \\n is Enter).",
	  "{\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"name\",\"text\"],\"properties\":{"
	  "\"name\":{\"type\":\"string\",\"description\":\"the sandbox's name\"},"
	  "\"text\":{\"type\":\"string\",\"maxLength\":4096}}}" },
	{ "key",
	  "Press a key or a chord on a sandbox's keyboard, e.g. [\"ctrl\", "
	  "\"alt\", \"t\"] or [\"enter\"]: pressed in order, released in "
	  "reverse.",
	  "{\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"name\",\"keys\"],\"properties\":{"
	  "\"name\":{\"type\":\"string\",\"description\":\"the sandbox's name\"},"
	  "\"keys\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":8,"
	  "\"items\":{\"type\":\"string\"},\"description\":\"key names: a-z, "
	  "0-9, f1-f12, ctrl, alt, shift, super, enter, esc, tab, space, "
	  "backspace, delete, up, down, left, right, home, end, pageup, "
	  "pagedown, or QEMU's qcodes\"}}}" },
	{ "scroll",
	  "Scroll the wheel at pixel (x, y) of a sandbox's screen: dy steps, "
	  "down when positive.",
	  "{\"type\":\"object\",\"additionalProperties\":false,"
	  "\"required\":[\"name\",\"x\",\"y\",\"dy\"],\"properties\":{"
	  "\"name\":{\"type\":\"string\",\"description\":\"the sandbox's name\"},"
	  "\"x\":{\"type\":\"integer\",\"minimum\":0},"
	  "\"y\":{\"type\":\"integer\",\"minimum\":0},"
	  "\"dy\":{\"type\":\"integer\",\"minimum\":-50,\"maximum\":50}}}" },
};
#define MCP_SCREEN_NTOOLS \
	(sizeof mcp_screen_tools_table / sizeof mcp_screen_tools_table[0])

/* The tools, appended to tools/list's. */
void
mcp_screen_tools(json_t *list)
{
	size_t	i;

	for (i = 0; i < MCP_SCREEN_NTOOLS; i++)
		json_array_append_new(list, json_pack("{s:s, s:s, s:o}",
		    "name", mcp_screen_tools_table[i].name, "description",
		    mcp_screen_tools_table[i].help, "inputSchema",
		    json_loads(mcp_screen_tools_table[i].schema, 0, NULL)));
}

/* The backend's raw GET, over the client. */
int
mcp_screen_fetch(void *arg, const char *path, size_t max, struct buf *b,
    char **cause)
{
	int	truncated = 0, r;

	r = client_fetch(arg, path, -1, b, max, &truncated, cause);
	if (r == 0 && truncated) {
		buf_free(b);
		xasprintf(cause, "more than %zu bytes", max);
		return (-1);
	}
	return (r);
}

static json_t *
mcp_screen_shot(const struct mcp_backend *be, const char *name, json_t *args)
{
	struct buf	 b = { 0 };
	json_t		*scale = json_object_get(args, "scale"), *r;
	char		*path, *rest, *cause = NULL, *data;

	if (scale != NULL && !json_is_number(scale))
		return (mcp_result_text("screenshot: scale: expected a number "
		    "from 0.1 to 1", 1));
	if (be->fetch == NULL)
		return (mcp_result_text("screenshot: not with this backend",
		    1));
	if (scale != NULL)
		xasprintf(&rest, "/screenshot?scale=%g",
		    json_number_value(scale));
	else
		rest = xstrdup("/screenshot");
	path = client_path(name, rest);
	free(rest);
	if (be->fetch(be->arg, path, MCP_SCREEN_PNG_MAX, &b, &cause) != 0) {
		free(path);
		return (mcp_result_error(cause));
	}
	free(path);
	data = mcp_base64(b.data, b.len);
	buf_free(&b);
	r = json_pack("{s:[{s:s, s:s, s:s}], s:b}", "content", "type", "image",
	    "data", data, "mimeType", "image/png", "isError", 0);
	free(data);
	return (r);
}

/* A tool's arguments, but name, as the one event of an input request. */
static json_t *
mcp_screen_input(const struct mcp_backend *be, const char *tool,
    const char *name, json_t *args)
{
	json_t		*ev, *reply = NULL;
	const char	*k;
	json_t		*v;
	char		*path, *cause = NULL;
	int		 r;

	ev = json_pack("{s:s}", "type", strcmp(tool, "type") == 0 ? "text" :
	    tool);
	json_object_foreach(args, k, v) {
		if (strcmp(k, "name") != 0)
			json_object_set(ev, k, v);
	}
	path = client_path(name, "/input");
	r = be->call(be->arg, "POST", path, json_pack("{s:[o]}", "events", ev),
	    &reply, &cause);
	free(path);
	if (r != 0)
		return (mcp_result_error(cause));
	json_decref(reply);
	return (mcp_result_text("done", 0));
}

/*
 * tools/call of a screen tool: its result, or NULL when tool is not one
 * of them.
 */
json_t *
mcp_screen_call(const struct mcp_backend *be, const char *tool, json_t *args)
{
	const char	*name, *k;
	json_t		*v, *schema;
	char		*msg;
	size_t		 i;

	for (i = 0; i < MCP_SCREEN_NTOOLS; i++)
		if (strcmp(mcp_screen_tools_table[i].name, tool) == 0)
			break;
	if (i == MCP_SCREEN_NTOOLS)
		return (NULL);
	if (!json_is_object(args) || (name = json_string_value(
	    json_object_get(args, "name"))) == NULL) {
		xasprintf(&msg, "%s: name: expected the sandbox's name", tool);
		return (mcp_result_error(msg));
	}
	/* Only the schema's own arguments go on to the server. */
	schema = json_loads(mcp_screen_tools_table[i].schema, 0, NULL);
	json_object_foreach(args, k, v) {
		if (json_object_get(json_object_get(schema, "properties"),
		    k) == NULL) {
			json_decref(schema);
			xasprintf(&msg, "%s: %s: unknown argument", tool, k);
			return (mcp_result_error(msg));
		}
	}
	json_decref(schema);
	if (strcmp(tool, "screenshot") == 0)
		return (mcp_screen_shot(be, name, args));
	return (mcp_screen_input(be, tool, name, args));
}
