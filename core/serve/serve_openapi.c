/*
 * GET /v1/openapi.json: the API's contract, docs/openapi.json, compiled in
 * at build time (the Makefile makes this object depend on it), so the
 * server answers with the very document its tests were checked against.
 * Answered without the token, as /v1/healthz: it holds nothing of the
 * server's, and a client may want it before it has a token.
 */
#include <string.h>

#include "serve_int.h"

__asm__(
	"	.section .rodata\n"
	"	.global serve_openapi_json\n"
	"serve_openapi_json:\n"
	"	.incbin \"docs/openapi.json\"\n"
	"	.byte 0\n"
	"	.previous\n");
extern const char	serve_openapi_json[];

/* GET /v1/openapi.json */
int
serve_openapi(const struct serve_req *r, struct serve_error *err)
{
	(void)err;
	httpd_respond_json(r->conn, 200, serve_openapi_json,
	    strlen(serve_openapi_json));
	return (0);
}
