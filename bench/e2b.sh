#!/usr/bin/env bash
# E2B's SDK against "qsup serve --e2b" (docs/e2b.md), beside qsup's own API
# on the same server in the same run: what the front end adds.
#   create   Sandbox.create('base') against POST /v1/sandboxes, to ready
#            (warm: the template is built by a first create, not timed; the
#            SDK's second create in its process: the first, shown apart,
#            also starts node's HTTP client)
#   cmd      commands.run('true') against POST .../exec of `sh -l -c true`
#            to the end of its stream (the SDK asks for `bash -l -c`, which
#            the default guest runs with busybox's sh; median of ROUNDS each)
#   write    files.write of 5 bytes against PUT .../files
#   kill     Sandbox.kill against DELETE /v1/sandboxes/NAME
# The SDK comes from tests/integration/e2b_test.sh's install (build/e2b-sdk):
# without it, or without node, this says so and stops.
# Usage: bench/e2b.sh [RUNS] [ROUNDS]   (default 5 creates, 11 commands each)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
runs=${1:-5}
rounds=${2:-11}
sdk=$PWD/build/e2b-sdk
if ! command -v node >/dev/null || [ ! -d "$sdk/node_modules/e2b" ]; then
	echo "bench/e2b.sh: skipped: needs node and the e2b SDK in $sdk (bash tests/integration/e2b_test.sh installs it)"
	exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/qsup-e2b-bench.XXXXXX")
pid=
cleanup() {
	[ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT
cp bench/e2b.mjs "$sdk/"
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=${XDG_CACHE_HOME:-$HOME/.cache}
mkdir -m 700 -p "$XDG_RUNTIME_DIR"
build/qsup serve --e2b --listen "unix:$tmp/s.sock" --listen tcp:127.0.0.1:0 \
    --token-file "$tmp/token" >"$tmp/log" 2>&1 &
pid=$!
for _ in $(seq 200); do
	port=$(sed -n 's/.*listening on tcp:127\.0\.0\.1:\([0-9]*\).*/\1/p' "$tmp/log" | head -1)
	[ -n "$port" ] && [ -s "$tmp/token" ] && break
	sleep 0.05
done
[ -n "$port" ] || { echo "bench/e2b.sh: the server did not come up: $(cat "$tmp/log")" >&2; exit 1; }
tok=$(cat "$tmp/token")
api() {
	curl -sS --unix-socket "$tmp/s.sock" -H "Authorization: Bearer $tok" \
	    -o /dev/null -w '%{time_total}\n' "$@"
}
sdk() {
	(cd "$sdk" && E2B_API_KEY=$tok E2B_API_URL=http://127.0.0.1:$port \
	    E2B_SANDBOX_URL=http://127.0.0.1:$port node e2b.mjs "$rounds")
}
api -X POST http://q/v1/sandboxes -d '{"name":"w"}' >/dev/null	# the template
api -X DELETE http://q/v1/sandboxes/w >/dev/null
for i in $(seq 1 "$runs"); do
	sdk >>"$tmp/sdk"
	api -X POST http://q/v1/sandboxes -d "{\"name\":\"b$i\"}" >>"$tmp/create"
	for _ in $(seq 1 "$rounds"); do
		api -X POST "http://q/v1/sandboxes/b$i/exec" -d '{"argv":["sh","-l","-c","true"]}' >>"$tmp/cmd.$i"
	done
	sort -n "$tmp/cmd.$i" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }' >>"$tmp/cmd"
	printf hello | api -X PUT --data-binary @- "http://q/v1/sandboxes/b$i/files?path=/tmp/b.txt" >>"$tmp/write"
	api -X DELETE "http://q/v1/sandboxes/b$i" >>"$tmp/kill"
done
med() { sort -n | awk '{ v[NR] = $1 } END { printf "%.1f", v[int((NR + 1) / 2)] }'; }
s=$(python3 -c 'import json,sys; [print(json.loads(l)["first"]) for l in open(sys.argv[1])]' "$tmp/sdk" | med)
echo "e2b first create of a node process: SDK $s ms (its HTTP client starting up)"
for k in create cmd write kill; do
	s=$(python3 -c 'import json,sys; [print(json.loads(l)[sys.argv[1].replace("cmd", "run")]) for l in open(sys.argv[2])]' "$k" "$tmp/sdk" | med)
	q=$(awk '{ print $1 * 1000 }' "$tmp/$k" | med)
	echo "e2b $k: SDK $s ms, qsup's API $q ms (medians of $runs)"
done
