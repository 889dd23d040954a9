/*
 * Messages for a person, on stderr, prefixed "qsup: ".
 * log_warn appends strerror(errno); log_warnx does not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int		 log_verbose;
static const char *log_name = "qsup";
static struct outq *log_queue;	/* stderr's queue while the loop runs */

void
log_init(const char *name)
{
	log_name = name;
}

/*
 * While set, messages go through q (the non-blocking queue in front of
 * stderr) rather than stdio: a stderr nobody reads then holds them, not
 * qsup, and they keep their order with the command's own stderr.
 */
void
log_set_queue(struct outq *q)
{
	log_queue = q;
}

static void
log_vwrite(const char *fmt, va_list ap, const char *suffix)
{
	char	*msg;

	char	*line;
	int	 n;

	xvasprintf(&msg, fmt, ap);
	if (suffix != NULL)
		n = xasprintf(&line, "%s: %s: %s\n", log_name, msg, suffix);
	else
		n = xasprintf(&line, "%s: %s\n", log_name, msg);
	if (log_queue != NULL)
		outq_write(log_queue, line, n);
	else
		fputs(line, stderr);
	free(line);
	free(msg);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (!log_verbose)
		return;
	va_start(ap, fmt);
	log_vwrite(fmt, ap, NULL);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(fmt, ap, NULL);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	va_start(ap, fmt);
	log_vwrite(fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vwrite(fmt, ap, NULL);
	va_end(ap);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: fatal: ", log_name);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(QSUP_EXIT_ERROR);
}
