/*
 * The HTTP server layer's listeners and real clients: the unix socket's
 * file, TCP listeners and what they refuse, accept when out of fds, and
 * curl on the unix socket and over TLS, in a child while the loop runs.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "httpd_helpers.h"

TestSuite(httpd, .init = setup, .fini = teardown, .timeout = 20);

/* Out of fds at accept: the server waits, then takes the connection. */
Test(httpd, accept_out_of_fds)
{
	struct rlimit	 old, low;
	struct buf	 got = { 0 };
	int		 fd, i;

	start(NULL);
	fd = client_unix();
	cr_assert_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = fd + 1;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (i = 0; i < 50; i++)
		turn();
	cr_assert_eq(httpd_connections(srv), 0);
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &old), 0);
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 3), 0);
	close(fd);
	buf_free(&got);
}

Test(httpd, unix_socket_file)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	struct httpd		*other;
	char			*cause, spec[300];
	int			 fd;

	start(NULL);
	cr_assert_eq(stat(sock, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "mode %o", st.st_mode & 0777);
	snprintf(spec, sizeof spec, "unix:%s", sock);
	cr_assert_str_eq(httpd_bound(srv, 0), spec);
	cr_assert_null(httpd_bound(srv, 1));
	other = httpd_new(loop, NULL, handler, &app);
	cr_assert_eq(httpd_listen(other, spec, NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "already listening"), "%s", cause);
	free(cause);
	httpd_free(other);
	cr_assert_eq(access(sock, F_OK), 0, "a refused server leaves it be");
	httpd_free(srv);
	srv = NULL;
	cr_assert_eq(access(sock, F_OK), -1);

	/* What a killed server leaves: a socket file nobody answers on. */
	memset(&sun, 0, sizeof sun);
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sun, sizeof sun), 0);
	close(fd);
	start(NULL);
	close(client_unix());

	cr_assert_eq(httpd_listen(srv, "unix:", NULL, NULL, &cause), -1);
	free(cause);

	/* Not a socket: left alone. */
	snprintf(spec, sizeof spec, "unix:%s/file", dir);
	cr_assert_eq(util_write_file(spec + 5, "x"), 0);
	cr_assert_eq(httpd_listen(srv, spec, NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "not a socket"), "%s", cause);
	free(cause);
}

Test(httpd, tcp_listeners)
{
	struct buf	 got = { 0 };
	char		*cause;
	int		 fd;

	start(NULL);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", NULL, NULL, &cause),
	    0);
	fd = client_tcp(httpd_bound(srv, 1));
	puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
	cr_assert_eq(get(fd, &got, "hello", 2), 0);
	close(fd);
	if (httpd_listen(srv, "tcp:[::1]:0", NULL, NULL, &cause) == 0)
		cr_assert(strncmp(httpd_bound(srv, 2), "tcp:[::1]:", 10) == 0,
		    "%s", httpd_bound(srv, 2));
	else
		free(cause);	/* no IPv6 here */

	cr_assert_eq(httpd_listen(srv, "tcp:0.0.0.0:0", NULL, NULL, &cause),
	    -1);
	cr_assert_not_null(strstr(cause, "0.0.0.0"), "%s", cause);
	cr_assert_not_null(strstr(cause, "--tls-cert"), "%s", cause);
	cr_assert_not_null(strstr(cause, "--tls-key"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:[::]:0", NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "--tls-cert"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp::0", NULL, NULL, &cause), -1);
	cr_assert_not_null(strstr(cause, "--tls-cert"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1", NULL, NULL, &cause),
	    -1);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "http://x", NULL, NULL, &cause), -1);
	free(cause);
	buf_free(&got);
}

/* --- curl, on the unix socket and over TLS --------------------------------- */

/*
 * Run argv to its end, the loop running meanwhile: its exit status; its
 * standard output in DIR/stdout.
 */
static int
run_child(char *const argv[], double secs)
{
	double	end = now() + secs;
	char	path[300];
	pid_t	pid, w;
	int	status, devnull, fd;

	snprintf(path, sizeof path, "%s/stdout", dir);
	pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0) {
		devnull = open("/dev/null", O_RDWR);
		fd = open(path, O_WRONLY|O_CREAT|O_TRUNC, 0600);
		dup2(devnull, 0);
		dup2(fd, 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	while ((w = waitpid(pid, &status, WNOHANG)) == 0) {
		if (now() > end) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			cr_assert_fail("%s did not finish", argv[0]);
		}
		turn();
	}
	cr_assert_eq(w, pid);
	return (WIFEXITED(status) ? WEXITSTATUS(status) : 128);
}

static void
make_cert(const char *cert, const char *key)
{
	char	cmd[1024];

	snprintf(cmd, sizeof cmd, "openssl req -x509 -newkey rsa:2048 -nodes "
	    "-subj /CN=localhost -addext "
	    "subjectAltName=DNS:localhost,IP:127.0.0.1 -days 2 "
	    "-keyout %s -out %s 2>/dev/null", key, cert);
	cr_assert_eq(system(cmd), 0, "openssl req failed");
}

/* curl's chunked upload with Expect, and two requests on one connection. */
Test(httpd, curl_unix_upload_and_reuse)
{
	char	 in[300], out[300], *text, *data;
	char	*up_argv[] = { "curl", "-sS", "--unix-socket", sock, "-T", in,
		    "-H", "Transfer-Encoding: chunked",
		    "-H", "Expect: 100-continue", "-o", out,
		    "http://localhost/echo", NULL };
	char	*two_argv[] = { "curl", "-sS", "--unix-socket", sock,
		    "-w", "%{num_connects}", "-o", out, "-o", in,
		    "http://localhost/hello",
		    "http://localhost/created", NULL };
	size_t	 len, i;

	snprintf(in, sizeof in, "%s/in", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	data = xmalloc(300001);
	for (i = 0; i < 300000; i++)
		data[i] = 'a' + i % 26;
	data[i] = '\0';
	cr_assert_eq(util_write_file(in, data), 0);
	start(NULL);
	cr_assert_eq(run_child(up_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 1024 * 1024);
	cr_assert_not_null(text);
	cr_assert_eq(len, 300000);
	cr_assert(strcmp(text, data) == 0);
	free(text);
	free(data);
	cr_assert_eq(run_child(two_argv, 10), 0, "curl failed");
	cr_assert_eq(app.requests, 3);
	text = util_read_file(in, &len, 1024);
	cr_assert_str_eq(text, "{}");
	free(text);
	snprintf(in, sizeof in, "%s/stdout", dir);
	text = util_read_file(in, &len, 1024);
	cr_assert_str_eq(text, "10", "connections made: %s", text);
	free(text);
}

Test(httpd, tls_with_curl)
{
	char	 cert[300], key[300], out[300], url[300], *cause, *text;
	char	 body[8192];
	char	*get_argv[] = { "curl", "-sS", "--cacert", cert, "-o", out,
		    "-H", "Authorization: Bearer tok", url, NULL };
	char	*post_argv[] = { "curl", "-sS", "--cacert", cert, "-o", out,
		    "-H", "Authorization: Bearer tok", "--data-binary", body,
		    url, NULL };
	size_t	 len;

	snprintf(cert, sizeof cert, "%s/cert.pem", dir);
	snprintf(key, sizeof key, "%s/key.pem", dir);
	snprintf(out, sizeof out, "%s/out", dir);
	make_cert(cert, key);
	start(NULL);
	httpd_set_token(srv, "tok", NULL);
	cr_assert_eq(httpd_listen(srv, "tcp:0.0.0.0:0", cert, key, &cause), 0,
	    "%s", cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", cert, key, &cause),
	    0, "%s", cause);
	snprintf(url, sizeof url, "https://127.0.0.1:%s/hello",
	    strrchr(httpd_bound(srv, 2), ':') + 1);
	cr_assert_eq(run_child(get_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 1024);
	cr_assert_not_null(text);
	cr_assert_str_eq(text, "hello");
	free(text);

	/* A body over several TLS records, echoed back. */
	memset(body, 'q', sizeof body - 1);
	body[sizeof body - 1] = '\0';
	snprintf(url, sizeof url, "https://127.0.0.1:%s/echo",
	    strrchr(httpd_bound(srv, 2), ':') + 1);
	cr_assert_eq(run_child(post_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 65536);
	cr_assert_not_null(text);
	cr_assert_eq(len, sizeof body - 1);
	cr_assert_str_eq(text, body);
	free(text);

	/* Megabytes out through TLS, past out_high and drained. */
	snprintf(url, sizeof url, "https://127.0.0.1:%s/big",
	    strrchr(httpd_bound(srv, 2), ':') + 1);
	cr_assert_eq(run_child(get_argv, 10), 0, "curl failed");
	text = util_read_file(out, &len, 64 * 1024 * 1024);
	cr_assert_not_null(text);
	cr_assert_gt(len, HTTPD_OUT_HIGH);
	cr_assert_str_eq(text + len - 3, "END");
	cr_assert_eq(strspn(text, "x"), len - 3);
	cr_assert_eq(app.drained, 1);
	free(text);

	/* Plain HTTP to it: no answer, the connection dropped, no harm. */
	{
		struct buf	got = { 0 };
		int		fd;

		fd = client_tcp(httpd_bound(srv, 2));
		puts_(fd, "GET /hello HTTP/1.1\r\n\r\n");
		cr_assert_eq(get(fd, &got, NULL, 2), 1);
		cr_assert_null(got.data != NULL ? strstr(got.data, "hello") :
		    NULL);
		close(fd);
		buf_free(&got);
		cr_assert_eq(run_child(get_argv, 10), 0, "curl failed after");
	}

	/* Errors name the file and mbedTLS's reason. */
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", out, key, &cause),
	    -1);
	cr_assert(strncmp(cause, out, strlen(out)) == 0, "%s", cause);
	cr_assert_not_null(strstr(cause, "X509"), "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", cert, cert, &cause),
	    -1);
	cr_assert(strncmp(cause, cert, strlen(cert)) == 0, "%s", cause);
	free(cause);
	cr_assert_eq(httpd_listen(srv, "tcp:127.0.0.1:0", cert, NULL, &cause),
	    -1);
	free(cause);
}
