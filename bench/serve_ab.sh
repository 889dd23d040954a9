#!/usr/bin/env bash
# Two builds of qsup (or one with two sets of serve flags) side by side:
# a fork of 1, a restore of a named snapshot and a fork of 8, each to its
# answer, on
# one server per side, interleaved round by round so the host's load
# falls on both alike. For a change to the snapshot path: the build
# before it against the build after; for a flag: without it and with it.
#   bench/serve_ab.sh ROUNDS QSUP_A QSUP_B
#   bench/serve_ab.sh ROUNDS build/qsup "build/qsup --spares 8"
# Each side is a qsup binary and, after a space, flags for its serve.
# Prints each round, then the medians per side (the fork of 1's own
# "seconds", curl's time_total for the restore's and the fork of 8's 201).
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: bench/serve_ab.sh ROUNDS QSUP..." >&2; exit 2; }
N=$1
shift
WORK=$(mktemp -d "${TMPDIR:-/tmp}/qsup-ab.XXXXXX")
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

api() {
	local d=$1
	shift
	curl -s --unix-socket "$d/s.sock" -H "Authorization: Bearer $(cat "$d/tok")" "$@"
}

k=0
for q in "$@"; do
	d=$WORK/$k
	mkdir -p "$d"
	read -r -a side <<<"$q"
	XDG_RUNTIME_DIR=$d "${side[0]}" serve "${side[@]:1}" \
	    --listen "unix:$d/s.sock" --token-file "$d/tok" >"$d/log" 2>&1 &
	PIDS+=($!)
	k=$((k + 1))
done
for d in "$WORK"/*/; do
	d=${d%/}
	for _ in $(seq 100); do
		[ -S "$d/s.sock" ] && [ -s "$d/tok" ] && break
		sleep 0.1
	done
	api "$d" -X POST localhost/v1/sandboxes -d '{"name":"a"}' >/dev/null
	api "$d" -X POST localhost/v1/sandboxes/a/exec -d '{"argv":["true"]}' >/dev/null
	api "$d" -X POST localhost/v1/sandboxes/a/snapshots -d '{"name":"ab"}' >/dev/null
done

for r in $(seq "$N"); do
	k=0
	for q in "$@"; do
		d=$WORK/$k
		f=$(api "$d" -X POST localhost/v1/sandboxes/a/fork -d '{"count":1}' |
		    sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p')
		api "$d" -X DELETE "localhost/v1/sandboxes/a-f$r" >/dev/null
		t=$(api "$d" -o /dev/null -w '%{time_total}' -X POST \
		    localhost/v1/sandboxes -d "{\"name\":\"r$r\",\"snapshot\":\"ab\"}")
		api "$d" -X DELETE "localhost/v1/sandboxes/r$r" >/dev/null
		e=$(api "$d" -o /dev/null -w '%{time_total}' -X POST \
		    localhost/v1/sandboxes/a/fork -d '{"count":8}')
		for j in $(seq 8); do
			api "$d" -X DELETE "localhost/v1/sandboxes/a-f$j" >/dev/null
		done
		echo "$k fork ${f:-?} restore $t fork8 $e" | tee -a "$WORK/rounds"
		k=$((k + 1))
	done
done

median() {
	sort -n | awk '{ v[NR] = $1 } END { if (NR) printf "%.1f", v[int((NR + 1) / 2)] * 1000 }'
}
k=0
for q in "$@"; do
	f8=$(awk -v k=$k '$1 == k { print $7 }' "$WORK/rounds" | median)
	echo "$q: fork of 1 $(awk -v k=$k '$1 == k { print $3 }' "$WORK/rounds" | median) ms," \
	    "restore $(awk -v k=$k '$1 == k { print $5 }' "$WORK/rounds" | median) ms," \
	    "fork of 8 $f8 ms ($(awk -v a="$f8" 'BEGIN {printf "%.1f", a / 8}') ms a copy) (medians of $N)"
	api "$WORK/$k" -X DELETE localhost/v1/snapshots/ab >/dev/null || true
	k=$((k + 1))
done
