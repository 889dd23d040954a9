/*
 * The client commands for snapshots: qsup sandbox snapshot, snapshots
 * (and --rm), fork and restore, on the server's
 * /v1/sandboxes/NAME/snapshots, /v1/snapshots, /v1/sandboxes/NAME/fork
 * and /v1/sandboxes/NAME/restore.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd_client_int.h"

static int	cmd_sandbox_snapshot(const struct cmd_entry *, int, char **);
static int	cmd_sandbox_snapshots(const struct cmd_entry *, int, char **);
static int	cmd_sandbox_fork(const struct cmd_entry *, int, char **);
static int	cmd_sandbox_restore(const struct cmd_entry *, int, char **);

static const struct cmd_option cmd_client_json_options[] = {
	{ CMD_CLIENT_JSON, "json", CMD_V_NONE, NULL, 0,
	  "print the server's answer as JSON" },
	CMD_CLIENT_HOST_OPTIONS
};

const struct cmd_entry cmd_sandbox_snapshot_entry = {
	.name = "snapshot",
	.usage = "sandbox snapshot [--json] NAME SNAP",
	.summary = "save a sandbox whole, as the snapshot SNAP",
	.help =
"Save the ready or paused sandbox NAME whole (its memory, devices, disk and\n"
"processes alive) as SNAP, on the server's disk, where it outlives the\n"
"server; sandbox create --snapshot SNAP starts copies of it. A running\n"
"sandbox is saved live and stops only for the last pages. Prints SNAP,\n"
"or with --json the snapshot (its size and the pause it cost).\n"
"\n",
	.options = cmd_client_json_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_sandbox_snapshot
};

static const struct cmd_option cmd_sandbox_snapshots_options[] = {
	{ CMD_CLIENT_RM, "rm", CMD_V_NONE, NULL, 0,
	  "delete the snapshots named instead" },
	{ CMD_CLIENT_JSON, "json", CMD_V_NONE, NULL, 0,
	  "print the server's answer as JSON" },
	CMD_CLIENT_HOST_OPTIONS
};

const struct cmd_entry cmd_sandbox_snapshots_entry = {
	.name = "snapshots",
	.usage = "sandbox snapshots [--json] | snapshots --rm SNAP...",
	.summary = "the server's snapshots, or delete some",
	.help =
"One line each: NAME SANDBOX SIZE CREATED; with --json the server's\n"
"answer, {\"snapshots\": [...]}. With --rm, delete each snapshot named,\n"
"printing its name once it is gone (sandboxes made from it run on).\n"
"\n",
	.options = cmd_sandbox_snapshots_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_sandbox_snapshots
};

/* Its own: no other client command takes it. */
#define CMD_FORK_MACHINE_ID	(CMD_O_LONG + 40)

static const struct cmd_option cmd_sandbox_fork_options[] = {
	{ CMD_CLIENT_COUNT, "count", CMD_V_STRING, "N", 0,
	  "N copies, named NAME-f1... (default 1)" },
	{ CMD_FORK_MACHINE_ID, "machine-id", CMD_V_NONE, NULL, 0,
	  "a new /etc/machine-id in each copy" },
	{ CMD_CLIENT_JSON, "json", CMD_V_NONE, NULL, 0,
	  "print the server's answer as JSON" },
	CMD_CLIENT_HOST_OPTIONS
};

const struct cmd_entry cmd_sandbox_fork_entry = {
	.name = "fork",
	.usage = "sandbox fork [--count N] [--machine-id] [--json] NAME "
	    "[COPY...]",
	.summary = "running copies of a sandbox",
	.help =
"Make running copies of the ready or paused sandbox NAME (which stays as\n"
"it was): its processes, memory and files, each copy with its own disk,\n"
"the host's clock, fresh entropy, a new address on its network card (if\n"
"it has one) and, with --machine-id, a new /etc/machine-id. The copies\n"
"are the COPY names given, else --count N of them, NAME-f1, NAME-f2...\n"
"Prints each copy's name once all are ready.\n"
"\n",
	.options = cmd_sandbox_fork_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_sandbox_fork
};

const struct cmd_entry cmd_sandbox_restore_entry = {
	.name = "restore",
	.usage = "sandbox restore [--json] NAME SNAP",
	.summary = "load an attached QEMU's snapshot back into it",
	.help =
"Load the snapshot SNAP, which sandbox snapshot took of the attached QEMU\n"
"NAME (kept inside its qcow2 disks), back into it: its guest runs on from\n"
"there. Other sandboxes start copies of a snapshot instead, with sandbox\n"
"create --snapshot SNAP. Prints NAME, or with --json the sandbox.\n"
"\n",
	.options = cmd_client_json_options,
	.flags = CMD_IN_ORDER,
	.notes = CMD_CLIENT_TOKEN_HELP "\n" CMD_CLIENT_STATUS_HELP,
	.exec = cmd_sandbox_restore
};

/* POST NAME's suffix with {key: SNAP}; prints what, or the answer. */
static int
cmd_sandbox_snap_call(const struct cmd_entry *self, int argc, char **argv,
    const char *suffix, const char *key, int print_snap)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	json_t			*req = NULL, *reply = NULL;
	char			*cause = NULL, *path = NULL;
	int			 r, ret = QSUP_EXIT_ERROR;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind != 2) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	req = json_pack("{s:s}", key, argv[o.optind + 1]);
	path = client_path(argv[o.optind], suffix);
	if ((r = client_call(c, "POST", path, req, &reply, &cause)) != 0) {
		ret = cmd_client_fail(r, argv[o.optind], cause);
		goto out;
	}
	if (o.json)
		cmd_client_print_json(reply);
	else
		printf("%s\n", argv[o.optind + (print_snap ? 1 : 0)]);
	ret = 0;
out:
	free(path);
	json_decref(req);
	json_decref(reply);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}

/* qsup sandbox snapshot NAME SNAP */
static int
cmd_sandbox_snapshot(const struct cmd_entry *self, int argc, char **argv)
{
	return (cmd_sandbox_snap_call(self, argc, argv, "/snapshots", "name",
	    1));
}

/* qsup sandbox restore NAME SNAP */
static int
cmd_sandbox_restore(const struct cmd_entry *self, int argc, char **argv)
{
	return (cmd_sandbox_snap_call(self, argc, argv, "/restore", "snapshot",
	    0));
}

/* qsup sandbox snapshots [--json], or --rm SNAP... */
static int
cmd_sandbox_snapshots(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	json_t			*reply = NULL, *list, *v;
	char			*cause = NULL, *path;
	size_t			 i;
	int			 r, ret = QSUP_EXIT_ERROR, rm;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	rm = cmd_args_has(&o.a, CMD_CLIENT_RM);
	if ((rm && argc - o.optind < 1) || (!rm && argc - o.optind != 0)) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	if (rm) {
		ret = 0;
		for (i = o.optind; i < (size_t)argc; i++) {
			cause = NULL;
			xasprintf(&path, "/v1/snapshots/%s", argv[i]);
			r = client_call(c, "DELETE", path, NULL, &reply,
			    &cause);
			free(path);
			json_decref(reply);
			reply = NULL;
			if (r == 0) {
				printf("%s\n", argv[i]);
				continue;
			}
			ret = cmd_client_fail(r, argv[i], cause);
			if (ret == QSUP_EXIT_ERROR)
				break;
		}
		goto out;
	}
	if ((r = client_call(c, "GET", "/v1/snapshots", NULL, &reply,
	    &cause)) != 0) {
		ret = cmd_client_fail(r, NULL, cause);
		goto out;
	}
	list = json_object_get(reply, "snapshots");
	if (!json_is_array(list)) {
		log_warnx("%s: an answer without \"snapshots\"",
		    client_host(c));
		goto out;
	}
	if (o.json)
		cmd_client_print_json(reply);
	else {
		printf("%-20s %-20s %10s  %s\n", "NAME", "SANDBOX", "MIB",
		    "CREATED");
		json_array_foreach(list, i, v) {
			printf("%-20s %-20s %10.1f  %s\n",
			    json_path_str(v, "name") != NULL ?
			    json_path_str(v, "name") : "?",
			    json_path_str(v, "sandbox") != NULL ?
			    json_path_str(v, "sandbox") : "?",
			    json_number_value(json_object_get(v,
			    "size_bytes")) / 1048576,
			    json_path_str(v, "created") != NULL ?
			    json_path_str(v, "created") : "?");
		}
	}
	ret = 0;
out:
	json_decref(reply);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}

/* qsup sandbox fork [--count N] [--machine-id] NAME [COPY...] */
static int
cmd_sandbox_fork(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_client_opts	 o;
	struct client		*c = NULL;
	json_t			*req = NULL, *reply = NULL, *names, *v;
	const char		*count;
	char			*cause = NULL, *path = NULL, *end;
	long			 n;
	size_t			 i;
	int			 r, ret = QSUP_EXIT_ERROR;

	if ((r = cmd_client_args(self, argc, argv, &o)) != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if (argc - o.optind < 1) {
		log_warnx("usage: qsup %s", self->usage);
		goto out;
	}
	req = json_object();
	if ((count = cmd_args_get(&o.a, CMD_CLIENT_COUNT)) != NULL) {
		errno = 0;
		n = strtol(count, &end, 10);
		if (errno != 0 || end == count || *end != '\0' || n < 1 ||
		    n > 16) {
			log_warnx("--count %s: not a number of copies, 1 to 16",
			    count);
			goto out;
		}
		json_object_set_new(req, "count", json_integer(n));
	}
	if (cmd_args_has(&o.a, CMD_FORK_MACHINE_ID))
		json_object_set_new(req, "machine_id", json_true());
	if (argc - o.optind > 1) {
		names = json_array();
		for (i = o.optind + 1; i < (size_t)argc; i++)
			json_array_append_new(names, json_string(argv[i]));
		json_object_set_new(req, "names", names);
	}
	if ((c = cmd_client_open(&o)) == NULL)
		goto out;
	path = client_path(argv[o.optind], "/fork");
	if ((r = client_call(c, "POST", path, req, &reply, &cause)) != 0) {
		ret = cmd_client_fail(r, argv[o.optind], cause);
		goto out;
	}
	if (o.json)
		cmd_client_print_json(reply);
	else {
		json_array_foreach(json_object_get(reply, "sandboxes"), i, v) {
			if (json_path_str(v, "name") != NULL)
				printf("%s\n", json_path_str(v, "name"));
		}
	}
	ret = 0;
out:
	free(path);
	json_decref(req);
	json_decref(reply);
	client_free(c);
	cmd_client_opts_free(&o);
	return (ret);
}
