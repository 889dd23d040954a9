/*
 * A pull's layer as image_build_stream.c gives it to GNU tar: any bytes
 * read as a layer (libarchive, every filter, tar), each entry checked by
 * image_tree_entry, and the ones to extract written again as a tar by
 * image_stream_pass into a bounded buffer. Read back, that tar must hold
 * exactly the entries checked, in order, each with the name, link
 * targets, type, mode and size it was checked with: tar extracts nothing
 * the checks did not see. No whiteout goes through.
 */
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include "image_int.h"

#define FUZZ_OUT_MAX	(4 * 1024 * 1024)
#define FUZZ_ENTRIES	256

struct fuzz_seen {
	char		*name, *hard, *sym;
	mode_t		 mode;
	int64_t		 size;
};

static int
fuzz_same(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return (a == b);
	return (strcmp(a, b) == 0);
}

static char *
fuzz_dup(const char *s)
{
	return (s != NULL ? xstrdup(s) : NULL);
}

/* The tar written: its entries, against those checked. */
static void
fuzz_read_back(const char *out, size_t len, struct fuzz_seen *seen,
    size_t n)
{
	struct archive		*a;
	struct archive_entry	*e;
	size_t			 i = 0;
	const char		*base;

	a = archive_read_new();
	archive_read_support_format_tar(a);
	if (archive_read_open_memory(a, out, len) != ARCHIVE_OK)
		abort();
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		if (i >= n || !fuzz_same(archive_entry_pathname(e),
		    seen[i].name) || !fuzz_same(archive_entry_hardlink(e),
		    seen[i].hard) || archive_entry_mode(e) != seen[i].mode)
			abort();
		if (seen[i].hard == NULL && (!fuzz_same(
		    archive_entry_symlink(e), seen[i].sym) ||
		    (AE_IFREG == (seen[i].mode & AE_IFMT) &&
		    archive_entry_size(e) != seen[i].size)))
			abort();
		base = strrchr(seen[i].name, '/');
		base = base != NULL ? base + 1 : seen[i].name;
		if (strncmp(base, ".wh.", 4) == 0)
			abort();	/* a whiteout went to tar */
		i++;
	}
	if (i != n)
		abort();
	archive_read_free(a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	struct fuzz_seen	 seen[FUZZ_ENTRIES];
	struct image_tree	*t;
	struct archive		*a, *w;
	struct archive_entry	*e;
	struct buf		 rm = { 0 }, opq = { 0 };
	char			*out, *cause = NULL;
	size_t			 used = 0, n = 0, i;
	int			 r, ok = 1;

	t = image_tree_new();
	out = xmalloc(FUZZ_OUT_MAX);
	a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	w = archive_write_new();
	archive_write_set_format_pax_restricted(w);
	archive_write_set_bytes_in_last_block(w, 1);
	if (archive_read_open_memory(a, data, len) != ARCHIVE_OK ||
	    archive_write_open_memory(w, out, FUZZ_OUT_MAX, &used) !=
	    ARCHIVE_OK)
		ok = 0;
	while (ok && n < FUZZ_ENTRIES) {
		r = archive_read_next_header(a, &e);
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			break;
		r = image_tree_entry(t, e, 1, 1, &rm, &opq, &cause);
		if (r == -1) {
			if (cause == NULL)
				abort();
			free(cause);
			cause = NULL;
			break;
		}
		if (r == 1)
			continue;
		seen[n].name = fuzz_dup(archive_entry_pathname(e));
		seen[n].hard = fuzz_dup(archive_entry_hardlink(e));
		seen[n].sym = fuzz_dup(archive_entry_symlink(e));
		seen[n].mode = archive_entry_mode(e);
		seen[n].size = archive_entry_size(e);
		n++;
		if (image_stream_pass(a, e, w) == -1)
			ok = 0;	/* truncated, or too big: not read back */
	}
	if (ok && archive_write_close(w) == ARCHIVE_OK)
		fuzz_read_back(out, used, seen, n);
	archive_write_free(w);
	archive_read_free(a);
	for (i = 0; i < n; i++) {
		free(seen[i].name);
		free(seen[i].hard);
		free(seen[i].sym);
	}
	buf_free(&rm);
	buf_free(&opq);
	free(out);
	image_tree_free(t);
	return (0);
}
