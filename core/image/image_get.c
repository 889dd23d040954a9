/*
 * An image for a sandbox, by what names it: an http(s) URL (image_pull.c)
 * or docker://REF (image_registry.c). The one handle callers hold, so
 * neither kind of pull needs to know the other.
 */
#include <stdlib.h>
#include <string.h>

#include "image_int.h"

struct image_pull {
	struct image_url_pull	*url;
	struct image_reg	*reg;
	image_done_cb		 cb;
	void			*arg;
};

/* Is req's image an OCI registry's? */
static int
image_get_is_reg(const struct image_req *req)
{
	return (req->url != NULL && strncmp(req->url, "docker://", 9) == 0);
}

/* The image's path in dir if it is there whole and verified, else NULL. */
char *
image_cached(const struct image_req *req)
{
	if (image_get_is_reg(req))
		return (image_reg_cached(req));
	return (image_url_cached(req));
}

/* Either pull ended: the caller's cb, then the handle is gone. */
static void
image_get_done(const char *path, const char *cause, void *arg)
{
	struct image_pull	*p = arg;

	p->url = NULL;
	p->reg = NULL;
	p->cb(p, path, cause, p->arg);
	free(p);
}

/* Pull on loop: cb once, later (never from here), with path or cause. */
struct image_pull *
image_pull_start(struct ev_loop *loop, const struct image_req *req,
    image_done_cb cb, void *arg)
{
	struct image_pull	*p;
	struct image_req	 r = *req;

	p = xcalloc(1, sizeof *p);
	p->cb = cb;
	p->arg = arg;
	if (image_get_is_reg(req))
		p->reg = image_reg_start(loop, req, image_get_done, p);
	else {
		r.out = NULL;	/* only the registry's pull builds */
		p->url = image_url_pull_start(loop, &r, image_get_done, p);
	}
	return (p);
}

/* Stop pulling: no cb; what was fetched stays for the next pull. */
void
image_pull_cancel(struct image_pull *p)
{
	if (p == NULL)
		return;
	image_url_pull_cancel(p->url);
	image_reg_cancel(p->reg);
	free(p);
}
