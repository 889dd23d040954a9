/*
 * Docker's credential helpers: an auth file whose credHelpers names one
 * for a registry, or whose credsStore names one for all, keeps the
 * credentials in "docker-credential-NAME" (found on PATH), which prints
 * them as JSON {"Username": ..., "Secret": ...} when run with "get" and
 * the registry's host on its stdin. The helper is a program of the
 * user's, but what it prints is parsed as untrusted (fuzzed): bounded,
 * within a deadline, killed past it.
 */
#include <sys/wait.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "image_int.h"

#define IMAGE_CRED_NAME_MAX	64
#define IMAGE_CRED_OUT_MAX	(64 * 1024)	/* bytes read of its output */
#define IMAGE_CRED_DEADLINE	10		/* seconds it may take */
#define IMAGE_CRED_SAY		200		/* bytes of it in messages */

/*
 * The helper an auth file's text names for registry: credHelpers[registry],
 * else credsStore; NULL if none. A name of letters, digits, '.', '_' and
 * '-' only: it becomes a program's name on PATH, never a path.
 */
char *
image_cred_helper(const char *text, size_t len, const char *registry,
    char **cause)
{
	json_t		*j;
	const char	*name;
	char		*out = NULL;
	size_t		 i;

	*cause = NULL;
	if ((j = json_loadb(text, len, 0, NULL)) == NULL ||
	    !json_is_object(j)) {
		json_decref(j);
		return (NULL);
	}
	if ((name = json_string_value(json_object_get(json_object_get(j,
	    "credHelpers"), registry))) == NULL)
		name = json_string_value(json_object_get(j, "credsStore"));
	if (name != NULL && *name != '\0') {
		for (i = 0; name[i] != '\0' && i <= IMAGE_CRED_NAME_MAX; i++) {
			if (!isalnum((unsigned char)name[i]) &&
			    strchr("._-", name[i]) == NULL)
				break;
		}
		if (name[i] != '\0' || i > IMAGE_CRED_NAME_MAX || name[0] == '.')
			xasprintf(cause, "the credential helper's name is not "
			    "one (letters, digits, '.', '_', '-', at most %d)",
			    IMAGE_CRED_NAME_MAX);
		else
			out = xstrdup(name);
	}
	json_decref(j);
	return (out);
}

/* Base64 of len bytes, as an "auth" of an auth file holds them. */
static char *
image_cred_base64(const unsigned char *p, size_t len)
{
	static const char	 t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	char			*out, *o;
	uint32_t		 v;
	size_t			 i;

	out = o = xmalloc((len + 2) / 3 * 4 + 1);
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = t[v >> 18];
		*o++ = t[(v >> 12) & 63];
		*o++ = t[(v >> 6) & 63];
		*o++ = t[v & 63];
	}
	if (i < len) {
		v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		*o++ = t[v >> 18];
		*o++ = t[(v >> 12) & 63];
		*o++ = i + 1 < len ? t[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	*o = '\0';
	return (out);
}

/*
 * A helper's "get" output: {"Username": U, "Secret": S} as base64 of
 * U:S; NULL with *cause naming the field otherwise. Docker's identity
 * tokens (Username "<token>") are for its own OAuth flow: refused.
 */
char *
image_cred_parse(const char *text, size_t len, char **cause)
{
	json_t		*j, *u, *s;
	const char	*us, *ss;
	char		*pair, *out = NULL;
	size_t		 ul, sl;

	*cause = NULL;
	if ((j = json_loadb(text, len, 0, NULL)) == NULL ||
	    !json_is_object(j)) {
		xasprintf(cause, "its output is not a JSON object");
		json_decref(j);
		return (NULL);
	}
	u = json_object_get(j, "Username");
	s = json_object_get(j, "Secret");
	if (!json_is_string(u))
		xasprintf(cause, "\"Username\" is missing or not a string");
	else if (!json_is_string(s) || json_string_length(s) == 0)
		xasprintf(cause, "\"Secret\" is missing, empty or not a string");
	else if (strcmp(json_string_value(u), "<token>") == 0)
		xasprintf(cause, "it gives an identity token (Username "
		    "\"<token>\"), which qsup does not use");
	else {
		us = json_string_value(u);
		ss = json_string_value(s);
		ul = json_string_length(u);
		sl = json_string_length(s);
		/* A NUL or ':' in the user, a NUL in the secret: not Basic. */
		if (strlen(us) != ul || strchr(us, ':') != NULL ||
		    strlen(ss) != sl)
			xasprintf(cause, "\"Username\" has a ':' or a NUL, or "
			    "\"Secret\" a NUL");
		else {
			xasprintf(&pair, "%s:%s", us, ss);
			out = image_cred_base64((unsigned char *)pair, ul + 1 +
			    sl);
			explicit_bzero(pair, ul + 1 + sl);
			free(pair);
		}
	}
	json_decref(j);
	return (out);
}

/* Its output, for a message: the first line, printable, bounded. */
static char *
image_cred_say(const struct buf *b)
{
	char	*s;
	size_t	 i, n = 0;

	s = xmalloc(IMAGE_CRED_SAY + 1);
	for (i = 0; i < b->len && n < IMAGE_CRED_SAY; i++) {
		if (b->data[i] == '\n' && n > 0)
			break;
		if ((unsigned char)b->data[i] >= 0x20 &&
		    (unsigned char)b->data[i] < 0x7f)
			s[n++] = b->data[i];
	}
	s[n] = '\0';
	return (s);
}

/*
 * Read fd (out) and fd (err) into their buffers until both close or the
 * deadline: 0, or -1 when the deadline passed. over[i]: fd[i] gave more
 * than IMAGE_CRED_OUT_MAX bytes (the rest read and dropped).
 */
static int
image_cred_read(int fd[2], struct buf b[2], int over[2], double deadline)
{
	struct pollfd	 pfd[2];
	char		 chunk[4096];
	ssize_t		 n;
	double		 left;
	int		 i, open = 2;

	while (open > 0) {
		if ((left = deadline - util_now()) <= 0)
			return (-1);
		for (i = 0; i < 2; i++) {
			pfd[i].fd = fd[i];
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, 2, (int)(left * 1000) + 1) == -1) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		for (i = 0; i < 2; i++) {
			if (fd[i] == -1 || pfd[i].revents == 0)
				continue;
			n = read(fd[i], chunk, sizeof chunk);
			if (n == -1 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (n <= 0) {
				close(fd[i]);
				fd[i] = -1;
				open--;
				continue;
			}
			/* Past the bound: read on (its writes must not
			 * block), keep nothing more. */
			if (b[i].len + (size_t)n > IMAGE_CRED_OUT_MAX)
				over[i] = 1;
			else
				buf_add(&b[i], chunk, (size_t)n);
		}
	}
	return (0);
}

/*
 * prog get, started in a process group of its own; our ends of its
 * stdin, stdout and stderr in io[0..2]. Its pid, or -1 with *cause.
 */
static pid_t
image_cred_spawn(const char *prog, int io[3], char **cause)
{
	int	p[3][2], i, n;
	pid_t	pid = -1;

	for (n = 0; n < 3; n++) {
		if (pipe2(p[n], O_CLOEXEC) == -1) {
			xasprintf(cause, "%s: pipe: %s", prog, strerror(errno));
			goto fail;
		}
	}
	if ((pid = fork()) == -1) {
		xasprintf(cause, "%s: fork: %s", prog, strerror(errno));
		goto fail;
	}
	if (pid == 0) {
		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(p[0][0], STDIN_FILENO) == -1 ||
		    dup2(p[1][1], STDOUT_FILENO) == -1 ||
		    dup2(p[2][1], STDERR_FILENO) == -1)
			_exit(126);
		closefrom(3);
		execlp(prog, prog, "get", (char *)NULL);
		dprintf(STDERR_FILENO, "%s: %s\n", prog, strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	close(p[0][0]);
	close(p[1][1]);
	close(p[2][1]);
	io[0] = p[0][1];
	io[1] = p[1][0];
	io[2] = p[2][0];
	return (pid);
fail:
	for (i = 0; i < n; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	return (-1);
}

/*
 * Run "docker-credential-NAME get" with registry on its stdin: the
 * credentials as base64 of USER:SECRET, or NULL with *cause naming the
 * helper and what went wrong. NULL without *cause: it has none for this
 * registry (its "credentials not found": anonymous, as docker goes on).
 */
char *
image_cred_get(const char *name, const char *registry, char **cause)
{
	struct buf	 b[2] = { { 0 }, { 0 } };
	struct sigaction sa, old;
	char		*prog, *say, *why, *out = NULL;
	int		 io[3], fd[2], over[2] = { 0, 0 };
	int		 status = 0, timed = 0;
	double		 deadline;
	pid_t		 pid, w;
	size_t		 len;

	*cause = NULL;
	xasprintf(&prog, "docker-credential-%s", name);
	if ((pid = image_cred_spawn(prog, io, cause)) == -1) {
		free(prog);
		return (NULL);
	}
	/* The host alone, as docker gives it; a small write: no block. */
	len = strlen(registry);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old);
	/* Short, or EPIPE: it exited without reading; its status says. */
	(void)!write(io[0], registry, len);
	close(io[0]);
	sigaction(SIGPIPE, &old, NULL);
	fd[0] = io[1];
	fd[1] = io[2];
	deadline = util_now() + IMAGE_CRED_DEADLINE;
	if (image_cred_read(fd, b, over, deadline) == -1)
		timed = 1;
	if (fd[0] != -1)
		close(fd[0]);
	if (fd[1] != -1)
		close(fd[1]);
	/* Its output closed, it may still linger: the same deadline. */
	while (!timed && (w = waitpid(pid, &status, WNOHANG)) != pid) {
		if (w == -1 && errno != EINTR)
			break;
		if (util_now() >= deadline)
			timed = 1;
		else
			usleep(10 * 1000);
	}
	if (timed) {
		(void)kill(-pid, SIGKILL);
		while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
			/* nothing */;
	}
	if (timed)
		xasprintf(cause, "credential helper %s: no answer in %d s: "
		    "killed", prog, IMAGE_CRED_DEADLINE);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		xasprintf(cause, "credential helper %s: not found on PATH "
		    "(named by the auth file)", prog);
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		/* Docker's helpers say so on stdout, others on stderr. */
		say = image_cred_say(b[1].len > 0 ? &b[1] : &b[0]);
		if (strstr(say, "credentials not found") == NULL)
			xasprintf(cause, "credential helper %s get failed "
			    "(%s %d): %s", prog, WIFSIGNALED(status) ?
			    "signal" : "exit", WIFSIGNALED(status) ?
			    WTERMSIG(status) : WEXITSTATUS(status), *say !=
			    '\0' ? say : "(no output)");
		free(say);
	} else if (over[0])
		xasprintf(cause, "credential helper %s: its output is more "
		    "than %d bytes", prog, IMAGE_CRED_OUT_MAX);
	else if ((out = image_cred_parse(b[0].data != NULL ? b[0].data : "",
	    b[0].len, &why)) == NULL) {
		xasprintf(cause, "credential helper %s for %s: %s", prog,
		    registry, why);
		free(why);
	}
	if (b[0].data != NULL)
		explicit_bzero(b[0].data, b[0].len);
	buf_free(&b[0]);
	buf_free(&b[1]);
	free(prog);
	return (out);
}
