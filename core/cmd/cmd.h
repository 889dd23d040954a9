/*
 * core/cmd: qsup's commands, the top layer. It uses everything below:
 * core/serve for qsup serve, core/client for the commands that speak to
 * a server.
 */
#ifndef QSUP_CMD_H
#define QSUP_CMD_H

#include <signal.h>
#include <stdio.h>

#include "vm.h"

/*
 * The files lean one way, bottom up: cmd_usage.c and cmd_tty.c (what
 * every command uses), pull.c, setup.c and run.c (what run and image
 * pull use), cmd_image_layer.c (image ls's and prune's layers), the
 * commands (cmd_NAME.c, each with its entry), cmd.c (the table of
 * them, and help), cmd_complete.c, and main.c.
 */

/*
 * cmd_args.c: a command's options, declared in its entry (an array ended
 * by an empty one), read by one parser (getopt_long, built from the
 * array) into a struct cmd_args the command reads, and shown by --help
 * and offered by the shells' completions from the same array.
 */
enum cmd_value {
	CMD_V_NONE,		/* a flag: takes no value */
	CMD_V_STRING,
	CMD_V_FILE,		/* a host file: the shells offer paths */
	CMD_V_DIR,		/* a host directory (or HOST:GUEST) */
	CMD_V_PROFILE,		/* a profile's name or path */
	CMD_V_SETTING,		/* NAME=VALUE, a profile setting */
	CMD_V_ENV,		/* NAME=VALUE, an environment variable */
	CMD_V_NUMBER,
	CMD_V_SECONDS,
	CMD_V_SIZE		/* 4G, 512M, bytes */
};
#define CMD_O_REPEAT	0x1	/* given more than once, each value counts */
#define CMD_O_HIDDEN	0x2	/* taken, but neither shown nor offered */
#define CMD_O_HELP	0x4	/* asks for --help (cmd_args_parse: 1) */
#define CMD_O_LONG	0x100	/* keys of the options with no short name */
struct cmd_option {
	int		 key;	/* the short name, or CMD_O_LONG + N */
	const char	*name;	/* the long name, or NULL */
	enum cmd_value	 value;
	const char	*meta;	/* the value's name in --help, "FILE" */
	int		 flags;	/* CMD_O_* */
	const char	*help;	/* its lines in --help; NULL: not listed
				   there (the prose may say it) */
};
/* -h and --help among the options: --help, not listed. */
#define CMD_OPTION_HELP	{ 'h', "help", CMD_V_NONE, NULL, CMD_O_HELP, NULL }
struct cmd_args_item {
	int		 key;
	char		*value;		/* NULL for a flag */
};
struct cmd_args {
	const struct cmd_option	 *options;
	struct cmd_args_item	 *items;	/* each option given, in order */
	size_t			  nitems;
	char			***values;	/* each option's, by index */
	size_t			 *nvalues;
	int			  argc;		/* the operands */
	char			**argv;
	int			  dashdash;	/* "--" was before them */
	int			  bad;		/* getopt's optopt, on -1 */
	int			  bad_value;	/* ... a short one that needs a
						   value */
	const char		 *bad_word;	/* the word it was in */
};
struct cmd_entry;
int		 cmd_args_parse(const struct cmd_entry *, int, char **,
		     struct cmd_args *);
void		 cmd_args_free(struct cmd_args *);
int		 cmd_args_has(const struct cmd_args *, int);
const char	*cmd_args_get(const struct cmd_args *, int);
char		**cmd_args_list(const struct cmd_args *, int, size_t *);
int		 cmd_args_bad(const struct cmd_args *, const char *);
void		 cmd_args_print(const struct cmd_option *, int, FILE *);
const struct cmd_option *cmd_args_find(const struct cmd_option *,
		     const char *);

/*
 * cmd_usage.c: a command is one entry, in a file of its own (cmd_NAME.c);
 * one with subcommands has a table of them (subs), and its exec is called
 * only when none of them is named. exec gets the command's arguments from
 * its own name on (argv[0]) and returns qsup's exit status. Its --help:
 * usage, then help, the options' lines (those with a help), then notes.
 */
#define CMD_ALIASES	2
#define CMD_COLUMN	23	/* where option lines' help starts */
#define CMD_IN_ORDER	0x1	/* options end at the first operand */
struct cmd_entry {
	const char		 *name;
	const char		 *alias[CMD_ALIASES];	/* or NULL */
	const char		 *usage;	/* its forms, one a line, after
						   "qsup "; NULL: its subs' */
	const char		 *summary;	/* one line, for "qsup help" */
	const char		 *help;		/* --help's before the options */
	const struct cmd_option	 *options;	/* or NULL */
	int			  flags;	/* CMD_IN_ORDER */
	int			  column;	/* 0: CMD_COLUMN */
	const char		 *notes;	/* --help's after the options */
	const struct cmd_entry	*const *subs;	/* NULL-ended, or NULL */
	int			(*exec)(const struct cmd_entry *, int, char **);
};
const struct cmd_entry *cmd_find(const struct cmd_entry *const *,
		     const char *);
int		 cmd_exec(const struct cmd_entry *, int, char **);
int		 cmd_usage_lines(const struct cmd_entry *, FILE *, int);
void		 cmd_list(const struct cmd_entry *const *, int, const char *,
		     FILE *);
void		 cmd_usage_body(const struct cmd_entry *, FILE *);
void		 cmd_usage(const struct cmd_entry *, FILE *);

/* cmd_tty.c */
#define CMD_TTY_MAX	10000	/* rows, cols: what the agent takes */
void		 cmd_tty_raw(void);
void		 cmd_tty_restore(void);
int		 cmd_tty_size(unsigned *, unsigned *);

/* pull.c: one image got, cached, else pulled on the loop till done */
struct pull {
	struct image_pull	*pull;		/* while pulling */
	int			 cached;	/* no request was made */
	char			*path;		/* the image, once got */
	char			*cause;		/* or why not; NULL: cancelled */
};
struct image_req;
int		 pull_get(struct ev_loop *, const struct image_req *,
		     struct pull *);
void		 pull_cancel(struct pull *);
void		 pull_free(struct pull *);

/*
 * setup.c: a profile's setup steps, each a layer of the store found or
 * built, before run's sandbox boots on the top one.
 */
struct setup_report {
	char		*step;
	char		*key;
	int		 built;		/* else found (a hit) */
	int		 failed;
	double		 seconds;
};
struct outq;
struct image_layer;
struct setup {
	struct ev_loop		*loop;
	const struct profile	*profile;
	const struct accel_choice *accel;
	struct outq		*err;		/* the steps' output */
	int			 json;		/* no progress, no output */
	int			 interrupted;
	char			*store;		/* images_dir/layers */
	char			*base;		/* the base's real path */
	struct profile		 build_profile;	/* setup's network */
	struct sandbox		*building;
	struct image_layer	*layers;	/* held */
	size_t			 nlayers;
	struct setup_report	*reports;
	size_t			 nreports;
};
extern volatile sig_atomic_t setup_waiting;
int		 setup_run(struct setup *, const char *, char **);
char		**setup_paths(struct setup *);
void		 setup_interrupt(struct setup *);
void		 setup_json(const struct setup *, struct buf *);
void		 setup_free(struct setup *);

/* cmd.c: the table of commands, what "qsup help" prints, and help */
extern const struct cmd_entry	*const cmd_table[];
void		 cmd_usage_all(FILE *);
extern const struct cmd_entry	 cmd_help_entry;

/* cmd_complete.c: the hidden "qsup __complete WORD...", for the shells */
int		 cmd_complete(int, char **);

/* The commands, one file each. */
extern const struct cmd_entry	 cmd_run_entry;		/* cmd_run.c */
int		 cmd_run_short(int, char **, const struct cmd_entry *const *);
extern const struct cmd_entry	 cmd_cache_entry;	/* cmd_cache.c */
struct cmd_cache_tally {
	int		 n;		/* templates */
	int		 stale;		/* of them: stale or incomplete */
	int		 unknown;	/* ... of a format qsup cannot read */
	int		 writing;	/* half-written, writer alive */
	int		 abandoned;	/* half-written, writer gone */
	uint64_t	 allocated;	/* bytes on disk, all of them */
};
int		 cmd_cache_tally(const char *, struct cmd_cache_tally *);
extern const struct cmd_entry	 cmd_doctor_entry;	/* cmd_doctor.c */
extern const struct cmd_entry	 cmd_image_entry;	/* cmd_image.c */
/* cmd_image_layer.c: setup's layers, for image ls and image prune */
int		 cmd_image_ls_layers(const char *, int, struct buf *);
int		 cmd_image_prune_layers(const char *, long long, int,
		     const char *);
int		 cmd_image_age(const char *, long long *);
extern const struct cmd_entry	 cmd_serve_entry;	/* cmd_serve.c */
/* The API's client (cmd_client.c) and its MCP face (cmd_mcp.c). */
extern const struct cmd_entry	 cmd_sandbox_entry;
extern const struct cmd_entry	 cmd_exec_entry;
extern const struct cmd_entry	 cmd_cp_entry;
extern const struct cmd_entry	 cmd_ls_entry;
extern const struct cmd_entry	 cmd_rm_entry;
extern const struct cmd_entry	 cmd_mcp_entry;
struct client;
/* A qsup serve of our own: its process and private directory. */
struct cmd_mcp_server {
	pid_t	 pid;
	char	*dir;
	char	*host;
	char	*token;
};
int		 cmd_mcp_serve_start(struct cmd_mcp_server *, const char *,
		     struct client **);
void		 cmd_mcp_serve_stop(struct cmd_mcp_server *);
extern volatile sig_atomic_t cmd_mcp_stop;	/* a signal came */

/*
 * cmd_mcp.c: MCP (JSON-RPC 2.0, a message a line) on stdio, its tools
 * calls of a backend: the client, or a stub in the unit tests.
 */
#define MCP_LINE_MAX	(16 * 1024 * 1024)	/* a message from the client */
#define MCP_OUTPUT_MAX	(1024 * 1024)	/* an exec's stdout, stderr; a file */
struct mcp_exec_result {
	int		 code;		/* what qsup exec would exit with */
	struct json_t	*exit;		/* the exit event's data, or NULL */
	char		*error;		/* why it did not run to its end */
	struct buf	 out[2];	/* stdout, stderr, at most MCP_OUTPUT_MAX */
	int		 truncated[2];
};
/* As client_call, an exec run to its end, client_put and client_get. */
struct mcp_backend {
	int	(*call)(void *, const char *, const char *, struct json_t *,
		    struct json_t **, char **);
	int	(*exec)(void *, const char *, struct json_t *, const char *,
		    size_t, struct mcp_exec_result *, char **);
	int	(*put)(void *, const char *, const char *, int, const void *,
		    size_t, char **);
	int	(*get)(void *, const char *, const char *, size_t,
		    struct buf *, int *, char **);
	void	*arg;
	/* GET an API path's bytes (at most size_t); NULL: none */
	int	(*fetch)(void *, const char *, size_t, struct buf *, char **);
};
struct mcp;
struct mcp	*mcp_new(const struct mcp_backend *, const char *);
char		*mcp_handle(struct mcp *, const char *, size_t);
void		 mcp_free(struct mcp *);
/* cmd_mcp_text.c */
void		 mcp_utf8_clean(const char *, size_t, struct buf *);
int		 mcp_utf8_valid(const char *, size_t);
size_t		 mcp_utf8_whole(const char *, size_t);
char		*mcp_base64(const void *, size_t);
int		 mcp_unbase64(const char *, size_t, unsigned char **, size_t *);
struct json_t	*mcp_result_text(const char *, int);
struct json_t	*mcp_result_json(struct json_t *);
struct json_t	*mcp_result_error(char *);
/* cmd_mcp_screen.c: the computer-use tools, on the screen routes */
void		 mcp_screen_tools(struct json_t *);
struct json_t	*mcp_screen_call(const struct mcp_backend *, const char *,
		     struct json_t *);
int		 mcp_screen_fetch(void *, const char *, size_t, struct buf *,
		     char **);
extern const struct cmd_entry	 cmd_profile_entry;	/* cmd_profile.c */
extern const struct cmd_entry	 cmd_profile_import_entry; /* cmd_profile_import.c */
int		 cmd_profile_import(const struct cmd_entry *, int, char **);
extern const struct cmd_entry	 cmd_version_entry;	/* cmd_version.c */

/* run.c: what "qsup run" does, once cmd_run.c has read its options */
struct run_options {
	const char	*profile;
	char		**argv;
	char		**env;
	size_t		 nenv;
	const char	*cwd;
	char		**shares;	/* --share specs */
	size_t		 nshares;
	char		**sets;		/* --set NAME=VALUE, for the profile */
	size_t		 nsets;
	double		 timeout;
	int		 console;
	int		 json;
	int		 tty;		/* -t: a terminal in the guest */
	int		 interactive;	/* -i: stdin forwarded, even with -t */
	int		 setup_only;	/* --setup-only: the layers, no CMD */
};
int		 run_main(struct run_options *);


#endif
