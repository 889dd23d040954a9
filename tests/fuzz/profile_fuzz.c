/*
 * The profile loader, whose input is untrusted (a profile from a pull
 * request, a --set pasted from a chat): tests/unit/profile_fuzz_test.c's
 * checks and mutator, as a fuzz target. That file holds both, so the
 * Criterion suite and this target cannot drift apart. An input that
 * starts with '#' is loaded with two --set values.
 *
 * A mutant stuck in a C library function (a string pattern that
 * backtracks) sets off the loader's watchdog, which ends the process with
 * status 125 as it ends qsup, by design: under libFuzzer that stops the
 * run (leaving its /dev/shm/profile_fuzz.* behind); its 50,000 fixed
 * mutations in ./build.sh test do not. The input is the one just run.
 */
#define QSUP_LIBFUZZER
#include "../unit/profile_fuzz_test.c"
