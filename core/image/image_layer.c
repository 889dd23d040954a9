/*
 * Layers: the results of a profile's setup steps, each a qcow2 file whose
 * backing file is its parent (the base image, or the layer of the step
 * before), kept in images_dir/layers as KEY.qcow2 beside KEY.meta (JSON:
 * parent, step, env, disk size, created, build) and KEY.lock; its file's
 * size is the layer's, the meta's mtime when a run last used it. KEY is a digest
 * of the parent's identity (the base's SHA-256, or the parent layer's
 * KEY), the step's argv, the environment and the disk's size, so a
 * changed step gets a new key, and so does every step after it.
 *
 * KEY.lock is flock(2)ed: exclusively by the one qsup building the layer
 * (others wait), shared by every run using it, for as long as it runs;
 * prune removes only layers whose lock it gets exclusively at once. A
 * layer appears whole or not at all: copied to a hidden file of the
 * store, synced, then renamed onto KEY.qcow2 after its meta.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "image_int.h"

#define LAYER_DIR		"layers"
#define LAYER_BASES		".bases"	/* base digests, by stat */
#define LAYER_WAIT_POLL		100000		/* us between lock tries */
#define LAYER_COPY_CHUNK	(1 << 20)

/* images_dir/layers, made (0700) if it is not there; NULL with *cause. */
char *
image_layer_dir(const char *images_dir, char **cause)
{
	char	*dir, *def = NULL, *path;

	if (images_dir == NULL)
		images_dir = def = image_default_dir();
	xasprintf(&dir, "%s/%s", images_dir, LAYER_DIR);
	free(def);
	xasprintf(&path, "%s/%s", dir, LAYER_BASES);
	if (util_mkdir_p(path, 0700) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
		free(dir);
		return (NULL);
	}
	free(path);
	return (dir);
}

static char *
layer_sha256_hex(const void *p, size_t len)
{
	unsigned char	d[32];

	mbedtls_sha256_ret(p, len, d, 0);
	return (token_hex_of(d, sizeof d));
}

/* Hash a whole file; NULL with *cause. */
static char *
layer_hash_file(const char *path, char **cause)
{
	mbedtls_sha256_context	 c;
	unsigned char		*buf, d[32];
	ssize_t			 n;
	int			 fd;

	if ((fd = open(path, O_RDONLY|O_CLOEXEC)) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	buf = xmalloc(LAYER_COPY_CHUNK);
	mbedtls_sha256_init(&c);
	mbedtls_sha256_starts_ret(&c, 0);
	while ((n = read(fd, buf, LAYER_COPY_CHUNK)) > 0)
		mbedtls_sha256_update_ret(&c, buf, (size_t)n);
	mbedtls_sha256_finish_ret(&c, d);
	mbedtls_sha256_free(&c);
	free(buf);
	close(fd);
	if (n == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		return (NULL);
	}
	return (token_hex_of(d, sizeof d));
}

/*
 * The base's SHA-256, as a layer's key starts from. A pulled image's
 * .meta has it (its size checked); any other file is hashed once and its
 * digest kept in layers/.bases by its path, beside its device, inode,
 * size, mtime and ctime, so a base is hashed again only once it changed
 * (which is said, unless quiet).
 */
char *
image_base_digest(const char *layers, const char *base, int quiet,
    char **cause)
{
	struct image_info	 ii;
	struct stat		 st;
	json_t			*j;
	char			*meta, *id, *cache, *text, *hex = NULL, *key;
	const char		*s;
	size_t			 len;

	if (stat(base, &st) == -1) {
		xasprintf(cause, "%s: %s", base, strerror(errno));
		return (NULL);
	}
	xasprintf(&meta, "%s.meta", base);
	if (image_meta_read(meta, &ii) == 0) {
		if (ii.size == (uint64_t)st.st_size && strlen(ii.sha256) == 64)
			hex = xstrdup(ii.sha256);
		image_info_free(&ii);
	}
	free(meta);
	if (hex != NULL)
		return (hex);
	xasprintf(&id, "%ju %ju %jd %lld.%09ld %lld.%09ld", (uintmax_t)st.st_dev,
	    (uintmax_t)st.st_ino, (intmax_t)st.st_size,
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
	    (long long)st.st_ctim.tv_sec, st.st_ctim.tv_nsec);
	key = layer_sha256_hex(base, strlen(base));
	xasprintf(&cache, "%s/%s/%s", layers, LAYER_BASES, key);
	free(key);
	if ((text = util_read_file(cache, &len, IMAGE_META_MAX)) != NULL &&
	    (j = json_read(text, len, 0)) != NULL) {
		if ((s = json_path_str(j, "stat")) != NULL &&
		    strcmp(s, id) == 0 && (s = json_path_str(j, "sha256")) !=
		    NULL && strlen(s) == 64)
			hex = xstrdup(s);
		json_decref(j);
	}
	free(text);
	if (hex == NULL && !quiet)
		log_info("setup: hashing the image %s (%.1f MB) once, for its "
		    "layers' keys", base, st.st_size / 1e6);
	if (hex == NULL && (hex = layer_hash_file(base, cause)) != NULL) {
		xasprintf(&text, "{\"stat\":\"%s\",\"sha256\":\"%s\"}\n", id,
		    hex);
		xasprintf(&meta, "%s.%ld", cache, (long)getpid());
		if (util_write_file(meta, text) == -1 ||
		    rename(meta, cache) == -1)
			unlink(meta);	/* hashed again next time */
		free(meta);
		free(text);
	}
	free(cache);
	free(id);
	return (hex);
}

/*
 * A layer's key: its parent's identity, each word of the step, each
 * variable of the environment and the disk's size, each with its length
 * so no two lists run together into the same bytes.
 */
char *
image_layer_key(const char *parent, char *const *argv, char *const *env,
    size_t nenv, uint64_t size)
{
	struct buf	 b = { 0 };
	char		*hex;
	size_t		 i;

	buf_printf(&b, "qsup-layer 1\nparent %zu %s\nsize %" PRIu64 "\n",
	    strlen(parent), parent, size);
	for (i = 0; argv[i] != NULL; i++)
		buf_printf(&b, "arg %zu %s\n", strlen(argv[i]), argv[i]);
	for (i = 0; i < nenv; i++)
		buf_printf(&b, "env %zu %s\n", strlen(env[i]), env[i]);
	hex = layer_sha256_hex(b.data, b.len);
	buf_free(&b);
	return (hex);
}

/* The step as a person reads it: sh -c's string, or the words. */
char *
image_layer_step_text(char *const *argv)
{
	struct buf	 b = { 0 };
	size_t		 i;

	if (argv[0] != NULL && argv[1] != NULL && argv[2] != NULL &&
	    argv[3] == NULL && strcmp(argv[0], "sh") == 0 &&
	    strcmp(argv[1], "-c") == 0)
		return (xstrdup(argv[2]));
	for (i = 0; argv[i] != NULL; i++) {
		if (i > 0)
			buf_puts(&b, " ");
		if (argv[i][0] != '\0' && strpbrk(argv[i], " \t\n'\"\\$")
		    == NULL)
			buf_puts(&b, argv[i]);
		else
			buf_json_string(&b, argv[i]);
	}
	return (b.data != NULL ? b.data : xstrdup(""));
}

static void
layer_paths(struct image_layer *l, const char *dir, const char *key)
{
	l->dir = xstrdup(dir);
	l->key = xstrdup(key);
	xasprintf(&l->path, "%s/%s.qcow2", dir, key);
	xasprintf(&l->meta, "%s/%s.meta", dir, key);
	xasprintf(&l->lock, "%s/%s.lock", dir, key);
}

/* Read KEY.meta into l; -1 if it is missing or bad. */
static int
layer_meta_read(struct image_layer *l)
{
	json_t		*j, *env, *e;
	size_t		 i;
	const char	*s;
	char		*text;
	long long	 v;
	size_t		 len;
	struct stat	 st;

	if ((text = util_read_file(l->meta, &len, IMAGE_META_MAX)) == NULL)
		return (-1);
	j = json_read(text, len, 0);
	free(text);
	if (j == NULL)
		return (-1);
	if ((s = json_path_str(j, "parent")) != NULL)
		l->parent = xstrdup(s);
	if ((s = json_path_str(j, "parent_path")) != NULL)
		l->parent_path = xstrdup(s);
	if ((s = json_path_str(j, "parent_build")) != NULL)
		l->parent_build = xstrdup(s);
	if ((s = json_path_str(j, "build")) != NULL)
		l->build = xstrdup(s);
	if ((s = json_path_str(j, "step")) != NULL)
		l->step = xstrdup(s);
	if (json_path_int(j, "created", &v) == 0)
		l->created = v;
	if (json_path_int(j, "disk_size", &v) == 0 && v >= 0)
		l->disk_size = (uint64_t)v;
	if ((env = json_object_get(j, "env")) != NULL && json_is_array(env)) {
		l->env = xcalloc(json_array_size(env) + 1, sizeof *l->env);
		json_array_foreach(env, i, e) {
			if (json_is_string(e))
				l->env[l->nenv++] = xstrdup(
				    json_string_value(e));
		}
	}
	json_decref(j);
	if (stat(l->meta, &st) == 0)
		l->used = st.st_mtim.tv_sec;
	if (stat(l->path, &st) == 0)
		l->size = (uint64_t)st.st_size;
	if (l->parent == NULL || l->parent_path == NULL || l->build == NULL ||
	    l->step == NULL)
		return (-1);
	return (0);
}

/*
 * Lock path (made if need be) as how asks, checking that the file locked
 * is still the one at the path (prune unlinks it while locked, as pulls
 * do their locks). With wait, a lock held elsewhere is waited for, once
 * *waiting is called; else 0 if it is held. fd or -1.
 */
static int
layer_flock(const char *path, int how, int wait, void (*waiting)(void *),
    void *arg, int *busy)
{
	struct stat	a, b;
	int		fd, told = 0;

	*busy = 0;
	for (;;) {
		if ((fd = open(path, O_RDWR|O_CREAT|O_CLOEXEC, 0600)) == -1)
			return (-1);
		while (flock(fd, how|LOCK_NB) == -1) {
			if (errno != EWOULDBLOCK && errno != EINTR)
				goto fail;
			if (!wait || util_stop_now) {
				*busy = 1;
				goto fail;
			}
			if (!told && waiting != NULL)
				waiting(arg);
			told = 1;
			usleep(LAYER_WAIT_POLL);
		}
		if (fstat(fd, &a) == 0 && stat(path, &b) == 0 &&
		    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return (fd);
		close(fd);	/* pruned meanwhile: the new one */
	}
fail:
	close(fd);
	return (-1);
}

/*
 * A built layer for a caller that must not wait (serve's loop): 1,
 * present, held shared; 0, absent; 2, held by a builder; -1 with *cause.
 * Nothing is held but on 1.
 */
static int
layer_get_now(const char *dir, const char *key, struct image_layer *l,
    char **cause)
{
	int	busy;

	memset(l, 0, sizeof *l);
	l->lock_fd = -1;
	layer_paths(l, dir, key);
	if ((l->lock_fd = layer_flock(l->lock, LOCK_SH, 0, NULL, NULL,
	    &busy)) == -1) {
		if (busy) {
			image_layer_release(l);
			return (2);
		}
		xasprintf(cause, "%s: %s", l->lock, strerror(errno));
		image_layer_release(l);
		return (-1);
	}
	if (access(l->path, F_OK) == -1) {
		image_layer_release(l);
		return (0);
	}
	if (layer_meta_read(l) == -1) {
		xasprintf(cause, "layer %s: its meta %s is missing or bad; qsup "
		    "image prune --all removes it", key, l->meta);
		image_layer_release(l);
		return (-1);
	}
	(void)utimensat(AT_FDCWD, l->meta, NULL, 0);
	return (1);
}

/*
 * Get the layer KEY of dir for a run: 1, present, its meta read and its
 * lock held shared until image_layer_release; 0, absent, its lock held
 * exclusively: the caller builds it (image_layer_commit) or gives up
 * (image_layer_release). A layer another qsup is building is waited for
 * (waiting is called first, once), then found present. -1 with *cause.
 */
int
image_layer_get(const char *dir, const char *key, struct image_layer *l,
    void (*waiting)(void *), void *arg, char **cause)
{
	int	busy;

	memset(l, 0, sizeof *l);
	l->lock_fd = -1;
	layer_paths(l, dir, key);
	for (;;) {
		if ((l->lock_fd = layer_flock(l->lock, LOCK_SH, 1, waiting,
		    arg, &busy)) == -1)
			goto fail;
		if (access(l->path, F_OK) == 0) {
			if (layer_meta_read(l) == 0) {
				(void)utimensat(AT_FDCWD, l->meta, NULL, 0);
				return (1);
			}
			xasprintf(cause, "layer %s: its meta %s is missing or "
			    "bad; qsup image prune --all removes it", key,
			    l->meta);
			return (-1);
		}
		/* Absent: to build it, the lock alone. */
		if (flock(l->lock_fd, LOCK_EX|LOCK_NB) == 0)
			return (0);
		close(l->lock_fd);
		l->lock_fd = -1;
		if ((l->lock_fd = layer_flock(l->lock, LOCK_EX, 1, waiting,
		    arg, &busy)) == -1)
			goto fail;
		if (access(l->path, F_OK) == -1)
			return (0);
		close(l->lock_fd);	/* built meanwhile: as a user, again */
		l->lock_fd = -1;
	}
fail:
	if (util_stop_now)
		*cause = xstrdup("interrupted");
	else
		xasprintf(cause, "%s: %s", l->lock, strerror(errno));
	return (-1);
}

/* Copy src to dst (a new file), synced; -1 with errno. */
static int
layer_copy(const char *src, const char *dst)
{
	char	*buf;
	ssize_t	 n, w, off;
	int	 in, out = -1, rc = -1, saved;

	if ((in = open(src, O_RDONLY|O_CLOEXEC)) == -1)
		return (-1);
	if ((out = open(dst, O_WRONLY|O_CREAT|O_EXCL|O_CLOEXEC, 0600)) == -1)
		goto out;
	buf = xmalloc(LAYER_COPY_CHUNK);
	while ((n = read(in, buf, LAYER_COPY_CHUNK)) > 0) {
		for (off = 0; off < n; off += w) {
			if ((w = write(out, buf + off, (size_t)(n - off))) ==
			    -1)
				break;
		}
		if (off < n)
			break;
	}
	free(buf);
	if (n == 0 && fsync(out) == 0)
		rc = 0;
out:
	saved = errno;
	if (out != -1)
		close(out);
	close(in);
	errno = saved;
	return (rc);
}

/*
 * The built layer into the store: overlay (QEMU stopped, the guest's
 * writes synced) copied beside KEY.qcow2 under a hidden name, its meta
 * written, then renamed into place; the lock is then held shared, as
 * image_layer_get leaves a present one. Nothing is left on failure.
 */
int
image_layer_commit(struct image_layer *l, const char *overlay,
    const struct image_layer_parent *parent, const char *step,
    char *const *env, size_t nenv, uint64_t disk_size, char **cause)
{
	size_t		 i;
	struct buf	 b = { 0 };
	char		*tmp, *meta_tmp, *build = NULL;
	int		 rc = -1;

	xasprintf(&tmp, "%s/.%s.qcow2.%ld", l->dir, l->key, (long)getpid());
	xasprintf(&meta_tmp, "%s.%ld", l->meta, (long)getpid());
	if (layer_copy(overlay, tmp) == -1) {
		xasprintf(cause, "layer %s: %s", l->key, errno == ENOSPC ?
		    "no space left in the layer store" : strerror(errno));
		goto out;
	}
	build = token_hex(16);
	buf_puts(&b, "{\"parent\":");
	buf_json_string(&b, parent->id);
	buf_puts(&b, ",\"parent_path\":");
	buf_json_string(&b, parent->path);
	buf_puts(&b, ",\"parent_build\":");
	buf_json_string(&b, parent->build != NULL ? parent->build : "");
	buf_puts(&b, ",\"build\":");
	buf_json_string(&b, build);
	buf_puts(&b, ",\"step\":");
	buf_json_string(&b, step);
	buf_puts(&b, ",\"env\":[");
	for (i = 0; i < nenv; i++) {
		if (i > 0)
			buf_puts(&b, ",");
		buf_json_string(&b, env[i]);
	}
	buf_printf(&b, "],\"disk_size\":%llu,\"created\":%lld}\n",
	    (unsigned long long)disk_size, (long long)time(NULL));
	if (util_write_file(meta_tmp, b.data) == -1 ||
	    rename(meta_tmp, l->meta) == -1 || rename(tmp, l->path) == -1) {
		xasprintf(cause, "layer %s: %s", l->key, strerror(errno));
		unlink(l->meta);
		goto out;
	}
	(void)flock(l->lock_fd, LOCK_SH);
	rc = layer_meta_read(l);
	if (rc == -1)
		xasprintf(cause, "layer %s: its meta did not read back", l->key);
out:
	unlink(tmp);
	unlink(meta_tmp);
	free(build);
	free(tmp);
	free(meta_tmp);
	buf_free(&b);
	return (rc);
}

/* Let go of the layer (its lock); l can be got again. */
void
image_layer_release(struct image_layer *l)
{
	size_t	i;

	if (l->lock_fd != -1)
		close(l->lock_fd);
	l->lock_fd = -1;
	free(l->dir);
	free(l->key);
	free(l->path);
	free(l->meta);
	free(l->lock);
	free(l->parent);
	free(l->parent_path);
	free(l->parent_build);
	free(l->build);
	free(l->step);
	for (i = 0; i < l->nenv; i++)
		free(l->env[i]);
	free(l->env);
	memset(l, 0, sizeof *l);
	l->lock_fd = -1;
}

static int
layer_each_filter(const struct dirent *de)
{
	size_t	len = strlen(de->d_name);

	return (len == 64 + 5 && strcmp(de->d_name + 64, ".meta") == 0);
}

/*
 * Every layer of dir (images_dir/layers), its meta read, sorted by key;
 * in_use says whether a run holds it (its lock not to be had at once).
 */
int
image_layer_each(const char *dir, void (*cb)(const struct image_layer *,
    int, void *), void *arg)
{
	struct image_layer	 l;
	struct dirent		**des;
	char			*key;
	int			 i, n, fd, busy;

	if ((n = scandir(dir, &des, layer_each_filter, alphasort)) == -1)
		return (errno == ENOENT ? 0 : -1);
	for (i = 0; i < n; i++) {
		memset(&l, 0, sizeof l);
		key = xstrndup(des[i]->d_name, 64);
		layer_paths(&l, dir, key);
		free(key);
		l.lock_fd = -1;
		(void)layer_meta_read(&l);
		fd = layer_flock(l.lock, LOCK_EX, 0, NULL, NULL, &busy);
		if (fd != -1)
			close(fd);
		cb(&l, busy, arg);
		image_layer_release(&l);
		free(des[i]);
	}
	free(des);
	return (0);
}

/* A part a build left: .KEY.qcow2.PID or KEY.meta.PID. */
static int
layer_part_filter(const struct dirent *de)
{
	const char	*n = de->d_name;

	if (n[0] == '.' && strncmp(n + 65, ".qcow2.", 7) == 0 &&
	    strlen(n) > 72)
		return (1);
	return (strlen(n) > 70 && strncmp(n + 64, ".meta.", 6) == 0);
}

/* Remove the parts of builds whose qsup is gone (killed outright). */
static void
layer_sweep_parts(const char *dir)
{
	struct dirent	**des;
	const char	 *dot;
	char		 *path;
	long		  pid;
	int		  n, i;

	if ((n = scandir(dir, &des, layer_part_filter, alphasort)) == -1)
		return;
	for (i = 0; i < n; i++) {
		dot = strrchr(des[i]->d_name, '.');
		pid = strtol(dot + 1, NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) == -1 && errno == ESRCH) {
			xasprintf(&path, "%s/%s", dir, des[i]->d_name);
			unlink(path);
			free(path);
		}
		free(des[i]);
	}
	free(des);
}

/*
 * Remove the layers of dir that no run holds (their lock had exclusively
 * at once), and with older_than > 0 only those unused for that many
 * seconds; a layer kept keeps its parents; and the parts of builds whose
 * qsup was killed outright. cb hears of each removed
 * (removed 1) or kept because in use (removed 0). -1 with *cause.
 */
int
image_layer_prune(const char *dir, long long older_than,
    void (*cb)(const struct image_layer *, int, void *), void *arg,
    char **cause)
{
	struct image_layer	*ls = NULL;
	struct dirent		**des;
	char			*key, *tmp;
	size_t			 nl = 0, i, j;
	int			 n, k, busy, changed;
	int			*keep;
	time_t			 now = time(NULL);

	layer_sweep_parts(dir);
	if ((n = scandir(dir, &des, layer_each_filter, alphasort)) == -1) {
		if (errno == ENOENT)
			return (0);
		xasprintf(cause, "%s: %s", dir, strerror(errno));
		return (-1);
	}
	ls = xcalloc((size_t)n + 1, sizeof *ls);
	keep = xcalloc((size_t)n + 1, sizeof *keep);
	for (k = 0; k < n; k++) {
		key = xstrndup(des[k]->d_name, 64);
		layer_paths(&ls[nl], dir, key);
		free(key);
		free(des[k]);
		(void)layer_meta_read(&ls[nl]);
		ls[nl].lock_fd = layer_flock(ls[nl].lock, LOCK_EX, 0, NULL,
		    NULL, &busy);
		keep[nl] = ls[nl].lock_fd == -1 || (older_than > 0 &&
		    ls[nl].used > now - older_than);
		nl++;
	}
	free(des);
	/* The parents of a layer kept are kept. */
	do {
		changed = 0;
		for (i = 0; i < nl; i++) {
			for (j = 0; keep[i] && j < nl; j++) {
				if (!keep[j] && ls[i].parent != NULL &&
				    strcmp(ls[i].parent, ls[j].key) == 0) {
					keep[j] = changed = 1;
				}
			}
		}
	} while (changed);
	for (i = 0; i < nl; i++) {
		if (!keep[i]) {
			unlink(ls[i].path);
			unlink(ls[i].meta);
			unlink(ls[i].lock);	/* still locked: see layer_flock */
			xasprintf(&tmp, "%s/%s.meta.tmp", dir, ls[i].key);
			unlink(tmp);
			free(tmp);
		}
		if (!keep[i] || ls[i].lock_fd == -1)
			cb(&ls[i], !keep[i], arg);
		image_layer_release(&ls[i]);
	}
	free(ls);
	free(keep);
	return (0);
}

/*
 * Every step's layer over base, all present (a run of "qsup run
 * --setup-only" built them): got, each held shared until released, in
 * layers (nsteps of them). A layer missing, or built over another copy
 * of its parent, is an error naming its step. 0, or -1 with *cause and
 * nothing held.
 */
int
image_layer_chain(const char *dir, const char *base, char **const *steps,
    size_t nsteps, char *const *env, size_t nenv, uint64_t disk_size,
    struct image_layer *layers, char **cause)
{
	struct image_layer_parent	 parent;
	char				*digest, *id, *key = NULL;
	size_t				 i, k;
	int				 rc;

	if ((digest = image_base_digest(dir, base, 1, cause)) == NULL)
		return (-1);
	xasprintf(&id, "base:%s:%s", digest, base);
	free(digest);
	parent.id = id;
	parent.path = base;
	parent.build = NULL;
	for (i = 0; i < nsteps; i++) {
		key = image_layer_key(parent.id, steps[i], env, nenv,
		    disk_size);
		rc = layer_get_now(dir, key, &layers[i], cause);
		if (rc == 0)
			xasprintf(cause, "setup %zu/%zu: layer %s is not in "
			    "the store (pruned meanwhile?)", i + 1, nsteps,
			    key);
		else if (rc == 2) {
			xasprintf(cause, "setup %zu/%zu: layer %s is being "
			    "built again by another qsup (pruned meanwhile); "
			    "try again once it is", i + 1, nsteps, key);
			rc = -1;
		}
		else if (rc == 1 && (strcmp(layers[i].parent, parent.id) != 0 ||
		    strcmp(layers[i].parent_path, parent.path) != 0 ||
		    strcmp(layers[i].parent_build, parent.build != NULL ?
		    parent.build : "") != 0)) {
			xasprintf(cause, "setup %zu/%zu: layer %s was built "
			    "over another copy of its parent (%s); qsup image "
			    "prune removes it when no run uses it", i + 1,
			    nsteps, key, layers[i].parent_path);
			rc = -1;
		}
		free(key);
		if (rc != 1) {
			for (k = 0; k <= i; k++)
				image_layer_release(&layers[k]);
			free(id);
			return (-1);
		}
		parent.id = layers[i].key;
		parent.path = layers[i].path;
		parent.build = layers[i].build;
	}
	free(id);
	return (0);
}
