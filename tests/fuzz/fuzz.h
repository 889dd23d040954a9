/*
 * What a fuzz target defines, and what the drivers give it: libFuzzer's
 * interface, which tests/fuzz/driver.c implements too. Included in every
 * target by the Makefile.
 *
 * A target is one file, tests/fuzz/NAME_fuzz.c, with its seed corpus in
 * tests/fuzz/corpus/NAME/ (real inputs). NAME agent_*: linked with the
 * agent's sources, the .c files of guest/ and core/wire/ but guest/agent.c
 * (main, on which nothing else leans); any other NAME: with qsup's
 * core (core/, lua/, staging/ but core/cmd/main.c). The Makefile finds
 * targets by wildcard; tests/fuzz/run.sh runs each under ASan and UBSan
 * in ./build.sh test, and ./build.sh fuzz NAME under libFuzzer. A target keeps its own noise off
 * stderr (the sanitizers write to fd 2 directly).
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The target: one input, 0 back; a crash or abort() is a finding. */
int	 LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Optional: once, before the first input. */
int	 LLVMFuzzerInitialize(int *, char ***);

/* Optional: a mutator that knows the format; may call LLVMFuzzerMutate. */
size_t	 LLVMFuzzerCustomMutator(uint8_t *, size_t, size_t, unsigned int);

/* The driver's own mutator, for a custom one to fall back on. */
size_t	 LLVMFuzzerMutate(uint8_t *, size_t, size_t);

#endif
