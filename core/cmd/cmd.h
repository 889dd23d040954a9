/*
 * core/cmd: qsup's commands, the top layer. It uses everything below.
 */
#ifndef QSUP_CMD_H
#define QSUP_CMD_H

#include <stdio.h>

#include "vm.h"

#define QSUP_VERSION	"0.1.0"

/*
 * cmd.c: the command table. A command is one entry, in a file of its own
 * (cmd_NAME.c); one with subcommands has a table of them (subs), and its
 * exec is called only when none of them is named. exec gets the command's
 * arguments from its own name on (argv[0]) and returns qsup's exit status.
 */
#define CMD_ALIASES	2
struct cmd_entry {
	const char		 *name;
	const char		 *alias[CMD_ALIASES];	/* or NULL */
	const char		 *usage;	/* its forms, one a line, after
						   "qsup "; NULL: its subs' */
	const char		 *summary;	/* one line, for "qsup help" */
	const char		 *help;		/* the rest of --help, or NULL */
	const struct cmd_entry	*const *subs;	/* NULL-ended, or NULL */
	int			(*exec)(const struct cmd_entry *, int, char **);
};
extern const struct cmd_entry	*const cmd_table[];
const struct cmd_entry *cmd_find(const struct cmd_entry *const *,
		     const char *);
int		 cmd_exec(const struct cmd_entry *, int, char **);
void		 cmd_usage(const struct cmd_entry *, FILE *);
void		 cmd_usage_all(FILE *);

/* The commands, one file each. */
extern const struct cmd_entry	 cmd_run_entry;		/* cmd_run.c */
extern const struct cmd_entry	 cmd_cache_entry;	/* cmd_cache.c */
extern const struct cmd_entry	 cmd_image_entry;	/* cmd_image.c */
struct image_req;
void		 cmd_image_request(const struct profile *, int,
		     struct image_req *);
/* One image got: cached, else pulled on the loop until done or cancelled. */
struct cmd_pull {
	struct image_pull	*pull;		/* while pulling */
	int			 cached;	/* no request was made */
	char			*path;		/* the image, once got */
	char			*cause;		/* or why not; NULL: cancelled */
};
int		 cmd_pull(struct ev_loop *, const struct image_req *,
		     struct cmd_pull *);
void		 cmd_pull_cancel(struct cmd_pull *);
void		 cmd_pull_free(struct cmd_pull *);
extern const struct cmd_entry	 cmd_serve_entry;	/* cmd_serve.c */
/* The API's client (cmd_client.c) and its MCP face (cmd_mcp.c). */
extern const struct cmd_entry	 cmd_sandbox_entry;
extern const struct cmd_entry	 cmd_exec_entry;
extern const struct cmd_entry	 cmd_cp_entry;
extern const struct cmd_entry	 cmd_ls_entry;
extern const struct cmd_entry	 cmd_rm_entry;
extern const struct cmd_entry	 cmd_mcp_entry;
extern const struct cmd_entry	 cmd_profile_entry;	/* cmd_profile.c */
extern const struct cmd_entry	 cmd_version_entry;	/* cmd_version.c */
extern const struct cmd_entry	 cmd_help_entry;	/* cmd_help.c */

/* run.c: what "qsup run" does, once cmd_run.c has read its options */
struct run_options {
	const char	*profile;
	char		**argv;
	char		**env;
	size_t		 nenv;
	const char	*cwd;
	const char	**shares;	/* --share specs */
	size_t		 nshares;
	char		**sets;		/* --set NAME=VALUE, for the profile */
	size_t		 nsets;
	double		 timeout;
	int		 console;
	int		 json;
	int		 tty;		/* -t: a terminal in the guest */
	int		 interactive;	/* -i: stdin forwarded, even with -t */
};
int		 run_main(struct run_options *);
int		 cmd_shares(const struct profile *, const char *const *, size_t,
		     char *const *, char *const *, size_t, struct share **,
		     size_t *, char **);


#endif
