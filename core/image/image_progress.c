/*
 * A pull's progress on stderr: on a TTY one line redrawn in place (a bar,
 * bytes done of the total, rate, time left), otherwise a plain line every
 * few seconds that a log keeps readably; nothing under --json. Driven by
 * the bytes as they arrive: a redraw at most every 0.2 s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "image_int.h"

#define IMAGE_PROGRESS_BAR_S	0.2
#define IMAGE_PROGRESS_LINE_S	5.0
#define IMAGE_PROGRESS_WIDTH	24

struct image_progress_state {
	enum image_progress	 mode;
	char			*name;
	double			 t0, last;
	uint64_t		 start;	/* bytes already there: not this
					   run's rate */
	uint64_t		 done, total;
	int			 drawn;
};

/* A progress for name, start bytes of it already on disk. */
struct image_progress_state *
image_progress_new(enum image_progress mode, const char *name,
    uint64_t start)
{
	struct image_progress_state	*ps;

	ps = xcalloc(1, sizeof *ps);
	if (mode == IMAGE_PROGRESS_AUTO)
		mode = isatty(STDERR_FILENO) ? IMAGE_PROGRESS_BAR :
		    IMAGE_PROGRESS_LINES;
	ps->mode = mode;
	ps->name = xstrdup(name);
	ps->t0 = ps->last = util_now();
	ps->start = ps->done = start;
	return (ps);
}

/* "1:02:03" or "2:03" for secs, in buf. */
static void
image_progress_eta(char *buf, size_t len, double secs)
{
	long	s = secs < 0 || secs > 359999 ? -1 : (long)(secs + 0.5);

	if (s < 0)
		snprintf(buf, len, "--:--");
	else if (s >= 3600)
		snprintf(buf, len, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60,
		    s % 60);
	else
		snprintf(buf, len, "%ld:%02ld", s / 60, s % 60);
}

/* Draw the bar or print the line, now. */
static void
image_progress_draw(struct image_progress_state *ps, double now)
{
	char	bar[IMAGE_PROGRESS_WIDTH + 1], eta[32], tot[32];
	double	el = now - ps->t0, rate;
	int	i, fill;

	rate = el > 0 ? (ps->done - ps->start) / el : 0;
	image_progress_eta(eta, sizeof eta, rate > 0 && ps->total > ps->done ?
	    (ps->total - ps->done) / rate : ps->total == ps->done ? 0 : -1);
	if (ps->total > 0)
		snprintf(tot, sizeof tot, "%.1f", ps->total / 1e6);
	else
		snprintf(tot, sizeof tot, "?");
	if (ps->mode == IMAGE_PROGRESS_LINES) {
		fprintf(stderr, "qsup: pulling %s: %.1f of %s MB, %.1f MB/s, "
		    "%s left\n", ps->name, ps->done / 1e6, tot, rate / 1e6,
		    eta);
		return;
	}
	fill = ps->total > 0 ? (int)((double)ps->done / ps->total *
	    IMAGE_PROGRESS_WIDTH) : 0;
	for (i = 0; i < IMAGE_PROGRESS_WIDTH; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[IMAGE_PROGRESS_WIDTH] = '\0';
	fprintf(stderr, "\r%s [%s] %.1f/%s MB %.1f MB/s ETA %s\033[K",
	    ps->name, bar, ps->done / 1e6, tot, rate / 1e6, eta);
	ps->drawn = 1;
}

/* done of total bytes (0: unknown) are there: redraw if it is time. */
void
image_progress_set(struct image_progress_state *ps, uint64_t done,
    uint64_t total)
{
	double	now;

	if (ps == NULL || ps->mode == IMAGE_PROGRESS_QUIET)
		return;
	ps->done = done;
	ps->total = total;
	now = util_now();
	if (now - ps->last < (ps->mode == IMAGE_PROGRESS_BAR ?
	    IMAGE_PROGRESS_BAR_S : IMAGE_PROGRESS_LINE_S))
		return;
	ps->last = now;
	image_progress_draw(ps, now);
}

/* The pull ended (ok: whole): the bar's last state and its newline. */
void
image_progress_end(struct image_progress_state *ps, int ok)
{
	if (ps == NULL)
		return;
	if (ps->mode == IMAGE_PROGRESS_BAR && (ps->drawn || ok)) {
		if (ok)
			image_progress_draw(ps, util_now());
		fputc('\n', stderr);
	}
	free(ps->name);
	free(ps);
}
