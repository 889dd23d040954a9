#!/usr/bin/env bash
# "qsup serve" attached to a QEMU started by hand (the seed's attach_vm):
# the test starts QEMU itself with a QMP unix socket and a virtio-serial
# port org.qemu.guest_agent.0 on a unix socket, its guest qsup's own
# initramfs with Debian's qemu-ga and its libraries added
# (helpers/qga_initramfs.sh). The server reads its state from QMP, pauses
# and resumes it (the guest's CPU stops: QEMU's CPU time stands still),
# runs commands through qemu-guest-agent's guest-exec over the same
# event stream as its own execs, refuses a socket that is not QEMU's
# monitor, detaches on delete (QEMU runs on) and quits it with ?quit=true.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
SSE="python3 $PWD/tests/integration/helpers/sse.py"

if ! command -v qemu-ga >/dev/null && [ ! -x /usr/sbin/qemu-ga ]; then
	echo "skipped: no qemu-ga (Debian package qemu-guest-agent, in build.sh's PACKAGES)"
	echo "0 passed, 0 failed"
	exit 0
fi
INITRD=$T_TMP/qga.cpio
bash tests/integration/helpers/qga_initramfs.sh "$INITRD" || {
	echo "cannot build the qemu-ga guest (helpers/qga_initramfs.sh)"
	echo "0 passed, 1 failed"
	exit 1
}
KHZ=$(awk -F: '/cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)

# qemu_start DIR [QEMU ARGS...]: QEMU by hand, its sockets in DIR, its
# pid in QPID; 0 once the guest's qemu-ga runs (its console says so).
qemu_start() {
	local d=$1 i
	shift
	mkdir -p "$d"
	qemu-system-x86_64 -M microvm -m 256 -nodefaults -no-user-config \
	    -display none -no-reboot -kernel build/guest/vmlinux \
	    -initrd "$INITRD" \
	    -append "console=ttyS0 quiet panic=-1 tsc_early_khz=$KHZ tsc=reliable no_timer_check pci=off random.trust_cpu=on mitigations=off 8250.nr_uarts=1" \
	    -serial "file:$d/console" \
	    -qmp "unix:$d/qmp.sock,server=on,wait=off" \
	    -chardev "socket,id=qga0,path=$d/qga.sock,server=on,wait=off" \
	    -device virtio-serial-device \
	    -device virtserialport,chardev=qga0,name=org.qemu.guest_agent.0 \
	    "$@" >"$d/qemu.log" 2>&1 &
	QPID=$!
	for i in $(seq 1 1200); do
		grep -q "qga-guest: ready" "$d/console" 2>/dev/null && return 0
		kill -0 "$QPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

qemu_stop() {
	kill "$QPID" 2>/dev/null
	wait "$QPID" 2>/dev/null
}

serve_start() {
	S=$T_TMP/${FUNCNAME[1]}
	mkdir -p "$S"
	SOCK=$S/s.sock
	serve_launch "$SOCK" "$S/token" "$S/serve.log" "$@" ||
	    fail "the server did not come up: $(cat "$S/serve.log")"
	TOKEN=$(cat "$S/token" 2>/dev/null)
}

serve_stop() {
	kill -TERM "$SERVE_PID" 2>/dev/null
	local rc=0
	wait "$SERVE_PID" || rc=$?
	expect_eq "serve's exit status after SIGTERM" 0 "$rc"
	[ "$rc" = 0 ] || sed 's/^/    serve: /' "$S/serve.log" | tail -n 40
}

# api METHOD PATH [CURL ARGS...]: $CODE, $BODY, $SECS.
api() {
	local m=$1 p=$2 out
	shift 2
	out=$(curl -sS -m 60 --unix-socket "$SOCK" -o "$S/body" \
	    -w '%{http_code} %{time_total}' -X "$m" \
	    -H "Authorization: Bearer $TOKEN" "$@" "http://qsup$p")
	CODE=${out% *}
	SECS=${out#* }
	BODY=$(cat "$S/body")
}

# run_exec NAME JSON: stdout in $OUT, stderr in $ERR, exit in $EXIT.
run_exec() {
	curl -sS -N -m 120 --unix-socket "$SOCK" \
	    -H "Authorization: Bearer $TOKEN" -d "$2" \
	    "http://qsup/v1/sandboxes/$1/exec" >"$S/stream"
	EXIT=$($SSE "$S/stream" --out "$S/out" --err "$S/err")
	OUT=$(cat "$S/out")
	ERR=$(cat "$S/err")
}

# QEMU's CPU time so far, in clock ticks.
cpu_ticks() {
	awk '{ print $14 + $15 }' "/proc/$1/stat"
}

test_attach_status_pause_exec() {
	local q=$T_TMP/q1 t0 t1
	qemu_start "$q" || { fail "QEMU did not come up: $(cat "$q/qemu.log" "$q/console")"; qemu_stop; return; }
	serve_start
	api POST /v1/sandboxes -d "{\"name\":\"h\",\"attach\":{\"qmp\":\"$q/qmp.sock\",\"qga\":\"$q/qga.sock\"}}"
	expect_eq "attach" 201 "$CODE"
	expect_match "running is ready" '"state":"ready"' "$BODY"
	expect_match "attached" '"attached":true' "$BODY"
	api GET /v1/sandboxes/h
	expect_match "GET says attached" '"name":"h".*"attached":true' "$BODY"
	api POST /v1/sandboxes -d "{\"name\":\"h3\",\"attach\":{\"qmp\":\"$q/qmp.sock\"}}"
	expect_eq "attached twice" 409 "$CODE"
	expect_match "names the holder" 'attached already, as sandbox h' "$BODY"
	run_exec h '{"argv":["echo","hi"]}'
	expect_eq "echo hi through qemu-ga" hi "$OUT"
	expect_match "its exit" '"status":0,' "$EXIT"
	run_exec h '{"argv":["false"]}'
	expect_match "false: exit 1" '"status":1,' "$EXIT"
	run_exec h '{"argv":["sh","-c","echo out; echo err >&2; echo $GREET; exit 7"],"env":{"GREET":"hello"}}'
	expect_eq "stdout and env" "out
hello" "$OUT"
	expect_eq "stderr" err "$ERR"
	expect_match "exit 7" '"status":7,' "$EXIT"
	run_exec h '{"argv":["no-such-command"]}'
	expect_match "a command that is not there: an error" '"error":"[^"]' \
	    "$(cat "$S/stream")"
	api POST /v1/sandboxes/h/exec -d '{"argv":["cat"],"stdin":true}'
	expect_eq "stdin refused" 400 "$CODE"
	expect_match "says why" '"field":"stdin"' "$BODY"
	api POST /v1/sandboxes/h/exec -d '{"argv":["sh"],"tty":true}'
	expect_eq "tty refused" 400 "$CODE"
	api POST /v1/sandboxes/h/exec -d '{"argv":["ls"],"cwd":"/"}'
	expect_eq "cwd refused" 400 "$CODE"
	api POST /v1/sandboxes/h/pause
	expect_eq "pause" 200 "$CODE"
	expect_match "paused" '"state":"paused"' "$BODY"
	t0=$(cpu_ticks "$QPID")
	sleep 2
	t1=$(cpu_ticks "$QPID")
	[ $((t1 - t0)) -le 10 ] || fail "QEMU took $((t1 - t0)) ticks of CPU while paused"
	api POST /v1/sandboxes/h/exec -d '{"argv":["true"]}'
	expect_eq "exec while paused" 409 "$CODE"
	api POST /v1/sandboxes/h/snapshots -d '{"name":"hs"}'
	expect_eq "a snapshot of a QEMU without a qcow2 disk" 409 "$CODE"
	expect_match "says why" 'no writable qcow2 disk' "$BODY"
	api GET /v1/snapshots
	expect_eq "nothing kept of it" '{"snapshots":[]}' "$BODY"
	api POST /v1/sandboxes/h/fork -d '{"count":1}'
	expect_eq "a fork of an attached QEMU" 409 "$CODE"
	api POST /v1/sandboxes/h/resume
	expect_eq "resume" 200 "$CODE"
	expect_match "ready" '"state":"ready"' "$BODY"
	run_exec h '{"argv":["echo","again"]}'
	expect_eq "exec after resume" again "$OUT"
	api GET '/v1/sandboxes/h/files?path=/etc/passwd'
	expect_eq "file calls refused" 409 "$CODE"
	# Delete detaches: QEMU runs on, and can be attached again.
	api DELETE /v1/sandboxes/h
	expect_eq "detach" 200 "$CODE"
	expect_match "says detached" 'detached' "$BODY"
	sleep 0.5
	kill -0 "$QPID" 2>/dev/null || fail "QEMU did not survive the detach"
	api POST /v1/sandboxes -d "{\"name\":\"h2\",\"attach\":{\"qmp\":\"$q/qmp.sock\"}}"
	expect_eq "attached again, without qga" 201 "$CODE"
	api POST /v1/sandboxes/h2/exec -d '{"argv":["true"]}'
	expect_eq "no exec without qga" 409 "$CODE"
	expect_match "says why" 'without \\"qga\\"' "$BODY"
	api DELETE '/v1/sandboxes/h2?quit=true'
	expect_eq "quit" 200 "$CODE"
	expect_match "says quit" 'QEMU quit' "$BODY"
	local i
	for i in $(seq 1 100); do
		kill -0 "$QPID" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$QPID" 2>/dev/null; then
		fail "QEMU still runs after quit=true"
		qemu_stop
	fi
	wait "$QPID" 2>/dev/null
	serve_stop
}

test_not_qmp_refused() {
	local d=$T_TMP/notqmp pid
	mkdir -p "$d"
	serve_start
	# A socket that says nothing: refused within the greeting's deadline.
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
c, _ = s.accept(); time.sleep(30)
' "$d/silent.sock" &
	pid=$!
	for _ in $(seq 1 50); do [ -S "$d/silent.sock" ] && break; sleep 0.1; done
	api POST /v1/sandboxes -d "{\"name\":\"x\",\"attach\":{\"qmp\":\"$d/silent.sock\"}}"
	expect_eq "a silent socket" 400 "$CODE"
	expect_match "not a QMP monitor" 'not a QMP monitor: no greeting' "$BODY"
	awk -v s="$SECS" 'BEGIN { exit !(s < 20) }' || fail "took $SECS s"
	kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
	# One that speaks, but not QMP.
	python3 -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
c, _ = s.accept(); c.sendall(b"SSH-2.0-OpenSSH_9.2\r\n"); time.sleep(30)
' "$d/ssh.sock" &
	pid=$!
	for _ in $(seq 1 50); do [ -S "$d/ssh.sock" ] && break; sleep 0.1; done
	api POST /v1/sandboxes -d "{\"name\":\"x\",\"attach\":{\"qmp\":\"$d/ssh.sock\"}}"
	expect_eq "another protocol" 400 "$CODE"
	expect_match "not QMP's greeting" "not a QMP monitor: its first line is not QMP's greeting" "$BODY"
	kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
	api POST /v1/sandboxes -d "{\"name\":\"x\",\"attach\":{\"qmp\":\"$d/none.sock\"}}"
	expect_eq "no socket" 400 "$CODE"
	expect_match "names it" '"field":"attach.qmp"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"x","attach":{"qmp":"rel.sock"}}'
	expect_eq "relative" 400 "$CODE"
	api POST /v1/sandboxes -d "{\"name\":\"x\",\"attach\":{\"qmp\":\"$d/a\",\"monitor\":1}}"
	expect_eq "unknown member" 400 "$CODE"
	expect_match "names it" '"field":"attach.monitor"' "$BODY"
	api POST /v1/sandboxes -d "{\"name\":\"x\",\"profile\":\"default\",\"attach\":{\"qmp\":\"$d/a\"}}"
	expect_eq "a profile with attach" 400 "$CODE"
	api GET /v1/sandboxes
	expect_eq "nothing left" '{"sandboxes":[]}' "$BODY"
	serve_stop
}

# A QEMU stopped at start (-S) is attached paused; one that dies is dead.
test_prelaunch_and_death() {
	local d=$T_TMP/q2 i
	mkdir -p "$d"
	qemu-system-x86_64 -M microvm -m 64 -nodefaults -no-user-config \
	    -display none -S -qmp "unix:$d/qmp.sock,server=on,wait=off" \
	    >"$d/qemu.log" 2>&1 &
	QPID=$!
	for i in $(seq 1 100); do [ -S "$d/qmp.sock" ] && break; sleep 0.1; done
	serve_start --max-sandboxes 1
	api POST /v1/sandboxes -d "{\"attach\":{\"qmp\":\"$d/qmp.sock\"}}"
	expect_eq "attach" 201 "$CODE"
	expect_match "-S: paused, a name picked" '"name":"sb-1","state":"paused"' "$BODY"
	api POST /v1/sandboxes -d "{\"attach\":{\"qmp\":\"$d/other.sock\"}}"
	expect_eq "past max_sandboxes" 503 "$CODE"
	expect_match "names the limit" '"limit":"max_sandboxes","max":1' "$BODY"
	api POST /v1/sandboxes/sb-1/resume
	expect_eq "resume" 200 "$CODE"
	expect_match "ready" '"state":"ready"' "$BODY"
	kill -KILL "$QPID"
	wait "$QPID" 2>/dev/null
	for i in $(seq 1 50); do
		api GET /v1/sandboxes/sb-1
		[[ $BODY == *'"state":"dead"'* ]] && break
		sleep 0.1
	done
	expect_match "QEMU gone: dead" '"state":"dead".*"reason":"QMP: QEMU closed its monitor"' "$BODY"
	api DELETE /v1/sandboxes/sb-1
	expect_eq "delete the record" 200 "$CODE"
	serve_stop
}

# snapshots: the tags inside a qcow2 disk that QEMU holds open.
snapshots() {
	qemu-img snapshot -U -l "$1" 2>&1 | awk 'NR > 2 { print $2 }' |
	    tr '\n' ' '
}

# Snapshots of an attached QEMU, where QEMU allows them: inside its
# writable qcow2 disk (snapshot-save), loaded back into it
# (snapshot-load): a file in the guest's RAM (its initramfs) and a
# process's counter go back to what they were; removed from the disk by
# DELETE. A raw writable disk, which no snapshot could hold, is refused.
test_attach_snapshot() {
	local q=$T_TMP/q3 n0 n1 n2 out
	qemu-img create -q -f qcow2 "$T_TMP/q3.qcow2" 16M
	qemu_start "$q" -drive "file=$T_TMP/q3.qcow2,if=none,id=d0,format=qcow2" \
	    -device virtio-blk-device,drive=d0 ||
	    { fail "QEMU did not come up: $(cat "$q/qemu.log" "$q/console")"; qemu_stop; return; }
	serve_start
	api POST /v1/sandboxes -d "{\"name\":\"h\",\"attach\":{\"qmp\":\"$q/qmp.sock\",\"qga\":\"$q/qga.sock\"}}"
	expect_eq "attach" 201 "$CODE"
	run_exec h '{"argv":["sh","-c","echo before >/tmp/f; (i=0; while :; do i=$((i+1)); echo $i >/tmp/n; sleep 0.2; done) >/dev/null 2>&1 </dev/null & echo started"]}'
	expect_eq "a counter" started "$OUT"
	sleep 1
	api POST /v1/sandboxes/h/snapshots -d '{"name":"s1"}'
	expect_eq "snapshot" 201 "$CODE"
	expect_match "kept in its disk" '"attached":\{"qmp":"[^"]*qmp.sock","tag":"s1","devices":\["[^"]+"\]\}' "$BODY"
	expect_match "the sandbox named" '"sandbox":"h"' "$BODY"
	expect_eq "the disk holds it" "s1 " "$(snapshots "$T_TMP/q3.qcow2")"
	run_exec h '{"argv":["cat","/tmp/n"]}'
	n0=$OUT
	api POST /v1/sandboxes/h/snapshots -d '{"name":"s1"}'
	expect_eq "a name in use" 409 "$CODE"
	run_exec h '{"argv":["sh","-c","echo after >/tmp/f"]}'
	sleep 1
	run_exec h '{"argv":["cat","/tmp/n"]}'
	n1=$OUT
	[ "$n1" -gt "$n0" ] || fail "the counter did not run on: $n0, then $n1"
	api POST /v1/sandboxes/h/restore -d '{"snapshot":"s1"}'
	expect_eq "loaded back" 200 "$CODE"
	expect_match "ready again" '"state":"ready"' "$BODY"
	run_exec h '{"argv":["cat","/tmp/f"]}'
	expect_eq "the file as it was" before "$OUT"
	run_exec h '{"argv":["cat","/tmp/n"]}'
	n2=$OUT
	[ "$n2" -lt "$n1" ] || fail "the counter did not go back: $n1 before the load, $n2 after"
	echo "attached load: counter $n1 before, $n2 after (saved near $n0)" >>"$S/figures"
	# The client's command, on the same call.
	run_exec h '{"argv":["sh","-c","echo later >/tmp/f"]}'
	out=$(QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN "$QSUP" sandbox restore h s1 2>&1)
	expect_eq "qsup sandbox restore" h "$out"
	run_exec h '{"argv":["cat","/tmp/f"]}'
	expect_eq "loaded again" before "$OUT"
	out=$(QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN "$QSUP" sandbox restore h nope 2>&1)
	expect_match "an unknown one, named" 'no snapshot named nope' "$out"
	api POST /v1/sandboxes -d '{"name":"c","snapshot":"s1"}'
	expect_eq "no new sandbox from it" 409 "$CODE"
	expect_match "says how to load it" 'restore' "$BODY"
	api POST /v1/sandboxes/h/restore -d '{"snapshot":"none"}'
	expect_eq "an unknown snapshot" 404 "$CODE"
	api POST /v1/sandboxes/h/restore -d '{"snap":"s1"}'
	expect_eq "an unknown field" 400 "$CODE"
	api DELETE /v1/snapshots/s1
	expect_eq "delete" 204 "$CODE"
	expect_eq "out of the disk too" "" "$(snapshots "$T_TMP/q3.qcow2")"
	api GET /v1/snapshots
	expect_eq "and out of the list" '{"snapshots":[]}' "$BODY"
	api DELETE '/v1/sandboxes/h?quit=true'
	expect_eq "quit" 200 "$CODE"
	wait "$QPID" 2>/dev/null

	# A writable raw disk: no snapshot could hold its writes.
	qemu-img create -q -f raw "$T_TMP/q3.raw" 16M
	qemu_start "$q-raw" -drive "file=$T_TMP/q3.raw,if=none,id=r0,format=raw" \
	    -device virtio-blk-device,drive=r0 ||
	    { fail "QEMU did not come up again"; qemu_stop; serve_stop; return; }
	api POST /v1/sandboxes -d "{\"name\":\"r\",\"attach\":{\"qmp\":\"$q-raw/qmp.sock\"}}"
	expect_eq "attach" 201 "$CODE"
	api POST /v1/sandboxes/r/snapshots -d '{"name":"s2"}'
	expect_eq "a raw disk" 409 "$CODE"
	expect_match "names it" 'writable disk r0 is raw, not qcow2' "$BODY"
	api GET /v1/snapshots
	expect_eq "nothing kept" '{"snapshots":[]}' "$BODY"
	api DELETE '/v1/sandboxes/r?quit=true'
	wait "$QPID" 2>/dev/null
	serve_stop
}

for t in ${TESTS:-test_not_qmp_refused test_prelaunch_and_death \
    test_attach_status_pause_exec test_attach_snapshot}; do
	run_test "$t"
done
finish
