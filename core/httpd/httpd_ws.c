/*
 * WebSockets (RFC 6455) on a request's connection: the handler of a GET
 * that asks to upgrade calls httpd_ws_accept, the 101 goes out, and from
 * then on the connection's input is frames (core/wire/ws.c decodes them,
 * each message bounded by HTTPD_WS_MESSAGE_MAX) and its output is the
 * handler's messages, through the same bounded output queue, drain
 * callback and TLS as a response. Below httpd_conn.c, which feeds it.
 *
 * Who may: the token, as on every request, in the Authorization header
 * or, since a browser cannot set headers on a WebSocket, as a
 * "bearer.TOKEN" entry of Sec-WebSocket-Protocol (httpd_ws_token); and
 * only from the server's own origin or one allowed (httpd_set_origins),
 * when the client says an Origin at all (browsers always do): a page of
 * another site cannot drive a sandbox with the user's token.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ev.h>
#include <mbedtls/base64.h>
#include <mbedtls/sha1.h>

#include "httpd.h"
#include "httpd_int.h"

#define HTTPD_WS_GUID	"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

/* Whether list (a header's comma-separated value) holds token, any case. */
static int	httpd_ws_has(const char *, const char *);

/* Whether the request asks for a WebSocket (Upgrade: websocket). */
int
httpd_upgrading(const struct httpd_req *req)
{
	char	*v;
	int	 yes;

	if ((v = httpd_field(req, "Upgrade")) == NULL)
		return (0);
	yes = httpd_ws_has(v, "websocket");
	free(v);
	return (yes);
}

static int
httpd_ws_has(const char *list, const char *token)
{
	const char	*p = list, *end;
	size_t		 n = strlen(token), len;

	while (p != NULL && *p != '\0') {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		end = strchr(p, ',');
		len = end != NULL ? (size_t)(end - p) : strlen(p);
		while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len == n && strncasecmp(p, token, n) == 0)
			return (1);
		p = end;
	}
	return (0);
}

/*
 * The token as a "bearer.TOKEN" entry of the request's
 * Sec-WebSocket-Protocol: compared in constant time for its length, as
 * the Authorization header's is.
 */
int
httpd_ws_token(const struct httpd_req *req, const char *token)
{
	char			*list, *p, *end;
	size_t			 tlen = strlen(token), glen, i;
	volatile unsigned char	 diff;
	int			 ok = 0;

	if ((list = httpd_field(req, "Sec-WebSocket-Protocol")) == NULL)
		return (0);
	for (p = list; p != NULL && *p != '\0' && !ok; p = end) {
		while (*p == ' ' || *p == ',')
			p++;
		if ((end = strchr(p, ',')) != NULL)
			*end++ = '\0';
		glen = strcspn(p, " \t");
		if (glen < 7 || strncmp(p, "bearer.", 7) != 0)
			continue;
		p += 7;
		glen -= 7;
		diff = glen != tlen;
		for (i = 0; i < tlen; i++)
			diff |= (unsigned char)token[i] ^
			    (unsigned char)p[i < glen ? i : 0];
		ok = diff == 0;
	}
	explicit_bzero(list, strlen(list));
	free(list);
	return (ok);
}

/* The Origin, when there is one, is this server's or one allowed. */
static int
httpd_ws_origin_ok(struct httpd_conn *c)
{
	char	*origin, *host, *own;
	size_t	 i;
	int	 ok;

	if ((origin = httpd_field(&c->req, "Origin")) == NULL)
		return (1);		/* not a browser's page */
	for (i = 0; c->h->origins != NULL && c->h->origins[i] != NULL; i++) {
		if (strcasecmp(origin, c->h->origins[i]) == 0) {
			free(origin);
			return (1);
		}
	}
	host = httpd_field(&c->req, "Host");
	xasprintf(&own, "%s://%s", c->tls != NULL ? "https" : "http",
	    host != NULL ? host : "");
	ok = host != NULL && strcasecmp(origin, own) == 0;
	free(own);
	free(host);
	free(origin);
	return (ok);
}

/* The subprotocol answered: the first of "qsup" or "binary" offered. */
static const char *
httpd_ws_protocol(const struct httpd_req *req)
{
	char		*list;
	const char	*pick = NULL;

	if ((list = httpd_field(req, "Sec-WebSocket-Protocol")) == NULL)
		return (NULL);
	if (httpd_ws_has(list, "qsup"))
		pick = "qsup";
	else if (httpd_ws_has(list, "binary"))
		pick = "binary";
	explicit_bzero(list, strlen(list));
	free(list);
	return (pick);
}

/*
 * The 101, and the connection a WebSocket from now on: messages go to
 * cbs. 0; or -1 once the refusal is answered (400 not an upgrade, 403
 * another origin, 426 another version), and cbs are never called.
 */
int
httpd_ws_accept(struct httpd_conn *c, const struct httpd_ws_cbs *cbs,
    void *arg)
{
	unsigned char	 sha[20], acc[64];
	char		*upgrade, *connection, *version, *key, *cat;
	const char	*proto, *why = NULL;
	struct buf	 head = { 0 };
	size_t		 olen = 0;
	int		 status = 400;

	upgrade = httpd_field(&c->req, "Upgrade");
	connection = httpd_field(&c->req, "Connection");
	version = httpd_field(&c->req, "Sec-WebSocket-Version");
	key = httpd_field(&c->req, "Sec-WebSocket-Key");
	if (strcmp(c->req.method, "GET") != 0 || upgrade == NULL ||
	    !httpd_ws_has(upgrade, "websocket") || connection == NULL ||
	    !httpd_ws_has(connection, "upgrade"))
		why = "a WebSocket: GET with Upgrade: websocket and "
		    "Connection: Upgrade";
	else if (version == NULL || strcmp(version, "13") != 0) {
		status = 426;
		why = "Sec-WebSocket-Version: 13 only";
		httpd_header(c, "Sec-WebSocket-Version: 13\r\n");
	} else if (key == NULL || strlen(key) != 24)
		why = "Sec-WebSocket-Key: 16 bytes in base64";
	else if (!httpd_ws_origin_ok(c)) {
		status = 403;
		why = "Origin: not this server's (qsup serve --allow-origin "
		    "allows another)";
	}
	if (why != NULL) {
		httpd_error(c, status, why, NULL);
		goto out;
	}
	xasprintf(&cat, "%s" HTTPD_WS_GUID, key);
	(void)mbedtls_sha1_ret((const unsigned char *)cat, strlen(cat), sha);
	free(cat);
	(void)mbedtls_base64_encode(acc, sizeof acc, &olen, sha, sizeof sha);
	buf_printf(&head, "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: %.*s\r\n", (int)olen, acc);
	if ((proto = httpd_ws_protocol(&c->req)) != NULL)
		buf_printf(&head, "Sec-WebSocket-Protocol: %s\r\n", proto);
	buf_puts(&head, "\r\n");
	httpd_count(c->h, 101);
	httpd_conn_queue(c, head.data, head.len);
	buf_free(&head);
	c->ws = xcalloc(1, sizeof *c->ws);
	wire_ws_init(&c->ws->dec, HTTPD_WS_MESSAGE_MAX);
	c->ws->cbs = *cbs;
	c->ws->arg = arg;
	c->keep_alive = 0;
	c->resp = HTTPD_R_STREAM;
	c->close_cb = httpd_ws_gone_cb;
	c->close_arg = c;
	status = 0;
out:
	free(upgrade);
	free(connection);
	free(version);
	free(key);
	return (status == 0 ? 0 : -1);
}

/* A frame out: a message, or a control frame's payload. */
static void
httpd_ws_frame(struct httpd_conn *c, int op, const void *p, size_t len)
{
	unsigned char	head[WIRE_WS_HEAD_MAX];

	httpd_conn_queue(c, head, wire_ws_frame(head, op, len));
	if (len > 0)
		httpd_conn_queue(c, p, len);
}

/* A message to the client: 0, or -1 once the WebSocket is closing. */
int
httpd_ws_send(struct httpd_conn *c, int text, const void *p, size_t len)
{
	if (c->dead || c->ws == NULL || c->ws->closing)
		return (-1);
	httpd_ws_frame(c, text ? 1 : 2, p, len);
	return (0);
}

/*
 * The WebSocket's end from our side: a close frame with code and reason,
 * then the connection closed once it is out. Its callbacks are not
 * called after this; the connection's close callback (httpd_set_close_cb)
 * still is, when it closes: a WebSocket's always is, however it ends.
 */
void
httpd_ws_close(struct httpd_conn *c, int code, const char *reason)
{
	unsigned char	b[125];
	size_t		n = reason != NULL ? strlen(reason) : 0;

	if (c->dead || c->ws == NULL || c->ws->closing)
		return;
	if (n > sizeof b - 2)
		n = sizeof b - 2;
	b[0] = (unsigned char)(code >> 8);
	b[1] = (unsigned char)code;
	if (n > 0)
		memcpy(b + 2, reason, n);
	httpd_ws_frame(c, 8, b, n + 2);
	c->ws->closing = 1;
	c->ws->told = 1;
	c->state = HTTPD_C_CLOSING;
	httpd_conn_kick(c);
}

/* Stop reading the client's messages a while (1), or read again (0). */
void
httpd_ws_pause(struct httpd_conn *c, int pause)
{
	if (c->dead || c->ws == NULL)
		return;
	c->paused = pause;
	httpd_conn_kick(c);
}

/* Its owner told once that the WebSocket ended, with the close code. */
static void
httpd_ws_told(struct httpd_conn *c, int code)
{
	struct httpd_ws	*ws = c->ws;

	if (ws->told)
		return;
	ws->told = 1;
	if (ws->cbs.closed != NULL) {
		c->depth++;
		ws->cbs.closed(ws->arg, code);
		c->depth--;
	}
}

/* The connection went without a close frame (httpd_conn_close's notice). */
void
httpd_ws_gone_cb(void *arg)
{
	struct httpd_conn	*c = arg;

	if (c->ws != NULL)
		httpd_ws_told(c, 1006);
}

/*
 * The client's bytes in c->in, as frames: messages to the owner, pings
 * answered, a close answered and the connection closed after it, a frame
 * no client may send answered with its close code.
 */
void
httpd_ws_input(struct httpd_conn *c)
{
	struct httpd_ws	*ws = c->ws;
	size_t		 used;
	int		 ev, code;

	while (!c->dead && !ws->closing && !c->paused) {
		used = wire_ws_feed(&ws->dec, (const unsigned char *)c->in.data,
		    c->in.len, &ev, &code);
		buf_consume(&c->in, used);
		switch (ev) {
		case WIRE_WS_NONE:
			if (used == 0)
				return;
			break;
		case WIRE_WS_MESSAGE:
			if (ws->cbs.message != NULL) {
				c->depth++;
				ws->cbs.message(ws->arg, ws->dec.ev_op == 1,
				    ws->dec.msg, ws->dec.msg_len);
				c->depth--;
			}
			break;
		case WIRE_WS_PING:
			httpd_ws_frame(c, 10, ws->dec.ctl, ws->dec.ctl_len);
			break;
		case WIRE_WS_PONG:
			break;
		case WIRE_WS_CLOSE:
			code = ws->dec.ctl_len >= 2 ? ws->dec.ctl[0] << 8 |
			    ws->dec.ctl[1] : 1005;
			httpd_ws_told(c, code);
			httpd_ws_close(c, code == 1005 ? 1000 : code, NULL);
			return;
		case WIRE_WS_ERROR:
			httpd_ws_told(c, code);
			httpd_ws_close(c, code, code == WIRE_WS_TOO_BIG ?
			    "message too big" : "protocol error");
			return;
		}
	}
}
