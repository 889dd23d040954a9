/*
 * Spare QEMUs: a QEMU started ahead, in the shape of a sandbox restored
 * from a format 2 snapshot (sandbox_snap2.c), waiting on its -incoming
 * pipe. The next restore or fork copy of that shape takes its process and
 * descriptors instead of spawning one, so QEMU's own start (its exec, its
 * libraries, its machine made: 40-65 ms of every restore under TCG here)
 * is paid before the request comes, not after. Nothing of a guest is in a
 * spare: its RAM is the template's file mapped copy-on-write, untouched,
 * and the snapshot's pages and device state go in as for any restore.
 *
 * A spare is taken only by a sandbox whose command line is the spare's
 * (but for descriptor numbers and -name) and whose RAM file is the same
 * file (device and inode), so it cannot restore into another machine.
 * Sandboxes with shares, a disk, cow layers or a display get none: their
 * command lines hold per-sandbox paths. Made only when the server asks
 * for them (sandbox_spares: qsup serve --spares N), after a restore that
 * could have used one is ready, never while one is starting.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "sandbox_int.h"

struct sandbox_spare {
	TAILQ_ENTRY(sandbox_spare) entry;
	struct qemu	*qemu;
	char		*key;		/* its command line, see spare_key */
	dev_t		 ram_dev;	/* the RAM file it maps */
	ino_t		 ram_ino;
	int		 fds[SANDBOX_SPARE_NFDS];	/* ours: console,
						   the ports, QMP */
	int		 pipe;		/* -incoming's write end */
	int		 state_fd;	/* -incoming's read end, QEMU's number */
	int		 net_fd;	/* our end of the card's link, or -1 */
	double		 t_spawn;
};

static TAILQ_HEAD(, sandbox_spare) spares = TAILQ_HEAD_INITIALIZER(spares);
static size_t	spares_n, spares_max;
static unsigned long long spares_taken;

/* The command line as a key: descriptor numbers and -name left out. */
static char *
spare_key(char *const *argv)
{
	static const char *const fdp[] = {
		"fd=", "/proc/self/fd/", "addr.str=", "fd:", NULL
	};
	struct buf	 b = { 0 };
	const char	*p;
	size_t		 i, k, n;

	for (i = 0; argv[i] != NULL; i++) {
		if (i > 0 && strcmp(argv[i - 1], "-name") == 0) {
			buf_add(&b, "\037", 1);
			continue;
		}
		for (p = argv[i]; *p != '\0'; p++) {
			for (k = 0; fdp[k] != NULL; k++) {
				n = strlen(fdp[k]);
				if (strncmp(p, fdp[k], n) == 0)
					break;
			}
			if (fdp[k] == NULL) {
				buf_add(&b, p, 1);
				continue;
			}
			buf_add(&b, p, n);
			p += n;
			if (*p == '-')
				p++;
			while (isdigit((unsigned char)*p))
				p++;
			buf_add(&b, "#", 1);
			p--;
		}
		buf_add(&b, "\037", 1);
	}
	buf_add(&b, "", 1);
	return (b.data);
}

/* Can a sandbox of this shape use (or leave) a spare? */
static int
spare_able(struct sandbox *sb)
{
	return (sb->snap != NULL && sb->snap->format == 2 &&
	    sb->nshares == 0 && sb->disk.base == NULL && sb->cow.path ==
	    NULL && sb->profile->display == PROFILE_DISPLAY_NONE &&
	    !sandbox_boot_image(sb));
}

static void
spare_free(struct sandbox_spare *sp)
{
	int	i;

	TAILQ_REMOVE(&spares, sp, entry);
	spares_n--;
	qemu_free(sp->qemu);
	for (i = 0; i < SANDBOX_SPARE_NFDS; i++) {
		if (sp->fds[i] != -1)
			close(sp->fds[i]);
	}
	if (sp->pipe != -1)
		close(sp->pipe);
	if (sp->net_fd != -1)
		close(sp->net_fd);
	free(sp->key);
	free(sp);
}

/* A spare's QEMU ended while it waited: forget it. */
static void
spare_exit_cb(struct qemu *q, void *arg)
{
	struct sandbox_spare	*sp = arg;

	(void)q;
	log_debug("spare QEMU %ld ended while it waited",
	    (long)qemu_pid(sp->qemu));
	spare_free(sp);
}

/* At most max spares from now on (0: none); the oldest go first. */
void
sandbox_spares(size_t max)
{
	spares_max = max;
	while (spares_n > spares_max)
		spare_free(TAILQ_FIRST(&spares));
}

/* Every spare killed and reaped (a server's end). */
void
sandbox_spares_free(void)
{
	sandbox_spares(0);
}

/* Spares waiting now; *taken, how many restores took one so far. */
size_t
sandbox_spares_count(unsigned long long *taken)
{
	*taken = spares_taken;
	return (spares_n);
}

/* The sandbox's command line, as its launch would make it now. */
static char *
spare_key_of(struct sandbox *sb)
{
	struct qemu_argv	 a = { 0 };
	char			*key;

	sandbox_build_argv(sb, &a);
	key = spare_key(a.argv);
	qemu_argv_free(&a);
	return (key);
}

/*
 * A restore's launch, after sandbox_snap_launch: is a spare of its shape
 * waiting? 1: taken, its descriptors in fds (console, ports, QMP: ours),
 * its QEMU sb's, its pipe the restore's, its card's link sb's; 0: none.
 */
int
sandbox_spare_take(struct sandbox *sb, int fds[SANDBOX_SPARE_NFDS])
{
	struct sandbox_spare	*sp;
	struct stat		 st;
	char			*key;
	int			 i;

	if (spares_n == 0 || !spare_able(sb) || sb->ram_fd == -1 ||
	    fstat(sb->ram_fd, &st) == -1)
		return (0);
	key = spare_key_of(sb);
	TAILQ_FOREACH(sp, &spares, entry) {
		if (sp->ram_dev == st.st_dev && sp->ram_ino == st.st_ino &&
		    strcmp(sp->key, key) == 0 && qemu_running(sp->qemu))
			break;
	}
	free(key);
	if (sp == NULL)
		return (0);
	if (sb->net != NULL && (sp->net_fd == -1 ||
	    net_adopt(sb->net, sp->net_fd) == -1))
		return (0);
	sp->net_fd = -1;
	log_debug("restore on spare QEMU %ld, started %.3f s ago",
	    (long)qemu_pid(sp->qemu), util_now() - sp->t_spawn);
	qemu_take(sb->qemu, sp->qemu);
	/* QEMU has the spare's RAM file and pipe: ours are not needed. */
	close(sb->state_fd);
	sb->state_fd = -1;
	close(sb->ram_fd);
	sb->ram_fd = -1;
	close(sb->snap->pipe);
	sb->snap->pipe = sp->pipe;
	sp->pipe = -1;
	for (i = 0; i < SANDBOX_SPARE_NFDS; i++) {
		fds[i] = sp->fds[i];
		sp->fds[i] = -1;
	}
	spare_free(sp);
	spares_taken++;
	return (1);
}

/* One more socketpair: ours in *ours, QEMU's in *theirs. */
static int
spare_pair(int *ours, int *theirs)
{
	int	sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC, 0, sv) == -1)
		return (-1);
	*ours = sv[0];
	*theirs = sv[1];
	return (0);
}

/*
 * QEMU's descriptors for a spare in sb's shape, into sb's fields (whose
 * own QEMU has them closed since it started). -1: out of descriptors.
 */
static int
spare_fds(struct sandbox *sb, struct sandbox_spare *sp, int *net_theirs)
{
	int	i, p[2];

	if (spare_pair(&sp->fds[0], &sb->console_guest_fd) == -1)
		return (-1);
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		if (spare_pair(&sp->fds[1 + i], &sb->port_guest_fd[i]) == -1)
			return (-1);
	}
	if (spare_pair(&sp->fds[SANDBOX_SPARE_NFDS - 1],
	    &sb->qmp_guest_fd) == -1)
		return (-1);
	if (sandbox_snap2_pipe(p, NULL) == -1)
		return (-1);
	sb->state_fd = sp->state_fd = p[0];
	sp->pipe = p[1];
	if ((sb->ram_fd = fcntl(sb->snap->tpl_fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return (-1);
	if (sb->net != NULL) {
		if (net_link_pair(p, NULL) == -1)
			return (-1);
		sp->net_fd = p[0];
		*net_theirs = p[1];
	}
	return (0);
}

/* QEMU's ends, closed once it holds them (or it never ran). */
static void
spare_close_theirs(struct sandbox *sb, int net_theirs)
{
	int	i;

	if (sb->console_guest_fd != -1)
		close(sb->console_guest_fd);
	for (i = 0; i < QSUP_PORT_COUNT; i++) {
		if (sb->port_guest_fd[i] != -1)
			close(sb->port_guest_fd[i]);
		sb->port_guest_fd[i] = -1;
	}
	if (sb->qmp_guest_fd != -1)
		close(sb->qmp_guest_fd);
	if (sb->state_fd != -1)
		close(sb->state_fd);
	if (sb->ram_fd != -1)
		close(sb->ram_fd);
	if (net_theirs != -1)
		close(net_theirs);
	sb->console_guest_fd = sb->qmp_guest_fd = sb->state_fd =
	    sb->ram_fd = -1;
}

/* Its command line: sb's, with the spare's own link for the card. */
static void
spare_argv(struct sandbox *sb, int net_theirs, struct qemu_argv *a)
{
	size_t	i;

	sandbox_build_argv(sb, a);
	for (i = 0; net_theirs != -1 && a->argv[i] != NULL; i++) {
		if (strncmp(a->argv[i], "stream,id=net0,", 15) == 0) {
			free(a->argv[i]);
			a->argv[i] = net_netdev_arg(net_theirs);
		}
	}
}

/* The spawn itself, as sandbox_launch.c's with the spare's descriptors. */
static int
spare_spawn(struct sandbox *sb, struct sandbox_spare *sp, int net_theirs,
    char **cause)
{
	struct qemu_confine	 c;
	struct qemu_argv	 a = { 0 };
	char			*own, *slash;
	int			 fds[SANDBOX_SPAWN_NFDS], rc;

	/* It belongs to no sandbox yet: named for the run root's spares. */
	own = sb->rundir;
	if ((slash = strrchr(own, '/')) != NULL)
		xasprintf(&sb->rundir, "%.*s/spare", (int)(slash - own), own);
	else
		sb->rundir = xstrdup("spare");
	spare_argv(sb, net_theirs, &a);
	free(sb->rundir);
	sb->rundir = own;
	sp->key = spare_key(a.argv);
	sandbox_confine(sb, net_theirs, fds, &c);
	sp->qemu = qemu_new(sb->loop, spare_exit_cb, NULL, sp);
	rc = qemu_spawn(sp->qemu, a.argv, &c, cause);
	qemu_argv_free(&a);
	return (rc);
}

/*
 * sb is ready, restored from a format 2 snapshot: start a spare in its
 * shape, unless the server wants none or has enough of that shape. When
 * full, the oldest spare of another shape makes room.
 */
void
sandbox_spare_make(struct sandbox *sb)
{
	struct sandbox_spare	*sp, *old = NULL;
	struct stat		 st;
	char			*cause = NULL, *key;
	int			 i, net_theirs = -1, ours = 0;

	if (spares_max == 0 || !spare_able(sb) || sb->snap->tpl_fd == -1 ||
	    fstat(sb->snap->tpl_fd, &st) == -1)
		return;
	key = spare_key_of(sb);
	TAILQ_FOREACH(sp, &spares, entry) {
		if (sp->ram_dev == st.st_dev && sp->ram_ino == st.st_ino &&
		    strcmp(sp->key, key) == 0)
			ours++;
		else if (old == NULL)
			old = sp;
	}
	free(key);
	if (ours >= (int)spares_max || (spares_n >= spares_max && old == NULL))
		return;
	if (spares_n >= spares_max)
		spare_free(old);

	sp = xcalloc(1, sizeof *sp);
	for (i = 0; i < SANDBOX_SPARE_NFDS; i++)
		sp->fds[i] = -1;
	sp->pipe = sp->state_fd = sp->net_fd = -1;
	sp->ram_dev = st.st_dev;
	sp->ram_ino = st.st_ino;
	TAILQ_INSERT_TAIL(&spares, sp, entry);
	spares_n++;
	if (spare_fds(sb, sp, &net_theirs) == -1)
		xasprintf(&cause, "%s", strerror(errno));
	else if (spare_spawn(sb, sp, net_theirs, &cause) == 0) {
		sp->t_spawn = util_now();
		log_debug("spare QEMU %ld started for the next restore of "
		    "this shape", (long)qemu_pid(sp->qemu));
	}
	spare_close_theirs(sb, net_theirs);
	if (cause != NULL) {
		log_warnx("no spare QEMU: %s", cause);
		free(cause);
		spare_free(sp);
	}
}
