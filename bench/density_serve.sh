#!/usr/bin/env bash
# Density through the API: one `qsup serve` on a unix socket, N creates
# sent at once (N curl processes, each POST /v1/sandboxes waiting for its
# sandbox to be ready: 201), all restored from one template (made first,
# by a `qsup run` of its own). Checks that every create answered 201 and
# that the server lists N sandboxes ready, and prints: the wall time
# until all N were ready (the last 201), the QEMUs' memory with all N
# running (RSS, and PSS from smaps_rollup: each's share of the pages it
# shares, so that they add up), the server's own RSS and PSS and its open
# descriptors, with none and with N sandboxes, MemAvailable before and
# with all N, and the time SIGTERM takes to stop the server and its N.
# Usage: bench/density_serve.sh [N]   (default 64)
# The server runs with --max-sandboxes N and --max-memory N x the guest's
# 512 MiB: its defaults (16 sandboxes; three quarters of the host's RAM
# counted at each guest's whole memory) would refuse the rest.
# QSUP_DENSITY_SET="NAME=VALUE ...": --set for the server (every create's
# profile), as for bench/density.sh.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
n=${1:-64}
qsup=${QSUP:-$PWD/build/qsup}	# QSUP=path: another build
tmp=$(mktemp -d /tmp/qsup-density-serve.XXXXXX)
spid= pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" || true
	rm -rf "$tmp"
}
trap cleanup EXIT

export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"
sock=$tmp/s.sock
sets=()
for kv in ${QSUP_DENSITY_SET:-}; do sets+=(--set "$kv"); done

mem_available() { awk '/^MemAvailable:/ {print $2}' /proc/meminfo; }
# kB of a process: rss PID, pss PID.
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
pss() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
nfd() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
qemus() { pgrep -f "qsup:$XDG_RUNTIME_DIR/" || true; }

"$qsup" run "${sets[@]}" -- true >/dev/null 2>&1 ||
    { echo "density_serve: qsup run failed" >&2; exit 1; }
"$qsup" serve --listen "unix:$sock" --token-file "$tmp/token" "${sets[@]}" \
    --max-sandboxes "$n" --max-memory "$((n * 512))M" 2>"$tmp/serve.log" &
spid=$!
for _ in $(seq 1 200); do
	[ -S "$sock" ] && break
	sleep 0.05
done
[ -S "$sock" ] || { echo "density_serve: the server did not listen:" \
    "$(tail -n 3 "$tmp/serve.log")" >&2; exit 1; }
token=$(cat "$tmp/token")
api() {
	curl -sS --unix-socket "$sock" -H "Authorization: Bearer $token" "$@"
}

# One create: its status and the time its answer came, in ms.
one() {
	local i=$1 code
	code=$(api -o "$tmp/body.$i" -w '%{http_code}' --max-time 600 \
	    -d "{\"name\":\"d$i\"}" http://qsup/v1/sandboxes 2>"$tmp/err.$i") ||
	    true
	echo "${code:-000} $(now_ms)" >"$tmp/res.$i"
}

r0=$(rss "$spid") p0=$(pss "$spid") f0=$(nfd "$spid")
mem0=$(mem_available)
t0=$(now_ms)
for i in $(seq 1 "$n"); do
	one "$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
t_all=$(now_ms)

failed=0
: >"$tmp/ready"
for i in $(seq 1 "$n"); do
	read -r code t <"$tmp/res.$i"
	if [ "$code" != 201 ]; then
		failed=$((failed + 1))
		echo "create $i: $code: $(head -c 300 "$tmp/body.$i" 2>/dev/null)" \
		    "$(cat "$tmp/err.$i")" >&2
		continue
	fi
	echo $((t - t0)) >>"$tmp/ready"
done
listed=$(api http://qsup/v1/sandboxes | grep -o '"state":"ready"' | wc -l)
mem1=$(mem_available)
r1=$(rss "$spid") p1=$(pss "$spid") f1=$(nfd "$spid")
: >"$tmp/qpss"
qrss=0 nq=0
for q in $(qemus); do
	pss "$q" >>"$tmp/qpss"
	qrss=$((qrss + $(rss "$q"))) nq=$((nq + 1))
done
qpss=$(awk '{s += $1} END {print s + 0}' "$tmp/qpss")
each() { echo $(($1 / (nq > 0 ? nq : 1) / 1024)); }

echo "density through qsup serve: $n creates at once (unix socket, each waiting for ready)"
echo "  201 and ready: $((n - failed)) of $n$( [ "$failed" -gt 0 ] && echo "   ($failed FAILED, above)"); listed ready: $listed"
echo "  wall time until all were ready: $(sort -n "$tmp/ready" | tail -n 1) ms   (median create $(median %d <"$tmp/ready") ms, first $(sort -n "$tmp/ready" | head -n 1) ms)"
echo "  QEMU with all running ($nq processes): RSS $((qrss / 1024)) MiB in all, $(each "$qrss") MiB each; PSS $((qpss / 1024)) MiB in all, $(each "$qpss") MiB each (min $(sort -n "$tmp/qpss" | head -n 1 | awk '{printf "%d", $1 / 1024}'), median $(median %d <"$tmp/qpss" | awk '{printf "%d", $1 / 1024}'), max $(sort -n "$tmp/qpss" | tail -n 1 | awk '{printf "%d", $1 / 1024}') MiB)"
echo "  qsup serve itself: RSS $r0 kB with none, $r1 kB with $listed; PSS $p0 kB, $p1 kB; open descriptors $f0, $f1"
echo "  MemAvailable: $((mem0 / 1024)) MiB before, $((mem1 / 1024)) MiB with all running ($(((mem0 - mem1) / 1024)) MiB used, $(each $((mem0 - mem1))) MiB for each QEMU)"
t0=$(now_ms)
kill -TERM "$spid"
wait "$spid" || true
spid=
left=$(qemus | wc -l)
echo "  SIGTERM with $listed sandboxes: stopped in $(($(now_ms) - t0)) ms; QEMUs left: $left"
[ "$failed" -eq 0 ] && [ "$listed" -eq "$n" ] && [ "$left" -eq 0 ]
