/*
 * Warm start: the choice between booting and restoring a template of the
 * guest's shape (template.c keeps them), and the save of a template once
 * a build has booted to template state.
 */
#include <sys/statvfs.h>

#include <stdlib.h>
#include <unistd.h>

#include <ev.h>

#include "sandbox_int.h"

/*
 * Room for a new template with shared RAM: the build's guest writes its
 * memory into the cache's file system as it boots, and a write that finds
 * the disk full kills QEMU (SIGBUS), the run with it. Up to the guest's
 * whole memory is asked for, as QEMU may touch all of it.
 */
static int
sandbox_template_room(struct sandbox *sb)
{
	struct statvfs	sv;
	uint64_t	need, avail;

	if (sb->tpl.format != TEMPLATE_SHARED ||
	    statvfs(sb->tpl.dir, &sv) == -1)
		return (1);
	need = sb->profile->memory_mib << 20;
	avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	if (avail >= need)
		return (1);
	log_warnx("no template saved: %s has %llu MiB free, a template of "
	    "this guest may need %llu MiB", sb->tpl.dir,
	    (unsigned long long)(avail >> 20),
	    (unsigned long long)(need >> 20));
	return (0);
}

/* The template's lock is ours: build it if there is room for it. */
static enum sandbox_mode
sandbox_build_or_cold(struct sandbox *sb)
{
	if (sandbox_template_room(sb))
		return (SB_BUILD);
	template_unlock(&sb->tpl);
	return (SB_COLD);
}

/* What a chosen mode does with the template, for -v. */
static const char *
sandbox_mode_said(struct sandbox *sb)
{
	return (sb->mode == SB_RESTORE ? "restoring it" :
	    sb->mode == SB_BUILD ? "building it" : "not used");
}

/*
 * Restore the template if it is there (its use noted), else build it if
 * its lock is ours (and there is room), else look again: its builder may
 * have finished meanwhile. -1: another qsup is building it right now.
 */
static int
sandbox_pick_mode(struct sandbox *sb)
{
	if (template_exists(&sb->tpl))
		sb->mode = SB_RESTORE;
	else if (template_lock(&sb->tpl) == 0) {
		sb->mode = sandbox_build_or_cold(sb);
		return (0);
	} else if (template_exists(&sb->tpl))
		sb->mode = SB_RESTORE;
	else
		return (-1);
	template_touch(&sb->tpl);
	return (0);
}

/*
 * Warm start: restore the template of this guest's shape if there is one;
 * else build it. 1: another qsup is building it right now, and this run
 * is to wait for it (sandbox_builder_done).
 */
int
sandbox_choose_mode(struct sandbox *sb)
{
	struct qemu_argv	a = { 0 };
	int			i, wait = 0;

	sb->mode = SB_COLD;
	if (!sb->profile->warm_start || sb->disk.writable)
		return (0);
	/* The key comes from the template command line, fds aside. */
	sb->mode = SB_BUILD;
	sb->console_guest_fd = sb->qmp_guest_fd = 0;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		sb->port_guest_fd[i] = 0;
	sandbox_build_argv(sb, &a);
	/*
	 * Not for QEMU: the key's own line for the base image, which the
	 * guest probed while it booted to template state. A base that changed
	 * since, or an overlay of another size, needs a template of its own;
	 * the overlay's file name does not count (template_init).
	 */
	if (sb->disk.base != NULL)
		qemu_arg(&a, "#disk %s %lld %lld.%09ld %s %llu", sb->disk.base,
		    (long long)sb->disk.before.st_size,
		    (long long)sb->disk.before.st_mtim.tv_sec,
		    sb->disk.before.st_mtim.tv_nsec, sb->disk.info.format,
		    (unsigned long long)sb->disk.size);
	/*
	 * A template that keeps the build's overlay (the image's root
	 * mounted by the build, or an image that boots itself) is right
	 * over this very base only: its inode and ctime count too (a copy
	 * with the same size and mtime is another file; no write, even one
	 * that puts the mtime back, keeps the ctime).
	 */
	if (sandbox_root_early(sb))
		qemu_arg(&a, "#root mounted by the build");
	if (sandbox_root_early(sb) || sandbox_boot_image(sb))
		qemu_arg(&a, "#base %llu %lld.%09ld",
		    (unsigned long long)sb->disk.before.st_ino,
		    (long long)sb->disk.before.st_ctim.tv_sec,
		    sb->disk.before.st_ctim.tv_nsec);
	/* ... and its top layer, if setup made any. */
	if (sb->disk.nlayers > 0)
		qemu_arg(&a, "#layer %s %lld %lld.%09ld",
		    sb->disk.layers[sb->disk.nlayers - 1],
		    (long long)sb->disk.top.st_size,
		    (long long)sb->disk.top.st_mtim.tv_sec,
		    sb->disk.top.st_mtim.tv_nsec);
	sb->console_guest_fd = sb->qmp_guest_fd = -1;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		sb->port_guest_fd[i] = -1;
	if (template_init(&sb->tpl, a.argv, sb->guest.kernel,
	    sb->guest.initramfs, sandbox_template_format(sb)) == -1) {
		log_debug("no cache directory: no warm start");
		sb->mode = SB_COLD;
		qemu_argv_free(&a);
		return (0);
	}
	/*
	 * An image that boots itself writes its disk, and so does the mount
	 * of an image's root in the build (sandbox_send_root): it is kept.
	 */
	sb->tpl.with_disk = sandbox_boot_image(sb) || sandbox_root_early(sb);
	if (sandbox_pick_mode(sb) == -1) {
		/*
		 * Booting too would cost a whole boot's CPU while the builder
		 * needs it: wait for its template (sandbox_builder_done).
		 */
		log_debug("template %s is being built by another qsup: "
		    "waiting for it", sb->tpl.key);
		sb->mode = SB_COLD;
		wait = 1;
	} else
		log_debug("template %s (%s RAM): %s", sb->tpl.key,
		    sb->tpl.format == TEMPLATE_SHARED ? "shared" : "stream",
		    sandbox_mode_said(sb));
	qemu_argv_free(&a);
	return (wait);
}

/*
 * Save the guest, booted to template state, through QMP: the state file's
 * descriptor is passed with getfd (migrating to exec: would make QEMU fork,
 * which -sandbox spawn=deny forbids), the VM is migrated into the file.
 * With shared RAM (format 2), x-ignore-shared leaves the memory out of the
 * stream: it is in the template's RAM file already, and the build's QEMU,
 * stopped by the migration's end, is not continued but replaced by a
 * restore (sandbox.c). With the RAM in the stream, the guest is continued
 * and configured. The guest is idle meanwhile, so waiting here blocks
 * nothing that could move.
 */
static int
sandbox_save_qmp(struct sandbox *sb, char **cause)
{
	struct qmp	 q;
	double		 t0 = util_now();
	char		*cont_cause = NULL;
	int		 fd, rc = -1, stopped = 0, shared;

	shared = sb->tpl.format == TEMPLATE_SHARED;
	if ((fd = template_open_tmp(&sb->tpl, cause)) == -1)
		return (-1);
	if (qmp_open(&q, sb->qmp_fd, 5, cause) == -1)
		goto out;
	if (qmp_command(&q, shared ?
	    "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
	    "{\"capabilities\":[{\"capability\":\"events\",\"state\":true},"
	    SANDBOX_QMP_IGNORE_SHARED "]}}\n" :
	    "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
	    "{\"capabilities\":[{\"capability\":\"events\",\"state\":true}"
	    "]}}\n", -1, 5, NULL, cause) == -1 ||
	    qmp_command(&q, "{\"execute\":\"getfd\",\"arguments\":"
	    "{\"fdname\":\"snap\"}}\n", fd, 5, NULL, cause) == -1)
		goto out;
	/*
	 * Migrate while running: the stream then records a running VM, and
	 * a restore starts it by itself, with no "cont". The idle guest
	 * dirties little, so the copy converges at once (with shared RAM
	 * there is nothing to copy but the devices, saved stopped).
	 */
	stopped = 1;
	if (qmp_command(&q, "{\"execute\":\"migrate\",\"arguments\":"
	    "{\"uri\":\"fd:snap\"}}\n", -1, 5, NULL, cause) == -1 ||
	    qmp_wait_event(&q, "MIGRATION", "completed", "failed",
	    SANDBOX_SAVE_MAX, cause) == -1)
		goto out;
	/* QEMU flushed the disk at the migration's end, and is stopped. */
	if (sb->tpl.with_disk && template_save_disk(&sb->tpl,
	    sb->disk.overlay, cause) == -1)
		goto out;
	if (template_commit(&sb->tpl, fd, cause) == -1)
		goto out;
	rc = 0;
	sb->built = 1;
	if (shared)
		stopped = 0;	/* sandbox_configure replaces this QEMU */
out:
	/* Saved in the stream or not saved: the guest goes on. */
	if (stopped && qmp_command(&q, "{\"execute\":\"cont\"}\n", -1, 5,
	    NULL, &cont_cause) == -1) {
		if (rc == 0)
			*cause = cont_cause;
		else
			free(cont_cause);
		rc = -1;
	}
	qmp_close(&q);
	close(fd);
	if (rc == -1)
		template_abandon(&sb->tpl);
	sb->save_seconds = util_now() - t0;
	return (rc);
}

/*
 * Waiting for another qsup's build of our template, since waited seconds:
 * 1 once there is something to do: restore the template it saved, build
 * it ourselves (its builder gave up, or died: the lock is free), or boot
 * without one when it takes longer than a start may.
 */
int
sandbox_builder_done(struct sandbox *sb, double waited)
{
	if (sandbox_pick_mode(sb) == -1) {
		if (waited <= sandbox_start_timeout(sb))
			return (0);
		log_debug("template %s is still being built after %.0f s; "
		    "booting without it", sb->tpl.key, waited);
		sb->mode = SB_COLD;
	}
	log_debug("template %s: %s after %.3f s", sb->tpl.key,
	    sandbox_mode_said(sb), waited);
	return (1);
}

/*
 * A restore failed and QEMU is gone: boot instead, building the template
 * again unless another qsup is building it now.
 */
void
sandbox_rechoose_mode(struct sandbox *sb)
{
	if (sb->keep_template) {
		sb->mode = SB_COLD;
		return;
	}
	sb->mode = template_lock(&sb->tpl) == 0 ? sandbox_build_or_cold(sb) :
	    SB_COLD;
}

/*
 * The build has booted to template state: save it. The run goes on
 * without a template if that fails, or stops now if qsup must.
 */
void
sandbox_save(struct sandbox *sb)
{
	char	*cause = NULL;

	if (sandbox_save_qmp(sb, &cause) == -1) {
		if (util_stop_now)
			log_debug("template save given up: %s", cause);
		else
			log_warnx("cannot save a template: %s", cause);
		free(cause);
	} else {
		log_debug("saved template %s in %.3f s", sb->tpl.key,
		    sb->save_seconds);
		(void)template_evict(sb->tpl.dir,
		    sb->profile->template_cache_max, sb->tpl.key);
	}
	template_unlock(&sb->tpl);
}
