/*
 * One launch of a sandbox's QEMU: its run directory, its network, the
 * sockets of its console and agent ports, its command line
 * (sandbox_argv.c's), the spawn, and what is left to say once it exited.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "sandbox_int.h"
#include "staging.h"

/*
 * Are execution trees staged? The profile's virtfs: on, off, or auto: when
 * qsup runs in a container (the seed's three signs), where 9p over the
 * container's overlay file system makes the guest's mmap of shared ELF
 * files fail.
 */
int
sandbox_stage_exec(struct sandbox *sb)
{
	switch (sb->profile->virtfs) {
	case PROFILE_VIRTFS_ON:
		return (1);
	case PROFILE_VIRTFS_OFF:
		return (0);
	case PROFILE_VIRTFS_AUTO:
		break;
	}
	if (!staging_in_container())
		return (0);
	log_debug("staging execution trees: qsup runs in a container");
	return (1);
}

/*
 * The guest's network as the profile says: no card for "none"; else
 * qsup's own user-mode stack, its forwards on the host's loopback (or the
 * address a port names), each on a free port unless one is fixed.
 */
int
sandbox_net(struct sandbox *sb, char **cause)
{
	const struct profile	*p = sb->profile;
	const struct net_port *pt;
	const struct profile_tcp_map *tm;
	struct net_config	 cfg;
	size_t			 i;
	int			 bound;
	char			*why = NULL, *addr;

	if (p->network == NET_MODE_NONE)
		return (0);
	memset(&cfg, 0, sizeof cfg);
	cfg.mode = p->network;
	cfg.rules = p->network_allow;
	cfg.nrules = p->nnetwork_allow;
	cfg.dir = sb->rundir;
	cfg.pci = sandbox_boot_image(sb);
	if ((sb->net = net_new(sb->loop, &cfg, &why)) == NULL) {
		xasprintf(cause, "network: %s", why);
		free(why);
		return (-1);
	}
	if (p->network == NET_MODE_OPEN)
		log_warnx("network = \"open\": the guest reaches everything "
		    "this host reaches, this host's own 127.0.0.1 services "
		    "included (as %s)", NET_HOST_ADDR);
	for (i = 0; i < p->nports; i++) {
		pt = &p->ports[i];
		if (net_add_hostfwd(sb->net, pt->address, pt->host, pt->guest,
		    &bound, &why) == -1) {
			if (pt->from_rule > 0)
				xasprintf(cause, "network_rules[%d]: %s",
				    pt->from_rule, why);
			else
				xasprintf(cause, "ports[%zu]: %s", i + 1, why);
			free(why);
			return (-1);
		}
		log_debug("port %s:%d on the host leads to port %u in the "
		    "guest", pt->address != NULL ? pt->address : "127.0.0.1",
		    bound, pt->guest);
	}
	for (i = 0; i < p->nnetwork_tcp; i++) {
		tm = &p->network_tcp[i];
		if (net_add_tcp_map(sb->net, tm->name, tm->guest_port,
		    tm->host, tm->port, &addr, &why) == -1) {
			xasprintf(cause, "network_tcp[%zu]: %s", i + 1, why);
			free(why);
			return (-1);
		}
		log_debug("%s%s%s:%u in the guest leads to %s:%u on the host",
		    tm->name != NULL ? tm->name : "", tm->name != NULL ?
		    " = " : "", addr, tm->guest_port, tm->host, tm->port);
		free(addr);
	}
	return (0);
}

static int
sandbox_socketpair(int *ours, int *theirs, char **cause)
{
	int	sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1) {
		xasprintf(cause, "socketpair: %s", strerror(errno));
		return (-1);
	}
	*ours = sv[0];
	*theirs = sv[1];
	return (0);
}

/*
 * QEMU, through qemu.c's spawner: it keeps the guest's ends of the
 * console, the agent ports, QMP, the template and the network card,
 * confined as the shares say; once it runs, ours must not keep them open.
 */
static int
sandbox_spawn(struct sandbox *sb, struct qemu_argv *a, char **cause)
{
	struct qemu_confine	 c;
	int			 fds[SANDBOX_SPAWN_NFDS], i, rc;

	sandbox_confine(sb, sb->net != NULL ? net_qemu_fd(sb->net) : -1, fds,
	    &c);
	rc = qemu_spawn(sb->qemu, a->argv, &c, cause);
	qemu_argv_free(a);
	if (rc == -1)
		return (-1);

	close(sb->console_guest_fd);
	sb->console_guest_fd = -1;
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		close(sb->port_guest_fd[i]);
		sb->port_guest_fd[i] = -1;
	}
	if (sb->qmp_guest_fd != -1) {
		close(sb->qmp_guest_fd);
		sb->qmp_guest_fd = -1;
	}
	if (sb->state_fd != -1) {
		close(sb->state_fd);
		sb->state_fd = -1;
	}
	if (sb->ram_fd != -1) {
		close(sb->ram_fd);
		sb->ram_fd = -1;
	}
	if (sb->net != NULL)
		net_qemu_started(sb->net);
	return (0);
}

/* The console reached its end. */
static void
sandbox_console_closed_cb(void *arg)
{
	struct sandbox	*sb = arg;

	sb->event(sb, SBE_EOF, NULL);
}

/*
 * The sockets of the console, the agent ports and QMP, ours and QEMU's;
 * or ours only (have: a spare's, sandbox_spare.c), QEMU holding its ends.
 */
static int
sandbox_sockets(struct sandbox *sb, const int *have, char **cause)
{
	char	*path;
	int	 fd, i;

	if (have != NULL)
		fd = have[0];
	else if (sandbox_socketpair(&fd, &sb->console_guest_fd, cause) == -1)
		return (-1);
	xasprintf(&path, "%s/console.log", sb->rundir);
	sb->console = serial_new(sb->loop, fd, path,
	    sb->profile->show_boot_console);
	free(path);
	serial_set_close_cb(sb->console, sandbox_console_closed_cb, sb);
	serial_set_mark_cb(sb->console, sandbox_console_mark_cb, sb);
	if (sandbox_boot_image(sb))
		sandbox_boot_watch(sb);
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		if (have != NULL)
			fd = have[1 + i];
		else if (sandbox_socketpair(&fd, &sb->port_guest_fd[i],
		    cause) == -1)
			return (-1);
		sb->ports[i] = agent_conn_new(sb->loop, fd, sb->token);
	}
	if (have != NULL)
		sb->qmp_fd = have[SANDBOX_SPARE_NFDS - 1];
	else if (sandbox_socketpair(&sb->qmp_fd, &sb->qmp_guest_fd,
	    cause) == -1)
		return (-1);
	if (sb->profile->console_log != NULL && serial_copy_to(sb->console,
	    sb->profile->console_log, sb->t_spawn == 0, cause) == -1)
		return (-1);
	return (0);
}

/* QEMU took the template's state, or said why not. */
static void
sandbox_incoming_cb(const char *error, void *arg)
{
	struct sandbox	*sb = arg;
	char		*msg;

	if (error == NULL) {
		sb->t_loading = util_now();
		log_debug("QEMU is loading template %s (%.3f s after its "
		    "start)", sb->tpl.key, sb->t_loading - sb->t_spawn);
		return;
	}
	xasprintf(&msg, "QEMU refused the template: %s", error);
	sb->event(sb, SBE_REFUSED, msg);
	free(msg);
}

/*
 * A restore with shared RAM: QEMU waits (-incoming defer) for
 * x-ignore-shared, which only QMP sets, then loads the state from the
 * descriptor it inherits. Written before QEMU even starts; its answers
 * come on the loop.
 */
static int
sandbox_incoming(struct sandbox *sb, char **cause)
{
	const char	*cmds[2];
	char		*incoming;

	cmds[0] = "{\"execute\":\"migrate-set-capabilities\",\"arguments\":"
	    "{\"capabilities\":[" SANDBOX_QMP_IGNORE_SHARED "]}}";
	xasprintf(&incoming, "{\"execute\":\"migrate-incoming\","
	    "\"arguments\":{\"uri\":\"fd:%d\"}}", sb->state_fd);
	cmds[1] = incoming;
	sb->incoming = qmp_script_new(sb->loop, sb->qmp_fd, cmds, 2,
	    sandbox_incoming_cb, sb, cause);
	free(incoming);
	return (sb->incoming == NULL ? -1 : 0);
}

/*
 * The launch's fresh overlay: over the template's disk for a restore of a
 * template that has one (copied from the template's pristine overlay,
 * KEY.top, made by the first restore), else over the base.
 */
static int
sandbox_overlay(struct sandbox *sb, char **cause)
{
	char	*top;
	int	 rc;

	if (!sb->tpl.with_disk || sb->mode != SB_RESTORE)
		return (disk_overlay_on(&sb->disk, sb->rundir, NULL, 0, cause));
	xasprintf(&top, "%s/%s.top", sb->tpl.dir, sb->tpl.key);
	rc = disk_overlay_copy(&sb->disk, sb->rundir, sb->tpl.disk, top,
	    cause);
	free(top);
	return (rc);
}

/*
 * Everything one QEMU process needs, then QEMU itself, the start's
 * deadline, and the first request, whose answer says the agent is up.
 * On failure, the caller undoes it (sandbox_launch_free).
 */
int
sandbox_launch(struct sandbox *sb, char **cause)
{
	struct qemu_argv	a = { 0 };
	char			*why = NULL;
	int			 have[SANDBOX_SPARE_NFDS], spare;

	/*
	 * The template chosen may have gone (another qsup's cache cap) or
	 * changed since: build or boot instead, unless it is the one this
	 * run has just saved.
	 */
	if (sb->mode == SB_RESTORE && template_open(&sb->tpl, &sb->state_fd,
	    &sb->ram_fd, &why) == -1) {
		if (sb->built) {
			xasprintf(cause, "the template just saved cannot be "
			    "restored: %s", why);
			free(why);
			return (-1);
		}
		log_debug("%s; booting instead", why);
		free(why);
		sandbox_rechoose_mode(sb);
	}
	if (sb->snap != NULL && sandbox_snap_launch(sb, cause) == -1)
		return (-1);
	if (sb->mode == SB_BUILD && sb->tpl.format == TEMPLATE_SHARED &&
	    template_ram_tmp(&sb->tpl, cause) == -1)
		return (-1);
	if ((sandbox_cold(sb) == SANDBOX_COLD_SEED || sandbox_boot_image(sb)) &&
	    sandbox_write_seed(sb, cause) == -1)
		return (-1);
	/*
	 * A fresh overlay for every launch: a restore of a template with a
	 * disk goes over the template's disk, a boot or a build over the
	 * base (a snapshot's restore made its own, over the snapshot's).
	 */
	if (sb->disk.base != NULL && !sb->disk.writable && sb->snap == NULL &&
	    sandbox_overlay(sb, cause) == -1)
		return (-1);
	/* A snapshot's restore may find its QEMU started already. */
	spare = sb->snap != NULL && sandbox_spare_take(sb, have);
	if (sandbox_sockets(sb, spare ? have : NULL, cause) == -1)
		return (-1);
	if (sb->net != NULL && !spare && net_qemu_fd(sb->net) == -1 &&
	    net_relink(sb->net, cause) == -1)
		return (-1);
	if (sb->mode == SB_RESTORE && sb->tpl.format == TEMPLATE_SHARED &&
	    sandbox_incoming(sb, cause) == -1)
		return (-1);

	if (sb->t_spawn == 0)
		sb->t_spawn = util_now();
	if (!spare) {
		sandbox_build_argv(sb, &a);
		qemu_argv_log(a.argv);
		if (sandbox_spawn(sb, &a, cause) == -1)
			return (-1);
	}

	ev_timer_stop(sb->loop, &sb->deadline);
	ev_timer_set(&sb->deadline, sb->mode == SB_RESTORE &&
	    SANDBOX_RESTORE_MAX < sandbox_start_timeout(sb) ?
	    SANDBOX_RESTORE_MAX : sandbox_start_timeout(sb), 0);
	ev_timer_start(sb->loop, &sb->deadline);

	/*
	 * The agent answers once it is up: readiness is its first reply.
	 * The request waits in the socket until the guest reads it, and a
	 * restore's early refresh waits behind it. A boot of qsup's kernel
	 * is configured as a restore is; a build of an image's template
	 * mounts its root first (sandbox_send_root).
	 */
	if (sb->mode == SB_RESTORE || (sb->snap == NULL &&
	    sandbox_cold(sb) == SANDBOX_COLD_SETUP && !sandbox_boot_image(sb)))
		sandbox_send_setup(sb);
	else if (sb->mode == SB_BUILD && sandbox_root_early(sb))
		sandbox_send_root(sb);
	else
		agent_request(sb->ports[0], "GET", "/ping", NULL, 0,
		    sandbox_reply_cb, NULL, sb);
	sandbox_early_launch(sb);
	if (sb->snap != NULL)
		sandbox_snap_launched(sb);
	return (0);
}

/*
 * Undo sandbox_launch: once QEMU is reaped, or never ran, or (from
 * sandbox_free) before it is killed and reaped.
 */
void
sandbox_launch_free(struct sandbox *sb)
{
	int	i;

	sandbox_snap_abort(sb);
	sandbox_early_free(sb);
	qmp_script_free(sb->incoming);
	sb->incoming = NULL;
	qmp_conn_free(sb->qmp);
	sb->qmp = NULL;
	sb->qmp_cb = NULL;
	sandbox_boot_unwatch(sb);
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		agent_conn_free(sb->ports[i]);
		sb->ports[i] = NULL;
		if (sb->port_guest_fd[i] != -1)
			close(sb->port_guest_fd[i]);
		sb->port_guest_fd[i] = -1;
	}
	serial_free(sb->console);
	sb->console = NULL;
	if (sb->console_guest_fd != -1)
		close(sb->console_guest_fd);
	sb->console_guest_fd = -1;
	if (sb->qmp_fd != -1)
		close(sb->qmp_fd);
	if (sb->qmp_guest_fd != -1)
		close(sb->qmp_guest_fd);
	sb->qmp_fd = sb->qmp_guest_fd = -1;
	if (sb->state_fd != -1)
		close(sb->state_fd);
	if (sb->ram_fd != -1)
		close(sb->ram_fd);
	sb->state_fd = sb->ram_fd = -1;
}

/*
 * Why QEMU exited on its own: its status, and what the console says the
 * guest did (QEMU runs with -no-reboot and the kernel with panic=-1, so a
 * panic, a reboot and a poweroff all end QEMU). The console is read to
 * its end first: QEMU wrote its last lines before it exited.
 */
char *
sandbox_death(struct sandbox *sb)
{
	static const struct {
		const char	*line;
		const char	*what;
	} deaths[] = {
		{ "Kernel panic - ", "the guest kernel panicked" },
		{ "reboot: Power down", "the guest powered off" },
		{ "reboot: Restarting system", "the guest rebooted" },
		{ "reboot: System halted", "the guest halted" },
	};
	char		*qemu, *line = NULL, *msg, *p;
	size_t		 i;

	if (WIFSIGNALED(qemu_wstatus(sb->qemu)))
		xasprintf(&qemu, "QEMU was killed by signal %d",
		    WTERMSIG(qemu_wstatus(sb->qemu)));
	else
		xasprintf(&qemu, "QEMU exited with status %d",
		    WEXITSTATUS(qemu_wstatus(sb->qemu)));
	if (sb->console == NULL)
		return (qemu);
	serial_drain(sb->console);
	for (i = 0; i < sizeof deaths / sizeof deaths[0]; i++) {
		if ((line = serial_find(sb->console, deaths[i].line)) != NULL)
			break;
	}
	if (line == NULL)
		return (qemu);
	if (i == 0) {
		/* "Kernel panic - not syncing: WHY": say WHY. */
		p = strstr(line, deaths[i].line) + strlen(deaths[i].line);
		if (strncmp(p, "not syncing: ", 13) == 0)
			p += 13;
		xasprintf(&msg, "%s: %s (%s)", deaths[i].what, p, qemu);
	} else
		xasprintf(&msg, "%s (%s)", deaths[i].what, qemu);
	free(line);
	free(qemu);
	return (msg);
}

