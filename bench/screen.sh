#!/usr/bin/env bash
# A sandbox's screen (display = "vnc"), measured in one run:
#   boot to ready, cold (warm_start off) and warm (restored from a
#   template), with and without a display, interleaved: the display's
#   cost is its devices and the modules the agent loads (qsup.display=1);
#   QEMU's RSS with and without;
#   qsup serve's GET .../screenshot of a 1024x768 screen, full and
#   ?scale=0.5, and a POST .../input of one click, each to its answer.
# Usage: bench/screen.sh [RUNS]   (default 7)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-7}
qsup=${QSUP:-$PWD/build/qsup}
tmp=$(mktemp -d /tmp/qsup-screen-bench.XXXXXX)
spid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$XDG_RUNTIME_DIR"

field() { tail -n 1 "$2" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
ms() { median | awk '{printf "%d ms", $1 * 1000}'; }

# one KIND DISPLAY: qsup run -- true, its boot_s and QEMU's RSS kept.
one() {
	local set=(--set "display=$2")
	[ "$1" = cold ] && set+=(--set warm_start=false)
	"$qsup" run --json "${set[@]}" -- true >"$tmp/json" 2>&1
	field boot_s "$tmp/json" >>"$tmp/$1-$2.boot"
	field qemu_rss_kb "$tmp/json" >>"$tmp/$1-$2.rss"
}

# The templates first, so that warm runs restore.
one warm none
one warm vnc
for i in $(seq 1 "$runs"); do
	for d in none vnc; do
		one cold "$d"
		one warm "$d"
	done
done
printf '%-34s %10s %10s\n' "" "none" "vnc"
for k in cold warm; do
	printf '%-34s %10s %10s\n' "boot to ready, $k (median of $runs)" \
	    "$(tail -n "$runs" "$tmp/$k-none.boot" | ms)" \
	    "$(tail -n "$runs" "$tmp/$k-vnc.boot" | ms)"
done
printf '%-34s %10s %10s\n' "QEMU RSS, cold (median)" \
    "$(median '%d' <"$tmp/cold-none.rss") kB" "$(median '%d' <"$tmp/cold-vnc.rss") kB"

sock=$tmp/s.sock
"$qsup" serve --listen "unix:$sock" --token-file "$tmp/token" \
    >"$tmp/serve.log" 2>&1 &
spid=$!
for i in $(seq 1 100); do
	curl -sf --unix-socket "$sock" http://qsup/v1/healthz >/dev/null 2>&1 && break
	sleep 0.1
done
auth="Authorization: Bearer $(cat "$tmp/token")"
curl -sS --unix-socket "$sock" -H "$auth" -o /dev/null \
    -d '{"name":"d","settings":{"display":"vnc"}}' http://qsup/v1/sandboxes
# time WHAT CURL-ARGS...: the median of runs calls' total time.
time_call() {
	local what=$1 i
	shift
	for i in $(seq 1 "$runs"); do
		curl -sS --unix-socket "$sock" -H "$auth" -o /dev/null \
		    -w '%{time_total}\n' "$@"
	done | median '%.4f' | awk -v w="$what" '{printf "%-34s %10.1f ms\n", w, $1 * 1000}'
}
time_call "screenshot 1024x768 (median)" http://qsup/v1/sandboxes/d/screenshot
time_call "screenshot ?scale=0.5 (median)" "http://qsup/v1/sandboxes/d/screenshot?scale=0.5"
time_call "input: one click (median)" \
    -d '{"events":[{"type":"click","x":5,"y":5}]}' http://qsup/v1/sandboxes/d/input
curl -sS --unix-socket "$sock" -H "$auth" -o /dev/null -X DELETE \
    http://qsup/v1/sandboxes/d
