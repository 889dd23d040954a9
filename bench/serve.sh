#!/usr/bin/env bash
# "qsup serve": what the API costs, all measured in the same run.
#   exec round trip   POST .../exec of `true` in a running sandbox to the
#                     end of its stream, on one kept-alive connection
#                     (goal: median <= 20 ms under TCG)
#   streams           8 execs at once in one sandbox, each printing 50 MB
#                     (head -c of /dev/zero), read by 8 clients: MB/s of
#                     the commands' bytes, all together
#   files             PUT and GET of one 50 MB file: MB/s
#   API against run   create + exec `true` + delete through the API,
#                     against `qsup run -- true`, both warm
#   pause, resume     POST .../pause and .../resume of a ready sandbox,
#                     each to its answer (QMP stop and cont returned), and
#                     an exec of `true` right after the resume
#   snapshots         POST .../snapshots of a ready sandbox running a
#                     counter, to its answer, and the pause it cost the
#                     guest (its pause_ms; goal <= 50 ms); a sandbox
#                     created from it, to ready (goal <= 80 ms); fork of 1
#                     and of 8 to all ready (goal <= 100 ms per copy)
#   server RSS        of the qsup serve process, with 1 and 16 sandboxes
#                     (and the sandboxes' QEMUs, for scale)
#   pool create       a second server with serve_pool = {default = 1}: a
#                     create answered from the pool (resume, clock set),
#                     interleaved with a warm create of the same guest
#                     (its profile named, builtin:default, which has no
#                     pool), each to
#                     its 201 (goal for the pool: median <= 20 ms)
# Usage: bench/serve.sh [RUNS]   (default 21 round trips, 7 of the rest)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-21}
few=$(( runs / 3 > 3 ? runs / 3 : 3 ))
qsup=${QSUP:-$PWD/build/qsup}
tmp=$(mktemp -d /tmp/qsup-serve-bench.XXXXXX)
spid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=${QSUP_BENCH_CACHE:-$tmp/cache}
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
sock=$tmp/s.sock

"$qsup" serve --listen "unix:$sock" --token-file "$tmp/token" \
    --max-sandboxes 17 2>"$tmp/serve.log" &
spid=$!
for _ in $(seq 1 200); do
	[ -S "$sock" ] && break
	sleep 0.05
done
token=$(cat "$tmp/token")
api() {
	curl -sS --unix-socket "$sock" -H "Authorization: Bearer $token" "$@"
}
# The template first, so every start below is warm.
"$qsup" run -- true
api -d '{"name":"a"}' http://qsup/v1/sandboxes >/dev/null

echo "qsup serve ($(grep -c ^processor /proc/cpuinfo) CPUs; $(sed -n 's/.*\(tcg\|kvm\).*/\1/p' "$tmp/serve.log" | head -1))"

# Round trips on one connection, as a client library keeps it.
python3 - "$sock" "$token" "$runs" <<'EOF' >"$tmp/rt"
import socket, sys, time
sock, token, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = socket.socket(socket.AF_UNIX)
s.connect(sock)
body = b'{"argv":["true"]}'
req = (b"POST /v1/sandboxes/a/exec HTTP/1.1\r\nHost: q\r\nAuthorization: Bearer "
       + token.encode() + b"\r\nContent-Length: " + str(len(body)).encode()
       + b"\r\n\r\n" + body)
for i in range(n + 2):
    t0 = time.monotonic()
    s.sendall(req)
    buf = b""
    while not buf.endswith(b"\r\n0\r\n\r\n"):
        d = s.recv(65536)
        if not d:
            raise SystemExit("closed")
        buf += d
    if b"event: exit" not in buf:
        raise SystemExit("no exit event")
    if i >= 2:
        print("%.3f" % ((time.monotonic() - t0) * 1000))
EOF
rt=$(median %.1f <"$tmp/rt")
echo "  exec round trip of true: median $rt ms over $runs (goal <= 20 ms);" \
    "runs: $(sort -n "$tmp/rt" | tr '\n' ' ')"

# Pause and resume, each to its answer, then an exec right after.
for _ in $(seq 1 "$runs"); do
	api -o /dev/null -w '%{time_total}\n' -X POST \
	    http://qsup/v1/sandboxes/a/pause >>"$tmp/pause"
	api -o /dev/null -w '%{time_total}\n' -X POST \
	    http://qsup/v1/sandboxes/a/resume >>"$tmp/resume"
	api -N -o /dev/null -w '%{time_total}\n' -d '{"argv":["true"]}' \
	    http://qsup/v1/sandboxes/a/exec >>"$tmp/after"
done
ms() { awk '{print $1 * 1000}' "$1" | median %.1f; }
# range FILE (seconds, or - for stdin): its lowest-highest, in ms.
range() { awk '{print $1 * 1000}' "$1" | sort -n |
    awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.1f-%.1f", lo, hi}'; }
echo "  pause: median $(ms "$tmp/pause") ms; resume: median" \
    "$(ms "$tmp/resume") ms; exec true after it: median $(ms "$tmp/after") ms"

# Snapshots: save, restore to ready, fork of 1 and of 8.
api -o /dev/null -d '{"argv":["sh","-c","(while :; do sleep 0.2; done) </dev/null >/dev/null 2>&1 &"]}' \
    http://qsup/v1/sandboxes/a/exec
for i in $(seq 1 "$few"); do
	api -w ' %{time_total}\n' -d "{\"name\":\"bs$i\"}" \
	    http://qsup/v1/sandboxes/a/snapshots >"$tmp/snap.json"
	sed -n 's/.*"pause_ms":\([0-9.]*\).*} \([0-9.]*\)$/\1 \2/p' \
	    "$tmp/snap.json" >>"$tmp/save"
	sed -n 's/.*"size_bytes":\([0-9]*\).*/\1/p' "$tmp/snap.json" >>"$tmp/size"
	api -o /dev/null -w '%{time_total}\n' \
	    -d "{\"name\":\"br$i\",\"snapshot\":\"bs$i\"}" \
	    http://qsup/v1/sandboxes >>"$tmp/restore"
	api -o /dev/null -X DELETE "http://qsup/v1/sandboxes/br$i"
	api -o /dev/null -X DELETE "http://qsup/v1/snapshots/bs$i"
	api -o /dev/null -w '%{time_total}\n' -d '{"count":1}' \
	    http://qsup/v1/sandboxes/a/fork >>"$tmp/fork1"
	api -o /dev/null -X DELETE http://qsup/v1/sandboxes/a-f1
done
for i in $(seq 1 3); do
	api -o /dev/null -w '%{time_total}\n' -d '{"count":8}' \
	    http://qsup/v1/sandboxes/a/fork >>"$tmp/fork8"
	for j in $(seq 1 8); do
		api -o /dev/null -X DELETE "http://qsup/v1/sandboxes/a-f$j"
	done
done
echo "  snapshot save: median $(awk '{print $2 * 1000}' "$tmp/save" | median %.1f) ms" \
    "to its answer, the guest paused median $(awk '{print $1}' "$tmp/save" | median %.1f) ms" \
    "(goal <= 50 ms); ranges $(awk '{print $2}' "$tmp/save" | range -)" \
    "and $(awk '{print $1 / 1000}' "$tmp/save" | range -) ms"
echo "  snapshot on disk: median $(awk '{print $1 / 1048576}' "$tmp/size" | median %.1f) MB" \
    "(its own files; format 2 pins the template's RAM file beside them)"
echo "  restore from a snapshot to ready: median $(ms "$tmp/restore") ms (goal <= 80 ms);" \
    "range $(range "$tmp/restore") ms"
f8=$(ms "$tmp/fork8")
echo "  fork of 1: median $(ms "$tmp/fork1") ms; of 8: median $f8 ms," \
    "$(awk -v a="$f8" 'BEGIN {printf "%.1f", a / 8}') ms per copy (goal <= 100 ms per copy);" \
    "ranges $(range "$tmp/fork1") and $(range "$tmp/fork8") ms"

# 8 streams of 50 MB at once, in one sandbox.
mb=50
for r in $(seq 1 "$few"); do
	t0=$(now_ms)
	for i in $(seq 1 8); do
		api -N -o "$tmp/stream.$i" \
		    -d "{\"argv\":[\"dd\",\"if=/dev/zero\",\"bs=1M\",\"count=$mb\",\"status=none\"]}" \
		    http://qsup/v1/sandboxes/a/exec &
	done
	wait $(jobs -p | grep -v "^$spid\$") 2>/dev/null || true
	t1=$(now_ms)
	for i in $(seq 1 8); do
		grep -q '"status":0' "$tmp/stream.$i" ||
		    { echo "stream $i did not end well" >&2; exit 1; }
	done
	awk -v ms=$((t1 - t0)) -v mb=$mb 'BEGIN {printf "%.1f\n", 8 * mb * 1.048576 / (ms / 1000)}' >>"$tmp/streams"
	rm -f "$tmp"/stream.*
done
echo "  8 exec streams of $mb MB at once: median $(median %.1f <"$tmp/streams") MB/s" \
    "together; runs: $(tr '\n' ' ' <"$tmp/streams")"
# One stream alone, against qsup run of the same command (its boot
# and teardown taken out: its own --json timings' exec_s).
for r in $(seq 1 "$few"); do
	t0=$(now_ms)
	api -N -o /dev/null -d "{\"argv\":[\"dd\",\"if=/dev/zero\",\"bs=1M\",\"count=$mb\",\"status=none\"]}" \
	    http://qsup/v1/sandboxes/a/exec
	t1=$(now_ms)
	awk -v ms=$((t1 - t0)) -v mb=$mb 'BEGIN {printf "%.1f\n", mb * 1.048576 / (ms / 1000)}' >>"$tmp/stream1"
	"$qsup" run --json -- dd if=/dev/zero bs=1M count=$mb status=none \
	    2>"$tmp/run.json" >/dev/null
	s=$(tail -n 1 "$tmp/run.json" | sed -n 's/.*"exec_s":\([0-9.]*\).*/\1/p')
	awk -v s="$s" -v mb=$mb 'BEGIN {printf "%.1f\n", mb * 1.048576 / s}' >>"$tmp/run1"
done
a=$(median %.1f <"$tmp/stream1")
b=$(median %.1f <"$tmp/run1")
echo "  1 exec stream of $mb MB: median $a MB/s; the same under qsup run:" \
    "$b MB/s; ratio $(awk -v a="$a" -v b="$b" 'BEGIN {printf "%.2f", a / b}')"

# Files both ways.
head -c $((mb * 1048576)) /dev/urandom >"$tmp/file"
for r in $(seq 1 "$few"); do
	t0=$(now_ms)
	api -o /dev/null -T "$tmp/file" "http://qsup/v1/sandboxes/a/files?path=/tmp/f"
	t1=$(now_ms)
	api -o "$tmp/back" "http://qsup/v1/sandboxes/a/files?path=/tmp/f"
	t2=$(now_ms)
	cmp -s "$tmp/file" "$tmp/back" || { echo "file differs" >&2; exit 1; }
	awk -v ms=$((t1 - t0)) -v mb=$mb 'BEGIN {printf "%.1f\n", mb * 1.048576 / (ms / 1000)}' >>"$tmp/put"
	awk -v ms=$((t2 - t1)) -v mb=$mb 'BEGIN {printf "%.1f\n", mb * 1.048576 / (ms / 1000)}' >>"$tmp/get"
done
rm -f "$tmp/file" "$tmp/back"
echo "  files of $mb MB: PUT median $(median %.1f <"$tmp/put") MB/s," \
    "GET median $(median %.1f <"$tmp/get") MB/s"

# The API's whole cycle against qsup run, interleaved.
for r in $(seq 1 "$few"); do
	t0=$(now_ms)
	api -o /dev/null -d '{"name":"c"}' http://qsup/v1/sandboxes
	api -N -o /dev/null -d '{"argv":["true"]}' http://qsup/v1/sandboxes/c/exec
	api -o /dev/null -X DELETE http://qsup/v1/sandboxes/c
	t1=$(now_ms)
	"$qsup" run -- true
	t2=$(now_ms)
	echo $((t1 - t0)) >>"$tmp/cycle"
	echo $((t2 - t1)) >>"$tmp/run_ms"
done
c=$(median %d <"$tmp/cycle")
r=$(median %d <"$tmp/run_ms")
echo "  create + exec true + delete: median $c ms; qsup run -- true:" \
    "median $r ms; ratio $(awk -v a="$c" -v b="$r" 'BEGIN {printf "%.2f", a / b}')"

# The server's own memory, with 1 and with 16 sandboxes.
rss() { awk '/VmRSS/ {print $2}' "/proc/$spid/status"; }
qemus() {
	local p t=0
	for p in $(pgrep -f "qemu-system.*$XDG_RUNTIME_DIR/qsup/sb-"); do
		t=$((t + $(awk '/VmRSS/ {print $2}' "/proc/$p/status")))
	done
	echo $t
}
r1=$(rss)
q1=$(qemus)
for i in $(seq 2 16); do
	api -o /dev/null -d "{\"name\":\"n$i\"}" http://qsup/v1/sandboxes
done
n=$(api http://qsup/v1/sandboxes | grep -o '"state":"ready"' | wc -l)
r16=$(rss)
q16=$(qemus)
echo "  server RSS: $r1 kB with 1 sandbox, $r16 kB with $n" \
    "(their QEMUs: $q1 kB, $q16 kB)"
kill -TERM "$spid"
t0=$(now_ms)
wait "$spid"
spid=
echo "  SIGTERM with $n sandboxes: stopped in $(( $(now_ms) - t0 )) ms"

# The warm pool: a server keeping one sandbox ready, creates from it
# against warm creates of the same guest under a profile name that has no
# pool, interleaved.
"$qsup" serve --listen "unix:$sock" --token-file "$tmp/token" \
    --set 'serve_pool={default=1}' 2>"$tmp/serve2.log" &
spid=$!
for _ in $(seq 1 200); do
	api -o /dev/null http://qsup/v1/healthz 2>/dev/null && break
	sleep 0.05
done
pooled() {
	local i
	for i in $(seq 1 600); do
		api http://qsup/metrics | grep -q \
		    '^qsup_pool_sandboxes{profile="default",state="paused"} 1$' &&
		    return 0
		sleep 0.1
	done
	echo "the pool did not fill" >&2
	exit 1
}
for r in $(seq 1 "$runs"); do
	pooled
	api -o "$tmp/p.json" -w '%{time_total}\n' -d '{"name":"p"}' \
	    http://qsup/v1/sandboxes >>"$tmp/pool"
	grep -q '"start":"pool"' "$tmp/p.json" ||
	    { echo "not from the pool: $(cat "$tmp/p.json")" >&2; exit 1; }
	api -o /dev/null -X DELETE http://qsup/v1/sandboxes/p
	pooled
	api -o "$tmp/w.json" -w '%{time_total}\n' \
	    -d '{"name":"w","profile":"builtin:default"}' \
	    http://qsup/v1/sandboxes >>"$tmp/warm"
	grep -q '"start":"warm"' "$tmp/w.json" ||
	    { echo "not warm: $(cat "$tmp/w.json")" >&2; exit 1; }
	api -o /dev/null -X DELETE http://qsup/v1/sandboxes/w
done
echo "  create from the pool: median $(ms "$tmp/pool") ms (goal <= 20 ms);" \
    "a warm create beside it: median $(ms "$tmp/warm") ms"
kill -TERM "$spid"
wait "$spid"
spid=
