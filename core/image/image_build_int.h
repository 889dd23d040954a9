/*
 * "qsup image build"'s own pieces, shared by image_build*.c: the build's
 * state, its children (image_build_run.c) and the streaming extraction
 * of a pull's layers while they still download (image_build_stream.c).
 */
#ifndef QSUP_IMAGE_BUILD_INT_H
#define QSUP_IMAGE_BUILD_INT_H

#include <signal.h>

#include "image_int.h"

#define IMAGE_BUILD_LOG_TAIL	600
#define IMAGE_BUILD_FULL	(1024 * 1024)	/* bytes free: a full disk */
#define IMAGE_BUILD_FLUSH_US	20000	/* writeback started this often */

struct image_bstate {
	const struct image_build_req	*req;
	char				*work;	/* beside OUT */
	char				*tmp;	/* a tmpfs's, or NULL */
	int				 tmp_lock;	/* on tmp */
	const char			*scratch;	/* the tree's and
						   disk.raw's: tmp or work */
	const char			*rawdir;	/* disk.raw's: scratch,
						   or work when a streamed
						   tree filled the tmpfs */
	pid_t				 rm_tree;	/* removing it */
	int				 log;	/* the children's output: a
						   memfd, so a full disk
						   cannot swallow it */
	struct image_tree		*tree;
	struct image_oci		 oci;
	int				 is_oci;
	char				**argv;	/* fakeroot's */
	size_t				 argc;
	uint64_t			 disk, fs;	/* bytes */
	int				 zgz;	/* zstd reads gzip */
	double				 t;	/* the last step's end */
	pid_t				 session;	/* streamed: fakeroot,
						   waiting for "fs" */
	int				 session_fd;	/* its commands */
	size_t				 nseg;	/* tar's archives so far */
};

extern volatile sig_atomic_t	image_build_sig;

/* image_build_run.c */
void		 image_build_signal(int);
void		 image_build_foreground(pid_t);
char		*image_build_log_tail(const struct image_bstate *);
pid_t		 image_build_spawn(struct image_bstate *, char *const [], int,
		     const char *, const char *, char **);
int		 image_build_wait(struct image_bstate *, pid_t, const char *,
		     char **);
int		 image_build_run(struct image_bstate *, char *const [],
		     const char *, const char *, char **);
int		 image_build_run_flushing(struct image_bstate *, char *const [],
		     const char *, const char *, char **);
char		*image_build_file(struct image_bstate *, const char *,
		     const struct buf *, char **);

/* image_build_stream.c */
int		 image_build_stream(struct image_bstate *, char **);
int		 image_build_stream_conf(struct image_bstate *,
		     const struct buf *, char **);
int		 image_build_stream_fs(struct image_bstate *, char **);
void		 image_build_stream_stop(struct image_bstate *);

#endif
