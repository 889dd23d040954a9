/*
 * Responses: whole (with Content-Length), streamed (chunked, or raw to an
 * HTTP/1.0 client, which then sees the connection close), or an event
 * stream; JSON errors; and what ending a response does to the request's
 * unread body and to the connection.
 */
#include <stdio.h>
#include <string.h>

#include "httpd.h"
#include "httpd_int.h"

static void
httpd_put_cb(void *arg, const void *p, size_t len)
{
	httpd_conn_queue(arg, p, len);
}

static void
httpd_buf_put_cb(void *arg, const void *p, size_t len)
{
	buf_add(arg, p, len);
}

/* {"error":"MESSAGE"} with the extra members, if any. */
void
httpd_error_json(struct buf *b, const char *msg, const char *fields)
{
	buf_puts(b, "{\"error\":");
	wire_json_string(httpd_buf_put_cb, b, msg);
	if (fields != NULL && *fields != '\0') {
		buf_puts(b, ",");
		buf_puts(b, fields);
	}
	buf_puts(b, "}");
}

/* One more answer of this status, in its class (httpd_answered). */
void
httpd_count(struct httpd *h, int status)
{
	int	class = status / 100 - 1;

	h->answered[class >= 0 && class < HTTPD_CLASSES - 1 ? class :
	    HTTPD_CLASSES - 1]++;
}

/*
 * Whether what is left of an unread body may be dropped to keep the
 * connection: not when the client waits for "100 Continue" before it
 * sends any (it may never send it), nor when more than body_max is due.
 */
static int
httpd_body_discardable(struct httpd_conn *c)
{
	if (c->body_done)
		return (1);
	if (c->req.expect_continue && !c->continued && !c->body_started)
		return (0);
	if (!c->req.chunked && (size_t)c->body_left > c->h->limits.body_max)
		return (0);
	return (1);
}

/* Whether a response of this status carries no body at all. */
static int
httpd_no_body(int status)
{
	return ((status >= 100 && status < 200) || status == 204 ||
	    status == 304);
}

/* Usable for a response: a live request with none begun yet. */
static int
httpd_can_respond(struct httpd_conn *c)
{
	if (c->dead)
		return (0);
	if (c->state != HTTPD_C_REQ || c->resp != HTTPD_R_NONE) {
		log_warnx("httpd: a second response to one request (%s %s, "
		    "state %d, response %d)", c->store != NULL ? c->req.method :
		    "-", c->store != NULL ? c->req.path : "-",
		    (int)c->state, (int)c->resp);
		return (0);
	}
	return (1);
}

/*
 * The status line and headers; len -1 for a streamed body. Whether the
 * connection is kept is settled here, before the client is told.
 */
static void
httpd_resp_head(struct httpd_conn *c, int status, const char *type,
    long long len)
{
	struct buf	hd = { 0 };

	httpd_rec_head(c, status, type);
	if (!httpd_body_discardable(c))
		c->keep_alive = 0;
	if (len == -1 && c->resp_raw)
		c->keep_alive = 0;
	buf_printf(&hd, "HTTP/1.1 %d %s\r\n", status, wire_reason(status));
	httpd_count(c->h, status);
	if (type != NULL)
		buf_printf(&hd, "Content-Type: %s\r\n", type);
	if (httpd_no_body(status))
		;
	else if (len >= 0)
		buf_printf(&hd, "Content-Length: %lld\r\n", len);
	else if (!c->resp_raw)
		buf_puts(&hd, "Transfer-Encoding: chunked\r\n");
	if (!c->keep_alive)
		buf_puts(&hd, "Connection: close\r\n");
	if (c->headers.len > 0)
		buf_add(&hd, c->headers.data, c->headers.len);
	buf_puts(&hd, "\r\n");
	buf_free(&c->headers);
	httpd_conn_queue(c, hd.data, hd.len);
	buf_free(&hd);
}

/*
 * The response has ended: the request's callbacks go, and the body left
 * unread is dropped (the connection then takes the next request) or, when
 * it cannot be, the connection closes once the response is out.
 */
void
httpd_resp_done(struct httpd_conn *c)
{
	httpd_rec_end(c, 1);
	c->resp = HTTPD_R_DONE;
	c->drain_cb = NULL;
	c->close_cb = NULL;
	c->body_cb = NULL;
	if (c->body_done)
		httpd_conn_next(c);
	else if (!c->keep_alive || !httpd_body_discardable(c)) {
		c->keep_alive = 0;
		c->state = HTTPD_C_CLOSING;
	} else {
		c->body_mode = HTTPD_B_DISCARD;
		c->body_done = 0;
		c->paused = 0;
		c->state = HTTPD_C_DISCARD;
	}
	httpd_conn_kick(c);
}

/* A refusal outside any request (a head that did not parse): then close. */
void
httpd_reject(struct httpd_conn *c, int status, const char *why,
    const char *fields)
{
	struct buf	body = { 0 };

	log_debug("httpd: %s: refused %d: %s", c->l->bound, status, why);
	c->state = HTTPD_C_REQ;
	c->resp = HTTPD_R_NONE;
	c->resp_raw = 0;
	c->head_only = 0;
	c->keep_alive = 0;
	c->body_done = 1;
	httpd_error_json(&body, why, fields);
	c->rejecting = 1;
	httpd_resp_head(c, status, "application/json", body.len);
	c->rejecting = 0;
	httpd_conn_queue(c, body.data, body.len);
	httpd_rec_body(c, body.data, body.len);
	httpd_rec_end(c, 1);
	buf_free(&body);
	c->resp = HTTPD_R_DONE;
	c->state = HTTPD_C_CLOSING;
}

void
httpd_respond(struct httpd_conn *c, int status, const char *type,
    const void *body, size_t len)
{
	if (!httpd_can_respond(c))
		return;
	httpd_resp_head(c, status, type, httpd_no_body(status) ? 0 :
	    (long long)len);
	if (!c->head_only && !httpd_no_body(status)) {
		httpd_conn_queue(c, body, len);
		httpd_rec_body(c, body, len);
	}
	httpd_resp_done(c);
}

void
httpd_respond_json(struct httpd_conn *c, int status, const char *json,
    size_t len)
{
	httpd_respond(c, status, "application/json", json, len);
}

void
httpd_error(struct httpd_conn *c, int status, const char *msg,
    const char *fields)
{
	struct buf	body = { 0 };

	httpd_error_json(&body, msg, fields);
	httpd_respond_json(c, status, body.data, body.len);
	buf_free(&body);
}

void
httpd_header(struct httpd_conn *c, const char *lines)
{
	if (!c->dead)
		buf_puts(&c->headers, lines);
}

void
httpd_stream_start(struct httpd_conn *c, int status, const char *type)
{
	if (!httpd_can_respond(c))
		return;
	httpd_resp_head(c, status, type, -1);
	c->resp = HTTPD_R_STREAM;
}

void
httpd_stream_write(struct httpd_conn *c, const void *p, size_t len)
{
	if (c->dead || c->resp != HTTPD_R_STREAM || len == 0 || c->head_only)
		return;
	httpd_rec_body(c, p, len);
	if (c->resp_raw) {
		httpd_conn_queue(c, p, len);
		return;
	}
	wire_chunk_start(httpd_put_cb, c, len);
	httpd_conn_queue(c, p, len);
	wire_chunk_end(httpd_put_cb, c);
}

void
httpd_sse_start(struct httpd_conn *c)
{
	httpd_header(c, "Cache-Control: no-cache\r\n");
	httpd_stream_start(c, 200, "text/event-stream");
}

/* One event; data with line ends goes as one "data:" line each. */
void
httpd_sse_event(struct httpd_conn *c, const char *name, const void *data,
    size_t len)
{
	struct buf	 ev = { 0 };
	const char	*p = data, *end = p + len, *nl;

	if (c->dead || c->resp != HTTPD_R_STREAM)
		return;
	httpd_rec_event(c, name, data, len);
	wire_sse_start(httpd_buf_put_cb, &ev, name);
	while ((nl = memchr(p, '\n', end - p)) != NULL) {
		buf_add(&ev, p, nl - p);
		buf_puts(&ev, "\ndata: ");
		p = nl + 1;
	}
	buf_add(&ev, p, end - p);
	wire_sse_end(httpd_buf_put_cb, &ev);
	httpd_stream_write(c, ev.data, ev.len);
	buf_free(&ev);
}

void
httpd_sse_comment(struct httpd_conn *c, const char *text)
{
	struct buf	ev = { 0 };

	if (c->dead || c->resp != HTTPD_R_STREAM)
		return;
	buf_printf(&ev, ": %s\n\n", text);
	httpd_stream_write(c, ev.data, ev.len);
	buf_free(&ev);
}

void
httpd_end(struct httpd_conn *c)
{
	if (c->dead || c->state != HTTPD_C_REQ)
		return;
	if (c->resp == HTTPD_R_NONE) {
		log_warnx("httpd: %s %s: ended without a response",
		    c->req.method, c->req.path);
		httpd_error(c, 500, "no response", NULL);
		return;
	}
	if (c->resp == HTTPD_R_STREAM && !c->resp_raw && !c->head_only)
		wire_chunk_last(httpd_put_cb, c);
	httpd_resp_done(c);
}
