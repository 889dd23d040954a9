/*
 * The fuzz targets' driver in the test suite, in place of libFuzzer:
 * every file of the target's corpus, then mutations of them from a fixed
 * seed, until ROUNDS mutations or SECONDS have passed, whichever first.
 * The same inputs on every run, so a failure repeats; the input that
 * failed is saved next to the binary.
 *
 *	build/fuzz/NAME_fuzz [-n ROUNDS] [-t SECONDS] [-s SEED] FILE|DIR...
 *
 * $QSUP_FUZZ_ROUNDS and $QSUP_FUZZ_SECONDS give the defaults of -n and
 * -t. `-n 0 FILE` runs one saved input again.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sanitizer/common_interface_defs.h>

#include "fuzz.h"

#define DRIVER_ROUNDS	50000
#define DRIVER_SECONDS	20.0
#define DRIVER_MAX	(256 * 1024)	/* the largest input mutated */
#define DRIVER_HANG	10		/* seconds one input may take */

const char	*__ubsan_default_options(void);

/* UBSan's findings abort(), so driver_signal_cb() saves the input. */
const char *
__ubsan_default_options(void)
{
	return ("print_stacktrace=1:halt_on_error=1:abort_on_error=1");
}

#pragma weak LLVMFuzzerInitialize
#pragma weak LLVMFuzzerCustomMutator

struct driver_input {
	char		*name;
	uint8_t		*data;
	size_t		 len;
};

static struct driver_input	*driver_corpus;
static size_t			 driver_ncorpus;
static uint64_t			 driver_state;

/* The input being run, for driver_save() when it kills the process. */
static const uint8_t	*driver_cur;
static size_t		 driver_cur_len;
static const char	*driver_cur_from;
static unsigned long	 driver_cur_round;
static char		 driver_crash[4096];

/* xorshift64*: the same sequence from the same seed. */
static uint64_t
driver_rand(void)
{
	driver_state ^= driver_state >> 12;
	driver_state ^= driver_state << 25;
	driver_state ^= driver_state >> 27;
	return (driver_state * 0x2545f4914f6cdd1dULL);
}

static size_t
driver_below(size_t n)
{
	return (n == 0 ? 0 : (size_t)(driver_rand() % n));
}

static double
driver_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

static void
driver_say(const char *s)
{
	ssize_t	n = write(2, s, strlen(s));

	(void)n;
}

/* Async-signal-safe: the sanitizers' death callback and signals call it. */
static void
driver_save(void)
{
	size_t	off;
	ssize_t	n;
	int	fd;

	if (driver_cur == NULL)
		return;
	driver_say("fuzz: the input that failed came from ");
	driver_say(driver_cur_from);
	driver_say(driver_cur_round > 0 ? " (mutated)" : "");
	if ((fd = open(driver_crash, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1) {
		driver_say("; cannot save it\n");
		return;
	}
	for (off = 0; off < driver_cur_len; off += n) {
		if ((n = write(fd, driver_cur + off, driver_cur_len - off)) <= 0)
			break;
	}
	close(fd);
	driver_say("; saved as ");
	driver_say(driver_crash);
	driver_say(", run it again with -n 0 ");
	driver_say(driver_crash);
	driver_say("\n");
	driver_cur = NULL;
}

static void
driver_signal_cb(int sig)
{
	if (sig == SIGALRM)
		driver_say("fuzz: one input ran longer than its limit\n");
	driver_save();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void
driver_add(const char *name, uint8_t *data, size_t len)
{
	driver_corpus = realloc(driver_corpus, (driver_ncorpus + 1) *
	    sizeof *driver_corpus);
	if (driver_corpus == NULL || (driver_corpus[driver_ncorpus].name =
	    strdup(name)) == NULL)
		abort();
	driver_corpus[driver_ncorpus].data = data;
	driver_corpus[driver_ncorpus].len = len;
	driver_ncorpus++;
}

static int
driver_read(const char *path)
{
	struct stat	 st;
	uint8_t		*data;
	size_t		 off;
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
		if (fd != -1)
			close(fd);
		return (-1);
	}
	if ((data = malloc(st.st_size + 1)) == NULL)
		abort();
	for (off = 0; off < (size_t)st.st_size; off += n) {
		if ((n = read(fd, data + off, st.st_size - off)) <= 0)
			break;
	}
	close(fd);
	driver_add(path, data, off);
	return (0);
}

static int
driver_name_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* A file, or every regular file of a directory, in name order. */
static int
driver_load(const char *path)
{
	struct stat	  st;
	struct dirent	 *de;
	DIR		 *d;
	char		**names = NULL, *p;
	size_t		  n = 0, i;
	int		  rc = 0;

	if (stat(path, &st) == -1) {
		fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
		return (-1);
	}
	if (!S_ISDIR(st.st_mode))
		return (driver_read(path));
	if ((d = opendir(path)) == NULL) {
		fprintf(stderr, "fuzz: %s: %s\n", path, strerror(errno));
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (asprintf(&p, "%s/%s", path, de->d_name) == -1 ||
		    (names = realloc(names, (n + 1) * sizeof *names)) == NULL)
			abort();
		names[n++] = p;
	}
	closedir(d);
	qsort(names, n, sizeof *names, driver_name_cmp);
	for (i = 0; i < n; i++) {
		if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    driver_read(names[i]) == -1)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return (rc);
}

/* Values parsers trip on: bounds of lengths, counts and offsets. */
static const uint64_t driver_ints[] = {
	0, 1, 2, 7, 8, 15, 16, 31, 32, 63, 64, 127, 128, 255, 256, 511, 512,
	1023, 1024, 2047, 2048, 4095, 4096, 65535, 65536, 0x7fffffff,
	0x80000000, 0xffffffff, 0x100000000ULL, 0x7fffffffffffffffULL,
	0x8000000000000000ULL, 0xffffffffffffffffULL,
};
static const char *driver_numbers[] = {
	"0", "-1", "1", "255", "256", "4096", "65535", "65536", "2147483647",
	"2147483648", "4294967295", "4294967296", "9223372036854775807",
	"9223372036854775808", "18446744073709551616", "-9223372036854775808",
	"99999999999999999999999999", "0x7fffffff", "ffffffff", "1e308",
	"-0", "00000000000000000000001",
};

static size_t
driver_insert(uint8_t *p, size_t len, size_t max, size_t at,
    const void *what, size_t n)
{
	if (len + n > max)
		return (len);
	memmove(p + at + n, p + at, len - at);
	memcpy(p + at, what, n);
	return (len + n);
}

/* One change to p, within max; the new length. */
static size_t
driver_mutate_one(uint8_t *p, size_t len, size_t max)
{
	const struct driver_input	*o;
	uint8_t				 b[8];
	uint64_t			 v;
	size_t				 at = driver_below(len + 1), n, i, from;

	switch (driver_below(11)) {
	case 0:		/* flip a bit */
		if (at < len)
			p[at] ^= 1 << driver_below(8);
		break;
	case 1:		/* a random byte */
		if (at < len)
			p[at] = driver_rand();
		break;
	case 2:		/* a byte that means something in text formats */
		if (at < len)
			p[at] = "\0\n\r\t :;,=\"'{}[]()\\/-%.0123456789\xff"
			    [driver_below(34)];
		break;
	case 3:		/* random bytes in */
		n = 1 + driver_below(8);
		for (i = 0; i < n; i++)
			b[i] = driver_rand();
		len = driver_insert(p, len, max, at, b, n);
		break;
	case 4:		/* a piece out */
		n = 1 + driver_below(len - at < 64 ? len - at + 1 : 64);
		if (at + n > len)
			n = len - at;
		memmove(p + at, p + at + n, len - at - n);
		len -= n;
		break;
	case 5:		/* a piece again */
		n = 1 + driver_below(64);
		if (at + n <= len)
			len = driver_insert(p, len, max, at, p + at, n);
		break;
	case 6:		/* a piece of another input */
	case 7:
		o = &driver_corpus[driver_below(driver_ncorpus)];
		if (o->len == 0)
			break;
		from = driver_below(o->len);
		n = 1 + driver_below(128);
		if (from + n > o->len)
			n = o->len - from;
		if (driver_below(2) == 0 || at + n > len)
			len = driver_insert(p, len, max, at, o->data + from, n);
		else
			memcpy(p + at, o->data + from, n);
		break;
	case 8:		/* a binary integer at its bounds, either order */
		v = driver_ints[driver_below(sizeof driver_ints /
		    sizeof driver_ints[0])] + driver_below(3) - 1;
		n = (size_t)1 << driver_below(4);
		for (i = 0; i < n; i++)
			b[i] = driver_below(2) ? v >> (8 * i) :
			    v >> (8 * (n - 1 - i));
		if (at + n <= len)
			memcpy(p + at, b, n);
		break;
	case 9:		/* a decimal number replaced, or put in */
		for (; at < len && (p[at] < '0' || p[at] > '9'); at++)
			;
		for (n = 0; at + n < len && p[at + n] >= '0' &&
		    p[at + n] <= '9'; n++)
			;
		memmove(p + at, p + at + n, len - at - n);
		len -= n;
		from = driver_below(sizeof driver_numbers /
		    sizeof driver_numbers[0]);
		len = driver_insert(p, len, max, at, driver_numbers[from],
		    strlen(driver_numbers[from]));
		break;
	case 10:	/* cut short */
		len = at;
		break;
	}
	return (len);
}

size_t
LLVMFuzzerMutate(uint8_t *p, size_t len, size_t max)
{
	size_t	n = 1 + driver_below(6);

	if (len > max)
		len = max;
	while (n-- > 0)
		len = driver_mutate_one(p, len, max);
	return (len);
}

/* One input, in a buffer of exactly its size so overreads show. */
static void
driver_run(const uint8_t *data, size_t len, const char *from,
    unsigned long round)
{
	uint8_t	*copy;

	if ((copy = malloc(len == 0 ? 1 : len)) == NULL)
		abort();
	memcpy(copy, data, len);
	driver_cur = copy;
	driver_cur_len = len;
	driver_cur_from = from;
	driver_cur_round = round;
	alarm(DRIVER_HANG);
	(void)LLVMFuzzerTestOneInput(copy, len);
	alarm(0);
	driver_cur = NULL;
	free(copy);
}

int
main(int argc, char **argv)
{
	const char	*env, *name;
	unsigned long	 rounds = DRIVER_ROUNDS, r;
	uint64_t	 seed = 0x9e3779b97f4a7c15ULL;
	double		 seconds = DRIVER_SECONDS, t0;
	uint8_t		*buf;
	size_t		 i, len, max = 4096;
	int		 c;

	if ((env = getenv("QSUP_FUZZ_ROUNDS")) != NULL)
		rounds = strtoul(env, NULL, 10);
	if ((env = getenv("QSUP_FUZZ_SECONDS")) != NULL)
		seconds = strtod(env, NULL);
	while ((c = getopt(argc, argv, "n:s:t:")) != -1) {
		switch (c) {
		case 'n':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			seconds = strtod(optarg, NULL);
			break;
		default:
			fprintf(stderr, "usage: %s [-n ROUNDS] [-t SECONDS] "
			    "[-s SEED] FILE|DIR...\n", argv[0]);
			return (2);
		}
	}
	if (optind == argc) {
		fprintf(stderr, "%s: no corpus given\n", argv[0]);
		return (2);
	}
	for (c = optind; c < argc; c++) {
		if (driver_load(argv[c]) == -1)
			return (1);
	}
	if (driver_ncorpus == 0) {
		fprintf(stderr, "%s: the corpus is empty\n", argv[0]);
		return (1);
	}
	driver_state = seed == 0 ? 1 : seed;
	name = strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 :
	    argv[0];
	snprintf(driver_crash, sizeof driver_crash, "%s.crash", argv[0]);
	__sanitizer_set_death_callback(driver_save);
	signal(SIGABRT, driver_signal_cb);
	signal(SIGALRM, driver_signal_cb);
	if (LLVMFuzzerInitialize != NULL)
		(void)LLVMFuzzerInitialize(&argc, &argv);

	t0 = driver_now();
	for (i = 0; i < driver_ncorpus; i++) {
		driver_run(driver_corpus[i].data, driver_corpus[i].len,
		    driver_corpus[i].name, 0);
		if (driver_corpus[i].len * 2 > max)
			max = driver_corpus[i].len * 2;
	}
	if (max > DRIVER_MAX)
		max = DRIVER_MAX;
	if ((buf = malloc(max)) == NULL)
		abort();
	for (r = 1; r <= rounds && driver_now() - t0 < seconds; r++) {
		i = driver_below(driver_ncorpus);
		len = driver_corpus[i].len < max ? driver_corpus[i].len : max;
		memcpy(buf, driver_corpus[i].data, len);
		if (LLVMFuzzerCustomMutator != NULL && driver_below(2) == 0)
			len = LLVMFuzzerCustomMutator(buf, len, max,
			    (unsigned int)driver_rand());
		else
			len = LLVMFuzzerMutate(buf, len, max);
		driver_run(buf, len, driver_corpus[i].name, r);
	}
	printf("%s: %zu corpus inputs, %lu mutations, %.1f s\n", name,
	    driver_ncorpus, r - 1, driver_now() - t0);
	free(buf);
	for (i = 0; i < driver_ncorpus; i++) {
		free(driver_corpus[i].name);
		free(driver_corpus[i].data);
	}
	free(driver_corpus);
	return (0);
}
