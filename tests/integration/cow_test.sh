#!/usr/bin/env bash
# Templates whose RAM is a file of their own (template_ram = "shared"):
# every restore maps it copy-on-write, the build's QEMU is replaced by a
# restore once it is saved, and what a guest writes stays its own.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

ram_file() { ls "$TPL"/*.ram 2>/dev/null | head -n 1; }

# What must not change: the RAM file's bytes, and its size, inode and mtime.
ram_id() { sha256sum <"$1" | cut -c1-64; stat -c '%s %i %Y.%y' "$1"; }

# The mapping of the template's RAM file in the QEMU of the run directory
# under $T_RUN, waited for while its command runs: "rw-p" is private.
ram_mapping() {
	local pid i
	for i in $(seq 1 200); do
		pid=$(pgrep -f "qemu-system.*qsup:$T_RUN" | head -n 1)
		if [ -n "$pid" ] && grep -q "$1" "/proc/$pid/maps" 2>/dev/null; then
			grep "$1" "/proc/$pid/maps" | awk '{print $2}' | sort -u
			return
		fi
		sleep 0.05
	done
	echo "no mapping"
}

# The first run builds the template, then restores it like any later run:
# the QEMU that runs its command maps the RAM file private, never shared.
test_build_run_goes_on_as_a_restore() {
	local ram mode st
	fresh_cache build
	"$QSUP" run --json -- sh -c 'echo started; sleep 3' >"$T_TMP/out" \
	    2>"$T_TMP/err" &
	for _ in $(seq 1 400); do
		grep -q started "$T_TMP/out" 2>/dev/null && break
		sleep 0.05
	done
	ram=$(ram_file)
	[ -n "$ram" ] || { fail "no RAM file once the command runs"; wait; return; }
	mode=$(ram_mapping "$(basename "$ram")")
	wait $!; st=$?
	expect_eq "status" 0 $st
	expect_eq "the build" '"template-build"' "$(json_field start "$T_TMP/err")"
	expect_eq "the command's QEMU maps it private" rw-p "$mode"
	expect_eq "size: the guest's memory" $((512 * 1024 * 1024)) \
	    "$(stat -c %s "$ram")"
	st=$(stat -c %s "$(ls "$TPL"/*.state)")
	[ "$st" -lt 1000000 ] || fail "the state holds more than devices: $st bytes"
	expect_match "format line" '^qsup-template 2 ram shared protocol [0-9]+$' \
	    "$(head -n 1 "$(ls "$TPL"/*.shape)")"
}

# Two restores side by side: neither sees what the other wrote (in its
# RAM: /tmp is the guest's tmpfs), and the template's file is the same,
# byte for byte, after any number of them.
test_clones_isolated_from_each_other_and_the_template() {
	local ram before a b sa sb
	fresh_cache isolated
	"$QSUP" run -- true
	ram=$(ram_file)
	[ -n "$ram" ] || { fail "no RAM file"; return; }
	before=$(ram_id "$ram")
	"$QSUP" run --json -- sh -c 'echo A >/tmp/mark; dd if=/dev/urandom of=/tmp/big bs=1M count=40 2>/dev/null; sleep 4; cat /tmp/mark' \
	    >"$T_TMP/a" 2>"$T_TMP/ea" & a=$!
	sleep 1.5
	"$QSUP" run --json -- sh -c 'cat /tmp/mark 2>&1; ls /tmp' \
	    >"$T_TMP/b" 2>"$T_TMP/eb" & b=$!
	wait $a; sa=$?
	wait $b; sb=$?
	expect_eq "A status" 0 $sa
	expect_eq "B status" 0 $sb
	expect_eq "A restored" '"warm"' "$(json_field start "$T_TMP/ea")"
	expect_eq "B restored" '"warm"' "$(json_field start "$T_TMP/eb")"
	expect_eq "A keeps its own" A "$(cat "$T_TMP/a")"
	expect_match "B does not see A's file" 'No such file' "$(cat "$T_TMP/b")"
	for _ in 1 2 3; do
		"$QSUP" run -- sh -c 'dd if=/dev/zero of=/tmp/z bs=1M count=20 2>/dev/null; echo x >/tmp/mark' ||
		    fail "a restore failed"
	done
	expect_eq "the template's RAM file is unchanged" "$before" "$(ram_id "$ram")"
	"$QSUP" run -- sh -c 'cat /tmp/mark 2>&1' >"$T_TMP/c"
	expect_match "a later restore starts clean" 'No such file' "$(cat "$T_TMP/c")"
}

# A template of the previous format at this key (its shape's first line),
# a RAM file gone, a template of another boot: each is rebuilt, never
# restored.
test_old_format_recognised_and_rebuilt() {
	local shape meta out
	fresh_cache old
	"$QSUP" run -- true
	shape=$(ls "$TPL"/*.shape)
	sed -i '1s/.*/qsup-template 1 protocol 1/' "$shape"
	out=$("$QSUP" run --json -v -- echo works 2>"$T_TMP/err")
	expect_eq "output" works "$out"
	expect_eq "rebuilt" '"template-build"' "$(json_field start "$T_TMP/err")"
	if grep -q 'did not restore' "$T_TMP/err"; then
		fail "an old-format template was tried"
	fi
	expect_match "the new one is format 2" '^qsup-template 2 ram shared' \
	    "$(head -n 1 "$shape")"

	rm -f "$(ram_file)"
	"$QSUP" run --json -- true 2>"$T_TMP/err"
	expect_eq "RAM file gone: rebuilt" '"template-build"' "$(json_field start "$T_TMP/err")"

	meta=$(ls "$TPL"/*.meta)
	sed -i '1s/boot .*/boot 00000000-0000-0000-0000-000000000000/' "$meta"
	"$QSUP" run --json -v -- true 2>"$T_TMP/err"
	expect_eq "another boot's: rebuilt" '"template-build"' "$(json_field start "$T_TMP/err")"
	expect_match "says why" 'changed since it was written, or in another boot' \
	    "$(cat "$T_TMP/err")"
	"$QSUP" run --json -- true 2>"$T_TMP/err"
	expect_eq "warm again" '"warm"' "$(json_field start "$T_TMP/err")"
}

# The RAM in the stream, as before: still there, behind the setting, as a
# template of its own; the shared one is kept beside it.
test_stream_format_kept_behind_the_setting() {
	local st n
	fresh_cache stream
	"$QSUP" run --json --set template_ram=stream -- true 2>"$T_TMP/err"
	expect_eq "builds" '"template-build"' "$(json_field start "$T_TMP/err")"
	"$QSUP" run --json --set template_ram=stream -- echo ok >"$T_TMP/out" 2>"$T_TMP/err"
	expect_eq "restores" '"warm"' "$(json_field start "$T_TMP/err")"
	expect_eq "output" ok "$(cat "$T_TMP/out")"
	[ -z "$(ram_file)" ] || fail "a stream template with a RAM file"
	st=$(stat -c %s "$(ls "$TPL"/*.state)")
	[ "$st" -gt 10000000 ] || fail "the stream holds no RAM: $st bytes"
	"$QSUP" run --json -- true 2>"$T_TMP/err"
	expect_eq "shared: its own template" '"template-build"' "$(json_field start "$T_TMP/err")"
	n=$(ls "$TPL"/*.shape | wc -l)
	expect_eq "two templates" 2 "$n"
}

# A QEMU killed outright while it builds leaves KEY.ram.PID (the guest's
# memory, written for as long as the build boots); the next run removes it
# once its writer is gone.
test_half_built_ram_swept() {
	local pid part
	fresh_cache halfram
	"$QSUP" run -- true 2>/dev/null &
	pid=$!
	for _ in $(seq 1 1200); do
		ls "$TPL"/*.ram.* >/dev/null 2>&1 && break
		sleep 0.05
	done
	kill -9 $pid
	wait $pid 2>/dev/null
	part=$(ls "$TPL" | grep '\.ram\.[0-9]*$')
	[ -n "$part" ] || { fail "no half-built RAM file seen"; return; }
	"$QSUP" run -- true
	expect_eq "status" 0 $?
	[ ! -e "$TPL/$part" ] || fail "the next run left $part"
}

# A run that waits for another's build of its template stops at once on
# SIGINT, leaving nothing; the build goes on unharmed.
test_waiting_for_the_builder_interrupted() {
	local b w t0 st
	fresh_cache waiter
	"$QSUP" run --json -- echo built >"$T_TMP/ob" 2>"$T_TMP/eb" & b=$!
	for _ in $(seq 1 200); do
		ls "$TPL"/*.ram.* >/dev/null 2>&1 && break
		sleep 0.05
	done
	"$QSUP" run -v -- echo waited >"$T_TMP/ow" 2>"$T_TMP/ew" & w=$!
	for _ in $(seq 1 100); do
		grep -q 'waiting for it' "$T_TMP/ew" && break
		sleep 0.05
	done
	expect_match "it waits" 'being built by another qsup: waiting for it' "$(cat "$T_TMP/ew")"
	t0=$(date +%s%N)
	kill -INT $w
	wait $w; st=$?
	expect_eq "interrupted" 130 $st
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 1000 ] ||
	    fail "took more than a second to stop"
	wait $b
	expect_eq "the build went on" built "$(cat "$T_TMP/ob")"
}

# A cache on a file system without room for the guest's memory: the build
# would die of SIGBUS when the disk fills, so it is not tried; the run boots
# and says why. Needs a small file system: a tmpfs mounted here when this
# test may (root, outside a container that forbids mounts).
test_no_room_for_a_template() {
	local m=$T_TMP/small out
	mkdir -p "$m"
	if ! mount -t tmpfs -o size=64m tmpfs "$m" 2>/dev/null; then
		echo "    (cannot mount a small tmpfs here, as $(id -un): skipped)"
		return
	fi
	out=$(XDG_CACHE_HOME=$m "$QSUP" run --json -- echo ok 2>"$T_TMP/err")
	expect_eq "output" ok "$out"
	expect_eq "booted" '"cold"' "$(json_field start "$T_TMP/err")"
	expect_match "says why" 'no template saved: .* has 6[0-9] MiB free, a template of this guest may need 512 MiB' \
	    "$(cat "$T_TMP/err")"
	expect_eq "nothing half-written" "" "$(ls "$m/qsup/templates" | grep -v '\.lock$')"
	umount "$m"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
