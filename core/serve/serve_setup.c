/*
 * A sandbox's setup layers, built off the server's loop: "qsup run
 * --setup-only" in a child (the same build as qsup run's: a sandbox per
 * missing step, its layer committed on exit 0), whose stderr's "setup
 * N/M: STEP" lines are the progress and whose stdout is its error. One
 * child per profile and settings at a time: creates that need the
 * same layers wait on the same child (another process's build of a layer
 * is waited for by the child, on the layer's lock). A child no sandbox
 * waits for any more is sent SIGTERM (its build stops and caches
 * nothing) and is reaped here.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "serve_int.h"

#define SERVE_SETUP_TAIL	4096	/* of the child's stderr */

struct serve_setup {
	struct serve		*srv;
	TAILQ_ENTRY(serve_setup) entry;
	char			*key;		/* what it builds: its argv */
	const struct serve_setup_cbs *cbs;
	ev_child		 child;
	ev_io			 err_w;
	int			 out_fd;	/* its error */
	int			 err_fd;	/* its progress */
	struct buf		 line;		/* stderr's partial line */
	struct buf		 tail;		/* stderr's last bytes */
	char			*progress;
	unsigned		 users;
	int			 reaped;
};

/* Each sandbox waiting on j: cb(s, arg); done: they wait no more. */
static void
serve_setup_each(struct serve_setup *j, void (*cb)(struct serve_sb *,
    const char *), const char *arg, int done)
{
	struct serve_sb	*s, *next;

	TAILQ_FOREACH_SAFE(s, &j->srv->sbs, entry, next) {
		if (s->setup != j)
			continue;
		if (done) {
			s->setup = NULL;
			j->users--;
		}
		cb(s, arg);
	}
}

/* A line of the child's stderr: "setup N/M: STEP" is progress. */
static void
serve_setup_line(struct serve_setup *j, const char *line)
{
	const char	*p;
	unsigned	 n, m;

	if ((p = strstr(line, "setup ")) == NULL ||
	    sscanf(p, "setup %u/%u:", &n, &m) != 2)
		return;
	free(j->progress);
	xasprintf(&j->progress, "building setup step %s", p + 6);
	if (j->users > 0)
		serve_setup_each(j, j->cbs->progress, j->progress, 0);
}

static void
serve_setup_err_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct serve_setup	*j = w->data;
	char			 tmp[4096], *nl;
	ssize_t			 n;
	size_t			 off;

	(void)revents;
	for (;;) {
		n = read(j->err_fd, tmp, sizeof tmp);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		buf_add(&j->tail, tmp, n);
		if (j->tail.len > SERVE_SETUP_TAIL) {
			off = j->tail.len - SERVE_SETUP_TAIL;
			memmove(j->tail.data, j->tail.data + off,
			    SERVE_SETUP_TAIL);
			j->tail.len = SERVE_SETUP_TAIL;
		}
		buf_add(&j->line, tmp, n);
		while ((nl = memchr(j->line.data, '\n', j->line.len)) !=
		    NULL) {
			*nl = '\0';
			serve_setup_line(j, j->line.data);
			off = nl + 1 - j->line.data;
			memmove(j->line.data, nl + 1, j->line.len - off);
			j->line.len -= off;
		}
		if (j->line.len > SERVE_SETUP_TAIL)
			j->line.len = 0;	/* a step's long line */
	}
	ev_io_stop(loop, w);
	close(j->err_fd);
	j->err_fd = -1;
}

static void
serve_setup_free(struct serve_setup *j)
{
	TAILQ_REMOVE(&j->srv->setups, j, entry);
	ev_child_stop(j->srv->loop, &j->child);
	ev_io_stop(j->srv->loop, &j->err_w);
	if (j->err_fd != -1)
		close(j->err_fd);
	if (j->out_fd != -1)
		close(j->out_fd);
	buf_free(&j->line);
	buf_free(&j->tail);
	free(j->progress);
	free(j->key);
	free(j);
}

/* The child is reaped: its waiters go on, or fail with its error. */
static void
serve_setup_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct serve_setup	*j = w->data;
	struct buf		 b = { 0 };

	(void)revents;
	ev_child_stop(loop, w);
	j->reaped = 1;
	if (j->err_fd != -1)
		serve_setup_err_cb(loop, &j->err_w, 0);	/* what is left */
	buf_read_fd(&b, j->out_fd);
	if (WIFEXITED(w->rstatus) && WEXITSTATUS(w->rstatus) == 0)
		serve_setup_each(j, j->cbs->done, NULL, 1);
	else if (b.len > 0) {
		buf_add(&b, "", 1);
		serve_setup_each(j, j->cbs->done, b.data, 1);
	} else {
		buf_add(&j->tail, "", 1);
		buf_printf(&b, "setup: the build's process (qsup run "
		    "--setup-only) died (status 0x%x); its output ended:\n%s",
		    (unsigned)w->rstatus, j->tail.data);
		serve_setup_each(j, j->cbs->done, b.data, 1);
	}
	buf_free(&b);
	serve_setup_free(j);
}

/* The child: qsup run --setup-only ARGV...; never returns. */
static void
serve_setup_child(char **argv, int out, int err, const sigset_t *old)
{
	int	s, fd;

	for (s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, old, NULL);
	if ((fd = open("/dev/null", O_RDONLY)) != -1 && fd != 0) {
		dup2(fd, 0);
		close(fd);
	}
	if (dup2(out, 1) == -1 || dup2(err, 2) == -1)
		_exit(126);
	for (fd = 3; fd < 1024; fd++)
		(void)close(fd);
	execv("/proc/self/exe", argv);
	_exit(127);
}

/* Start the child for argv (NULL-terminated): j, or NULL with *cause. */
static struct serve_setup *
serve_setup_spawn(struct serve *srv, char **argv, char **cause)
{
	struct serve_setup	*j;
	sigset_t		 all, old;
	int			 out[2], err[2];
	pid_t			 pid;

	if (pipe2(out, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return (NULL);
	}
	if (pipe2(err, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		return (NULL);
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	if ((pid = fork()) == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		xasprintf(cause, "fork: %s", strerror(errno));
		close(out[0]);
		close(out[1]);
		close(err[0]);
		close(err[1]);
		return (NULL);
	}
	if (pid == 0)
		serve_setup_child(argv, out[1], err[1], &old);
	close(out[1]);
	close(err[1]);
	j = xcalloc(1, sizeof *j);
	j->srv = srv;
	j->out_fd = out[0];
	j->err_fd = err[0];
	(void)fcntl(j->err_fd, F_SETFL, O_NONBLOCK);
	ev_child_init(&j->child, serve_setup_child_cb, pid, 0);
	j->child.data = j;
	ev_child_start(srv->loop, &j->child);
	sigprocmask(SIG_SETMASK, &old, NULL);
	ev_io_init(&j->err_w, serve_setup_err_cb, j->err_fd, EV_READ);
	j->err_w.data = j;
	ev_io_start(srv->loop, &j->err_w);
	return (j);
}

/*
 * s's layers: the child for profile and sets started, or joined if one
 * is building them already; cbs later, on each sandbox waiting.
 * 0, or -1 with *cause.
 */
int
serve_setup_start(struct serve_sb *s, const char *profile, char *const *sets,
    size_t nsets, const struct serve_setup_cbs *cbs, char **cause)
{
	struct serve		*srv = s->srv;
	struct serve_setup	*j;
	struct buf		 key = { 0 };
	char			**argv;
	size_t			 i, n = 0;
	int			 rc = -1;

	argv = xcalloc(nsets * 2 + 6, sizeof *argv);
	argv[n++] = "qsup";
	argv[n++] = "run";
	argv[n++] = "--setup-only";
	if (profile != NULL) {
		argv[n++] = "-p";
		argv[n++] = xstrdup(profile);
	}
	for (i = 0; i < nsets; i++) {
		argv[n++] = "--set";
		argv[n++] = sets[i];
	}
	/*
	 * The image as the profile names it, not s->image: the child finds
	 * it where serve got it (the cache), and a pinned image_sha256 would
	 * refuse a file.
	 */
	for (i = 0; i < n; i++) {
		buf_puts(&key, argv[i]);
		buf_add(&key, "\n", 1);
	}
	buf_add(&key, "", 1);
	TAILQ_FOREACH(j, &srv->setups, entry) {
		if (!j->reaped && strcmp(j->key, key.data) == 0)
			break;
	}
	if (j == NULL) {
		if ((j = serve_setup_spawn(srv, argv, cause)) == NULL)
			goto fail;
		j->key = xstrdup(key.data);
		j->cbs = cbs;
		TAILQ_INSERT_TAIL(&srv->setups, j, entry);
	}
	j->users++;
	s->setup = j;
	if (j->progress != NULL)
		cbs->progress(s, j->progress);
	rc = 0;
fail:
	if (profile != NULL)
		free(argv[4]);
	free(argv);
	buf_free(&key);
	return (rc);
}

/* s waits no more; a child nobody waits for is stopped. */
void
serve_setup_leave(struct serve_sb *s)
{
	struct serve_setup	*j = s->setup;

	if (j == NULL)
		return;
	s->setup = NULL;
	if (--j->users == 0 && !j->reaped)
		(void)kill(j->child.pid, SIGTERM);
}

/* Any child still running (the server waits for them to end). */
int
serve_setup_busy(struct serve *srv)
{
	return (!TAILQ_EMPTY(&srv->setups));
}

/*
 * The end: every child stopped (SIGTERM: its build's QEMU is stopped and
 * nothing is cached) and reaped.
 */
void
serve_setup_free_all(struct serve *srv)
{
	struct serve_setup	*j;

	while ((j = TAILQ_FIRST(&srv->setups)) != NULL) {
		(void)kill(j->child.pid, SIGTERM);
		while (waitpid(j->child.pid, NULL, 0) == -1 && errno == EINTR)
			/* nothing */;
		serve_setup_free(j);
	}
}
