/*
 * The digests of a pull, computed beside the download: a thread reads
 * the part back (from the page cache, with pread) behind the writer and
 * hashes it with OpenSSL's libcrypto (SHA-NI where the CPU has it: about
 * 1.5 GB/s here, where mbedTLS 2.28 made 250 MB/s and was most of a
 * 150 MB pull's download), overlapping receiving. The loop
 * thread says how far the part is written; the end of the hashing comes
 * back to the loop through an ev_async, never a blocking wait there.
 * It also starts the writeback of what it hashed, so the fdatasync before
 * the rename has little left to wait for.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_int.h"

#define IMAGE_HASH_CHUNK	(1024 * 1024)

/* The thread: hash [done, avail) of the part until stopped or finished. */
static void *
image_hasher_main(void *arg)
{
	struct image_hasher	*h = arg;
	unsigned char		*buf;
	uint64_t		 to, at;
	ssize_t			 n;
	size_t			 want;

	buf = xmalloc(IMAGE_HASH_CHUNK);
	pthread_mutex_lock(&h->mu);
	for (;;) {
		while (h->done == h->avail && !h->stop && !h->finishing)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->stop || (h->finishing && h->done == h->avail) ||
		    h->err != 0)
			break;
		to = h->avail;
		at = h->done;
		pthread_mutex_unlock(&h->mu);
		while (at < to) {
			want = to - at > IMAGE_HASH_CHUNK ? IMAGE_HASH_CHUNK :
			    to - at;
			if ((n = pread(h->fd, buf, want, at)) <= 0) {
				if (n == -1 && errno == EINTR)
					continue;
				pthread_mutex_lock(&h->mu);
				h->err = n == 0 ? EIO : errno;
				goto out;
			}
			if (EVP_DigestUpdate(h->s256, buf, n) != 1 ||
			    (h->use512 && EVP_DigestUpdate(h->s512, buf,
			    n) != 1)) {
				pthread_mutex_lock(&h->mu);
				h->err = EIO;
				goto out;
			}
			/* Its writeback begun: the last fdatasync is short. */
			sync_file_range(h->fd, at, n, SYNC_FILE_RANGE_WRITE);
			at += n;
		}
		pthread_mutex_lock(&h->mu);
		h->done = to;
	}
out:
	if (!h->stop)
		ev_async_send(h->loop, &h->async);
	pthread_mutex_unlock(&h->mu);
	free(buf);
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
	h->avail = avail;
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
void
image_hasher_more(struct image_hasher *h, uint64_t avail)
{
	pthread_mutex_lock(&h->mu);
	h->avail = avail;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
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
	EVP_MD_CTX_free(h->s256);
	EVP_MD_CTX_free(h->s512);
	h->s256 = h->s512 = NULL;
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	h->inited = 0;
}
