#!/usr/bin/env bash
# Density: N sandboxes started at once, each `qsup run -- sh -c 'echo ok;
# sleep S'` in a background process of its own, all restored from one
# template (made first, by a run of its own). Checks that every one printed
# ok and exited 0, and prints: the wall time until all N were running their
# command (the time of each run's ok line), QEMU's memory while all run
# (the sum of the QEMU children's VmRSS, and of their PSS from
# smaps_rollup, where pages shared between QEMUs count once), the CPU all
# the runs used, and MemAvailable before and while all run.
# Usage: bench/density.sh [N] [S]   (default 64, and S = 30 + N seconds:
# long enough that all overlap on a small host; the script says if not)
# QSUP_DENSITY_SET="NAME=VALUE ...": --set for every run (bench/run.sh
# measures template_ram=stream so, beside the default).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
n=${1:-64}
s=${2:-$((30 + n))}
qsup=${QSUP:-$PWD/build/qsup}	# QSUP=path: another build
tmp=$(mktemp -d /tmp/qsup-density.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

field() { tail -n 1 "$2" | sed -n "s/.*\"$1\":\"\{0,1\}\([a-z0-9.-]*\).*/\1/p"; }
mem_available() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }
# user+system seconds of this shell's waited-for children, grandchildren
# included (each run's qsup reaps its QEMU, and we reap each run).
children_cpu() { awk '{print $16 + $17}' /proc/$$/stat; }

export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"
sets=()
for kv in ${QSUP_DENSITY_SET:-}; do sets+=(--set "$kv"); done
"$qsup" run "${sets[@]}" -- true >/dev/null 2>&1 ||
    { echo "density: qsup run failed" >&2; exit 1; }

# One run: the ok line stamped with the time it arrived.
one() {
	local i=$1 line
	set +e	# a failed run is counted, not the end of this subshell
	# --timeout: a run whose command never ends fails, not the bench.
	"$qsup" run --json "${sets[@]}" --timeout $((s + 60)) -- \
	    sh -c "echo ok; sleep $s" \
	    2>"$tmp/err.$i" |
	    while IFS= read -r line; do
		echo "$(now_ms) $line"
	    done >"$tmp/out.$i"
	echo "${PIPESTATUS[0]}" >"$tmp/rc.$i"
}

mem0=$(mem_available)
hz=$(getconf CLK_TCK)
cpu0=$(children_cpu)
t0=$(now_ms)
for i in $(seq 1 "$n"); do
	one "$i" &
	pids+=($!)
done

# Until every run has printed ok, or finished without: then the sample.
settled() {
	local i p
	for i in $(seq 1 "$n"); do
		grep -q ' ok$' "$tmp/out.$i" 2>/dev/null ||
		    [ -e "$tmp/rc.$i" ] || break
	done
	[ "$i" -eq "$n" ] && { grep -q ' ok$' "$tmp/out.$i" 2>/dev/null ||
	    [ -e "$tmp/rc.$i" ]; } && return 0
	# Or no run is left to say anything.
	for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}
until settled; do sleep 0.1; done
t_all=$(now_ms)
mem1=$(mem_available)
rss=0 pss=0 nq=0
for q in $(pgrep -f "qsup:$XDG_RUNTIME_DIR/" || true); do
	r=$(awk '/^VmRSS:/ {print $2}' /proc/$q/status 2>/dev/null || echo 0)
	p=$(awk '/^Pss:/ {print $2}' /proc/$q/smaps_rollup 2>/dev/null || echo 0)
	rss=$((rss + ${r:-0})) pss=$((pss + ${p:-0})) nq=$((nq + 1))
done
# The first run's end: had it come before the last ok, not all overlapped.
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
t_end=$(now_ms)
cpu=$(($(children_cpu) - cpu0))

failed=0
: >"$tmp/starts"
for i in $(seq 1 "$n"); do
	rc=$(cat "$tmp/rc.$i" 2>/dev/null || echo none)
	ok=$(awk '$2 == "ok" {print $1; exit}' "$tmp/out.$i")
	if [ "$rc" != 0 ] || [ -z "$ok" ]; then
		failed=$((failed + 1))
		echo "run $i: exit $rc, $( [ -n "$ok" ] && echo ok ||
		    echo 'no ok'): $(grep -v '^{' "$tmp/err.$i" | tail -n 1)" >&2
		continue
	fi
	echo $((ok - t0)) >>"$tmp/starts"
	field start "$tmp/err.$i" >>"$tmp/kinds"
done
last=$(sort -n "$tmp/starts" | tail -n 1)
first_exit=$((t0 + $(sort -n "$tmp/starts" | head -n 1) + s * 1000))

echo "density: $n sandboxes at once, each sh -c 'echo ok; sleep $s'"
echo "  ok and exit 0: $((n - failed)) of $n$( [ "$failed" -gt 0 ] && echo "   ($failed FAILED, above)")"
echo "  starts: $(sort "$tmp/kinds" 2>/dev/null | uniq -c | awk '{printf "%s%s %s", s, $1, $2; s=", "}')"
echo "  wall time until all were running their command: ${last:-?} ms   (median run $(median %d <"$tmp/starts") ms)"
if [ "$t_all" -gt "$first_exit" ]; then
	echo "  NOT all overlapped: the first run's sleep ended before the last ok; use a larger S" >&2
fi
echo "  QEMU while all ran ($nq processes): RSS $((rss / 1024)) MiB in all, $((rss / (nq > 0 ? nq : 1) / 1024)) MiB each; PSS $((pss / 1024)) MiB in all, $((pss / (nq > 0 ? nq : 1) / 1024)) MiB each"
echo "  MemAvailable: $((mem0 / 1024)) MiB before, $((mem1 / 1024)) MiB while all ran ($(((mem0 - mem1) / 1024)) MiB used, $(((mem0 - mem1) / (nq > 0 ? nq : 1) / 1024)) MiB for each QEMU running)"
echo "  CPU of all runs (qsup and QEMU, user+system): $(awk -v c="$cpu" -v h="$hz" 'BEGIN {printf "%.1f", c / h}') s over $(((t_end - t0) / 1000)) s of wall time"
[ "$failed" -eq 0 ]
