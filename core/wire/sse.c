/*
 * The one Server-Sent Events codec: the writer the agent frames exec
 * events with ("event: NAME\ndata: DATA\n\n", the data never holding a
 * newline), and the incremental reader qsup splits an event stream with
 * as it arrives, in pieces cut anywhere. The reader takes only the fields
 * the protocol uses, and an event (name and data) stays within
 * WIRE_EVENT_MAX however many lines it is sent in.
 */
#include <stdlib.h>
#include <string.h>

#include "wire.h"

/* Append; out of memory is the end, as for the rest of either program. */
static void
wire_buf_add(struct wire_buf *b, const void *p, size_t len)
{
	size_t	 size;
	char	*data;

	if (b->len + len + 1 > b->size) {
		size = b->size != 0 ? b->size : 256;
		while (size < b->len + len + 1)
			size *= 2;
		if ((data = realloc(b->data, size)) == NULL)
			abort();
		b->data = data;
		b->size = size;
	}
	if (len > 0)
		memcpy(b->data + b->len, p, len);
	b->len += len;
	b->data[b->len] = '\0';
}

static void
wire_buf_clear(struct wire_buf *b)
{
	b->len = 0;
	if (b->data != NULL)
		b->data[0] = '\0';
}

/* The bytes an event with dlen bytes of data takes, framing and all. */
size_t
wire_sse_size(const char *name, size_t dlen)
{
	return (strlen("event: \ndata: \n\n") + strlen(name) + dlen);
}

/* What comes before an event's data. */
void
wire_sse_start(wire_put_cb *put, void *arg, const char *name)
{
	put(arg, "event: ", 7);
	put(arg, name, strlen(name));
	put(arg, "\ndata: ", 7);
}

/* What ends an event, after its data. */
void
wire_sse_end(wire_put_cb *put, void *arg)
{
	put(arg, "\n\n", 2);
}

/* One whole line of the stream; a blank one ends the event. */
static int
wire_sse_line(struct wire_sse *s, const char *line, size_t len,
    const char **cause)
{
	const char	*value;
	size_t		 nlen, vlen;

	if (len == 0) {
		if (s->have_event || s->data.len > 0)
			s->ready = 1;
		return (0);
	}
	if (memchr(line, '\0', len) != NULL) {
		*cause = "a NUL byte in an event";
		return (-1);
	}
	if (line[0] == ':')
		return (0);
	if ((value = memchr(line, ':', len)) == NULL) {
		nlen = len;
		value = line + len;
	} else {
		nlen = value - line;
		if (++value < line + len && *value == ' ')
			value++;
	}
	vlen = line + len - value;
	if (nlen == 5 && memcmp(line, "event", 5) == 0) {
		if (s->have_event || vlen == 0 || vlen > WIRE_EVENT_NAME_MAX) {
			*cause = "a bad event name";
			return (-1);
		}
		memcpy(s->event, value, vlen);
		s->event[vlen] = '\0';
		s->have_event = 1;
	} else if (nlen == 4 && memcmp(line, "data", 4) == 0) {
		if (s->data.len + vlen + 1 > WIRE_EVENT_MAX) {
			*cause = "an event over " WIRE_STR(WIRE_EVENT_MAX)
			    " bytes";
			return (-1);
		}
		if (s->data.len > 0)
			wire_buf_add(&s->data, "\n", 1);
		wire_buf_add(&s->data, value, vlen);
	} else {
		*cause = "an unknown event field";
		return (-1);
	}
	return (0);
}

/*
 * Take event-stream bytes: returns the bytes used, or -1 when the stream
 * breaks the protocol (*cause, static, says how). When *ready is set, a
 * whole event ends there: its name is wire_sse_name, its data s->data,
 * both good until the next call.
 */
ssize_t
wire_sse_feed(struct wire_sse *s, const char *p, size_t len, int *ready,
    const char **cause)
{
	const char	*nl;
	size_t		 used = 0, n;

	*ready = 0;
	if (s->ready) {
		s->ready = s->have_event = 0;
		s->event[0] = '\0';
		wire_buf_clear(&s->data);
	}
	while (used < len) {
		nl = memchr(p + used, '\n', len - used);
		n = nl == NULL ? len - used : (size_t)(nl - (p + used));
		if (s->line.len + n > WIRE_EVENT_MAX) {
			*cause = "an event line over " WIRE_STR(WIRE_EVENT_MAX)
			    " bytes";
			return (-1);
		}
		wire_buf_add(&s->line, p + used, n);
		used += n;
		if (nl == NULL)
			break;
		used++;
		if (s->line.len > 0 && s->line.data[s->line.len - 1] == '\r')
			s->line.data[--s->line.len] = '\0';
		if (wire_sse_line(s, s->line.data, s->line.len, cause) == -1)
			return (-1);
		wire_buf_clear(&s->line);
		if (s->ready) {
			*ready = 1;
			break;
		}
	}
	return (used);
}

/* The name of the event that is ready: "message" when it had none. */
const char *
wire_sse_name(const struct wire_sse *s)
{
	return (s->have_event ? s->event : "message");
}

/* Whether the stream stopped inside an event. */
int
wire_sse_pending(const struct wire_sse *s)
{
	return (!s->ready && (s->line.len > 0 || s->have_event ||
	    s->data.len > 0));
}

/* Forget any event in progress: a new stream starts. */
void
wire_sse_reset(struct wire_sse *s)
{
	wire_buf_clear(&s->line);
	wire_buf_clear(&s->data);
	s->event[0] = '\0';
	s->have_event = s->ready = 0;
}

void
wire_sse_free(struct wire_sse *s)
{
	free(s->line.data);
	free(s->data.data);
	memset(s, 0, sizeof *s);
}
