#!/usr/bin/env bash
# Run every test: the include-direction, size and documentation checks,
# the Criterion unit suites, the same again built with AddressSanitizer and
# UndefinedBehaviorSanitizer (build/asan/tests), the fuzz targets over their
# corpora under both, the integration suites against real QEMU guests (and
# three server suites again under the sanitizers' qsup), then the API
# contract over every response the servers gave.
#
#   tests/run.sh [-j N] [--check] [NAME...]
#	-j N	N suites at a time (default: QSUP_TEST_JOBS, else from the
#		CPUs and the free memory; -j 1 runs one after another)
#	--check	the fast tier (./build.sh check): the checks, the unit
#		suites plain and under the sanitizers and the quickest
#		integration suites, CHECK_SUITES below
#	NAME	only the suites of that name or kind: serve_test (or
#		serve_test.sh: it and its run under the sanitizers),
#		"unit: agent_test", unit:, integration:, docs:, fixture:
#
# How a run is organised (tests/README.md says more):
#  - The test images (tests/images/*.sh) are built first, once, as suites
#    of their own ("fixture: ..."); a suite that uses one starts after it.
#  - Every other suite is a job in a pool of slots, the longest first
#    (tests/times.txt holds a whole run's times on the 2-CPU machine;
#    build/tests/times.txt, written by the last whole run here, is read
#    first), so that the short ones fill the end. A suite is alone in its
#    files: its own temporary, runtime, cache and data directories
#    (tests/integration/lib.sh), ports the kernel picks, one contract
#    record a suite.
#  - Each suite's lines are printed whole when it ends, then its time:
#    "    (NAME: N s)". A suite that runs past QSUP_TEST_LIMIT seconds
#    (default 1200) is stopped and failed.
#  - The run ends with the 15 slowest suites, the wall time, and the
#    count of suites passed and failed. Exit status 0 only if all passed.
set -u
cd "$(dirname "$(readlink -f "$0")")/.."
# Read whole before it runs (the braces end at the file's end): bash reads
# a script as it goes, and an edit to this file during a run would
# otherwise run half-old, half-new lines.
{

jobs=${QSUP_TEST_JOBS:-}
check=0
only=()
while [ $# -gt 0 ]; do
	case $1 in
	-j) jobs=${2:?-j needs a number}; shift 2 ;;
	-j*) jobs=${1#-j}; shift ;;
	--check) check=1; shift ;;
	-h|--help) sed -n '9,18p' "$0" | sed 's/^#//'; exit 0 ;;
	-*) echo "tests/run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) only+=("$1"); shift ;;
	esac
done

# The integration suites of the fast tier: quick, and between them they
# start, stop and talk to real guests through run, serve and the clients.
CHECK_SUITES="cli_test doctor_test profile_test signal_test tty_test
serve_limits_test ws_test mcp_test"

# Slots: one more than the CPUs (a suite waits on its guests, its
# servers and its timers much of its time), at most one for each 3 GiB
# the machine has free (a suite's guests, servers and /dev/shm).
default_jobs() {
	local cpus mem
	cpus=$(nproc 2>/dev/null || echo 1)
	mem=$(awk '/^MemAvailable:/ {print int($2 / 3145728)}' /proc/meminfo)
	jobs=$((cpus + 1))
	[ "${mem:-0}" -ge 1 ] && [ "$mem" -lt "$jobs" ] && jobs=$mem
	[ "$jobs" -ge 1 ] || jobs=1
}
[ -n "$jobs" ] || default_jobs
case $jobs in
'' | *[!0-9]* | 0) echo "tests/run.sh: -j wants a number of 1 or more" >&2; exit 2 ;;
esac
LIMIT=${QSUP_TEST_LIMIT:-1200}
# A whole run (no --check, no NAME): it alone clears and checks the
# contract records and writes build/tests/times.txt.
whole=0
[ "$check" = 0 ] && [ ${#only[@]} -eq 0 ] && whole=1

J_NAME=() J_CMD=() J_NEEDS=()

# add NAME NEEDS CMD...: a suite, J_LAST its index; NEEDS the indices of
# the fixtures it waits for, "" for none.
add() {
	local name=$1 needs=$2 keep=1 pat
	shift 2
	if [ ${#only[@]} -gt 0 ]; then
		keep=0
		for pat in "${only[@]}"; do
			case $name in
			"$pat" | *": $pat" | *": $pat.sh" | "$pat"*) keep=1 ;;
			esac
		done
	fi
	J_LAST=
	[ "$keep" = 1 ] || return 0
	J_LAST=${#J_NAME[@]}
	J_NAME+=("$name")
	J_CMD+=("$(printf '%q ' "$@")")
	J_NEEDS+=("$needs")
}

# The fixtures some integration suites share (read only), each built
# once (its builder keeps it while its stamp is current) before them.
DEBIAN= CLOUD= DESKTOP=
if [ "$check" = 0 ]; then
	add "fixture: the Debian test image" "" \
	    bash tests/images/debian.sh build/images/debian-12.qcow2
	DEBIAN=$J_LAST
	add "fixture: the cloud test image" "" \
	    bash tests/images/cloud.sh build/images/cloud.qcow2
	CLOUD=$J_LAST
	add "fixture: the desktop test image" "" \
	    bash tests/images/desktop.sh build/images/desktop-12.qcow2
	DESKTOP=$J_LAST
fi

add "layers: include direction" "" bash tests/layers.sh
add "layers: the check catches planted includes" "" \
    bash tests/layers.sh --self-test
add "size: files and functions within bounds" "" bash tests/size.sh
add "size: the check catches planted oversizes" "" \
    bash tests/size.sh --self-test
# The manual: every command, flag of every --help and API route in docs/,
# every relative link and anchor of README.md and docs/ resolving.
add "docs: every command, --help flag and API route is documented" "" \
    bash tests/docs/flags.sh
add "docs: the check catches planted undocumented ones" "" \
    bash tests/docs/flags.sh --self-test
add "docs: every link resolves" "" python3 tests/docs/links.py
add "docs: the check catches planted broken links" "" \
    python3 tests/docs/links.py --self-test
for t in build/tests/*_test; do
	[ -x "$t" ] || continue
	add "unit: $(basename "$t")" "" "$t" --jobs 1
done
# A finding ends the test's process: Criterion counts the test as failed.
# UBSan cannot recover (-fno-sanitize-recover). Leaks are looked for after
# each test's body (tests/unit/leak_check.c), not again at exit.
# One test is left to the plain build: profile/escape_memory's 64 MiB of
# Lua strings take 0.65 s of CPU under ASan (0.16 s without), against the
# profile's 1 s wall-clock limit, which then fires first on a loaded
# machine (seen: 1.02 s) and the test, rightly, wants the memory limit.
SAN_ENV=(env ASAN_OPTIONS=detect_leaks=1:leak_check_at_exit=0
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
for t in build/asan/tests/*_test; do
	[ -x "$t" ] || continue
	filter=()
	[ "$(basename "$t")" = profile_test ] &&
	    filter=(--filter '!(profile/escape_memory)')
	add "unit (asan, ubsan): $(basename "$t")" "" "${SAN_ENV[@]}" "$t" \
	    --jobs 1 "${filter[@]}"
done
if [ "$check" = 0 ]; then
	add "fuzz (asan, ubsan): tests/fuzz" "" bash tests/fuzz/run.sh
fi
for t in tests/integration/*_test.sh; do
	[ -f "$t" ] || continue
	s=$(basename "$t" .sh)
	if [ "$check" = 1 ]; then
		[[ " $(echo $CHECK_SUITES) " == *" $s "* ]] || continue
	fi
	case $s in
	ci_test | image_test | image_warm_test | e2b_test) needs=$DEBIAN ;;
	cloud_test) needs=$CLOUD ;;
	layers_test | share_cow_test) needs="$DEBIAN $CLOUD" ;;
	screen_test) needs=$DESKTOP ;;
	*) needs= ;;
	esac
	add "integration: $s.sh" "$needs" bash "$t"
done

# The server once more, as qsup built with both sanitizers: it holds many
# sandboxes' and clients' buffers and lifetimes at once. A finding, or a
# leak at its exit, fails its exit status, which every test checks.
if [ "$check" = 0 ]; then
	for s in serve_test serve_limits_test serve_state_test; do
		add "integration (asan, ubsan): $s.sh" "" env \
		    QSUP="$PWD/build/asan/qsup" QSUP_GUEST_DIR="$PWD/build/guest" \
		    ASAN_OPTIONS=detect_leaks=1 \
		    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		    bash "tests/integration/$s.sh"
	done
	# The API as a contract: docs/openapi.json linted (with the check's
	# own self-test); the responses are checked once every server ended.
	add "contract: docs/openapi.json lint" "" bash tests/contract/lint.sh
	add "contract: the check catches planted differences" "" \
	    python3 tests/contract/check.py --self-test docs/openapi.json \
	    build/qsup
fi

# The order: the fixtures, then the longest first, by the times known.
declare -A known=()
for f in tests/times.txt build/tests/times.txt; do
	[ -f "$f" ] || continue
	while IFS=$'\t' read -r w name _; do
		[[ $w == [0-9]* ]] && known[$name]=$w
	done <"$f"
done
order=()
while IFS=$'\t' read -r _ i; do
	order+=("$i")
done < <(for i in "${!J_NAME[@]}"; do
	case ${J_NAME[$i]} in
	fixture:*) w=999999 ;;
	*) w=${known[${J_NAME[$i]}]:-60} ;;
	esac
	printf '%s\t%s\n' "$w" "$i"
done | sort -t$'\t' -k1,1nr -k2,2n)

# What the servers of this run answer, for the contract check at the end
# of a whole run; a part of one leaves the records (suites of another run
# in this tree may be writing theirs).
[ "$whole" = 1 ] && rm -rf build/contract
LOGS=$(mktemp -d /tmp/qsup-run.XXXXXX)
declare -A running=() started=() status=() secs=() cpu=()
trap 'kill ${!running[*]} 2>/dev/null; rm -rf "$LOGS"' EXIT
trap 'exit 130' INT TERM

start() {
	local i=$1
	started[$i]=$EPOCHREALTIME
	# The CPU time of the suite and all it waited for (its guests too),
	# from bash's times, to see what a suite costs beside what it takes.
	# shellcheck disable=SC2086 # J_CMD holds words quoted by printf %q
	(eval "timeout -k 30 $LIMIT ${J_CMD[$i]}"
	    st=$?
	    times >"$LOGS/$i.cpu"
	    exit $st) </dev/null >"$LOGS/$i.log" 2>&1 &
	running[$!]=$i
}

# The first suite of the order not started whose fixtures have ended.
next() {
	local i need
	for i in "${order[@]}"; do
		[ -z "${started[$i]:-}" ] || continue
		for need in ${J_NEEDS[$i]}; do
			[ -n "${status[$need]:-}" ] || continue 2
		done
		echo "$i"
		return 0
	done
	return 1
}

# Wait for one suite to end; print its lines and its time.
reap() {
	local pid st i t
	wait -n -p pid "${!running[@]}"
	st=$?
	i=${running[$pid]}
	unset "running[$pid]"
	status[$i]=$st
	t=$(awk -v a="${started[$i]}" -v b="$EPOCHREALTIME" \
	    'BEGIN {printf "%d", b - a + 0.5}')
	secs[$i]=$t
	# times' second line: the children's user and system time.
	cpu[$i]=$(awk 'NR == 2 {
		n = split($0, f, /[ ms]+/)
		printf "%d", f[1] * 60 + f[2] + f[3] * 60 + f[4] + 0.5
	}' "$LOGS/$i.cpu" 2>/dev/null)
	echo "=== ${J_NAME[$i]}"
	cat "$LOGS/$i.log"
	[ "$st" -eq 124 ] || [ "$st" -eq 137 ] &&
	    echo "    FAIL: still running after $LIMIT s (QSUP_TEST_LIMIT): stopped"
	echo "    (${J_NAME[$i]}: $t s, ${cpu[$i]:-?} s of CPU)"
}

t0=$EPOCHREALTIME
while :; do
	while [ ${#running[@]} -lt "$jobs" ] && i=$(next); do
		start "$i"
	done
	[ ${#running[@]} -gt 0 ] || break
	reap
done

failed=()
for i in "${!J_NAME[@]}"; do
	[ "${status[$i]:-1}" -eq 0 ] || failed+=("${J_NAME[$i]}")
done
total=${#J_NAME[@]}

# The responses every server of this run gave, against the spec.
if [ "$whole" = 1 ]; then
	name="contract: every recorded response against docs/openapi.json"
	echo "=== $name"
	c0=$SECONDS
	python3 tests/contract/check.py docs/openapi.json build/qsup \
	    build/contract/*.jsonl || failed+=("$name")
	echo "    ($name: $((SECONDS - c0)) s)"
	total=$((total + 1))
fi

wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {printf "%d", b - a}')
sum=0 sumcpu=0
for i in "${!secs[@]}"; do
	sum=$((sum + secs[$i]))
	sumcpu=$((sumcpu + ${cpu[$i]:-0}))
done
# A whole run's times, for the next run's order (and tests/times.txt).
if [ "$whole" = 1 ]; then
	mkdir -p build/tests
	for i in "${!secs[@]}"; do
		printf '%s\t%s\t%s\n' "${secs[$i]}" "${J_NAME[$i]}" \
		    "${cpu[$i]:-}"
	done | sort -t$'\t' -k1,1nr -k2 >build/tests/times.txt
fi
echo "=== the 15 slowest of $total suites, $jobs at a time (wall, CPU):"
for i in "${!secs[@]}"; do
	printf '%6d s %6s s  %s\n' "${secs[$i]}" "${cpu[$i]:-?}" "${J_NAME[$i]}"
done | sort -k1,1nr | head -15
printf '=== wall time %d min %02d s (%d s) for %d s of suites and %d s of CPU, %d at a time\n' \
    $((wall / 60)) $((wall % 60)) "$wall" "$sum" "$sumcpu" "$jobs"
echo "=== $((total - ${#failed[@]})) suites passed, ${#failed[@]} suites failed"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'failed: %s\n' "${failed[@]}"
	exit 1
fi
exit 0
}
