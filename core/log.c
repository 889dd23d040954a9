/*
 * Messages for a person, on stderr, prefixed "qsup: ".
 * log_warn appends strerror(errno); log_warnx does not.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qsup.h"

int		 log_verbose;
static const char *log_name = "qsup";

void
log_init(const char *name)
{
	log_name = name;
}

static void
log_vwrite(const char *fmt, va_list ap, const char *suffix)
{
	char	*msg;

	xvasprintf(&msg, fmt, ap);
	if (suffix != NULL)
		fprintf(stderr, "%s: %s: %s\n", log_name, msg, suffix);
	else
		fprintf(stderr, "%s: %s\n", log_name, msg);
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
