/*
 * What a fuzz target (tests/fuzz/NAME_fuzz.c) defines, and what the
 * drivers give it: libFuzzer's interface, which tests/fuzz/driver.c
 * implements too. Included in every target by the Makefile.
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
