/*
 * One image got for a command that waits for it (qsup run, qsup image
 * pull): the cached copy, else pulled on the loop, which runs until the
 * pull ends or is cancelled.
 */
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "cmd.h"
#include "image.h"

static void
pull_done(struct image_pull *ip, const char *path, const char *cause,
    void *arg)
{
	struct pull	*cp = arg;

	(void)ip;
	cp->pull = NULL;
	cp->path = path != NULL ? xstrdup(path) : NULL;
	cp->cause = cause != NULL ? xstrdup(cause) : NULL;
}

/*
 * req's image into cp: the cached copy, else pulled on loop, which runs
 * until the pull ends or a signal's handler calls pull_cancel (the
 * part then stays for the next pull). 0 with cp->path; -1 with
 * cp->cause, NULL when cancelled.
 */
int
pull_get(struct ev_loop *loop, const struct image_req *req,
    struct pull *cp)
{
	memset(cp, 0, sizeof *cp);
	if ((cp->path = image_cached(req)) != NULL) {
		cp->cached = 1;
		return (0);
	}
	cp->pull = image_pull_start(loop, req, pull_done, cp);
	while (cp->pull != NULL)
		ev_run(loop, EVRUN_ONCE);
	return (cp->path != NULL ? 0 : -1);
}

void
pull_cancel(struct pull *cp)
{
	image_pull_cancel(cp->pull);
	cp->pull = NULL;
}

void
pull_free(struct pull *cp)
{
	free(cp->path);
	free(cp->cause);
	memset(cp, 0, sizeof *cp);
}
