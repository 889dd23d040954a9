/*
 * An exec's event stream as the client reads it (client.c's other half):
 * the server's SSE, bounded, into our stdout and stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "client.h"

/*
 * An exec's event stream, fed in as it arrives: stdout and stderr bytes
 * to fds (each -1: collected into out[], at most max each), what a full
 * fd did not take kept in pend[] until client_stream_flush.
 */
void
client_stream_init(struct client_stream *s, int out_fd, int err_fd,
    size_t max)
{
	memset(s, 0, sizeof *s);
	s->id = -1;
	s->fd[0] = out_fd;
	s->fd[1] = err_fd;
	s->max = max;
}

void
client_stream_free(struct client_stream *s)
{
	int	i;

	wire_sse_free(&s->sse);
	for (i = 0; i < 2; i++) {
		buf_free(&s->pend[i]);
		buf_free(&s->out[i]);
	}
	json_decref(s->exit);
	free(s->cause);
	memset(s, 0, sizeof *s);
}

/* Bytes of stream i: to its fd as far as it takes them, or collected. */
static int
client_stream_out(struct client_stream *s, int i, const unsigned char *p,
    size_t len)
{
	ssize_t	n;
	size_t	take;

	if (s->fd[i] == -1) {
		take = len;
		if (s->out[i].len + take > s->max) {
			take = s->max - s->out[i].len;
			s->truncated[i] = 1;
		}
		buf_add(&s->out[i], p, take);
		return (0);
	}
	while (s->pend[i].len == 0 && len > 0) {
		if ((n = write(s->fd[i], p, len)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				break;
			s->write_errno = errno;
			xasprintf(&s->cause, "%s: %s", i == 0 ? "stdout" :
			    "stderr", strerror(errno));
			return (-1);
		}
		p += n;
		len -= n;
	}
	if (len > 0)
		buf_add(&s->pend[i], p, len);
	return (0);
}

/* One whole event. */
static int
client_stream_event(struct client_stream *s, const char *name,
    const char *data, size_t len)
{
	unsigned char	*raw;
	json_t		*j;
	long long	 id;
	size_t		 n;
	int		 i, ret;

	if (strcmp(name, QSUP_EVENT_STDOUT) == 0 ||
	    strcmp(name, QSUP_EVENT_STDERR) == 0) {
		i = strcmp(name, QSUP_EVENT_STDERR) == 0;
		raw = xmalloc(len * 3 / 4 + 3);
		n = util_base64_decode(data, len, raw);
		ret = client_stream_out(s, i, raw, n);
		free(raw);
		return (ret);
	}
	if (strcmp(name, QSUP_EVENT_START) == 0) {
		if ((j = json_read(data, len, 0)) == NULL ||
		    json_path_int(j, "id", &id) == -1 || id < 0) {
			json_decref(j);
			s->cause = xstrdup("a start event without an id");
			return (-1);
		}
		json_decref(j);
		s->id = id;
		return (0);
	}
	if (strcmp(name, QSUP_EVENT_EXIT) == 0) {
		if ((j = json_read(data, len, 0)) == NULL) {
			s->cause = xstrdup("an exit event that is not a JSON "
			    "object");
			return (-1);
		}
		s->exit = j;
		return (0);
	}
	/* Events this client does not know of are for newer ones. */
	return (0);
}

/*
 * Take event-stream bytes: the bytes used (all of them, unless the exit
 * event came, after which nothing more is read), or -1 with s->cause.
 */
ssize_t
client_stream_feed(struct client_stream *s, const char *p, size_t len)
{
	const char	*why;
	size_t		 used = 0;
	ssize_t		 n;
	int		 ready;

	while (used < len && s->exit == NULL) {
		n = wire_sse_feed(&s->sse, p + used, len - used, &ready, &why);
		if (n == -1) {
			xasprintf(&s->cause, "the exec's event stream broke: "
			    "%s", why);
			return (-1);
		}
		used += n;
		if (ready && client_stream_event(s, wire_sse_name(&s->sse),
		    s->sse.data.data != NULL ? s->sse.data.data : "",
		    s->sse.data.len) == -1)
			return (-1);
	}
	return (s->exit != NULL ? (ssize_t)len : (ssize_t)used);
}

/* Is output waiting for a full fd? */
int
client_stream_pending(const struct client_stream *s)
{
	return (s->pend[0].len > 0 || s->pend[1].len > 0);
}

/* Write what waits, as far as the fds take it: 0, or -1 with s->cause. */
int
client_stream_flush(struct client_stream *s)
{
	ssize_t	n;
	int	i;

	for (i = 0; i < 2; i++) {
		while (s->pend[i].len > 0) {
			n = write(s->fd[i], s->pend[i].data, s->pend[i].len);
			if (n == -1 && errno == EINTR)
				continue;
			if (n == -1 && errno == EAGAIN)
				break;
			if (n == -1) {
				s->write_errno = errno;
				if (s->cause == NULL)
					xasprintf(&s->cause, "%s: %s", i == 0 ?
					    "stdout" : "stderr",
					    strerror(errno));
				return (-1);
			}
			buf_consume(&s->pend[i], n);
		}
	}
	return (0);
}

/*
 * qsup exec's exit status for the exit event (docs/api.md): the command's
 * status, 128+N for signal N, 124 for its timeout, 125 (with *cause) when
 * there is neither. A command that could not be started has its 126 or
 * 127 and the reason in *cause.
 */
int
client_stream_status(const struct client_stream *s, char **cause)
{
	json_t		*st, *sig, *err;
	long long	 v;

	*cause = NULL;
	if (s->exit == NULL) {
		*cause = xstrdup(s->cause != NULL ? s->cause :
		    "the exec's stream ended before its exit event");
		return (QSUP_EXIT_ERROR);
	}
	st = json_object_get(s->exit, "status");
	sig = json_object_get(s->exit, "signal");
	err = json_object_get(s->exit, "error");
	if (json_is_string(err))
		*cause = xstrdup(json_string_value(err));
	if (json_is_true(json_object_get(s->exit, "timed_out")))
		return (QSUP_EXIT_TIMEOUT);
	if (json_is_integer(st)) {
		v = json_integer_value(st);
		if (v >= 0 && v <= 255)
			return ((int)v);
	}
	if (json_is_integer(sig)) {
		v = json_integer_value(sig);
		if (v >= 1 && v <= 64)
			return (128 + (int)v);
	}
	if (*cause == NULL)
		*cause = xstrdup("an exit event with neither a status nor a "
		    "signal");
	return (QSUP_EXIT_ERROR);
}
