/*
 * core/base: what every host layer uses: allocation, the growable buffer,
 * paths and files, tokens, logging, the bounded output queue, and reading
 * JSON. It uses only libc, libev, jansson and the wire layer below it.
 */
#ifndef QSUP_BASE_H
#define QSUP_BASE_H

#include <sys/types.h>

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#define QSUP_VERSION	"0.1.0"

/* Exit codes of qsup itself; the guest command's own status passes through. */
#define QSUP_EXIT_ERROR		125	/* qsup, profile or usage error */
#define QSUP_EXIT_TIMEOUT	124	/* --timeout expired */
#define QSUP_EXIT_NOEXEC	126	/* command found but not executable */
#define QSUP_EXIT_NOTFOUND	127	/* command not found in the guest */

/* util.c */
struct buf;
extern volatile sig_atomic_t util_stop_now;	/* give up waiting, now */
void		*xmalloc(size_t);
void		*xcalloc(size_t, size_t);
void		*xrealloc(void *, size_t);
void		*xreallocarray(void *, size_t, size_t);
char		*xstrdup(const char *);
char		*xstrndup(const char *, size_t);
int		 xasprintf(char **, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
int		 xvasprintf(char **, const char *, va_list);
double		 util_now(void);
char		*util_cache_dir(void);
int		 util_mkdir_p(const char *, mode_t);
int		 util_set_nonblock(int);
int		 util_set_cloexec(int, int);
int		 util_rm_rf(const char *);
char		*util_path_normalize(const char *);
char		*util_path_absolute(const char *);
char		*util_which(const char *);
char		*util_read_file(const char *, size_t *, size_t);
int		 util_write_file(const char *, const char *);
int		 util_run_capture(char *const [], int, double, const char *,
		     struct buf *, int *);
size_t		 util_base64_decode(const char *, size_t, unsigned char *);

/* A growable byte buffer, always NUL-terminated. */
struct buf {
	char	*data;
	size_t	 len;
	size_t	 size;
};
void		 buf_add(struct buf *, const void *, size_t);
void		 buf_puts(struct buf *, const char *);
void		 buf_seed_value(struct buf *, const char *);
void		 buf_seed_line(struct buf *, const char *, const char *);
void		 buf_printf(struct buf *, const char *, ...)
		     __attribute__((format(printf, 2, 3)));
void		 buf_json_string(struct buf *, const char *);
void		 buf_read_fd(struct buf *, int);
void		 buf_consume(struct buf *, size_t);
void		 buf_free(struct buf *);

/* json.c: reading JSON with jansson (<jansson.h> for the rest of it) */
struct json_t;
struct json_t	*json_read(const char *, size_t, size_t);
struct json_t	*json_path(struct json_t *, const char *);
int		 json_path_int(struct json_t *, const char *, long long *);
const char	*json_path_str(struct json_t *, const char *);

/* token.c */
void		 token_random(unsigned char *, size_t);
char		*token_hex(size_t);
char		*token_hex_of(const unsigned char *, size_t);

/* lazylib.c: libcurl, libarchive, libcrypto, loaded at their first call */
int		 lazylib_load_all(char **);

/* log.c */
extern int	 log_verbose;
void		 log_init(const char *);
void		 log_set_output(void (*)(void *, const void *, size_t), void *);
void		 log_debug(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_info(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_warn(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
void		 log_warnx(const char *, ...)
		     __attribute__((format(printf, 1, 2)));
__attribute__((noreturn)) void
		 fatalx(const char *, ...)
		     __attribute__((format(printf, 1, 2)));

struct ev_loop;

/* outq.c: a bounded, non-blocking queue onto one of qsup's own fds */
struct outq;
struct outq	*outq_new(struct ev_loop *, int);
void		 outq_write(struct outq *, const void *, size_t);
void		 outq_put(void *, const void *, size_t);
size_t		 outq_pending(struct outq *);
void		 outq_set_drain_cb(struct outq *, void (*)(void *), void *);
int		 outq_flush_blocking(struct outq *);
void		 outq_free(struct outq *);
int		 outq_reopen_nonblock(int, int);


#endif
