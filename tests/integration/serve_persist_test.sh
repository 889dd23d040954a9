#!/usr/bin/env bash
# "qsup serve"'s persistent sandboxes: one created "persistent": true
# outlives its server. Stopped (SIGTERM), it is saved and comes back at the
# next start with its processes and files (a guest process's in-memory
# counter goes on, a file is there); killed outright (kill -9), it comes
# back from its last save (persist_every), or booted afresh if it had
# none, and the API says which. A sandbox not persistent is gone after a
# restart, a paused one comes back paused, a delete takes its record and
# saves, and nothing runs or stays behind after each stop.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

PDIR=$T_TMP/cache/qsup/persist
SDIR=$T_TMP/cache/qsup/snapshots

# file NAME PATH: the file's contents in $OUT ("" if none).
file() {
	run_exec "$1" "{\"argv\":[\"sh\",\"-c\",\"cat $2 2>/dev/null; true\"]}"
}

# field NAME JQ: a member of NAME's sandbox object.
field() {
	api GET "/v1/sandboxes/$1"
	jq -r "$2" <<<"$BODY"
}

# stopped WHAT: no QEMU of this test left, no run directory but the
# shared ones (after kill -9: QEMU dies with its server, PDEATHSIG).
stopped() {
	local i left
	for i in $(seq 1 100); do
		left=$(pgrep -f "qemu-system.*$T_RUN" || true)
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || fail "$1: QEMU left running: $left"
}

# no_rundirs WHAT: no sandbox's run directory (a server is stopped).
no_rundirs() {
	local left
	left=$(ls -A "$T_RUN/qsup" 2>/dev/null | grep -vx -e gate -e disks)
	[ -z "$left" ] || fail "$1: run directories left: $left"
}

# kill9: the server killed outright, its events' reader with it.
kill9() {
	kill "$EPID" 2>/dev/null
	wait "$EPID" 2>/dev/null
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null
	stopped "after kill -9"
}

# hidden NAME: the names of NAME's saves on disk.
hidden() {
	ls -A "$SDIR" 2>/dev/null | grep "^\.persist-$1-" | tr '\n' ' '
}

test_persist_sigterm() {
	local n0 n1 s1 s2
	serve_start
	create a '"persistent":true'
	expect_match "persistent" '"persistent":true' "$BODY"
	expect_match "not restored" '"saved":null,"restored":null' "$BODY"
	[ -s "$PDIR/a.json" ] || fail "no record of a"
	create b
	expect_match "b is not" '"persistent":false' "$BODY"
	counting a
	counting b
	ask a
	n0=$N
	serve_stop
	stopped "after SIGTERM"
	no_rundirs "after SIGTERM"
	grep -q "saving 1 persistent sandbox before stopping" "$S/serve.log" ||
	    fail "no save at the stop: $(tail -5 "$S/serve.log")"
	s1=$(jq -r .snapshot "$PDIR/a.json")
	expect_match "the record names a save" '^\.persist-a-' "$s1"
	[ -s "$SDIR/$s1/state" ] || fail "no state in $SDIR/$s1"

	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a) $(tail -5 "$S/serve.log")"
	api GET /v1/sandboxes/a
	expect_match "restored from its save" "\"restored\":{\"from\":\"snapshot\",\"snapshot\":\"$s1\",\"taken\":\"20[0-9-]*T[0-9:]*Z\",\"why\":null}" "$BODY"
	expect_match "from a snapshot" '"start":"snapshot"' "$BODY"
	expect_eq "b is gone" gone "$(state b)"
	file a /tmp/keep
	expect_eq "the file is there" kept "$OUT"
	ask a
	n1=$N
	[ "$n1" -ge "$n0" ] || fail "the counter went back: $n0 before the stop, $n1 after"
	echo "restart: counter $n0 before, $n1 after" >>"$S/figures"
	api GET /v1/snapshots
	expect_eq "its saves are not listed" '{"snapshots":[]}' "$BODY"

	# Again: the new save replaces the old.
	serve_stop
	stopped "after the second SIGTERM"
	no_rundirs "after the second SIGTERM"
	s2=$(jq -r .snapshot "$PDIR/a.json")
	[ "$s2" != "$s1" ] || fail "the second stop made no new save: $s2"
	expect_eq "one save kept" "$s2 " "$(hidden a)"
	serve_start
	wait_state a ready 90 || fail "a did not come back again: $(state a)"
	ask a
	[ "$N" -ge "$n1" ] || fail "the counter went back: $n1, then $N"
	expect_eq "restored from the new save" "$s2" "$(field a .restored.snapshot)"
	api DELETE /v1/sandboxes/a
	expect_eq "delete" 200 "$CODE"
	[ ! -e "$PDIR/a.json" ] || fail "the record stayed after the delete"
	expect_eq "its saves went" "" "$(hidden a)"
	serve_stop
	serve_start
	api GET /v1/sandboxes
	expect_eq "nothing comes back" '{"sandboxes":[]}' "$BODY"
	serve_stop
	no_rundirs "at the end"
}

test_persist_kill9() {
	local n0 n1 s1
	serve_start
	create a '"persistent":true'
	counting a
	serve_stop
	s1=$(jq -r .snapshot "$PDIR/a.json")
	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a)"
	ask a
	n0=$N
	sleep 2
	run_exec a '{"argv":["sh","-c","echo late >/tmp/late"]}'
	ask a
	n1=$N
	[ "$n1" -gt "$n0" ] || fail "the counter stood still: $n0 then $n1"
	kill9
	[ -e "$PDIR/a.json" ] || fail "the record went with the server"
	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a) $(tail -5 "$S/serve.log")"
	expect_eq "from its last save" "snapshot $s1" "$(field a '"\(.restored.from) \(.restored.snapshot)"')"
	file a /tmp/keep
	expect_eq "the save's file" kept "$OUT"
	file a /tmp/late
	expect_eq "not what came after it" "" "$OUT"
	ask a
	[ "$N" -lt "$n1" ] || fail "the counter is $N: after the save it was $n0, at the kill $n1: not the save's"
	echo "kill -9: counter $n1 at the kill, $N after the restore of the save taken before $n0" >>"$S/figures"
	# The dead server's run directories went at this start.
	expect_eq "one run directory" 1 "$(ls -d "$T_RUN"/qsup/sb-* | wc -l)"
	api DELETE /v1/sandboxes/a
	serve_stop
	no_rundirs "at the end"
}

test_persist_every() {
	local t s1 s2
	serve_start
	create a '"persistent":true,"persist_every":2'
	expect_match "its period" '"persist_every":2' "$BODY"
	counting a
	for t in $(seq 1 300); do
		s1=$(field a '.saved.snapshot // empty')
		[ -n "$s1" ] && break
		sleep 0.1
	done
	[ -n "$s1" ] || fail "no periodic save in 30 s"
	run_exec a '{"argv":["sh","-c","echo second >/tmp/keep"]}'
	for t in $(seq 1 300); do
		s2=$(field a '.saved.snapshot // empty')
		[ -n "$s2" ] && [ "$s2" != "$s1" ] && break
		sleep 0.1
	done
	[ "$s2" != "$s1" ] || fail "no second periodic save in 30 s"
	kill9
	# Saves in progress at the kill are swept; the record's stays.
	s2=$(jq -r .snapshot "$PDIR/a.json")
	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a)"
	expect_eq "from its last periodic save" "snapshot $s2" "$(field a '"\(.restored.from) \(.restored.snapshot)"')"
	file a /tmp/keep
	expect_eq "the file as at that save" second "$OUT"
	ask a
	# Only its record's save is kept. It saves every 2 s here, so a new
	# one may be under way (the old kept until the new is whole): the
	# two settle to one, the record's, within a period or two.
	for t in $(seq 1 100); do
		[ "$(hidden a)" = "$(jq -r .snapshot "$PDIR/a.json") " ] && break
		sleep 0.1
	done
	expect_eq "only its save kept" "$(jq -r .snapshot "$PDIR/a.json") " "$(hidden a)"
	api DELETE /v1/sandboxes/a
	expect_eq "its saves went" "" "$(hidden a)"
	serve_stop
}

test_persist_crash_unsaved() {
	serve_start
	create a '"persistent":true,"ttl":3600'
	run_exec a '{"argv":["sh","-c","echo lost >/tmp/keep"]}'
	kill9
	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a)"
	api GET /v1/sandboxes/a
	expect_match "booted afresh, and says why" '"restored":\{"from":"boot","snapshot":null,"taken":null,"why":"no save was taken before the server stopped"\}' "$BODY"
	expect_match "its create's body kept" '"ttl":3600' "$BODY"
	expect_match "still persistent" '"persistent":true' "$BODY"
	file a /tmp/keep
	expect_eq "its memory lost" "" "$OUT"
	api DELETE /v1/sandboxes/a
	serve_stop
}

test_persist_paused() {
	local n0
	serve_start
	create a '"persistent":true'
	counting a
	ask a
	n0=$N
	api POST /v1/sandboxes/a/pause
	expect_eq "pause" 200 "$CODE"
	serve_stop
	expect_eq "saved paused" true "$(jq -r .paused "$PDIR/a.json")"
	serve_start
	wait_state a paused 90 || fail "a did not come back paused: $(state a)"
	expect_eq "restored from its save" snapshot "$(field a .restored.from)"
	api POST /v1/sandboxes/a/resume
	expect_eq "resume" 200 "$CODE"
	ask a
	[ "$N" -ge "$n0" ] || fail "the counter went back: $n0, then $N"
	file a /tmp/keep
	expect_eq "its file" kept "$OUT"
	api DELETE /v1/sandboxes/a
	serve_stop
	no_rundirs "at the end"
}

# On a disk image (a static busybox on ext4, made here without root): a
# restored sandbox's overlay lies on its save's disk, which its own next
# save then needs: kept until the sandbox is deleted.
test_persist_disk() {
	local img=$T_TMP/disk/root.img s1 s2
	busybox_disk "$img" || return
	serve_start
	create a "\"persistent\":true,\"settings\":{\"image\":\"$img\"}"
	run_exec a '{"argv":["sh","-c","echo one >/root/f"]}'
	serve_stop
	s1=$(jq -r .snapshot "$PDIR/a.json")
	[ -s "$SDIR/$s1/disk.qcow2" ] || fail "no disk in the save"
	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a)"
	file a /root/f
	expect_eq "its file on its disk" one "$OUT"
	run_exec a '{"argv":["sh","-c","echo two >/root/g"]}'
	serve_stop
	s2=$(jq -r .snapshot "$PDIR/a.json")
	expect_eq "the first save is kept under the second" "[\"$s1\"]" "$(jq -c .under "$PDIR/a.json")"
	expect_eq "both on disk" "$s1 $s2 " "$(hidden a)"
	serve_start
	wait_state a ready 90 || fail "a did not come back again: $(state a)"
	file a /root/f
	expect_eq "the first file" one "$OUT"
	file a /root/g
	expect_eq "the second file" two "$OUT"
	api DELETE /v1/sandboxes/a
	expect_eq "its saves went" "" "$(hidden a)"
	serve_stop
	no_rundirs "at the end"
}

# A second signal during the saves: everything killed at once, nothing
# left; the sandbox comes back from a save (if its finished) or a boot.
test_persist_second_signal() {
	local rc=0 from
	serve_start
	create a '"persistent":true'
	counting a
	kill "$EPID" 2>/dev/null
	wait "$EPID" 2>/dev/null
	kill -TERM "$SERVE_PID"
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID" || rc=$?
	expect_eq "exit status after two signals" 0 "$rc"
	stopped "after two signals"
	no_rundirs "after two signals"
	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a)"
	from=$(field a .restored.from)
	[ "$from" = snapshot ] || [ "$from" = boot ] || fail "restored from $from"
	echo "two signals: restored from $from" >>"$S/figures"
	api DELETE /v1/sandboxes/a
	serve_stop
}

test_persist_bad_input() {
	local prof s0
	serve_start
	api POST /v1/sandboxes -d '{"name":"a","persistent":"yes"}'
	expect_eq "persistent not a boolean" 400 "$CODE"
	expect_match "names the field" '"field":"persistent"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"a","persist_every":5}'
	expect_eq "persist_every alone" 400 "$CODE"
	expect_match "names the field" '"field":"persist_every"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"a","persistent":true,"persist_every":0}'
	expect_eq "persist_every 0" 400 "$CODE"
	api POST /v1/sandboxes -d '{"name":"a","persistent":true,"attach":{"qmp":"/nope"}}'
	expect_eq "an attached QEMU" 409 "$CODE"
	expect_match "says why" 'cannot have \\"attach\\"' "$BODY"
	mkdir -p "$S/share"
	prof=$S/share.lua
	printf 'return {\n\tshares = {\n\t\t{ host = "%s", guest = "/w" },\n\t},\n}\n' \
	    "$S/share" >"$prof"
	api POST /v1/sandboxes -d "{\"name\":\"a\",\"persistent\":true,\"profile\":\"$prof\"}"
	expect_eq "shares" 409 "$CODE"
	expect_match "says why" 'virtio-9p' "$BODY"
	api POST /v1/sandboxes -d '{"name":"a","persistent":true,"settings":{"boot":"image","image":"/nope.img"}}'
	[ "$CODE" = 409 ] || [ "$CODE" = 400 ] || fail "boot image: $CODE $BODY"
	expect_eq "no record left" lock "$(ls -A "$PDIR")"
	api GET /v1/sandboxes
	expect_eq "no sandbox made" '{"sandboxes":[]}' "$BODY"
	# A second server on the same cache: the records are the first's.
	s0=$SOCK
	local pid1=$SERVE_PID
	serve_launch "$S/s2.sock" "$S/token" "$S/serve2.log" ||
	    fail "the second server did not come up: $(cat "$S/serve2.log")"
	local pid2=$SERVE_PID
	SOCK=$S/s2.sock
	api POST /v1/sandboxes -d '{"name":"x","persistent":true}'
	expect_eq "a second server" 409 "$CODE"
	expect_match "says why" 'another server holds' "$BODY"
	kill -TERM "$pid2"
	wait "$pid2"
	# serve_launch set SERVE_PID to the second: the first is stopped too.
	SOCK=$s0
	SERVE_PID=$pid1
	serve_stop
}

test_client() {
	local out
	serve_start
	export QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN
	out=$("$QSUP" sandbox create --persistent --persist-every 60 c 2>&1)
	expect_eq "qsup sandbox create --persistent" c "$out"
	expect_eq "persistent" "true 60" "$(field c '"\(.persistent) \(.persist_every)"')"
	out=$(printf '%s\n' \
	    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_create","arguments":{"name":"m","persistent":true}}}' |
	    "$QSUP" mcp --host "unix:$SOCK" 2>&1)
	expect_match "MCP sandbox_create persistent" '"id":2,.*\\"persistent\\":true' "$out"
	"$QSUP" sandbox rm c m >/dev/null
	unset QSUP_HOST QSUP_TOKEN
	serve_stop
}

# A create's extra QEMU arguments come back with it: its save keeps them
# (a device here, which its restore must have, or QEMU refuses the state).
test_persist_extra_args() {
	serve_start
	create a '"persistent":true,"extra_args":["-device","virtio-rng-device"]'
	counting a
	serve_stop
	stopped "after SIGTERM"
	serve_start
	wait_state a ready 90 || fail "a did not come back: $(state a) $(tail -5 "$S/serve.log")"
	expect_eq "restored from its save" snapshot "$(field a .restored.from)"
	run_exec a '{"argv":["sh","-c","grep -l 0x0004 /sys/bus/virtio/devices/*/device | wc -l"]}'
	expect_eq "its device" 1 "$OUT"
	file a /tmp/keep
	expect_eq "its file" kept "$OUT"
	api DELETE /v1/sandboxes/a
	serve_stop
	stopped "at the end"
}

for t in ${TESTS:-test_persist_sigterm test_persist_kill9 test_persist_every \
    test_persist_crash_unsaved test_persist_paused test_persist_disk \
    test_persist_second_signal test_persist_extra_args \
    test_persist_bad_input test_client}; do
	rm -rf "$PDIR" "$SDIR"/.persist-*	# a failed test's
	run_test "$t"
done
finish
