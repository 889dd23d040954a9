/*
 * One sandbox: one QEMU microVM with its run directory, console, agent
 * ports and timers. Everything is driven by the loop; the state changes in
 * sandbox_set_state only. A sandbox is dead once QEMU has been reaped and
 * its console has reached EOF (tmux's JOB_DEAD and JOB_CLOSED).
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "qsup.h"
#include "protocol.h"

#define SANDBOX_KILL_GRACE	2.0	/* SIGTERM to SIGKILL */
#define SANDBOX_QEMU_LOG_MAX	16384

struct sandbox {
	struct ev_loop		*loop;
	const struct profile	*profile;
	struct sandbox_cbs	 cbs;
	enum sandbox_state	 state;
	struct accel_choice	 accel;
	struct guest		 guest;

	char			*rundir;
	char			*token;
	char			**argv;		/* QEMU's command line */
	pid_t			 pid;
	ev_child		 child;
	int			 reaped;
	int			 wstatus;
	struct serial		*console;
	int			 console_guest_fd;
	int			 qemu_log_fd;
	ev_io			 qemu_log;
	struct buf		 qemu_log_buf;
	struct agent_conn	*ports[QSUP_PORT_COUNT];
	int			 port_guest_fd[QSUP_PORT_COUNT];
	ev_timer		 deadline;
	ev_timer		 kill_timer;
	double			 t_spawn;
	double			 t_ready;
	int			 failed;
};

static void	sandbox_fail(struct sandbox *, const char *);
static void	sandbox_check_dead(struct sandbox *);

static const char *
sandbox_state_name(enum sandbox_state s)
{
	switch (s) {
	case SB_NEW:
		return ("new");
	case SB_BOOTING:
		return ("booting");
	case SB_READY:
		return ("ready");
	case SB_STOPPING:
		return ("stopping");
	case SB_DEAD:
		return ("dead");
	}
	return ("?");
}

static void
sandbox_set_state(struct sandbox *sb, enum sandbox_state s)
{
	/* States only move forward. */
	assert(s > sb->state);
	log_debug("sandbox: %s -> %s", sandbox_state_name(sb->state),
	    sandbox_state_name(s));
	sb->state = s;
	assert(sb->state != SB_DEAD || (sb->reaped &&
	    serial_closed(sb->console)));
}

struct sandbox *
sandbox_new(struct ev_loop *loop, const struct profile *p,
    const struct sandbox_cbs *cbs)
{
	struct sandbox	*sb;
	int		 i;

	sb = xcalloc(1, sizeof *sb);
	sb->loop = loop;
	sb->profile = p;
	sb->cbs = *cbs;
	sb->state = SB_NEW;
	sb->pid = -1;
	sb->console_guest_fd = -1;
	sb->qemu_log_fd = -1;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		sb->port_guest_fd[i] = -1;
	return (sb);
}

/* $XDG_RUNTIME_DIR/qsup, or /tmp/qsup-UID: ours alone, mode 0700. */
static char *
sandbox_run_base(char **cause)
{
	const char	*xdg;
	struct stat	 st;
	char		*base;

	if ((xdg = getenv("XDG_RUNTIME_DIR")) != NULL && *xdg == '/')
		xasprintf(&base, "%s/qsup", xdg);
	else
		xasprintf(&base, "/tmp/qsup-%ld", (long)getuid());
	if (mkdir(base, 0700) == -1 && errno != EEXIST) {
		xasprintf(cause, "%s: %s", base, strerror(errno));
		goto fail;
	}
	if (lstat(base, &st) == -1) {
		xasprintf(cause, "%s: %s", base, strerror(errno));
		goto fail;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) != 0) {
		xasprintf(cause, "%s: not a private directory of this user "
		    "(mode 0700 expected)", base);
		goto fail;
	}
	return (base);
fail:
	free(base);
	return (NULL);
}

/* Percent-encode a seed value (guest/protocol.h). */
static void
sandbox_seed_value(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s <= 0x20 || *s >= 0x7f || *s == '%')
			buf_printf(b, "%%%02X", (unsigned char)*s);
		else
			buf_add(b, s, 1);
	}
}

static int
sandbox_write_seed(struct sandbox *sb, char **cause)
{
	struct seed_file	 files[3];
	struct buf		 cfg = { 0 }, meta = { 0 };
	struct timespec		 ts;
	char			*path, *entropy;
	size_t			 i;
	int			 rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	entropy = token_hex(64);
	buf_printf(&cfg, "token %s\nhostname qsup\ntime %lld.%09ld\n"
	    "entropy %s\n", sb->token, (long long)ts.tv_sec, ts.tv_nsec,
	    entropy);
	free(entropy);
	for (i = 0; i < sb->profile->nenv; i++) {
		buf_add(&cfg, "env ", 4);
		sandbox_seed_value(&cfg, sb->profile->env[i]);
		buf_add(&cfg, "\n", 1);
	}
	if (sb->profile->cwd != NULL) {
		buf_add(&cfg, "cwd ", 4);
		sandbox_seed_value(&cfg, sb->profile->cwd);
		buf_add(&cfg, "\n", 1);
	}
	/* meta-data and user-data keep the seed usable by cloud-init. */
	buf_printf(&meta, "instance-id: qsup-%s\nlocal-hostname: qsup\n",
	    strrchr(sb->rundir, '-') + 1);
	files[0].name = "meta-data";
	files[0].data = meta.data;
	files[0].len = meta.len;
	files[1].name = QSUP_SEED_CONFIG;
	files[1].data = cfg.data;
	files[1].len = cfg.len;
	files[2].name = "user-data";
	files[2].data = "#cloud-config\n";
	files[2].len = strlen(files[2].data);
	xasprintf(&path, "%s/seed.iso", sb->rundir);
	rc = seed_iso_write(path, files, 3, cause);
	free(path);
	explicit_bzero(cfg.data, cfg.len);
	buf_free(&cfg);
	buf_free(&meta);
	return (rc);
}

static void
sandbox_argv_add(char ***argv, size_t *n, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	xvasprintf(&s, fmt, ap);
	va_end(ap);
	*argv = xreallocarray(*argv, *n + 2, sizeof **argv);
	(*argv)[(*n)++] = s;
	(*argv)[*n] = NULL;
}

/* QEMU doubles commas inside option values. */
static char *
sandbox_qemu_escape(const char *s)
{
	struct buf	b = { 0 };

	buf_add(&b, "", 0);
	for (; *s != '\0'; s++) {
		if (*s == ',')
			buf_add(&b, ",", 1);
		buf_add(&b, s, 1);
	}
	return (b.data);
}

static void
sandbox_build_argv(struct sandbox *sb)
{
	const struct profile	*p = sb->profile;
	char			**argv = NULL, *kernel, *initrd, *seed, *tmp;
	char			 tsc[64] = "";
	size_t			 n = 0;
	int			 i;

	if (sb->accel.accel == ACCEL_TCG)
		snprintf(tsc, sizeof tsc, "tsc_early_khz=%lu tsc=reliable",
		    guest_tsc_khz());

	kernel = sandbox_qemu_escape(sb->guest.kernel);
	initrd = sandbox_qemu_escape(sb->guest.initramfs);
	xasprintf(&tmp, "%s/seed.iso", sb->rundir);
	seed = sandbox_qemu_escape(tmp);
	free(tmp);

	sandbox_argv_add(&argv, &n, "%s", guest_qemu_binary());
	sandbox_argv_add(&argv, &n, "-M");
	sandbox_argv_add(&argv, &n, "microvm");
	sandbox_argv_add(&argv, &n, "-accel");
	if (sb->accel.accel == ACCEL_KVM) {
		sandbox_argv_add(&argv, &n, "kvm");
		sandbox_argv_add(&argv, &n, "-cpu");
		sandbox_argv_add(&argv, &n, "host");
	} else
		sandbox_argv_add(&argv, &n, "tcg,tb-size=64");
	sandbox_argv_add(&argv, &n, "-m");
	sandbox_argv_add(&argv, &n, "%llu",
	    (unsigned long long)p->memory_mib);
	sandbox_argv_add(&argv, &n, "-smp");
	sandbox_argv_add(&argv, &n, "%d", p->cpus);
	sandbox_argv_add(&argv, &n, "-nodefaults");
	sandbox_argv_add(&argv, &n, "-no-user-config");
	sandbox_argv_add(&argv, &n, "-display");
	sandbox_argv_add(&argv, &n, "none");
	sandbox_argv_add(&argv, &n, "-no-reboot");
	sandbox_argv_add(&argv, &n, "-sandbox");
	sandbox_argv_add(&argv, &n, "on,obsolete=deny,elevateprivileges=deny,"
	    "spawn=deny,resourcecontrol=deny");
	sandbox_argv_add(&argv, &n, "-kernel");
	sandbox_argv_add(&argv, &n, "%s", kernel);
	sandbox_argv_add(&argv, &n, "-initrd");
	sandbox_argv_add(&argv, &n, "%s", initrd);
	sandbox_argv_add(&argv, &n, "-append");
	/* GUEST.md's measured command line; the TSC is told under TCG. */
	sandbox_argv_add(&argv, &n, "console=ttyS0 quiet panic=-1 %s "
	    "no_timer_check pci=off cryptomgr.notests random.trust_cpu=on "
	    "mitigations=off init_on_alloc=0 audit=0 apparmor=0 "
	    "8250.nr_uarts=1 initcall_blacklist=init_kprobe_trace,"
	    "crypto_kdf108_init,init_mmio_trace,"
	    "init_trace_printk_function_export qsup.ports=%d", tsc,
	    QSUP_PORT_COUNT);
	sandbox_argv_add(&argv, &n, "-chardev");
	sandbox_argv_add(&argv, &n, "socket,id=con,fd=%d",
	    sb->console_guest_fd);
	sandbox_argv_add(&argv, &n, "-serial");
	sandbox_argv_add(&argv, &n, "chardev:con");
	sandbox_argv_add(&argv, &n, "-device");
	sandbox_argv_add(&argv, &n, "virtio-serial-device");
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		sandbox_argv_add(&argv, &n, "-chardev");
		sandbox_argv_add(&argv, &n, "socket,id=agent%d,fd=%d", i,
		    sb->port_guest_fd[i]);
		sandbox_argv_add(&argv, &n, "-device");
		sandbox_argv_add(&argv, &n,
		    "virtserialport,chardev=agent%d,name=%s%d", i,
		    QSUP_PORT_PREFIX, i);
	}
	sandbox_argv_add(&argv, &n, "-blockdev");
	sandbox_argv_add(&argv, &n, "driver=raw,node-name=seed,read-only=on,"
	    "file.driver=file,file.filename=%s", seed);
	sandbox_argv_add(&argv, &n, "-device");
	sandbox_argv_add(&argv, &n, "virtio-blk-device,drive=seed");
	free(kernel);
	free(initrd);
	free(seed);
	sb->argv = argv;
}

static void
sandbox_qemu_log_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct sandbox	*sb = w->data;
	char		 chunk[4096];
	ssize_t		 n;

	(void)revents;
	for (;;) {
		n = read(sb->qemu_log_fd, chunk, sizeof chunk);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		buf_add(&sb->qemu_log_buf, chunk, n);
		if (sb->qemu_log_buf.len > SANDBOX_QEMU_LOG_MAX)
			buf_consume(&sb->qemu_log_buf,
			    sb->qemu_log_buf.len - SANDBOX_QEMU_LOG_MAX);
	}
	ev_io_stop(loop, w);
	close(sb->qemu_log_fd);
	sb->qemu_log_fd = -1;
}

static void
sandbox_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct sandbox	*sb = w->data;
	char		*msg;

	(void)revents;
	ev_child_stop(loop, w);
	sb->reaped = 1;
	sb->wstatus = w->rstatus;
	ev_timer_stop(loop, &sb->kill_timer);
	ev_timer_stop(loop, &sb->deadline);
	if (sb->qemu_log_fd != -1)
		sandbox_qemu_log_cb(loop, &sb->qemu_log, EV_READ);
	if (sb->state < SB_STOPPING) {
		if (WIFSIGNALED(sb->wstatus))
			xasprintf(&msg, "QEMU was killed by signal %d",
			    WTERMSIG(sb->wstatus));
		else
			xasprintf(&msg, "QEMU exited with status %d",
			    WEXITSTATUS(sb->wstatus));
		sandbox_fail(sb, msg);
		free(msg);
	}
	sandbox_check_dead(sb);
}

static void
sandbox_console_closed_cb(void *arg)
{
	sandbox_check_dead(arg);
}

static void
sandbox_check_dead(struct sandbox *sb)
{
	if (!sb->reaped || !serial_closed(sb->console) ||
	    sb->state == SB_DEAD)
		return;
	if (sb->state < SB_STOPPING)
		sandbox_set_state(sb, SB_STOPPING);
	sandbox_set_state(sb, SB_DEAD);
	if (sb->cbs.dead != NULL)
		sb->cbs.dead(sb, sb->cbs.arg);
}

static void
sandbox_kill_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;

	(void)loop;
	(void)revents;
	if (!sb->reaped) {
		log_warnx("QEMU did not stop within %.0f s; killing it",
		    SANDBOX_KILL_GRACE);
		kill(sb->pid, SIGKILL);
	}
}

static double
sandbox_start_timeout(struct sandbox *sb)
{
	if (sb->profile->start_timeout > 0)
		return (sb->profile->start_timeout);
	return (sb->accel.accel == ACCEL_KVM ? 20.0 : 60.0);
}

static void
sandbox_deadline_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;
	char		*msg;

	(void)loop;
	(void)revents;
	if (sb->state != SB_BOOTING)
		return;
	xasprintf(&msg, "the guest did not become ready within %g s "
	    "(accelerator %s)", sandbox_start_timeout(sb),
	    accel_name(sb->accel.accel));
	sandbox_fail(sb, msg);
	free(msg);
}

static void
sandbox_ping_cb(int status, const char *body, size_t len, void *arg)
{
	struct sandbox	*sb = arg;
	char		*msg;

	if (sb->state != SB_BOOTING)
		return;
	if (status == 200) {
		sb->t_ready = util_now();
		ev_timer_stop(sb->loop, &sb->deadline);
		sandbox_set_state(sb, SB_READY);
		log_debug("agent ready: %.*s", (int)len, body);
		if (sb->cbs.ready != NULL)
			sb->cbs.ready(sb, sb->cbs.arg);
		return;
	}
	if (status == -1)
		return;		/* QEMU is gone; sandbox_child_cb says why */
	xasprintf(&msg, "guest setup failed (%d): %.*s", status, (int)len,
	    body);
	sandbox_fail(sb, msg);
	free(msg);
}

static int
sandbox_spawn(struct sandbox *sb, char **cause)
{
	sigset_t	 all, old;
	int		 logp[2], devnull, i, sig;

	if (pipe2(logp, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return (-1);
	}
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	sb->pid = fork();
	if (sb->pid == 0) {
		for (sig = 1; sig < NSIG; sig++)
			signal(sig, SIG_DFL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		/* Not in the terminal's process group: qsup stops it. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if ((devnull = open("/dev/null", O_RDONLY)) == -1 ||
		    dup2(devnull, STDIN_FILENO) == -1 ||
		    dup2(logp[1], STDOUT_FILENO) == -1 ||
		    dup2(logp[1], STDERR_FILENO) == -1)
			_exit(127);
		util_set_cloexec(sb->console_guest_fd, 0);
		for (i = 0; i < QSUP_PORT_COUNT; i++)
			util_set_cloexec(sb->port_guest_fd[i], 0);
		execvp(sb->argv[0], sb->argv);
		dprintf(STDERR_FILENO, "%s: %s\n", sb->argv[0],
		    strerror(errno));
		_exit(127);
	}
	if (sb->pid == -1) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		xasprintf(cause, "fork: %s", strerror(errno));
		close(logp[0]);
		close(logp[1]);
		return (-1);
	}
	ev_child_init(&sb->child, sandbox_child_cb, sb->pid, 0);
	sb->child.data = sb;
	ev_child_start(sb->loop, &sb->child);
	sigprocmask(SIG_SETMASK, &old, NULL);

	close(logp[1]);
	sb->qemu_log_fd = logp[0];
	util_set_nonblock(sb->qemu_log_fd);
	ev_io_init(&sb->qemu_log, sandbox_qemu_log_cb, sb->qemu_log_fd,
	    EV_READ);
	sb->qemu_log.data = sb;
	ev_io_start(sb->loop, &sb->qemu_log);

	/* QEMU has its ends now; ours must not keep them open. */
	close(sb->console_guest_fd);
	sb->console_guest_fd = -1;
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		close(sb->port_guest_fd[i]);
		sb->port_guest_fd[i] = -1;
	}
	return (0);
}

static void
sandbox_log_argv(struct sandbox *sb)
{
	struct buf	b = { 0 };
	char		**a;

	for (a = sb->argv; *a != NULL; a++) {
		if (b.len > 0)
			buf_add(&b, " ", 1);
		if (strpbrk(*a, " \t'\"$\\") != NULL) {
			buf_add(&b, "'", 1);
			buf_add(&b, *a, strlen(*a));
			buf_add(&b, "'", 1);
		} else
			buf_add(&b, *a, strlen(*a));
	}
	log_debug("qemu: %s", b.data);
	buf_free(&b);
}

int
sandbox_start(struct sandbox *sb, const struct accel_choice *accel,
    char **cause)
{
	char	*base = NULL, *path;
	int	 sv[2], i;

	assert(sb->state == SB_NEW);
	sb->accel.accel = accel->accel;
	sb->accel.why = xstrdup(accel->why);
	if (guest_resolve(sb->profile, &sb->guest, cause) == -1)
		return (-1);
	if ((base = sandbox_run_base(cause)) == NULL)
		return (-1);
	xasprintf(&sb->rundir, "%s/sb-XXXXXX", base);
	free(base);
	if (mkdtemp(sb->rundir) == NULL) {
		xasprintf(cause, "%s: %s", sb->rundir, strerror(errno));
		free(sb->rundir);
		sb->rundir = NULL;
		return (-1);
	}
	sb->token = token_hex(32);
	if (sandbox_write_seed(sb, cause) == -1)
		return (-1);

	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1)
		goto sockfail;
	sb->console_guest_fd = sv[1];
	xasprintf(&path, "%s/console.log", sb->rundir);
	sb->console = serial_new(sb->loop, sv[0], path,
	    sb->profile->show_boot_console);
	free(path);
	serial_set_close_cb(sb->console, sandbox_console_closed_cb, sb);
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1)
			goto sockfail;
		sb->port_guest_fd[i] = sv[1];
		sb->ports[i] = agent_conn_new(sb->loop, sv[0], sb->token);
	}

	sandbox_build_argv(sb);
	sandbox_log_argv(sb);
	sb->t_spawn = util_now();
	if (sandbox_spawn(sb, cause) == -1)
		return (-1);
	sandbox_set_state(sb, SB_BOOTING);

	ev_timer_init(&sb->deadline, sandbox_deadline_cb,
	    sandbox_start_timeout(sb), 0);
	sb->deadline.data = sb;
	ev_timer_start(sb->loop, &sb->deadline);
	ev_init(&sb->kill_timer, sandbox_kill_cb);
	sb->kill_timer.data = sb;

	/* The agent answers once it is up: readiness is its first reply. */
	agent_request(sb->ports[0], "GET", "/ping", NULL, 0, sandbox_ping_cb,
	    NULL, sb);
	return (0);

sockfail:
	xasprintf(cause, "socketpair: %s", strerror(errno));
	return (-1);
}

/* A failure: tell the owner once, then stop. */
static void
sandbox_fail(struct sandbox *sb, const char *msg)
{
	if (sb->failed)
		return;
	sb->failed = 1;
	if (sb->cbs.failed != NULL)
		sb->cbs.failed(sb, msg, sb->cbs.arg);
	sandbox_stop(sb, msg);
}

/* Polite request, timer, SIGKILL. */
void
sandbox_stop(struct sandbox *sb, const char *why)
{
	if (sb->state >= SB_STOPPING)
		return;
	log_debug("stopping the sandbox: %s", why);
	if (sb->state == SB_NEW) {
		sandbox_set_state(sb, SB_DEAD);
		return;
	}
	sandbox_set_state(sb, SB_STOPPING);
	ev_timer_stop(sb->loop, &sb->deadline);
	if (!sb->reaped) {
		kill(sb->pid, SIGTERM);
		ev_timer_set(&sb->kill_timer, SANDBOX_KILL_GRACE, 0);
		ev_timer_start(sb->loop, &sb->kill_timer);
	}
	sandbox_check_dead(sb);
}

enum sandbox_state
sandbox_state(struct sandbox *sb)
{
	return (sb->state);
}

struct agent_conn *
sandbox_port(struct sandbox *sb, int i)
{
	assert(i >= 0 && i < QSUP_PORT_COUNT);
	return (sb->ports[i]);
}

const struct accel_choice *
sandbox_accel(struct sandbox *sb)
{
	return (&sb->accel);
}

double
sandbox_boot_seconds(struct sandbox *sb)
{
	if (sb->t_ready == 0)
		return (0);
	return (sb->t_ready - sb->t_spawn);
}

/* The last lines of the console and of QEMU's own messages. */
void
sandbox_console_tail(struct sandbox *sb, int nlines, struct buf *out)
{
	if (sb->console != NULL)
		serial_tail(sb->console, nlines, out);
	if (sb->qemu_log_buf.len > 0) {
		if (out->len > 0 && out->data[out->len - 1] != '\n')
			buf_add(out, "\n", 1);
		buf_add(out, sb->qemu_log_buf.data, sb->qemu_log_buf.len);
	}
}

void
sandbox_free(struct sandbox *sb)
{
	char	**a;
	int	  i;

	if (sb == NULL)
		return;
	/* Never leave QEMU behind, even on an error path. */
	if (sb->pid > 0 && !sb->reaped) {
		kill(sb->pid, SIGKILL);
		while (waitpid(sb->pid, NULL, 0) == -1 && errno == EINTR)
			;
		ev_child_stop(sb->loop, &sb->child);
	}
	ev_timer_stop(sb->loop, &sb->deadline);
	ev_timer_stop(sb->loop, &sb->kill_timer);
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		agent_conn_free(sb->ports[i]);
		if (sb->port_guest_fd[i] != -1)
			close(sb->port_guest_fd[i]);
	}
	serial_free(sb->console);
	if (sb->console_guest_fd != -1)
		close(sb->console_guest_fd);
	if (sb->qemu_log_fd != -1) {
		ev_io_stop(sb->loop, &sb->qemu_log);
		close(sb->qemu_log_fd);
	}
	buf_free(&sb->qemu_log_buf);
	if (sb->rundir != NULL && util_rm_rf(sb->rundir) == -1)
		log_warn("cannot remove %s", sb->rundir);
	free(sb->rundir);
	if (sb->token != NULL) {
		explicit_bzero(sb->token, strlen(sb->token));
		free(sb->token);
	}
	if (sb->argv != NULL) {
		for (a = sb->argv; *a != NULL; a++)
			free(*a);
		free(sb->argv);
	}
	guest_free(&sb->guest);
	free(sb->accel.why);
	free(sb);
}
