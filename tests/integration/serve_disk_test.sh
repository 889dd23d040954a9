#!/usr/bin/env bash
# "qsup serve" on a real disk (the seed's launch_vm): a create's "disk"
# boots the guest on an image file, written in place ("writable": true)
# or under a fresh overlay; the registry of disks in use refuses a disk
# held writable to anyone else, and a disk under a running sandbox to a
# writer, naming the holder; a killed server's records are dropped by the
# next. The disk is a small busybox root built by "qsup image build" from
# helpers/mkrootfs.py's archive (no download), booted on qsup's kernel.
. "$(dirname "$(readlink -f "$0")")/lib.sh"
SSE="python3 $PWD/tests/integration/helpers/sse.py"

D=$(mktemp -d /tmp/qsup-disk.XXXXXX)
trap 'rm -rf "$T_TMP" "$D"' EXIT
python3 tests/integration/helpers/mkrootfs.py base "$D/base.tar" &&
    "$QSUP" image build "$D/base.tar" -o "$D/base.qcow2" >/dev/null 2>&1 || {
	echo "cannot build the test disk (mkrootfs.py, qsup image build)"
	echo "0 passed, 1 failed"
	exit 1
}

serve_start() {
	S=$T_TMP/${FUNCNAME[1]}${1:+-$1}
	mkdir -p "$S"
	SOCK=$S/s.sock
	serve_launch "$SOCK" "$S/token" "$S/serve.log" ||
	    fail "the server did not come up: $(cat "$S/serve.log")"
	TOKEN=$(cat "$S/token" 2>/dev/null)
}

serve_stop() {
	kill -TERM "$SERVE_PID" 2>/dev/null
	local rc=0
	wait "$SERVE_PID" || rc=$?
	expect_eq "serve's exit status after SIGTERM" 0 "$rc"
}

# api METHOD PATH [CURL ARGS...]: $CODE and $BODY.
api() {
	local m=$1 p=$2
	shift 2
	CODE=$(curl -sS --unix-socket "$SOCK" -o "$S/body" -w '%{http_code}' \
	    -X "$m" -H "Authorization: Bearer $TOKEN" "$@" "http://qsup$p")
	BODY=$(cat "$S/body")
}

# create NAME DISK WRITABLE: a ready sandbox on DISK.
create() {
	api POST /v1/sandboxes -d "{\"name\":\"$1\",\"disk\":{\"path\":\"$2\",\"writable\":$3}}"
	expect_eq "create $1 on $2 (writable $3)" 201 "$CODE"
	expect_match "create $1: ready" '"state":"ready"' "$BODY"
}

# run_exec NAME CMD: its stdout in $OUT, its exit in $EXIT.
run_exec() {
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d "{\"argv\":[\"sh\",\"-c\",\"$2\"]}" \
	    "http://qsup/v1/sandboxes/$1/exec" >"$S/stream"
	EXIT=$($SSE "$S/stream" --out "$S/out" --err "$S/err")
	OUT=$(cat "$S/out")
}

sum() {
	sha256sum "$1" | cut -d' ' -f1
}

records() {
	ls -A "$T_RUN/qsup/disks" 2>/dev/null | grep -vx lock
}

test_writable_persists() {
	local f=$D/rw.qcow2 before
	cp "$D/base.qcow2" "$f"
	before=$(sum "$f")
	serve_start
	create a "$f" true
	expect_match "GET shows the disk" \
	    "\"disk\":{\"path\":\"$f\",\"writable\":true}" "$BODY"
	expect_eq "one record" 1 "$(records | wc -l)"
	run_exec a 'echo kept >/root/marker; sync; cat /root/marker'
	expect_eq "written" kept "$OUT"
	api DELETE /v1/sandboxes/a
	expect_eq "delete" 200 "$CODE"
	expect_match "the report says written" '"untouched":false' "$BODY"
	expect_eq "the record goes with it" "" "$(records)"
	[ "$(sum "$f")" != "$before" ] || fail "F did not change"
	create b "$f" true
	run_exec b 'cat /root/marker'
	expect_eq "the file persisted in F" kept "$OUT"
	api DELETE /v1/sandboxes/b
	# Read-only: the guest's writes go to an overlay, F stays as it is.
	before=$(sum "$f")
	create c "$f" false
	run_exec c 'echo gone >/root/marker; echo x >/root/new; sync; cat /root/marker'
	expect_eq "the overlay takes the write" gone "$OUT"
	api DELETE /v1/sandboxes/c
	expect_match "untouched read-only" '"untouched":true' "$BODY"
	expect_eq "F unchanged after a read-only use" "$before" "$(sum "$f")"
	create c2 "$f" false
	run_exec c2 'cat /root/marker; ls /root/new 2>&1'
	expect_match "the old file, no new one" "^kept
.*No such file" "$OUT"
	api DELETE /v1/sandboxes/c2
	serve_stop
}

test_in_use_refused() {
	local f=$D/use.qcow2 g=$D/other.qcow2 out
	cp "$D/base.qcow2" "$f"
	cp "$D/base.qcow2" "$g"
	serve_start
	create a "$f" true
	api POST /v1/sandboxes -d "{\"name\":\"b\",\"disk\":{\"path\":\"$f\",\"writable\":true}}"
	expect_eq "a disk held writable: refused to a writer" 409 "$CODE"
	expect_match "naming the holder" "disk $f is in use by sandbox a" "$BODY"
	api POST /v1/sandboxes -d "{\"name\":\"b\",\"disk\":{\"path\":\"$f\"}}"
	expect_eq "... and to a reader" 409 "$CODE"
	expect_match "naming the holder" "disk $f is in use by sandbox a" "$BODY"
	# Another name for the same file is the same disk.
	ln -s "$f" "$D/link.qcow2"
	api POST /v1/sandboxes -d "{\"name\":\"b\",\"disk\":{\"path\":\"$D/link.qcow2\"}}"
	expect_eq "through a symlink" 409 "$CODE"
	api GET /v1/sandboxes/b
	expect_eq "nothing made of the refused" 404 "$CODE"
	# "qsup run" reads the registry too.
	out=$("$QSUP" run --set image="$f" --set warm_start=false -- true 2>&1)
	expect_eq "qsup run on a disk a sandbox writes: refused" 125 $?
	expect_match "naming the holder" "disk $f is in use by sandbox a" "$out"
	# A base under a running sandbox (read-only, or a profile's image).
	create r1 "$g" false
	create r2 "$g" false
	api POST /v1/sandboxes -d "{\"name\":\"w\",\"disk\":{\"path\":\"$g\",\"writable\":true}}"
	expect_eq "the base of a running sandbox: not for writing" 409 "$CODE"
	expect_match "naming it" "disk $g is in use by sandbox r[12] \\(read-only" "$BODY"
	api DELETE /v1/sandboxes/r1
	api DELETE /v1/sandboxes/r2
	api POST /v1/sandboxes -d "{\"name\":\"i\",\"settings\":{\"image\":\"$g\"}}"
	expect_eq "an image's base" 201 "$CODE"
	api POST /v1/sandboxes -d "{\"name\":\"w\",\"disk\":{\"path\":\"$g\",\"writable\":true}}"
	expect_eq "an image's base: not for writing" 409 "$CODE"
	expect_match "naming it" "in use by sandbox i " "$BODY"
	api DELETE /v1/sandboxes/i
	# Another server sees the registry too.
	local s1=$S sock1=$SOCK tok1=$TOKEN pid1=$SERVE_PID
	serve_start two
	api POST /v1/sandboxes -d "{\"name\":\"z\",\"disk\":{\"path\":\"$f\"}}"
	expect_eq "another server refuses it too" 409 "$CODE"
	expect_match "naming the holder" "disk $f is in use by sandbox a" "$BODY"
	# The client.
	out=$(QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN "$QSUP" sandbox create --disk "$f:rw" y 2>&1)
	expect_eq "qsup sandbox create --disk: refused" 1 $?
	expect_match "qsup sandbox create --disk says why" "in use by sandbox a" "$out"
	out=$(cd "$D" && QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN "$QSUP" sandbox create --json --disk other.qcow2:rw y 2>&1)
	expect_match "qsup sandbox create --disk F:rw (relative)" \
	    "\"disk\":{\"path\":\"$g\",\"writable\":true}" "$out"
	api DELETE /v1/sandboxes/y
	serve_stop
	S=$s1 SOCK=$sock1 TOKEN=$tok1 SERVE_PID=$pid1
	api DELETE /v1/sandboxes/a
	expect_eq "records gone" "" "$(records)"
	create b "$f" true
	api DELETE /v1/sandboxes/b
	serve_stop
}

test_bad_disk() {
	local f=$D/bad.qcow2
	serve_start
	api POST /v1/sandboxes -d '{"disk":{"path":"rel.qcow2"}}'
	expect_eq "relative" 400 "$CODE"
	expect_match "names disk.path" 'disk.path: must be an absolute.*"field":"disk.path"' "$BODY"
	api POST /v1/sandboxes -d "{\"disk\":{\"path\":\"$D/missing.qcow2\"}}"
	expect_eq "missing" 400 "$CODE"
	expect_match "says missing" 'disk.path: image .*No such file' "$BODY"
	printf 'KDMV not really' >"$f"
	api POST /v1/sandboxes -d "{\"disk\":{\"path\":\"$f\"}}"
	expect_eq "not an image qsup boots" 400 "$CODE"
	expect_match "says what it is" 'disk.path: .*VMDK' "$BODY"
	head -c 1000 /dev/urandom >"$f"
	api POST /v1/sandboxes -d "{\"disk\":{\"path\":\"$f\"}}"
	expect_eq "not a whole number of sectors" 400 "$CODE"
	api POST /v1/sandboxes -d "{\"disk\":{\"path\":\"$D\"}}"
	expect_eq "a directory" 400 "$CODE"
	api POST /v1/sandboxes -d "{\"disk\":{\"path\":\"$D/base.qcow2\",\"rw\":true}}"
	expect_eq "unknown field" 400 "$CODE"
	expect_match "names it" '"field":"disk.rw"' "$BODY"
	api POST /v1/sandboxes -d "{\"disk\":{\"path\":\"$D/base.qcow2\",\"writable\":\"yes\"}}"
	expect_eq "writable not a boolean" 400 "$CODE"
	expect_match "names it" '"field":"disk.writable"' "$BODY"
	api POST /v1/sandboxes -d '{"disk":"/x"}'
	expect_eq "not an object" 400 "$CODE"
	api POST /v1/sandboxes -d "{\"settings\":{\"image\":\"$D/base.qcow2\",\"disk_size\":\"1G\"},\"disk\":{\"path\":\"$D/base.qcow2\",\"writable\":true}}"
	expect_eq "disk_size with a writable disk" 400 "$CODE"
	expect_match "says why" 'disk_size does not apply' "$BODY"
	api GET /v1/sandboxes
	expect_eq "nothing made" '{"sandboxes":[]}' "$BODY"
	expect_eq "no record" "" "$(records)"
	serve_stop
}

test_crashed_server_record_dropped() {
	local f=$D/crash.qcow2 i
	cp "$D/base.qcow2" "$f"
	serve_start
	create a "$f" true
	expect_eq "a record" 1 "$(records | wc -l)"
	kill -KILL "$SERVE_PID"
	wait "$SERVE_PID" 2>/dev/null
	for i in $(seq 1 100); do
		pgrep -f "qemu-system.*$T_RUN" >/dev/null || break
		sleep 0.1
	done
	expect_eq "the record is left behind" 1 "$(records | wc -l)"
	serve_start again
	create b "$f" true
	expect_match "the stale record dropped" "dropping .*process .* is gone" \
	    "$(cat "$S/serve.log")"
	expect_eq "only b's record" 1 "$(records | wc -l)"
	api DELETE /v1/sandboxes/b
	serve_stop
}

# A sandbox whose QEMU died lets its disk go.
test_dead_releases() {
	local f=$D/dead.qcow2 i
	cp "$D/base.qcow2" "$f"
	serve_start
	create a "$f" true
	pkill -KILL -f "qemu-system.*$T_RUN" || fail "no QEMU to kill"
	for i in $(seq 1 100); do
		api GET /v1/sandboxes/a
		expect_match "a still listed" '"name":"a"' "$BODY"
		[[ $BODY == *'"state":"dead"'* ]] && break
		sleep 0.1
	done
	expect_match "a is dead" '"state":"dead"' "$BODY"
	expect_eq "its record went" "" "$(records)"
	create b "$f" true
	api DELETE /v1/sandboxes/b
	api DELETE /v1/sandboxes/a
	serve_stop
}

for t in ${TESTS:-test_bad_disk test_writable_persists test_in_use_refused \
    test_crashed_server_record_dropped test_dead_releases}; do
	run_test "$t"
done
finish
