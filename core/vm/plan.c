/*
 * What a profile asks of a sandbox before it starts, for qsup run and
 * qsup serve alike: the image to get, and the shares with the library
 * closure they may need.
 */
#include <stdlib.h>
#include <string.h>

#include "vm.h"
#include "image.h"

/*
 * What to pull for the profile's image, and how to check it: image_url
 * comes from the catalog (a URL image is its own); req points into p.
 */
void
plan_image(const struct profile *p, int quiet, struct image_req *req)
{
	memset(req, 0, sizeof *req);
	req->url = p->image_url != NULL ? p->image_url :
	    p->image_kind == PROFILE_IMAGE_URL ? p->image : NULL;
	req->sums_url = p->image_sums_url;
	req->sha256 = p->image_sha256;
	req->unverified_ok = p->image_unverified;
	req->max_size = p->image_max_size;
	req->dir = p->images_dir;
	req->registries = p->registries;
	req->nregistries = p->nregistries;
	req->progress = quiet ? IMAGE_PROGRESS_QUIET : IMAGE_PROGRESS_AUTO;
}

/*
 * The shares of a sandbox: the profile's, then those of specs (--share
 * HOST[:GUEST][:ro|rw|cow]), with the library closure they may need for
 * argv (closure_prepare). 1 when the sparse closure applies, 0 when not, -1
 * with *cause; *out and *n are the sandbox's to own.
 */
int
plan_shares(const struct profile *p, const char *const *specs, size_t nspecs,
    char *const *argv, char *const *env, size_t nenv, struct share **out,
    size_t *nout, char **cause)
{
	const struct profile_share	*ps;
	struct share			*sh;
	size_t				 i, j, n = 0;
	int				 rc;

	sh = xcalloc(p->nshares + nspecs + 1, sizeof *sh);
	for (i = 0; i < p->nshares; i++) {
		ps = &p->shares[i];
		sh[n].host = xstrdup(ps->host);
		sh[n].guest = xstrdup(ps->guest);
		sh[n].readonly = !ps->rw;
		sh[n].cow = ps->cow;
		sh[n].exec = ps->exec;
		sh[n].create = ps->create;
		if (ps->nignore > 0) {
			sh[n].ignore = xcalloc(ps->nignore + 1,
			    sizeof *sh[n].ignore);
			for (j = 0; j < ps->nignore; j++)
				sh[n].ignore[j] = xstrdup(ps->ignore[j]);
		}
		n++;
	}
	for (i = 0; i < nspecs; i++) {
		if (share_parse(specs[i], &sh[n], cause) == -1)
			goto fail;
		n++;
	}
	/*
	 * Checks the guest's glibc too: before QEMU starts. Under "sparse"
	 * it may add the closure share, in the one slot left for it.
	 */
	if ((rc = closure_prepare(p, sh, &n, argv, env, nenv, cause)) == -1)
		goto fail;
	*out = sh;
	*nout = n;
	return (rc);
fail:
	while (n-- > 0)
		share_free(&sh[n]);
	free(sh);
	return (-1);
}
