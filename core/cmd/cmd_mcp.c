/*
 * "qsup mcp": a Model Context Protocol server on stdio for agents, its
 * tools the API's calls (sandbox_create, sandbox_exec, sandbox_file_write,
 * sandbox_file_read, sandbox_list, sandbox_destroy, sandbox_pause,
 * sandbox_resume, sandbox_snapshot, sandbox_snapshot_list,
 * sandbox_snapshot_delete, sandbox_fork; and cmd_mcp_screen.c's screen
 * tools). The transport is
 * MCP's stdio one: JSON-RPC 2.0, one message a line each way. It talks
 * to the qsup serve at --host (QSUP_HOST, the default socket) if one
 * answers there, else to one it starts for its own lifetime in a private
 * directory and stops on stdin's end or SIGTERM.
 *
 * mcp_handle takes one line and gives the line to answer with; it knows
 * the server only through a backend (struct mcp_backend), the client's
 * here and a stub in the unit tests.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "client.h"

static int	cmd_mcp_exec(const struct cmd_entry *, int, char **);

#define CMD_MCP_HOST	(CMD_O_LONG + 0)
#define CMD_MCP_CACERT	(CMD_O_LONG + 1)

static const struct cmd_option cmd_mcp_options[] = {
	{ CMD_MCP_HOST, "host", CMD_V_STRING, "HOST", 0,
	  "the server (default: QSUP_HOST, else\n"
	  "unix:$XDG_RUNTIME_DIR/qsup/qsup.sock)" },
	{ CMD_MCP_CACERT, "cacert", CMD_V_FILE, "FILE", 0,
	  "the CA of an https server (default: QSUP_CACERT)" },
	{ 'v', "verbose", CMD_V_NONE, NULL, CMD_O_HIDDEN, NULL },
	CMD_OPTION_HELP,
	{ 0, NULL, 0, NULL, 0, NULL }
};

const struct cmd_entry cmd_mcp_entry = {
	.name = "mcp",
	.usage = "mcp [--host HOST] [--cacert FILE]",
	.summary = "a Model Context Protocol server on stdio, for agents",
	.help =
"Speak MCP (JSON-RPC 2.0, one message a line, protocol 2024-11-05, or the\n"
"client's 2025-03-26 or 2025-06-18) on stdin and stdout, with the tools\n"
"sandbox_create, sandbox_exec, sandbox_file_write, sandbox_file_read,\n"
"sandbox_list, sandbox_destroy, sandbox_pause, sandbox_resume,\n"
"sandbox_snapshot, sandbox_snapshot_list, sandbox_snapshot_delete,\n"
"sandbox_fork, and for a display sandbox's screen screenshot, click,\n"
"type, key and scroll. They are calls of the qsup serve at HOST when one\n"
"answers there; otherwise qsup mcp starts one of its own, on a socket in a\n"
"private directory, and stops it (its sandboxes with it) when stdin ends\n"
"or on SIGTERM. Messages are at most 16 MiB; an exec's stdout and stderr\n"
"and a file read are given up to 1 MiB each.\n"
"\n",
	.options = cmd_mcp_options,
	.exec = cmd_mcp_exec
};

/* JSON-RPC's error codes. */
#define MCP_PARSE_ERROR		-32700
#define MCP_INVALID_REQUEST	-32600
#define MCP_NO_METHOD		-32601
#define MCP_INVALID_PARAMS	-32602

#define MCP_PROTOCOL		"2024-11-05"
static const char *const mcp_protocols[] = {
	"2024-11-05", "2025-03-26", "2025-06-18", NULL
};

struct mcp {
	struct mcp_backend	 be;
	char			*version;
};

/* An argument's type, for its schema and for checking it. */
enum mcp_type {
	MCP_STRING,
	MCP_NAME,	/* a sandbox's name */
	MCP_PATH,	/* an absolute path */
	MCP_ARGV,	/* a non-empty array of strings */
	MCP_ENV,	/* an object of strings */
	MCP_SETTINGS,	/* an object of strings, numbers, booleans */
	MCP_SECONDS,	/* a number, 0 or more */
	MCP_ENCODING,	/* "utf-8" or "base64" */
	MCP_MODE,	/* octal digits, a string */
	MCP_DISK,	/* {"path": ABSOLUTE, "writable": BOOL} */
	MCP_COUNT,	/* an integer, 1 to 16 */
	MCP_BOOL
};

struct mcp_arg {
	const char	*name;
	enum mcp_type	 type;
	int		 required;
	const char	*help;
};

struct mcp_call;
struct mcp_tool {
	const char		*name;
	const char		*help;
	struct mcp_arg		 args[11];	/* NULL-named at the end */
	json_t		       *(*run)(struct mcp *, json_t *);
};

static json_t	*mcp_tool_create(struct mcp *, json_t *);
static json_t	*mcp_tool_exec(struct mcp *, json_t *);
static json_t	*mcp_tool_write(struct mcp *, json_t *);
static json_t	*mcp_tool_read(struct mcp *, json_t *);
static json_t	*mcp_tool_list(struct mcp *, json_t *);
static json_t	*mcp_tool_destroy(struct mcp *, json_t *);
static json_t	*mcp_tool_pause(struct mcp *, json_t *);
static json_t	*mcp_tool_resume(struct mcp *, json_t *);
static json_t	*mcp_tool_snapshot(struct mcp *, json_t *);
static json_t	*mcp_tool_snapshot_list(struct mcp *, json_t *);
static json_t	*mcp_tool_snapshot_delete(struct mcp *, json_t *);
static json_t	*mcp_tool_fork(struct mcp *, json_t *);

#define MCP_NAME_HELP	"the sandbox's name"

static const struct mcp_tool mcp_tools[] = {
	{ "sandbox_create",
	  "Start a new disposable sandbox (a QEMU microVM running Linux) and "
	  "wait until it is ready. Returns the sandbox as JSON; use its "
	  "\"name\" with the other tools.",
	  { { "name", MCP_NAME, 0, "a name for it: 1-63 of a-z 0-9 _ . -, "
	      "starting with a letter or digit (default: the server picks "
	      "sb-N)" },
	    { "profile", MCP_STRING, 0, "the qsup profile to start it with "
	      "(default: the server's)" },
	    { "settings", MCP_SETTINGS, 0, "profile settings to override, "
	      "e.g. {\"memory\": \"1G\", \"cpus\": 2}" },
	    { "ttl", MCP_SECONDS, 0, "end it this many seconds after its "
	      "creation (default: never)" },
	    { "idle_ttl", MCP_SECONDS, 0, "end it after this many seconds "
	      "without an exec or a file call (default: never)" },
	    { "on_ttl", MCP_STRING, 0, "what ending is: \"delete\" (default) "
	      "or \"pause\"" },
	    { "disk", MCP_DISK, 0, "boot on this disk image of the server's "
	      "host: on a fresh overlay, or, with writable true, on the file "
	      "itself, which keeps what the guest writes" },
	    { "snapshot", MCP_NAME, 0, "start it from this snapshot, with its "
	      "processes and files as they were (no profile or settings "
	      "then)" },
	    { "persistent", MCP_BOOL, 0, "keep it across server restarts" },
	    { "persist_every", MCP_SECONDS, 0, "and save it this often" },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_create },
	{ "sandbox_exec",
	  "Run a command in a sandbox and wait for it to end. Returns JSON: "
	  "exit_code (the command's status; 128+N if signal N killed it; 124 "
	  "on its timeout), status, signal, timed_out, error, and its stdout "
	  "and stderr as text (at most 1 MiB each, *_truncated saying when "
	  "there was more; bytes that are not UTF-8 become U+FFFD).",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { "argv", MCP_ARGV, 1, "the command and its arguments, e.g. "
	      "[\"sh\", \"-c\", \"ls -l /\"]" },
	    { "stdin", MCP_STRING, 0, "text for the command's stdin (default: "
	      "none, it reads end of file)" },
	    { "env", MCP_ENV, 0, "environment variables to set" },
	    { "cwd", MCP_PATH, 0, "its working directory" },
	    { "timeout", MCP_SECONDS, 0, "kill it after this many seconds "
	      "(default: no limit)" },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_exec },
	{ "sandbox_file_write",
	  "Write a file in a sandbox, whole or not at all (its directory must "
	  "exist).",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { "path", MCP_PATH, 1, "the file's absolute path" },
	    { "content", MCP_STRING, 1, "the file's content" },
	    { "encoding", MCP_ENCODING, 0, "how content is written: \"utf-8\" "
	      "text (default) or \"base64\" for any bytes" },
	    { "mode", MCP_MODE, 0, "its mode in octal, e.g. \"0755\" (default "
	      "\"0644\")" },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_write },
	{ "sandbox_file_read",
	  "Read a file of a sandbox (at most 1 MiB of it; the result says "
	  "when there was more).",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { "path", MCP_PATH, 1, "the file's absolute path" },
	    { "encoding", MCP_ENCODING, 0, "\"utf-8\" (default; a file that "
	      "is not UTF-8 text is refused) or \"base64\"" },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_read },
	{ "sandbox_list",
	  "List the sandboxes, as JSON: name, state (booting, ready, paused, "
	  "stopping, dead), and more of each.",
	  { { NULL, 0, 0, NULL } },
	  mcp_tool_list },
	{ "sandbox_destroy",
	  "Tear a sandbox down; whatever was in it is gone. Returns the "
	  "teardown report as JSON.",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_destroy },
	{ "sandbox_pause",
	  "Pause a sandbox: its processes, memory and files are kept as they "
	  "are and it uses no CPU; execs and file calls are refused until "
	  "it is resumed. Returns the sandbox as JSON.",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_pause },
	{ "sandbox_resume",
	  "Resume a paused sandbox where it was. Returns the sandbox as JSON.",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_resume },
	{ "sandbox_snapshot",
	  "Save a ready or paused sandbox whole (memory, processes, files) "
	  "as a named snapshot on the server's disk; sandbox_create with "
	  "\"snapshot\" starts copies of it. Returns the snapshot as JSON.",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { "snapshot", MCP_NAME, 1, "the snapshot's name: 1-63 of a-z 0-9 "
	      "_ . -, starting with a letter or digit" },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_snapshot },
	{ "sandbox_snapshot_list",
	  "List the snapshots, as JSON: name, sandbox it came from, created, "
	  "size_bytes, pause_ms.",
	  { { NULL, 0, 0, NULL } },
	  mcp_tool_snapshot_list },
	{ "sandbox_snapshot_delete",
	  "Delete a snapshot (sandboxes made from it run on).",
	  { { "snapshot", MCP_NAME, 1, "the snapshot's name" },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_snapshot_delete },
	{ "sandbox_fork",
	  "Make running copies of a ready or paused sandbox (which stays as it "
	  "was), each with its processes, memory and files, its own disk, "
	  "clock, entropy, card address: NAME-f1... Returns them as JSON.",
	  { { "name", MCP_NAME, 1, MCP_NAME_HELP },
	    { "count", MCP_COUNT, 0, "how many copies, 1 to 16 (default 1)" },
	    { "machine_id", MCP_BOOL, 0, "a new /etc/machine-id per copy" },
	    { NULL, 0, 0, NULL } },
	  mcp_tool_fork },
	{ NULL, NULL, { { NULL, 0, 0, NULL } }, NULL }
};

/* A JSON-RPC error, as a whole response. */
static json_t *
mcp_error(json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static json_t *
mcp_error(json_t *id, int code, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;
	json_t	*r;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	r = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
	    id != NULL ? id : json_null(), "error", "code", code, "message",
	    msg);
	free(msg);
	return (r);
}

/* One argument's schema. */
static json_t *
mcp_arg_schema(const struct mcp_arg *a)
{
	json_t	*s;

	switch (a->type) {
	case MCP_NAME:
		s = json_pack("{s:s, s:s}", "type", "string", "pattern",
		    "^[a-z0-9][a-z0-9_.-]{0,62}$");
		break;
	case MCP_PATH:
		s = json_pack("{s:s, s:s}", "type", "string", "pattern", "^/");
		break;
	case MCP_ARGV:
		s = json_pack("{s:s, s:{s:s}, s:i}", "type", "array", "items",
		    "type", "string", "minItems", 1);
		break;
	case MCP_ENV:
		s = json_pack("{s:s, s:{s:s}}", "type", "object",
		    "additionalProperties", "type", "string");
		break;
	case MCP_SETTINGS:
		s = json_pack("{s:s, s:{s:[s,s,s]}}", "type", "object",
		    "additionalProperties", "type", "string", "number",
		    "boolean");
		break;
	case MCP_SECONDS:
		s = json_pack("{s:s, s:i}", "type", "number", "minimum", 0);
		break;
	case MCP_BOOL:
		s = json_pack("{s:s}", "type", "boolean");
		break;
	case MCP_COUNT:
		s = json_pack("{s:s, s:i, s:i}", "type", "integer", "minimum", 1,
		    "maximum", 16);
		break;
	case MCP_ENCODING:
		s = json_pack("{s:s, s:[s,s]}", "type", "string", "enum",
		    "utf-8", "base64");
		break;
	case MCP_MODE:
		s = json_pack("{s:s, s:s}", "type", "string", "pattern",
		    "^[0-7]{3,4}$");
		break;
	case MCP_DISK:
		s = json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s], s:b}", "type",
		    "object", "properties", "path", "type", "string",
		    "writable", "type", "boolean", "required", "path",
		    "additionalProperties", 0);
		break;
	default:
		s = json_pack("{s:s}", "type", "string");
		break;
	}
	json_object_set_new(s, "description", json_string(a->help));
	return (s);
}

/* A tool's input schema, from its table of arguments. */
static json_t *
mcp_tool_schema(const struct mcp_tool *t)
{
	const struct mcp_arg	*a;
	json_t			*props, *req, *s;

	props = json_object();
	req = json_array();
	for (a = t->args; a->name != NULL; a++) {
		json_object_set_new(props, a->name, mcp_arg_schema(a));
		if (a->required)
			json_array_append_new(req, json_string(a->name));
	}
	s = json_pack("{s:s, s:o, s:b}", "type", "object", "properties",
	    props, "additionalProperties", 0);
	if (json_array_size(req) > 0)
		json_object_set_new(s, "required", req);
	else
		json_decref(req);
	return (s);
}

/* Does v fit type? NULL if so, else what it should be. */
static const char *
mcp_arg_check(enum mcp_type type, json_t *v)
{
	const char	*s, *k;
	json_t		*x;
	size_t		 i, len;

	switch (type) {
	case MCP_BOOL:
		return (json_is_boolean(v) ? NULL : "true or false");
	case MCP_STRING:
		return (json_is_string(v) ? NULL : "a string");
	case MCP_NAME:
		if (!json_is_string(v))
			return ("a string");
		s = json_string_value(v);
		len = strlen(s);
		if (len < 1 || len > 63 || len != json_string_length(v) ||
		    !((s[0] >= 'a' && s[0] <= 'z') ||
		    (s[0] >= '0' && s[0] <= '9')) ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
			return ("a sandbox name (1-63 of a-z 0-9 _ . -, "
			    "starting with a letter or digit)");
		return (NULL);
	case MCP_PATH:
		if (!json_is_string(v) || json_string_value(v)[0] != '/' ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return ("an absolute path");
		return (NULL);
	case MCP_ARGV:
		if (!json_is_array(v) || json_array_size(v) == 0)
			return ("a non-empty array of strings");
		json_array_foreach(v, i, x) {
			if (!json_is_string(x))
				return ("a non-empty array of strings");
		}
		return (NULL);
	case MCP_ENV:
		if (!json_is_object(v))
			return ("an object of strings");
		json_object_foreach(v, k, x) {
			if (!json_is_string(x))
				return ("an object of strings");
		}
		return (NULL);
	case MCP_SETTINGS:
		if (!json_is_object(v))
			return ("an object");
		json_object_foreach(v, k, x) {
			if (!json_is_string(x) && !json_is_number(x) &&
			    !json_is_boolean(x))
				return ("an object of strings, numbers and "
				    "booleans");
		}
		return (NULL);
	case MCP_SECONDS:
		if (!json_is_number(v) || json_number_value(v) < 0)
			return ("a number of seconds, 0 or more");
		return (NULL);
	case MCP_COUNT:
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 16)
			return ("a whole number, 1 to 16");
		return (NULL);
	case MCP_ENCODING:
		if (!json_is_string(v) ||
		    (strcmp(json_string_value(v), "utf-8") != 0 &&
		    strcmp(json_string_value(v), "base64") != 0))
			return ("\"utf-8\" or \"base64\"");
		return (NULL);
	case MCP_MODE:
		if (!json_is_string(v))
			return ("a string of octal digits");
		s = json_string_value(v);
		len = strlen(s);
		if (len < 3 || len > 4 || strspn(s, "01234567") != len)
			return ("a string of octal digits, e.g. \"0644\"");
		return (NULL);
	case MCP_DISK:
		/* The server checks its members, naming them. */
		return (json_is_object(v) ? NULL : "an object {\"path\": ..., "
		    "\"writable\": ...}");
	}
	return ("unknown");
}

/* Check a call's arguments against the tool's table: NULL, or an error. */
static char *
mcp_args_check(const struct mcp_tool *t, json_t *args)
{
	const struct mcp_arg	*a;
	const char		*key, *why;
	json_t			*v;
	char			*err;

	json_object_foreach(args, key, v) {
		for (a = t->args; a->name != NULL; a++) {
			if (strcmp(a->name, key) == 0)
				break;
		}
		if (a->name == NULL) {
			xasprintf(&err, "%s: no argument %s", t->name, key);
			return (err);
		}
		if ((why = mcp_arg_check(a->type, v)) != NULL) {
			xasprintf(&err, "%s: %s must be %s", t->name, key, why);
			return (err);
		}
	}
	for (a = t->args; a->name != NULL; a++) {
		if (a->required && json_object_get(args, a->name) == NULL) {
			xasprintf(&err, "%s: %s is required", t->name,
			    a->name);
			return (err);
		}
	}
	return (NULL);
}

static json_t *
mcp_tool_create(struct mcp *m, json_t *args)
{
	json_t	*req, *reply = NULL;
	char	*cause = NULL;

	req = json_deep_copy(args);
	if (m->be.call(m->be.arg, "POST", "/v1/sandboxes", req, &reply,
	    &cause) != 0) {
		json_decref(req);
		return (mcp_result_error(cause));
	}
	json_decref(req);
	return (mcp_result_json(reply != NULL ? reply : json_object()));
}

/* Collected output as a JSON string: UTF-8, the rest U+FFFD. */
static json_t *
mcp_text(const struct buf *b)
{
	struct buf	 clean;
	json_t		*s;

	memset(&clean, 0, sizeof clean);
	mcp_utf8_clean(b->data != NULL ? b->data : "", b->len, &clean);
	s = json_stringn(clean.data, clean.len);
	buf_free(&clean);
	return (s != NULL ? s : json_string(""));
}

static json_t *
mcp_tool_exec(struct mcp *m, json_t *args)
{
	struct mcp_exec_result	 r;
	json_t			*req, *out, *v;
	const char		*in = NULL;
	char			*cause = NULL;
	size_t			 inlen = 0;
	int			 i;

	req = json_object();
	json_object_set(req, "argv", json_object_get(args, "argv"));
	if ((v = json_object_get(args, "env")) != NULL)
		json_object_set(req, "env", v);
	if ((v = json_object_get(args, "cwd")) != NULL)
		json_object_set(req, "cwd", v);
	if ((v = json_object_get(args, "timeout")) != NULL)
		json_object_set(req, "timeout", v);
	if ((v = json_object_get(args, "stdin")) != NULL) {
		json_object_set_new(req, "stdin", json_true());
		in = json_string_value(v);
		inlen = json_string_length(v);
	}
	memset(&r, 0, sizeof r);
	if (m->be.exec(m->be.arg, json_string_value(json_object_get(args,
	    "name")), req, in, inlen, &r, &cause) != 0) {
		json_decref(req);
		return (mcp_result_error(cause));
	}
	json_decref(req);
	out = json_object();
	json_object_set_new(out, "exit_code", json_integer(r.code));
	v = r.exit != NULL ? json_object_get(r.exit, "status") : NULL;
	json_object_set(out, "status", v != NULL ? v : json_null());
	v = r.exit != NULL ? json_object_get(r.exit, "signal") : NULL;
	json_object_set(out, "signal", v != NULL ? v : json_null());
	json_object_set_new(out, "timed_out", json_boolean(r.exit != NULL &&
	    json_is_true(json_object_get(r.exit, "timed_out"))));
	json_object_set_new(out, "error", r.error != NULL ?
	    json_string(r.error) : json_null());
	json_object_set_new(out, "stdout", mcp_text(&r.out[0]));
	json_object_set_new(out, "stderr", mcp_text(&r.out[1]));
	json_object_set_new(out, "stdout_truncated",
	    json_boolean(r.truncated[0]));
	json_object_set_new(out, "stderr_truncated",
	    json_boolean(r.truncated[1]));
	/* It ran, whatever its status; it did not if it never got to exit. */
	if (r.exit == NULL && r.error != NULL) {
		cause = xstrdup(r.error);
		json_decref(out);
		out = NULL;
	}
	for (i = 0; i < 2; i++)
		buf_free(&r.out[i]);
	json_decref(r.exit);
	free(r.error);
	if (out == NULL)
		return (mcp_result_error(cause));
	return (mcp_result_json(out));
}

static json_t *
mcp_tool_write(struct mcp *m, json_t *args)
{
	const char	*enc, *mode, *content;
	unsigned char	*raw = NULL;
	char		*cause = NULL;
	size_t		 len;
	json_t		*v;
	int		 r, imode = -1;

	v = json_object_get(args, "content");
	content = json_string_value(v);
	len = json_string_length(v);
	enc = json_string_value(json_object_get(args, "encoding"));
	if (enc != NULL && strcmp(enc, "base64") == 0) {
		if (mcp_unbase64(content, len, &raw, &len) == -1)
			return (mcp_result_text("sandbox_file_write: content "
			    "is not base64", 1));
		content = (const char *)raw;
	}
	if ((mode = json_string_value(json_object_get(args, "mode"))) != NULL)
		imode = strtol(mode, NULL, 8);
	r = m->be.put(m->be.arg, json_string_value(json_object_get(args,
	    "name")), json_string_value(json_object_get(args, "path")), imode,
	    content, len, &cause);
	free(raw);
	if (r != 0)
		return (mcp_result_error(cause));
	return (mcp_result_json(json_pack("{s:O, s:I}", "path",
	    json_object_get(args, "path"), "size", (json_int_t)len)));
}

static json_t *
mcp_tool_read(struct mcp *m, json_t *args)
{
	struct buf	 b;
	const char	*enc;
	char		*cause = NULL, *text;
	int		 truncated = 0, b64;
	json_t		*r;

	memset(&b, 0, sizeof b);
	enc = json_string_value(json_object_get(args, "encoding"));
	b64 = enc != NULL && strcmp(enc, "base64") == 0;
	if (m->be.get(m->be.arg, json_string_value(json_object_get(args,
	    "name")), json_string_value(json_object_get(args, "path")),
	    MCP_OUTPUT_MAX, &b, &truncated, &cause) != 0)
		return (mcp_result_error(cause));
	if (b.data == NULL)
		buf_add(&b, "", 0);
	if (!b64 && truncated)
		b.len = mcp_utf8_whole(b.data, b.len);
	if (b64)
		text = mcp_base64(b.data, b.len);
	else if (!mcp_utf8_valid(b.data, b.len)) {
		buf_free(&b);
		return (mcp_result_text("sandbox_file_read: the file is not "
		    "UTF-8 text; read it with encoding \"base64\"", 1));
	} else
		text = NULL;
	r = json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text",
	    "text", text != NULL ? text : b.data, text != NULL ?
	    strlen(text) : b.len, "isError", 0);
	if (truncated) {
		json_array_append_new(json_object_get(r, "content"),
		    json_pack("{s:s, s:s}", "type", "text", "text",
		    "(truncated: only the first 1 MiB of the file is shown)"));
	}
	free(text);
	buf_free(&b);
	return (r);
}

static json_t *
mcp_tool_list(struct mcp *m, json_t *args)
{
	json_t	*reply = NULL;
	char	*cause = NULL;

	(void)args;
	if (m->be.call(m->be.arg, "GET", "/v1/sandboxes", NULL, &reply,
	    &cause) != 0)
		return (mcp_result_error(cause));
	return (mcp_result_json(reply != NULL ? reply : json_object()));
}

/* METHOD of the named sandbox's path with rest: the answer, as JSON. */
static json_t *
mcp_tool_call(struct mcp *m, json_t *args, const char *method,
    const char *rest)
{
	json_t	*reply = NULL;
	char	*cause = NULL, *path;
	int	 r;

	path = client_path(json_string_value(json_object_get(args, "name")),
	    rest);
	r = m->be.call(m->be.arg, method, path, NULL, &reply, &cause);
	free(path);
	if (r != 0)
		return (mcp_result_error(cause));
	return (mcp_result_json(reply != NULL ? reply : json_object()));
}

static json_t *
mcp_tool_destroy(struct mcp *m, json_t *args)
{
	return (mcp_tool_call(m, args, "DELETE", NULL));
}

static json_t *
mcp_tool_pause(struct mcp *m, json_t *args)
{
	return (mcp_tool_call(m, args, "POST", "/pause"));
}

static json_t *
mcp_tool_resume(struct mcp *m, json_t *args)
{
	return (mcp_tool_call(m, args, "POST", "/resume"));
}

/* A POST of one member of args (or none) as the body, to path. */
static json_t *
mcp_tool_post(struct mcp *m, const char *method, const char *path,
    json_t *req)
{
	json_t	*reply = NULL;
	char	*cause = NULL;
	int	 r;

	r = m->be.call(m->be.arg, method, path, req, &reply, &cause);
	json_decref(req);
	if (r != 0)
		return (mcp_result_error(cause));
	return (mcp_result_json(reply != NULL ? reply : json_object()));
}

static json_t *
mcp_tool_snapshot(struct mcp *m, json_t *args)
{
	json_t	*r;
	char	*path;

	path = client_path(json_string_value(json_object_get(args, "name")),
	    "/snapshots");
	r = mcp_tool_post(m, "POST", path, json_pack("{s:O}", "name",
	    json_object_get(args, "snapshot")));
	free(path);
	return (r);
}

static json_t *
mcp_tool_snapshot_list(struct mcp *m, json_t *args)
{
	(void)args;
	return (mcp_tool_post(m, "GET", "/v1/snapshots", NULL));
}

static json_t *
mcp_tool_snapshot_delete(struct mcp *m, json_t *args)
{
	json_t	*r;
	char	*path;

	xasprintf(&path, "/v1/snapshots/%s",
	    json_string_value(json_object_get(args, "snapshot")));
	r = mcp_tool_post(m, "DELETE", path, NULL);
	free(path);
	return (r);
}

static json_t *
mcp_tool_fork(struct mcp *m, json_t *args)
{
	json_t	*r, *req;
	char	*path;

	req = json_deep_copy(args);
	json_object_del(req, "name");
	path = client_path(json_string_value(json_object_get(args, "name")),
	    "/fork");
	r = mcp_tool_post(m, "POST", path, req);
	free(path);
	return (r);
}

static json_t *
mcp_result(json_t *id, json_t *result)
{
	return (json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id,
	    "result", result));
}

static json_t *
mcp_initialize(struct mcp *m, json_t *id, json_t *params)
{
	const char	*want, *ver = MCP_PROTOCOL;
	size_t		 i;

	want = json_string_value(json_object_get(params, "protocolVersion"));
	for (i = 0; want != NULL && mcp_protocols[i] != NULL; i++) {
		if (strcmp(want, mcp_protocols[i]) == 0)
			ver = mcp_protocols[i];
	}
	return (mcp_result(id, json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s}, "
	    "s:s}", "protocolVersion", ver, "capabilities", "tools",
	    "listChanged", 0, "serverInfo", "name", "qsup", "version",
	    m->version, "instructions", "Disposable Linux sandboxes (QEMU "
	    "microVMs): create one, run commands and move files in it, "
	    "destroy it when done.")));
}

static json_t *
mcp_tools_list(json_t *id)
{
	const struct mcp_tool	*t;
	json_t			*list;

	list = json_array();
	for (t = mcp_tools; t->name != NULL; t++) {
		json_array_append_new(list, json_pack("{s:s, s:s, s:o}",
		    "name", t->name, "description", t->help, "inputSchema",
		    mcp_tool_schema(t)));
	}
	mcp_screen_tools(list);		/* cmd_mcp_screen.c */
	return (mcp_result(id, json_pack("{s:o}", "tools", list)));
}

static json_t *
mcp_tools_call(struct mcp *m, json_t *id, json_t *params)
{
	const struct mcp_tool	*t;
	const char		*name;
	json_t			*args, *r;
	char			*err;

	if (!json_is_object(params) ||
	    (name = json_string_value(json_object_get(params, "name"))) ==
	    NULL)
		return (mcp_error(id, MCP_INVALID_PARAMS, "tools/call needs "
		    "the tool's name"));
	for (t = mcp_tools; t->name != NULL; t++) {
		if (strcmp(t->name, name) == 0)
			break;
	}
	if (t->name == NULL && (r = mcp_screen_call(&m->be, name,
	    json_object_get(params, "arguments"))) != NULL)
		return (mcp_result(id, r));	/* a screen tool */
	if (t->name == NULL)
		return (mcp_error(id, MCP_INVALID_PARAMS, "unknown tool: %s",
		    name));
	if ((args = json_object_get(params, "arguments")) == NULL ||
	    json_is_null(args))
		args = json_object();
	else if (!json_is_object(args))
		return (mcp_error(id, MCP_INVALID_PARAMS, "%s: arguments must "
		    "be an object", name));
	else
		json_incref(args);
	if ((err = mcp_args_check(t, args)) != NULL) {
		r = mcp_error(id, MCP_INVALID_PARAMS, "%s", err);
		free(err);
		json_decref(args);
		return (r);
	}
	r = mcp_result(id, t->run(m, args));
	json_decref(args);
	return (r);
}

/* One message of the client (not a batch): the response, or NULL. */
static json_t *
mcp_message(struct mcp *m, json_t *msg)
{
	json_t		*id, *params;
	const char	*method;
	int		 note;

	if (!json_is_object(msg))
		return (mcp_error(NULL, MCP_INVALID_REQUEST, "a message must "
		    "be a JSON object"));
	id = json_object_get(msg, "id");
	note = id == NULL;
	if (id != NULL && !json_is_string(id) && !json_is_integer(id) &&
	    !json_is_null(id))
		return (mcp_error(NULL, MCP_INVALID_REQUEST, "a bad id"));
	if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(msg, "jsonrpc")),
	    "2.0") != 0)
		return (mcp_error(id, MCP_INVALID_REQUEST, "not JSON-RPC "
		    "2.0 (\"jsonrpc\": \"2.0\" is missing)"));
	if ((method = json_string_value(json_object_get(msg, "method"))) ==
	    NULL) {
		/* A response to us, who ask nothing; or nonsense. */
		if (json_object_get(msg, "result") != NULL ||
		    json_object_get(msg, "error") != NULL)
			return (NULL);
		return (mcp_error(id, MCP_INVALID_REQUEST, "no method"));
	}
	params = json_object_get(msg, "params");
	if (params != NULL && !json_is_object(params) &&
	    !json_is_array(params))
		return (note ? NULL : mcp_error(id, MCP_INVALID_REQUEST,
		    "params must be an object or an array"));
	if (note)
		return (NULL);
	if (strcmp(method, "initialize") == 0)
		return (mcp_initialize(m, id, params));
	if (strcmp(method, "ping") == 0)
		return (mcp_result(id, json_object()));
	if (strcmp(method, "tools/list") == 0)
		return (mcp_tools_list(id));
	if (strcmp(method, "tools/call") == 0)
		return (mcp_tools_call(m, id, params));
	return (mcp_error(id, MCP_NO_METHOD, "no method %s", method));
}

/*
 * One line from the client: the line to answer with (no newline), or
 * NULL when there is nothing to answer (a notification, a blank line).
 */
char *
mcp_handle(struct mcp *m, const char *line, size_t len)
{
	json_error_t	 err;
	json_t		*msg, *r, *x, *one;
	size_t		 i;
	char		*text;

	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' ||
	    line[len - 1] == '\t'))
		len--;
	if (len == 0)
		return (NULL);
	if ((msg = json_loadb(line, len, JSON_DECODE_ANY|JSON_ALLOW_NUL,
	    &err)) == NULL)
		r = mcp_error(NULL, MCP_PARSE_ERROR, "not JSON: %s (column "
		    "%d)", err.text, err.column);
	else if (json_is_array(msg)) {
		r = json_array();
		json_array_foreach(msg, i, x) {
			if ((one = mcp_message(m, x)) != NULL)
				json_array_append_new(r, one);
		}
		if (json_array_size(msg) == 0) {
			json_decref(r);
			r = mcp_error(NULL, MCP_INVALID_REQUEST, "an empty "
			    "batch");
		} else if (json_array_size(r) == 0) {
			json_decref(r);
			r = NULL;
		}
	} else
		r = mcp_message(m, msg);
	json_decref(msg);
	if (r == NULL)
		return (NULL);
	text = json_dumps(r, JSON_COMPACT|JSON_PRESERVE_ORDER);
	json_decref(r);
	return (text);
}

struct mcp *
mcp_new(const struct mcp_backend *be, const char *version)
{
	struct mcp	*m;

	m = xcalloc(1, sizeof *m);
	m->be = *be;
	m->version = xstrdup(version != NULL ? version : "unknown");
	return (m);
}

void
mcp_free(struct mcp *m)
{
	if (m == NULL)
		return;
	free(m->version);
	free(m);
}

/* SIGTERM, SIGINT, SIGHUP: stop, the server we started with us. */
static void
cmd_mcp_sig_cb(int sig)
{
	(void)sig;
	cmd_mcp_stop = 1;
}

/* The backend over the client. */
static int
cmd_mcp_call(void *arg, const char *method, const char *path, json_t *body,
    json_t **reply, char **cause)
{
	return (client_call(arg, method, path, body, reply, cause));
}

static int
cmd_mcp_exec_cb(void *arg, const char *name, json_t *req, const char *in,
    size_t inlen, struct mcp_exec_result *r, char **cause)
{
	struct client_exec	*e;
	struct client_stream	*s;
	int			 refused, i, st;

	e = client_exec_start(arg, name, req, -1, in, inlen, -1, -1,
	    MCP_OUTPUT_MAX);
	while ((st = client_exec_step(e, -1, 200, NULL)) == 1) {
		if (cmd_mcp_stop) {
			client_exec_free(e);
			*cause = xstrdup("qsup mcp is stopping");
			return (-1);
		}
	}
	s = client_exec_stream(e);
	r->code = client_exec_result(e, &refused, &r->error);
	if (s->exit == NULL && s->id < 0) {
		/* It never started: the server said no, or did not answer. */
		*cause = r->error != NULL ? r->error : xstrdup("failed");
		r->error = NULL;
		client_exec_free(e);
		return (refused ? CLIENT_REFUSED : -1);
	}
	if (s->exit != NULL)
		r->exit = json_incref(s->exit);
	for (i = 0; i < 2; i++) {
		r->out[i] = s->out[i];
		memset(&s->out[i], 0, sizeof s->out[i]);
		r->truncated[i] = s->truncated[i];
	}
	client_exec_free(e);
	return (0);
}

static int
cmd_mcp_put(void *arg, const char *name, const char *path, int mode,
    const void *data, size_t len, char **cause)
{
	return (client_put(arg, name, path, mode, -1, -1, data, len, NULL,
	    cause));
}

static int
cmd_mcp_get(void *arg, const char *name, const char *path, size_t max,
    struct buf *b, int *truncated, char **cause)
{
	return (client_get(arg, name, path, -1, b, max, truncated, cause));
}

/*
 * The stdio loop: a line in, its answer out, until stdin ends or a
 * signal. A line over MCP_LINE_MAX is answered with an error and skipped.
 */
static void
cmd_mcp_loop(struct mcp *m)
{
	struct buf	 in;
	char		*nl, *answer, chunk[65536];
	size_t		 off, len;
	ssize_t		 n;
	int		 skipping = 0;

	memset(&in, 0, sizeof in);
	while (!cmd_mcp_stop) {
		n = read(STDIN_FILENO, chunk, sizeof chunk);
		if (n == -1 && (errno == EINTR || errno == EAGAIN)) {
			if (errno == EAGAIN) {
				struct pollfd	pfd = { STDIN_FILENO, POLLIN,
						    0 };

				poll(&pfd, 1, 1000);
			}
			continue;
		}
		if (n <= 0)
			break;
		buf_add(&in, chunk, n);
		off = 0;
		while (!cmd_mcp_stop && (nl = memchr(in.data + off, '\n',
		    in.len - off)) != NULL) {
			len = nl - (in.data + off);
			if (skipping)
				skipping = 0;
			else if ((answer = mcp_handle(m, in.data + off,
			    len)) != NULL) {
				if (client_write_all(STDOUT_FILENO, answer,
				    strlen(answer)) == -1 ||
				    client_write_all(STDOUT_FILENO, "\n",
				    1) == -1) {
					free(answer);
					goto out;
				}
				free(answer);
			}
			off += len + 1;
		}
		buf_consume(&in, off);
		if (in.len > MCP_LINE_MAX) {
			if (!skipping) {
				answer = xstrdup("{\"jsonrpc\":\"2.0\","
				    "\"id\":null,\"error\":{\"code\":-32600,"
				    "\"message\":\"a message over 16 MiB "
				    "(16777216 bytes): refused\"}}\n");
				if (client_write_all(STDOUT_FILENO, answer,
				    strlen(answer)) == -1) {
					free(answer);
					goto out;
				}
				free(answer);
			}
			skipping = 1;
			buf_consume(&in, in.len);
		}
	}
	/* A last message without its newline is a message still. */
	if (!cmd_mcp_stop && !skipping && in.len > 0 &&
	    (answer = mcp_handle(m, in.data, in.len)) != NULL) {
		client_write_all(STDOUT_FILENO, answer, strlen(answer));
		client_write_all(STDOUT_FILENO, "\n", 1);
		free(answer);
	}
out:
	buf_free(&in);
}

static int
cmd_mcp_exec(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_mcp_server	 srv;
	struct mcp_backend	 be;
	struct sigaction	 sa;
	struct cmd_args		 a;
	struct client		*c;
	struct mcp		*m;
	const char		*host, *cacert;
	char			*cause = NULL, *version = NULL;
	int			 r;

	if ((r = cmd_args_parse(self, argc, argv, &a)) == 1)
		cmd_usage(self, stdout);
	else if (r == -1)
		(void)cmd_args_bad(&a, "mcp");
	else if (a.argc != 0) {
		log_warnx("usage: qsup %s", self->usage);
		r = -1;
	}
	host = cmd_args_get(&a, CMD_MCP_HOST);
	cacert = cmd_args_get(&a, CMD_MCP_CACERT);
	if (cmd_args_has(&a, 'v'))
		log_verbose = 1;
	cmd_args_free(&a);	/* host and cacert are argv's */
	if (r != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	memset(&srv, 0, sizeof srv);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cmd_mcp_sig_cb;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a signal ends the read it interrupts. */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if ((c = client_new(host, cacert, &cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
		return (QSUP_EXIT_ERROR);
	}
	if (client_healthz(c, &version, &cause) == 0)
		log_debug("mcp: the qsup serve at %s", client_host(c));
	else {
		log_debug("mcp: %s; starting one of our own", cause);
		free(cause);
		cause = NULL;
		client_free(c);
		c = NULL;
		if (cmd_mcp_serve_start(&srv, cacert, &c) == -1) {
			cmd_mcp_serve_stop(&srv);
			return (QSUP_EXIT_ERROR);
		}
		if (client_healthz(c, &version, &cause) != 0) {
			free(cause);
			version = NULL;
		}
	}
	be.call = cmd_mcp_call;
	be.exec = cmd_mcp_exec_cb;
	be.put = cmd_mcp_put;
	be.get = cmd_mcp_get;
	be.fetch = mcp_screen_fetch;
	be.arg = c;
	m = mcp_new(&be, version);
	cmd_mcp_loop(m);
	mcp_free(m);
	client_free(c);
	free(version);
	cmd_mcp_serve_stop(&srv);
	return (0);
}
