/*
 * Reading a disk image's layout: its GPT (header, entry array, both
 * copies), its MBR or no table at all, the ext4 superblock of each
 * partition, and the glibc version in a libc's bytes. Everything here is
 * pure: bytes come through a disk_reader, so the same code runs over a
 * block device in the guest, over a buffer in the fuzz target and in the
 * unit tests. Every byte of an image is untrusted: each offset, count and
 * size is checked against the disk and against fixed bounds before use.
 *
 * The root file system is found, in this order of preference: a GPT
 * partition of this machine's "root" type (the Discoverable Partitions
 * Specification) holding ext4; an ext4 file system whose label names a
 * root (Ubuntu's "cloudimg-rootfs"...); the largest ext4 file system on a
 * partition that may hold one (Linux file system data, or an MBR
 * partition); ext4 on the whole disk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent.h"

#define DISK_GPT_SIG		"EFI PART"
#define DISK_GPT_HDR_MIN	92
#define DISK_GPT_ENT_MIN	128
#define DISK_GPT_ENTS_MAX	(1024 * 1024)	/* bytes of entry array */
#define DISK_PROBE_MAX		128		/* superblocks read */
#define DISK_EXT4_OFF		1024
#define DISK_EXT4_MAGIC		0xef53
#define DISK_EXT4_64BIT		0x80		/* INCOMPAT_64BIT */
#define DISK_GROW_SLACK		(1024 * 1024)	/* smaller gains: skip */

#if defined(__aarch64__)
#define DISK_ARCH		DISK_T_ROOT_ARM64
#else
#define DISK_ARCH		DISK_T_ROOT_X86_64
#endif

/* Partition types that matter here, as text (lower case). */
static const struct {
	const char	*guid;
	const char	*name;
	int		 kind;
} disk_types[] = {
	{ "4f68bce3-e8cd-4db1-96e7-fbcaf984b709", "root x86-64",
	    DISK_T_ROOT_X86_64 },
	{ "b921b045-1df0-41c3-af44-4c6f280d3fae", "root arm64",
	    DISK_T_ROOT_ARM64 },
	{ "0fc63daf-8483-4772-8e79-3d69d8477de4", "linux data",
	    DISK_T_DATA },
	{ "c12a7328-f81f-11d2-ba4b-00a0c93ec93b", "EFI system", DISK_T_OTHER },
	{ "21686148-6449-6e6f-744e-656564454649", "BIOS boot", DISK_T_OTHER },
	{ "bc13c2ff-59e6-4262-a352-b275fd6f7172", "boot", DISK_T_OTHER },
	{ "0657fd6d-a4ab-43c4-84e5-0933c84b4f4f", "swap", DISK_T_OTHER },
	{ "933ac7e1-2eb4-4f13-b844-0e14e2aef915", "home", DISK_T_OTHER },
	{ "3b8f8425-20e0-4f3b-907f-1a25a76f98e8", "srv", DISK_T_OTHER },
	{ "4d21b016-b534-45c2-a9fb-5c16e091fd2d", "var", DISK_T_OTHER },
	{ "7ec6f557-3bc5-4aca-b293-16ef5df639d1", "tmp", DISK_T_OTHER },
	{ "e6d6d379-f507-44c2-a23c-238f2a3df928", "LVM", DISK_T_OTHER },
	{ "a19d880f-05fc-4d3b-a006-743f0f84911e", "RAID", DISK_T_OTHER },
};

/* ext4 labels that name a root file system, compared without case. */
static const char *const disk_root_labels[] = {
	"cloudimg-rootfs", "rootfs", "root", "img-rootfs", NULL
};

static uint32_t	disk_crc_table[256];

uint16_t
disk_le16(const unsigned char *p)
{
	return ((uint16_t)(p[0] | p[1] << 8));
}

uint32_t
disk_le32(const unsigned char *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24);
}

uint64_t
disk_le64(const unsigned char *p)
{
	return ((uint64_t)disk_le32(p) | (uint64_t)disk_le32(p + 4) << 32);
}

static void
disk_put32(unsigned char *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

static void
disk_put64(unsigned char *p, uint64_t v)
{
	disk_put32(p, (uint32_t)v);
	disk_put32(p + 4, (uint32_t)(v >> 32));
}

/* CRC-32 as UEFI computes it (ISO-HDLC: reflected 0x04c11db7). */
uint32_t
disk_crc32(const void *buf, size_t len)
{
	const unsigned char	*p = buf;
	uint32_t		 c, crc = 0xffffffff;
	int			 i, k;

	if (disk_crc_table[1] == 0) {
		for (i = 0; i < 256; i++) {
			c = (uint32_t)i;
			for (k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320 ^ (c >> 1) : c >> 1;
			disk_crc_table[i] = c;
		}
	}
	while (len-- > 0)
		crc = disk_crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return (crc ^ 0xffffffff);
}

/* A GUID as its usual text, from its mixed-endian form on disk. */
void
disk_guid_text(const unsigned char *g, char out[37])
{
	snprintf(out, 37, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
	    disk_le32(g), disk_le16(g + 4), disk_le16(g + 6), g[8], g[9],
	    g[10], g[11], g[12], g[13], g[14], g[15]);
}

/* Append to the bounded account of what was seen; silently truncated. */
static void
disk_note(struct disk_root *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
disk_note(struct disk_root *r, const char *fmt, ...)
{
	va_list	ap;
	size_t	len = strlen(r->seen);

	if (len >= sizeof r->seen - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(r->seen + len, sizeof r->seen - len, fmt, ap);
	va_end(ap);
}

/* Read len bytes at off, refusing anything past the disk's end. */
static int
disk_read(const struct disk_reader *d, uint64_t off, void *buf, size_t len)
{
	if (off > d->size || len > d->size - off)
		return (-1);
	return (d->read(d->arg, off, buf, len));
}

/*
 * The ext4 superblock (ext2 and ext3 too: the ext4 driver mounts them):
 * 1024 bytes from the file system's start. 0 and *fs filled, or -1.
 */
int
disk_ext4_parse(const unsigned char *sb, size_t len, struct disk_fs *fs)
{
	uint32_t	log;
	uint64_t	blocks;
	size_t		i;

	memset(fs, 0, sizeof *fs);
	if (len < 1024 || disk_le16(sb + 0x38) != DISK_EXT4_MAGIC)
		return (-1);
	/* Block sizes 1 KiB to 64 KiB. */
	if ((log = disk_le32(sb + 0x18)) > 6)
		return (-1);
	blocks = disk_le32(sb + 0x04);
	if (disk_le32(sb + 0x60) & DISK_EXT4_64BIT)
		blocks |= (uint64_t)disk_le32(sb + 0x150) << 32;
	if (blocks == 0)
		return (-1);
	fs->block_size = 1024U << log;
	fs->blocks = blocks;
	/* The label, printable ASCII only: it may end up in a message. */
	for (i = 0; i < 16 && sb[0x78 + i] != '\0'; i++)
		fs->label[i] = sb[0x78 + i] >= 0x20 && sb[0x78 + i] < 0x7f ?
		    (char)sb[0x78 + i] : '?';
	fs->label[i] = '\0';
	return (0);
}

/* Probe the range for an ext4 superblock; 0 and *fs, or -1. */
static int
disk_probe(const struct disk_reader *d, uint64_t start, uint64_t len,
    struct disk_fs *fs)
{
	unsigned char	sb[1024];

	if (len < DISK_EXT4_OFF + sizeof sb ||
	    disk_read(d, start + DISK_EXT4_OFF, sb, sizeof sb) == -1)
		return (-1);
	return (disk_ext4_parse(sb, sizeof sb, fs));
}

static int
disk_root_label(const char *label)
{
	size_t	i;

	for (i = 0; disk_root_labels[i] != NULL; i++) {
		if (strcasecmp(label, disk_root_labels[i]) == 0)
			return (1);
	}
	return (0);
}

/*
 * Weigh one partition holding ext4 against the best so far: a root type
 * beats a root label, which beats content alone (the larger wins there).
 */
static void
disk_consider(struct disk_root *r, int partno, uint64_t start, uint64_t len,
    int kind, const struct disk_fs *fs)
{
	int		 rank;
	const char	*how;

	/* Another architecture's root would not run here. */
	if ((kind == DISK_T_ROOT_X86_64 || kind == DISK_T_ROOT_ARM64) &&
	    kind != DISK_ARCH)
		return;
	if (kind == DISK_ARCH) {
		rank = 3;
		how = "by its GPT type";
	} else if (disk_root_label(fs->label)) {
		rank = 2;
		how = "by its ext4 label";
	} else if (kind == DISK_T_DATA || kind == DISK_T_MBR) {
		rank = 1;
		how = "by its content (ext4)";
	} else
		return;
	if (rank < r->rank || (rank == r->rank && (rank == 3 ||
	    len <= r->len)))
		return;
	r->rank = rank;
	r->how = how;
	r->partno = partno;
	r->start = start;
	r->len = len;
	r->fs = *fs;
}

/* A GPT header at lba: 0 if its signature, sizes and CRC hold. */
static int
disk_gpt_header(const struct disk_reader *d, uint64_t lba, unsigned char *h)
{
	unsigned char	tmp[512];
	uint32_t	hsize, crc;
	uint64_t	nlba = d->size / d->sector;

	if (lba >= nlba || disk_read(d, lba * d->sector, h, d->sector) == -1)
		return (-1);
	if (memcmp(h, DISK_GPT_SIG, 8) != 0)
		return (-1);
	hsize = disk_le32(h + 12);
	if (hsize < DISK_GPT_HDR_MIN || hsize > sizeof tmp ||
	    hsize > d->sector)
		return (-1);
	memcpy(tmp, h, hsize);
	memset(tmp + 16, 0, 4);
	crc = disk_crc32(tmp, hsize);
	if (crc != disk_le32(h + 16) || disk_le64(h + 24) != lba)
		return (-1);
	return (0);
}

/* The entry array a valid header names; 0 and a malloc'd array, or -1. */
static int
disk_gpt_entries(const struct disk_reader *d, const unsigned char *h,
    unsigned char **out, size_t *outlen, uint32_t *nent, uint32_t *esize)
{
	uint64_t	 lba = disk_le64(h + 72), len;
	unsigned char	*e;

	*nent = disk_le32(h + 80);
	*esize = disk_le32(h + 84);
	if (*esize < DISK_GPT_ENT_MIN || *esize > 4096 || *esize % 8 != 0 ||
	    *nent == 0 || *nent > DISK_GPT_ENTS_MAX / *esize || lba < 2)
		return (-1);
	len = (uint64_t)*nent * *esize;
	if (lba > d->size / d->sector)
		return (-1);
	if ((e = malloc(len)) == NULL)
		return (-1);
	if (disk_read(d, lba * d->sector, e, len) == -1 ||
	    disk_crc32(e, len) != disk_le32(h + 88)) {
		free(e);
		return (-1);
	}
	*out = e;
	*outlen = len;
	return (0);
}

static const char *
disk_type_name(const unsigned char *guid, int *kind, char text[37])
{
	size_t	i;

	disk_guid_text(guid, text);
	for (i = 0; i < sizeof disk_types / sizeof disk_types[0]; i++) {
		if (strcmp(text, disk_types[i].guid) == 0) {
			*kind = disk_types[i].kind;
			return (disk_types[i].name);
		}
	}
	*kind = DISK_T_UNKNOWN;
	return (text);
}

/* Walk a GPT's entries: weigh each, note each, find the last one. */
static int
disk_gpt_walk(const struct disk_reader *d, struct disk_root *r,
    const unsigned char *ents, uint32_t nent, uint32_t esize)
{
	const unsigned char	*e;
	const char		*name;
	char			 text[37];
	struct disk_fs		 fs;
	uint64_t		 first, last, nlba = d->size / d->sector, end = 0;
	uint32_t		 i;
	int			 kind, probes = 0, used = 0;

	for (i = 0; i < nent; i++) {
		e = ents + (size_t)i * esize;
		if (memcmp(e, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16) == 0)
			continue;
		used++;
		name = disk_type_name(e, &kind, text);
		first = disk_le64(e + 32);
		last = disk_le64(e + 40);
		disk_note(r, "%s%u (%s", used > 1 ? ", " : "", i + 1, name);
		if (first > last || last >= nlba) {
			disk_note(r, ", outside the disk)");
			r->odd = "a partition lies outside the disk";
			continue;
		}
		if (last > end)
			end = last;
		if (kind == DISK_T_OTHER || probes++ >= DISK_PROBE_MAX ||
		    disk_probe(d, first * d->sector, (last - first + 1) *
		    d->sector, &fs) == -1) {
			disk_note(r, ")");
			if (kind == DISK_ARCH) {
				disk_note(r, ": the root partition is not "
				    "ext4");
				return (-1);
			}
			continue;
		}
		disk_note(r, ", ext4%s%s)", fs.label[0] != '\0' ? " " : "",
		    fs.label);
		disk_consider(r, (int)i + 1, first * d->sector,
		    (last - first + 1) * d->sector, kind, &fs);
	}
	if (used == 0)
		disk_note(r, "no partitions");
	if (r->rank > 0)
		r->last = r->start / d->sector + r->len / d->sector - 1 == end;
	return (0);
}

/*
 * A GPT, primary copy first, the backup at the disk's last sector if the
 * primary is damaged. 1 if there is none, 0 if one was read (the root may
 * still be missing), -1 on a hard error.
 */
static int
disk_gpt(const struct disk_reader *d, struct disk_root *r)
{
	unsigned char	*h, *ents = NULL;
	size_t		 elen;
	uint32_t	 nent, esize;
	uint64_t	 nlba = d->size / d->sector;
	int		 backup = 0;

	if ((h = calloc(1, d->sector)) == NULL)
		return (-1);
	if (disk_gpt_header(d, 1, h) == -1 ||
	    disk_gpt_entries(d, h, &ents, &elen, &nent, &esize) == -1) {
		if (nlba < 2 || disk_gpt_header(d, nlba - 1, h) == -1 ||
		    disk_gpt_entries(d, h, &ents, &elen, &nent, &esize) == -1) {
			free(h);
			return (1);
		}
		backup = 1;
	}
	r->scheme = DISK_GPT;
	disk_note(r, "GPT%s: ", backup ? " (backup copy: the primary is "
	    "damaged)" : "");
	if (disk_gpt_walk(d, r, ents, nent, esize) == -1) {
		free(h);
		free(ents);
		return (-1);
	}
	r->table = h;
	r->ents = ents;
	r->ents_len = elen;
	r->gpt_backup = backup;
	return (0);
}

/* An MBR with at least one sane primary partition; 1 if there is none. */
static int
disk_mbr(const struct disk_reader *d, struct disk_root *r,
    const unsigned char *s)
{
	const unsigned char	*e;
	struct disk_fs		 fs;
	unsigned char		 gpt[8];
	uint64_t		 start, len, end = 0, nsec = d->size / d->sector;
	int			 i, n = 0, type;

	if (s[510] != 0x55 || s[511] != 0xaa)
		return (1);
	for (i = 0; i < 4; i++) {
		e = s + 446 + 16 * i;
		if (e[0] != 0 && e[0] != 0x80)
			return (1);
		if (e[4] != 0 && (disk_le32(e + 8) == 0 ||
		    disk_le32(e + 12) == 0))
			return (1);
		n += e[4] != 0;
	}
	if (n == 0)
		return (1);
	r->scheme = DISK_MBR;
	disk_note(r, "MBR: ");
	/* A GPT header whose table is damaged or cut: not ours to grow. */
	if (disk_read(d, d->sector, gpt, sizeof gpt) == -1 ||
	    memcmp(gpt, DISK_GPT_SIG, sizeof gpt) == 0)
		r->odd = "a damaged GPT is there too";
	for (i = 0, n = 0; i < 4; i++) {
		e = s + 446 + 16 * i;
		if ((type = e[4]) == 0)
			continue;
		start = disk_le32(e + 8);
		len = disk_le32(e + 12);
		disk_note(r, "%s%d (type %02x", n++ > 0 ? ", " : "", i + 1,
		    type);
		if (start + len > nsec) {
			disk_note(r, ", outside the disk)");
			r->odd = "a partition lies outside the disk";
			continue;
		}
		if (start + len > end)
			end = start + len;
		if (type == 0x05 || type == 0x0f || type == 0x85 ||
		    disk_probe(d, start * d->sector, len * d->sector,
		    &fs) == -1) {
			disk_note(r, ")");
			continue;
		}
		disk_note(r, ", ext4%s%s)", fs.label[0] != '\0' ? " " : "",
		    fs.label);
		disk_consider(r, i + 1, start * d->sector, len * d->sector,
		    DISK_T_MBR, &fs);
	}
	if (r->rank > 0)
		r->last = (r->start + r->len) / d->sector == end;
	if ((r->table = malloc(512)) == NULL)
		return (-1);
	memcpy(r->table, s, 512);
	return (0);
}

/*
 * Find the root file system of the disk d. 0 and *r filled (free it with
 * disk_root_free); -1 with r->seen saying what the disk holds.
 */
int
disk_find_root(const struct disk_reader *d, struct disk_root *r)
{
	unsigned char	s[512];
	struct disk_fs	fs;
	int		ret;

	memset(r, 0, sizeof *r);
	if ((d->sector != 512 && d->sector != 4096) || d->size < 2 * 4096) {
		disk_note(r, "%llu bytes in %u-byte sectors: too small or "
		    "odd", (unsigned long long)d->size, d->sector);
		return (-1);
	}
	if ((ret = disk_gpt(d, r)) == -1)
		goto fail;
	if (ret == 1) {
		if (disk_read(d, 0, s, sizeof s) == -1) {
			disk_note(r, "unreadable first sector");
			goto fail;
		}
		/* A protective MBR without a readable GPT is no MBR. */
		if (s[510] == 0x55 && s[511] == 0xaa && s[446 + 4] == 0xee) {
			disk_note(r, "a protective MBR but no valid GPT");
			goto fail;
		}
		if ((ret = disk_mbr(d, r, s)) == -1)
			goto fail;
	}
	if (ret == 1) {
		r->scheme = DISK_WHOLE;
		if (disk_probe(d, 0, d->size, &fs) == -1) {
			disk_note(r, "no partition table and no ext4 file "
			    "system on the whole disk");
			goto fail;
		}
		disk_note(r, "ext4 on the whole disk");
		r->rank = 1;
		r->how = "on the whole disk";
		r->start = 0;
		r->len = d->size;
		r->fs = fs;
		r->last = 1;
	}
	if (r->rank == 0) {
		disk_note(r, ": no ext4 root file system");
		goto fail;
	}
	return (0);
fail:
	disk_root_free(r);
	return (-1);
}

void
disk_root_free(struct disk_root *r)
{
	free(r->table);
	r->table = NULL;
	free(r->ents);
	r->ents = NULL;
	r->ents_len = 0;
}

/* The header h rewritten to sit at my, its twin at alt, entries at elba. */
static void
disk_gpt_place(unsigned char *h, uint64_t my, uint64_t alt, uint64_t elba,
    uint64_t last_usable, uint32_t ecrc)
{
	uint32_t	hsize = disk_le32(h + 12);

	disk_put64(h + 24, my);
	disk_put64(h + 32, alt);
	disk_put64(h + 48, last_usable);
	disk_put64(h + 72, elba);
	disk_put32(h + 88, ecrc);
	memset(h + 16, 0, 4);
	disk_put32(h + 16, disk_crc32(h, hsize));
}

/*
 * Plan the growth of the root partition r (the last one of its table) to
 * the end of a disk now nlba sectors long. 1: nothing to do (under
 * DISK_GROW_SLACK to gain); 0: g holds every sector to write, in the
 * order to write them; -1 and *why.
 */
int
disk_grow_plan(struct disk_root *r, uint32_t sector, uint64_t nlba,
    struct disk_grow *g, const char **why)
{
	unsigned char	*e, *m;
	uint64_t	 esec, last_usable, first, end;
	uint32_t	 ecrc;

	memset(g, 0, sizeof *g);
	if (r->scheme == DISK_WHOLE)
		return (1);
	if (!r->last) {
		*why = "the root is not the last partition on the disk";
		return (-1);
	}
	if (r->odd != NULL) {
		*why = r->odd;
		return (-1);
	}
	if (r->scheme == DISK_MBR) {
		m = r->table + 446 + 16 * (r->partno - 1);
		first = disk_le32(m + 8);
		end = nlba - first;	/* the new length */
		if (end > 0xffffffffULL)
			end = 0xffffffffULL;
		if (end <= disk_le32(m + 12) ||
		    (end - disk_le32(m + 12)) * sector < DISK_GROW_SLACK)
			return (1);
		disk_put32(m + 12, (uint32_t)end);
		g->mbr = r->table;
		g->new_len = end * sector;
		return (0);
	}
	if (r->gpt_backup) {
		*why = "the primary GPT is damaged";
		return (-1);
	}
	esec = (r->ents_len + sector - 1) / sector;
	if (nlba < esec + 3)
		return (1);
	last_usable = nlba - 2 - esec;
	e = r->ents + (size_t)(r->partno - 1) * disk_le32(r->table + 84);
	first = disk_le64(e + 32);
	end = disk_le64(e + 40);
	if (last_usable <= end || (last_usable - end) * sector <
	    DISK_GROW_SLACK)
		return (1);
	disk_put64(e + 40, last_usable);
	ecrc = disk_crc32(r->ents, r->ents_len);
	if ((g->backup = malloc(sector)) == NULL) {
		*why = strerror(errno);
		return (-1);
	}
	memcpy(g->backup, r->table, sector);
	disk_gpt_place(g->backup, nlba - 1, 1, nlba - 1 - esec, last_usable,
	    ecrc);
	disk_gpt_place(r->table, 1, nlba - 1, disk_le64(r->table + 72),
	    last_usable, ecrc);
	g->primary = r->table;
	g->ents = r->ents;
	g->ents_len = r->ents_len;
	g->primary_ents_lba = disk_le64(r->table + 72);
	g->backup_ents_lba = nlba - 1 - esec;
	g->backup_lba = nlba - 1;
	g->new_len = (last_usable - first + 1) * sector;
	return (0);
}

/* The protective MBR s made to cover a disk of nlba sectors. */
int
disk_grow_pmbr(unsigned char *s, uint64_t nlba)
{
	uint32_t	len;

	len = nlba - 1 > 0xffffffffULL ? 0xffffffff : (uint32_t)(nlba - 1);
	if (s[510] != 0x55 || s[511] != 0xaa || s[446 + 4] != 0xee ||
	    disk_le32(s + 446 + 12) == len)
		return (0);
	disk_put32(s + 446 + 12, len);
	return (1);
}

void
disk_grow_free(struct disk_grow *g)
{
	free(g->backup);
	g->backup = NULL;
}

/*
 * The glibc version in a libc's bytes: the banner "release version
 * 2.N" if it is there, else the highest "GLIBC_2.N" symbol version.
 * Scans may be fed in pieces (overlapping by DISK_GLIBC_OVERLAP bytes);
 * *banner and *best keep the highest minor seen, -1 before any.
 */
void
disk_glibc_scan(const unsigned char *buf, size_t len, int *banner, int *best)
{
	static const char	 rel[] = "release version 2.";
	static const char	 sym[] = "GLIBC_2.";
	const unsigned char	*p, *end = buf + len, *q;
	size_t			 n;
	int			 v, digits, *into;

	for (p = buf; p < end; p++) {
		if (*p == 'r' && (size_t)(end - p) > sizeof rel - 1 &&
		    memcmp(p, rel, sizeof rel - 1) == 0) {
			n = sizeof rel - 1;
			into = banner;
		} else if (*p == 'G' && (size_t)(end - p) > sizeof sym - 1 &&
		    memcmp(p, sym, sizeof sym - 1) == 0) {
			n = sizeof sym - 1;
			into = best;
		} else
			continue;
		v = 0;
		digits = 0;
		for (q = p + n; q < end && *q >= '0' && *q <= '9' &&
		    digits < 3; q++, digits++)
			v = v * 10 + (*q - '0');
		/* Whole numbers only: a piece may end inside one. */
		if (digits == 0 || q == end || (*q >= '0' && *q <= '9'))
			continue;
		if (v > *into)
			*into = v;
	}
}
