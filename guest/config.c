/*
 * The seed's qsup-config: "key value" lines, values percent-encoded
 * (wire.h). Unknown keys are ignored so older agents accept newer
 * seeds; a malformed line of a known key is an error, because a seed that
 * half applies (a share silently missing) is worse than one that fails.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "agent.h"

static int
config_hex(int c)
{
	if (c >= '0' && c <= '9')
		return (c - '0');
	if (c >= 'a' && c <= 'f')
		return (c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (c - 'A' + 10);
	return (-1);
}

/* Decode one percent-encoded field; NUL bytes are refused. */
static int
config_decode(const char *p, size_t len, char **out, const char **cause)
{
	char	*s;
	size_t	 i, n = 0;
	int	 hi, lo;

	s = xmalloc(len + 1);
	for (i = 0; i < len; i++) {
		if (p[i] != '%') {
			s[n++] = p[i];
			continue;
		}
		if (len - i < 3) {
			*cause = "truncated %XX escape";
			goto fail;
		}
		hi = config_hex((unsigned char)p[i + 1]);
		lo = config_hex((unsigned char)p[i + 2]);
		if (hi == -1 || lo == -1) {
			*cause = "bad %XX escape";
			goto fail;
		}
		if (hi == 0 && lo == 0) {
			*cause = "NUL byte in value";
			goto fail;
		}
		s[n++] = (char)(hi << 4 | lo);
		i += 2;
	}
	s[n] = '\0';
	*out = s;
	return (0);
fail:
	free(s);
	return (-1);
}

/* Split value into min to max whitespace-separated decoded fields. */
static int
config_fields_range(const char *p, size_t len, char **fields, int min,
    int want, int *got, const char **cause)
{
	const char	*end = p + len, *start;
	int		 n = 0, i;

	for (;;) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end)
			break;
		start = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		if (n == want) {
			*cause = "too many fields";
			goto fail;
		}
		if (config_decode(start, p - start, &fields[n], cause) == -1)
			goto fail;
		n++;
	}
	if (n < min) {
		*cause = "missing value";
		goto fail;
	}
	*got = n;
	return (0);
fail:
	for (i = 0; i < n; i++) {
		free(fields[i]);
		fields[i] = NULL;
	}
	return (-1);
}

/* Split value into exactly want whitespace-separated decoded fields. */
static int
config_fields(const char *p, size_t len, char **fields, int want,
    const char **cause)
{
	int	got;

	return (config_fields_range(p, len, fields, want, want, &got, cause));
}

/* "root SERIAL grow|keep [BYTES]": the disk to make the root. */
static int
config_root(struct agent_config *cfg, char **f, int n, const char **cause)
{
	unsigned long long	 v = 0;
	const char		*s;

	if (*f[0] == '\0' || (strcmp(f[1], "grow") != 0 &&
	    strcmp(f[1], "keep") != 0)) {
		*cause = "want: root SERIAL grow|keep [BYTES]";
		return (-1);
	}
	if (n == 3) {
		for (s = f[2]; *s >= '0' && *s <= '9'; s++) {
			if (v > (ULLONG_MAX - 9) / 10)
				break;
			v = v * 10 + (unsigned long long)(*s - '0');
		}
		if (s == f[2] || *s != '\0' || v == 0) {
			*cause = "bad disk size (want BYTES)";
			return (-1);
		}
	}
	free(cfg->root);
	cfg->root = f[0];
	cfg->root_grow = strcmp(f[1], "grow") == 0;
	cfg->root_size = v;
	free(f[1]);
	free(f[2]);
	return (0);
}

static int
config_time(const char *s, struct timespec *ts)
{
	long long	sec = 0;
	long		nsec = 0;
	int		digits = 0;

	if (*s < '0' || *s > '9')
		return (-1);
	for (; *s >= '0' && *s <= '9'; s++) {
		if (sec > (LLONG_MAX - 9) / 10)
			return (-1);
		sec = sec * 10 + (*s - '0');
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++) {
			if (digits++ < 9)
				nsec = nsec * 10 + (*s - '0');
		}
		if (digits == 0)
			return (-1);
	}
	if (*s != '\0')
		return (-1);
	for (; digits < 9; digits++)
		nsec *= 10;
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = nsec;
	return (0);
}

/* "entropy HEX": the bytes for the guest's pool. */
static int
config_entropy(struct agent_config *cfg, const char *hex, const char **cause)
{
	size_t	i, n = strlen(hex);
	int	hi, lo;

	if (n % 2 != 0 || n == 0) {
		*cause = "bad entropy (want hex bytes)";
		return (-1);
	}
	free(cfg->entropy);
	cfg->entropy = xmalloc(n / 2);
	cfg->entropy_len = n / 2;
	for (i = 0; i < n / 2; i++) {
		hi = config_hex((unsigned char)hex[2 * i]);
		lo = config_hex((unsigned char)hex[2 * i + 1]);
		if (hi == -1 || lo == -1) {
			*cause = "bad entropy (want hex bytes)";
			return (-1);
		}
		cfg->entropy[i] = (unsigned char)(hi << 4 | lo);
	}
	return (0);
}

static void
config_push(char ***v, size_t *n, char *s)
{
	*v = xreallocarray(*v, *n + 1, sizeof **v);
	(*v)[(*n)++] = s;
}

/* "mount TAG PATH ro|rw|cow": takes f[0] and f[1], frees f[2]. */
static int
config_mount(struct agent_config *cfg, char **f, const char **cause)
{
	if (f[1][0] != '/') {
		*cause = "mount path must be absolute";
		return (-1);
	}
	if (strcmp(f[2], "ro") != 0 && strcmp(f[2], "rw") != 0 &&
	    strcmp(f[2], "cow") != 0) {
		*cause = "mount mode must be ro, rw or cow";
		return (-1);
	}
	cfg->mounts = xreallocarray(cfg->mounts, cfg->nmounts + 1,
	    sizeof *cfg->mounts);
	cfg->mounts[cfg->nmounts].tag = f[0];
	cfg->mounts[cfg->nmounts].path = f[1];
	cfg->mounts[cfg->nmounts].ro = strcmp(f[2], "ro") == 0;
	cfg->mounts[cfg->nmounts].cow = strcmp(f[2], "cow") == 0;
	cfg->nmounts++;
	free(f[2]);
	f[2] = NULL;
	return (0);
}

/* "mac XX:XX:XX:XX:XX:XX": a unicast address for the guest's card. */
static int
config_mac(const char *s, unsigned char mac[6])
{
	int	i, hi, lo;

	if (strlen(s) != 17)
		return (-1);
	for (i = 0; i < 6; i++) {
		if ((hi = config_hex((unsigned char)s[i * 3])) == -1 ||
		    (lo = config_hex((unsigned char)s[i * 3 + 1])) == -1 ||
		    (i < 5 && s[i * 3 + 2] != ':'))
			return (-1);
		mac[i] = (unsigned char)(hi << 4 | lo);
	}
	return ((mac[0] & 1) ? -1 : 0);	/* not a group address */
}

static int
config_line(struct agent_config *cfg, const char *key, size_t klen,
    const char *val, size_t vlen, const char **cause)
{
	char	*f[3] = { NULL, NULL, NULL };
	size_t	 i;
	int	 got = 0;

#define KEY(s) (klen == sizeof(s) - 1 && memcmp(key, s, klen) == 0)
	if (KEY("token") || KEY("hostname") || KEY("cwd") || KEY("time") ||
	    KEY("entropy") || KEY("env") || KEY("firewall") ||
	    KEY("root_glibc") || KEY("entrypoint") || KEY("cmd") ||
	    KEY("template") || KEY("cow") || KEY("mac")) {
		if (config_fields(val, vlen, f, 1, cause) == -1)
			return (-1);
	} else if (KEY("root")) {
		if (config_fields_range(val, vlen, f, 2, 3, &got, cause) == -1)
			return (-1);
	} else if (KEY("mount") || KEY("bind")) {
		if (config_fields(val, vlen, f, 3, cause) == -1)
			return (-1);
	} else
		return (0);

	if (KEY("token")) {
		if (*f[0] == '\0') {
			*cause = "empty token";
			goto fail;
		}
		free(cfg->token);
		cfg->token = f[0];
	} else if (KEY("hostname")) {
		free(cfg->hostname);
		cfg->hostname = f[0];
	} else if (KEY("firewall")) {
		free(cfg->firewall);
		cfg->firewall = f[0];
	} else if (KEY("cow")) {
		if (*f[0] == '\0') {
			*cause = "empty cow disk serial";
			goto fail;
		}
		free(cfg->cow);
		cfg->cow = f[0];
	} else if (KEY("root")) {
		if (config_root(cfg, f, got, cause) == -1)
			goto fail;
	} else if (KEY("root_glibc")) {
		if (strcmp(f[0], "1") != 0) {
			*cause = "bad root_glibc (want 1)";
			goto fail;
		}
		cfg->root_glibc = 1;
		free(f[0]);
	} else if (KEY("template")) {
		if (strcmp(f[0], "1") != 0) {
			*cause = "bad template (want 1)";
			goto fail;
		}
		cfg->template = 1;
		free(f[0]);
	} else if (KEY("cwd")) {
		free(cfg->cwd);
		cfg->cwd = f[0];
	} else if (KEY("time")) {
		if (config_time(f[0], &cfg->time) == -1) {
			*cause = "bad time (want SECONDS.NANOSECONDS)";
			goto fail;
		}
		cfg->has_time = 1;
		free(f[0]);
	} else if (KEY("entropy")) {
		if (config_entropy(cfg, f[0], cause) == -1)
			goto fail;
		free(f[0]);
	} else if (KEY("mac")) {
		if (config_mac(f[0], cfg->mac) == -1) {
			*cause = "bad mac (want six hex bytes, a colon between)";
			goto fail;
		}
		cfg->has_mac = 1;
		free(f[0]);
	} else if (KEY("env")) {
		if (f[0][0] == '=' || strchr(f[0], '=') == NULL) {
			*cause = "bad env (want NAME=VALUE)";
			goto fail;
		}
		config_push(&cfg->env, &cfg->nenv, f[0]);
	} else if (KEY("entrypoint")) {
		/* An image's (imageconf.c): one argument a line, in order. */
		config_push(&cfg->entrypoint, &cfg->nentrypoint, f[0]);
	} else if (KEY("cmd")) {
		config_push(&cfg->cmd, &cfg->ncmd, f[0]);
	} else if (KEY("bind")) {
		if (f[0][0] != '/' || f[1][0] != '/') {
			*cause = "bind paths must be absolute";
			goto fail;
		}
		if (strcmp(f[2], "ro") != 0 && strcmp(f[2], "rw") != 0) {
			*cause = "bind mode must be ro or rw";
			goto fail;
		}
		cfg->binds = xreallocarray(cfg->binds, cfg->nbinds + 1,
		    sizeof *cfg->binds);
		cfg->binds[cfg->nbinds].src = f[0];
		cfg->binds[cfg->nbinds].dst = f[1];
		cfg->binds[cfg->nbinds].ro = strcmp(f[2], "ro") == 0;
		cfg->nbinds++;
		free(f[2]);
	} else if (config_mount(cfg, f, cause) == -1)
		goto fail;
#undef KEY
	return (0);
fail:
	for (i = 0; i < 3; i++)
		free(f[i]);
	return (-1);
}

/* Parse config text into cfg; on error *cause names the line. */
int
config_parse(struct agent_config *cfg, const char *text, size_t len,
    char **cause)
{
	const char	*p = text, *end = text + len, *nl, *key, *val;
	const char	*why;
	size_t		 llen, klen;
	int		 lineno = 0;

	while (p < end) {
		lineno++;
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		llen = nl - p;
		if (llen > 0 && p[llen - 1] == '\r')
			llen--;
		key = p;
		p = nl < end ? nl + 1 : end;
		while (llen > 0 && (*key == ' ' || *key == '\t')) {
			key++;
			llen--;
		}
		if (llen == 0 || *key == '#')
			continue;
		for (klen = 0; klen < llen && key[klen] != ' ' &&
		    key[klen] != '\t'; klen++)
			;
		val = key + klen;
		if (memchr(key, '\0', llen) != NULL) {
			xasprintf(cause, "%s line %d: NUL byte",
			    QSUP_SEED_CONFIG, lineno);
			return (-1);
		}
		if (config_line(cfg, key, klen, val, llen - klen, &why) == -1) {
			xasprintf(cause, "%s line %d: %.*s: %s",
			    QSUP_SEED_CONFIG, lineno, (int)klen, key, why);
			return (-1);
		}
	}
	return (0);
}

void
config_free(struct agent_config *cfg)
{
	size_t	i;

	if (cfg->token != NULL)
		explicit_bzero(cfg->token, strlen(cfg->token));
	free(cfg->token);
	free(cfg->hostname);
	free(cfg->cwd);
	free(cfg->entropy);
	for (i = 0; i < cfg->nenv; i++)
		free(cfg->env[i]);
	free(cfg->env);
	for (i = 0; i < cfg->nmounts; i++) {
		free(cfg->mounts[i].tag);
		free(cfg->mounts[i].path);
	}
	free(cfg->mounts);
	for (i = 0; i < cfg->nbinds; i++) {
		free(cfg->binds[i].src);
		free(cfg->binds[i].dst);
	}
	free(cfg->binds);
	free(cfg->firewall);
	free(cfg->cow);
	free(cfg->root);
	for (i = 0; i < cfg->nentrypoint; i++)
		free(cfg->entrypoint[i]);
	free(cfg->entrypoint);
	for (i = 0; i < cfg->ncmd; i++)
		free(cfg->cmd[i]);
	free(cfg->cmd);
	memset(cfg, 0, sizeof *cfg);
}
