/*
 * Test helper, run in the guest as root: play a hostile guest that takes
 * PID 1's agent port 0 (the exec stream) with pidfd_getfd and writes its
 * own bytes to qsup on it. The port can be opened only once, so the
 * agent's own descriptor is borrowed.
 *
 *   forge MODE [MARKFILE]
 *
 * MODE says what is written (see forge_modes); then, if MARKFILE is
 * given, it is created, and the helper sleeps so that only qsup's own
 * limits can end the run.
 */
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PORT0	"org.qsup.agent.0"

/* The name of the device (vportNpM) that is agent port 0. */
static int
forge_port_dev(char *dev, size_t size)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[512], name[64];
	ssize_t		 n;
	int		 fd, found = -1;

	if ((d = opendir("/sys/class/virtio-ports")) == NULL)
		return (-1);
	while (found == -1 && (de = readdir(d)) != NULL) {
		snprintf(path, sizeof path, "/sys/class/virtio-ports/%s/name",
		    de->d_name);
		if ((fd = open(path, O_RDONLY)) == -1)
			continue;
		n = read(fd, name, sizeof name - 1);
		close(fd);
		if (n <= 0)
			continue;
		name[n] = '\0';
		name[strcspn(name, "\n")] = '\0';
		if (strcmp(name, PORT0) == 0) {
			snprintf(dev, size, "/dev/%s", de->d_name);
			found = 0;
		}
	}
	closedir(d);
	return (found);
}

/* PID 1's descriptor for dev, duplicated into this process. */
static int
forge_steal(const char *dev)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[512], target[512];
	ssize_t		 n;
	int		 pidfd, fd = -1;

	if ((pidfd = syscall(SYS_pidfd_open, 1, 0)) == -1) {
		perror("pidfd_open");
		return (-1);
	}
	if ((d = opendir("/proc/1/fd")) == NULL)
		return (-1);
	while (fd == -1 && (de = readdir(d)) != NULL) {
		snprintf(path, sizeof path, "/proc/1/fd/%s", de->d_name);
		if ((n = readlink(path, target, sizeof target - 1)) <= 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, dev) != 0)
			continue;
		fd = syscall(SYS_pidfd_getfd, pidfd, atoi(de->d_name), 0);
		if (fd == -1)
			perror("pidfd_getfd");
	}
	closedir(d);
	close(pidfd);
	return (fd);
}

static void
forge_write(int fd, const char *p, size_t len)
{
	struct pollfd	pfd;
	ssize_t		n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			poll(&pfd, 1, 1000);
			continue;
		}
		if (n <= 0) {
			perror("write");
			exit(1);
		}
		p += n;
		len -= n;
	}
}

/* One chunk of the chunked exec response. */
static void
forge_chunk(int fd, const char *s)
{
	char	head[32];

	snprintf(head, sizeof head, "%zx\r\n", strlen(s));
	forge_write(fd, head, strlen(head));
	forge_write(fd, s, strlen(s));
	forge_write(fd, "\r\n", 2);
}

static void
forge_junk(int fd)
{
	char	*line;
	int	 i;

	/* 1 MiB of one event, in well-framed chunks of short data lines. */
	line = malloc(1030);
	memcpy(line, "data: ", 6);
	memset(line + 6, 'A', 1018);
	strcpy(line + 1024, "\n");
	forge_chunk(fd, "event: stdout\n");
	for (i = 0; i < 1024; i++)
		forge_chunk(fd, line);
	free(line);
}

int
main(int argc, char **argv)
{
	static const char	last[] = "0\r\n\r\n";
	char			dev[300];
	int			fd;

	if (argc < 2)
		return (2);
	if (forge_port_dev(dev, sizeof dev) == -1) {
		fprintf(stderr, "no port %s\n", PORT0);
		return (1);
	}
	if ((fd = forge_steal(dev)) == -1) {
		fprintf(stderr, "cannot take PID 1's %s\n", dev);
		return (1);
	}
	if (strcmp(argv[1], "exit") == 0)	/* no last chunk */
		forge_chunk(fd, "event: exit\ndata: {\"status\":7}\n\n");
	else if (strcmp(argv[1], "exit-done") == 0) {
		forge_chunk(fd, "event: exit\ndata: {\"status\":7}\n\n");
		forge_write(fd, last, strlen(last));
	} else if (strcmp(argv[1], "signal1000") == 0) {
		forge_chunk(fd, "event: exit\ndata: {\"signal\":1000}\n\n");
		forge_write(fd, last, strlen(last));
	} else if (strcmp(argv[1], "badjson") == 0) {
		forge_chunk(fd, "event: exit\ndata: {status:7\n\n");
		forge_write(fd, last, strlen(last));
	} else if (strcmp(argv[1], "error") == 0) {
		forge_chunk(fd, "event: exit\ndata: {\"status\":126,\"error\":"
		    "\"\\u001b]0;pwned\\u0007\\u001b[2Jboom\"}\n\n");
		forge_write(fd, last, strlen(last));
	} else if (strcmp(argv[1], "trailing") == 0) {
		/* A well-formed end, and more after it. */
		forge_chunk(fd, "event: exit\ndata: {\"status\":0}\n\n");
		forge_write(fd, "0\r\n\r\nevent: exit\n", 18);
	} else if (strcmp(argv[1], "framing") == 0)
		forge_write(fd, "zz\r\n", 4);
	else if (strcmp(argv[1], "junk") == 0)
		forge_junk(fd);
	else
		return (2);
	if (argc > 2)
		close(open(argv[2], O_WRONLY|O_CREAT, 0644));
	sleep(600);
	return (0);
}
