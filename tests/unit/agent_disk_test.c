/*
 * The agent's disk image reader (guest/disk.c), compiled in: GPT, MBR and
 * whole-disk layouts built here byte by byte, and the small real images
 * sfdisk and mke2fs made for the fuzz corpus. Which partition is the
 * root, what an error says was seen, and what growing writes (read back
 * through the same reader, so its CRCs are checked too). Run from the
 * repository root.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../guest/disk.c"	/* not core/vm/disk.c */

#define SEC		512
#define T_DATA		"0fc63daf-8483-4772-8e79-3d69d8477de4"
#define T_ROOT		"4f68bce3-e8cd-4db1-96e7-fbcaf984b709"
#define T_ROOT_ARM	"b921b045-1df0-41c3-af44-4c6f280d3fae"
#define T_ESP		"c12a7328-f81f-11d2-ba4b-00a0c93ec93b"
#define T_BIOS		"21686148-6449-6e6f-744e-656564454649"
#define T_XBOOT		"bc13c2ff-59e6-4262-a352-b275fd6f7172"
#define CORPUS		"tests/fuzz/corpus/agent_disk/"

struct mem {
	unsigned char	*p;
	size_t		 len;
};

struct part {
	int		 no;		/* 1-based entry number */
	const char	*type;
	uint64_t	 first, last;	/* LBAs */
	int		 ext4;
	const char	*label;
};

static int
mem_read(void *arg, uint64_t off, void *buf, size_t len)
{
	struct mem	*m = arg;

	if (off > m->len || len > m->len - off)
		return (-1);
	memcpy(buf, m->p + off, len);
	return (0);
}

static struct disk_reader
reader(struct mem *m)
{
	struct disk_reader	d = { mem_read, m, m->len, SEC };

	return (d);
}

static void
put32(unsigned char *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static void
put64(unsigned char *p, uint64_t v)
{
	put32(p, (uint32_t)v);
	put32(p + 4, (uint32_t)(v >> 32));
}

/* A GUID's text in its mixed-endian form on disk. */
static void
guid(unsigned char *out, const char *text)
{
	unsigned	v[16];
	int		i;

	cr_assert_eq(sscanf(text, "%2x%2x%2x%2x-%2x%2x-%2x%2x-%2x%2x-%2x%2x"
	    "%2x%2x%2x%2x", &v[3], &v[2], &v[1], &v[0], &v[5], &v[4], &v[7],
	    &v[6], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14],
	    &v[15]), 16);
	for (i = 0; i < 16; i++)
		out[i] = (unsigned char)v[i];
}

/* An ext4 superblock of blocks 1 KiB blocks at byte off. */
static void
ext4_at(struct mem *m, uint64_t off, uint64_t blocks, const char *label)
{
	unsigned char	*sb = m->p + off + 1024;

	put32(sb + 0x04, (uint32_t)blocks);
	put32(sb + 0x18, 0);
	sb[0x38] = 0x53;
	sb[0x39] = 0xef;
	if (label != NULL)
		memcpy(sb + 0x78, label, strlen(label));
}

static void
gpt_header(unsigned char *h, uint64_t my, uint64_t alt, uint64_t elba,
    uint64_t nlba, uint32_t ecrc)
{
	memcpy(h, "EFI PART", 8);
	put32(h + 8, 0x00010000);
	put32(h + 12, 92);
	put64(h + 24, my);
	put64(h + 32, alt);
	put64(h + 40, 34);
	put64(h + 48, nlba - 34);
	put64(h + 72, elba);
	put32(h + 80, 128);
	put32(h + 84, 128);
	put32(h + 88, ecrc);
	put32(h + 16, disk_crc32(h, 92));
}

/* A disk of nlba sectors with a GPT (both copies) of the parts given. */
static struct mem
gpt_disk(uint64_t nlba, const struct part *parts, size_t n)
{
	struct mem	 m;
	unsigned char	*e, ents[128 * 128];
	uint32_t	 ecrc;
	size_t		 i;

	m.len = nlba * SEC;
	m.p = calloc(1, m.len);
	cr_assert_not_null(m.p);
	memset(ents, 0, sizeof ents);
	for (i = 0; i < n; i++) {
		e = ents + (parts[i].no - 1) * 128;
		guid(e, parts[i].type);
		e[16] = (unsigned char)(i + 1);
		put64(e + 32, parts[i].first);
		put64(e + 40, parts[i].last);
		if (parts[i].ext4)
			ext4_at(&m, parts[i].first * SEC, (parts[i].last -
			    parts[i].first + 1) / 2, parts[i].label);
	}
	ecrc = disk_crc32(ents, sizeof ents);
	memcpy(m.p + 2 * SEC, ents, sizeof ents);
	memcpy(m.p + (nlba - 33) * SEC, ents, sizeof ents);
	gpt_header(m.p + SEC, 1, nlba - 1, 2, nlba, ecrc);
	gpt_header(m.p + (nlba - 1) * SEC, nlba - 1, 1, nlba - 33, nlba, ecrc);
	/* The protective MBR. */
	m.p[446 + 4] = 0xee;
	put32(m.p + 446 + 8, 1);
	put32(m.p + 446 + 12, (uint32_t)(nlba - 1));
	m.p[510] = 0x55;
	m.p[511] = 0xaa;
	return (m);
}

static struct mem
load(const char *name)
{
	struct mem	 m;
	FILE		*f;
	long		 n;

	f = fopen(name, "rb");
	cr_assert_not_null(f, "%s (run from the repository root)", name);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	m.len = (size_t)n;
	m.p = malloc(m.len);
	cr_assert_eq(fread(m.p, 1, m.len, f), m.len);
	fclose(f);
	return (m);
}

/* Find the root of m; asserts it is found. */
static void
find(struct mem *m, struct disk_root *r)
{
	struct disk_reader	d = reader(m);

	cr_assert_eq(disk_find_root(&d, r), 0, "not found: %s", r->seen);
}

Test(disk, crc32_is_the_uefi_one)
{
	cr_assert_eq(disk_crc32("123456789", 9), 0xcbf43926);
}

Test(disk, debian_layout_root_by_content)
{
	struct part	 p[] = {
		{ 1, T_DATA, 2048, 8191, 1, NULL },
		{ 14, T_BIOS, 40, 1000, 0, NULL },
		{ 15, T_ESP, 1024, 2047, 0, NULL },
	};
	struct mem	 m = gpt_disk(8192 + 34, p, 3);
	struct disk_root r;

	find(&m, &r);
	cr_assert_eq(r.scheme, DISK_GPT);
	cr_assert_eq(r.partno, 1);
	cr_assert_eq(r.start, 2048 * SEC);
	cr_assert_eq(r.len, 6144 * SEC);
	cr_assert(r.last);
	cr_assert_str_eq(r.how, "by its content (ext4)");
	cr_assert_not_null(strstr(r.seen, "14 (BIOS boot)"), "%s", r.seen);
	disk_root_free(&r);
	free(m.p);
}

Test(disk, root_type_beats_label_beats_content)
{
	struct part	 p[] = {
		{ 1, T_DATA, 100, 4099, 1, NULL },		/* biggest */
		{ 2, T_DATA, 4100, 4999, 1, "cloudimg-rootfs" },
		{ 3, T_ROOT, 5000, 5999, 1, NULL },
	};
	struct mem	 m = gpt_disk(6100, p, 3);
	struct disk_root r;

	find(&m, &r);
	cr_assert_eq(r.partno, 3);
	cr_assert_str_eq(r.how, "by its GPT type");
	disk_root_free(&r);
	free(m.p);

	m = gpt_disk(6100, p, 2);
	find(&m, &r);
	cr_assert_eq(r.partno, 2);
	cr_assert_str_eq(r.how, "by its ext4 label");
	cr_assert_str_eq(r.fs.label, "cloudimg-rootfs");
	cr_assert(r.last);
	disk_root_free(&r);
	free(m.p);
}

/* Ubuntu 24.04: a /boot ext4 (XBOOTLDR type) beside the root. */
Test(disk, boot_and_esp_are_never_the_root)
{
	struct part	 p[] = {
		{ 1, T_DATA, 3000, 3999, 1, NULL },
		{ 15, T_ESP, 40, 999, 1, NULL },
		{ 16, T_XBOOT, 1000, 2999, 1, "BOOT" },
	};
	struct mem	 m = gpt_disk(4100, p, 3);
	struct disk_root r;

	find(&m, &r);
	cr_assert_eq(r.partno, 1);
	disk_root_free(&r);
	free(m.p);
}

Test(disk, root_type_without_ext4_is_an_error)
{
	struct part		 p[] = {
		{ 1, T_ROOT, 100, 999, 0, NULL },
		{ 2, T_DATA, 1000, 1999, 1, NULL },
	};
	struct mem		 m = gpt_disk(2100, p, 2);
	struct disk_reader	 d = reader(&m);
	struct disk_root	 r;

	cr_assert_eq(disk_find_root(&d, &r), -1);
	cr_assert_not_null(strstr(r.seen, "root partition is not ext4"),
	    "%s", r.seen);
	cr_assert_null(r.table);
	free(m.p);
}

Test(disk, the_other_architectures_root_is_not_taken)
{
	struct part		 p[] = { { 1, T_ROOT_ARM, 100, 999, 1,
	    "cloudimg-rootfs" } };
	struct mem		 m = gpt_disk(1100, p, 1);
	struct disk_reader	 d = reader(&m);
	struct disk_root	 r;

	cr_assert_eq(disk_find_root(&d, &r), -1);
	cr_assert_not_null(strstr(r.seen, "1 (root arm64, ext4 "
	    "cloudimg-rootfs)"), "%s",
	    r.seen);
	cr_assert_not_null(strstr(r.seen, "no ext4 root file system"), "%s",
	    r.seen);
	free(m.p);
}

Test(disk, damaged_primary_gpt_falls_back_to_the_backup)
{
	struct part	 p[] = { { 1, T_DATA, 100, 999, 1, NULL } };
	struct mem	 m = gpt_disk(1100, p, 1);
	struct disk_root r;
	const char	*why = NULL;
	struct disk_grow g;

	m.p[SEC + 40] ^= 1;		/* header CRC no longer matches */
	find(&m, &r);
	cr_assert(r.gpt_backup);
	cr_assert_not_null(strstr(r.seen, "backup copy"), "%s", r.seen);
	cr_assert_eq(disk_grow_plan(&r, SEC, 3000, &g, &why), -1);
	cr_assert_str_eq(why, "the primary GPT is damaged");
	disk_root_free(&r);

	/* Entries damaged in both copies: a protective MBR and nothing. */
	m.p[(1100 - 33) * SEC] ^= 1;
	{
		struct disk_reader d = reader(&m);

		cr_assert_eq(disk_find_root(&d, &r), -1);
		cr_assert_not_null(strstr(r.seen, "protective MBR but no "
		    "valid GPT"), "%s", r.seen);
	}
	free(m.p);
}

Test(disk, nothing_found_says_what_was_seen)
{
	struct part		 p[] = {
		{ 1, T_DATA, 100, 999, 0, NULL },
		{ 2, T_DATA, 1000, 99999, 1, NULL },	/* past the end */
	};
	struct mem		 m = gpt_disk(1100, p, 2);
	struct disk_reader	 d = reader(&m);
	struct disk_root	 r;

	cr_assert_eq(disk_find_root(&d, &r), -1);
	cr_assert_str_eq(r.seen, "GPT: 1 (linux data), 2 (linux data, "
	    "outside the disk): no ext4 root file system");
	free(m.p);

	m.len = 64 * 1024;
	m.p = calloc(1, m.len);
	d = reader(&m);
	cr_assert_eq(disk_find_root(&d, &r), -1);
	cr_assert_not_null(strstr(r.seen, "no partition table and no ext4"),
	    "%s", r.seen);
	free(m.p);
}

Test(disk, whole_disk_ext4)
{
	struct mem		 m;
	struct disk_root	 r;
	struct disk_grow	 g;
	const char		*why = NULL;

	m.len = 64 * 1024;
	m.p = calloc(1, m.len);
	ext4_at(&m, 0, 64, "rootfs");
	find(&m, &r);
	cr_assert_eq(r.scheme, DISK_WHOLE);
	cr_assert_eq(r.partno, 0);
	cr_assert_eq(r.len, m.len);
	cr_assert_eq(r.fs.blocks, 64);
	/* Nothing to rewrite: the file system alone grows. */
	cr_assert_eq(disk_grow_plan(&r, SEC, 1000, &g, &why), 1);
	disk_root_free(&r);
	free(m.p);
}

/* Grow plan applied to a bigger copy of m; the root read back. */
static void
grow_and_reread(struct mem *m, uint64_t nlba, struct disk_root *again)
{
	struct disk_root	 r;
	struct disk_grow	 g;
	struct mem		 big;
	const char		*why = NULL;

	find(m, &r);
	cr_assert_eq(disk_grow_plan(&r, SEC, nlba, &g, &why), 0, "%s", why);
	big.len = nlba * SEC;
	big.p = calloc(1, big.len);
	memcpy(big.p, m->p, m->len);
	if (g.mbr != NULL)
		memcpy(big.p, g.mbr, SEC);
	else {
		memcpy(big.p + g.backup_ents_lba * SEC, g.ents, g.ents_len);
		memcpy(big.p + g.backup_lba * SEC, g.backup, SEC);
		memcpy(big.p + g.primary_ents_lba * SEC, g.ents, g.ents_len);
		memcpy(big.p + SEC, g.primary, SEC);
		cr_assert_eq(disk_grow_pmbr(big.p, nlba), 1);
	}
	find(&big, again);
	cr_assert_eq(again->len, g.new_len);
	disk_grow_free(&g);
	disk_root_free(&r);

	/* The backup copy alone must read back the same. */
	if (again->scheme == DISK_GPT) {
		struct disk_root	b;

		memset(big.p + SEC, 0, SEC);
		find(&big, &b);
		cr_assert(b.gpt_backup);
		cr_assert_eq(b.len, again->len);
		cr_assert_eq(disk_le64(b.table + 24), nlba - 1);
		disk_root_free(&b);
	}
	free(big.p);
}

Test(disk, grow_gpt_rewrites_both_copies)
{
	struct part	 p[] = {
		{ 1, T_DATA, 2048, 8191, 1, NULL },
		{ 15, T_ESP, 1024, 2047, 0, NULL },
	};
	struct mem	 m = gpt_disk(8192 + 34, p, 2);
	struct disk_root r;

	grow_and_reread(&m, 100000, &r);
	cr_assert_eq(r.partno, 1);
	cr_assert_eq(r.start, 2048 * SEC);
	/* To the last usable sector: the backup entries start after it. */
	cr_assert_eq(r.len, (100000 - 34 - 2048 + 1) * (uint64_t)SEC);
	cr_assert_eq(disk_le64(r.table + 32), 100000 - 1);
	cr_assert_eq(disk_le64(r.table + 48), 100000 - 34);
	disk_root_free(&r);
	free(m.p);
}

Test(disk, grow_skips_a_full_disk_and_refuses_a_middle_root)
{
	struct part		 p[] = {
		{ 1, T_DATA, 2048, 8191, 1, NULL },
		{ 2, T_ESP, 8192, 8200, 0, NULL },
	};
	struct mem		 m = gpt_disk(8192 + 34, p, 1);
	struct disk_root	 r;
	struct disk_grow	 g;
	const char		*why = NULL;

	find(&m, &r);
	/* Under a mebibyte to gain: nothing is written. */
	cr_assert_eq(disk_grow_plan(&r, SEC, 8192 + 34 + 100, &g, &why), 1);
	disk_root_free(&r);
	free(m.p);

	p[0].last = 4000;
	m = gpt_disk(8300, p, 2);
	find(&m, &r);
	cr_assert(!r.last);
	cr_assert_eq(disk_grow_plan(&r, SEC, 100000, &g, &why), -1);
	cr_assert_str_eq(why, "the root is not the last partition on the "
	    "disk");
	disk_root_free(&r);
	free(m.p);
}

Test(disk, mbr_root_found_and_grown)
{
	struct mem	 m;
	struct disk_root r;

	m.len = 8192 * SEC;
	m.p = calloc(1, m.len);
	m.p[446 + 4] = 0x83;
	put32(m.p + 446 + 8, 2048);
	put32(m.p + 446 + 12, 4096);
	m.p[510] = 0x55;
	m.p[511] = 0xaa;
	ext4_at(&m, 2048 * SEC, 2048, NULL);
	find(&m, &r);
	cr_assert_eq(r.scheme, DISK_MBR);
	cr_assert_eq(r.partno, 1);
	cr_assert(r.last);
	disk_root_free(&r);
	grow_and_reread(&m, 50000, &r);
	cr_assert_eq(r.len, (50000 - 2048) * (uint64_t)SEC);
	disk_root_free(&r);
	free(m.p);
}

Test(disk, ext4_superblock_fields)
{
	unsigned char	sb[1024];
	struct disk_fs	fs;

	memset(sb, 0, sizeof sb);
	cr_assert_eq(disk_ext4_parse(sb, sizeof sb, &fs), -1);
	sb[0x38] = 0x53;
	sb[0x39] = 0xef;
	put32(sb + 0x04, 5);
	put32(sb + 0x18, 2);			/* 4 KiB blocks */
	put32(sb + 0x60, 0x80);			/* 64bit */
	put32(sb + 0x150, 1);
	memcpy(sb + 0x78, "a\033b", 3);
	cr_assert_eq(disk_ext4_parse(sb, sizeof sb, &fs), 0);
	cr_assert_eq(fs.block_size, 4096);
	cr_assert_eq(fs.blocks, (1ULL << 32) + 5);
	cr_assert_str_eq(fs.label, "a?b");
	put32(sb + 0x18, 7);			/* 128 KiB: not ext4 */
	cr_assert_eq(disk_ext4_parse(sb, sizeof sb, &fs), -1);
	cr_assert_eq(disk_ext4_parse(sb, 1000, &fs), -1);
}

Test(disk, glibc_banner_wins_over_symbol_versions)
{
	static const char t[] = "GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.36\0"
	    "GLIBC_2.1234\0stable release version 2.37.";
	int		 banner = -1, best = -1;

	disk_glibc_scan((const unsigned char *)t, sizeof t, &banner, &best);
	cr_assert_eq(best, 36);
	cr_assert_eq(banner, 37);
	banner = best = -1;
	/* A number cut by the end of the piece is not taken. */
	disk_glibc_scan((const unsigned char *)"GLIBC_2.3", 9, &banner, &best);
	cr_assert_eq(best, -1);
}

/* The images of the fuzz corpus, made by sfdisk and mke2fs. */
Test(disk, real_images_made_by_sfdisk_and_mke2fs)
{
	static const struct {
		const char	*file;
		int		 scheme, partno;
		const char	*how;
	} want[] = {
		{ "gpt-debian.raw", DISK_GPT, 1, "by its content (ext4)" },
		{ "gpt-root-label.raw", DISK_GPT, 1, "by its GPT type" },
		{ "mbr.raw", DISK_MBR, 1, "by its content (ext4)" },
		{ "whole.raw", DISK_WHOLE, 0, "on the whole disk" },
	};
	struct disk_root	r;
	struct mem		m;
	char			path[256];
	size_t			i;

	for (i = 0; i < sizeof want / sizeof want[0]; i++) {
		snprintf(path, sizeof path, "%s%s", CORPUS, want[i].file);
		m = load(path);
		find(&m, &r);
		cr_assert_eq(r.scheme, want[i].scheme, "%s", want[i].file);
		cr_assert_eq(r.partno, want[i].partno, "%s", want[i].file);
		cr_assert_str_eq(r.how, want[i].how, "%s", want[i].file);
		cr_assert_eq(r.fs.blocks, 64, "%s", want[i].file);
		disk_root_free(&r);
		if (want[i].scheme == DISK_GPT) {
			grow_and_reread(&m, 4096, &r);
			disk_root_free(&r);
		}
		free(m.p);
	}
}
