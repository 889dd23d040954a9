/*
 * core/image: guest disk images pulled over HTTP(S), verified and kept in
 * images_dir. Uses core/base (and core/wire) only; core/vm and core/cmd
 * use it. The download runs on the caller's libev loop through libcurl's
 * multi-socket API; digests are mbedTLS's.
 */
#ifndef QSUP_IMAGE_H
#define QSUP_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#include "base.h"

enum image_progress {
	IMAGE_PROGRESS_AUTO,	/* a bar on a TTY, else a line now and then */
	IMAGE_PROGRESS_BAR,
	IMAGE_PROGRESS_LINES,
	IMAGE_PROGRESS_QUIET	/* --json */
};

/* What to pull and how to check it. */
struct image_req {
	const char	*url;		/* http:// or https:// */
	const char	*sums_url;	/* NULL: SHA256SUMS, then SHA512SUMS,
					   beside url */
	const char	*sha256;	/* 64 hex digits pinned, or NULL */
	int		 unverified_ok;	/* no digest found: use it anyway */
	const char	*dir;		/* images_dir; NULL: the default */
	enum image_progress progress;
	double		 stall_timeout;	/* seconds without a byte before
					   giving up; 0: 30, or
					   $QSUP_IMAGE_STALL_TIMEOUT */
	uint64_t	 max_size;	/* the most bytes the image may
					   have; 0: 16 GiB (and never more
					   than the disk's room) */
	/* docker://REF only: build the image there (qsup image build)
	   instead of into images_dir, of out_size bytes (0: the tree's). */
	const char	*out;
	uint64_t	 out_size;
	/* docker://REF only: the profile's registries setting, lines
	   "REG 0|1 URL..." (1: insecure), merged with registries.conf. */
	char *const	*registries;
	size_t		 nregistries;
	/* For an OCI pull's blobs (image_registry.c): the file's name in
	   dir (cached by sha256, whatever URL it came from), a request
	   header ("Authorization: ..."), and each write's bytes so far. */
	const char	*name;
	const char	*header;
	void		(*bytes_cb)(void *, uint64_t, uint64_t);
	void		*bytes_arg;
};

/* What NAME.meta records of an image beside it (qsup image ls). */
struct image_info {
	char		*name;		/* the file's name in images_dir */
	char		*path;
	uint64_t	 size;
	char		*url;		/* what it was pulled from; NULL:
					   not pulled by qsup */
	char		*sha256;	/* its digest, always computed */
	char		*checked;	/* how: "sha256 pinned", "SHA256SUMS
					   URL", ..., or "unverified" */
	long long	 pulled;	/* time(3) it was */
	int		 unsynced;	/* not synced: its .meta says so,
					   with this boot's id (image.c) */
};

struct image_pull;
typedef void	(*image_done_cb)(struct image_pull *, const char *path,
		     const char *cause, void *arg);

/* images_dir's default: $XDG_DATA_HOME/qsup/images (~/.local/share/...). */
char		*image_default_dir(void);
/* A pulled image synced before a sandbox builds on it (image.c). */
void		 image_settle(const char *);
/* The image's path in dir if it is there whole and verified, else NULL. */
char		*image_cached(const struct image_req *);
/* Pull on loop; cb once, with the path or the cause (exit 125 material). */
struct image_pull *image_pull_start(struct ev_loop *, const struct image_req *,
		     image_done_cb, void *);
void		 image_pull_cancel(struct image_pull *);

/* image.c: the images in dir, one cb each (sorted by name); -1: dir. */
int		 image_each(const char *, void (*)(const struct image_info *,
		     void *), void *);
void		 image_info_free(struct image_info *);
/* Remove dir/name, its .meta and any part of it; -1 with *cause. */
int		 image_remove(const char *, const char *, char **);
/*
 * Is path the base image of a live sandbox under run_base (its sb-*
 * directories, each with a pid file and an image file)? 1 with *by the
 * sandbox's name and process, else 0.
 */
int		 image_in_use(const char *, const char *, char **);
/* The last component of url's path, or NULL if it has none usable. */
char		*image_url_name(const char *);

/*
 * image_layer.c: a profile's setup steps, each cached as a qcow2 layer
 * over its parent in images_dir/layers (KEY.qcow2, KEY.meta, KEY.lock).
 */
struct image_layer {
	char		*dir;		/* images_dir/layers */
	char		*key;		/* 64 hex digits */
	char		*path;		/* dir/KEY.qcow2 */
	char		*meta;
	char		*lock;
	char		*parent;	/* "base:SHA256", or the parent's KEY */
	char		*parent_path;	/* the base's real path, or the
					   parent layer's path */
	char		*parent_build;	/* the parent layer's build, or "" */
	char		*build;		/* this build's own random id */
	char		*step;		/* as a person reads it */
	char		**env;		/* the step's environment */
	size_t		 nenv;
	uint64_t	 disk_size;	/* the profile's; 0: the base's */
	uint64_t	 size;		/* bytes of KEY.qcow2 */
	long long	 created;
	long long	 used;		/* last got by a run */
	int		 lock_fd;	/* held while got */
};
struct image_layer_parent {
	const char	*id;		/* as image_layer.parent */
	const char	*path;
	const char	*build;		/* NULL for the base */
};
char		*image_layer_dir(const char *, char **);
char		*image_base_digest(const char *, const char *, int, char **);
char		*image_layer_key(const char *, char *const *, char *const *,
		     size_t, uint64_t);
char		*image_layer_step_text(char *const *);
int		 image_layer_get(const char *, const char *,
		     struct image_layer *, void (*)(void *), void *, char **);
int		 image_layer_commit(struct image_layer *, const char *,
		     const struct image_layer_parent *, const char *,
		     char *const *, size_t, uint64_t, char **);
void		 image_layer_release(struct image_layer *);
int		 image_layer_chain(const char *, const char *, char **const *,
		     size_t, char *const *, size_t, uint64_t,
		     struct image_layer *, char **);
int		 image_layer_each(const char *,
		     void (*)(const struct image_layer *, int, void *), void *);
int		 image_layer_prune(const char *, long long,
		     void (*)(const struct image_layer *, int, void *), void *,
		     char **);

/* image_build.c: "qsup image build" */
struct image_build_req {
	const char	*from;		/* DIR, TARBALL or oci:DIR[:TAG] */
	const char	*out;		/* the qcow2 to write */
	uint64_t	 size;		/* the disk's bytes; 0: the tree's
					   size and headroom */
	int		 defer_sync;	/* out is the cache's, with a .meta
					   that says so: not synced, left
					   to the kernel's writeback */
	int		 verified;	/* oci:DIR's blobs are qsup's cache,
					   each hashed as it was pulled and
					   renamed into place only then: not
					   hashed again */
	/* A pull's layers, extracted while they download (oci:DIR only):
	 * the pull says on stream_fd when each is being written, whole
	 * and verified, or to wait for the end (image_build_stream.c). */
	int		 stream;
	int		 stream_fd, stream_peer;	/* ours; the pull's,
					   closed in the build's process */
	const char	*stream_blobs;	/* the cache: HEX, .partial/HEX */
	char *const	*stream_layers;	/* sha256:HEX, lowest first */
	size_t		 nstream;
	uint64_t	 stream_bytes;	/* the layers' compressed bytes */
};
/* Build req->out whole or not at all; -1 with *cause (*sig: the signal
 * that stopped it, else 0). */
int		 image_build(const struct image_build_req *, int *, char **);
/* image_tar.c, image_oci.c: untrusted names and configs (fuzzed) */
char		*image_tar_path(const char *, const char **);
int		 image_tar_link_inside(const char *, const char *);
struct json_t;
int		 image_oci_conf(struct json_t *, struct buf *, char **);

/* image_ref.c, image_manifest.c: a registry's untrusted text (fuzzed) */
struct image_ref {
	char		*registry;	/* host[:port]; Docker Hub: docker.io */
	char		*repo;		/* library/debian */
	char		*tag;		/* NULL when only a digest is named */
	char		*digest;	/* sha256:HEX, or NULL */
	char		*canon;		/* registry/repo[:tag][@digest] */
};
int		 image_ref_parse(const char *, struct image_ref *, char **);
void		 image_ref_free(struct image_ref *);
int		 image_ref_digest_ok(const char *);
/* image_reg_cache.c: the docker:// blob cache of an images_dir. */
struct image_reg_pruned {
	size_t		 blobs, refs;
	uint64_t	 bytes;
};
int		 image_reg_lock(const char *, int);
void		 image_reg_cache_size(const char *, uint64_t *, size_t *);
int		 image_reg_prune(const char *, struct image_reg_pruned *,
		     char **);
int		 image_ref_endpoints(const char *, char *const *, size_t,
		     char ***, size_t *, char **);
struct image_chal {
	char		*scheme, *realm, *service, *scope;
};
int		 image_chal_parse(const char *, struct image_chal *);
void		 image_chal_free(struct image_chal *);
char		*image_auth_find(const char *, size_t, const char *, int *);
char		*image_auth_get(const char *, char **, char **);

/* image_cred.c */
char		*image_cred_helper(const char *, size_t, const char *, char **);
char		*image_cred_parse(const char *, size_t, char **);
char		*image_cred_get(const char *, const char *, char **);
struct image_manifest {
	int		 is_index;
	char		*pick;		/* an index: this platform's digest */
	char		*config;	/* an image: its config's digest */
	uint64_t	 config_size;
	char		**layers;	/* lowest first */
	uint64_t	*sizes;
	size_t		 nlayers;
};
int		 image_manifest_parse(const char *, size_t, const char *,
		     struct image_manifest *, char **);
void		 image_manifest_free(struct image_manifest *);
const char	*image_manifest_arch(void);
char		*image_manifest_header(const char *, size_t, const char *);
char		*image_manifest_errbody(const char *, size_t);
long		 image_manifest_retry_after(const char *, long);

/* image_sums.c: the hex digest of name in a SHA256SUMS/SHA512SUMS text. */
char		*image_sums_find(const char *, size_t, const char *);

#endif
