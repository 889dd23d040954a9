/*
 * The part of a pull, written and hashed: the loop thread writes the
 * body libcurl hands it (small pieces gathered into writes of
 * IMAGE_PART_BUF), and a thread hashes what is written, read back, with
 * OpenSSL's libcrypto (SHA-NI where the CPU has it: about 1.8 GB/s here,
 * where mbedTLS 2.28 made 250 MB/s and was most of a 150 MB pull's
 * download), overlapping receiving. The loop thread says how far the
 * part is written; the end of the hashing comes back to the loop
 * through an ev_async, never a blocking wait there. The thread also
 * starts the writeback of what it hashed, so the fdatasync before the
 * rename has little left to wait for.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_int.h"

/*
 * The thread wakes only when IMAGE_HASH_WAKE more is written (libcurl
 * hands a piece at a time: a wake for each 16 KB was 18,000 of them for
 * 300 MB), and reads what it hashes back into a buffer of its own,
 * IMAGE_HASH_READ at a time. Reading it so costs a copy, and still is
 * the cheaper way here: 300 MB from the page cache hashed in 157 ms from
 * a buffer the cache holds, 212 ms read back by pread(2), 281-304 ms
 * mapped (the hash's loads from memory the CPU has not seen, a page at a
 * time), which is what a pull did until 2026-12-05.
 */
#define IMAGE_HASH_WAKE		(1024 * 1024)
#define IMAGE_HASH_READ		(1024 * 1024)
/* What is hashed between two starts of its writeback. */
#define IMAGE_HASH_WINDOW	(8 * 1024 * 1024)
/*
 * A write(2) of each 16 KB libcurl hands over took 0.11 s of system time
 * for 300 MB here, writes of 1 MB 0.05 s (dd); the copy into the buffer
 * costs less than the difference. Pieces of IMAGE_PART_DIRECT or more
 * (libcurl's own buffer is IMAGE_BUFFER, 512 KB, for a pull) are
 * written as they come, without that copy.
 */
#define IMAGE_PART_BUF		(1024 * 1024)
#define IMAGE_PART_DIRECT	(256 * 1024)

/* Hash [at, at + len) of h's part, read back; 0, or an errno. */
static int
image_hasher_window(struct image_hasher *h, uint64_t at, size_t len)
{
	uint64_t	 from = at;
	size_t		 left = len, want;
	ssize_t		 r;

	if (h->hbuf == NULL)
		h->hbuf = xmalloc(IMAGE_HASH_READ);
	while (left > 0) {
		want = left > IMAGE_HASH_READ ? IMAGE_HASH_READ : left;
		if ((r = pread(h->fd, h->hbuf, want, (off_t)from)) == -1) {
			if (errno == EINTR)
				continue;
			return (errno);
		}
		/* The part is ours alone (locked), written before it is
		 * told of: short of that is an error, not the end. */
		if (r == 0)
			return (EIO);
		if (EVP_DigestUpdate(h->s256, h->hbuf, (size_t)r) != 1 ||
		    (h->use512 && EVP_DigestUpdate(h->s512, h->hbuf,
		    (size_t)r) != 1))
			return (EIO);
		from += (uint64_t)r;
		left -= (size_t)r;
	}
	/* Its writeback begun, where a fdatasync comes at the end (a host
	 * without a boot id: image.c), so that it is short. */
	if (image_boot_id() == NULL)
		(void)sync_file_range(h->fd, at, len, SYNC_FILE_RANGE_WRITE);
	return (0);
}

/* The thread: hash [done, avail) of the part until stopped or finished. */
static void *
image_hasher_main(void *arg)
{
	struct image_hasher	*h = arg;
	uint64_t		 to, at;
	size_t			 want;
	int			 e;

	pthread_mutex_lock(&h->mu);
	for (;;) {
		h->idle = 1;
		while (h->avail - h->done < IMAGE_HASH_WAKE && !h->stop &&
		    !h->finishing)
			pthread_cond_wait(&h->cv, &h->mu);
		h->idle = 0;
		if (h->stop || (h->finishing && h->done == h->avail) ||
		    h->err != 0)
			break;
		to = h->avail;
		at = h->done;
		pthread_mutex_unlock(&h->mu);
		while (at < to) {
			want = to - at > IMAGE_HASH_WINDOW ?
			    IMAGE_HASH_WINDOW : to - at;
			if ((e = image_hasher_window(h, at, want)) != 0) {
				pthread_mutex_lock(&h->mu);
				h->err = e;
				goto out;
			}
			at += want;
		}
		pthread_mutex_lock(&h->mu);
		h->done = to;
	}
out:
	if (!h->stop)
		ev_async_send(h->loop, &h->async);
	pthread_mutex_unlock(&h->mu);
	return (NULL);
}

/* On the loop: the thread is through; join it, tell the pull. */
static void
image_hasher_async_cb(struct ev_loop *loop, ev_async *w, int revents)
{
	struct image_hasher	*h = w->data;

	(void)loop;
	(void)revents;
	if (!h->running)
		return;
	pthread_join(h->th, NULL);
	h->running = 0;
	h->cb(h->arg);
}

/* Ready h for a pull on loop; cb(arg) once a finish is hashed. */
void
image_hasher_init(struct image_hasher *h, struct ev_loop *loop,
    void (*cb)(void *), void *arg)
{
	memset(h, 0, sizeof *h);
	h->loop = loop;
	h->cb = cb;
	h->arg = arg;
	h->fd = -1;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	if ((h->s256 = EVP_MD_CTX_new()) == NULL ||
	    (h->s512 = EVP_MD_CTX_new()) == NULL)
		fatalx("EVP_MD_CTX_new failed");
	ev_async_init(&h->async, image_hasher_async_cb);
	h->async.data = h;
	h->inited = 1;
}

/* Stop the thread, if it runs, without its result. */
void
image_hasher_stop(struct image_hasher *h)
{
	if (!h->inited)
		return;
	if (h->running) {
		pthread_mutex_lock(&h->mu);
		h->stop = 1;
		pthread_cond_signal(&h->cv);
		pthread_mutex_unlock(&h->mu);
		pthread_join(h->th, NULL);
		h->running = 0;
	}
	ev_async_stop(h->loop, &h->async);
}

/*
 * (Re)start hashing fd from its first byte, SHA-512 too if use512; the
 * first avail bytes are there already (a part kept from before).
 */
int
image_hasher_start(struct image_hasher *h, int fd, int use512,
    uint64_t avail)
{
	image_hasher_stop(h);
	h->fd = fd;
	h->use512 = use512;
	h->avail = h->written = avail;
	h->blen = 0;
	h->done = 0;
	h->stop = h->finishing = h->err = 0;
	if (EVP_DigestInit_ex(h->s256, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestInit_ex(h->s512, EVP_sha512(), NULL) != 1) {
		errno = EIO;
		return (-1);
	}
	ev_async_start(h->loop, &h->async);
	if ((errno = pthread_create(&h->th, NULL, image_hasher_main, h)) != 0)
		return (-1);
	h->running = 1;
	return (0);
}

/* The part is written up to avail. */
static void
image_hasher_more(struct image_hasher *h, uint64_t avail)
{
	pthread_mutex_lock(&h->mu);
	h->avail = avail;
	if (h->idle && avail - h->done >= IMAGE_HASH_WAKE)
		pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* n bytes onto the part, told to the thread; -1 with errno, and
 * h->written how far it got. */
static int
image_hasher_put(struct image_hasher *h, const char *d, size_t n)
{
	size_t	off = 0;
	ssize_t	w;

	while (off < n) {
		if ((w = write(h->fd, d + off, n - off)) == -1) {
			if (errno == EINTR)
				continue;
			if (off > 0)
				image_hasher_more(h, h->written);
			return (-1);
		}
		off += (size_t)w;
		h->written += (uint64_t)w;
	}
	image_hasher_more(h, h->written);
	return (0);
}

/* What is gathered, onto the part; -1 with errno (h->written: how far). */
int
image_hasher_flush(struct image_hasher *h)
{
	uint64_t	was = h->written;
	size_t		off;

	if (h->blen == 0)
		return (0);
	if (image_hasher_put(h, h->buf, h->blen) == -1) {
		/* What is left stays, for a try later: no repeat. */
		off = (size_t)(h->written - was);
		memmove(h->buf, h->buf + off, h->blen - off);
		h->blen -= off;
		return (-1);
	}
	h->blen = 0;
	return (0);
}

/* n bytes more of the part, gathered; -1 with errno, as flush. */
int
image_hasher_write(struct image_hasher *h, const void *data, size_t n)
{
	const char	*d = data;
	size_t		 take;

	if (h->blen == 0 && n >= IMAGE_PART_DIRECT)
		return (image_hasher_put(h, d, n));
	if (h->buf == NULL)
		h->buf = xmalloc(IMAGE_PART_BUF);
	while (n > 0) {
		if (h->blen == IMAGE_PART_BUF && image_hasher_flush(h) == -1)
			return (-1);
		take = IMAGE_PART_BUF - h->blen;
		if (take > n)
			take = n;
		memcpy(h->buf + h->blen, d, take);
		h->blen += take;
		d += take;
		n -= take;
	}
	return (0);
}

/* The part is whole: cb once the thread has hashed all of it. */
void
image_hasher_finish(struct image_hasher *h)
{
	pthread_mutex_lock(&h->mu);
	h->finishing = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

/* After cb: the digests (d512 only with use512); -1 with errno. */
int
image_hasher_result(struct image_hasher *h, unsigned char *d256,
    unsigned char *d512)
{
	if (h->err != 0) {
		errno = h->err;
		return (-1);
	}
	if (EVP_DigestFinal_ex(h->s256, d256, NULL) != 1 ||
	    (h->use512 && EVP_DigestFinal_ex(h->s512, d512, NULL) != 1)) {
		errno = EIO;
		return (-1);
	}
	return (0);
}

void
image_hasher_free(struct image_hasher *h)
{
	if (!h->inited)
		return;
	image_hasher_stop(h);
	free(h->buf);
	free(h->hbuf);
	h->buf = h->hbuf = NULL;
	EVP_MD_CTX_free(h->s256);
	EVP_MD_CTX_free(h->s512);
	h->s256 = h->s512 = NULL;
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	h->inited = 0;
}
