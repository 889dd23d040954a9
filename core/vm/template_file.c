/*
 * A template's files in the templates directory (template_int.h names
 * them), as both template.c, which writes and opens them, and
 * template_cache.c, which lists them and keeps the cache under its cap,
 * read them: a key, a half-written KEY.KIND.PID and whether its writer
 * lives, the line a shape keeps of each file the template was made from,
 * and the removal of a template's files. Nothing here knows a template
 * beyond its files' names, so both may lean on it.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "template_int.h"

/*
 * The line a shape keeps of a file the template was made from (QEMU, the
 * kernel, the initramfs): template_init writes it, template_cache.c
 * writes it again to see whether the file changed since.
 */
void
template_file_id(struct buf *b, const char *what, const char *path)
{
	struct stat	st;

	if (stat(path, &st) == -1)
		buf_printf(b, "%s %s missing\n", what, path);
	else
		buf_printf(b, "%s %s %lld %lld.%09ld\n", what, path,
		    (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		    st.st_mtim.tv_nsec);
}

/*
 * Is name[0..len) a key, 16 bytes of SHA-256 in lower-case hex
 * (template_init)? Anything else in the directory is none of a
 * template's files, whatever its suffix, and never listed nor removed.
 */
int
template_is_key(const char *name, size_t len)
{
	size_t	i;

	if (len != TEMPLATE_KEY_LEN)
		return (0);
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)name[i]) &&
		    (name[i] < 'a' || name[i] > 'f'))
			return (0);
	}
	return (1);
}

/*
 * Is name a half-written file, KEY.KIND.PID? KIND is any: those this
 * qsup writes (state, meta, shape, ram) and a newer one's alike, so that
 * nothing of a live writer is ever taken for a whole template's file,
 * nor removed with it. Then *pid is its writer's and the return the
 * length of its KEY.
 */
size_t
template_partial(const char *name, long *pid)
{
	const char	*dot, *p;
	size_t		 key = strcspn(name, ".");

	if (!template_is_key(name, key) ||
	    (dot = strrchr(name, '.')) == NULL || dot == name + key ||
	    dot[1] == '\0')
		return (0);
	for (p = dot + 1; *p != '\0'; p++) {
		if (!isdigit((unsigned char)*p))
			return (0);
	}
	*pid = strtol(dot + 1, NULL, 10);
	return (*pid > 0 ? key : 0);
}

/* Is the process that writes a half-written file still there? */
int
template_writer_alive(long pid)
{
	return (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

/*
 * Remove the template KEY of dir: its state first (so that it is no
 * longer there for template_exists), then every other KEY.SUFFIX file,
 * KEY.ram too. Not KEY.lock: only its holder removes it (template.c's
 * template_unlock). Nor half-written files: those of a live writer are
 * its, template_sweep takes the others.
 */
void
template_remove(const char *dir, const char *key)
{
	struct dirent	*de;
	DIR		*d;
	char		*path;
	size_t		 len = strlen(key);
	long		 pid;

	if (!template_is_key(key, len))
		return;
	xasprintf(&path, "%s/%s.state", dir, key);
	unlink(path);
	free(path);
	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, key, len) != 0 ||
		    de->d_name[len] != '.' ||
		    strcmp(de->d_name + len, ".lock") == 0 ||
		    template_partial(de->d_name, &pid) > 0)
			continue;
		unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}
