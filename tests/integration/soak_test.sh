#!/usr/bin/env bash
# The soak (bench/soak.sh), short: 30 s of two clients creating, exec'ing
# (stdin, a terminal, 2 MB of output), copying files and deleting, while
# QEMUs and clients are killed at random and slow clients hold
# connections. Every request answered or refused with a status; no QEMU,
# run directory, fd or memory growth left; serve exits 0 on SIGTERM.
# The figures of a longer run are in docs/speed.md.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

test_soak() {
	local out rc
	out=$(bash bench/soak.sh 30 2 2 2>&1)
	rc=$?
	echo "$out" | sed 's/^/    /'
	expect_eq "bench/soak.sh's status" 0 $rc
	expect_match "operations done" '^  operations ok: [1-9]' "$out"
	expect_match "QEMUs were killed under it" '^  fault: QEMU killed +[1-9]' \
	    "$out"
	expect_match "clients went away mid-exec" \
	    '^  fault: client gone mid-exec +[1-9]' "$out"
}

run_test test_soak
finish
