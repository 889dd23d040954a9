/*
 * Driver for bench/staging.sh, and a way to try staging by hand:
 *	staging_bench copy|link|plain SRC DST	stage once, print the stats
 *	staging_bench ldd PROGRAM...		print the closure
 *	staging_bench ext PROGRAM DIR...	closure with extension modules
 *	staging_bench glibc LIBC		print the glibc version
 *	staging_bench rm DIR			staging_remove, timed
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "staging.h"

static const char *const via_names[] = {
	"interp", "path", "rpath", "runpath", "cache", "default", "missing"
};

static int
bench_copy(int flags, const char *src, const char *dst)
{
	struct staging_stats	 st = { 0 };
	char			*cause = NULL;
	double			 t0, t;

	t0 = util_now();
	if (staging_copy_tree(src, dst, flags, staging_default_skip, NULL,
	    &st, &cause) == -1) {
		fprintf(stderr, "staging_bench: %s\n", cause);
		return (1);
	}
	t = util_now() - t0;
	printf("seconds=%.4f files=%llu dirs=%llu symlinks=%llu bytes=%llu "
	    "linked=%llu reflinked=%llu copied=%llu skipped=%llu "
	    "special=%llu mounts=%llu errors=%llu\n", t,
	    (unsigned long long)st.files, (unsigned long long)st.dirs,
	    (unsigned long long)st.symlinks, (unsigned long long)st.bytes,
	    (unsigned long long)st.linked, (unsigned long long)st.reflinked,
	    (unsigned long long)st.copied, (unsigned long long)st.skipped,
	    (unsigned long long)st.special, (unsigned long long)st.mounts,
	    (unsigned long long)st.errors);
	if (st.first_error != NULL)
		fprintf(stderr, "first error: %s\n", st.first_error);
	staging_stats_free(&st);
	return (0);
}

static int
bench_ldd(const char *program, char **rest, int ext)
{
	struct staging_list	 l = { 0 };
	const char		*one[2] = { program, NULL };
	char			*cause = NULL, *missing;
	size_t			 i;
	int			 rc;

	if (ext)
		rc = staging_ldd_closure_ext(program,
		    (const char *const *)rest, &l, &cause);
	else
		rc = staging_ldd_closure(one, &l, &cause);
	if (rc == -1) {
		fprintf(stderr, "staging_bench: %s\n", cause);
		return (1);
	}
	for (i = 0; i < l.nlibs; i++)
		printf("%s => %s (%s, needed by %s)\n", l.libs[i].name,
		    l.libs[i].path != NULL ? l.libs[i].path : "not found",
		    via_names[l.libs[i].via], l.libs[i].needed_by);
	if ((missing = staging_list_missing(&l)) != NULL)
		printf("missing: %s\n", missing);
	free(missing);
	staging_list_free(&l);
	return (0);
}

int
main(int argc, char **argv)
{
	int	major, minor;

	if (argc == 4 && strcmp(argv[1], "copy") == 0)
		return (bench_copy(0, argv[2], argv[3]));
	if (argc == 4 && strcmp(argv[1], "link") == 0)
		return (bench_copy(STAGING_LINK, argv[2], argv[3]));
	if (argc == 4 && strcmp(argv[1], "plain") == 0)
		return (bench_copy(STAGING_NOCLONE, argv[2], argv[3]));
	if (argc >= 3 && strcmp(argv[1], "ldd") == 0)
		return (bench_ldd(argv[2], NULL, 0));
	if (argc >= 3 && strcmp(argv[1], "ext") == 0)
		return (bench_ldd(argv[2], argv + 3, 1));
	if (argc == 3 && strcmp(argv[1], "rm") == 0) {
		double	t0 = util_now();

		if (staging_remove(argv[2]) == -1) {
			perror(argv[2]);
			return (1);
		}
		printf("seconds=%.4f\n", util_now() - t0);
		return (0);
	}
	if (argc == 3 && strcmp(argv[1], "glibc") == 0) {
		if (staging_glibc_version(argv[2], &major, &minor) == -1) {
			perror(argv[2]);
			return (1);
		}
		printf("%d.%d\n", major, minor);
		return (0);
	}
	fprintf(stderr, "usage: staging_bench copy|link|plain SRC DST\n"
	    "       staging_bench ldd PROGRAM\n"
	    "       staging_bench ext PROGRAM DIR...\n"
	    "       staging_bench glibc LIBC\n"
	    "       staging_bench rm DIR\n");
	return (2);
}
