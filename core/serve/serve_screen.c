/*
 * A sandbox's screen (display = "vnc") in qsup serve: GET .../screenshot,
 * a PNG that QEMU writes through QMP screendump into the run directory
 * (read, then removed), scaled down here with libpng when asked; and
 * POST .../input, keys and mouse through QMP input-send-event
 * (serve_screen_input.c turns the events into calls).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <png.h>

#include "serve_int.h"

#define SCREEN_PNG_MAX	(64 * 1024 * 1024)	/* QEMU's file, read back */
#define SCREEN_BODY_MAX	(256 * 1024)		/* an input request's */

/* A request waiting for QEMU; conn NULL once the client has gone. */
struct screen_job {
	struct httpd_conn	*conn;
	char			*file;		/* screendump's */
	double			 scale;
	size_t			 pending;	/* input calls unanswered */
	char			*error;		/* the first that failed */
};

static void
screen_job_close_cb(void *arg)
{
	struct screen_job	*j = arg;

	j->conn = NULL;		/* answered to nobody */
}

static void
screen_job_free(struct screen_job *j)
{
	if (j->conn != NULL)
		httpd_set_close_cb(j->conn, NULL, NULL);
	if (j->file != NULL)
		(void)unlink(j->file);
	free(j->file);
	free(j->error);
	free(j);
}

/*
 * The PNG at data scaled by scale (< 1): each new pixel the mean of the
 * source's box under it. 0 with *out (png_image's allocation, freed by
 * the caller), or -1 with *cause.
 */
static int
screen_png_scale(const void *data, size_t len, double scale, void **out,
    size_t *outlen, char **cause)
{
	png_image	 in, o;
	unsigned char	*src = NULL, *dst = NULL;
	unsigned	 w, h, x, y, sx, sy, x0, x1, y0, y1, c;
	unsigned long	 sum[3], n;
	int		 rc = -1;

	memset(&in, 0, sizeof in);
	in.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_memory(&in, data, len)) {
		xasprintf(cause, "QEMU's PNG: %s", in.message);
		return (-1);
	}
	in.format = PNG_FORMAT_RGB;
	src = xmalloc(PNG_IMAGE_SIZE(in));
	if (!png_image_finish_read(&in, NULL, src, 0, NULL)) {
		xasprintf(cause, "QEMU's PNG: %s", in.message);
		goto out;
	}
	w = (unsigned)(in.width * scale);
	h = (unsigned)(in.height * scale);
	w = w < 1 ? 1 : w;
	h = h < 1 ? 1 : h;
	dst = xmalloc((size_t)w * h * 3);
	for (y = 0; y < h; y++) {
		y0 = (unsigned)((unsigned long long)y * in.height / h);
		y1 = (unsigned)((unsigned long long)(y + 1) * in.height / h);
		y1 = y1 > y0 ? y1 : y0 + 1;
		for (x = 0; x < w; x++) {
			x0 = (unsigned)((unsigned long long)x * in.width / w);
			x1 = (unsigned)((unsigned long long)(x + 1) *
			    in.width / w);
			x1 = x1 > x0 ? x1 : x0 + 1;
			sum[0] = sum[1] = sum[2] = n = 0;
			for (sy = y0; sy < y1; sy++)
				for (sx = x0; sx < x1; sx++, n++)
					for (c = 0; c < 3; c++)
						sum[c] += src[((size_t)sy *
						    in.width + sx) * 3 + c];
			for (c = 0; c < 3; c++)
				dst[((size_t)y * w + x) * 3 + c] =
				    (unsigned char)(sum[c] / n);
		}
	}
	memset(&o, 0, sizeof o);
	o.version = PNG_IMAGE_VERSION;
	o.width = w;
	o.height = h;
	o.format = PNG_FORMAT_RGB;
	*outlen = 0;
	if (!png_image_write_get_memory_size(o, *outlen, 0, dst, 0, NULL)) {
		xasprintf(cause, "PNG: %s", o.message);
		goto out;
	}
	*out = xmalloc(*outlen);
	if (!png_image_write_to_memory(&o, *out, outlen, 0, dst, 0, NULL)) {
		xasprintf(cause, "PNG: %s", o.message);
		free(*out);
		*out = NULL;
		goto out;
	}
	rc = 0;
out:
	png_image_free(&in);
	free(src);
	free(dst);
	return (rc);
}

/* The job's client, its close hook removed, or NULL if it has gone. */
static struct httpd_conn *
screen_job_take(struct screen_job *j)
{
	struct httpd_conn	*conn = j->conn;

	if (conn != NULL)
		httpd_set_close_cb(conn, NULL, NULL);
	j->conn = NULL;
	return (conn);
}

/*
 * A QMP call's error as a status: 409 when the sandbox's QEMU went away
 * before it answered (stopped, deleted, or died), else 500.
 */
static int
screen_status(const char *error)
{
	return (strstr(error, "QEMU closed") != NULL ? 409 : 500);
}

/* screendump returned: the file read, scaled, sent, removed. */
static void
screen_dump_cb(const char *error, json_t *ret, void *arg)
{
	struct screen_job	*j = arg;
	struct httpd_conn	*conn = screen_job_take(j);
	char			*data = NULL, *cause = NULL;
	void			*png = NULL;
	size_t			 len = 0, plen = 0;

	(void)ret;
	if (conn == NULL)
		goto out;
	if (error != NULL) {
		serve_error_now(conn, screen_status(error), error, NULL);
		goto out;
	}
	if ((data = util_read_file(j->file, &len, SCREEN_PNG_MAX)) == NULL) {
		xasprintf(&cause, "%s: %s", j->file, strerror(errno));
		serve_error_now(conn, 500, cause, NULL);
		goto out;
	}
	if (j->scale < 1.0 && screen_png_scale(data, len, j->scale, &png,
	    &plen, &cause) == -1) {
		serve_error_now(conn, 500, cause, NULL);
		goto out;
	}
	if (png != NULL)
		httpd_respond(conn, 200, "image/png", png, plen);
	else
		httpd_respond(conn, 200, "image/png", data, len);
out:
	free(cause);
	free(data);
	free(png);
	screen_job_free(j);
}

/* A sandbox whose QEMU can be asked: 0, or -1 with err (409). */
static int
screen_running(struct serve_sb *s, struct serve_error *err)
{
	int	w, h;

	if (s->sb == NULL || (s->state != SERVE_READY &&
	    s->state != SERVE_PAUSED))
		return (serve_fail(err, 409, NULL, "sandbox %s is %s",
		    s->name, serve_state_name(s->state)));
	if (sandbox_display_size(s->sb, &w, &h) == -1)
		return (serve_fail(err, 409, NULL, "sandbox %s has no display "
		    "(its profile's display is \"none\")", s->name));
	return (0);
}

/* GET /v1/sandboxes/{name}/screenshot[?scale=0.1..1] */
int
serve_screenshot(const struct serve_req *r, struct serve_error *err)
{
	struct screen_job	*j;
	json_t			*args;
	char			*v, *end, *text, *cause = NULL;
	double			 scale = 1.0;

	if ((v = httpd_query_param(r->http->query, "scale")) != NULL) {
		errno = 0;
		scale = strtod(v, &end);
		if (errno != 0 || end == v || *end != '\0' || !(scale >= 0.1) ||
		    !(scale <= 1.0)) {
			free(v);
			return (serve_bad_field(err, "scale", "expected a number "
			    "from 0.1 to 1"));
		}
		free(v);
	}
	if (screen_running(r->sb, err) == -1)
		return (-1);
	j = xcalloc(1, sizeof *j);
	j->scale = scale;
	if ((j->file = sandbox_screen_file(r->sb->sb)) == NULL) {
		free(j);
		return (serve_fail(err, 409, NULL, "sandbox %s has no run "
		    "directory", r->sb->name));
	}
	args = json_pack("{s:s, s:s}", "filename", j->file, "format", "png");
	text = json_dumps(args, JSON_COMPACT);
	json_decref(args);
	if (sandbox_screen_qmp(r->sb->sb, "screendump", text, screen_dump_cb,
	    j, &cause) == -1) {
		free(text);
		screen_job_free(j);
		serve_fail(err, 409, NULL, "sandbox %s: %s", r->sb->name,
		    cause);
		free(cause);
		return (-1);
	}
	free(text);
	j->conn = r->conn;
	httpd_set_close_cb(r->conn, screen_job_close_cb, j);
	return (0);
}

/* One input-send-event returned; the last answers the request. */
static void
screen_input_cb(const char *error, json_t *ret, void *arg)
{
	struct screen_job	*j = arg;
	struct httpd_conn	*conn;
	static const char	 ok[] = "{\"ok\":true}";

	(void)ret;
	if (error != NULL && j->error == NULL)
		j->error = xstrdup(error);
	if (--j->pending > 0)
		return;
	if ((conn = screen_job_take(j)) != NULL && j->error != NULL)
		serve_error_now(conn, screen_status(j->error), j->error, NULL);
	else if (conn != NULL)
		httpd_respond_json(conn, 200, ok, sizeof ok - 1);
	screen_job_free(j);
}

static void
screen_input_body(struct httpd_conn *conn, struct serve_sb *s,
    const char *body, size_t len, void *arg)
{
	struct serve_error	 err = { 0 };
	struct screen_calls	 c = { 0 };
	struct screen_job	*j = NULL;
	json_t			*jb = NULL;
	char			*cause = NULL;
	size_t			 i;
	int			 w, h;

	(void)arg;
	if (len > SCREEN_BODY_MAX) {
		serve_bad_field(&err, "events", "the body is over 256 KiB");
		goto out;
	}
	if (serve_json_body(body, len, &jb, &err) == -1 ||
	    screen_running(s, &err) == -1)
		goto out;
	(void)sandbox_display_size(s->sb, &w, &h);
	if (screen_input_parse(jb, w, h, &c, &err) == -1)
		goto out;
	j = xcalloc(1, sizeof *j);
	for (i = 0; i < c.n; i++) {
		if (sandbox_screen_qmp(s->sb, "input-send-event", c.args[i],
		    screen_input_cb, j, &cause) == -1)
			break;
		j->pending++;
	}
	if (cause != NULL && j->pending == 0) {
		serve_fail(&err, 409, NULL, "sandbox %s: %s", s->name, cause);
		free(j);
		goto out;
	}
	if (cause != NULL)
		j->error = cause;	/* the calls sent still answer */
	cause = NULL;
	j->conn = conn;
	httpd_set_close_cb(conn, screen_job_close_cb, j);
out:
	free(cause);
	screen_calls_free(&c);
	json_decref(jb);
	if (err.status != 0)
		serve_error_answer(conn, &err);
}

/* POST /v1/sandboxes/{name}/input: {"events": [...]} */
int
serve_input(const struct serve_req *r, struct serve_error *err)
{
	if (screen_running(r->sb, err) == -1)
		return (-1);
	serve_sb_read_body(r, screen_input_body, NULL);
	return (0);
}
