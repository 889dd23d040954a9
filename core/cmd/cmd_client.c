/*
 * The commands that talk to a running "qsup serve" (docs/api.md): qsup
 * sandbox create | ls | rm | inspect, exec, cp, ls and rm. The HTTP is
 * client.c's; here are the options, the terminal and the signals, and
 * what is printed.
 *
 * Exit status: exec passes the command's on (125 when qsup failed);
 * the others exit 0, 1 when the server refused (its error is printed),
 * 125 on a usage error or when there was no answer.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd_client_int.h"

static int	cmd_sandbox_exec(const struct cmd_entry *, int, char **);
static int	cmd_sandbox_create(const struct cmd_entry *, int, char **);
static int	cmd_sandbox_inspect(const struct cmd_entry *, int, char **);
static int	cmd_client_ls(const struct cmd_entry *, int, char **);
static int	cmd_client_rm(const struct cmd_entry *, int, char **);
static int	cmd_sandbox_pause(const struct cmd_entry *, int, char **);
static int	cmd_sandbox_resume(const struct cmd_entry *, int, char **);
static int	cmd_client_exec(const struct cmd_entry *, int, char **);
static int	cmd_client_cp(const struct cmd_entry *, int, char **);

#define CMD_CLIENT_RM_HELP \
"Delete each sandbox named, printing its name once it is gone; a failure\n" \
"for one does not stop the others. Exit 1 if any was refused, 125 if\n" \
"the server did not answer.\n" \
"\n"

#define CMD_CLIENT_LS_HELP \
"One line each: NAME STATE ACCEL START CREATED; with --json the server's\n" \
"answer, {\"sandboxes\": [...]}.\n" \
"\n"

static const struct cmd_option cmd_client_options[] = {
	CMD_CLIENT_HOST_OPTIONS
};

static const struct cmd_option cmd_client_ls_options[] = {
	{ CMD_CLIENT_JSON, "json", CMD_V_NONE, NULL, 0, NULL },
	CMD_CLIENT_HOST_OPTIONS
};

static const struct cmd_option cmd_sandbox_create_options[] = {
	{ 'p', "profile", CMD_V_PROFILE, "P", 0,
	  "its profile, a name or a path on the server's host" },
	{ CMD_CLIENT_SET, "set", CMD_V_SETTING, "K=V", CMD_O_REPEAT,
	  "a profile setting (repeatable), checked as run's" },
	{ CMD_CLIENT_TTL, "ttl", CMD_V_SECONDS, "S", 0,
	  "end it S seconds after its creation" },
	{ CMD_CLIENT_IDLE_TTL, "idle-ttl", CMD_V_SECONDS, "S", 0,
	  "end it after S seconds without an exec or a file call" },
	{ CMD_CLIENT_ON_TTL, "on-ttl", CMD_V_STRING, "delete|pause", 0,
	  "what ending it is (default: delete)" },
	{ CMD_CLIENT_DISK, "disk", CMD_V_STRING, "F[:rw]", 0,
	  "boot on the disk image F (a path on the server's\n"
	  "host): on a fresh overlay, or with :rw on F itself" },
	{ CMD_CLIENT_SNAPSHOT, "snapshot", CMD_V_STRING, "SNAP", 0,
	  "start it from a snapshot: its source's profile,\n"
	  "settings, processes and files" },
	{ CMD_CLIENT_PERSISTENT, "persistent", CMD_V_NONE, NULL, 0,
	  "keep it across the server's restarts: saved at a\n"
	  "stop, restored at the next start" },
	{ CMD_CLIENT_PERSIST_EVERY, "persist-every", CMD_V_SECONDS, "S", 0,
	  "and save it every S seconds too, so that a server\n"
	  "killed outright brings it back from the last" },
	{ CMD_CLIENT_JSON, "json", CMD_V_NONE, NULL, 0,
	  "print the sandbox as JSON" },
	CMD_CLIENT_HOST_OPTIONS
};

static const struct cmd_option cmd_exec_options[] = {
	{ 'i', "interactive", CMD_V_NONE, NULL, 0,
	  "our stdin is its stdin (else it reads end of file)" },
	{ 't', "tty", CMD_V_NONE, NULL, 0,
	  "run it on a terminal of our terminal's size (and\n"
	  "TERM); with -i, ours is in raw mode while it runs" },
	{ 'e', "env", CMD_V_ENV, "K=V", CMD_O_REPEAT,
	  "a variable of its environment (repeatable)" },
	{ 'w', "workdir", CMD_V_STRING, "DIR", 0, "its working directory" },
	{ CMD_CLIENT_TIMEOUT, "timeout", CMD_V_SECONDS, "S", 0,
	  "kill it after S seconds (exit 124)" },
	CMD_CLIENT_HOST_OPTIONS
};

static const struct cmd_entry cmd_sandbox_create_entry = {
	.name = "create",
	.usage = "sandbox create [--profile P] [--set K=V]... [--ttl S] "
	    "[--idle-ttl S] [--on-ttl delete|pause] [--disk F[:rw]] "
	    "[--snapshot SNAP] [--persistent [--persist-every S]] [--json] "
	    "[NAME]",
	.summary = "start a named sandbox on the server, and print its name",
	.help =
"Start a sandbox on the server and wait until it is ready; print its name\n"
"(the server picks sb-N without NAME), or with --json the whole sandbox.\n"
"\n",
	.options = cmd_sandbox_create_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_sandbox_create
};

static const struct cmd_entry cmd_sandbox_ls_entry = {
	.name = "ls",
	.usage = "sandbox ls [--json]",
	.summary = "the server's sandboxes (as qsup ls)",
	.help = CMD_CLIENT_LS_HELP,
	.options = cmd_client_ls_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_client_ls
};

static const struct cmd_entry cmd_sandbox_rm_entry = {
	.name = "rm",
	.usage = "sandbox rm NAME...",
	.summary = "tear sandboxes down (as qsup rm)",
	.help = CMD_CLIENT_RM_HELP,
	.options = cmd_client_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP,
	.exec = cmd_client_rm
};

static const struct cmd_entry cmd_sandbox_inspect_entry = {
	.name = "inspect",
	.usage = "sandbox inspect NAME",
	.summary = "one sandbox, as JSON",
	.options = cmd_client_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_sandbox_inspect
};

static const struct cmd_entry cmd_sandbox_pause_entry = {
	.name = "pause",
	.usage = "sandbox pause NAME...",
	.summary = "stop sandboxes' CPUs, their state kept",
	.help =
"Pause each sandbox named (QMP stop): its processes, memory and files stay\n"
"as they are and its QEMU takes no CPU until it is resumed; execs and file\n"
"calls are refused meanwhile. Prints each name once it is paused; a\n"
"paused one is left as it is. Exit 1 if any was refused (booting,\n"
"stopping, dead), 125 if the server did not answer.\n"
"\n",
	.options = cmd_client_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP,
	.exec = cmd_sandbox_pause
};

static const struct cmd_entry cmd_sandbox_resume_entry = {
	.name = "resume",
	.usage = "sandbox resume NAME...",
	.summary = "run paused sandboxes again",
	.help =
"Resume each sandbox named (QMP cont), where it was paused. Prints each\n"
"name once it runs; one that runs is left as it is. Exit as pause.\n"
"\n",
	.options = cmd_client_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP,
	.exec = cmd_sandbox_resume
};

static const struct cmd_entry *const cmd_sandbox_subs[] = {
	&cmd_sandbox_create_entry,
	&cmd_sandbox_ls_entry,
	&cmd_sandbox_rm_entry,
	&cmd_sandbox_inspect_entry,
	&cmd_sandbox_pause_entry,
	&cmd_sandbox_resume_entry,
	&cmd_sandbox_snapshot_entry,
	&cmd_sandbox_snapshots_entry,
	&cmd_sandbox_fork_entry,
	&cmd_sandbox_restore_entry,
	&cmd_sandbox_screenshot_entry,
	NULL
};

const struct cmd_entry cmd_sandbox_entry = {
	.name = "sandbox",
	.summary = "create, list, inspect, pause, resume, snapshot, fork, "
	    "restore, screenshot or remove a server's sandboxes",
	.subs = cmd_sandbox_subs,
	.exec = cmd_sandbox_exec
};

const struct cmd_entry cmd_exec_entry = {
	.name = "exec",
	.usage = "exec [-i] [-t] [-e K=V]... [-w DIR] [--timeout S] NAME -- "
	    "CMD...",
	.summary = "run a command in a server's sandbox",
	.help = "Run CMD in the sandbox NAME, its output streamed to ours.\n"
"\n",
	.options = cmd_exec_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP
"\n"
"SIGINT, SIGTERM and SIGHUP are sent on to the command; a second one\n"
"makes qsup give up at once (the server then kills the command).\n"
"Exit status: the command's; 128+N when signal N killed it; 124 on its\n"
"timeout; 125 when qsup failed (no server, no such sandbox, ...).\n",
	.exec = cmd_client_exec
};

const struct cmd_entry cmd_cp_entry = {
	.name = "cp",
	.usage = "cp SRC NAME:DST\ncp NAME:SRC DST",
	.summary = "copy a file into or out of a server's sandbox",
	.help =
"Copy one file. SRC \"-\" is our stdin (mode 0644), DST \"-\" our stdout.\n"
"Into a sandbox, the file gets SRC's mode and appears whole or not at\n"
"all; a DST ending in / gets SRC's name. Out of one, a DST that is a\n"
"directory gets SRC's name, and the file is written beside DST and\n"
"renamed over it, so a failure leaves no part of it. Paths in the\n"
"sandbox are absolute.\n"
"\n",
	.options = cmd_client_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_client_cp
};

const struct cmd_entry cmd_ls_entry = {
	.name = "ls",
	.usage = "ls [--json]",
	.summary = "list a server's sandboxes",
	.help = CMD_CLIENT_LS_HELP,
	.options = cmd_client_ls_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_client_ls
};

const struct cmd_entry cmd_rm_entry = {
	.name = "rm",
	.usage = "rm NAME...",
	.summary = "tear down a server's sandboxes",
	.help = CMD_CLIENT_RM_HELP,
	.options = cmd_client_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP,
	.exec = cmd_client_rm
};

static int
cmd_sandbox_exec(const struct cmd_entry *self, int argc, char **argv)
{
	if (argc > 1)
		log_warnx("sandbox %s: no such subcommand", argv[1]);
	cmd_usage(self, stderr);
	return (QSUP_EXIT_ERROR);
}

/*
 * --disk F[:rw] as the create's "disk": F made absolute against our
 * directory (the server takes absolute paths only), writable with :rw.
 */
static json_t *
cmd_client_disk(const char *arg)
{
	json_t	*d;
	char	*path, *abs, cwd[PATH_MAX];
	size_t	 len = strlen(arg);
	int	 rw = 0;

	path = xstrdup(arg);
	if (len > 3 && strcmp(arg + len - 3, ":rw") == 0) {
		path[len - 3] = '\0';
		rw = 1;
	} else if (len > 3 && strcmp(arg + len - 3, ":ro") == 0)
		path[len - 3] = '\0';
	if (path[0] != '/' && getcwd(cwd, sizeof cwd) != NULL) {
		xasprintf(&abs, "%s/%s", cwd, path);
		free(path);
		path = abs;
	}
	d = json_object();
	json_object_set_new(d, "path", json_string(path));
	json_object_set_new(d, "writable", json_boolean(rw));
	free(path);
	return (d);
}

static int
cmd_sandbox_create(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	json_t			*req, *settings, *reply = NULL;
	const char		*name;
	char			*cause = NULL, *eq, *key;
	size_t			 i;
	int			 r, ret = QSUP_EXIT_ERROR;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind > 1) {
		log_warnx("usage: qsup %s", self->usage);
		cmd_client_opts_free(&o);
		return (QSUP_EXIT_ERROR);
	}
	req = json_object();
	if (o.optind < argc)
		json_object_set_new(req, "name", json_string(argv[o.optind]));
	if (o.profile != NULL)
		json_object_set_new(req, "profile", json_string(o.profile));
	if (o.ttl >= 0)
		json_object_set_new(req, "ttl", json_real(o.ttl));
	if (o.idle_ttl >= 0)
		json_object_set_new(req, "idle_ttl", json_real(o.idle_ttl));
	if (o.on_ttl != NULL)
		json_object_set_new(req, "on_ttl", json_string(o.on_ttl));
	if (cmd_args_get(&o.a, CMD_CLIENT_DISK) != NULL)
		json_object_set_new(req, "disk", cmd_client_disk(
		    cmd_args_get(&o.a, CMD_CLIENT_DISK)));
	if (cmd_args_get(&o.a, CMD_CLIENT_SNAPSHOT) != NULL)
		json_object_set_new(req, "snapshot", json_string(
		    cmd_args_get(&o.a, CMD_CLIENT_SNAPSHOT)));
	if (cmd_args_has(&o.a, CMD_CLIENT_PERSISTENT))
		json_object_set_new(req, "persistent", json_true());
	if (cmd_args_get(&o.a, CMD_CLIENT_PERSIST_EVERY) != NULL)
		json_object_set_new(req, "persist_every", json_real(strtod(
		    cmd_args_get(&o.a, CMD_CLIENT_PERSIST_EVERY), NULL)));
	if (o.nsets > 0) {
		settings = json_object();
		for (i = 0; i < o.nsets; i++) {
			eq = strchr(o.sets[i], '=');
			key = xstrndup(o.sets[i], eq - o.sets[i]);
			json_object_set_new(settings, key, json_string(eq + 1));
			free(key);
		}
		json_object_set_new(req, "settings", settings);
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	if ((r = client_call(c, "POST", "/v1/sandboxes", req, &reply,
	    &cause)) != 0) {
		ret = cmd_client_fail(r, NULL, cause);
		goto out;
	}
	if (o.json)
		cmd_client_print_json(reply);
	else if ((name = json_path_str(reply, "name")) != NULL)
		printf("%s\n", name);
	ret = 0;
out:
	json_decref(req);
	json_decref(reply);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}

static int
cmd_sandbox_inspect(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	json_t			*reply = NULL;
	char			*cause = NULL, *path;
	int			 r, ret = QSUP_EXIT_ERROR;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind != 1) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	path = client_path(argv[o.optind], NULL);
	r = client_call(c, "GET", path, NULL, &reply, &cause);
	free(path);
	if (r != 0) {
		ret = cmd_client_fail(r, argv[o.optind], cause);
		goto out;
	}
	cmd_client_print_json(reply);
	ret = 0;
out:
	json_decref(reply);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}

/* A JSON value as a cell of the table: a string as is, null as "-". */
static const char *
cmd_client_cell(json_t *sb, const char *key, char *tmp, size_t len)
{
	json_t	*v = json_object_get(sb, key);

	if (json_is_string(v))
		return (json_string_value(v));
	if (json_is_integer(v)) {
		snprintf(tmp, len, "%lld", (long long)json_integer_value(v));
		return (tmp);
	}
	return ("-");
}

static int
cmd_client_ls(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	json_t			*reply = NULL, *list, *sb;
	char			*cause = NULL, t[5][32];
	const char		*cell[5];
	static const char	*keys[5] = { "name", "state", "accelerator",
				    "start", "created" };
	static const char	*heads[5] = { "NAME", "STATE", "ACCEL",
				    "START", "CREATED" };
	int			 width[5], r, ret = QSUP_EXIT_ERROR, pass, k, w;
	size_t			 i;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind != 0) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	if ((r = client_call(c, "GET", "/v1/sandboxes", NULL, &reply,
	    &cause)) != 0) {
		ret = cmd_client_fail(r, NULL, cause);
		goto out;
	}
	list = json_object_get(reply, "sandboxes");
	if (!json_is_array(list)) {
		log_warnx("%s: an answer without \"sandboxes\"",
		    client_host(c));
		goto out;
	}
	if (o.json) {
		cmd_client_print_json(reply);
		ret = 0;
		goto out;
	}
	/* Two passes: the widths, then the lines. */
	for (k = 0; k < 5; k++)
		width[k] = strlen(heads[k]);
	for (pass = 0; pass < 2; pass++) {
		if (pass == 1) {
			for (k = 0; k < 5; k++)
				printf("%-*s%s", k < 4 ? width[k] : 0,
				    heads[k], k < 4 ? "  " : "\n");
		}
		json_array_foreach(list, i, sb) {
			for (k = 0; k < 5; k++) {
				cell[k] = cmd_client_cell(sb, keys[k], t[k],
				    sizeof t[k]);
				w = strlen(cell[k]);
				if (pass == 0 && w > width[k])
					width[k] = w;
			}
			if (pass == 0)
				continue;
			for (k = 0; k < 5; k++)
				printf("%-*s%s", k < 4 ? width[k] : 0,
				    cell[k], k < 4 ? "  " : "\n");
		}
	}
	ret = 0;
out:
	json_decref(reply);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}

/*
 * One call, METHOD of a sandbox's path with rest, for each NAME given,
 * its name printed once answered; one failing does not stop the others.
 */
static int
cmd_client_each(const struct cmd_entry *self, int argc, char **argv,
    const char *method, const char *rest)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	json_t			*reply;
	char			*cause, *path;
	int			 r, i, ret = QSUP_EXIT_ERROR;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind < 1) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	ret = 0;
	for (i = o.optind; i < argc; i++) {
		cause = NULL;
		path = client_path(argv[i], rest);
		r = client_call(c, method, path, NULL, &reply, &cause);
		free(path);
		json_decref(reply);
		if (r == 0) {
			printf("%s\n", argv[i]);
			fflush(stdout);
			continue;
		}
		r = cmd_client_fail(r, argv[i], cause);
		/* No answer: the next one would get none either. */
		if (r == QSUP_EXIT_ERROR) {
			ret = r;
			break;
		}
		ret = r;
	}
out:
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}

static int
cmd_client_rm(const struct cmd_entry *self, int argc, char **argv)
{
	return (cmd_client_each(self, argc, argv, "DELETE", NULL));
}

static int
cmd_sandbox_pause(const struct cmd_entry *self, int argc, char **argv)
{
	return (cmd_client_each(self, argc, argv, "POST", "/pause"));
}

static int
cmd_sandbox_resume(const struct cmd_entry *self, int argc, char **argv)
{
	return (cmd_client_each(self, argc, argv, "POST", "/resume"));
}

/* exec's signals, seen by the loop through a pipe. */
static int			cmd_exec_pipe[2] = { -1, -1 };
static volatile sig_atomic_t	cmd_exec_sigs[3];	/* INT, TERM, HUP */
static volatile sig_atomic_t	cmd_exec_winch;
#define CMD_EXEC_NSIGS	4
static const int		cmd_exec_caught[CMD_EXEC_NSIGS] = {
	SIGINT, SIGTERM, SIGHUP, SIGWINCH
};

static void
cmd_exec_sig_cb(int sig)
{
	int	saved = errno;

	switch (sig) {
	case SIGINT:
		cmd_exec_sigs[0]++;
		break;
	case SIGTERM:
		cmd_exec_sigs[1]++;
		break;
	case SIGHUP:
		cmd_exec_sigs[2]++;
		break;
	case SIGWINCH:
		cmd_exec_winch = 1;
		break;
	}
	if (cmd_exec_pipe[1] != -1)
		(void)write(cmd_exec_pipe[1], "", 1);
	errno = saved;
}

/* The body of POST .../exec for o and the command in argv. */
static json_t *
cmd_exec_request(const struct cmd_client_opts *o, int argc, char **argv)
{
	json_t		*req, *args, *env;
	const char	*term;
	char		*key, *eq;
	size_t		 i;
	unsigned	 rows, cols;
	int		 k, has_term = 0;

	req = json_object();
	args = json_array();
	for (k = 0; k < argc; k++)
		json_array_append_new(args, json_string(argv[k]));
	json_object_set_new(req, "argv", args);
	env = json_object();
	for (i = 0; i < o->nenv; i++) {
		eq = strchr(o->env[i], '=');
		key = xstrndup(o->env[i], eq - o->env[i]);
		has_term |= strcmp(key, "TERM") == 0;
		json_object_set_new(env, key, json_string(eq + 1));
		free(key);
	}
	if (o->tty && !has_term && (term = getenv("TERM")) != NULL)
		json_object_set_new(env, "TERM", json_string(term));
	if (json_object_size(env) > 0)
		json_object_set_new(req, "env", env);
	else
		json_decref(env);
	if (o->cwd != NULL)
		json_object_set_new(req, "cwd", json_string(o->cwd));
	if (o->interactive)
		json_object_set_new(req, "stdin", json_true());
	if (o->tty) {
		json_object_set_new(req, "tty", json_true());
		if (cmd_tty_size(&rows, &cols) == 0) {
			json_object_set_new(req, "rows", json_integer(rows));
			json_object_set_new(req, "cols", json_integer(cols));
		}
	}
	if (o->timeout > 0)
		json_object_set_new(req, "timeout", json_real(o->timeout));
	return (req);
}

/*
 * Catch INT, TERM, HUP and WINCH through cmd_exec_pipe (the old actions
 * into old), SIGPIPE ignored; cmd_exec_sigs_restore puts them back.
 */
static void
cmd_exec_sigs_catch(struct sigaction *old)
{
	struct sigaction	sa;
	int			i;

	if (pipe2(cmd_exec_pipe, O_CLOEXEC|O_NONBLOCK) == -1)
		fatalx("pipe2 failed");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = cmd_exec_sig_cb;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (i = 0; i < CMD_EXEC_NSIGS; i++)
		sigaction(cmd_exec_caught[i], &sa, &old[i]);
	signal(SIGPIPE, SIG_IGN);
}

static void
cmd_exec_sigs_restore(const struct sigaction *old)
{
	int	i;

	for (i = 0; i < CMD_EXEC_NSIGS; i++)
		sigaction(cmd_exec_caught[i], &old[i], NULL);
	if (cmd_exec_pipe[0] != -1) {
		close(cmd_exec_pipe[0]);
		close(cmd_exec_pipe[1]);
		cmd_exec_pipe[0] = cmd_exec_pipe[1] = -1;
	}
}

static int
cmd_client_exec(const struct cmd_entry *self, int argc, char **argv)
{
	static const char	*names[] = { "INT", "TERM", "HUP" };
	static const int	 nums[] = { SIGINT, SIGTERM, SIGHUP };
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	struct client_exec	*e = NULL;
	struct sigaction	 old[CMD_EXEC_NSIGS];
	json_t			*req = NULL;
	const char		*name;
	char			*cause = NULL, drain[64];
	unsigned		 rows, cols;
	int			 r, i, woken, refused, ret;
	int			 out = -1, err = -1, seen[3] = { 0, 0, 0 };
	int			 handlers = 0;

	ret = QSUP_EXIT_ERROR;
	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	argc -= o.optind;
	argv += o.optind;
	if (argc > 1 && strcmp(argv[1], "--") == 0) {
		argv[1] = argv[0];
		argc--;
		argv++;
	}
	if (argc < 2) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	name = argv[0];
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	req = cmd_exec_request(&o, argc - 1, argv + 1);

	/* Signals, before the exec starts: none of them may be lost. */
	cmd_exec_sigs_catch(old);
	handlers = 1;
	/*
	 * Raw mode only when our keys go to its terminal (-i): without -i
	 * a ^C stays ours, a SIGINT sent on.
	 */
	if (o.tty && o.interactive)
		cmd_tty_raw();
	/* Our own non-blocking descriptions of stdout and stderr. */
	out = outq_reopen_nonblock(STDOUT_FILENO, O_WRONLY);
	err = outq_reopen_nonblock(STDERR_FILENO, O_WRONLY);
	if (out == -1)
		out = STDOUT_FILENO;
	if (err == -1)
		err = STDERR_FILENO;

	e = client_exec_start(c, name, req, o.interactive ? STDIN_FILENO : -1,
	    NULL, 0, out, err, 0);
	while ((r = client_exec_step(e, cmd_exec_pipe[0], 1000,
	    &woken)) == 1) {
		if (!woken)
			continue;
		while (read(cmd_exec_pipe[0], drain, sizeof drain) > 0)
			/* nothing */;
		if (cmd_exec_winch) {
			cmd_exec_winch = 0;
			if (o.tty && cmd_tty_size(&rows, &cols) == 0)
				client_exec_resize(e, (int)rows, (int)cols);
		}
		for (i = 0; i < 3; i++) {
			if (cmd_exec_sigs[i] == seen[i])
				continue;
			/* A second signal: give up, the command with us. */
			if (seen[0] + seen[1] + seen[2] > 0 ||
			    cmd_exec_sigs[i] - seen[i] > 1) {
				ret = 128 + nums[i];
				goto out;
			}
			seen[i] = cmd_exec_sigs[i];
			client_exec_signal(e, names[i]);
		}
	}
	ret = client_exec_result(e, &refused, &cause);
	if (r == -1 && client_exec_stream(e)->write_errno == EPIPE) {
		/* Whoever read our output is gone: as a pipeline's writer. */
		free(cause);
		cause = NULL;
		ret = 128 + SIGPIPE;
	} else if (r == -1 && cause == NULL)
		cause = xstrdup(client_exec_stream(e)->cause);
	if (cause != NULL) {
		cmd_tty_restore();
		log_warnx("%s", cause);
		free(cause);
	}
out:
	cmd_tty_restore();
	client_exec_free(e);
	if (handlers)
		cmd_exec_sigs_restore(old);
	if (out != -1 && out != STDOUT_FILENO)
		close(out);
	if (err != -1 && err != STDERR_FILENO)
		close(err);
	json_decref(req);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}

/*
 * Is arg NAME:PATH, a path in a sandbox? Its name is of the API's
 * characters; a local path with a colon in it can be written ./a:b.
 */
static int
cmd_cp_remote(const char *arg, char **name, const char **path)
{
	const char	*colon, *p;

	if ((colon = strchr(arg, ':')) == NULL || colon == arg ||
	    colon - arg > 63)
		return (0);
	for (p = arg; p < colon; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '_' || *p == '.' || *p == '-'))
			return (0);
	}
	*name = xstrndup(arg, colon - arg);
	*path = colon + 1;
	return (1);
}

/* A local file into the sandbox. */
static int
cmd_cp_in(struct client *c, const char *src, const char *name,
    const char *dst)
{
	struct stat	 st;
	char		*full = NULL, *copy, *cause = NULL;
	int		 fd, r, mode = -1, ret = QSUP_EXIT_ERROR;
	long long	 size = -1, written = -1;

	if (strcmp(src, "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(src, O_RDONLY|O_CLOEXEC)) == -1) {
		log_warn("%s", src);
		return (QSUP_EXIT_ERROR);
	}
	if (fstat(fd, &st) == -1) {
		log_warn("%s", src);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		log_warnx("%s: a directory (cp copies one file)", src);
		goto out;
	}
	if (S_ISREG(st.st_mode))
		size = st.st_size;
	if (fd != STDIN_FILENO)
		mode = st.st_mode & 07777;
	if (*dst != '\0' && dst[strlen(dst) - 1] == '/') {
		if (fd == STDIN_FILENO) {
			log_warnx("%s:%s: a directory; name the file stdin "
			    "goes to", name, dst);
			goto out;
		}
		copy = xstrdup(src);
		xasprintf(&full, "%s%s", dst, basename(copy));
		free(copy);
		dst = full;
	}
	if ((r = client_put(c, name, dst, mode, fd, size, NULL, 0, &written,
	    &cause)) != 0) {
		xasprintf(&copy, "%s:%s", name, dst);
		ret = cmd_client_fail(r, copy, cause);
		free(copy);
		goto out;
	}
	/* A file that changed size while it went up is not what was asked. */
	if (size >= 0 && written >= 0 && written != size) {
		log_warnx("%s:%s: %lld bytes written of %s's %lld (did it "
		    "change meanwhile?)", name, dst, written, src, size);
		goto out;
	}
	ret = 0;
out:
	if (fd != STDIN_FILENO)
		close(fd);
	free(full);
	return (ret);
}

/* A file of the sandbox out, renamed into place only once it is whole. */
static int
cmd_cp_out(struct client *c, const char *name, const char *src,
    const char *dst)
{
	struct stat	 st;
	mode_t		 mask;
	char		*full = NULL, *copy, *dir, *tmp = NULL, *cause = NULL;
	char		*what;
	int		 fd = -1, r, ret = QSUP_EXIT_ERROR;

	xasprintf(&what, "%s:%s", name, src);
	if (strcmp(dst, "-") == 0) {
		if ((r = client_get(c, name, src, STDOUT_FILENO, NULL, 0,
		    NULL, &cause)) != 0)
			ret = cmd_client_fail(r, what, cause);
		else
			ret = 0;
		goto out;
	}
	if (stat(dst, &st) == 0 && S_ISDIR(st.st_mode)) {
		copy = xstrdup(src);
		xasprintf(&full, "%s/%s", dst, basename(copy));
		free(copy);
		dst = full;
	}
	copy = xstrdup(dst);
	dir = dirname(copy);
	xasprintf(&tmp, "%s/.qsup-cp.XXXXXX", dir);
	free(copy);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		log_warn("%s", dst);
		free(tmp);
		tmp = NULL;
		goto out;
	}
	if ((r = client_get(c, name, src, fd, NULL, 0, NULL, &cause)) != 0) {
		ret = cmd_client_fail(r, what, cause);
		goto out;
	}
	/* As a new file of cp's would be: 0666 less the umask. */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) == -1 || close(fd) == -1) {
		fd = -1;
		log_warn("%s", dst);
		goto out;
	}
	fd = -1;
	if (rename(tmp, dst) == -1) {
		log_warn("%s", dst);
		goto out;
	}
	free(tmp);
	tmp = NULL;
	ret = 0;
out:
	if (fd != -1)
		close(fd);
	if (tmp != NULL) {
		unlink(tmp);
		free(tmp);
	}
	free(full);
	free(what);
	return (ret);
}

static int
cmd_client_cp(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	const char		*spath, *dpath;
	char			*sname = NULL, *dname = NULL;
	int			 r, sr, dr, ret = QSUP_EXIT_ERROR;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind != 2) {
		log_warnx("usage: qsup cp SRC NAME:DST | qsup cp NAME:SRC DST");
		goto out;
	}
	sr = cmd_cp_remote(argv[o.optind], &sname, &spath);
	dr = cmd_cp_remote(argv[o.optind + 1], &dname, &dpath);
	if (sr == dr) {
		log_warnx("cp: one of SRC and DST is NAME:PATH, in a sandbox, "
		    "and the other a local file (or -)");
		goto out;
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	if (dr)
		ret = cmd_cp_in(c, argv[o.optind], dname, dpath);
	else
		ret = cmd_cp_out(c, sname, spath, argv[o.optind + 1]);
out:
	free(sname);
	free(dname);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}
