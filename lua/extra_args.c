/*
 * extra_args: raw QEMU flags a profile may add, minus the ones that weaken
 * isolation or take over what qsup manages. A fixed list of known-bad
 * flags, not a proof that the rest is safe: it keeps a profile taken from
 * a pull request from opening a path to the host by accident or by design,
 * and whoever truly needs such a flag can start QEMU by hand.
 *
 * Flags are matched in every spelling QEMU accepts and a few it does not:
 * "-virtfs", "--virtfs", "-virtfs=...", "--virtfs=...". Values are read as
 * QEMU reads them: comma-separated options with ",," for a comma, JSON for
 * -blockdev, "json:{...}" inside a file name.
 */
#include <sys/stat.h>

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"

enum extra_args_kind {
	EA_REFUSE,	/* whatever its value */
	EA_CHARDEV,	/* -chardev BACKEND,...: backends that reach the host */
	EA_LEGACY_CHR	/* -serial SPEC, ...: the same, in the old syntax */
};

struct extra_args_rule {
	const char		*name;
	enum extra_args_kind	 kind;
	const char		*why;
};

static const struct extra_args_rule extra_args_rules[] = {
	{ "fsdev", EA_REFUSE, "it passes a host directory through to the "
	  "guest; use shares = { ... }" },
	{ "virtfs", EA_REFUSE, "it passes a host directory through to the "
	  "guest; use shares = { ... }" },
	{ "runas", EA_REFUSE, "it changes the user QEMU runs as" },
	{ "run-with", EA_REFUSE, "it changes how QEMU runs (user, root "
	  "directory), which qsup owns" },
	{ "chroot", EA_REFUSE, "it changes QEMU's root directory, which qsup "
	  "owns" },
	{ "monitor", EA_REFUSE, "it opens QEMU's monitor outside qsup's own "
	  "channel" },
	{ "mon", EA_REFUSE, "it opens QEMU's monitor outside qsup's own "
	  "channel" },
	{ "qmp", EA_REFUSE, "it opens QEMU's monitor outside qsup's own "
	  "channel" },
	{ "qmp-pretty", EA_REFUSE, "it opens QEMU's monitor outside qsup's "
	  "own channel" },
	{ "pidfile", EA_REFUSE, "it collides with how qsup runs and stops "
	  "QEMU" },
	{ "daemonize", EA_REFUSE, "it collides with how qsup runs and stops "
	  "QEMU" },
	{ "sandbox", EA_REFUSE, "qsup sets QEMU's seccomp sandbox itself" },
	{ "readconfig", EA_REFUSE, "it reads options from a file qsup cannot "
	  "check" },
	{ "plugin", EA_REFUSE, "it loads a host library into QEMU" },
	{ "D", EA_REFUSE, "it writes a file on the host" },
	{ "trace", EA_REFUSE, "it can write a file on the host" },
	{ "gdb", EA_REFUSE, "it opens a debugger port on the host" },
	{ "s", EA_REFUSE, "it opens a debugger port on the host" },
	{ "vnc", EA_REFUSE, "it opens the guest's display on the host" },
	{ "spice", EA_REFUSE, "it opens the guest's display on the host" },
	{ "netdev", EA_REFUSE, "the network is the network setting's: use "
	  "network = ..., network_allow and ports" },
	{ "nic", EA_REFUSE, "the network is the network setting's: use "
	  "network = ..., network_allow and ports" },
	{ "net", EA_REFUSE, "the network is the network setting's: use "
	  "network = ..., network_allow and ports" },
	{ "incoming", EA_REFUSE, "qsup restores saved VM states itself "
	  "(warm_start)" },
	{ "m", EA_REFUSE, "use memory = ... instead" },
	{ "smp", EA_REFUSE, "use cpus = ... instead" },
	{ "accel", EA_REFUSE, "use use_kvm = ... instead" },
	{ "enable-kvm", EA_REFUSE, "use use_kvm = ... instead" },
	{ "kernel", EA_REFUSE, "use kernel = ... instead" },
	{ "initrd", EA_REFUSE, "use initramfs = ... instead" },
	{ "append", EA_REFUSE, "qsup builds the kernel command line" },
	{ "chardev", EA_CHARDEV, NULL },
	{ "serial", EA_LEGACY_CHR, NULL },
	{ "parallel", EA_LEGACY_CHR, NULL },
	{ "debugcon", EA_LEGACY_CHR, NULL },
	{ "virtioconsole", EA_LEGACY_CHR, NULL },
};

/* Character device backends that stay inside QEMU. */
static const char *extra_args_chardev_ok[] = {
	"null", "ringbuf", "memory", "msmouse", "wctablet", "braille",
	"testdev", "vc", "qemu-vdagent", NULL
};

/* Device nodes that reach nothing of the host's. */
static const char *extra_args_dev_ok[] = {
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
	NULL
};

static int
extra_args_in(const char *s, const char **list)
{
	for (; *list != NULL; list++) {
		if (strcmp(s, *list) == 0)
			return (1);
	}
	return (0);
}

/* Does this path reach a host device? Lexically, then as the host has it. */
static int
extra_args_device(const char *value, char **why)
{
	struct stat	 sb;
	char		*norm, *real;
	int		 hit = 0;

	if (strcmp(value, "host_device") == 0 ||
	    strcmp(value, "host_cdrom") == 0) {
		xasprintf(why, "its driver %s attaches a host device", value);
		return (1);
	}
	if (value[0] != '/' && value[0] != '.')
		return (0);
	norm = util_path_absolute(value);
	if ((strncmp(norm, "/dev/", 5) == 0 || strcmp(norm, "/dev") == 0) &&
	    !extra_args_in(norm, extra_args_dev_ok))
		hit = 1;
	else if ((real = realpath(value, NULL)) != NULL) {
		if (strncmp(real, "/dev/", 5) == 0 &&
		    !extra_args_in(real, extra_args_dev_ok))
			hit = 1;
		else if (stat(real, &sb) == 0 && (S_ISBLK(sb.st_mode) ||
		    S_ISCHR(sb.st_mode)) &&
		    !extra_args_in(real, extra_args_dev_ok))
			hit = 1;
		free(real);
	}
	if (hit)
		xasprintf(why, "it names the host device %s", value);
	free(norm);
	return (hit);
}

/* Each string of a JSON text (-blockdev {...}, file=json:{...}). */
static int
extra_args_json(const char *s, char **why)
{
	struct buf	 b = { 0 };
	unsigned	 u;
	int		 hit = 0;

	while (!hit && (s = strchr(s, '"')) != NULL) {
		buf_consume(&b, b.len);
		for (s++; *s != '\0' && *s != '"'; s++) {
			if (*s != '\\') {
				buf_add(&b, s, 1);
				continue;
			}
			switch (*++s) {
			case '\0':
				s--;
				break;
			case 'u':
				if (sscanf(s + 1, "%4x", &u) == 1 && u > 0 &&
				    u < 0x80) {
					char c = (char)u;

					buf_add(&b, &c, 1);
					s += 4;
				}
				break;
			default:
				buf_add(&b, s, 1);	/* \/ \" \\ ... */
				break;
			}
		}
		if (b.data != NULL)
			hit = extra_args_device(b.data, why);
		if (*s == '"')
			s++;
	}
	buf_free(&b);
	return (hit);
}

/*
 * A value as QEMU's option parser reads it: "a=b,c=d,,e" is a=b and
 * c=d,e. Every option value is checked, and the first item given to
 * first_item (the implied key: a chardev's backend).
 */
static int
extra_args_value(const char *value, char **first, char **why)
{
	struct buf	 item = { 0 };
	const char	*p = value, *v;
	int		 hit = 0, n = 0;

	if (first != NULL)
		*first = NULL;
	if (*value == '{')
		return (extra_args_json(value, why));
	while (!hit) {
		buf_consume(&item, item.len);
		buf_add(&item, "", 0);
		for (; *p != '\0'; p++) {
			if (*p == ',' && p[1] == ',')
				buf_add(&item, p++, 1);
			else if (*p == ',')
				break;
			else
				buf_add(&item, p, 1);
		}
		v = strchr(item.data, '=');
		v = v == NULL ? item.data : v + 1;
		if (first != NULL && n == 0 && strchr(item.data, '=') == NULL)
			*first = xstrdup(item.data);
		else if (first != NULL &&
		    strncmp(item.data, "backend=", 8) == 0) {
			free(*first);
			*first = xstrdup(v);
		}
		if (strncmp(v, "json:", 5) == 0)
			hit = extra_args_json(v + 5, why);
		else
			hit = extra_args_device(v, why);
		n++;
		if (*p == '\0')
			break;
		p++;
	}
	buf_free(&item);
	return (hit);
}

static const struct extra_args_rule *
extra_args_rule(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof extra_args_rules / sizeof extra_args_rules[0];
	    i++) {
		if (strcmp(extra_args_rules[i].name, name) == 0)
			return (&extra_args_rules[i]);
	}
	return (NULL);
}

/* The old character device syntax: only what stays inside QEMU. */
static int
extra_args_legacy_ok(const char *spec)
{
	static const char	*ok[] = { "none", "null", "vc", "msmouse",
	    "braille", NULL };

	return (extra_args_in(spec, ok) || strncmp(spec, "vc:", 3) == 0 ||
	    strncmp(spec, "chardev:", 8) == 0);
}

/*
 * Check argv[*i], a flag and (if the next element is not a flag) its
 * value; move *i past them. Returns 0 if allowed, -1 with *why (to free)
 * if refused.
 */
int
extra_args_next(char *const *argv, size_t n, size_t *i, char **why)
{
	const struct extra_args_rule	*r;
	const char			*arg = argv[*i], *value = NULL;
	char				*name, *eq, *backend = NULL;
	int				 rc = 0;

	*why = NULL;
	if (arg[0] != '-') {
		/* A bare value: QEMU takes it as a disk (-hda). */
		(*i)++;
		if (extra_args_value(arg, NULL, why))
			return (-1);
		return (0);
	}
	name = xstrdup(arg + (arg[1] == '-' ? 2 : 1));
	if ((eq = strchr(name, '=')) != NULL) {
		*eq = '\0';
		value = arg + (eq - name) + (arg[1] == '-' ? 3 : 2);
	}
	(*i)++;
	if (value == NULL && *i < n && argv[*i][0] != '-')
		value = argv[(*i)++];

	if ((r = extra_args_rule(name)) != NULL && r->kind == EA_REFUSE) {
		*why = xstrdup(r->why);
		rc = -1;
	} else if (value == NULL)
		rc = 0;
	else if (extra_args_value(value, &backend, why))
		rc = -1;
	else if (r != NULL && r->kind == EA_CHARDEV && (backend == NULL ||
	    !extra_args_in(backend, extra_args_chardev_ok))) {
		if (backend != NULL && strcmp(backend, "spawn") == 0)
			*why = xstrdup("its spawn backend runs a host command");
		else
			xasprintf(why, "its %s backend reaches the host (a "
			    "file, socket, pipe or device); only null, "
			    "ringbuf, memory and other in-QEMU backends are "
			    "allowed",
			    backend == NULL ? "unnamed" : backend);
		rc = -1;
	} else if (r != NULL && r->kind == EA_LEGACY_CHR &&
	    !extra_args_legacy_ok(value)) {
		xasprintf(why, "it connects a guest port to the host (%s); "
		    "only none, null, vc, msmouse, braille or chardev:ID are "
		    "allowed",
		    value);
		rc = -1;
	}
	free(backend);
	free(name);
	return (rc);
}
