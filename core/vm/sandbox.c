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
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"
#include "wire.h"
#include "staging.h"

#define SANDBOX_KILL_GRACE	2.0	/* SIGTERM to SIGKILL */
#define SANDBOX_QEMU_LOG_MAX	16384
#define SANDBOX_RESTORE_MAX	10.0	/* a restore slower than this failed */
#define SANDBOX_SAVE_MAX	60.0	/* writing a template */
/*
 * Liveness: once ready, the guest's agent is pinged on a port of its own
 * every SANDBOX_PING_EVERY s; a guest that leaves one unanswered this
 * long has stopped (halted, wedged, paused). Under TCG a loaded host can
 * slow the guest down a lot, so it gets more time.
 */
#define SANDBOX_PING_PORT	(QSUP_PORT_COUNT - 1)
#define SANDBOX_PING_EVERY	2.0
#define SANDBOX_PING_MAX_KVM	10.0
#define SANDBOX_PING_MAX_TCG	20.0

enum sandbox_mode {
	SB_COLD,	/* boot; the seed ISO configures the guest */
	SB_BUILD,	/* boot to template state, save it, then /setup */
	SB_RESTORE	/* restore a template, then /setup */
};

struct sandbox {
	struct ev_loop		*loop;
	const struct profile	*profile;
	struct sandbox_cbs	 cbs;
	enum sandbox_state	 state;
	enum sandbox_mode	 mode;
	struct accel_choice	 accel;
	struct guest		 guest;
	struct template		 tpl;
	int			 have_tpl;
	char			*fallback;	/* why a restore was given up */

	char			*rundir;
	char			*token;
	struct share		*shares;
	size_t			 nshares;
	struct net		*net;		/* NULL: no card */

	/* One launch of QEMU; a failed restore is followed by another. */
	char			**argv;
	pid_t			 pid;
	ev_child		 child;
	int			 reaped;
	int			 relaunch;
	int			 wstatus;
	struct serial		*console;
	int			 console_guest_fd;
	int			 qemu_log_fd;
	ev_io			 qemu_log;
	struct buf		 qemu_log_buf;
	struct agent_conn	*ports[QSUP_PORT_COUNT];
	int			 port_guest_fd[QSUP_PORT_COUNT];
	int			 qmp_fd;
	int			 qmp_guest_fd;
	int			 state_fd;	/* the template, for -incoming */

	ev_timer		 deadline;
	ev_timer		 kill_timer;
	ev_timer		 live;		/* liveness pings, once ready */
	double			 ping_sent;	/* 0: none unanswered */
	double			 live_tick;	/* the last live timer run */
	double			 ping_slowest;	/* the slowest answer, for -v */
	unsigned		 pings;
	double			 t_spawn;
	double			 t_ready;
	double			 save_seconds;
	int			 failed;
};

static void	sandbox_fail(struct sandbox *, const char *);
static void	sandbox_check_dead(struct sandbox *);
static int	sandbox_launch(struct sandbox *, char **);
static void	sandbox_launch_free(struct sandbox *);

static const char *
sandbox_state_name(enum sandbox_state s)
{
	switch (s) {
	case SB_NEW:
		return ("new");
	case SB_BOOTING:
		return ("booting");
	case SB_SAVING:
		return ("saving");
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
	assert(sb->state != SB_DEAD || sb->pid == -1 || sb->reaped);
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
	sb->qmp_fd = sb->qmp_guest_fd = -1;
	sb->state_fd = -1;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		sb->port_guest_fd[i] = -1;
	return (sb);
}

/*
 * Run directories left by a qsup that was killed outright (SIGKILL: its
 * QEMU died with it through PDEATHSIG, but nothing removed the directory):
 * those whose pid file names a process that no longer exists.
 */
static void
sandbox_sweep(const char *base)
{
	DIR		*d;
	struct dirent	*de;
	char		*path, *text;
	long		 pid;

	if ((d = opendir(base)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "sb-", 3) != 0)
			continue;
		xasprintf(&path, "%s/%s/pid", base, de->d_name);
		text = util_read_file(path, NULL, 64);
		free(path);
		if (text == NULL)
			continue;	/* being made, or not ours to judge */
		pid = strtol(text, NULL, 10);
		free(text);
		if (pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		xasprintf(&path, "%s/%s", base, de->d_name);
		log_debug("removing %s, left by process %ld", path, pid);
		staging_remove(path);
		free(path);
	}
	closedir(d);
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
	sandbox_sweep(base);
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

/* "KEY VALUE\n", the value percent-encoded (guest/protocol.h). */
static void
sandbox_seed_line(struct buf *b, const char *key, const char *value)
{
	buf_printf(b, "%s ", key);
	sandbox_seed_value(b, value);
	buf_add(b, "\n", 1);
}

/*
 * The guest's own firewall (guest_firewall), as iptables-restore input:
 * out only to what qsup's network answers for this mode (its DNS, and in
 * allowlist mode the proxy and the TCP maps), in only to forwarded ports.
 * A second line behind the host's enforcement, never instead of it.
 */
static void
sandbox_firewall(struct sandbox *sb, struct buf *b)
{
	const struct profile	*p = sb->profile;
	size_t			 i;

	buf_puts(b, "*filter\n:INPUT DROP [0:0]\n:FORWARD DROP [0:0]\n"
	    ":OUTPUT DROP [0:0]\n-A INPUT -i lo -j ACCEPT\n"
	    "-A OUTPUT -o lo -j ACCEPT\n"
	    "-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n"
	    "-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT\n");
	buf_printf(b, "-A OUTPUT -d %s/32 -p udp --dport 53 -j ACCEPT\n",
	    NET_DNS_ADDR);
	if (p->network == NET_MODE_ALLOWLIST)
		buf_printf(b, "-A OUTPUT -d %s/32 -p tcp --dport %d -j ACCEPT\n",
		    NET_PROXY_ADDR, NET_PROXY_PORT);
	/* TCP maps (net_add_tcp_map). */
	buf_printf(b, "-A OUTPUT -p tcp -m iprange --dst-range "
	    "10.0.2.%d-10.0.2.%d -j ACCEPT\n", NET_MAP_FIRST,
	    NET_MAP_FIRST + NET_MAPS_MAX - 1);
	for (i = 0; i < p->nports; i++)
		buf_printf(b, "-A INPUT -p tcp --dport %u -j ACCEPT\n",
		    p->ports[i].guest);
	buf_puts(b, "COMMIT\n");
}

/* The guest's configuration, in the seed's qsup-config format. */
static void
sandbox_config(struct sandbox *sb, struct buf *cfg)
{
	struct timespec	 ts;
	struct buf	 rules = { 0 };
	struct share	*sh;
	char		*entropy, *src, *const *env;
	size_t		 i, j;

	clock_gettime(CLOCK_REALTIME, &ts);
	entropy = token_hex(64);
	buf_printf(cfg, "token %s\nhostname qsup\ntime %lld.%09ld\n"
	    "entropy %s\n", sb->token, (long long)ts.tv_sec, ts.tv_nsec,
	    entropy);
	explicit_bzero(entropy, strlen(entropy));
	free(entropy);
	/* The proxy first: the profile's own env may override it. */
	for (env = sb->net != NULL ? net_guest_env(sb->net) : NULL;
	    env != NULL && *env != NULL; env++)
		sandbox_seed_line(cfg, "env", *env);
	for (i = 0; i < sb->profile->nenv; i++)
		sandbox_seed_line(cfg, "env", sb->profile->env[i]);
	if (sb->profile->guest_firewall && sb->net != NULL) {
		sandbox_firewall(sb, &rules);
		sandbox_seed_line(cfg, "firewall", rules.data);
		buf_free(&rules);
	}
	if (sb->profile->cwd != NULL)
		sandbox_seed_line(cfg, "cwd", sb->profile->cwd);
	for (i = 0; i < sb->nshares; i++) {
		buf_printf(cfg, "mount %s ", sb->shares[i].tag);
		sandbox_seed_value(cfg, sb->shares[i].guest);
		buf_printf(cfg, " %s\n", sb->shares[i].readonly ? "ro" : "rw");
	}
	/* After every mount: their sources lie in the shares. */
	for (i = 0; i < sb->nshares; i++) {
		sh = &sb->shares[i];
		for (j = 0; j < sh->nbinds; j++) {
			xasprintf(&src, "%s%s", strcmp(sh->guest, "/") == 0 ?
			    "" : sh->guest, sh->binds[j].src);
			buf_add(cfg, "bind ", 5);
			sandbox_seed_value(cfg, src);
			buf_add(cfg, " ", 1);
			sandbox_seed_value(cfg, sh->binds[j].dst);
			buf_printf(cfg, " %s\n", sh->readonly ? "ro" : "rw");
			free(src);
		}
	}
}

static int
sandbox_write_seed(struct sandbox *sb, char **cause)
{
	struct seed_file	 files[3];
	struct buf		 cfg = { 0 }, meta = { 0 };
	char			*path;
	int			 rc;

	sandbox_config(sb, &cfg);
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

/*
 * QEMU's command line. A template build and a restore must use the same
 * one (but for -incoming): the template key is made from it.
 */
static void
sandbox_build_argv(struct sandbox *sb)
{
	const struct profile	*p = sb->profile;
	char			**argv = NULL, *kernel, *initrd, *seed, *tmp;
	char *const		 *a;
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
	/* Names the run directory, so a person (or a test) can tell us apart. */
	sandbox_argv_add(&argv, &n, "-name");
	sandbox_argv_add(&argv, &n, "qsup:%s", sb->rundir);
	sandbox_argv_add(&argv, &n, "-nodefaults");
	sandbox_argv_add(&argv, &n, "-no-user-config");
	sandbox_argv_add(&argv, &n, "-display");
	sandbox_argv_add(&argv, &n, "none");
	sandbox_argv_add(&argv, &n, "-no-reboot");
	sandbox_argv_add(&argv, &n, "-sandbox");
	sandbox_argv_add(&argv, &n, "%s", QSUP_QEMU_SANDBOX);
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
	    "init_trace_printk_function_export qsup.ports=%d%s", tsc,
	    QSUP_PORT_COUNT, sb->mode == SB_COLD ? "" : " qsup.template=1");
	sandbox_argv_add(&argv, &n, "-chardev");
	sandbox_argv_add(&argv, &n, "socket,id=con,fd=%d",
	    sb->console_guest_fd);
	sandbox_argv_add(&argv, &n, "-serial");
	sandbox_argv_add(&argv, &n, "chardev:con");
	sandbox_argv_add(&argv, &n, "-device");
	sandbox_argv_add(&argv, &n, "virtio-serial-device");
	for (i = 0; i < (int)sb->nshares; i++) {
		tmp = sandbox_qemu_escape(sb->shares[i].host);
		sandbox_argv_add(&argv, &n, "-fsdev");
		sandbox_argv_add(&argv, &n, "local,id=fs%d,path=%s,"
		    "security_model=%s%s", i, tmp, profile_sm_name(
		    share_model(&sb->shares[i], p->virtfs_security_model)),
		    sb->shares[i].readonly ? ",readonly=on" : "");
		free(tmp);
		sandbox_argv_add(&argv, &n, "-device");
		sandbox_argv_add(&argv, &n, "virtio-9p-device,fsdev=fs%d,"
		    "mount_tag=%s", i, sb->shares[i].tag);
	}
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		sandbox_argv_add(&argv, &n, "-chardev");
		sandbox_argv_add(&argv, &n, "socket,id=agent%d,fd=%d", i,
		    sb->port_guest_fd[i]);
		sandbox_argv_add(&argv, &n, "-device");
		sandbox_argv_add(&argv, &n,
		    "virtserialport,chardev=agent%d,name=%s%d", i,
		    QSUP_PORT_PREFIX, i);
	}
	/* The network card, on qsup's own stack (core/net.c). */
	for (a = sb->net != NULL ? net_qemu_args(sb->net) : NULL;
	    a != NULL && *a != NULL; a++)
		sandbox_argv_add(&argv, &n, "%s", *a);
	if (sb->mode == SB_COLD) {
		sandbox_argv_add(&argv, &n, "-blockdev");
		sandbox_argv_add(&argv, &n, "driver=raw,node-name=seed,"
		    "read-only=on,file.driver=file,file.filename=%s", seed);
		sandbox_argv_add(&argv, &n, "-device");
		sandbox_argv_add(&argv, &n, "virtio-blk-device,drive=seed");
	} else {
		/* Only for saving the state; a restore does not use it. */
		sandbox_argv_add(&argv, &n, "-chardev");
		sandbox_argv_add(&argv, &n, "socket,id=qmp,fd=%d",
		    sb->qmp_guest_fd);
		sandbox_argv_add(&argv, &n, "-mon");
		sandbox_argv_add(&argv, &n, "chardev=qmp,mode=control");
	}
	/* The operator's own flags, checked by the profile loader. */
	for (i = 0; i < (int)p->nextra_args; i++)
		sandbox_argv_add(&argv, &n, "%s", p->extra_args[i]);
	if (sb->mode == SB_RESTORE) {
		sandbox_argv_add(&argv, &n, "-incoming");
		sandbox_argv_add(&argv, &n, "fd:%d", sb->state_fd);
	}
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

/*
 * Give up on the template: remove it and boot instead. QEMU is killed if
 * need be; sandbox_child_cb launches again once it has been reaped.
 */
static void
sandbox_restore_failed(struct sandbox *sb, const char *why)
{
	struct buf	log = { 0 };

	if (sb->relaunch)
		return;
	sandbox_console_tail(sb, 3, &log);
	xasprintf(&sb->fallback, "%s%s%s", why, log.len > 0 ? ": " : "",
	    log.len > 0 ? log.data : "");
	buf_free(&log);
	log_debug("template %s did not restore (%s); booting instead",
	    sb->tpl.key, sb->fallback);
	template_discard(&sb->tpl);
	sb->relaunch = 1;
	if (!sb->reaped)
		kill(sb->pid, SIGKILL);
}

/*
 * Why QEMU exited on its own: its status, and what the console says the
 * guest did (QEMU runs with -no-reboot and the kernel with panic=-1, so a
 * panic, a reboot and a poweroff all end QEMU). The console is read to
 * its end first: QEMU wrote its last lines before it exited.
 */
static char *
sandbox_death(struct sandbox *sb)
{
	static const struct {
		const char	*line;
		const char	*what;
	} deaths[] = {
		{ "Kernel panic - ", "the guest kernel panicked" },
		{ "reboot: Power down", "the guest powered off" },
		{ "reboot: Restarting system", "the guest rebooted" },
		{ "reboot: System halted", "the guest halted" },
	};
	char		*qemu, *line = NULL, *msg, *p;
	size_t		 i;

	if (WIFSIGNALED(sb->wstatus))
		xasprintf(&qemu, "QEMU was killed by signal %d",
		    WTERMSIG(sb->wstatus));
	else
		xasprintf(&qemu, "QEMU exited with status %d",
		    WEXITSTATUS(sb->wstatus));
	if (sb->console == NULL)
		return (qemu);
	serial_drain(sb->console);
	for (i = 0; i < sizeof deaths / sizeof deaths[0]; i++) {
		if ((line = serial_find(sb->console, deaths[i].line)) != NULL)
			break;
	}
	if (line == NULL)
		return (qemu);
	if (i == 0) {
		/* "Kernel panic - not syncing: WHY": say WHY. */
		p = strstr(line, deaths[i].line) + strlen(deaths[i].line);
		if (strncmp(p, "not syncing: ", 13) == 0)
			p += 13;
		xasprintf(&msg, "%s: %s (%s)", deaths[i].what, p, qemu);
	} else
		xasprintf(&msg, "%s (%s)", deaths[i].what, qemu);
	free(line);
	free(qemu);
	return (msg);
}

static void
sandbox_child_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	struct sandbox	*sb = w->data;
	char		*msg, *cause = NULL;

	(void)revents;
	ev_child_stop(loop, w);
	sb->reaped = 1;
	sb->wstatus = w->rstatus;
	ev_timer_stop(loop, &sb->kill_timer);
	if (sb->qemu_log_fd != -1)
		sandbox_qemu_log_cb(loop, &sb->qemu_log, EV_READ);
	if (sb->mode == SB_RESTORE && sb->state == SB_BOOTING)
		sandbox_restore_failed(sb, "QEMU exited while restoring");
	if (sb->relaunch) {
		sandbox_launch_free(sb);
		buf_consume(&sb->qemu_log_buf, sb->qemu_log_buf.len);
		sb->relaunch = 0;
		sb->mode = template_lock(&sb->tpl) == 0 ? SB_BUILD : SB_COLD;
		if (sandbox_launch(sb, &cause) == -1) {
			sandbox_fail(sb, cause);
			free(cause);
			sandbox_check_dead(sb);
		}
		return;
	}
	ev_timer_stop(loop, &sb->deadline);
	ev_timer_stop(loop, &sb->live);
	if (sb->state < SB_STOPPING) {
		msg = sandbox_death(sb);
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
	if (sb->state == SB_DEAD || sb->relaunch)
		return;
	if (sb->pid != -1 && !sb->reaped)
		return;
	if (sb->console != NULL && !serial_closed(sb->console))
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
	if (sb->state >= SB_READY)
		return;
	if (sb->mode == SB_RESTORE) {
		sandbox_restore_failed(sb, "the restore took too long");
		return;
	}
	xasprintf(&msg, "the guest did not become ready within %g s "
	    "(accelerator %s)", sandbox_start_timeout(sb),
	    accel_name(sb->accel.accel));
	sandbox_fail(sb, msg);
	free(msg);
}

/* A mount error names a tag; say which host tree that is. */
static const char *
sandbox_share_named(struct sandbox *sb, const char *body)
{
	static char	 what[PATH_MAX + 32];
	const char	*p;
	size_t		 i;

	if ((p = strstr(body, "mount qsup")) == NULL)
		return ("");
	for (i = 0; i < sb->nshares; i++) {
		if (strncmp(p + 6, sb->shares[i].tag,
		    strlen(sb->shares[i].tag)) == 0 &&
		    p[6 + strlen(sb->shares[i].tag)] == ' ') {
			snprintf(what, sizeof what, " (the share of %s)",
			    sb->shares[i].host);
			return (what);
		}
	}
	return ("");
}

/*
 * An important console line. A halted guest never ends QEMU, so the
 * kernel's last word ends the run at once (a later ping would too).
 */
static void
sandbox_console_mark_cb(void *arg, const char *line)
{
	struct sandbox	*sb = arg;

	/* Once QEMU is reaped, sandbox_death tells it all. */
	if (sb->state == SB_READY && !sb->relaunch && !sb->reaped &&
	    strstr(line, "reboot: System halted") != NULL)
		sandbox_fail(sb, "the guest halted");
}

/* The agent broke the protocol: fail with the client's account of it. */
static void
sandbox_broken(struct sandbox *sb, const char *why, size_t len)
{
	char	*msg;

	xasprintf(&msg, "%.*s", (int)len, why);
	sandbox_fail(sb, msg);
	free(msg);
}

static void
sandbox_pong_cb(int status, const char *body, size_t len, void *arg)
{
	struct sandbox	*sb = arg;

	if (sb->state != SB_READY || status == AGENT_CLOSED)
		return;		/* QEMU is going; sandbox_child_cb says why */
	if (status == AGENT_BROKEN) {
		sandbox_broken(sb, body, len);
		return;
	}
	/* Any answer: the agent runs. */
	if (util_now() - sb->ping_sent > sb->ping_slowest)
		sb->ping_slowest = util_now() - sb->ping_sent;
	sb->pings++;
	sb->ping_sent = 0;
}

static double
sandbox_ping_max(struct sandbox *sb)
{
	return (sb->accel.accel == ACCEL_KVM ? SANDBOX_PING_MAX_KVM :
	    SANDBOX_PING_MAX_TCG);
}

static void
sandbox_live_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;
	double		 now = util_now();
	char		*msg;

	(void)loop;
	(void)revents;
	if (sb->state != SB_READY)
		return;
	/* qsup itself did not run (stopped, suspended): not the guest's fault. */
	if (now - sb->live_tick > 3 * SANDBOX_PING_EVERY && sb->ping_sent > 0)
		sb->ping_sent = now;
	sb->live_tick = now;
	if (sb->ping_sent > 0) {
		if (now - sb->ping_sent < sandbox_ping_max(sb))
			return;
		xasprintf(&msg, "the guest stopped answering for %.0f s",
		    now - sb->ping_sent);
		sandbox_fail(sb, msg);
		free(msg);
		return;
	}
	sb->ping_sent = now;
	agent_request(sb->ports[SANDBOX_PING_PORT], "GET", "/ping", NULL, 0,
	    sandbox_pong_cb, NULL, sb);
}

static void
sandbox_setup_cb(int status, const char *body, size_t len, void *arg)
{
	struct sandbox	*sb = arg;
	char		*msg;

	if (sb->state >= SB_READY || sb->relaunch)
		return;
	if (status == 200) {
		sb->t_ready = util_now();
		ev_timer_stop(sb->loop, &sb->deadline);
		sandbox_set_state(sb, SB_READY);
		sb->live_tick = sb->t_ready;
		ev_timer_set(&sb->live, SANDBOX_PING_EVERY, SANDBOX_PING_EVERY);
		ev_timer_start(sb->loop, &sb->live);
		log_debug("agent ready: %.*s", (int)len, body);
		if (sb->cbs.ready != NULL)
			sb->cbs.ready(sb, sb->cbs.arg);
		return;
	}
	if (status == AGENT_CLOSED)
		return;		/* QEMU is gone; sandbox_child_cb says why */
	if (status == AGENT_BROKEN) {
		sandbox_broken(sb, body, len);
		return;
	}
	if (sb->mode == SB_RESTORE && status != 503) {
		/* A template of another agent would answer so. */
		sandbox_restore_failed(sb, "the restored agent refused setup");
		return;
	}
	xasprintf(&msg, "guest setup failed (%d): %.*s%s", status, (int)len,
	    body, sandbox_share_named(sb, body));
	sandbox_fail(sb, msg);
	free(msg);
}

/* Give the guest its own configuration (template builds and restores). */
static void
sandbox_send_setup(struct sandbox *sb)
{
	struct buf	cfg = { 0 };

	sandbox_config(sb, &cfg);
	agent_request(sb->ports[0], "POST", "/setup", cfg.data, cfg.len,
	    sandbox_setup_cb, NULL, sb);
	explicit_bzero(cfg.data, cfg.len);
	buf_free(&cfg);
}

/*
 * Save the guest, booted to template state, through QMP: the state file's
 * descriptor is passed with getfd (migrating to exec: would make QEMU fork,
 * which -sandbox spawn=deny forbids), the VM is migrated into the file and
 * continued. The guest is idle meanwhile, so waiting here blocks nothing
 * that could move.
 */
static int
sandbox_save(struct sandbox *sb, char **cause)
{
	struct qmp	 q;
	double		 t0 = util_now();
	char		*cont_cause = NULL;
	int		 fd, rc = -1, stopped = 0;

	if ((fd = template_open_tmp(&sb->tpl, cause)) == -1)
		return (-1);
	if (qmp_open(&q, sb->qmp_fd, 5, cause) == -1)
		goto out;
	if (qmp_command(&q, "{\"execute\":\"migrate-set-capabilities\","
	    "\"arguments\":{\"capabilities\":[{\"capability\":\"events\","
	    "\"state\":true}]}}\n", -1, 5, NULL, cause) == -1 ||
	    qmp_command(&q, "{\"execute\":\"getfd\",\"arguments\":"
	    "{\"fdname\":\"snap\"}}\n", fd, 5, NULL, cause) == -1)
		goto out;
	/*
	 * Migrate while running: the stream then records a running VM, and
	 * a restore starts it by itself, with no QMP round trip. The idle
	 * guest dirties little, so the copy converges at once.
	 */
	stopped = 1;
	if (qmp_command(&q, "{\"execute\":\"migrate\",\"arguments\":"
	    "{\"uri\":\"fd:snap\"}}\n", -1, 5, NULL, cause) == -1 ||
	    qmp_wait_event(&q, "MIGRATION", "completed", "failed",
	    SANDBOX_SAVE_MAX, cause) == -1)
		goto out;
	if (template_commit(&sb->tpl, fd, cause) == -1)
		goto out;
	rc = 0;
out:
	/* Saved or not, the guest goes on: this run still needs it. */
	if (stopped && qmp_command(&q, "{\"execute\":\"cont\"}\n", -1, 5,
	    NULL, &cont_cause) == -1) {
		if (rc == 0)
			*cause = cont_cause;
		else
			free(cont_cause);
		rc = -1;
	}
	qmp_close(&q);
	close(fd);
	if (rc == -1)
		template_abandon(&sb->tpl);
	sb->save_seconds = util_now() - t0;
	return (rc);
}

static void
sandbox_ping_cb(int status, const char *body, size_t len, void *arg)
{
	struct sandbox	*sb = arg;
	char		*cause = NULL;

	if (sb->state != SB_BOOTING)
		return;
	if (sb->mode == SB_BUILD && status == 200) {
		sandbox_set_state(sb, SB_SAVING);
		if (sandbox_save(sb, &cause) == -1) {
			/* The run goes on without a template, or stops now. */
			if (util_stop_now)
				log_debug("template save given up: %s", cause);
			else
				log_warnx("cannot save a template: %s", cause);
			free(cause);
		} else
			log_debug("saved template %s in %.3f s", sb->tpl.key,
			    sb->save_seconds);
		template_unlock(&sb->tpl);
		sandbox_send_setup(sb);
		return;
	}
	sandbox_setup_cb(status, body, len, arg);
}

static int
sandbox_spawn(struct sandbox *sb, char **cause)
{
	sigset_t	 all, old;
	const char	*what;
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
		if (sb->qmp_guest_fd != -1)
			util_set_cloexec(sb->qmp_guest_fd, 0);
		if (sb->state_fd != -1)
			util_set_cloexec(sb->state_fd, 0);
		if (sb->net != NULL && net_qemu_fd(sb->net) != -1)
			util_set_cloexec(net_qemu_fd(sb->net), 0);
		/* What the guest may do to the host's files through 9p. */
		if (share_confine(sb->shares, sb->nshares,
		    sb->profile->virtfs_security_model, &what) == -1) {
			dprintf(STDERR_FILENO, "qsup: cannot confine QEMU "
			    "(%s): %s\n", what, strerror(errno));
			_exit(127);
		}
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
	sb->reaped = 0;
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
	if (sb->qmp_guest_fd != -1) {
		close(sb->qmp_guest_fd);
		sb->qmp_guest_fd = -1;
	}
	if (sb->state_fd != -1) {
		close(sb->state_fd);
		sb->state_fd = -1;
	}
	if (sb->net != NULL)
		net_qemu_started(sb->net);
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

static int
sandbox_socketpair(int *ours, int *theirs, char **cause)
{
	int	sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	*ours = sv[0];
	*theirs = sv[1];
	return (0);
}

/* Everything one QEMU process needs, then QEMU itself. */
static int
sandbox_launch(struct sandbox *sb, char **cause)
{
	char	*path;
	int	 fd, i;

	if (sb->mode == SB_COLD && sandbox_write_seed(sb, cause) == -1)
		return (-1);
	if (sandbox_socketpair(&fd, &sb->console_guest_fd, cause) == -1)
		return (-1);
	xasprintf(&path, "%s/console.log", sb->rundir);
	sb->console = serial_new(sb->loop, fd, path,
	    sb->profile->show_boot_console);
	free(path);
	serial_set_close_cb(sb->console, sandbox_console_closed_cb, sb);
	serial_set_mark_cb(sb->console, sandbox_console_mark_cb, sb);
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		if (sandbox_socketpair(&fd, &sb->port_guest_fd[i], cause) == -1)
			return (-1);
		sb->ports[i] = agent_conn_new(sb->loop, fd, sb->token);
	}
	if (sb->mode != SB_COLD && sandbox_socketpair(&sb->qmp_fd,
	    &sb->qmp_guest_fd, cause) == -1)
		return (-1);
	if (sb->net != NULL && net_qemu_fd(sb->net) == -1 &&
	    net_relink(sb->net, cause) == -1)
		return (-1);
	if (sb->mode == SB_RESTORE &&
	    (sb->state_fd = open(sb->tpl.state, O_RDONLY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", sb->tpl.state, strerror(errno));
		return (-1);
	}

	sandbox_build_argv(sb);
	sandbox_log_argv(sb);
	if (sb->t_spawn == 0)
		sb->t_spawn = util_now();
	if (sandbox_spawn(sb, cause) == -1)
		return (-1);

	ev_timer_stop(sb->loop, &sb->deadline);
	ev_timer_set(&sb->deadline, sb->mode == SB_RESTORE &&
	    SANDBOX_RESTORE_MAX < sandbox_start_timeout(sb) ?
	    SANDBOX_RESTORE_MAX : sandbox_start_timeout(sb), 0);
	ev_timer_start(sb->loop, &sb->deadline);

	/*
	 * The agent answers once it is up: readiness is its first reply.
	 * The request waits in the socket until the guest reads it.
	 */
	if (sb->mode == SB_RESTORE)
		sandbox_send_setup(sb);
	else
		agent_request(sb->ports[0], "GET", "/ping", NULL, 0,
		    sandbox_ping_cb, NULL, sb);
	return (0);
}

/* Share these host trees (the sandbox takes them over); before start. */
void
sandbox_set_shares(struct sandbox *sb, struct share *shares, size_t n)
{
	assert(sb->state == SB_NEW);
	sb->shares = shares;
	sb->nshares = n;
}

/* Undo sandbox_launch, once QEMU is reaped (or never ran). */
static void
sandbox_launch_free(struct sandbox *sb)
{
	char	**a;
	int	  i;

	if (sb->pid > 0 && !sb->reaped) {
		kill(sb->pid, SIGKILL);
		while (waitpid(sb->pid, NULL, 0) == -1 && errno == EINTR)
			;
		ev_child_stop(sb->loop, &sb->child);
		sb->reaped = 1;
	}
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		agent_conn_free(sb->ports[i]);
		sb->ports[i] = NULL;
		if (sb->port_guest_fd[i] != -1)
			close(sb->port_guest_fd[i]);
		sb->port_guest_fd[i] = -1;
	}
	serial_free(sb->console);
	sb->console = NULL;
	if (sb->console_guest_fd != -1)
		close(sb->console_guest_fd);
	sb->console_guest_fd = -1;
	if (sb->qmp_fd != -1)
		close(sb->qmp_fd);
	if (sb->qmp_guest_fd != -1)
		close(sb->qmp_guest_fd);
	sb->qmp_fd = sb->qmp_guest_fd = -1;
	if (sb->state_fd != -1)
		close(sb->state_fd);
	sb->state_fd = -1;
	if (sb->qemu_log_fd != -1) {
		ev_io_stop(sb->loop, &sb->qemu_log);
		close(sb->qemu_log_fd);
		sb->qemu_log_fd = -1;
	}
	if (sb->argv != NULL) {
		for (a = sb->argv; *a != NULL; a++)
			free(*a);
		free(sb->argv);
		sb->argv = NULL;
	}
}

/*
 * Are execution trees staged? The profile's virtfs: on, off, or auto: when
 * qsup runs in a container (the seed's three signs), where 9p over the
 * container's overlay file system makes the guest's mmap of shared ELF
 * files fail.
 */
static int
sandbox_stage_exec(struct sandbox *sb)
{
	switch (sb->profile->virtfs) {
	case PROFILE_VIRTFS_ON:
		return (1);
	case PROFILE_VIRTFS_OFF:
		return (0);
	case PROFILE_VIRTFS_AUTO:
		break;
	}
	if (!staging_in_container())
		return (0);
	log_debug("staging execution trees: qsup runs in a container");
	return (1);
}

/*
 * The guest's network as the profile says: no card for "none"; else
 * qsup's own user-mode stack, its forwards on the host's loopback (or the
 * address a port names), each on a free port unless one is fixed.
 */
static int
sandbox_net(struct sandbox *sb, char **cause)
{
	const struct profile	*p = sb->profile;
	const struct net_port *pt;
	const struct profile_tcp_map *tm;
	struct net_config	 cfg;
	size_t			 i;
	int			 bound;
	char			*why = NULL, *addr;

	if (p->network == NET_MODE_NONE)
		return (0);
	memset(&cfg, 0, sizeof cfg);
	cfg.mode = p->network;
	cfg.rules = p->network_allow;
	cfg.nrules = p->nnetwork_allow;
	cfg.dir = sb->rundir;
	if ((sb->net = net_new(sb->loop, &cfg, &why)) == NULL) {
		xasprintf(cause, "network: %s", why);
		free(why);
		return (-1);
	}
	if (p->network == NET_MODE_OPEN)
		log_warnx("network = \"open\": the guest reaches everything "
		    "this host reaches, this host's own 127.0.0.1 services "
		    "included (as %s)", NET_HOST_ADDR);
	for (i = 0; i < p->nports; i++) {
		pt = &p->ports[i];
		if (net_add_hostfwd(sb->net, pt->address, pt->host, pt->guest,
		    &bound, &why) == -1) {
			if (pt->from_rule > 0)
				xasprintf(cause, "network_rules[%d]: %s",
				    pt->from_rule, why);
			else
				xasprintf(cause, "ports[%zu]: %s", i + 1, why);
			free(why);
			return (-1);
		}
		log_debug("port %s:%d on the host leads to port %u in the "
		    "guest", pt->address != NULL ? pt->address : "127.0.0.1",
		    bound, pt->guest);
	}
	for (i = 0; i < p->nnetwork_tcp; i++) {
		tm = &p->network_tcp[i];
		if (net_add_tcp_map(sb->net, tm->name, tm->guest_port,
		    tm->host, tm->port, &addr, &why) == -1) {
			xasprintf(cause, "network_tcp[%zu]: %s", i + 1, why);
			free(why);
			return (-1);
		}
		log_debug("%s%s%s:%u in the guest leads to %s:%u on the host",
		    tm->name != NULL ? tm->name : "", tm->name != NULL ?
		    " = " : "", addr, tm->guest_port, tm->host, tm->port);
		free(addr);
	}
	return (0);
}

/*
 * Warm start: restore the template of this guest's shape if there is one;
 * else build it, unless another qsup is building it right now.
 */
static void
sandbox_choose_mode(struct sandbox *sb)
{
	int	i;

	sb->mode = SB_COLD;
	if (!sb->profile->warm_start)
		return;
	/* The key comes from the template command line, fds aside. */
	sb->mode = SB_BUILD;
	sb->console_guest_fd = sb->qmp_guest_fd = 0;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		sb->port_guest_fd[i] = 0;
	sandbox_build_argv(sb);
	sb->console_guest_fd = sb->qmp_guest_fd = -1;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		sb->port_guest_fd[i] = -1;
	if (template_init(&sb->tpl, sb->argv, sb->guest.kernel,
	    sb->guest.initramfs) == -1) {
		log_debug("no cache directory: no warm start");
		sb->mode = SB_COLD;
	} else {
		sb->have_tpl = 1;
		if (template_exists(&sb->tpl))
			sb->mode = SB_RESTORE;
		else if (template_lock(&sb->tpl) == 0)
			sb->mode = SB_BUILD;
		else if (template_exists(&sb->tpl))
			sb->mode = SB_RESTORE;
		else {
			log_debug("template %s is being built by another "
			    "qsup; booting cold", sb->tpl.key);
			sb->mode = SB_COLD;
		}
		log_debug("template %s: %s", sb->tpl.key,
		    sb->mode == SB_RESTORE ? "restoring it" :
		    sb->mode == SB_BUILD ? "building it" : "not used");
	}
	sandbox_launch_free(sb);
}

int
sandbox_start(struct sandbox *sb, const struct accel_choice *accel,
    char **cause)
{
	char	*base = NULL, *path;
	size_t	 i;
	int	 rc, stage;

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
	xasprintf(&path, "%s/pid", sb->rundir);
	xasprintf(&base, "%ld\n", (long)getpid());
	rc = util_write_file(path, base);
	free(base);
	free(path);
	if (rc == -1) {
		xasprintf(cause, "%s: %s", sb->rundir, strerror(errno));
		return (-1);
	}
	if (share_prepare(sb->shares, sb->nshares, cause) == -1 ||
	    share_check_model(sb->shares, sb->nshares,
	    sb->profile->virtfs_security_model, cause) == -1)
		return (-1);
	stage = sandbox_stage_exec(sb);
	for (i = 0; i < sb->nshares; i++) {
		xasprintf(&path, "%s/%s", sb->rundir, sb->shares[i].tag);
		sb->shares[i].use_cache = sb->profile->virtfs_cache;
		rc = share_stage(&sb->shares[i], path, stage, cause);
		free(path);
		if (rc == -1)
			return (-1);
	}
	if (sandbox_net(sb, cause) == -1)
		return (-1);
	sb->token = token_hex(32);
	ev_init(&sb->deadline, sandbox_deadline_cb);
	sb->deadline.data = sb;
	ev_init(&sb->kill_timer, sandbox_kill_cb);
	sb->kill_timer.data = sb;
	ev_init(&sb->live, sandbox_live_cb);
	sb->live.data = sb;

	sandbox_choose_mode(sb);
	if (sandbox_launch(sb, cause) == -1)
		return (-1);
	sandbox_set_state(sb, SB_BOOTING);
	return (0);
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
	ev_timer_stop(sb->loop, &sb->live);
	if (sb->pings > 0)
		log_debug("liveness: %u pings answered, the slowest in %.3f s",
		    sb->pings, sb->ping_slowest);
	sb->relaunch = 0;
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

/* How this sandbox started: "cold", "template-build" or "warm". */
const char *
sandbox_start_kind(struct sandbox *sb)
{
	switch (sb->mode) {
	case SB_COLD:
		return ("cold");
	case SB_BUILD:
		return ("template-build");
	case SB_RESTORE:
		return ("warm");
	}
	return ("?");
}

/* Why a template was given up, or NULL. */
const char *
sandbox_fallback(struct sandbox *sb)
{
	return (sb->fallback);
}

double
sandbox_save_seconds(struct sandbox *sb)
{
	return (sb->save_seconds);
}

/* The network, for its figures; NULL without a card. */
struct net *
sandbox_net_of(struct sandbox *sb)
{
	return (sb->net);
}

/* QEMU's resident memory now, or -1. */
long
sandbox_qemu_rss_kb(struct sandbox *sb)
{
	char	 path[64], *text, *p;
	long	 kb = -1;

	if (sb->pid <= 0 || sb->reaped)
		return (-1);
	snprintf(path, sizeof path, "/proc/%ld/status", (long)sb->pid);
	if ((text = util_read_file(path, NULL, 65536)) == NULL)
		return (-1);
	if ((p = strstr(text, "\nVmRSS:")) != NULL)
		kb = strtol(p + 7, NULL, 10);
	free(text);
	return (kb);
}

/* The console's last OOM-killer line, or NULL; the caller frees it. */
char *
sandbox_console_oom(struct sandbox *sb)
{
	if (sb->console == NULL)
		return (NULL);
	return (serial_find(sb->console, "Out of memory"));
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
	size_t	i;

	if (sb == NULL)
		return;
	/* Never leave QEMU behind, even on an error path. */
	sandbox_launch_free(sb);
	ev_timer_stop(sb->loop, &sb->deadline);
	ev_timer_stop(sb->loop, &sb->kill_timer);
	ev_timer_stop(sb->loop, &sb->live);
	buf_free(&sb->qemu_log_buf);
	net_free(sb->net);
	/* Staged copies may hold directories not even we can write to. */
	for (i = 0; i < sb->nshares; i++) {
		if (sb->shares[i].staged && sb->shares[i].cache_fd <= 0)
			staging_remove(sb->shares[i].host);
	}
	if (sb->rundir != NULL && util_rm_rf(sb->rundir) == -1)
		log_warn("cannot remove %s", sb->rundir);
	free(sb->rundir);
	if (sb->token != NULL) {
		explicit_bzero(sb->token, strlen(sb->token));
		free(sb->token);
	}
	if (sb->have_tpl)
		template_free(&sb->tpl);
	for (i = 0; i < sb->nshares; i++)
		share_free(&sb->shares[i]);
	free(sb->shares);
	guest_free(&sb->guest);
	free(sb->accel.why);
	free(sb->fallback);
	free(sb);
}
