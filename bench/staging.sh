#!/usr/bin/env bash
# Staging speed: files/s and MB/s for each way of staging a tree, medians
# of 3 runs, plus the time to remove the copy.
#   link   hard links, dst on the source's file system (read-only shares)
#   copy   dst on the source's file system: reflink, else copy_file_range
#   plain  read/write only (STAGING_NOCLONE), same file system
#   tmpfs  dst on tmpfs (/dev/shm), as for a run dir on tmpfs in a container
#   reflink  only with QSUP_BENCH_REFLINK_DIR, a directory on XFS or Btrfs:
#          the tree is first copied there, then staged within it
# Trees: /usr/lib/python3.11 (or the given ones) and a generated tree of
# 10,000 files. The page cache is warm: staging runs right after the tree
# was read, as it does in qsup.
# Usage: bench/staging.sh [TREE...]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=3
bin=build/staging_bench
mkdir -p build
cc -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Icore/wire -Icore/base -Istaging \
    bench/staging_bench.c staging/*.c core/base/util.c core/base/log.c \
    core/base/outq.c -lev -lmbedcrypto -o "$bin"

tmp=$(mktemp -d /tmp/qsup-staging-bench.XXXXXX)
shm=
trap 'rm -rf "$tmp" ${shm:+"$shm"} ${rdir:+"$rdir"}' EXIT

# 10,000 files in 100 directories, 1 to 16 KiB each (about 80 MB).
gen=$tmp/tree-10k
mkdir -p "$gen"
for d in $(seq -w 0 99); do
	mkdir "$gen/d$d"
	for f in $(seq -w 0 99); do
		head -c $(( (10#$d * 100 + 10#$f) * 7919 % 16384 + 1024 )) \
		    /dev/urandom >"$gen/d$d/f$f"
	done
done

trees=("$@")
if [ ${#trees[@]} -eq 0 ]; then
	[ -d /usr/lib/python3.11 ] && trees+=(/usr/lib/python3.11)
	trees+=("$gen")
fi

field() { sed -n "s/.*\<$1=\([0-9.]*\).*/\1/p"; }
fstype() { stat -f -c %T "$1"; }

# One mode: stage src into dst runs times; print the medians.
bench() {
	local label=$1 mode=$2 src=$3 dst=$4 i out secs=() rms=() files bytes
	for i in $(seq "$runs"); do
		sync
		out=$("$bin" "$mode" "$src" "$dst")
		secs+=("$(echo "$out" | field seconds)")
		files=$(echo "$out" | field files)
		bytes=$(echo "$out" | field bytes)
		how=$(echo "$out" | sed 's/.*\(linked=[0-9]* reflinked=[0-9]* copied=[0-9]*\).*/\1/')
		rms+=("$("$bin" rm "$dst" | field seconds)")
	done
	local s r
	s=$(printf '%s\n' "${secs[@]}" | median)
	r=$(printf '%s\n' "${rms[@]}" | median)
	awk -v l="$label" -v s="$s" -v r="$r" -v f="$files" -v b="$bytes" \
	    -v h="$how" 'BEGIN {
		printf "  %-7s %8.1f ms %10.0f files/s %8.0f MB/s   rm %6.1f ms   (%s)\n",
		    l, s * 1000, f / s, b / s / 1e6, r * 1000, h }'
}

rdir=
for t in "${trees[@]}"; do
	tar cf - -C "$t" . >/dev/null 2>&1 || true	# warm the page cache
	echo "$t ($(fstype "$t")), staged with the default skip list:"
	out=$("$bin" copy "$t" "$tmp/probe")
	"$bin" rm "$tmp/probe" >/dev/null
	echo "  $(echo "$out" | field files) files, $(echo "$out" | field bytes) bytes, $(echo "$out" | field skipped) names skipped; run dir $tmp ($(fstype "$tmp"))"
	bench link link "$t" "$tmp/stage"
	bench copy copy "$t" "$tmp/stage"
	bench plain plain "$t" "$tmp/stage"
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then
		shm=$(mktemp -d /dev/shm/qsup-staging-bench.XXXXXX)
		bench tmpfs copy "$t" "$shm/stage"
		rm -rf "$shm"
		shm=
	fi
	if [ -n "${QSUP_BENCH_REFLINK_DIR:-}" ]; then
		rdir=$(mktemp -d "$QSUP_BENCH_REFLINK_DIR/qsup-staging-bench.XXXXXX")
		"$bin" plain "$t" "$rdir/src" >/dev/null
		sync
		bench reflink copy "$rdir/src" "$rdir/stage"
		rm -rf "$rdir"
		rdir=
	fi
done
