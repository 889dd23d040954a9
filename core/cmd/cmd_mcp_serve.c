/*
 * "qsup mcp": a qsup serve of its own, for when none answers at its host:
 * started in a private directory, stopped with everything it made.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <jansson.h>
#include "cmd.h"
#include "client.h"

/* A signal came (cmd_mcp.c's handler): stop waiting, and serving. */
volatile sig_atomic_t	cmd_mcp_stop;

/*
 * Start "qsup serve" on a socket in a new private directory, with a
 * token we make, and wait until it answers: 0, or -1 (said).
 */
int
cmd_mcp_serve_start(struct cmd_mcp_server *srv, const char *cacert,
    struct client **cp)
{
	struct client	*c;
	sigset_t	 all, old;
	const char	*tmp;
	char		*sock, *tokpath, *listen, *cause = NULL, *arg[8];
	char		*line;
	double		 deadline;
	int		 fd, status, i;

	memset(srv, 0, sizeof *srv);
	srv->pid = -1;
	/* A socket's path fits in 108 bytes: a long TMPDIR would not do. */
	if ((tmp = getenv("TMPDIR")) == NULL || *tmp != '/' ||
	    strlen(tmp) > 64)
		tmp = "/tmp";
	xasprintf(&srv->dir, "%s/qsup-mcp.XXXXXX", tmp);
	if (mkdtemp(srv->dir) == NULL) {
		log_warn("%s", srv->dir);
		free(srv->dir);
		srv->dir = NULL;
		return (-1);
	}
	xasprintf(&sock, "%s/s.sock", srv->dir);
	xasprintf(&tokpath, "%s/token", srv->dir);
	xasprintf(&listen, "unix:%s", sock);
	srv->host = listen;
	srv->token = token_hex(32);
	xasprintf(&line, "%s\n", srv->token);
	fd = open(tokpath, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600);
	if (fd == -1 || client_write_all(fd, line, strlen(line)) == -1) {
		log_warn("%s", tokpath);
		if (fd != -1)
			close(fd);
		free(line);
		goto fail;
	}
	close(fd);
	free(line);

	arg[0] = "qsup";
	arg[1] = "serve";
	arg[2] = "--listen";
	arg[3] = listen;
	arg[4] = "--token-file";
	arg[5] = tokpath;
	arg[6] = NULL;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if ((srv->pid = fork()) == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		log_warn("fork");
		goto fail;
	}
	if (srv->pid == 0) {
		for (i = 1; i < NSIG; i++)
			signal(i, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		/* Our stdout is the MCP channel: its output goes to stderr. */
		if ((fd = open("/dev/null", O_RDONLY)) != -1) {
			dup2(fd, STDIN_FILENO);
			if (fd != STDIN_FILENO)
				close(fd);
		}
		dup2(STDERR_FILENO, STDOUT_FILENO);
		/* Ours alone: a ^C in the terminal is ours to pass on. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execv("/proc/self/exe", arg);
		_exit(127);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);

	if ((c = client_new(listen, cacert, &cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
		goto fail;
	}
	client_set_token(c, srv->token);
	deadline = util_now() + 60;
	for (;;) {
		free(cause);
		cause = NULL;
		if (client_healthz(c, &line, &cause) == 0) {
			free(line);
			break;
		}
		if (waitpid(srv->pid, &status, WNOHANG) == srv->pid) {
			srv->pid = -1;
			log_warnx("qsup serve of our own exited before it "
			    "answered: %s", cause);
			goto fail_client;
		}
		if (util_now() > deadline || cmd_mcp_stop) {
			log_warnx("qsup serve of our own did not answer: %s",
			    cause);
			goto fail_client;
		}
		usleep(50000);
	}
	free(cause);
	free(sock);
	free(tokpath);
	*cp = c;
	return (0);
fail_client:
	free(cause);
	client_free(c);
fail:
	free(sock);
	free(tokpath);
	return (-1);
}

/* Stop it (SIGTERM: it tears its sandboxes down), reap it, remove all. */
void
cmd_mcp_serve_stop(struct cmd_mcp_server *srv)
{
	double	deadline;
	int	status;

	if (srv->pid > 0) {
		kill(srv->pid, SIGTERM);
		deadline = util_now() + 60;
		while (waitpid(srv->pid, &status, WNOHANG) == 0) {
			if (util_now() > deadline) {
				log_warnx("qsup serve %ld did not stop: "
				    "killed", (long)srv->pid);
				kill(srv->pid, SIGKILL);
				waitpid(srv->pid, &status, 0);
				break;
			}
			usleep(20000);
		}
		srv->pid = -1;
	}
	if (srv->dir != NULL)
		util_rm_rf(srv->dir);
	free(srv->dir);
	free(srv->host);
	free(srv->token);
	memset(srv, 0, sizeof *srv);
}
