/*
 * The start gate: how many sandboxes may be starting at once, across every
 * qsup process of this user. A start (QEMU spawned, guest booting or being
 * restored, agent not ready yet) is CPU-bound, and many of them at once
 * share the CPUs so thinly that each overruns its start deadline (a
 * restore past it boots cold instead, which makes it worse); queued, each
 * gets the CPU it needs within its deadline. In dir:
 *	slot.N		N < slots: a start holds it with flock(2); the lock
 *			goes with the holder, however it dies
 *	wait.T.PID.SEQ	a start waiting for a slot since T (CLOCK_MONOTONIC,
 *			ns, system-wide), held with flock(2) by its waiter:
 *			one not locked is a dead waiter's, and is removed
 *	.new.PID.SEQ	a ticket being made (locked, then renamed into place,
 *			so that no wait.* is ever seen unlocked by mistake)
 * A waiter takes a slot only while more are free than live waiters came
 * before it, so starts are served in arrival order (arrival being when
 * the ticket was made; a start whose ticket is being made as a slot frees
 * may be passed).
 *
 * A waiter does not poll: it watches dir with inotify for a holder's
 * release (the holder keeps a second, writable descriptor of its slot
 * file, whose close is an IN_CLOSE_WRITE, on gate_release or on its
 * death alike) and for the queue moving (a ticket removed, or closed by a
 * waiter's death). Waiters open others' files read-only, so their own
 * probing wakes nobody. A timer is the backstop: see GATE_RETRY_*.
 *
 * Every descriptor is close-on-exec: a QEMU started while its qsup holds
 * a slot does not hold it too.
 */
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "vm.h"

/*
 * After an inotify event, a try that fails is tried again this soon: a
 * holder killed outright has its slot file's close reported a moment
 * before the kernel drops its lock (__fput notifies, then removes locks),
 * so the next try, microseconds later, succeeds. 10 ms is well under
 * what a person sees and under a restore's own ~100 ms.
 */
#define GATE_RETRY_MIN	0.01
/*
 * Doubling from GATE_RETRY_MIN up to this, the backstop for an event
 * missed (none should be): a waiter wakes at most once a second for
 * nothing, which costs 64 waiters a few thousand syscalls a second.
 */
#define GATE_RETRY_MAX	1.0
/*
 * Without inotify (none on this filesystem, or the user's instances used
 * up): a fixed poll. 50 ms adds at most that to a wait, small beside a
 * start's own time, and 64 waiters make ~1300 scans a second of a tmpfs
 * directory: a few percent of one CPU.
 */
#define GATE_POLL	0.05

struct gate_ticket {
	unsigned long long	 t;
	long			 pid;
	unsigned int		 seq;
};

struct gate {
	struct ev_loop		*loop;
	char			*dir;
	int			 slots;
	gate_cb			 cb;
	void			*arg;

	struct gate_ticket	 me;
	char			*ticket;	/* our wait.*, while waiting */
	int			 ticket_fd;

	int			 slot;		/* the slot we hold, or -1 */
	int			 slot_fd;	/* its lock */
	int			 beacon_fd;	/* its writable descriptor */
	int			 open;		/* no gate: the dir failed us */

	int			 notify_fd;	/* inotify on dir, or -1 */
	ev_io			 notify;
	ev_timer		 timer;		/* retry; or cb, once ours */
	double			 retry;

	int			 ahead;
	double			 queued;
	double			 got;		/* 0: not ours (yet) */
	double			 left;		/* released before it was */
	int			 done;		/* cb called, or released */
};

static unsigned int	gate_seq;

static int
gate_ticket_cmp(const struct gate_ticket *a, const struct gate_ticket *b)
{
	if (a->t != b->t)
		return (a->t < b->t ? -1 : 1);
	if (a->pid != b->pid)
		return (a->pid < b->pid ? -1 : 1);
	if (a->seq != b->seq)
		return (a->seq < b->seq ? -1 : 1);
	return (0);
}

/* wait.T.PID.SEQ, and nothing else, is a ticket. */
static int
gate_ticket_parse(const char *name, struct gate_ticket *tk)
{
	int	n = -1;

	if (strncmp(name, "wait.", 5) != 0 ||
	    sscanf(name, "wait.%llu.%ld.%u%n", &tk->t, &tk->pid, &tk->seq,
	    &n) != 3 || n < 0 || name[n] != '\0')
		return (-1);
	return (0);
}

/* Does the waiter of dir/name still live? A dead one's ticket goes. */
static int
gate_ticket_live(int dfd, const char *name)
{
	int	fd, live;

	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK);
	if (fd == -1)
		return (0);
	live = flock(fd, LOCK_EX | LOCK_NB) == -1;
	if (!live) {
		unlinkat(dfd, name, 0);
		log_debug("start gate: removed %s, its waiter is gone", name);
	}
	close(fd);
	return (live);
}

/* A .new.PID.SEQ of a process that died making its ticket. */
static void
gate_new_reap(int dfd, const char *name)
{
	long	pid;
	int	n = -1;

	if (sscanf(name, ".new.%ld.%*u%n", &pid, &n) != 1 || n < 0 ||
	    name[n] != '\0' || pid <= 0 || pid == (long)getpid())
		return;
	if (kill((pid_t)pid, 0) == -1 && errno == ESRCH)
		unlinkat(dfd, name, 0);
}

/* How many live waiters came before us; -1: dir cannot be read. */
static int
gate_scan(struct gate *g)
{
	struct gate_ticket	 tk;
	struct dirent		*de;
	DIR			*d;
	int			 ahead = 0;

	if ((d = opendir(g->dir)) == NULL)
		return (-1);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, ".new.", 5) == 0) {
			gate_new_reap(dirfd(d), de->d_name);
			continue;
		}
		if (gate_ticket_parse(de->d_name, &tk) == -1 ||
		    gate_ticket_cmp(&tk, &g->me) >= 0)
			continue;
		if (gate_ticket_live(dirfd(d), de->d_name))
			ahead++;
	}
	closedir(d);
	return (ahead);
}

static void
gate_unwatch(struct gate *g)
{
	if (g->notify_fd != -1) {
		ev_io_stop(g->loop, &g->notify);
		close(g->notify_fd);
		g->notify_fd = -1;
	}
}

/* Leave the queue: our ticket goes, and those behind move up. */
static void
gate_unqueue(struct gate *g)
{
	if (g->ticket != NULL) {
		unlink(g->ticket);
		free(g->ticket);
		g->ticket = NULL;
	}
	if (g->ticket_fd != -1) {
		close(g->ticket_fd);
		g->ticket_fd = -1;
	}
	gate_unwatch(g);
}

/*
 * Take a free slot if our turn has come; 1: ours. It has when more slots
 * are free than live waiters came before us: we lock the first free one
 * and count the others free by locking them an instant. A waiter ahead
 * that tries in that instant fails, and tries again GATE_RETRY_MIN later.
 */
static int
gate_try(struct gate *g, int *ahead)
{
	char	*path, *mine = NULL;
	int	 i, fd, n, nfree = 0, lock = -1;

	n = gate_scan(g);
	if (ahead != NULL)
		*ahead = n < 0 ? 0 : n;
	if (n < 0 || n >= g->slots)
		return (0);
	for (i = 0; i < g->slots && nfree <= n; i++) {
		xasprintf(&path, "%s/slot.%d", g->dir, i);
		fd = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		    0600);
		if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == -1) {
			if (fd != -1)
				close(fd);
			free(path);
			continue;
		}
		if (nfree++ == 0) {
			lock = fd;
			mine = path;
			g->slot = i;
			continue;
		}
		flock(fd, LOCK_UN);
		close(fd);
		free(path);
	}
	if (nfree <= n) {
		if (lock != -1) {
			flock(lock, LOCK_UN);
			close(lock);
		}
		free(mine);
		g->slot = -1;
		return (0);
	}
	/* Writable, so that its close wakes the waiters. */
	g->beacon_fd = open(mine, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	free(mine);
	g->slot_fd = lock;
	g->got = util_now();
	gate_unqueue(g);
	return (1);
}

/* The slot is ours: cb runs from the loop, never inside gate_new. */
static void
gate_won(struct gate *g)
{
	ev_timer_stop(g->loop, &g->timer);
	ev_timer_set(&g->timer, 0, 0);
	ev_timer_start(g->loop, &g->timer);
}

static void
gate_retry(struct gate *g, double after)
{
	g->retry = after;
	ev_timer_stop(g->loop, &g->timer);
	ev_timer_set(&g->timer, after, 0);
	ev_timer_start(g->loop, &g->timer);
}

static void
gate_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct gate	*g = w->data;
	double		 next;

	(void)loop;
	(void)revents;
	if (g->done)
		return;
	if (g->slot == -1 && !g->open) {
		if (!gate_try(g, NULL)) {
			next = g->notify_fd == -1 ? GATE_POLL : g->retry * 2;
			gate_retry(g, next > GATE_RETRY_MAX ?
			    GATE_RETRY_MAX : next);
			return;
		}
	}
	g->done = 1;
	g->cb(g->arg);		/* last: cb may free g */
}

static void
gate_notify_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct gate	*g = w->data;
	char		 events[4096];
	int		 ahead;

	(void)loop;
	(void)revents;
	/* What changed does not matter: the directory is read again. */
	while (read(g->notify_fd, events, sizeof events) > 0)
		;
	if (gate_try(g, &ahead))
		gate_won(g);
	else if (ahead <= g->slots)
		/* At the head, or next to it: see GATE_RETRY_MIN. */
		gate_retry(g, GATE_RETRY_MIN);
}

/* Our ticket, locked before it is seen under its name. */
static int
gate_queue(struct gate *g)
{
	struct timespec	 ts;
	char		*tmp;
	int		 fd;

	g->me.pid = (long)getpid();
	g->me.seq = gate_seq++;
	xasprintf(&tmp, "%s/.new.%ld.%u", g->dir, g->me.pid, g->me.seq);
	unlink(tmp);	/* a dead process's, that had our pid */
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600);
	if (fd == -1 || flock(fd, LOCK_EX | LOCK_NB) == -1)
		goto fail;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	g->me.t = (unsigned long long)ts.tv_sec * 1000000000ULL +
	    (unsigned long long)ts.tv_nsec;
	xasprintf(&g->ticket, "%s/wait.%llu.%ld.%u", g->dir, g->me.t,
	    g->me.pid, g->me.seq);
	if (rename(tmp, g->ticket) == -1) {
		free(g->ticket);
		g->ticket = NULL;
		goto fail;
	}
	free(tmp);
	g->ticket_fd = fd;
	return (0);

fail:
	if (fd != -1)
		close(fd);
	unlink(tmp);
	free(tmp);
	return (-1);
}

/* Watch dir before the first try, so no release falls between the two. */
static void
gate_watch(struct gate *g)
{
	g->notify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (g->notify_fd == -1)
		return;
	if (inotify_add_watch(g->notify_fd, g->dir, IN_CLOSE_WRITE |
	    IN_DELETE | IN_ONLYDIR) == -1) {
		close(g->notify_fd);
		g->notify_fd = -1;
		return;
	}
	ev_io_init(&g->notify, gate_notify_cb, g->notify_fd, EV_READ);
	g->notify.data = g;
	ev_io_start(g->loop, &g->notify);
}

/*
 * Queue for one of slots slots of dir (made 0700 if missing); cb(arg) is
 * called from loop once a slot is ours. A dir that cannot be used opens
 * the gate (a warning, and cb at once from the loop): the gate must not
 * be why a sandbox cannot start.
 */
struct gate *
gate_new(struct ev_loop *loop, const char *dir, int slots, gate_cb cb,
    void *arg)
{
	struct gate	*g;
	int		 ahead = 0;

	g = xcalloc(1, sizeof *g);
	g->loop = loop;
	g->dir = xstrdup(dir);
	g->slots = slots < 1 ? 1 : slots;
	g->cb = cb;
	g->arg = arg;
	g->slot = g->slot_fd = g->beacon_fd = -1;
	g->ticket_fd = g->notify_fd = -1;
	g->queued = util_now();
	ev_timer_init(&g->timer, gate_timer_cb, 0, 0);
	g->timer.data = g;

	if (util_mkdir_p(dir, 0700) == -1 || gate_queue(g) == -1) {
		log_warn("start gate %s: starting without it", dir);
		gate_unqueue(g);
		g->open = 1;
		g->got = g->queued;
		gate_won(g);
		return (g);
	}
	/*
	 * A free slot first, with no watch: closing an inotify instance
	 * waits for an SRCU grace period, 10-16 ms here, which every start
	 * that finds a slot free would pay. Then the watch, and a second
	 * look, for a slot freed in between.
	 */
	if (gate_try(g, &ahead)) {
		gate_won(g);
		return (g);
	}
	gate_watch(g);
	if (gate_try(g, &ahead)) {
		gate_won(g);
		return (g);
	}
	/* Those waiting before us, and the starts holding the slots. */
	g->ahead = ahead + g->slots;
	gate_retry(g, g->notify_fd == -1 ? GATE_POLL : GATE_RETRY_MAX);
	return (g);
}

/* Starts ahead of us when we queued; 0: the slot was ours at once. */
int
gate_ahead(const struct gate *g)
{
	return (g->ahead);
}

/* Seconds waited for the slot (so far, if it is not ours yet). */
double
gate_waited(const struct gate *g)
{
	if (g->got > 0)
		return (g->got - g->queued);
	if (g->left > 0)
		return (g->left - g->queued);
	return (util_now() - g->queued);
}

/*
 * Give the slot back, or leave the queue; cb is not called after this.
 * Unlocked before the writable descriptor's close wakes the waiters, so
 * the first to look finds the slot free.
 */
void
gate_release(struct gate *g)
{
	if (g == NULL)
		return;
	if (g->got == 0 && g->left == 0)
		g->left = util_now();
	g->done = 1;
	ev_timer_stop(g->loop, &g->timer);
	gate_unqueue(g);
	if (g->slot_fd != -1) {
		flock(g->slot_fd, LOCK_UN);
		close(g->slot_fd);
		g->slot_fd = -1;
	}
	if (g->beacon_fd != -1) {
		close(g->beacon_fd);
		g->beacon_fd = -1;
	}
	g->slot = -1;
}

void
gate_free(struct gate *g)
{
	if (g == NULL)
		return;
	gate_release(g);
	free(g->dir);
	free(g);
}

/* A cgroup v2 cpu.max quota as whole CPUs, from path to the root; 0: none. */
static int
gate_cgroup_cpus(void)
{
	char		*cg, *line, *path, *p, *save, *max;
	long long	 quota, period;
	int		 cpus = 0, c;

	if ((cg = util_read_file("/proc/self/cgroup", NULL, 1 << 16)) == NULL)
		return (0);
	for (line = strtok_r(cg, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, "0::/", 4) == 0)
			break;
	if (line == NULL) {
		free(cg);
		return (0);
	}
	/* Each ancestor's quota bounds ours too. */
	for (p = line + 3;;) {
		xasprintf(&path, "/sys/fs/cgroup%s/cpu.max",
		    strcmp(p, "/") == 0 ? "" : p);
		max = util_read_file(path, NULL, 256);
		free(path);
		if (max != NULL && sscanf(max, "%lld %lld", &quota,
		    &period) == 2 && quota > 0 && period > 0) {
			/* Rounded down: a start wants a whole CPU. */
			c = quota / period > INT_MAX ? INT_MAX :
			    (int)(quota / period);
			if (c < 1)
				c = 1;
			if (cpus == 0 || c < cpus)
				cpus = c;
		}
		free(max);
		if (strcmp(p, "/") == 0)
			break;
		if ((path = strrchr(p, '/')) == p)
			p[1] = '\0';
		else
			*path = '\0';
	}
	free(cg);
	return (cpus);
}

/* Starts at once by default: the CPUs we may run on, under any quota. */
int
gate_slots(void)
{
	cpu_set_t	set;
	long		n;
	int		quota;

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	else
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if ((quota = gate_cgroup_cpus()) > 0 && quota < n)
		n = quota;
	if (n < 1)
		n = 1;
	return (n > INT_MAX ? INT_MAX : (int)n);
}
