/*
 * What the network's unit tests (net_*_test.c) share: the rules they set,
 * a loop with its socket directory, servers on 127.0.0.1, a network made
 * on the rules, and the mutations of the fuzz tests. One binary a file,
 * so the helpers are static; inline, so that a file that needs only some
 * of them compiles without warnings.
 */
#ifndef NET_TEST_H
#define NET_TEST_H

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <ev.h>

#include "cmd.h"
#include "net_int.h"

/* --- Rules -------------------------------------------------------------- */

#define RULES_MAX	16

static struct net_rule	rules[RULES_MAX];
static size_t			nrules;

/* Rules as network_allow writes them, or socket rules (with '|'). */
static inline void
rules_set(const char *first, ...)
{
	va_list			 ap;
	const char		*text;
	char			*why;
	struct net_rule	*v;
	struct net_port	*pt = NULL;
	size_t			 nv, npt = 0, i;

	while (nrules > 0)
		net_rule_free(&rules[--nrules]);
	if (first == NULL)
		return;
	va_start(ap, first);
	for (text = first; text != NULL; text = va_arg(ap, const char *)) {
		cr_assert(nrules < RULES_MAX);
		if (strchr(text, '|') == NULL) {
			if (net_rule_parse(text, &rules[nrules], &why) == -1)
				cr_assert_fail("%s: %s", text, why);
			nrules++;
			continue;
		}
		v = NULL;
		nv = 0;
		if (net_rule_compile(text, 1, &v, &nv, &pt, &npt, &why) == -1)
			cr_assert_fail("%s: %s", text, why);
		cr_assert_eq(npt, 0, "%s: an inbound rule", text);
		for (i = 0; i < nv; i++) {
			cr_assert(nrules < RULES_MAX);
			rules[nrules++] = v[i];
		}
		free(v);
	}
	va_end(ap);
}

/* One of this host's IPv4 addresses that is not loopback, or NULL. */
static inline const char *
host_address(void)
{
	static char	 text[INET_ADDRSTRLEN];
	struct ifaddrs	*ifa, *i;
	unsigned char	*b;

	text[0] = '\0';
	cr_assert(getifaddrs(&ifa) == 0);
	for (i = ifa; i != NULL && text[0] == '\0'; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET)
			continue;
		b = (unsigned char *)&((struct sockaddr_in *)(void *)
		    i->ifa_addr)->sin_addr;
		if (b[0] != 127)
			inet_ntop(AF_INET, b, text, sizeof text);
	}
	freeifaddrs(ifa);
	return (text[0] != '\0' ? text : NULL);
}

/* --- A loop, and servers on 127.0.0.1 ---------------------------------- */

static struct ev_loop	*loop;
static char		 dir[64];
static pid_t		 servers[4];
static int		 nservers;

static inline void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	log_verbose = getenv("QSUP_TEST_V") != NULL;
	loop = ev_loop_new(EVFLAG_AUTO);
	snprintf(dir, sizeof dir, "/tmp/qsup-net-test.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static inline void
teardown(void)
{
	int	i;

	rules_set(NULL);
	for (i = 0; i < nservers; i++) {
		kill(-servers[i], SIGKILL);
		waitpid(servers[i], NULL, 0);
	}
	nservers = 0;
	util_rm_rf(dir);
	ev_loop_destroy(loop);
}

/* Let the loop run for a moment, waiting on fd (if not -1) as well. */
static inline void
spin(int fd, int events)
{
	struct pollfd	pfd = { .fd = fd, .events = (short)events };

	ev_run(loop, EVRUN_NOWAIT);
	poll(&pfd, fd != -1 ? 1 : 0, 2);
	ev_run(loop, EVRUN_NOWAIT);
}

static inline void
spin_for(double seconds)
{
	double	end = util_now() + seconds;

	while (util_now() < end)
		spin(-1, 0);
}

static inline void
send_all(int fd, const void *data, size_t len)
{
	const char	*p = data;
	double		 end = util_now() + 10;
	ssize_t		 n;

	while (len > 0) {
		cr_assert(util_now() < end, "send stalled");
		n = send(fd, p, len, MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n == -1) {
			cr_assert(errno == EAGAIN, "send: %s", strerror(errno));
			spin(fd, POLLOUT);
			continue;
		}
		p += n;
		len -= (size_t)n;
	}
}

/* Read until EOF (or want bytes, if not 0); the loop runs meanwhile. */
static inline void
recv_some(int fd, struct buf *b, size_t want, double seconds)
{
	char	chunk[65536];
	double	end = util_now() + seconds;
	ssize_t	n;

	for (;;) {
		if (want != 0 && b->len >= want)
			return;
		cr_assert(util_now() < end, "no answer after %.0f s (%zu "
		    "bytes so far)", seconds, b->len);
		n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
		if (n == 0)
			return;
		if (n == -1) {
			if (errno == ECONNRESET)
				return;
			cr_assert(errno == EAGAIN, "recv: %s", strerror(errno));
			spin(fd, POLLIN);
			continue;
		}
		buf_add(b, chunk, (size_t)n);
	}
}

static inline int
listen_local(int *port)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof sin;
	int			fd;

	fd = socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC, 0);
	cr_assert(fd != -1);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0);
	cr_assert(listen(fd, 16) == 0);
	cr_assert(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	*port = ntohs(sin.sin_port);
	return (fd);
}

/* A port on 127.0.0.1 where nothing listens. */
static inline int
unused_port(void)
{
	int	fd, port;

	fd = listen_local(&port);
	close(fd);
	return (port);
}

enum server_kind {
	SERVER_ECHO,	/* bytes back until EOF, then EOF */
	SERVER_HTTP	/* records the request in logfd, answers "hello" */
};

static inline void
server_http(int c, int logfd)
{
	char		 req[65536], *end, *cl;
	size_t		 len = 0, body = 0, head;
	ssize_t		 n;
	const char	*answer = "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n"
			    "\r\nhello";

	for (;;) {
		if ((n = read(c, req + len, sizeof req - 1 - len)) <= 0)
			return;
		len += (size_t)n;
		req[len] = '\0';
		if ((end = strstr(req, "\r\n\r\n")) == NULL)
			continue;
		head = (size_t)(end + 4 - req);
		if ((cl = strcasestr(req, "\r\nContent-Length:")) != NULL &&
		    cl < end)
			body = strtoul(cl + 17, NULL, 10);
		if (len >= head + body)
			break;
	}
	(void)write(logfd, req, len);
	(void)write(logfd, "\0", 1);
	(void)write(c, answer, strlen(answer));
}

static inline int
server(enum server_kind kind, int *logfd)
{
	int	lfd, c, port, p[2] = { -1, -1 };
	char	buf[65536];
	ssize_t	n;
	pid_t	pid;

	lfd = listen_local(&port);
	if (logfd != NULL) {
		cr_assert(pipe(p) == 0);
		*logfd = p[0];
	}
	pid = fork();
	cr_assert(pid != -1);
	if (pid == 0) {
		/* A process group, so that teardown stops every child. */
		setpgid(0, 0);
		signal(SIGCHLD, SIG_IGN);
		for (;;) {
			if ((c = accept(lfd, NULL, NULL)) == -1)
				_exit(1);
			if (kind == SERVER_HTTP) {
				server_http(c, p[1]);
				close(c);
				continue;
			}
			if (fork() == 0) {
				while ((n = read(c, buf, sizeof buf)) > 0)
					(void)write(c, buf, (size_t)n);
				_exit(0);
			}
			close(c);
		}
	}
	setpgid(pid, pid);
	close(lfd);
	if (p[1] != -1)
		close(p[1]);
	servers[nservers++] = pid;
	return (port);
}

/* A network of mode on the rules set, its sockets in the test's dir. */
static inline struct net *
net_make(enum net_mode mode)
{
	struct net_config	 cfg = { 0 };
	struct net		*net;
	char			*cause = NULL;

	cfg.mode = mode;
	cfg.rules = rules;
	cfg.nrules = nrules;
	cfg.dir = dir;
	net = net_new(loop, &cfg, &cause);
	cr_assert_not_null(net, "net_new: %s", cause);
	return (net);
}

/* The destination log holds kind dest with this verdict and count. */
static inline void
assert_dest(struct net *net, const char *kind, const char *dest,
    int allowed, unsigned long count)
{
	struct net_stats	st;
	size_t			i;

	net_stats(net, &st);
	for (i = 0; i < st.ndests; i++) {
		if (strcmp(st.dests[i].kind, kind) == 0 &&
		    strcmp(st.dests[i].dest, dest) == 0 &&
		    st.dests[i].allowed == allowed) {
			cr_assert_eq(st.dests[i].count, count, "%s %s: %lu "
			    "times, not %lu", kind, dest, st.dests[i].count,
			    count);
			if (!allowed)
				cr_assert_not_null(st.dests[i].why);
			return;
		}
	}
	cr_assert_fail("%s %s (%s) is not in the destination log", kind, dest,
	    allowed ? "allowed" : "refused");
}

/* --- Fuzz -------------------------------------------------------------- */

static inline void
fuzz_mutate(unsigned char *buf, size_t *len, size_t max)
{
	static const char	 pick[] = "0123456789abcdef:/[]@.*\r\n \t%?#";
	size_t			 n = (size_t)rand() % 6 + 1, at;

	while (n-- > 0) {
		at = *len > 0 ? (size_t)rand() % *len : 0;
		switch (rand() % 5) {
		case 0:
			if (*len > 0)
				buf[at] = (unsigned char)rand();
			break;
		case 1:
			if (*len > 0)
				buf[at] = (unsigned char)pick[(size_t)rand() %
				    (sizeof pick - 1)];
			break;
		case 2:
			*len = at;
			break;
		case 3:
			if (*len > 0 && *len * 2 < max) {
				memcpy(buf + *len, buf + at, *len - at);
				*len += *len - at;
			}
			break;
		case 4:
			if (*len > at + 1)
				memmove(buf + at, buf + at + 1, *len - at - 1);
			if (*len > 0)
				(*len)--;
			break;
		}
	}
}

#endif
