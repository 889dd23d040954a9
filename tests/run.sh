#!/usr/bin/env bash
# Run every test: the Criterion unit suites, the same again built with
# AddressSanitizer and UndefinedBehaviorSanitizer (build/asan/tests), the
# fuzz targets over their corpora under both (tests/fuzz/run.sh), then the
# integration suites against real QEMU guests. Each suite ends with its own pass/fail line; the
# last line sums them up. Exit status 0 only if everything passed.
set -u
cd "$(dirname "$(readlink -f "$0")")/.."

failed_suites=()
total_suites=0
# What the servers of this run answer, for the contract test at the end.
rm -rf build/contract

# Each suite's time goes after its own lines, to find the slow ones.
run_suite() {
	local name=$1 t0=$SECONDS; shift
	total_suites=$((total_suites + 1))
	echo "=== $name"
	if ! "$@"; then
		failed_suites+=("$name")
	fi
	echo "    ($name: $((SECONDS - t0)) s)"
}

run_suite "layers: include direction" tests/layers.sh
run_suite "layers: the check catches planted includes" tests/layers.sh --self-test
run_suite "size: files and functions within bounds" tests/size.sh
run_suite "size: the check catches planted oversizes" tests/size.sh --self-test
# The manual: every command, flag of every --help and API route in docs/,
# every relative link and anchor of README.md and docs/ resolving.
run_suite "docs: every command, --help flag and API route is documented" \
    bash tests/docs/flags.sh
run_suite "docs: the check catches planted undocumented ones" \
    bash tests/docs/flags.sh --self-test
run_suite "docs: every link resolves" python3 tests/docs/links.py
run_suite "docs: the check catches planted broken links" \
    python3 tests/docs/links.py --self-test
for t in build/tests/*_test; do
	[ -x "$t" ] || continue
	run_suite "unit: $(basename "$t")" "$t" --jobs 1
done
# A finding ends the test's process: Criterion counts the test as failed.
# UBSan cannot recover (-fno-sanitize-recover). Leaks are looked for after
# each test's body (tests/unit/leak_check.c), not again at exit.
# One test is left to the plain build: profile/escape_memory's 64 MiB of
# Lua strings take 0.65 s of CPU under ASan (0.16 s without), against the
# profile's 1 s wall-clock limit, which then fires first on a loaded
# machine (seen: 1.02 s) and the test, rightly, wants the memory limit.
for t in build/asan/tests/*_test; do
	[ -x "$t" ] || continue
	only=()
	[ "$(basename "$t")" = profile_test ] &&
	    only=(--filter '!(profile/escape_memory)')
	ASAN_OPTIONS=detect_leaks=1:leak_check_at_exit=0 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	    run_suite "unit (asan, ubsan): $(basename "$t")" "$t" --jobs 1 \
	    "${only[@]}"
done
run_suite "fuzz (asan, ubsan): tests/fuzz" bash tests/fuzz/run.sh
for t in tests/integration/*_test.sh; do
	[ -f "$t" ] || continue
	run_suite "integration: $(basename "$t")" bash "$t"
done

# The server once more, as qsup built with both sanitizers: it holds many
# sandboxes' and clients' buffers and lifetimes at once. A finding, or a
# leak at its exit, fails its exit status, which every test checks.
QSUP=$PWD/build/asan/qsup QSUP_GUEST_DIR=$PWD/build/guest \
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite "integration (asan, ubsan): serve_test.sh" \
    bash tests/integration/serve_test.sh
QSUP=$PWD/build/asan/qsup QSUP_GUEST_DIR=$PWD/build/guest \
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite "integration (asan, ubsan): serve_limits_test.sh" \
    bash tests/integration/serve_limits_test.sh
QSUP=$PWD/build/asan/qsup QSUP_GUEST_DIR=$PWD/build/guest \
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite "integration (asan, ubsan): serve_state_test.sh" \
    bash tests/integration/serve_state_test.sh

# The API as a contract: docs/openapi.json linted, and every response the
# suites above received from qsup serve (--record, tests/integration/
# lib.sh) checked against it, with the route table (tests/contract/).
run_suite "contract: docs/openapi.json lint" bash tests/contract/lint.sh
run_suite "contract: the check catches planted differences" \
    python3 tests/contract/check.py --self-test docs/openapi.json build/qsup
run_suite "contract: every recorded response against docs/openapi.json" \
    python3 tests/contract/check.py docs/openapi.json build/qsup \
    build/contract/*.jsonl

echo "=== $((total_suites - ${#failed_suites[@]})) suites passed, ${#failed_suites[@]} suites failed"
if [ ${#failed_suites[@]} -gt 0 ]; then
	printf 'failed: %s\n' "${failed_suites[@]}"
	exit 1
fi
