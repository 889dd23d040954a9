/*
 * Small helpers: allocation that never fails, time, fds, files.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

void *
xmalloc(size_t size)
{
	void	*p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatalx("out of memory (%zu bytes)", size);
	return (p);
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		fatalx("out of memory (%zu x %zu bytes)", n, size);
	return (p);
}

void *
xrealloc(void *p, size_t size)
{
	return (xreallocarray(p, 1, size));
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	void	*np;

	if (n == 0 || size == 0)
		n = size = 1;
	if (size > SIZE_MAX / n)
		fatalx("allocation overflow (%zu x %zu bytes)", n, size);
	if ((np = realloc(p, n * size)) == NULL)
		fatalx("out of memory (%zu x %zu bytes)", n, size);
	return (np);
}

char *
xstrdup(const char *s)
{
	return (xstrndup(s, strlen(s)));
}

char *
xstrndup(const char *s, size_t n)
{
	char	*p;
	size_t	 len;

	len = strnlen(s, n);
	p = xmalloc(len + 1);
	memcpy(p, s, len);
	p[len] = '\0';
	return (p);
}

int
xasprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = xvasprintf(ret, fmt, ap);
	va_end(ap);
	return (n);
}

int
xvasprintf(char **ret, const char *fmt, va_list ap)
{
	int	n;

	if ((n = vasprintf(ret, fmt, ap)) == -1)
		fatalx("out of memory (formatting)");
	return (n);
}

/* $XDG_CACHE_HOME/qsup or ~/.cache/qsup, created; NULL if neither is set. */
char *
util_cache_dir(void)
{
	const char	*base, *home;
	char		*path;

	if ((base = getenv("XDG_CACHE_HOME")) != NULL && *base == '/')
		xasprintf(&path, "%s/qsup", base);
	else if ((home = getenv("HOME")) != NULL && *home == '/')
		xasprintf(&path, "%s/.cache/qsup", home);
	else
		return (NULL);
	(void)util_mkdir_p(path, 0700);	/* its users say what fails */
	return (path);
}

/* mkdir -p: path and its missing parents; 0, or -1 with errno. */
int
util_mkdir_p(const char *path, mode_t mode)
{
	char	*p, *slash;
	int	 rc = 0, saved = 0;

	p = xstrdup(path);
	for (slash = strchr(p + 1, '/');; slash = strchr(slash + 1, '/')) {
		if (slash != NULL)
			*slash = '\0';
		if (mkdir(p, mode) == -1 && errno != EEXIST && rc == 0) {
			rc = -1;
			saved = errno;
		}
		if (slash == NULL)
			break;
		*slash = '/';
	}
	free(p);
	if (rc == -1)
		errno = saved;
	return (rc);
}

/*
 * Set from a signal handler when qsup must stop at once (run.c: a second
 * signal). Waits that block outside the loop look at it and give up.
 */
volatile sig_atomic_t	 util_stop_now;

/* Monotonic seconds, for phase timings and deadlines. */
double
util_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

int
util_set_nonblock(int fd)
{
	int	flags;

	if ((flags = fcntl(fd, F_GETFL)) == -1)
		return (-1);
	return (fcntl(fd, F_SETFL, flags | O_NONBLOCK));
}

int
util_set_cloexec(int fd, int on)
{
	int	flags;

	if ((flags = fcntl(fd, F_GETFD)) == -1)
		return (-1);
	if (on)
		flags |= FD_CLOEXEC;
	else
		flags &= ~FD_CLOEXEC;
	return (fcntl(fd, F_SETFD, flags));
}

/* Remove a tree without following symlinks; ENOENT is not an error. */
int
util_rm_rf(const char *path)
{
	struct stat	 st;
	DIR		*d;
	struct dirent	*de;
	char		*sub;
	int		 rc = 0;

	if (lstat(path, &st) == -1)
		return (errno == ENOENT ? 0 : -1);
	if (!S_ISDIR(st.st_mode))
		return (unlink(path) == -1 && errno != ENOENT ? -1 : 0);
	if ((d = opendir(path)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		xasprintf(&sub, "%s/%s", path, de->d_name);
		if (util_rm_rf(sub) == -1)
			rc = -1;
		free(sub);
	}
	closedir(d);
	if (rmdir(path) == -1 && errno != ENOENT)
		rc = -1;
	return (rc);
}

/*
 * path made absolute (from the current directory) and normalized,
 * lexically: its links are left as they are.
 */
char *
util_path_absolute(const char *path)
{
	char	 cwd[PATH_MAX], *full, *out;

	if (path[0] == '/' || getcwd(cwd, sizeof cwd) == NULL)
		return (util_path_normalize(path));
	xasprintf(&full, "%s/%s", cwd, path);
	out = util_path_normalize(full);
	free(full);
	return (out);
}

/* "/a//b/./c/../d" to "/a/b/d", lexically (no symlink is looked at). */
char *
util_path_normalize(const char *abs)
{
	char	*copy, *out, *seg, *save, *slash;
	size_t	 len = 0;

	copy = xstrdup(abs);
	out = xmalloc(strlen(abs) + 2);
	out[0] = '\0';
	for (seg = strtok_r(copy, "/", &save); seg != NULL;
	    seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0) {
			if ((slash = strrchr(out, '/')) != NULL)
				*slash = '\0';
			len = strlen(out);
			continue;
		}
		out[len++] = '/';
		strcpy(out + len, seg);
		len += strlen(seg);
	}
	if (len == 0)
		strcpy(out, "/");
	free(copy);
	return (out);
}

/*
 * Run argv (looked up on PATH) with stdin from /dev/null, its stdout (and
 * stderr, if asked) into out, for at most seconds, or until the output
 * holds until. The child is then killed and reaped here, so this is only
 * for before the event loop exists (the loop reaps through ev_child).
 * Returns 0, *timed_out saying whether the deadline ended it; -1 if the
 * child could not be started. At most 64 KiB of output is kept.
 */
int
util_run_capture(char *const argv[], int with_stderr, double seconds,
    const char *until, struct buf *out, int *timed_out)
{
	struct pollfd	pfd;
	char		chunk[4096];
	double		deadline, left;
	pid_t		pid, parent;
	ssize_t		n;
	int		p[2], status, devnull;

	*timed_out = 0;
	parent = getpid();
	if (pipe2(p, O_CLOEXEC) == -1)
		return (-1);
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return (-1);
	}
	if (pid == 0) {
		/* Not outliving qsup, even one killed outright. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		if ((devnull = open("/dev/null", O_RDWR)) != -1) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDERR_FILENO);
		}
		dup2(p[1], STDOUT_FILENO);
		if (with_stderr)
			dup2(p[1], STDERR_FILENO);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(p[1]);
	deadline = util_now() + seconds;
	pfd.fd = p[0];
	pfd.events = POLLIN;
	for (;;) {
		if (util_stop_now)
			break;
		if ((left = deadline - util_now()) <= 0) {
			*timed_out = 1;
			break;
		}
		/* In short steps: util_stop_now is looked at in between. */
		if (poll(&pfd, 1, left > 0.1 ? 100 :
		    (int)(left * 1000) + 1) <= 0)
			continue;
		if ((n = read(p[0], chunk, sizeof chunk)) <= 0)
			break;
		buf_add(out, chunk, n);
		if (until != NULL && strstr(out->data, until) != NULL)
			break;
		if (out->len > 65536)
			buf_consume(out, out->len - 4096);
	}
	close(p[0]);
	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	return (0);
}

/* Create (or truncate) path with the text, mode 0600. */
int
util_write_file(const char *path, const char *text)
{
	size_t	len = strlen(text);
	int	fd, saved;

	if ((fd = open(path, O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0600)) == -1)
		return (-1);
	if (write(fd, text, len) != (ssize_t)len) {
		saved = errno;
		close(fd);
		errno = saved;
		return (-1);
	}
	return (close(fd));
}

/* Where an executable named without a slash is found on PATH. */
char *
util_which(const char *name)
{
	char	*path, *dir, *save, *full;

	if (strchr(name, '/') != NULL || getenv("PATH") == NULL)
		return (xstrdup(name));
	path = xstrdup(getenv("PATH"));
	for (dir = strtok_r(path, ":", &save); dir != NULL;
	    dir = strtok_r(NULL, ":", &save)) {
		xasprintf(&full, "%s/%s", dir, name);
		if (access(full, X_OK) == 0) {
			free(path);
			return (full);
		}
		free(full);
	}
	free(path);
	return (xstrdup(name));
}

/*
 * Read a whole regular file of at most max bytes, NUL-terminated; errno
 * EFBIG if it is larger, EINVAL if it is not a regular file. Opened
 * without waiting and checked on the descriptor itself: a FIFO or a
 * device put where a file should be would block open() or read() for
 * good.
 */
char *
util_read_file(const char *path, size_t *lenp, size_t max)
{
	struct stat	 st;
	char		*buf = NULL;
	size_t		 len = 0, size = 0;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY|O_NONBLOCK|O_NOCTTY|O_CLOEXEC)) == -1)
		return (NULL);
	if (fstat(fd, &st) == -1)
		goto fail;
	if (!S_ISREG(st.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	for (;;) {
		if (size - len < 4096) {
			size = size == 0 ? 8192 : size * 2;
			buf = xrealloc(buf, size + 1);
		}
		n = read(fd, buf + len, size - len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		if (n == 0)
			break;
		len += n;
		if (len > max) {
			errno = EFBIG;
			goto fail;
		}
	}
	close(fd);
	if (buf == NULL)
		buf = xmalloc(1);
	buf[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return (buf);

fail:
	n = errno;
	close(fd);
	free(buf);
	errno = n;
	return (NULL);
}

static int
base64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return (c - 'A');
	if (c >= 'a' && c <= 'z')
		return (c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (c - '0' + 52);
	if (c == '+')
		return (62);
	if (c == '/')
		return (63);
	return (-1);
}

/* Decode base64 into out (room for len * 3 / 4 bytes); returns the size. */
size_t
util_base64_decode(const char *in, size_t len, unsigned char *out)
{
	uint32_t	acc = 0;
	size_t		i, n = 0;
	int		bits = 0, v;

	for (i = 0; i < len; i++) {
		if ((v = base64_value((unsigned char)in[i])) == -1)
			continue;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (acc >> bits) & 0xff;
		}
	}
	return (n);
}

void
buf_add(struct buf *b, const void *data, size_t len)
{
	if (b->len + len + 1 > b->size) {
		b->size = (b->len + len + 1) * 2;
		if (b->size < 256)
			b->size = 256;
		b->data = xrealloc(b->data, b->size);
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void
buf_puts(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	int	 n;

	va_start(ap, fmt);
	n = xvasprintf(&s, fmt, ap);
	va_end(ap);
	buf_add(b, s, n);
	free(s);
}

/* buf_add as the wire layer's writers want it. */
static void
buf_put(void *arg, const void *data, size_t len)
{
	buf_add(arg, data, len);
}

/* Append s as a JSON string literal (the wire layer's one escaping). */
void
buf_json_string(struct buf *b, const char *s)
{
	wire_json_string(buf_put, b, s);
}

/* Append s, or "KEY S\n", in the seed's encoding (the wire layer's). */
void
buf_seed_value(struct buf *b, const char *s)
{
	wire_seed_value(buf_put, b, s);
}

void
buf_seed_line(struct buf *b, const char *key, const char *value)
{
	wire_seed_line(buf_put, b, key, value);
}

/* Drop the first n bytes. */
/* What fd has left, to its end or an error (a reaped child's pipe). */
void
buf_read_fd(struct buf *b, int fd)
{
	char	tmp[4096];
	ssize_t	n;

	while ((n = read(fd, tmp, sizeof tmp)) > 0 ||
	    (n == -1 && errno == EINTR))
		buf_add(b, tmp, n > 0 ? (size_t)n : 0);
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		if (b->data != NULL)
			b->data[0] = '\0';
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->size = 0;
}
