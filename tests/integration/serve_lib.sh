# The helpers of the serve suites that drive one server of their own
# with curl (serve_state_test.sh, serve_snap_test.sh), after lib.sh:
# a server per test with its events recorded, API calls timed, sandboxes
# made ready, execs run to their end, states waited for, and a guest
# counter kept in memory to prove a sandbox's continuity.
SSE="python3 $PWD/tests/integration/helpers/sse.py"

# serve_start [ARGS...]: a server of this test's own, its events in
# $S/events (curl's pid in EPID).
serve_start() {
	S=$T_TMP/${FUNCNAME[1]}
	mkdir -p "$S"
	SOCK=$S/s.sock
	serve_launch "$SOCK" "$S/token" "$S/serve.log" "$@" ||
	    fail "the server did not come up: $(cat "$S/serve.log")"
	TOKEN=$(cat "$S/token" 2>/dev/null)
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    http://qsup/v1/events >"$S/events" &
	EPID=$!
}

serve_stop() {
	kill "$EPID" 2>/dev/null
	wait "$EPID" 2>/dev/null
	kill -TERM "$SERVE_PID" 2>/dev/null
	local rc=0
	wait "$SERVE_PID" || rc=$?
	expect_eq "serve's exit status after SIGTERM" 0 "$rc"
}

# api METHOD PATH [CURL ARGS...]: $CODE, $BODY, and $SECS the call took.
api() {
	local m=$1 p=$2 out
	shift 2
	out=$(curl -sS --unix-socket "$SOCK" -o "$S/body" \
	    -w '%{http_code} %{time_total}' -X "$m" \
	    -H "Authorization: Bearer $TOKEN" "$@" "http://qsup$p")
	CODE=${out% *}
	SECS=${out#* }
	BODY=$(cat "$S/body")
}

# create NAME [JSON MEMBERS]: a ready sandbox.
create() {
	api POST /v1/sandboxes -d "{\"name\":\"$1\"${2:+,$2}}"
	expect_eq "create $1" 201 "$CODE"
	expect_match "create $1: ready" '"state":"ready"' "$BODY"
}

# run_exec NAME JSON: its stdout in $OUT, its exit in $EXIT.
run_exec() {
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d "$2" "http://qsup/v1/sandboxes/$1/exec" >"$S/stream"
	EXIT=$($SSE "$S/stream" --out "$S/out" --err "$S/err")
	OUT=$(cat "$S/out")
}

# metric NAME: its value in the server's /metrics.
metric() {
	curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    http://qsup/metrics | awk -v m="$1" 'index($0, m " ") == 1 {print $NF; exit}'
}

# state NAME: its state now, or "gone".
state() {
	api GET "/v1/sandboxes/$1"
	if [ "$CODE" = 404 ]; then
		echo gone
	else
		sed -n 's/.*"state":"\([a-z]*\)".*/\1/p' <<<"$BODY"
	fi
}

# wait_state NAME STATE SECONDS: 0 once it is in STATE, 1 if not in time.
wait_state() {
	local i
	for i in $(seq 1 $(($3 * 10))); do
		[ "$(state "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# cpu_ticks PID: QEMU's utime+stime so far, in clock ticks.
cpu_ticks() {
	awk '{print $14 + $15}' "/proc/$1/stat"
}

# The guest's counter: a shell variable bumped every 0.2 s, written to
# /tmp/n on SIGUSR1, so it is read from memory, not from a file it keeps.
COUNTER='setsid sh -c '\''n=0; trap "echo \$n >/tmp/n" USR1; echo $$ >/tmp/pid; while :; do n=$((n+1)); sleep 0.2; done'\'' </dev/null >/dev/null 2>&1 &'
ASK='rm -f /tmp/n; kill -USR1 $(cat /tmp/pid); while [ ! -s /tmp/n ]; do sleep 0.05; done; cat /tmp/n'

# ask NAME: the counter of NAME's guest, now, in $N.
ask() {
	run_exec "$1" "{\"argv\":[\"sh\",\"-c\",$(jq -Rn --arg c "$ASK" '$c')]}"
	N=$OUT
	[ -n "$N" ] && [ "$N" -gt 0 ] 2>/dev/null ||
	    fail "$1: no counter: $OUT $EXIT $(cat "$S/err")"
}

# busybox_disk IMG: a 64 MiB ext4 disk image at IMG holding a static
# busybox and its links, made without root (mke2fs -d); 1, failed, if not.
busybox_disk() {
	local tree=$T_TMP/disk/tree c
	mkdir -p "$tree"/{bin,etc,tmp,proc,sys,dev,run,root}
	cp "$PWD/build/guest/cache/busybox/bin/busybox" "$tree/bin/" ||
	    { fail "no busybox in build/guest/cache"; return 1; }
	for c in sh cat echo sleep kill sync; do
		ln -sf busybox "$tree/bin/$c"
	done
	truncate -s 64M "$1"
	PATH=$PATH:/sbin:/usr/sbin mke2fs -q -F -t ext4 -d "$tree" "$1" ||
	    { fail "mke2fs"; return 1; }
}

# counting NAME: a counter and a file in NAME's guest.
counting() {
	run_exec "$1" "{\"argv\":[\"sh\",\"-c\",$(jq -Rn --arg c "$COUNTER echo kept >/tmp/keep" '$c')]}"
	expect_eq "$1: the counter started" '{"status":0,"signal":null,"timed_out":false,"error":null}' "$EXIT"
	sleep 1
}
