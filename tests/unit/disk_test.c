#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cmd.h"

static char	dir[] = "/tmp/qsup-disk.XXXXXX";

static void
setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void
teardown(void)
{
	util_rm_rf(dir);
}

TestSuite(disk, .init = setup, .fini = teardown);

static void
put_be32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}

static void
put_be64(unsigned char *p, uint64_t v)
{
	put_be32(p, v >> 32);
	put_be32(p + 4, (uint32_t)v);
}

/* A qcow2 header of version, 64 KiB clusters, 1 GiB. */
static void
qcow2(unsigned char *h, uint32_t version)
{
	memset(h, 0, 512);
	memcpy(h, "QFI\xfb", 4);
	put_be32(h + 4, version);
	put_be32(h + 20, 16);
	put_be64(h + 24, 1ULL << 30);
}

static char *
refusal(const unsigned char *h, size_t len, uint64_t size)
{
	struct disk_info	 info;
	char			*cause = NULL;

	cr_assert_eq(disk_parse_header(h, len, size, &info, &cause), -1);
	cr_assert_not_null(cause);
	return (cause);
}

Test(disk, header_says_the_format_not_the_name)
{
	unsigned char		 h[512];
	struct disk_info	 info;
	char			*cause = NULL;

	qcow2(h, 3);
	cr_assert_eq(disk_parse_header(h, sizeof h, 4096, &info, &cause), 0);
	cr_assert_str_eq(info.format, "qcow2");
	cr_assert_eq(info.virtual_size, 1ULL << 30);
	qcow2(h, 2);
	cr_assert_eq(disk_parse_header(h, sizeof h, 4096, &info, &cause), 0);
	memset(h, 0, sizeof h);
	cr_assert_eq(disk_parse_header(h, sizeof h, 1 << 20, &info, &cause),
	    0);
	cr_assert_str_eq(info.format, "raw");
	cr_assert_eq(info.virtual_size, 1 << 20);
}

Test(disk, refuses_what_could_reach_other_files)
{
	unsigned char	 h[512];
	char		*cause;

	qcow2(h, 3);
	put_be64(h + 8, 512);
	cause = refusal(h, sizeof h, 4096);
	cr_assert(strstr(cause, "backing file of its own") != NULL, "%s",
	    cause);
	free(cause);
	qcow2(h, 3);
	put_be64(h + 72, 0x4);
	cause = refusal(h, sizeof h, 4096);
	cr_assert(strstr(cause, "external data file") != NULL, "%s", cause);
	free(cause);
	qcow2(h, 3);
	put_be64(h + 72, 0x1);
	cause = refusal(h, sizeof h, 4096);
	cr_assert(strstr(cause, "dirty") != NULL, "%s", cause);
	free(cause);
	qcow2(h, 4);
	cause = refusal(h, sizeof h, 4096);
	cr_assert(strstr(cause, "version 4") != NULL, "%s", cause);
	free(cause);
	qcow2(h, 3);
	cause = refusal(h, 40, 4096);
	cr_assert(strstr(cause, "truncated") != NULL, "%s", cause);
	free(cause);
	memcpy(h, "KDMV", 4);
	cause = refusal(h, sizeof h, 4096);
	cr_assert(strstr(cause, "VMDK") != NULL, "%s", cause);
	free(cause);
	memset(h, 0, sizeof h);
	cause = refusal(h, sizeof h, 1000);
	cr_assert(strstr(cause, "512-byte sectors") != NULL, "%s", cause);
	free(cause);
}

/* A real overlay by qemu-img, over a raw base, grown, base untouched. */
Test(disk, overlay_over_a_base_left_as_it_was)
{
	struct disk	 d;
	struct buf	 b = { 0 };
	char		*base, *cause = NULL;
	int		 fd;

	xasprintf(&base, "%s/base.raw", dir);
	cr_assert_neq(fd = open(base, O_WRONLY|O_CREAT, 0644), -1);
	cr_assert_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	cr_assert_eq(disk_probe(base, &d, &cause), 0, "%s", cause);
	cr_assert_str_eq(d.info.format, "raw");
	cr_assert_eq(disk_overlay(&d, dir, 1 << 20, &cause), -1);
	cr_assert(strstr(cause, "smaller than the image") != NULL, "%s",
	    cause);
	free(cause);
	cause = NULL;
	cr_assert_eq(disk_overlay(&d, dir, 8 << 20, &cause), 0, "%s", cause);
	cr_assert(d.grow);
	cr_assert_eq(d.size, 8 << 20);
	cr_assert_eq(access(d.overlay, R_OK), 0);
	cr_assert_eq(disk_untouched(&d, &b), 1, "%s", b.data);
	cr_assert(strstr(b.data, "\"untouched\":true") != NULL, "%s", b.data);
	buf_free(&b);
	/* Any write shows, even one that leaves size and mtime. */
	cr_assert_neq(fd = open(base, O_WRONLY), -1);
	cr_assert_eq(pwrite(fd, "x", 1, 0), 1);
	close(fd);
	cr_assert_eq(disk_untouched(&d, &b), 0, "%s", b.data);
	cr_assert(strstr(b.data, "\"untouched\":false") != NULL, "%s", b.data);
	buf_free(&b);
	disk_free(&d);
	free(base);
}

/*
 * Kept disks (a template's, a snapshot's over it) between the base and
 * the overlay: each a read-only node over the one below, the overlay over
 * the last; made again over none, the overlay is over the base again.
 */
Test(disk, overlay_over_kept_disks_in_order)
{
	struct disk		 d;
	struct qemu_argv	 a = { 0 };
	char			*base, *mids[2], *cause = NULL;
	size_t			 i;
	int			 fd, seen = 0;

	xasprintf(&base, "%s/base.raw", dir);
	cr_assert_neq(fd = open(base, O_WRONLY|O_CREAT, 0644), -1);
	cr_assert_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	cr_assert_eq(disk_probe(base, &d, &cause), 0, "%s", cause);
	cr_assert_eq(disk_overlay(&d, dir, 0, &cause), 0, "%s", cause);
	xasprintf(&mids[0], "%s/tpl.disk", dir);
	xasprintf(&mids[1], "%s/snap.qcow2", dir);
	/* The kept disks are copies of an overlay, as qsup keeps them. */
	for (i = 0; i < 2; i++) {
		xasprintf(&cause, "cp %s %s", d.overlay, mids[i]);
		cr_assert_eq(system(cause), 0);
		free(cause);
		cause = NULL;
	}
	cr_assert_eq(disk_overlay_on(&d, dir, mids, 2, &cause), 0, "%s",
	    cause);
	cr_assert_eq(d.nmids, 2);
	disk_qemu_args(&d, &a, 0);
	for (i = 0; a.argv[i] != NULL; i++) {
		if (strstr(a.argv[i], "node-name=tdisk0,") != NULL) {
			cr_assert(strstr(a.argv[i], "tpl.disk,backing=base,"
			    "read-only=on") != NULL, "%s", a.argv[i]);
			seen++;
		} else if (strstr(a.argv[i], "node-name=tdisk1,") != NULL) {
			cr_assert(strstr(a.argv[i], "snap.qcow2,backing=tdisk0,"
			    "read-only=on") != NULL, "%s", a.argv[i]);
			seen++;
		} else if (strstr(a.argv[i], "node-name=" DISK_NODE ",") !=
		    NULL && strstr(a.argv[i], "qcow2") != NULL) {
			cr_assert(strstr(a.argv[i], "backing=tdisk1,") != NULL,
			    "%s", a.argv[i]);
			seen++;
		}
	}
	cr_assert_eq(seen, 3);
	qemu_argv_free(&a);
	memset(&a, 0, sizeof a);
	cr_assert_eq(disk_overlay_on(&d, dir, NULL, 0, &cause), 0, "%s",
	    cause);
	cr_assert_eq(d.nmids, 0);
	disk_qemu_args(&d, &a, 0);
	for (i = 0; a.argv[i] != NULL; i++)
		cr_assert(strstr(a.argv[i], "tdisk") == NULL, "%s", a.argv[i]);
	qemu_argv_free(&a);
	disk_free(&d);
	free(mids[0]);
	free(mids[1]);
	free(base);
}

/*
 * A restore's overlay over a template's disk: made by qemu-img once and
 * kept as the pristine copy, then copied; a pristine copy that is not an
 * overlay of this size is not used (qemu-img makes the overlay again).
 */
Test(disk, overlay_copied_from_its_pristine_copy)
{
	struct disk	 d;
	struct stat	 st;
	char		*base, *mid, *top, *cmd, *cause = NULL;
	int		 fd;

	xasprintf(&base, "%s/base.raw", dir);
	cr_assert_neq(fd = open(base, O_WRONLY|O_CREAT, 0644), -1);
	cr_assert_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	cr_assert_eq(disk_probe(base, &d, &cause), 0, "%s", cause);
	cr_assert_eq(disk_overlay(&d, dir, 0, &cause), 0, "%s", cause);
	xasprintf(&mid, "%s/KEY.disk", dir);
	xasprintf(&top, "%s/KEY.top", dir);
	xasprintf(&cmd, "mv %s %s", d.overlay, mid);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	cr_assert_eq(disk_overlay_copy(&d, dir, mid, top, &cause), 0, "%s",
	    cause);
	cr_assert_eq(stat(top, &st), 0, "no pristine copy kept");
	cr_assert_eq(d.nmids, 1);
	cr_assert_str_eq(d.mids[0], mid);
	/* The next one is a copy of it, byte for byte. */
	cr_assert_eq(unlink(d.overlay), 0);
	cr_assert_eq(disk_overlay_copy(&d, dir, mid, top, &cause), 0, "%s",
	    cause);
	xasprintf(&cmd, "cmp -s %s %s", top, d.overlay);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	/* A pristine copy that is no overlay: qemu-img again. */
	cr_assert_eq(truncate(top, 10), 0);
	cr_assert_eq(disk_overlay_copy(&d, dir, mid, top, &cause), 0, "%s",
	    cause);
	cr_assert_eq(stat(d.overlay, &st), 0);
	cr_assert_gt(st.st_size, 4096);
	xasprintf(&cmd, "qemu-img info -U %s | grep -q 'backing file: %s'",
	    d.overlay, mid);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	disk_free(&d);
	free(mid);
	free(top);
	free(base);
}
