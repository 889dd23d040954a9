/*
 * qsup-agent: the in-guest agent (wire.h). As PID 1 of the default
 * microVM guest it sets the guest up (init.c), then serves the
 * protocol on every agent port from one poll loop. Not as PID 1 it is a
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

int			 agent_pid1;
int			 agent_service;	/* --service: in a VM, not PID 1 */
/*
 * Booted to become a VM state template (qsup.template=1): no seed is read;
 * the configuration arrives with POST /setup after a restore.
 */
int			 agent_template;
struct agent_config	 agent_cfg;
char			*agent_error;
long long		 agent_ready_ms;
char			 agent_kernel[65];

static int		 agent_sigfd = -1;
static int		 agent_poweroff_wanted;

/* The first setup error wins: it is the cause, later ones follow from it. */
void
agent_set_error(const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		msg = NULL;
	va_end(ap);
	if (msg == NULL)
		fatalx("out of memory");
	log_warnx("%s", msg);
	if (agent_error == NULL)
		agent_error = msg;
	else
		free(msg);
}

void
agent_poweroff_request(void)
{
	agent_poweroff_wanted = 1;
}

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
agent_std_fds(void)
{
	int	fd;

	if (agent_pid1) {
		init_console();
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
 * init.c) arrive through a signalfd. They also get a handler: the
 * kernel drops signals with the default action sent to PID 1.
 */
static void
agent_signals(void)
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
	agent_sigfd = signalfd(-1, &set, SFD_NONBLOCK|SFD_CLOEXEC);
	if (agent_sigfd == -1)
		fatalx("signalfd: %s", strerror(errno));
}

static void
agent_signal_read(void)
{
	struct signalfd_siginfo	si;
	pid_t			pid;
	int			status, io = 0;

	while (read(agent_sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			agent_poweroff_wanted = 1;
		if (si.ssi_signo == SIGIO)
			io = 1;
	}
	if (io)
		port_recheck();
	/* Every child, ours or orphaned onto PID 1, is reaped here. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		exec_reaped(pid, status);
}

/* Test mode: configuration from a file, ports from inherited fds. */
static void
agent_test_setup(int argc, char **argv)
{
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
			agent_template = 1;
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
			port_add((int)fd, name);
			nfds++;
		} else
			agent_usage();
	}
	if (nfds == 0 || (config != NULL && seed != NULL) ||
	    (config == NULL && seed == NULL && !agent_template) ||
	    (agent_template && (config != NULL || seed != NULL)))
		agent_usage();

	if (config != NULL) {
		if (util_read_file(config, &text, &len, AGENT_CONFIG_MAX) ==
		    -1) {
			fprintf(stderr, "qsup-agent: %s: %s\n", config,
			    strerror(errno));
			exit(2);
		}
		if (config_parse(&agent_cfg, text, len, &cause) == -1)
			agent_set_error("%s", cause);
		else if (agent_cfg.token == NULL)
			agent_set_error("%s: no token", config);
	} else if (seed != NULL) {
		if ((sfd = open(seed, O_RDONLY|O_CLOEXEC)) == -1) {
			fprintf(stderr, "qsup-agent: %s: %s\n", seed,
			    strerror(errno));
			exit(2);
		}
		if (iso_is_seed(sfd) != 1)
			agent_set_error("no seed disk");
		else if (iso_read_config(sfd, &text, &len, &cause) == -1 ||
		    config_parse(&agent_cfg, text, len, &cause) == -1)
			agent_set_error("%s: %s", seed, cause);
		else if (agent_cfg.token == NULL)
			agent_set_error("%s: no token", seed);
		close(sfd);
	}
	free(text);
	free(cause);
	if (mounts && agent_error == NULL)
		init_mounts();
	/* Like PID 1, adopt orphans, so every test sees the same reaping. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static void
agent_boot(void)
{
	int	probe, nports;

	init_early();
	init_cmdline(&probe, &nports, &agent_template);
	if (probe)
		init_probe();
	init_modules();
	init_network();
	/* A seed that does not parse is not half applied. */
	if (!agent_template && init_seed() == 0)
		init_apply_seed();
	init_ports();
}

static void
agent_shutdown(void)
{
	port_flush_all(1000);
	if (agent_pid1 || agent_service)
		init_poweroff();
	exec_kill_all(SIGKILL);
	exit(0);
}

static void
agent_loop(void)
{
	struct pollfd	*pfd = NULL;
	void		**refs = NULL;
	int		*kinds = NULL;
	int		 max, n, m, i;

	/*
	 * No timeout: an idle guest sleeps until the host, a child or the
	 * kernel has something to say (port_recheck, init_ports_late).
	 */
	for (;;) {
		max = 2 + port_count() + 3 * exec_count();
		pfd = xreallocarray(pfd, max, sizeof *pfd);
		refs = xreallocarray(refs, max, sizeof *refs);
		kinds = xreallocarray(kinds, max, sizeof *kinds);

		pfd[0].fd = agent_sigfd;
		pfd[0].events = POLLIN;
		refs[0] = NULL;
		kinds[0] = REF_SIGNAL;
		n = 1;
		m = port_pollfds(pfd + n, refs + n, max - n);
		for (i = n; i < n + m; i++)
			kinds[i] = REF_PORT;
		n += m;
		m = exec_pollfds(pfd + n, refs + n, max - n);
		for (i = n; i < n + m; i++)
			kinds[i] = REF_EXEC;
		n += m;
		if ((agent_pid1 || agent_service) && init_uevent_fd() != -1) {
			pfd[n].fd = init_uevent_fd();
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
				agent_signal_read();
				break;
			case REF_PORT:
				port_handle(refs[i], pfd[i].revents);
				break;
			case REF_EXEC:
				exec_handle(refs[i], &pfd[i]);
				break;
			case REF_UEVENT:
				init_ports_late();
				break;
			}
		}
		exec_sweep();
		port_sweep();
		if (agent_poweroff_wanted)
			agent_shutdown();
		if (!agent_pid1 && !agent_service && port_count() == 0)
			agent_shutdown();
	}
}

int
main(int argc, char **argv)
{
	struct utsname	u;
	long long	start = util_ms(CLOCK_MONOTONIC);

	agent_pid1 = getpid() == 1;
	agent_std_fds();
	if (uname(&u) == 0)
		snprintf(agent_kernel, sizeof agent_kernel, "%s", u.release);
	agent_signals();

	if (agent_pid1) {
		agent_boot();
		agent_ready_ms = util_ms(CLOCK_BOOTTIME);
		log_warnx("ready in %lld ms", agent_ready_ms);
	} else if (argc == 2 && strcmp(argv[1], "--service") == 0) {
		agent_service = 1;
		init_service();
		agent_ready_ms = util_ms(CLOCK_BOOTTIME);
		log_warnx("ready in %lld ms", agent_ready_ms);
	} else {
		agent_test_setup(argc, argv);
		agent_ready_ms = util_ms(CLOCK_MONOTONIC) - start;
	}
	agent_loop();
	return (0);
}
