/*
 * --e2b's own pieces, below its routes: its sandboxes' records found
 * (and dropped once their sandbox went), and its errors as E2B says them:
 * the control API's {"code":N,"message"} and Connect's {"code":"name",
 * "message"} at the status Connect gives that name.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"
#include "serve_e2b.h"

void
e2b_sb_free(struct e2b_sb *e)
{
	free(e->id);
	if (e->token != NULL)
		explicit_bzero(e->token, strlen(e->token));
	free(e->token);
	free(e->template);
	json_decref(e->metadata);
	json_decref(e->envs);
	free(e);
}

/* An error of the control API: {"code":N,"message":...}. */
void
e2b_error(struct httpd_conn *conn, int status, const char *fmt, ...)
{
	struct buf	 b = { 0 };
	va_list		 ap;
	char		*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	buf_printf(&b, "{\"code\":%d,\"message\":", status);
	buf_json_string(&b, msg);
	buf_puts(&b, "}");
	httpd_respond_json(conn, status, b.data, b.len);
	buf_free(&b);
	free(msg);
}

/* Connect's codes and the HTTP statuses its protocol gives them. */
static const struct {
	const char	*code;
	int		 status;
} e2b_codes[] = {
	{ "invalid_argument", 400 }, { "unauthenticated", 401 },
	{ "permission_denied", 403 }, { "not_found", 404 },
	{ "already_exists", 409 }, { "failed_precondition", 412 },
	{ "resource_exhausted", 429 }, { "unimplemented", 501 },
	{ "unavailable", 503 }, { "deadline_exceeded", 504 },
	{ "internal", 500 }
};

int
e2b_rpc_status(const char *code)
{
	size_t	i;

	for (i = 0; i < sizeof e2b_codes / sizeof e2b_codes[0]; i++) {
		if (strcmp(e2b_codes[i].code, code) == 0)
			return (e2b_codes[i].status);
	}
	return (500);
}

void
e2b_rpc_error(struct httpd_conn *conn, const char *code, const char *fmt,
    ...)
{
	struct buf	 b = { 0 };
	va_list		 ap;
	char		*msg;

	va_start(ap, fmt);
	xvasprintf(&msg, fmt, ap);
	va_end(ap);
	buf_puts(&b, "{\"code\":");
	buf_json_string(&b, code);
	buf_puts(&b, ",\"message\":");
	buf_json_string(&b, msg);
	buf_puts(&b, "}");
	httpd_respond_json(conn, e2b_rpc_status(code), b.data, b.len);
	buf_free(&b);
	free(msg);
}

/*
 * The E2B sandbox of id, and the qsup sandbox it is (still: the same
 * serial), or NULL. A record whose sandbox went is dropped here.
 */
struct e2b_sb *
e2b_find(struct serve *srv, const char *id, struct serve_sb **sp)
{
	struct e2b_sb	*e, *next;
	struct serve_sb	*s;

	TAILQ_FOREACH_SAFE(e, &srv->e2b->sbs, entry, next) {
		s = serve_find(srv, e->id);
		if (s == NULL || s->serial != e->serial) {
			TAILQ_REMOVE(&srv->e2b->sbs, e, entry);
			e2b_sb_free(e);
			continue;
		}
		if (strcmp(e->id, id) == 0) {
			*sp = s;
			return (e);
		}
	}
	return (NULL);
}
