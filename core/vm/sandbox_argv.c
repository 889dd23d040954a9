/*
 * QEMU's command line for a sandbox (qemu.c's builder does the quoting
 * and the machine): the same for a template build and every restore of
 * it, but for -incoming and the RAM file's path, since the template's
 * key is made of it (sandbox_warm.c); and the descriptors it keeps and
 * its confinement. Below the launch and a spare's (sandbox_spare.c),
 * which run it, and the warm start, which keys templates by it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "sandbox_int.h"

/* How this launch's guest is configured if it boots (SANDBOX_COLD_*), or
 * 0 (a template's build or restore, or a snapshot of one). */
int
sandbox_cold(struct sandbox *sb)
{
	if (sb->snap != NULL)
		return (sb->snap->cold);
	return (sb->mode == SB_COLD ? SANDBOX_COLD_SETUP : 0);
}

/* The format of this sandbox's templates, as the profile says. */
int
sandbox_template_format(struct sandbox *sb)
{
	return (sb->profile->template_ram == PROFILE_TRAM_STREAM ?
	    TEMPLATE_STREAM : TEMPLATE_SHARED);
}

/*
 * Shared RAM (format 2): the guest's memory is a file. The build's QEMU
 * maps the template's new RAM file shared (the guest writes the file); a
 * restore maps the template's private (copy-on-write), through the
 * descriptor qsup checked it by. Only the size counts for the key.
 */
static void
sandbox_ram_args(struct sandbox *sb, struct qemu_argv *a)
{
	char	*path;

	/* A snapshot's RAM is all in its stream: the block's name counts. */
	if (sb->snap != NULL && sb->snap->format != 2) {
		qemu_arg(a, "-object");
		qemu_arg(a, "memory-backend-ram,id=" TEMPLATE_RAM_ID
		    ",size=%lluM", (unsigned long long)sb->profile->memory_mib);
		qemu_arg(a, "-machine");
		qemu_arg(a, "memory-backend=" TEMPLATE_RAM_ID);
		return;
	}
	/* Format 2 snapshots map their pinned template the same way. */
	if (sb->mode == SB_RESTORE || sb->snap != NULL)
		xasprintf(&path, "/proc/self/fd/%d", sb->ram_fd);
	else
		path = qemu_escape(sb->tpl.ram_tmp != NULL ? sb->tpl.ram_tmp :
		    "-");
	qemu_arg(a, "-object");
	qemu_arg(a, "memory-backend-file,id=" TEMPLATE_RAM_ID ",size=%lluM,"
	    "mem-path=%s,share=%s", (unsigned long long)sb->profile->memory_mib,
	    path, sb->mode == SB_RESTORE || sb->snap != NULL ? "off" : "on");
	qemu_arg(a, "-machine");
	qemu_arg(a, "memory-backend=" TEMPLATE_RAM_ID);
	free(path);
}

/* qsup's own kernel, and GUEST.md's measured command line for it. */
static void
sandbox_kernel_args(struct sandbox *sb, struct qemu_argv *a, int cold)
{
	char	tsc[64] = "", cow[64] = "", *tmp;

	/* The TSC is told under TCG. */
	if (sb->accel.accel == ACCEL_TCG)
		snprintf(tsc, sizeof tsc, "tsc_early_khz=%lu tsc=reliable",
		    guest_tsc_khz());
	/* The agent loads ext4 and finds the cow disk before any template. */
	if (sb->cow.path != NULL)
		snprintf(cow, sizeof cow, " qsup.cow=%s", sb->cow.serial);
	xasprintf(&tmp, "console=ttyS0 quiet panic=-1 %s "
	    "no_timer_check cryptomgr.notests random.trust_cpu=on "
	    "mitigations=off init_on_alloc=0 audit=0 apparmor=0 "
	    "8250.nr_uarts=1 nowatchdog psi=0 cgroup_disable=memory "
	    "sysctl.vm.compaction_proactiveness=0 "
	    "initcall_blacklist=init_kprobe_trace,"
	    "crypto_kdf108_init,init_mmio_trace,"
	    "init_trace_printk_function_export qsup.ports=%d%s%s%s%s", tsc,
	    QSUP_PORT_COUNT, cold == SANDBOX_COLD_SETUP ? " qsup.setup=1" :
	    cold == SANDBOX_COLD_SEED ? "" : " qsup.template=1",
	    sb->disk.base != NULL ? " qsup.root=1" : "", cow,
	    sb->profile->display == PROFILE_DISPLAY_VNC ?
	    " qsup.display=1" : "");
	qemu_argv_kernel(a, sb->guest.kernel, sb->guest.initramfs, tmp);
	free(tmp);
}

/*
 * A screen: virtio-gpu with the profile's size, a keyboard and a tablet
 * (absolute pointer: a click lands where it is sent), on PCI (microvm's
 * eight MMIO transports are mostly taken; GUEST.md). QEMU's VNC server
 * listens on a unix socket in the run directory only, never on TCP; its
 * path is not part of the template key (template.c).
 */
static void
sandbox_display_args(struct sandbox *sb, struct qemu_argv *a, int pc)
{
	char	*tmp, *path;
	int	 w = 1024, h = 768;

	(void)pc;
	(void)profile_display_parse(sb->profile->display_size, &w, &h);
	qemu_arg(a, "-device");
	qemu_arg(a, "virtio-gpu-pci,xres=%d,yres=%d", w, h);
	qemu_arg(a, "-device");
	qemu_arg(a, "virtio-keyboard-pci");
	qemu_arg(a, "-device");
	qemu_arg(a, "virtio-tablet-pci");
	xasprintf(&tmp, "%s/" SANDBOX_VNC_SOCK, sb->rundir);
	path = qemu_escape(tmp);
	qemu_arg(a, "-vnc");
	qemu_arg(a, "unix:%s", path);
	free(path);
	free(tmp);
}

/*
 * QEMU's command line. A template build and a restore must use the same
 * one (but for -incoming and the RAM file's path): the template key is
 * made from it. An image that boots itself (sandbox_boot.c) gets a PC.
 */
void
sandbox_build_argv(struct sandbox *sb, struct qemu_argv *a)
{
	const struct profile	*p = sb->profile;
	char			*seed, *tmp;
	char *const		 *na;
	int			 i, pc = sandbox_boot_image(sb), cold, ram;

	/* A snapshot's restore has its source's shape. */
	cold = sandbox_cold(sb);
	ram = sb->snap != NULL ? sb->snap->ram_backend : sb->mode != SB_COLD &&
	    sandbox_template_format(sb) == TEMPLATE_SHARED;

	xasprintf(&tmp, "%s/seed.iso", sb->rundir);
	seed = qemu_escape(tmp);
	free(tmp);

	xasprintf(&tmp, "qsup:%s", sb->rundir);
	/* Names the run directory, so a person (or a test) can tell us apart. */
	qemu_argv_machine(a, guest_qemu_binary(), sb->accel.accel, pc,
	    (unsigned long long)p->memory_mib, p->cpus, tmp);
	free(tmp);
	if (ram)
		sandbox_ram_args(sb, a);
	if (!pc)
		sandbox_kernel_args(sb, a, cold);
	qemu_arg(a, "-chardev");
	qemu_arg(a, "socket,id=con,fd=%d",
	    sb->console_guest_fd);
	qemu_arg(a, "-serial");
	qemu_arg(a, "chardev:con");
	/* A PC has no virtio-mmio: its agent ports and seed go on PCI. */
	qemu_arg(a, "-device");
	qemu_arg(a, pc ? "virtio-serial-pci" : "virtio-serial-device");
	for (i = 0; i < (int)sb->nshares; i++) {
		tmp = qemu_escape(sb->shares[i].host);
		qemu_arg(a, "-fsdev");
		qemu_arg(a, "local,id=fs%d,path=%s,"
		    "security_model=%s%s", i, tmp, profile_sm_name(
		    share_model(&sb->shares[i], p->virtfs_security_model)),
		    sb->shares[i].readonly ? ",readonly=on" : "");
		free(tmp);
		qemu_arg(a, "-device");
		qemu_arg(a, "virtio-9p-pci,fsdev=fs%d,"
		    "mount_tag=%s", i, sb->shares[i].tag);
	}
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		qemu_arg(a, "-chardev");
		qemu_arg(a, "socket,id=agent%d,fd=%d", i,
		    sb->port_guest_fd[i]);
		qemu_arg(a, "-device");
		qemu_arg(a,
		    "virtserialport,chardev=agent%d,name=%s%d", i,
		    QSUP_PORT_PREFIX, i);
	}
	/* The image's overlay, the base below it read-only (disk.c). */
	if (sb->disk.base != NULL)
		disk_qemu_args(&sb->disk, a, pc);
	/* The cow shares' upper layers (cow.c); after the root disk. */
	if (sb->cow.path != NULL)
		cow_qemu_args(&sb->cow, a);
	/* The network card, on qsup's own stack (core/net.c). */
	for (na = sb->net != NULL ? net_qemu_args(sb->net) : NULL;
	    na != NULL && *na != NULL; na++)
		qemu_arg(a, "%s", *na);
	/* An image that boots itself has its seed in every mode; qsup's
	 * kernel only in a snapshot of a guest booted from one. */
	if (cold == SANDBOX_COLD_SEED || pc) {
		qemu_arg(a, "-blockdev");
		qemu_arg(a, "driver=raw,node-name=seed,"
		    "read-only=on,file.driver=file,file.filename=%s", seed);
		qemu_arg(a, "-device");
		qemu_arg(a, "%s,drive=seed", pc ? "virtio-blk-pci" :
		    "virtio-blk-device");
	}
	if (p->display == PROFILE_DISPLAY_VNC)
		sandbox_display_args(sb, a, pc);
	/* Saving the state, restoring it, and pausing a ready guest. */
	qemu_arg(a, "-chardev");
	qemu_arg(a, "socket,id=qmp,fd=%d", sb->qmp_guest_fd);
	qemu_arg(a, "-mon");
	qemu_arg(a, "chardev=qmp,mode=control");
	/* The operator's own flags, checked by the profile loader. */
	for (i = 0; i < (int)p->nextra_args; i++)
		qemu_arg(a, "%s", p->extra_args[i]);
	if (sb->snap != NULL) {
		/* Format 2's device state has no configuration section. */
		if (sb->snap->format == 2) {
			qemu_arg(a, "-global");
			qemu_arg(a, "migration.send-configuration=off");
		}
		qemu_arg(a, "-incoming");
		qemu_arg(a, "fd:%d", sb->state_fd);
	} else if (sb->mode == SB_RESTORE) {
		/* Shared RAM: x-ignore-shared is set first (QMP). */
		qemu_arg(a, "-incoming");
		if (sandbox_template_format(sb) == TEMPLATE_SHARED)
			qemu_arg(a, "defer");
		else
			qemu_arg(a, "fd:%d", sb->state_fd);
	}
	free(seed);
}

/*
 * What QEMU keeps of sb's descriptors (its ends, in sb's *_guest_fd,
 * state_fd and ram_fd, and net_fd for the card) and how it is confined,
 * into c with fds (SANDBOX_SPAWN_NFDS) as its list.
 */
void
sandbox_confine(struct sandbox *sb, int net_fd, int *fds,
    struct qemu_confine *c)
{
	int	i, n = 0;

	fds[n++] = sb->console_guest_fd;
	for (i = 0; i < QSUP_PORT_COUNT; i++)
		fds[n++] = sb->port_guest_fd[i];
	fds[n++] = sb->qmp_guest_fd;
	fds[n++] = sb->state_fd;
	fds[n++] = sb->ram_fd;
	fds[n++] = net_fd;
	memset(c, 0, sizeof *c);
	c->fds = fds;
	c->nfds = n;
	c->shares = sb->shares;
	c->nshares = sb->nshares;
	c->sm = sb->profile->virtfs_security_model;
	/*
	 * Under TCG huge pages buy nothing measurable (the guest's accesses
	 * go through TCG's own TLB; a CPU-bound command ran 1% faster with
	 * them, within noise) but cost each QEMU about 4 MB of RSS, its
	 * code buffer's pages rounded up to 2 MB. KVM keeps them: its
	 * guest's memory wants them.
	 */
	c->no_thp = sb->accel.accel == ACCEL_TCG;
}
