/*
 * mkcpio: write an uncompressed newc cpio archive (the format the kernel
 * unpacks as an initramfs) to stdout, from a spec list like the kernel's
 * usr/gen_init_cpio reads. Owners, modes and device nodes come from the
 * spec, not from the host, so no root and no fakeroot are needed.
 *
 *	mkcpio [SPEC]		read SPEC, or stdin if none or "-"
 *
 * Spec lines (fields separated by blanks; '#' starts a comment line):
 *	dir PATH MODE UID GID
 *	file PATH HOSTPATH MODE UID GID
 *	nod PATH MODE UID GID c|b MAJ MIN
 *	slink PATH TARGET MODE UID GID
 * PATH is an absolute guest path whose parent is "/" or a dir listed
 * earlier: the kernel does not create missing parents and would drop the
 * entry silently. MODE is octal permission bits. Every line is checked
 * before anything is written, and every error is reported with its line.
 *
 * All entries get the same mtime (SOURCE_DATE_EPOCH, or 0), so the same
 * spec and inputs give the same archive.
 */
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <search.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MKCPIO_MAXFIELDS	9
#define MKCPIO_MAXSIZE		0xffffffffULL	/* newc sizes are 32 bits */

enum mkcpio_type {
	MKCPIO_DIR,
	MKCPIO_FILE,
	MKCPIO_NOD,
	MKCPIO_SLINK
};

struct mkcpio_entry {
	enum mkcpio_type	 type;
	size_t			 line;
	char			*name;		/* guest path without the '/' */
	char			*src;		/* host file or link target */
	unsigned long		 mode;		/* with the S_IFMT bits */
	unsigned long		 uid;
	unsigned long		 gid;
	unsigned long		 rmajor;
	unsigned long		 rminor;
	unsigned long long	 size;
};

static const char		 *spec_name = "stdin";
static size_t			  spec_errors;
static void			 *spec_names;	/* tsearch tree of entries */
static struct mkcpio_entry	**entries;
static size_t			  nentries;
static unsigned long		  mtime;
static unsigned long		  ino = 721;
static unsigned long long	  out_off;

static void		 usage(void) __attribute__((noreturn));
static void		 spec_error(size_t, const char *, ...)
			     __attribute__((format(printf, 2, 3)));
static int		 entry_cmp(const void *, const void *);
static int		 parse_ulong(const char *, int, unsigned long,
			     unsigned long *);
static int		 parse_path(size_t, const char *, char **);
static int		 parse_owner(size_t, char **, unsigned long *,
			     unsigned long *, unsigned long *);
static int		 parse_file(size_t, char **, struct mkcpio_entry *);
static int		 parse_nod(size_t, char **, struct mkcpio_entry *);
static int		 parse_line(size_t, char *);
static void		 add_entry(struct mkcpio_entry *);
static void		 out_write(const void *, size_t);
static void		 out_pad(void);
static void		 out_header(const struct mkcpio_entry *);
static void		 out_file(struct mkcpio_entry *);
static void		 out_entry(struct mkcpio_entry *);

static void
usage(void)
{
	fprintf(stderr, "usage: mkcpio [spec] > archive.cpio\n");
	exit(2);
}

/* Report one bad spec line; the archive is not written if any were bad. */
static void
spec_error(size_t line, const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "mkcpio: %s:%zu: ", spec_name, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	spec_errors++;
}

static int
entry_cmp(const void *a, const void *b)
{
	const struct mkcpio_entry	*ea = a, *eb = b;

	return (strcmp(ea->name, eb->name));
}

/* Parse a whole unsigned number no larger than max. */
static int
parse_ulong(const char *s, int base, unsigned long max, unsigned long *out)
{
	char		*end;
	unsigned long	 v;

	if (*s < '0' || *s > '9')
		return (-1);
	errno = 0;
	v = strtoul(s, &end, base);
	if (errno != 0 || *end != '\0' || v > max)
		return (-1);
	*out = v;
	return (0);
}

/*
 * Check a guest path: absolute, no empty, "." or ".." components, and a
 * parent already listed as a dir. Stores it without the leading '/'.
 */
static int
parse_path(size_t line, const char *path, char **out)
{
	struct mkcpio_entry	 key, **found;
	const char		*p, *slash;
	size_t			 n;

	if (path[0] != '/') {
		spec_error(line, "%s: path is not absolute", path);
		return (-1);
	}
	if (path[1] == '\0') {
		spec_error(line, "/: the root needs no entry");
		return (-1);
	}
	for (p = path + 1;; p = slash + 1) {
		slash = strchr(p, '/');
		n = slash == NULL ? strlen(p) : (size_t)(slash - p);
		if (n == 0 || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.')) {
			spec_error(line, "%s: empty, . or .. component", path);
			return (-1);
		}
		if (slash == NULL)
			break;
	}
	if (strlen(path) >= PATH_MAX) {
		spec_error(line, "%s: path too long", path);
		return (-1);
	}

	if ((*out = strdup(path + 1)) == NULL)
		err(1, NULL);
	key.name = *out;
	if ((found = tfind(&key, &spec_names, entry_cmp)) != NULL) {
		spec_error(line, "%s: already listed on line %zu", path,
		    (*found)->line);
		goto fail;
	}

	slash = strrchr(path, '/');
	if (slash != path) {
		if ((key.name = strndup(path + 1, slash - path - 1)) == NULL)
			err(1, NULL);
		found = tfind(&key, &spec_names, entry_cmp);
		if (found == NULL || (*found)->type != MKCPIO_DIR) {
			spec_error(line, "%s: parent /%s is not a dir listed "
			    "earlier", path, key.name);
			free(key.name);
			goto fail;
		}
		free(key.name);
	}
	return (0);

fail:
	free(*out);
	*out = NULL;
	return (-1);
}

/* Parse the "MODE UID GID" fields that every line type has. */
static int
parse_owner(size_t line, char **f, unsigned long *mode, unsigned long *uid,
    unsigned long *gid)
{
	if (parse_ulong(f[0], 8, 07777, mode) != 0) {
		spec_error(line, "%s: bad mode (octal, at most 7777)", f[0]);
		return (-1);
	}
	if (parse_ulong(f[1], 10, UINT32_MAX, uid) != 0) {
		spec_error(line, "%s: bad uid", f[1]);
		return (-1);
	}
	if (parse_ulong(f[2], 10, UINT32_MAX, gid) != 0) {
		spec_error(line, "%s: bad gid", f[2]);
		return (-1);
	}
	return (0);
}

/* "file PATH HOSTPATH MODE UID GID": HOSTPATH a regular file, newc-sized. */
static int
parse_file(size_t line, char **f, struct mkcpio_entry *e)
{
	struct stat	sb;
	int		fd;

	if (parse_owner(line, f + 3, &e->mode, &e->uid, &e->gid) != 0)
		return (-1);
	e->mode |= S_IFREG;
	/* Checked now so a missing file fails before any output. */
	if ((fd = open(f[2], O_RDONLY|O_CLOEXEC)) == -1) {
		spec_error(line, "%s: %s", f[2], strerror(errno));
		return (-1);
	}
	if (fstat(fd, &sb) != 0) {
		spec_error(line, "%s: %s", f[2], strerror(errno));
		close(fd);
		return (-1);
	}
	close(fd);
	if (!S_ISREG(sb.st_mode)) {
		spec_error(line, "%s: not a regular file", f[2]);
		return (-1);
	}
	if ((unsigned long long)sb.st_size > MKCPIO_MAXSIZE) {
		spec_error(line, "%s: too large for newc (4 GiB)", f[2]);
		return (-1);
	}
	e->size = sb.st_size;
	if ((e->src = strdup(f[2])) == NULL)
		err(1, NULL);
	return (0);
}

/* "nod PATH MODE UID GID c|b MAJ MIN". */
static int
parse_nod(size_t line, char **f, struct mkcpio_entry *e)
{
	if (parse_owner(line, f + 2, &e->mode, &e->uid, &e->gid) != 0)
		return (-1);
	if (strcmp(f[5], "c") == 0)
		e->mode |= S_IFCHR;
	else if (strcmp(f[5], "b") == 0)
		e->mode |= S_IFBLK;
	else {
		spec_error(line, "%s: device type is not c or b", f[5]);
		return (-1);
	}
	/* The kernel's dev_t: 12 bits of major, 20 of minor. */
	if (parse_ulong(f[6], 10, 4095, &e->rmajor) != 0) {
		spec_error(line, "%s: bad major (0 to 4095)", f[6]);
		return (-1);
	}
	if (parse_ulong(f[7], 10, 1048575, &e->rminor) != 0) {
		spec_error(line, "%s: bad minor (0 to 1048575)", f[7]);
		return (-1);
	}
	return (0);
}

/* Parse one spec line into an entry; comments and blank lines are skipped. */
static int
parse_line(size_t line, char *buf)
{
	static const struct {
		const char		*word;
		enum mkcpio_type	 type;
		int			 nfields;
		const char		*usage;
	} types[] = {
		{ "dir", MKCPIO_DIR, 5, "dir PATH MODE UID GID" },
		{ "file", MKCPIO_FILE, 6, "file PATH HOSTPATH MODE UID GID" },
		{ "nod", MKCPIO_NOD, 8, "nod PATH MODE UID GID c|b MAJ MIN" },
		{ "slink", MKCPIO_SLINK, 6, "slink PATH TARGET MODE UID GID" },
	};
	struct mkcpio_entry	*e;
	char			*f[MKCPIO_MAXFIELDS], *p, *last;
	int			 n;
	size_t			 i;

	n = 0;
	for (p = strtok_r(buf, " \t\r\n", &last); p != NULL;
	    p = strtok_r(NULL, " \t\r\n", &last)) {
		if (n == MKCPIO_MAXFIELDS) {
			n++;
			break;
		}
		f[n++] = p;
	}
	if (n == 0 || f[0][0] == '#')
		return (0);

	for (i = 0; i < sizeof types / sizeof types[0]; i++) {
		if (strcmp(f[0], types[i].word) == 0)
			break;
	}
	if (i == sizeof types / sizeof types[0]) {
		spec_error(line, "%s: unknown type (dir, file, nod or slink)",
		    f[0]);
		return (-1);
	}
	if (n != types[i].nfields) {
		spec_error(line, "%s: wrong number of fields; expected: %s",
		    f[0], types[i].usage);
		return (-1);
	}

	if ((e = calloc(1, sizeof *e)) == NULL)
		err(1, NULL);
	e->type = types[i].type;
	e->line = line;
	if (parse_path(line, f[1], &e->name) != 0)
		goto fail;

	switch (e->type) {
	case MKCPIO_DIR:
		if (parse_owner(line, f + 2, &e->mode, &e->uid, &e->gid) != 0)
			goto fail;
		e->mode |= S_IFDIR;
		break;
	case MKCPIO_FILE:
		if (parse_file(line, f, e) != 0)
			goto fail;
		break;
	case MKCPIO_NOD:
		if (parse_nod(line, f, e) != 0)
			goto fail;
		break;
	case MKCPIO_SLINK:
		if (parse_owner(line, f + 3, &e->mode, &e->uid, &e->gid) != 0)
			goto fail;
		e->mode |= S_IFLNK;
		if (strlen(f[2]) >= PATH_MAX) {
			spec_error(line, "%s: link target too long", f[2]);
			goto fail;
		}
		if ((e->src = strdup(f[2])) == NULL)
			err(1, NULL);
		e->size = strlen(e->src);
		break;
	}
	add_entry(e);
	return (0);

fail:
	free(e->name);
	free(e->src);
	free(e);
	return (-1);
}

static void
add_entry(struct mkcpio_entry *e)
{
	struct mkcpio_entry	**n;

	if (tsearch(e, &spec_names, entry_cmp) == NULL)
		err(1, NULL);
	if (nentries == SIZE_MAX / sizeof *entries)
		errx(1, "too many entries");
	n = realloc(entries, (nentries + 1) * sizeof *entries);
	if (n == NULL)
		err(1, NULL);
	entries = n;
	entries[nentries++] = e;
}

static void
out_write(const void *buf, size_t len)
{
	if (len != 0 && fwrite(buf, 1, len, stdout) != len)
		err(1, "write");
	out_off += len;
}

/* Pad the output to a multiple of four bytes, as newc wants. */
static void
out_pad(void)
{
	static const char	zero[4];

	out_write(zero, (4 - out_off % 4) % 4);
}

/* Write the newc header and name of an entry; a NULL entry is the trailer. */
static void
out_header(const struct mkcpio_entry *e)
{
	static char			 trailer_name[] = "TRAILER!!!";
	static const struct mkcpio_entry trailer = { .name = trailer_name };
	char				 hdr[111];
	unsigned long			 nlink, nino;
	int				 n;

	if (e == NULL) {
		e = &trailer;
		nlink = 1;
		nino = 0;
	} else {
		nlink = e->type == MKCPIO_DIR ? 2 : 1;
		nino = ino++;
	}
	n = snprintf(hdr, sizeof hdr, "070701%08lX%08lX%08lX%08lX%08lX%08lX"
	    "%08lX%08lX%08lX%08lX%08lX%08lX%08lX", nino, e->mode, e->uid,
	    e->gid, nlink, e == &trailer ? 0 : mtime, (unsigned long)e->size,
	    0UL, 0UL, e->rmajor, e->rminor, (unsigned long)strlen(e->name) + 1,
	    0UL);
	if (n != 110)
		errx(1, "%s: bad header length %d", e->name, n);
	out_write(hdr, 110);
	out_write(e->name, strlen(e->name) + 1);
	out_pad();
}

/* Copy a host file into the archive; it must not change size meanwhile. */
static void
out_file(struct mkcpio_entry *e)
{
	char			 buf[65536];
	unsigned long long	 done;
	ssize_t			 n;
	int			 fd;

	if ((fd = open(e->src, O_RDONLY|O_CLOEXEC)) == -1)
		err(1, "%s:%zu: %s", spec_name, e->line, e->src);
	done = 0;
	for (;;) {
		n = read(fd, buf, sizeof buf);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			err(1, "%s:%zu: %s", spec_name, e->line, e->src);
		}
		if (n == 0)
			break;
		if (done + n > e->size)
			break;
		out_write(buf, n);
		done += n;
	}
	close(fd);
	if (done != e->size) {
		errx(1, "%s:%zu: %s: file changed size while being read",
		    spec_name, e->line, e->src);
	}
	out_pad();
}

static void
out_entry(struct mkcpio_entry *e)
{
	out_header(e);
	switch (e->type) {
	case MKCPIO_FILE:
		out_file(e);
		break;
	case MKCPIO_SLINK:
		out_write(e->src, e->size);
		out_pad();
		break;
	case MKCPIO_DIR:
	case MKCPIO_NOD:
		break;
	}
}

int
main(int argc, char **argv)
{
	FILE		*f;
	char		*buf = NULL, *s;
	size_t		 bufsize = 0, line, i;
	ssize_t		 len;
	unsigned long	 v;

	if (argc > 2 || (argc == 2 && argv[1][0] == '-' && argv[1][1] != '\0'))
		usage();
	if (argc == 2 && strcmp(argv[1], "-") != 0) {
		spec_name = argv[1];
		if ((f = fopen(spec_name, "r")) == NULL)
			err(1, "%s", spec_name);
	} else
		f = stdin;

	if ((s = getenv("SOURCE_DATE_EPOCH")) != NULL && *s != '\0') {
		if (parse_ulong(s, 10, UINT32_MAX, &v) != 0)
			errx(1, "SOURCE_DATE_EPOCH: bad value: %s", s);
		mtime = v;
	}
	if (isatty(STDOUT_FILENO))
		errx(1, "not writing an archive to a terminal");

	for (line = 1; (len = getline(&buf, &bufsize, f)) != -1; line++) {
		if (strlen(buf) != (size_t)len) {
			spec_error(line, "NUL byte in line");
			continue;
		}
		parse_line(line, buf);
	}
	if (ferror(f))
		err(1, "%s", spec_name);
	free(buf);
	if (f != stdin)
		fclose(f);
	if (spec_errors != 0) {
		errx(1, "%s: %zu bad line%s, no archive written", spec_name,
		    spec_errors, spec_errors == 1 ? "" : "s");
	}

	for (i = 0; i < nentries; i++)
		out_entry(entries[i]);
	out_header(NULL);
	if (fflush(stdout) != 0 || ferror(stdout))
		err(1, "write");
	return (0);
}
