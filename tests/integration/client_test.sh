#!/usr/bin/env bash
# The serve API's client against a real qsup serve and real guests:
# sandbox create, ls, exec (output, exit status, stdin, a TTY, signals),
# cp both ways (0 bytes, 100 MB), rm, and the errors a user meets (no
# server there, a wrong token, no such sandbox or file).
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# serve_start NAME: a qsup serve of this test's own, on a socket outside
# the run directory (so expect_clean sees only what the sandboxes left),
# QSUP_HOST and QSUP_TOKEN_FILE pointing at it; 0 once it answers.
serve_start() {
	SRV=$T_TMP/$1/srv
	mkdir -p "$SRV"
	chmod 700 "$SRV"
	export QSUP_HOST=unix:$SRV/s.sock QSUP_TOKEN_FILE=$SRV/token
	unset QSUP_TOKEN
	serve_launch "$SRV/s.sock" "$SRV/token" "$SRV/log"
	local rc=$?
	SRV_PID=$SERVE_PID
	[ $rc != 0 ] || return 0
	fail "qsup serve did not answer: $(tail -5 "$SRV/log")"
	return 1
}

# serve_stop: SIGTERM, which tears every sandbox down; it exits 0.
serve_stop() {
	local st
	kill -TERM $SRV_PID
	wait $SRV_PID
	st=$?
	expect_eq "qsup serve's exit status" 0 $st
	unset QSUP_HOST QSUP_TOKEN_FILE
}

test_lifecycle() {
	local out err st
	serve_start lifecycle || return
	out=$("$QSUP" sandbox create c1 2>"$T_TMP/err")
	expect_eq "create's status" 0 $?
	expect_eq "create prints the name" c1 "$out"
	out=$("$QSUP" sandbox create --json 2>>"$T_TMP/err")
	expect_eq "create --json's status" 0 $?
	expect_match "the server's name" '"name":"sb-[0-9]+"' "$out"
	expect_match "ready" '"state":"ready"' "$out"
	out=$("$QSUP" ls)
	expect_match "ls's header" '^NAME +STATE +ACCEL +START +CREATED$' "$out"
	expect_match "ls: c1" '^c1 +ready +(kvm|tcg) +(cold|warm|template-build) +20[0-9-]+T' "$out"
	expect_match "ls: sb-N" '^sb-[0-9]+ +ready ' "$out"
	out=$("$QSUP" ls --json)
	expect_eq "ls --json lists two" 2 "$(python3 -c \
	    'import json,sys; print(len(json.load(sys.stdin)["sandboxes"]))' \
	    <<<"$out")"
	out=$("$QSUP" sandbox inspect c1)
	expect_match "inspect" '"name":"c1"' "$out"

	# The command's output, each stream to ours, and its status.
	out=$("$QSUP" exec c1 -- sh -c 'echo out; echo err >&2; exit 3' \
	    2>"$T_TMP/err")
	st=$?
	expect_eq "exec's status" 3 $st
	expect_eq "exec's stdout" out "$out"
	expect_eq "exec's stderr" err "$(cat "$T_TMP/err")"
	out=$("$QSUP" exec -e A=1 -e B='x y' -w /tmp c1 -- sh -c \
	    'echo "$A|$B|$(pwd)"')
	expect_eq "-e and -w" "1|x y|/tmp" "$out"
	"$QSUP" exec c1 -- sh -c 'kill -9 $$'
	expect_eq "killed by signal 9" 137 $?
	err=$("$QSUP" exec c1 -- /nonexistent/cmd 2>&1)
	expect_eq "not found" 127 $?
	expect_match "not found, said" '^qsup: .*nonexistent' "$err"
	"$QSUP" exec --timeout 1 c1 -- sleep 30
	expect_eq "its timeout" 124 $?
	# Output in many pieces, whole and in order.
	out=$("$QSUP" exec c1 -- sh -c 'seq 1 200000' | sha256sum)
	expect_eq "seq's output" "$(seq 1 200000 | sha256sum)" "$out"
	# A reader that waits 5 s: the output waits too, not in qsup's memory
	# (14 MB of RSS here, 33 MB or more when qsup does not pause).
	out=$(python3 - "$QSUP" <<-'EOF'
	import resource, subprocess, sys, time
	p = subprocess.Popen([sys.argv[1], "exec", "c1", "--", "head", "-c",
	    "50000000", "/dev/zero"], stdout=subprocess.PIPE)
	time.sleep(5)
	n = 0
	while True:
	    d = p.stdout.read(65536)
	    if not d:
	        break
	    n += len(d)
	print(n, p.wait(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
	EOF
	)
	expect_eq "50 MB to a slow reader: all of it, status 0" "50000000 0" \
	    "${out% *}"
	[ "${out##* }" -lt 25000 ] ||
	    fail "qsup held the output: max RSS ${out##* } KB for 50 MB"
	# A reader that goes away: qsup ends as a pipeline's writer does.
	"$QSUP" exec c1 -- sh -c 'while :; do echo y; done' | head -n 2 \
	    >/dev/null
	expect_eq "exec into a closed pipe" 141 "${PIPESTATUS[0]}"

	err=$("$QSUP" exec nosuch -- true 2>&1)
	expect_eq "exec in no sandbox" 125 $?
	expect_match "no sandbox, said" '^qsup: .*nosuch' "$err"
	err=$("$QSUP" sandbox create c1 2>&1)
	expect_eq "a name in use" 1 $?
	expect_match "a name in use, said" '^qsup: ' "$err"

	# rm: each named; one that fails does not stop the others.
	out=$("$QSUP" rm c1 nosuch "$(python3 -c 'import json,sys;
print([s["name"] for s in json.load(sys.stdin)["sandboxes"]
    if s["name"] != "c1"][0])' <<<"$("$QSUP" ls --json)")" 2>"$T_TMP/err")
	expect_eq "rm with one missing" 1 $?
	expect_match "rm printed c1" '^c1$' "$out"
	expect_match "rm printed sb-N" '^sb-[0-9]+$' "$out"
	expect_match "rm said which failed" '^qsup: nosuch: ' "$(cat "$T_TMP/err")"
	out=$("$QSUP" ls)
	expect_eq "ls when empty" "NAME  STATE  ACCEL  START  CREATED" "$out"
	expect_eq "ls --json when empty" '{"sandboxes":[]}' "$("$QSUP" ls --json)"
	serve_stop
}

test_stdin() {
	local out
	serve_start stdin || return
	"$QSUP" sandbox create s1 >/dev/null || fail "create"
	head -c 3000000 /dev/urandom >"$T_TMP/in"
	out=$("$QSUP" exec -i s1 -- sha256sum <"$T_TMP/in")
	expect_eq "stdin, 3 MB through sha256sum" \
	    "$(sha256sum <"$T_TMP/in")" "$out"
	out=$(printf 'a\nb\n' | "$QSUP" exec -i s1 -- sh -c 'read x; echo "1$x"; read y; echo "2$y"; cat')
	expect_eq "stdin from a pipe" "$(printf '1a\n2b')" "$out"
	out=$("$QSUP" exec -i s1 -- wc -c </dev/null)
	expect_eq "stdin at its end at once" 0 "$out"
	# Without -i the command reads end of file, whatever ours holds.
	out=$(echo hidden | timeout 60 "$QSUP" exec s1 -- cat)
	expect_eq "no -i: its status" 0 $?
	expect_eq "no -i, no stdin" "" "$out"
	# A command that stops reading: its exit ends qsup, stdin or not.
	out=$(yes | "$QSUP" exec -i s1 -- head -n 3 | wc -l)
	expect_eq "a command that reads only some" 3 "$out"
	"$QSUP" rm s1 >/dev/null
	serve_stop
}

# exec -t under a pty of python's: the terminal's size and TERM, raw mode
# while it runs, the terminal as it was afterwards, SIGWINCH a resize.
test_tty() {
	local out
	serve_start tty || return
	"$QSUP" sandbox create t1 >/dev/null || fail "create"
	out=$(TERM=xterm-test python3 - "$QSUP" "$T_TMP" <<-'EOF'
	import fcntl, os, pty, select, signal, struct, sys, termios, time
	qsup, tmp = sys.argv[1], sys.argv[2]
	script = ('stty -g >%s/before; %s exec -i -t t1 -- sh -c '
	    '"stty size; tty; echo TERM=\\$TERM; read x; stty size; '
	    'echo got \\$x; exit 5"; echo rc=$?; stty -g >%s/after'
	    % (tmp, qsup, tmp))
	pid, fd = pty.fork()
	if pid == 0:
	    fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 33, 101, 0, 0))
	    os.execv("/bin/sh", ["sh", "-c", script])
	out = b""
	def read_until(pat, t):
	    global out
	    end = time.time() + t
	    while pat not in out and time.time() < end:
	        r, _, _ = select.select([fd], [], [], 0.1)
	        if r:
	            try:
	                d = os.read(fd, 4096)
	            except OSError:
	                return
	            if not d:
	                return
	            out += d
	read_until(b"TERM=", 60)
	fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
	os.killpg(os.getpgid(pid), signal.SIGWINCH)
	time.sleep(1)
	os.write(fd, b"hello\r")
	read_until(b"rc=", 60)
	os.waitpid(pid, 0)
	sys.stdout.write(out.decode(errors="replace"))
	EOF
	)
	expect_match "the terminal's size" '^33 101' "$out"
	expect_match "a terminal" '^/dev/pts/' "$out"
	expect_match "TERM" '^TERM=xterm-test' "$out"
	expect_match "the resize" '^40 120' "$out"
	expect_match "typed into it" '^got hello' "$out"
	expect_match "its status" '^rc=5' "$out"
	expect_eq "the terminal restored" "$(cat "$T_TMP/before")" \
	    "$(cat "$T_TMP/after")"
	"$QSUP" rm t1 >/dev/null
	serve_stop
}

# SIGINT goes to the command; a second one makes qsup give up.
test_signals() {
	local pid st
	serve_start signals || return
	"$QSUP" sandbox create g1 >/dev/null || fail "create"
	"$QSUP" exec g1 -- sh -c 'trap "echo got-int; exit 7" INT;
	    echo ready; while :; do sleep 0.1; done' >"$T_TMP/out" &
	pid=$!
	for i in $(seq 1 600); do
		grep -q ready "$T_TMP/out" 2>/dev/null && break
		sleep 0.05
	done
	kill -INT $pid
	wait $pid
	st=$?
	expect_eq "the command's status after its trap" 7 $st
	expect_match "the command got SIGINT" '^got-int$' "$(cat "$T_TMP/out")"
	"$QSUP" exec g1 -- sh -c 'trap "" INT TERM; echo ready;
	    while :; do sleep 0.1; done' >"$T_TMP/out2" &
	pid=$!
	for i in $(seq 1 600); do
		grep -q ready "$T_TMP/out2" 2>/dev/null && break
		sleep 0.05
	done
	kill -INT $pid
	sleep 0.5
	kill -0 $pid 2>/dev/null || fail "one ignored SIGINT ended qsup"
	kill -INT $pid
	wait $pid
	expect_eq "a second SIGINT: given up" 130 $?
	"$QSUP" rm g1 >/dev/null
	serve_stop
}

test_cp() {
	local out err
	serve_start cp || return
	"$QSUP" sandbox create f1 >/dev/null || fail "create"
	: >"$T_TMP/empty"
	"$QSUP" cp "$T_TMP/empty" f1:/tmp/empty
	expect_eq "cp of 0 bytes in" 0 $?
	expect_eq "0 bytes in the guest" 0 "$("$QSUP" exec f1 -- stat -c %s /tmp/empty)"
	"$QSUP" cp f1:/tmp/empty "$T_TMP/empty.back"
	expect_eq "cp of 0 bytes out" 0 $?
	[ -f "$T_TMP/empty.back" ] && [ ! -s "$T_TMP/empty.back" ] ||
	    fail "0 bytes out: not an empty file"

	head -c 100000000 /dev/urandom >"$T_TMP/big"
	chmod 0750 "$T_TMP/big"
	"$QSUP" cp "$T_TMP/big" f1:/tmp/
	expect_eq "cp of 100 MB in" 0 $?
	out=$("$QSUP" exec f1 -- sh -c 'sha256sum /tmp/big; stat -c %a /tmp/big')
	expect_eq "100 MB in: the same bytes" \
	    "$(sha256sum <"$T_TMP/big" | cut -d' ' -f1)" \
	    "$(head -n 1 <<<"$out" | cut -d' ' -f1)"
	expect_eq "its mode" 750 "$(tail -n 1 <<<"$out")"
	mkdir "$T_TMP/back"
	"$QSUP" cp f1:/tmp/big "$T_TMP/back"
	expect_eq "cp of 100 MB out" 0 $?
	cmp -s "$T_TMP/big" "$T_TMP/back/big" || fail "100 MB out: not the same"
	out=$("$QSUP" cp f1:/tmp/big - | sha256sum)
	expect_eq "out to stdout" "$(sha256sum <"$T_TMP/big")" "$out"
	"$QSUP" cp - f1:/tmp/piped <"$T_TMP/big"
	expect_eq "cp in from stdin" 0 $?
	out=$("$QSUP" exec f1 -- sh -c 'sha256sum </tmp/piped; stat -c %a /tmp/piped')
	expect_eq "from stdin: the same bytes" "$(sha256sum <"$T_TMP/big")" \
	    "$(head -n 1 <<<"$out")"
	expect_eq "from stdin: mode 0644" 644 "$(tail -n 1 <<<"$out")"
	# The guest's /tmp is in its RAM: room for two of them at most.
	"$QSUP" exec f1 -- rm /tmp/big /tmp/piped
	cat "$T_TMP/big" | "$QSUP" cp - f1:/tmp/piped2
	expect_eq "cp in from a pipe" 0 $?
	expect_eq "from a pipe: its size" 100000000 \
	    "$("$QSUP" exec f1 -- stat -c %s /tmp/piped2)"

	# Failures: said, status 1, nothing left behind.
	err=$("$QSUP" cp f1:/nonexistent "$T_TMP/back/x" 2>&1)
	expect_eq "cp of a missing file" 1 $?
	expect_match "a missing file, said" '^qsup: f1:/nonexistent: ' "$err"
	expect_eq "nothing left after a failed cp" "big" "$(ls -A "$T_TMP/back")"
	err=$("$QSUP" cp "$T_TMP/empty" f1:/nonexistent/dir/x 2>&1)
	expect_eq "cp into a missing directory" 1 $?
	expect_match "a missing directory, said" '^qsup: f1:/nonexistent/dir/x: ' "$err"
	err=$("$QSUP" cp "$T_TMP/empty" "$T_TMP/empty2" 2>&1)
	expect_eq "cp with no sandbox side" 125 $?
	"$QSUP" rm f1 >/dev/null
	serve_stop
}

test_errors() {
	local err
	err=$(QSUP_HOST=unix:$T_TMP/none.sock "$QSUP" ls 2>&1)
	expect_eq "no server: status" 125 $?
	expect_eq "no server: said" "qsup: no qsup serve at unix:$T_TMP/none.sock: no such file or directory; start one with qsup serve" "$err"
	err=$(QSUP_HOST=http://127.0.0.1:1 "$QSUP" exec x -- true 2>&1)
	expect_eq "no server on TCP: status" 125 $?
	expect_match "no server on TCP: said" '^qsup: no qsup serve at http://127.0.0.1:1: connection refused; start one with qsup serve$' "$err"
	err=$("$QSUP" ls --host bogus 2>&1)
	expect_eq "a bad host" 125 $?
	expect_match "a bad host, said" '^qsup: bogus: not a host' "$err"

	serve_start errors || return
	err=$(QSUP_TOKEN=wrong "$QSUP" ls 2>&1)
	expect_eq "a wrong token: status" 1 $?
	expect_match "a wrong token: said" '^qsup: the server at unix:.* refused the token \(401\)' "$err"
	err=$(QSUP_TOKEN_FILE=$T_TMP/none "$QSUP" ls 2>&1)
	expect_eq "no token: status" 1 $?
	expect_match "no token: said" "^qsup: no token: QSUP_TOKEN is not set and $T_TMP/none: No such file" "$err"
	err=$("$QSUP" sandbox create --set nosuchsetting=1 x 2>&1)
	expect_eq "a bad setting" 1 $?
	expect_match "a bad setting, said" 'nosuchsetting' "$err"
	err=$("$QSUP" exec 2>&1)
	expect_eq "exec without a name" 125 $?
	expect_match "exec's usage" '^qsup: usage: qsup exec ' "$err"
	serve_stop
}

# tcp_serve NAME ARGS...: a server on a loopback port of its own; PORT.
tcp_serve() {
	SRV=$T_TMP/$1/srv
	shift
	mkdir -p "$SRV"
	chmod 700 "$SRV"
	"$QSUP" serve --listen tcp:127.0.0.1:0 --token-file "$SRV/token" \
	    --record "$T_RECORD" "$@" \
	    >"$SRV/log" 2>&1 &
	SRV_PID=$!
	PORT=
	for _ in $(seq 1 200); do
		PORT=$(sed -n 's/.*listening on tcp:127.0.0.1:\([0-9]*\).*/\1/p' \
		    "$SRV/log")
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	export QSUP_TOKEN_FILE=$SRV/token
	[ -n "$PORT" ] || fail "no port: $(tail -3 "$SRV/log")"
}

# The same client over TCP, and over TLS with the server's certificate.
test_tcp_and_tls() {
	local out err
	tcp_serve tcp
	out=$("$QSUP" ls --host "http://127.0.0.1:$PORT")
	expect_eq "ls over TCP" "NAME  STATE  ACCEL  START  CREATED" "$out"
	serve_stop
	mkdir -p "$T_TMP/tls"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	    -keyout "$T_TMP/tls/key.pem" -out "$T_TMP/tls/cert.pem" \
	    2>/dev/null || fail "openssl could not make a certificate"
	tcp_serve tls --tls-cert "$T_TMP/tls/cert.pem" \
	    --tls-key "$T_TMP/tls/key.pem"
	export QSUP_HOST=https://localhost:$PORT
	out=$("$QSUP" sandbox create --cacert "$T_TMP/tls/cert.pem" tl1)
	expect_eq "create over TLS" tl1 "$out"
	out=$(QSUP_CACERT=$T_TMP/tls/cert.pem "$QSUP" exec tl1 -- sh -c \
	    'seq 1 50000; exit 4' | sha256sum; exit "${PIPESTATUS[0]}")
	expect_eq "exec over TLS: its status" 4 $?
	expect_eq "exec over TLS: its output" "$(seq 1 50000 | sha256sum)" "$out"
	err=$("$QSUP" ls 2>&1)
	expect_eq "TLS without the CA: status" 125 $?
	expect_match "TLS without the CA: said" "^qsup: https://localhost:$PORT: .*certificate" "$err"
	QSUP_CACERT=$T_TMP/tls/cert.pem "$QSUP" rm tl1 >/dev/null
	serve_stop
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
