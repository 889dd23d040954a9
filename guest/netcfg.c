/*
 * The guest's network as PID-1 setup leaves it: the loopback interface,
 * the card qsup's user-mode network gives (core/net), and the resolver's
 * file. Part of setup (init.c and root.c call it); it calls nothing of
 * the service.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* Bring up the loopback interface: many programs expect 127.0.0.1. */
void
netcfg_loopback(void)
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
netcfg_ifaddr(int s, const char *dev, unsigned long req, const char *addr)
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
netcfg_dev(struct init_state *st, char *name, size_t size)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[300];
	int		 found = 0;

	if (access("/sys/class/net/eth0", F_OK) == 0) {
		snprintf(name, size, "eth0");
		return (1);
	}
	if (!st->service || (d = opendir("/sys/class/net")) == NULL)
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
netcfg_up(struct init_state *st)
{
	struct rtentry		 rt;
	struct ifreq		 ifr;
	struct sockaddr_in	*sin;
	char			 dev[IFNAMSIZ];
	int			 s, fd;

	if (!netcfg_dev(st, dev, sizeof dev))
		return;
	/* No IPv6: the host's stack carries none. */
	if ((fd = open("/proc/sys/net/ipv6/conf/all/disable_ipv6",
	    O_WRONLY|O_CLOEXEC)) != -1) {
		(void)write(fd, "1\n", 2);
		close(fd);
	}
	if ((s = socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC, 0)) == -1) {
		util_set_error(&st->error, "%s: socket: %s", dev,
		    strerror(errno));
		return;
	}
	if (netcfg_ifaddr(s, dev, SIOCSIFADDR, QSUP_NET_GUEST) == -1 ||
	    netcfg_ifaddr(s, dev, SIOCSIFNETMASK, QSUP_NET_MASK) == -1) {
		util_set_error(&st->error, "%s: address: %s", dev,
		    strerror(errno));
		goto out;
	}
	memset(&ifr, 0, sizeof ifr);
	strncpy(ifr.ifr_name, dev, sizeof ifr.ifr_name - 1);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == -1 ||
	    (ifr.ifr_flags |= IFF_UP|IFF_RUNNING,
	    ioctl(s, SIOCSIFFLAGS, &ifr) == -1)) {
		util_set_error(&st->error, "%s up: %s", dev, strerror(errno));
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
		util_set_error(&st->error, "default route: %s",
		    strerror(errno));
		goto out;
	}
	netcfg_resolv();
	log_warnx("%s %s", dev, QSUP_NET_GUEST);
out:
	close(s);
}

/*
 * The resolver's file, when there is a network card: in the initramfs at
 * boot, and again in a disk image once it is the root. Anything but a
 * regular file there (a link to systemd-resolved's stub, dangling without
 * it) is replaced: the image is an overlay, the base is never written.
 * One that says it already is left alone.
 */
void
netcfg_resolv(void)
{
	struct stat	st;
	int		fd;

	if (access("/sys/class/net/eth0", F_OK) == -1)
		return;
	/* Written already (an image's root at its template): kept. */
	if (util_file_is("/etc/resolv.conf", "nameserver " QSUP_NET_DNS "\n"))
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
