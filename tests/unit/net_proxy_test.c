/*
 * The proxy and the TCP maps (net_proxy.c, net_map.c) driven through
 * their unix sockets, as slirp would, against real servers on 127.0.0.1,
 * and fed mutated requests.
 */
#include "net_test.h"

/* --- The proxy's clients ------------------------------------------------ */

/* Connect to one of net's unix sockets, as slirp does for the guest. */
static int
guest_connect(const char *name)
{
	struct sockaddr_un	sun;
	int			fd;

	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof sun.sun_path, "%s/%s", dir, name);
	fd = socket(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0);
	cr_assert(fd != -1);
	cr_assert(connect(fd, (struct sockaddr *)&sun, sizeof sun) == 0,
	    "%s: %s", sun.sun_path, strerror(errno));
	util_set_nonblock(fd);
	return (fd);
}

/* One request to the proxy; the whole answer until the proxy closes. */
static char *
proxy_ask(const void *req, size_t len)
{
	struct buf	b = { 0 };
	int		fd;

	fd = guest_connect("net0.sock");
	send_all(fd, req, len);
	recv_some(fd, &b, 0, 10);
	close(fd);
	buf_add(&b, "", 0);
	return (b.data);
}

/* What the HTTP server was sent, as it recorded it. */
static char *
server_log(int logfd)
{
	struct buf	b = { 0 };
	struct pollfd	pfd = { .fd = logfd, .events = POLLIN };
	char		c;

	while (poll(&pfd, 1, 5000) == 1 && read(logfd, &c, 1) == 1 &&
	    c != '\0')
		buf_add(&b, &c, 1);
	buf_add(&b, "", 0);
	return (b.data);
}

static struct net *
net_allowlist(void)
{
	return (net_make(NET_MODE_ALLOWLIST));
}

/* --- The proxy ----------------------------------------------------------- */

TestSuite(net_proxy, .init = setup, .fini = teardown, .timeout = 60);

Test(net_proxy, connect_allowed_bytes_both_ways)
{
	struct net		*net;
	struct net_stats	 st;
	struct buf		 b = { 0 };
	char			 rule[64], req[128], *big;
	size_t			 i, n = 3 * 1024 * 1024;
	int			 port, fd;

	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();

	fd = guest_connect("net0.sock");
	/* The first bytes of the tunnel may come with the request. */
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nUser-Agent: t\r\n\r\nearly", port, port);
	send_all(fd, req, strlen(req));
	recv_some(fd, &b, 39 + 5, 10);
	cr_assert(strncmp(b.data, "HTTP/1.1 200 Connection established\r\n"
	    "\r\nearly", 44) == 0, "%s", b.data);
	buf_consume(&b, b.len);

	/* More than every buffer on the way holds, so both ways wait. */
	big = xmalloc(n);
	for (i = 0; i < n; i++)
		big[i] = (char)(i * 7 + i / 251);
	send_all(fd, big, n);
	recv_some(fd, &b, n, 30);
	cr_assert_eq(b.len, n);
	cr_assert(memcmp(b.data, big, n) == 0);

	/* A half-close goes through: the server sees EOF and closes. */
	shutdown(fd, SHUT_WR);
	buf_consume(&b, b.len);
	recv_some(fd, &b, 0, 10);
	cr_assert_eq(b.len, 0);
	close(fd);

	net_stats(net, &st);
	cr_assert_eq(st.allowed, 1);
	cr_assert_eq(st.refused, 0);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	assert_dest(net, "connect", rule, 1, 1);
	free(big);
	buf_free(&b);
	net_free(net);
}

/*
 * A guest that sends but never reads: once the buffers on the way are
 * full, the proxy stops reading from both sides, and so the guest stalls
 * instead of qsup's memory growing.
 */
Test(net_proxy, backpressure_bounds_memory)
{
	struct net	*net;
	struct buf	 b = { 0 };
	char		 rule[64], req[128], *chunk;
	size_t		 sent = 0, limit = 64 * 1024 * 1024;
	double		 last;
	ssize_t		 n;
	int		 port, fd;

	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();
	fd = guest_connect("net0.sock");
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    port);
	send_all(fd, req, strlen(req));
	recv_some(fd, &b, 39, 10);
	chunk = xcalloc(1, 65536);
	last = util_now();
	while (sent < limit && util_now() - last < 0.5) {
		n = send(fd, chunk, 65536, MSG_DONTWAIT|MSG_NOSIGNAL);
		if (n > 0) {
			sent += (size_t)n;
			last = util_now();
		} else
			spin(fd, POLLOUT);
	}
	/* Kernel buffers (loopback TCP autotunes to a few MB) and ours. */
	cr_assert_lt(sent, 40 * 1024 * 1024, "%zu bytes taken without "
	    "reading any back", sent);
	cr_assert_gt(sent, 128 * 1024);
	close(fd);
	free(chunk);
	buf_free(&b);
	net_free(net);
}

Test(net_proxy, connect_refused_403_counted)
{
	struct net		*net;
	struct net_stats	 st;
	struct buf		 js = { 0 };
	char			 rule[64], req[128], dest[64], *ans;
	int			 port, other;

	port = server(SERVER_ECHO, NULL);
	other = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, "*.example.org:443", NULL);
	net = net_allowlist();

	/* Another port of an allowed address. */
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    other);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "not allowed"));
	free(ans);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	snprintf(dest, sizeof dest, "127.0.0.1:%d", other);
	assert_dest(net, "connect", dest, 0, 2);

	/* A name no rule allows; an allowed name on another port. */
	ans = proxy_ask("CONNECT evil.example.com:443 HTTP/1.1\r\n\r\n", 41);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	assert_dest(net, "connect", "evil.example.com:443", 0, 1);
	ans = proxy_ask("CONNECT a.example.org:22 HTTP/1.1\r\n\r\n", 37);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "other ports"));
	free(ans);
	/* The host's loopback by another name, or by 10.0.2.2: no. */
	ans = proxy_ask("CONNECT example.org.evil.com:443 HTTP/1.1\r\n\r\n",
	    45);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);

	net_stats(net, &st);
	cr_assert_eq(st.refused, 5);
	cr_assert_eq(st.allowed, 0);
	net_stats_json(net, &js);
	cr_assert_not_null(strstr(js.data, "\"refused\":5"), "%s", js.data);
	cr_assert_not_null(strstr(js.data, "\"dest\":\"evil.example.com:443\""
	    ",\"allowed\":false,\"count\":1,\"why\":"), "%s", js.data);
	buf_free(&js);
	net_free(net);
}

/* CONNECT localhost:port through the proxy, which must let it through. */
static void
connect_localhost(int port)
{
	struct buf	b = { 0 };
	char		req[128];
	int		fd;

	fd = guest_connect("net0.sock");
	snprintf(req, sizeof req, "CONNECT localhost:%d HTTP/1.1\r\n\r\nhi",
	    port);
	send_all(fd, req, strlen(req));
	recv_some(fd, &b, 39 + 2, 10);
	cr_assert(strncmp(b.data, "HTTP/1.1 200 Connection established\r\n"
	    "\r\nhi", 41) == 0, "%s", b.data);
	close(fd);
	buf_free(&b);
}

Test(net_proxy, names_and_the_host_loopback)
{
	struct net	*net;
	char		 r1[64], r2[64], req[128], *ans;
	const char	*mine;
	struct in_addr	 a;
	int		 port;

	port = server(SERVER_ECHO, NULL);
	/*
	 * localhost names the loopback itself; "0x7f.0x1" is a name on the
	 * list that resolves to 127.0.0.1 (as inet_aton reads it) and must
	 * not open the host's loopback.
	 */
	snprintf(r1, sizeof r1, "localhost:%d", port);
	snprintf(r2, sizeof r2, "0x7f.0x1:%d", port);
	rules_set(r1, r2, NULL);
	net = net_allowlist();

	connect_localhost(port);

	snprintf(req, sizeof req, "CONNECT 0x7f.0x1:%d HTTP/1.1\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "host itself"), "%s", ans);
	free(ans);
	snprintf(req, sizeof req, "0x7f.0x1:%d", port);
	assert_dest(net, "connect", req, 0, 1);
	net_free(net);

	/* Nor the host's own address, where 0.0.0.0 servers answer. */
	if ((mine = host_address()) == NULL)
		return;
	inet_pton(AF_INET, mine, &a);
	snprintf(r1, sizeof r1, "0x%08x:%d", ntohl(a.s_addr), port);
	rules_set(r1, NULL);
	net = net_allowlist();
	snprintf(req, sizeof req, "CONNECT %s HTTP/1.1\r\n\r\n", r1);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	cr_assert_not_null(strstr(ans, "host itself"), "%s", ans);
	free(ans);
	net_free(net);
}

/* network_rules' DENY through the proxy: it wins over the allow rules. */
Test(net_proxy, deny_rules_refuse)
{
	struct net	*net;
	char		 r1[64], r2[64], r3[64], req[128], dest[64], *ans;
	int		 port;

	port = server(SERVER_ECHO, NULL);
	snprintf(r1, sizeof r1, "localhost:%d", port);
	snprintf(r2, sizeof r2, "DENY|TCP|127.0.0.1|%d|OUT", port);
	/* localhost is both loopbacks, whatever /etc/hosts says. */
	snprintf(r3, sizeof r3, "DENY|TCP|::1|%d|OUT", port);
	rules_set("127.0.0.0/8", r1, r2, r3, NULL);
	net = net_allowlist();
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	snprintf(dest, sizeof dest, "127.0.0.1:%d", port);
	assert_dest(net, "connect", dest, 0, 1);
	/* An allowed name does not lead into the denied address either. */
	snprintf(req, sizeof req, "CONNECT localhost:%d HTTP/1.1\r\n\r\n",
	    port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	net_free(net);

	/* A DENY of another port leaves this one open. */
	snprintf(r2, sizeof r2, "DENY|TCP|localhost|%d|OUT", port + 1);
	rules_set(r1, r2, NULL);
	net = net_allowlist();
	connect_localhost(port);
	net_free(net);

	/* A DENY of the name, on every port. */
	rules_set(r1, "DENY|TCP|localhost|*|OUT", NULL);
	net = net_allowlist();
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	snprintf(dest, sizeof dest, "localhost:%d", port);
	assert_dest(net, "connect", dest, 0, 1);
	net_free(net);
}

Test(net_proxy, connect_unreachable_502)
{
	struct net	*net;
	char		 req[128], *ans;

	rules_set("127.0.0.1", NULL);
	net = net_allowlist();
	snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n",
	    unused_port());
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 502 ", 13) == 0, "%s", ans);
	free(ans);
	ans = proxy_ask("CONNECT no-such-name.invalid:443 HTTP/1.1\r\n\r\n",
	    46);
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	net_free(net);
}

Test(net_proxy, http_get_forwarded)
{
	struct net	*net;
	char		 rule[64], req[512], *ans, *seen, host[64];
	int		 port, logfd;

	port = server(SERVER_HTTP, &logfd);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();

	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/a/b?c=d HTTP/1.1\r\n"
	    "Host: evil.example\r\nProxy-Connection: keep-alive\r\n"
	    "Connection: keep-alive\r\nProxy-Authorization: Basic eA==\r\n"
	    "User-Agent: qsup-test\r\nAccept: */*\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert_str_eq(ans, "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n"
	    "hello");
	free(ans);
	seen = server_log(logfd);
	snprintf(host, sizeof host, "Host: 127.0.0.1:%d\r\n", port);
	cr_assert(strncmp(seen, "GET /a/b?c=d HTTP/1.1\r\n", 23) == 0, "%s",
	    seen);
	cr_assert_not_null(strstr(seen, host), "%s", seen);
	cr_assert_not_null(strstr(seen, "\r\nUser-Agent: qsup-test\r\n"));
	cr_assert_not_null(strstr(seen, "\r\nAccept: */*\r\n"));
	cr_assert_not_null(strstr(seen, "\r\nConnection: close\r\n\r\n"));
	cr_assert_null(strstr(seen, "evil"), "%s", seen);
	cr_assert_null(strcasestr(seen, "proxy-"), "%s", seen);
	cr_assert_null(strstr(seen, "keep-alive"), "%s", seen);
	free(seen);

	/* A body goes along; an empty path becomes "/". */
	snprintf(req, sizeof req, "POST http://127.0.0.1:%d HTTP/1.0\r\n"
	    "Content-Length: 7\r\n\r\npayload", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.0 200 OK", 15) == 0, "%s", ans);
	free(ans);
	seen = server_log(logfd);
	cr_assert(strncmp(seen, "POST / HTTP/1.0\r\n", 17) == 0, "%s", seen);
	cr_assert_not_null(strstr(seen, "\r\n\r\npayload"), "%s", seen);
	free(seen);

	snprintf(req, sizeof req, "127.0.0.1:%d", port);
	assert_dest(net, "http", req, 1, 2);
	close(logfd);
	net_free(net);
}

Test(net_proxy, http_get_refused)
{
	struct net		*net;
	struct net_stats	 st;
	char			 rule[64], req[256], *ans;
	int			 port, logfd;

	port = server(SERVER_HTTP, &logfd);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port + 1 > 65535 ? 1 :
	    port + 1);
	rules_set(rule, "deb.debian.org:80", NULL);
	net = net_allowlist();

	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
	    "Host: 127.0.0.1\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 Forbidden\r\n", 24) == 0, "%s",
	    ans);
	free(ans);
	/* The Host header does not decide: the URL does. */
	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/ HTTP/1.1\r\n"
	    "Host: deb.debian.org\r\n\r\n", port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.1 403 ", 13) == 0, "%s", ans);
	free(ans);
	/* Nothing reached the server. */
	{
		struct pollfd	pfd = { .fd = logfd, .events = POLLIN };

		cr_assert_eq(poll(&pfd, 1, 200), 0);
	}
	net_stats(net, &st);
	cr_assert_eq(st.refused, 2);
	snprintf(req, sizeof req, "127.0.0.1:%d", port);
	assert_dest(net, "http", req, 0, 2);
	close(logfd);
	net_free(net);
}

Test(net_proxy, malformed_400_and_still_serving)
{
	static const char *const bad[] = {
		"\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /x HTTP/1.1\r\n\r\n",
		"GARBAGE\r\n\r\n",
		"GET  http://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/2.0\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1 x\r\n\r\n",
		"GET http://127.0.0.1/\r\n\r\n",
		"G(T http://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET https://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET ftp://127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http:/127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http:// HTTP/1.1\r\n\r\n",
		"GET http://user@127.0.0.1/ HTTP/1.1\r\n\r\n",
		"GET http://a..b/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:99999/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:0/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:8a/ HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1:-1/ HTTP/1.1\r\n\r\n",
		"GET http://[::1/ HTTP/1.1\r\n\r\n",
		"GET http://[zz::1]/ HTTP/1.1\r\n\r\n",
		"GET http://[::1]x/ HTTP/1.1\r\n\r\n",
		"GET http://::1/ HTTP/1.1\r\n\r\n",
		"CONNECT example.org HTTP/1.1\r\n\r\n",
		"CONNECT example.org: HTTP/1.1\r\n\r\n",
		"CONNECT :443 HTTP/1.1\r\n\r\n",
		"CONNECT http://example.org:443 HTTP/1.1\r\n\r\n",
		"CONNECT example.org:443/x HTTP/1.1\r\n\r\n",
		"CONNECT ex ample.org:443 HTTP/1.1\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nNoColon\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\n: empty\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nA: b\r\n folded\r\n\r\n",
		"GET http://127.0.0.1/ HTTP/1.1\r\nBad Name: x\r\n\r\n",
		"\x16\x03\x01\x02\x01\x01\x01\x01\xfc\x03\x03\n\n",
	};
	struct net		*net;
	struct net_stats	 st;
	char			*ans, *big, rule[64], req[256];
	size_t			 i;
	int			 port, logfd, fd;
	struct buf		 b = { 0 };

	port = server(SERVER_HTTP, &logfd);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, "127.0.0.1:80", "example.org:443", NULL);
	net = net_allowlist();
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ans = proxy_ask(bad[i], strlen(bad[i]));
		cr_assert(strncmp(ans, "HTTP/1.1 400 Bad Request\r\n", 26) == 0,
		    "request %zu: %s", i, ans);
		free(ans);
	}
	/* A NUL byte in the head. */
	ans = proxy_ask("GET http://127.0.0.1/ HTTP/1.1\r\nA: \0\r\n\r\n", 40);
	cr_assert(strncmp(ans, "HTTP/1.1 400 ", 13) == 0, "%s", ans);
	free(ans);
	/* A head that never ends. */
	big = xmalloc(20000);
	memcpy(big, "GET http://127.0.0.1/ HTTP/1.1\r\nX: ", 35);
	memset(big + 35, 'a', 20000 - 35);
	ans = proxy_ask(big, 20000);
	cr_assert(strncmp(ans, "HTTP/1.1 431 ", 13) == 0, "%.60s", ans);
	free(ans);
	free(big);
	/* A head cut short by EOF. */
	fd = guest_connect("net0.sock");
	send_all(fd, "GET http://127.0.0.1/ HTT", 25);
	shutdown(fd, SHUT_WR);
	recv_some(fd, &b, 0, 10);
	buf_add(&b, "", 0);
	cr_assert(strncmp(b.data, "HTTP/1.1 400 ", 13) == 0, "%s", b.data);
	close(fd);
	buf_free(&b);
	/* One that ends before a byte: closed at once, not counted. */
	fd = guest_connect("net0.sock");
	shutdown(fd, SHUT_WR);
	recv_some(fd, &b, 0, 2);
	cr_assert_eq(b.len, 0);
	close(fd);
	close(guest_connect("net0.sock"));
	spin_for(0.05);

	net_stats(net, &st);
	cr_assert_eq(st.refused, sizeof bad / sizeof bad[0] + 3);
	cr_assert_eq(st.allowed, 0);
	assert_dest(net, "http", "(malformed request)", 0,
	    sizeof bad / sizeof bad[0] + 3);

	/* And the proxy still works. */
	snprintf(req, sizeof req, "GET http://127.0.0.1:%d/ok HTTP/1.1\r\n\r\n",
	    port);
	ans = proxy_ask(req, strlen(req));
	cr_assert(strncmp(ans, "HTTP/1.0 200 OK", 15) == 0, "%s", ans);
	free(ans);
	free(server_log(logfd));
	close(logfd);
	net_free(net);
}

Test(net_proxy, many_at_once)
{
	struct net	*net;
	struct buf	 b[40];
	char		 rule[64], req[128], want[64];
	int		 port, fd[40], i;

	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, NULL);
	net = net_allowlist();
	/* Interleaved: each tunnel must get its own bytes back. */
	for (i = 0; i < 40; i++) {
		memset(&b[i], 0, sizeof b[i]);
		fd[i] = guest_connect("net0.sock");
		snprintf(req, sizeof req, "CONNECT 127.0.0.1:%d HTTP/1.1\r\n"
		    "\r\nconnection %d;", port, i);
		send_all(fd[i], req, strlen(req));
	}
	for (i = 0; i < 40; i++) {
		snprintf(want, sizeof want, "HTTP/1.1 200 Connection "
		    "established\r\n\r\nconnection %d;", i);
		recv_some(fd[i], &b[i], strlen(want), 10);
		buf_add(&b[i], "", 0);
		cr_assert_str_eq(b[i].data, want);
		close(fd[i]);
		buf_free(&b[i]);
	}
	net_free(net);
}

Test(net_proxy, tcp_map)
{
	struct net	*net;
	struct buf	 b = { 0 };
	char		*cause = NULL, *gaddr = NULL, dest[64];
	int		 port, fd;

	port = server(SERVER_ECHO, NULL);
	rules_set("example.org", NULL);
	net = net_allowlist();
	cr_assert(net_add_tcp_map(net, "db", 5432, "127.0.0.1", port, &gaddr,
	    &cause) == 0, "%s", cause);
	cr_assert_str_eq(gaddr, "10.0.2.101");
	free(gaddr);
	/* Plain TCP: no HTTP in between. */
	fd = guest_connect("net1.sock");
	send_all(fd, "SELECT 1;", 9);
	shutdown(fd, SHUT_WR);
	recv_some(fd, &b, 0, 10);
	buf_add(&b, "", 0);
	cr_assert_str_eq(b.data, "SELECT 1;");
	close(fd);
	buf_free(&b);
	snprintf(dest, sizeof dest, "127.0.0.1:%d", port);
	assert_dest(net, "tcp", dest, 1, 1);

	cr_assert(net_add_tcp_map(net, "bad name", 1, "127.0.0.1", port, NULL,
	    &cause) == -1);
	free(cause);
	net_free(net);
}

/*
 * NET_CONNS_MAX connections at once over the proxy and the maps together;
 * one more is closed at once and counted; once one ends there is room.
 */
Test(net_proxy, connections_capped_over_all_listeners)
{
	struct net	*net;
	struct buf	 b = { 0 };
	char		*cause = NULL;
	int		 fd[NET_CONNS_MAX], extra, i, port;

	port = server(SERVER_ECHO, NULL);
	rules_set("example.org", NULL);
	net = net_allowlist();
	cr_assert(net_add_tcp_map(net, "db", 5432, "127.0.0.1", port, NULL,
	    &cause) == 0, "%s", cause);
	/* Half waiting to say their request, half on the map. */
	for (i = 0; i < NET_CONNS_MAX; i++) {
		fd[i] = guest_connect(i % 2 == 0 ? "net0.sock" : "net1.sock");
		spin(-1, 0);
	}
	spin_for(0.2);
	extra = guest_connect("net0.sock");
	recv_some(extra, &b, 0, 10);
	cr_assert_eq(b.len, 0, "a connection past the limit was served");
	close(extra);
	extra = guest_connect("net1.sock");
	recv_some(extra, &b, 0, 10);
	cr_assert_eq(b.len, 0, "a map connection past the limit was served");
	close(extra);
	assert_dest(net, "http", "(any)", 0, 1);
	assert_dest(net, "tcp", "(any)", 0, 1);
	/* The ones inside still work. */
	send_all(fd[1], "x", 1);
	recv_some(fd[1], &b, 1, 10);
	cr_assert_eq(b.data[0], 'x');
	for (i = 0; i < NET_CONNS_MAX; i++)
		close(fd[i]);
	spin_for(0.2);
	extra = guest_connect("net1.sock");
	send_all(extra, "y", 1);
	buf_consume(&b, b.len);
	recv_some(extra, &b, 1, 10);
	cr_assert_eq(b.data[0], 'y');
	close(extra);
	buf_free(&b);
	net_free(net);
}

static void
break_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(l, EVBREAK_ONE);
}

/*
 * With qsup out of file descriptors, a connection waiting at the proxy
 * must not spin the loop (the listener stays readable while accept fails
 * with EMFILE); once descriptors are free again it is served.
 */
Test(net_proxy, out_of_descriptors_does_not_spin)
{
	struct net		*net;
	struct net_stats	 st;
	struct rlimit		 rl;
	ev_timer		 stop;
	unsigned int		 before;
	int			 fd, spare[64], n = 0, i;

	rules_set("example.org", NULL);
	net = net_allowlist();
	fd = guest_connect("net0.sock");
	cr_assert(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	/* This test's process only: Criterion forks each test. */
	rl.rlim_cur = 256;
	cr_assert(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	while (n < 64 && (spare[n] = dup(0)) != -1)
		n++;
	while (dup(0) != -1)
		;
	cr_assert_eq(errno, EMFILE);
	/* The loop left to itself for 0.5 s: it sleeps, or it spins. */
	ev_timer_init(&stop, break_cb, 0.5, 0);
	ev_timer_start(loop, &stop);
	before = ev_iteration(loop);
	ev_run(loop, 0);
	cr_assert_lt(ev_iteration(loop) - before, 100,
	    "%u loop iterations in 0.5 s: the loop spins",
	    ev_iteration(loop) - before);
	net_stats(net, &st);
	for (i = 0; i < (int)st.ndests; i++) {
		if (strcmp(st.dests[i].kind, "http") == 0 &&
		    strstr(st.dests[i].why, "file descriptors") != NULL)
			break;
	}
	cr_assert_lt(i, (int)st.ndests, "no refusal for want of descriptors");
	/* Descriptors again: the waiting connection is taken and served. */
	for (i = 0; i < n; i++)
		close(spare[i]);
	send_all(fd, "GET http://example.net/ HTTP/1.1\r\n\r\n", 36);
	{
		struct buf	b = { 0 };

		recv_some(fd, &b, 12, 10);
		cr_assert(b.len >= 12 && strncmp(b.data, "HTTP/1.1 403", 12) == 0,
		    "%.*s", (int)b.len, b.data);
		buf_free(&b);
	}
	close(fd);
	net_free(net);
}

/* --- Fuzz: bytes from the guest never crash qsup ------------------------- */

#define FUZZ_REQUESTS	1500

TestSuite(net_fuzz, .init = setup, .fini = teardown, .timeout = 120);

/*
 * Mutated proxy requests: every answer is a whole HTTP response with one
 * of the codes the proxy gives, or a tunnel's 200 (the echo server then
 * answers with what followed). Only address rules, so that no mutated
 * name is ever looked up.
 */
Test(net_fuzz, proxy_requests)
{
	static const char *const corpus[] = {
		"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
		"GET http://127.0.0.1:%d/a?b=%d HTTP/1.1\r\nHost: x\r\n"
		"Proxy-Connection: keep-alive\r\n\r\n",
		"POST http://[::1]:%d/x HTTP/1.0\r\nContent-Length: %d\r\n\r\n"
		"ab",
		"CONNECT deb.debian.org:%d HTTP/1.1\r\n\r\n%d",
	};
	struct net		*net;
	struct net_stats	 st;
	struct buf		 b = { 0 };
	unsigned char		 req[4096];
	char			 rule[64];
	size_t			 len;
	int			 port, round, fd, code;
	char			*end;

	cr_redirect_stderr();
	srand(20261130);
	port = server(SERVER_ECHO, NULL);
	snprintf(rule, sizeof rule, "127.0.0.1:%d", port);
	rules_set(rule, "[::1]:1-1024", NULL);
	net = net_allowlist();
	for (round = 0; round < FUZZ_REQUESTS; round++) {
		len = (size_t)snprintf((char *)req, sizeof req,
		    corpus[round % 4], port, port);
		if (round % 10 == 0) {
			len = (size_t)rand() % 600;
			for (size_t i = 0; i < len; i++)
				req[i] = (unsigned char)rand();
		} else
			fuzz_mutate(req, &len, sizeof req);
		fd = guest_connect("net0.sock");
		send_all(fd, req, len);
		shutdown(fd, SHUT_WR);
		buf_consume(&b, b.len);
		recv_some(fd, &b, 0, 20);
		close(fd);
		if (b.len == 0)
			continue;	/* no head at all: nothing to say */
		buf_add(&b, "", 0);
		if (strncmp(b.data, "HTTP/1.1 ", 9) != 0) {
			/*
			 * The echo server sent back the request as the proxy
			 * forwarded it: origin form, no proxy headers.
			 */
			end = strstr(b.data, "\r\n\r\n");
			cr_assert_not_null(end, "round %d: %s", round, b.data);
			*end = '\0';
			cr_assert_not_null(strstr(b.data, " /"), "round %d: %s",
			    round, b.data);
			cr_assert_null(strcasestr(b.data, "\nproxy-connection:"),
			    "round %d: %s", round, b.data);
			cr_assert_null(strcasestr(b.data, "\nhost: x"),
			    "round %d: %s", round, b.data);
			cr_assert(end - b.data > 17 && strcmp(end - 17,
			    "Connection: close") == 0, "round %d: %s", round,
			    b.data);
			continue;
		}
		code = atoi(b.data + 9);
		cr_assert(code == 200 || code == 400 || code == 403 ||
		    code == 431 || code == 502, "round %d: %s", round, b.data);
	}
	net_stats(net, &st);
	cr_assert_gt(st.refused, FUZZ_REQUESTS / 4);
	buf_free(&b);
	net_free(net);
}
