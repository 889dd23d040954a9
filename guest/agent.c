/*
 * qsup-agent: the in-guest agent (wire.h). As PID 1 of the default
 * microVM guest it sets the guest up (init.c), then serves the
 * protocol on every agent port from one poll loop. main owns both
 * parts' state: setup's (struct init_state, init.c and below) and the
 * service's (struct agent: port.c, exec.c, vport.c), which reads the
 * first; setup never calls into the service. Not as PID 1 it is a
 * test harness for the protocol:
 *	qsup-agent --config FILE | --seed ISO  --fd N [--fd N ...]
 *	    [--apply-mounts]
 * serves the given inherited descriptors, skips every PID 1 duty, and
 * exits when all of them have been closed. Started by cloud-init in an
 * image booted with its own kernel and init (boot = "image"):
 *	qsup-agent --service
 * it finds its seed and its ports as PID 1 would, but leaves the
 * system's setup to the image's init, and powers the guest off when told.
 */
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

enum {
	REF_SIGNAL,
	REF_PORT,
	REF_EXEC,
	REF_UEVENT
};

/* Read from the initramfs by qsup doctor; never by the agent itself. */
__attribute__((used)) const char agent_protocol_mark[] = QSUP_PROTOCOL_MARK;

static void __attribute__((noreturn))
agent_usage(void)
{
	fprintf(stderr, "usage: qsup-agent --config FILE | --seed ISO | "
	    "--template --fd N [--fd N ...] [--apply-mounts]\n"
	    "       qsup-agent --service\n"
	    "(as PID 1 it takes no arguments)\n");
	exit(2);
}

/* Descriptors 0-2 must be open, or pipes would land on them. */
static void
agent_std_fds(struct init_state *st)
{
	int	fd;

	if (st->pid1) {
		init_console(st);
		return;
	}
	while ((fd = open("/dev/null", O_RDWR)) != -1 && fd <= 2)
		;
	if (fd > 2)
		close(fd);
}

static void
agent_signal_cb(int sig)
{
	(void)sig;
}

/*
 * SIGCHLD, SIGTERM, SIGINT and SIGIO (a port's host came or went:
 * port_recheck) arrive through a signalfd. They also get a handler: the
 * kernel drops signals with the default action sent to PID 1.
 */
static void
agent_signals(struct agent *a)
{
	struct sigaction	sa;
	sigset_t		set;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = agent_signal_cb;
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGIO, &sa, NULL);

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGIO);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1)
		fatalx("sigprocmask: %s", strerror(errno));
	a->sigfd = signalfd(-1, &set, SFD_NONBLOCK|SFD_CLOEXEC);
	if (a->sigfd == -1)
		fatalx("signalfd: %s", strerror(errno));
}

static void
agent_signal_read(struct agent *a)
{
	struct signalfd_siginfo	si;
	pid_t			pid;
	int			status, io = 0;

	while (read(a->sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			a->poweroff = 1;
		if (si.ssi_signo == SIGIO)
			io = 1;
	}
	if (io)
		port_recheck(a);
	/* Every child, ours or orphaned onto PID 1, is reaped here. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		exec_reaped(a, pid, status);
}

/* Test mode: configuration from a file, ports from inherited fds. */
static void
agent_test_setup(struct agent *a, int argc, char **argv)
{
	struct init_state	*st = a->init;
	const char	*config = NULL, *seed = NULL;
	char		*text = NULL, *cause = NULL, *end, name[32];
	size_t		 len;
	long		 fd;
	int		 i, mounts = 0, nfds = 0, sfd;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			config = argv[++i];
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = argv[++i];
		else if (strcmp(argv[i], "--apply-mounts") == 0)
			mounts = 1;
		else if (strcmp(argv[i], "--template") == 0)
			st->template = 1;
		else if (strcmp(argv[i], "--fd") == 0 && i + 1 < argc) {
			errno = 0;
			fd = strtol(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || fd < 0 ||
			    fd > 65535 || fcntl((int)fd, F_GETFD) == -1) {
				fprintf(stderr, "qsup-agent: --fd %s: not an "
				    "open descriptor\n", argv[i]);
				exit(2);
			}
			if (fcntl((int)fd, F_SETFD, FD_CLOEXEC) == -1 ||
			    fcntl((int)fd, F_SETFL, O_NONBLOCK | fcntl((int)fd,
			    F_GETFL)) == -1)
				fatalx("--fd %ld: %s", fd, strerror(errno));
			snprintf(name, sizeof name, "fd %ld", fd);
			port_add(a, (int)fd, name);
			nfds++;
		} else
			agent_usage();
	}
	if (nfds == 0 || (config != NULL && seed != NULL) ||
	    (config == NULL && seed == NULL && !st->template) ||
	    (st->template && (config != NULL || seed != NULL)))
		agent_usage();

	if (config != NULL) {
		if (util_read_file(config, &text, &len, AGENT_CONFIG_MAX) ==
		    -1) {
			fprintf(stderr, "qsup-agent: %s: %s\n", config,
			    strerror(errno));
			exit(2);
		}
		if (config_parse(&st->cfg, text, len, &cause) == -1)
			util_set_error(&st->error, "%s", cause);
		else if (st->cfg.token == NULL)
			util_set_error(&st->error, "%s: no token", config);
	} else if (seed != NULL) {
		if ((sfd = open(seed, O_RDONLY|O_CLOEXEC)) == -1) {
			fprintf(stderr, "qsup-agent: %s: %s\n", seed,
			    strerror(errno));
			exit(2);
		}
		if (iso_is_seed(sfd) != 1)
			util_set_error(&st->error, "no seed disk");
		else if (iso_read_config(sfd, &text, &len, &cause) == -1 ||
		    config_parse(&st->cfg, text, len, &cause) == -1)
			util_set_error(&st->error, "%s: %s", seed, cause);
		else if (st->cfg.token == NULL)
			util_set_error(&st->error, "%s: no token", seed);
		close(sfd);
	}
	free(text);
	free(cause);
	if (mounts && st->error == NULL)
		init_mounts(st);
	/* Like PID 1, adopt orphans, so every test sees the same reaping. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
}

/* PID 1: setup, then the ports the service is to serve. */
static void
agent_boot(struct agent *a)
{
	struct init_state	*st = a->init;
	int			 probe;

	init_early(st);
	init_cmdline(st, &probe, &st->template);
	if (probe)
		init_probe();
	init_modules(st);
	netcfg_up(st);
	/* A seed that does not parse is not half applied. */
	if (!st->template && init_seed(st) == 0)
		init_apply_seed(st);
	vport_wait(a);
}

/* How setup's poweroff reaches the service's commands. */
static void
agent_kill_cb(int sig, void *arg)
{
	exec_kill_all(arg, sig);
}

/* fatalx's last word (util.c): PID 1 powers off rather than exit. */
static void
agent_fatal_cb(void *arg)
{
	struct agent	*a = arg;

	if (a->init->pid1 || a->init->service)
		init_poweroff(a->init, agent_kill_cb, a);
	exec_kill_all(a, SIGKILL);
}

static void
agent_shutdown(struct agent *a)
{
	port_flush_all(a, 1000);
	if (a->init->pid1 || a->init->service)
		init_poweroff(a->init, agent_kill_cb, a);
	exec_kill_all(a, SIGKILL);
	exit(0);
}

static void
agent_loop(struct agent *a)
{
	struct init_state	*st = a->init;
	struct pollfd	*pfd = NULL;
	void		**refs = NULL;
	int		*kinds = NULL;
	int		 max, n, m, i;

	/*
	 * No timeout: an idle guest sleeps until the host, a child or the
	 * kernel has something to say (port_recheck, vport_late).
	 */
	for (;;) {
		max = 2 + port_count(a) + 3 * exec_count(a);
		pfd = xreallocarray(pfd, max, sizeof *pfd);
		refs = xreallocarray(refs, max, sizeof *refs);
		kinds = xreallocarray(kinds, max, sizeof *kinds);

		pfd[0].fd = a->sigfd;
		pfd[0].events = POLLIN;
		refs[0] = NULL;
		kinds[0] = REF_SIGNAL;
		n = 1;
		m = port_pollfds(a, pfd + n, refs + n, max - n);
		for (i = n; i < n + m; i++)
			kinds[i] = REF_PORT;
		n += m;
		m = exec_pollfds(a, pfd + n, refs + n, max - n);
		for (i = n; i < n + m; i++)
			kinds[i] = REF_EXEC;
		n += m;
		if ((st->pid1 || st->service) && vport_uevent_fd(a) != -1) {
			pfd[n].fd = vport_uevent_fd(a);
			pfd[n].events = POLLIN;
			refs[n] = NULL;
			kinds[n++] = REF_UEVENT;
		}
		for (i = 0; i < n; i++)
			pfd[i].revents = 0;

		if (poll(pfd, n, -1) == -1) {
			if (errno == EINTR)
				continue;
			fatalx("poll: %s", strerror(errno));
		}
		for (i = 0; i < n; i++) {
			if (pfd[i].revents == 0)
				continue;
			switch (kinds[i]) {
			case REF_SIGNAL:
				agent_signal_read(a);
				break;
			case REF_PORT:
				port_handle(refs[i], pfd[i].revents);
				break;
			case REF_EXEC:
				exec_handle(refs[i], &pfd[i]);
				break;
			case REF_UEVENT:
				vport_late(a);
				break;
			}
		}
		exec_sweep(a);
		port_sweep(a);
		/* After the sweep has sent what the last command said. */
		exec_runner_fill(a);
		if (a->poweroff)
			agent_shutdown(a);
		if (!st->pid1 && !st->service && port_count(a) == 0)
			agent_shutdown(a);
	}
}

int
main(int argc, char **argv)
{
	struct init_state	st;
	struct agent		a;
	struct utsname		u;
	long long		start = util_ms(CLOCK_MONOTONIC);

	if (argc == 4 && strcmp(argv[1], "--runner") == 0)
		exec_runner_run(argv[2], argv[3]);	/* exec.c */
	memset(&st, 0, sizeof st);
	st.nports = QSUP_PORT_COUNT;
	memset(&a, 0, sizeof a);
	a.init = &st;
	a.exec_next_id = 1;
	a.sigfd = -1;
	a.uevent = -1;
	util_set_fatal(agent_fatal_cb, &a);

	st.pid1 = getpid() == 1;
	agent_std_fds(&st);
	if (uname(&u) == 0)
		snprintf(st.kernel, sizeof st.kernel, "%s", u.release);
	agent_signals(&a);

	if (st.pid1) {
		agent_boot(&a);
		a.ready_ms = util_ms(CLOCK_BOOTTIME);
		log_warnx("ready in %lld ms", a.ready_ms);
	} else if (argc == 2 && strcmp(argv[1], "--service") == 0) {
		st.service = 1;
		init_service(&st);
		vport_wait(&a);
		a.ready_ms = util_ms(CLOCK_BOOTTIME);
		log_warnx("ready in %lld ms", a.ready_ms);
	} else {
		agent_test_setup(&a, argc, argv);
		a.ready_ms = util_ms(CLOCK_MONOTONIC) - start;
	}
	/* A template's boot is saved once it answers: its runner waits. */
	exec_runner_ready(&a, st.template && !st.setup_boot);
	agent_loop(&a);
	return (0);
}
