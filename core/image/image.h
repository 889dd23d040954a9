/*
 * core/image: guest disk images pulled over HTTP(S), verified and kept in
 * images_dir. Uses core/base (and core/wire) only; core/vm and core/cmd
 * use it. The download runs on the caller's libev loop through libcurl's
 * multi-socket API; digests are mbedTLS's.
 */
#ifndef QSUP_IMAGE_H
#define QSUP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "base.h"

enum image_progress {
	IMAGE_PROGRESS_AUTO,	/* a bar on a TTY, else a line now and then */
	IMAGE_PROGRESS_BAR,
	IMAGE_PROGRESS_LINES,
	IMAGE_PROGRESS_QUIET	/* --json */
};

/* What to pull and how to check it. */
struct image_req {
	const char	*url;		/* http:// or https:// */
	const char	*sums_url;	/* NULL: SHA256SUMS, then SHA512SUMS,
					   beside url */
	const char	*sha256;	/* 64 hex digits pinned, or NULL */
	int		 unverified_ok;	/* no digest found: use it anyway */
	const char	*dir;		/* images_dir; NULL: the default */
	enum image_progress progress;
};

struct image_pull;
typedef void	(*image_done_cb)(struct image_pull *, const char *path,
		     const char *cause, void *arg);

/* images_dir's default: $XDG_DATA_HOME/qsup/images (~/.local/share/...). */
char		*image_default_dir(void);
/* The image's path in dir if it is there whole and verified, else NULL. */
char		*image_cached(const struct image_req *);
/* Pull on loop; cb once, with the path or the cause (exit 125 material). */
struct image_pull *image_pull_start(struct ev_loop *, const struct image_req *,
		     image_done_cb, void *);
void		 image_pull_cancel(struct image_pull *);
/* image_cached, else pull on loop until done; -1 with *cause. */
int		 image_fetch(struct ev_loop *, const struct image_req *,
		     char **path, char **cause);

#endif
