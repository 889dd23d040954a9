/*
 * Fuzzing the profile loader, whose input is untrusted (a profile taken
 * from a pull request, a --set pasted from a chat).
 *
 * In the test suite: a deterministic driver. The seeds are the shipped
 * profiles and the test fixtures; a fixed-seed generator mutates them
 * (bytes, Lua tokens, numbers, splices) for a fixed number of rounds,
 * $QSUP_FUZZ_ROUNDS or FUZZ_ROUNDS, and stops early past FUZZ_SECONDS.
 * Every input is checked the same way: a load either fails with one or
 * more "FILE[:LINE]: message" lines and leaves nothing behind, or gives
 * settings within the schema's ranges that show and load back the same.
 *
 * tests/fuzz/profile_fuzz.c builds this file with -DQSUP_LIBFUZZER: the same
 * checks and the same mutator, as a fuzz target of tests/fuzz/ (run from
 * its corpus by ./build.sh test, and by ./build.sh fuzz profile).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef QSUP_LIBFUZZER
#include <criterion/criterion.h>
#define FUZZ_ASSERT(c, ...)	cr_assert((c), __VA_ARGS__)
#else
#define FUZZ_ASSERT(c, ...)	do {					\
	if (!(c)) {							\
		fprintf(stderr, __VA_ARGS__);				\
		fprintf(stderr, "\n");					\
		abort();						\
	}								\
} while (0)
#endif

#include "cmd.h"

#define FUZZ_ROUNDS	10000
#define FUZZ_SECONDS	20.0
#define FUZZ_MAX	(64 * 1024)

static char	*fuzz_dir;	/* profiles the inputs may include */
static char	*fuzz_name;	/* the input's name: fuzz_dir/fuzz.lua */

struct fuzz_stats {
	unsigned long	 rounds;
	unsigned long	 loaded;
	unsigned long	 failed;
	unsigned long	 slow;	/* hit the time limit */
};
static struct fuzz_stats fuzz_stats;

static void
fuzz_write(const char *name, const char *text)
{
	char	*path;
	FILE	*f;

	xasprintf(&path, "%s/%s", fuzz_dir, name);
	if ((f = fopen(path, "w")) == NULL || fputs(text, f) == EOF ||
	    fclose(f) == EOF)
		abort();
	free(path);
}

static void
fuzz_save(const char *data, size_t len)
{
	FILE	*f;

	/* A new file: rewriting one in place makes ext4 flush it. */
	unlink(fuzz_name);
	if ((f = fopen(fuzz_name, "w")) == NULL ||
	    fwrite(data, 1, len, f) != len || fclose(f) == EOF)
		abort();
}

/* A directory with a few profiles for include() to find. */
static void
fuzz_init(void)
{
	char	shm[] = "/dev/shm/profile_fuzz.XXXXXX", *sub;
	char	tmp[] = "/tmp/profile_fuzz.XXXXXX";

	/* Each input is written out: memory is faster than a disk. */
	if (mkdtemp(shm) != NULL)
		fuzz_dir = xstrdup(shm);
	else if (mkdtemp(tmp) != NULL)
		fuzz_dir = xstrdup(tmp);
	else
		abort();
	xasprintf(&fuzz_name, "%s/fuzz.lua", fuzz_dir);
	xasprintf(&sub, "%s/sub", fuzz_dir);
	mkdir(sub, 0755);
	free(sub);
	fuzz_write("base.lua", "return { memory = \"1G\", cpus = 2,\n"
	    "\tenv = { A = \"1\" }, network = \"none\" }\n");
	fuzz_write("sub/x.lua", "return extend(\"../base\", { cpus = 3 })\n");
	fuzz_write("cycle.lua", "return include(\"fuzz\")\n");
	fuzz_write("box.lua", "sandbox { cwd = \"/tmp\" }\n");
	unsetenv("QSUP_IMAGE");
	unsetenv("PYSANDBOXES_QEMU_IMAGE_URL");
}

/* Every line "FILE[:LINE]: message", FILE one of ours. */
static void
fuzz_check_cause(const char *cause, const char *data, size_t len)
{
	const char	*line, *end;
	size_t		 n;

	FUZZ_ASSERT(cause != NULL && *cause != '\0', "a failure says why");
	/* A NULL given to printf, unless the profile wrote it itself. */
	FUZZ_ASSERT(strstr(cause, "(null)") == NULL ||
	    memmem(data, len, "(null)", 6) != NULL, "(null) in: %s", cause);
	for (line = cause; *line != '\0'; line = end + (*end == '\n')) {
		end = line + strcspn(line, "\n");
		n = end - line;
		FUZZ_ASSERT(n > 0, "an empty line in: %s", cause);
		FUZZ_ASSERT(strncmp(line, fuzz_dir, strlen(fuzz_dir)) == 0 ||
		    strncmp(line, "--set ", 6) == 0 ||
		    strncmp(line, "builtin:", 8) == 0,
		    "a line that names no file: %.*s", (int)n, line);
		FUZZ_ASSERT(memchr(line, ':', n) != NULL &&
		    memmem(line, n, ": ", 2) != NULL,
		    "not FILE: message: %.*s", (int)n, line);
	}
}

/* Settings within the schema, and show's output loads back the same. */
static void
fuzz_check_profile(const struct profile *p)
{
	struct profile	 q;
	struct buf	 a = { 0 }, b = { 0 };
	char		*cause = NULL, *why;
	size_t		 i;

	FUZZ_ASSERT(p->path != NULL, "a profile has a path");
	FUZZ_ASSERT(p->memory_mib >= 16 && p->memory_mib <= 1024 * 1024,
	    "memory %llu", (unsigned long long)p->memory_mib);
	FUZZ_ASSERT(p->cpus >= 1 && p->cpus <= 64, "cpus %d", p->cpus);
	FUZZ_ASSERT(p->start_timeout >= 0 && p->start_timeout <= 3600,
	    "start_timeout");
	FUZZ_ASSERT(p->timeout >= 0 && p->timeout <= 7 * 86400, "timeout");
	FUZZ_ASSERT(p->cwd != NULL && p->cwd[0] == '/', "cwd");
	for (i = 0; i < p->nenv; i++)
		FUZZ_ASSERT(strchr(p->env[i], '=') != NULL, "env %s",
		    p->env[i]);
	for (i = 0; i < p->nshares; i++) {
		FUZZ_ASSERT(p->shares[i].host[0] == '/', "share host");
		FUZZ_ASSERT(p->shares[i].guest[0] == '/' &&
		    strcmp(p->shares[i].guest, "/") != 0, "share guest");
	}
	for (i = 0; i < p->nnetwork_allow; i++)
		FUZZ_ASSERT(p->network_allow[i].text != NULL, "rule text");
	FUZZ_ASSERT(p->network != NET_MODE_OPEN || p->network_open_ack,
	    "open without its acknowledgement");
	FUZZ_ASSERT(p->network != NET_MODE_ALLOWLIST ||
	    p->nnetwork_allow > 0, "an empty allowlist");
	for (i = 0; i < p->nports; i++) {
		FUZZ_ASSERT(p->ports[i].guest != 0 && p->ports[i].address !=
		    NULL, "port");
		FUZZ_ASSERT(p->ports[i].from_rule >= 0 &&
		    (size_t)p->ports[i].from_rule <= p->nnetwork_rules,
		    "a forward from no rule");
		FUZZ_ASSERT(p->network != NET_MODE_NONE, "a forward "
		    "without a network card");
	}
	for (i = 0; i < p->nnetwork_allow; i++) {
		FUZZ_ASSERT(p->network_allow[i].from_rule >= 0 &&
		    (size_t)p->network_allow[i].from_rule <=
		    p->nnetwork_rules, "a rule from no rule");
		FUZZ_ASSERT(!p->network_allow[i].deny ||
		    p->network_allow[i].from_rule != 0, "a deny rule not "
		    "from network_rules");
		FUZZ_ASSERT(p->network_allow[i].deny ||
		    p->network == NET_MODE_ALLOWLIST, "an allow rule "
		    "without the allowlist");
	}
	FUZZ_ASSERT(p->nnetwork_tcp <= 100, "too many TCP maps");
	for (i = 0; i < p->nnetwork_tcp; i++) {
		FUZZ_ASSERT(p->network_tcp[i].host != NULL &&
		    p->network_tcp[i].port != 0 &&
		    p->network_tcp[i].guest_port != 0, "TCP map");
		FUZZ_ASSERT(p->network == NET_MODE_RESTRICTED ||
		    p->network == NET_MODE_ALLOWLIST, "TCP maps in mode %d",
		    p->network);
	}
	for (i = 0; i < p->nextra_args; ) {
		FUZZ_ASSERT(extra_args_next(p->extra_args, p->nextra_args, &i,
		    &why) == 0, "a refused flag got through: %s", why);
	}

	profile_print(p, PROFILE_PRINT_BARE, &a);
	if (profile_load_buffer(&q, fuzz_name, a.data, a.len, NULL, 0,
	    &cause) == -1)
		FUZZ_ASSERT(0, "show's output does not load:\n%s\n%s", a.data,
		    cause);
	profile_print(&q, PROFILE_PRINT_BARE, &b);
	FUZZ_ASSERT(strcmp(a.data, b.data) == 0, "show's output loads back "
	    "different:\n%s\n%s", a.data, b.data);
	profile_free(&q);
	buf_free(&a);
	buf_free(&b);
}

/* One input; sets are --set arguments, or none. */
static void
fuzz_one(const char *data, size_t len, char *const *sets, size_t nsets)
{
	struct profile	 p;
	char		*cause = NULL;
	double		 t0 = util_now();

	fuzz_stats.rounds++;
	fuzz_save(data, len);	/* for include("fuzz") and its cycles */
	if (profile_load_buffer(&p, fuzz_name, data, len, sets, nsets,
	    &cause) == 0) {
		FUZZ_ASSERT(cause == NULL, "success with a cause: %s", cause);
		fuzz_check_profile(&p);
		profile_free(&p);
		fuzz_stats.loaded++;
	} else {
		FUZZ_ASSERT(p.path == NULL && p.env == NULL && p.shares == NULL,
		    "a failed load left settings behind");
		fuzz_check_cause(cause, data, len);
		free(cause);
		fuzz_stats.failed++;
	}
	if (util_now() - t0 > 0.9)
		fuzz_stats.slow++;
}


/* xorshift64*: the same inputs on every run. */
static uint64_t	fuzz_state = 0x9e3779b97f4a7c15ULL;

static uint64_t
fuzz_rand(void)
{
	fuzz_state ^= fuzz_state >> 12;
	fuzz_state ^= fuzz_state << 25;
	fuzz_state ^= fuzz_state >> 27;
	return (fuzz_state * 0x2545f4914f6cdd1dULL);
}

static size_t
fuzz_below(size_t n)
{
	return (n == 0 ? 0 : (size_t)(fuzz_rand() % n));
}

/* Pieces of profiles: names, values, syntax, functions, trouble. */
static const char *fuzz_tokens[] = {
	"memory", "cpus", "use_kvm", "start_timeout", "timeout", "shares",
	"network", "network_allow", "network_open_ack", "ports", "extra_args",
	"env", "cwd", "image", "images_dir", "image_base_url", "virtfs",
	"virtfs_security_model", "ld_closure_libs", "console_on_failure",
	"kernel", "initramfs", "warm_start", "show_boot_console", "host",
	"guest", "mode", "ignore", "address",
	" = ", ", ", "{", "}", "{ ", " }", "[", "]", "\"", "'", "[[", "]]",
	"(", ")", ".", "..", ":", ";", "=", "==", "~=", "#", "-", "--",
	"\n", "\t", " ", "\\", "\0", "\xff", "\xc3\xa9",
	"nil", "true", "false", "0", "1", "-1", "65535", "65536", "1e308",
	"0/0", "-0.0", "math.huge", "9223372036854775807", "0x10",
	"\"2G\"", "\"2GB\"", "\"512M\"", "\"1.5G\"", "\"auto\"", "\"rw\"",
	"\"ro\"", "\"open\"", "\"allowlist\"", "\"none\"", "\"/\"", "\"/proc\"",
	"\"/dev/sda\"", "\"-virtfs\"", "\"-drive\"", "\"file=/dev/sda\"",
	"\"*.example.org:443\"", "\"10.0.0.0/8\"", "\"[::1]:22\"",
	"\"deb.debian.org\"", "\".\"", "\"..\"", "\"base\"", "\"sub/x\"",
	"\"cycle\"", "\"builtin:ci\"", "\"builtin:default\"",
	"include(\"base\")", "extend(\"base\", {})", "include(\"cycle\")",
	"include(\"sub/x\")", "include(\"box\")", "sandbox{}", "sandbox",
	"qsup.cpus", "qsup.memory_mib", "qsup.arch", "qsup.env(\"HOME\")",
	"qsup.cwd", "qsup.triplet", "qsup.glibc", "qsup.in_container",
	"qsup.python", "qsup", "string.rep(\"x\", 100)", "tostring(",
	"pcall(", "error(", "error({})", "setmetatable({}, {})", "load(\"",
	"return ", "return {", "local p = ", "p.", "if true then ", " end",
	"for i = 1, 3 do ", "function f() return 1 end", "print(1)",
	"rawset(", "next(", "select('#', ", "utf8.char(255)", "coroutine",
	"network_tcp", "network_rules", "port", "guest_port", "name",
	"\"ALLOW|TCP|a.example|80,443|OUT\"", "\"DENY|TCP|*|*|OUT\"",
	"\"ALLOW|TCP|*|8000-8063|IN\"", "\"DENY|TCP|10.0.0.0/8|22|OUT\"",
	"\"|\"", "\"restricted\"", "\"127.0.0.1\"", "\"db\"", "5432",
};

static void
fuzz_insert(struct buf *b, size_t at, const void *p, size_t n)
{
	struct buf	t = { 0 };

	if (b->len + n > FUZZ_MAX)
		return;
	buf_add(&t, b->data, at);
	buf_add(&t, p, n);
	buf_add(&t, b->data + at, b->len - at);
	buf_free(b);
	*b = t;
}

static void
fuzz_delete(struct buf *b, size_t at, size_t n)
{
	if (at + n > b->len)
		n = b->len - at;
	memmove(b->data + at, b->data + at + n, b->len - at - n);
	b->len -= n;
	b->data[b->len] = '\0';
}

/* One to eight mutations of b; other is a second seed for splices. */
static void
fuzz_mutate(struct buf *b, const struct buf *other)
{
	const char	*tok;
	size_t		 n = 1 + fuzz_below(8), at, len, from;
	char		 c;

	while (n-- > 0) {
		if (b->len == 0) {
			buf_add(b, "return {}", 9);
			continue;
		}
		at = fuzz_below(b->len + 1);
		switch (fuzz_below(7)) {
		case 0:		/* flip a byte */
			if (at < b->len)
				b->data[at] ^= (char)(1 << fuzz_below(8));
			break;
		case 1:		/* a random byte */
			c = (char)fuzz_below(256);
			fuzz_insert(b, at, &c, 1);
			break;
		case 2:		/* drop a piece */
			fuzz_delete(b, at, 1 + fuzz_below(16));
			break;
		case 3:		/* repeat a piece */
			len = 1 + fuzz_below(32);
			if (at + len <= b->len)
				fuzz_insert(b, at, b->data + at, len);
			break;
		case 4:		/* a token */
		case 5:
			tok = fuzz_tokens[fuzz_below(sizeof fuzz_tokens /
			    sizeof fuzz_tokens[0])];
			fuzz_insert(b, at, tok, *tok == '\0' ? 1 : strlen(tok));
			break;
		case 6:		/* a piece of another seed */
			if (other->len == 0)
				break;
			from = fuzz_below(other->len);
			len = 1 + fuzz_below(64);
			if (from + len > other->len)
				len = other->len - from;
			fuzz_insert(b, at, other->data + from, len);
			break;
		}
	}
}

static void
fuzz_fini(void)
{
	util_rm_rf(fuzz_dir);
	free(fuzz_dir);
	free(fuzz_name);
}

#ifdef QSUP_LIBFUZZER
static char	*fuzz_sets[] = { "memory=1G", "env={A=\"b\"}" };

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_init();
	atexit(fuzz_fini);
	/* print() in a profile, not the sanitizers (they write to fd 2). */
	if ((stderr = fopen("/dev/null", "w")) == NULL)
		abort();
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The first byte picks whether --set values come along. */
	if (size > 0 && data[0] == '#')
		fuzz_one((const char *)data, size, fuzz_sets, 2);
	else
		fuzz_one((const char *)data, size, NULL, 0);
	return (0);
}

/* Profile-shaped mutations: Lua tokens, names of settings, splices. */
size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max,
    unsigned int seed)
{
	static const struct buf	 other = { "return { memory = \"2G\" }", 24,
	    25 };
	struct buf		 b = { 0 };

	fuzz_state = seed | 1;
	buf_add(&b, data, size);
	fuzz_mutate(&b, &other);
	if (b.len > max)
		b.len = max;
	memcpy(data, b.data, b.len);
	size = b.len;
	buf_free(&b);
	return (size);
}
#else

/* Profiles of the tree that do not spend their second on purpose. */
static size_t
fuzz_seeds(struct buf **seeds)
{
	static const char	*dirs[] = { "profiles", "tests/profiles",
	    "tests/profiles/include" };
	DIR			*d;
	struct dirent		*de;
	char			*path, *text;
	size_t			 n = 0, i, len;

	*seeds = NULL;
	for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		if ((d = opendir(dirs[i])) == NULL)
			continue;
		while ((de = readdir(d)) != NULL) {
			len = strlen(de->d_name);
			if (len < 5 ||
			    strcmp(de->d_name + len - 4, ".lua") != 0 ||
			    strstr(de->d_name, "loop") != NULL ||
			    strstr(de->d_name, "xpcall") != NULL ||
			    strstr(de->d_name, "memory") != NULL ||
			    strstr(de->d_name, "gc") != NULL ||
			    strstr(de->d_name, "pattern") != NULL)
				continue;
			xasprintf(&path, "%s/%s", dirs[i], de->d_name);
			if ((text = util_read_file(path, &len, FUZZ_MAX)) !=
			    NULL) {
				*seeds = xreallocarray(*seeds, n + 1,
				    sizeof **seeds);
				memset(&(*seeds)[n], 0, sizeof **seeds);
				buf_add(&(*seeds)[n++], text, len);
				free(text);
			}
			free(path);
		}
		closedir(d);
	}
	return (n);
}

TestSuite(profile_fuzz, .init = fuzz_init, .fini = fuzz_fini);

/* The seeds themselves, unchanged, then mutated. */
Test(profile_fuzz, mutated_profiles, .timeout = 120)
{
	static char	*sets[][2] = {
		{ "memory=1G", "env={A=\"b\"}" },
		{ "shares={{host=\"/tmp\"}}", "cpus=2" },
		{ "network=allowlist", "network_allow=*.example.org:443" },
		{ "extra_args={\"-device\",\"virtio-rng-device\"}",
		  "cwd=/srv" },
	};
	struct buf	*seeds, b = { 0 };
	const char	*env;
	unsigned long	 rounds = FUZZ_ROUNDS, r;
	size_t		 n, i, k;
	double		 t0 = util_now();

	if ((env = getenv("QSUP_FUZZ_ROUNDS")) != NULL && atol(env) > 0)
		rounds = (unsigned long)atol(env);
	n = fuzz_seeds(&seeds);
	cr_assert_geq(n, 20, "the seeds are the profiles of the tree");
	for (i = 0; i < n; i++)
		fuzz_one(seeds[i].data, seeds[i].len, NULL, 0);
	for (r = 0; r < rounds && util_now() - t0 < FUZZ_SECONDS; r++) {
		i = fuzz_below(n);
		buf_consume(&b, b.len);
		buf_add(&b, seeds[i].data, seeds[i].len);
		fuzz_mutate(&b, &seeds[fuzz_below(n)]);
		k = fuzz_below(8);
		if (k < 4)
			fuzz_one(b.data, b.len, sets[k], 2);
		else
			fuzz_one(b.data, b.len, NULL, 0);
	}
	printf("profile fuzz: %lu inputs, %lu loaded, %lu refused, %lu hit "
	    "the time limit, %.1f s\n", fuzz_stats.rounds, fuzz_stats.loaded,
	    fuzz_stats.failed, fuzz_stats.slow, util_now() - t0);
	cr_assert_gt(fuzz_stats.loaded, 0, "some mutants still load");
	cr_assert_gt(fuzz_stats.failed, 0, "most mutants are refused");
	for (i = 0; i < n; i++)
		buf_free(&seeds[i]);
	free(seeds);
	buf_free(&b);
}

/* --set values are fuzzed too: the same checks, whatever is typed. */
Test(profile_fuzz, mutated_sets, .timeout = 60)
{
	static const char	*seeds[] = {
		"memory=1G", "cpus=2", "env={A=\"b\", \"C=d\"}",
		"shares={{host=\"/tmp\", guest=\"/t\", mode=\"rw\"}}",
		"network_allow={\"a.org:1-2\"}", "ports={8080}",
		"extra_args={\"-device\", \"x\"}", "use_kvm=auto",
		"image=https://example.org/x.img", "cwd=/x",
	};
	struct buf	 b = { 0 }, other = { 0 };
	char		*set[1];
	size_t		 r;

	buf_add(&other, "[[{=,}]]\"'", 10);
	for (r = 0; r < 1000; r++) {
		buf_consume(&b, b.len);
		buf_printf(&b, "%s",
		    seeds[fuzz_below(sizeof seeds / sizeof seeds[0])]);
		fuzz_mutate(&b, &other);
		set[0] = b.data;
		fuzz_one("return {}", 9, set, strlen(b.data) == b.len ? 1 : 0);
	}
	buf_free(&b);
	buf_free(&other);
}
#endif
