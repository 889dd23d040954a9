/*
 * The part of a pull, written and hashed: the loop thread gathers the
 * body libcurl hands it (16 KB at a time) into writes of IMAGE_PART_BUF,
 * and a thread hashes what is written, mapped from the page cache, with
 * OpenSSL's libcrypto (SHA-NI where the CPU has it: about 1.8 GB/s here,
 * where mbedTLS 2.28 made 250 MB/s and was most of a 150 MB pull's
 * download), overlapping receiving. The loop thread says how far the
 * part is written; the end of the hashing comes back to the loop
 * through an ev_async, never a blocking wait there. The thread also
 * starts the writeback of what it hashed, so the fdatasync before the
 * rename has little left to wait for.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_int.h"

/*
 * The thread hashes a window of the part at a time, mapped (the page
 * cache's pages themselves: a pread copied all 300 MB of a pull once
 * more, on a host whose other CPU the sender often has), and wakes only
 * when a window's worth is written (libcurl hands 16 KB at a time: a
 * wake for each was 18,000 of them for 300 MB, each a small read, hash
 * and writeback).
 */
#define IMAGE_HASH_CHUNK	(8 * 1024 * 1024)
#define IMAGE_HASH_WAKE		(1024 * 1024)
/*
 * A write(2) of each 16 KB libcurl hands over took 0.11 s of system time
 * for 300 MB here, writes of 1 MB 0.05 s (dd); the copy into the buffer
 * costs less than the difference.
 */
#define IMAGE_PART_BUF		(1024 * 1024)

/* Hash [at, at + len) of h's part (mapped); 0, or an errno. */
static int
image_hasher_window(struct image_hasher *h, uint64_t at, size_t len)
{
	struct stat	 st;
	uint64_t	 base;
	size_t		 skip;
	void		*m;

	/*
	 * A page past the file's end would be SIGBUS, not an error: the
	 * part is ours alone (locked), and written before it is told of.
	 */
	if (fstat(h->fd, &st) == -1)
		return (errno);
	if ((uint64_t)st.st_size < at + len)
		return (EIO);
	base = at & ~(uint64_t)(h->page - 1);
	skip = at - base;
	m = mmap(NULL, skip + len, PROT_READ, MAP_SHARED | MAP_POPULATE,
	    h->fd, (off_t)base);
	if (m == MAP_FAILED)
		return (errno);
	if (EVP_DigestUpdate(h->s256, (char *)m + skip, len) != 1 ||
	    (h->use512 && EVP_DigestUpdate(h->s512, (char *)m + skip,
	    len) != 1)) {
		munmap(m, skip + len);
		return (EIO);
	}
	munmap(m, skip + len);
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
			want = to - at > IMAGE_HASH_CHUNK ? IMAGE_HASH_CHUNK :
			    to - at;
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
	h->page = sysconf(_SC_PAGESIZE);
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

/* What is gathered, onto the part; -1 with errno (h->written: how far). */
int
image_hasher_flush(struct image_hasher *h)
{
	size_t	off = 0;
	ssize_t	w;

	if (h->blen == 0)
		return (0);
	while (off < h->blen) {
		if ((w = write(h->fd, h->buf + off, h->blen - off)) == -1) {
			if (errno == EINTR)
				continue;
			/* What is left stays, for a try later: no repeat. */
			memmove(h->buf, h->buf + off, h->blen - off);
			h->blen -= off;
			return (-1);
		}
		off += w;
		h->written += w;
	}
	h->blen = 0;
	image_hasher_more(h, h->written);
	return (0);
}

/* n bytes more of the part, gathered; -1 with errno, as flush. */
int
image_hasher_write(struct image_hasher *h, const void *data, size_t n)
{
	const char	*d = data;
	size_t		 take;

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
	h->buf = NULL;
	EVP_MD_CTX_free(h->s256);
	EVP_MD_CTX_free(h->s512);
	h->s256 = h->s512 = NULL;
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	h->inited = 0;
}
