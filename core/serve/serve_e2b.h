/*
 * "qsup serve --e2b": E2B's control API and its in-sandbox ("envd") API
 * on the server's own listeners, so that E2B's SDK (npm e2b 2.51.0, set
 * up with E2B_API_URL and E2B_SANDBOX_URL) drives qsup's sandboxes
 * unchanged (docs/e2b.md). serve_e2b.c: the routes, the key, the control
 * API; serve_e2b_base.c: records and errors; serve_e2b_proc.c: process.Process, Connect's streams over qsup's
 * execs; serve_e2b_fs.c: filesystem.Filesystem and /files, as commands;
 * serve_e2b_wire.c: the client's bytes parsed (envelopes, multipart).
 * Private to core/serve.
 */
#ifndef QSUP_SERVE_E2B_H
#define QSUP_SERVE_E2B_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "base.h"

#define E2B_ENVD_VERSION	"0.6.4"	/* no feature of the SDK is gated
					   off below it */
#define E2B_FLAG_END		0x02	/* an envelope's: end of stream */
#define E2B_MSG_MAX		(1024 * 1024)	/* an envelope's message */
#define E2B_BOUNDARY_MAX	70		/* RFC 2046 */
#define E2B_PART_HEAD_MAX	8192		/* a part's header lines */
#define E2B_PARTS_MAX		64		/* files in one upload */
#define E2B_TIMEOUT_DEFAULT	300		/* seconds, E2B's own */
#define E2B_OUT_MAX		(4 * 1024 * 1024) /* a listing's output */

/* serve_e2b_wire.c */
/*
 * A gzip body (one member, as the SDK's CompressionStream makes it)
 * inflated into *out (its *outlen bytes, NUL after), at most max bytes:
 * 0, or -1 and *why (not gzip, truncated, or inflating past max).
 */
int		 e2b_gunzip(const char *, size_t, size_t, char **, size_t *,
		     const char **);
/*
 * One envelope at the start of buf: the bytes it takes (5 and its
 * message), its flags and message; 0 when more bytes are needed; -1 and
 * *why when it cannot be one (compressed, or over E2B_MSG_MAX).
 */
ssize_t		 e2b_envelope(const char *, size_t, int *, const char **,
		     size_t *, const char **);
void		 e2b_frame(struct buf *, int, const char *, size_t);
/* The boundary of a multipart/form-data Content-Type: 0, or -1, *why. */
int		 e2b_boundary(const char *, char [E2B_BOUNDARY_MAX + 1],
		     const char **);
struct e2b_part {		/* within the body; names not NUL-ended */
	const char	*name;		/* or NULL */
	size_t		 nlen;
	const char	*filename;	/* or NULL */
	size_t		 flen;
	const char	*data;
	size_t		 len;
};
/* The parts of a body, at most max: 0 with *n, or -1 and *why. */
int		 e2b_multipart(const char *, const char *, size_t,
		     struct e2b_part *, size_t, size_t *, const char **);

/*
 * One line of "stat -c '%f %s %a %U %G %Y %n'" in the guest (its bytes
 * are the guest's): the mode in hex, the size, the permissions in octal,
 * owner, group, mtime, then the path to the line's end.
 */
#define E2B_PATH_MAX	4096
#define E2B_STAT_FMT	"%f %s %a %U %G %Y %n"
struct e2b_entry {
	unsigned		 mode;
	unsigned long long	 size;
	char			 owner[64];
	char			 group[64];
	long long		 mtime;
	const char		*path;		/* within the line */
	size_t			 plen;
};
int		 e2b_stat_line(const char *, size_t, struct e2b_entry *);
/* As an EntryInfo of filesystem.proto, in JSON. */
void		 e2b_entry_json(const struct e2b_entry *, struct buf *);

#ifdef QSUP_SERVE_INT_H
/* A sandbox made through the E2B API: what E2B says of it. */
struct e2b_sb {
	TAILQ_ENTRY(e2b_sb)	 entry;
	char			*id;		/* its qsup name */
	unsigned long long	 serial;	/* of that serve_sb */
	char			*token;		/* envdAccessToken */
	char			*template;
	json_t			*metadata;	/* object of strings */
	json_t			*envs;		/* envVars: every command's */
};
TAILQ_HEAD(e2b_sbs, e2b_sb);

struct serve_e2b {
	char			*key;		/* X-API-KEY: the token */
	struct e2b_sbs		 sbs;
};

/* What an envd request came with, found and checked. */
struct e2b_req {
	const struct serve_req	*r;
	struct e2b_sb		*e;
	struct serve_sb		*s;
};

/* serve_e2b_base.c */
void		 e2b_sb_free(struct e2b_sb *);
struct e2b_sb	*e2b_find(struct serve *, const char *, struct serve_sb **);
void		 e2b_error(struct httpd_conn *, int, const char *, ...)
		     __attribute__((format(printf, 3, 4)));
/* A Connect error, unary: {"code":"not_found",...} at its status. */
void		 e2b_rpc_error(struct httpd_conn *, const char *, const char *,
		     ...) __attribute__((format(printf, 3, 4)));
int		 e2b_rpc_status(const char *);

/* serve_e2b_proc.c */
/* A Connect error, streamed (Start, Connect): 200 and the end envelope. */
void		 e2b_stream_fail(struct httpd_conn *, const char *,
		     const char *);
int		 e2b_process(const struct e2b_req *, const char *);
/* A command of argv run in s, its output kept (bounded): fn gets it. */
typedef void	 e2b_cmd_fn(struct httpd_conn *, int, const char *, size_t,
		     const char *, void *);
int		 e2b_command(struct serve_sb *, struct httpd_conn *,
		     char *const *, const char *, size_t, e2b_cmd_fn *, void *,
		     struct serve_error *);

/* serve_e2b_fs.c */
int		 e2b_filesystem(const struct e2b_req *, const char *);
int		 e2b_files(const struct e2b_req *);
#endif

#endif
