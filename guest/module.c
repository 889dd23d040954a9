/*
 * Kernel modules, loaded from the lists the guest image build writes
 * (guest/build-image.sh): the boot's, and the ones a disk image's root
 * needs. Part of PID-1 setup.
 */
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define MODULE_LIST_ROOT	"/etc/qsup-modules-root"
#define MODULE_LIST_SHARE	"/etc/qsup-modules-share"
/* From <linux/module.h>, which musl does not ship. */
#define MODULE_INIT_COMPRESSED	4

static int
module_has_suffix(const char *s, const char *suffix)
{
	size_t	n = strlen(s), m = strlen(suffix);

	return (n >= m && strcmp(s + n - m, suffix) == 0);
}

/* Load the modules list names, in order; failures are logged only. */
int
module_load(const char *kernel, const char *list)
{
	char		*text, *line, *save = NULL, *path, *params, *full;
	size_t		 len;
	int		 fd, flags;

	if (util_read_file(list, &text, &len, 1024 * 1024) == -1) {
		if (errno != ENOENT)
			log_warn("%s", list);
		return (-1);
	}
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		path = line + strspn(line, " \t");
		if (*path == '#' || *path == '\0')
			continue;
		params = path + strcspn(path, " \t\r");
		if (*params != '\0')
			*params++ = '\0';
		params += strspn(params, " \t");
		params[strcspn(params, "\r")] = '\0';
		if (*path == '/')
			full = xstrdup(path);
		else
			xasprintf(&full, "/lib/modules/%s/%s", kernel, path);
		flags = 0;
		if (module_has_suffix(full, ".xz") ||
		    module_has_suffix(full, ".zst") ||
		    module_has_suffix(full, ".gz"))
			flags = MODULE_INIT_COMPRESSED;
		if ((fd = open(full, O_RDONLY|O_CLOEXEC)) == -1)
			log_warn("module %s", full);
		else if (syscall(SYS_finit_module, fd, params, flags) == -1 &&
		    errno != EEXIST)
			log_warn("module %s", full);
		if (fd != -1)
			close(fd);
		free(full);
	}
	free(text);
	return (0);
}

/*
 * The root's modules, once. Also called when a config names a root on a
 * guest booted without qsup.root=1. -1 if the image has no such list.
 */
int
module_root(struct init_state *st)
{
	if (st->root_loaded)
		return (0);
	if (module_load(st->kernel, MODULE_LIST_ROOT) == -1)
		return (-1);
	st->root_loaded = 1;
	return (0);
}

/*
 * The 9p shares' modules, once: by a template's boot (its restores may
 * share), else before the first share is mounted. A guest built before
 * the list existed loads them at boot: nothing to do.
 */
int
module_share(struct init_state *st)
{
	if (st->share_loaded)
		return (0);
	st->share_loaded = 1;
	if (module_load(st->kernel, MODULE_LIST_SHARE) == -1)
		return (-1);
	return (0);
}
