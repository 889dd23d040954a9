#!/usr/bin/env bash
# qsup serve's web console (contrib/console, served at /): its files with
# their types and security headers, without the token, nothing outside its
# directory (.., symbolic links out, hidden files), GET and HEAD only, found
# beside an installed binary, a 404 saying how to build it when it is not
# built; then in Debian's headless chromium, driven by playwright-core
# (tests/integration/console/console_test.mjs): log in, create, see it
# ready from the live events, pause, resume, delete, a wrong token refused,
# a terminal (`echo hi` read back from xterm.js) and a display (noVNC's
# canvas changing), with no CSP violation and no request to another origin.
# Screenshots go to build/test-artifacts/console/.
# Without build/console (./build.sh builds it with npm), the suite is
# skipped in one line; without chromium, npm or node 18, the browser tests.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

CONSOLE=$PWD/build/console
DRIVER_SRC=$PWD/tests/integration/console
DRIVER=$PWD/build/console-test
SHOTS=$PWD/build/test-artifacts/console
CSP="default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

if [ ! -f "$CONSOLE/index.html" ]; then
	echo "console: skipped: build/console is not built (./build.sh builds it: needs npm and the npm registry)"
	echo "0 passed, 0 failed"
	exit 0
fi

# BROWSER_SKIP: why the browser tests cannot run, or empty once
# playwright-core is installed in build/console-test (kept between runs,
# refreshed when the lock changes).
browser_setup() {
	local major lock out
	BROWSER_SKIP=
	[ -x /usr/bin/chromium ] || {
		BROWSER_SKIP="chromium is not installed (./build.sh installs Debian's chromium)"
		return
	}
	command -v node >/dev/null && command -v npm >/dev/null || {
		BROWSER_SKIP="node or npm is not installed"
		return
	}
	major=$(node -p 'process.versions.node.split(".")[0]')
	[ "$major" -ge 18 ] 2>/dev/null || {
		BROWSER_SKIP="node $(node --version) is older than 18"
		return
	}
	mkdir -p "$DRIVER" "$SHOTS"
	cp "$DRIVER_SRC/package.json" "$DRIVER_SRC/package-lock.json" \
	    "$DRIVER_SRC/console_test.mjs" "$DRIVER/"
	lock=$(sha256sum <"$DRIVER/package-lock.json")
	[ "$(cat "$DRIVER/node_modules/.qsup-lock" 2>/dev/null)" = "$lock" ] &&
	    return
	if ! out=$(cd "$DRIVER" && timeout 300 npm ci --ignore-scripts \
	    --no-audit --no-fund 2>&1); then
		BROWSER_SKIP="npm ci could not install playwright-core: $(grep -m1 -i err <<<"$out" | cut -c1-200)"
		return
	fi
	echo "$lock" >"$DRIVER/node_modules/.qsup-lock"
}

# console_serve: a server on a unix socket and on TCP; URL its address.
console_serve() {
	serve_start --listen tcp:127.0.0.1:0
	URL=http://127.0.0.1:$(sed -n \
	    's/.*listening on tcp:127\.0\.0\.1:\([0-9]*\).*/\1/p' \
	    "$S/serve.log" | head -1)
	[ "$URL" != http://127.0.0.1: ] ||
	    fail "the server did not come up on TCP: $(cat "$S/serve.log")"
}

# web PATH [CURL ARGS...]: $CODE, $BODY and $HEAD (the headers) of a
# request to the console, without the token.
web() {
	local p=$1
	shift
	CODE=$(curl -sS --path-as-is -D "$S/head" -o "$S/body" \
	    -w '%{http_code}' "$@" "$URL$p")
	BODY=$(cat "$S/body")
	HEAD=$(tr -d '\r' <"$S/head")
}

# browser GROUP [SANDBOX]: console_test.mjs's checks of GROUP.
browser() {
	local out rc=0
	out=$(cd "$DRIVER" && QSUP_URL=$URL QSUP_TOKEN_FILE=$S/token \
	    QSUP_SHOTS=$SHOTS QSUP_SANDBOX=${2:-web1} \
	    timeout 900 nice node console_test.mjs "$1" 2>&1) || rc=$?
	echo "$out" | grep -v '^    ok ' | sed 's/^/  /'
	echo "    ($(grep -c '^    ok ' <<<"$out") checks passed)"
	[ "$rc" = 0 ] || fail "$1: $rc checks failed"
}

test_static_files() {
	local h
	console_serve
	web /
	expect_eq "/" 200 "$CODE"
	expect_match "/ is the page" '<title>qsup console</title>' "$BODY"
	expect_match "/'s type" '^Content-Type: text/html; charset=utf-8$' "$HEAD"
	for h in "Content-Security-Policy: $CSP" \
	    "X-Content-Type-Options: nosniff" "Referrer-Policy: no-referrer" \
	    "Cross-Origin-Opener-Policy: same-origin"; do
		grep -qxF "$h" <<<"$HEAD" || fail "/ lacks the header $h: $HEAD"
	done
	grep -q '<script>\|<style>\| style=\| on[a-z]*=' "$CONSOLE/index.html" &&
	    fail "index.html has an inline script or style"
	web /console/console.js
	expect_eq "console.js" 200 "$CODE"
	expect_match "a script's type" '^Content-Type: text/javascript; charset=utf-8$' "$HEAD"
	grep -qxF "Content-Security-Policy: $CSP" <<<"$HEAD" ||
	    fail "console.js lacks the CSP"
	web /console/console.css
	expect_match "a style's type" '^Content-Type: text/css; charset=utf-8$' "$HEAD"
	web /console/vendor/novnc/core/rfb.js
	expect_eq "noVNC's module" 200 "$CODE"
	expect_match "a module's type" '^Content-Type: text/javascript; charset=utf-8$' "$HEAD"
	web /console/vendor/xterm/xterm.css
	expect_eq "xterm's style" 200 "$CODE"
	web /console/console.js -I
	expect_eq "HEAD" 200 "$CODE"
	expect_match "HEAD's length" "^Content-Length: $(stat -c %s "$CONSOLE/console.js")$" "$HEAD"
	# -I writes the head where the body would go: nothing after it.
	expect_eq "HEAD has no body" "$HEAD" "$(tr -d '\r' <"$S/body")"
	web /console/console.js -X POST
	expect_eq "POST" 405 "$CODE"
	expect_match "POST's Allow" '^Allow: GET, HEAD$' "$HEAD"
	web /console/../v1/sandboxes
	expect_eq "/console/../ stays in the console" 404 "$CODE"
	expect_match "says the file" '"error":"no file \.\./v1/sandboxes in the console"' "$BODY"
	web /console/%2e%2e/%2e%2e/token
	expect_eq "encoded .." 404 "$CODE"
	web /console/vendor/.././index.html
	expect_eq "a dot segment" 404 "$CODE"
	web /console/nothing.js
	expect_eq "no such file" 404 "$CODE"
	web /console/vendor
	expect_eq "a directory" 404 "$CODE"
	web /v1/sandboxes
	expect_eq "the API still needs the token" 401 "$CODE"
	api GET /v1/sandboxes
	expect_eq "with it" 200 "$CODE"
	serve_stop
}

# An installed layout (PREFIX/bin/qsup, PREFIX/share/qsup/console), as
# make install makes it, with symbolic links in the console's directory:
# one inside is followed, one leading out is refused.
test_installed_and_links() {
	local pre=$T_TMP/prefix QSUP=$T_TMP/prefix/bin/qsup
	mkdir -p "$pre/bin" "$pre/share/qsup"
	make -s install PREFIX="$pre" >"$T_TMP/install.log" 2>&1 ||
	    fail "make install: $(cat "$T_TMP/install.log")"
	[ -f "$pre/share/qsup/console/index.html" ] ||
	    fail "make install did not copy the console"
	echo secret >"$T_TMP/secret.txt"
	ln -s "$T_TMP/secret.txt" "$pre/share/qsup/console/leak.txt"
	ln -s ../../.. "$pre/share/qsup/console/up"
	ln -s console.css "$pre/share/qsup/console/inside.css"
	console_serve
	expect_match "found beside the install" "web console at /: $pre/share/qsup/console" "$(cat "$S/serve.log")"
	web /
	expect_eq "/ from the install" 200 "$CODE"
	web /console/inside.css
	expect_eq "a link inside" 200 "$CODE"
	web /console/leak.txt
	expect_eq "a link out" 404 "$CODE"
	[[ $BODY == *secret* ]] && fail "a link out was followed: $BODY"
	web /console/up/bin/qsup
	expect_eq "a link to a parent" 404 "$CODE"
	web /console/up/share/qsup/console/index.html
	expect_eq "through a link, back inside" 200 "$CODE"
	serve_stop
}

# A binary with no console beside it: / says how to build it.
test_not_built() {
	local QSUP=$T_TMP/bare/qsup
	mkdir -p "$T_TMP/bare"
	cp build/qsup "$QSUP"
	QSUP_GUEST_DIR=$PWD/build/guest console_serve
	web /
	expect_eq "/ without a console" 404 "$CODE"
	expect_match "says how to build it" '"error":"the web console is not built: \./build\.sh builds it' "$BODY"
	grep -qxF "Content-Security-Policy: $CSP" <<<"$HEAD" ||
	    fail "the 404 lacks the CSP"
	web /console/console.js
	expect_eq "its files neither" 404 "$CODE"
	serve_stop
}

test_browser_walk() {
	[ -z "$BROWSER_SKIP" ] || { echo "    skipped: $BROWSER_SKIP"; return; }
	console_serve
	browser walk
	api GET /v1/sandboxes/web1
	expect_eq "the page's delete took" 404 "$CODE"
	serve_stop
}

test_browser_wrong_token() {
	[ -z "$BROWSER_SKIP" ] || { echo "    skipped: $BROWSER_SKIP"; return; }
	console_serve
	browser wrong-token
	serve_stop
}

# needs_route ROUTE: empty, or why the test cannot run (a route of
# another branch not merged yet).
needs_route() {
	"$QSUP" serve --routes | grep -qxF "$1" ||
	    echo "this qsup has no $1 (the ws and display branches add it)"
}

test_browser_terminal() {
	local why
	[ -z "$BROWSER_SKIP" ] || { echo "    skipped: $BROWSER_SKIP"; return; }
	why=$(needs_route "GET /v1/sandboxes/{name}/exec/ws")
	[ -z "$why" ] || { echo "    skipped: $why"; return; }
	console_serve
	create term1
	browser terminal term1
	api DELETE /v1/sandboxes/term1
	serve_stop
}

test_browser_display() {
	local why
	[ -z "$BROWSER_SKIP" ] || { echo "    skipped: $BROWSER_SKIP"; return; }
	why=$(needs_route "GET /v1/sandboxes/{name}/display")
	[ -z "$why" ] || { echo "    skipped: $why"; return; }
	console_serve
	create screen1 '"settings":{"display":"vnc"}'
	browser display screen1
	api DELETE /v1/sandboxes/screen1
	serve_stop
}

browser_setup
for t in ${TESTS:-test_static_files test_installed_and_links test_not_built \
    test_browser_walk test_browser_wrong_token test_browser_terminal \
    test_browser_display}; do
	run_test "$t"
done
finish
