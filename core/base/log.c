/*
 * Messages for a person, on stderr, prefixed "qsup: ".
 * log_warn appends strerror(errno); log_warnx does not.
 *
 * The bottom of core/base: it uses libc only, so that every other file
 * of the folder (allocation in util.c first) may die through fatalx.
 * Where the messages go while the loop runs is handed down to it
 * (log_set_output) rather than known here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"

int		 log_verbose;
static const char *log_name = "qsup";
/* where messages go while the loop runs: stderr's queue */
static void	(*log_out)(void *, const void *, size_t);
static void	*log_out_arg;

void
log_init(const char *name)
{
	log_name = name;
}

/*
 * While set, messages go through out(arg, ...) (outq_put onto the
 * non-blocking queue in front of stderr) rather than stdio: a stderr
 * nobody reads then holds them, not qsup, and they keep their order with
 * the command's own stderr. NULL goes back to stdio.
 */
void
log_set_output(void (*out)(void *, const void *, size_t), void *arg)
{
	log_out = out;
	log_out_arg = arg;
}

/* xvasprintf's contract without util.c, which leans on this file. */
static int
log_vasprintf(char **ret, const char *fmt, va_list ap)
{
	int	n;

	if ((n = vasprintf(ret, fmt, ap)) == -1)
		fatalx("out of memory (formatting)");
	return (n);
}

static int
log_asprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = log_vasprintf(ret, fmt, ap);
	va_end(ap);
	return (n);
}

static void
log_vwrite(const char *fmt, va_list ap, const char *suffix)
{
	char	*msg;

	char	*line;
	int	 n;

	log_vasprintf(&msg, fmt, ap);
	if (suffix != NULL)
		n = log_asprintf(&line, "%s: %s: %s\n", log_name, msg, suffix);
	else
		n = log_asprintf(&line, "%s: %s\n", log_name, msg);
	if (log_out != NULL)
		log_out(log_out_arg, line, n);
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
