/*
 * Read the seed's config file straight from the raw ISO 9660 image, so the
 * guest needs neither the isofs module nor a mount. Only the root directory
 * is searched. Every offset and length read from the image is checked
 * before use: the image comes from the host, but a parser that trusts its
 * input is a crash waiting for a truncated file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "agent.h"

#define ISO_SECTOR	2048
#define ISO_PVD_LBA	16
#define ISO_DIR_MAX	(1024 * 1024)
#define ISO_NAME_MAX	256
#define ISO_CE_MAX	8		/* continuation areas followed */

#define ISO_FLAG_DIR	 0x02
#define ISO_FLAG_MULTI	 0x80

struct iso_name {
	char	buf[ISO_NAME_MAX];
	size_t	len;
	int	found;		/* a Rock Ridge NM entry was seen */
	int	overflow;
};

static uint32_t
iso_le32(const unsigned char *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24);
}

static uint16_t
iso_le16(const unsigned char *p)
{
	return ((uint16_t)(p[0] | p[1] << 8));
}

/* pread that fails (EIO) on a short read: the image is truncated. */
static int
iso_pread(int fd, void *buf, size_t len, off_t off)
{
	size_t	done = 0;
	ssize_t	n;

	while (done < len) {
		n = pread(fd, (char *)buf + done, len - done, off + done);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return (-1);
		if (n == 0) {
			errno = EIO;
			return (-1);
		}
		done += n;
	}
	return (0);
}

static int
iso_read_pvd(int fd, unsigned char *pvd)
{
	if (iso_pread(fd, pvd, ISO_SECTOR, (off_t)ISO_PVD_LBA * ISO_SECTOR) ==
	    -1)
		return (-1);
	if (pvd[0] != 1 || memcmp(pvd + 1, "CD001", 5) != 0 || pvd[6] != 1) {
		errno = EINVAL;
		return (-1);
	}
	return (0);
}

/* 1 when fd holds an ISO 9660 image whose volume id is the seed's. */
int
iso_is_seed(int fd)
{
	unsigned char	 pvd[ISO_SECTOR];
	const char	*want = QSUP_SEED_VOLUME;
	size_t		 n = strlen(want), i;

	if (iso_read_pvd(fd, pvd) == -1)
		return (errno == EINVAL ? 0 : -1);
	if (memcmp(pvd + 40, want, n) != 0)
		return (0);
	for (i = n; i < 32; i++) {
		if (pvd[40 + i] != ' ' && pvd[40 + i] != '\0')
			return (0);
	}
	return (1);
}

/*
 * Collect the Rock Ridge NM entries of one system-use area into name,
 * following CE continuation areas a bounded number of times.
 */
static void
iso_susp(int fd, unsigned bs, const unsigned char *su, size_t len,
    struct iso_name *name, int depth)
{
	unsigned char	*ce = NULL;
	uint32_t	 ce_lba = 0, ce_off = 0, ce_len = 0;
	size_t		 elen, n;
	int		 has_ce = 0;

	while (len >= 4) {
		elen = su[2];
		if (elen < 4 || elen > len)
			break;
		if (memcmp(su, "ST", 2) == 0)
			break;
		if (memcmp(su, "CE", 2) == 0 && elen >= 28) {
			ce_lba = iso_le32(su + 4);
			ce_off = iso_le32(su + 12);
			ce_len = iso_le32(su + 20);
			has_ce = 1;
		}
		/* flags: 1 continues, 2 ".", 4 "..". */
		if (memcmp(su, "NM", 2) == 0 && elen >= 5 &&
		    (su[4] & 0x06) == 0) {
			n = elen - 5;
			if (name->len + n >= sizeof name->buf)
				name->overflow = 1;
			else {
				memcpy(name->buf + name->len, su + 5, n);
				name->len += n;
			}
			name->found = 1;
		}
		su += elen;
		len -= elen;
	}
	if (!has_ce || depth >= ISO_CE_MAX || ce_len == 0 || ce_len > bs ||
	    ce_off >= bs || ce_off + ce_len > bs)
		return;
	ce = xmalloc(ce_len);
	if (iso_pread(fd, ce, ce_len, (off_t)ce_lba * bs + ce_off) == 0)
		iso_susp(fd, bs, ce, ce_len, name, depth + 1);
	free(ce);
}

/*
 * Compare a name with QSUP_SEED_CONFIG, ignoring case, a ";N" version, a
 * trailing dot and '_' for '-' (strict ISO 9660 writers have no '-').
 */
static int
iso_name_matches(const char *name, size_t len)
{
	const char	*want = QSUP_SEED_CONFIG;
	size_t		 i, n = strlen(want);
	const char	*semi;
	int		 c;

	if ((semi = memchr(name, ';', len)) != NULL)
		len = semi - name;
	if (len > 0 && name[len - 1] == '.')
		len--;
	if (len != n)
		return (0);
	for (i = 0; i < n; i++) {
		c = (unsigned char)name[i];
		if (c == '_')
			c = '-';
		if (c >= 'A' && c <= 'Z')
			c += 'a' - 'A';
		if (c != want[i])
			return (0);
	}
	return (1);
}

/* Find QSUP_SEED_CONFIG in the image's root directory and read it. */
int
iso_read_config(int fd, char **data, size_t *datalen, char **cause)
{
	unsigned char		 pvd[ISO_SECTOR], *dir = NULL, *rec, *su;
	struct iso_name		 rr;
	uint32_t		 dir_lba, dir_len, lba, size;
	unsigned		 bs, skip = 0;
	size_t			 off, rlen, nlen, su_off;
	char			*buf = NULL;
	int			 ret = -1, first = 1;

	*cause = NULL;
	if (iso_read_pvd(fd, pvd) == -1) {
		xasprintf(cause, "seed: no ISO 9660 volume: %s",
		    strerror(errno));
		goto out;
	}
	bs = iso_le16(pvd + 128);
	if (bs != 512 && bs != 1024 && bs != 2048) {
		xasprintf(cause, "seed: bad logical block size %u", bs);
		goto out;
	}
	rec = pvd + 156;
	dir_lba = iso_le32(rec + 2);
	dir_len = iso_le32(rec + 10);
	if (rec[0] < 34 || dir_len == 0 || dir_len > ISO_DIR_MAX) {
		xasprintf(cause, "seed: bad root directory record");
		goto out;
	}
	dir = xmalloc(dir_len);
	if (iso_pread(fd, dir, dir_len, (off_t)dir_lba * bs) == -1) {
		xasprintf(cause, "seed: root directory: %s", strerror(errno));
		goto out;
	}

	off = 0;
	while (off < dir_len) {
		rec = dir + off;
		rlen = rec[0];
		if (rlen == 0) {
			/* Records do not cross blocks: go to the next one. */
			off = (off / bs + 1) * bs;
			continue;
		}
		if (rlen < 34 || off + rlen > dir_len)
			break;
		off += rlen;
		nlen = rec[32];
		if (33 + nlen > rlen)
			continue;
		su_off = 33 + nlen + (nlen % 2 == 0 ? 1 : 0);
		if (first) {
			/* "."; its SP entry says how many SU bytes to skip. */
			first = 0;
			su = rec + su_off;
			if (su_off + 7 <= rlen && memcmp(su, "SP", 2) == 0 &&
			    su[2] >= 7 && su[4] == 0xbe && su[5] == 0xef)
				skip = su[6];
			continue;
		}
		if (nlen == 1 && (rec[33] == 0 || rec[33] == 1))
			continue;
		memset(&rr, 0, sizeof rr);
		if (su_off + skip < rlen)
			iso_susp(fd, bs, rec + su_off + skip,
			    rlen - su_off - skip, &rr, 0);
		if (!(rr.found && !rr.overflow &&
		    iso_name_matches(rr.buf, rr.len)) &&
		    !iso_name_matches((const char *)rec + 33, nlen))
			continue;
		if (rec[25] & ISO_FLAG_DIR)
			continue;
		if (rec[25] & ISO_FLAG_MULTI) {
			xasprintf(cause, "seed: %s: multi-extent file",
			    QSUP_SEED_CONFIG);
			goto out;
		}
		lba = iso_le32(rec + 2);
		size = iso_le32(rec + 10);
		if (size > AGENT_CONFIG_MAX) {
			xasprintf(cause, "seed: %s: too large (%u bytes)",
			    QSUP_SEED_CONFIG, size);
			goto out;
		}
		buf = xmalloc((size_t)size + 1);
		if (iso_pread(fd, buf, size, (off_t)lba * bs) == -1) {
			xasprintf(cause, "seed: %s: %s", QSUP_SEED_CONFIG,
			    strerror(errno));
			goto out;
		}
		buf[size] = '\0';
		*data = buf;
		*datalen = size;
		buf = NULL;
		ret = 0;
		goto out;
	}
	xasprintf(cause, "seed: no %s in the image", QSUP_SEED_CONFIG);
out:
	free(buf);
	free(dir);
	return (ret);
}
