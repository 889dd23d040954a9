/*
 * A strict JSON parser for exactly what POST /exec needs: an object with
 * "argv" (array of strings, non-empty), "env" (array of "K=V" strings),
 * "cwd" (string), "tty" (boolean), "rows" and "cols" (integers); or, in
 * place of argv, a file job: "read" (a path), or "write" (a path) with
 * "mode" (an integer). Other keys are skipped whatever their value.
 * The input comes from the host and is not trusted to be well formed:
 * everything is bounds-checked and nesting is limited.
 */
#include <stdlib.h>
#include <string.h>

#include "agent.h"

#define JSON_DEPTH	32
#define JSON_TTY_MAX	10000	/* rows, cols: as POST /exec/<id>/resize */

struct json {
	const char	*start;
	const char	*p;
	const char	*end;
	const char	*err;
};

static void
json_ws(struct json *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
	    *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int
json_fail(struct json *j, const char *why)
{
	if (j->err == NULL)
		j->err = why;
	return (-1);
}

static int
json_hex4(struct json *j, unsigned *out)
{
	unsigned	v = 0;
	int		i, c;

	if (j->end - j->p < 4)
		return (json_fail(j, "truncated \\u escape"));
	for (i = 0; i < 4; i++) {
		c = (unsigned char)*j->p++;
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return (json_fail(j, "bad \\u escape"));
	}
	*out = v;
	return (0);
}

static void
json_utf8(struct abuf *b, unsigned cp)
{
	unsigned char	u[4];
	size_t		n;

	if (cp < 0x80) {
		u[0] = cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = 0xc0 | cp >> 6;
		u[1] = 0x80 | (cp & 0x3f);
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = 0xe0 | cp >> 12;
		u[1] = 0x80 | ((cp >> 6) & 0x3f);
		u[2] = 0x80 | (cp & 0x3f);
		n = 3;
	} else {
		u[0] = 0xf0 | cp >> 18;
		u[1] = 0x80 | ((cp >> 12) & 0x3f);
		u[2] = 0x80 | ((cp >> 6) & 0x3f);
		u[3] = 0x80 | (cp & 0x3f);
		n = 4;
	}
	abuf_add(b, u, n);
}

/*
 * A string, unescaped into *out (NULL to skip it). C strings cannot hold
 * NUL, so \u0000 is refused rather than silently truncating an argument.
 */
static int
json_string(struct json *j, char **out)
{
	struct abuf	 b = { 0 };
	const char	*run;
	unsigned	 cp, lo;
	int		 c;

	if (j->p >= j->end || *j->p != '"')
		return (json_fail(j, "expected a string"));
	j->p++;
	for (;;) {
		run = j->p;
		while (j->p < j->end && *j->p != '"' && *j->p != '\\' &&
		    (unsigned char)*j->p >= 0x20)
			j->p++;
		abuf_add(&b, run, j->p - run);
		if (j->p >= j->end) {
			json_fail(j, "unterminated string");
			goto fail;
		}
		c = (unsigned char)*j->p++;
		if (c == '"')
			break;
		if (c != '\\') {
			json_fail(j, "control character in string");
			goto fail;
		}
		if (j->p >= j->end) {
			json_fail(j, "unterminated string");
			goto fail;
		}
		switch (*j->p++) {
		case '"':
			abuf_add(&b, "\"", 1);
			break;
		case '\\':
			abuf_add(&b, "\\", 1);
			break;
		case '/':
			abuf_add(&b, "/", 1);
			break;
		case 'b':
			abuf_add(&b, "\b", 1);
			break;
		case 'f':
			abuf_add(&b, "\f", 1);
			break;
		case 'n':
			abuf_add(&b, "\n", 1);
			break;
		case 'r':
			abuf_add(&b, "\r", 1);
			break;
		case 't':
			abuf_add(&b, "\t", 1);
			break;
		case 'u':
			if (json_hex4(j, &cp) == -1)
				goto fail;
			if (cp >= 0xdc00 && cp <= 0xdfff) {
				json_fail(j, "lone low surrogate");
				goto fail;
			}
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (j->end - j->p < 2 || j->p[0] != '\\' ||
				    j->p[1] != 'u') {
					json_fail(j, "lone high surrogate");
					goto fail;
				}
				j->p += 2;
				if (json_hex4(j, &lo) == -1)
					goto fail;
				if (lo < 0xdc00 || lo > 0xdfff) {
					json_fail(j, "bad surrogate pair");
					goto fail;
				}
				cp = 0x10000 + ((cp - 0xd800) << 10) +
				    (lo - 0xdc00);
			}
			if (cp == 0) {
				json_fail(j, "NUL in string");
				goto fail;
			}
			json_utf8(&b, cp);
			break;
		default:
			json_fail(j, "bad escape");
			goto fail;
		}
	}
	if (out != NULL) {
		abuf_add(&b, "", 0);
		*out = b.data;
		b.data = NULL;
	}
	abuf_free(&b);
	return (0);
fail:
	abuf_free(&b);
	return (-1);
}

static int
json_digits(struct json *j)
{
	const char	*start = j->p;

	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return (j->p > start ? 0 : json_fail(j, "bad number"));
}

static int
json_number(struct json *j)
{
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p < j->end && *j->p == '0')
		j->p++;
	else if (json_digits(j) == -1)
		return (-1);
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (json_digits(j) == -1)
			return (-1);
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (json_digits(j) == -1)
			return (-1);
	}
	return (0);
}

static int
json_literal(struct json *j, const char *word)
{
	size_t	n = strlen(word);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return (json_fail(j, "unexpected character"));
	j->p += n;
	return (0);
}

/*
 * A whole number from min to max, written plainly: no sign, fraction or
 * exponent, since a size or a mode of "1e3" or "0.5" is the host's mistake.
 */
static int
json_uint(struct json *j, long min, long max, long *out)
{
	const char	*start = j->p;
	long		 v = 0;

	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return (json_fail(j, "expected a whole number"));
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
		v = v * 10 + (*j->p++ - '0');
		if (v > max) {
			j->p = start;
			return (json_fail(j, "number out of range"));
		}
	}
	if (j->p < j->end && (*j->p == '.' || *j->p == 'e' || *j->p == 'E')) {
		j->p = start;
		return (json_fail(j, "expected a whole number"));
	}
	if (v < min) {
		j->p = start;
		return (json_fail(j, "number out of range"));
	}
	*out = v;
	return (0);
}

/* true, false or null (false). */
static int
json_bool(struct json *j, int *out)
{
	if (j->p < j->end && *j->p == 't') {
		*out = 1;
		return (json_literal(j, "true"));
	}
	if (j->p < j->end && *j->p == 'f') {
		*out = 0;
		return (json_literal(j, "false"));
	}
	if (j->p < j->end && *j->p == 'n') {
		*out = 0;
		return (json_literal(j, "null"));
	}
	return (json_fail(j, "expected true or false"));
}

/* A string or null, replacing *out. */
static int
json_string_or_null(struct json *j, char **out)
{
	free(*out);
	*out = NULL;
	if (j->p < j->end && *j->p == 'n')
		return (json_literal(j, "null"));
	return (json_string(j, out));
}

/* Any value, parsed for validity and thrown away. */
static int
json_skip(struct json *j, int depth)
{
	int	first;

	if (depth > JSON_DEPTH)
		return (json_fail(j, "nested too deeply"));
	json_ws(j);
	if (j->p >= j->end)
		return (json_fail(j, "unexpected end"));
	switch (*j->p) {
	case '"':
		return (json_string(j, NULL));
	case 't':
		return (json_literal(j, "true"));
	case 'f':
		return (json_literal(j, "false"));
	case 'n':
		return (json_literal(j, "null"));
	case '[':
	case '{':
		break;
	default:
		if (*j->p == '-' || (*j->p >= '0' && *j->p <= '9'))
			return (json_number(j));
		return (json_fail(j, "unexpected character"));
	}
	if (*j->p++ == '[') {
		for (first = 1;; first = 0) {
			json_ws(j);
			if (first && j->p < j->end && *j->p == ']') {
				j->p++;
				return (0);
			}
			if (json_skip(j, depth + 1) == -1)
				return (-1);
			json_ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == ']') {
				j->p++;
				return (0);
			}
			return (json_fail(j, "expected ',' or ']'"));
		}
	}
	for (first = 1;; first = 0) {
		json_ws(j);
		if (first && j->p < j->end && *j->p == '}') {
			j->p++;
			return (0);
		}
		if (json_string(j, NULL) == -1)
			return (-1);
		json_ws(j);
		if (j->p >= j->end || *j->p != ':')
			return (json_fail(j, "expected ':'"));
		j->p++;
		if (json_skip(j, depth + 1) == -1)
			return (-1);
		json_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			return (0);
		}
		return (json_fail(j, "expected ',' or '}'"));
	}
}

static void
json_strings_free(char **v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* An array of strings, or null (the key's default). */
static int
json_strings(struct json *j, char ***out, size_t *outn)
{
	char	**v = NULL, *s;
	size_t	  n = 0;

	json_ws(j);
	if (j->p < j->end && *j->p == 'n') {
		if (json_literal(j, "null") == -1)
			return (-1);
		json_strings_free(*out, *outn);
		*out = NULL;
		*outn = 0;
		return (0);
	}
	if (j->p >= j->end || *j->p != '[')
		return (json_fail(j, "expected an array of strings"));
	j->p++;
	json_ws(j);
	if (j->p < j->end && *j->p == ']')
		j->p++;
	else {
		for (;;) {
			json_ws(j);
			if (json_string(j, &s) == -1)
				goto fail;
			v = xreallocarray(v, n + 2, sizeof *v);
			v[n++] = s;
			v[n] = NULL;
			json_ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == ']') {
				j->p++;
				break;
			}
			json_fail(j, "expected ',' or ']'");
			goto fail;
		}
	}
	json_strings_free(*out, *outn);
	*out = v;
	*outn = n;
	return (0);
fail:
	json_strings_free(v, n);
	return (-1);
}

/* Parse an exec request body; *cause says what and where on error. */
/* What a parsed exec asks must make sense: -1 with *cause if not. */
static int
json_exec_check(struct json_exec *x, char **cause)
{
	size_t	i;
	int	kinds;

	/* One thing to do: a command, a file to read, or one to write. */
	kinds = (x->argv != NULL) + (x->read != NULL) + (x->write != NULL);
	if (kinds > 1) {
		xasprintf(cause, "argv, read and write: only one of them");
		return (-1);
	}
	if (kinds == 0 || (x->argv != NULL && x->argc == 0)) {
		xasprintf(cause, "argv: required (a non-empty array of "
		    "strings), unless read or write is given");
		return (-1);
	}
	if (x->has_mode && x->write == NULL) {
		xasprintf(cause, "mode: only with write");
		return (-1);
	}
	if (x->tty && x->argv == NULL) {
		xasprintf(cause, "tty: only with argv");
		return (-1);
	}
	if (!x->has_mode)
		x->mode = 0644;
	for (i = 0; i < x->nenv; i++) {
		if (x->env[i][0] == '=' || strchr(x->env[i], '=') == NULL) {
			xasprintf(cause, "env: not NAME=VALUE: %s", x->env[i]);
			return (-1);
		}
	}
	if (x->cwd != NULL && x->cwd[0] == '\0') {
		xasprintf(cause, "cwd: empty");
		return (-1);
	}
	return (0);
}

int
json_parse_exec(const char *buf, size_t len, struct json_exec *x,
    char **cause)
{
	struct json	 j = { buf, buf, buf + len, NULL };
	char		*key = NULL;
	long		 v;
	int		 first;

	memset(x, 0, sizeof *x);
	*cause = NULL;
	json_ws(&j);
	if (j.p >= j.end || *j.p != '{') {
		json_fail(&j, "expected an object");
		goto fail;
	}
	j.p++;
	for (first = 1;; first = 0) {
		json_ws(&j);
		if (first && j.p < j.end && *j.p == '}') {
			j.p++;
			break;
		}
		if (json_string(&j, &key) == -1)
			goto fail;
		json_ws(&j);
		if (j.p >= j.end || *j.p != ':') {
			json_fail(&j, "expected ':'");
			goto fail;
		}
		j.p++;
		json_ws(&j);
		if (strcmp(key, "argv") == 0) {
			if (json_strings(&j, &x->argv, &x->argc) == -1)
				goto fail;
		} else if (strcmp(key, "env") == 0) {
			if (json_strings(&j, &x->env, &x->nenv) == -1)
				goto fail;
		} else if (strcmp(key, "cwd") == 0) {
			if (json_string_or_null(&j, &x->cwd) == -1)
				goto fail;
		} else if (strcmp(key, "tty") == 0) {
			if (json_bool(&j, &x->tty) == -1)
				goto fail;
		} else if (strcmp(key, "entrypoint") == 0) {
			if (json_bool(&j, &x->entrypoint) == -1)
				goto fail;
		} else if (strcmp(key, "rows") == 0) {
			if (json_uint(&j, 1, JSON_TTY_MAX, &v) == -1)
				goto fail;
			x->rows = v;
		} else if (strcmp(key, "cols") == 0) {
			if (json_uint(&j, 1, JSON_TTY_MAX, &v) == -1)
				goto fail;
			x->cols = v;
		} else if (strcmp(key, "read") == 0) {
			if (json_string_or_null(&j, &x->read) == -1)
				goto fail;
		} else if (strcmp(key, "write") == 0) {
			if (json_string_or_null(&j, &x->write) == -1)
				goto fail;
		} else if (strcmp(key, "mode") == 0) {
			if (json_uint(&j, 0, 07777, &v) == -1)
				goto fail;
			x->mode = v;
			x->has_mode = 1;
		} else if (json_skip(&j, 1) == -1)
			goto fail;
		free(key);
		key = NULL;
		json_ws(&j);
		if (j.p < j.end && *j.p == ',') {
			j.p++;
			continue;
		}
		if (j.p < j.end && *j.p == '}') {
			j.p++;
			break;
		}
		json_fail(&j, "expected ',' or '}'");
		goto fail;
	}
	json_ws(&j);
	if (j.p != j.end) {
		json_fail(&j, "trailing bytes after the object");
		goto fail;
	}

	if (json_exec_check(x, cause) == -1)
		goto fail_late;
	return (0);
fail:
	xasprintf(cause, "bad JSON at byte %zu: %s", (size_t)(j.p - j.start),
	    j.err != NULL ? j.err : "syntax error");
fail_late:
	free(key);
	json_exec_free(x);
	return (-1);
}

void
json_exec_free(struct json_exec *x)
{
	json_strings_free(x->argv, x->argc);
	json_strings_free(x->env, x->nenv);
	free(x->cwd);
	free(x->read);
	free(x->write);
	memset(x, 0, sizeof *x);
}
