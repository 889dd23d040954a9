#!/usr/bin/env bash
# Every fuzz target, tests/fuzz/NAME_fuzz.c, as the Makefile built it with
# tests/fuzz/driver.c under ASan and UBSan (build/fuzz/NAME_fuzz): its
# corpus tests/fuzz/corpus/NAME/, then a bounded number of mutations. One
# line per target, then "N passed, N failed". Run by tests/run.sh.
set -u
cd "$(dirname "$(readlink -f "$0")")/../.."

# A leak shows at the driver's exit and fails the target too.
export ASAN_OPTIONS=${ASAN_OPTIONS-detect_leaks=1}

passed=0 failed=0
for src in tests/fuzz/*_fuzz.c; do
	[ -f "$src" ] || continue
	name=$(basename "$src" _fuzz.c)
	bin=build/fuzz/${name}_fuzz
	corpus=tests/fuzz/corpus/$name
	if [ ! -x "$bin" ]; then
		echo "fuzz $name: FAILED: $bin is not built"
		failed=$((failed + 1))
	elif [ ! -d "$corpus" ]; then
		echo "fuzz $name: FAILED: no corpus $corpus/"
		failed=$((failed + 1))
	elif "$bin" "$corpus"; then
		passed=$((passed + 1))
	else
		echo "fuzz $name: FAILED (status $?)"
		failed=$((failed + 1))
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
