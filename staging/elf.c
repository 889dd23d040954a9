/*
 * Reading ELF files, /etc/ld.so.cache, glibc's version banner and an
 * initramfs cpio (for the guest's libc.so.6) from bytes in memory. The
 * bytes are untrusted (any file of a host tree the profile names, the
 * guest's initramfs): every offset is checked before use, nothing is ever
 * executed, and a malformed file is an error, never a crash.
 */
#include <sys/stat.h>

#include <elf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "staging.h"

/* A bounded view of the file and its byte order. */
struct elf_view {
	const unsigned char	*p;
	size_t			 len;
	int			 msb;	/* ELFDATA2MSB */
	int			 is64;
};

/* Load-segment mapping from virtual addresses to file offsets. */
struct elf_load {
	uint64_t	 vaddr;
	uint64_t	 offset;
	uint64_t	 filesz;
};

#define ELF_MAX_PHNUM	4096
#define ELF_MAX_DYN	65536
#define ELF_MAX_VERDEF	4096

static int
elf_u16(const struct elf_view *v, uint64_t off, uint64_t *out)
{
	const unsigned char	*b;

	if (off > v->len || v->len - off < 2)
		return (-1);
	b = v->p + off;
	*out = v->msb ? (uint64_t)b[0] << 8 | b[1] : (uint64_t)b[1] << 8 | b[0];
	return (0);
}

static int
elf_u32(const struct elf_view *v, uint64_t off, uint64_t *out)
{
	const unsigned char	*b;
	uint64_t		 x = 0;
	int			 i;

	if (off > v->len || v->len - off < 4)
		return (-1);
	b = v->p + off;
	for (i = 0; i < 4; i++)
		x = x << 8 | b[v->msb ? i : 3 - i];
	*out = x;
	return (0);
}

static int
elf_u64(const struct elf_view *v, uint64_t off, uint64_t *out)
{
	const unsigned char	*b;
	uint64_t		 x = 0;
	int			 i;

	if (off > v->len || v->len - off < 8)
		return (-1);
	b = v->p + off;
	for (i = 0; i < 8; i++)
		x = x << 8 | b[v->msb ? i : 7 - i];
	*out = x;
	return (0);
}

/* A word of the file's class: 4 bytes in ELF32, 8 in ELF64. */
static int
elf_word(const struct elf_view *v, uint64_t off, uint64_t *out)
{
	return (v->is64 ? elf_u64(v, off, out) : elf_u32(v, off, out));
}

/* A NUL-terminated string at off, not beyond limit; NULL if it overruns. */
static char *
elf_string(const struct elf_view *v, uint64_t off, uint64_t limit)
{
	const unsigned char	*end;

	if (limit > v->len)
		limit = v->len;
	if (off >= limit)
		return (NULL);
	end = memchr(v->p + off, '\0', limit - off);
	if (end == NULL)
		return (NULL);
	return (xstrndup((const char *)v->p + off, end - (v->p + off)));
}

static int
elf_vaddr_to_offset(const struct elf_load *loads, size_t nloads,
    uint64_t vaddr, uint64_t *off, uint64_t *avail)
{
	size_t	i;

	for (i = 0; i < nloads; i++) {
		if (vaddr >= loads[i].vaddr &&
		    vaddr - loads[i].vaddr < loads[i].filesz) {
			*off = loads[i].offset + (vaddr - loads[i].vaddr);
			*avail = loads[i].filesz - (vaddr - loads[i].vaddr);
			return (0);
		}
	}
	return (-1);
}

/* Keep the highest GLIBC_x.y of the version definitions. */
static void
elf_note_version(struct staging_elf *e, const char *name)
{
	char	*end;
	long	 major, minor = 0;

	if (strncmp(name, "GLIBC_", 6) != 0)
		return;
	major = strtol(name + 6, &end, 10);
	if (end == name + 6 || major <= 0 || major > 99)
		return;
	if (*end == '.') {
		minor = strtol(end + 1, &end, 10);
		if (minor < 0 || minor > 999)
			return;
	}
	if (*end != '\0')
		return;
	if (major > e->verdef_major ||
	    (major == e->verdef_major && minor > e->verdef_minor)) {
		e->verdef_major = (int)major;
		e->verdef_minor = (int)minor;
	}
}

/* Walk DT_VERDEF: Elf_Verdef and Elf_Verdaux have the same layout in both
 * classes. */
static void
elf_read_verdef(const struct elf_view *v, struct staging_elf *e,
    uint64_t off, uint64_t count, uint64_t stroff, uint64_t strlimit)
{
	uint64_t	 next, aux, name, i;
	char		*s;

	for (i = 0; i < count && i < ELF_MAX_VERDEF; i++) {
		if (elf_u32(v, off + 12, &aux) == -1 ||
		    elf_u32(v, off + 16, &next) == -1 ||
		    elf_u32(v, off + aux, &name) == -1)
			return;
		if ((s = elf_string(v, stroff + name, strlimit)) != NULL) {
			elf_note_version(e, s);
			free(s);
		}
		if (next == 0)
			return;
		off += next;
	}
}

/* What staging_elf_parse has read so far, between its steps. */
struct elf_parse {
	struct elf_view		 v;
	uint64_t		 phoff;
	uint64_t		 phentsize;
	uint64_t		 phnum;
	struct elf_load		*loads;		/* PT_LOAD, phnum + 1 */
	size_t			 nloads;
	int			 have_dyn;	/* PT_DYNAMIC */
	uint64_t		 dyn_off;
	uint64_t		 dyn_size;
	uint64_t		*needed;	/* DT_NEEDED string offsets */
	size_t			 nneeded;
	uint64_t		 strtab;
	uint64_t		 strsz;
	uint64_t		 soname;	/* UINT64_MAX: none */
	uint64_t		 rpath;
	uint64_t		 runpath;
	uint64_t		 verdef;	/* 0: none */
	uint64_t		 verdefnum;
};

/* The one message for headers that point outside the file. */
static int
elf_truncated(char **cause)
{
	xasprintf(cause, "truncated or corrupt ELF headers");
	return (-1);
}

/* e_ident, e_type, e_machine and where the program headers are. */
static int
elf_parse_header(struct elf_parse *ep, struct staging_elf *e, char **cause)
{
	struct elf_view	*v = &ep->v;
	uint64_t	 type, machine;

	if (v->len < EI_NIDENT || memcmp(v->p, ELFMAG, SELFMAG) != 0) {
		xasprintf(cause, "not an ELF file");
		return (-1);
	}
	if ((v->p[EI_CLASS] != ELFCLASS32 && v->p[EI_CLASS] != ELFCLASS64) ||
	    (v->p[EI_DATA] != ELFDATA2LSB && v->p[EI_DATA] != ELFDATA2MSB)) {
		xasprintf(cause, "unknown ELF class or byte order");
		return (-1);
	}
	v->is64 = v->p[EI_CLASS] == ELFCLASS64;
	v->msb = v->p[EI_DATA] == ELFDATA2MSB;
	e->elfclass = v->p[EI_CLASS];

	if (elf_u16(v, 16, &type) == -1 || elf_u16(v, 18, &machine) == -1)
		return (elf_truncated(cause));
	e->type = (int)type;
	e->machine = (int)machine;
	if (v->is64) {
		if (elf_u64(v, 32, &ep->phoff) == -1 ||
		    elf_u16(v, 54, &ep->phentsize) == -1 ||
		    elf_u16(v, 56, &ep->phnum) == -1)
			return (elf_truncated(cause));
	} else {
		if (elf_u32(v, 28, &ep->phoff) == -1 ||
		    elf_u16(v, 42, &ep->phentsize) == -1 ||
		    elf_u16(v, 44, &ep->phnum) == -1)
			return (elf_truncated(cause));
	}
	if (ep->phnum > ELF_MAX_PHNUM ||
	    (ep->phnum != 0 && ep->phentsize < (v->is64 ? 56u : 32u))) {
		xasprintf(cause, "bad program header table");
		return (-1);
	}
	return (0);
}

/* The program headers: PT_LOAD's mappings, PT_INTERP, PT_DYNAMIC. */
static int
elf_parse_phdrs(struct elf_parse *ep, struct staging_elf *e, char **cause)
{
	const struct elf_view	*v = &ep->v;
	uint64_t		 p_type, p_offset, p_vaddr, p_filesz, i, off;

	ep->loads = xreallocarray(NULL, ep->phnum + 1, sizeof *ep->loads);
	for (i = 0; i < ep->phnum; i++) {
		off = ep->phoff + i * ep->phentsize;
		if (off < ep->phoff)
			return (elf_truncated(cause));
		if (v->is64) {
			if (elf_u32(v, off, &p_type) == -1 ||
			    elf_u64(v, off + 8, &p_offset) == -1 ||
			    elf_u64(v, off + 16, &p_vaddr) == -1 ||
			    elf_u64(v, off + 32, &p_filesz) == -1)
				return (elf_truncated(cause));
		} else {
			if (elf_u32(v, off, &p_type) == -1 ||
			    elf_u32(v, off + 4, &p_offset) == -1 ||
			    elf_u32(v, off + 8, &p_vaddr) == -1 ||
			    elf_u32(v, off + 16, &p_filesz) == -1)
				return (elf_truncated(cause));
		}
		switch (p_type) {
		case PT_LOAD:
			ep->loads[ep->nloads].vaddr = p_vaddr;
			ep->loads[ep->nloads].offset = p_offset;
			ep->loads[ep->nloads].filesz = p_filesz;
			ep->nloads++;
			break;
		case PT_INTERP:
			if (e->interp != NULL || p_offset > v->len ||
			    p_filesz > v->len - p_offset ||
			    (e->interp = elf_string(v, p_offset,
			    p_offset + p_filesz)) == NULL) {
				xasprintf(cause, "bad PT_INTERP");
				return (-1);
			}
			break;
		case PT_DYNAMIC:
			ep->dyn_off = p_offset;
			ep->dyn_size = p_filesz;
			ep->have_dyn = 1;
			break;
		}
	}
	return (0);
}

/* The dynamic section's entries: where the names are, not yet the names. */
static int
elf_parse_dynamic(struct elf_parse *ep, struct staging_elf *e, char **cause)
{
	const struct elf_view	*v = &ep->v;
	uint64_t		 dynent, tag, val, i, off;

	dynent = v->is64 ? 16 : 8;
	if (ep->dyn_off > v->len || ep->dyn_size > v->len - ep->dyn_off)
		return (elf_truncated(cause));
	for (i = 0; i < ep->dyn_size / dynent && i < ELF_MAX_DYN; i++) {
		off = ep->dyn_off + i * dynent;
		if (elf_word(v, off, &tag) == -1 ||
		    elf_word(v, off + dynent / 2, &val) == -1)
			return (elf_truncated(cause));
		if (tag == DT_NULL)
			break;
		switch (tag) {
		case DT_NEEDED:
			ep->needed = xreallocarray(ep->needed, ep->nneeded + 1,
			    sizeof *ep->needed);
			ep->needed[ep->nneeded++] = val;
			break;
		case DT_STRTAB:
			ep->strtab = val;
			break;
		case DT_STRSZ:
			ep->strsz = val;
			break;
		case DT_SONAME:
			ep->soname = val;
			break;
		case DT_RPATH:
			ep->rpath = val;
			break;
		case DT_RUNPATH:
			ep->runpath = val;
			break;
		case DT_FLAGS_1:
			if (val & DF_1_NODEFLIB)
				e->nodeflib = 1;
			break;
		case DT_VERDEF:
			ep->verdef = val;
			break;
		case DT_VERDEFNUM:
			ep->verdefnum = val;
			break;
		}
	}
	return (0);
}

/* The names the dynamic section points at, in DT_STRTAB, and DT_VERDEF. */
static int
elf_parse_names(struct elf_parse *ep, struct staging_elf *e, char **cause)
{
	const struct elf_view	*v = &ep->v;
	uint64_t		 stroff, avail, strlimit, voff, vavail;
	size_t			 i;
	char			*s;

	if (elf_vaddr_to_offset(ep->loads, ep->nloads, ep->strtab, &stroff,
	    &avail) == -1) {
		xasprintf(cause, "DT_STRTAB outside the file");
		return (-1);
	}
	strlimit = stroff + (ep->strsz < avail ? ep->strsz : avail);

	e->needed = xreallocarray(NULL, ep->nneeded + 1, sizeof *e->needed);
	for (i = 0; i < ep->nneeded; i++) {
		if ((s = elf_string(v, stroff + ep->needed[i], strlimit)) ==
		    NULL || *s == '\0') {
			free(s);
			xasprintf(cause, "bad DT_NEEDED string");
			return (-1);
		}
		e->needed[e->nneeded++] = s;
	}
	e->needed[e->nneeded] = NULL;
	if (ep->soname != UINT64_MAX)
		e->soname = elf_string(v, stroff + ep->soname, strlimit);
	if (ep->rpath != UINT64_MAX)
		e->rpath = elf_string(v, stroff + ep->rpath, strlimit);
	if (ep->runpath != UINT64_MAX)
		e->runpath = elf_string(v, stroff + ep->runpath, strlimit);
	if (ep->verdef != 0 && elf_vaddr_to_offset(ep->loads, ep->nloads,
	    ep->verdef, &voff, &vavail) == 0)
		elf_read_verdef(v, e, voff, ep->verdefnum, stroff, strlimit);
	return (0);
}

/*
 * Parse what the dynamic loader reads: the program headers (PT_INTERP,
 * PT_LOAD, PT_DYNAMIC) and the dynamic section. Section headers are not
 * used, as the loader does not use them either (and strip may remove them).
 */
int
staging_elf_parse(const void *buf, size_t len, struct staging_elf *e,
    char **cause)
{
	struct elf_parse	ep;
	int			rc = -1;

	memset(e, 0, sizeof *e);
	memset(&ep, 0, sizeof ep);
	ep.v.p = buf;
	ep.v.len = len;
	ep.soname = ep.rpath = ep.runpath = UINT64_MAX;
	if (elf_parse_header(&ep, e, cause) == -1 ||
	    elf_parse_phdrs(&ep, e, cause) == -1)
		goto out;
	if (!ep.have_dyn) {
		rc = 0;		/* static: needs nothing */
		goto out;
	}
	if (elf_parse_dynamic(&ep, e, cause) == -1)
		goto out;
	if (ep.nneeded == 0 && ep.soname == UINT64_MAX &&
	    ep.rpath == UINT64_MAX && ep.runpath == UINT64_MAX &&
	    ep.verdef == 0) {
		rc = 0;
		goto out;
	}
	if (elf_parse_names(&ep, e, cause) == -1)
		goto out;
	rc = 0;
out:
	free(ep.loads);
	free(ep.needed);
	if (rc == -1)
		staging_elf_free(e);
	return (rc);
}

void
staging_elf_free(struct staging_elf *e)
{
	size_t	i;

	for (i = 0; i < e->nneeded; i++)
		free(e->needed[i]);
	free(e->needed);
	free(e->interp);
	free(e->soname);
	free(e->rpath);
	free(e->runpath);
	memset(e, 0, sizeof *e);
}

/*
 * /etc/ld.so.cache, glibc's "new" format (glibc-ld.so.cache1.1), alone or
 * after the old libc5 table. Entries are 24 bytes: flags, key and value
 * (offsets of the soname and the path from the start of the new header),
 * osversion, hwcap. Only entries without hwcap are used: those are the
 * ones any CPU takes (the glibc-hwcaps subdirectories are not followed).
 * For each entry named name, in the cache's own order, cb(path) is asked
 * whether it fits (the loader also checks the flags for the ABI; the caller
 * checks the file's ELF class and machine instead). Returns 0 when cb
 * accepted one, -1 otherwise.
 */
#define LDCACHE_OLD_MAGIC	"ld.so-1.7.0"
#define LDCACHE_NEW_MAGIC	"glibc-ld.so.cache1.1"
#define LDCACHE_NEW_HEADER	48
#define LDCACHE_NEW_ENTRY	24
#define LDCACHE_OLD_ENTRY	12

int
staging_ldcache_lookup(const void *buf, size_t len, const char *name,
    int (*cb)(const char *, void *), void *arg)
{
	const unsigned char	*p = buf;
	/* ldconfig writes the cache in the host's byte order. */
	struct elf_view		 v = { buf, len,
	    __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__, 0 };
	uint64_t		 base = 0, nlibs, i, flags, key, value;
	uint64_t		 hwcap, off;
	size_t			 namelen = strlen(name);
	const char		*k, *path;
	char			*copy;
	int			 ok;

	if (len >= sizeof LDCACHE_OLD_MAGIC - 1 &&
	    memcmp(p, LDCACHE_OLD_MAGIC, sizeof LDCACHE_OLD_MAGIC - 1) == 0) {
		if (elf_u32(&v, 12, &nlibs) == -1 || nlibs > len)
			return (-1);
		base = 16 + nlibs * LDCACHE_OLD_ENTRY;
		base = (base + 7) & ~(uint64_t)7;
	}
	if (base > len || len - base < LDCACHE_NEW_HEADER ||
	    memcmp(p + base, LDCACHE_NEW_MAGIC,
	    sizeof LDCACHE_NEW_MAGIC - 1) != 0)
		return (-1);
	if (elf_u32(&v, base + 20, &nlibs) == -1)
		return (-1);
	for (i = 0; i < nlibs; i++) {
		off = base + LDCACHE_NEW_HEADER + i * LDCACHE_NEW_ENTRY;
		if (elf_u32(&v, off, &flags) == -1 ||
		    elf_u32(&v, off + 4, &key) == -1 ||
		    elf_u32(&v, off + 8, &value) == -1 ||
		    elf_u64(&v, off + 16, &hwcap) == -1)
			return (-1);
		if (hwcap != 0 || (flags & 0xff) != 3)	/* FLAG_ELF_LIBC6 */
			continue;
		if (base + key >= len || len - (base + key) <= namelen)
			continue;
		k = (const char *)p + base + key;
		if (memcmp(k, name, namelen) != 0 || k[namelen] != '\0')
			continue;
		if (base + value >= len ||
		    memchr(p + base + value, '\0', len - (base + value)) == NULL)
			continue;
		path = (const char *)p + base + value;
		copy = xstrdup(path);
		ok = cb(copy, arg);
		free(copy);
		if (ok)
			return (0);
	}
	return (-1);
}

/*
 * glibc's banner, printed when libc.so.6 is run: "GNU C Library (Debian
 * GLIBC 2.36-9+deb12u14) stable release version 2.36." Found in the bytes,
 * never by running the file.
 */
int
staging_glibc_banner(const void *buf, size_t len, int *major, int *minor)
{
	static const char	 lib[] = "GNU C Library";
	static const char	 rel[] = "release version ";
	const char		*p = buf, *end = p + len, *q, *nul;
	long			 ma, mi;
	char			*e, num[32];
	size_t			 n;

	while ((q = memmem(p, end - p, lib, sizeof lib - 1)) != NULL) {
		p = q + sizeof lib - 1;
		if ((nul = memchr(q, '\0', end - q)) == NULL)
			nul = end;
		if ((q = memmem(q, nul - q, rel, sizeof rel - 1)) == NULL)
			continue;
		q += sizeof rel - 1;
		n = nul - q < (long)sizeof num - 1 ? (size_t)(nul - q) :
		    sizeof num - 1;
		memcpy(num, q, n);
		num[n] = '\0';
		ma = strtol(num, &e, 10);
		if (e == num || *e != '.' || ma <= 0 || ma > 99)
			continue;
		q = e + 1;
		mi = strtol(q, &e, 10);
		if (e == q || mi < 0 || mi > 999)
			continue;
		*major = (int)ma;
		*minor = (int)mi;
		return (0);
	}
	return (-1);
}

/*
 * An initramfs: the kernel's newc cpio, uncompressed, archives one after
 * the other with NUL padding between (early microcode, then the root).
 */
#define ELF_CPIO_HDR	110
#define ELF_CPIO_HOPS	8

/* Parse 8 hex digits of a cpio newc header. */
static int
elf_cpio_hex(const unsigned char *p, unsigned long *v)
{
	int	i;

	*v = 0;
	for (i = 0; i < 8; i++) {
		*v <<= 4;
		if (p[i] >= '0' && p[i] <= '9')
			*v |= p[i] - '0';
		else if (p[i] >= 'a' && p[i] <= 'f')
			*v |= p[i] - 'a' + 10;
		else if (p[i] >= 'A' && p[i] <= 'F')
			*v |= p[i] - 'A' + 10;
		else
			return (-1);
	}
	return (0);
}

/* An entry's name without "./" or "/" in front. */
static const char *
elf_cpio_name(const char *name)
{
	while (*name == '/' || (name[0] == '.' && name[1] == '/'))
		name += *name == '/' ? 1 : 2;
	return (name);
}

struct elf_cpio_entry {
	const char		*name;
	unsigned long		 mode;
	const unsigned char	*data;
	unsigned long		 size;
};

/*
 * Find the entry named want (exactly, or by its last component when
 * by_base), in a newc cpio (concatenated archives too). 1: found, 0: not
 * there, -1: not a cpio this can read (compressed, say).
 */
static int
elf_cpio_find(const unsigned char *buf, size_t len, const char *want,
    int by_base, struct elf_cpio_entry *e)
{
	unsigned long	 namesize, filesize, mode;
	const char	*name, *base;
	size_t		 off = 0;

	while (off < len) {
		if (buf[off] == '\0') {		/* padding between archives */
			off++;
			continue;
		}
		if (len - off < ELF_CPIO_HDR ||
		    (memcmp(buf + off, "070701", 6) != 0 &&
		    memcmp(buf + off, "070702", 6) != 0))
			return (-1);
		if (elf_cpio_hex(buf + off + 14, &mode) == -1 ||
		    elf_cpio_hex(buf + off + 54, &filesize) == -1 ||
		    elf_cpio_hex(buf + off + 94, &namesize) == -1)
			return (-1);
		if (namesize == 0 ||
		    namesize > len - off - ELF_CPIO_HDR ||
		    buf[off + ELF_CPIO_HDR + namesize - 1] != '\0')
			return (-1);
		name = (const char *)buf + off + ELF_CPIO_HDR;
		off = (off + ELF_CPIO_HDR + namesize + 3) & ~(size_t)3;
		if (off > len || filesize > len - off)
			return (-1);
		if (strcmp(name, "TRAILER!!!") != 0) {
			name = elf_cpio_name(name);
			base = strrchr(name, '/');
			base = base != NULL ? base + 1 : name;
			if (strcmp(by_base ? base : name, want) == 0 &&
			    (S_ISREG(mode) || S_ISLNK(mode))) {
				e->name = name;
				e->mode = mode;
				e->data = buf + off;
				e->size = filesize;
				return (1);
			}
		}
		off = (off + filesize + 3) & ~(size_t)3;
	}
	return (0);
}

/*
 * glibc's version in an initramfs (a newc cpio, as the kernel reads it):
 * its libc.so.6, symlinks followed within the archive, by its release
 * banner, else the highest GLIBC_x.y it defines. 1: found (*where names
 * the entry), 0: no libc.so.6 in it, -1: not a cpio this can read.
 */
int
staging_cpio_glibc(const void *buf, size_t len, int *major, int *minor,
    char **where)
{
	struct elf_cpio_entry	 e;
	struct staging_elf		 elf;
	char				*want, *next, *why = NULL;
	const char			*slash;
	int				 hops, rc;

	*where = NULL;
	if ((rc = elf_cpio_find(buf, len, "libc.so.6", 1, &e)) != 1)
		return (rc);
	for (hops = 0; S_ISLNK(e.mode); hops++) {
		if (hops == ELF_CPIO_HOPS || e.size == 0 || e.size > 4096)
			return (0);
		want = xstrndup((const char *)e.data, e.size);
		if (*want != '/' && (slash = strrchr(e.name, '/')) != NULL) {
			xasprintf(&next, "%.*s/%s", (int)(slash - e.name),
			    e.name, want);
			free(want);
			want = next;
		}
		next = util_path_normalize(elf_cpio_name(want));
		free(want);
		rc = elf_cpio_find(buf, len,
		    elf_cpio_name(next), 0, &e);
		free(next);
		if (rc != 1)
			return (rc);
	}
	if (staging_glibc_banner(e.data, e.size, major, minor) == 0) {
		xasprintf(where, "/%s", e.name);
		return (1);
	}
	if (staging_elf_parse(e.data, e.size, &elf, &why) == 0) {
		rc = elf.verdef_major != 0;
		*major = elf.verdef_major;
		*minor = elf.verdef_minor;
		staging_elf_free(&elf);
		if (rc) {
			xasprintf(where, "/%s", e.name);
			return (1);
		}
	}
	free(why);
	return (0);
}
