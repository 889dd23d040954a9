#!/usr/bin/env bash
# "qsup serve" driven with curl, as a service's client would: named
# sandboxes, exec streams with stdin, terminals and signals, files both
# ways, limits, bad requests, events and metrics, a QEMU killed under it,
# SIGTERM with sandboxes running, TLS, and what a killed server leaves.
. "$(dirname "$0")/lib.sh"
SSE="python3 $PWD/tests/integration/helpers/sse.py"

# serve_start [ARGS...]: a server of this test's own on $SOCK, token in
# $TOKEN; its stderr in $S/serve.log.
serve_start() {
	S=$T_TMP/${FUNCNAME[1]}
	mkdir -p "$S"
	SOCK=$S/s.sock
	serve_launch "$SOCK" "$S/token" "$S/serve.log" "$@" ||
	    fail "the server did not come up: $(cat "$S/serve.log")"
	TOKEN=$(cat "$S/token" 2>/dev/null)
}

# serve_stop: SIGTERM, and it must end with 0.
serve_stop() {
	kill -TERM "$SERVE_PID" 2>/dev/null
	local rc=0
	wait "$SERVE_PID" || rc=$?
	expect_eq "serve's exit status after SIGTERM" 0 "$rc"
	[ -e "$SOCK" ] && fail "the socket was left behind"
}

# api METHOD PATH [CURL ARGS...]: the status in $CODE, the body in $BODY.
api() {
	local m=$1 p=$2
	shift 2
	CODE=$(curl -sS --unix-socket "$SOCK" -o "$S/body" -w '%{http_code}' \
	    -X "$m" -H "Authorization: Bearer $TOKEN" "$@" "http://qsup$p")
	BODY=$(cat "$S/body")
}

# create NAME [JSON MEMBERS]: a ready sandbox.
create() {
	local out
	api POST /v1/sandboxes -d "{\"name\":\"$1\"${2:+,$2}}"
	out=$BODY
	expect_eq "create $1" 201 "$CODE"
	expect_match "create $1: ready" '"state":"ready"' "$out"
}

# run_exec NAME JSON: the exec's stream in $S/stream, its exit in $EXIT,
# stdout in $S/out, stderr in $S/err.
run_exec() {
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d "$2" "http://qsup/v1/sandboxes/$1/exec" >"$S/stream"
	EXIT=$($SSE "$S/stream" --out "$S/out" --err "$S/err")
}

test_create_exec_delete() {
	local out
	serve_start
	out=$(curl -sS --unix-socket "$SOCK" http://qsup/v1/healthz)
	expect_match "healthz without a token" '"ok":true' "$out"
	out=$(curl -sS --unix-socket "$SOCK" -w ' %{http_code}' \
	    http://qsup/v1/sandboxes)
	expect_match "no token: 401" ' 401$' "$out"
	out=$(curl -sS --unix-socket "$SOCK" -w ' %{http_code}' \
	    -H "Authorization: Bearer x$TOKEN" http://qsup/v1/sandboxes)
	expect_match "a wrong token: 401" ' 401$' "$out"
	api GET /v1/sandboxes
	out=$BODY
	expect_eq "list, empty" '{"sandboxes":[]}' "$out"
	create a
	run_exec a '{"argv":["sh","-c","echo out; echo err >&2; exit 3"]}'
	expect_eq "stdout" out "$(cat "$S/out")"
	expect_eq "stderr" err "$(cat "$S/err")"
	expect_match "exit status" '"status":3' "$EXIT"
	expect_match "start event first" '^event: start' "$(head -1 "$S/stream")"
	run_exec a '{"argv":["sh","-c","echo $FOO; pwd"],"env":{"FOO":"bar"},"cwd":"/tmp"}'
	expect_eq "env and cwd" "bar
/tmp" "$(cat "$S/out")"
	run_exec a '{"argv":["sh","-c","kill -TERM $$"]}'
	expect_match "killed by a signal" '"status":null,"signal":15' "$EXIT"
	run_exec a '{"argv":["no-such-command"]}'
	expect_match "not found" '"status":127' "$EXIT"
	run_exec a '{"argv":["sleep","30"],"timeout":0.5}'
	expect_match "timeout" '"signal":9,"timed_out":true' "$EXIT"
	api GET /v1/sandboxes/a
	out=$BODY
	expect_match "get" '"name":"a","state":"ready","accelerator":"(tcg|kvm)"' "$out"
	api DELETE /v1/sandboxes/a
	out=$BODY
	expect_eq "delete" 200 "$CODE"
	expect_match "teardown report" '"state":"deleted".*"base_image_untouched"' "$out"
	api GET /v1/sandboxes
	out=$BODY
	expect_eq "list, empty again" '{"sandboxes":[]}' "$out"
	api GET /v1/sandboxes/a
	expect_eq "a deleted sandbox: 404" 404 "$CODE"
	serve_stop
}

test_exec_stdin_and_signal() {
	local id out
	serve_start
	create a
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d '{"argv":["sh","-c","cat; echo done"],"stdin":true}' \
	    http://qsup/v1/sandboxes/a/exec >"$S/stream" &
	local cpid=$!
	id=$($SSE "$S/stream" --id)
	printf 'hello\n' >"$S/in"
	api POST "/v1/sandboxes/a/exec/$id/stdin" --data-binary @"$S/in"
	expect_eq "stdin piece" 204 "$CODE"
	head -c 300000 /dev/urandom >"$S/big"
	api POST "/v1/sandboxes/a/exec/$id/stdin" --data-binary @"$S/big" \
	   
	expect_eq "a big stdin piece" 204 "$CODE"
	api POST "/v1/sandboxes/a/exec/$id/stdin" -d ''
	expect_eq "stdin closed" 204 "$CODE"
	wait "$cpid"
	EXIT=$($SSE "$S/stream" --out "$S/out")
	expect_match "exit 0" '"status":0' "$EXIT"
	expect_eq "what cat read" "$( (cat "$S/in" "$S/big"; echo done) |
	    sha256sum)" "$(sha256sum <"$S/out")"
	api POST "/v1/sandboxes/a/exec/$id/stdin" -d 'late'
	expect_eq "stdin after the exit" 404 "$CODE"
	# A signal by name reaches the command.
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d '{"argv":["sleep","30"]}' \
	    http://qsup/v1/sandboxes/a/exec >"$S/stream" &
	cpid=$!
	id=$($SSE "$S/stream" --id)
	api POST "/v1/sandboxes/a/exec/$id/signal" -d '{"signal":"SIGTERM"}'
	out=$BODY
	expect_eq "signal" 204 "$CODE"
	wait "$cpid"
	expect_match "signalled" '"signal":15' "$($SSE "$S/stream")"
	api POST "/v1/sandboxes/a/exec/$id/signal" -d '{"signal":"NOPE"}'
	expect_eq "a bad signal, or one too late" 4 "${CODE:0:1}"
	serve_stop
}

test_tty() {
	local id
	serve_start
	create a
	run_exec a '{"argv":["sh","-c","tty; stty size; test -t 0 && echo term"],"tty":true,"rows":40,"cols":100}'
	expect_match "a terminal" '^/dev/pts/[0-9]+' "$(tr -d '\r' <"$S/out")"
	expect_match "its size" '^40 100$' "$(tr -d '\r' <"$S/out")"
	expect_match "stdin is it" '^term$' "$(tr -d '\r' <"$S/out")"
	expect_match "tty exit" '"status":0' "$EXIT"
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d '{"argv":["sh","-c","read x; stty size"],"tty":true,"stdin":true}' \
	    http://qsup/v1/sandboxes/a/exec >"$S/stream" &
	local cpid=$!
	id=$($SSE "$S/stream" --id)
	api POST "/v1/sandboxes/a/exec/$id/resize" -d '{"rows":50,"cols":120}'
	expect_eq "resize" 204 "$CODE"
	api POST "/v1/sandboxes/a/exec/$id/stdin" -d $'go\n' >/dev/null
	wait "$cpid"
	expect_match "resized" '^50 120$' "$($SSE "$S/stream" | tr -d '\r')"
	run_exec a '{"argv":["true"]}'
	serve_stop
}

test_files() {
	local out
	serve_start
	create a
	: >"$S/empty"
	api PUT "/v1/sandboxes/a/files?path=/tmp/empty" --data-binary @"$S/empty"
	expect_eq "put 0 bytes" 201 "$CODE"
	api GET "/v1/sandboxes/a/files?path=/tmp/empty"
	expect_eq "get 0 bytes" "200 0" "$CODE $(stat -c %s "$S/body")"
	head -c 100000000 /dev/urandom >"$S/big"
	api PUT "/v1/sandboxes/a/files?path=/tmp/big&mode=0600" -T "$S/big"
	out=$BODY
	expect_eq "put 100 MB" 201 "$CODE"
	expect_match "its size" '"size":100000000' "$out"
	run_exec a '{"argv":["stat","-c","%a %s","/tmp/big"]}'
	expect_eq "mode and size in the guest" "600 100000000" "$(cat "$S/out")"
	curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -o "$S/back" "http://qsup/v1/sandboxes/a/files?path=/tmp/big"
	expect_eq "100 MB back" "$(sha256sum <"$S/big")" "$(sha256sum <"$S/back")"
	rm -f "$S/big" "$S/back"
	api GET "/v1/sandboxes/a/files?path=/tmp/none"
	out=$BODY
	expect_eq "missing: 404" 404 "$CODE"
	expect_match "names it" '/tmp/none' "$out"
	api PUT "/v1/sandboxes/a/files?path=/no/such/dir/f" -d x
	expect_eq "no directory: 404" 404 "$CODE"
	api GET "/v1/sandboxes/a/files?path=/tmp"
	expect_eq "a directory: 409" 409 "$CODE"
	api GET "/v1/sandboxes/a/files?path=relative"
	expect_eq "not absolute: 400" 400 "$CODE"
	run_exec a '{"argv":["sh","-c","ls -a /tmp | grep -c qsup || true"]}'
	expect_eq "no temporary file left" 0 "$(cat "$S/out")"
	serve_stop
}

test_bad_requests() {
	local out
	serve_start --max-body 4K
	api POST /v1/sandboxes -d '{"name":'
	out=$BODY
	expect_eq "malformed JSON" 400 "$CODE"
	expect_match "says where" 'malformed JSON at line 1' "$out"
	api POST /v1/sandboxes -d '{"nmae":"x"}'
	out=$BODY
	expect_eq "unknown field" 400 "$CODE"
	expect_match "names it" '"field":"nmae"' "$out"
	api POST /v1/sandboxes -d '{"name":"Bad Name"}'
	out=$BODY
	expect_match "a bad name" '"field":"name"' "$out"
	api POST /v1/sandboxes -d '{"settings":{"memory":"lots"}}'
	out=$BODY
	expect_eq "a bad setting" 400 "$CODE"
	expect_match "names it" 'memory' "$out"
	api POST /v1/sandboxes -d '{"extra_args":["-monitor","stdio"]}'
	out=$BODY
	expect_eq "a refused QEMU argument" 400 "$CODE"
	expect_match "names it" 'monitor' "$out"
	api GET /v1/sandboxes/nope
	expect_eq "no such sandbox" 404 "$CODE"
	api PATCH /v1/sandboxes
	expect_eq "wrong method" 405 "$CODE"
	head -c 8000 /dev/zero | tr '\0' ' ' >"$S/pad"
	api POST /v1/sandboxes --data-binary @"$S/pad"
	out=$BODY
	expect_eq "body too large" 413 "$CODE"
	expect_match "names the limit" '"limit":"max_body"' "$out"
	api GET /v1/sandboxes -H "X-Pad: $(head -c 20000 /dev/zero | tr '\0' a)"
	out=$BODY
	expect_eq "head too large" 431 "$CODE"
	create a
	api POST /v1/sandboxes -d '{"name":"a"}'
	expect_eq "a name in use" 409 "$CODE"
	api POST /v1/sandboxes/a/exec -d '{"argv":[]}'
	out=$BODY
	expect_match "empty argv" '"field":"argv"' "$out"
	api POST /v1/sandboxes/a/exec -d '{"argv":["true"],"rows":0}'
	out=$BODY
	expect_match "bad rows" '"field":"rows"' "$out"
	serve_stop
}

test_limits() {
	local out
	serve_start --max-sandboxes 1 --max-connections 3
	create a
	api POST /v1/sandboxes -d '{"name":"b"}'
	out=$BODY
	expect_eq "past max_sandboxes" 503 "$CODE"
	expect_match "names it" '"limit":"max_sandboxes","max":1' "$out"
	# Connections busy with a request (event streams): the next one is
	# refused (idle ones would be closed for it instead). Its request
	# comes after the server has turned it away (the sleep), and must
	# still get the answer, not a reset.
	python3 - "$SOCK" "$TOKEN" <<'EOF' >"$S/conns"
import socket, sys, time
held = []
for _ in range(3):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(("GET /v1/events HTTP/1.1\r\nHost: x\r\n"
        "Authorization: Bearer %s\r\n\r\n" % sys.argv[2]).encode())
    s.settimeout(5)
    s.recv(4096)
    held.append(s)
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
time.sleep(0.3)
s.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n")
s.settimeout(5)
print(s.recv(4096).decode(errors="replace"))
EOF
	expect_match "past max_connections" '503' "$(head -1 "$S/conns")"
	expect_match "names it" '"limit":"max_connections"' "$(cat "$S/conns")"
	api DELETE /v1/sandboxes/a >/dev/null
	serve_stop
	serve_start --max-memory 700M
	create a '"settings":{"memory":"512M"}'
	api POST /v1/sandboxes -d '{"name":"b","settings":{"memory":"512M"}}'
	out=$BODY
	expect_eq "past max_memory" 503 "$CODE"
	expect_match "names it" '"limit":"max_memory"' "$out"
	serve_stop
}

# A client that stops reading holds its own command, not the server.
test_client_stops_reading() {
	local t0 t1 rss
	serve_start
	create a
	create b
	python3 - "$SOCK" "$TOKEN" <<'EOF' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sys.argv[1])
body = b'{"argv":["sh","-c","cat /dev/zero"]}'
s.sendall(b"POST /v1/sandboxes/a/exec HTTP/1.1\r\nHost: x\r\n"
          b"Authorization: Bearer " + sys.argv[2].encode() +
          b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
time.sleep(6)
EOF
	local slow=$!
	sleep 3
	t0=$(date +%s%N)
	run_exec b '{"argv":["echo","alive"]}'
	t1=$(date +%s%N)
	expect_eq "another sandbox's exec" alive "$(cat "$S/out")"
	expect_eq "in good time" 1 "$(((t1 - t0) < 3000000000))"
	run_exec a '{"argv":["echo","same sandbox"]}'
	expect_eq "the same sandbox's next exec" "same sandbox" "$(cat "$S/out")"
	rss=$(awk '/VmRSS/ {print $2}' /proc/$SERVE_PID/status)
	expect_eq "server RSS bounded (${rss} kB)" 1 "$((rss < 100000))"
	wait "$slow"
	# Gone: its command is killed.
	sleep 1
	run_exec a '{"argv":["sh","-c","pgrep -x cat >/dev/null && echo cat || echo none"]}'
	expect_eq "the stalled command killed" none "$(cat "$S/out")"
	# Its ports came back: 14 execs at once still fit.
	local pids=()
	for i in $(seq 1 14); do
		curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
		    -d '{"argv":["sleep","2"]}' \
		    http://qsup/v1/sandboxes/a/exec >"$S/s.$i" &
		pids+=($!)
	done
	sleep 1
	api POST /v1/sandboxes/a/exec -d '{"argv":["true"]}'
	expect_eq "the 15th exec at once" 503 "$CODE"
	expect_match "names the limit" '"limit":"agent_ports","max":14' "$BODY"
	wait "${pids[@]}"
	for i in $(seq 1 14); do
		expect_match "exec $i of 14" '"status":0' "$($SSE "$S/s.$i")"
	done
	serve_stop
}

test_qemu_killed() {
	local out qpid
	serve_start
	create a
	qpid=$(pgrep -f "qemu-system.*$T_RUN/qsup/sb-" | head -1)
	[ -n "$qpid" ] || fail "no QEMU found"
	kill -KILL "$qpid"
	for _ in $(seq 1 50); do
		api GET /v1/sandboxes/a
	out=$BODY
		grep -q '"state":"dead"' <<<"$out" && break
		sleep 0.1
	done
	expect_match "dead" '"state":"dead"' "$out"
	expect_match "with a reason" '"reason":"[^"]+' "$out"
	expect_match "and the console's tail" '"console_tail":"' "$out"
	[ -z "$(ls -d "$T_RUN"/qsup/sb-* 2>/dev/null)" ] ||
	    fail "the dead sandbox's run directory is left"
	api GET /metrics
	out=$BODY
	expect_match "counted" 'qsup_sandboxes\{state="dead"\} 1' "$out"
	create b
	run_exec b '{"argv":["echo","on"]}'
	expect_eq "the server goes on" on "$(cat "$S/out")"
	api DELETE /v1/sandboxes/a
	out=$BODY
	expect_eq "delete the dead one" 200 "$CODE"
	serve_stop
}

# A download under way when its sandbox's QEMU dies: its client sees the
# stream cut short (never a clean end), at once, not a silence.
test_qemu_killed_mid_download() {
	local qpid out
	serve_start
	create a
	head -c 4000000 /dev/urandom >"$S/big"
	api PUT "/v1/sandboxes/a/files?path=/tmp/big" --data-binary @"$S/big"
	expect_eq "the upload" 201 "$CODE"
	qpid=$(pgrep -f "qemu-system.*$T_RUN/qsup/sb-" | head -1)
	out=$(python3 - "$SOCK" "$TOKEN" "$qpid" <<'EOF'
import os, signal, socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(sys.argv[1])
s.sendall(b"GET /v1/sandboxes/a/files?path=/tmp/big HTTP/1.1\r\nHost: x\r\n"
          b"Authorization: Bearer " + sys.argv[2].encode() + b"\r\n\r\n")
got = s.recv(4096)
time.sleep(1)         # the stream is paused: this client reads nothing
os.kill(int(sys.argv[3]), signal.SIGKILL)
s.settimeout(20)
t0 = time.monotonic()
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        got += b
except socket.timeout:
    print("silent for 20 s")
    sys.exit()
except OSError:
    pass
print("head %s; ended in %.0f s; clean end: %s" % (
    got.split(b"\r\n", 1)[0].decode(), time.monotonic() - t0,
    got.endswith(b"\r\n0\r\n\r\n")))
EOF
)
	expect_match "the download began" '^head HTTP/1.1 200' "$out"
	expect_match "and was cut, not left silent" 'ended in [0-9] s' "$out"
	expect_match "without a clean end" 'clean end: False' "$out"
	api GET /v1/sandboxes/a
	expect_match "dead" '"state":"dead"' "$BODY"
	create b
	run_exec b '{"argv":["echo","on"]}'
	expect_eq "the server goes on" on "$(cat "$S/out")"
	serve_stop
}

test_sigterm_with_sandboxes() {
	serve_start
	create a
	create b
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d '{"argv":["sleep","100"]}' \
	    http://qsup/v1/sandboxes/a/exec >"$S/stream" &
	local cpid=$!
	$SSE "$S/stream" --id >/dev/null
	local t0=$SECONDS
	serve_stop
	expect_eq "stopped in good time" 1 "$((SECONDS - t0 < 10))"
	wait "$cpid"
	expect_match "the exec told" '"error":"the sandbox is gone' "$($SSE "$S/stream")"
}

test_events_and_metrics() {
	local out
	serve_start
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    http://qsup/v1/events >"$S/events" &
	local epid=$!
	create a
	run_exec a '{"argv":["true"]}'
	api GET /v1/sandboxes/a
	expect_match "the sandbox counts its exec" '"execs":1,"execs_running":0,' "$BODY"
	expect_match "boot_s to the ms" '"boot_s":[0-9]+\.[0-9]{3},' "$BODY"
	api DELETE /v1/sandboxes/a >/dev/null
	api GET /metrics
	out=$BODY
	expect_match "boots" 'qsup_boots_total\{start="(warm|cold|template-build)"\} 1' "$out"
	expect_match "execs" '^qsup_execs_total 1$' "$out"
	expect_match "histogram" 'qsup_exec_seconds_count 1' "$out"
	expect_match "connections" '^qsup_connections [0-9]+' "$out"
	expect_match "requests" 'qsup_http_requests_total\{code="2xx"\} [1-9]' "$out"
	sleep 0.3
	kill "$epid" 2>/dev/null
	wait "$epid" 2>/dev/null
	out=$(tr -d '\r' <"$S/events")
	expect_match "events in order" '"name":"a","state":"booting".*
.*"name":"a","state":"ready".*
(.*
)*.*"state":"exited".*
(.*
)*.*"name":"a","state":"stopping".*
(.*
)*.*"name":"a","state":"deleted"' "$out"
	serve_stop
}

test_tls() {
	local out port
	S=$T_TMP/test_tls
	mkdir -p "$S"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	    -keyout "$S/key.pem" -out "$S/cert.pem" 2>/dev/null ||
	    fail "openssl could not make a certificate"
	out=$("$QSUP" serve --listen tcp:0.0.0.0:0 --token-file "$S/t" 2>&1)
	expect_eq "a non-loopback listener without TLS: refused" 125 "$?"
	expect_match "says why" 'tls' "$out"
	"$QSUP" serve --listen tcp:127.0.0.1:0 --token-file "$S/token" \
	    --tls-cert "$S/cert.pem" --tls-key "$S/key.pem" 2>"$S/serve.log" &
	SERVE_PID=$!
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' "$S/serve.log")
		[ -n "$port" ] && break
		sleep 0.05
	done
	out=$(curl -sS --cacert "$S/cert.pem" "https://localhost:$port/v1/healthz")
	expect_match "healthz over TLS" '"ok":true' "$out"
	out=$(curl -sS --cacert "$S/cert.pem" -H "Authorization: Bearer $(cat "$S/token")" \
	    "https://localhost:$port/v1/sandboxes")
	expect_eq "the API over TLS" '{"sandboxes":[]}' "$out"
	curl -sS "https://localhost:$port/v1/healthz" >/dev/null 2>&1 &&
	    fail "a certificate not trusted was accepted"
	curl -sS "http://127.0.0.1:$port/v1/healthz" >/dev/null 2>&1 &&
	    fail "plain HTTP answered on a TLS listener"
	SOCK=/nonexistent
	serve_stop
}

test_default_socket_and_token() {
	local base=$T_RUN/qsup
	"$QSUP" serve 2>"$T_TMP/default.log" &
	SERVE_PID=$!
	for _ in $(seq 1 100); do
		[ -S "$base/qsup.sock" ] && break
		sleep 0.05
	done
	expect_eq "socket mode" 600 "$(stat -c %a "$base/qsup.sock")"
	expect_eq "directory mode" 700 "$(stat -c %a "$base")"
	expect_eq "token mode" 600 "$(stat -c %a "$base/token")"
	expect_match "token" '^[0-9a-f]{64}$' "$(cat "$base/token")"
	"$QSUP" serve 2>"$T_TMP/second.log"
	expect_eq "a second server on a live socket: refused" 125 "$?"
	SOCK=$base/qsup.sock
	serve_stop
	rm -f "$base/token"
	chmod 644 "$T_TMP/default.log"
	"$QSUP" serve --token-file "$T_TMP/default.log" 2>"$T_TMP/err.log"
	expect_eq "a token others may read: refused" 125 "$?"
	expect_match "says so" 'chmod 600' "$(cat "$T_TMP/err.log")"
}

# A server killed outright leaves run directories; the next one sweeps.
test_sweep_after_kill() {
	serve_start
	create a
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null
	sleep 0.5
	[ -n "$(ls -d "$T_RUN"/qsup/sb-* 2>/dev/null)" ] ||
	    fail "expected a run directory left by the killed server"
	rm -f "$SOCK"
	serve_start
	[ -z "$(ls -d "$T_RUN"/qsup/sb-* 2>/dev/null)" ] ||
	    fail "the next server did not sweep $(ls "$T_RUN/qsup")"
	serve_stop
}

# The contract: /v1/openapi.json is docs/openapi.json, byte for byte,
# without a token; --routes is the table the spec must cover; --record
# writes a JSON line per response, the route it matched among them.
test_openapi_and_record() {
	local rec=$T_TMP/openapi.jsonl out
	serve_start --record "$rec"
	out=$(curl -sS --unix-socket "$SOCK" -o "$S/spec" \
	    -w '%{http_code} %{content_type}' http://qsup/v1/openapi.json)
	expect_eq "the spec without a token" "200 application/json" "$out"
	cmp -s "$S/spec" docs/openapi.json ||
	    fail "/v1/openapi.json is not docs/openapi.json"
	api GET /v1/sandboxes/nope
	api DELETE /v1/openapi.json
	expect_eq "a method the spec path lacks" 405 "$CODE"
	serve_stop
	out=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    x = json.loads(l)
    print(x["method"], x["route"], x["status"], x["type"], x["allow"])
' "$rec")
	expect_eq "the exchanges recorded" "GET /v1/healthz 200 application/json None
GET /v1/openapi.json 200 application/json None
GET /v1/sandboxes/{name} 404 application/json None
DELETE /v1/openapi.json 405 application/json GET" "$out"
	out=$("$QSUP" serve --routes)
	expect_match "--routes lists the table" '^POST /v1/sandboxes/\{name\}/exec$' "$out"
	expect_eq "--routes: one line a route" \
	    "$(cat core/serve/serve_route.c core/serve/serve_console.c |
	    grep -c '^\s*{ "[A-Z]*", *"/')" \
	    "$(wc -l <<<"$out")"
	out=$("$QSUP" serve --listen "unix:$S/x.sock" --token-file "$S/token" \
	    --record /nonexistent/dir/r.jsonl 2>&1)
	expect_eq "--record into a missing directory: fails" 125 "$?"
	expect_match "names the file" '--record /nonexistent/dir/r.jsonl' "$out"
}

for t in test_create_exec_delete test_exec_stdin_and_signal test_tty \
    test_files test_bad_requests test_limits test_client_stops_reading \
    test_qemu_killed test_qemu_killed_mid_download \
    test_sigterm_with_sandboxes test_events_and_metrics \
    test_tls test_default_socket_and_token test_sweep_after_kill \
    test_openapi_and_record; do
	run_test "$t"
done
finish
