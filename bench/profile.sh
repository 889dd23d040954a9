#!/usr/bin/env bash
# Profile loading: how long qsup takes to load and check each shipped
# profile (measured inside qsup, around profile_load), and how long the
# whole `qsup profile check` of all of them takes as a process. Medians.
# Usage: bench/profile.sh [RUNS] (default 21).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-21}
qsup=$PWD/build/qsup
tmp=$(mktemp -d /tmp/qsup-bench-profile.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/cache


"$qsup" profile check profiles/*.lua >/dev/null || {
	echo "bench: the shipped profiles do not check" >&2; exit 1; }

echo "load and check, inside qsup, median of $runs:"
for f in profiles/*.lua; do
	for _ in $(seq 1 "$runs"); do
		"$qsup" profile check -v "$f" |
		    sed -n 's/.*: ok (\([0-9.]*\) ms)$/\1/p'
	done >"$tmp/one"
	printf '  %-28s %s ms\n' "$f" "$(median %.2f <"$tmp/one")"
done

# $EPOCHREALTIME: no fork of date(1) inside the measurement.
for _ in $(seq 1 "$runs"); do
	t0=$EPOCHREALTIME
	"$qsup" profile check profiles/*.lua >/dev/null
	t1=$EPOCHREALTIME
	echo "$t0 $t1"
done | awk '{printf "%.2f\n", ($2 - $1) * 1000}' >"$tmp/all"
echo "qsup profile check profiles/*.lua ($(ls profiles/*.lua | wc -l) profiles), whole process, median of $runs: $(median %.2f <"$tmp/all") ms"
py=$("$qsup" profile facts | sed -n 's/^qsup.python.path = //p')
echo "(python.lua reads the host's python3: ${py:-none})"
