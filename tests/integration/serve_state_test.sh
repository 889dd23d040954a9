#!/usr/bin/env bash
# "qsup serve"'s sandboxes that keep state: pause and resume (a guest
# process's in-memory counter stands still while paused and goes on after,
# its files stay, QEMU takes no CPU), and the time limits ttl and idle_ttl
# ending in a delete or a pause, changed with PATCH, seen as events.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

test_pause_resume() {
	local qpid t0 t1 run n1 n2 n3
	serve_start
	create a
	run_exec a "{\"argv\":[\"sh\",\"-c\",$(jq -Rn --arg c "$COUNTER echo kept >/tmp/keep" '$c')]}"
	expect_eq "the counter started" '{"status":0,"signal":null,"timed_out":false,"error":null}' "$EXIT"
	qpid=$(pgrep -f "qemu-system.*$T_RUN/qsup/sb-" | head -1)
	t0=$(cpu_ticks "$qpid")
	sleep 1
	run=$(($(cpu_ticks "$qpid") - t0))
	sleep 0.5
	run_exec a "{\"argv\":[\"sh\",\"-c\",$(jq -Rn --arg c "$ASK" '$c')]}"
	n1=$OUT
	[ "${n1:-0}" -gt 0 ] || fail "no counter: $OUT $EXIT"

	api POST /v1/sandboxes/a/pause
	expect_eq "pause" 200 "$CODE"
	expect_match "paused" '"state":"paused"' "$BODY"
	echo "pause took $SECS s" >>"$S/figures"
	api POST /v1/sandboxes/a/pause
	expect_eq "a second pause: as it is" 200 "$CODE"
	api GET /v1/sandboxes
	expect_match "listed paused" '"name":"a","state":"paused"' "$BODY"
	api GET /metrics
	expect_match "metrics" '^qsup_sandboxes\{state="paused"\} 1$' "$BODY"

	t0=$(cpu_ticks "$qpid")
	sleep 3
	t1=$(cpu_ticks "$qpid")
	echo "QEMU's CPU ticks: $run in 1 s running, $((t1 - t0)) in 3 s paused" >>"$S/figures"
	[ $((t1 - t0)) -le 3 ] || fail "a paused QEMU took $((t1 - t0)) ticks of CPU in 3 s (running: $run in 1 s)"
	[ "$run" -gt $((t1 - t0)) ] || fail "running took no more CPU ($run) than paused ($((t1 - t0)))"

	api POST /v1/sandboxes/a/exec -d '{"argv":["true"]}'
	expect_eq "exec while paused" 409 "$CODE"
	expect_match "says why" '"error":"sandbox a is paused"' "$BODY"
	api GET '/v1/sandboxes/a/files?path=/tmp/keep'
	expect_eq "a file while paused" 409 "$CODE"
	api POST /v1/sandboxes/a/resume
	expect_eq "resume" 200 "$CODE"
	expect_match "ready again" '"state":"ready"' "$BODY"
	echo "resume took $SECS s" >>"$S/figures"

	run_exec a "{\"argv\":[\"sh\",\"-c\",$(jq -Rn --arg c "$ASK" '$c')]}"
	n2=$OUT
	# About 1 s of running between the two reads, and 3 s paused.
	[ "${n2:-0}" -ge "$n1" ] && [ "$n2" -le $((n1 + 10)) ] ||
	    fail "the counter went from $n1 to $n2 across a 3 s pause"
	sleep 1
	run_exec a "{\"argv\":[\"sh\",\"-c\",$(jq -Rn --arg c "$ASK" '$c')]}"
	n3=$OUT
	[ "${n3:-0}" -gt "$n2" ] || fail "the counter stopped after the resume: $n2, then $n3"
	api GET '/v1/sandboxes/a/files?path=/tmp/keep'
	expect_eq "the file is there" "kept" "$BODY"

	api POST /v1/sandboxes/a/resume
	expect_eq "a second resume: as it is" 200 "$CODE"
	api POST /v1/sandboxes/a/pause
	api DELETE /v1/sandboxes/a
	expect_eq "a paused sandbox is deleted" 200 "$CODE"
	sleep 0.3
	expect_match "events" '"name":"a","state":"ready".*
(.*
)*.*"name":"a","state":"paused".*
(.*
)*.*"name":"a","state":"ready".*
(.*
)*.*"name":"a","state":"deleted"' "$(tr -d '\r' <"$S/events")"
	serve_stop
	sed 's/^/    /' "$S/figures"
}

# An exec's timeout counts the time its sandbox runs, not the time it is
# paused: a 4 s command with a 6 s timeout, paused 6 s, ends well.
test_pause_stops_exec_timeout() {
	local cpid t0
	serve_start
	create t
	t0=$(date +%s)
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d '{"argv":["sh","-c","sleep 4; echo done"],"timeout":6}' \
	    http://qsup/v1/sandboxes/t/exec >"$S/stream" &
	cpid=$!
	sleep 1
	api POST /v1/sandboxes/t/pause
	expect_eq "pause" 200 "$CODE"
	sleep 6
	api POST /v1/sandboxes/t/resume
	expect_eq "resume" 200 "$CODE"
	wait "$cpid"
	EXIT=$($SSE "$S/stream" --out "$S/out" --err "$S/err")
	expect_eq "ended by itself, not by its timeout" \
	    '{"status":0,"signal":null,"timed_out":false,"error":null}' "$EXIT"
	expect_eq "its output" done "$(cat "$S/out")"
	[ $(($(date +%s) - t0)) -ge 9 ] ||
	    fail "it ended after $(($(date +%s) - t0)) s: the pause did not hold it"
	api DELETE /v1/sandboxes/t
	serve_stop
}

# A deleted sandbox's request whose body was still coming is answered
# 404, and the server goes on (it must not use the sandbox freed).
test_body_after_delete() {
	local cpid
	serve_start
	create g
	api DELETE /v1/sandboxes/g
	expect_eq "delete" 200 "$CODE"
	create g
	# The head names g, the body comes 2 s later; g is deleted between.
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b"POST /v1/sandboxes/g/exec HTTP/1.1\r\nHost: q\r\n"
    b"Authorization: Bearer " + sys.argv[2].encode() + b"\r\n"
    b"Content-Type: application/json\r\nContent-Length: 17\r\n\r\n")
time.sleep(2)
s.sendall(b"{\"argv\":[\"true\"]}")
s.settimeout(20)
out = s.recv(4096)
print(out.split(b"\r\n")[0].decode())
' "$SOCK" "$TOKEN" >"$S/answer" &
	cpid=$!
	sleep 0.7
	api DELETE /v1/sandboxes/g
	expect_eq "delete while its exec's body comes" 200 "$CODE"
	wait "$cpid"
	expect_eq "the exec's answer" "HTTP/1.1 404 Not Found" "$(cat "$S/answer")"
	api GET /v1/sandboxes
	expect_eq "the server goes on" 200 "$CODE"
	serve_stop
}

# A sandbox whose QEMU dies while an exec waits for its agent: the exec
# answers 409, naming what happened, not 500 as a server fault. QEMU is
# stopped first (SIGSTOP: the guest cannot take the exec), so the exec is
# still waiting when QEMU is killed.
test_exec_sandbox_dies() {
	local qpid cpid
	serve_start
	create d
	qpid=$(pgrep -f "qemu-system.*$T_RUN/qsup/sb-" | head -1)
	[ -n "$qpid" ] || fail "no QEMU found"
	kill -STOP "$qpid"
	curl -sS --unix-socket "$SOCK" -o "$S/exec.body" -w '%{http_code}' \
	    -H "Authorization: Bearer $TOKEN" -d '{"argv":["true"]}' \
	    http://qsup/v1/sandboxes/d/exec >"$S/exec.code" &
	cpid=$!
	sleep 1
	kill -KILL "$qpid"
	kill -CONT "$qpid" 2>/dev/null || true
	wait "$cpid"
	expect_eq "the waiting exec's status" 409 "$(cat "$S/exec.code")"
	expect_match "says the sandbox is gone" '"error":"the sandbox is gone' \
	    "$(cat "$S/exec.body")"
	wait_state d dead 20 || fail "d is $(state d), not dead"
	serve_stop
}

# A dead sandbox, or one still booting, cannot be paused or changed.
test_pause_refused() {
	local qpid
	serve_start
	create d
	api POST /v1/sandboxes -d '{"name":"b","wait":false}'
	api POST /v1/sandboxes/b/pause
	expect_eq "pause while booting" 409 "$CODE"
	expect_match "says so" '"error":"sandbox b is booting"' "$BODY"
	qpid=$(pgrep -f "qemu-system.*$T_RUN/qsup/sb-" | head -1)
	api GET /v1/sandboxes/d
	kill -KILL $(pgrep -f "qemu-system.*$T_RUN/qsup/sb-") 2>/dev/null
	wait_state d dead 10 || fail "d is $(state d), not dead"
	api POST /v1/sandboxes/d/pause
	expect_eq "pause of a dead sandbox" 409 "$CODE"
	expect_match "names the state" '"error":"sandbox d is dead"' "$BODY"
	api POST /v1/sandboxes/d/resume
	expect_eq "resume of a dead sandbox" 409 "$CODE"
	api PATCH /v1/sandboxes/d -d '{"ttl":5}'
	expect_eq "PATCH of a dead sandbox" 409 "$CODE"
	api DELETE /v1/sandboxes/d
	api DELETE /v1/sandboxes/b
	serve_stop
}

test_bad_limits() {
	serve_start
	api POST /v1/sandboxes -d '{"name":"x","on_ttl":"explode"}'
	expect_eq "an unknown on_ttl" 400 "$CODE"
	expect_match "names it" '"field":"on_ttl"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"x","ttl":-1}'
	expect_eq "a negative ttl" 400 "$CODE"
	expect_match "names it" '"field":"ttl"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"x","idle_ttl":"soon"}'
	expect_eq "a ttl not a number" 400 "$CODE"
	expect_match "names it" '"field":"idle_ttl"' "$BODY"
	create x '"ttl":600,"on_ttl":"pause"'
	expect_match "its ttl" '"ttl":600,"idle_ttl":null,"on_ttl":"pause","ttl_deadline":"[-0-9T:]+Z","ttl_left":[0-9.]+,"idle_deadline":null' "$BODY"
	api PATCH /v1/sandboxes/x -d '{"ttl":null,"on_ttl":"x"}'
	expect_eq "PATCH with a bad on_ttl" 400 "$CODE"
	api GET /v1/sandboxes/x
	expect_match "nothing of it applied" '"ttl":600,' "$BODY"
	api PATCH /v1/sandboxes/x -d '{"ttl":-5}'
	expect_eq "PATCH with a negative ttl" 400 "$CODE"
	expect_match "names it" '"field":"ttl"' "$BODY"
	api PATCH /v1/sandboxes/x -d '{"deadline":5}'
	expect_eq "PATCH of an unknown field" 400 "$CODE"
	expect_match "names it" '"field":"deadline"' "$BODY"
	api PATCH /v1/sandboxes/nope -d '{"ttl":5}'
	expect_eq "PATCH of no sandbox" 404 "$CODE"
	api PUT /v1/sandboxes/x
	expect_match "PATCH is allowed" 'method not allowed' "$BODY"
	api DELETE /v1/sandboxes/x
	serve_stop
}

# ttl deletes on time, and says so; PATCH lifts one.
test_ttl_delete_and_lift() {
	local t0 took
	serve_start
	create k '"ttl":600'
	create t '"ttl":15'
	api PATCH /v1/sandboxes/k -d '{"ttl":null}'
	expect_eq "PATCH" 200 "$CODE"
	expect_match "lifted" '"ttl":null,.*"ttl_deadline":null,"ttl_left":null' "$BODY"
	# A ttl set again, then lifted by 0: long, so that it cannot expire
	# between the two requests on a loaded machine (3 s did, beside two
	# other suites: k was deleted before the lift came).
	api PATCH /v1/sandboxes/k -d '{"ttl":300}'
	expect_match "set again" '"ttl":300,' "$BODY"
	api PATCH /v1/sandboxes/k -d '{"ttl":0}'
	expect_match "lifted by 0" '"ttl":null' "$BODY"
	api GET /v1/sandboxes/t
	local left=${BODY#*\"ttl_left\":}
	left=${left%%[,\}]*}
	t0=$(date +%s.%N)
	wait_state t gone 30 || fail "t is still $(state t) after its ttl"
	# awk, not bc: a bare Debian has no bc.
	took=$(awk -v a="$(date +%s.%N)" -v b="$t0" -v l="$left" \
	    'BEGIN { printf "%.3f", a - b - l }')
	echo "    deleted $took s after its deadline"
	awk -v t="$took" 'BEGIN { exit !(t < 2) }' ||
	    fail "deleted $took s after its deadline"
	expect_eq "k lives on" ready "$(state k)"
	sleep 0.3
	expect_match "the ttl event" '^data: \{"sandbox":"t","limit":"ttl","seconds":15,"action":"delete","done":"deleting"\}' "$(tr -d '\r' <"$S/events")"
	expect_match "then deleted" '"name":"t","state":"deleted","reason":"ttl of 15 s expired"' "$(tr -d '\r' <"$S/events")"
	api DELETE /v1/sandboxes/k
	serve_stop
}

# on_ttl pause: paused on time, the ttl spent; idle_ttl is pushed back
# by an exec, and pauses again after a resume.
test_ttl_pause_and_idle() {
	local i
	serve_start
	create p '"ttl":8,"on_ttl":"pause"'
	create i '"idle_ttl":5,"on_ttl":"pause"'
	for i in 1 2 3; do
		sleep 2
		run_exec i '{"argv":["true"]}'
	done
	expect_eq "kept from idling by execs" ready "$(state i)"
	wait_state p paused 10 || fail "p is $(state p), not paused"
	api GET /v1/sandboxes/p
	expect_match "its ttl spent" '"ttl":null' "$BODY"
	wait_state i paused 8 || fail "i is $(state i), not paused after 5 s idle"
	api GET /v1/sandboxes/i
	expect_match "idle_ttl stays" '"idle_ttl":5,.*"idle_deadline":null' "$BODY"
	api POST /v1/sandboxes/p/resume
	expect_eq "p resumed" 200 "$CODE"
	api POST /v1/sandboxes/i/resume
	expect_match "its idle clock again" '"idle_deadline":"[-0-9T:]+Z","idle_left":[45]\.' "$BODY"
	wait_state i paused 8 || fail "i is $(state i), not paused again"
	sleep 1
	expect_eq "p runs on" ready "$(state p)"
	sleep 0.3
	expect_match "the events" '"sandbox":"p","limit":"ttl","seconds":8,"action":"pause","done":"pausing"' "$(tr -d '\r' <"$S/events")"
	expect_match "the events" '"sandbox":"i","limit":"idle_ttl","seconds":5,"action":"pause","done":"pausing"' "$(tr -d '\r' <"$S/events")"
	api DELETE /v1/sandboxes/p
	api DELETE /v1/sandboxes/i
	serve_stop
}

# The client's commands and the MCP tools are the same calls.
test_client_and_mcp() {
	local out
	serve_start
	create c
	export QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN
	out=$("$QSUP" sandbox pause c 2>&1)
	expect_eq "qsup sandbox pause" "c" "$out"
	expect_eq "paused" paused "$(state c)"
	out=$("$QSUP" exec c -- true 2>&1)
	expect_match "exec refused" 'sandbox c is paused' "$out"
	out=$("$QSUP" sandbox resume c nope 2>&1)
	expect_eq "exit 1 for the unknown one" 1 "$?"
	expect_match "qsup sandbox resume" '^c$' "$out"
	expect_eq "ready" ready "$(state c)"
	out=$(printf '%s\n' \
	    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_pause","arguments":{"name":"c"}}}' |
	    "$QSUP" mcp --host "unix:$SOCK" 2>&1)
	expect_match "MCP sandbox_pause" '"id":2,.*state.*paused' "$out"
	expect_eq "paused by MCP" paused "$(state c)"
	out=$(printf '%s\n' \
	    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_resume","arguments":{"name":"c"}}}' |
	    "$QSUP" mcp --host "unix:$SOCK" 2>&1)
	expect_eq "resumed by MCP" ready "$(state c)"
	out=$("$QSUP" sandbox create --ttl 600 --idle-ttl 90.5 --on-ttl pause --json c2 2>&1)
	expect_match "qsup sandbox create --ttl" '"ttl":600,"idle_ttl":90.5,"on_ttl":"pause"' "$out"
	"$QSUP" sandbox rm c2 >/dev/null
	unset QSUP_HOST QSUP_TOKEN
	api DELETE /v1/sandboxes/c
	serve_stop
}

# A resume sets the guest's clock, which stood still while it was
# paused: 12 s paused would leave it 12 s behind. A guest under TCG on a
# loaded host falls a little behind as it runs, hence 5 s.
test_resume_sets_clock() {
	local d0 d1
	serve_start
	create k
	run_exec k '{"argv":["date","+%s"]}'
	d0=$(($(date +%s) - OUT))
	api POST /v1/sandboxes/k/pause
	expect_eq "pause" 200 "$CODE"
	sleep 12
	api POST /v1/sandboxes/k/resume
	expect_eq "resume" 200 "$CODE"
	expect_match "ready" '"state":"ready"' "$BODY"
	echo "resume with its clock set: $SECS s" >>"$S/figures"
	run_exec k '{"argv":["date","+%s"]}'
	d1=$(($(date +%s) - OUT))
	echo "the guest's clock behind the host's: $d0 s before the pause, $d1 s after the resume" >>"$S/figures"
	[ "$d1" -le 5 ] && [ "$d1" -ge -3 ] ||
	    fail "the guest's clock is $d1 s behind the host's after a 12 s pause (before: $d0 s)"
	api DELETE /v1/sandboxes/k
	serve_stop
	sed 's/^/    /' "$S/figures"
}

for t in ${TESTS:-test_pause_resume test_pause_stops_exec_timeout \
    test_resume_sets_clock \
    test_body_after_delete test_pause_refused test_bad_limits \
    test_ttl_delete_and_lift test_ttl_pause_and_idle test_client_and_mcp \
    test_exec_sandbox_dies}; do
	run_test "$t"
done
finish
