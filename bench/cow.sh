#!/usr/bin/env bash
# Copy-on-write shares against read-only ones: the same host tree shared
# twice in one sandbox, at /ro (mode ro) and /cow (mode cow), read through
# each three times in each run, the order alternating. A 200 MB file read
# whole, then 500 files of 4 KB read by one cat; times from the guest's
# /proc/uptime (10 ms steps). Then a 100 MB write through the cow share
# (to its upper disk). Medians of every read of RUNS runs (default 5); the
# goal (issue #29) is cow / ro >= 0.9.
# Usage: bench/cow.sh [RUNS]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-5}
qsup=$PWD/build/qsup
tmp=$(mktemp -d /tmp/qsup-bench-cow.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"

mkdir -p "$tmp/tree/small"
head -c 209715200 /dev/urandom >"$tmp/tree/big"
for i in $(seq 1 500); do
	head -c 4096 /dev/urandom >"$tmp/tree/small/f$i"
done
# The template, so every measured run is a restore.
"$qsup" run --set memory=1G --share "$tmp/tree:/ro" \
    --share "$tmp/tree:/cow:cow" -- true
for i in $(seq 1 "$runs"); do
	"$qsup" run --set memory=1G --share "$tmp/tree:/ro" \
	    --share "$tmp/tree:/cow:cow" -- sh -c '
	    t() { read u _ </proc/uptime; echo "$u"; }
	    for r in 1 2 3; do
		if [ $((r % 2)) = 1 ]; then o="ro cow"; else o="cow ro"; fi
		for m in $o; do
		    a=$(t); cat /$m/big >/dev/null; b=$(t)
		    cat /$m/small/* >/dev/null; c=$(t)
		    echo "$m $a $b $c"
		done
	    done
	    a=$(t); dd if=/dev/zero of=/cow/new bs=1M count=100 2>/dev/null
	    sync; b=$(t); echo "write $a $b"' >"$tmp/out"
	awk '$1 == "ro" {printf "%.1f %.2f\n", 200 / ($3 - $2), $4 - $3}' \
	    "$tmp/out" >>"$tmp/ro"
	awk '$1 == "cow" {printf "%.1f %.2f\n", 200 / ($3 - $2), $4 - $3}' \
	    "$tmp/out" >>"$tmp/cow"
	awk '$1 == "write" {printf "%.1f\n", 100 / ($3 - $2)}' \
	    "$tmp/out" >>"$tmp/write"
	# Each round's ratio, its two reads next to each other in time: the
	# machine's load drifts less within a round than across runs.
	awk '$1 == "ro" {r = $3 - $2} $1 == "cow" {c = $3 - $2}
	    $1 != "write" && ++n % 2 == 0 {printf "%.3f\n", r / c}' \
	    "$tmp/out" >>"$tmp/ratio"
done
ro=$(cut -d' ' -f1 "$tmp/ro" | median)
cow=$(cut -d' ' -f1 "$tmp/cow" | median)
ros=$(cut -d' ' -f2 "$tmp/ro" | median %.2f)
cows=$(cut -d' ' -f2 "$tmp/cow" | median %.2f)
echo "read 200 MB through a share, median of $((runs * 3)) in $runs runs: ro $ro MB/s, cow $cow MB/s; cow / ro, median of the rounds' ratios: $(median %.2f <"$tmp/ratio") (goal >= 0.9)"
echo "read 500 files of 4 KB (one cat), median of $((runs * 3)) in $runs runs: ro $ros s, cow $cows s, ratio of speeds cow / ro $(awk -v a="$cows" -v b="$ros" 'BEGIN {printf "%.2f", (a > 0 ? b / a : 0)}')"
echo "write 100 MB through a cow share (to its upper disk, synced), median of $runs: $(median <"$tmp/write") MB/s"
