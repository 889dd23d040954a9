/*
 * What the template's files share, and no one else: template.c (make,
 * check, open) and template_cache.c (list, evict) on top of
 * template_file.c (the names of a template's files, and their removal).
 */
#ifndef QSUP_TEMPLATE_INT_H
#define QSUP_TEMPLATE_INT_H

#include "vm.h"

/*
 * The files of template KEY in the templates directory:
 *	KEY.state	QEMU's migration stream (format 2: devices only)
 *	KEY.ram		format 2: the guest's RAM, mapped copy-on-write by
 *			every restore; sparse; never written once in place
 *	KEY.shape	what the key was made of; its first line names the
 *			format: TEMPLATE_SHAPE_STREAM or _SHARED, followed by
 *			" protocol N"; its mtime is the template's last use
 *	KEY.meta	the identity of KEY.state (and KEY.ram) when written
 *	KEY.lock	held by the one process building KEY
 * Half-written: KEY.state.PID, KEY.ram.PID, KEY.meta.PID, KEY.shape.PID.
 */
#define TEMPLATE_SHAPE_STREAM	"qsup-template 1"
#define TEMPLATE_SHAPE_SHARED	"qsup-template 2 ram shared"

/* template_file.c */
void		 template_file_id(struct buf *, const char *, const char *);
#define TEMPLATE_KEY_LEN	32	/* hex digits */
int		 template_is_key(const char *, size_t);
size_t		 template_partial(const char *, long *);
int		 template_writer_alive(long);

#endif
