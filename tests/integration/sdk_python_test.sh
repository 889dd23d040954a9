#!/usr/bin/env bash
# The Python client (contrib/sdk/python): installed offline into a virtual
# environment as its README says, then its unit tests, its live tests
# against a real "qsup serve" on a unix socket and a loopback TCP port
# (every call: sandboxes, exec streams with stdin, a TTY and signals,
# files, events, pause and resume, a snapshot and its restore, a fork,
# errors), and its README's example run as it is written, its output
# compared with the one the README shows.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

SDK=$PWD/contrib/sdk/python
# Debian's python3: its setuptools and wheel build the package with no
# index (another python3 on PATH, pyenv's, may have no wheel module).
PY=${PYTHON:-$(command -v /usr/bin/python3 || command -v python3)}
VENV=$T_TMP/venv
# The python that has the package installed, once test_install made it.
VPY=

# The package installed from its directory, once: VPY.
install() {
	local src=$T_TMP/sdk-src log=$T_TMP/pip.log where version
	[ -z "$VPY" ] || return 0
	# pip builds in the directory it is given (build/, *.egg-info):
	# a copy, so the tree stays as it is and two runs do not race.
	rm -rf "$src"
	cp -r "$SDK" "$src"
	rm -rf "$src/build" "$src"/*.egg-info
	if "$PY" -m venv --system-site-packages "$VENV" >"$log" 2>&1; then
		"$VENV/bin/python" -m pip install --no-build-isolation \
		    --no-index "$src" >>"$log" 2>&1 ||
		    { fail "pip install: $(tail -5 "$log")"; return 1; }
		VPY=$VENV/bin/python
	else
		# No venv module (python3-venv): a directory of its own.
		echo "    no venv ($(tail -1 "$log")): pip install --target"
		"$PY" -m pip install --no-build-isolation --no-index \
		    --target "$T_TMP/site" "$src" >>"$log" 2>&1 ||
		    { fail "pip install --target: $(tail -5 "$log")"; return 1; }
		VPY="env PYTHONPATH=$T_TMP/site $PY"
	fi
	where=$(cd / && $VPY -c 'import qsup_sdk; print(qsup_sdk.__file__)')
	version=$(cd / && $VPY -c 'import importlib.metadata as m
print(m.version("qsup-sdk"))')
	case $where in
	"$T_TMP"/venv/*|"$T_TMP"/site/*) ;;
	*)
		fail "qsup_sdk is imported from '$where', not from the install"
		VPY=
		return 1
		;;
	esac
	echo "    $("$PY" --version), qsup-sdk $version in ${where%/*}"
}

test_install() {
	install
}

# free_port: a loopback TCP port no one listens on now.
free_port() {
	"$PY" -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# py_suite NAME SCRIPT [ARGS]: a python suite of the package, its lines
# shown indented; it must end "N passed, 0 failed" with N > 0.
py_suite() {
	local out last
	install || return
	# Bounded: a suite that hangs fails, naming the test it was in.
	out=$(cd / && timeout -k 10 300 $VPY -u "$@" 2>&1)
	sed 's/^/  /' <<<"$out"
	last=$(tail -n 1 <<<"$out")
	expect_match "${1##*/}'s summary" '^[1-9][0-9]* passed, 0 failed$' "$last"
}

test_unit() {
	py_suite "$SDK/tests/test_sse.py"
}

test_live() {
	local port
	port=$(free_port)
	serve_start --listen "tcp:127.0.0.1:$port"
	QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN \
	    QSUP_TEST_TCP=tcp:127.0.0.1:$port py_suite "$SDK/tests/test_live.py"
	# What a failed test left: nothing kept for the next server.
	for n in a b a-copy; do api DELETE "/v1/sandboxes/$n"; done
	api DELETE /v1/snapshots/s1
	serve_stop
}

# https with the server's certificate given (cacert=), refused without:
# a server of its own on TCP alone (TLS is for TCP listeners only).
test_tls() {
	local srv=$T_TMP/tls pid port out
	install || return
	mkdir -p "$srv"
	chmod 700 "$srv"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	    -keyout "$srv/key.pem" -out "$srv/cert.pem" 2>/dev/null ||
	    { fail "openssl could not make a certificate"; return; }
	port=$(free_port)
	"$QSUP" serve --listen "tcp:127.0.0.1:$port" --token-file "$srv/token" \
	    --tls-cert "$srv/cert.pem" --tls-key "$srv/key.pem" \
	    --record "$T_RECORD" >"$srv/log" 2>&1 &
	pid=$!
	# Up once its health answers over TLS (the client checks the rest).
	timeout 10 sh -c 'until curl -sf --cacert "$1" "$2" >/dev/null; do
	    sleep 0.05; done' - "$srv/cert.pem" \
	    "https://localhost:$port/v1/healthz" ||
	    fail "the TLS server did not come up: $(tail -3 "$srv/log")"
	out=$(cd / && QSUP_TOKEN_FILE=$srv/token timeout 60 $VPY -c '
import sys
from qsup_sdk import Client, ConnectError, NotFound
c = Client(host=sys.argv[1], cacert=sys.argv[2])
print("list", c.list())
print("metrics", "qsup_sandboxes" in c.metrics())
try:
    c.sandbox("nope").exec(["true"])
except NotFound as e:
    print("exec", e.status, e.message)
try:
    Client(host=sys.argv[1]).list()
except ConnectError as e:
    print("no CA:", e)
' "https://localhost:$port" "$srv/cert.pem" 2>&1)
	expect_match "a call over TLS" '^list \[\]$' "$out"
	expect_match "text over TLS" '^metrics True$' "$out"
	expect_match "an error over TLS" '^exec 404 no sandbox named nope$' "$out"
	expect_match "no CA: refused" "^no CA: https://localhost:$port: .*CERTIFICATE_VERIFY_FAILED" "$out"
	kill -TERM "$pid"
	wait "$pid"
	expect_eq "serve's exit status after SIGTERM" 0 "$?"
}

test_readme_example() {
	local got
	install || return
	serve_start
	"$PY" tests/integration/helpers/readme_example.py "$SDK/README.md" \
	    python >"$S/example.py" || fail "no example in the README"
	"$PY" tests/integration/helpers/readme_example.py "$SDK/README.md" \
	    text >"$S/want" || fail "no output of the example in the README"
	[ -s "$S/example.py" ] && [ -s "$S/want" ] || fail "an empty block"
	got=$(cd "$S" && QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN \
	    timeout -k 10 300 $VPY example.py 2>&1)
	expect_eq "the example's output" "$(cat "$S/want")" "$got"
	api GET /v1/sandboxes
	expect_eq "the example leaves no sandbox" '{"sandboxes":[]}' "$BODY"
	api DELETE /v1/sandboxes/demo
	serve_stop
}

for t in ${TESTS:-test_install test_unit test_live test_tls \
    test_readme_example}; do
	run_test "$t"
done
finish
