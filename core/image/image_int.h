/*
 * core/image's own pieces, shared by its files and not by the layers
 * above: where a pulled image and its hidden partial live, and what its
 * .meta file records.
 */
#ifndef QSUP_IMAGE_INT_H
#define QSUP_IMAGE_INT_H

#include <pthread.h>

#include <curl/curl.h>
#include <ev.h>
#include <mbedtls/sha256.h>
#include <mbedtls/sha512.h>
#include <openssl/evp.h>

#include "image.h"

#define IMAGE_PARTIAL_DIR	".partial"	/* in images_dir */
#define IMAGE_SUMS_MAX		(1024 * 1024)	/* a checksum file's bytes */
#define IMAGE_META_MAX		(64 * 1024)
#define IMAGE_REDIRS_MAX	10
#define IMAGE_RETRIES_MAX	5	/* resumes after a dropped connection */
#define IMAGE_STALL_DEFAULT	30.0	/* seconds without a byte */
#define IMAGE_MAX_SIZE_DEFAULT	((uint64_t)16 << 30)	/* image_max_size */
#define IMAGE_ROOM_MARGIN_MAX	((uint64_t)1 << 30)	/* left free, at most */
#define IMAGE_SETTLE_S		60	/* an unsynced file's age before a
					   reader syncs it and says so */

/* Where one image of one URL lives, and its pieces. */
struct image_paths {
	char	*dir;		/* images_dir */
	char	*name;		/* the file's name in dir */
	char	*path;		/* dir/name: whole and verified */
	char	*meta;		/* dir/name.meta */
	char	*partial;	/* dir/.partial/name */
	char	*partial_url;	/* dir/.partial/name.url: whose part it is */
	char	*lock;		/* dir/.partial/name.lock */
};
int		 image_paths_make(const struct image_req *,
		     struct image_paths *, char **);
void		 image_paths_free(struct image_paths *);
int		 image_meta_write(const char *, const struct image_info *,
		     char **);
int		 image_meta_read(const char *, struct image_info *);
const char	*image_boot_id(void);
int		 image_oci_sha256(const char *, char [65]);
double		 image_stall_timeout(const struct image_req *);
uint64_t	 image_room(const struct image_req *, const char *, uint64_t,
		     char **);

/* image_hash.c: the part, written, and hashed by a thread behind */
struct image_hasher {
	int			 inited, running;
	pthread_t		 th;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 fd;
	int			 use512;
	uint64_t		 avail, done;	/* under mu */
	int			 stop, finishing, err;
	int			 idle;		/* waiting for more (under mu) */
	char			*buf;		/* gathered, not written yet */
	char			*hbuf;		/* the thread's, read back */
	size_t			 blen;
	uint64_t		 written;	/* the part's bytes on disk */
	EVP_MD_CTX		*s256, *s512;
	struct ev_loop		*loop;
	ev_async		 async;
	void			(*cb)(void *);
	void			*arg;
};
void		 image_hasher_init(struct image_hasher *, struct ev_loop *,
		     void (*)(void *), void *);
int		 image_hasher_start(struct image_hasher *, int, int, uint64_t);
int		 image_hasher_write(struct image_hasher *, const void *, size_t);
int		 image_hasher_flush(struct image_hasher *);
void		 image_hasher_finish(struct image_hasher *);
int		 image_hasher_result(struct image_hasher *, unsigned char *,
		     unsigned char *);
void		 image_hasher_stop(struct image_hasher *);
void		 image_hasher_free(struct image_hasher *);

/* image_progress.c */
struct image_progress_state;
struct image_progress_state *image_progress_new(enum image_progress,
		     const char *, uint64_t);
void		 image_progress_set(struct image_progress_state *, uint64_t,
		     uint64_t);
void		 image_progress_end(struct image_progress_state *, int);

/* image_curl_loop.c: libcurl's multi-socket API on a libev loop */
struct image_curl_sock;
struct image_curl_loop {
	struct ev_loop		*loop;
	CURLM			*multi;		/* attached, or NULL */
	struct image_curl_sock	*socks;
	ev_timer		 timer;
	void			(*check)(void *);	/* after each action */
	void			*arg;
};
void		 image_curl_loop_init(struct image_curl_loop *,
		     struct ev_loop *, void (*)(void *), void *);
void		 image_curl_loop_attach(struct image_curl_loop *, CURLM *);
void		 image_curl_loop_stop(struct image_curl_loop *);

/* image_pull.c, image.c: an http(s) URL's image (image_get.c: either) */
typedef void	(*image_url_cb)(const char *, const char *, void *);
struct image_url_pull;
struct image_url_pull *image_url_pull_start(struct ev_loop *,
		     const struct image_req *, image_url_cb, void *);
void		 image_url_pull_cancel(struct image_url_pull *);
char		*image_url_cached(const struct image_req *);

/* image_build_job.c: image_build in a child, off the loop */
struct image_build_job;
struct image_build_job *image_build_job_start(struct ev_loop *,
		     const struct image_build_req *, const char *,
		     void (*)(const char *, void *), void *, char **);
void		 image_build_job_cancel(struct image_build_job *);

/* image_registry.c: docker://REF, pulled from an OCI registry */
struct image_reg;
typedef image_url_cb image_reg_cb;
struct image_reg *image_reg_start(struct ev_loop *, const struct image_req *,
		     image_reg_cb, void *);
void		 image_reg_cancel(struct image_reg *);
/* image_reg_cache.c: where a docker:// image is kept */
#define IMAGE_REG_DIR		".oci"		/* in images_dir */
char		*image_reg_cached(const struct image_req *);
char		*image_reg_image_path(const char *, const char *);
char		*image_reg_ref_path(const char *, const char *);
void		 image_reg_ref_remember(const char *, const char *,
		     const char *);
char		*image_reg_have(const char *, const char *);

/* image_reg_stream.c: a pull's layers extracted while they download */
int		 image_reg_layout_write(const char *, const char *,
		     const struct buf *, const char *, const char *,
		     const char *, char **);
struct image_reg_stream;
struct image_reg_stream *image_reg_stream_new(char *const *, size_t, char **);
int		 image_reg_stream_fd(const struct image_reg_stream *, int);
void		 image_reg_stream_started(struct image_reg_stream *);
void		 image_reg_stream_bytes(struct image_reg_stream *,
		     const char *, uint64_t);
void		 image_reg_stream_done(struct image_reg_stream *,
		     const char *);
void		 image_reg_stream_again(struct image_reg_stream *);
void		 image_reg_stream_all(struct image_reg_stream *);
void		 image_reg_stream_free(struct image_reg_stream *);

/* image_sums.c */
int		 image_is_digest(const char *, size_t);
char		*image_sums_beside(const char *, const char *);

/* image_tar.c: an image build's archives, checked before extraction */
struct image_tree;
struct image_tree *image_tree_new(void);
void		 image_tree_free(struct image_tree *);
int		 image_tree_add(struct image_tree *, const char *,
		     const char *, int, int, struct buf *, struct buf *,
		     char **);
struct archive_entry;
int		 image_tree_entry(struct image_tree *, struct archive_entry *,
		     int, int, struct buf *, struct buf *, char **);
int		 image_tree_is_link(const struct image_tree *, const char *);
/* image_build_stream.c */
struct archive;
int		 image_stream_pass(struct archive *, struct archive_entry *,
		     struct archive *);
uint64_t	 image_tree_bytes(const struct image_tree *);
size_t		 image_tree_nxattrs(const struct image_tree *);
int		 image_tree_xattr_script(const struct image_tree *,
		     const char *, struct buf *, char **);

/* image_scratch.c: where a build's tree and raw disk are written */
char		*image_scratch_make(uint64_t, int *);
void		 image_scratch_clean(const char *);

/* image_oci.c: an OCI image layout */
struct image_oci {
	char		**layers;	/* checked blobs, lowest first */
	char		**digests;
	size_t		  nlayers;
	struct buf	  conf;		/* the config's defaults: image.conf */
	int		  verified;	/* the blobs are the pull's cache */
};
int		 image_oci_open(const char *, int, struct image_oci *, char **);
void		 image_oci_free(struct image_oci *);
char		*image_oci_blob_checked(const char *, const char *, int,
		     char **);

#endif
