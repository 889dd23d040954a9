#!/usr/bin/env bash
# "qsup serve --e2b" driven by E2B's own SDK (npm e2b@2.51.0, installed
# from the npm registry under build/e2b-sdk), unchanged, through the
# environment docs/e2b.md gives: sandboxes made, commands run (output
# streamed, stdin, exit statuses, a kill), files written, read, listed,
# moved and removed, time limits, pause and resume, and E2B-shaped
# refusals of what qsup does not do. Without node 18+ and npm, or with
# the registry out of reach, it says in one line what is missing and
# passes (as sdk_typescript_test.sh does).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

# E2B's routes are E2B's API, not docs/openapi.json's: their exchanges
# are recorded apart, out of the contract check's way.
T_RECORD=$T_TMP/e2b-record.jsonl
E2B_DIR=$PWD/build/e2b-sdk
E2B_VERSION=2.51.0

skip() {
	echo "e2b: skipped: $*"
	echo "0 passed, 0 failed"
	exit 0
}

e2b_setup() {
	local major out have
	command -v node >/dev/null ||
	    skip "node is not installed (./build.sh test installs Debian's nodejs and npm as root)"
	command -v npm >/dev/null ||
	    skip "npm is not installed (./build.sh test installs Debian's nodejs and npm as root)"
	major=$(node -p 'process.versions.node.split(".")[0]')
	[ "$major" -ge 18 ] 2>/dev/null ||
	    skip "node $(node --version) is older than 18"
	mkdir -p "$E2B_DIR"
	cp tests/integration/e2b/package.json tests/integration/e2b/sdk_test.mjs \
	    "$E2B_DIR/"
	have=$(node -p "require('$E2B_DIR/node_modules/e2b/package.json').version" \
	    2>/dev/null)
	[ "$have" = "$E2B_VERSION" ] && return 0
	if ! out=$(cd "$E2B_DIR" && timeout 300 npm install --no-audit \
	    --no-fund --no-package-lock 2>&1); then
		skip "npm could not install e2b@$E2B_VERSION from the registry: $(grep -m1 -i 'err' <<<"$out" | cut -c1-200)"
	fi
}

# e2b_serve: a server with --e2b on the unix socket and 127.0.0.1:$PORT.
e2b_serve() {
	serve_start --e2b --listen tcp:127.0.0.1:0 "$@"
	PORT=$(sed -n 's/.*listening on tcp:127\.0\.0\.1:\([0-9]*\).*/\1/p' \
	    "$S/serve.log" | head -1)
	U=http://127.0.0.1:$PORT
	[ -n "$PORT" ] || return 1	# serve_start said why
}

# e2b_node GROUP: sdk_test.mjs's checks of GROUP, through the SDK.
e2b_node() {
	local out rc=0
	out=$(cd "$E2B_DIR" && E2B_API_KEY=$TOKEN E2B_API_URL=$U \
	    E2B_SANDBOX_URL=$U timeout 900 node sdk_test.mjs "$1" 2>&1) || rc=$?
	echo "$out" | grep -v '^    ok ' | sed 's/^/  /'
	echo "    ($(grep -c '^    ok ' <<<"$out") checks passed)"
	[ "$rc" = 0 ] || fail "$1: $rc checks failed (or node failed: $rc)"
}

# e2b_curl METHOD PATH [ARGS]: $CODE and $BODY, over TCP.
e2b_curl() {
	local m=$1 p=$2
	shift 2
	CODE=$(curl -sS -o "$S/body" -w '%{http_code}' -X "$m" "$@" "$U$p")
	BODY=$(cat "$S/body")
}

# Keys and refusals, E2B-shaped, with no sandbox booted.
test_refusals() {
	local out rc=0
	e2b_serve || return
	e2b_curl GET /v2/sandboxes
	expect_eq "no X-API-KEY" 401 "$CODE"
	expect_match "no X-API-KEY: E2B's error" '"code":401,"message":"X-API-KEY' "$BODY"
	e2b_curl GET /v2/sandboxes -H "X-API-KEY: x$TOKEN"
	expect_eq "a wrong X-API-KEY" 401 "$CODE"
	e2b_curl GET /v2/sandboxes -H "X-API-KEY: $TOKEN"
	expect_eq "list" "200 []" "$CODE $BODY"
	# A chunked body, as the SDK sends its JSON.
	e2b_curl POST /v2/sandboxes -H "X-API-KEY: $TOKEN" \
	    -H 'Transfer-Encoding: chunked' -H 'Content-Type: application/json' \
	    -d '{"templateID":"no-such-tpl"}'
	expect_eq "an unknown template" 404 "$CODE"
	expect_match "an unknown template: named" '"message":"template no-such-tpl: no qsup profile' "$BODY"
	e2b_curl POST /v2/sandboxes -H "X-API-KEY: $TOKEN" \
	    -d '{"templateID":"base","volumeMounts":[{"name":"v","path":"/v"}]}'
	expect_eq "volumeMounts" 400 "$CODE"
	expect_match "volumeMounts: named" '"message":"volumeMounts: not supported' "$BODY"
	e2b_curl POST /v2/sandboxes -H "X-API-KEY: $TOKEN" \
	    -d '{"templateID":"base","timeout":"x"}'
	expect_eq "a bad timeout" 400 "$CODE"
	e2b_curl POST /sandboxes/e2bnone/fork -H "X-API-KEY: $TOKEN"
	expect_eq "fork of a missing sandbox" 404 "$CODE"
	e2b_curl GET /snapshots -H "X-API-KEY: $TOKEN"
	expect_eq "snapshots" 501 "$CODE"
	e2b_curl DELETE /sandboxes/e2bnone -H "X-API-KEY: $TOKEN"
	expect_eq "kill of a missing sandbox" "404" "$CODE"
	expect_match "kill of a missing sandbox: code 404" '"code":404' "$BODY"
	e2b_curl POST /process.Process/Start
	expect_eq "envd without E2b-Sandbox-Id" 400 "$CODE"
	expect_match "envd: Connect's error" '"code":"invalid_argument"' "$BODY"
	e2b_curl POST /filesystem.Filesystem/Stat -H 'E2b-Sandbox-Id: e2bnone'
	expect_eq "envd of a missing sandbox" 404 "$CODE"
	# qsup's own API still wants its bearer token.
	e2b_curl GET /v1/sandboxes
	expect_eq "/v1 without the bearer token" 401 "$CODE"
	api GET /v1/sandboxes
	expect_eq "/v1 with it" "200" "$CODE"
	serve_stop
	out=$("$QSUP" serve --e2b --listen "unix:$T_TMP/x.sock" \
	    --token-file "$T_TMP/x.token" 2>&1) || rc=$?
	expect_eq "--e2b without TCP: refused" 125 "$rc"
	expect_match "--e2b without TCP: says why" 'TCP only' "$out"
	[ ! -e "$T_TMP/x.sock" ] || fail "the refused server left its socket"
}

# E2B's keys count as the bearer token for --max-unauthenticated: an SDK
# client's idle keep-alive connections are not the first closed when
# connections that never authenticate pile up.
test_keys_authenticate() {
	local out
	e2b_serve --max-unauthenticated 2 || return
	out=$(python3 - "$PORT" "$TOKEN" <<'PY'
import socket, sys, time
port, tok = int(sys.argv[1]), sys.argv[2]
req = ("GET /v2/sandboxes HTTP/1.1\r\nHost: x\r\nX-API-KEY: %s\r\n\r\n"
    % tok).encode()
def ask(s):
	got = b""
	try:
		s.sendall(req)
		s.settimeout(10)
		while b"\r\n\r\n" not in got or not got.endswith(b"[]"):
			b = s.recv(4096)
			if not b:
				return "closed"
			got += b
	except OSError as e:
		return "error"
	return got.split(b" ")[1].decode()
# One at a time, as the SDK opens them: each new one is unauthenticated
# until its first request.
sdk, first = [], []
for i in range(6):
	sdk.append(socket.create_connection(("127.0.0.1", port)))
	first.append(ask(sdk[-1]))
print("first:", " ".join(first))
time.sleep(0.3)
quiet = [socket.create_connection(("127.0.0.1", port)) for i in range(6)]
time.sleep(1)
print("again:", " ".join(ask(s) for s in sdk))
PY
)
	echo "$out" | sed 's/^/  /'
	expect_match "six SDK-like connections answered" \
	    'first: 200 200 200 200 200 200' "$out"
	expect_match "each still open after six silent ones came" \
	    'again: 200 200 200 200 200 200' "$out"
	api GET /metrics
	expect_match "E2B's keyed connections are not unauthenticated" \
	    'qsup_connections_unauthenticated [0-2]$' "$(grep -a '^qsup_connections_unauth' <<<"$BODY")"
	serve_stop
}

test_sdk() {
	e2b_serve || return
	e2b_node basic
	api GET /v1/sandboxes
	expect_eq "nothing left" '{"sandboxes":[]}' "$BODY"
	serve_stop
}

# A template on the Debian image (tests/images/debian.sh, cached under
# build/images/): the profile found in the user's profile directory by
# its name, Debian's bash behind the SDK's /bin/bash -l -c.
test_sdk_debian() {
	local img=$PWD/build/images/debian-12.qcow2
	if ! bash tests/images/debian.sh "$img" >"$T_TMP/debian.log" 2>&1; then
		echo "  skip: the Debian test image cannot be built here (tests/images/debian.sh: $(tail -1 "$T_TMP/debian.log"))"
		return
	fi
	mkdir -p "$T_TMP/config/qsup/profiles"
	printf 'return { image = "%s" }\n' "$img" \
	    >"$T_TMP/config/qsup/profiles/debian.lua"
	XDG_CONFIG_HOME=$T_TMP/config e2b_serve || return
	e2b_node debian
	api GET /v1/sandboxes
	expect_eq "nothing left" '{"sandboxes":[]}' "$BODY"
	serve_stop
}

test_sdk_connect() {
	e2b_serve || return
	e2b_node connect
	api GET /v1/sandboxes
	expect_eq "nothing left" '{"sandboxes":[]}' "$BODY"
	serve_stop
}

# A command started by a client that then exits runs on, as on E2B
# (qsup's own API kills an exec whose client goes away).
test_sdk_outlives_client() {
	local out rc=0
	e2b_serve || return
	out=$(cd "$E2B_DIR" && E2B_API_KEY=$TOKEN E2B_API_URL=$U \
	    E2B_SANDBOX_URL=$U timeout 600 node sdk_test.mjs bgstart 2>&1) ||
	    rc=$?
	E2B_BG=$(sed -n 's/^BG //p' <<<"$out")
	export E2B_BG
	[ "$rc" = 0 ] && [ -n "$E2B_BG" ] ||
	    fail "bgstart: $rc: $(grep -m3 -iE "error|fail" <<<"$out")"
	e2b_node bgcheck
	api GET /v1/sandboxes
	expect_eq "nothing left" '{"sandboxes":[]}' "$BODY"
	serve_stop
}

test_sdk_pause() {
	e2b_serve || return
	e2b_node pause
	api GET /v1/sandboxes
	expect_eq "nothing left" '{"sandboxes":[]}' "$BODY"
	serve_stop
}

# https, as docs/e2b.md says: the SDK trusts the server's certificate
# through NODE_EXTRA_CA_CERTS, and refuses it without. A server of its own
# on TCP alone (TLS is for TCP listeners only).
test_sdk_tls() {
	local out rc=0 c=$T_TMP/tls pid
	mkdir -p "$c"
	chmod 700 "$c"
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
	    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
	    -keyout "$c/key.pem" -out "$c/cert.pem" 2>/dev/null ||
	    { fail "openssl could not make a certificate"; return; }
	PORT=$(python3 -c 'import socket; s = socket.socket()
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	"$QSUP" serve --e2b --listen "tcp:127.0.0.1:$PORT" \
	    --token-file "$c/token" --tls-cert "$c/cert.pem" \
	    --tls-key "$c/key.pem" --record "$T_RECORD" >"$c/log" 2>&1 &
	pid=$!
	timeout 10 sh -c 'until curl -sf --cacert "$1" "$2" >/dev/null; do
	    sleep 0.05; done' - "$c/cert.pem" \
	    "https://127.0.0.1:$PORT/v1/healthz" ||
	    fail "the TLS server did not come up: $(tail -3 "$c/log")"
	TOKEN=$(cat "$c/token")
	U=https://127.0.0.1:$PORT
	out=$(cd "$E2B_DIR" && E2B_API_KEY=$TOKEN E2B_API_URL=$U \
	    E2B_SANDBOX_URL=$U timeout 120 node sdk_test.mjs tls 2>&1) || rc=$?
	[ "$rc" != 0 ] || fail "without the CA, the SDK trusted the server"
	expect_match "without the CA: refused by the SDK" \
	    'certificate|CERT' "$out"
	NODE_EXTRA_CA_CERTS=$c/cert.pem e2b_node tls
	kill -TERM "$pid"
	wait "$pid"
	expect_eq "serve's exit status after SIGTERM" 0 "$?"
}

e2b_setup
for t in ${TESTS:-test_refusals test_keys_authenticate test_sdk test_sdk_connect \
    test_sdk_outlives_client test_sdk_debian test_sdk_pause test_sdk_tls}; do
	run_test "$t"
done
finish
