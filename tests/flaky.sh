#!/usr/bin/env bash
# Races, looked for: integration suites run again and again with a CPU
# burner beside them, as on a CI machine that is busy with more than us.
#
#   tests/flaky.sh [--runs N] [--burn N] [-j N] [SUITE...]
#	--runs N   each suite N times (default 3), through tests/run.sh
#	--burn N   N CPUs kept busy meanwhile (default 1): stress-ng's cpu
#		   stressor, or a busy shell loop where it is not installed
#	-j N	   suites at a time (tests/run.sh's -j; default its own)
#	SUITE	   serve_test or serve_test.sh (default: every suite of
#		   tests/integration/, and the three under the sanitizers)
#
# Each run's whole output is kept in build/flaky/run-K.log. The last lines
# give each suite's runs passed, then "N passed, N failed" over the suites:
# a suite passes only if all its runs did.
set -u
cd "$(dirname "$(readlink -f "$0")")/.."

runs=3 burn=1 jobs=() suites=()
while [ $# -gt 0 ]; do
	case $1 in
	--runs) runs=${2:?--runs needs a number}; shift 2 ;;
	--burn) burn=${2:?--burn needs a number}; shift 2 ;;
	-j) jobs=(-j "${2:?-j needs a number}"); shift 2 ;;
	-h|--help) sed -n '5,12p' "$0" | sed 's/^#//'; exit 0 ;;
	-*) echo "tests/flaky.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) suites+=("${1%.sh}"); shift ;;
	esac
done
case $runs$burn in
*[!0-9]*) echo "tests/flaky.sh: --runs and --burn want numbers" >&2; exit 2 ;;
esac
if [ ${#suites[@]} -eq 0 ]; then
	for t in tests/integration/*_test.sh; do
		suites+=("$(basename "$t" .sh)")
	done
fi
for s in "${suites[@]}"; do
	[ -f "tests/integration/$s.sh" ] ||
	    { echo "tests/flaky.sh: no suite tests/integration/$s.sh" >&2; exit 2; }
done

burners=()
stop_burners() {
	[ ${#burners[@]} -eq 0 ] || kill "${burners[@]}" 2>/dev/null
	wait 2>/dev/null
}
trap stop_burners EXIT
trap 'exit 130' INT TERM
if [ "$burn" -gt 0 ]; then
	if command -v stress-ng >/dev/null; then
		stress-ng --cpu "$burn" --cpu-method int64 --quiet &
		burners+=($!)
		how="stress-ng --cpu $burn"
	else
		for ((i = 0; i < burn; i++)); do
			(while :; do :; done) &
			burners+=($!)
		done
		how="$burn busy shell loops (stress-ng is not installed)"
	fi
	echo "flaky: $how beside the suites"
fi

mkdir -p build/flaky
declare -A passed=()
patterns=()
for s in "${suites[@]}"; do
	patterns+=("$s.sh")
	passed[$s]=0
done
for ((r = 1; r <= runs; r++)); do
	log=build/flaky/run-$r.log
	t0=$SECONDS
	tests/run.sh "${jobs[@]}" "${patterns[@]}" >"$log" 2>&1
	# The suites that failed this run, from run.sh's "failed:" lines.
	failed=$(sed -n 's/^failed: .*: \([a-z0-9_]*\)\.sh$/\1/p' "$log")
	for s in "${suites[@]}"; do
		grep -qx "$s" <<<"$failed" || passed[$s]=$((passed[$s] + 1))
	done
	echo "flaky: run $r of $runs: $((SECONDS - t0)) s," \
	    "$(grep -m1 'suites passed' "$log" | sed 's/^=== //') ($log)"
	grep '^failed: ' "$log" | sed 's/^/    /'
done

ok=0 bad=0
for s in "${suites[@]}"; do
	if [ "${passed[$s]}" -eq "$runs" ]; then
		ok=$((ok + 1))
		echo "  ok   $s: $runs of $runs runs passed"
	else
		bad=$((bad + 1))
		echo "  FAIL $s: ${passed[$s]} of $runs runs passed"
	fi
done
echo "$ok passed, $bad failed"
[ "$bad" -eq 0 ]
