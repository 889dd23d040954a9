#!/usr/bin/env bash
# "qsup serve --spares N": QEMUs started ahead in the shape of the last
# snapshot restore or fork copy, each waiting on its -incoming pipe. A
# fork or restore of that shape takes one (qsup_spares_taken_total) and
# goes on from its source as any does (the guest's in-memory counter
# and a file), its copies independent; a sandbox of another shape (no
# network card) never takes one; a spare that died is forgotten and the
# next restore spawns its own; the spares are named for no sandbox and
# none outlives the server; bad --spares values are refused.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

# wait_spares N SECONDS: 0 once N spares wait.
wait_spares() {
	local i
	for i in $(seq 1 $(($2 * 10))); do
		[ "$(metric qsup_spares)" = "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# spare_pids: the server's spare QEMUs (named "qsup:RUNROOT/spare").
spare_pids() {
	pgrep -P "$SERVE_PID" -f -- "-name qsup:$XDG_RUNTIME_DIR/qsup/spare " || true
}

test_fork_and_restore_take_a_spare() {
	local n0 pid
	serve_start --spares 1
	create a
	counting a
	expect_eq "no spare before a restore of this shape" 0 "$(metric qsup_spares)"
	api POST /v1/sandboxes/a/fork -d '{"count":1}'
	expect_eq "first fork" 201 "$CODE"
	expect_eq "the first copy found no spare" 0 "$(metric qsup_spares_taken_total)"
	wait_spares 1 60 || fail "no spare after the first copy was ready: $(metric qsup_spares)"
	pid=$(spare_pids)
	expect_eq "one spare QEMU, named for no sandbox" 1 "$(wc -w <<<"$pid")"
	ask a
	n0=$N
	api POST /v1/sandboxes/a/fork -d '{"count":1}'
	expect_eq "second fork" 201 "$CODE"
	expect_eq "the second copy took the spare" 1 "$(metric qsup_spares_taken_total)"
	expect_eq "its QEMU is the spare's" "$pid" \
	    "$(pgrep -P "$SERVE_PID" -f -- "-name qsup:$XDG_RUNTIME_DIR/qsup/spare " |
	        grep -x "$pid" || true)"
	run_exec a-f2 '{"argv":["cat","/tmp/keep"]}'
	expect_eq "the copy on the spare has the file" kept "$OUT"
	ask a-f2
	[ "$N" -ge "$n0" ] || fail "the copy's counter is $N, a's was $n0"
	n0=$N
	sleep 1
	ask a-f2
	[ "$N" -gt "$n0" ] || fail "the copy's counter stood still: $n0 then $N"
	run_exec a-f2 '{"argv":["sh","-c","echo two >/tmp/keep"]}'
	run_exec a-f1 '{"argv":["cat","/tmp/keep"]}'
	expect_eq "the copies are independent" kept "$OUT"
	run_exec a-f2 '{"argv":["cat","/tmp/keep"]}'
	expect_eq "the copy kept its own write" two "$OUT"
	# A restore of a named snapshot of the same shape takes the next one.
	wait_spares 1 60 || fail "no spare after the second copy: $(metric qsup_spares)"
	api POST /v1/sandboxes/a/snapshots -d '{"name":"s1"}'
	expect_eq "snapshot" 201 "$CODE"
	api POST /v1/sandboxes -d '{"name":"r","snapshot":"s1"}'
	expect_eq "restore" 201 "$CODE"
	expect_eq "the restore took a spare" 2 "$(metric qsup_spares_taken_total)"
	run_exec r '{"argv":["cat","/tmp/keep"]}'
	expect_eq "the restore has the file" kept "$OUT"
	wait_spares 1 60 || fail "no spare after the restore: $(metric qsup_spares)"
	pid=$(spare_pids)
	for n in a a-f1 a-f2 r; do api DELETE /v1/sandboxes/$n; done
	api DELETE /v1/snapshots/s1
	expect_eq "the spare waits with no sandbox left" 1 "$(metric qsup_spares)"
	serve_stop
	kill -0 "$pid" 2>/dev/null && fail "the spare $pid outlived the server"
}

# A sandbox without a network card has another command line: it never
# takes the spare left by a copy with one, and it leaves its own.
test_other_shape_not_taken() {
	serve_start --spares 2
	create a
	create b '"settings":{"network":"none"}'
	api POST /v1/sandboxes/a/fork -d '{"count":1}'
	expect_eq "fork a" 201 "$CODE"
	wait_spares 1 60 || fail "no spare after a's copy: $(metric qsup_spares)"
	api POST /v1/sandboxes/b/fork -d '{"count":1}'
	expect_eq "fork b" 201 "$CODE"
	expect_eq "b's copy took no spare of a's shape" 0 "$(metric qsup_spares_taken_total)"
	run_exec b-f1 '{"argv":["sh","-c","ls /sys/class/net | grep -vx lo | wc -l"]}'
	expect_eq "b's copy has no card" 0 "$OUT"
	wait_spares 2 60 || fail "no spare of b's shape: $(metric qsup_spares)"
	api POST /v1/sandboxes/b/fork -d '{"count":1}'
	expect_eq "fork b again" 201 "$CODE"
	expect_eq "b's second copy took b's spare" 1 "$(metric qsup_spares_taken_total)"
	run_exec b-f2 '{"argv":["sh","-c","ls /sys/class/net | grep -vx lo | wc -l"]}'
	expect_eq "and has no card either" 0 "$OUT"
	for n in a a-f1 b b-f1 b-f2; do api DELETE /v1/sandboxes/$n; done
	serve_stop
}

# A spare killed while it waits is forgotten; the next copy spawns its own.
test_dead_spare_forgotten() {
	local pid
	serve_start --spares 1
	create a
	api POST /v1/sandboxes/a/fork -d '{"count":1}'
	expect_eq "fork" 201 "$CODE"
	wait_spares 1 60 || fail "no spare: $(metric qsup_spares)"
	pid=$(spare_pids)
	[ -n "$pid" ] && kill -9 $pid
	wait_spares 0 10 || fail "the dead spare is still counted: $(metric qsup_spares)"
	api POST /v1/sandboxes/a/fork -d '{"count":1}'
	expect_eq "fork after the spare died" 201 "$CODE"
	expect_eq "nothing taken" 0 "$(metric qsup_spares_taken_total)"
	run_exec a-f2 '{"argv":["echo","up"]}'
	expect_eq "the copy runs" up "$OUT"
	for n in a a-f1 a-f2; do api DELETE /v1/sandboxes/$n; done
	serve_stop
}

test_bad_spares() {
	local v out rc
	for v in -1 17 x ''; do
		rc=0
		out=$("$QSUP" serve --spares "$v" --listen "unix:$T_TMP/none.sock" 2>&1) || rc=$?
		expect_eq "--spares '$v' is a usage error" 125 "$rc"
		expect_match "--spares '$v' says why" "spares.*0.*16" "$out"
	done
	[ -e "$T_TMP/none.sock" ] && fail "a refused server listened"
}

for t in ${TESTS:-test_bad_spares test_fork_and_restore_take_a_spare \
    test_other_shape_not_taken test_dead_spare_forgotten}; do
	run_test "$t"
done
finish
