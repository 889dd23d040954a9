/*
 * PID-1 setup in the default microVM guest: mount the kernel's
 * filesystems, load modules, find and apply the seed, and power off
 * cleanly. Its state is the struct init_state main owns; it never calls
 * into the service (agent.c's loop, port.c, exec.c), which reads that
 * state and, for POST /setup, calls init_setup. Nothing here runs unless
 * the agent is PID 1 (or --service), except init_mounts in test mode
 * when asked.
 */
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <net/if.h>
#include <net/if_arp.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define INIT_MODULES		"/etc/qsup-modules"
#define INIT_MODULES_DISPLAY	"/etc/qsup-modules-display"
#define INIT_SEED_WAIT_MS	2000
#define INIT_TERM_GRACE_MS	500
/* From <linux/random.h>, which musl does not ship. */
#define INIT_RNDADDENTROPY		0x40085203
#define INIT_RNDRESEEDCRNG		0x5207

static void
init_sleep_ms(int ms)
{
	struct timespec	ts = { 0, ms * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
init_mount(struct init_state *st, const char *src, const char *dst,
    const char *type, unsigned long flags, const char *data)
{
	if (mkdir(dst, 0755) == -1 && errno != EEXIST)
		log_warn("mkdir %s", dst);
	if (mount(src, dst, type, flags, data) == -1 && errno != EBUSY) {
		log_warn("mount %s on %s", type, dst);
		util_set_error(&st->error, "mount %s on %s: %s", type, dst,
		    strerror(errno));
	}
}






/*
 * Descriptors 0-2 must be open before anything else is, or a pipe or the
 * signalfd would land on them. The kernel opens /dev/console for PID 1
 * only if the image has one; if not, devtmpfs has it.
 */
void
init_console(struct init_state *st)
{
	int	fd, i, missing = 0;

	for (i = 0; i <= 2; i++)
		missing |= fcntl(i, F_GETFD) == -1;
	if (!missing)
		return;
	(void)mkdir("/dev", 0755);
	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") == 0)
		st->dev_mounted = 1;
	if ((fd = open("/dev/console", O_RDWR|O_NOCTTY)) == -1)
		fd = open("/dev/null", O_RDWR);
	if (fd == -1)
		return;
	for (i = 0; i <= 2; i++) {
		if (fcntl(i, F_GETFD) == -1)
			dup2(fd, i);
	}
	if (fd > 2)
		close(fd);
}

/* Filesystems, console, environment: what everything else needs. */
void
init_early(struct init_state *st)
{
	init_mount(st, "proc", "/proc", "proc",
	    MS_NOSUID|MS_NODEV|MS_NOEXEC, NULL);
	init_mount(st, "sysfs", "/sys", "sysfs",
	    MS_NOSUID|MS_NODEV|MS_NOEXEC, NULL);
	if (!st->dev_mounted)
		init_mount(st, "devtmpfs", "/dev", "devtmpfs", MS_NOSUID,
		    "mode=0755");
	init_mount(st, "devpts", "/dev/pts", "devpts", MS_NOSUID|MS_NOEXEC,
	    "mode=0620,ptmxmode=0666");
	init_mount(st, "tmpfs", "/dev/shm", "tmpfs", MS_NOSUID|MS_NODEV,
	    "mode=1777");
	init_mount(st, "tmpfs", "/tmp", "tmpfs", MS_NOSUID|MS_NODEV,
	    "mode=1777");
	init_mount(st, "tmpfs", "/run", "tmpfs", MS_NOSUID|MS_NODEV,
	    "mode=0755");
	(void)symlink("/proc/self/fd", "/dev/fd");
	(void)symlink("/proc/self/fd/0", "/dev/stdin");
	(void)symlink("/proc/self/fd/1", "/dev/stdout");
	(void)symlink("/proc/self/fd/2", "/dev/stderr");
	log_warnx("starting");

	setenv("PATH", AGENT_PATH, 1);
	setenv("HOME", "/root", 1);
	umask(022);
	/* Ctrl-Alt-Del becomes SIGINT to us: a clean poweroff. */
	(void)reboot(RB_DISABLE_CAD);
	netcfg_loopback();
}

/*
 * --service: in an image booted with its own kernel, started by
 * cloud-init once the image's init has mounted everything. The image's
 * system stays as it is; what qsup's seed says is applied (clock, random
 * seed, hostname, network card, shares, firewall); the ports are the
 * service's to open.
 */
void
init_service(struct init_state *st)
{
	int	probe, template;

	setenv("HOME", "/root", 1);
	umask(022);
	(void)init_cmdline(st, &probe, &template);
	netcfg_up(st);
	if (init_seed(st) == 0 && !st->template) {
		root_service(st);
		init_apply_seed(st);
	}
}

/* The qsup.* words of the kernel command line. */
int
init_cmdline(struct init_state *st, int *probe, int *template)
{
	char		*text, *word, *save = NULL;
	size_t		 len;
	long		 v;
	char		*end;
	int		 nports = QSUP_PORT_COUNT;

	*probe = 0;
	*template = 0;
	if (util_read_file("/proc/cmdline", &text, &len, 65536) == -1) {
		log_warn("/proc/cmdline");
		return (-1);
	}
	for (word = strtok_r(text, " \t\n", &save); word != NULL;
	    word = strtok_r(NULL, " \t\n", &save)) {
		if (strcmp(word, "qsup.probe=1") == 0)
			*probe = 1;
		else if (strcmp(word, "qsup.template=1") == 0)
			*template = 1;
		else if (strcmp(word, "qsup.setup=1") == 0) {
			/* Waits for /setup as a template's guest does. */
			*template = 1;
			st->setup_boot = 1;
		}
		else if (strcmp(word, "qsup.root=1") == 0)
			st->root_wanted = 1;
		else if (strcmp(word, "qsup.display=1") == 0)
			st->display = 1;
		else if (strncmp(word, "qsup.cow=", 9) == 0)
			snprintf(st->cow_boot, sizeof st->cow_boot, "%s",
			    word + 9);
		else if (strncmp(word, "qsup.ports=", 11) == 0) {
			errno = 0;
			v = strtol(word + 11, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 || v > 64)
				log_warnx("ignoring bad %s", word);
			else {
				nports = (int)v;
				st->ports_told = 1;
			}
		}
	}
	free(text);
	st->nports = nports;
	return (0);
}

/*
 * The boot modules, and with qsup.root=1 those a disk image's root needs
 * (ext4): before any template is taken, so a restored guest has them.
 */
void
init_modules(struct init_state *st)
{
	long long	t0;

	(void)module_load(st->kernel, INIT_MODULES);
	(void)module_net(st);
	/* A template's restores may share; a booted guest loads them
	 * before its first share. */
	if (st->template && !st->setup_boot)
		(void)module_share(st);
	if (module_has_disk())
		(void)module_disk(st);
	t0 = util_ms(CLOCK_MONOTONIC);
	/* Only a sandbox with a screen pays for DRM (before any template). */
	if (st->display && module_load(st->kernel, INIT_MODULES_DISPLAY) == 0)
		log_warnx("display modules loaded in %lld ms",
		    util_ms(CLOCK_MONOTONIC) - t0);
	if ((st->root_wanted || st->cow_boot[0] != '\0') &&
	    module_root(st) == 0)
		log_warnx("root modules loaded in %lld ms",
		    util_ms(CLOCK_MONOTONIC) - t0);
	if (st->root_wanted)
		root_probe(st);
	if (st->cow_boot[0] != '\0')
		cow_probe(st);
}


/* Check one /dev node for the seed; 1 and the config applied if it is. */
static int
init_try_seed(struct init_state *st, const char *dev)
{
	char	*text = NULL, *cause = NULL;
	size_t	 len;
	int	 fd, r;

	if ((fd = open(dev, O_RDONLY|O_CLOEXEC)) == -1)
		return (0);
	if ((r = iso_is_seed(fd)) != 1) {
		close(fd);
		return (0);
	}
	if (iso_read_config(fd, &text, &len, &cause) == -1 ||
	    config_parse(&st->cfg, text, len, &cause) == -1) {
		util_set_error(&st->error, "%s: %s", dev, cause);
		free(cause);
		st->seed_ok = 0;
	} else if (st->cfg.template && st->service) {
		/* An image's seed, booting it to template state. */
		st->template = 1;
		st->seed_ok = 1;
	} else if (st->cfg.token == NULL) {
		util_set_error(&st->error, "%s: %s has no token", dev,
		    QSUP_SEED_CONFIG);
		st->seed_ok = 0;
	} else
		st->seed_ok = 1;
	free(text);
	close(fd);
	return (1);
}

/*
 * Find the seed among the virtio disks; 0 when it was found and parsed. A disk appears in /sys/block when
 * virtio_blk probes it, but its /dev node comes from devtmpfs a moment
 * later: poll for both, for a bounded time.
 */
int
init_seed(struct init_state *st)
{
	long long	 deadline;
	DIR		*d;
	struct dirent	*de;
	char		 dev[300];
	int		 found = 0;

	deadline = util_ms(CLOCK_MONOTONIC) + INIT_SEED_WAIT_MS;
	for (;;) {
		if ((d = opendir("/sys/block")) != NULL) {
			while (!found && (de = readdir(d)) != NULL) {
				if (strncmp(de->d_name, "vd", 2) != 0)
					continue;
				snprintf(dev, sizeof dev, "/dev/%s",
				    de->d_name);
				found = init_try_seed(st, dev);
			}
			closedir(d);
		}
		if (found || util_ms(CLOCK_MONOTONIC) >= deadline)
			break;
		init_sleep_ms(10);
	}
	if (!found)
		util_set_error(&st->error, "no seed disk");
	return (found && st->seed_ok ? 0 : -1);
}

/*
 * Mount the seed's 9p shares, then its bind mounts in order (their sources
 * lie in the shares: the sparse library closure over the library
 * directories a share shows); the first failure is the setup error. A bind
 * inherits its source's flags but read-only, which takes a remount.
 */
void
init_mounts(struct init_state *st)
{
	struct agent_mount	*m;
	struct agent_bind	*b;
	unsigned long		 flags;
	size_t			 i;

	if (cow_setup(st) == -1)
		return;
	for (i = 0; i < st->cfg.nmounts; i++) {
		m = &st->cfg.mounts[i];
		flags = MS_NODEV | (m->ro ? MS_RDONLY : 0);
		if (m->cow) {
			if (cow_mount(st, m) == -1)
				return;
		} else if (util_mkdir_p(m->path, 0755) == -1 ||
		    mount(m->tag, m->path, "9p", flags, INIT_9P_OPTIONS) ==
		    -1) {
			util_set_error(&st->error, "mount %s on %s: %s", m->tag,
			    m->path, strerror(errno));
			return;
		}
	}
	cow_hide(st);
	for (i = 0; i < st->cfg.nbinds; i++) {
		b = &st->cfg.binds[i];
		flags = MS_BIND | MS_REMOUNT | MS_NODEV |
		    (b->ro ? MS_RDONLY : 0);
		if (util_mkdir_p(b->dst, 0755) == -1 ||
		    mount(b->src, b->dst, NULL, MS_BIND, NULL) == -1 ||
		    mount(NULL, b->dst, NULL, flags, NULL) == -1) {
			util_set_error(&st->error, "bind %s on %s: %s", b->src,
			    b->dst, strerror(errno));
			return;
		}
	}
}

/* The first of names found in the directories of path, or NULL. */
static char *
init_find_program(const char *path, const char *const *names)
{
	const char	*dir, *end;
	char		*candidate;
	size_t		 i;

	for (i = 0; names[i] != NULL; i++) {
		for (dir = path; *dir != '\0'; dir = *end != '\0' ? end + 1 :
		    end) {
			if ((end = strchr(dir, ':')) == NULL)
				end = dir + strlen(dir);
			if (end == dir)
				continue;
			xasprintf(&candidate, "%.*s/%s", (int)(end - dir), dir,
			    names[i]);
			if (access(candidate, X_OK) == 0)
				return (candidate);
			free(candidate);
		}
	}
	return (NULL);
}

/*
 * The firewall qsup asked for (guest_firewall in the profile): its rules,
 * iptables-restore's input, fed to the first of the seed's tools found on
 * the command PATH (iptables-nft-restore and iptables-legacy-restore
 * before iptables-restore, which goes through /etc/alternatives). Defence
 * in depth only: the policy is enforced on the host whatever happens here,
 * but asked for and not loaded is a setup error, so the sandbox does not
 * start.
 */
static void
init_firewall(struct init_state *st)
{
	static const char *const names[] = { "iptables-nft-restore",
	    "iptables-legacy-restore", "iptables-restore", NULL };
	const char	*path = AGENT_PATH;
	char		*prog, out[512];
	size_t		 i, len, off = 0;
	ssize_t		 n;
	pid_t		 pid;
	int		 in[2], err[2], status;

	if (st->cfg.firewall == NULL)
		return;
	for (i = 0; i < st->cfg.nenv; i++) {
		if (strncmp(st->cfg.env[i], "PATH=", 5) == 0)
			path = st->cfg.env[i] + 5;
	}
	if ((prog = init_find_program(path, names)) == NULL) {
		util_set_error(&st->error, "guest firewall: the guest has no "
		    "iptables-nft-restore, iptables-legacy-restore or "
		    "iptables-restore on its PATH (%s)", path);
		return;
	}
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1) {
		util_set_error(&st->error, "guest firewall: pipe: %s",
		    strerror(errno));
		free(prog);
		return;
	}
	if ((pid = fork()) == 0) {
		dup2(in[0], STDIN_FILENO);
		dup2(err[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(err[1]);
	if (pid != -1) {
		/* The rules are small: the pipe takes them whole. */
		len = strlen(st->cfg.firewall);
		while (off < len && (n = write(in[1], st->cfg.firewall + off,
		    len - off)) > 0)
			off += (size_t)n;
	}
	close(in[1]);
	off = 0;
	while (off < sizeof out - 1 &&
	    (n = read(err[0], out + off, sizeof out - 1 - off)) > 0)
		off += (size_t)n;
	out[off] = '\0';
	close(err[0]);
	if (pid == -1)
		util_set_error(&st->error, "guest firewall: fork: %s",
		    strerror(errno));
	else if (waitpid(pid, &status, 0) == -1 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		util_set_error(&st->error, "guest firewall: %s failed "
		    "(status %d): %s", prog, WIFEXITED(status) ?
		    WEXITSTATUS(status) : -1, out);
	else
		log_warnx("guest firewall loaded by %s", prog);
	free(prog);
}

/*
 * The clock and fresh entropy of cfg, where it has them: a seed's, a
 * /setup's or a /refresh's. The pool takes at most 512 bytes at once;
 * more would add nothing. -1 if a call failed (logged).
 */
int
init_apply_fresh(struct agent_config *cfg)
{
	struct {
		int		entropy_count;
		int		buf_size;
		unsigned char	buf[512];
	} pool;
	size_t	n;
	int	fd, rc = 0;

	if (cfg->has_time && clock_settime(CLOCK_REALTIME, &cfg->time) == -1) {
		log_warn("clock_settime");
		rc = -1;
	}
	if (cfg->entropy_len > 0) {
		n = cfg->entropy_len;
		if (n > sizeof pool.buf)
			n = sizeof pool.buf;
		pool.entropy_count = (int)n * 8;
		pool.buf_size = (int)n;
		memcpy(pool.buf, cfg->entropy, n);
		if ((fd = open("/dev/urandom", O_WRONLY|O_CLOEXEC)) == -1 ||
		    ioctl(fd, INIT_RNDADDENTROPY, &pool) == -1) {
			log_warn("adding seed entropy");
			rc = -1;
		}
		/*
		 * Reseed the CRNG now rather than on its own schedule: a guest
		 * restored from a template shares its pool with every clone.
		 */
		else if (ioctl(fd, INIT_RNDRESEEDCRNG) == -1) {
			log_warn("reseeding the CRNG");
			rc = -1;
		}
		if (fd != -1)
			close(fd);
		explicit_bzero(&pool, sizeof pool);
		explicit_bzero(cfg->entropy, cfg->entropy_len);
	}
	return (rc);
}

/*
 * The guest's network card gets address mac: the first interface that is
 * not a loopback (a guest of qsup's has one card at most). The driver
 * passes it on to the device (virtio-net's own copy is in a restored
 * device state); the kernel flushes the card's neighbours with it.
 */
int
init_set_mac(const unsigned char mac[6])
{
	struct if_nameindex	*ifs, *i;
	struct ifreq		 ifr;
	int			 s, rc = -1;

	if ((s = socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, 0)) == -1) {
		log_warn("socket");
		return (-1);
	}
	if ((ifs = if_nameindex()) == NULL) {
		log_warn("if_nameindex");
		close(s);
		return (-1);
	}
	for (i = ifs; i->if_index != 0 && i->if_name != NULL; i++) {
		memset(&ifr, 0, sizeof ifr);
		strncpy(ifr.ifr_name, i->if_name, IFNAMSIZ - 1);
		if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1 ||
		    (ifr.ifr_flags & IFF_LOOPBACK))
			continue;
		ifr.ifr_hwaddr.sa_family = ARPHRD_ETHER;
		memcpy(ifr.ifr_hwaddr.sa_data, mac, 6);
		if ((rc = ioctl(s, SIOCSIFHWADDR, &ifr)) == -1)
			log_warn("%s: its address", i->if_name);
		break;
	}
	if (i->if_index == 0 || i->if_name == NULL)
		log_warnx("no network card for an address");
	if_freenameindex(ifs);
	close(s);
	return (rc);
}

/*
 * Clock, entropy, host name and shares from the seed. The pool takes at
 * most 512 bytes at once; more would add nothing.
 */
void
init_apply_seed(struct init_state *st)
{
	(void)init_apply_fresh(&st->cfg);
	if (st->cfg.hostname != NULL && sethostname(st->cfg.hostname,
	    strlen(st->cfg.hostname)) == -1)
		log_warn("sethostname %s", st->cfg.hostname);
	/* The shares' modules from the initramfs, before an image's root
	 * becomes the agent's (its /lib/modules is not ours). */
	if (st->cfg.nmounts > 0)
		(void)module_share(st);
	/* The image's root first: the shares are mounted inside it. */
	root_setup(st);
	if (st->error == NULL)
		init_mounts(st);
	if (st->error == NULL)
		init_firewall(st);
}

/*
 * POST /setup: a guest restored from a template gets its own
 * configuration, in the seed's qsup-config format, and applies it as a
 * cold boot applies the seed: clock, entropy, hostname, shares. -1 and a
 * cause when it is refused (not parsed, or no token); a failure applying
 * it is the setup error instead, as at boot.
 */
int
init_setup(struct init_state *st, const char *text, size_t len,
    char **cause)
{
	if (config_parse(&st->cfg, text, len, cause) == -1)
		return (-1);
	if (st->cfg.token == NULL) {
		config_free(&st->cfg);
		*cause = xstrdup("setup without a token");
		return (-1);
	}
	st->template = 0;
	if (st->service)
		root_service(st);
	if (st->pid1 || st->service) {
		init_apply_seed(st);
		log_warnx("configured by the host%s", st->error != NULL ?
		    " (with errors)" : "");
	}
	return (0);
}

/* Reap whatever has exited, for up to ms; 1 when no child is left. */
static int
init_reap_for(int ms)
{
	long long	deadline = util_ms(CLOCK_MONOTONIC) + ms;
	pid_t		pid;

	for (;;) {
		while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
			;
		if (pid == -1 && errno == ECHILD)
			return (1);
		if (util_ms(CLOCK_MONOTONIC) >= deadline)
			return (0);
		init_sleep_ms(10);
	}
}

/* "\NNN" as /proc/mounts writes it. */
static int
init_octal(const char *p)
{
	return (p[0] >= '0' && p[0] <= '3' && p[1] >= '0' && p[1] <= '7' &&
	    p[2] >= '0' && p[2] <= '7');
}

/* Unmount everything but the root, innermost first. */
static void
init_umount_all(void)
{
	char	*text, *line, *save = NULL, **points = NULL, *p, *q;
	size_t	 len, n = 0, i;

	if (util_read_file("/proc/mounts", &text, &len, 1024 * 1024) == -1)
		return;
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if ((p = strchr(line, ' ')) == NULL)
			continue;
		p++;
		p[strcspn(p, " ")] = '\0';
		/* /proc/mounts escapes space, tab, newline, backslash. */
		for (q = p, i = 0; p[i] != '\0'; q++) {
			if (p[i] == '\\' && init_octal(p + i + 1)) {
				*q = (char)((p[i + 1] - '0') << 6 |
				    (p[i + 2] - '0') << 3 | (p[i + 3] - '0'));
				i += 4;
			} else
				*q = p[i++];
		}
		*q = '\0';
		if (strcmp(p, "/") == 0)
			continue;
		points = xreallocarray(points, n + 1, sizeof *points);
		points[n++] = p;
	}
	for (i = n; i > 0; i--) {
		if (umount2(points[i - 1], 0) == -1)
			(void)umount2(points[i - 1], MNT_DETACH);
	}
	free(points);
	free(text);
}

/*
 * Stop everything and power off. Never returns; PID 1 must not exit.
 * kill signals the service's own commands (its execs): setup knows
 * nothing of them.
 */
void
init_poweroff(struct init_state *st, void (*kill_cb)(int, void *), void *arg)
{
	if (st->service) {
		/*
		 * The image's own shutdown would take its time, and the disk
		 * is a throwaway overlay: our commands go, then the guest,
		 * synced. Only our own children are signalled: the rest is
		 * the image's init's, and poweroff stops it all.
		 */
		kill_cb(SIGTERM, arg);
		(void)init_reap_for(INIT_TERM_GRACE_MS);
		kill_cb(SIGKILL, arg);
		sync();
		reboot(RB_POWER_OFF);
		log_warn("poweroff");
		_exit(1);
	}
	if (!st->pid1)
		_exit(0);
	kill(-1, SIGTERM);
	if (!init_reap_for(INIT_TERM_GRACE_MS)) {
		kill(-1, SIGKILL);
		init_reap_for(INIT_TERM_GRACE_MS);
	}
	sync();
	init_umount_all();
	/* A disk image's root cannot be unmounted: leave it clean, journal and all. */
	if (st->root_device != NULL &&
	    mount(NULL, "/", NULL, MS_REMOUNT|MS_RDONLY, NULL) == -1)
		log_warn("remounting / read-only");
	sync();
	reboot(RB_POWER_OFF);
	log_warn("poweroff");
	reboot(RB_HALT_SYSTEM);
	for (;;)
		pause();
}

/* qsup's KVM probe only needs to see the guest reach us. */
void
init_probe(void)
{
	static const char	mark[] = QSUP_PROBE_MARK "\n";

	(void)!write(STDOUT_FILENO, mark, sizeof mark - 1);
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}
