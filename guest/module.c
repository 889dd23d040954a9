/*
 * Kernel modules, loaded from the lists the guest image build writes
 * (guest/build-image.sh): the boot's, and the ones a disk image's root
 * needs. Part of PID-1 setup.
 */
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

#define MODULE_LIST_ROOT	"/etc/qsup-modules-root"
#define MODULE_LIST_SHARE	"/etc/qsup-modules-share"
#define MODULE_LIST_DISK	"/etc/qsup-modules-disk"
#define MODULE_LIST_NET		"/etc/qsup-modules-net"
#define MODULE_VIRTIO_DEVS	"/sys/bus/virtio/devices"
#define MODULE_VIRTIO_NET	0x0001	/* virtio device ids */
#define MODULE_VIRTIO_BLOCK	0x0002
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
	(void)module_disk(st);
	if (module_load(st->kernel, MODULE_LIST_ROOT) == -1)
		return (-1);
	st->root_loaded = 1;
	return (0);
}

/* The modules of list, once (*loaded says whether they were tried). */
static int
module_once(struct init_state *st, int *loaded, const char *list)
{
	if (*loaded)
		return (0);
	*loaded = 1;
	return (module_load(st->kernel, list));
}

/*
 * The 9p shares' modules, once: by a template's boot (its restores may
 * share), else before the first share is mounted. A guest built before
 * the list existed loads them at boot: nothing to do.
 */
int
module_share(struct init_state *st)
{
	return (module_once(st, &st->share_loaded, MODULE_LIST_SHARE));
}

/*
 * The virtio disk driver, once: before a root or a cow disk is looked
 * for, and at boot if the guest has any virtio disk (a seed, one of the
 * profile's extra_args). A guest of qsup's without a disk (configured by
 * /setup: no seed ISO) skips it and its probe, about 45 ms under TCG.
 */
int
module_disk(struct init_state *st)
{
	return (module_once(st, &st->disk_loaded, MODULE_LIST_DISK));
}

/*
 * Has the guest a virtio device of this id? Its device is on the virtio
 * bus once the transports (virtio_mmio, virtio_pci, loaded at boot) have
 * probed, whether or not its driver is loaded.
 */
static int
module_has_virtio(long id)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[300], *text;
	size_t		 len;
	int		 found = 0;

	if ((d = opendir(MODULE_VIRTIO_DEVS)) == NULL)
		return (0);
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/device", MODULE_VIRTIO_DEVS,
		    de->d_name);
		if (util_read_file(path, &text, &len, 64) == -1)
			continue;
		found = strtol(text, NULL, 0) == id;
		free(text);
	}
	closedir(d);
	return (found);
}

/* Has the guest a virtio disk? */
int
module_has_disk(void)
{
	return (module_has_virtio(MODULE_VIRTIO_BLOCK));
}

/*
 * The network card's driver, at boot, if the guest has the card: a
 * sandbox with network = "none" has none (core/net), and skips the
 * driver's load and probe, about 25 ms under TCG. A guest built before
 * the list existed loads it with the boot's: nothing to do.
 */
int
module_net(struct init_state *st)
{
	if (!module_has_virtio(MODULE_VIRTIO_NET))
		return (0);
	return (module_once(st, &st->net_loaded, MODULE_LIST_NET));
}
