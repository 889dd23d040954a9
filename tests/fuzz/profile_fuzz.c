/*
 * The profile loader, whose input is untrusted (a profile from a pull
 * request, a --set pasted from a chat): tests/unit/profile_fuzz_test.c's
 * checks and mutator, as a fuzz target. That file holds both, so the
 * Criterion suite and this target cannot drift apart. An input that
 * starts with '#' is loaded with two --set values.
 *
 * A mutant stuck in a C library function (a string pattern that
 * backtracks) is abandoned by the loader's alarm past the time limit and
 * fails like any other runaway profile; the process, and the run, go on.
 */
#define QSUP_LIBFUZZER
#include "../unit/profile_fuzz_test.c"
