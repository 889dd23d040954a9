#!/usr/bin/env bash
# qsup serve's WebSockets, with a real client (helpers/ws_client.py, RFC
# 6455 from the standard library) against real guests: a command and a
# terminal over GET .../exec/ws (streams on their channels, the exit, stdin
# and its end, a resize seen by stty, closing kills the command), the token
# as a header or as a browser's "bearer." subprotocol, pages of other
# origins refused and --allow-origin, frames no client may send closed with
# their codes, and GET .../display relaying QEMU's VNC server (RFB).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

WS="python3 $PWD/tests/integration/helpers/ws_test_steps.py"

# ws STEP ARGS...: one scripted exchange (helpers/ws_test_steps.py) on this
# test's server, its lines in $OUT.
ws() {
	OUT=$(timeout 120 $WS "$SOCK" "$TOKEN" "$@" 2>&1)
}

test_command_streams_and_exit() {
	serve_start
	create a
	ws command a '{"argv":["sh","-c","echo out; echo err >&2; exit 3"]}'
	expect_match "started first" '^started [0-9]+' "$OUT"
	expect_match "stdout on channel 1" 'stdout out' "$OUT"
	expect_match "stderr on channel 2" 'stderr err' "$OUT"
	expect_match "the exit, with its code" 'exit code=3 status=3' "$OUT"
	expect_match "closed 1000" 'close 1000' "$OUT"
	ws command a '{"argv":["cat"]}' --stdin 'abc' --eof
	expect_match "stdin, then its end" 'stdout abc' "$OUT"
	expect_match "cat ends at the end of its stdin" 'exit code=0' "$OUT"
	serve_stop
}

test_terminal() {
	serve_start
	create a
	ws terminal a
	expect_match "echo hi in a terminal" 'saw hi' "$OUT"
	expect_match "stty size after a resize" 'saw 30 100' "$OUT"
	expect_match "exit 5 ends it" 'exit code=5' "$OUT"
	serve_stop
}

# The client gone, the command goes: the guest has no such process.
test_close_kills() {
	serve_start
	create a
	ws abandon a '{"argv":["sh","-c","echo $$ >/tmp/pid; exec sleep 300"]}'
	expect_match "started" '^started' "$OUT"
	sleep 2
	run_exec a '{"argv":["sh","-c","kill -0 $(cat /tmp/pid) 2>/dev/null && echo alive || echo gone"]}'
	expect_eq "the abandoned command" gone "$OUT"
	serve_stop
}

test_auth_and_origin() {
	serve_start
	create a
	ws handshake a --no-token
	expect_match "no token" '^status 401' "$OUT"
	ws handshake a --no-token --protocol "qsup, bearer.$TOKEN"
	expect_match "the token as a subprotocol" '^status 101' "$OUT"
	expect_match "answers the subprotocol qsup" 'protocol qsup' "$OUT"
	ws handshake a --no-token --protocol "binary, bearer.x$TOKEN"
	expect_match "a wrong token as a subprotocol" '^status 401' "$OUT"
	ws handshake a --origin http://evil.example
	expect_match "another origin" '^status 403' "$OUT"
	ws handshake a --origin http://qsup
	expect_match "the server's own origin" '^status 101' "$OUT"
	ws handshake a --version 8
	expect_match "another version" '^status 426' "$OUT"
	ws handshake nope
	expect_match "no such sandbox" '^status 404' "$OUT"
	serve_stop
	serve_start --allow-origin https://console.example
	create b
	ws handshake b --origin https://console.example
	expect_match "--allow-origin" '^status 101' "$OUT"
	ws handshake b --origin https://other.example
	expect_match "still not another" '^status 403' "$OUT"
	serve_stop
	"$QSUP" serve --allow-origin 'https://x/path' --listen "unix:$T_TMP/x.sock" \
	    >"$T_TMP/err" 2>&1 && fail "an origin with a path was taken"
	expect_match "names the origin" 'allow-origin https://x/path' "$(cat "$T_TMP/err")"
}

test_bad_frames() {
	serve_start
	create a
	ws unmasked a
	expect_match "an unmasked frame" 'close 1002' "$OUT"
	ws oversize a
	expect_match "a message past 1 MiB" 'close 1009' "$OUT"
	ws first a --binary
	expect_match "the first message as binary" 'error .*as text' "$OUT"
	expect_match "closed 1008" 'close 1008' "$OUT"
	ws first a '{"argv":[]}'
	expect_match "a bad exec body names its field" 'error .*field=argv$' "$OUT"
	ws first a '{"argv":["true"],"color":1}'
	expect_match "an unknown field named" 'field=color$' "$OUT"
	api GET /v1/sandboxes/a
	expect_match "the sandbox is fine" '"state":"ready"' "$BODY"
	serve_stop
}

test_display_relay() {
	serve_start
	create d '"settings":{"display":"vnc","display_size":"640x480"}'
	ws display d
	expect_match "QEMU's VNC server through the WebSocket" 'rfb RFB 003.008' "$OUT"
	create n
	ws handshake n --path display
	expect_match "a sandbox without a display" '^status 409' "$OUT"
	serve_stop
}

for t in ${TESTS:-test_command_streams_and_exit test_terminal test_close_kills \
    test_auth_and_origin test_bad_frames test_display_relay}; do
	run_test "$t"
done
finish
