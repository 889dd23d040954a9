/*
 * libcurl, libarchive and OpenSSL's libcrypto, loaded when first called
 * rather than when qsup starts. libcurl and libarchive bring 41 of the 56
 * libraries qsup would link (GnuTLS, Kerberos, LDAP, libxml2, ICU,
 * libstdc++...), and the dynamic linker mapping and relocating them took
 * 4.5 ms of every qsup command (6.9 ms against 2.4 for an empty program
 * linked as qsup is, with and without them; docs/speed.md); libcrypto,
 * used for nothing but a pull's digests, 0.75 ms more (2.3 ms against
 * 1.5). A warm `qsup run`, which never downloads nor reads a tarball,
 * paid all of it.
 *
 * Every function of theirs qsup calls is defined here, under its own name
 * and with the prototype of the library's header, and calls the library's
 * own, looked up in the library the first time. The library is loaded
 * once, with RTLD_NOW so that a missing symbol shows at once; one it
 * cannot load ends qsup with the loader's words (as the dynamic linker
 * would have at the start). `qsup serve`, which must not die with its
 * sandboxes, loads them all as it starts (lazylib_load_all), and `qsup
 * doctor` reports whether they load.
 *
 * A function this file lacks fails the link, since none of the three is
 * linked: a new call is added here or it does not build.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#define CURL_DISABLE_TYPECHECK	/* the real functions, not its macros */
#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <openssl/evp.h>

#include "base.h"

struct lazylib {
	const char	*soname;
	const char	*what;		/* what qsup needs it for */
	int		 tried;		/* under lazylib_lock */
	void		*handle;
	char		*error;		/* dlerror's, if it did not load */
};

/* A pull's hashing thread may be first to call into libcrypto. */
static pthread_mutex_t	lazylib_lock = PTHREAD_MUTEX_INITIALIZER;

static struct lazylib	lazy_curl = { "libcurl.so.4",
			    "downloads and qsup's API client", 0, NULL, NULL };
static struct lazylib	lazy_archive = { "libarchive.so.13",
			    "image builds and registry layers", 0, NULL, NULL };
static struct lazylib	lazy_crypto = { "libcrypto.so.3",
			    "the digests of image pulls", 0, NULL, NULL };

/* l loaded, or tried once and its error kept: 0, or -1 with *cause. */
static int
lazylib_ensure(struct lazylib *l, char **cause)
{
	const char	*e;
	void		*handle;

	pthread_mutex_lock(&lazylib_lock);
	if (!l->tried) {
		l->tried = 1;
		if ((l->handle = dlopen(l->soname, RTLD_NOW|RTLD_LOCAL)) ==
		    NULL) {
			e = dlerror();
			xasprintf(&l->error, "%s", e != NULL ? e :
			    "dlopen failed");
		}
	}
	handle = l->handle;
	pthread_mutex_unlock(&lazylib_lock);
	if (handle != NULL)
		return (0);
	if (cause != NULL)
		xasprintf(cause, "cannot load %s, which qsup needs for %s: %s",
		    l->soname, l->what, l->error);
	return (-1);
}

/* The library's own name, found once; qsup ends if it cannot be. */
static void *
lazylib_fn(struct lazylib *l, void **slot, const char *name)
{
	void	*fn;
	char	*cause;

	if ((fn = __atomic_load_n(slot, __ATOMIC_ACQUIRE)) != NULL)
		return (fn);
	if (lazylib_ensure(l, &cause) == -1)
		fatalx("%s", cause);
	if ((fn = dlsym(l->handle, name)) == NULL)
		fatalx("%s has no %s: %s", l->soname, name, dlerror());
	__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	return (fn);
}

/*
 * All three libraries loaded now: 0, or -1 with *cause naming the first
 * that cannot be and why.
 */
int
lazylib_load_all(char **cause)
{
	if (lazylib_ensure(&lazy_curl, cause) == -1 ||
	    lazylib_ensure(&lazy_archive, cause) == -1 ||
	    lazylib_ensure(&lazy_crypto, cause) == -1)
		return (-1);
	return (0);
}

#define LAZY(lib, ret, name, params, args)				\
ret									\
name params								\
{									\
	static void		*slot;					\
	__typeof__(name)	*fn = lazylib_fn(&lib, &slot, #name);	\
									\
	return (fn args);						\
}

#define LAZY_VOID(lib, name, params, args)				\
void									\
name params								\
{									\
	static void		*slot;					\
	__typeof__(name)	*fn = lazylib_fn(&lib, &slot, #name);	\
									\
	fn args;							\
}

/*
 * The variadic ones forward their one argument as the word it is passed
 * in: every option of these takes a long, a curl_off_t or a pointer, all
 * passed alike (an integer register, or the same stack slot) on the
 * 64-bit ABIs qsup builds for.
 */
#define LAZY_OPT(lib, ret, name, params, h, opt)			\
ret									\
name params								\
{									\
	static void		*slot;					\
	__typeof__(name)	*fn = lazylib_fn(&lib, &slot, #name);	\
	va_list			 ap;					\
	void			*arg;					\
									\
	va_start(ap, opt);						\
	arg = va_arg(ap, void *);					\
	va_end(ap);							\
	return (fn(h, opt, arg));					\
}

/* libcurl */
LAZY(lazy_curl, CURLcode, curl_global_init, (long flags), (flags))
LAZY(lazy_curl, CURL *, curl_easy_init, (void), ())
LAZY_VOID(lazy_curl, curl_easy_cleanup, (CURL *h), (h))
LAZY(lazy_curl, CURLcode, curl_easy_perform, (CURL *h), (h))
LAZY(lazy_curl, CURLcode, curl_easy_pause, (CURL *h, int bits), (h, bits))
LAZY(lazy_curl, const char *, curl_easy_strerror, (CURLcode c), (c))
LAZY(lazy_curl, char *, curl_easy_escape, (CURL *h, const char *s, int n),
    (h, s, n))
LAZY(lazy_curl, char *, curl_escape, (const char *s, int n), (s, n))
LAZY_VOID(lazy_curl, curl_free, (void *p), (p))
LAZY(lazy_curl, time_t, curl_getdate, (const char *p, const time_t *unused),
    (p, unused))
LAZY_OPT(lazy_curl, CURLcode, curl_easy_setopt,
    (CURL *h, CURLoption opt, ...), h, opt)
LAZY_OPT(lazy_curl, CURLcode, curl_easy_getinfo,
    (CURL *h, CURLINFO opt, ...), h, opt)
LAZY_OPT(lazy_curl, CURLMcode, curl_multi_setopt,
    (CURLM *h, CURLMoption opt, ...), h, opt)
LAZY(lazy_curl, CURLM *, curl_multi_init, (void), ())
LAZY(lazy_curl, CURLMcode, curl_multi_cleanup, (CURLM *m), (m))
LAZY(lazy_curl, CURLMcode, curl_multi_add_handle, (CURLM *m, CURL *h),
    (m, h))
LAZY(lazy_curl, CURLMcode, curl_multi_remove_handle, (CURLM *m, CURL *h),
    (m, h))
LAZY(lazy_curl, CURLMcode, curl_multi_assign,
    (CURLM *m, curl_socket_t s, void *p), (m, s, p))
LAZY(lazy_curl, CURLMsg *, curl_multi_info_read, (CURLM *m, int *left),
    (m, left))
LAZY(lazy_curl, CURLMcode, curl_multi_perform, (CURLM *m, int *running),
    (m, running))
LAZY(lazy_curl, CURLMcode, curl_multi_poll,
    (CURLM *m, struct curl_waitfd extra[], unsigned int nextra, int ms,
    int *ret), (m, extra, nextra, ms, ret))
LAZY(lazy_curl, CURLMcode, curl_multi_socket_action,
    (CURLM *m, curl_socket_t s, int ev, int *running), (m, s, ev, running))
LAZY(lazy_curl, struct curl_slist *, curl_slist_append,
    (struct curl_slist *l, const char *s), (l, s))
LAZY_VOID(lazy_curl, curl_slist_free_all, (struct curl_slist *l), (l))

/* libarchive: the reader */
LAZY(lazy_archive, struct archive *, archive_read_new, (void), ())
LAZY(lazy_archive, int, archive_read_free, (struct archive *a), (a))
LAZY(lazy_archive, int, archive_read_support_filter_all, (struct archive *a),
    (a))
LAZY(lazy_archive, int, archive_read_support_format_tar, (struct archive *a),
    (a))
LAZY(lazy_archive, int, archive_read_open,
    (struct archive *a, void *data, archive_open_callback *o,
    archive_read_callback *r, archive_close_callback *c), (a, data, o, r, c))
LAZY(lazy_archive, int, archive_read_open_filename,
    (struct archive *a, const char *path, size_t block), (a, path, block))
LAZY(lazy_archive, int, archive_read_open_memory,
    (struct archive *a, const void *p, size_t n), (a, p, n))
LAZY(lazy_archive, int, archive_read_next_header,
    (struct archive *a, struct archive_entry **e), (a, e))
LAZY(lazy_archive, int, archive_read_data_block,
    (struct archive *a, const void **p, size_t *n, la_int64_t *off),
    (a, p, n, off))
LAZY(lazy_archive, const char *, archive_error_string, (struct archive *a),
    (a))

/* printf-like: formatted here, passed on whole. */
void
archive_set_error(struct archive *a, int err, const char *fmt, ...)
{
	static void			*slot;
	__typeof__(archive_set_error)	*fn = lazylib_fn(&lazy_archive, &slot,
					    "archive_set_error");
	char				 msg[1024];
	va_list				 ap;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	fn(a, err, "%s", msg);
}

/* libarchive: the writer */
LAZY(lazy_archive, struct archive *, archive_write_new, (void), ())
LAZY(lazy_archive, int, archive_write_free, (struct archive *a), (a))
LAZY(lazy_archive, int, archive_write_close, (struct archive *a), (a))
LAZY(lazy_archive, int, archive_write_fail, (struct archive *a), (a))
LAZY(lazy_archive, int, archive_write_set_format_pax_restricted,
    (struct archive *a), (a))
LAZY(lazy_archive, int, archive_write_set_bytes_per_block,
    (struct archive *a, int n), (a, n))
LAZY(lazy_archive, int, archive_write_set_bytes_in_last_block,
    (struct archive *a, int n), (a, n))
LAZY(lazy_archive, int, archive_write_open_fd, (struct archive *a, int fd),
    (a, fd))
LAZY(lazy_archive, int, archive_write_open_memory,
    (struct archive *a, void *p, size_t n, size_t *used), (a, p, n, used))
LAZY(lazy_archive, int, archive_write_header,
    (struct archive *a, struct archive_entry *e), (a, e))
LAZY(lazy_archive, la_ssize_t, archive_write_data,
    (struct archive *a, const void *p, size_t n), (a, p, n))

/* libarchive: entries */
LAZY(lazy_archive, struct archive_entry *, archive_entry_new, (void), ())
LAZY_VOID(lazy_archive, archive_entry_free, (struct archive_entry *e), (e))
LAZY(lazy_archive, struct archive_entry *, archive_entry_clear,
    (struct archive_entry *e), (e))
LAZY_VOID(lazy_archive, archive_entry_acl_clear, (struct archive_entry *e),
    (e))
LAZY(lazy_archive, __LA_MODE_T, archive_entry_filetype,
    (struct archive_entry *e), (e))
LAZY(lazy_archive, __LA_MODE_T, archive_entry_mode, (struct archive_entry *e),
    (e))
LAZY(lazy_archive, const char *, archive_entry_pathname,
    (struct archive_entry *e), (e))
LAZY(lazy_archive, const char *, archive_entry_hardlink,
    (struct archive_entry *e), (e))
LAZY(lazy_archive, const char *, archive_entry_symlink,
    (struct archive_entry *e), (e))
LAZY(lazy_archive, la_int64_t, archive_entry_size, (struct archive_entry *e),
    (e))
LAZY_VOID(lazy_archive, archive_entry_set_filetype,
    (struct archive_entry *e, unsigned int t), (e, t))
LAZY_VOID(lazy_archive, archive_entry_set_mtime,
    (struct archive_entry *e, time_t s, long ns), (e, s, ns))
LAZY_VOID(lazy_archive, archive_entry_set_pathname,
    (struct archive_entry *e, const char *p), (e, p))
LAZY_VOID(lazy_archive, archive_entry_set_perm,
    (struct archive_entry *e, __LA_MODE_T m), (e, m))
LAZY_VOID(lazy_archive, archive_entry_set_size,
    (struct archive_entry *e, la_int64_t n), (e, n))
LAZY_VOID(lazy_archive, archive_entry_xattr_clear, (struct archive_entry *e),
    (e))
LAZY(lazy_archive, int, archive_entry_xattr_reset, (struct archive_entry *e),
    (e))
LAZY(lazy_archive, int, archive_entry_xattr_next,
    (struct archive_entry *e, const char **name, const void **value,
    size_t *n), (e, name, value, n))

/* libcrypto: the digests (image_hash.c, image_oci.c) */
LAZY(lazy_crypto, EVP_MD_CTX *, EVP_MD_CTX_new, (void), ())
LAZY_VOID(lazy_crypto, EVP_MD_CTX_free, (EVP_MD_CTX *c), (c))
LAZY(lazy_crypto, const EVP_MD *, EVP_sha256, (void), ())
LAZY(lazy_crypto, const EVP_MD *, EVP_sha512, (void), ())
LAZY(lazy_crypto, int, EVP_DigestInit_ex,
    (EVP_MD_CTX *c, const EVP_MD *t, ENGINE *e), (c, t, e))
LAZY(lazy_crypto, int, EVP_DigestUpdate,
    (EVP_MD_CTX *c, const void *d, size_t n), (c, d, n))
LAZY(lazy_crypto, int, EVP_DigestFinal_ex,
    (EVP_MD_CTX *c, unsigned char *md, unsigned int *n), (c, md, n))
