#!/usr/bin/env bash
# "qsup serve" on TCP 127.0.0.1 against clients that connect and never
# finish, as issue #36 tried it: a head sent a byte at a time, hundreds of
# connections that never send the token, a body that stops, one address
# taking every slot; and what must not be cut, an event stream left
# quiet past every timeout. No sandbox is started: the limits are the
# HTTP server's, and each test takes seconds.
. "$(dirname "$0")/lib.sh"

# serve_start [ARGS...]: a server on $SOCK and on TCP 127.0.0.1 ($PORT),
# token in $TOKEN; its stderr in $S/serve.log.
serve_start() {
	S=$T_TMP/${FUNCNAME[1]}
	mkdir -p "$S"
	SOCK=$S/s.sock
	serve_launch "$SOCK" "$S/token" "$S/serve.log" \
	    --listen tcp:127.0.0.1:0 "$@" ||
	    fail "the server did not come up: $(cat "$S/serve.log")"
	TOKEN=$(cat "$S/token" 2>/dev/null)
	PORT=$(sed -n 's/.*listening on tcp:127\.0\.0\.1:\([0-9]*\).*/\1/p' \
	    "$S/serve.log" | head -1)
	[ -n "$PORT" ] ||
	    fail "the server did not come up on TCP: $(cat "$S/serve.log")"
}

# serve_stop: SIGTERM, and it must end with 0.
serve_stop() {
	kill -TERM "$SERVE_PID" 2>/dev/null
	local rc=0
	wait "$SERVE_PID" || rc=$?
	expect_eq "serve's exit status after SIGTERM" 0 "$rc"
}

# metric REASON: qsup_http_connections_closed_total{reason="REASON"}.
metric() {
	curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    http://qsup/metrics |
	    sed -n "s/^qsup_http_connections_closed_total{reason=\"$1\"} //p"
}

# py SCRIPT ARGS...: python3 with the port and token as argv[1], argv[2].
py() {
	python3 - "$PORT" "$TOKEN" "$@"
}

# A head a byte every 0.2 s: 408 at --head-timeout, and the connection
# gone soon after (the linger after the answer does not wait for the
# client to stop sending). Before, each byte moved the deadline.
test_slow_head() {
	local out
	serve_start --head-timeout 1
	out=$(py <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setblocking(False)
head = b"GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 200
t0, got, t408, gone = time.time(), b"", None, None
for ch in head:
    try:
        s.send(bytes([ch]))
    except OSError:
        gone = gone or time.time() - t0
        break
    time.sleep(0.2)
    try:
        while True:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except BlockingIOError:
        pass
    except OSError:
        gone = gone or time.time() - t0
        break
    if t408 is None and got:
        t408 = time.time() - t0
    if time.time() - t0 > 8:
        break
print("408 at %.1f" % t408 if t408 else "no answer")
print("gone at %.1f" % gone if gone else "still open")
print(got.decode(errors="replace"))
EOF
)
	expect_match "408 within the deadline" '^408 at (0\.[89]|1\.[0-9])$' \
	    "$(head -1 <<<"$out")"
	expect_match "closed, however the bytes came" '^gone at [1-4]\.' \
	    "$(sed -n 2p <<<"$out")"
	expect_match "the answer" '^HTTP/1.1 408 Request Timeout' "$out"
	expect_match "names the limit" \
	    '"limit":"head_timeout","max":1' "$out"
	expect_eq "counted" 1 "$(metric head_timeout)"
	serve_stop
}

# 300 TCP connections that never send a byte (the issue's: they took all
# 256 slots, and everyone else got 503): a client with the token is
# served, at the defaults, and with the unauthenticated share the limit.
test_idle_flood() {
	local out
	serve_start
	out=$(py 300 <<'EOF'
import socket, sys, time
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n" % token).encode())
s.settimeout(5)
got = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    got += b
print(got.decode(errors="replace").split("\r\n")[0])
EOF
)
	expect_eq "served past 300 idle connections" "HTTP/1.1 200 OK" "$out"
	expect_match "closed for their address's cap" '^[1-9][0-9]*$' \
	    "$(metric per_address)"
	serve_stop

	serve_start --max-connections 20 --max-connections-per-address 0
	out=$(py 60 <<'EOF'
import socket, sys, time
port, token, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
    "Authorization: Bearer %s\r\nConnection: close\r\n\r\n" % token).encode())
s.settimeout(5)
print(s.recv(4096).decode(errors="replace").split("\r\n")[0])
EOF
)
	expect_eq "served past 60 idle, 20 at most" "HTTP/1.1 200 OK" "$out"
	expect_match "closed for the unauthenticated share" '^[1-9][0-9]*$' \
	    "$(metric unauthenticated)"
	out=$(curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    http://qsup/metrics)
	expect_match "the gauge" '^qsup_connections_unauthenticated [0-9]+$' \
	    "$out"
	serve_stop
}

# Two event streams with the token fill one address's cap: a third
# connection from it is refused, and says why, though its request comes
# after the refusal (the linger); the unix socket is not counted.
test_per_address_cap() {
	local out
	serve_start --max-connections-per-address 2
	out=$(py <<'EOF'
import socket, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
held = []
for _ in range(2):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(("GET /v1/events HTTP/1.1\r\nHost: x\r\n"
        "Authorization: Bearer %s\r\n\r\n" % token).encode())
    s.settimeout(5)
    s.recv(4096)
    held.append(s)
s = socket.create_connection(("127.0.0.1", port))
time.sleep(0.3)
s.sendall(b"GET /v1/healthz HTTP/1.1\r\nHost: x\r\n\r\n")
s.settimeout(5)
print(s.recv(4096).decode(errors="replace"))
EOF
)
	expect_match "refused" '^HTTP/1.1 503 ' "$out"
	expect_match "names the limit" \
	    '"limit":"max_connections_per_address","max":2' "$out"
	expect_eq "counted" 1 "$(metric per_address)"
	out=$(curl -sS --unix-socket "$SOCK" http://qsup/v1/healthz)
	expect_match "the unix socket still answers" '"ok":true' "$out"
	serve_stop
}

# A JSON body that stops after 10 of its 100 bytes: 408 at
# --body-timeout, and the connection closed.
test_stalled_body() {
	local out
	serve_start --body-timeout 1
	out=$(py <<'EOF'
import socket, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
    "Content-Length: 100\r\n\r\n{\"name\":\"a" % token).encode())
t0 = time.time()
s.settimeout(10)
got = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    got += b
print("closed at %.1f" % (time.time() - t0))
print(got.decode(errors="replace"))
EOF
)
	expect_match "cut at the deadline" '^closed at (0\.9|1\.[0-9])$' \
	    "$(head -1 <<<"$out")"
	expect_match "408" '^HTTP/1.1 408 Request Timeout' "$out"
	expect_match "names the limit" '"limit":"body_timeout","max":1' "$out"
	expect_eq "counted" 1 "$(metric body_timeout)"
	curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    http://qsup/v1/sandboxes >"$S/list"
	expect_eq "no sandbox made of it" '{"sandboxes":[]}' "$(cat "$S/list")"
	serve_stop
}

# Still so with the deadlines: a 100 MB JSON body is refused (413) at
# once, from its head, and the server does not grow reading it.
test_big_body_413() {
	local out rss
	serve_start --body-timeout 1
	out=$(py <<'EOF'
import socket, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("POST /v1/sandboxes HTTP/1.1\r\nHost: x\r\n"
    "Authorization: Bearer %s\r\nContent-Type: application/json\r\n"
    "Content-Length: 100000000\r\n\r\n" % token).encode())
t0, got, piece = time.time(), b"", b" " * 65536
s.setblocking(False)
try:
    for _ in range(1526):
        try:
            s.send(piece)
        except BlockingIOError:
            time.sleep(0.01)
        try:
            got += s.recv(4096)
        except BlockingIOError:
            pass
        if b"}" in got:
            break
except OSError:
    pass
print("answered at %.1f" % (time.time() - t0))
print(got.decode(errors="replace"))
EOF
)
	rss=$(awk '/VmRSS/ {print $2}' "/proc/$SERVE_PID/status")
	expect_match "at once" '^answered at [01]\.' "$(head -1 <<<"$out")"
	expect_match "413" '^HTTP/1.1 413 ' "$out"
	expect_match "names the limit" '"limit":"max_body"' "$out"
	expect_eq "server RSS bounded (${rss} kB)" 1 "$((rss < 100000))"
	serve_stop
}

# The event stream is quiet (its keep-alive comment comes every 15 s):
# every timeout at 1 s, it is still open after 4.
test_quiet_stream_stays() {
	local out
	serve_start --head-timeout 1 --idle-timeout 1 --body-timeout 1
	out=$(py <<'EOF'
import socket, sys, time
port, token = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.sendall(("GET /v1/events HTTP/1.1\r\nHost: x\r\n"
    "Authorization: Bearer %s\r\n\r\n" % token).encode())
s.settimeout(4)
got = b""
try:
    while True:
        b = s.recv(4096)
        if not b:
            print("closed")
            break
        got += b
except socket.timeout:
    print("open")
print(got.decode(errors="replace"))
EOF
)
	expect_eq "open past every timeout" open "$(head -1 <<<"$out")"
	expect_match "the stream began" 'qsup events' "$out"
	expect_eq "nothing closed for idleness" 0 "$(metric idle_timeout)"
	serve_stop
}

# Descriptors: each sandbox holds about 21 in the server, and 128 creates
# at once under the usual soft limit of 1024 stopped at 46 ("socketpair:
# Too many open files"). A server whose limits need more raises its soft
# limit (within the hard one, and not past what they need); one whose
# hard limit is short says so when it starts, naming max_sandboxes.
test_open_files() {
	local old soft
	old=$(ulimit -Sn)
	[ "$(ulimit -Hn)" = unlimited ] || [ "$(ulimit -Hn)" -ge 4096 ] ||
	    { fail "the hard limit of open files, $(ulimit -Hn), is under 4096"; return; }
	ulimit -Sn 256
	serve_start --max-sandboxes 128 --max-connections 100
	ulimit -Sn "$old"
	soft=$(awk '/^Max open files/ {print $4}' "/proc/$SERVE_PID/limits")
	# 128 x (16 ports + 8) + 100 connections + 64 of its own.
	expect_eq "soft limit raised to what the limits need" 3236 "$soft"
	expect_eq "no warning" "" "$(grep 'open files' "$S/serve.log")"
	serve_stop
	# The default limits need less than the usual 1024: left alone.
	ulimit -Sn 1024
	serve_start
	ulimit -Sn "$old"
	soft=$(awk '/^Max open files/ {print $4}' "/proc/$SERVE_PID/limits")
	expect_eq "soft limit left as it was" 1024 "$soft"
	serve_stop
	# A hard limit of 1024: raised to it, and the shortfall said.
	(
		ulimit -n 1024
		"$QSUP" serve --listen "unix:$S/h.sock" --token-file "$S/token" \
		    --max-sandboxes 128 >"$S/hard.log" 2>&1 &
		pid=$!
		for _ in $(seq 1 200); do
			[ -S "$S/h.sock" ] && break
			sleep 0.05
		done
		kill -TERM "$pid"
		wait "$pid"
	)
	expect_match "the shortfall said" \
	    'open files: the limit is 1024, and 128 sandboxes \(max_sandboxes\) with 256 connections may need 3392; creates past about 29 sandboxes may fail' \
	    "$(cat "$S/hard.log")"
}

for t in test_slow_head test_idle_flood test_per_address_cap \
    test_stalled_body test_big_body_413 test_quiet_stream_stays \
    test_open_files; do
	run_test "$t"
done
finish
