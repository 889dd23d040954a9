/*
 * Commands run for POST /exec. Each is one struct exec: its process (the
 * leader of a new session, so signals reach the whole group), its three
 * pipes and the port its events stream to. An exec ends when its process
 * has been reaped: the pipes are then drained of what is already in them
 * and closed, and the exit event is sent. Output written later by
 * background processes that kept the pipes open is not waited for.
 *
 * With "tty" the command's stdin, stdout and stderr are one new
 * pseudo-terminal instead, of which the exec holds the master twice: as
 * out_fd, read for stdout events until the exit, and as in_fd, a
 * duplicate that stdin uploads write to and /close closes, so closing
 * stdin does not end the output. A file job (job.c) is an exec whose
 * process is a child of the agent rather than a program.
 *
 * A command without a tty starts, when it can, in a runner: a child the
 * agent forked ahead while idle, which waits with its pipes made for one
 * command and execs it (exec_runner_fill). Under TCG a restored guest's
 * first fork took 11-12 ms, its code translated afresh in every new QEMU;
 * a template's runner was forked before the save, so a warm run's first
 * command skips that.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC	(1U << 2)
#endif

/* Read per pipe once the process has exited. */
#define EXEC_DRAIN_MAX	(4 * 1024 * 1024)

enum {
	EXEC_OUT,
	EXEC_ERR,
	EXEC_IN
};

/* What a child that could not exec tells its parent. */
struct exec_failure {
	int	stage;		/* EXEC_STAGE_* */
	int	error;		/* errno */
};
#define EXEC_STAGE_SETUP	1
#define EXEC_STAGE_CHDIR	2
#define EXEC_STAGE_EXEC		3

/*
 * A runner's command comes as a header (the length of the rest, the
 * number of arguments, of environment entries) and then cwd, the
 * arguments and the entries, each NUL-terminated, in one write that the
 * pipe's buffer holds whole: a larger command forks instead.
 */
#define EXEC_RUNNER_MAX		(60 * 1024)
struct exec_runner_head {
	uint32_t	len;
	uint32_t	argc;
	uint32_t	envc;
};

/* The agent's side of a runner. */
struct exec_runner {
	pid_t		 pid;
	int		 ctl;		/* the command goes here */
	int		 in;		/* its stdin's write end */
	int		 out;		/* its stdout's, stderr's read ends */
	int		 err;
	int		 status;	/* CLOEXEC in it: exec failures */
	dev_t		 root_dev;	/* the root it was spawned in */
	ino_t		 root_ino;
	int		 ready;		/* its "R" read: it waits on ctl */
};

struct exec {
	unsigned	 id;
	pid_t		 pid;
	const struct exec_cb	*cb;	/* how events reach port */
	void		*port;		/* NULL: the host is gone */
	int		 out_fd;
	int		 err_fd;
	int		 in_fd;
	int		 status_fd;	/* CLOEXEC: exec failures */

	struct abuf	 in_buf;	/* one stdin body being written */
	void		*in_port;	/* waiting for that write's 204 */
	int		 in_close;	/* close stdin after in_buf */

	int		 tty;		/* out_fd and in_fd: a pty's master */
	char		*tmp;		/* a write job's temporary name */

	int		 reaped;
	int		 status;
	int		 done;
	char		*what;		/* argv[0] */
	char		*cwd;

	struct exec	*next;
};

static char		 exec_chunk[QSUP_CHUNK];

static void
exec_close(int *fd)
{
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

struct exec *
exec_find(struct agent *a, unsigned id)
{
	struct exec	*e;

	for (e = a->execs; e != NULL; e = e->next) {
		if (e->id == id && !e->done)
			return (e);
	}
	return (NULL);
}

int
exec_count(struct agent *a)
{
	struct exec	*e;
	int		 n = 0;

	for (e = a->execs; e != NULL; e = e->next)
		n++;
	return (n);
}

/* Set NAME=VALUE in a NULL-terminated vector, replacing NAME if present. */
static void
exec_env_set(char ***envp, size_t *n, const char *kv)
{
	size_t	klen = strcspn(kv, "="), i;

	for (i = 0; i < *n; i++) {
		if (strncmp((*envp)[i], kv, klen) == 0 &&
		    (*envp)[i][klen] == '=') {
			free((*envp)[i]);
			(*envp)[i] = xstrdup(kv);
			return;
		}
	}
	*envp = xreallocarray(*envp, *n + 2, sizeof **envp);
	(*envp)[(*n)++] = xstrdup(kv);
	(*envp)[*n] = NULL;
}

static void
exec_env_default(char ***envp, size_t *n, const char *kv)
{
	size_t	klen = strcspn(kv, "="), i;

	for (i = 0; i < *n; i++) {
		if (strncmp((*envp)[i], kv, klen) == 0 &&
		    (*envp)[i][klen] == '=')
			return;
	}
	exec_env_set(envp, n, kv);
}

/* In the child: everything the agent changed goes back to the default. */
static void
exec_child_signals(void)
{
	struct sigaction	sa;
	sigset_t		set;
	int			sig;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
}

/* In a child: tell the agent why it could not exec, and end. */
static void __attribute__((noreturn))
exec_failed(int status, int stage, int error)
{
	struct exec_failure	f = { stage, error };

	(void)!write(status, &f, sizeof f);
	_exit(127);
}

/* In a child: into cwd, then the command, or why not on status. */
static void __attribute__((noreturn))
exec_command(int status, const char *cwd, char **argv, char **envp)
{
	if (chdir(cwd) == -1)
		exec_failed(status, EXEC_STAGE_CHDIR, errno);
	environ = envp;
	execvp(argv[0], argv);
	exec_failed(status, EXEC_STAGE_EXEC, errno);
}

/*
 * In the child: the command, on 0-2 (with tty all three the slave, which
 * becomes the controlling terminal of the new session).
 */
static void __attribute__((noreturn))
exec_child(int in, int out, int err, int status, char **argv, char **envp,
    const char *cwd, int tty)
{
	int	fd;

	if (setsid() == -1 || (tty && ioctl(in, TIOCSCTTY, 0) == -1) ||
	    dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1)
		exec_failed(status, EXEC_STAGE_SETUP, errno);
	exec_child_signals();
	/* Nothing but 0-2 and the status pipe may reach the command. */
	if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) == -1) {
		for (fd = 3; fd < 1024; fd++)
			(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	exec_command(status, cwd, argv, envp);
}

/*
 * In the child: a file job. It is the leader of its own group like a
 * command, so /signal reaches it, and it keeps nothing of the agent's.
 */
static void __attribute__((noreturn))
exec_job_child(int in, int out, int err, const struct json_exec *x,
    const char *tmp)
{
	int	fd;

	(void)setsid();
	if (dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1)
		_exit(errno);
	exec_child_signals();
	if (syscall(SYS_close_range, 3U, ~0U, 0U) == -1) {
		for (fd = 3; fd < 1024; fd++)
			(void)close(fd);
	}
	(void)!chdir("/");	/* the paths are absolute */
	if (x->read != NULL)
		_exit(job_read(x->read));
	_exit(job_write(x->write, x->mode, tmp));
}

/*
 * A new pseudo-terminal of rows x cols (0: 24x80), its master non-blocking.
 * The slave is opened here, before the fork, and held by the child from
 * then on: so the master never reads as hung up before the command has
 * its terminal, only once every holder of the slave has closed it.
 */
static int
exec_pty(unsigned rows, unsigned cols, int *master, int *slave,
    char **cause)
{
	struct winsize	 ws;
	char		 name[64];
	const char	*what;

	*master = *slave = -1;
	what = "posix_openpt";
	if ((*master = posix_openpt(O_RDWR|O_NOCTTY)) == -1)
		goto fail;
	what = "grantpt";
	if (fcntl(*master, F_SETFD, FD_CLOEXEC) == -1 || grantpt(*master) == -1)
		goto fail;
	what = "unlockpt";
	if (unlockpt(*master) == -1)
		goto fail;
	what = "ptsname";
	if ((errno = ptsname_r(*master, name, sizeof name)) != 0)
		goto fail;
	what = name;
	if ((*slave = open(name, O_RDWR|O_NOCTTY|O_CLOEXEC)) == -1)
		goto fail;
	memset(&ws, 0, sizeof ws);
	ws.ws_row = rows != 0 ? rows : 24;
	ws.ws_col = cols != 0 ? cols : 80;
	what = "TIOCSWINSZ";
	if (ioctl(*master, TIOCSWINSZ, &ws) == -1)
		goto fail;
	what = "fcntl";
	if (fcntl(*master, F_SETFL, O_NONBLOCK) == -1)
		goto fail;
	return (0);
fail:
	xasprintf(cause, "pty: %s: %s", what, strerror(errno));
	exec_close(master);
	exec_close(slave);
	return (-1);
}

/*
 * Where a write job writes before the rename: beside the file, named
 * after it and the exec, so that the agent can remove it if the job dies.
 */
static char *
exec_job_tmp(const char *path, unsigned id)
{
	const char	*slash;
	char		*tmp;

	if (path[0] != '/' || (slash = strrchr(path, '/'))[1] == '\0')
		return (NULL);
	xasprintf(&tmp, "%.*s/.%.200s.qsup-%ld-%u", (int)(slash - path), path,
	    slash + 1, (long)getpid(), id);
	return (tmp);
}

static int
exec_pipe(int fds[2], int parent_end)
{
	if (pipe2(fds, O_CLOEXEC) == -1)
		return (-1);
	if (fcntl(fds[parent_end], F_SETFL, O_NONBLOCK) == -1) {
		close(fds[0]);
		close(fds[1]);
		fds[0] = fds[1] = -1;
		return (-1);
	}
	return (0);
}

/* In a runner: n bytes of its command, or its end (the agent let it go). */
static void
exec_runner_read(int fd, void *buf, size_t n)
{
	char	*p = buf;
	ssize_t	 r;

	while (n > 0) {
		if ((r = read(fd, p, n)) == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(0);
		p += r;
		n -= (size_t)r;
	}
}

/*
 * A runner: its stdin, stdout and stderr are its pipes, nothing else of
 * the agent's is open but ctl and status. It says "R" on status once it
 * waits on ctl for its command, then goes on as exec_child does.
 */
static void __attribute__((noreturn))
exec_runner_main(int ctl, int status)
{
	struct exec_runner_head	 h;
	char			*buf, *p, *end, **argv, **envp;
	const char		*cwd;
	uint32_t		 i;

	if (write(status, "R", 1) != 1)
		_exit(126);
	exec_runner_read(ctl, &h, sizeof h);
	if (h.len == 0 || h.len > EXEC_RUNNER_MAX || h.argc == 0 ||
	    h.argc > h.len || h.envc > h.len)
		exec_failed(status, EXEC_STAGE_SETUP, EINVAL);
	if ((buf = malloc(h.len)) == NULL ||
	    (argv = calloc(h.argc + 1, sizeof *argv)) == NULL ||
	    (envp = calloc(h.envc + 1, sizeof *envp)) == NULL)
		exec_failed(status, EXEC_STAGE_SETUP, ENOMEM);
	exec_runner_read(ctl, buf, h.len);
	close(ctl);
	if (buf[h.len - 1] != '\0')
		exec_failed(status, EXEC_STAGE_SETUP, EINVAL);
	p = buf;
	end = buf + h.len;
	cwd = p;
	p += strlen(p) + 1;
	for (i = 0; i < h.argc + h.envc; i++) {
		if (p >= end)
			exec_failed(status, EXEC_STAGE_SETUP, EINVAL);
		if (i < h.argc)
			argv[i] = p;
		else
			envp[i - h.argc] = p;
		p += strlen(p) + 1;
	}
	exec_command(status, cwd, argv, envp);
}

/* Close every descriptor from 3 up but keep0 and keep1 (both 3 or more). */
static void
exec_close_but(int keep0, int keep1)
{
	int	lo = keep0 < keep1 ? keep0 : keep1;
	int	hi = keep0 < keep1 ? keep1 : keep0, fd;
	long	rc = 0;

	if (lo > 3)
		rc |= syscall(SYS_close_range, 3U, (unsigned)lo - 1, 0U);
	if (hi > lo + 1)
		rc |= syscall(SYS_close_range, (unsigned)lo + 1,
		    (unsigned)hi - 1, 0U);
	rc |= syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U);
	if (rc != 0) {
		for (fd = 3; fd < 1024; fd++) {
			if (fd != keep0 && fd != keep1)
				(void)close(fd);
		}
	}
}

/*
 * A runner program: the agent itself, spawned with "--runner CTL STATUS"
 * and nothing else of the agent's open (a long wait must not hold another
 * command's pipe open).
 */
void
exec_runner_run(const char *ctl, const char *status)
{
	int	c = atoi(ctl), st = atoi(status);

	if (c < 3 || st < 3 || c == st)
		_exit(126);
	(void)fcntl(c, F_SETFD, FD_CLOEXEC);
	(void)fcntl(st, F_SETFD, FD_CLOEXEC);
	exec_close_but(c, st);
	exec_runner_main(c, st);
}

/*
 * While the agent is idle (no command running), the next runner: its
 * pipes, and the agent's own program spawned to hold their other ends and
 * wait for its command (exec_runner_run). Spawned at boot, so a template
 * holds one, and again after each command. Spawned (vfork and exec), not
 * forked: a fork would leave every page of the agent's copy-on-write, and
 * a restored agent's writes to them cost it more than the fork saves. If
 * it cannot be, commands fork as before.
 */
void
exec_runner_fill(struct agent *a)
{
	struct exec_runner		*r;
	struct stat			 sb;
	posix_spawn_file_actions_t	 fa;
	posix_spawnattr_t		 attr;
	sigset_t			 all, none;
	char				 c[16], s[16];
	char				*argv[] = { (char *)"qsup-agent",
					    (char *)"--runner", c, s, NULL };
	char				*envp[] = { NULL };
	int				 in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int				 err[2] = { -1, -1 }, st[2] = { -1, -1 };
	int				 ctl[2] = { -1, -1 }, i;
	pid_t				 pid;

	if (a->runner != NULL || a->execs != NULL || a->poweroff ||
	    a->runner_off || stat("/", &sb) == -1)
		return;
	if (exec_pipe(in, 1) == -1 || exec_pipe(out, 0) == -1 ||
	    exec_pipe(err, 0) == -1 || exec_pipe(st, 0) == -1 ||
	    pipe2(ctl, O_CLOEXEC) == -1) {
		log_warn("a runner's pipes");
		a->runner_off = 1;
		goto out;
	}
	snprintf(c, sizeof c, "%d", ctl[0]);
	snprintf(s, sizeof s, "%d", st[1]);
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	posix_spawnattr_init(&attr);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID |
	    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setsigmask(&attr, &none);
	/* These two alone of the agent's reach it (the agent is one thread). */
	(void)fcntl(ctl[0], F_SETFD, 0);
	(void)fcntl(st[1], F_SETFD, 0);
	errno = posix_spawn(&pid, "/proc/self/exe", &fa, &attr, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (errno != 0) {
		/* Not again in this root: commands fork. */
		log_warn("spawning a runner");
		a->runner_off = 1;
		goto out;
	}
	r = xcalloc(1, sizeof *r);
	r->pid = pid;
	r->ctl = ctl[1];
	r->in = in[1];
	r->out = out[0];
	r->err = err[0];
	r->status = st[0];
	ctl[1] = in[1] = out[0] = err[0] = st[0] = -1;
	r->root_dev = sb.st_dev;
	r->root_ino = sb.st_ino;
	a->runner = r;
out:
	for (i = 0; i < 2; i++) {
		exec_close(&in[i]);
		exec_close(&out[i]);
		exec_close(&err[i]);
		exec_close(&st[i]);
		exec_close(&ctl[i]);
	}
}

/* Let a runner go: it ends on its pipe's EOF, and is reaped as any child. */
static void
exec_runner_drop(struct exec_runner *r)
{
	exec_close(&r->ctl);
	exec_close(&r->in);
	exec_close(&r->out);
	exec_close(&r->err);
	exec_close(&r->status);
	free(r);
}

/* Its "R", waited for: 0 once it waits for its command, -1 if it cannot. */
static int
exec_runner_wait(struct exec_runner *r)
{
	struct pollfd	pfd = { r->status, POLLIN, 0 };
	char		c;

	if (r->ready)
		return (0);
	while (poll(&pfd, 1, 5000) == -1 && errno == EINTR)
		;
	if (read(r->status, &c, 1) != 1 || c != 'R')
		return (-1);
	r->ready = 1;
	return (0);
}

/* Whether r was spawned in the agent's present root. */
static int
exec_runner_same_root(const struct exec_runner *r)
{
	struct stat	sb;

	return (stat("/", &sb) == 0 && sb.st_dev == r->root_dev &&
	    sb.st_ino == r->root_ino);
}

/*
 * A runner in the agent's present root, now: at boot and after a template
 * build's root is mounted (POST /root). With wait, one that waits for its
 * command before this returns, so that a template is saved with it idle
 * rather than in the middle of its start.
 */
void
exec_runner_ready(struct agent *a, int wait)
{
	struct exec_runner	*r = a->runner;

	if (r != NULL && !exec_runner_same_root(r)) {
		a->runner = NULL;
		exec_runner_drop(r);
	}
	a->runner_off = 0;
	exec_runner_fill(a);
	if (wait && (r = a->runner) != NULL && exec_runner_wait(r) == -1) {
		log_warnx("a runner did not start");
		a->runner = NULL;
		exec_runner_drop(r);
	}
}

/* The runner's command in its format: -1 if it does not fit. */
static int
exec_runner_spec(struct abuf *b, char **argv, char **envp, const char *cwd)
{
	struct exec_runner_head	h = { 0, 0, 0 };
	size_t			i;

	abuf_add(b, &h, sizeof h);
	abuf_add(b, cwd, strlen(cwd) + 1);
	for (i = 0; argv[i] != NULL; i++, h.argc++)
		abuf_add(b, argv[i], strlen(argv[i]) + 1);
	for (i = 0; envp != NULL && envp[i] != NULL; i++, h.envc++)
		abuf_add(b, envp[i], strlen(envp[i]) + 1);
	if (abuf_used(b) - sizeof h > EXEC_RUNNER_MAX || h.argc == 0)
		return (-1);
	h.len = (uint32_t)(abuf_used(b) - sizeof h);
	memcpy(abuf_start(b), &h, sizeof h);
	return (0);
}

/*
 * A command without a tty goes to the runner, if there is one spawned in
 * the agent's present root and the command fits its pipe: 0 with the
 * pipes' ends and the pid as exec_start's fork would give them. Else -1
 * (the command forks): a runner of another root, or that is gone, is let
 * go; one that a command too large for it passed by stays for the next.
 */
static int
exec_runner_take(struct agent *a, char **argv, char **envp, const char *cwd,
    int ends[4], pid_t *pid)
{
	struct exec_runner	*r = a->runner;
	struct abuf		 b = { 0 };
	ssize_t			 n = -1;
	int			 fits, same;

	if (r == NULL)
		return (-1);
	fits = exec_runner_spec(&b, argv, envp, cwd) == 0;
	same = exec_runner_same_root(r);
	if (same && !fits) {		/* too large: it waits for the next */
		explicit_bzero(abuf_start(&b), abuf_used(&b));
		abuf_free(&b);
		return (-1);
	}
	a->runner = NULL;
	if (same && exec_runner_wait(r) == 0) {
		/* Whole or not at all: its empty pipe holds it. */
		do
			n = write(r->ctl, abuf_start(&b), abuf_used(&b));
		while (n == -1 && errno == EINTR);
	}
	if (abuf_used(&b) > 0)		/* the environment may hold secrets */
		explicit_bzero(abuf_start(&b), abuf_used(&b));
	if (n == -1 || (size_t)n != abuf_used(&b)) {
		abuf_free(&b);
		exec_runner_drop(r);
		return (-1);
	}
	abuf_free(&b);
	ends[0] = r->in;
	ends[1] = r->out;
	ends[2] = r->err;
	ends[3] = r->status;
	*pid = r->pid;
	r->in = r->out = r->err = r->status = -1;
	exec_runner_drop(r);
	return (0);
}

/* Start a command whose events stream to p, through cb. */
int
exec_start(struct agent *a, const struct exec_cb *cb, void *p,
    struct json_exec *x, unsigned *id, pid_t *pid, char **cause)
{
	struct exec	*e = NULL;
	int		 in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int		 err[2] = { -1, -1 }, st[2] = { -1, -1 };
	int		 master = -1, slave = -1, ends[4];
	pid_t		 rpid = -1;	/* a runner's (exec_runner_take) */
	char		**envp = NULL, *kv, *tmp = NULL, **argv, **ep = NULL;
	size_t		 nenv = 0, i;
	const char	*cwd;
	int		 ret = -1;

	for (i = 0; i < a->init->cfg.nenv; i++)
		exec_env_set(&envp, &nenv, a->init->cfg.env[i]);
	for (i = 0; i < x->nenv; i++)
		exec_env_set(&envp, &nenv, x->env[i]);
	exec_env_default(&envp, &nenv, "PATH=" AGENT_PATH);
	exec_env_default(&envp, &nenv, "HOME=/root");
	exec_env_default(&envp, &nenv, "TERM=dumb");
	if ((cwd = x->cwd) == NULL && (cwd = a->init->cfg.cwd) == NULL)
		cwd = "/";
	if (x->argv != NULL && x->entrypoint)
		ep = imageconf_argv(a->init, x->argv, x->argc);
	argv = ep != NULL ? ep : x->argv;

	if (x->tty) {
		if (exec_pty(x->rows, x->cols, &master, &slave, cause) == -1)
			goto out;
		/* A second hold on the master, for stdin alone. */
		in[1] = fcntl(master, F_DUPFD_CLOEXEC, 3);
		if (in[1] == -1) {
			xasprintf(cause, "dup: %s", strerror(errno));
			goto out;
		}
		in[0] = out[1] = err[1] = slave;
	} else if (x->argv != NULL && exec_runner_take(a, argv, envp, cwd,
	    ends, &rpid) == 0) {
		in[1] = ends[0];
		out[0] = ends[1];
		err[0] = ends[2];
		st[0] = ends[3];
	} else if (exec_pipe(in, 1) == -1 || exec_pipe(out, 0) == -1 ||
	    exec_pipe(err, 0) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		goto out;
	}
	if (rpid == -1 && exec_pipe(st, 0) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		goto out;
	}
	if (x->write != NULL)
		tmp = exec_job_tmp(x->write, a->exec_next_id);
	e = xcalloc(1, sizeof *e);
	e->pid = rpid != -1 ? rpid : fork();
	if (e->pid == -1) {
		xasprintf(cause, "fork: %s", strerror(errno));
		goto out;
	}
	if (e->pid == 0 && x->argv == NULL)
		exec_job_child(in[0], out[1], err[1], x, tmp);
	if (e->pid == 0)
		exec_child(in[0], out[1], err[1], st[1], argv, envp, cwd,
		    x->tty);

	e->id = a->exec_next_id++;
	e->cb = cb;
	e->port = p;
	e->tty = x->tty;
	e->in_fd = in[1];
	if (x->tty) {
		e->out_fd = master;
		e->err_fd = -1;
		master = -1;
	} else {
		e->out_fd = out[0];
		e->err_fd = err[0];
	}
	e->status_fd = st[0];
	in[1] = out[0] = err[0] = st[0] = -1;
	if (x->argv != NULL)
		e->what = xstrdup(argv[0]);
	else
		e->what = xstrdup(x->read != NULL ? x->read : x->write);
	e->tmp = tmp;
	tmp = NULL;
	e->cwd = xstrdup(cwd);
	e->next = a->execs;
	a->execs = e;
	*id = e->id;
	*pid = e->pid;
	e = NULL;
	ret = 0;
out:
	free(e);
	free(tmp);
	free(ep);
	if (slave != -1) {
		/* The same descriptor stands for the child's three ends. */
		in[0] = out[1] = err[1] = -1;
		exec_close(&slave);
	}
	exec_close(&master);
	for (i = 0; i < 2; i++) {
		exec_close(&in[i]);
		exec_close(&out[i]);
		exec_close(&err[i]);
		exec_close(&st[i]);
	}
	for (i = 0; i < nenv; i++) {
		kv = envp[i];
		free(kv);
	}
	free(envp);
	return (ret);
}

/* Write pending stdin: 0 all written, 1 more to come, -1 stdin is gone. */
static int
exec_stdin_push(struct exec *e)
{
	ssize_t	n;

	while (abuf_used(&e->in_buf) > 0) {
		n = write(e->in_fd, abuf_start(&e->in_buf),
		    abuf_used(&e->in_buf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return (1);
		if (n <= 0) {
			/* EPIPE: nothing reads the command's stdin now. */
			abuf_free(&e->in_buf);
			exec_close(&e->in_fd);
			return (-1);
		}
		abuf_consume(&e->in_buf, n);
	}
	abuf_free(&e->in_buf);
	if (e->in_close)
		exec_close(&e->in_fd);
	return (0);
}

/*
 * Queue body for the command's stdin: 0 when written at once, 1 when p
 * must wait (stdin_done answers it later), -1 with *cause for 409.
 */
int
exec_stdin(struct exec *e, void *p, struct abuf *body,
    const char **cause)
{
	int	r;

	if (e->in_port != NULL) {
		*cause = "a stdin write is already in progress";
		return (-1);
	}
	if (e->in_fd == -1 || e->in_close) {
		*cause = "stdin closed";
		return (-1);
	}
	if (abuf_used(body) == 0)
		return (0);
	abuf_free(&e->in_buf);
	e->in_buf = *body;
	memset(body, 0, sizeof *body);
	r = exec_stdin_push(e);
	if (r == 1)
		e->in_port = p;
	if (r == -1)
		*cause = "stdin closed";
	return (r);
}

/* EOF on the command's stdin, after any write in progress. */
void
exec_close_stdin(struct exec *e)
{
	if (e->in_port != NULL)
		e->in_close = 1;
	else
		exec_close(&e->in_fd);
}

/*
 * The terminal's new size: the kernel sends SIGWINCH to its foreground
 * group. -1 (409) for an exec without one; once the terminal has hung up
 * there is nothing left to resize, and that is not the host's mistake.
 */
int
exec_resize(struct exec *e, unsigned rows, unsigned cols)
{
	struct winsize	ws;

	if (!e->tty)
		return (-1);
	if (e->out_fd == -1)
		return (0);
	memset(&ws, 0, sizeof ws);
	ws.ws_row = rows;
	ws.ws_col = cols;
	(void)ioctl(e->out_fd, TIOCSWINSZ, &ws);
	return (0);
}

/* Signal the command's process group (or the process, before setsid). */
int
exec_signal(struct exec *e, int sig)
{
	if (e->reaped)
		return (0);
	if (kill(-e->pid, sig) == 0)
		return (0);
	if (errno == ESRCH && kill(e->pid, sig) == 0)
		return (0);
	return (errno == ESRCH ? 0 : -1);
}

/* p's host end is gone: nobody can see these commands' output. */
void
exec_port_gone(struct agent *a, void *p)
{
	struct exec	*e;

	for (e = a->execs; e != NULL; e = e->next) {
		if (e->port == p) {
			e->port = NULL;
			if (!e->reaped)
				exec_signal(e, SIGKILL);
		}
		if (e->in_port == p) {
			e->in_port = NULL;
			abuf_free(&e->in_buf);
			if (e->in_close)
				exec_close(&e->in_fd);
		}
	}
}

static int
exec_readable(const struct exec *e)
{
	return (e->port == NULL || e->cb->pending(e->port) < AGENT_OUT_HIGH);
}

/*
 * Poll entries for the pipes. refs get the exec; the fd is found again
 * from the entry's events (POLLOUT: stdin) and fd number.
 */
int
exec_pollfds(struct agent *a, struct pollfd *pfd, void **refs, int max)
{
	struct exec	*e;
	int		 n = 0;

	for (e = a->execs; e != NULL; e = e->next) {
		if (e->done)
			continue;
		if (n + 3 > max)
			break;
		if (e->out_fd != -1 && exec_readable(e)) {
			pfd[n].fd = e->out_fd;
			pfd[n].events = POLLIN;
			refs[n++] = e;
		}
		if (e->err_fd != -1 && exec_readable(e)) {
			pfd[n].fd = e->err_fd;
			pfd[n].events = POLLIN;
			refs[n++] = e;
		}
		if (e->in_fd != -1 && abuf_used(&e->in_buf) > 0) {
			pfd[n].fd = e->in_fd;
			pfd[n].events = POLLOUT;
			refs[n++] = e;
		}
	}
	return (n);
}

/*
 * One read from a pipe into one event: 0, or -1 at EOF or error (EIO: a
 * terminal nobody holds now), or 1 when more may be waiting. A pipe's read
 * short of the buffer took all there was; a terminal's need not have.
 */
static int
exec_read(struct exec *e, int which)
{
	int	*fd = which == EXEC_OUT ? &e->out_fd : &e->err_fd;
	ssize_t	 n;

	if (*fd == -1)
		return (-1);
	n = read(*fd, exec_chunk, sizeof exec_chunk);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return (0);
	if (n <= 0) {
		exec_close(fd);
		return (-1);
	}
	if (e->port != NULL)
		e->cb->event(e->port, which == EXEC_OUT ? QSUP_EVENT_STDOUT :
		    QSUP_EVENT_STDERR, exec_chunk, n, 1);
	return ((size_t)n == sizeof exec_chunk || e->tty ? 1 : 0);
}

void
exec_handle(void *ref, const struct pollfd *pfd)
{
	struct exec	*e = ref;
	void		*p;
	int		 r;

	if (e->done || pfd->revents == 0)
		return;
	if (pfd->fd == e->out_fd && (pfd->events & POLLIN))
		exec_read(e, EXEC_OUT);
	else if (pfd->fd == e->err_fd && (pfd->events & POLLIN))
		exec_read(e, EXEC_ERR);
	else if (pfd->fd == e->in_fd && (pfd->events & POLLOUT)) {
		r = exec_stdin_push(e);
		if (r == 1 || (p = e->in_port) == NULL)
			return;
		e->in_port = NULL;
		e->cb->stdin_done(p, r == 0 ? 204 : 409, "stdin closed");
	}
}

void
exec_reaped(struct agent *a, pid_t pid, int status)
{
	struct exec	*e;

	for (e = a->execs; e != NULL; e = e->next) {
		if (e->pid == pid && !e->reaped) {
			e->reaped = 1;
			e->status = status;
			return;
		}
	}
}

/* Read what is already in a pipe, without waiting for more. */
static void
exec_drain(struct exec *e, int which)
{
	size_t	total = 0;
	int	r;

	while ((r = exec_read(e, which)) != -1) {
		total += sizeof exec_chunk;
		if (r == 0 || total > EXEC_DRAIN_MAX)
			break;
	}
	if (which == EXEC_OUT)
		exec_close(&e->out_fd);
	else
		exec_close(&e->err_fd);
}

/* The process is reaped: send the rest of its output and its exit. */
static void
exec_finish(struct exec *e)
{
	struct exec_failure	 f;
	struct abuf		 b = { 0 };
	char			*msg;
	ssize_t			 n;
	void			*p;

	exec_drain(e, EXEC_OUT);
	exec_drain(e, EXEC_ERR);
	do
		n = read(e->status_fd, &f, sizeof f);
	while (n == -1 && errno == EINTR);
	exec_close(&e->status_fd);
	/* A write job that did not finish leaves nothing behind. */
	if (e->tmp != NULL && (!WIFEXITED(e->status) ||
	    WEXITSTATUS(e->status) != 0))
		(void)unlink(e->tmp);

	if (n == (ssize_t)sizeof f) {
		if (f.stage == EXEC_STAGE_CHDIR)
			xasprintf(&msg, "chdir %s: %s", e->cwd,
			    strerror(f.error));
		else if (f.stage == EXEC_STAGE_EXEC)
			xasprintf(&msg, "%s: %s", e->what, strerror(f.error));
		else
			xasprintf(&msg, "setup: %s", strerror(f.error));
		abuf_printf(&b, "{\"status\":%d,\"error\":",
		    f.error == ENOENT || f.error == ENOTDIR ? 127 : 126);
		wire_json_string(abuf_put, &b, msg);
		abuf_add(&b, "}", 1);
		free(msg);
	} else if (WIFSIGNALED(e->status))
		abuf_printf(&b, "{\"signal\":%d}", WTERMSIG(e->status));
	else
		abuf_printf(&b, "{\"status\":%d}", WEXITSTATUS(e->status));

	if ((p = e->port) != NULL) {
		e->cb->event(p, QSUP_EVENT_EXIT, b.data, b.len, 0);
		e->port = NULL;
		e->cb->exited(p);
	}
	abuf_free(&b);
	if ((p = e->in_port) != NULL) {
		e->in_port = NULL;
		e->cb->stdin_done(p, 409, "command exited");
	}
	exec_close(&e->in_fd);
	abuf_free(&e->in_buf);
	e->done = 1;
}

/* After each loop turn: finish reaped commands and free them. */
void
exec_sweep(struct agent *a)
{
	struct exec	*e, **ep;

	for (e = a->execs; e != NULL; e = e->next) {
		if (e->reaped && !e->done)
			exec_finish(e);
	}
	for (ep = &a->execs; (e = *ep) != NULL;) {
		if (!e->done) {
			ep = &e->next;
			continue;
		}
		*ep = e->next;
		free(e->what);
		free(e->cwd);
		free(e->tmp);
		free(e);
	}
}

void
exec_kill_all(struct agent *a, int sig)
{
	struct exec	*e;

	for (e = a->execs; e != NULL; e = e->next) {
		if (!e->reaped)
			exec_signal(e, sig);
	}
}
