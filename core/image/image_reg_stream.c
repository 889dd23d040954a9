/*
 * A docker:// pull's side of extracting layers while they download
 * (image_build_stream.c is the build's): the layout the build reads,
 * made as soon as the manifest is known, and the messages on a socket to
 * the build's process: "o N" once layer N's part is being written by
 * this pull, "d N" once it is whole and verified in the cache, "x" when
 * a part is written again from 0 or a blob asked for again (what the
 * build read of it may not be what its digest vouches for: the build
 * then waits for the cache), "a" once every blob is in the cache.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "image_int.h"

struct image_reg_stream {
	int		 fd, peer;	/* ours, the build's */
	char		**layers;	/* sha256:HEX, lowest first */
	size_t		 n;
	uint64_t	*have;
	char		*opened;
	int		 again;
};

/* The manifest as a blob of the cache, and a layout naming it in dir. */
int
image_reg_layout_write(const char *blobs, const char *oci,
    const struct buf *man, const char *man_digest, const char *ctype,
    const char *dir, char **cause)
{
	json_t		*j;
	const char	*type;
	char		*path, *tmp, *text;
	int		 fd;

	xasprintf(&path, "%s/%s", blobs, man_digest + 7);
	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1 || write(fd, man->data, man->len) !=
	    (ssize_t)man->len || close(fd) == -1 || rename(tmp, path) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		(void)unlink(tmp);
		free(tmp);
		free(path);
		return (-1);
	}
	free(tmp);
	free(path);
	j = json_loadb(man->data, man->len, 0, NULL);
	type = json_string_value(json_object_get(j, "mediaType"));
	if (type == NULL)
		type = ctype != NULL ? ctype :
		    "application/vnd.oci.image.manifest.v1+json";
	text = NULL;
	xasprintf(&text, "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
	    "\"%s\",\"digest\":\"%s\",\"size\":%zu}]}\n",
	    strchr(type, '"') == NULL ? type : "", man_digest, man->len);
	json_decref(j);
	xasprintf(&path, "%s/index.json", dir);
	if (util_write_file(path, text) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		free(text);
		return (-1);
	}
	free(path);
	free(text);
	xasprintf(&path, "%s/blobs", dir);
	xasprintf(&tmp, "%s/blobs", oci);
	if (symlink(tmp, path) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(tmp);
		free(path);
		return (-1);
	}
	free(tmp);
	free(path);
	return (0);
}

/* The messages' socket for a build of layers; NULL with *cause. */
struct image_reg_stream *
image_reg_stream_new(char *const *layers, size_t n, char **cause)
{
	struct image_reg_stream	*s;
	int			 fds[2];
	size_t			 i;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (NULL);
	}
	s = xcalloc(1, sizeof *s);
	s->fd = fds[0];
	s->peer = fds[1];
	s->n = n;
	s->layers = xcalloc(n + 1, sizeof *s->layers);
	for (i = 0; i < n; i++)
		s->layers[i] = xstrdup(layers[i]);
	s->have = xcalloc(n + 1, sizeof *s->have);
	s->opened = xcalloc(n + 1, 1);
	return (s);
}

int
image_reg_stream_fd(const struct image_reg_stream *s, int peer)
{
	return (peer ? s->peer : s->fd);
}

/* The build's process has its end: ours no longer needs it. */
void
image_reg_stream_started(struct image_reg_stream *s)
{
	if (s->peer != -1)
		close(s->peer);
	s->peer = -1;
}

/* A message; a build gone meanwhile hears nothing (its job says why). */
static void
image_reg_stream_say(struct image_reg_stream *s, char what, ssize_t i)
{
	char	line[32];
	int	len;

	if (s->fd == -1)
		return;
	if (i >= 0)
		len = snprintf(line, sizeof line, "%c %zd\n", what, i);
	else
		len = snprintf(line, sizeof line, "%c\n", what);
	(void)send(s->fd, line, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Bytes of blob digest written so far: "o" at first, "x" if fewer. */
void
image_reg_stream_bytes(struct image_reg_stream *s, const char *digest,
    uint64_t have)
{
	size_t	i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++) {
		if (strcmp(s->layers[i], digest) != 0)
			continue;
		if (have < s->have[i])
			image_reg_stream_again(s);
		s->have[i] = have;
		if (have > 0 && !s->opened[i]) {
			s->opened[i] = 1;
			image_reg_stream_say(s, 'o', (ssize_t)i);
		}
	}
}

/* Blob digest is whole and verified in the cache. */
void
image_reg_stream_done(struct image_reg_stream *s, const char *digest)
{
	size_t	i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++) {
		if (strcmp(s->layers[i], digest) == 0)
			image_reg_stream_say(s, 'd', (ssize_t)i);
	}
}

/* What the build read may not be what the digests will vouch for. */
void
image_reg_stream_again(struct image_reg_stream *s)
{
	if (s == NULL || s->again)
		return;
	s->again = 1;
	image_reg_stream_say(s, 'x', -1);
}

/* Every blob is in the cache. */
void
image_reg_stream_all(struct image_reg_stream *s)
{
	if (s != NULL)
		image_reg_stream_say(s, 'a', -1);
}

void
image_reg_stream_free(struct image_reg_stream *s)
{
	size_t	i;

	if (s == NULL)
		return;
	if (s->fd != -1)
		close(s->fd);
	if (s->peer != -1)
		close(s->peer);
	for (i = 0; i < s->n; i++)
		free(s->layers[i]);
	free(s->layers);
	free(s->have);
	free(s->opened);
	free(s);
}
