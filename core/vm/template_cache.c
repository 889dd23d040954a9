/*
 * VM state templates for warm starts. A template is the saved state of a
 * guest booted to the agent's template state; template.c makes, checks and
 * restores them, template_cache.c lists them for "qsup cache" and keeps
 * the cache under its size cap (least recently used out first).
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "template_int.h"

/* Is every file a shape names still the same? */
static int
template_stale(const char *shape)
{
	char		*copy, *line, *save, what[32], path[4096];
	struct buf	 now = { 0 };
	int		 stale = 0;

	copy = xstrdup(shape);
	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "%31s %4095s", what, path) != 2 ||
		    (strcmp(what, "qemu") != 0 && strcmp(what, "kernel") != 0 &&
		    strcmp(what, "initramfs") != 0))
			continue;
		buf_consume(&now, now.len);
		template_file_id(&now, what, path);
		if (now.len == 0 || strncmp(now.data, line, now.len - 1) != 0)
			stale = 1;
	}
	buf_free(&now);
	free(copy);
	return (stale);
}

/*
 * Call cb, in the directory's order, for each template in dir and each
 * half-written file (writer set): what "qsup cache" lists and clears. cb
 * may remove the template it is given. -1 (errno set): dir cannot be read.
 */
int
template_each(const char *dir, void (*cb)(const struct template_info *,
    void *), void *arg)
{
	struct template_info	 ti;
	struct dirent		*de;
	struct stat		 st;
	DIR			*d;
	char			*path, *shape, *dot;
	long			 pid;

	if ((d = opendir(dir)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		memset(&ti, 0, sizeof ti);
		ti.name = de->d_name;
		/* A save under way, or left by a qsup killed outright. */
		if (template_partial(de->d_name, &pid) > 0) {
			xasprintf(&path, "%s/%s", dir, de->d_name);
			if (stat(path, &st) == -1)
				memset(&st, 0, sizeof st);
			free(path);
			ti.size = st.st_size;
			ti.mtime = st.st_mtime;
			ti.writer = pid;
			ti.writer_alive = template_writer_alive(pid);
			cb(&ti, arg);
			continue;
		}
		if ((dot = strstr(de->d_name, ".shape")) == NULL ||
		    dot[6] != '\0')
			continue;
		*dot = '\0';
		xasprintf(&path, "%s/%s.shape", dir, de->d_name);
		shape = util_read_file(path, NULL, 1 << 20);
		free(path);
		ti.stale = shape == NULL || template_stale(shape);
		free(shape);
		xasprintf(&path, "%s/%s.state", dir, de->d_name);
		if (stat(path, &st) == -1)
			memset(&st, 0, sizeof st);
		free(path);
		ti.size = st.st_size;
		ti.mtime = st.st_mtime;
		cb(&ti, arg);
	}
	closedir(d);
	return (0);
}

/* Remove the template KEY of dir: its state, meta and shape files. */
void
template_remove(const char *dir, const char *key)
{
	char	*path;

	xasprintf(&path, "%s/%s.state", dir, key);
	unlink(path);
	free(path);
	xasprintf(&path, "%s/%s.meta", dir, key);
	unlink(path);
	free(path);
	xasprintf(&path, "%s/%s.shape", dir, key);
	unlink(path);
	free(path);
}

/* (Lead's placeholder until the cache branch lands.) */
void
template_touch(struct template *t)
{
	(void)utimensat(AT_FDCWD, t->shape_path, NULL, 0);
}

int
template_evict(const char *dir, uint64_t max, const char *keep)
{
	(void)dir;
	(void)max;
	(void)keep;
	return (0);
}
