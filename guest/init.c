/*
 * PID 1 duties in the default microVM guest: mount the kernel's
 * filesystems, load modules, find and apply the seed, open the agent
 * ports, and power off cleanly. Nothing here runs unless the agent is
 * PID 1, except init_mounts in test mode when asked.
 */
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define INIT_MODULES		"/etc/qsup-modules"
#define INIT_MODULES_ROOT	"/etc/qsup-modules-root"
#define INIT_SEED_WAIT_MS	2000
#define INIT_PORTS_WAIT_MS	2000
#define INIT_PORTS_SETTLE_MS	100	/* no new port this long: done */
#define INIT_TERM_GRACE_MS	500
/*
 * 512000 is the most the virtio transport takes. cache=mmap rather than
 * none: running programs from a share took half the time (50 execs of
 * busybox: 1.3 s against 2.5-3.0 s under TCG), MAP_SHARED writable maps
 * work, and host-side rewrites, appends and replaced files were seen at
 * once, as with none. loose was faster still but may serve stale data.
 */
#define INIT_9P_OPTIONS \
	"trans=virtio,version=9p2000.L,msize=512000,cache=mmap"

/*
 * From <linux/random.h>, <linux/module.h> and <linux/netlink.h>, which
 * musl does not ship.
 */
#define INIT_RNDADDENTROPY		0x40085203
#define INIT_RNDRESEEDCRNG		0x5207
#define INIT_MODULE_INIT_COMPRESSED	4
#define INIT_NETLINK_KOBJECT_UEVENT	15
struct init_sockaddr_nl {
	sa_family_t	nl_family;
	unsigned short	nl_pad;
	uint32_t	nl_pid;
	uint32_t	nl_groups;
};

static int	init_ports_wanted = QSUP_PORT_COUNT;
static int	init_ports_told;	/* qsup.ports= was given */
static int	init_uevent = -1;	/* while ports are missing */
static int	init_seed_ok;
static int	init_dev_mounted;
static int	init_root_wanted;	/* qsup.root=1: a disk image */
static int	init_root_loaded;

static void
init_sleep_ms(int ms)
{
	struct timespec	ts = { 0, ms * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
init_mount(const char *src, const char *dst, const char *type,
    unsigned long flags, const char *data)
{
	if (mkdir(dst, 0755) == -1 && errno != EEXIST)
		log_warn("mkdir %s", dst);
	if (mount(src, dst, type, flags, data) == -1 && errno != EBUSY) {
		log_warn("mount %s on %s", type, dst);
		agent_set_error("mount %s on %s: %s", type, dst,
		    strerror(errno));
	}
}

/* Bring up the loopback interface: many programs expect 127.0.0.1. */
static void
init_loopback(void)
{
	struct ifreq	ifr;
	int		s;

	if ((s = socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, 0)) == -1)
		return;
	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, "lo", sizeof ifr.ifr_name - 1);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		if (ioctl(s, SIOCSIFFLAGS, &ifr) == -1)
			log_warn("lo up");
	}
	close(s);
}

/* One address ioctl on the card dev: SIOCSIFADDR, SIOCSIFNETMASK. */
static int
init_ifaddr(int s, const char *dev, unsigned long req, const char *addr)
{
	struct ifreq		 ifr;
	struct sockaddr_in	*sin;

	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, dev, sizeof ifr.ifr_name - 1);
	sin = (struct sockaddr_in *)(void *)&ifr.ifr_addr;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, addr, &sin->sin_addr);
	return (ioctl(s, req, &ifr));
}

/*
 * The network card: eth0 in qsup's guest; in an image, whose udev may
 * have renamed it, the first interface that is a device (lo is not).
 */
static int
init_netdev(char *name, size_t size)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[300];
	int		 found = 0;

	if (access("/sys/class/net/eth0", F_OK) == 0) {
		snprintf(name, size, "eth0");
		return (1);
	}
	if (!agent_service || (d = opendir("/sys/class/net")) == NULL)
		return (0);
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strlen(de->d_name) >= size)
			continue;
		snprintf(path, sizeof path, "/sys/class/net/%s/device",
		    de->d_name);
		if (access(path, F_OK) == 0) {
			memcpy(name, de->d_name, strlen(de->d_name) + 1);
			found = 1;
		}
	}
	closedir(d);
	return (found);
}

/*
 * The network card, when qsup gave the guest one: the fixed addresses of
 * qsup's user-mode network (core/net.c), IPv4 only. What the guest may
 * reach is decided on the host, whatever is done here; this only makes
 * the card usable. No card: nothing to do, and nothing is an error.
 */
void
init_network(void)
{
	struct rtentry		 rt;
	struct ifreq		 ifr;
	struct sockaddr_in	*sin;
	char			 dev[IFNAMSIZ];
	int			 s, fd;

	if (!init_netdev(dev, sizeof dev))
		return;
	/* No IPv6: the host's stack carries none. */
	if ((fd = open("/proc/sys/net/ipv6/conf/all/disable_ipv6",
	    O_WRONLY|O_CLOEXEC)) != -1) {
		(void)write(fd, "1\n", 2);
		close(fd);
	}
	if ((s = socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, 0)) == -1) {
		agent_set_error("%s: socket: %s", dev, strerror(errno));
		return;
	}
	if (init_ifaddr(s, dev, SIOCSIFADDR, QSUP_NET_GUEST) == -1 ||
	    init_ifaddr(s, dev, SIOCSIFNETMASK, QSUP_NET_MASK) == -1) {
		agent_set_error("%s: address: %s", dev, strerror(errno));
		goto out;
	}
	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, dev, sizeof ifr.ifr_name - 1);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1 ||
	    (ifr.ifr_flags |= IFF_UP|IFF_RUNNING,
	    ioctl(s, SIOCSIFFLAGS, &ifr) == -1)) {
		agent_set_error("%s up: %s", dev, strerror(errno));
		goto out;
	}
	memset(&rt, 0, sizeof rt);
	sin = (struct sockaddr_in *)(void *)&rt.rt_dst;
	sin->sin_family = AF_INET;
	sin = (struct sockaddr_in *)(void *)&rt.rt_genmask;
	sin->sin_family = AF_INET;
	sin = (struct sockaddr_in *)(void *)&rt.rt_gateway;
	sin->sin_family = AF_INET;
	inet_pton(AF_INET, QSUP_NET_GATEWAY, &sin->sin_addr);
	rt.rt_flags = RTF_UP|RTF_GATEWAY;
	rt.rt_dev = dev;
	if (ioctl(s, SIOCADDRT, &rt) == -1 && errno != EEXIST) {
		agent_set_error("default route: %s", strerror(errno));
		goto out;
	}
	init_resolv();
	log_warnx("%s %s", dev, QSUP_NET_GUEST);
out:
	close(s);
}

/*
 * The resolver's file, when there is a network card: in the initramfs at
 * boot, and again in a disk image once it is the root. Anything but a
 * regular file there (a link to systemd-resolved's stub, dangling without
 * it) is replaced: the image is an overlay, the base is never written.
 */
void
init_resolv(void)
{
	struct stat	st;
	int		fd;

	if (access("/sys/class/net/eth0", F_OK) == -1)
		return;
	(void)mkdir("/etc", 0755);
	if (lstat("/etc/resolv.conf", &st) == 0 && !S_ISREG(st.st_mode) &&
	    unlink("/etc/resolv.conf") == -1)
		log_warn("unlink /etc/resolv.conf");
	if ((fd = open("/etc/resolv.conf", O_WRONLY|O_CREAT|O_TRUNC|O_NOFOLLOW|
	    O_CLOEXEC, 0644)) == -1) {
		log_warn("/etc/resolv.conf");
		return;
	}
	dprintf(fd, "nameserver %s\n", QSUP_NET_DNS);
	close(fd);
}

/*
 * Descriptors 0-2 must be open before anything else is, or a pipe or the
 * signalfd would land on them. The kernel opens /dev/console for PID 1
 * only if the image has one; if not, devtmpfs has it.
 */
void
init_console(void)
{
	int	fd, i, missing = 0;

	for (i = 0; i <= 2; i++)
		missing |= fcntl(i, F_GETFD) == -1;
	if (!missing)
		return;
	(void)mkdir("/dev", 0755);
	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") == 0)
		init_dev_mounted = 1;
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
init_early(void)
{
	init_mount("proc", "/proc", "proc", MS_NOSUID|MS_NODEV|MS_NOEXEC,
	    NULL);
	init_mount("sysfs", "/sys", "sysfs", MS_NOSUID|MS_NODEV|MS_NOEXEC,
	    NULL);
	if (!init_dev_mounted)
		init_mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID,
		    "mode=0755");
	init_mount("devpts", "/dev/pts", "devpts", MS_NOSUID|MS_NOEXEC,
	    "mode=0620,ptmxmode=0666");
	init_mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID|MS_NODEV,
	    "mode=1777");
	init_mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID|MS_NODEV, "mode=1777");
	init_mount("tmpfs", "/run", "tmpfs", MS_NOSUID|MS_NODEV, "mode=0755");
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
	init_loopback();
}

/*
 * --service: in an image booted with its own kernel, started by
 * cloud-init once the image's init has mounted everything. The image's
 * system stays as it is; what qsup's seed says is applied (clock, random
 * seed, hostname, network card, shares, firewall), then the ports.
 */
void
init_service(void)
{
	int	probe, nports, template;

	setenv("HOME", "/root", 1);
	umask(022);
	(void)init_cmdline(&probe, &nports, &template);
	init_network();
	if (init_seed() == 0 && !agent_template) {
		root_service();
		init_apply_seed();
	}
	init_ports();
}

/* The qsup.* words of the kernel command line. */
int
init_cmdline(int *probe, int *nports, int *template)
{
	char		*text, *word, *save = NULL;
	size_t		 len;
	long		 v;
	char		*end;

	*probe = 0;
	*template = 0;
	*nports = QSUP_PORT_COUNT;
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
		else if (strcmp(word, "qsup.root=1") == 0)
			init_root_wanted = 1;
		else if (strncmp(word, "qsup.ports=", 11) == 0) {
			errno = 0;
			v = strtol(word + 11, &end, 10);
			if (errno != 0 || *end != '\0' || v < 1 || v > 64)
				log_warnx("ignoring bad %s", word);
			else {
				*nports = (int)v;
				init_ports_told = 1;
			}
		}
	}
	free(text);
	init_ports_wanted = *nports;
	return (0);
}

static int
init_has_suffix(const char *s, const char *suffix)
{
	size_t	n = strlen(s), m = strlen(suffix);

	return (n >= m && strcmp(s + n - m, suffix) == 0);
}

/* Load the modules list names, in order; failures are logged only. */
static int
init_modules_file(const char *list)
{
	char		*text, *line, *save = NULL, *path, *params, *full;
	size_t		 len;
	int		 fd, flags;

	if (util_read_file(list, &text, &len, 1024 * 1024) == -1) {
		if (errno != ENOENT)
			log_warn("%s", list);
		return (-1);
	}
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		path = line + strspn(line, " \t");
		if (*path == '#' || *path == '\0')
			continue;
		params = path + strcspn(path, " \t\r");
		if (*params != '\0')
			*params++ = '\0';
		params += strspn(params, " \t");
		params[strcspn(params, "\r")] = '\0';
		if (*path == '/')
			full = xstrdup(path);
		else
			xasprintf(&full, "/lib/modules/%s/%s", agent_kernel,
			    path);
		flags = 0;
		if (init_has_suffix(full, ".xz") ||
		    init_has_suffix(full, ".zst") ||
		    init_has_suffix(full, ".gz"))
			flags = INIT_MODULE_INIT_COMPRESSED;
		if ((fd = open(full, O_RDONLY|O_CLOEXEC)) == -1)
			log_warn("module %s", full);
		else if (syscall(SYS_finit_module, fd, params, flags) == -1 &&
		    errno != EEXIST)
			log_warn("module %s", full);
		if (fd != -1)
			close(fd);
		free(full);
	}
	free(text);
	return (0);
}

/*
 * The boot modules, and with qsup.root=1 those a disk image's root needs
 * (ext4): before any template is taken, so a restored guest has them.
 */
void
init_modules(void)
{
	long long	t0;

	(void)init_modules_file(INIT_MODULES);
	t0 = util_ms(CLOCK_MONOTONIC);
	if (init_root_wanted && init_modules_root() == 0)
		log_warnx("root modules loaded in %lld ms",
		    util_ms(CLOCK_MONOTONIC) - t0);
	if (init_root_wanted)
		root_probe();
}

/*
 * The root's modules, once. Also called when a config names a root on a
 * guest booted without qsup.root=1. -1 if the image has no such list.
 */
int
init_modules_root(void)
{
	if (init_root_loaded)
		return (0);
	if (init_modules_file(INIT_MODULES_ROOT) == -1)
		return (-1);
	init_root_loaded = 1;
	return (0);
}

/* Check one /dev node for the seed; 1 and the config applied if it is. */
static int
init_try_seed(const char *dev)
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
	    config_parse(&agent_cfg, text, len, &cause) == -1) {
		agent_set_error("%s: %s", dev, cause);
		free(cause);
		init_seed_ok = 0;
	} else if (agent_cfg.template && agent_service) {
		/* An image's seed, booting it to template state. */
		agent_template = 1;
		init_seed_ok = 1;
	} else if (agent_cfg.token == NULL) {
		agent_set_error("%s: %s has no token", dev, QSUP_SEED_CONFIG);
		init_seed_ok = 0;
	} else
		init_seed_ok = 1;
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
init_seed(void)
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
				found = init_try_seed(dev);
			}
			closedir(d);
		}
		if (found || util_ms(CLOCK_MONOTONIC) >= deadline)
			break;
		init_sleep_ms(10);
	}
	if (!found)
		agent_set_error("no seed disk");
	return (found && init_seed_ok ? 0 : -1);
}

/*
 * Mount the seed's 9p shares, then its bind mounts in order (their sources
 * lie in the shares: the sparse library closure over the library
 * directories a share shows); the first failure is the setup error. A bind
 * inherits its source's flags but read-only, which takes a remount.
 */
void
init_mounts(void)
{
	struct agent_mount	*m;
	struct agent_bind	*b;
	unsigned long		 flags;
	size_t			 i;

	for (i = 0; i < agent_cfg.nmounts; i++) {
		m = &agent_cfg.mounts[i];
		flags = MS_NODEV | (m->ro ? MS_RDONLY : 0);
		if (util_mkdir_p(m->path, 0755) == -1 || mount(m->tag,
		    m->path, "9p", flags, INIT_9P_OPTIONS) == -1) {
			agent_set_error("mount %s on %s: %s", m->tag, m->path,
			    strerror(errno));
			return;
		}
	}
	for (i = 0; i < agent_cfg.nbinds; i++) {
		b = &agent_cfg.binds[i];
		flags = MS_BIND | MS_REMOUNT | MS_NODEV |
		    (b->ro ? MS_RDONLY : 0);
		if (util_mkdir_p(b->dst, 0755) == -1 ||
		    mount(b->src, b->dst, NULL, MS_BIND, NULL) == -1 ||
		    mount(NULL, b->dst, NULL, flags, NULL) == -1) {
			agent_set_error("bind %s on %s: %s", b->src, b->dst,
			    strerror(errno));
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
void
init_firewall(void)
{
	static const char *const names[] = { "iptables-nft-restore",
	    "iptables-legacy-restore", "iptables-restore", NULL };
	const char	*path = AGENT_PATH;
	char		*prog, out[512];
	size_t		 i, len, off = 0;
	ssize_t		 n;
	pid_t		 pid;
	int		 in[2], err[2], status;

	if (agent_cfg.firewall == NULL)
		return;
	for (i = 0; i < agent_cfg.nenv; i++) {
		if (strncmp(agent_cfg.env[i], "PATH=", 5) == 0)
			path = agent_cfg.env[i] + 5;
	}
	if ((prog = init_find_program(path, names)) == NULL) {
		agent_set_error("guest firewall: the guest has no "
		    "iptables-nft-restore, iptables-legacy-restore or "
		    "iptables-restore on its PATH (%s)", path);
		return;
	}
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1) {
		agent_set_error("guest firewall: pipe: %s", strerror(errno));
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
		len = strlen(agent_cfg.firewall);
		while (off < len && (n = write(in[1], agent_cfg.firewall + off,
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
		agent_set_error("guest firewall: fork: %s", strerror(errno));
	else if (waitpid(pid, &status, 0) == -1 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		agent_set_error("guest firewall: %s failed (status %d): %s",
		    prog, WIFEXITED(status) ? WEXITSTATUS(status) : -1, out);
	else
		log_warnx("guest firewall loaded by %s", prog);
	free(prog);
}

/*
 * Clock, entropy, host name and shares from the seed. The pool takes at
 * most 512 bytes at once; more would add nothing.
 */
void
init_apply_seed(void)
{
	struct {
		int		entropy_count;
		int		buf_size;
		unsigned char	buf[512];
	} pool;
	size_t	n;
	int	fd;

	if (agent_cfg.has_time &&
	    clock_settime(CLOCK_REALTIME, &agent_cfg.time) == -1)
		log_warn("clock_settime");
	if (agent_cfg.entropy_len > 0) {
		n = agent_cfg.entropy_len;
		if (n > sizeof pool.buf)
			n = sizeof pool.buf;
		pool.entropy_count = (int)n * 8;
		pool.buf_size = (int)n;
		memcpy(pool.buf, agent_cfg.entropy, n);
		if ((fd = open("/dev/urandom", O_WRONLY|O_CLOEXEC)) == -1 ||
		    ioctl(fd, INIT_RNDADDENTROPY, &pool) == -1)
			log_warn("adding seed entropy");
		/*
		 * Reseed the CRNG now rather than on its own schedule: a guest
		 * restored from a template shares its pool with every clone.
		 */
		else if (ioctl(fd, INIT_RNDRESEEDCRNG) == -1)
			log_warn("reseeding the CRNG");
		if (fd != -1)
			close(fd);
		explicit_bzero(&pool, sizeof pool);
		explicit_bzero(agent_cfg.entropy, agent_cfg.entropy_len);
	}
	if (agent_cfg.hostname != NULL && sethostname(agent_cfg.hostname,
	    strlen(agent_cfg.hostname)) == -1)
		log_warn("sethostname %s", agent_cfg.hostname);
	/* The image's root first: the shares are mounted inside it. */
	root_setup();
	if (agent_error == NULL)
		init_mounts();
	if (agent_error == NULL)
		init_firewall();
}

/*
 * SIGIO on the port's host connecting or hanging up (virtio_console
 * sends it to a port's owner on VIRTIO_CONSOLE_PORT_OPEN): the event
 * port_recheck waits for instead of a timer. It also comes with input,
 * which costs one signalfd read in a loop turn that was due anyway.
 */
static void
init_port_async(int fd)
{
	int	fl;

	if (fcntl(fd, F_SETOWN, getpid()) == -1 ||
	    (fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_ASYNC) == -1)
		log_warn("O_ASYNC on an agent port");
}

/* Open the agent ports that have appeared; returns how many are open. */
int
init_ports_scan(void)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[300], *name;
	size_t		 len;
	int		 fd;

	if ((d = opendir("/sys/class/virtio-ports")) == NULL)
		return (port_count());
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name",
		    de->d_name);
		if (util_read_file(path, &name, &len, 256) == -1)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strncmp(name, QSUP_PORT_PREFIX,
		    strlen(QSUP_PORT_PREFIX)) == 0 && !port_has(name)) {
			snprintf(path, sizeof path, "/dev/%s", de->d_name);
			fd = open(path, O_RDWR|O_NONBLOCK|O_CLOEXEC);
			if (fd != -1) {
				init_port_async(fd);
				port_add(fd, name);
			}
		}
		free(name);
	}
	closedir(d);
	return (port_count());
}

/* Promised ones until all are there, any at all only while none is. */
static int
init_ports_missing(void)
{
	if (port_count() >= init_ports_wanted)
		return (0);
	return (init_ports_told || port_count() == 0);
}

/*
 * While ports are still missing, the kernel's uevent socket says when a
 * port appears or gets its name (virtio_console sends KOBJ_ADD, then
 * KOBJ_CHANGE with the name), so the loop polls that rather than a
 * timer. Opened before the last look, so a port that comes in between
 * is not missed.
 */
static void
init_uevent_open(void)
{
	struct init_sockaddr_nl	sa;
	int			fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM|SOCK_NONBLOCK|SOCK_CLOEXEC,
	    INIT_NETLINK_KOBJECT_UEVENT);
	if (fd == -1) {
		log_warn("uevent socket");
		return;
	}
	memset(&sa, 0, sizeof sa);
	sa.nl_family = AF_NETLINK;
	sa.nl_groups = 1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof sa) == -1) {
		log_warn("uevent socket");
		close(fd);
		return;
	}
	init_uevent = fd;
	init_ports_scan();
	if (!init_ports_missing()) {
		close(init_uevent);
		init_uevent = -1;
	}
}

/*
 * Ports appear when the host's control messages arrive, after
 * virtio_console is loaded, and each gets its name a moment later: wait
 * for the ones qsup.ports promises, for a bounded time. Without
 * qsup.ports, stop once the set has not grown for a while. Ports that
 * come later still are picked up by init_ports_late, on a uevent.
 */
void
init_ports(void)
{
	long long	now, start, changed;
	int		n, seen = 0;

	start = changed = util_ms(CLOCK_MONOTONIC);
	for (;;) {
		n = init_ports_scan();
		now = util_ms(CLOCK_MONOTONIC);
		if (n != seen) {
			seen = n;
			changed = now;
		}
		if (n >= init_ports_wanted || now - start >= INIT_PORTS_WAIT_MS)
			break;
		if (!init_ports_told && n > 0 &&
		    now - changed >= INIT_PORTS_SETTLE_MS)
			break;
		init_sleep_ms(5);
	}
	if (init_ports_missing()) {
		init_uevent_open();
		n = port_count();
	}
	if (n == 0)
		log_warnx("no %s* port found", QSUP_PORT_PREFIX);
	else if (n < init_ports_wanted && init_ports_told)
		log_warnx("%d of %d agent ports found", n, init_ports_wanted);
}

/* What the loop polls for late ports: -1 once none is missing. */
int
init_uevent_fd(void)
{
	return (init_uevent);
}

/*
 * The uevent socket is readable: drop what it says (any event is
 * reason enough to look, and nothing the guest's devices send is
 * parsed) and look again.
 */
void
init_ports_late(void)
{
	static char	buf[4096];
	ssize_t		n;

	if (init_uevent == -1)
		return;
	do
		n = recv(init_uevent, buf, sizeof buf, MSG_DONTWAIT);
	while (n >= 0 || errno == ENOBUFS || errno == EINTR);
	init_ports_scan();
	if (!init_ports_missing()) {
		close(init_uevent);
		init_uevent = -1;
	}
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

/* Stop everything and power off. Never returns; PID 1 must not exit. */
void
init_poweroff(void)
{
	if (agent_service) {
		/*
		 * The image's own shutdown would take its time, and the disk
		 * is a throwaway overlay: our commands go, then the guest,
		 * synced. Only our own children are signalled: the rest is
		 * the image's init's, and poweroff stops it all.
		 */
		exec_kill_all(SIGTERM);
		(void)init_reap_for(INIT_TERM_GRACE_MS);
		exec_kill_all(SIGKILL);
		sync();
		reboot(RB_POWER_OFF);
		log_warn("poweroff");
		_exit(1);
	}
	if (!agent_pid1)
		_exit(0);
	kill(-1, SIGTERM);
	if (!init_reap_for(INIT_TERM_GRACE_MS)) {
		kill(-1, SIGKILL);
		init_reap_for(INIT_TERM_GRACE_MS);
	}
	sync();
	init_umount_all();
	/* A disk image's root cannot be unmounted: leave it clean, journal and all. */
	if (root_device != NULL &&
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
