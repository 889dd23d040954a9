/*
 * core/wire: the wire protocol between qsup and its in-guest agent
 * (guest/), and the codecs both sides speak it with: one HTTP/1.1 head
 * parser (http.c), one chunked codec (chunked.c), one Server-Sent Events
 * codec (sse.c), one JSON string writer (json.c). Built into qsup and into
 * the static agent alike, so it uses libc only: no base layer, no libev.
 * This is the only header the two sides share.
 *
 * Transport: QSUP_PORT_COUNT virtio-serial ports named QSUP_PORT_PREFIX"0"
 * .. QSUP_PORT_PREFIX"<n-1>". Each port carries one persistent HTTP/1.1
 * connection; requests on one port are answered in order, so a long-lived
 * response (an exec stream) occupies its port until it ends. Concurrency is
 * one request per port at a time, across all ports at once.
 *
 * Every request carries "Authorization: Bearer <token>", the token from the
 * seed ISO; a request without it, or with another, gets 401.
 *
 * Requests:
 *   GET  /ping                 200 {"version":N,"boot_ms":N,"kernel":"..."}
 *                              (after POST /setup also "setup_us":N, its
 *                              own work, for the host's breakdown)
 *                              and, once a disk image's root is mounted,
 *                              "root":"/dev/vdXN", and "glibc":"2.N"
 *                              (the image's own, when root_glibc asked
 *                              and its libc.so.6 says)
 *                              503 {"error":"..."} when the guest's setup
 *                              failed (a share that did not mount, ...)
 *   POST /exec                 body: JSON {"argv":[...],"env":["K=V",...],
 *                              "cwd":"/dir","tty":true,"rows":N,"cols":N,
 *                              "entrypoint":true}
 *                              (entrypoint: the image's, QSUP_IMAGE_CONF,
 *                              goes before argv, as docker run puts it)
 *                              (tty, rows and cols optional: with tty the
 *                              command runs on a new pseudo-terminal of
 *                              that size, default 24x80, as the leader of
 *                              its session with it as its controlling
 *                              terminal; its stdin, stdout and stderr are
 *                              the terminal, everything it prints comes as
 *                              stdout events, stdin uploads are typed into
 *                              it, and /close only stops the uploads);
 *                              or a file job in place of argv, run like a
 *                              command (in the command root, with its
 *                              events and its exit) by the agent itself:
 *                              {"read":"/abs/path"}: stdout events carry
 *                              the file's bytes;
 *                              {"write":"/abs/path","mode":N}: stdin
 *                              uploads carry them, and /close puts the file
 *                              in place whole (written beside it, renamed
 *                              over it, mode N exactly, default 0644); a
 *                              job that ends otherwise leaves nothing.
 *                              A job that fails sends one stderr event
 *                              saying why, then exit {"status":E}, E the
 *                              errno of the call that failed (ENOENT 2,
 *                              EACCES 13, EISDIR 21, EINVAL 22 for a path
 *                              that is not absolute, ENOSPC 28, ...);
 *                              answered 200 with
 *                              Content-Type: text/event-stream,
 *                              Transfer-Encoding: chunked, carrying the
 *                              events below; the last chunk follows the
 *                              "exit" event and the port is free again
 *   POST /exec/<id>/stdin      body: bytes for the command's stdin; answered
 *                              204 once written to the command's pipe;
 *                              409 when stdin is closed (by /close or by
 *                              the command), a write is already pending
 *                              for this exec, or the command exited
 *                              meanwhile: "stop sending", not a failure
 *   POST /exec/<id>/close      close the command's stdin (EOF); 204;
 *                              idempotent
 *   POST /exec/<id>/signal     body: decimal signal number 1-64 (400
 *                              otherwise), sent to the command's process
 *                              group; 204 even if it is already gone
 *                              (all three: 404 once the exit event went out)
 *   POST /exec/<id>/resize     body: "ROWS COLS" in decimal, each 1-10000
 *                              (400 otherwise): the terminal's size, for an
 *                              exec started with "tty"; 204; 409 without one
 *   POST /poweroff             204, then the guest syncs and powers off
 *   POST /setup                only in template state (below): body is the
 *                              configuration in QSUP_SEED_CONFIG's format;
 *                              the agent applies it as it would a seed
 *                              (clock, entropy with a forced reseed,
 *                              hostname, shares) and answers like /ping;
 *                              409 once configured, 400 if it does not
 *                              parse or has no token
 *
 * Template state (kernel command line qsup.template=1): the agent boots
 * without reading any seed, so that a VM state saved at that point holds
 * nothing of any sandbox. It then answers only GET /ping (with
 * "template":true, no token needed: there is none yet) and POST /setup;
 * anything else gets 503. A boot of qsup's kernel (qsup.setup=1) starts
 * the same way: qsup sends its POST /setup at launch, which waits in the
 * port until the agent reads it, instead of a seed ISO on a disk (that
 * disk's driver and probe cost about 45 ms of a boot under TCG).
 *
 * Liveness: once the guest is ready, qsup sends GET /ping on the last port
 * every few seconds and ends the run when one stays unanswered too long.
 *
 * qsup holds the agent to this protocol strictly: a response head over
 * 16 KiB, a body or chunk over 1 MiB, an event over 256 KiB, chunk sizes
 * other than bare hex, trailers, SSE fields other than event and data,
 * events after "exit", bytes after the last response, or an exit event
 * that is not exactly one of the forms below (status 0-255, signal 1-64)
 * is a protocol error and ends the run.
 *
 * Other errors: 413 for a body over 1 MiB, 431 for a head over 16 KiB.
 * If qsup's end of a port goes away, the command streaming on it is killed
 * (its whole process group).
 *
 * Exec events (Server-Sent Events, "event: NAME\ndata: DATA\n\n"):
 *   start   {"id":N,"pid":N}
 *   stdout  base64 of the bytes (at most QSUP_CHUNK raw bytes per event)
 *   stderr  base64 of the bytes
 *   exit    sent once the command's main process is reaped and what was
 *           already in its pipes is read; the pipes are then closed, so
 *           later output of background processes is lost (they are not
 *           killed).
 *           {"status":N} for a normal exit, {"signal":N} for death by
 *           signal, or {"status":126|127,"error":"..."} when the command
 *           could not be started (126: not executable, 127: not found)
 *
 * The seed ISO (volume QSUP_SEED_VOLUME, on a virtio-blk disk) holds
 * QSUP_SEED_CONFIG, a text file of "key value" lines; values are
 * percent-encoded (%XX for any byte outside 0x21-0x7e and for '%'):
 *   token T             the bearer token
 *   hostname H
 *   time S.NNNNNNNNN    host wall clock when the seed was written
 *   entropy HEX         fresh host random bytes for the guest's pool
 *   env K=V             default environment for commands (repeatable)
 *   cwd DIR             default working directory
 *   mount TAG PATH ro|rw|cow   a 9p share to mount (repeatable); failure
 *                       to mount any of them is fatal (ping answers 503);
 *                       cow: the 9p tree read-only as the lower layer of
 *                       an overlay whose upper layer is on the cow disk
 *   cow SERIAL          the cow shares' disk: an empty ext4 on the virtio
 *                       disk of that serial, mounted before the mounts
 *   bind SRC DST ro|rw  bind-mount guest path SRC on DST, after every
 *                       mount, in order (repeatable; DST is made if
 *                       missing); failure is fatal as for mount
 *   root SERIAL grow|keep [BYTES]
 *                       make the file system found on the virtio disk of
 *                       that serial the root of every command, before the
 *                       mounts (which then lie inside it); grow: extend
 *                       its partition and ext4 to the disk's end; BYTES:
 *                       the disk's size, waited for; failure is fatal
 *   root_glibc 1        also find the image's glibc (for /ping's "glibc")
 * Unknown keys are ignored so older agents accept newer seeds.
 *
 * Kernel command line words the agent reads:
 *   qsup.probe=1        print QSUP_PROBE_MARK on the console and power off
 *                       at once (qsup's KVM probe)
 *   qsup.template=1     boot into template state (no seed)
 *   qsup.setup=1        boot into the same state, to be configured by the
 *                       POST /setup waiting for it (not a template: the
 *                       shares' modules wait for a share)
 *   qsup.root=1         a disk image is attached: load ext4 at boot, so
 *                       a template has it
 *   qsup.cow=SERIAL     the cow disk is attached: load ext4 and find the
 *                       disk at boot, so a template has both
 *   qsup.ports=N        how many agent ports to look for (default
 *                       QSUP_PORT_COUNT)
 */
#ifndef QSUP_PROTOCOL_H
#define QSUP_PROTOCOL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#define QSUP_PROTOCOL_VERSION	2
/*
 * The agent carries this string, so a guest's protocol can be read from
 * its initramfs without booting it (qsup doctor).
 */
#define QSUP_PROTOCOL_MARK_PREFIX	"qsup-agent-protocol="
#define QSUP_PROTOCOL_STR_(v)	#v
#define QSUP_PROTOCOL_STR(v)	QSUP_PROTOCOL_STR_(v)
#define QSUP_PROTOCOL_MARK	QSUP_PROTOCOL_MARK_PREFIX \
				QSUP_PROTOCOL_STR(QSUP_PROTOCOL_VERSION) ";"
#define QSUP_PORT_PREFIX	"org.qsup.agent."
#define QSUP_PORT_COUNT		16
#define QSUP_SEED_VOLUME	"cidata"
#define QSUP_SEED_CONFIG	"qsup-config"
/*
 * Inside an image made by "qsup image build": the container's defaults,
 * in QSUP_SEED_CONFIG's format ("env K=V", "cwd DIR", "entrypoint ARG",
 * "cmd ARG"), read by the agent once the image is its root.
 */
#define QSUP_IMAGE_CONF		"/etc/qsup/image.conf"
#define QSUP_CHUNK		32768
#define QSUP_PROBE_MARK		"qsup-probe-ok"
/* A command's PATH in the guest unless the profile or -e sets one. */
#define QSUP_GUEST_PATH \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/*
 * The guest's network card, when it has one (network other than "none"):
 * fixed addresses on qsup's user-mode network (core/net.c). The guest
 * configures eth0 with them at boot, before any template is saved.
 */
#define QSUP_NET_GUEST		"10.0.2.15"
#define QSUP_NET_MASK		"255.255.255.0"
#define QSUP_NET_GATEWAY	"10.0.2.2"
#define QSUP_NET_DNS		"10.0.2.3"

/*
 * The exec requests' paths (above): POST WIRE_EXEC starts one, POST
 * WIRE_EXEC"/<id>/<op>" reaches it, op one of WIRE_OP_*. wire_exec_path
 * writes such a path, wire_exec_path_parse reads one (the agent's router).
 */
#define WIRE_EXEC		"/exec"
#define WIRE_OP_STDIN		"stdin"
#define WIRE_OP_CLOSE		"close"
#define WIRE_OP_SIGNAL		"signal"
#define WIRE_OP_RESIZE		"resize"
#define WIRE_EXEC_PATH_MAX	64	/* holds any of them, with any id */

#define QSUP_EVENT_START	"start"
#define QSUP_EVENT_STDOUT	"stdout"
#define QSUP_EVENT_STDERR	"stderr"
#define QSUP_EVENT_EXIT		"exit"

/*
 * Bounds the readers hold their peer to (see above). The numbers are
 * spelled out because error messages name them.
 */
#define WIRE_HEAD_MAX		16384	/* a head; on the host, a chunk line */
#define WIRE_BODY_MAX		1048576	/* 1 MiB: a body, one chunk */
#define WIRE_EVENT_MAX		262144	/* 256 KiB: one event, all lines */
#define WIRE_EVENT_NAME_MAX	32
#define WIRE_LINE_MAX		1024	/* agent: a chunk or trailer line */

#define WIRE_STR(x)		WIRE_STR1(x)
#define WIRE_STR1(x)		#x

/* Writers hand their bytes to put(arg, bytes, len): any buffer will do. */
typedef void	 wire_put_cb(void *, const void *, size_t);

/* A growable byte buffer the readers keep state in; data NUL-terminated. */
struct wire_buf {
	char	*data;
	size_t	 len;
	size_t	 size;
};

/* http.c */
#define WIRE_REQUEST	0	/* the agent reading qsup */
#define WIRE_RESPONSE	1	/* qsup reading the agent: strictly */
struct wire_head {
	int		 role;
	int		 lines;		/* lines taken so far */
	char		 method[16];	/* request */
	char		 path[256];	/* request, without any query string */
	int		 minor;		/* request: HTTP/1.minor */
	int		 status;	/* response: 100-599 */
	int		 has_auth;
	char		 auth[512];
	long long	 content_length;	/* -1: none */
	int		 chunked;
	int		 expect_continue;
	int		 sse;		/* Content-Type: text/event-stream */
	int		 error;		/* request: the status to answer */
	const char	*cause;		/* static: why it was refused */
};
/* The parts of a request line, or of a header line, pointing into it. */
struct wire_request_line {
	const char	*method;
	size_t		 mlen;
	const char	*target;
	size_t		 tlen;
	const char	*version;
	size_t		 vlen;
};
struct wire_field {
	const char	*name;
	size_t		 nlen;
	const char	*value;		/* without blanks around it */
	size_t		 vlen;
};
size_t		 wire_head_end(const char *, size_t);
int		 wire_line(const char **, const char *, const char **,
		     size_t *);
int		 wire_token(const char *, size_t);
int		 wire_request_split(const char *, size_t,
		     struct wire_request_line *);
int		 wire_field_split(const char *, size_t, struct wire_field *);
const char	*wire_field_take(const char *, size_t, struct wire_field *);
int		 wire_is(const char *, size_t, const char *);
int		 wire_decimal(const char *, size_t, size_t, long long *);
void		 wire_head_init(struct wire_head *, int);
int		 wire_head_line(struct wire_head *, const char *, size_t);
int		 wire_head_parse(struct wire_head *, int, const char *, size_t);
const char	*wire_reason(int);
void		 wire_exec_path(char *, size_t, long long, const char *);
int		 wire_exec_path_parse(const char *, unsigned *, const char **);
int		 wire_exec_op(const char *);

/* chunked.c */
struct wire_chunked {
	int		 state;
	int		 strict;	/* as qsup holds the agent to it */
	uint64_t	 left;		/* data still to come in this chunk */
};
void		 wire_chunked_init(struct wire_chunked *, int);
ssize_t		 wire_chunked_feed(struct wire_chunked *, const char *,
		     size_t, const char **, size_t *, int *, const char **);
void		 wire_chunk_start(wire_put_cb *, void *, size_t);
void		 wire_chunk_end(wire_put_cb *, void *);
void		 wire_chunk_last(wire_put_cb *, void *);

/* sse.c */
struct wire_sse {
	struct wire_buf	 line;		/* the line being read */
	struct wire_buf	 data;		/* the event's data so far */
	char		 event[WIRE_EVENT_NAME_MAX + 1];
	int		 have_event;
	int		 ready;		/* a whole event is in event, data */
};
size_t		 wire_sse_size(const char *, size_t);
void		 wire_sse_start(wire_put_cb *, void *, const char *);
void		 wire_sse_end(wire_put_cb *, void *);
ssize_t		 wire_sse_feed(struct wire_sse *, const char *, size_t, int *,
		     const char **);
const char	*wire_sse_name(const struct wire_sse *);
int		 wire_sse_pending(const struct wire_sse *);
void		 wire_sse_reset(struct wire_sse *);
void		 wire_sse_free(struct wire_sse *);

/* ws.c: RFC 6455 frames, a server's side */
#define WIRE_WS_HEAD_MAX	10	/* a server's frame head */
#define WIRE_WS_PROTOCOL	1002	/* close codes */
#define WIRE_WS_BAD_DATA	1007
#define WIRE_WS_TOO_BIG		1009
enum {
	WIRE_WS_NONE = 0,
	WIRE_WS_MESSAGE,	/* w->msg, w->msg_len; w->ev_op 1 text, 2 binary */
	WIRE_WS_PING,		/* w->ctl, w->ctl_len */
	WIRE_WS_PONG,
	WIRE_WS_CLOSE,
	WIRE_WS_ERROR		/* the close code in *code */
};
struct wire_ws {
	size_t		 max;		/* a message's bytes at most */
	int		 failed;	/* its close code, once failed */
	int		 in_frame;	/* a head taken, its payload due */
	int		 fin, op;
	uint64_t	 left;		/* of the frame's payload */
	uint64_t	 at;		/* into the mask */
	unsigned char	 mask[4];
	int		 msg_op;	/* a message under way: 1 or 2 */
	int		 ev_op;		/* the message handed over's */
	int		 done_msg;
	unsigned char	*msg;
	size_t		 msg_len, msg_cap;
	unsigned char	 ctl[125];
	size_t		 ctl_len;
};
void		 wire_ws_init(struct wire_ws *, size_t);
void		 wire_ws_free(struct wire_ws *);
size_t		 wire_ws_feed(struct wire_ws *, const unsigned char *, size_t,
		     int *, int *);
int		 wire_ws_utf8(const unsigned char *, size_t);
size_t		 wire_ws_frame(unsigned char [WIRE_WS_HEAD_MAX], int, uint64_t);

/* json.c */
void		 wire_json_string(wire_put_cb *, void *, const char *);

/* seed.c */
void		 wire_seed_value(wire_put_cb *, void *, const char *);
void		 wire_seed_line(wire_put_cb *, void *, const char *,
		     const char *);

#endif
