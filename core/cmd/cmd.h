/*
 * core/cmd: qsup's commands, the top layer. It uses everything below.
 */
#ifndef QSUP_CMD_H
#define QSUP_CMD_H

#include "vm.h"

/* cmd_profile.c: "qsup profile check|show|settings|facts" */
int		 cmd_profile(int, char **);

/* run.c: the "run" command */
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
};
int		 run_main(struct run_options *);


#endif
