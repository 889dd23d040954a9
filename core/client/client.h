/*
 * core/client: the client of "qsup serve"'s API (docs/serve-api.md)
 * through libcurl, for the commands that speak to a server
 * (qsup sandbox, exec, cp, ls, rm) and for MCP. It uses the layers up to
 * core/vm (where a user's server listens) and none of core/serve.
 */
#ifndef QSUP_CLIENT_H
#define QSUP_CLIENT_H

#include <sys/types.h>

#include "vm.h"

/*
 * client.c: calls return 0; CLIENT_REFUSED when the server answered with
 * an error (*cause its message); -1 when there was no answer (*cause says
 * why, naming the host).
 */
#define CLIENT_REFUSED		1
#define CLIENT_RESPONSE_MAX	(16 * 1024 * 1024)	/* a JSON answer */
struct client;
struct json_t;
int		 client_host_parse(const char *, char **, char **, char **);
char		*client_default_host(void);
struct client	*client_new(const char *, const char *, char **);
void		 client_free(struct client *);
const char	*client_host(const struct client *);
char		*client_path(const char *, const char *);
char		*client_error_text(struct client *, long, const char *,
		     size_t);
int		 client_call(struct client *, const char *, const char *,
		     struct json_t *, struct json_t **, char **);
int		 client_healthz(struct client *, char **, char **);
int		 client_write_all(int, const void *, size_t);
int		 client_put(struct client *, const char *, const char *, int,
		     int, long long, const void *, size_t, long long *,
		     char **);
int		 client_get(struct client *, const char *, const char *, int,
		     struct buf *, size_t, int *, char **);
int		 client_fetch(struct client *, const char *, int, struct buf *,
		     size_t, int *, char **);
/* client_stream.c: an exec's event stream turned back into its output. */
struct client_stream {
	struct wire_sse	 sse;
	long long	 id;		/* -1 until its start event */
	struct json_t	*exit;		/* its exit event's data, once in */
	int		 fd[2];		/* stdout, stderr; -1: collected */
	struct buf	 pend[2];	/* what a full fd has not taken yet */
	struct buf	 out[2];	/* collected output */
	size_t		 max;		/* collected, at most, each */
	int		 truncated[2];
	int		 write_errno;	/* a write to fd failed */
	char		*cause;		/* why the stream broke */
};
void		 client_stream_init(struct client_stream *, int, int, size_t);
ssize_t		 client_stream_feed(struct client_stream *, const char *,
		     size_t);
int		 client_stream_pending(const struct client_stream *);
int		 client_stream_flush(struct client_stream *);
int		 client_stream_status(const struct client_stream *, char **);
void		 client_stream_free(struct client_stream *);
struct client_exec;
struct client_exec *client_exec_start(struct client *, const char *,
		     struct json_t *, int, const void *, size_t, int, int,
		     size_t);
int		 client_exec_step(struct client_exec *, int, int, int *);
void		 client_exec_signal(struct client_exec *, const char *);
void		 client_exec_resize(struct client_exec *, int, int);
struct client_stream *client_exec_stream(struct client_exec *);
int		 client_exec_result(struct client_exec *, int *, char **);
void		 client_exec_free(struct client_exec *);
void		 client_set_token(struct client *, const char *);

#endif
