/*
 * core/image without a network: the checksum file reader, names and
 * paths in images_dir, the .meta, what counts as cached, listing and
 * removing, the in-use scan of sandbox directories, and a pull's
 * failures and cached answers on a real libev loop. The downloads
 * themselves are tests/integration/image_pull_test.sh's.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ev.h>

#include "image.h"
#include "image_int.h"

#define H64A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define H64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static char	*tmp;

static void
image_setup(void)
{
	char	t[] = "/tmp/qsup-image-test.XXXXXX";

	cr_assert_not_null(mkdtemp(t));
	tmp = strdup(t);
}

static void
image_teardown(void)
{
	util_rm_rf(tmp);
	free(tmp);
}

/* s's digest for name, checked against want (NULL: none) and freed. */
static void
sums_is(const char *s, const char *name, const char *want)
{
	char	*hex;

	hex = image_sums_find(s, strlen(s), name);
	if (want == NULL)
		cr_assert_null(hex, "%s in [%s]: got %s", name, s, hex);
	else {
		cr_assert_not_null(hex, "%s in [%s]", name, s);
		cr_assert_str_eq(hex, want);
	}
	free(hex);
}

Test(image, sums_formats)
{
	sums_is(H64A "  disk.img\n", "disk.img", H64A);
	sums_is(H64A " *disk.img\n", "disk.img", H64A);
	sums_is(H64A "  ./disk.img\r\n", "disk.img", H64A);
	sums_is(H64B "  other.img\n" H64A "  disk.img", "disk.img", H64A);
	sums_is("0123456789ABCDEF0123456789ABCDEF"
	    "0123456789ABCDEF0123456789ABCDEF  disk.img\n", "disk.img", H64A);
	sums_is(H64A H64B "  debian.qcow2\n", "debian.qcow2", H64A H64B);
	/* Twice the same is one digest; two digests are none. */
	sums_is(H64A "  d\n" H64A " *d\n", "d", H64A);
	sums_is(H64A "  d\n" H64B "  d\n", "d", NULL);
}

Test(image, sums_rejects)
{
	char	*big;

	sums_is(H64A "  disk.img.old\n", "disk.img", NULL);
	sums_is(H64A "  sub/disk.img\n", "disk.img", NULL);
	sums_is(H64A " disk.img\n", "disk.img", NULL);
	sums_is(H64A "\tdisk.img\n", "disk.img", NULL);
	sums_is("0123  disk.img\n", "disk.img", NULL);
	sums_is(H64A "g  disk.img\n", "disk.img", NULL);
	sums_is("SHA256 (disk.img) = " H64A "\n", "disk.img", NULL);
	sums_is("", "disk.img", NULL);
	sums_is(H64A "  disk.img\n", "", NULL);
	cr_assert_null(image_sums_find(H64A "  d\0x", 68, "d"));
	cr_assert_null(image_sums_find(H64A "  x\0d", 68, "d"));
	big = calloc(1, IMAGE_SUMS_MAX + 100);
	memset(big, '\n', IMAGE_SUMS_MAX + 99);
	memcpy(big, H64A "  d\n", 68);
	cr_assert_null(image_sums_find(big, IMAGE_SUMS_MAX + 1, "d"));
	{
		char	*hex = image_sums_find(big, IMAGE_SUMS_MAX, "d");

		cr_assert_not_null(hex);
		free(hex);
	}
	free(big);
}

static void
name_is(const char *url, const char *want)
{
	char	*n = image_url_name(url);

	if (want == NULL)
		cr_assert_null(n, "%s: got %s", url, n);
	else {
		cr_assert_not_null(n, "%s", url);
		cr_assert_str_eq(n, want);
	}
	free(n);
}

Test(image, url_name)
{
	name_is("https://cloud.debian.org/images/cloud/bookworm/latest/"
	    "debian-12-genericcloud-amd64.qcow2",
	    "debian-12-genericcloud-amd64.qcow2");
	name_is("http://h/a/b.img?x=/y#z/w", "b.img");
	name_is("http://h/b.img", "b.img");
	name_is("http://h", NULL);
	name_is("http://h/", NULL);
	name_is("http://h/dir/", NULL);
	name_is("http://h/.hidden", NULL);
	name_is("http://h/..", NULL);
	name_is("http://h/a\tb", NULL);
	name_is("no-scheme/a.img", NULL);
}

Test(image, default_dir)
{
	char	*d;

	setenv("XDG_DATA_HOME", "/x/data", 1);
	d = image_default_dir();
	cr_assert_str_eq(d, "/x/data/qsup/images");
	free(d);
	setenv("XDG_DATA_HOME", "relative", 1);
	setenv("HOME", "/home/u", 1);
	d = image_default_dir();
	cr_assert_str_eq(d, "/home/u/.local/share/qsup/images");
	free(d);
	unsetenv("XDG_DATA_HOME");
	unsetenv("HOME");
	cr_assert_null(image_default_dir());
}

Test(image, stall_timeout)
{
	struct image_req	req = { .stall_timeout = 0 };

	unsetenv("QSUP_IMAGE_STALL_TIMEOUT");
	cr_assert_float_eq(image_stall_timeout(&req), 30.0, 1e-9);
	setenv("QSUP_IMAGE_STALL_TIMEOUT", "2.5", 1);
	cr_assert_float_eq(image_stall_timeout(&req), 2.5, 1e-9);
	setenv("QSUP_IMAGE_STALL_TIMEOUT", "junk", 1);
	cr_assert_float_eq(image_stall_timeout(&req), 30.0, 1e-9);
	req.stall_timeout = 7;
	cr_assert_float_eq(image_stall_timeout(&req), 7.0, 1e-9);
	unsetenv("QSUP_IMAGE_STALL_TIMEOUT");
}

/* An image of url as a pull leaves it: the file (len bytes) and .meta. */
static char *
fake_image(const char *url, size_t len)
{
	struct image_req	 req = { .url = url, .dir = tmp };
	struct image_paths	 ip;
	struct image_info	 ii = { 0 };
	char			*cause, *data, *path;

	cr_assert_eq(image_paths_make(&req, &ip, &cause), 0, "%s", cause);
	data = calloc(1, len + 1);
	memset(data, 'x', len);
	cr_assert_eq(util_write_file(ip.path, data), 0);
	free(data);
	ii.url = (char *)(uintptr_t)url;
	ii.sha256 = (char *)(uintptr_t)H64A;
	ii.checked = (char *)(uintptr_t)"unverified";
	ii.size = len;
	ii.pulled = 1;
	cr_assert_eq(image_meta_write(ip.meta, &ii, &cause), 0);
	path = strdup(ip.path);
	image_paths_free(&ip);
	return (path);
}

Test(image, cached, .init = image_setup, .fini = image_teardown)
{
	struct image_req	 req = { .url = "http://a/x/d.img",
				     .dir = tmp };
	struct image_paths	 ip;
	struct stat		 st;
	char			*path, *got, *cause, part[PATH_MAX];

	cr_assert_null(image_cached(&req));
	cr_assert_eq(stat(tmp, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700);
	/* .partial is a pull's, made with its lock and gone with it. */
	snprintf(part, sizeof part, "%s/.partial", tmp);
	cr_assert_eq(stat(part, &st), -1);
	path = fake_image(req.url, 10);
	got = image_cached(&req);
	cr_assert_not_null(got);
	cr_assert_str_eq(got, path);
	free(got);
	/* Pinned: the .meta's digest must be it. */
	req.sha256 = H64A;
	got = image_cached(&req);
	cr_assert_not_null(got);
	free(got);
	req.sha256 = H64B;
	cr_assert_null(image_cached(&req));
	req.sha256 = NULL;
	/* Another URL of the same name is not it, and goes elsewhere. */
	req.url = "http://b/x/d.img";
	cr_assert_null(image_cached(&req));
	cr_assert_eq(image_paths_make(&req, &ip, &cause), 0);
	cr_assert_str_neq(ip.path, path);
	cr_assert(strstr(ip.name, "-d.img") != NULL && strlen(ip.name) == 14,
	    "%s", ip.name);
	image_paths_free(&ip);
	/* Not whole (its size is not the .meta's): not cached. */
	req.url = "http://a/x/d.img";
	cr_assert_eq(truncate(path, 5), 0);
	cr_assert_null(image_cached(&req));
	free(path);
}

/*
 * path (its bytes "x" * 10) and its .meta, marked unsynced in boot as a
 * pull leaves it (a pull writes this boot's id; another is written here
 * as a reboot would find it).
 */
static void
unsynced_meta(const char *path, const char *url, const char *sha256,
    const char *boot, long long pulled)
{
	char	meta[PATH_MAX], *text;

	cr_assert_eq(util_write_file(path, "xxxxxxxxxx"), 0);
	snprintf(meta, sizeof meta, "%s.meta", path);
	cr_assert(asprintf(&text, "{\"url\":\"%s\",\"sha256\":\"%s\","
	    "\"checked\":\"unverified\",\"size\":10,\"pulled\":%lld,"
	    "\"unsynced\":\"%s\"}\n", url, sha256, pulled, boot) > 0);
	cr_assert_eq(util_write_file(meta, text), 0);
	free(text);
}

/*
 * A .meta's "unsynced": trusted in its own boot, and unmarked once old
 * or about to be used; in another, kept only if its bytes hash to its
 * digest (a registry's image, whose digest is its manifest's, is
 * removed). A pull's own .meta carries this boot's id.
 */
Test(image, unsynced, .init = image_setup, .fini = image_teardown)
{
	struct image_info	 ii = { 0 };
	char			 path[PATH_MAX], meta[PATH_MAX], x10[65], *cause;
	char			*text;
	const char		*boot = image_boot_id();

	cr_assert_not_null(boot, "this host has a boot id");
	snprintf(path, sizeof path, "%s/f", tmp);
	snprintf(meta, sizeof meta, "%s/f.meta", tmp);
	cr_assert_eq(util_write_file(path, "xxxxxxxxxx"), 0);
	cr_assert_eq(image_oci_sha256(path, x10), 0);

	/* What a pull writes. */
	ii.url = (char *)(uintptr_t)"http://a/f";
	ii.sha256 = x10;
	ii.size = 10;
	ii.unsynced = 1;
	cr_assert_eq(image_meta_write(meta, &ii, &cause), 0);
	text = util_read_file(meta, NULL, 4096);
	cr_assert(strstr(text, boot) != NULL, "%s", text);
	free(text);

	/* This boot, new: trusted, still marked. */
	unsynced_meta(path, "http://a/f", x10, boot, (long long)time(NULL));
	cr_assert_eq(image_meta_read(meta, &ii), 0);
	cr_assert(ii.unsynced);
	image_info_free(&ii);
	cr_assert_eq(image_meta_read(meta, &ii), 0);
	cr_assert(ii.unsynced);
	image_info_free(&ii);

	/* This boot, about to be used by a sandbox: synced, unmarked. */
	image_settle(path);
	cr_assert_eq(image_meta_read(meta, &ii), 0);
	cr_assert(!ii.unsynced);
	image_info_free(&ii);

	/* This boot, old: synced by the reader and unmarked for good. */
	unsynced_meta(path, "http://a/f", x10, boot, 1000);
	cr_assert_eq(image_meta_read(meta, &ii), 0);
	cr_assert(!ii.unsynced);
	image_info_free(&ii);
	text = util_read_file(meta, NULL, 4096);
	cr_assert(strstr(text, "unsynced") == NULL, "%s", text);
	free(text);

	/* Another boot, whole: kept, unmarked. */
	unsynced_meta(path, "http://a/f", x10, "another-boot", 1000);
	cr_assert_eq(image_meta_read(meta, &ii), 0);
	cr_assert(!ii.unsynced);
	image_info_free(&ii);
	cr_assert_eq(access(path, F_OK), 0);

	/* Another boot, torn: both gone. */
	unsynced_meta(path, "http://a/f", H64A, "another-boot", 1000);
	cr_assert_eq(image_meta_read(meta, &ii), -1);
	cr_assert_eq(access(path, F_OK), -1);
	cr_assert_eq(access(meta, F_OK), -1);

	/* Another boot, a registry's image: not checkable, gone. */
	unsynced_meta(path, "docker://r/a:1", x10, "another-boot", 1000);
	cr_assert_eq(image_meta_read(meta, &ii), -1);
	cr_assert_eq(access(path, F_OK), -1);
	cr_assert_eq(access(meta, F_OK), -1);
}

Test(image, users_file_is_not_taken, .init = image_setup,
    .fini = image_teardown)
{
	struct image_req	 req = { .url = "http://a/mine.img",
				     .dir = tmp };
	struct image_paths	 ip;
	char			 path[PATH_MAX], *cause;

	snprintf(path, sizeof path, "%s/mine.img", tmp);
	cr_assert_eq(util_write_file(path, "the user's own"), 0);
	cr_assert_eq(image_paths_make(&req, &ip, &cause), 0);
	cr_assert_str_neq(ip.name, "mine.img");
	image_paths_free(&ip);
	cr_assert_null(image_cached(&req));
}

struct each_seen {
	int	n;
	char	names[4][64];
	char	urls[4][64];
};

static void
each_cb(const struct image_info *ii, void *arg)
{
	struct each_seen	*s = arg;

	if (s->n < 4) {
		snprintf(s->names[s->n], 64, "%s", ii->name);
		snprintf(s->urls[s->n], 64, "%s", ii->url != NULL ? ii->url :
		    "-");
	}
	s->n++;
}

Test(image, each_and_remove, .init = image_setup, .fini = image_teardown)
{
	struct each_seen	 s = { 0 };
	char			*a, *b, path[PATH_MAX], *cause;

	a = fake_image("http://h/b.img", 3);
	b = fake_image("http://h/a.qcow2", 4);
	snprintf(path, sizeof path, "%s/hand.raw", tmp);
	cr_assert_eq(util_write_file(path, "x"), 0);
	cr_assert_eq(image_each(tmp, each_cb, &s), 0);
	cr_assert_eq(s.n, 3);
	cr_assert_str_eq(s.names[0], "a.qcow2");
	cr_assert_str_eq(s.urls[0], "http://h/a.qcow2");
	cr_assert_str_eq(s.names[1], "b.img");
	cr_assert_str_eq(s.names[2], "hand.raw");
	cr_assert_str_eq(s.urls[2], "-");
	cr_assert_eq(image_remove(tmp, "b.img", &cause), 0);
	cr_assert_eq(access(a, F_OK), -1);
	snprintf(path, sizeof path, "%s.meta", a);
	cr_assert_eq(access(path, F_OK), -1);
	cr_assert_eq(image_remove(tmp, "b.img", &cause), -1);
	cr_assert(strstr(cause, "no image b.img") != NULL, "%s", cause);
	free(cause);
	cr_assert_eq(image_remove(tmp, "../x", &cause), -1);
	free(cause);
	cr_assert_eq(image_remove(tmp, ".partial", &cause), -1);
	free(cause);
	memset(&s, 0, sizeof s);
	snprintf(path, sizeof path, "%s/none", tmp);
	cr_assert_eq(image_each(path, each_cb, &s), 0);
	cr_assert_eq(s.n, 0);
	free(a);
	free(b);
}

/* A sandbox directory under base: its pid file and its image file. */
static void
fake_sandbox(const char *base, const char *name, long pid, const char *image)
{
	char	path[PATH_MAX], text[64];

	snprintf(path, sizeof path, "%s/%s", base, name);
	cr_assert_eq(util_mkdir_p(path, 0700), 0);
	snprintf(path, sizeof path, "%s/%s/pid", base, name);
	snprintf(text, sizeof text, "%ld\n", pid);
	cr_assert_eq(util_write_file(path, text), 0);
	if (image != NULL) {
		snprintf(path, sizeof path, "%s/%s/image", base, name);
		cr_assert_eq(util_write_file(path, image), 0);
	}
}

Test(image, in_use, .init = image_setup, .fini = image_teardown)
{
	char	base[PATH_MAX], img[PATH_MAX], other[PATH_MAX], link[PATH_MAX];
	char	*by;

	snprintf(base, sizeof base, "%s/run", tmp);
	snprintf(img, sizeof img, "%s/d.img", tmp);
	snprintf(other, sizeof other, "%s/e.img", tmp);
	snprintf(link, sizeof link, "%s/l.img", tmp);
	cr_assert_eq(util_write_file(img, "x"), 0);
	cr_assert_eq(util_write_file(other, "x"), 0);
	cr_assert_eq(symlink(img, link), 0);
	cr_assert_eq(image_in_use(base, img, &by), 0);	/* no base yet */
	/* A dead process's sandbox, one without an image, another image. */
	fake_sandbox(base, "sb-dead", 999999999, img);
	fake_sandbox(base, "sb-noimage", getpid(), NULL);
	fake_sandbox(base, "sb-other", getpid(), other);
	fake_sandbox(base, "other-live", getpid(), img);
	cr_assert_eq(image_in_use(base, img, &by), 0);
	cr_assert_null(by);
	/* A live one naming it through a symbolic link. */
	fake_sandbox(base, "sb-live", getpid(), link);
	cr_assert_eq(image_in_use(base, img, &by), 1);
	cr_assert_not_null(by);
	cr_assert(strncmp(by, "sb-live (process ", 17) == 0, "%s", by);
	free(by);
	cr_assert_eq(image_in_use(NULL, img, &by), 0);
}

struct pull_seen {
	int	 n;
	char	*path;
	char	*cause;
};

static void
pull_cb(struct image_pull *p, const char *path, const char *cause,
    void *arg)
{
	struct pull_seen	*s = arg;

	(void)p;
	s->n++;
	s->path = path != NULL ? strdup(path) : NULL;
	s->cause = cause != NULL ? strdup(cause) : NULL;
}

/* Pull req on a loop of its own; what cb was given. */
static void
pull_run(const struct image_req *req, struct pull_seen *s)
{
	struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
	struct image_pull	*p;
	double			 t0 = util_now();

	memset(s, 0, sizeof *s);
	p = image_pull_start(loop, req, pull_cb, s);
	cr_assert_not_null(p);
	cr_assert_eq(s->n, 0, "cb called from image_pull_start");
	while (s->n == 0 && util_now() - t0 < 20)
		ev_run(loop, EVRUN_ONCE);
	cr_assert_eq(s->n, 1);
	ev_loop_destroy(loop);
}

/* How many entries dir has (its hidden ones too). */
static int
dir_entries(const char *dir)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	cr_assert_not_null(d = opendir(dir));
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	}
	closedir(d);
	return (n);
}

/*
 * The cap: image_max_size, or the room on the disk less its margin,
 * whichever is smaller, a part already there counted; named either way.
 */
Test(image, room, .init = image_setup, .fini = image_teardown)
{
	struct image_req	 req = { .max_size = 1024 * 1024 };
	struct statvfs		 sv;
	uint64_t		 room, avail;
	char			*why;

	cr_assert_eq(image_room(&req, tmp, 0, &why), 1024 * 1024);
	cr_assert_str_eq(why, "image_max_size, 1048576 bytes");
	free(why);
	req.max_size = 0;
	cr_assert_leq(image_room(&req, tmp, 0, &why), IMAGE_MAX_SIZE_DEFAULT);
	free(why);
	/* Past any disk: the room, never more than the free space. */
	req.max_size = UINT64_MAX / 2;
	cr_assert_eq(statvfs(tmp, &sv), 0);
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	room = image_room(&req, tmp, 0, &why);
	cr_assert_lt(room, avail + 64 * 1024 * 1024);
	cr_assert(strncmp(why, "the room in ", 12) == 0, "%s", why);
	cr_assert(strstr(why, tmp) != NULL, "%s", why);
	cr_assert(strstr(why, "less a margin of ") != NULL, "%s", why);
	free(why);
	/* A part of 1 TB already there is room it takes. */
	cr_assert_geq(image_room(&req, tmp, (uint64_t)1 << 40, &why),
	    (uint64_t)1 << 40);
	free(why);
}

Test(image, pull_failures, .init = image_setup, .fini = image_teardown)
{
	struct image_req	req = { .dir = tmp,
				    .progress = IMAGE_PROGRESS_QUIET };
	struct pull_seen	s;

	req.url = "ftp://h/d.img";
	pull_run(&req, &s);
	cr_assert(strstr(s.cause, "not an http(s) URL") != NULL, "%s", s.cause);
	free(s.cause);
	req.url = "http://h/";
	pull_run(&req, &s);
	cr_assert(strstr(s.cause, "no file name") != NULL, "%s", s.cause);
	free(s.cause);
	req.url = "http://h/d.img";
	req.sha256 = "abc";
	pull_run(&req, &s);
	cr_assert(strstr(s.cause, "not 64 hex digits") != NULL, "%s", s.cause);
	free(s.cause);
	/* Nothing listens on port 1: refused, and no part left. */
	req.url = "http://127.0.0.1:1/d.img";
	req.sha256 = H64A;
	pull_run(&req, &s);
	cr_assert_null(s.path);
	cr_assert(strstr(s.cause, "http://127.0.0.1:1/d.img: ") != NULL, "%s",
	    s.cause);
	free(s.cause);
	/* Nothing at all: no part, no lock, no .partial. */
	cr_assert_eq(dir_entries(tmp), 0, "%s is not empty", tmp);
}

Test(image, pull_cached_makes_no_request, .init = image_setup,
    .fini = image_teardown)
{
	/* Port 1: a request would fail; the cached image is the answer. */
	struct image_req	 req = { .url = "http://127.0.0.1:1/c.img",
				     .dir = tmp,
				     .progress = IMAGE_PROGRESS_QUIET };
	struct pull_seen	 s;
	char			*path, *got;

	path = fake_image(req.url, 8);
	pull_run(&req, &s);
	cr_assert_null(s.cause, "%s", s.cause);
	cr_assert_str_eq(s.path, path);
	free(s.path);
	cr_assert_not_null(got = image_cached(&req));
	cr_assert_str_eq(got, path);
	free(got);
	req.url = "http://127.0.0.1:1/other.img";
	req.unverified_ok = 1;
	cr_assert_null(image_cached(&req));
	pull_run(&req, &s);
	cr_assert_null(s.path);
	cr_assert_not_null(s.cause);
	free(s.cause);
	free(path);
}

static void
hashed_cb(void *arg)
{
	(*(int *)arg)++;
}

/* Writes 3 MB + 5 through h in 16 KB pieces; its SHA-256 to d. */
static void
big_part(struct image_hasher *h, int fd, unsigned char *d)
{
	static char	 piece[16384];
	EVP_MD_CTX	*c = EVP_MD_CTX_new();
	size_t		 i, n, total = 3 * 1024 * 1024 + 5;
	struct stat	 st;

	cr_assert_eq(EVP_DigestInit_ex(c, EVP_sha256(), NULL), 1);
	for (i = 0; i < total; i += n) {
		n = total - i < sizeof piece ? total - i : sizeof piece;
		memset(piece, (int)(i / sizeof piece), n);
		cr_assert_eq(image_hasher_write(h, piece, n), 0);
		cr_assert_eq(EVP_DigestUpdate(c, piece, n), 1);
	}
	cr_assert_lt(h->written, total, "all written before the flush");
	cr_assert_eq(image_hasher_flush(h), 0);
	cr_assert_eq(fstat(fd, &st), 0);
	cr_assert_eq((size_t)st.st_size, total);
	cr_assert_eq(h->written, total);
	image_hasher_finish(h);
	cr_assert_eq(EVP_DigestFinal_ex(c, d, NULL), 1);
	EVP_MD_CTX_free(c);
}

/* The thread's digests: of the part as written, restarted, and stopped. */
Test(image, hasher, .init = image_setup, .fini = image_teardown)
{
	struct image_hasher	 h;
	struct ev_loop		*loop = ev_loop_new(EVFLAG_AUTO);
	unsigned char		 d[32], d5[64];
	char			 path[PATH_MAX], *hex;
	int			 fd, n = 0;

	snprintf(path, sizeof path, "%s/part", tmp);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd != -1);
	cr_assert_eq(write(fd, "ab", 2), 2);
	image_hasher_init(&h, loop, hashed_cb, &n);
	/* "ab" kept from before, then "c" written: "abc". */
	cr_assert_eq(image_hasher_start(&h, fd, 1, 2), 0);
	cr_assert_eq(image_hasher_write(&h, "c", 1), 0);
	cr_assert_eq(image_hasher_flush(&h), 0);
	cr_assert_eq(h.written, 3);
	image_hasher_finish(&h);
	while (n == 0)
		ev_run(loop, EVRUN_ONCE);
	cr_assert_eq(image_hasher_result(&h, d, d5), 0);
	hex = token_hex_of(d, 32);
	cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9c"
	    "b410ff61f20015ad");
	free(hex);
	hex = token_hex_of(d5, 64);
	cr_assert(strncmp(hex, "ddaf35a193617aba", 16) == 0, "%s", hex);
	free(hex);
	/* Started over on an empty part, stopped half-way, started again. */
	cr_assert_eq(ftruncate(fd, 0), 0);
	cr_assert_eq(image_hasher_start(&h, fd, 0, 0), 0);
	image_hasher_stop(&h);
	cr_assert_eq(image_hasher_start(&h, fd, 0, 0), 0);
	image_hasher_finish(&h);
	while (n == 1)
		ev_run(loop, EVRUN_ONCE);
	cr_assert_eq(image_hasher_result(&h, d, d5), 0);
	hex = token_hex_of(d, 32);
	cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934c"
	    "a495991b7852b855");
	free(hex);
	/*
	 * 3 MB and a bit in libcurl's 16 KB pieces: gathered into writes
	 * of the part (whole on disk after the flush), hashed as written.
	 */
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	cr_assert_eq(image_hasher_start(&h, fd, 0, 0), 0);
	big_part(&h, fd, d);
	while (n == 2)
		ev_run(loop, EVRUN_ONCE);
	cr_assert_eq(image_hasher_result(&h, d5, NULL), 0);
	cr_assert(memcmp(d, d5, 32) == 0);
	cr_assert_eq(ftruncate(fd, 0), 0);
	/* Told of bytes that are not there: an error, not a digest. */
	cr_assert_eq(image_hasher_start(&h, fd, 0, 10), 0);
	image_hasher_finish(&h);
	while (n == 3)
		ev_run(loop, EVRUN_ONCE);
	cr_assert_eq(image_hasher_result(&h, d, d5), -1);
	image_hasher_free(&h);
	close(fd);
	ev_loop_destroy(loop);
}
