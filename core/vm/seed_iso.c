/*
 * The seed ISO: a one-directory ISO 9660 image with volume id "cidata"
 * (the NoCloud convention), written in-process with libiso9660.
 *
 * Layout, in 2048-byte sectors:
 *	0-15	system area, zero
 *	16	primary volume descriptor
 *	17	volume descriptor set terminator
 *	18	L path table (one entry, the root)
 *	19	M path table
 *	20...	root directory
 *	next	Rock Ridge continuation area (the ER entry)
 *	next...	file data, each file starting on a sector
 *
 * Names: each file has a plain upper-case ISO name ("META-DATA.;1"), which
 * Linux's isofs shows lower-cased even with "norock", and a Rock Ridge NM
 * entry with the exact name, which wins whenever Rock Ridge is read. Each
 * entry also has a PX entry (0444 files, 0555 directory, owned by root).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cdio/iso9660.h>
#include <cdio/xa.h>

#include "vm.h"

#define SEED_ISO_NAME_MAX	64	/* records stay under 255 bytes */
#define SEED_ISO_PVD		16
#define SEED_ISO_EVD		17
#define SEED_ISO_PATH_L		18
#define SEED_ISO_PATH_M		19
#define SEED_ISO_ROOT		20

/* Rock Ridge entry sizes (SUSP 1.10, RRIP 1.10). */
#define SEED_ISO_SP_LEN		7
#define SEED_ISO_CE_LEN		28
#define SEED_ISO_PX_LEN		36
#define SEED_ISO_NM_HDR		5
#define SEED_ISO_ER_HDR		8

/* RRIP 1.10's extension reference, verbatim. */
#define SEED_ISO_ER_ID		"RRIP_1991A"
#define SEED_ISO_ER_DES		"THE ROCK RIDGE INTERCHANGE PROTOCOL " \
				"PROVIDES SUPPORT FOR POSIX FILE SYSTEM " \
				"SEMANTICS"
#define SEED_ISO_ER_SRC		"PLEASE CONTACT DISC PUBLISHER FOR " \
				"SPECIFICATION SOURCE.  SEE PUBLISHER " \
				"IDENTIFIER IN PRIMARY VOLUME DESCRIPTOR FOR " \
				"CONTACT INFORMATION."

struct seed_iso_entry {
	const struct seed_file	*file;
	char			 iso_name[SEED_ISO_NAME_MAX + 4];
	unsigned char		 su[SEED_ISO_PX_LEN + SEED_ISO_NM_HDR +
				     SEED_ISO_NAME_MAX];
	size_t			 su_len;
	uint32_t		 extent;
	uint32_t		 sectors;
};

/* Both-endian 32-bit field (ISO 9660 7.3.3). */
static void
seed_iso_put733(unsigned char *p, uint32_t v)
{
	p[0] = v & 0xff;
	p[1] = (v >> 8) & 0xff;
	p[2] = (v >> 16) & 0xff;
	p[3] = (v >> 24) & 0xff;
	p[4] = (v >> 24) & 0xff;
	p[5] = (v >> 16) & 0xff;
	p[6] = (v >> 8) & 0xff;
	p[7] = v & 0xff;
}

static size_t
seed_iso_su_px(unsigned char *p, uint32_t mode, uint32_t nlink)
{
	p[0] = 'P';
	p[1] = 'X';
	p[2] = SEED_ISO_PX_LEN;
	p[3] = 1;
	seed_iso_put733(p + 4, mode);
	seed_iso_put733(p + 12, nlink);
	seed_iso_put733(p + 20, 0);	/* uid */
	seed_iso_put733(p + 28, 0);	/* gid */
	return (SEED_ISO_PX_LEN);
}

static size_t
seed_iso_su_nm(unsigned char *p, const char *name)
{
	size_t	len = strlen(name);

	p[0] = 'N';
	p[1] = 'M';
	p[2] = SEED_ISO_NM_HDR + len;
	p[3] = 1;
	p[4] = 0;
	memcpy(p + SEED_ISO_NM_HDR, name, len);
	return (SEED_ISO_NM_HDR + len);
}

/* SP must open the root's "." entry; CE points at the sector holding ER. */
static size_t
seed_iso_su_root(unsigned char *p, uint32_t ce_extent, uint32_t er_len)
{
	p[0] = 'S';
	p[1] = 'P';
	p[2] = SEED_ISO_SP_LEN;
	p[3] = 1;
	p[4] = 0xbe;
	p[5] = 0xef;
	p[6] = 0;
	p += SEED_ISO_SP_LEN;
	p[0] = 'C';
	p[1] = 'E';
	p[2] = SEED_ISO_CE_LEN;
	p[3] = 1;
	seed_iso_put733(p + 4, ce_extent);
	seed_iso_put733(p + 12, 0);
	seed_iso_put733(p + 20, er_len);
	p += SEED_ISO_CE_LEN;
	return (SEED_ISO_SP_LEN + SEED_ISO_CE_LEN +
	    seed_iso_su_px(p, S_IFDIR|0555, 2));
}

static size_t
seed_iso_su_er(unsigned char *p)
{
	size_t	id = strlen(SEED_ISO_ER_ID);
	size_t	des = strlen(SEED_ISO_ER_DES);
	size_t	src = strlen(SEED_ISO_ER_SRC);

	p[0] = 'E';
	p[1] = 'R';
	p[2] = SEED_ISO_ER_HDR + id + des + src;
	p[3] = 1;
	p[4] = id;
	p[5] = des;
	p[6] = src;
	p[7] = 1;
	memcpy(p + SEED_ISO_ER_HDR, SEED_ISO_ER_ID, id);
	memcpy(p + SEED_ISO_ER_HDR + id, SEED_ISO_ER_DES, des);
	memcpy(p + SEED_ISO_ER_HDR + id + des, SEED_ISO_ER_SRC, src);
	return (SEED_ISO_ER_HDR + id + des + src);
}

/*
 * Names are what the guest will open, so keep them to a portable set:
 * letters, digits, '.', '-', '_', not starting with '.'.
 */
static int
seed_iso_name_ok(const char *name)
{
	size_t	i, len = strlen(name);

	if (len == 0 || len > SEED_ISO_NAME_MAX || name[0] == '.')
		return (0);
	for (i = 0; i < len; i++) {
		if ((name[i] >= 'a' && name[i] <= 'z') ||
		    (name[i] >= 'A' && name[i] <= 'Z') ||
		    (name[i] >= '0' && name[i] <= '9') ||
		    name[i] == '.' || name[i] == '-' || name[i] == '_')
			continue;
		return (0);
	}
	return (1);
}

/* "meta-data" -> "META-DATA.;1", "a.txt" -> "A.TXT;1". */
static void
seed_iso_name_isofy(const char *name, char *out)
{
	size_t	i;

	for (i = 0; name[i] != '\0'; i++) {
		out[i] = name[i];
		if (out[i] >= 'a' && out[i] <= 'z')
			out[i] -= 'a' - 'A';
	}
	if (strchr(name, '.') == NULL)
		out[i++] = '.';
	memcpy(out + i, ";1", 3);
}

/* ISO 9660 9.3: directory records sorted by identifier. */
static int
seed_iso_entry_cmp(const void *a, const void *b)
{
	const struct seed_iso_entry	*ea = a, *eb = b;

	return (strcmp(ea->iso_name, eb->iso_name));
}

static int
seed_iso_write_all(int fd, const void *data, size_t len)
{
	const char	*p = data;
	ssize_t		 n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return (-1);
		}
		p += n;
		len -= n;
	}
	return (0);
}

/* Write the descriptors and directory, then each file, sector-aligned. */
static int
seed_iso_write_data(int fd, const unsigned char *head, size_t head_len,
    const struct seed_iso_entry *e, size_t n)
{
	static const char	zero[ISO_BLOCKSIZE];
	size_t			i, pad;

	if (fchmod(fd, 0600) == -1 ||
	    seed_iso_write_all(fd, head, head_len) == -1)
		return (-1);
	for (i = 0; i < n; i++) {
		if (seed_iso_write_all(fd, e[i].file->data,
		    e[i].file->len) == -1)
			return (-1);
		pad = (size_t)e[i].sectors * ISO_BLOCKSIZE - e[i].file->len;
		if (seed_iso_write_all(fd, zero, pad) == -1)
			return (-1);
	}
	return (0);
}

/* Bytes the root directory's records need, packed as libiso9660 packs them. */
static size_t
seed_iso_dir_bytes(const struct seed_iso_entry *e, size_t n, size_t dot_su,
    size_t dotdot_su)
{
	size_t	off = 0, len, i;

	for (i = 0; i < n + 2; i++) {
		if (i == 0)
			len = iso9660_dir_calc_record_size(1, dot_su);
		else if (i == 1)
			len = iso9660_dir_calc_record_size(1, dotdot_su);
		else
			len = iso9660_dir_calc_record_size(
			    strlen(e[i - 2].iso_name), e[i - 2].su_len);
		if (off % ISO_BLOCKSIZE + len > ISO_BLOCKSIZE)
			off += ISO_BLOCKSIZE - off % ISO_BLOCKSIZE;
		off += len;
	}
	return (off);
}

/* Where the root directory's sectors end and each file's begin. */
struct seed_iso_layout {
	size_t		 dir_sectors;
	uint32_t	 ce_extent;	/* the continuation area's sector */
	uint64_t	 total;		/* sectors in the image */
	unsigned char	 su_dotdot[64];
	size_t		 su_dotdot_len;
};

/*
 * Each file's entry, its ISO name and system use area, sorted by ISO name;
 * -1 with errno and *cause set for a bad name, a file too large or two
 * names that clash.
 */
static int
seed_iso_entries(const char *path, const struct seed_file *files, size_t n,
    struct seed_iso_entry *e, char **cause)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		if (files[i].name == NULL || !seed_iso_name_ok(files[i].name)) {
			xasprintf(cause, "%s: bad seed file name \"%s\"", path,
			    files[i].name == NULL ? "(null)" : files[i].name);
			errno = EINVAL;
			return (-1);
		}
		if (files[i].len > UINT32_MAX) {
			xasprintf(cause, "%s: seed file %s is too large", path,
			    files[i].name);
			errno = EFBIG;
			return (-1);
		}
		e[i].file = &files[i];
		seed_iso_name_isofy(files[i].name, e[i].iso_name);
		e[i].su_len = seed_iso_su_px(e[i].su, S_IFREG|0444, 1);
		e[i].su_len += seed_iso_su_nm(e[i].su + e[i].su_len,
		    files[i].name);
	}
	qsort(e, n, sizeof *e, seed_iso_entry_cmp);
	for (i = 1; i < n; i++) {
		if (strcmp(e[i - 1].iso_name, e[i].iso_name) == 0) {
			xasprintf(cause, "%s: seed file names \"%s\" and \"%s\""
			    " clash", path, e[i - 1].file->name,
			    e[i].file->name);
			errno = EINVAL;
			return (-1);
		}
	}
	return (0);
}

/*
 * The root directory's size, then each file's extent after it and the
 * continuation area; -1 (EFBIG) if the image would pass 2^32 sectors.
 */
static int
seed_iso_layout(const char *path, struct seed_iso_entry *e, size_t n,
    struct seed_iso_layout *lay, char **cause)
{
	unsigned char	su_dot[128];
	size_t		su_dot_len, i;
	uint32_t	next;

	/*
	 * libiso9660 refuses a record that ends exactly at the directory's
	 * end, so count one byte more than the records need.
	 */
	su_dot_len = seed_iso_su_root(su_dot, 0, 0);
	lay->su_dotdot_len = seed_iso_su_px(lay->su_dotdot, S_IFDIR|0555, 2);
	lay->dir_sectors = (seed_iso_dir_bytes(e, n, su_dot_len,
	    lay->su_dotdot_len) + ISO_BLOCKSIZE) / ISO_BLOCKSIZE;
	lay->ce_extent = SEED_ISO_ROOT + lay->dir_sectors;
	next = lay->ce_extent + 1;
	lay->total = next;
	for (i = 0; i < n; i++) {
		e[i].extent = next;
		e[i].sectors = (e[i].file->len + ISO_BLOCKSIZE - 1) /
		    ISO_BLOCKSIZE;
		lay->total += e[i].sectors;
		if (lay->total > UINT32_MAX) {
			xasprintf(cause, "%s: seed files too large", path);
			errno = EFBIG;
			return (-1);
		}
		next += e[i].sectors;
	}
	return (0);
}

/*
 * Everything before the files' data: descriptors, path tables, the root
 * directory and the continuation area; *head_len bytes, to free.
 */
static unsigned char *
seed_iso_head(const struct seed_iso_entry *e, size_t n,
    const struct seed_iso_layout *lay, size_t *head_len)
{
	unsigned char	 su_dot[128];
	unsigned char	*head, *dir;
	iso9660_pvd_t	*pvd;
	size_t		 i, su_dot_len, er_len;
	size_t		 dir_len = lay->dir_sectors * ISO_BLOCKSIZE;
	uint32_t	 pt_size;
	time_t		 now;

	*head_len = (size_t)(lay->ce_extent + 1) * ISO_BLOCKSIZE;
	head = xcalloc(1, *head_len);
	now = time(NULL);

	er_len = seed_iso_su_er(head + (size_t)lay->ce_extent * ISO_BLOCKSIZE);
	su_dot_len = seed_iso_su_root(su_dot, lay->ce_extent, er_len);
	dir = head + SEED_ISO_ROOT * ISO_BLOCKSIZE;
	iso9660_dir_init_new_su(dir, SEED_ISO_ROOT, dir_len, su_dot,
	    su_dot_len, SEED_ISO_ROOT, dir_len, lay->su_dotdot,
	    lay->su_dotdot_len, &now);
	for (i = 0; i < n; i++) {
		iso9660_dir_add_entry_su(dir, e[i].iso_name, e[i].extent,
		    e[i].file->len, ISO_FILE, e[i].su, e[i].su_len, &now);
	}

	iso9660_pathtable_init(head + SEED_ISO_PATH_L * ISO_BLOCKSIZE);
	iso9660_pathtable_l_add_entry(head + SEED_ISO_PATH_L * ISO_BLOCKSIZE,
	    "", SEED_ISO_ROOT, 1);
	iso9660_pathtable_init(head + SEED_ISO_PATH_M * ISO_BLOCKSIZE);
	iso9660_pathtable_m_add_entry(head + SEED_ISO_PATH_M * ISO_BLOCKSIZE,
	    "", SEED_ISO_ROOT, 1);
	pt_size = iso9660_pathtable_get_size(head +
	    SEED_ISO_PATH_L * ISO_BLOCKSIZE);

	/*
	 * libiso9660 checks the volume id against ISO 9660's d-characters
	 * (upper case) and warns about "cidata" through its log handler,
	 * which prints on stdout. Give it a valid id and put the lower-case
	 * one, the label NoCloud documents, in afterwards.
	 */
	pvd = (iso9660_pvd_t *)(head + SEED_ISO_PVD * ISO_BLOCKSIZE);
	iso9660_set_pvd(pvd, "CIDATA", "QSUP", "QSUP", "QSUP", lay->total,
	    dir, SEED_ISO_PATH_L, SEED_ISO_PATH_M, pt_size, &now);
	memset(pvd->volume_id, ' ', sizeof pvd->volume_id);
	memcpy(pvd->volume_id, "cidata", 6);
	/*
	 * It also marks the volume CD-XA, which this image is not: readers
	 * that believe it (libiso9660 does) look for XA attributes in every
	 * record's system use area and find Rock Ridge there instead.
	 */
	memset((char *)pvd + ISO_XA_MARKER_OFFSET, 0,
	    strlen(ISO_XA_MARKER_STRING));
	iso9660_set_evd(head + SEED_ISO_EVD * ISO_BLOCKSIZE);
	return (head);
}

/*
 * The image into a temporary file beside path, then renamed into place,
 * so that a reader never sees half an image; -1 with errno and *cause.
 */
static int
seed_iso_commit(const char *path, const unsigned char *head,
    size_t head_len, const struct seed_iso_entry *e, size_t n, char **cause)
{
	char	*tmp;
	int	 fd, saved, rc;

	xasprintf(&tmp, "%s.XXXXXX", path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		saved = errno;
		xasprintf(cause, "can't create %s: %s", path, strerror(saved));
		free(tmp);
		errno = saved;
		return (-1);
	}
	/* The image is per VM and rebuilt on every start: no fsync. */
	rc = seed_iso_write_data(fd, head, head_len, e, n);
	if (close(fd) == -1)
		rc = -1;
	if (rc == 0 && rename(tmp, path) == -1)
		rc = -1;
	if (rc == -1) {
		saved = errno;
		xasprintf(cause, "can't write %s: %s", path, strerror(saved));
		unlink(tmp);
		errno = saved;
	}
	free(tmp);
	return (rc);
}

/*
 * Write the image of files to path (seed_iso_commit says how); -1 with
 * errno and *cause (to free) set if it cannot be.
 */
int
seed_iso_write(const char *path, const struct seed_file *files, size_t n,
    char **cause)
{
	struct seed_iso_entry	*e;
	struct seed_iso_layout	 lay;
	unsigned char		*head = NULL;
	size_t			 head_len;
	int			 saved, rc = -1;

	*cause = NULL;
	e = xcalloc(n, sizeof *e);
	memset(&lay, 0, sizeof lay);
	if (seed_iso_entries(path, files, n, e, cause) == 0 &&
	    seed_iso_layout(path, e, n, &lay, cause) == 0) {
		head = seed_iso_head(e, n, &lay, &head_len);
		rc = seed_iso_commit(path, head, head_len, e, n, cause);
	}
	saved = errno;
	free(head);
	free(e);
	errno = saved;
	return (rc);
}
