#!/usr/bin/env bash
# The TypeScript client (contrib/sdk/typescript) against a real qsup
# serve: its generated types are what openapi-typescript makes of
# docs/openapi.json now, it compiles, its README's example runs as
# written and prints what the README says, and its calls (sandboxes,
# execs with stdin, a terminal and signals, files, errors, events over
# both the unix socket and TCP; pause, snapshots, fork, persistent over
# TCP) do what the API says.
# Without node 18+ and npm, or with the npm registry out of reach, it says
# in one line what is missing and passes, as tests/contract/lint.sh does.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

SDK_SRC=$PWD/contrib/sdk/typescript
# A copy at the same depth under build/, so the generate script's
# ../../../docs/openapi.json is the tree's own, and node_modules stays
# out of the source tree (kept between runs, refreshed when the lock
# changes).
SDK_ROOT=$PWD/build/sdk-typescript
SDK=$SDK_ROOT/contrib/sdk/typescript

skip() {
	echo "sdk_typescript: skipped: $*"
	echo "0 passed, 0 failed"
	exit 0
}

sdk_setup() {
	local major lock out
	command -v node >/dev/null ||
	    skip "node is not installed (./build.sh test installs Debian's nodejs and npm as root)"
	command -v npm >/dev/null ||
	    skip "npm is not installed (./build.sh test installs Debian's nodejs and npm as root)"
	major=$(node -p 'process.versions.node.split(".")[0]')
	[ "$major" -ge 18 ] 2>/dev/null ||
	    skip "node $(node --version) is older than 18"
	mkdir -p "$SDK"
	ln -sfn "$PWD/docs" "$SDK_ROOT/docs"
	rm -rf "$SDK/src" "$SDK/test" "$SDK/dist"
	cp -r "$SDK_SRC/package.json" "$SDK_SRC/package-lock.json" \
	    "$SDK_SRC/tsconfig.json" "$SDK_SRC/README.md" "$SDK_SRC/src" \
	    "$SDK_SRC/test" "$SDK/"
	lock=$(sha256sum <"$SDK/package-lock.json")
	[ "$(cat "$SDK/node_modules/.qsup-lock" 2>/dev/null)" = "$lock" ] &&
	    return 0
	if ! out=$(cd "$SDK" && timeout 300 npm ci --no-audit --no-fund 2>&1); then
		skip "npm ci could not install the SDK's devDependencies: $(grep -m1 -i 'err' <<<"$out" | cut -c1-200)"
	fi
	echo "$lock" >"$SDK/node_modules/.qsup-lock"
}

# sdk_serve: a server on a unix socket and on TCP 127.0.0.1:$PORT.
sdk_serve() {
	serve_start --listen tcp:127.0.0.1:0
	PORT=$(sed -n 's/.*listening on tcp:127\.0\.0\.1:\([0-9]*\).*/\1/p' \
	    "$S/serve.log" | head -1)
	[ -n "$PORT" ] ||
	    fail "the server did not come up on TCP: $(cat "$S/serve.log")"
}

# sdk_node HOST GROUP: test/sdk_test.mjs's checks of GROUP against HOST.
sdk_node() {
	local out rc=0
	out=$(cd "$SDK" && QSUP_HOST=$1 QSUP_TOKEN_FILE=$S/token \
	    timeout 600 node test/sdk_test.mjs "$2" 2>&1) || rc=$?
	echo "$out" | grep -v '^    ok ' | sed 's/^/  /'
	echo "    ($(grep -c '^    ok ' <<<"$out") checks passed)"
	[ "$rc" = 0 ] || fail "$2: $rc checks failed"
}

test_types_generated() {
	local out
	out=$(cd "$SDK" && npm run -s generate 2>&1) ||
	    fail "npm run generate: $out"
	diff -u "$SDK_SRC/src/openapi.ts" "$SDK/src/openapi.ts" >"$T_TMP/types.diff" ||
	    fail "src/openapi.ts is not what openapi-typescript makes of docs/openapi.json now (cd contrib/sdk/typescript && npm ci && npm run generate): $(head -40 "$T_TMP/types.diff")"
}

test_compiles() {
	local out
	out=$(cd "$SDK" && npm run -s build 2>&1) || fail "tsc: $out"
	[ -f "$SDK/dist/index.js" ] && [ -f "$SDK/dist/index.d.ts" ] ||
	    fail "no dist/index.js and index.d.ts"
	# Nothing at run time but node's own modules.
	out=$(grep -ho 'from "[^"]*"' "$SDK"/dist/*.js | sort -u |
	    grep -v -e 'from "\./' -e 'from "node:')
	expect_eq "the modules dist/ imports" "" "$out"
}

test_sse_reader() {
	[ -f "$SDK/dist/index.js" ] || (cd "$SDK" && npm run -s build)
	S=$T_TMP/sse
	sdk_node unix:/nonexistent sse
}

test_readme_example() {
	local out rc=0
	[ -f "$SDK/dist/index.js" ] || (cd "$SDK" && npm run -s build)
	# The first js block, verbatim, and the text block after it.
	awk '/^```js$/ && !n {on=1; n=1; next} on && /^```$/ {exit} on' \
	    "$SDK_SRC/README.md" >"$SDK/example.mjs"
	awk '/^```js$/ {js=1} js && /^```text$/ {on=1; next} on && /^```$/ {exit} on' \
	    "$SDK_SRC/README.md" >"$T_TMP/example.expected"
	[ -s "$SDK/example.mjs" ] && [ -s "$T_TMP/example.expected" ] ||
	    fail "no js example and text output in $SDK_SRC/README.md"
	sdk_serve
	# Over TCP, as QSUP_HOST says; the package imported by its name.
	out=$(cd "$SDK" && QSUP_HOST=http://127.0.0.1:$PORT \
	    QSUP_TOKEN_FILE=$S/token timeout 300 node example.mjs 2>"$S/err") ||
	    rc=$?
	expect_eq "the example's exit status ($(head -c 600 "$S/err"))" 0 "$rc"
	expect_eq "the example's output" "$(cat "$T_TMP/example.expected")" "$out"
	api GET /v1/sandboxes
	expect_eq "nothing left" '{"sandboxes":[]}' "$BODY"
	serve_stop
}

test_sdk_unix() {
	[ -f "$SDK/dist/index.js" ] || (cd "$SDK" && npm run -s build)
	sdk_serve
	sdk_node "unix:$SOCK" basic
	serve_stop
	expect_match "the events stream saw t1 go" '"name":"t1","state":"deleted"' \
	    "$(cat "$S/events")"
}

# The same over TCP: fetch's streams (stdin and files sent as they are
# read, exec output and events read as they come, an abort mid-stream).
test_sdk_tcp() {
	[ -f "$SDK/dist/index.js" ] || (cd "$SDK" && npm run -s build)
	sdk_serve
	sdk_node "http://127.0.0.1:$PORT" basic
	serve_stop
}

test_sdk_tcp_state() {
	[ -f "$SDK/dist/index.js" ] || (cd "$SDK" && npm run -s build)
	sdk_serve
	sdk_node "tcp:127.0.0.1:$PORT" state
	api GET /v1/snapshots
	expect_eq "no snapshot left" '{"snapshots":[]}' "$BODY"
	serve_stop
}

sdk_setup
for t in ${TESTS:-test_types_generated test_compiles test_sse_reader \
    test_readme_example test_sdk_unix test_sdk_tcp test_sdk_tcp_state}; do
	run_test "$t"
done
finish
