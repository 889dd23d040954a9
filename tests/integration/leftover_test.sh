#!/usr/bin/env bash
# What the README promises of every way out: a refused or failed run or
# server leaves no file, lock or process behind. Each test walks error
# paths of qsup run and qsup serve with a run directory, a cache and a
# TMPDIR of its own, then lists all three whole: what may stay is the
# start slots (gate/slot.N, shared by every qsup) and whole templates (a
# cache's entries); a lock, a half-written or temporary file, a socket
# or a run directory is a leftover. (Pulls and image builds have theirs
# in image_pull_test.sh and image_build_test.sh.)
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# leftovers: every file of this test's run directory, cache and TMPDIR
# that may not stay, one a line. The gate's slots and persist/lock (the
# flock a server takes on the persistent sandboxes' records) stay, empty,
# on purpose: removing a lock file another server may have open races.
leftovers() {
	find "$T_RUN" "$XDG_CACHE_HOME" "$TMPDIR" -mindepth 1 ! -type d \
	    2>/dev/null |
	    grep -vE '/qsup/gate/slot\.[0-9]+$' |
	    grep -vE '/qsup/persist/lock$' |
	    grep -vE '/qsup/templates/[0-9a-f]{32}\.(meta|ram|state|shape|disk)$'
}

# Every test: a cache and a TMPDIR of its own (the run directory is
# already run_test's).
fresh() {
	export XDG_CACHE_HOME=$T_TMP/$1/cache TMPDIR=$T_TMP/$1/tmp
	mkdir -p "$TMPDIR"
}

expect_nothing_left() {
	local left
	left=$(leftovers)
	[ -z "$left" ] || fail "$1: left behind: $(tr '\n' ' ' <<<"$left")"
	left=$(pgrep -f "qemu-system.*$T_TMP" || true)
	[ -z "$left" ] || fail "$1: QEMU left running: $left"
}

# refused RC WHAT ARGS...: qsup run ARGS exits RC, nothing left.
refused() {
	local want=$1 what=$2 rc
	shift 2
	"$QSUP" run "$@" >"$T_TMP/out" 2>"$T_TMP/err" </dev/null
	rc=$?
	expect_eq "$what: exit status ($(tail -n 1 "$T_TMP/err"))" "$want" $rc
	expect_nothing_left "$what"
}

# Refused before a VM: profile, share, guest, console log, image.
test_run_refused() {
	fresh "${FUNCNAME[0]}"
	printf 'memory = \n' >"$TMPDIR/../bad.lua"
	refused 125 "a profile that does not parse" \
	    --profile "$TMPDIR/../bad.lua" -- true
	refused 125 "a share that does not exist" \
	    --share "$T_TMP/nonexistent" -- true
	QSUP_GUEST_DIR=$T_TMP/nonexistent refused 125 "no guest" -- true
	refused 125 "a console log in no directory" \
	    --set console_log="$T_TMP/nonexistent/log" -- true
	refused 125 "an image that does not exist" \
	    --set image="$T_TMP/nonexistent.qcow2" -- true
	refused 125 "an unknown option" --no-such-option -- true
}

# QEMU refuses its command line: cold, and while the first warm run
# builds its template (whose lock was once left in the cache).
test_run_qemu_fails() {
	local w
	fresh "${FUNCNAME[0]}"
	for w in false true; do
		refused 125 "warm_start=$w, QEMU exits at once" \
		    --set warm_start=$w \
		    --set 'extra_args={"-device","qsup-no-such-device"}' -- true
	done
}

# The guest never becomes ready in time, cold and building a template.
test_run_never_ready() {
	local w
	fresh "${FUNCNAME[0]}"
	for w in false true; do
		refused 125 "warm_start=$w, start_timeout" --set warm_start=$w \
		    --set start_timeout=0.3 -- true
	done
}

# SIGTERM to qsup at points through its first run (boot, the template's
# save, the command), then once warm: whatever it was doing, it ends and
# leaves only whole templates. Then a plain run works from what is left.
test_run_terminated() {
	local d pid out
	fresh "${FUNCNAME[0]}"
	for d in 0.2 1 2 3 4 0.1; do
		"$QSUP" run -- sleep 30 >/dev/null 2>&1 </dev/null &
		pid=$!
		sleep "$d"
		kill -TERM "$pid"
		wait "$pid"
		expect_nothing_left "SIGTERM after ${d} s"
	done
	out=$("$QSUP" run -- echo ok 2>&1)
	expect_eq "a run after them" ok "$out"
	expect_nothing_left "the run after them"
}

# serve_up: a server on a socket of this test's; SERVE_PID, SOCK, TOKEN.
serve_up() {
	SOCK=$T_RUN/api.sock
	serve_launch "$SOCK" "$TMPDIR/../token" "$T_TMP/serve.log" "$@" ||
	    fail "the server did not come up: $(cat "$T_TMP/serve.log")"
	TOKEN=$(cat "$TMPDIR/../token" 2>/dev/null)
}

# call METHOD PATH [BODY]: the status.
call() {
	curl -sS --unix-socket "$SOCK" -o "$T_TMP/body" -w '%{http_code}' \
	    -X "$1" -H "Authorization: Bearer $TOKEN" ${3:+-d "$3"} \
	    "http://qsup$2"
}

# Refused creates, a sandbox whose QEMU fails, one that never becomes
# ready, one deleted while it boots, one still booting at SIGTERM: the
# server ends 0 and nothing of any of them stays.
test_serve_errors() {
	local code rc
	fresh "${FUNCNAME[0]}"
	serve_up
	code=$(call POST /v1/sandboxes '{"name":"a","profile":"nonexistent"}')
	expect_eq "an unknown profile" 400 "$code"
	code=$(call POST /v1/sandboxes \
	    '{"name":"b","settings":{"memory":"lots"}}')
	expect_eq "a bad setting" 400 "$code"
	code=$(call POST /v1/sandboxes '{"name":"c","settings":{"extra_args":
	    "{\"-device\",\"qsup-no-such-device\"}"}}')
	expect_eq "QEMU exits at once ($(cat "$T_TMP/body"))" 500 "$code"
	call DELETE /v1/sandboxes/c >/dev/null
	code=$(call POST /v1/sandboxes \
	    '{"name":"d","settings":{"start_timeout":0.3,"warm_start":false}}')
	expect_eq "never ready ($(cat "$T_TMP/body"))" 500 "$code"
	call DELETE /v1/sandboxes/d >/dev/null
	code=$(call POST /v1/sandboxes '{"name":"e","wait":false}')
	expect_eq "create e, not waited for" 202 "$code"
	code=$(call DELETE /v1/sandboxes/e)
	expect_match "delete e while it boots" '^20[04]$' "$code"
	code=$(call POST /v1/sandboxes '{"name":"f","wait":false}')
	expect_eq "create f, not waited for" 202 "$code"
	kill -TERM "$SERVE_PID"
	rc=0
	wait "$SERVE_PID" || rc=$?
	expect_eq "serve's exit status ($(tail -n 2 "$T_TMP/serve.log"))" \
	    0 "$rc"
	expect_nothing_left "serve"
}

# A server that cannot listen leaves nothing either.
test_serve_cannot_listen() {
	local rc
	fresh "${FUNCNAME[0]}"
	"$QSUP" serve --listen "unix:$T_TMP/nonexistent/api.sock" \
	    --token-file "$TMPDIR/../token" 2>"$T_TMP/err"
	rc=$?
	expect_eq "exit status ($(tail -n 1 "$T_TMP/err"))" 125 $rc
	[ ! -e "$TMPDIR/../token" ] || fail "the token file was left"
	expect_nothing_left "serve"
}

for t in test_run_refused test_run_qemu_fails test_run_never_ready \
    test_run_terminated test_serve_errors test_serve_cannot_listen; do
	run_test "$t"
done
finish
