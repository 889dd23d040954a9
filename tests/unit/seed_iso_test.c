/*
 * seed_iso_write: read the image back with libiso9660's reader, and again
 * by parsing the descriptors and directory records by hand.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cdio/iso9660.h>
#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include "cmd.h"

#define SECTOR	2048

static char	*dir;
static char	*iso;

static void
setup(void)
{
	char	tmpl[] = "/tmp/seed_iso_test.XXXXXX";

	cr_assert_not_null(mkdtemp(tmpl));
	dir = xstrdup(tmpl);
	xasprintf(&iso, "%s/seed.iso", dir);
}

/* Runs after the suite's setup. */
static void
capture_output(void)
{
	cr_redirect_stdout();
	cr_redirect_stderr();
}

static void
teardown(void)
{
	util_rm_rf(dir);
	free(iso);
	free(dir);
}

/* A pattern that shows misplaced sectors: every 4 bytes differ. */
static char *
pattern(size_t len, unsigned seed)
{
	char	*p = xmalloc(len);
	size_t	 i;

	for (i = 0; i < len; i++)
		p[i] = (char)((i * 2654435761u + seed) >> 7);
	return (p);
}

/* Read a file out of the image with libiso9660, by its translated name. */
static char *
iso_read(iso9660_t *fs, const char *name, size_t *lenp)
{
	iso9660_stat_t	*st;
	char		*path, *buf;
	size_t		 sectors;

	xasprintf(&path, "/%s", name);
	st = iso9660_ifs_stat_translate(fs, path);
	free(path);
	if (st == NULL)
		return (NULL);
	sectors = (st->size + SECTOR - 1) / SECTOR;
	buf = xcalloc(1, sectors * SECTOR + 1);
	if (sectors > 0) {
		cr_assert_eq(iso9660_iso_seek_read(fs, buf, st->lsn, sectors),
		    (long)(sectors * SECTOR));
	}
	*lenp = st->size;
	iso9660_stat_free(st);
	return (buf);
}

static unsigned char *
slurp(const char *path, size_t *lenp)
{
	unsigned char	*p;

	p = (unsigned char *)util_read_file(path, lenp, 64 << 20);
	cr_assert_not_null(p, "read %s: %s", path, strerror(errno));
	return (p);
}

static uint32_t
le32(const unsigned char *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24);
}

static uint32_t
be32(const unsigned char *p)
{
	return ((uint32_t)p[3] | (uint32_t)p[2] << 8 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[0] << 24);
}

/*
 * Walk the root directory's records by hand; return the Rock Ridge NM name
 * of entry "want" (an ISO identifier such as "META-DATA.;1"), with its
 * extent and size, or NULL.
 */
static char *
raw_lookup(const unsigned char *img, size_t len, const char *want,
    uint32_t *extent, uint32_t *size)
{
	const unsigned char	*pvd = img + 16 * SECTOR, *rec, *su;
	uint32_t		 root, root_size, off;
	size_t			 nlen, sulen, i;

	root = le32(pvd + 156 + 2);
	root_size = le32(pvd + 156 + 10);
	cr_assert_eq(root, be32(pvd + 156 + 6));
	cr_assert_leq((size_t)(root + root_size / SECTOR) * SECTOR, len);
	for (off = 0; off < root_size; ) {
		rec = img + (size_t)root * SECTOR + off;
		if (rec[0] == 0) {	/* padding to the next sector */
			off = (off / SECTOR + 1) * SECTOR;
			continue;
		}
		nlen = rec[32];
		if (nlen == strlen(want) && memcmp(rec + 33, want, nlen) == 0) {
			*extent = le32(rec + 2);
			*size = le32(rec + 10);
			cr_assert_eq(*extent, be32(rec + 6));
			cr_assert_eq(*size, be32(rec + 14));
			su = rec + 33 + nlen + (nlen % 2 == 0);
			sulen = rec[0] - (su - rec);
			for (i = 0; i + 4 <= sulen && su[i + 2] != 0;
			    i += su[i + 2]) {
				if (su[i] == 'N' && su[i + 1] == 'M')
					return (xstrndup((const char *)su + i
					    + 5, su[i + 2] - 5));
			}
			return (xstrdup(""));
		}
		off += rec[0];
	}
	return (NULL);
}

TestSuite(seed_iso, .init = setup, .fini = teardown);

Test(seed_iso, reads_back_with_libiso9660)
{
	const char		 ud[] = "#cloud-config\nruncmd: [true]\n";
	char			*big = pattern(5000, 1), *vol = NULL, *got;
	struct seed_file	 f[] = {
		{ "user-data", ud, strlen(ud) },
		{ "qsup-config", big, 5000 },
		{ "meta-data", "", 0 },
	};
	char			*cause = NULL;
	iso9660_t		*fs;
	CdioList_t		*list;
	CdioListNode_t		*node;
	iso9660_stat_t		*st;
	size_t			 len, i;
	int			 seen = 0;

	cr_assert_eq(seed_iso_write(iso, f, 3, &cause), 0, "%s", cause);
	cr_assert_null(cause);

	fs = iso9660_open(iso);
	cr_assert_not_null(fs);
	cr_assert(iso9660_ifs_get_volume_id(fs, &vol));
	cr_assert_str_eq(vol, "cidata");
	free(vol);

	/* The names the reader lists are the lower-case ones we gave. */
	list = iso9660_ifs_readdir(fs, "/");
	cr_assert_not_null(list);
	_CDIO_LIST_FOREACH(node, list) {
		st = _cdio_list_node_data(node);
		if (strcmp(st->filename, ".") == 0 ||
		    strcmp(st->filename, "..") == 0)
			continue;
		for (i = 0; i < 3; i++) {
			if (strcmp(st->filename, f[i].name) == 0) {
				seen |= 1 << i;
				cr_assert_eq(st->size, f[i].len, "%s",
				    f[i].name);
			}
		}
		cr_assert(seen != 0, "unexpected name %s", st->filename);
	}
	iso9660_filelist_free(list);
	cr_assert_eq(seen, 7);

	for (i = 0; i < 3; i++) {
		got = iso_read(fs, f[i].name, &len);
		cr_assert_not_null(got, "%s not found", f[i].name);
		cr_assert_eq(len, f[i].len, "%s", f[i].name);
		cr_assert(memcmp(got, f[i].data, len) == 0, "%s", f[i].name);
		free(got);
	}
	iso9660_close(fs);
	free(big);
}

Test(seed_iso, raw_descriptors_and_records)
{
	char			*big = pattern(4097, 2), *nm;
	struct seed_file	 f[] = {
		{ "meta-data", "instance-id: q\n", 15 },
		{ "user-data", big, 4097 },
		{ "empty", "", 0 },
	};
	const char		*iso_names[] = {
		"META-DATA.;1", "USER-DATA.;1", "EMPTY.;1"
	};
	unsigned char		*img, *pvd, *evd;
	char			*cause = NULL;
	size_t			 len, i;
	uint32_t		 extent, size;
	struct stat		 sb;

	cr_assert_eq(seed_iso_write(iso, f, 3, &cause), 0, "%s", cause);
	img = slurp(iso, &len);
	cr_assert_eq(len % SECTOR, 0);

	pvd = img + 16 * SECTOR;
	cr_assert_eq(pvd[0], 1);			/* primary */
	cr_assert(memcmp(pvd + 1, "CD001", 5) == 0);
	cr_assert_eq(pvd[6], 1);
	cr_assert(memcmp(pvd + 40, "cidata", 6) == 0);
	for (i = 6; i < 32; i++)
		cr_assert_eq(pvd[40 + i], ' ');
	cr_assert_eq((size_t)le32(pvd + 80) * SECTOR, len);
	cr_assert_eq(le32(pvd + 80), be32(pvd + 84));
	cr_assert_eq(pvd[128] | pvd[129] << 8, SECTOR);	/* block size */

	evd = img + 17 * SECTOR;
	cr_assert_eq(evd[0], 255);			/* terminator */
	cr_assert(memcmp(evd + 1, "CD001", 5) == 0);

	for (i = 0; i < 3; i++) {
		nm = raw_lookup(img, len, iso_names[i], &extent, &size);
		cr_assert_not_null(nm, "no record %s", iso_names[i]);
		cr_assert_str_eq(nm, f[i].name);
		cr_assert_eq(size, f[i].len);
		cr_assert_leq((size_t)extent * SECTOR + size, len);
		cr_assert(memcmp(img + (size_t)extent * SECTOR, f[i].data,
		    size) == 0, "%s", f[i].name);
		free(nm);
	}

	cr_assert_eq(stat(iso, &sb), 0);
	cr_assert_eq(sb.st_mode & 07777, 0600);
	free(img);
	free(big);
}

/* Many files need a directory longer than one sector; big files, many. */
Test(seed_iso, many_and_large_files)
{
	struct seed_file	 f[80];
	char			*names[80], *data[80], *got;
	char			*cause = NULL;
	iso9660_t		*fs;
	size_t			 i, len;

	for (i = 0; i < 80; i++) {
		xasprintf(&names[i], "file-with-a-long-name-%03zu", i);
		f[i].name = names[i];
		f[i].len = i == 7 ? (3 << 20) + 5 : i * 301;
		data[i] = pattern(f[i].len, i);
		f[i].data = data[i];
	}
	cr_assert_eq(seed_iso_write(iso, f, 80, &cause), 0, "%s", cause);
	fs = iso9660_open(iso);
	cr_assert_not_null(fs);
	for (i = 0; i < 80; i++) {
		got = iso_read(fs, f[i].name, &len);
		cr_assert_not_null(got, "%s not found", f[i].name);
		cr_assert_eq(len, f[i].len);
		cr_assert(memcmp(got, f[i].data, len) == 0, "%s", f[i].name);
		free(got);
		free(names[i]);
		free(data[i]);
	}
	iso9660_close(fs);
}

/*
 * libcdio complains about the lower-case volume id, on stdout (warnings)
 * or stderr (errors); neither is ours to write on.
 */
Test(seed_iso, quiet, .init = capture_output)
{
	struct seed_file	 f[] = { { "meta-data", "x", 1 } };
	char			*cause = NULL;

	cr_assert_eq(seed_iso_write(iso, f, 1, &cause), 0, "%s", cause);
	fflush(stdout);
	fflush(stderr);
	cr_assert_stdout_eq_str("");
	cr_assert_stderr_eq_str("");
}

/* The image replaces an old one in one step and leaves no temporary. */
Test(seed_iso, replaces_atomically)
{
	struct seed_file	 a[] = { { "meta-data", "old", 3 } };
	struct seed_file	 b[] = { { "meta-data", "new!", 4 } };
	char			*cause = NULL, *got;
	iso9660_t		*fs;
	DIR			*d;
	struct dirent		*de;
	size_t			 len;
	int			 entries = 0;

	cr_assert_eq(seed_iso_write(iso, a, 1, &cause), 0, "%s", cause);
	cr_assert_eq(seed_iso_write(iso, b, 1, &cause), 0, "%s", cause);
	fs = iso9660_open(iso);
	got = iso_read(fs, "meta-data", &len);
	cr_assert_not_null(got);
	cr_assert_eq(len, 4);
	cr_assert(memcmp(got, "new!", 4) == 0);
	free(got);
	iso9660_close(fs);

	cr_assert_not_null(d = opendir(dir));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.')
			entries++;
	}
	closedir(d);
	cr_assert_eq(entries, 1);
}

Test(seed_iso, missing_directory)
{
	struct seed_file	 f[] = { { "meta-data", "x", 1 } };
	char			*cause = NULL, *path;

	xasprintf(&path, "%s/no/such/dir/seed.iso", dir);
	errno = 0;
	cr_assert_eq(seed_iso_write(path, f, 1, &cause), -1);
	cr_assert_eq(errno, ENOENT);
	cr_assert_not_null(cause);
	cr_assert_not_null(strstr(cause, path), "%s", cause);
	cr_assert_not_null(strstr(cause, strerror(ENOENT)), "%s", cause);
	free(cause);
	free(path);
}

Test(seed_iso, bad_names)
{
	char		 longname[66];
	const char	*bad[] = { "", "a/b", ".hidden", "sp ace", longname };
	struct seed_file f[2] = { { "meta-data", "x", 1 }, { NULL, "y", 1 } };
	struct seed_file dup[2] = { { "meta-data", "x", 1 },
	    { "META-DATA", "y", 1 } };
	char		*cause;
	size_t		 i;

	memset(longname, 'a', sizeof longname - 1);	/* 65 characters */
	longname[sizeof longname - 1] = '\0';
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		f[1].name = bad[i];
		cause = NULL;
		cr_assert_eq(seed_iso_write(iso, f, 2, &cause), -1, "%s",
		    bad[i]);
		cr_assert_not_null(strstr(cause, iso), "%s", cause);
		free(cause);
	}
	cause = NULL;
	cr_assert_eq(seed_iso_write(iso, dup, 2, &cause), -1);
	cr_assert_not_null(strstr(cause, "clash"), "%s", cause);
	free(cause);
	cr_assert_eq(access(iso, F_OK), -1);
}
