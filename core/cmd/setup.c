/*
 * A profile's setup steps, before "qsup run"'s command: each step's layer
 * (core/image/image_layer.c) found in the store, or built there: a
 * sandbox over the layers so far, on a fresh overlay, with the network
 * setup_network gives, no shares and no ports; the step run as an exec,
 * its output streamed to stderr (not under --json); on exit 0 the guest
 * syncs, QEMU stops on SIGTERM (closing the qcow2 cleanly), and the
 * overlay is copied into the store and renamed into place. A step that
 * fails leaves nothing; its status and output's tail are the run's error.
 * The run then boots on the top layer, holding every layer of the chain
 * (a shared lock each) until it ends, so prune leaves them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "cmd.h"
#include "image.h"

#define SETUP_PORT_EXEC		0
#define SETUP_PORT_STDIN	1
#define SETUP_PORT_CONTROL	2
#define SETUP_TAIL		2048	/* of a step's output, for its error */

volatile sig_atomic_t	 setup_waiting;	/* on another qsup's build */

struct setup_build {
	struct setup		*s;
	struct sandbox		*sb;
	struct exec		*x;
	int			 syncing;	/* the step is done: sync */
	int			 exited;
	int			 status;
	int			 signal;
	char			*error;		/* why it did not run */
	char			 tail[SETUP_TAIL];
	size_t			 tail_len;
};

static void
setup_say(struct setup *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Progress on stderr; nothing under --json. */
static void
setup_say(struct setup *s, const char *fmt, ...)
{
	va_list	 ap;
	char	*line;

	if (s->json)
		return;
	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) == -1)
		fatalx("vasprintf");
	va_end(ap);
	log_info("%s", line);
	free(line);
}

static void
setup_tail(struct setup_build *b, const unsigned char *p, size_t n)
{
	if (n >= SETUP_TAIL) {
		memcpy(b->tail, p + n - SETUP_TAIL, SETUP_TAIL);
		b->tail_len = SETUP_TAIL;
		return;
	}
	if (b->tail_len + n > SETUP_TAIL) {
		memmove(b->tail, b->tail + (b->tail_len + n - SETUP_TAIL),
		    SETUP_TAIL - n);
		b->tail_len = SETUP_TAIL - n;
	}
	memcpy(b->tail + b->tail_len, p, n);
	b->tail_len += n;
}

/* Both of the step's streams to our stderr, and to the tail. */
static int
setup_output_cb(struct exec *x, enum exec_stream stream, const char *data,
    size_t len, void *arg)
{
	struct setup_build	*b = arg;
	unsigned char		*raw;
	size_t			 n;

	(void)x;
	(void)stream;
	raw = xmalloc(len * 3 / 4 + 3);
	n = util_base64_decode(data, len, raw);
	if (!b->syncing) {
		setup_tail(b, raw, n);
		if (!b->s->json && b->s->err != NULL)
			outq_write(b->s->err, raw, n);
	}
	free(raw);
	return (0);
}

static void	setup_exec(struct setup_build *, char *const *);

static void
setup_done_cb(struct exec *x, const struct exec_result *res, void *arg)
{
	struct setup_build	*b = arg;
	static char *const	 sync_argv[] = { "sync", NULL };

	(void)x;
	if (res->end == EXEC_END_GONE)
		return;
	if (res->end != EXEC_END_EXITED) {
		if (b->error == NULL)
			b->error = xstrdup(res->error != NULL ? res->error :
			    "the step's stream ended without its exit");
		sandbox_stop(b->sb, "the setup step failed");
		return;
	}
	if (b->syncing) {
		if (res->status != 0 || res->signal != 0)
			b->error = xstrdup("sync failed in the guest");
		else
			b->exited = 1;
		sandbox_stop(b->sb, "the setup step is done");
		return;
	}
	b->status = res->status;
	b->signal = res->signal;
	if (res->status != 0 || res->signal != 0) {
		b->exited = 1;
		sandbox_stop(b->sb, "the setup step failed");
		return;
	}
	/* Its writes to the disk, out of the guest's page cache. */
	b->syncing = 1;
	setup_exec(b, sync_argv);
}

static void
setup_exec(struct setup_build *b, char *const *argv)
{
	struct exec_spec	 spec;
	struct exec_ports	 ports = { SETUP_PORT_EXEC, SETUP_PORT_STDIN,
				     SETUP_PORT_CONTROL };
	struct exec_cbs		 cbs;

	if (b->x != NULL) {
		exec_gone(b->x, "the next one");
		exec_free(b->x);
	}
	memset(&spec, 0, sizeof spec);
	spec.kind = EXEC_COMMAND;
	spec.argv = argv;
	spec.timeout = b->s->profile->timeout;
	memset(&cbs, 0, sizeof cbs);
	cbs.output = setup_output_cb;
	cbs.done = setup_done_cb;
	cbs.arg = b;
	b->x = exec_new(b->s->loop, b->sb, &spec, &ports, &cbs);
	exec_start(b->x);
}

static void
setup_ready_cb(struct sandbox *sb, void *arg)
{
	struct setup_build	*b = arg;

	(void)sb;
	if (b->s->interrupted) {
		sandbox_stop(b->sb, "interrupted");
		return;
	}
	setup_exec(b, b->s->profile->setup[b->s->nlayers].argv);
}

static void
setup_failed_cb(struct sandbox *sb, const char *msg, void *arg)
{
	struct setup_build	*b = arg;

	(void)sb;
	if (b->error == NULL)
		b->error = xstrdup(msg);
}

static void
setup_dead_cb(struct sandbox *sb, void *arg)
{
	struct setup_build	*b = arg;

	(void)sb;
	ev_break(b->s->loop, EVBREAK_ONE);
}

/* The error of a step that did not exit 0: its status and output's tail. */
static char *
setup_failure(struct setup *s, struct setup_build *b, size_t i)
{
	struct buf	 t = { 0 };
	char		*msg, *step;
	size_t		 off = 0, lines = 0, k;

	step = image_layer_step_text(s->profile->setup[i].argv);
	/* The last 10 lines of the tail at most. */
	for (k = b->tail_len; k > 0; k--) {
		if (b->tail[k - 1] == '\n' && k != b->tail_len &&
		    ++lines == 10) {
			off = k;
			break;
		}
	}
	buf_add(&t, b->tail + off, b->tail_len - off);
	buf_add(&t, "", 1);
	if (b->error != NULL)
		xasprintf(&msg, "setup step %zu/%zu (%s) did not run to its "
		    "end: %s; nothing was cached", i + 1, s->profile->nsetup,
		    step, b->error);
	else if (b->signal != 0)
		xasprintf(&msg, "setup step %zu/%zu (%s) was killed by signal "
		    "%d; nothing was cached; its output ended:\n%s", i + 1,
		    s->profile->nsetup, step, b->signal, t.data);
	else
		xasprintf(&msg, "setup step %zu/%zu (%s) failed with exit "
		    "status %d; nothing was cached; its output ended:\n%s",
		    i + 1, s->profile->nsetup, step, b->status, t.data);
	free(step);
	buf_free(&t);
	return (msg);
}

/*
 * Build the layer of step i (its lock held exclusively) over the chain so
 * far; committed into the store on success. -1 with *cause.
 */
static int
setup_build(struct setup *s, size_t i, struct image_layer *l,
    const struct image_layer_parent *parent, char **cause)
{
	struct setup_build	 b;
	struct sandbox_cbs	 cbs;
	char			**paths, *step;
	size_t			 k;
	int			 rc = -1;

	memset(&b, 0, sizeof b);
	b.s = s;
	memset(&cbs, 0, sizeof cbs);
	cbs.ready = setup_ready_cb;
	cbs.failed = setup_failed_cb;
	cbs.dead = setup_dead_cb;
	cbs.arg = &b;
	b.sb = sandbox_new(s->loop, &s->build_profile, &cbs);
	s->building = b.sb;
	sandbox_set_image(b.sb, s->base);
	paths = xcalloc(i + 1, sizeof *paths);
	for (k = 0; k < i; k++)
		paths[k] = s->layers[k].path;
	sandbox_set_layers(b.sb, paths, i, s->store);
	free(paths);
	if (sandbox_start(b.sb, s->accel, cause) == -1)
		goto out;
	ev_run(s->loop, 0);
	if (s->interrupted) {
		*cause = xstrdup("interrupted");
		goto out;
	}
	if (!b.exited || b.error != NULL || b.status != 0 || b.signal != 0) {
		*cause = setup_failure(s, &b, i);
		goto out;
	}
	if (!sandbox_qemu_exited(b.sb)) {
		xasprintf(cause, "setup step %zu/%zu: QEMU did not stop "
		    "cleanly, so its disk cannot be trusted; nothing was "
		    "cached", i + 1, s->profile->nsetup);
		goto out;
	}
	step = image_layer_step_text(s->profile->setup[i].argv);
	rc = image_layer_commit(l, sandbox_overlay_path(b.sb), parent, step,
	    s->profile->env, s->profile->nenv, s->profile->disk_size, cause);
	free(step);
out:
	if (b.x != NULL) {
		exec_gone(b.x, "the build is over");
		exec_free(b.x);
	}
	s->building = NULL;
	sandbox_free(b.sb);	/* its run directory, overlay and all */
	free(b.error);
	return (rc);
}

static void
setup_waiting_cb(void *arg)
{
	struct setup	*s = arg;

	setup_waiting = 1;
	setup_say(s, "setup: waiting for another qsup building this layer");
}

/*
 * The profile of a build: setup's network, no shares, ports or maps, no
 * warm start, the guest's own working directory.
 */
static void
setup_build_profile(struct setup *s)
{
	struct profile	*bp = &s->build_profile;

	*bp = *s->profile;	/* shallow: never freed as a profile */
	bp->network = s->profile->setup_network;
	bp->network_allow = s->profile->setup_allow;
	bp->nnetwork_allow = s->profile->nsetup_allow;
	bp->network_open_ack = 1;	/* checked for setup_network itself */
	bp->ports = NULL;
	bp->nports = 0;
	bp->network_tcp = NULL;
	bp->nnetwork_tcp = 0;
	bp->shares = NULL;
	bp->nshares = 0;
	bp->guest_firewall = 0;
	/* The profile's may lie in a share, which a build has not. */
	bp->cwd = NULL;
	/*
	 * Booted cold: a template of each chain but the top would be saved
	 * for builds alone, a guest's RAM in the cache for each.
	 */
	bp->warm_start = 0;
}

/*
 * Every step's layer over base, found or built, in order; on success the
 * chain's paths are setup_paths(s), each layer held until setup_free.
 * -1 with *cause (a failing step: its status and output's tail).
 */
int
setup_run(struct setup *s, const char *base, char **cause)
{
	const struct profile		*p = s->profile;
	struct image_layer_parent	 parent;
	struct setup_report		*rep;
	char				*digest = NULL, *id = NULL, *key, *step;
	double				 t0;
	size_t				 i;
	int				 rc;

	if ((s->store = image_layer_dir(p->images_dir, cause)) == NULL)
		return (-1);
	if ((s->base = realpath(base, NULL)) == NULL) {
		xasprintf(cause, "image %s: %s", base, strerror(errno));
		return (-1);
	}
	if ((digest = image_base_digest(s->store, s->base, s->json, cause)) == NULL)
		return (-1);
	/*
	 * The base's path too: each layer's header names its parent's path,
	 * so the same bytes elsewhere (a copy, a move) get layers of their
	 * own rather than a chain that names a file gone.
	 */
	xasprintf(&id, "base:%s:%s", digest, s->base);
	free(digest);
	setup_build_profile(s);
	s->layers = xcalloc(p->nsetup, sizeof *s->layers);
	s->reports = xcalloc(p->nsetup, sizeof *s->reports);
	parent.id = id;
	parent.path = s->base;
	parent.build = NULL;
	for (i = 0; i < p->nsetup; i++) {
		t0 = util_now();
		rep = &s->reports[i];
		key = image_layer_key(parent.id, p->setup[i].argv, p->env,
		    p->nenv, p->disk_size);
		step = image_layer_step_text(p->setup[i].argv);
		rep->step = step;
		rep->key = key;
		rc = image_layer_get(s->store, key, &s->layers[i],
		    setup_waiting_cb, s, cause);
		setup_waiting = 0;
		if (rc == -1) {
			image_layer_release(&s->layers[i]);
			goto fail;
		}
		s->nlayers = i;
		if (rc == 0) {
			setup_say(s, "setup %zu/%zu: %s", i + 1, p->nsetup,
			    step);
			if (setup_build(s, i, &s->layers[i], &parent,
			    cause) == -1) {
				image_layer_release(&s->layers[i]);
				goto fail;
			}
			rep->built = 1;
		} else if (strcmp(s->layers[i].parent, parent.id) != 0 ||
		    strcmp(s->layers[i].parent_path, parent.path) != 0 ||
		    strcmp(s->layers[i].parent_build, parent.build != NULL ?
		    parent.build : "") != 0) {
			xasprintf(cause, "setup %zu/%zu: layer %s was built "
			    "over another copy of its parent (%s); qsup image "
			    "prune removes it when no run uses it", i + 1,
			    p->nsetup, key, s->layers[i].parent_path);
			image_layer_release(&s->layers[i]);
			goto fail;
		} else
			log_debug("setup %zu/%zu: %s: layer %.12s, cached",
			    i + 1, p->nsetup, step, key);
		s->nlayers = i + 1;
		rep->seconds = util_now() - t0;
		parent.id = s->layers[i].key;
		parent.path = s->layers[i].path;
		parent.build = s->layers[i].build;
	}
	s->nreports = p->nsetup;
	free(id);
	return (0);
fail:
	s->nreports = i + 1;
	s->reports[i].failed = 1;
	s->reports[i].seconds = util_now() - t0;
	free(id);
	return (-1);
}

/* The chain for sandbox_set_layers: a new array of borrowed strings. */
char **
setup_paths(struct setup *s)
{
	char	**v;
	size_t	  i;

	v = xcalloc(s->nlayers + 1, sizeof *v);
	for (i = 0; i < s->nlayers; i++)
		v[i] = s->layers[i].path;
	return (v);
}

/* A signal: the build under way stops, and nothing is cached. */
void
setup_interrupt(struct setup *s)
{
	s->interrupted = 1;
	if (s->building != NULL)
		sandbox_stop(s->building, "interrupted");
}

/* --json's "layers": each step, hit or built (or failed), and seconds. */
void
setup_json(const struct setup *s, struct buf *b)
{
	size_t	i;

	buf_puts(b, "[");
	for (i = 0; i < s->nreports; i++) {
		buf_puts(b, i > 0 ? ",{\"step\":" : "{\"step\":");
		buf_json_string(b, s->reports[i].step);
		buf_puts(b, ",\"key\":");
		buf_json_string(b, s->reports[i].key);
		buf_printf(b, ",\"result\":\"%s\",\"seconds\":%.3f}",
		    s->reports[i].failed ? "failed" : s->reports[i].built ?
		    "built" : "hit", s->reports[i].seconds);
	}
	buf_puts(b, "]");
}

/* Let go of every layer (the run is over), and the rest. */
void
setup_free(struct setup *s)
{
	size_t	i;

	for (i = 0; i < s->nlayers; i++)
		image_layer_release(&s->layers[i]);
	free(s->layers);
	for (i = 0; i < s->nreports; i++) {
		free(s->reports[i].step);
		free(s->reports[i].key);
	}
	free(s->reports);
	free(s->store);
	free(s->base);
	memset(s, 0, sizeof *s);
}
