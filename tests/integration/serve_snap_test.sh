#!/usr/bin/env bash
# "qsup serve"'s snapshots: a ready or paused sandbox saved whole (a guest
# process's in-memory counter and a file prove it), restored into new
# sandboxes that go on from there while the source runs on, kept across a
# server restart, forked into copies that diverge; and the bad input.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

# file NAME PATH: the file's contents in $OUT.
file() {
	run_exec "$1" "{\"argv\":[\"cat\",\"$2\"]}"
}

test_snapshot_restore() {
	local n0 n1 n2
	serve_start
	create a
	counting a
	ask a
	n0=$N
	api POST /v1/sandboxes/a/snapshots -d '{"name":"s1"}'
	expect_eq "snapshot" 201 "$CODE"
	expect_match "its name and source" '"name":"s1","sandbox":"a"' "$BODY"
	expect_match "its size" '"size_bytes":[1-9][0-9]*' "$BODY"
	expect_match "its pause" '"pause_ms":[0-9.]*' "$BODY"
	expect_match "its time" '"created":"20[0-9-]*T' "$BODY"
	grep -q token <<<"$BODY" && fail "the token is shown: $BODY"
	echo "save: $SECS s, $(jq -r .pause_ms <<<"$BODY") ms paused, $(jq -r .size_bytes <<<"$BODY") bytes" >>"$S/figures"
	expect_eq "the source is ready" ready "$(state a)"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"s1"}'
	expect_eq "restore" 201 "$CODE"
	expect_match "ready" '"state":"ready"' "$BODY"
	expect_match "started from a snapshot" '"start":"snapshot"' "$BODY"
	echo "restore: $SECS s" >>"$S/figures"
	file b /tmp/keep
	expect_eq "the file is there" kept "$OUT"
	ask b
	n1=$N
	[ "$n1" -ge "$n0" ] && [ "$n1" -le $((n0 + 40)) ] ||
	    fail "the restored counter is $n1, the source's was $n0 before the save"
	# Each goes on by itself.
	run_exec b '{"argv":["sh","-c","echo b >/tmp/keep"]}'
	file a /tmp/keep
	expect_eq "the source's file is its own" kept "$OUT"
	ask a
	[ "$N" -gt "$n0" ] || fail "the source's counter stood still: $N"
	sleep 1
	ask b
	n2=$N
	[ "$n2" -gt "$n1" ] || fail "the restored counter stood still: $n1 then $n2"
	api GET /v1/snapshots
	expect_match "listed" '"snapshots":\[\{"name":"s1","sandbox":"a"' "$BODY"
	api GET /v1/snapshots/s1
	expect_eq "get" 200 "$CODE"
	expect_match "got" '"name":"s1"' "$BODY"
	# A second restore of it: the snapshot was not written by the first.
	api POST /v1/sandboxes -d '{"name":"c","snapshot":"s1"}'
	expect_eq "a second restore" 201 "$CODE"
	file c /tmp/keep
	expect_eq "the snapshot's file, not b's" kept "$OUT"
	api DELETE /v1/snapshots/s1
	expect_eq "delete" 204 "$CODE"
	api GET /v1/snapshots/s1
	expect_eq "gone" 404 "$CODE"
	api GET /v1/snapshots
	expect_eq "an empty list" '{"snapshots":[]}' "$BODY"
	# Sandboxes made from it run on.
	ask b
	[ "$N" -ge "$n2" ] || fail "b after the delete: $N"
	for n in a b c; do api DELETE /v1/sandboxes/$n; done
	serve_stop
}

test_snapshot_paused() {
	local n0
	serve_start
	create a
	counting a
	ask a
	n0=$N
	api POST /v1/sandboxes/a/pause
	expect_eq "pause" 200 "$CODE"
	api POST /v1/sandboxes/a/snapshots -d '{"name":"p1"}'
	expect_eq "snapshot of a paused one" 201 "$CODE"
	expect_eq "the source stays paused" paused "$(state a)"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"p1"}'
	expect_eq "restore" 201 "$CODE"
	expect_match "running" '"state":"ready"' "$BODY"
	ask b
	[ "$N" -ge "$n0" ] && [ "$N" -le $((n0 + 20)) ] ||
	    fail "the restored counter is $N, the source's was $n0"
	expect_eq "the source is still paused" paused "$(state a)"
	api POST /v1/sandboxes/a/resume
	expect_eq "resume" 200 "$CODE"
	ask a
	[ "$N" -ge "$n0" ] || fail "the source after resume: $N"
	api DELETE /v1/snapshots/p1
	for n in a b; do api DELETE /v1/sandboxes/$n; done
	serve_stop
}

# A restore sets the guest's clock, which is the save's: 12 s after the
# snapshot it would be 12 s behind. A guest under TCG on a loaded host
# falls a little behind as it runs, hence 5 s.
test_restore_sets_clock() {
	local d
	serve_start
	create a
	api POST /v1/sandboxes/a/snapshots -d '{"name":"t1"}'
	expect_eq "snapshot" 201 "$CODE"
	api DELETE /v1/sandboxes/a
	sleep 12
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"t1"}'
	expect_eq "restore" 201 "$CODE"
	echo "restore with its clock set: $SECS s" >>"$S/figures"
	run_exec b '{"argv":["date","+%s"]}'
	d=$(($(date +%s) - OUT))
	echo "the restored guest's clock behind the host's: $d s" >>"$S/figures"
	[ "$d" -le 5 ] && [ "$d" -ge -3 ] ||
	    fail "the restored guest's clock is $d s behind the host's, 12 s after the save"
	api DELETE /v1/sandboxes/b
	api DELETE /v1/snapshots/t1
	serve_stop
	sed 's/^/    /' "$S/figures"
}

test_snapshot_survives_restart() {
	serve_start
	create a
	counting a
	api POST /v1/sandboxes/a/snapshots -d '{"name":"r1"}'
	expect_eq "snapshot" 201 "$CODE"
	# A half-written one (a server killed during a save) is swept.
	mkdir -p "$T_TMP/cache/qsup/snapshots/half"
	: >"$T_TMP/cache/qsup/snapshots/half/state"
	serve_stop
	serve_start
	[ ! -e "$T_TMP/cache/qsup/snapshots/half" ] ||
	    fail "the half-written snapshot was left"
	api GET /v1/snapshots
	expect_match "listed after a restart" '"name":"r1","sandbox":"a"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"r1"}'
	expect_eq "restored after a restart" 201 "$CODE"
	file b /tmp/keep
	expect_eq "its file" kept "$OUT"
	ask b
	api DELETE /v1/snapshots/r1
	api DELETE /v1/sandboxes/b
	serve_stop
}

test_snapshot_bad_input() {
	local prof
	serve_start --max-memory 1100M
	create a
	api POST /v1/sandboxes/a/snapshots -d '{"name":"Bad Name"}'
	expect_eq "a bad name" 400 "$CODE"
	expect_match "names the field" '"field":"name"' "$BODY"
	api POST /v1/sandboxes/a/snapshots -d '{}'
	expect_eq "no name" 400 "$CODE"
	api POST /v1/sandboxes/a/snapshots -d '{"name":"x","color":1}'
	expect_eq "an unknown field" 400 "$CODE"
	api POST /v1/sandboxes/nope/snapshots -d '{"name":"x"}'
	expect_eq "no such sandbox" 404 "$CODE"
	api POST /v1/sandboxes/a/snapshots -d '{"name":"u1"}'
	expect_eq "snapshot" 201 "$CODE"
	api POST /v1/sandboxes/a/snapshots -d '{"name":"u1"}'
	expect_eq "a name in use" 409 "$CODE"
	expect_match "says so" 'a snapshot named u1 exists' "$BODY"
	api GET /v1/snapshots/nope
	expect_eq "unknown snapshot" 404 "$CODE"
	api DELETE /v1/snapshots/nope
	expect_eq "delete unknown" 404 "$CODE"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"nope"}'
	expect_eq "restore of an unknown one" 404 "$CODE"
	expect_match "names it" 'no snapshot named nope' "$BODY"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":7}'
	expect_eq "a snapshot that is not a name" 400 "$CODE"
	expect_match "names the field" '"field":"snapshot"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"u1","settings":{"cpus":2}}'
	expect_eq "settings with a snapshot" 400 "$CODE"
	# Booting: not yet.
	api POST /v1/sandboxes -d '{"name":"c","wait":false}'
	expect_eq "create, not waiting" 202 "$CODE"
	api POST /v1/sandboxes/c/snapshots -d '{"name":"u2"}'
	if [ "$CODE" = 409 ]; then
		expect_match "names its state" 'sandbox c is booting' "$BODY"
	else
		echo "c was ready before the snapshot was asked for ($CODE)" >>"$S/figures"
		# Taken, then: not this test's to keep (nor the next one's).
		api DELETE /v1/snapshots/u2
	fi
	# 1024 MiB running or booting, 1100 MiB allowed: no room for a copy.
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"u1"}'
	expect_eq "past the memory limit" 503 "$CODE"
	expect_match "names the limit" 'max_memory' "$BODY"
	wait_state c ready 60 || fail "c did not become ready"
	api DELETE /v1/sandboxes/c
	# Dead: its guest powered off.
	run_exec a '{"argv":["sh","-c","echo o >/proc/sysrq-trigger"]}'
	wait_state a dead 30 || fail "a did not die: $(state a)"
	api POST /v1/sandboxes/a/snapshots -d '{"name":"u3"}'
	expect_eq "a dead sandbox" 409 "$CODE"
	expect_match "names its state" 'sandbox a is dead' "$BODY"
	api DELETE /v1/sandboxes/a
	# virtio-9p shares: QEMU cannot migrate a mounted export.
	mkdir -p "$S/share"
	prof=$S/share.lua
	printf 'return {\n\tshares = {\n\t\t{ host = "%s", guest = "/w" },\n\t},\n}\n' \
	    "$S/share" >"$prof"
	api POST /v1/sandboxes -d "{\"name\":\"d\",\"profile\":\"$prof\"}"
	expect_eq "a sandbox with a share" 201 "$CODE"
	api POST /v1/sandboxes/d/snapshots -d '{"name":"u4"}'
	expect_eq "a sandbox with a share" 409 "$CODE"
	expect_match "says why" 'virtio-9p' "$BODY"
	api GET /v1/snapshots
	expect_eq "only u1 listed" u1 "$(jq -r '.snapshots[].name' <<<"$BODY")"
	api DELETE /v1/sandboxes/d
	api DELETE /v1/snapshots/u1
	serve_stop
}

test_fork() {
	local n0 fa fb
	serve_start
	create a
	counting a
	ask a
	n0=$N
	api POST /v1/sandboxes/a/fork -d '{"count":2}'
	expect_eq "fork of 2" 201 "$CODE"
	expect_eq "its copies" "a-f1 a-f2" "$(jq -r '[.sandboxes[].name]|join(" ")' <<<"$BODY")"
	expect_eq "ready" "ready ready" "$(jq -r '[.sandboxes[].state]|join(" ")' <<<"$BODY")"
	echo "fork of 2: $SECS s" >>"$S/figures"
	expect_eq "the source runs on" ready "$(state a)"
	for n in a-f1 a-f2; do
		file $n /tmp/keep
		expect_eq "$n: the file" kept "$OUT"
		ask $n
		[ "$N" -ge "$n0" ] || fail "$n: the counter is $N, the source's was $n0"
	done
	# Each its own: files and counters diverge.
	run_exec a-f1 '{"argv":["sh","-c","echo one >/tmp/keep; kill $(cat /tmp/pid)"]}'
	file a-f1 /tmp/keep
	expect_eq "a-f1's file" one "$OUT"
	file a-f2 /tmp/keep
	expect_eq "a-f2's file untouched" kept "$OUT"
	file a /tmp/keep
	expect_eq "the source's untouched" kept "$OUT"
	ask a-f2
	fb=$N
	sleep 1
	ask a-f2
	[ "$N" -gt "$fb" ] || fail "a-f2's counter stopped with a-f1's: $fb then $N"
	run_exec a-f1 '{"argv":["sh","-c","kill -0 $(cat /tmp/pid) 2>/dev/null && echo alive || echo gone"]}'
	expect_eq "a-f1's counter is gone" gone "$OUT"
	# A fresh identity: entropy of their own.
	run_exec a-f1 '{"argv":["sh","-c","head -c 16 /dev/urandom | od -An -tx1"]}'
	fa=$OUT
	run_exec a-f2 '{"argv":["sh","-c","head -c 16 /dev/urandom | od -An -tx1"]}'
	[ -n "$fa" ] && [ "$fa" != "$OUT" ] || fail "the copies' RNGs agree: $fa / $OUT"
	# Given names.
	api POST /v1/sandboxes/a/fork -d '{"names":["x1"]}'
	expect_eq "fork with a name" 201 "$CODE"
	expect_eq "named" x1 "$(jq -r '.sandboxes[0].name' <<<"$BODY")"
	api GET /v1/snapshots
	expect_eq "a fork's snapshot is not listed" '{"snapshots":[]}' "$BODY"
	[ -z "$(ls -A "$T_TMP/cache/qsup/snapshots" 2>/dev/null)" ] ||
	    fail "left in snapshots/: $(ls -A "$T_TMP/cache/qsup/snapshots")"
	for n in a a-f1 a-f2 x1; do api DELETE /v1/sandboxes/$n; done
	serve_stop
}

# guest_id NAME: its card's address and its machine-id, in $OUT.
guest_id() {
	run_exec "$1" '{"argv":["sh","-c","for d in /sys/class/net/*; do [ -e $d/device ] && cat $d/address; done; cat /etc/machine-id"]}'
}

# A fork's copies each get an identity of their own: a new address on
# their network card (the default profile gives one: network =
# "restricted"), which the network still reaches; a new machine-id only
# when asked; the host's clock.
test_fork_identity() {
	local src m1 m2 m3 mid mid1 mid2
	serve_start
	create a
	mid=0123456789abcdef0123456789abcdef
	run_exec a "{\"argv\":[\"sh\",\"-c\",\"echo $mid >/etc/machine-id\"]}"
	guest_id a
	src=$OUT
	expect_eq "the source's card and machine-id" "52:54:00:12:34:56
$mid" "$src"
	api POST /v1/sandboxes/a/fork -d '{"count":2,"machine_id":"yes"}'
	expect_eq "machine_id not a boolean" 400 "$CODE"
	expect_match "names the field" '"field":"machine_id"' "$BODY"
	api POST /v1/sandboxes/a/fork -d '{"count":2,"machine_id":true}'
	expect_eq "fork of 2 with new machine-ids" 201 "$CODE"
	echo "fork of 2 with new identities: $SECS s" >>"$S/figures"
	m1=$(jq -r '.sandboxes[0].mac' <<<"$BODY")
	m2=$(jq -r '.sandboxes[1].mac' <<<"$BODY")
	expect_match "a-f1's address shown" '^52:54:00:[0-9a-f:]{8}$' "$m1"
	guest_id a-f1
	expect_eq "a-f1's card has the address shown" "$m1" "$(head -1 <<<"$OUT")"
	mid1=$(tail -1 <<<"$OUT")
	guest_id a-f2
	expect_eq "a-f2's card has the address shown" "$m2" "$(head -1 <<<"$OUT")"
	mid2=$(tail -1 <<<"$OUT")
	[ "$m1" != "$m2" ] && [ "$m1" != 52:54:00:12:34:56 ] &&
	    [ "$m2" != 52:54:00:12:34:56 ] ||
	    fail "the addresses do not differ: source 52:54:00:12:34:56, copies $m1 $m2"
	expect_match "a-f1's machine-id is new" '^[0-9a-f]{32}$' "$mid1"
	[ "$mid1" != "$mid" ] && [ "$mid2" != "$mid" ] && [ "$mid1" != "$mid2" ] ||
	    fail "the machine-ids do not differ: source $mid, copies $mid1 $mid2"
	guest_id a
	expect_eq "the source keeps its own" "$src" "$OUT"
	api GET /v1/sandboxes/a
	expect_eq "the source shows no address of a fork" null "$(jq -r .mac <<<"$BODY")"
	# The network reaches the new address: the gateway answers the
	# guest's ARP, and its refusal comes back (restricted: nothing is
	# reached).
	run_exec a-f1 '{"argv":["sh","-c","nc -w 5 10.0.2.2 1 2>&1; ip neigh show 10.0.2.2"]}'
	expect_match "a-f1's frames come back" 'refused' "$OUT"
	expect_match "a-f1's ARP answered" 'REACHABLE|STALE|DELAY' "$OUT"
	run_exec a-f1 '{"argv":["date","+%s"]}'
	[ $(($(date +%s) - OUT)) -le 8 ] && [ $((OUT - $(date +%s))) -le 3 ] ||
	    fail "a-f1's clock is $OUT, the host's $(date +%s)"
	# Not asked: the source's machine-id, a new address all the same.
	api POST /v1/sandboxes/a/fork -d '{"names":["k"]}'
	expect_eq "fork of 1" 201 "$CODE"
	m3=$(jq -r '.sandboxes[0].mac' <<<"$BODY")
	guest_id k
	expect_eq "k: a new address, the source's machine-id" "$m3
$mid" "$OUT"
	[ "$m3" != 52:54:00:12:34:56 ] && [ "$m3" != "$m1" ] && [ "$m3" != "$m2" ] ||
	    fail "k's address is not new: $m3"
	for n in a a-f1 a-f2 k; do api DELETE /v1/sandboxes/$n; done
	# No card: nothing to give an address to, and the fork goes on.
	create n '"settings":{"network":"none"}'
	api POST /v1/sandboxes/n/fork -d '{"count":1,"machine_id":true}'
	expect_eq "fork of one with no card" 201 "$CODE"
	expect_eq "no address shown" null "$(jq -r '.sandboxes[0].mac' <<<"$BODY")"
	file n-f1 /etc/machine-id
	expect_match "its new machine-id" '^[0-9a-f]{32}$' "$OUT"
	for n in n n-f1; do api DELETE /v1/sandboxes/$n; done
	serve_stop
	sed 's/^/    /' "$S/figures"
}

# rngs NAME: how many virtio entropy devices (id 4) its guest has, in $OUT.
rngs() {
	run_exec "$1" '{"argv":["sh","-c","grep -l 0x0004 /sys/bus/virtio/devices/*/device | wc -l"]}'
}

# A snapshot keeps its source's extra QEMU arguments (a device here): a
# restore and a fork have the device too; a profile that now gives other
# arguments is refused rather than restored into something else.
test_snapshot_extra_args() {
	local prof=$T_TMP/rng.lua
	printf 'return { extra_args = { "-device", "virtio-rng-device" } }\n' >"$prof"
	serve_start
	create a '"extra_args":["-device","virtio-rng-device,id=rng1"]'
	rngs a
	expect_eq "a has the device" 1 "$OUT"
	api POST /v1/sandboxes/a/snapshots -d '{"name":"e1"}'
	expect_eq "snapshot" 201 "$CODE"
	expect_eq "its arguments recorded" '["-device","virtio-rng-device,id=rng1"]' \
	    "$(jq -c .extra_args <<<"$BODY")"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"e1"}'
	expect_eq "restore" 201 "$CODE"
	rngs b
	expect_eq "b has the device" 1 "$OUT"
	api POST /v1/sandboxes/a/fork -d '{"count":1}'
	expect_eq "fork" 201 "$CODE"
	rngs a-f1
	expect_eq "the copy has the device" 1 "$OUT"
	create p "\"profile\":\"$prof\""
	api POST /v1/sandboxes/p/snapshots -d '{"name":"e2"}'
	expect_eq "snapshot of a profile's" 201 "$CODE"
	printf 'return { extra_args = { "-device", "virtio-rng-device,id=other" } }\n' >"$prof"
	api POST /v1/sandboxes -d '{"name":"q","snapshot":"e2"}'
	expect_eq "its profile gives other arguments now" 409 "$CODE"
	expect_match "says why" 'snapshot e2 was taken with the extra QEMU arguments \\"-device virtio-rng-device\\", but its profile now gives \\"-device virtio-rng-device,id=other\\"' "$BODY"
	api GET /v1/sandboxes/q
	expect_eq "nothing made" 404 "$CODE"
	for n in a b a-f1 p; do api DELETE /v1/sandboxes/$n; done
	api DELETE /v1/snapshots/e1
	api DELETE /v1/snapshots/e2
	serve_stop
}

test_fork_paused() {
	local n0
	serve_start
	create a
	counting a
	ask a
	n0=$N
	api POST /v1/sandboxes/a/pause
	# Its clock stands still while paused: a copy that kept it would be
	# 15 s behind. The fork sets the host's; a guest under TCG on a
	# loaded host falls a few seconds behind as it runs, hence 8 s.
	sleep 15
	api POST /v1/sandboxes/a/fork -d '{"count":1}'
	expect_eq "fork of a paused one" 201 "$CODE"
	expect_eq "the copy runs" ready "$(jq -r '.sandboxes[0].state' <<<"$BODY")"
	expect_eq "the source stays paused" paused "$(state a)"
	run_exec a-f1 '{"argv":["date","+%s"]}'
	[ $(($(date +%s) - OUT)) -le 8 ] && [ $((OUT - $(date +%s))) -le 3 ] ||
	    fail "the copy's clock is $OUT, the host's $(date +%s): not set"
	ask a-f1
	[ "$N" -ge "$n0" ] && [ "$N" -le $((n0 + 20)) ] ||
	    fail "the copy's counter is $N, the source's was $n0"
	sleep 1
	ask a-f1
	[ "$N" -gt "$n0" ] || fail "the copy's counter stands still"
	expect_eq "still paused" paused "$(state a)"
	for n in a a-f1; do api DELETE /v1/sandboxes/$n; done
	serve_stop
}

test_fork_bad_input() {
	serve_start --max-memory 1100M
	create a
	api POST /v1/sandboxes/a/fork -d '{"count":0}'
	expect_eq "count 0" 400 "$CODE"
	expect_match "names the field" '"field":"count"' "$BODY"
	api POST /v1/sandboxes/a/fork -d '{"count":17}'
	expect_eq "count 17" 400 "$CODE"
	api POST /v1/sandboxes/a/fork -d '{"names":["Bad"]}'
	expect_eq "a bad name" 400 "$CODE"
	expect_match "names the field" '"field":"names"' "$BODY"
	api POST /v1/sandboxes/a/fork -d '{"count":2,"names":["x"]}'
	expect_eq "count and names disagree" 400 "$CODE"
	api POST /v1/sandboxes/a/fork -d '{"names":["a"]}'
	expect_eq "a name in use" 409 "$CODE"
	api POST /v1/sandboxes/a/fork -d '{"count":2}'
	expect_eq "past the memory limit" 503 "$CODE"
	expect_match "names the limit" 'max_memory' "$BODY"
	api POST /v1/sandboxes/nope/fork -d '{"count":1}'
	expect_eq "no such sandbox" 404 "$CODE"
	api GET /v1/sandboxes
	expect_eq "no copy made" a "$(jq -r '[.sandboxes[].name]|join(" ")' <<<"$BODY")"
	api DELETE /v1/sandboxes/a
	serve_stop
}

test_client_and_mcp() {
	local out
	serve_start
	export QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN
	create a
	counting a
	out=$("$QSUP" sandbox snapshot a c1 2>&1)
	expect_eq "qsup sandbox snapshot" c1 "$out"
	out=$("$QSUP" sandbox snapshots 2>&1)
	expect_match "qsup sandbox snapshots" '^c1 +a +[0-9.]+ +20' "$out"
	out=$("$QSUP" sandbox snapshot a c1 2>&1)
	expect_eq "exit 1 for a name in use" 1 "$?"
	expect_match "says why" 'exists' "$out"
	out=$("$QSUP" sandbox create --snapshot c1 b 2>&1)
	expect_eq "qsup sandbox create --snapshot" b "$out"
	file b /tmp/keep
	expect_eq "b's file" kept "$OUT"
	out=$("$QSUP" sandbox fork --count 2 a 2>&1)
	expect_eq "qsup sandbox fork" "a-f1
a-f2" "$out"
	out=$("$QSUP" sandbox fork a x9 2>&1)
	expect_eq "qsup sandbox fork with a name" x9 "$out"
	out=$("$QSUP" sandbox fork --machine-id a x8 2>&1)
	expect_eq "qsup sandbox fork --machine-id" x8 "$out"
	file x8 /etc/machine-id
	expect_match "x8's new machine-id" '^[0-9a-f]{32}$' "$OUT"
	file x9 /etc/machine-id
	expect_eq "x9 has none, as its source" "" "$OUT"
	out=$("$QSUP" sandbox snapshots --rm c1 2>&1)
	expect_eq "qsup sandbox snapshots --rm" c1 "$out"
	"$QSUP" sandbox rm a-f1 a-f2 x8 x9 b >/dev/null
	out=$(printf '%s\n' \
	    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}' \
	    '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sandbox_snapshot","arguments":{"name":"a","snapshot":"m1"}}}' \
	    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_snapshot_list","arguments":{}}}' \
	    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sandbox_create","arguments":{"name":"m","snapshot":"m1"}}}' \
	    '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sandbox_fork","arguments":{"name":"m","count":1}}}' \
	    '{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"sandbox_snapshot_delete","arguments":{"snapshot":"m1"}}}' \
	    '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sandbox_fork","arguments":{"name":"m","count":0}}}' \
	    '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"sandbox_fork","arguments":{"name":"m","machine_id":true}}}' |
	    "$QSUP" mcp --host "unix:$SOCK" 2>&1)
	expect_match "MCP sandbox_snapshot" '"id":2,.*\\"name\\":\\"m1\\",\\"sandbox\\":\\"a\\"' "$out"
	expect_match "MCP sandbox_snapshot_list" '"id":3,.*\\"snapshots\\":\[\{\\"name\\":\\"m1\\"' "$out"
	expect_match "MCP sandbox_create from it" '"id":4,.*\\"start\\":\\"snapshot\\"' "$out"
	expect_match "MCP sandbox_fork" '"id":5,.*\\"name\\":\\"m-f1\\"' "$out"
	expect_match "MCP sandbox_snapshot_delete" '"id":6,.*"isError":false' "$out"
	expect_match "MCP sandbox_fork count 0" '"id":7,.*1 to 16' "$out"
	expect_match "MCP sandbox_fork machine_id" '"id":8,.*\\"name\\":\\"m-f2\\"' "$out"
	file m-f2 /etc/machine-id
	expect_match "m-f2's new machine-id" '^[0-9a-f]{32}$' "$OUT"
	expect_eq "m ready" ready "$(state m)"
	expect_eq "m-f1 ready" ready "$(state m-f1)"
	"$QSUP" sandbox rm a m m-f1 m-f2 >/dev/null
	unset QSUP_HOST QSUP_TOKEN
	serve_stop
}

# A disk image: a static busybox on ext4, made here without root.
test_snapshot_disk() {
	local img=$T_TMP/disk/root.img snap sum
	busybox_disk "$img" || return
	serve_start
	api POST /v1/sandboxes -d "{\"name\":\"a\",\"settings\":{\"image\":\"$img\"}}"
	expect_eq "create on an image" 201 "$CODE"
	run_exec a '{"argv":["sh","-c","echo ondisk >/root/f"]}'
	api POST /v1/sandboxes/a/snapshots -d '{"name":"d1"}'
	expect_eq "snapshot" 201 "$CODE"
	expect_match "with its disk" '"disk":true' "$BODY"
	snap=$T_TMP/cache/qsup/snapshots/d1/disk.qcow2
	[ -s "$snap" ] || fail "no disk in the snapshot"
	# a, restored from its template, runs over the template's disk: kept.
	[ -s "${snap%/*}/under0.qcow2" ] ||
	    fail "the template's disk is not kept with the snapshot"
	sum=$(sha256sum <"$snap")
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"d1"}'
	expect_eq "restore" 201 "$CODE"
	file b /root/f
	expect_eq "the file on its disk" ondisk "$OUT"
	run_exec b '{"argv":["sh","-c","echo b >/root/f; sync"]}'
	file b /root/f
	expect_eq "b wrote its own" b "$OUT"
	file a /root/f
	expect_eq "the source's own" ondisk "$OUT"
	api POST /v1/sandboxes -d '{"name":"c","snapshot":"d1"}'
	expect_eq "a second restore" 201 "$CODE"
	file c /root/f
	expect_eq "the snapshot's file, not b's" ondisk "$OUT"
	for n in a b c; do api DELETE /v1/sandboxes/$n; done
	expect_eq "the snapshot's disk was not written" "$sum" "$(sha256sum <"$snap")"
	api DELETE /v1/snapshots/d1
	serve_stop
}

# A sandbox booted cold (configured by /setup at its boot, no seed disk):
# its snapshot says so, and restores into a QEMU of the same shape.
test_snapshot_cold() {
	serve_start
	create a '"settings":{"warm_start":false}'
	expect_match "booted cold" '"start":"cold"' "$BODY"
	counting a
	ask a
	api POST /v1/sandboxes/a/snapshots -d '{"name":"c1"}'
	expect_eq "snapshot" 201 "$CODE"
	expect_match "a cold source" '"cold":true' "$BODY"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"c1"}'
	expect_eq "restore" 201 "$CODE"
	expect_match "ready" '"state":"ready"' "$BODY"
	file b /tmp/keep
	expect_eq "the file is there" kept "$OUT"
	run_exec b '{"argv":["sh","-c","ls /dev/vd* 2>/dev/null | wc -l"]}'
	expect_eq "no disk in the guest" 0 "$OUT"
	api DELETE /v1/snapshots/c1
	expect_eq "deleted" 204 "$CODE"
	serve_stop
}

for t in ${TESTS:-test_snapshot_restore test_snapshot_paused \
    test_snapshot_cold \
    test_restore_sets_clock \
    test_snapshot_survives_restart test_snapshot_bad_input test_fork \
    test_fork_identity test_fork_paused test_fork_bad_input \
    test_client_and_mcp test_snapshot_extra_args \
    test_snapshot_disk}; do
	run_test "$t"
done
finish
