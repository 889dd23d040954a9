/*
 * Request bodies: framed by Content-Length or chunked (the wire layer's
 * lenient decoder), and taken whole (bounded by body_max), streamed to
 * the handler (unbounded, paused at will), or, once the response ended
 * without them, dropped so the connection can take its next request.
 */
#include <stdio.h>
#include <string.h>

#include "httpd.h"
#include "httpd_int.h"

/*
 * The body cannot be taken (too large, badly framed): the handler hears
 * of it through close_cb, the client gets the status if no response had
 * begun, and the connection closes, the rest of the body unread.
 */
void
httpd_body_failed(struct httpd_conn *c, int status, const char *why,
    const char *fields)
{
	log_debug("httpd: %s %s: %s", c->req.method, c->req.path, why);
	c->keep_alive = 0;
	if (c->state != HTTPD_C_REQ) {
		c->state = HTTPD_C_CLOSING;
		return;
	}
	httpd_notify_close(c);
	if (c->dead)
		return;
	if (c->resp == HTTPD_R_NONE)
		httpd_error(c, status, why, fields);
	else
		httpd_conn_close(c, 0);
}

static void
httpd_body_too_large(struct httpd_conn *c)
{
	char	fields[64];

	snprintf(fields, sizeof fields, "\"limit\":\"max_body\",\"max\":%zu",
	    c->h->limits.body_max);
	httpd_body_failed(c, 413, "request body too large", fields);
}

/* One piece of body data, where the mode says it goes. */
static void
httpd_body_piece(struct httpd_conn *c, const char *data, size_t len)
{
	switch (c->body_mode) {
	case HTTPD_B_BUFFER:
		if (c->body.len + len > c->h->limits.body_max) {
			httpd_body_too_large(c);
			return;
		}
		if (len > 0)
			buf_add(&c->body, data, len);
		break;
	case HTTPD_B_STREAM:
		if (len > 0) {
			c->depth++;
			c->body_cb(c, data, len, c->body_arg);
			c->depth--;
		}
		break;
	case HTTPD_B_DISCARD:
		c->discarded += len;
		if (c->discarded > c->h->limits.body_max) {
			/* Not worth reading on: the connection goes. */
			c->keep_alive = 0;
			c->state = HTTPD_C_CLOSING;
		}
		break;
	case HTTPD_B_NONE:
		break;
	}
}

/* The body has ended: the handler gets it, or its end. */
static void
httpd_body_finish(struct httpd_conn *c)
{
	c->body_done = 1;
	if (c->body_mode != HTTPD_B_BUFFER && c->body_mode != HTTPD_B_STREAM)
		return;
	c->depth++;
	if (c->body_mode == HTTPD_B_BUFFER)
		c->body_cb(c, c->body.data != NULL ? c->body.data : "",
		    c->body.len, c->body_arg);
	else
		c->body_cb(c, "", 0, c->body_arg);
	c->depth--;
}

/*
 * Take the next run of body bytes from the input: 1 when something was
 * taken (or the body failed), 0 when more input is needed.
 */
int
httpd_body_feed(struct httpd_conn *c)
{
	const char	*data, *why = NULL;
	size_t		 dlen, used;
	ssize_t		 n;
	int		 done = 0;
	char		 msg[128];

	if (c->body_mode == HTTPD_B_BUFFER && !c->body_started &&
	    c->req.content_length > (long long)c->h->limits.body_max) {
		c->body_started = 1;
		httpd_body_too_large(c);
		return (1);
	}
	if (!c->req.chunked) {
		if (c->body_left > 0 && c->in.len == 0)
			return (0);
		data = c->in.data;
		dlen = used = (size_t)c->body_left < c->in.len ?
		    (size_t)c->body_left : c->in.len;
		c->body_left -= dlen;
		done = c->body_left == 0;
	} else {
		if (c->in.len == 0)
			return (0);
		n = wire_chunked_feed(&c->chunked, c->in.data, c->in.len,
		    &data, &dlen, &done, &why);
		if (n == -1) {
			snprintf(msg, sizeof msg, "bad chunked body: %s", why);
			httpd_body_failed(c, 400, msg, NULL);
			return (1);
		}
		if (n == 0)
			return (0);
		used = n;
	}
	c->body_started = 1;
	httpd_body_piece(c, data, dlen);
	if (c->dead)
		return (1);
	buf_consume(&c->in, used);
	if (done && c->state != HTTPD_C_CLOSING && !c->body_done)
		httpd_body_finish(c);
	return (1);
}

/* "100 Continue" when the client waits for it and the body is wanted. */
static void
httpd_body_continue(struct httpd_conn *c)
{
	static const char	cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	if (!c->req.expect_continue || c->continued || c->body_started ||
	    c->in.len > 0 || c->resp != HTTPD_R_NONE || c->req.minor == 0)
		return;
	if (c->body_mode == HTTPD_B_BUFFER &&
	    c->req.content_length > (long long)c->h->limits.body_max)
		return;
	c->continued = 1;
	httpd_conn_queue(c, cont, sizeof cont - 1);
}

static void
httpd_body_want(struct httpd_conn *c, enum httpd_body_mode mode,
    httpd_body_cb cb, void *arg)
{
	if (c->dead || c->state != HTTPD_C_REQ ||
	    c->body_mode != HTTPD_B_NONE)
		return;
	c->body_mode = mode;
	c->body_cb = cb;
	c->body_arg = arg;
	/* No body: its end comes on the next turn, as any body's would. */
	c->body_done = 0;
	httpd_body_continue(c);
	httpd_conn_kick(c);
}

void
httpd_read_body(struct httpd_conn *c, httpd_body_cb cb, void *arg)
{
	httpd_body_want(c, HTTPD_B_BUFFER, cb, arg);
}

void
httpd_stream_body(struct httpd_conn *c, httpd_body_cb cb, void *arg)
{
	httpd_body_want(c, HTTPD_B_STREAM, cb, arg);
}

void
httpd_body_pause(struct httpd_conn *c, int pause)
{
	if (c->dead)
		return;
	c->paused = pause != 0;
	if (!c->paused)
		httpd_conn_kick(c);
}
