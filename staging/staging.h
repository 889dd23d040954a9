/*
 * staging/: copies of host trees made before they are shared over 9p, the
 * shared-library closure of host programs, and the host facts that decide
 * both (container or not, multiarch triplet, glibc version). Nothing here
 * executes a file it inspects. Functions that can fail return 0 or -1 and,
 * where they take one, set *cause to a message naming the path (the caller
 * frees it).
 */
#ifndef STAGING_H
#define STAGING_H

#include <stddef.h>
#include <stdint.h>

struct buf;
struct stat;

/* copy.c */
#define STAGING_LINK	0x1	/* hard links allowed: dst is shared read-only */
#define STAGING_XDEV	0x2	/* descend into other file systems too */
#define STAGING_NOCLONE	0x4	/* byte copies only (tests and benchmarks) */

struct staging_stats {
	uint64_t	 files;		/* regular files staged */
	uint64_t	 dirs;
	uint64_t	 symlinks;
	uint64_t	 bytes;		/* sizes of the files staged */
	uint64_t	 linked;	/* files staged as hard links */
	uint64_t	 reflinked;	/* ... as reflinks (FICLONE) */
	uint64_t	 copied;	/* ... as byte copies */
	uint64_t	 skipped;	/* entries left out by name or glob */
	uint64_t	 special;	/* sockets, fifos, devices: not staged */
	uint64_t	 mounts;	/* other file systems not entered */
	uint64_t	 errors;	/* entries that could not be staged */
	char		*first_mount;	/* the first mount point not entered */
	char		*first_error;	/* the first error, naming its path */
	struct buf	*manifest;	/* set by the caller: one line per
					   source entry staged (cache.c) */
};

extern const char *const staging_default_skip[];

int		 staging_copy_tree(const char *, const char *, int,
		     const char *const *, const char *const *,
		     struct staging_stats *, char **);
int		 staging_copy_paths(const char *const *, const char *, int,
		     struct staging_stats *, char **);
int		 staging_ignored(const char *const *, const char *, int);
void		 staging_stats_free(struct staging_stats *);
int		 staging_remove(const char *);
int		 staging_on_overlay(const char *);
void		 staging_manifest_add(struct buf *, const char *,
		     const struct stat *);

/* cache.c */
int		 staging_cache_stage(const char *, const char *, int,
		     const char *const *, const char *const *, char **, int *,
		     struct staging_stats *, char **);
void		 staging_cache_release(int);
int		 staging_cache_cmd(const char *, int, int);

/* ldd.c */
enum staging_via {
	STAGING_VIA_INTERP,	/* PT_INTERP */
	STAGING_VIA_PATH,	/* the DT_NEEDED name contains a slash */
	STAGING_VIA_RPATH,
	STAGING_VIA_RUNPATH,
	STAGING_VIA_CACHE,	/* /etc/ld.so.cache */
	STAGING_VIA_DEFAULT,	/* the loader's built-in directories */
	STAGING_VIA_MISSING	/* found nowhere */
};
struct staging_lib {
	char		*name;		/* the DT_NEEDED name or PT_INTERP path */
	char		*path;		/* as the loader opens it; NULL: missing */
	char		*needed_by;	/* the first object that needs it */
	enum staging_via via;
};
struct staging_list {
	struct staging_lib *libs;
	size_t		 nlibs;
	size_t		 nmissing;
};

extern const char *const staging_compat_seeds[];

int		 staging_ldd_closure(const char *const *, struct staging_list *,
		     char **);
int		 staging_ldd_closure_ext(const char *, const char *const *,
		     struct staging_list *, char **);
int		 staging_ldd_closure_mods(const char *, const char *const *,
		     struct staging_list *, char **);
int		 staging_ldd_seeds(const char *const *, struct staging_list *,
		     char **);
char		*staging_list_missing(const struct staging_list *);
void		 staging_list_free(struct staging_list *);

/* host.c */
const char	*staging_host_triplet(void);
int		 staging_in_container(void);
int		 staging_glibc_version(const char *, int *, int *);

/*
 * For the unit tests and the fuzz target only: the parsers of untrusted
 * bytes (elf.c) and the container check against another root (host.c).
 */
struct staging_elf {
	int		 elfclass;	/* ELFCLASS32 or ELFCLASS64 */
	int		 machine;	/* e_machine */
	int		 type;		/* e_type */
	int		 nodeflib;	/* DF_1_NODEFLIB */
	char		*interp;	/* PT_INTERP, or NULL */
	char		*soname;
	char		*rpath;
	char		*runpath;
	char		**needed;
	size_t		 nneeded;
	int		 verdef_major;	/* highest GLIBC_x.y defined, or 0 */
	int		 verdef_minor;
};
int		 staging_elf_parse(const void *, size_t, struct staging_elf *,
		     char **);
void		 staging_elf_free(struct staging_elf *);
int		 staging_ldcache_lookup(const void *, size_t, const char *,
		     int (*)(const char *, void *), void *);
int		 staging_glibc_banner(const void *, size_t, int *, int *);
int		 staging_cpio_glibc(const void *, size_t, int *, int *, char **);
int		 staging_container_signs(const char *);

#endif
