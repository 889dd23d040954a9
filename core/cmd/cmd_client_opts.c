/*
 * The client commands' common part: their options parsed and checked,
 * the server opened (client.c), a failure said with the right exit
 * status, an answer printed as JSON. Below the commands' own files.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd_client_int.h"

void
cmd_client_opts_free(struct cmd_client_opts *o)
{
	cmd_args_free(&o->a);
}

/* The values of o's options checked, in the order given: 0, or -1 (said). */
static int
cmd_client_check(struct cmd_client_opts *o)
{
	const struct cmd_args_item	*it;
	char				*end;
	double				 d;
	size_t				 i;

	o->ttl = o->idle_ttl = -1;
	for (i = 0; i < o->a.nitems; i++) {
		it = &o->a.items[i];
		switch (it->key) {
		case CMD_CLIENT_SET:
		case 'e':
			if (strchr(it->value, '=') == NULL ||
			    it->value[0] == '=') {
				log_warnx("%s %s: not NAME=VALUE", it->key ==
				    'e' ? "-e" : "--set", it->value);
				return (-1);
			}
			break;
		case CMD_CLIENT_TIMEOUT:
		case CMD_CLIENT_TTL:
		case CMD_CLIENT_IDLE_TTL:
			errno = 0;
			d = strtod(it->value, &end);
			if (errno != 0 || end == it->value || *end != '\0' ||
			    d < 0 || d > 1e9) {
				log_warnx("--%s %s: not a number of seconds",
				    it->key == CMD_CLIENT_TIMEOUT ? "timeout" :
				    it->key == CMD_CLIENT_TTL ? "ttl" :
				    "idle-ttl", it->value);
				return (-1);
			}
			if (it->key == CMD_CLIENT_TIMEOUT)
				o->timeout = d;
			else if (it->key == CMD_CLIENT_TTL)
				o->ttl = d;
			else
				o->idle_ttl = d;
			break;
		case CMD_CLIENT_ON_TTL:
			if (strcmp(it->value, "delete") != 0 &&
			    strcmp(it->value, "pause") != 0) {
				log_warnx("--on-ttl %s: not delete or pause",
				    it->value);
				return (-1);
			}
			o->on_ttl = it->value;
			break;
		}
	}
	return (0);
}

/*
 * The options of a command, up to its first operand: 0; 1 when --help
 * was asked (and printed); -1 on a usage error (said).
 */
int
cmd_client_args(const struct cmd_entry *self, int argc, char **argv,
    struct cmd_client_opts *o)
{
	struct cmd_args	*a = &o->a;
	int		 r;

	memset(o, 0, sizeof *o);
	/* The values before a --help or a bad option are checked first. */
	r = cmd_args_parse(self, argc, argv, a);
	if (cmd_client_check(o) == -1)
		goto usage;
	if (r == 1) {
		cmd_usage(self, stdout);
		cmd_client_opts_free(o);
		return (1);
	}
	if (r == -1) {
		(void)cmd_args_bad(a, self->name);
		goto usage;
	}
	o->host = cmd_args_get(a, CMD_CLIENT_HOST);
	o->cacert = cmd_args_get(a, CMD_CLIENT_CACERT);
	o->json = cmd_args_has(a, CMD_CLIENT_JSON);
	o->profile = cmd_args_get(a, 'p');
	o->sets = cmd_args_list(a, CMD_CLIENT_SET, &o->nsets);
	o->interactive = cmd_args_has(a, 'i');
	o->tty = cmd_args_has(a, 't');
	o->env = cmd_args_list(a, 'e', &o->nenv);
	o->cwd = cmd_args_get(a, 'w');
	if (cmd_args_has(a, 'v'))
		log_verbose = 1;
	o->optind = argc - a->argc;
	return (0);
usage:
	cmd_client_opts_free(o);
	return (-1);
}

/* The client of o's host; NULL (said) if the host does not parse. */
struct client *
cmd_client_open(const struct cmd_client_opts *o)
{
	struct client	*c;
	char		*cause = NULL;

	if ((c = client_new(o->host, o->cacert, &cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
	}
	return (c);
}

/* What a call's result makes of the command's exit, cause said. */
int
cmd_client_fail(int ret, const char *what, char *cause)
{
	if (what != NULL)
		log_warnx("%s: %s", what, cause);
	else
		log_warnx("%s", cause);
	free(cause);
	return (ret == CLIENT_REFUSED ? CMD_CLIENT_EXIT_REFUSED :
	    QSUP_EXIT_ERROR);
}

/* JSON on stdout, one line. */
void
cmd_client_print_json(json_t *j)
{
	char	*text;

	text = json_dumps(j, JSON_COMPACT|JSON_PRESERVE_ORDER);
	if (text != NULL)
		printf("%s\n", text);
	free(text);
}
