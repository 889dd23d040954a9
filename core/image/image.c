/*
 * images_dir and what is in it: where an image of a URL is kept, the
 * .meta beside it that says what it came from, whether it is cached
 * whole, listing and removing images, and whether a running sandbox uses
 * one. The download itself is image_pull.c's.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <mbedtls/sha256.h>

#include "image_int.h"

/* images_dir's default: $XDG_DATA_HOME/qsup/images, ~/.local/share/... */
char *
image_default_dir(void)
{
	const char	*xdg, *home;
	char		*dir;

	if ((xdg = getenv("XDG_DATA_HOME")) != NULL && *xdg == '/')
		xasprintf(&dir, "%s/qsup/images", xdg);
	else if ((home = getenv("HOME")) != NULL && *home == '/')
		xasprintf(&dir, "%s/.local/share/qsup/images", home);
	else
		return (NULL);
	return (dir);
}

/* Seconds without a byte before a pull gives up: the request's, or 30. */
double
image_stall_timeout(const struct image_req *req)
{
	const char	*e;
	double		 t;

	if (req->stall_timeout > 0)
		return (req->stall_timeout);
	if ((e = getenv("QSUP_IMAGE_STALL_TIMEOUT")) != NULL &&
	    (t = strtod(e, NULL)) > 0 && t < 1e6)
		return (t);
	return (IMAGE_STALL_DEFAULT);
}

/*
 * The most bytes req's image may have in dir, counting the have bytes of
 * its part already there: image_max_size, or the free space of dir's file
 * system less a margin, whichever is smaller; *why names which, with its
 * bytes, for a message. The margin (5% of the file system, at most 1 GiB)
 * is the host's: a full disk fails more than the pull.
 */
uint64_t
image_room(const struct image_req *req, const char *dir, uint64_t have,
    char **why)
{
	struct statvfs	sv;
	uint64_t	max, avail, margin, room;

	max = req->max_size != 0 ? req->max_size : IMAGE_MAX_SIZE_DEFAULT;
	if (statvfs(dir, &sv) == 0) {
		avail = (uint64_t)sv.f_bavail * sv.f_frsize;
		margin = (uint64_t)sv.f_blocks * sv.f_frsize / 20;
		if (margin > IMAGE_ROOM_MARGIN_MAX)
			margin = IMAGE_ROOM_MARGIN_MAX;
		room = have + (avail > margin ? avail - margin : 0);
		if (room < max) {
			xasprintf(why, "the room in %s, %llu bytes (its free "
			    "space less a margin of %llu)", dir,
			    (unsigned long long)room,
			    (unsigned long long)margin);
			return (room);
		}
	}
	xasprintf(why, "image_max_size, %llu bytes", (unsigned long long)max);
	return (max);
}

/*
 * The last component of url's path (no query, no fragment): the image's
 * name in images_dir. NULL if there is none, or it could not be a plain
 * file's name (a dot first, a control character, too long).
 */
char *
image_url_name(const char *url)
{
	const char	*p, *end, *slash;
	size_t		 n, i;

	if ((p = strstr(url, "://")) == NULL)
		return (NULL);
	p += 3;
	end = p + strcspn(p, "?#");
	if ((slash = memrchr(p, '/', end - p)) == NULL)
		return (NULL);
	n = end - slash - 1;
	if (n == 0 || n > 200 || slash[1] == '.')
		return (NULL);
	for (i = 0; i < n; i++) {
		if ((unsigned char)slash[1 + i] < 0x20 || slash[1 + i] == 0x7f)
			return (NULL);
	}
	return (xstrndup(slash + 1, n));
}

/*
 * Durability. A pulled file (an image, a registry's blob) is trusted by
 * its .meta without being hashed again, so it must be on the disk before
 * a crash can leave its .meta without it. Waiting for that (fdatasync) was
 * the largest part of a pull after its download: about 0.2 s for a
 * 150 MB image, the disk's time to write it, which curl -o and skopeo
 * copy do not wait for. So the sync is left to the kernel's writeback
 * (a dirty page is written within about half a minute; even starting it
 * at once, sync_file_range, blocked the pull for 0.1 s of a 150 MB
 * image), and the .meta says "unsynced" with this boot's id:
 *   - read in the same boot, the file is what was written (the page
 *     cache is the file), and trusted; once it is IMAGE_SETTLE_S old (the
 *     kernel has long written it back) its reader syncs it, which costs
 *     nothing by then, and rewrites the .meta without the mark; a
 *     sandbox about to use an image syncs it first (image_settle);
 *   - read in another boot, it is the one file that a crash may have
 *     torn: hashed again where its .meta's digest is its bytes' (a URL's
 *     image, a registry's blob) and kept if it is whole; else (a
 *     registry's image: the digest is its manifest's) removed with its
 *     .meta, for the next pull to build again from its blobs.
 * Without a boot id (no /proc), files are synced before their .meta.
 */
const char *
image_boot_id(void)
{
	static char	*id;
	static int	 read_once;
	size_t		 len;

	if (!read_once) {
		read_once = 1;
		id = util_read_file("/proc/sys/kernel/random/boot_id", &len,
		    128);
		if (id != NULL)
			id[strcspn(id, "\n")] = '\0';
		if (id != NULL && *id == '\0') {
			free(id);
			id = NULL;
		}
	}
	return (id);
}

/*
 * The file of meta (its path less ".meta") as its "unsynced" (mark, the
 * boot it was written in, or NULL) says: 0 if it is trusted, -1 if it
 * was removed (written in another boot, and not what its digest says).
 */
static int
image_meta_settle(const char *meta, const char *mark, struct image_info *ii,
    int now)
{
	const char	*boot = image_boot_id();
	char		*path, *cause = NULL, hex[65];
	size_t		 n = strlen(meta);
	int		 fd, rc = 0, old;

	if ((ii->unsynced = mark != NULL) == 0)
		return (0);
	if (n <= 5 || strcmp(meta + n - 5, ".meta") != 0)
		return (0);
	path = xstrndup(meta, n - 5);
	old = boot == NULL || strcmp(boot, mark) != 0;
	if (old && (strncmp(ii->url, "docker://", 9) == 0 ||
	    image_oci_sha256(path, hex) == -1 ||
	    strcasecmp(hex, ii->sha256) != 0)) {
		log_info("%s: written without a sync in an earlier boot "
		    "(%s), and not known whole: removed, to be pulled again",
		    path, mark);
		(void)unlink(path);
		(void)unlink(meta);
		rc = -1;
	} else if ((old || now || ii->pulled + IMAGE_SETTLE_S <=
	    (long long)time(NULL)) &&
	    (fd = open(path, O_RDONLY|O_CLOEXEC)) != -1) {
		/* Long written back, or found whole: the sync makes it
		 * sure. */
		if (fdatasync(fd) == 0) {
			ii->unsynced = 0;
			if (image_meta_write(meta, ii, &cause) == -1) {
				log_debug("%s", cause);
				free(cause);
			}
		}
		close(fd);
	}
	free(path);
	return (rc);
}

static int	image_meta_read_settled(const char *, struct image_info *,
		    int);

/*
 * Read path's .meta into ii (zeroed first); -1 if it is none or bad, or
 * its file was written in an earlier boot without a sync (both removed).
 */
int
image_meta_read(const char *path, struct image_info *ii)
{
	return (image_meta_read_settled(path, ii, 0));
}

/*
 * An image a sandbox is about to use, synced now if its .meta says it
 * is not yet: what is built on it (an overlay that serve keeps across a
 * restart, a setup layer) must not outlive it in a crash. Just after
 * its pull this waits for what is left of its writeback; after that it
 * costs a read of its .meta. Nothing if it has no .meta (a user's file).
 */
void
image_settle(const char *path)
{
	struct image_info	 ii;
	char			*meta;

	xasprintf(&meta, "%s.meta", path);
	if (access(meta, F_OK) == 0 &&
	    image_meta_read_settled(meta, &ii, 1) == 0)
		image_info_free(&ii);
	free(meta);
}

static int
image_meta_read_settled(const char *path, struct image_info *ii, int now)
{
	json_t		*j;
	char		*text;
	const char	*s;
	long long	 v;
	size_t		 len;

	memset(ii, 0, sizeof *ii);
	if ((text = util_read_file(path, &len, IMAGE_META_MAX)) == NULL)
		return (-1);
	j = json_read(text, len, 0);
	free(text);
	if (j == NULL)
		return (-1);
	if ((s = json_path_str(j, "url")) != NULL)
		ii->url = xstrdup(s);
	if ((s = json_path_str(j, "sha256")) != NULL)
		ii->sha256 = xstrdup(s);
	if ((s = json_path_str(j, "checked")) != NULL)
		ii->checked = xstrdup(s);
	if (json_path_int(j, "size", &v) == 0 && v >= 0)
		ii->size = v;
	if (json_path_int(j, "pulled", &v) == 0)
		ii->pulled = v;
	if (ii->url == NULL || ii->sha256 == NULL || image_meta_settle(path,
	    json_path_str(j, "unsynced"), ii, now) == -1) {
		json_decref(j);
		image_info_free(ii);
		return (-1);
	}
	json_decref(j);
	return (0);
}

/* Write ii as path (a .meta), whole or not at all. */
int
image_meta_write(const char *path, const struct image_info *ii, char **cause)
{
	struct buf	 b = { 0 };
	char		*tmp;
	int		 rc = 0;

	buf_puts(&b, "{\"url\":");
	buf_json_string(&b, ii->url);
	buf_puts(&b, ",\"sha256\":");
	buf_json_string(&b, ii->sha256);
	buf_puts(&b, ",\"checked\":");
	buf_json_string(&b, ii->checked != NULL ? ii->checked : "unverified");
	buf_printf(&b, ",\"size\":%llu,\"pulled\":%lld",
	    (unsigned long long)ii->size, ii->pulled);
	if (ii->unsynced && image_boot_id() != NULL) {
		buf_puts(&b, ",\"unsynced\":");
		buf_json_string(&b, image_boot_id());
	}
	buf_puts(&b, "}\n");
	/* Two pulls of one image may both write it: a temporary each. */
	xasprintf(&tmp, "%s.tmp.%ld", path, (long)getpid());
	if (util_write_file(tmp, b.data) == -1 || rename(tmp, path) == -1) {
		xasprintf(cause, "%s: %s", path, strerror(errno));
		unlink(tmp);
		rc = -1;
	}
	free(tmp);
	buf_free(&b);
	return (rc);
}

void
image_info_free(struct image_info *ii)
{
	free(ii->name);
	free(ii->path);
	free(ii->url);
	free(ii->sha256);
	free(ii->checked);
	memset(ii, 0, sizeof *ii);
}

/* Fill ip's paths for file name in dir. */
static void
image_paths_fill(struct image_paths *ip, const char *name)
{
	free(ip->name);
	free(ip->path);
	free(ip->meta);
	free(ip->partial);
	free(ip->partial_url);
	free(ip->lock);
	ip->name = xstrdup(name);
	xasprintf(&ip->path, "%s/%s", ip->dir, name);
	xasprintf(&ip->meta, "%s/%s.meta", ip->dir, name);
	xasprintf(&ip->partial, "%s/%s/%s", ip->dir, IMAGE_PARTIAL_DIR, name);
	xasprintf(&ip->partial_url, "%s.url", ip->partial);
	xasprintf(&ip->lock, "%s.lock", ip->partial);
}

/*
 * Is dir/name free for url: neither there, nor another URL's (its .meta),
 * nor a file someone put there by hand?
 */
static int
image_paths_ours(struct image_paths *ip, const char *url)
{
	struct image_info	 ii;
	int			 ours;

	if (image_meta_read(ip->meta, &ii) == -1)
		return (access(ip->path, F_OK) == -1 && errno == ENOENT);
	ours = strcmp(ii.url, url) == 0;
	image_info_free(&ii);
	return (ours);
}

/*
 * Where req's image is kept: dir/NAME, NAME the URL's last component;
 * when another URL's image (or a file of the user's) has that name, the
 * first 8 hex digits of the URL's SHA-256, a dash and NAME. Makes dir
 * (0700) if missing; its .partial is the pull's, made with its lock.
 */
int
image_paths_make(const struct image_req *req, struct image_paths *ip,
    char **cause)
{
	unsigned char	 d[32];
	char		*name, *alt, *hex;

	memset(ip, 0, sizeof *ip);
	*cause = NULL;
	if (req->name != NULL)
		name = xstrdup(req->name);
	else if (req->url == NULL ||
	    (name = image_url_name(req->url)) == NULL) {
		xasprintf(cause, "%s: no file name at the end of the URL",
		    req->url != NULL ? req->url : "(no URL)");
		return (-1);
	}
	if (req->dir != NULL)
		ip->dir = xstrdup(req->dir);
	else if ((ip->dir = image_default_dir()) == NULL) {
		xasprintf(cause, "no images_dir (set XDG_DATA_HOME or HOME)");
		free(name);
		return (-1);
	}
	if (util_mkdir_p(ip->dir, 0700) == -1) {
		xasprintf(cause, "%s: %s", ip->dir, strerror(errno));
		free(name);
		image_paths_free(ip);
		return (-1);
	}
	image_paths_fill(ip, name);
	/* A named file is content-addressed: its digest says whose it is. */
	if (req->name == NULL && !image_paths_ours(ip, req->url)) {
		mbedtls_sha256_ret((const unsigned char *)req->url,
		    strlen(req->url), d, 0);
		hex = token_hex_of(d, 4);
		xasprintf(&alt, "%s-%s", hex, name);
		image_paths_fill(ip, alt);
		free(alt);
		free(hex);
	}
	free(name);
	return (0);
}

void
image_paths_free(struct image_paths *ip)
{
	free(ip->dir);
	free(ip->name);
	free(ip->path);
	free(ip->meta);
	free(ip->partial);
	free(ip->partial_url);
	free(ip->lock);
	memset(ip, 0, sizeof *ip);
}

/*
 * The image's path if it is in its dir whole and verified: there, of
 * req's URL by its .meta, of the size the .meta says, and of the pinned
 * digest if req pins one. Else NULL. Makes no request.
 */
char *
image_url_cached(const struct image_req *req)
{
	struct image_paths	 ip;
	struct image_info	 ii;
	struct stat		 st;
	char			*cause, *path = NULL;

	if (image_paths_make(req, &ip, &cause) == -1) {
		free(cause);
		return (NULL);
	}
	if (image_meta_read(ip.meta, &ii) == 0) {
		if ((req->name != NULL || strcmp(ii.url, req->url) == 0) &&
		    stat(ip.path, &st) == 0 && S_ISREG(st.st_mode) &&
		    (uint64_t)st.st_size == ii.size && (req->sha256 == NULL ||
		    strcasecmp(req->sha256, ii.sha256) == 0))
			path = xstrdup(ip.path);
		image_info_free(&ii);
	}
	image_paths_free(&ip);
	return (path);
}

/* scandir's filter: an image's name, not a .meta, not hidden. */
static int
image_each_filter(const struct dirent *de)
{
	size_t	n = strlen(de->d_name);

	if (de->d_name[0] == '.')
		return (0);
	return (n < 5 || strcmp(de->d_name + n - 5, ".meta") != 0);
}

/* Every image in dir, sorted by name: what its .meta says, cb each. */
int
image_each(const char *dir, void (*cb)(const struct image_info *, void *),
    void *arg)
{
	struct dirent	**des;
	struct image_info ii;
	struct stat	  st;
	char		 *meta;
	int		  n, i;

	if ((n = scandir(dir, &des, image_each_filter, alphasort)) == -1)
		return (errno == ENOENT ? 0 : -1);
	for (i = 0; i < n; i++) {
		xasprintf(&meta, "%s/%s.meta", dir, des[i]->d_name);
		if (image_meta_read(meta, &ii) == -1)
			memset(&ii, 0, sizeof ii);
		free(meta);
		xasprintf(&ii.path, "%s/%s", dir, des[i]->d_name);
		ii.name = xstrdup(des[i]->d_name);
		if (stat(ii.path, &st) == 0 && S_ISREG(st.st_mode)) {
			ii.size = st.st_size;
			cb(&ii, arg);
		}
		image_info_free(&ii);
		free(des[i]);
	}
	free(des);
	return (0);
}

/* Remove dir/name, its .meta and its partial; -1 if there was none. */
int
image_remove(const char *dir, const char *name, char **cause)
{
	const char	*what[] = { "%s/%s", "%s/%s.meta",
			    "%s/" IMAGE_PARTIAL_DIR "/%s",
			    "%s/" IMAGE_PARTIAL_DIR "/%s.url" };
	char		*path;
	size_t		 i;
	int		 found = 0;

	*cause = NULL;
	if (*name == '\0' || *name == '.' || strchr(name, '/') != NULL) {
		xasprintf(cause, "%s: not an image's name (see qsup image ls)",
		    name);
		return (-1);
	}
	for (i = 0; i < sizeof what / sizeof what[0]; i++) {
		xasprintf(&path, what[i], dir, name);
		if (unlink(path) == 0)
			found = 1;
		else if (errno != ENOENT && *cause == NULL)
			xasprintf(cause, "%s: %s", path, strerror(errno));
		free(path);
	}
	/* A pull's lock is its own to remove: .partial only if empty. */
	xasprintf(&path, "%s/%s", dir, IMAGE_PARTIAL_DIR);
	(void)rmdir(path);
	free(path);
	if (*cause != NULL)
		return (-1);
	if (!found) {
		xasprintf(cause, "no image %s in %s", name, dir);
		return (-1);
	}
	return (0);
}

/* The real path of path, else path itself, a new string. */
static char *
image_real(const char *path)
{
	char	*rp;

	if ((rp = realpath(path, NULL)) == NULL)
		rp = xstrdup(path);
	return (rp);
}

/*
 * Does sandbox directory sb (under base) belong to a live process and
 * name real as its base image (its "image" file)?
 */
static int
image_in_use_one(const char *base, const char *sb, const char *real)
{
	char	*path, *text, *rp;
	long	 pid;
	int	 same;

	xasprintf(&path, "%s/%s/pid", base, sb);
	text = util_read_file(path, NULL, 64);
	free(path);
	if (text == NULL)
		return (0);
	pid = strtol(text, NULL, 10);
	free(text);
	if (pid <= 0 || (kill((pid_t)pid, 0) == -1 && errno == ESRCH))
		return (0);
	xasprintf(&path, "%s/%s/image", base, sb);
	text = util_read_file(path, NULL, PATH_MAX);
	free(path);
	if (text == NULL)
		return (0);
	text[strcspn(text, "\n")] = '\0';
	rp = image_real(text);
	same = strcmp(rp, real) == 0;
	free(rp);
	free(text);
	return (same ? (int)pid : 0);
}

/* Is path the base image of a live sandbox under run_base? *by: which. */
int
image_in_use(const char *run_base, const char *path, char **by)
{
	DIR		*d;
	struct dirent	*de;
	char		*real;
	int		 pid, rc = 0;

	*by = NULL;
	if (run_base == NULL || (d = opendir(run_base)) == NULL)
		return (0);
	real = image_real(path);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "sb-", 3) != 0)
			continue;
		if ((pid = image_in_use_one(run_base, de->d_name, real)) > 0) {
			xasprintf(by, "%s (process %d)", de->d_name, pid);
			rc = 1;
			break;
		}
	}
	closedir(d);
	free(real);
	return (rc);
}
