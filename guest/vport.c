/*
 * The agent ports as they appear: virtio_console makes them once the
 * host's control messages arrive, and names each a moment later. Part of
 * the service: PID 1 (or --service) waits here for the ports qsup.ports
 * promises, and the loop picks up later ones on a uevent.
 */
#include <sys/socket.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

#define VPORT_WAIT_MS		2000
#define VPORT_SETTLE_MS		100	/* no new port this long: done */

/* From <linux/netlink.h>, which musl does not ship. */
#define VPORT_NETLINK_KOBJECT_UEVENT	15
struct vport_sockaddr_nl {
	sa_family_t	nl_family;
	unsigned short	nl_pad;
	uint32_t	nl_pid;
	uint32_t	nl_groups;
};

static void
vport_sleep_ms(int ms)
{
	struct timespec	ts = { 0, ms * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/*
 * SIGIO on the port's host connecting or hanging up (virtio_console
 * sends it to a port's owner on VIRTIO_CONSOLE_PORT_OPEN): the event
 * port_recheck waits for instead of a timer. It also comes with input,
 * which costs one signalfd read in a loop turn that was due anyway.
 */
static void
vport_async(int fd)
{
	int	fl;

	if (fcntl(fd, F_SETOWN, getpid()) == -1 ||
	    (fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_ASYNC) == -1)
		log_warn("O_ASYNC on an agent port");
}

/* Open the agent ports that have appeared; returns how many are open. */
static int
vport_scan(struct agent *a)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[300], *name;
	size_t		 len;
	int		 fd;

	if ((d = opendir("/sys/class/virtio-ports")) == NULL)
		return (port_count(a));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name",
		    de->d_name);
		if (util_read_file(path, &name, &len, 256) == -1)
			continue;
		name[strcspn(name, "\n")] = '\0';
		if (strncmp(name, QSUP_PORT_PREFIX,
		    strlen(QSUP_PORT_PREFIX)) == 0 && !port_has(a, name)) {
			snprintf(path, sizeof path, "/dev/%s", de->d_name);
			fd = open(path, O_RDWR|O_NONBLOCK|O_CLOEXEC);
			if (fd != -1) {
				vport_async(fd);
				port_add(a, fd, name);
			}
		}
		free(name);
	}
	closedir(d);
	return (port_count(a));
}

/* Promised ones until all are there, any at all only while none is. */
static int
vport_missing(struct agent *a)
{
	if (port_count(a) >= a->init->nports)
		return (0);
	return (a->init->ports_told || port_count(a) == 0);
}

/*
 * While ports are still missing, the kernel's uevent socket says when a
 * port appears or gets its name (virtio_console sends KOBJ_ADD, then
 * KOBJ_CHANGE with the name), so the loop polls that rather than a
 * timer. Opened before the last look, so a port that comes in between
 * is not missed.
 */
static void
vport_uevent_open(struct agent *a)
{
	struct vport_sockaddr_nl	sa;
	int				fd;

	fd = socket(AF_NETLINK, SOCK_DGRAM|SOCK_NONBLOCK|SOCK_CLOEXEC,
	    VPORT_NETLINK_KOBJECT_UEVENT);
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
	a->uevent = fd;
	vport_scan(a);
	if (!vport_missing(a)) {
		close(a->uevent);
		a->uevent = -1;
	}
}

/*
 * Ports appear when the host's control messages arrive, after
 * virtio_console is loaded, and each gets its name a moment later: wait
 * for the ones qsup.ports promises, for a bounded time. Without
 * qsup.ports, stop once the set has not grown for a while. Ports that
 * come later still are picked up by vport_late, on a uevent.
 */
void
vport_wait(struct agent *a)
{
	long long	now, start, changed;
	int		n, seen = 0;

	start = changed = util_ms(CLOCK_MONOTONIC);
	for (;;) {
		n = vport_scan(a);
		now = util_ms(CLOCK_MONOTONIC);
		if (n != seen) {
			seen = n;
			changed = now;
		}
		if (n >= a->init->nports || now - start >= VPORT_WAIT_MS)
			break;
		if (!a->init->ports_told && n > 0 &&
		    now - changed >= VPORT_SETTLE_MS)
			break;
		vport_sleep_ms(5);
	}
	if (vport_missing(a)) {
		vport_uevent_open(a);
		n = port_count(a);
	}
	if (n == 0)
		log_warnx("no %s* port found", QSUP_PORT_PREFIX);
	else if (n < a->init->nports && a->init->ports_told)
		log_warnx("%d of %d agent ports found", n, a->init->nports);
}

/* What the loop polls for late ports: -1 once none is missing. */
int
vport_uevent_fd(struct agent *a)
{
	return (a->uevent);
}

/*
 * The uevent socket is readable: drop what it says (any event is
 * reason enough to look, and nothing the guest's devices send is
 * parsed) and look again.
 */
void
vport_late(struct agent *a)
{
	static char	buf[4096];
	ssize_t		n;

	if (a->uevent == -1)
		return;
	do
		n = recv(a->uevent, buf, sizeof buf, MSG_DONTWAIT);
	while (n >= 0 || errno == ENOBUFS || errno == EINTR);
	vport_scan(a);
	if (!vport_missing(a)) {
		close(a->uevent);
		a->uevent = -1;
	}
}
