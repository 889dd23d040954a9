/*
 * "qsup profile import FILE": the seed's .py-sandboxes key lines
 * (qemu.KEY=VALUE) as a Lua profile, each line's translation commented.
 * What the seed accepts and quietly replaces by a default ("2GB", an
 * unknown virtfs value) is refused here, and named with its line: the
 * profile written leaves that setting at qsup's default.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

#define IMPORT_FILE_MAX		(1024 * 1024)
#define IMPORT_EXIT_PARTIAL	1	/* written, some lines untranslated */

static const struct cmd_option cmd_profile_import_options[] = {
	{ 'o', "output", CMD_V_FILE, "FILE", 0,
	  "write the profile there (default: stdout)" },
	CMD_OPTION_HELP,
	{ 0, NULL, 0, NULL, 0, NULL }
};

const struct cmd_entry cmd_profile_import_entry = {
	.name = "import",
	.usage = "profile import [-o OUT.lua] FILE",
	.summary = "a .py-sandboxes file's qemu.* lines as a Lua profile",
	.exec = cmd_profile_import,
	.help =
"Read the seed's .py-sandboxes FILE (KEY=VALUE lines, # comments) and\n"
"write its qemu.* lines as a qsup profile, each setting commented with the\n"
"line it came from and what it means there. Values the seed would\n"
"silently replace by its default (memory = 2GB, a virtfs value it does not\n"
"know) are refused: each line not translated is named on stderr as\n"
"FILE:LINE:, and its setting keeps qsup's default. Other lines (other\n"
"providers' settings) are ignored, and said so in the profile.\n"
"\n",
	.options = cmd_profile_import_options,
	.column = 21,
	.notes =
"\n"
"Exit status: 0, every qemu.* line translated; 1, the profile was written\n"
"but some lines were not; 125, FILE unreadable or a usage error.\n"
};

/* One translated setting: its qsup name, its Lua value, what it means. */
struct import_setting {
	const char	*name;
	char		*value;
	char		*why;
	int		 line;
	char		*text;		/* the line, as written */
};

struct import {
	const char		*file;
	struct import_setting	*set;
	size_t			 nset;
	struct buf		 notes;		/* untranslated, as comments */
	struct buf		 ignored;	/* line numbers */
	int			 nignored;
	int			 nbad;
};

/* The seed's truthy values (true, 1, yes) and their opposites. */
static int
import_bool(const char *v, int *b)
{
	static const char	*yes[] = { "true", "1", "yes", "on", NULL };
	static const char	*no[] = { "false", "0", "no", "off", NULL };
	int			 i;

	for (i = 0; yes[i] != NULL; i++)
		if (strcasecmp(v, yes[i]) == 0)
			return (*b = 1, 0);
	for (i = 0; no[i] != NULL; i++)
		if (strcasecmp(v, no[i]) == 0)
			return (*b = 0, 0);
	return (-1);
}

/*
 * QEMU's -m: a whole number, at most one suffix k, M, G, T, P or E
 * (MiB without one), as the seed passes it; into whole MiB.
 */
static int
import_memory(const char *v, unsigned long long *mib, char **why)
{
	unsigned long long	 n;
	char			*end;
	int			 shift;

	errno = 0;
	if (!isdigit((unsigned char)*v) ||
	    ((n = strtoull(v, &end, 10)), errno != 0)) {
		*why = xstrdup("not a whole number with one suffix letter");
		return (-1);
	}
	switch (*end) {
	case '\0': case 'M': case 'm': shift = 0; break;
	case 'k': case 'K': shift = -10; break;
	case 'G': case 'g': shift = 10; break;
	case 'T': case 't': shift = 20; break;
	case 'P': case 'p': case 'E': case 'e':
		*why = xstrdup("more than qsup's 1T");
		return (-1);
	default:
		*why = xstrdup("not a whole number with one suffix letter k, "
		    "M, G or T (QEMU's -m refuses it; the seed then silently "
		    "uses its 2048 MiB)");
		return (-1);
	}
	if (*end != '\0' && end[1] != '\0') {
		xasprintf(why, "\"%s\" has more than one suffix letter (QEMU's "
		    "-m refuses it; the seed then silently uses its 2048 MiB); "
		    "write %.*s%c", v, (int)(end - v), v, toupper((unsigned
		    char)*end));
		return (-1);
	}
	if (shift < 0 && n % 1024 != 0) {
		*why = xstrdup("not a whole number of MiB");
		return (-1);
	}
	*mib = shift < 0 ? n / 1024 : n << shift;
	if (*mib < 16 || *mib > 1024ULL * 1024 || (shift > 0 &&
	    (*mib >> shift) != n)) {
		*why = xstrdup("outside qsup's 16M to 1T");
		return (-1);
	}
	return (0);
}

/* A Lua string literal of s (only what a value line may hold). */
static char *
import_lua_string(const char *s)
{
	struct buf	b = { 0 };
	char		*r;

	buf_json_string(&b, s);		/* a Lua string too */
	r = xstrdup(b.data);
	buf_free(&b);
	return (r);
}

/*
 * One qemu.KEY's value as a qsup setting: 0 with *name, *value (Lua) and
 * *why; -1 with *why saying why not.
 */
static int
import_translate(const char *key, const char *v, const char **name,
    char **value, char **why)
{
	unsigned long long	 mib;
	double			 secs;
	char			*end;
	int			 b;

	*why = NULL;
	if (strcmp(key, "use_kvm") == 0) {
		*name = "use_kvm";
		if (import_bool(v, &b) == -1)
			goto notbool;
		*value = xstrdup(b ? "\"auto\"" : "false");
		*why = xstrdup(b ? "the seed's true adds -enable-kvm when "
		    "/dev/kvm is there and emulates otherwise: \"auto\" (qsup's "
		    "true means KVM or fail)" : "never KVM");
		return (0);
	}
	if (strcmp(key, "memory") == 0) {
		*name = "memory";
		if (import_memory(v, &mib, why) == -1)
			return (-1);
		xasprintf(value, "%llu", mib);
		xasprintf(why, "%s is %llu MiB", v, mib);
		return (0);
	}
	if (strcmp(key, "show_boot_console") == 0) {
		*name = "show_boot_console";
		if (import_bool(v, &b) == -1)
			goto notbool;
		*value = xstrdup(b ? "true" : "false");
		*why = xstrdup(b ? "the guest's console on stderr (qsup keeps "
		    "no .pysandbox-qemu-console.log)" : "the console hidden");
		return (0);
	}
	if (strcmp(key, "virtfs") == 0 || strcmp(key, "virtfs_stage") == 0) {
		*name = "virtfs";
		if (strcmp(v, "auto") != 0 && strcmp(v, "on") != 0 &&
		    strcmp(v, "off") != 0) {
			*why = xstrdup("not auto, on or off (the seed warns and "
			    "uses auto)");
			return (-1);
		}
		*value = import_lua_string(v);
		*why = xstrdup(strcmp(key, "virtfs") == 0 ? "copy shared trees "
		    "before sharing them: the same values" : "virtfs_stage is "
		    "the seed's old name of virtfs");
		return (0);
	}
	if (strcmp(key, "virtfs_security_model") == 0) {
		*name = "virtfs_security_model";
		if (*v == '\0' || strcmp(v, "auto") == 0) {
			*value = xstrdup("\"none\"");
			*why = xstrdup("the seed maps auto to mapped-xattr; "
			    "qsup's auto is none, since the mapped models break "
			    "every host symlink: write \"mapped-xattr\" to keep "
			    "the seed's");
			return (0);
		}
		if (strcmp(v, "none") != 0 && strcmp(v, "mapped-xattr") != 0 &&
		    strcmp(v, "mapped-file") != 0 &&
		    strcmp(v, "passthrough") != 0) {
			*why = xstrdup("not a QEMU security_model");
			return (-1);
		}
		*value = import_lua_string(v);
		*why = xstrdup("the 9p security model of read-write shares");
		return (0);
	}
	if (strcmp(key, "start_timeout") == 0) {
		*name = "start_timeout";
		secs = strtod(v, &end);
		if (*v == '\0' || *end != '\0' || !(secs > 0) || secs > 86400) {
			*why = xstrdup("not a positive number of seconds (the "
			    "seed warns and uses its default)");
			return (-1);
		}
		xasprintf(value, "%g", secs);
		*why = xstrdup("seconds for the guest to answer, boot included");
		return (0);
	}
	if (strcmp(key, "ld_closure_libs") == 0) {
		*name = "ld_closure_libs";
		if (strcmp(v, "full") == 0)
			*value = xstrdup("\"full\"");
		else if (strcmp(v, "sparse") == 0 || strcmp(v, "minimal") == 0 ||
		    strcmp(v, "ldd") == 0)
			*value = xstrdup("\"sparse\"");
		else {
			*why = xstrdup("not full, sparse, minimal or ldd");
			return (-1);
		}
		*why = xstrdup("minimal and ldd mean sparse, in both");
		return (0);
	}
	*why = xstrdup("a key the seed parses but does not use, nor does qsup");
	return (-1);
notbool:
	*why = xstrdup("not true, 1, yes or false, 0, no");
	return (-1);
}

/* A setting once more: the later line wins, as in the seed's dict. */
static void
import_keep(struct import *im, const char *name, char *value, char *why,
    int line, const char *text)
{
	struct import_setting	*s;
	size_t			 i;

	for (i = 0; i < im->nset; i++) {
		s = &im->set[i];
		if (strcmp(s->name, name) != 0)
			continue;
		buf_printf(&im->notes, "-- line %d (%s) is overridden by line "
		    "%d\n", s->line, s->text, line);
		free(s->value);
		free(s->why);
		free(s->text);
		goto fill;
	}
	im->set = xreallocarray(im->set, im->nset + 1, sizeof *im->set);
	s = &im->set[im->nset++];
fill:
	s->name = name;
	s->value = value;
	s->why = why;
	s->line = line;
	s->text = xstrdup(text);
}

/* Trim blanks at both ends, in place; a pair of quotes around too. */
static char *
import_trim(char *s)
{
	size_t	n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
		s[n - 1] = '\0';
		s++;
	}
	return (s);
}

/* One line of the file: a comment, another provider's, or qemu.KEY. */
static void
import_line(struct import *im, char *line, int n)
{
	const char	*name;
	char		*text, *eq, *key, *value, *why;

	text = import_trim(line);
	if (*text == '\0' || *text == '#' || *text == ';')
		return;
	if (strncmp(text, "qemu.", 5) != 0 || (eq = strchr(text, '=')) ==
	    NULL) {
		buf_printf(&im->ignored, "%s%d", im->nignored++ == 0 ? "" :
		    ", ", n);
		return;
	}
	text = xstrdup(text);
	eq = strchr(text, '=');
	*eq = '\0';
	key = import_trim(text + 5);
	value = import_trim(eq + 1);
	if (import_translate(key, value, &name, &value, &why) == 0) {
		*eq = '=';
		import_keep(im, name, value, why, n, import_trim(text));
		free(text);
		return;
	}
	im->nbad++;
	fprintf(stderr, "%s:%d: qemu.%s=%s: not translated: %s\n", im->file, n,
	    key, value, why);
	buf_printf(&im->notes, "-- line %d: qemu.%s=%s: NOT TRANSLATED, %s\n",
	    n, key, value, why);
	free(why);
	free(text);
}

/* The profile, in the order the settings came. */
static void
import_write(const struct import *im, struct buf *out)
{
	const struct import_setting	*s;
	size_t				 i;

	buf_printf(out, "-- Imported by qsup profile import from %s: its "
	    "qemu.* lines,\n-- each with what it means here. A setting not "
	    "named keeps qsup's\n-- default (qsup profile show lists them).\n",
	    im->file);
	if (im->nignored > 0)
		buf_printf(out, "--\n-- Not qemu.* lines, ignored (other "
		    "providers' settings): line%s %s.\n", im->nignored == 1 ?
		    "" : "s", im->ignored.data);
	if (im->notes.len > 0)
		buf_printf(out, "--\n%s", im->notes.data);
	buf_printf(out, "\nreturn {\n");
	for (i = 0; i < im->nset; i++) {
		s = &im->set[i];
		buf_printf(out, "%s\t-- line %d: %s: %s\n\t%s = %s,\n", i == 0 ?
		    "" : "\n", s->line, s->text, s->why, s->name, s->value);
	}
	buf_printf(out, "}\n");
}

static void
import_free(struct import *im)
{
	size_t	i;

	for (i = 0; i < im->nset; i++) {
		free(im->set[i].value);
		free(im->set[i].why);
		free(im->set[i].text);
	}
	free(im->set);
	im->set = NULL;
	buf_free(&im->notes);
	buf_free(&im->ignored);
}

/* The profile written must load: else this translation is wrong. */
static int
import_check(const char *name, const struct buf *out)
{
	struct profile	 p;
	char		*cause = NULL;

	if (profile_load_buffer(&p, name, out->data, out->len, NULL, 0,
	    &cause) == -1) {
		log_warnx("profile import: the profile made does not load "
		    "(a bug of qsup's): %s", cause);
		free(cause);
		return (-1);
	}
	profile_free(&p);
	return (0);
}

/* out into path, whole or not at all. */
static int
import_save(const char *path, const struct buf *out)
{
	char	*tmp;
	int	 rc;

	xasprintf(&tmp, "%s.%ld.tmp", path, (long)getpid());
	if ((rc = util_write_file(tmp, out->data)) == 0 &&
	    (rc = rename(tmp, path)) == -1)
		unlink(tmp);
	if (rc == -1)
		log_warn("profile import: %s", path);
	free(tmp);
	return (rc);
}

int
cmd_profile_import(const struct cmd_entry *self, int argc, char **argv)
{
	struct cmd_args	 a;
	struct import	 im;
	struct buf	 out = { 0 };
	const char	*output;
	char		*text, *line, *next;
	int		 n = 0, r, rc = QSUP_EXIT_ERROR;

	memset(&im, 0, sizeof im);
	if ((r = cmd_args_parse(self, argc, argv, &a)) == 0 && a.argc != 1)
		r = -1;
	if (r == 1)
		cmd_usage(self, stdout);
	else if (r == -1)
		log_warnx("usage: qsup %s", self->usage);
	else
		im.file = a.argv[0];
	output = cmd_args_get(&a, 'o');
	cmd_args_free(&a);	/* what was kept is argv's */
	if (r != 0)
		return (r == 1 ? 0 : QSUP_EXIT_ERROR);
	if ((text = util_read_file(im.file, NULL, IMPORT_FILE_MAX)) == NULL) {
		log_warn("profile import: %s", im.file);
		return (QSUP_EXIT_ERROR);
	}
	for (line = text; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		import_line(&im, line, ++n);
		if (next != NULL && *next == '\0')
			break;
	}
	free(text);
	import_write(&im, &out);
	if (import_check(output != NULL ? output : "imported.lua", &out) == 0 &&
	    (output == NULL ? fputs(out.data, stdout) < 0 ? -1 : 0 :
	    import_save(output, &out)) == 0)
		rc = im.nbad > 0 ? IMPORT_EXIT_PARTIAL : 0;
	if (im.nbad > 0)
		fprintf(stderr, "%s: %d qemu.* line%s not translated\n", im.file,
		    im.nbad, im.nbad == 1 ? "" : "s");
	fflush(stdout);
	buf_free(&out);
	import_free(&im);
	return (rc);
}
