/*
 * Small helpers: console logging, allocation that never returns NULL,
 * byte buffers, base64 and JSON string output.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* One write per line, so lines from the agent never interleave. */
static void
log_vwrite(int with_errno, const char *fmt, va_list ap)
{
	char	line[1024];
	int	saved = errno, n, m;

	n = snprintf(line, sizeof line, "qsup-agent: ");
	m = vsnprintf(line + n, sizeof line - n, fmt, ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof line - 2)
		n = sizeof line - 2;
	if (with_errno) {
		m = snprintf(line + n, sizeof line - n, ": %s",
		    strerror(saved));
		if (m > 0)
			n += m;
		if ((size_t)n > sizeof line - 2)
			n = sizeof line - 2;
	}
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(1, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(0, fmt, ap);
	va_end(ap);
}

/*
 * What fatalx runs before it exits: PID 1 must never exit (the kernel
 * panics), so the agent's powers the guest off instead. Set by main, so
 * that this file, at the bottom, calls nothing above it.
 */
static void	(*util_fatal_cb)(void *);
static void	 *util_fatal_arg;

void
util_set_fatal(void (*cb)(void *), void *arg)
{
	util_fatal_cb = cb;
	util_fatal_arg = arg;
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(0, fmt, ap);
	va_end(ap);
	if (util_fatal_cb != NULL)
		util_fatal_cb(util_fatal_arg);
	_exit(1);
}

/* The first setup error wins: it is the cause, later ones follow from it. */
void
util_set_error(char **error, const char *fmt, ...)
{
	va_list	 ap;
	char	*msg;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		msg = NULL;
	va_end(ap);
	if (msg == NULL)
		fatalx("out of memory");
	log_warnx("%s", msg);
	if (*error == NULL)
		*error = msg;
	else
		free(msg);
}

void *
xmalloc(size_t size)
{
	void	*p;

	if (size == 0)
		size = 1;
	if ((p = malloc(size)) == NULL)
		fatalx("out of memory");
	return (p);
}

void *
xcalloc(size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if ((p = calloc(n, size)) == NULL)
		fatalx("out of memory");
	return (p);
}

void *
xreallocarray(void *old, size_t n, size_t size)
{
	void	*p;

	if (n == 0 || size == 0)
		n = size = 1;
	if (n > SIZE_MAX / size)
		fatalx("allocation overflow");
	if ((p = realloc(old, n * size)) == NULL)
		fatalx("out of memory");
	return (p);
}

char *
xstrdup(const char *s)
{
	return (xstrndup(s, strlen(s)));
}

char *
xstrndup(const char *s, size_t len)
{
	char	*p;

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
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n == -1)
		fatalx("out of memory");
	return (n);
}

long long
util_us(clockid_t clock)
{
	struct timespec	ts;

	if (clock_gettime(clock, &ts) == -1)
		return (0);
	return ((long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000);
}

long long
util_ms(clockid_t clock)
{
	return (util_us(clock) / 1000);
}

/*
 * Read what fd holds, at most max bytes; the result is NUL-terminated.
 * fd stays open.
 */
int
util_read_fd(int fd, char **out, size_t *outlen, size_t max)
{
	struct abuf	b = { 0 };
	char		chunk[4096];
	ssize_t		n;
	int		ret = -1;

	for (;;) {
		n = read(fd, chunk, sizeof chunk);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto out;
		if (n == 0)
			break;
		if (b.len + n > max) {
			errno = EFBIG;
			goto out;
		}
		abuf_add(&b, chunk, n);
	}
	abuf_add(&b, "", 0);
	*out = b.data;
	*outlen = b.len;
	b.data = NULL;
	ret = 0;
out:
	abuf_free(&b);
	return (ret);
}

/* Read a whole file of at most max bytes; the result is NUL-terminated. */
int
util_read_file(const char *path, char **out, size_t *outlen, size_t max)
{
	int	fd, ret, saved;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	ret = util_read_fd(fd, out, outlen, max);
	saved = errno;
	close(fd);
	errno = saved;
	return (ret);
}

/*
 * Is path a regular file (its own name, no link followed) holding
 * exactly text? A write that would change nothing is skipped so: on a
 * disk image's root restored from a template, a file written at the
 * template already holds it, and writing again costs ext4's journal.
 */
int
util_file_is(const char *path, const char *text)
{
	struct stat	 sb;
	size_t		 len = strlen(text), got;
	char		*have;
	int		 fd, same;

	if ((fd = open(path, O_RDONLY|O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC)) == -1)
		return (0);
	if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    (size_t)sb.st_size != len ||
	    util_read_fd(fd, &have, &got, len + 1) == -1) {
		close(fd);
		return (0);
	}
	close(fd);
	same = got == len && memcmp(have, text, len) == 0;
	free(have);
	return (same);
}

int
util_mkdir_p(const char *path, mode_t mode)
{
	char	*copy, *p;
	int	 ret = -1;

	copy = xstrdup(path);
	for (p = copy + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		if (p[-1] != '/') {
			char c = *p;

			*p = '\0';
			if (mkdir(copy, mode) == -1 && errno != EEXIST)
				goto out;
			*p = c;
		}
		if (*p == '\0')
			break;
	}
	ret = 0;
out:
	free(copy);
	return (ret);
}

static void
abuf_reserve(struct abuf *b, size_t more)
{
	size_t	need, size;

	if (b->off > 0 && b->off == b->len) {
		b->off = b->len = 0;
	}
	if (more > SIZE_MAX - b->len - 1)
		fatalx("buffer overflow");
	need = b->len + more + 1;
	if (need <= b->size)
		return;
	/* Reclaim the consumed front before growing. */
	if (b->off > 0) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
		need = b->len + more + 1;
		if (need <= b->size)
			return;
	}
	size = b->size < 256 ? 256 : b->size;
	while (size < need)
		size *= 2;
	b->data = xreallocarray(b->data, 1, size);
	b->size = size;
}

void
abuf_add(struct abuf *b, const void *p, size_t len)
{
	abuf_reserve(b, len);
	if (len > 0)
		memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void
abuf_printf(struct abuf *b, const char *fmt, ...)
{
	va_list	ap;
	char	small[256], *big;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		abuf_add(b, small, n);
		return;
	}
	va_start(ap, fmt);
	n = vasprintf(&big, fmt, ap);
	va_end(ap);
	if (n == -1)
		fatalx("out of memory");
	abuf_add(b, big, n);
	free(big);
}

size_t
abuf_used(const struct abuf *b)
{
	return (b->len - b->off);
}

char *
abuf_start(const struct abuf *b)
{
	return (b->data + b->off);
}

void
abuf_consume(struct abuf *b, size_t n)
{
	if (n > b->len - b->off)
		n = b->len - b->off;
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

void
abuf_reset(struct abuf *b)
{
	b->off = b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

void
abuf_free(struct abuf *b)
{
	free(b->data);
	b->data = NULL;
	b->off = b->len = b->size = 0;
}

void
abuf_base64(struct abuf *b, const void *in, size_t len)
{
	static const char	 tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char	*p = in;
	char			*o;
	size_t			 i;
	uint32_t		 v;

	abuf_reserve(b, (len + 2) / 3 * 4);
	o = b->data + b->len;
	for (i = 0; i + 2 < len; i += 3) {
		v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = tab[(v >> 6) & 63];
		*o++ = tab[v & 63];
	}
	if (i < len) {
		v = (uint32_t)p[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)p[i + 1] << 8;
		*o++ = tab[v >> 18];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		*o++ = '=';
	}
	b->len = o - b->data;
	b->data[b->len] = '\0';
}

/* abuf_add as the wire layer's writers want it. */
void
abuf_put(void *arg, const void *data, size_t len)
{
	abuf_add(arg, data, len);
}
