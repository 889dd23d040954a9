/*
 * A pull's layers extracted while they still download: the build runs
 * beside the pull (image_registry.c), which says on a socket when a
 * layer's part is being written ("o N"), when a layer is whole and
 * verified ("d N"), when every blob is ("a"), and when what was read of
 * a part may not be what the digest will vouch for ("x": a restart from
 * 0, a blob asked for again). Each layer is read from its part behind
 * the writer with libarchive (the same checks as image_tree_add, entry
 * by entry, before an entry goes on), and the checked entries are
 * written again as a tar into a FIFO that GNU tar extracts in ONE
 * fakeroot session, which then waits for "fs" to run mke2fs -d: owners,
 * modes, devices and hard links as the classic build gives them.
 * Layers go in order: layer N+1 starts once layer N is extracted, its
 * whiteouts (met before its first entry) applied first.
 *
 * Anything this cannot do as the classic build does (a whiteout after
 * the layer's first entry, an "x", a tar that failed, an archive the
 * checks refuse) stops it: the session is killed, the tree removed, and
 * once every blob is in the cache the classic build runs instead (and
 * gives a bad archive's error). A digest that fails ends the pull, which
 * kills this build: its tree goes with its work directory. No tar parser
 * of our own: libarchive reads and writes.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "image_build_int.h"

#define STREAM_POLL_MS		10	/* at a part's end: wait this long */
#define STREAM_READ		(1024 * 1024)
#define STREAM_WRITE_BLOCK	(64 * 1024)
#define STREAM_PIPE		(1024 * 1024)	/* the FIFO's buffer */
#define STREAM_LINE_MAX		64	/* a message from the pull */
#define STREAM_ZERO		(64 * 1024)
#define STREAM_STOP_S		10	/* for the session to end */

/*
 * The session: $1 the scratch directory (the tree, the raw disk), $2
 * the work directory (each archive's FIFO and whiteout lists). Per "layer N": its
 * whiteouts removed, then tar reads the FIFO; "fs KIB": mke2fs
 * as the classic script runs it ("fs-work KIB": its raw disk in the work
 * directory). image.conf comes as one more archive.
 */
static char image_stream_script[] =
"set -eu\n"
"w=$1 d=$2\n"
"mkdir \"$w/tree\"\n"
"cd \"$w/tree\"\n"
"while read -r op n; do\n"
"	case $op in\n"
"	layer)\n"
"		if [ -s \"$d/l$n.rm\" ]; then xargs -0 rm -rf -- <\"$d/l$n.rm\"; fi\n"
"		if [ -s \"$d/l$n.opq\" ]; then\n"
"			xargs -0 -I{} find {} -mindepth 1 -delete <\"$d/l$n.opq\"\n"
"		fi\n"
"		tar -x -f \"$d/l$n.tar\" -C \"$w/tree\" -B -b 2048 \\\n"
"		    --numeric-owner --same-owner --same-permissions \\\n"
"		    --no-xattrs --no-acls --no-selinux \\\n"
"		    --warning=no-unknown-keyword --warning=no-timestamp\n"
"		;;\n"
"	fs|fs-work)\n"
"		r=$w\n"
"		if [ $op = fs-work ]; then r=$d; fi\n"
"		exec mke2fs -q -F -t ext4 -b 4096 -O ^metadata_csum -L root \\\n"
"		    -E offset=1048576,nodiscard,assume_storage_prezeroed=1 \\\n"
"		    -d \"$w/tree\" \"$r/disk.raw\" \"${n}k\"\n"
"		;;\n"
"	*) exit 2 ;;\n"
"	esac\n"
"done\n"
"exit 3\n";

struct image_stream {
	struct image_bstate	*b;
	int			 ctl;		/* from the pull */
	size_t			 n;
	char			*opened, *done;	/* per layer */
	int			 all, again, gone;
	size_t			 cur;		/* the layer read */
	size_t			 said;		/* -v: cur + 1, told */
	char			 line[STREAM_LINE_MAX];
	size_t			 len;
};

/*
 * The paths one layer has given tar so far (SELF), and their directories
 * (UNDER): a whiteout met after them may only remove what lower layers
 * left, as the classic build's, applied before the layer, does.
 */
#define STREAM_SELF	1
#define STREAM_UNDER	2
struct stream_set {
	char		**keys;
	unsigned char	 *flags;
	size_t		  n, slots;	/* slots: a power of 2 */
};

/* One layer's part, as libarchive reads it. */
struct stream_src {
	struct image_stream	*st;
	size_t			 i;
	int			 fd;
	char			*buf;
};

static void
stream_message(struct image_stream *st, const char *m)
{
	char			*end;
	unsigned long long	 i;

	if (strcmp(m, "a") == 0) {
		st->all = 1;
		return;
	}
	if (strcmp(m, "x") == 0) {
		st->again = 1;
		return;
	}
	if ((m[0] != 'o' && m[0] != 'd') || m[1] != ' ')
		return;
	errno = 0;
	i = strtoull(m + 2, &end, 10);
	if (errno != 0 || *end != '\0' || i >= st->n)
		return;
	if (m[0] == 'o')
		st->opened[i] = 1;
	else
		st->done[i] = 1;
}

/*
 * The pull's messages, waiting up to ms for one (-1: until one); -1 on
 * a signal or once the pull is gone (its socket closed) before "a".
 */
static int
stream_ctl(struct image_stream *st, int ms)
{
	struct pollfd	 pfd;
	char		 buf[256];
	ssize_t		 n, k;

	if (image_build_sig != 0)
		return (-1);
	if (st->gone)
		return (st->all ? 0 : -1);
	pfd.fd = st->ctl;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, ms) == -1)
		return (errno == EINTR && image_build_sig == 0 ? 0 : -1);
	if (pfd.revents == 0)
		return (0);
	if ((n = read(st->ctl, buf, sizeof buf)) <= 0) {
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			return (image_build_sig != 0 ? -1 : 0);
		st->gone = 1;
		return (st->all ? 0 : -1);
	}
	for (k = 0; k < n; k++) {
		if (buf[k] == '\n') {
			st->line[st->len] = '\0';
			stream_message(st, st->line);
			st->len = 0;
		} else if (st->len + 1 < sizeof st->line)
			st->line[st->len++] = buf[k];
	}
	return (0);
}

/* Every blob in the cache (after a stop: for the classic build). */
static int
stream_wait_all(struct image_stream *st, char **cause)
{
	while (!st->all) {
		if (stream_ctl(st, -1) == -1) {
			if (image_build_sig != 0)
				xasprintf(cause, "interrupted by signal %d",
				    image_build_sig);
			else
				xasprintf(cause, "the pull stopped before its "
				    "blobs were all in the cache");
			return (-1);
		}
	}
	return (0);
}

/*
 * libarchive's reader: the part's bytes as they come. Its end is the
 * layer's only once the pull said it was whole before that read.
 */
static la_ssize_t
stream_read_cb(struct archive *a, void *arg, const void **out)
{
	struct stream_src	*s = arg;
	struct image_stream	*st = s->st;
	ssize_t			 n;
	int			 whole;

	for (;;) {
		if (st->again || image_build_sig != 0) {
			archive_set_error(a, EINTR, "stopped");
			return (-1);
		}
		whole = st->done[s->i];
		if ((n = read(s->fd, s->buf, STREAM_READ)) > 0) {
			*out = s->buf;
			return (n);
		}
		if (n == -1 && errno != EINTR) {
			archive_set_error(a, errno, "reading the part: %s",
			    strerror(errno));
			return (-1);
		}
		if (n == 0 && whole)
			return (0);
		if (stream_ctl(st, STREAM_POLL_MS) == -1) {
			archive_set_error(a, EINTR, "the pull stopped");
			return (-1);
		}
	}
}

/* Layer i's part, once the pull writes it (or has it whole); fd or -1. */
static int
stream_open(struct image_stream *st, size_t i, char **cause)
{
	const char	*hex = st->b->req->stream_layers[i] + 7;
	char		*part, *whole;
	int		 fd = -1;

	while (!st->opened[i] && !st->done[i] && !st->again) {
		if (stream_ctl(st, -1) == -1) {
			xasprintf(cause, "the pull stopped");
			return (-1);
		}
	}
	if (st->again) {
		xasprintf(cause, "a blob is fetched again");
		return (-1);
	}
	xasprintf(&part, "%s/%s/%s", st->b->req->stream_blobs,
	    IMAGE_PARTIAL_DIR, hex);
	xasprintf(&whole, "%s/%s", st->b->req->stream_blobs, hex);
	/* Renamed into place meanwhile: the same bytes, verified. */
	if (st->done[i] || (fd = open(part, O_RDONLY|O_CLOEXEC)) == -1)
		fd = open(whole, O_RDONLY|O_CLOEXEC);
	if (fd == -1)
		xasprintf(cause, "%s: %s", whole, strerror(errno));
	free(part);
	free(whole);
	return (fd);
}

static size_t
stream_hash(const char *k, size_t len)
{
	size_t	h = 14695981039346656037ULL, i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
	return (h);
}

/* k's flags (its first len bytes), added with add, else NULL. */
static unsigned char *
stream_set_at(struct stream_set *s, const char *k, size_t len, int add)
{
	char		**ok;
	unsigned char	 *of;
	size_t		  i, j, n;

	if (add && (s->n + 1) * 2 > s->slots) {
		ok = s->keys;
		of = s->flags;
		n = s->slots;
		s->slots = n == 0 ? 256 : n * 2;
		s->keys = xcalloc(s->slots, sizeof *s->keys);
		s->flags = xcalloc(s->slots, 1);
		for (i = 0; i < n; i++) {
			if (ok[i] == NULL)
				continue;
			j = stream_hash(ok[i], strlen(ok[i])) & (s->slots - 1);
			while (s->keys[j] != NULL)
				j = (j + 1) & (s->slots - 1);
			s->keys[j] = ok[i];
			s->flags[j] = of[i];
		}
		free(ok);
		free(of);
	}
	if (s->slots == 0)
		return (NULL);
	i = stream_hash(k, len) & (s->slots - 1);
	for (;; i = (i + 1) & (s->slots - 1)) {
		if (s->keys[i] == NULL)
			break;
		if (strncmp(s->keys[i], k, len) == 0 && s->keys[i][len] == '\0')
			return (&s->flags[i]);
	}
	if (!add)
		return (NULL);
	s->keys[i] = xstrndup(k, len);
	s->n++;
	return (&s->flags[i]);
}

/* The layer gave tar path: it, and each directory above it. */
static void
stream_set_add(struct stream_set *s, const char *path)
{
	const char	*p;

	*stream_set_at(s, path, strlen(path), 1) |= STREAM_SELF;
	for (p = strchr(path, '/'); p != NULL; p = strchr(p + 1, '/'))
		*stream_set_at(s, path, p - path, 1) |= STREAM_UNDER;
}

static void
stream_set_free(struct stream_set *s)
{
	size_t	i;

	for (i = 0; i < s->slots; i++)
		free(s->keys[i]);
	free(s->keys);
	free(s->flags);
	memset(s, 0, sizeof *s);
}

/*
 * A whiteout after the layer's first entries: "./VICTIM" (rm: it and
 * what is under it; opq: what is under it). Would it remove any of them?
 */
static int
stream_whiteout_hits(struct stream_set *s, const char *item, int opq)
{
	unsigned char	*f;

	if (strncmp(item, "./", 2) == 0)
		item += 2;
	if ((f = stream_set_at(s, item, strlen(item), 0)) == NULL)
		return (0);
	return (opq ? (*f & STREAM_UNDER) != 0 : 1);
}

/* Has the session ended (reaped here, then)? */
static int
stream_ended(struct image_bstate *b)
{
	if (b->session <= 0)
		return (1);
	if (waitpid(b->session, NULL, WNOHANG) == 0)
		return (0);
	b->session = -1;
	return (1);
}

/* A whiteout list of layer i for the session, in the work directory. */
static int
stream_list(struct image_bstate *b, size_t i, const char *ext,
    const struct buf *list, char **cause)
{
	char	*name, *path;

	xasprintf(&name, "l%zu.%s", i, ext);
	path = image_build_file(b, name, list, cause);
	free(name);
	free(path);
	return (path != NULL ? 0 : -1);
}

/* Send the session a command; -1 if it is gone. */
static int
stream_command(struct image_bstate *b, const char *fmt, unsigned long long n)
{
	char	line[64];
	int	len;

	len = snprintf(line, sizeof line, fmt, n);
	return (write(b->session_fd, line, len) == len ? 0 : -1);
}

/*
 * An archive for tar begins (one a layer, or more when whiteouts come
 * between its entries): the whiteouts before it written as lists, the
 * session told, the FIFO tar reads opened for writing (waiting for tar
 * to open it, or for the session to end). The writer, or NULL.
 */
static struct archive *
stream_segment(struct image_bstate *b, struct buf *rm, struct buf *opq,
    int *fifo, char **cause)
{
	struct archive		*w;
	char			*path;
	size_t			 i = b->nseg++;
	int			 fd = -1, fl;

	xasprintf(&path, "%s/l%zu.tar", b->work, i);
	if (mkfifo(path, 0600) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		return (NULL);
	}
	if (stream_list(b, i, "rm", rm, cause) == -1 ||
	    stream_list(b, i, "opq", opq, cause) == -1)
		goto fail;
	rm->len = opq->len = 0;
	if (stream_command(b, "layer %llu\n", i) == -1) {
		xasprintf(cause, "the session ended");
		goto fail;
	}
	while ((fd = open(path, O_WRONLY|O_NONBLOCK|O_CLOEXEC)) == -1) {
		if ((errno != ENXIO && errno != EINTR) ||
		    image_build_sig != 0 || stream_ended(b)) {
			xasprintf(cause, "the session ended before tar read "
			    "archive %zu", i);
			goto fail;
		}
		usleep(1000);
	}
	free(path);
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1) {
		xasprintf(cause, "fcntl: %s", strerror(errno));
		close(fd);
		return (NULL);
	}
	(void)fcntl(fd, F_SETPIPE_SZ, STREAM_PIPE);
	w = archive_write_new();
	archive_write_set_format_pax_restricted(w);
	archive_write_set_bytes_per_block(w, STREAM_WRITE_BLOCK);
	archive_write_set_bytes_in_last_block(w, 1);
	if (archive_write_open_fd(w, fd) != ARCHIVE_OK) {
		xasprintf(cause, "writing archive %zu: %s", i,
		    archive_error_string(w));
		archive_write_free(w);
		close(fd);
		return (NULL);
	}
	*fifo = fd;
	return (w);
fail:
	free(path);
	return (NULL);
}

/* The entry's data, from a to w, holes written as zeros; -1 on error. */
static int
stream_copy(struct archive *a, struct archive *w)
{
	static const char	 zero[STREAM_ZERO];
	const void		*data;
	size_t			 size;
	la_int64_t		 off, pos = 0, gap;
	int			 r;

	while ((r = archive_read_data_block(a, &data, &size, &off)) ==
	    ARCHIVE_OK) {
		for (; off > pos; pos += gap) {
			gap = off - pos > STREAM_ZERO ? STREAM_ZERO : off - pos;
			if (archive_write_data(w, zero, gap) != gap)
				return (-1);
		}
		if (size > 0 && archive_write_data(w, data, size) !=
		    (la_ssize_t)size)
			return (-1);
		pos += size;
	}
	return (r == ARCHIVE_EOF ? 0 : -1);
}

/*
 * A checked entry of a, header and data, written to w as tar will read
 * it (fuzzed: what tar reads must be what was checked). Its xattrs and
 * ACLs are not: debugfs sets the xattrs, and tar is told to ignore both.
 * 0, or -1.
 */
int
image_stream_pass(struct archive *a, struct archive_entry *e,
    struct archive *w)
{
	archive_entry_xattr_clear(e);
	archive_entry_acl_clear(e);
	if (archive_write_header(w, e) != ARCHIVE_OK)
		return (-1);
	return (stream_copy(a, w));
}

/* Let the writer go: the end of the archive, then the FIFO closed. */
static int
stream_segment_end(struct archive *w, int fifo)
{
	int	ok;

	ok = archive_write_close(w) == ARCHIVE_OK;
	archive_write_free(w);
	close(fifo);
	return (ok ? 0 : -1);
}

/*
 * An entry checked: a whiteout after the layer's first entries ends
 * tar's archive there, for the session to apply it before the rest
 * (unless it would remove some of them: -1, the stream stops); any
 * other goes to tar (a new archive begun if need be). -1 with *cause.
 */
static int
stream_entry(struct image_stream *st, struct archive *a,
    struct archive_entry *e, int wh, struct stream_set *mine,
    struct buf *rm, struct buf *opq, size_t rlen, size_t olen,
    struct archive **w, int *fifo, char **cause)
{
	const char	*digest = st->b->req->stream_layers[st->cur];
	const char	*name, *why;
	char		*path;
	int		 r;

	if (wh) {
		if ((rm->len > rlen && stream_whiteout_hits(mine,
		    rm->data + rlen, 0)) || (opq->len > olen &&
		    stream_whiteout_hits(mine, opq->data + olen, 1))) {
			xasprintf(cause, "layer %s: a whiteout of what the "
			    "layer itself holds", digest);
			return (-1);
		}
		if (*w == NULL)
			return (0);
		r = stream_segment_end(*w, *fifo);
		*w = NULL;
		*fifo = -1;
		if (r == -1)
			xasprintf(cause, "layer %s: tar stopped", digest);
		return (r);
	}
	if (*w == NULL && (*w = stream_segment(st->b, rm, opq, fifo,
	    cause)) == NULL)
		return (-1);
	if (st->said != st->cur + 1)
		log_debug("image build: layer %s: extracting it as it "
		    "downloads", digest);
	st->said = st->cur + 1;
	name = archive_entry_pathname(e);
	if (name != NULL && (path = image_tar_path(name, &why)) != NULL) {
		stream_set_add(mine, path);
		free(path);
	}
	if (image_stream_pass(a, e, *w) == -1) {
		xasprintf(cause, "layer %s: giving it to tar: %s", digest,
		    archive_error_string(*w) != NULL ?
		    archive_error_string(*w) : archive_error_string(a));
		return (-1);
	}
	return (0);
}

/*
 * Layer i, read from its part as it comes, each entry checked and then
 * given to tar; its whiteouts are applied before the entries after
 * them. 0, or -1 with *cause.
 */
static int
stream_layer(struct image_stream *st, size_t i, char **cause)
{
	struct image_bstate	*b = st->b;
	struct stream_src	 src;
	struct stream_set	 mine;
	struct archive		*a, *w = NULL;
	struct archive_entry	*e;
	struct buf		 rm = { 0 }, opq = { 0 };
	const char		*digest = b->req->stream_layers[i];
	size_t			 rlen, olen;
	int			 r, fifo = -1, ret = -1;

	memset(&src, 0, sizeof src);
	memset(&mine, 0, sizeof mine);
	src.st = st;
	src.i = i;
	st->cur = i;
	if ((src.fd = stream_open(st, i, cause)) == -1)
		return (-1);
	src.buf = xmalloc(STREAM_READ);
	a = archive_read_new();
	archive_read_support_filter_all(a);
	archive_read_support_format_tar(a);
	if (archive_read_open(a, &src, NULL, stream_read_cb, NULL) !=
	    ARCHIVE_OK) {
		xasprintf(cause, "layer %s: %s", digest,
		    archive_error_string(a));
		goto out;
	}
	for (;;) {
		r = archive_read_next_header(a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			xasprintf(cause, "layer %s: %s", digest,
			    archive_error_string(a));
			goto out;
		}
		rlen = rm.len;
		olen = opq.len;
		if ((r = image_tree_entry(b->tree, e, (int)i, 1, &rm, &opq,
		    cause)) == -1 || stream_entry(st, a, e, r, &mine, &rm,
		    &opq, rlen, olen, &w, &fifo, cause) == -1)
			goto out;
	}
	/* Whiteouts last, or only: an empty archive, for them. */
	if ((rm.len > 0 || opq.len > 0) && w == NULL &&
	    (w = stream_segment(b, &rm, &opq, &fifo, cause)) == NULL)
		goto out;
	r = w != NULL ? stream_segment_end(w, fifo) : 0;
	w = NULL;
	if (r == -1) {
		xasprintf(cause, "layer %s: tar stopped", digest);
		goto out;
	}
	ret = 0;
out:
	if (w != NULL) {
		archive_write_fail(w);
		archive_write_free(w);
		close(fifo);
	}
	archive_read_free(a);
	close(src.fd);
	free(src.buf);
	buf_free(&rm);
	buf_free(&opq);
	stream_set_free(&mine);
	return (ret);
}

/*
 * The session ended: its commands closed, so its shell ends and
 * fakeroot's EXIT trap stops its daemon. A SIGINT could come before
 * fakeroot has set that trap (it starts its daemon first), and leave
 * the daemon running: it is sent only to a session that did not end
 * within STREAM_STOP_S.
 */
void
image_build_stream_stop(struct image_bstate *b)
{
	char	*cause = NULL, *fifo;
	size_t	 k;
	int	 i, fd;

	if (b->session_fd != -1)
		close(b->session_fd);
	b->session_fd = -1;
	if (b->session <= 0)
		return;
	for (i = 0; i < STREAM_STOP_S * 100 && !stream_ended(b); i++) {
		/* A tar still opening its FIFO: an empty archive, an end. */
		for (k = 0; k < b->nseg; k++) {
			xasprintf(&fifo, "%s/l%zu.tar", b->work, k);
			if ((fd = open(fifo, O_WRONLY|O_NONBLOCK|O_CLOEXEC)) !=
			    -1)
				close(fd);
			free(fifo);
		}
		usleep(10000);
	}
	if (b->session > 0) {
		image_build_foreground(b->session);
		(void)kill(-b->session, SIGINT);
		(void)image_build_wait(b, b->session, "fakeroot", &cause);
		free(cause);
	}
	image_build_foreground(0);
	b->session = -1;
}

/* The fakeroot session, reading its commands from a pipe. */
static int
stream_session(struct image_bstate *b, char **cause)
{
	char	*argv[] = { "fakeroot", "--", "sh", "-c",
		    image_stream_script, "sh", NULL, NULL, NULL };
	int	 fds[2];

	if (pipe2(fds, O_CLOEXEC) == -1) {
		xasprintf(cause, "pipe: %s", strerror(errno));
		return (-1);
	}
	argv[6] = xstrdup(b->scratch);
	argv[7] = b->work;
	b->session = image_build_spawn(b, argv, fds[0], NULL, "fakeroot",
	    cause);
	free(argv[6]);
	close(fds[0]);
	if (b->session == -1) {
		close(fds[1]);
		return (-1);
	}
	/* Not the build's signal's to stop: image_build_stream_stop's. */
	image_build_foreground(0);
	b->session_fd = fds[1];
	return (0);
}

/*
 * The stream stopped: the session, the tree, the scratch directory gone,
 * and the blobs waited for, for the classic build. -1 if it cannot be.
 */
static int
stream_fallback(struct image_stream *st, const char *why, char **cause)
{
	struct image_bstate	*b = st->b;

	log_debug("image build: extracting the layers as they come stopped "
	    "(%s): building once they are all in the cache", why);
	image_build_stream_stop(b);
	image_tree_free(b->tree);
	b->tree = NULL;
	if (b->tmp != NULL) {
		image_scratch_clean(b->tmp);
		free(b->tmp);
		b->tmp = NULL;
		close(b->tmp_lock);
		b->tmp_lock = -1;
	} else {
		char	*tree;

		xasprintf(&tree, "%s/tree", b->work);
		image_scratch_clean(tree);
		free(tree);
	}
	b->scratch = NULL;
	return (stream_wait_all(st, cause));
}

/*
 * Extract the pull's layers as they come. 0: the tree is whole, every
 * blob in the cache, the session waits for "fs"; 1: stopped, nothing of
 * it left (the classic build's turn); -1 with *cause: a signal, or the
 * pull went away.
 */
int
image_build_stream(struct image_bstate *b, char **cause)
{
	struct image_stream	 st;
	struct sigaction	 sa, old;
	char			*why = NULL;
	size_t			 i;
	int			 ret = 1;

	memset(&st, 0, sizeof st);
	st.b = b;
	st.ctl = b->req->stream_fd;
	st.n = b->req->nstream;
	st.opened = xcalloc(st.n + 1, 1);
	st.done = xcalloc(st.n + 1, 1);
	/* A tar that died: EPIPE on its FIFO, not the end of the build. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old);
	b->tree = image_tree_new();
	/* The tree's size is not known yet: the layers', compressed, four
	 * times, twice (the tree and the raw disk). */
	b->tmp = image_scratch_make(b->req->stream_bytes * 8, &b->tmp_lock);
	b->scratch = b->tmp != NULL ? b->tmp : b->work;
	if (stream_session(b, &why) == -1)
		goto out;
	for (i = 0; i < st.n; i++) {
		if (stream_layer(&st, i, &why) == -1)
			goto out;
	}
	if (stream_wait_all(&st, &why) == -1 || st.again) {
		if (why == NULL)
			why = xstrdup("a blob was fetched again");
		goto out;
	}
	ret = 0;
out:
	if (ret == 1 && (image_build_sig != 0 ||
	    stream_fallback(&st, why, cause) == -1)) {
		if (image_build_sig != 0 && *cause == NULL)
			xasprintf(cause, "interrupted by signal %d",
			    image_build_sig);
		ret = -1;
	}
	sigaction(SIGPIPE, &old, NULL);
	free(why);
	free(st.opened);
	free(st.done);
	return (ret);
}

/*
 * The image's config into the tree as one more archive for tar (one
 * tar, where the classic script runs mkdir, cp, chown and chmod): its
 * directory and file root's, 755 and 644. Not waited for: the session
 * runs it before "fs". -1 with *cause.
 */
int
image_build_stream_conf(struct image_bstate *b, const struct buf *conf,
    char **cause)
{
	struct archive		*w;
	struct archive_entry	*e;
	struct buf		 none = { 0 };
	time_t			 now = time(NULL);
	int			 fifo, ok;

	if ((w = stream_segment(b, &none, &none, &fifo, cause)) == NULL)
		return (-1);
	e = archive_entry_new();
	archive_entry_set_pathname(e, "etc/qsup");
	archive_entry_set_filetype(e, AE_IFDIR);
	archive_entry_set_perm(e, 0755);
	archive_entry_set_mtime(e, now, 0);
	ok = archive_write_header(w, e) == ARCHIVE_OK;
	archive_entry_clear(e);
	archive_entry_set_pathname(e, "etc/qsup/image.conf");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_mtime(e, now, 0);
	archive_entry_set_size(e, (la_int64_t)conf->len);
	ok = ok && archive_write_header(w, e) == ARCHIVE_OK && (conf->len ==
	    0 || archive_write_data(w, conf->data, conf->len) ==
	    (la_ssize_t)conf->len);
	archive_entry_free(e);
	if (!ok) {
		xasprintf(cause, "image.conf: %s", archive_error_string(w));
		archive_write_fail(w);
		archive_write_free(w);
		close(fifo);
		return (-1);
	}
	if (stream_segment_end(w, fifo) == -1) {
		xasprintf(cause, "image.conf: tar stopped");
		return (-1);
	}
	return (0);
}

/* The tree is whole: mke2fs -d in the session, as the classic script. */
int
image_build_stream_fs(struct image_bstate *b, char **cause)
{
	pid_t	pid = b->session;
	int	ret;

	if (stream_command(b, b->rawdir == b->scratch ? "fs %llu\n" :
	    "fs-work %llu\n", (unsigned long long)(b->fs / 1024)) == -1) {
		xasprintf(cause, "fakeroot (tar, mke2fs): the session ended");
		return (-1);
	}
	close(b->session_fd);
	b->session_fd = -1;
	b->session = -1;
	/* sfdisk ran meanwhile: a signal now stops the session's mke2fs. */
	image_build_foreground(pid);
	if (image_build_sig != 0)
		(void)kill(-pid, SIGINT);
	ret = image_build_wait(b, pid, "fakeroot (tar, mke2fs)", cause);
	return (ret);
}
