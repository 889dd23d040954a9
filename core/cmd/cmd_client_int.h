/*
 * What the client commands' files share (core/cmd/cmd_client*.c): their
 * option numbers and common options, their parsed options, and the
 * helpers of cmd_client_opts.c. They lean one way: cmd_client_opts.c
 * (options checked, the server opened, failures and JSON printed),
 * cmd_client_snap.c (snapshot, snapshots, fork), cmd_client.c (the rest,
 * and the sandbox command's table).
 */
#ifndef QSUP_CMD_CLIENT_INT_H
#define QSUP_CMD_CLIENT_INT_H

#include <jansson.h>

#include "cmd.h"
#include "client.h"

#define CMD_CLIENT_EXIT_REFUSED	1

#define CMD_CLIENT_HOST		(CMD_O_LONG + 0)
#define CMD_CLIENT_CACERT	(CMD_O_LONG + 1)
#define CMD_CLIENT_JSON		(CMD_O_LONG + 2)
#define CMD_CLIENT_SET		(CMD_O_LONG + 3)
#define CMD_CLIENT_TIMEOUT	(CMD_O_LONG + 4)
#define CMD_CLIENT_TTL		(CMD_O_LONG + 5)
#define CMD_CLIENT_IDLE_TTL	(CMD_O_LONG + 6)
#define CMD_CLIENT_ON_TTL	(CMD_O_LONG + 7)
#define CMD_CLIENT_SNAPSHOT	(CMD_O_LONG + 8)
#define CMD_CLIENT_RM		(CMD_O_LONG + 9)
#define CMD_CLIENT_COUNT	(CMD_O_LONG + 10)
#define CMD_CLIENT_DISK		(CMD_O_LONG + 11)
#define CMD_CLIENT_PERSISTENT	(CMD_O_LONG + 12)
#define CMD_CLIENT_PERSIST_EVERY (CMD_O_LONG + 13)

/* What every client command takes, after its own options. */
#define CMD_CLIENT_HOST_OPTIONS \
	{ CMD_CLIENT_HOST, "host", CMD_V_STRING, "HOST", 0, \
	  "the server: unix:PATH, http://127.0.0.1:PORT or\n" \
	  "https://HOST:PORT (default: QSUP_HOST, else\n" \
	  "unix:$XDG_RUNTIME_DIR/qsup/qsup.sock)" }, \
	{ CMD_CLIENT_CACERT, "cacert", CMD_V_FILE, "FILE", 0, \
	  "the CA of an https server (default: QSUP_CACERT)" }, \
	{ 'v', "verbose", CMD_V_NONE, NULL, CMD_O_HIDDEN, NULL }, \
	CMD_OPTION_HELP, \
	{ 0, NULL, 0, NULL, 0, NULL }

#define CMD_CLIENT_TOKEN_HELP \
"The token is QSUP_TOKEN, else the file QSUP_TOKEN_FILE names, else the\n" \
"server's default token file.\n"

#define CMD_CLIENT_STATUS_HELP \
"Exit status: 0; 1 when the server refused (its error is printed); 125\n" \
"on a usage error, or when no server answered.\n"

struct cmd_client_opts {
	struct cmd_args	 a;
	const char	*host;
	const char	*cacert;
	const char	*profile;
	char		**sets;
	size_t		 nsets;
	char		**env;
	size_t		 nenv;
	const char	*cwd;
	double		 timeout;
	double		 ttl;		/* -1: not given */
	double		 idle_ttl;
	const char	*on_ttl;
	int		 json;
	int		 interactive;
	int		 tty;
	int		 optind;
};

/* cmd_client_opts.c */
void		 cmd_client_opts_free(struct cmd_client_opts *);
int		 cmd_client_args(const struct cmd_entry *, int, char **,
		     struct cmd_client_opts *);
struct client	*cmd_client_open(const struct cmd_client_opts *);
int		 cmd_client_fail(int, const char *, char *);
void		 cmd_client_print_json(json_t *);

/* cmd_client_snap.c */
extern const struct cmd_entry cmd_sandbox_snapshot_entry;
extern const struct cmd_entry cmd_sandbox_snapshots_entry;
extern const struct cmd_entry cmd_sandbox_fork_entry;
extern const struct cmd_entry cmd_sandbox_restore_entry;
/* cmd_client_screen.c */
extern const struct cmd_entry cmd_sandbox_screenshot_entry;

#endif
