/*
 * "qsup run": one sandbox, one command. Boot, run the command with its
 * stdio streamed both ways, pass its exit status through, tear down.
 *
 * The command is an exec (core/vm/exec.c), which speaks the agent's
 * protocol; this file says what to run and where its output goes. Agent
 * ports: 0 carries the ping and then the exec stream, 1 the stdin uploads
 * (each waits for the command to take the bytes, so it may block), 2
 * signals, terminal resizes and stdin's close, which must get through
 * even when stdin is stuck.
 *
 * With -t the command runs on a terminal in the guest, and when our stdin
 * is a terminal it is in raw mode while the command runs: every key, ^C
 * and ^Z too, is a byte for the guest's terminal, whose line discipline
 * makes signals of them there. The host terminal's settings are put back
 * on every way out (cmd_tty_restore, also at exit).
 */
#include <sys/resource.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <jansson.h>

#include "cmd.h"
#include "image.h"
#include "wire.h"

#define RUN_PORT_EXEC		0
#define RUN_PORT_STDIN		1
#define RUN_PORT_CONTROL	2

#define RUN_OUT_HIGH		(1024 * 1024)	/* pause the guest's output */
#define RUN_STDIN_CHUNK		65536
#define RUN_SIGNAL_GRACE	1.0	/* after SIGINT, before teardown */
#define RUN_LOST_GRACE		3.0	/* exec port gone, QEMU not yet reaped */
#define RUN_ERR_TAIL		2048	/* stderr kept for closure_hint() */

struct run {
	struct ev_loop		*loop;
	struct run_options	*opts;
	struct profile		 profile;
	struct accel_choice	 accel;
	struct sandbox		*sb;

	struct outq		*out;
	struct outq		*err;
	int			 in_fd;
	ev_io			 in;
	int			 in_eof;
	int			 forward_stdin;	/* else only /close */
	struct exec		*x;		/* the command, once ready */

	ev_signal		 winch;		/* -t: our terminal's size */
	unsigned		 rows;		/* the guest terminal's, as */
	unsigned		 cols;		/* last sent; 0: the default */

	ev_async		 sigasync;	/* run_sig_handler's news */
	int			 hard_stop;	/* a second signal came */
	int			 retry;		/* boot again (run_kvm_failed) */
	ev_timer		 grace;
	ev_timer		 lost;

	int			 exited;	/* its stream ended well */
	int			 status;	/* qsup's exit status */
	long long		 exit_signal;	/* 0 or the signal */
	int			 interrupted;	/* the signal we got */
	int			 timed_out;
	char			*error;		/* why qsup failed */
	int			 sparse;	/* the sparse closure applies */
	char			 err_tail[RUN_ERR_TAIL]; /* stderr's last bytes */
	size_t			 err_tail_len;

	double			 t_start;
	double			 t_spawn;
	double			 t_ready;
	double			 t_started;	/* the agent said it runs */
	double			 t_exit;
	double			 t_end;
	long			 qemu_rss_kb;
	char			*image;		/* the base image file, or NULL */
	struct pull		 pull;		/* getting it */
	struct setup		 setup;		/* its layers (setup.c) */
	int			 in_setup;	/* building them */
};

static void	run_teardown(struct run *, const char *);
static void	run_stdin_read_cb(struct ev_loop *, ev_io *, int);

/*
 * SIGINT, SIGTERM and SIGHUP, counted by a handler of our own rather than
 * ev_signal: a second one must also reach waits outside the loop (the
 * KVM probe, a template save, the last flush of our output), which look
 * at util_stop_now. The loop hears of them through run_sig_async.
 */
static volatile sig_atomic_t	 run_nsignals;
static volatile sig_atomic_t	 run_first_signal;
static struct ev_loop		*run_sig_loop;
static ev_async			*run_sig_async;

/* Tell the guest's terminal our size, if it changed since it was told. */
static void
run_tty_resize(struct run *r)
{
	unsigned	rows, cols;

	(void)cmd_tty_size(&rows, &cols);
	if (r->x == NULL || exec_id(r->x) < 0 || r->exited || rows == 0 ||
	    (rows == r->rows && cols == r->cols))
		return;
	r->rows = rows;
	r->cols = cols;
	exec_resize(r->x, rows, cols, NULL, NULL);
}

static void
run_winch_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	run_tty_resize(w->data);
}

static void
run_set_error(struct run *r, const char *msg)
{
	if (r->error == NULL)
		r->error = xstrdup(msg);
}

static void
run_ready_cb(struct sandbox *sb, void *arg);

/*
 * QEMU did not boot under KVM although a remembered verdict said KVM
 * works here: the verdict no longer holds. It is dropped, so the next run
 * measures again, and this run boots again under TCG (unless the profile
 * insists on KVM). 1 when the run goes on.
 */
static int
run_kvm_failed(struct run *r, struct sandbox *sb, const char *msg)
{
	if (r->accel.accel != ACCEL_KVM || !r->accel.remembered ||
	    sandbox_state(sb) >= SB_READY || r->interrupted || r->timed_out)
		return (0);
	kvm_forget();
	r->accel.remembered = 0;
	if (r->profile.use_kvm == PROFILE_KVM_ON) {
		log_debug("QEMU failed under KVM although KVM was remembered "
		    "to work: the verdict is dropped");
		return (0);
	}
	log_debug("QEMU failed under KVM (%s) although KVM was remembered to "
	    "work: the verdict is dropped; booting again under TCG", msg);
	free(r->accel.why);
	xasprintf(&r->accel.why, "KVM failed although remembered to work: %s",
	    msg);
	r->accel.accel = ACCEL_TCG;
	r->retry = 1;
	return (1);
}

static void
run_failed_cb(struct sandbox *sb, const char *msg, void *arg)
{
	struct run	*r = arg;
	struct buf	 tail = { 0 };

	if (run_kvm_failed(r, sb, msg))
		return;
	run_set_error(r, msg);
	r->status = QSUP_EXIT_ERROR;
	log_warnx("%s", msg);
	/* Whether it failed to start or died mid-command (console_on_failure). */
	if (r->profile.console_on_failure > 0)
		sandbox_console_tail(sb, r->profile.console_on_failure, &tail);
	if (tail.len > 0)	/* after the message, in the same queue */
		log_info("last lines of the console:\n%s", tail.data);
	buf_free(&tail);
}

static void
run_dead_cb(struct sandbox *sb, void *arg)
{
	struct run	*r = arg;

	(void)sb;
	r->t_end = util_now();
	ev_timer_stop(r->loop, &r->lost);
	ev_break(r->loop, EVBREAK_ALL);
}

/* Our stdout drained: let the guest's output flow again. */
static void
run_drain_cb(void *arg)
{
	struct run		*r = arg;

	/* Also called for qsup's own messages, before the command exists. */
	if (r->x == NULL)
		return;
	if (outq_pending(r->out) + outq_pending(r->err) < RUN_OUT_HIGH)
		exec_resume(r->x);
}

/* Keep the last bytes of the command's stderr, for run_exit_hint. */
static void
run_err_tail(struct run *r, const unsigned char *p, size_t n)
{
	if (n >= RUN_ERR_TAIL) {
		memcpy(r->err_tail, p + n - RUN_ERR_TAIL, RUN_ERR_TAIL);
		r->err_tail_len = RUN_ERR_TAIL;
		return;
	}
	if (r->err_tail_len + n > RUN_ERR_TAIL) {
		memmove(r->err_tail, r->err_tail + (r->err_tail_len + n -
		    RUN_ERR_TAIL), RUN_ERR_TAIL - n);
		r->err_tail_len = RUN_ERR_TAIL - n;
	}
	memcpy(r->err_tail + r->err_tail_len, p, n);
	r->err_tail_len += n;
}

/*
 * Under "sparse", a command that failed for want of a library gets one
 * line after its own stderr, naming it and the remedy.
 */
static void
run_exit_hint(struct run *r, int status)
{
	char	*line;

	if (!r->sparse || status == 0 ||
	    (line = closure_hint(r->err_tail, r->err_tail_len)) == NULL)
		return;
	outq_write(r->err, line, strlen(line));
	free(line);
}

/* The command's output to ours; held in the guest while ours is full. */
static int
run_output_cb(struct exec *x, enum exec_stream stream, const char *data,
    size_t len, void *arg)
{
	struct run	*r = arg;
	struct outq	*q = stream == EXEC_STDERR ? r->err : r->out;
	unsigned char	*raw;
	size_t		 n;

	(void)x;
	raw = xmalloc(len * 3 / 4 + 3);
	n = util_base64_decode(data, len, raw);
	outq_write(q, raw, n);
	if (q == r->err && r->sparse)
		run_err_tail(r, raw, n);
	free(raw);
	return (outq_pending(r->out) + outq_pending(r->err) >= RUN_OUT_HIGH);
}

/* The agent took what we read (read on), or takes no more. */
static void
run_stdin_cb(struct exec *x, enum exec_stdin_news news, void *arg)
{
	struct run	*r = arg;

	(void)x;
	if (news == EXEC_STDIN_REFUSED) {
		/* The command is gone or closed its stdin: stop sending. */
		r->in_eof = 1;
		return;
	}
	if (news == EXEC_STDIN_SENT && !r->in_eof && !r->exited)
		ev_io_start(r->loop, &r->in);
}

static void
run_stdin_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct run	*r = w->data;
	char		*chunk;
	ssize_t		 n;

	(void)revents;
	chunk = xmalloc(RUN_STDIN_CHUNK);
	n = read(r->in_fd, chunk, RUN_STDIN_CHUNK);
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		free(chunk);
		return;
	}
	ev_io_stop(loop, w);
	if (n <= 0) {
		r->in_eof = 1;
		/*
		 * A terminal's input has no end but its EOF character (^D, as
		 * the guest's terminal starts): typed for the end of what we
		 * forwarded, as script(1) does, so "cat" there ends too.
		 */
		if (r->opts->tty && r->forward_stdin)
			(void)exec_stdin_write(r->x, "\004", 1);
		exec_stdin_close(r->x);
	} else {
		/* One upload in flight: the agent's 204 paces us. */
		(void)exec_stdin_write(r->x, chunk, n);
	}
	free(chunk);
}

/* To the command, once it started and until it exited. */
static void
run_send_signal(struct run *r, int sig)
{
	if (r->x == NULL || r->exited)
		return;
	(void)exec_signal(r->x, sig, NULL, NULL);
}

/* The exec stream ended after its exit event: the command is done. */
static void
run_exited(struct run *r, const struct exec_result *x)
{
	char			*oom;
	int			 status;

	r->exited = 1;
	r->t_exit = util_now();
	r->qemu_rss_kb = sandbox_qemu_rss_kb(r->sb);
	ev_io_stop(r->loop, &r->in);
	cmd_tty_restore();
	if (x->signal > 0) {
		r->exit_signal = x->signal;
		status = 128 + x->signal;
		/* Killed for want of memory: say so, not just "137". */
		if (x->signal == SIGKILL &&
		    (oom = sandbox_console_oom(r->sb)) != NULL) {
			log_warnx("the command was killed: the guest ran out "
			    "of memory (console: %s)", oom);
			free(oom);
		}
	} else
		status = x->status;
	/* After our own signal or timeout, qsup's status says so. */
	if (!r->interrupted && !r->timed_out)
		r->status = status;
	run_exit_hint(r, status);
	if (x->exit_error != NULL) {
		log_warnx("%s", x->exit_error);
		run_set_error(r, x->exit_error);
	}
}

/* Started: our terminal goes raw, and stdin flows (or a signal goes). */
static void
run_started_cb(struct exec *x, void *arg)
{
	struct run	*r = arg;

	r->t_started = util_now();
	log_debug("command started in the guest (exec %lld)", exec_id(x));
	if (r->opts->tty && !r->interrupted) {
		cmd_tty_raw();
		/* It may have changed since the request. */
		run_tty_resize(r);
	}
	if (r->interrupted)
		run_send_signal(r, r->interrupted);
	else if (r->in_fd != -1)
		ev_io_start(r->loop, &r->in);
	else {
		r->in_eof = 1;
		run_stdin_read_cb(r->loop, &r->in, 0);
	}
}

/* QEMU closed the exec port but has not been reaped: do not wait forever. */
static void
run_lost_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct run	*r = w->data;

	(void)loop;
	(void)revents;
	if (!r->interrupted && !r->timed_out) {
		log_warnx("lost the connection to the agent");
		r->status = QSUP_EXIT_ERROR;
	}
	run_set_error(r, "lost the connection to the agent");
	run_teardown(r, "lost the connection to the agent");
}

/*
 * The exec stream ended. Only a complete, well-formed stream that carried
 * an exit event ends the command; anything else is qsup's error.
 */
static void
run_done_cb(struct exec *x, const struct exec_result *res, void *arg)
{
	struct run	*r = arg;
	const char	*msg = res->error;

	(void)x;
	switch (res->end) {
	case EXEC_END_EXITED:
		run_exited(r, res);
		run_teardown(r, "the command finished");
		return;
	case EXEC_END_GONE:
		return;		/* run_main, at its end */
	case EXEC_END_CLOSED:
		/* QEMU is going: sandbox_child_cb will say why. */
		log_debug("the exec port closed (%s)", res->error);
		if (sandbox_state(r->sb) >= SB_STOPPING)
			return;		/* and we knew */
		ev_timer_set(&r->lost, RUN_LOST_GRACE, 0);
		ev_timer_start(r->loop, &r->lost);
		return;
	case EXEC_END_NO_EXIT:
		msg = "the agent broke the protocol: the command's stream "
		    "ended without an exit event";
		break;
	case EXEC_END_BROKEN:
	case EXEC_END_REFUSED:
		break;
	}
	if (!r->interrupted && !r->timed_out) {
		log_warnx("%s", msg);
		r->status = QSUP_EXIT_ERROR;
	}
	run_set_error(r, msg);
	run_teardown(r, msg);
}

/* The timeout: the exec killed the command; the run ends. */
static void
run_timed_out_cb(struct exec *x, void *arg)
{
	struct run	*r = arg;
	char		*msg;

	(void)x;
	r->timed_out = 1;
	r->status = QSUP_EXIT_TIMEOUT;
	xasprintf(&msg, "the command timed out after %g s", r->opts->timeout);
	log_warnx("%s", msg);
	run_set_error(r, msg);
	free(msg);
	run_teardown(r, "timeout");
}

/*
 * The command's environment: -e's, and with -t our TERM unless -e gave
 * one, since the guest's terminal is ours to draw on. The array is the
 * caller's to free, the strings are not, but the last (*kv).
 */
static char **
run_env(struct run *r, size_t *n, char **kv)
{
	char		**env;
	const char	*term;
	size_t		  i;
	int		  has_term = 0;

	env = xcalloc(r->opts->nenv + 2, sizeof *env);
	for (i = 0; i < r->opts->nenv; i++) {
		env[i] = r->opts->env[i];
		if (strncmp(env[i], "TERM=", 5) == 0)
			has_term = 1;
	}
	*kv = NULL;
	if (r->opts->tty && !has_term && (term = getenv("TERM")) != NULL &&
	    *term != '\0') {
		xasprintf(kv, "TERM=%s", term);
		env[i++] = *kv;
	}
	*n = i;
	return (env);
}

static void
run_ready_cb(struct sandbox *sb, void *arg)
{
	struct run		*r = arg;
	struct exec_spec	 spec;
	struct exec_ports	 ports = { RUN_PORT_EXEC, RUN_PORT_STDIN,
				     RUN_PORT_CONTROL };
	struct exec_cbs		 cbs;
	char			**env, *kv;

	r->t_ready = util_now();
	log_debug("guest ready in %.3f s (%s start)", sandbox_boot_seconds(sb),
	    sandbox_start_kind(sb));
	if (r->interrupted) {
		run_teardown(r, "interrupted");
		return;
	}
	memset(&spec, 0, sizeof spec);
	spec.kind = EXEC_COMMAND;
	spec.argv = r->opts->argv;
	spec.env = env = run_env(r, &spec.nenv, &kv);
	spec.cwd = r->opts->cwd;
	/* An image's entrypoint goes first, as "docker run" puts it. */
	spec.entrypoint = 1;
	if ((spec.tty = r->opts->tty)) {
		(void)cmd_tty_size(&r->rows, &r->cols);
		spec.rows = r->rows;	/* 0: the agent's default */
		spec.cols = r->cols;
	}
	spec.timeout = r->opts->timeout;
	spec.feed_stdin = 1;	/* by run_stdin_read_cb, or closed there */
	memset(&cbs, 0, sizeof cbs);
	cbs.started = run_started_cb;
	cbs.output = run_output_cb;
	cbs.stdin_news = run_stdin_cb;
	cbs.timed_out = run_timed_out_cb;
	cbs.done = run_done_cb;
	cbs.arg = r;
	r->x = exec_new(r->loop, sb, &spec, &ports, &cbs);
	free(env);
	free(kv);
	exec_start(r->x);
}

static void
run_teardown(struct run *r, const char *why)
{
	/* Stopped before its exit event: its figures are those of now. */
	if (r->t_ready > 0 && r->t_exit == 0 && r->sb != NULL) {
		r->t_exit = util_now();
		r->qemu_rss_kb = sandbox_qemu_rss_kb(r->sb);
	}
	ev_timer_stop(r->loop, &r->grace);
	if (r->x != NULL)
		exec_set_timeout(r->x, 0);
	ev_io_stop(r->loop, &r->in);
	cmd_tty_restore();
	sandbox_stop(r->sb, why);
}

static void
run_grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	run_teardown(w->data, "the command did not stop after the signal");
}

static void
run_sig_handler(int sig)
{
	int	saved = errno;

	if (run_nsignals == 0)
		run_first_signal = sig;
	if (run_nsignals < 2)
		run_nsignals++;
	/* Before the loop, nothing is polite: the first one will do. */
	if (run_nsignals >= 2 || run_sig_loop == NULL || setup_waiting)
		util_stop_now = 1;
	if (run_sig_loop != NULL)
		ev_async_send(run_sig_loop, run_sig_async);
	errno = saved;
}

static void
run_sig_install(void)
{
	struct sigaction	sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = run_sig_handler;
	sigfillset(&sa.sa_mask);
	/* poll() is interrupted all the same; other calls go on. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* The first signal: qsup's status says so, unless the command has one. */
static void
run_note_signal(struct run *r)
{
	if (r->interrupted)
		return;
	r->interrupted = run_first_signal;
	if (!r->exited)
		r->status = 128 + r->interrupted;
	log_debug("got signal %d; stopping the command", r->interrupted);
}

/*
 * A second signal: no more patience, whatever the phase. The loop ends
 * now; sandbox_free kills QEMU with SIGKILL, removes the run directory
 * and any half-written template, and the output left is dropped.
 */
static void
run_hard_stop(struct run *r)
{
	log_debug("second signal: stopping at once");
	r->hard_stop = 1;
	run_teardown(r, "second signal");
	r->t_end = util_now();
	ev_break(r->loop, EVBREAK_ALL);
}

static void
run_signal_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct run	*r = w->data;

	(void)revents;
	if (run_nsignals == 0 || r->hard_stop)
		return;
	if (r->pull.pull != NULL) {
		run_note_signal(r);
		pull_cancel(&r->pull);
		log_warnx("interrupted: the image's part is kept, and the next "
		    "pull resumes it");
		return;
	}
	if (r->in_setup) {
		run_note_signal(r);
		setup_interrupt(&r->setup);
		return;
	}
	if (r->sb == NULL)
		return;		/* run_main sees it before it boots */
	if (!r->interrupted) {
		run_note_signal(r);
		if (sandbox_state(r->sb) == SB_READY && !r->exited) {
			/* The command gets the signal and a second to end. */
			run_send_signal(r, r->interrupted);
			ev_timer_set(&r->grace, RUN_SIGNAL_GRACE, 0);
			ev_timer_start(loop, &r->grace);
		} else if (sandbox_state(r->sb) != SB_READY)
			run_teardown(r, "interrupted while booting");
	}
	if (run_nsignals >= 2)
		run_hard_stop(r);
}

/* The command's exec, before its sandbox goes (its ports with it). */
static void
run_exec_free(struct run *r)
{
	if (r->x == NULL)
		return;
	exec_gone(r->x, "the run is over");
	exec_free(r->x);
	r->x = NULL;
}

/* The shares of this run: the profile's, then the --share options. */
static int
run_shares(struct run *r, char **cause)
{
	struct share	*sh;
	size_t		 n;
	int		 rc;

	if ((rc = plan_shares(&r->profile,
	    (const char *const *)r->opts->shares, r->opts->nshares,
	    r->opts->argv, r->opts->env, r->opts->nenv, &sh, &n, cause)) == -1)
		return (-1);
	r->sparse = rc == 1;
	sandbox_set_shares(r->sb, sh, n);
	return (0);
}

/* Where a run's time went, for --json and -v alike (0: not reached). */
struct run_times {
	double	prepare, queued, boot, exec, teardown, total;
	double	qemu_start, guest_setup;	/* of boot, a restore's */
	double	exec_start;			/* of exec: to its start */
};

static void
run_times(struct run *r, struct run_times *t)
{
	double	end = r->t_end > 0 ? r->t_end : util_now();

	t->prepare = r->t_spawn > 0 ? r->t_spawn - r->t_start : 0;
	t->queued = r->sb != NULL ? sandbox_queued_seconds(r->sb) : 0;
	t->boot = r->t_ready > 0 ? r->t_ready - r->t_spawn - t->queued : 0;
	t->exec = r->t_exit > 0 ? r->t_exit - r->t_ready : 0;
	t->teardown = r->t_exit > 0 ? end - r->t_exit : 0;
	t->total = end - r->t_start;
	t->qemu_start = t->guest_setup = 0;
	if (r->sb != NULL && r->t_ready > 0)
		sandbox_boot_split(r->sb, &t->qemu_start, &t->guest_setup);
	t->exec_start = r->t_started > r->t_ready && r->t_ready > 0 ?
	    r->t_started - r->t_ready : 0;
}

static void
run_json_summary(struct run *r)
{
	struct run_times	t;
	struct buf		b = { 0 };
	struct rusage		ru;

	buf_printf(&b, "{\"exit_status\":%d,\"signal\":", r->status);
	if (r->exit_signal > 0)
		buf_printf(&b, "%lld", r->exit_signal);
	else
		buf_puts(&b, "null");
	buf_printf(&b, ",\"timed_out\":%s,\"interrupted\":",
	    r->timed_out ? "true" : "false");
	if (r->interrupted)
		buf_printf(&b, "%d", r->interrupted);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"accelerator\":");
	buf_json_string(&b, accel_name(r->accel.accel));
	buf_puts(&b, ",\"accelerator_reason\":");
	buf_json_string(&b, r->accel.why != NULL ? r->accel.why : "");
	buf_puts(&b, ",\"profile\":");
	buf_json_string(&b, r->profile.path != NULL ? r->profile.path : "");
	buf_puts(&b, ",\"error\":");
	if (r->error != NULL)
		buf_json_string(&b, r->error);
	else
		buf_puts(&b, "null");
	if (r->sb != NULL) {
		buf_puts(&b, ",\"start\":");
		buf_json_string(&b, sandbox_start_kind(r->sb));
		buf_puts(&b, ",\"template_fallback\":");
		if (sandbox_fallback(r->sb) != NULL)
			buf_json_string(&b, sandbox_fallback(r->sb));
		else
			buf_puts(&b, "null");
		buf_printf(&b, ",\"template_save_s\":%.3f",
		    sandbox_save_seconds(r->sb));
	}
	buf_puts(&b, ",\"network\":");
	if (r->sb != NULL && sandbox_net_of(r->sb) != NULL)
		net_stats_json(sandbox_net_of(r->sb), &b);
	else {
		buf_puts(&b, "{\"mode\":");
		buf_json_string(&b, r->profile.network == NET_MODE_NONE ?
		    "none" : "not started");
		buf_puts(&b, "}");
	}
	buf_puts(&b, ",\"base_image_untouched\":");
	if (r->sb != NULL)
		sandbox_disk_report(r->sb, &b);
	else
		buf_puts(&b, "null");
	buf_puts(&b, ",\"layers\":");
	setup_json(&r->setup, &b);
	buf_printf(&b, ",\"qemu_rss_kb\":%ld", r->qemu_rss_kb);
	getrusage(RUSAGE_SELF, &ru);
	buf_printf(&b, ",\"qsup_max_rss_kb\":%ld", ru.ru_maxrss);
	run_times(r, &t);
	buf_printf(&b, ",\"timings\":{\"overlay_s\":%.3f,"
	    "\"prepare_s\":%.3f,\"queued_s\":%.3f,\"boot_s\":%.3f,"
	    "\"qemu_start_s\":%.4f,\"guest_setup_s\":%.4f,"
	    "\"exec_s\":%.3f,\"exec_start_s\":%.4f,\"teardown_s\":%.3f,"
	    "\"total_s\":%.3f}}\n",
	    r->sb != NULL ? sandbox_overlay_seconds(r->sb) : 0, t.prepare,
	    t.queued, t.boot, t.qemu_start, t.guest_setup, t.exec,
	    t.exec_start, t.teardown, t.total);
	/* Through our queue: a stderr nobody reads holds it, not qsup. */
	if (r->err != NULL) {
		outq_write(r->err, b.data, b.len);
		outq_flush_blocking(r->err);
	} else
		fputs(b.data, stderr);
	buf_free(&b);
}

/* -v: what the guest tried and was refused, once each. */
static void
run_log_net(struct run *r)
{
	struct net_stats	 st;
	size_t			 i;

	if (r->sb == NULL || sandbox_net_of(r->sb) == NULL)
		return;
	net_stats(sandbox_net_of(r->sb), &st);
	log_debug("network: %llu allowed, %llu refused, %llu frames in, "
	    "%llu out, %llu dropped", st.allowed, st.refused, st.frames_in,
	    st.frames_out, st.frames_dropped);
	for (i = 0; i < st.ndests; i++) {
		if (!st.dests[i].allowed)
			log_debug("network: refused %s %s (%lu times): %s",
			    st.dests[i].kind, st.dests[i].dest,
			    st.dests[i].count, st.dests[i].why);
	}
}

static void
run_log_timings(struct run *r)
{
	struct run_times	t;

	run_times(r, &t);
	log_debug("timings: prepare %.3f s, queued %.3f s, boot %.3f s, "
	    "command %.3f s, teardown %.3f s, total %.3f s", t.prepare,
	    t.queued, t.boot, t.exec, t.teardown, t.total);
	/* A restore's boot and the command, in their parts. */
	if (t.qemu_start > 0)
		log_debug("timings of the boot: QEMU's start to loading the "
		    "template %.1f ms, the load, the guest's wake and its "
		    "/setup %.1f ms (the agent's own work on it %.1f ms)",
		    t.qemu_start * 1e3, (t.boot - t.qemu_start) * 1e3,
		    t.guest_setup * 1e3);
	if (t.exec_start > 0)
		log_debug("timings of the command: to its start in the guest "
		    "%.1f ms, then to its exit %.1f ms", t.exec_start * 1e3,
		    (t.exec - t.exec_start) * 1e3);
}

/*
 * The profile's image as a file: itself, or (a name or a URL) the copy in
 * images_dir, pulled first on the loop if it is not there; a signal stops
 * the pull (run_signal_cb) and keeps its part for the next one.
 */
static int
run_image(struct run *r, char **cause)
{
	struct image_req	 req;

	switch (r->profile.image_kind) {
	case PROFILE_IMAGE_NONE:
		return (0);
	case PROFILE_IMAGE_FILE:
		r->image = xstrdup(r->profile.image);
		return (0);
	case PROFILE_IMAGE_NAME:
	case PROFILE_IMAGE_URL:
		break;
	}
	plan_image(&r->profile, r->opts->json, &req);
	if (req.url == NULL) {
		xasprintf(cause, "image \"%s\": no URL known for this name "
		    "(image_base_url, the catalog)", r->profile.image);
		return (-1);
	}
	if (pull_get(r->loop, &req, &r->pull) == 0) {
		r->image = r->pull.path;
		r->pull.path = NULL;
		return (0);
	}
	if (r->pull.cause != NULL && r->profile.image_kind ==
	    PROFILE_IMAGE_NAME)
		xasprintf(cause, "image %s: %s", r->profile.image,
		    r->pull.cause);
	else if (r->pull.cause != NULL)
		*cause = xstrdup(r->pull.cause);
	else
		*cause = xstrdup("interrupted");
	return (-1);
}

/*
 * The profile's setup steps, each a layer over the image, found or built
 * (setup.c); the run boots on the top one and holds them all till it
 * ends.
 */
static int
run_setup(struct run *r, char **cause)
{
	int	rc;

	if (r->profile.nsetup == 0)
		return (0);
	r->setup.loop = r->loop;
	r->setup.profile = &r->profile;
	r->setup.accel = &r->accel;
	r->setup.err = r->err;
	r->setup.json = r->opts->json;
	r->in_setup = 1;
	rc = setup_run(&r->setup, r->image, cause);
	r->in_setup = 0;
	if (rc == 0 && run_nsignals > 0) {
		*cause = xstrdup("interrupted");
		return (-1);
	}
	return (rc);
}

/* A sandbox for the command, started. */
static int
run_boot(struct run *r, char **cause)
{
	struct sandbox_cbs	cbs;
	char			**layers;

	memset(&cbs, 0, sizeof cbs);
	cbs.ready = run_ready_cb;
	cbs.failed = run_failed_cb;
	cbs.dead = run_dead_cb;
	cbs.arg = r;
	r->sb = sandbox_new(r->loop, &r->profile, &cbs);
	if (r->image != NULL)
		sandbox_set_image(r->sb, r->image);
	if (r->setup.nlayers > 0) {
		layers = setup_paths(&r->setup);
		sandbox_set_layers(r->sb, layers, r->setup.nlayers,
		    r->setup.store);
		free(layers);
	}
	r->t_end = 0;
	if (run_shares(r, cause) == -1)
		goto fail;
	if (run_nsignals > 0) {
		*cause = xstrdup("interrupted");
		goto fail;
	}
	r->t_spawn = util_now();
	if (sandbox_start(r->sb, &r->accel, cause) == -1)
		goto fail;
	r->t_spawn = util_now();
	return (0);
fail:
	sandbox_free(r->sb);
	r->sb = NULL;
	return (-1);
}

/*
 * The loop, and what the run watches in it: our stdio (stdout and stderr
 * queued, so a slow reader never blocks the loop), the signals, timers.
 */
static void
run_loop_init(struct run *r)
{
	signal(SIGPIPE, SIG_IGN);
	r->loop = ev_default_loop(EVFLAG_AUTO);
	r->out = outq_new(r->loop, STDOUT_FILENO);
	r->err = outq_new(r->loop, STDERR_FILENO);
	log_set_output(outq_put, r->err);
	outq_set_drain_cb(r->out, run_drain_cb, r);
	outq_set_drain_cb(r->err, run_drain_cb, r);
	/*
	 * stdin is forwarded unless -t is given without -i and stdin is not
	 * a terminal (docker's -t alone): the guest's terminal then gets
	 * nothing typed, rather than a file or a pipe meant for something
	 * else.
	 */
	r->forward_stdin = !r->opts->tty || r->opts->interactive ||
	    isatty(STDIN_FILENO);
	if (r->forward_stdin)
		r->in_fd = outq_reopen_nonblock(STDIN_FILENO, O_RDONLY);
	ev_io_init(&r->in, run_stdin_read_cb, r->in_fd, EV_READ);
	r->in.data = r;
	ev_signal_init(&r->winch, run_winch_cb, SIGWINCH);
	r->winch.data = r;
	if (r->opts->tty)
		ev_signal_start(r->loop, &r->winch);
	ev_async_init(&r->sigasync, run_signal_cb);
	r->sigasync.data = r;
	ev_async_start(r->loop, &r->sigasync);
	run_sig_async = &r->sigasync;
	run_sig_loop = r->loop;
	ev_init(&r->grace, run_grace_cb);
	r->grace.data = r;
	ev_init(&r->lost, run_lost_cb);
	r->lost.data = r;
}

/*
 * Run opts->argv in a sandbox of opts->profile: load the profile, choose
 * the accelerator, then boot and run in the loop (once more under TCG if
 * KVM failed, see run_kvm_failed). Returns qsup's exit status.
 */
int
run_main(struct run_options *opts)
{
	struct run		 r;
	struct guest		 g;
	char			*cause = NULL;

	memset(&r, 0, sizeof r);
	r.opts = opts;
	r.in_fd = -1;
	r.t_start = util_now();
	/* From the start: a signal while preparing stops the run too. */
	run_sig_install();

	if (profile_load_set(&r.profile, opts->profile, opts->sets,
	    opts->nsets, &cause) == -1) {
		if (run_nsignals > 0) {
			free(cause);
			run_note_signal(&r);
			return (r.status);
		}
		fprintf(stderr, "%s\n", cause);
		free(cause);
		return (QSUP_EXIT_ERROR);
	}
	if (opts->timeout == 0)
		opts->timeout = r.profile.timeout;	/* --timeout wins */
	if (opts->console)
		r.profile.show_boot_console = 1;
	log_debug("profile: %s (memory %llu MiB, cpus %d)", r.profile.path,
	    (unsigned long long)r.profile.memory_mib, r.profile.cpus);
	if (run_nsignals > 0)
		goto interrupted;
	if (guest_resolve(&r.profile, &g, &cause) == -1)
		goto fail;
	/* Before the loop exists: the KVM probe reaps its own child. */
	if (kvm_choose(&r.profile, guest_qemu_binary(), g.kernel, g.initramfs,
	    &r.accel, &cause) == -1) {
		guest_free(&g);
		goto fail;
	}
	guest_free(&g);
	log_debug("accelerator: %s (%s)", accel_name(r.accel.accel),
	    r.accel.why);
	if (run_nsignals > 0)
		goto interrupted;

	run_loop_init(&r);
	if (run_image(&r, &cause) == -1 || run_setup(&r, &cause) == -1)
		goto fail;
	if (opts->setup_only)
		goto done;	/* status 0 */
	for (;;) {
		if (run_boot(&r, &cause) == -1)
			goto fail;
		/* A signal that came meanwhile is waiting in sigasync. */
		ev_run(r.loop, 0);
		if (!r.retry)
			break;
		if (run_nsignals > 0) {
			/* Came as the loop ended: no new boot. */
			run_note_signal(&r);
			break;
		}
		/* run_kvm_failed: again, under TCG. */
		r.retry = 0;
		run_exec_free(&r);
		sandbox_free(r.sb);
		r.sb = NULL;
	}

	if (!r.hard_stop) {
		outq_flush_blocking(r.out);
		outq_flush_blocking(r.err);
	}
	goto done;

fail:
	if (run_nsignals > 0) {
		free(cause);
		goto interrupted;
	}
	log_warnx("%s", cause);
	/* For qsup serve, which starts it: the error alone, apart. */
	if (opts->setup_only)
		printf("%s", cause);
	run_set_error(&r, cause);
	free(cause);
	r.status = QSUP_EXIT_ERROR;
	goto done;
interrupted:
	run_note_signal(&r);
done:
	cmd_tty_restore();
	run_log_timings(&r);
	run_log_net(&r);
	if (opts->json)
		run_json_summary(&r);
	run_exec_free(&r);
	sandbox_free(r.sb);
	setup_free(&r.setup);
	if (r.loop != NULL) {
		run_sig_loop = NULL;
		ev_async_stop(r.loop, &r.sigasync);
		ev_signal_stop(r.loop, &r.winch);
		/* What was said since the last flush (a second signal: no). */
		outq_flush_blocking(r.err);
		log_set_output(NULL, NULL);
		outq_free(r.out);
		outq_free(r.err);
	}
	if (r.in_fd > STDERR_FILENO)
		close(r.in_fd);
	free(r.accel.why);
	free(r.error);
	free(r.image);
	pull_free(&r.pull);
	profile_free(&r.profile);
	return (r.status);
}
