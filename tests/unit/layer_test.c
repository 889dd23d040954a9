/*
 * setup's layers without a guest: keys (what changes them), the step as
 * shown, the base's digest cached by stat, the lock per layer (a build
 * excludes, a run shares, prune skips what is held and keeps parents),
 * the atomic commit; and disk.c taking only chains of the store whose
 * headers name exactly the link below (real qcow2 files by qemu-img).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"
#include "image.h"

#define KA "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define KB "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define KC "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

static char	dir[] = "/tmp/qsup-layer.XXXXXX";
static char	*store;

static void
setup(void)
{
	char	*cause = NULL;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert_not_null(store = image_layer_dir(dir, &cause), "%s", cause);
}

static void
teardown(void)
{
	free(store);
	util_rm_rf(dir);
}

TestSuite(layer, .init = setup, .fini = teardown);

Test(layer, key_changes_with_parent_step_env_and_size)
{
	char *const	 a1[] = { "sh", "-c", "apt-get update", NULL };
	char *const	 a2[] = { "sh", "-c", "apt-get  update", NULL };
	char *const	 a3[] = { "sh", "-cx", "apt-get update", NULL };
	char *const	 e1[] = { "A=1" };
	char *const	 e2[] = { "A=2" };
	char		*k[8];
	int		 i, j;

	k[0] = image_layer_key("base:x", a1, NULL, 0, 0);
	k[1] = image_layer_key("base:y", a1, NULL, 0, 0);
	k[2] = image_layer_key("base:x", a2, NULL, 0, 0);
	k[3] = image_layer_key("base:x", a3, NULL, 0, 0);
	k[4] = image_layer_key("base:x", a1, e1, 1, 0);
	k[5] = image_layer_key("base:x", a1, e2, 1, 0);
	k[6] = image_layer_key("base:x", a1, NULL, 0, 1 << 30);
	k[7] = image_layer_key("base:x", a1, NULL, 0, 0);
	for (i = 0; i < 7; i++) {
		cr_assert_eq(strlen(k[i]), 64);
		for (j = i + 1; j < 7; j++)
			cr_assert_str_neq(k[i], k[j], "keys %d and %d", i, j);
	}
	cr_assert_str_eq(k[0], k[7], "the same step: the same key");
	for (i = 0; i < 8; i++)
		free(k[i]);
}

/* Words that run together differently make different keys. */
Test(layer, key_words_do_not_run_together)
{
	char *const	 a[] = { "ab", "c", NULL };
	char *const	 b[] = { "a", "bc", NULL };
	char		*ka, *kb;

	ka = image_layer_key("base:x", a, NULL, 0, 0);
	kb = image_layer_key("base:x", b, NULL, 0, 0);
	cr_assert_str_neq(ka, kb);
	free(ka);
	free(kb);
}

Test(layer, step_text)
{
	char *const	 sh[] = { "sh", "-c", "echo a | tr a b", NULL };
	char *const	 v[] = { "make", "-j2", "a b", NULL };
	char		*t;

	t = image_layer_step_text(sh);
	cr_assert_str_eq(t, "echo a | tr a b");
	free(t);
	t = image_layer_step_text(v);
	cr_assert_str_eq(t, "make -j2 \"a b\"");
	free(t);
}

/* Hashed once; again only when the file changed (its ctime moves). */
Test(layer, base_digest_cached_by_stat)
{
	char	*base, *d1, *d2, *d3, *cause = NULL;
	FILE	*f;

	xasprintf(&base, "%s/base.img", dir);
	cr_assert_not_null(f = fopen(base, "w"));
	fputs("abc", f);
	fclose(f);
	cr_assert_not_null(d1 = image_base_digest(store, base, 1, &cause), "%s",
	    cause);
	cr_assert_str_eq(d1, "ba7816bf8f01cfea414140de5dae2223b00361a396177a"
	    "9cb410ff61f20015ad");
	cr_assert_not_null(d2 = image_base_digest(store, base, 1, &cause));
	cr_assert_str_eq(d1, d2);
	usleep(20000);
	cr_assert_not_null(f = fopen(base, "w"));
	fputs("abd", f);
	fclose(f);
	cr_assert_not_null(d3 = image_base_digest(store, base, 1, &cause));
	cr_assert_str_neq(d1, d3);
	free(d1);
	free(d2);
	free(d3);
	free(base);
}

static void
make_file(const char *path, const char *text)
{
	FILE	*f;

	cr_assert_not_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static void
count_cb(const struct image_layer *l, int flag, void *arg)
{
	int	*n = arg;

	(void)l;
	n[flag != 0]++;
}

/*
 * Absent: got exclusively (to build); committed: present, shared; held
 * by a run, prune keeps it and its parent; let go, prune removes both.
 */
Test(layer, get_commit_hold_and_prune)
{
	struct image_layer		 a, b, c;
	struct image_layer_parent	 base = { "base:x", "/nowhere", NULL };
	struct image_layer_parent	 pa;
	char *const			 e[] = { "A=1" };
	char				*src, *cause = NULL;
	int				 n[2] = { 0, 0 }, fd;

	xasprintf(&src, "%s/overlay", dir);
	make_file(src, "layer bytes");
	cr_assert_eq(image_layer_get(store, KA, &a, NULL, NULL, &cause),
	    0, "%s", cause);
	/* Nobody else can have it while it is built. */
	cr_assert_neq(fd = open(a.lock, O_RDWR), -1);
	cr_assert_eq(flock(fd, LOCK_SH|LOCK_NB), -1);
	cr_assert_eq(image_layer_commit(&a, src, &base, "step a", NULL, 0, 0,
	    &cause), 0,
	    "%s", cause);
	cr_assert_eq(flock(fd, LOCK_SH|LOCK_NB), 0, "shared once committed");
	close(fd);
	cr_assert_str_eq(a.parent, "base:x");
	cr_assert_str_eq(a.step, "step a");
	cr_assert_eq(strlen(a.build), 32);
	cr_assert_eq(access(a.path, R_OK), 0);
	pa.id = a.key;
	pa.path = a.path;
	pa.build = a.build;
	cr_assert_eq(image_layer_get(store, KB, &b, NULL, NULL, &cause),
	    0);
	cr_assert_eq(image_layer_commit(&b, src, &pa, "step b", e, 1, 1 << 30,
	    &cause), 0);
	cr_assert_str_eq(b.parent_build, a.build);
	cr_assert_eq(b.nenv, 1);
	cr_assert_str_eq(b.env[0], "A=1");
	cr_assert_eq(b.disk_size, 1 << 30);
	image_layer_release(&a);
	/* b held (as a run holds it): b and its parent a are kept. */
	cr_assert_eq(image_layer_prune(store, 0, count_cb, n, &cause), 0);
	cr_assert_eq(n[1], 0, "nothing removed");
	cr_assert_eq(n[0], 1, "b reported in use");
	cr_assert_eq(image_layer_get(store, KA, &c, NULL, NULL, &cause),
	    1, "a is still there");
	cr_assert_str_eq(c.step, "step a");
	image_layer_release(&c);
	image_layer_release(&b);
	n[0] = n[1] = 0;
	cr_assert_eq(image_layer_prune(store, 3600, count_cb, n, &cause), 0);
	cr_assert_eq(n[1], 0, "used just now: kept with --older-than");
	cr_assert_eq(image_layer_prune(store, 0, count_cb, n, &cause), 0);
	cr_assert_eq(n[1], 2, "both removed once let go");
	cr_assert_eq(image_layer_get(store, KA, &c, NULL, NULL, &cause),
	    0, "a is gone");
	image_layer_release(&c);
	free(src);
}

/* A failed copy leaves neither the layer nor its meta nor a part. */
Test(layer, failed_commit_leaves_nothing)
{
	struct image_layer		 a;
	struct image_layer_parent	 base = { "base:x", "/nowhere", NULL };
	char				*cause = NULL, *ls;
	struct buf			 out = { 0 };
	char				*argv[] = { "ls", "-A", store, NULL };
	int				 timed_out;

	cr_assert_eq(image_layer_get(store, KC, &a, NULL, NULL, &cause),
	    0);
	cr_assert_eq(image_layer_commit(&a, "/nonexistent/overlay", &base,
	    "s", NULL, 0, 0, &cause), -1);
	free(cause);
	cr_assert_neq(access(a.path, F_OK), 0);
	cr_assert_neq(access(a.meta, F_OK), 0);
	image_layer_release(&a);
	cr_assert_eq(util_run_capture(argv, 1, 10, NULL, &out, &timed_out),
	    0);
	ls = out.data != NULL ? out.data : "";
	cr_assert_str_eq(ls, ".bases\n" KC ".lock\n", "%s", ls);
	buf_free(&out);
}

/* prune sweeps the parts of builds whose qsup is gone, not live ones. */
Test(layer, prune_sweeps_dead_builds_parts)
{
	char	*dead, *live, *meta, *cause = NULL;
	int	 n[2] = { 0, 0 };

	xasprintf(&dead, "%s/." KA ".qcow2.999999999", store);
	xasprintf(&meta, "%s/" KA ".meta.999999999", store);
	xasprintf(&live, "%s/." KB ".qcow2.%ld", store, (long)getpid());
	make_file(dead, "x");
	make_file(meta, "x");
	make_file(live, "x");
	cr_assert_eq(image_layer_prune(store, 0, count_cb, n, &cause), 0);
	cr_assert_neq(access(dead, F_OK), 0, "a dead build's part removed");
	cr_assert_neq(access(meta, F_OK), 0, "... and its meta's");
	cr_assert_eq(access(live, F_OK), 0, "a live build's part kept");
	free(dead);
	free(meta);
	free(live);
}

static void
qemu_img(const char *out, const char *backing, const char *fmt)
{
	char	*cmd;

	if (backing != NULL)
		xasprintf(&cmd, "qemu-img create -q -f qcow2 -o backing_file=%s"
		    ",backing_fmt=%s %s 4M", backing, fmt, out);
	else
		xasprintf(&cmd, "qemu-img create -q -f %s %s 4M", fmt, out);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	free(cmd);
}

/* Chains of the store whose headers name the link below: nothing else. */
Test(layer, disk_takes_only_checked_chains)
{
	struct disk	 d;
	char		*base, *l1, *l2, *out, *cause = NULL;

	xasprintf(&base, "%s/base.raw", dir);
	xasprintf(&l1, "%s/l1.qcow2", store);
	xasprintf(&l2, "%s/l2.qcow2", store);
	xasprintf(&out, "%s/outside.qcow2", dir);
	qemu_img(base, NULL, "raw");
	qemu_img(l1, base, "raw");
	qemu_img(l2, l1, "qcow2");
	qemu_img(out, base, "raw");
	cr_assert_eq(disk_probe(base, &d, &cause), 0, "%s", cause);
	/* Out of order: l2's backing file is l1, not the base. */
	cr_assert_eq(disk_add_layer(&d, l2, store, &cause), -1);
	cr_assert(strstr(cause, "its backing file is") != NULL, "%s", cause);
	free(cause);
	/* Outside the store. */
	cr_assert_eq(disk_add_layer(&d, out, store, &cause), -1);
	cr_assert(strstr(cause, "not in the layer store") != NULL, "%s",
	    cause);
	free(cause);
	/* Not a layer at all: the base itself has no backing file. */
	cr_assert_eq(disk_add_layer(&d, base, store, &cause), -1);
	free(cause);
	cr_assert_eq(disk_add_layer(&d, l1, store, &cause), 0, "%s", cause);
	cr_assert_eq(disk_add_layer(&d, l2, store, &cause), 0, "%s", cause);
	cr_assert_eq(d.nlayers, 2);
	cr_assert_eq(d.top_size, 4 << 20);
	cr_assert_eq(disk_overlay(&d, dir, 0, &cause), 0, "%s", cause);
	cr_assert_eq(d.size, 4 << 20);
	disk_free(&d);
	free(base);
	free(l1);
	free(l2);
	free(out);
}

/*
 * A built chain got whole for a server's sandbox, each layer held; a
 * step not built is an error naming it, and nothing stays held.
 */
Test(layer, chain_of_built_layers)
{
	struct image_layer		 l, got[2];
	struct image_layer_parent	 parent;
	char				*argv1[] = { "echo", "one", NULL };
	char				*argv2[] = { "echo", "two", NULL };
	char				**steps[] = { argv1, argv2 };
	char				*base, *real, *digest, *id, *key, *src;
	char				*key2, *cause = NULL;
	int				 n[2] = { 0, 0 };

	xasprintf(&base, "%s/base.img", dir);
	make_file(base, "base");
	xasprintf(&src, "%s/overlay", dir);
	make_file(src, "overlay");
	cr_assert_not_null(real = realpath(base, NULL));
	cr_assert_not_null(digest = image_base_digest(store, real, 1, &cause));
	xasprintf(&id, "base:%s:%s", digest, real);
	key = image_layer_key(id, argv1, NULL, 0, 0);
	cr_assert_eq(image_layer_get(store, key, &l, NULL, NULL, &cause), 0);
	parent.id = id;
	parent.path = real;
	parent.build = NULL;
	cr_assert_eq(image_layer_commit(&l, src, &parent, "echo one", NULL, 0,
	    0, &cause), 0, "%s", cause);
	image_layer_release(&l);
	cr_assert_eq(image_layer_chain(store, real, steps, 1, NULL, 0, 0, got,
	    &cause), 0, "%s", cause);
	cr_assert_str_eq(got[0].key, key);
	/* Held: prune keeps it. */
	cr_assert_eq(image_layer_prune(store, 0, count_cb, n, &cause), 0);
	cr_assert(n[0] == 1 && n[1] == 0, "kept in use, not removed");
	image_layer_release(&got[0]);
	cr_assert_eq(image_layer_chain(store, real, steps, 2, NULL, 0, 0, got,
	    &cause), -1);
	cr_assert(strstr(cause, "setup 2/2: layer ") != NULL &&
	    strstr(cause, "is not in the store") != NULL, "%s", cause);
	free(cause);
	/*
	 * The second step's layer being built (its lock held exclusively,
	 * as a builder holds it): said at once, never waited for, nothing
	 * held.
	 */
	key2 = image_layer_key(key, argv2, NULL, 0, 0);
	cr_assert_eq(image_layer_get(store, key2, &l, NULL, NULL, &cause), 0);
	cr_assert_eq(image_layer_chain(store, real, steps, 2, NULL, 0, 0, got,
	    &cause), -1);
	cr_assert(strstr(cause, "setup 2/2: layer ") != NULL &&
	    strstr(cause, "is being built again by another qsup") != NULL,
	    "%s", cause);
	free(cause);
	image_layer_release(&l);
	cr_assert_eq(image_layer_prune(store, 0, count_cb, n, &cause), 0);
	free(key2);
	free(key);
	free(id);
	free(digest);
	free(real);
	free(src);
	free(base);
}
