/*
 * The server's errors: built where they happen (a handler, a body's
 * check, an answer from the agent), turned into a response here, in one
 * place, as httpd's JSON error object ({"error": MSG, ...FIELDS}).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "serve_int.h"

/* err as status, fields and a message from fmt: -1, for "return". */
int
serve_fail(struct serve_error *err, int status, const char *fields,
    const char *fmt, ...)
{
	va_list	ap;

	free(err->msg);
	free(err->fields);
	err->status = status;
	va_start(ap, fmt);
	if (vasprintf(&err->msg, fmt, ap) == -1)
		fatalx("vasprintf");
	va_end(ap);
	err->fields = fields != NULL ? xstrdup(fields) : NULL;
	return (-1);
}

/* 400 naming field and why: -1. */
int
serve_bad_field(struct serve_error *err, const char *field, const char *why)
{
	struct buf	 extra = { 0 };

	buf_puts(&extra, "\"field\":");
	buf_json_string(&extra, field);
	serve_fail(err, 400, extra.data, "%s: %s", field, why);
	buf_free(&extra);
	return (-1);
}

/* 503 naming the server's limit reached: -1. */
int
serve_limit(struct serve_error *err, const char *msg, const char *limit,
    unsigned long long max)
{
	char	*extra;

	xasprintf(&extra, "\"limit\":\"%s\",\"max\":%llu", limit, max);
	serve_fail(err, 503, extra, "%s", msg);
	free(extra);
	return (-1);
}

/* The one place an error becomes a response; err is emptied. */
void
serve_error_answer(struct httpd_conn *conn, struct serve_error *err)
{
	char	*h;

	if (err->allow != NULL) {
		xasprintf(&h, "Allow: %s\r\n", err->allow);
		httpd_header(conn, h);
		free(h);
	}
	httpd_error(conn, err->status != 0 ? err->status : 500,
	    err->msg != NULL ? err->msg : "no response", err->fields);
	free(err->msg);
	free(err->fields);
	free(err->allow);
	memset(err, 0, sizeof *err);
}

/* An error answered at once, where one comes late (the agent's, a death). */
void
serve_error_now(struct httpd_conn *conn, int status, const char *msg,
    const char *fields)
{
	struct serve_error	err = { 0 };

	serve_fail(&err, status, fields, "%s", msg);
	serve_error_answer(conn, &err);
}

/* A request's JSON body, an object: 0 with *j, or -1 (400, where it broke). */
int
serve_json_body(const char *body, size_t len, json_t **j,
    struct serve_error *err)
{
	json_error_t	 jerr;

	*j = NULL;
	if (len == 0) {
		*j = json_object();
		return (0);
	}
	if ((*j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr)) ==
	    NULL)
		return (serve_fail(err, 400, NULL, "malformed JSON at line "
		    "%d, column %d: %s", jerr.line, jerr.column, jerr.text));
	if (!json_is_object(*j)) {
		json_decref(*j);
		*j = NULL;
		return (serve_fail(err, 400, NULL, "the body must be a JSON "
		    "object"));
	}
	return (0);
}

/* 400 for a field not in allowed (NULL-ended): -1. */
int
serve_check_fields(json_t *j, const char *const *allowed,
    struct serve_error *err)
{
	const char	*key;
	json_t		*v;
	struct buf	 extra = { 0 }, msg = { 0 };
	size_t		 i;

	json_object_foreach(j, key, v) {
		for (i = 0; allowed[i] != NULL; i++) {
			if (strcmp(allowed[i], key) == 0)
				break;
		}
		if (allowed[i] != NULL)
			continue;
		buf_puts(&msg, "unknown field ");
		buf_json_string(&msg, key);
		buf_puts(&msg, "; known: ");
		for (i = 0; allowed[i] != NULL; i++)
			buf_printf(&msg, "%s%s", i > 0 ? ", " : "", allowed[i]);
		buf_puts(&extra, "\"field\":");
		buf_json_string(&extra, key);
		serve_fail(err, 400, extra.data, "%s", msg.data);
		buf_free(&msg);
		buf_free(&extra);
		return (-1);
	}
	return (0);
}
