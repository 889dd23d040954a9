#!/usr/bin/env bash
# Soak "qsup serve" on loopback (a unix socket), bounded in time: clients
# create, exec (stdin, a terminal, 2 MB of output), copy files and delete
# sandboxes while a fault loop kills QEMUs and clients mid-exec and slow
# clients hold connections with heads sent a byte a second (bench/soak.py
# says what counts as a failure). At the end: nothing unanswered, no QEMU,
# run directory, fd or memory growth left; the server's fds and RSS
# before and after, operations, refusals and failures by kind, p50/p99
# latencies. (Snapshots are not in the server yet, so not soaked.)
# Usage: bench/soak.sh [SECONDS] [CLIENTS] [SLOW]   (default 300, 3, 8)
# QSUP=PATH soaks another build (build/asan/qsup, say).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
secs=${1:-300}
clients=${2:-3}
slow=${3:-8}
qsup=${QSUP:-$PWD/build/qsup}
tmp=$(mktemp -d /tmp/qsup-soak.XXXXXX)
spid=
cleanup() {
	[ -z "$spid" ] || kill -KILL "$spid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=${QSUP_BENCH_CACHE:-$tmp/cache}
mkdir -p "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
sock=$tmp/s.sock
"$qsup" serve --listen "unix:$sock" --token-file "$tmp/token" \
    --max-sandboxes $((clients + 4)) 2>"$tmp/serve.log" &
spid=$!
for _ in $(seq 1 200); do
	[ -S "$sock" ] && [ -s "$tmp/token" ] && break
	sleep 0.05
done
rc=0
python3 bench/soak.py --sock "$sock" --token-file "$tmp/token" \
    --serve-pid "$spid" --run-dir "$XDG_RUNTIME_DIR" --seconds "$secs" \
    --clients "$clients" --slow "$slow" --faults || rc=1
kill -TERM "$spid"
src=0
wait "$spid" || src=$?
spid=
[ $rc = 0 ] || { echo "soak: the server's last lines:"; tail -n 30 "$tmp/serve.log"; }
if [ "$src" != 0 ]; then
	echo "soak: qsup serve exited $src after SIGTERM; its last lines:"
	tail -n 20 "$tmp/serve.log"
	rc=1
fi
if [ -d "$XDG_RUNTIME_DIR/qsup" ] &&
    left=$(ls -A "$XDG_RUNTIME_DIR/qsup" | grep -vx gate) && [ -n "$left" ]; then
	echo "soak: left in the run directory after the server stopped: $left"
	rc=1
fi
exit $rc
