/*
 * Exchanges recorded ("qsup serve --record FILE"): one JSON line per
 * response, for the contract test (tests/contract/check.py) and for a
 * person debugging a client. A line is
 *
 *   {"method":"GET","path":"/v1/sandboxes/a","route":"/v1/sandboxes/{name}",
 *    "status":200,"type":"application/json","allow":null,
 *    "body":"{...}","body_bytes":N,"body_cut":false,
 *    "events":[{"event":"stdout","data":"..."}],"events_cut":false,
 *    "ended":true}
 *
 * route is the pattern the server matched (httpd_set_route), null when
 * none did (a 401 before routing, a 404, a head refused). body is kept
 * for JSON and text only (the first HTTPD_REC_BODY bytes; body_bytes
 * counts all of it), events for an event stream (HTTPD_REC_EVENTS
 * bytes of them at most). ended is false for a response cut short. The
 * file stops growing at HTTPD_REC_FILE bytes, said once in the log.
 * Everything is written with one write(2) per line, O_APPEND, so lines
 * of several servers sharing a file do not interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "httpd.h"
#include "httpd_int.h"

#define HTTPD_REC_BODY		65536		/* of a body, kept */
#define HTTPD_REC_EVENTS	(1024 * 1024)	/* of a stream's events */
#define HTTPD_REC_FILE		(256ULL * 1024 * 1024)

struct httpd_rec {
	int			 fd;
	unsigned long long	 written;
	int			 full;		/* said once */
};

int
httpd_record(struct httpd *h, const char *path, char **cause)
{
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
	    0600)) == -1) {
		xasprintf(cause, "--record %s: %s", path, strerror(errno));
		return (-1);
	}
	h->rec = xcalloc(1, sizeof *h->rec);
	h->rec->fd = fd;
	return (0);
}

void
httpd_record_free(struct httpd *h)
{
	if (h->rec == NULL)
		return;
	close(h->rec->fd);
	free(h->rec);
	h->rec = NULL;
}

void
httpd_set_route(struct httpd_conn *c, const char *route)
{
	c->route = route;
}

/* s, len bytes (no NUL needed), as a JSON string. */
static void
httpd_rec_string(struct buf *b, const char *s, size_t len)
{
	char	*t;

	t = xmalloc(len + 1);
	memcpy(t, s, len);
	t[len] = '\0';
	buf_json_string(b, t);
	free(t);
}

/* The value of the Allow header queued for this response, or NULL. */
static void
httpd_rec_allow(struct buf *b, const struct buf *headers)
{
	const char	*p, *e;

	if (headers->len == 0 ||
	    (p = strstr(headers->data, "Allow: ")) == NULL) {
		buf_puts(b, ",\"allow\":null");
		return;
	}
	p += strlen("Allow: ");
	e = p + strcspn(p, "\r\n");
	buf_puts(b, ",\"allow\":");
	httpd_rec_string(b, p, e - p);
}

/* A response's head goes out: its line begun. */
void
httpd_rec_head(struct httpd_conn *c, int status, const char *type)
{
	struct buf	*b = &c->rec;
	int		 req = c->store != NULL && !c->rejecting;

	if (c->h->rec == NULL)
		return;
	buf_free(b);
	buf_free(&c->rec_events);
	c->rec_on = 1;
	c->rec_text = type != NULL && (strncmp(type, "application/json",
	    16) == 0 || strncmp(type, "text/plain", 10) == 0);
	c->rec_sse = type != NULL && strcmp(type, "text/event-stream") == 0;
	c->rec_bytes = 0;
	c->rec_cut = 0;
	buf_puts(b, "{\"method\":");
	if (req)
		buf_json_string(b, c->req.method);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"path\":");
	if (req)
		buf_json_string(b, c->req.path);
	else
		buf_puts(b, "null");
	buf_puts(b, ",\"route\":");
	if (req && c->route != NULL)
		buf_json_string(b, c->route);
	else
		buf_puts(b, "null");
	buf_printf(b, ",\"status\":%d,\"type\":", status);
	if (type != NULL)
		buf_json_string(b, type);
	else
		buf_puts(b, "null");
	httpd_rec_allow(b, &c->headers);
}

/* Body bytes (a whole one, or a stream's piece). */
void
httpd_rec_body(struct httpd_conn *c, const void *p, size_t len)
{
	size_t	keep;

	if (!c->rec_on || c->rec_sse)
		return;
	if (c->rec_text && c->rec_bytes < HTTPD_REC_BODY) {
		keep = HTTPD_REC_BODY - c->rec_bytes;
		keep = len < keep ? len : keep;
		buf_add(&c->rec_events, p, keep);
	}
	c->rec_bytes += len;
}

/* One event of a stream. */
void
httpd_rec_event(struct httpd_conn *c, const char *name, const void *data,
    size_t len)
{
	struct buf	*b = &c->rec_events;

	if (!c->rec_on || !c->rec_sse)
		return;
	if (b->len + len > HTTPD_REC_EVENTS) {
		c->rec_cut = 1;
		return;
	}
	buf_puts(b, b->len > 0 ? ",{\"event\":" : "{\"event\":");
	buf_json_string(b, name != NULL ? name : "message");
	buf_puts(b, ",\"data\":");
	httpd_rec_string(b, data, len);
	buf_puts(b, "}");
}

/* The response is over (ended 1) or cut short: its line written. */
void
httpd_rec_end(struct httpd_conn *c, int ended)
{
	struct httpd_rec	*r = c->h->rec;
	struct buf		*b = &c->rec;
	ssize_t			 n;

	if (!c->rec_on)
		return;
	c->rec_on = 0;
	if (c->rec_sse) {
		buf_puts(b, ",\"events\":[");
		if (c->rec_events.len > 0)
			buf_add(b, c->rec_events.data, c->rec_events.len);
		buf_printf(b, "],\"events_cut\":%s", c->rec_cut ? "true" :
		    "false");
	} else {
		buf_puts(b, ",\"body\":");
		if (c->rec_text)
			httpd_rec_string(b, c->rec_events.len > 0 ?
			    c->rec_events.data : "", c->rec_events.len);
		else
			buf_puts(b, "null");
		buf_printf(b, ",\"body_bytes\":%zu,\"body_cut\":%s",
		    c->rec_bytes, c->rec_bytes > HTTPD_REC_BODY ? "true" :
		    "false");
	}
	buf_printf(b, ",\"ended\":%s}\n", ended ? "true" : "false");
	if (r != NULL && !r->full) {
		if (r->written + b->len > HTTPD_REC_FILE) {
			r->full = 1;
			log_warnx("--record: %llu bytes recorded, the most; "
			    "no more", r->written);
		} else if ((n = write(r->fd, b->data, b->len)) == -1)
			log_warn("--record");
		else
			r->written += n;
	}
	buf_free(b);
	buf_free(&c->rec_events);
}
