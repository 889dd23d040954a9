#!/usr/bin/env bash
# Run every test: the Criterion unit suites, then the integration suites
# against real QEMU guests. Each suite ends with its own pass/fail line; the
# last line sums them up. Exit status 0 only if everything passed.
set -u
cd "$(dirname "$(readlink -f "$0")")/.."

failed_suites=()
total_suites=0

run_suite() {
	local name=$1; shift
	total_suites=$((total_suites + 1))
	echo "=== $name"
	if ! "$@"; then
		failed_suites+=("$name")
	fi
}

for t in build/tests/*_test; do
	[ -x "$t" ] || continue
	run_suite "unit: $(basename "$t")" "$t" --jobs 1
done
for t in tests/integration/*_test.sh; do
	[ -f "$t" ] || continue
	run_suite "integration: $(basename "$t")" bash "$t"
done

echo "=== $((total_suites - ${#failed_suites[@]})) suites passed, ${#failed_suites[@]} suites failed"
if [ ${#failed_suites[@]} -gt 0 ]; then
	printf 'failed: %s\n' "${failed_suites[@]}"
	exit 1
fi
