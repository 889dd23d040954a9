/*
 * boot = "image": the image boots as a PC would (q35, the BIOS, the
 * image's own boot loader, kernel and init), and cloud-init, reading the
 * NoCloud seed, starts qsup's agent from it. What differs from the fast
 * path is here (but for the PCI devices, sandbox_build_argv's): the
 * seed's user-data and the agent on the seed, and the progress shown
 * while such a boot, minutes under emulation, goes on. Once the agent
 * answers, the sandbox is the same as any other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>

#include "sandbox_int.h"

#define SANDBOX_BOOT_TICK	5.0	/* seconds between progress lines */
#define SANDBOX_BOOT_AGENT_MAX	(16 * 1024 * 1024)
#define SANDBOX_BOOT_MARK	"qsup: cloud-init runs the bootstrap"

/* The phases a PC boot goes through, as its console shows them. */
static const struct {
	const char	*seen;		/* a console line holding this */
	const char	*phase;		/* means this phase began */
} sandbox_boot_phases[] = {
	{ NULL, "firmware and boot loader" },
	{ "Linux version ", "kernel" },
	{ "Welcome to ", "the image's init" },
	{ "systemd[1]: ", "the image's init" },
	{ "cloud-init", "cloud-init" },
	{ "Cloud-init v. ", "cloud-init" },
	{ SANDBOX_BOOT_MARK, "the agent" },
};
#define SANDBOX_BOOT_NPHASES \
	(sizeof sandbox_boot_phases / sizeof sandbox_boot_phases[0])

int
sandbox_boot_image(const struct sandbox *sb)
{
	return (sb->profile->boot == PROFILE_BOOT_IMAGE);
}

/* A console line: a later phase may have begun (they only go forward). */
static void
sandbox_boot_line_cb(void *arg, const char *line)
{
	struct sandbox	*sb = arg;
	size_t		 i;

	for (i = sb->boot_phase + 1; i < SANDBOX_BOOT_NPHASES; i++) {
		if (strstr(line, sandbox_boot_phases[i].seen) == NULL)
			continue;
		if (strcmp(sandbox_boot_phases[i].phase,
		    sandbox_boot_phases[sb->boot_phase].phase) != 0)
			log_debug("image boot: %s (%.1f s)",
			    sandbox_boot_phases[i].phase,
			    util_now() - sb->t_spawn);
		sb->boot_phase = (int)i;
	}
}

/* A line every few seconds until the agent answers: never a silent minute. */
static void
sandbox_boot_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct sandbox	*sb = w->data;

	(void)revents;
	if (sb->t_ready > 0 || sb->qemu == NULL) {
		ev_timer_stop(loop, w);
		return;
	}
	log_info("booting the image: %s (%.0f s)",
	    sandbox_boot_phases[sb->boot_phase].phase,
	    util_now() - sb->t_spawn);
}

/* Once the console exists: follow the phases, and tell them on stderr. */
void
sandbox_boot_watch(struct sandbox *sb)
{
	sb->boot_phase = 0;
	serial_set_line_cb(sb->console, sandbox_boot_line_cb, sb);
	ev_timer_stop(sb->loop, &sb->boot_tick);
	ev_timer_init(&sb->boot_tick, sandbox_boot_tick_cb, SANDBOX_BOOT_TICK,
	    SANDBOX_BOOT_TICK);
	sb->boot_tick.data = sb;
	ev_timer_start(sb->loop, &sb->boot_tick);
}

void
sandbox_boot_unwatch(struct sandbox *sb)
{
	ev_timer_stop(sb->loop, &sb->boot_tick);
}

/* The phase the boot is in, for a message that it took too long. */
const char *
sandbox_boot_phase(const struct sandbox *sb)
{
	return (sandbox_boot_phases[sb->boot_phase].phase);
}

/*
 * The bootstrap cloud-init runs (bootcmd: early, before the network
 * stage's modules): the agent is copied off the seed, which cloud-init
 * has already found by its label, into a tmpfs of its own (Debian's
 * initramfs leaves /run noexec), and started as a service of the
 * image's systemd (or on its own, without one). The agent reads its
 * configuration and token from the seed itself. The service has no
 * default dependencies: those would order it after basic.target, which
 * waits for cloud-init, which would wait for it. So the command may run
 * while the image's later boot (cloud-init's last stages, its services)
 * goes on; `cloud-init status --wait` waits for that.
 */
static void
sandbox_boot_bootstrap(struct sandbox *sb, struct buf *b)
{
	int	verbose = sb->profile->show_boot_console;

	buf_puts(b, "bootcmd:\n  - |\n");
	buf_printf(b, "    exec >/dev/console 2>&1\n    set -e%s\n",
	    verbose ? "x" : "");
	buf_puts(b,
	    "    echo '" SANDBOX_BOOT_MARK "'\n"
	    "    d=/run/qsup\n"
	    "    mkdir -p -m 0700 \"$d\"\n"
	    "    mount -t tmpfs -o mode=0700,nosuid,nodev,size=64m qsup \"$d\"\n"
	    "    mkdir -m 0700 \"$d/seed\"\n"
	    "    dev=$(blkid -l -o device -t LABEL=cidata || :)\n"
	    "    [ -n \"$dev\" ] || dev=/dev/disk/by-label/cidata\n"
	    "    mount -t iso9660 -o ro,nodev,nosuid \"$dev\" \"$d/seed\"\n"
	    "    cp \"$d/seed/" SANDBOX_BOOT_AGENT "\" \"$d/agent\"\n"
	    "    umount \"$d/seed\"\n"
	    "    chmod 0700 \"$d/agent\"\n");
	/*
	 * A template is taken once cloud-init has finished: the agent,
	 * which answers only then, waits for it (a service of its own, so
	 * nothing waits on it in turn).
	 */
	if (sb->mode != SB_COLD)
		buf_puts(b, "    run=\"cloud-init status --wait >/dev/null 2>&1;"
		    " exec $d/agent --service\"\n");
	else
		buf_puts(b, "    run=\"exec $d/agent --service\"\n");
	buf_puts(b,
	    "    if command -v systemd-run >/dev/null 2>&1 &&"
	    " [ -d /run/systemd/system ]; then\n"
	    "      systemd-run --unit=qsup-agent --collect --no-block"
	    " -p DefaultDependencies=no -p StandardOutput=tty"
	    " -p TTYPath=/dev/console"
	    " -p StandardError=tty /bin/sh -c \"$run\"\n"
	    "    else\n"
	    "      setsid /bin/sh -c \"$run\" </dev/null >/dev/console"
	    " 2>&1 &\n"
	    "    fi\n"
	    "    echo 'qsup: the agent is started'\n");
}

/* cloud-init's own log at debug level, on the console as in its file. */
static void
sandbox_boot_debug_log(struct buf *b)
{
	static const char *const ini[] = {
		"[loggers]", "keys=root,cloudinit",
		"[handlers]", "keys=consoleHandler,cloudLogHandler",
		"[formatters]", "keys=arg0Formatter",
		"[logger_root]", "level=DEBUG",
		"handlers=consoleHandler,cloudLogHandler",
		"[logger_cloudinit]", "level=DEBUG", "qualname=cloudinit",
		"handlers=", "propagate=1",
		"[handler_consoleHandler]", "class=StreamHandler",
		"level=DEBUG", "formatter=arg0Formatter", "args=(sys.stderr,)",
		"[handler_cloudLogHandler]", "class=FileHandler",
		"level=DEBUG", "formatter=arg0Formatter",
		"args=('/var/log/cloud-init.log', 'a', 'UTF-8')",
		"[formatter_arg0Formatter]",
		"format=%(asctime)s - %(filename)s[%(levelname)s]: "
		"%(message)s",
	};
	size_t	i;

	buf_puts(b, "log_cfgs:\n  - |\n");
	for (i = 0; i < sizeof ini / sizeof ini[0]; i++)
		buf_printf(b, "    %s\n", ini[i]);
}

/*
 * The seed's user-data. Nothing in it is secret: the token is in the
 * agent's own file on the seed, which only root in the guest can read.
 */
void
sandbox_boot_user_data(struct sandbox *sb, struct buf *b)
{
	buf_puts(b, "#cloud-config\n");
	sandbox_boot_bootstrap(sb, b);
	if (sb->profile->show_boot_console)
		sandbox_boot_debug_log(b);
}

/*
 * The network as cloud-init should leave it: alone. qsup's agent gives
 * the card its fixed address itself, the same as on the fast path; a
 * DHCP client of the image's would only race it.
 */
const char *
sandbox_boot_network_config(void)
{
	return ("version: 1\nconfig: []\n");
}

/* The static agent, to put on the seed. */
int
sandbox_boot_agent(struct sandbox *sb, char **data, size_t *len,
    char **cause)
{
	if ((*data = util_read_file(sb->guest.agent, len,
	    SANDBOX_BOOT_AGENT_MAX)) == NULL) {
		xasprintf(cause, "the guest agent %s: %s", sb->guest.agent,
		    strerror(errno));
		return (-1);
	}
	return (0);
}
