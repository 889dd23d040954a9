/*
 * Pulling one image: libcurl's multi-socket API on the caller's libev
 * loop (an ev_io per socket curl names, one ev_timer for its timeouts,
 * never a blocking wait). First the lock (one puller per image, across
 * processes), then the digest to check against (pinned, or from a
 * SHA256SUMS/SHA512SUMS beside the URL), then the file itself into
 * images_dir/.partial, hashed as it arrives, resumed with Range after a
 * dropped connection or a qsup that was interrupted, and renamed into
 * place only once whole and verified. The image is capped (image_room:
 * image_max_size, the disk's room): a larger Content-Length is refused
 * before its body, a body going past the cap is stopped. The part is kept
 * for the next pull after an interruption, a stall or a connection that
 * kept dropping; any other failure removes it. The lock goes at the end
 * of every pull, and .partial with it when it is empty.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "image_int.h"

#define IMAGE_PAUSE_FLUSH	0.2	/* s without data: the gathered to the part */
#define IMAGE_LOCK_RETRY_S	0.2
#define IMAGE_LOCK_TRIES	100	/* races with a pull ending */
#define IMAGE_BUFFER		(512 * 1024)
#define IMAGE_WAIT_MAX		60	/* seconds a 429/503 is waited out */
#define IMAGE_WAITS		2	/* 429/503s waited out per file */

enum image_phase {
	IMAGE_PH_LOCK,
	IMAGE_PH_SUMS,
	IMAGE_PH_DATA
};

struct image_url_pull {
	struct ev_loop		*loop;
	struct image_req	 req;	/* its strings the four below */
	char			*url, *sums_url, *pin, *dir;
	struct image_paths	 ip;
	char			*url_name;	/* the URL's last component */
	image_url_cb		 cb;
	void			*arg;
	char			*early;		/* a cause before any request */

	enum image_phase	 phase;
	int			 lock_fd;
	int			 locked;	/* lock_fd's flock is ours */
	int			 lock_said;
	ev_timer		 lock_timer;

	CURLM			*multi;
	CURL			*easy;
	struct image_curl_loop	 cl;		/* curl's sockets and timer */
	ev_timer		 stall_timer;	/* ours: no byte for stall s */
	double			 last;		/* when a byte last came */
	char			 errbuf[CURL_ERROR_SIZE];
	long			 stall;		/* seconds */

	int			 sums_try;
	int			 headed;	/* the image asked for, HEAD */
	char			*sums_cur;
	struct buf		 sums;
	char			*tried;		/* what was looked at */
	char			*want;		/* hex: 64 or 128 digits */
	char			*checked;

	int			 fd;		/* the partial */
	uint64_t		 have, total, asked;
	int			 retries;
	int			 restart;	/* the server ignored Range */
	int			 body;		/* its status looked at */
	int			 got_cr, got_len;
	uint64_t		 cr_start, cr_total;
	uint64_t		 unsat_total;	/* a 416's Content-Range */
	long			 hcode;		/* the response's status */
	uint64_t		 hlen;		/* its Content-Length */
	char			*retry_after;	/* its Retry-After */
	int			 waits;		/* 429/503s waited out */
	ev_timer		 wait;
	uint64_t		 cap;		/* the most bytes it may have */
	char			*cap_why;	/* what cap is, for messages */
	char			*werr;
	struct image_hasher	 hasher;
	struct image_progress_state *ps;

	char			*name, *header;	/* req's, copied */
	struct curl_slist	*hdrs;
};

static void	image_pull_check(struct image_url_pull *);
static void	image_pull_check_cb(void *);
static void	image_pull_next_sums(struct image_url_pull *);
static void	image_pull_data(struct image_url_pull *);

/* libcurl once per process. */
static void
image_curl_init(void)
{
	static int	done;

	if (!done) {
		curl_global_init(CURL_GLOBAL_DEFAULT);
		done = 1;
	}
}

/*
 * Let the image's lock go: its file unlinked while still held (a waiter
 * that opened it then finds the path gone or another file, and opens it
 * again), then closed; then .partial, if that was its last file.
 */
static void
image_pull_unlock(struct image_url_pull *p)
{
	char	*part;

	if (p->lock_fd == -1)
		return;
	if (p->locked)
		(void)unlink(p->ip.lock);
	close(p->lock_fd);
	p->lock_fd = -1;
	p->locked = 0;
	xasprintf(&part, "%s/%s", p->ip.dir, IMAGE_PARTIAL_DIR);
	(void)rmdir(part);	/* not empty: another image's lock or part */
	free(part);
}

/* Stop and free everything but p itself; the lock goes last. */
static void
image_pull_stop(struct image_url_pull *p)
{
	if (p->easy != NULL) {
		curl_multi_remove_handle(p->multi, p->easy);
		curl_easy_cleanup(p->easy);
		p->easy = NULL;
	}
	if (p->multi != NULL) {
		curl_multi_cleanup(p->multi);
		p->multi = NULL;
	}
	image_curl_loop_stop(&p->cl);
	ev_timer_stop(p->loop, &p->stall_timer);
	ev_timer_stop(p->loop, &p->lock_timer);
	ev_timer_stop(p->loop, &p->wait);
	if (p->fd != -1)	/* a part kept has what was gathered */
		(void)image_hasher_flush(&p->hasher);
	image_hasher_stop(&p->hasher);
	if (p->fd != -1) {
		close(p->fd);
		p->fd = -1;
	}
	image_pull_unlock(p);
	image_progress_end(p->ps, 0);
	p->ps = NULL;
}

static void
image_pull_free(struct image_url_pull *p)
{
	image_pull_stop(p);
	image_hasher_free(&p->hasher);
	free(p->url);
	free(p->sums_url);
	free(p->pin);
	free(p->dir);
	image_paths_free(&p->ip);
	free(p->url_name);
	free(p->early);
	free(p->sums_cur);
	buf_free(&p->sums);
	free(p->tried);
	free(p->want);
	free(p->checked);
	free(p->werr);
	free(p->cap_why);
	free(p->retry_after);
	free(p->name);
	free(p->header);
	curl_slist_free_all(p->hdrs);
	free(p);
}

/* The end: cb with the path or the cause, then p is gone. */
static void
image_pull_finish(struct image_url_pull *p, const char *path, const char *cause)
{
	if (path != NULL && p->ps != NULL) {
		image_progress_end(p->ps, 1);
		p->ps = NULL;
	}
	image_pull_stop(p);
	p->cb(path, cause, p->arg);
	image_pull_free(p);
}

/* The end of a pull that failed: its part kept or removed, then cb. */
static void
image_pull_failed(struct image_url_pull *p, int keep, const char *cause)
{
	if (p->phase == IMAGE_PH_DATA && !keep) {
		unlink(p->ip.partial);
		unlink(p->ip.partial_url);
	}
	image_pull_finish(p, NULL, cause);
}

/* A failure: the part removed (its bytes are wrong, or too many). */
static void
image_pull_fail(struct image_url_pull *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
image_pull_fail(struct image_url_pull *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*cause;

	va_start(ap, fmt);
	xvasprintf(&cause, fmt, ap);
	va_end(ap);
	image_pull_failed(p, 0, cause);
	free(cause);
}

/*
 * A failure of the connection (a stall, drops past the retries): what
 * came is what the server sent, so the part stays for the next pull to
 * resume, as after an interruption.
 */
static void
image_pull_give_up(struct image_url_pull *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void
image_pull_give_up(struct image_url_pull *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*cause, *kept;

	va_start(ap, fmt);
	xvasprintf(&cause, fmt, ap);
	va_end(ap);
	/* What was gathered is kept too (a stall ends no transfer). */
	if (p->phase == IMAGE_PH_DATA && p->fd != -1)
		(void)image_hasher_flush(&p->hasher);
	if (p->phase == IMAGE_PH_DATA && p->hasher.written > 0) {
		xasprintf(&kept, "%s; the part (%llu bytes) is kept: the next "
		    "pull resumes it", cause,
		    (unsigned long long)p->hasher.written);
		image_pull_failed(p, 1, kept);
		free(kept);
	} else
		image_pull_failed(p, 0, cause);
	free(cause);
}

/* A new transfer of url on p's multi handle; its callbacks set by caller. */
static CURL *
image_pull_easy(struct image_url_pull *p, const char *url)
{
	CURL		*e;
	const char	*ca;

	if ((e = curl_easy_init()) == NULL)
		fatalx("curl_easy_init failed");
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(e, CURLOPT_MAXREDIRS, (long)IMAGE_REDIRS_MAX);
	curl_easy_setopt(e, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_USERAGENT, "qsup");
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, p->errbuf);
	curl_easy_setopt(e, CURLOPT_BUFFERSIZE, (long)IMAGE_BUFFER);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, p->stall);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, p->stall);
	/* libcurl reads neither itself: what curl(1) and OpenSSL honour. */
	if ((ca = getenv("CURL_CA_BUNDLE")) != NULL && *ca != '\0')
		curl_easy_setopt(e, CURLOPT_CAINFO, ca);
	else if ((ca = getenv("SSL_CERT_FILE")) != NULL && *ca != '\0')
		curl_easy_setopt(e, CURLOPT_CAINFO, ca);
	if ((ca = getenv("SSL_CERT_DIR")) != NULL && *ca != '\0')
		curl_easy_setopt(e, CURLOPT_CAPATH, ca);
	if (p->hdrs != NULL)
		curl_easy_setopt(e, CURLOPT_HTTPHEADER, p->hdrs);
	curl_easy_setopt(e, CURLOPT_PRIVATE, p);
	p->errbuf[0] = '\0';
	return (e);
}

/* Start e as p's one transfer. */
static void
image_pull_add(struct image_url_pull *p, CURL *e)
{
	if (p->easy != NULL) {
		curl_multi_remove_handle(p->multi, p->easy);
		curl_easy_cleanup(p->easy);
	}
	p->easy = e;
	p->last = ev_now(p->loop);
	curl_multi_add_handle(p->multi, e);
	if (!ev_is_active(&p->stall_timer)) {
		ev_timer_set(&p->stall_timer, 0.25, 0.25);
		ev_timer_start(p->loop, &p->stall_timer);
	}
}

/*
 * No byte for the stall timeout: the server stalls, give up. (curl's
 * own low-speed check averages over seconds of the past: not bounded.)
 * A pause in the data, shorter: what was gathered goes onto the part,
 * where a build extracting the layer as it downloads reads it (an error
 * leaves it gathered, for the next write to report).
 */
static void
image_stall_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_url_pull	*p = w->data;

	(void)revents;
	if (p->easy != NULL && p->hasher.blen > 0 &&
	    ev_now(loop) - p->last >= IMAGE_PAUSE_FLUSH)
		(void)image_hasher_flush(&p->hasher);
	if (p->easy == NULL || ev_now(loop) - p->last < p->stall)
		return;
	if (p->phase == IMAGE_PH_DATA)
		image_pull_give_up(p, "%s: stalled: no data for %ld s (%llu of "
		    "%llu bytes there)", p->req.url, p->stall,
		    (unsigned long long)p->have, (unsigned long long)p->total);
	else
		image_pull_fail(p, "%s: stalled: no data for %ld s",
		    p->sums_cur != NULL && !p->headed ? p->sums_cur :
		    p->req.url, p->stall);
}

/* What curl says of a failed transfer: its buffer, else its code's text. */
static const char *
image_curl_error(struct image_url_pull *p, CURLcode rc)
{
	return (p->errbuf[0] != '\0' ? p->errbuf : curl_easy_strerror(rc));
}

/* The checksum file's body, bounded: it is the network's. */
static size_t
image_sums_write_cb(char *data, size_t size, size_t n, void *arg)
{
	struct image_url_pull	*p = arg;

	p->last = ev_now(p->loop);
	if (p->sums.len + n > IMAGE_SUMS_MAX) {
		free(p->werr);
		xasprintf(&p->werr, "%s: over %d bytes: not a checksum file",
		    p->sums_cur, IMAGE_SUMS_MAX);
		return (0);
	}
	buf_add(&p->sums, data, size * n);
	return (size * n);
}

/* A note of what was looked at, for the error if nothing was found. */
static void
image_pull_tried(struct image_url_pull *p, const char *what)
{
	char	*s;

	xasprintf(&s, "%s%s%s", p->tried != NULL ? p->tried : "",
	    p->tried != NULL ? "; " : "", what);
	free(p->tried);
	p->tried = s;
}

/* No digest anywhere: refused, unless the request takes it unverified. */
static void
image_pull_no_digest(struct image_url_pull *p)
{
	CURL	*e;

	if (!p->req.unverified_ok && !p->headed) {
		/* Is the image there at all? A 404 should say so. */
		p->headed = 1;
		e = image_pull_easy(p, p->req.url);
		curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
		image_pull_add(p, e);
		return;
	}
	if (!p->req.unverified_ok) {
		image_pull_fail(p, "%s: no digest to check it against (%s); "
		    "pin one with image_sha256, or set image_unverified = true "
		    "to use it unchecked", p->req.url, p->tried);
		return;
	}
	log_warnx("%s: no digest to check it against (%s): using it "
	    "unverified, as the profile allows", p->req.url, p->tried);
	p->checked = xstrdup("unverified");
	image_pull_data(p);
}

/* The checksum file to look at next, or the end of looking. */
static void
image_pull_next_sums(struct image_url_pull *p)
{
	static const char *const names[] = { "SHA256SUMS", "SHA512SUMS" };
	CURL	*e;

	free(p->sums_cur);
	p->sums_cur = NULL;
	if (p->req.sums_url != NULL && p->sums_try == 0)
		p->sums_cur = xstrdup(p->req.sums_url);
	else if (p->req.sums_url == NULL && p->sums_try < 2)
		p->sums_cur = image_sums_beside(p->req.url, names[p->sums_try]);
	p->sums_try++;
	if (p->sums_cur == NULL) {
		image_pull_no_digest(p);
		return;
	}
	log_debug("looking for %s's digest in %s", p->url_name, p->sums_cur);
	buf_consume(&p->sums, p->sums.len);
	e = image_pull_easy(p, p->sums_cur);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, image_sums_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, p);
	image_pull_add(p, e);
}

/* A checksum file's transfer ended with rc. */
static void
image_pull_sums_done(struct image_url_pull *p, CURLcode rc)
{
	char	*what;
	long	 code = 0;

	curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
	if (p->werr != NULL) {
		image_pull_fail(p, "%s", p->werr);
		return;
	}
	if (p->headed) {
		if (rc == CURLE_HTTP_RETURNED_ERROR)
			image_pull_fail(p, "%s: HTTP %ld from the server",
			    p->req.url, code);
		else if (rc != CURLE_OK)
			image_pull_fail(p, "%s: %s", p->req.url,
			    image_curl_error(p, rc));
		else
			image_pull_no_digest(p);
		return;
	}
	if (rc == CURLE_HTTP_RETURNED_ERROR && code >= 400 && code < 500) {
		xasprintf(&what, "%s: HTTP %ld", p->sums_cur, code);
		image_pull_tried(p, what);
		free(what);
		image_pull_next_sums(p);
		return;
	}
	if (rc != CURLE_OK) {
		image_pull_fail(p, "%s: %s", p->sums_cur,
		    image_curl_error(p, rc));
		return;
	}
	if ((p->want = image_sums_find(p->sums.data, p->sums.len,
	    p->url_name)) == NULL) {
		xasprintf(&what, "%s: no line for %s", p->sums_cur,
		    p->url_name);
		image_pull_tried(p, what);
		free(what);
		image_pull_next_sums(p);
		return;
	}
	xasprintf(&p->checked, "%s %s", strlen(p->want) == 128 ? "SHA-512" :
	    "SHA-256", p->sums_cur);
	image_pull_data(p);
}

/* Is the digest to check a SHA-512 (Debian's SHA512SUMS)? */
static int
image_pull_is512(struct image_url_pull *p)
{
	return (p->want != NULL && strlen(p->want) == 128);
}

/* Empty the part: the server will send it all. */
static int
image_pull_truncate(struct image_url_pull *p)
{
	image_hasher_stop(&p->hasher);
	if (ftruncate(p->fd, 0) == -1 || lseek(p->fd, 0, SEEK_SET) == -1 ||
	    image_hasher_start(&p->hasher, p->fd, image_pull_is512(p), 0) ==
	    -1) {
		free(p->werr);
		xasprintf(&p->werr, "%s: %s", p->ip.partial, strerror(errno));
		return (-1);
	}
	p->have = 0;
	/* Told: what was read of the part behind the writer (a pull's
	 * build extracting it) is not the part any more. */
	if (p->req.bytes_cb != NULL)
		p->req.bytes_cb(p->req.bytes_arg, 0, p->total);
	return (0);
}

/*
 * The end of a response's headers: an image larger than its cap is
 * refused here, before a byte of its body is written.
 */
static int
image_pull_headers_end(struct image_url_pull *p)
{
	uint64_t	 size;
	const char	*from;

	if (p->hcode == 200 && p->got_len) {
		size = p->hlen;
		from = "Content-Length";
	} else if (p->hcode == 206 && p->got_cr) {
		size = p->cr_total;
		from = "Content-Range";
	} else
		return (0);
	if (size <= p->cap)
		return (0);
	free(p->werr);
	xasprintf(&p->werr, "%s: its size, %llu bytes (%s), is more than %s: "
	    "not downloaded", p->req.url, (unsigned long long)size, from,
	    p->cap_why);
	return (-1);
}

/* A response's header line: its status, Content-Length, Content-Range. */
static size_t
image_header_cb(char *data, size_t size, size_t n, void *arg)
{
	struct image_url_pull	*p = arg;
	unsigned long long	 a, b, t;
	char			 line[256];

	n *= size;
	p->last = ev_now(p->loop);
	if (n >= 5 && n < sizeof line && strncmp(data, "HTTP/", 5) == 0) {
		memcpy(line, data, n);
		line[n] = '\0';
		p->got_cr = p->got_len = 0;
		p->unsat_total = 0;
		free(p->retry_after);
		p->retry_after = NULL;
		if (sscanf(line, "HTTP/%*s %ld", &p->hcode) != 1)
			p->hcode = 0;
	} else if (n > 12 && n < sizeof line &&
	    strncasecmp(data, "Retry-After:", 12) == 0) {
		memcpy(line, data + 12, n - 12);
		line[n - 12] = '\0';
		free(p->retry_after);
		p->retry_after = xstrdup(line + strspn(line, " \t"));
		/* The network's, into messages: printable or cut there. */
		for (a = 0; p->retry_after[a] > ' ' &&
		    p->retry_after[a] < 0x7f; a++)
			/* nothing */;
		p->retry_after[a] = '\0';
	} else if (n > 15 && n < sizeof line &&
	    strncasecmp(data, "Content-Length:", 15) == 0) {
		memcpy(line, data + 15, n - 15);
		line[n - 15] = '\0';
		if (sscanf(line, " %llu", &t) == 1) {
			p->got_len = 1;
			p->hlen = t;
		}
	} else if ((n == 2 && data[0] == '\r' && data[1] == '\n') ||
	    (n == 1 && data[0] == '\n')) {
		if (image_pull_headers_end(p) == -1)
			return (0);
	} else if (n > 14 && n < sizeof line &&
	    strncasecmp(data, "Content-Range:", 14) == 0) {
		memcpy(line, data + 14, n - 14);
		line[n - 14] = '\0';
		if (sscanf(line, " bytes %llu-%llu/%llu", &a, &b, &t) == 3 &&
		    a <= b && b < t) {
			p->got_cr = 1;
			p->cr_start = a;
			p->cr_total = t;
		} else if (sscanf(line, " bytes */%llu", &t) == 1)
			p->unsat_total = t;
	}
	return (n);
}

/*
 * The first bytes of a response: is it what was asked? Asked from an
 * offset, a 206 whose Content-Range starts there goes on; a 200 starts
 * over from 0; anything else is a restart without Range.
 */
static int
image_pull_body_start(struct image_url_pull *p)
{
	curl_off_t	len = -1;
	long		code = 0;

	p->body = 1;
	curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(p->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
	if (code >= 400)
		return (-1);	/* an error's body is not the image */
	if (p->asked > 0 && code == 206) {
		if (!p->got_cr || p->cr_start != p->asked) {
			log_info("%s: the server's Content-Range is not what "
			    "was asked (from %llu): starting over", p->req.url,
			    (unsigned long long)p->asked);
			p->restart = 1;
			return (-1);
		}
		p->total = p->cr_total;
		return (0);
	}
	if (p->asked > 0) {
		log_info("%s: the server sent it whole (HTTP %ld), not from "
		    "%llu: starting over", p->req.url, code,
		    (unsigned long long)p->asked);
		if (image_pull_truncate(p) == -1)
			return (-1);
	}
	p->total = len >= 0 ? (uint64_t)len : 0;
	return (0);
}

/* The part could not be written (errno): why, in p->werr. */
static void
image_pull_write_err(struct image_url_pull *p)
{
	free(p->werr);
	if (errno == ENOSPC)
		xasprintf(&p->werr, "%s: no space left in %s (%llu of %llu "
		    "bytes written): the part is removed", p->req.url,
		    p->ip.dir, (unsigned long long)p->hasher.written,
		    (unsigned long long)p->total);
	else
		xasprintf(&p->werr, "%s: %s", p->ip.partial, strerror(errno));
}

/* The image's bytes: onto the part (gathered), into the hashes. */
static size_t
image_data_write_cb(char *data, size_t size, size_t n, void *arg)
{
	struct image_url_pull	*p = arg;

	n *= size;
	p->last = ev_now(p->loop);
	if (!p->body && image_pull_body_start(p) == -1)
		return (0);
	if (p->have + n > p->cap || (p->total != 0 && p->have + n >
	    p->total)) {
		free(p->werr);
		if (p->have + n > p->cap)
			xasprintf(&p->werr, "%s: the body goes past %s: "
			    "stopped; the part is removed", p->req.url,
			    p->cap_why);
		else
			xasprintf(&p->werr, "%s: the body goes past the %llu "
			    "bytes it announced: stopped; the part is removed",
			    p->req.url, (unsigned long long)p->total);
		return (0);
	}
	/*
	 * A registry's blob (bytes_cb: its pull's progress, and a build that
	 * may extract the layer as it downloads, reading the part behind
	 * us): each piece onto the part at once, so what the build is told
	 * is there. Other pulls gather it into 1 MB writes.
	 */
	if (image_hasher_write(&p->hasher, data, n) == -1 ||
	    (p->req.bytes_cb != NULL && image_hasher_flush(&p->hasher) == -1)) {
		image_pull_write_err(p);
		return (0);
	}
	p->have += n;
	image_progress_set(p->ps, p->have, p->total);
	if (p->req.bytes_cb != NULL)
		p->req.bytes_cb(p->req.bytes_arg, p->have, p->total);
	return (n);
}

/* One request for the image, from what the part already has. */
static void
image_pull_request(struct image_url_pull *p)
{
	CURL	*e;
	char	 range[32];

	e = image_pull_easy(p, p->req.url);
	/* The status is ours to judge: a 416 may mean it is all there. */
	curl_easy_setopt(e, CURLOPT_FAILONERROR, 0L);
	p->asked = p->have;
	p->body = 0;
	p->got_cr = p->got_len = 0;
	p->unsat_total = 0;
	p->restart = 0;
	free(p->cap_why);
	p->cap = image_room(&p->req, p->ip.dir, p->have, &p->cap_why);
	/* Not CURLOPT_RESUME_FROM: its checks fail where a restart does. */
	if (p->have > 0) {
		snprintf(range, sizeof range, "%llu-",
		    (unsigned long long)p->have);
		curl_easy_setopt(e, CURLOPT_RANGE, range);
	}
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, image_data_write_cb);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, p);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, image_header_cb);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, p);
	image_pull_add(p, e);
}

/*
 * Open the part: the one an interrupted qsup left, if it is of this URL
 * (resumed; the hasher reads it again from its start), else a new one.
 * Append-only from here: the writer's offset is its end.
 */
static int
image_pull_open_part(struct image_url_pull *p, char **cause)
{
	char		*url;
	off_t		 end;

	url = util_read_file(p->ip.partial_url, NULL, 64 * 1024);
	if (url != NULL && strcmp(url, p->req.url) == 0 &&
	    (p->fd = open(p->ip.partial, O_RDWR | O_CLOEXEC)) != -1) {
		if ((end = lseek(p->fd, 0, SEEK_END)) >= 0) {
			free(url);
			p->have = end;
			if (p->have > 0)
				log_info("%s: resuming the part left at %llu "
				    "bytes", p->url_name,
				    (unsigned long long)p->have);
			goto hash;
		}
		close(p->fd);
	}
	free(url);
	p->have = 0;
	if (util_write_file(p->ip.partial_url, p->req.url) == -1 ||
	    (p->fd = open(p->ip.partial, O_RDWR | O_CREAT | O_TRUNC |
	    O_CLOEXEC, 0600)) == -1) {
		xasprintf(cause, "%s: %s", p->ip.partial, strerror(errno));
		return (-1);
	}
hash:
	if (image_hasher_start(&p->hasher, p->fd, image_pull_is512(p),
	    p->have) == -1) {
		xasprintf(cause, "a thread to hash %s: %s", p->ip.name,
		    strerror(errno));
		return (-1);
	}
	return (0);
}

/* The digest is known (or waived): the image itself. */
static void
image_pull_data(struct image_url_pull *p)
{
	char	*cause;

	p->phase = IMAGE_PH_DATA;
	if (image_pull_open_part(p, &cause) == -1) {
		image_pull_fail(p, "%s", cause);
		free(cause);
		return;
	}
	p->ps = image_progress_new(p->req.progress, p->ip.name, p->have);
	image_pull_request(p);
}

/*
 * Hashed whole (the hasher's cb, on the loop): check the digest, write
 * the .meta (image.c: the sync may wait), rename the part into place.
 */
static void
image_pull_hashed(void *arg)
{
	struct image_url_pull	*p = arg;
	struct image_info	 ii;
	unsigned char		 d[32], d5[64];
	char			*got256, *got, *cause = NULL;
	int			 is512 = image_pull_is512(p), saved;

	if (image_hasher_result(&p->hasher, d, d5) == -1) {
		image_pull_fail(p, "%s: reading it back: %s", p->ip.partial,
		    strerror(errno));
		return;
	}
	got256 = token_hex_of(d, 32);
	got = is512 ? token_hex_of(d5, 64) : xstrdup(got256);
	if (p->want != NULL && strcasecmp(p->want, got) != 0) {
		image_pull_fail(p, "%s: %s mismatch: expected %s (%s), got %s; "
		    "the download is removed", p->req.url, is512 ? "SHA-512" :
		    "SHA-256", p->want, p->checked, got);
		free(got);
		free(got256);
		return;
	}
	free(got);
	memset(&ii, 0, sizeof ii);
	ii.url = p->url;
	ii.sha256 = got256;
	ii.checked = p->checked;
	ii.size = p->have;
	ii.pulled = time(NULL);
	ii.unsynced = image_boot_id() != NULL;
	if ((!ii.unsynced && fdatasync(p->fd) == -1) ||
	    image_meta_write(p->ip.meta, &ii, &cause) == -1) {
		if (errno != 0 && cause == NULL)
			xasprintf(&cause, "%s: %s", p->ip.partial,
			    strerror(errno));
		image_pull_fail(p, "%s", cause);
		free(cause);
		free(got256);
		return;
	}
	free(got256);
	if (rename(p->ip.partial, p->ip.path) == -1) {
		saved = errno;
		unlink(p->ip.meta);	/* it would vouch for no image */
		image_pull_fail(p, "%s: %s", p->ip.path, strerror(saved));
		return;
	}
	unlink(p->ip.partial_url);
	log_debug("%s: %llu bytes, %s", p->ip.path,
	    (unsigned long long)p->have, p->checked);
	image_pull_finish(p, p->ip.path, NULL);
}

/* Whole on disk: done with curl; the digest, once hashed. */
static void
image_pull_complete(struct image_url_pull *p)
{
	curl_multi_remove_handle(p->multi, p->easy);
	curl_easy_cleanup(p->easy);
	p->easy = NULL;
	image_hasher_finish(&p->hasher);
}

/* Is rc a connection that dropped, worth resuming? */
static int
image_curl_dropped(CURLcode rc)
{
	switch (rc) {
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return (1);
	default:
		return (0);
	}
}

/* A 429's or 503's wait is over: the same request, from what is there. */
static void
image_pull_wait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_url_pull	*p = w->data;

	(void)loop;
	(void)revents;
	image_pull_request(p);
}

/*
 * A 429 (the server's rate limit) or a 503 that says when to come back:
 * waited out, at most IMAGE_WAITS times of IMAGE_WAIT_MAX s each, as the
 * registry's manifests are. 1 when waiting; 0 with the reason in *why.
 */
static int
image_pull_wait(struct image_url_pull *p, long code, char **why)
{
	long	wait;

	*why = NULL;
	if (code != 429 && (code != 503 || p->retry_after == NULL))
		return (0);
	if (p->waits >= IMAGE_WAITS) {
		xasprintf(why, "still after %d waits", p->waits);
		return (0);
	}
	if ((wait = image_manifest_retry_after(p->retry_after,
	    IMAGE_WAIT_MAX)) < 0) {
		xasprintf(why, "Retry-After %s s is more than the %d s qsup "
		    "waits", p->retry_after, IMAGE_WAIT_MAX);
		return (0);
	}
	p->waits++;
	log_info("%s: HTTP %ld: waiting %ld s (Retry-After) to ask it again",
	    p->req.url, code, wait);
	/* No transfer while waiting: the stall timer looks at none. */
	curl_multi_remove_handle(p->multi, p->easy);
	curl_easy_cleanup(p->easy);
	p->easy = NULL;
	ev_timer_set(&p->wait, (double)wait, 0);
	ev_timer_start(p->loop, &p->wait);
	return (1);
}

/* The image's transfer ended with rc: done, resumed, or failed. */
static void
image_pull_data_done(struct image_url_pull *p, CURLcode rc)
{
	char	*why;
	long	 code = 0;

	curl_easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
	/* What was gathered goes onto the part: a resume asks from there. */
	if (p->werr == NULL && image_hasher_flush(&p->hasher) == -1)
		image_pull_write_err(p);
	if (p->werr != NULL) {
		image_pull_fail(p, "%s", p->werr);
		return;
	}
	/* Asked from its end: the part was whole already. */
	if (code == 416 && p->asked > 0 && p->unsat_total == p->asked) {
		p->total = p->have;
		image_pull_complete(p);
		return;
	}
	if (code < 400 && rc == CURLE_OK && p->total != 0 &&
	    p->have != p->total)
		rc = CURLE_PARTIAL_FILE;
	if (code < 400 && rc == CURLE_OK) {
		image_pull_complete(p);
		return;
	}
	if ((p->restart || (code == 416 && p->asked > 0)) &&
	    p->retries++ < IMAGE_RETRIES_MAX) {
		if (image_pull_truncate(p) == -1)
			image_pull_fail(p, "%s", p->werr);
		else
			image_pull_request(p);
		return;
	}
	if (image_pull_wait(p, code, &why))
		return;
	if (why != NULL) {
		image_pull_fail(p, "%s: HTTP %ld from the server (%s)",
		    p->req.url, code, why);
		free(why);
		return;
	}
	if (code >= 400) {
		image_pull_fail(p, "%s: HTTP %ld from the server", p->req.url,
		    code);
		return;
	}
	if (rc == CURLE_OPERATION_TIMEDOUT) {
		image_pull_give_up(p, "%s: stalled: no data for %ld s (%llu of "
		    "%llu bytes there)", p->req.url, p->stall,
		    (unsigned long long)p->have, (unsigned long long)p->total);
		return;
	}
	if (!image_curl_dropped(rc)) {
		image_pull_fail(p, "%s: %s (%llu of %llu bytes there)",
		    p->req.url, image_curl_error(p, rc),
		    (unsigned long long)p->have, (unsigned long long)p->total);
		return;
	}
	if (p->retries++ < IMAGE_RETRIES_MAX) {
		log_info("%s: the connection dropped at %llu bytes (%s): "
		    "resuming (%d of %d)", p->req.url,
		    (unsigned long long)p->have, image_curl_error(p, rc),
		    p->retries, IMAGE_RETRIES_MAX);
		image_pull_request(p);
		return;
	}
	image_pull_give_up(p, "%s: %s (%llu of %llu bytes there)", p->req.url,
	    image_curl_error(p, rc), (unsigned long long)p->have,
	    (unsigned long long)p->total);
}

/* What curl has finished, handled; p may be gone after. */
static void
image_pull_check(struct image_url_pull *p)
{
	CURLMsg	*m;
	int	 left;

	while (p->multi != NULL &&
	    (m = curl_multi_info_read(p->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE || m->easy_handle != p->easy)
			continue;
		if (p->phase == IMAGE_PH_SUMS)
			image_pull_sums_done(p, m->data.result);
		else
			image_pull_data_done(p, m->data.result);
		return;	/* a new transfer, or the end */
	}
}

/* image_curl_loop's check, after each of curl's actions. */
static void
image_pull_check_cb(void *arg)
{
	image_pull_check(arg);
}

/*
 * Open the lock's file, making .partial first: a pull that just ended
 * may have removed it, even between the two.
 */
static int
image_lock_open(struct image_url_pull *p, char **cause)
{
	char		*part;
	const char	*what = NULL;
	int		 tries;

	xasprintf(&part, "%s/%s", p->ip.dir, IMAGE_PARTIAL_DIR);
	for (tries = 0; tries < IMAGE_LOCK_TRIES && what == NULL; tries++) {
		if (mkdir(part, 0700) == -1 && errno != EEXIST)
			what = part;
		else if ((p->lock_fd = open(p->ip.lock, O_RDWR | O_CREAT |
		    O_NOFOLLOW | O_CLOEXEC, 0600)) != -1)
			break;
		else if (errno != ENOENT)
			what = p->ip.lock;
	}
	if (p->lock_fd == -1)
		xasprintf(cause, "%s: %s", what != NULL ? what : p->ip.lock,
		    strerror(errno));
	free(part);
	return (p->lock_fd == -1 ? -1 : 0);
}

/*
 * Take the image's lock without waiting: 1 taken, 0 held by another qsup
 * (try again later), -1 with *cause. Its holder unlinks the file before
 * letting go, so one taken must still be the file its path names; if it
 * is not, it is opened again.
 */
static int
image_lock_take(struct image_url_pull *p, char **cause)
{
	struct stat	 fst, pst;
	int		 tries;

	for (tries = 0; tries < IMAGE_LOCK_TRIES; tries++) {
		if (p->lock_fd == -1 && image_lock_open(p, cause) == -1)
			return (-1);
		if (flock(p->lock_fd, LOCK_EX | LOCK_NB) == -1) {
			if (errno == EWOULDBLOCK || errno == EINTR)
				return (0);
			xasprintf(cause, "%s: %s", p->ip.lock, strerror(errno));
			return (-1);
		}
		if (fstat(p->lock_fd, &fst) == 0 &&
		    stat(p->ip.lock, &pst) == 0 && fst.st_dev == pst.st_dev &&
		    fst.st_ino == pst.st_ino) {
			p->locked = 1;
			return (1);
		}
		close(p->lock_fd);
		p->lock_fd = -1;
	}
	xasprintf(cause, "%s: taken from under us %d times", p->ip.lock,
	    IMAGE_LOCK_TRIES);
	return (-1);
}

/*
 * Take the image's lock (another qsup pulling the same image holds it:
 * try again on a timer), then pull unless that other one has put it in
 * place meanwhile.
 */
static void
image_lock_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct image_url_pull	*p = w->data;
	struct image_paths	 ip;
	char			*path, *cause;
	int			 rc;

	(void)loop;
	(void)revents;
	if (p->early != NULL) {
		image_pull_finish(p, NULL, p->early);
		return;
	}
	if ((rc = image_lock_take(p, &cause)) == -1) {
		image_pull_fail(p, "%s", cause);
		free(cause);
		return;
	}
	if (rc == 0) {
		if (!p->lock_said++)
			log_info("%s: another qsup is pulling it; waiting",
			    p->ip.name);
		ev_timer_set(&p->lock_timer, IMAGE_LOCK_RETRY_S, 0);
		ev_timer_start(p->loop, &p->lock_timer);
		return;
	}
	if ((path = image_url_cached(&p->req)) != NULL) {
		image_pull_finish(p, path, NULL);
		free(path);
		return;
	}
	/* The one it waited for may be another URL's of the same name. */
	if (image_paths_make(&p->req, &ip, &cause) == -1) {
		image_pull_fail(p, "%s", cause);
		free(cause);
		return;
	}
	if (strcmp(ip.name, p->ip.name) != 0) {
		image_pull_unlock(p);
		image_paths_free(&p->ip);
		p->ip = ip;
		ev_timer_set(&p->lock_timer, 0, 0);
		ev_timer_start(p->loop, &p->lock_timer);
		return;
	}
	image_paths_free(&ip);
	if ((p->multi = curl_multi_init()) == NULL)
		fatalx("curl_multi_init failed");
	image_curl_loop_attach(&p->cl, p->multi);
	if (p->req.sha256 != NULL) {
		p->want = xstrdup(p->req.sha256);
		p->checked = xstrdup(p->req.name != NULL ? "SHA-256 of the "
		    "OCI manifest" : "SHA-256 pinned by the profile");
		image_pull_data(p);
		return;
	}
	p->phase = IMAGE_PH_SUMS;
	image_pull_next_sums(p);
}

/*
 * Pull req on loop: cb once, later (never from here), with the image's
 * path or the cause. The request's strings are copied.
 */
struct image_url_pull *
image_url_pull_start(struct ev_loop *loop, const struct image_req *req,
    image_url_cb cb, void *arg)
{
	struct image_url_pull	*p;

	image_curl_init();
	p = xcalloc(1, sizeof *p);
	p->loop = loop;
	p->req = *req;
	p->req.url = p->url = req->url != NULL ? xstrdup(req->url) : NULL;
	p->req.sums_url = p->sums_url = req->sums_url != NULL ?
	    xstrdup(req->sums_url) : NULL;
	p->req.sha256 = p->pin = req->sha256 != NULL ? xstrdup(req->sha256) :
	    NULL;
	p->req.dir = p->dir = req->dir != NULL ? xstrdup(req->dir) : NULL;
	p->cb = cb;
	p->arg = arg;
	p->fd = p->lock_fd = -1;
	p->stall = (long)(image_stall_timeout(req) + 0.999);
	image_hasher_init(&p->hasher, loop, image_pull_hashed, p);
	image_curl_loop_init(&p->cl, loop, image_pull_check_cb, p);
	ev_init(&p->stall_timer, image_stall_cb);
	p->stall_timer.data = p;
	ev_timer_init(&p->lock_timer, image_lock_cb, 0, 0);
	p->lock_timer.data = p;
	ev_init(&p->wait, image_pull_wait_cb);
	p->wait.data = p;
	p->req.name = p->name = req->name != NULL ? xstrdup(req->name) : NULL;
	p->req.header = p->header = req->header != NULL ?
	    xstrdup(req->header) : NULL;
	if (p->header != NULL)
		p->hdrs = curl_slist_append(NULL, p->header);
	p->req.out = NULL;
	if (req->url == NULL || (strncasecmp(req->url, "http://", 7) != 0 &&
	    strncasecmp(req->url, "https://", 8) != 0))
		xasprintf(&p->early, "%s: not an http(s) URL",
		    req->url != NULL ? req->url : "(no URL)");
	else if (req->sha256 != NULL && (strlen(req->sha256) != 64 ||
	    !image_is_digest(req->sha256, 64)))
		xasprintf(&p->early, "%s: the pinned SHA-256 \"%s\" is not 64 "
		    "hex digits", req->url, req->sha256);
	else if (image_paths_make(req, &p->ip, &p->early) == 0)
		p->url_name = image_url_name(req->url);
	ev_timer_start(loop, &p->lock_timer);
	return (p);
}

/*
 * Stop pulling (qsup was interrupted): no cb, and the part stays in
 * images_dir/.partial for the next pull to resume.
 */
void
image_url_pull_cancel(struct image_url_pull *p)
{
	if (p != NULL)
		image_pull_free(p);
}
