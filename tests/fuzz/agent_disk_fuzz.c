/*
 * The agent's readers of a disk image's bytes (guest/disk.c): the input is
 * a whole disk, GPT, MBR or a bare file system, and a libc's bytes too.
 * A found root lies inside the disk; when growing it is planned, the
 * tables written must read back (CRCs and all) with the root as long as
 * the plan says and starting where it did.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

struct fuzz_disk {
	const uint8_t	*data;
	size_t		 len;		/* bytes held; the rest reads as 0 */
};

static int
fuzz_read(void *arg, uint64_t off, void *buf, size_t len)
{
	struct fuzz_disk	*d = arg;
	size_t			 n = 0;

	if (off < d->len)
		n = d->len - off < len ? d->len - off : len;
	memcpy(buf, d->data + off, n);
	memset((char *)buf + n, 0, len - n);
	return (0);
}

/* Apply a grow plan to a copy of the disk made bigger, and read it back. */
static void
fuzz_grown(const uint8_t *data, size_t len, struct disk_root *r,
    uint64_t nlba)
{
	struct disk_grow	 g;
	struct disk_reader	 d;
	struct disk_root	 again;
	struct fuzz_disk	 fd;
	const char		*why = NULL;
	uint64_t		 start = r->start;
	uint8_t			*big;
	size_t			 size = nlba * 512;
	int			 ret;

	if ((ret = disk_grow_plan(r, 512, nlba, &g, &why)) == -1) {
		if (why == NULL)
			abort();
		return;
	}
	if (ret == 1)
		return;
	if ((big = calloc(1, size)) == NULL)
		abort();
	memcpy(big, data, len);
	if (g.mbr != NULL)
		memcpy(big, g.mbr, 512);
	else {
		memcpy(big + g.backup_ents_lba * 512, g.ents, g.ents_len);
		memcpy(big + g.backup_lba * 512, g.backup, 512);
		memcpy(big + g.primary_ents_lba * 512, g.ents, g.ents_len);
		memcpy(big + 512, g.primary, 512);
		(void)disk_grow_pmbr(big, nlba);
	}
	fd.data = big;
	fd.len = size;
	d.read = fuzz_read;
	d.arg = &fd;
	d.size = size;
	d.sector = 512;
	if (disk_find_root(&d, &again) == -1)
		abort();
	if (again.start != start || again.len != g.new_len ||
	    again.start + again.len > size)
		abort();
	disk_root_free(&again);
	disk_grow_free(&g);
	free(big);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct disk_reader	 d;
	struct disk_root	 r;
	struct disk_fs		 fs;
	struct fuzz_disk	 fd = { data, len };
	size_t			 off, n;
	int			 banner = -1, best = -1, b2 = -1, s2 = -1;

	d.read = fuzz_read;
	d.arg = &fd;
	d.size = len;
	d.sector = 512;
	if (disk_find_root(&d, &r) == 0) {
		if (r.how == NULL || r.len == 0 || r.start > len ||
		    r.len > len - r.start || r.fs.block_size < 1024)
			abort();
		/* The disk grown by a little over the least worth growing. */
		fuzz_grown(data, len, &r, len / 512 + 2100);
		disk_root_free(&r);
	} else if (r.seen[0] == '\0' || r.table != NULL || r.ents != NULL)
		abort();
	(void)disk_ext4_parse(data, len, &fs);

	/* The glibc scan gives the same answer in pieces as whole. */
	disk_glibc_scan(data, len, &banner, &best);
	for (off = 0; off < len; off += n - (n > DISK_GLIBC_OVERLAP ?
	    DISK_GLIBC_OVERLAP : 0)) {
		n = len - off < 4096 ? len - off : 4096;
		disk_glibc_scan(data + off, n, &b2, &s2);
		if (off + n == len)
			break;
	}
	if (banner != b2 || best != s2 || banner > 999 || best > 999)
		abort();
	return (0);
}
