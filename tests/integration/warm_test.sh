#!/usr/bin/env bash
# Warm start: templates of booted guests, restored instead of booted.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

state_file() {
	ls "$XDG_CACHE_HOME"/qsup/templates/*.state 2>/dev/null | head -n 1
}

test_warm_is_fresh() {
	local a b host guest
	fresh_cache warm_is_fresh
	"$QSUP" run --json -- true 2>"$T_TMP/err"
	expect_eq "first run builds" '"template-build"' "$(json_field start "$T_TMP/err")"
	a=$("$QSUP" run --json -- sh -c 'head -c 16 /dev/urandom | od -x | head -n 1; date +%s' 2>"$T_TMP/err")
	host=$(date +%s)
	expect_eq "second run restores" '"warm"' "$(json_field start "$T_TMP/err")"
	# Its boot in parts: QEMU's start, and the agent's own /setup, each
	# above 0 and within the whole boot; the command's start within it.
	awk -v q="$(json_field qemu_start_s "$T_TMP/err")" \
	    -v g="$(json_field guest_setup_s "$T_TMP/err")" \
	    -v b="$(json_field boot_s "$T_TMP/err")" \
	    -v s="$(json_field exec_start_s "$T_TMP/err")" \
	    -v e="$(json_field exec_s "$T_TMP/err")" \
	    'BEGIN { exit !(q > 0 && g > 0 && q + g < b && s > 0 && s < e) }' ||
	    fail "the warm run's timings in parts: $(tail -n 1 "$T_TMP/err" | sed 's/.*"timings"//')"
	b=$("$QSUP" run -- sh -c 'head -c 16 /dev/urandom | od -x | head -n 1; date +%s')
	[ "$(head -n 1 <<<"$a")" != "$(head -n 1 <<<"$b")" ] ||
	    fail "two restored guests gave the same random bytes: $a"
	guest=$(tail -n 1 <<<"$a")
	[ $((host - guest)) -le 1 ] && [ $((guest - host)) -le 1 ] ||
	    fail "guest clock $guest, host clock $host"
}

test_template_holds_nothing_of_the_sandbox() {
	local secret=qsup-secret-$RANDOM$RANDOM st
	fresh_cache nothing_inside
	printf 'return { env = { SECRET = "%s" } }\n' "$secret" >"$T_TMP/s.lua"
	"$QSUP" run --profile "$T_TMP/s.lua" -- sh -c 'echo "$SECRET" >/tmp/x; cat /tmp/x' >"$T_TMP/out"
	expect_eq "the command saw it" "$secret" "$(cat "$T_TMP/out")"
	st=$(state_file)
	[ -n "$st" ] || { fail "no template written"; return; }
	if grep -q -a "$secret" "$st"; then
		fail "the template holds the sandbox's environment"
	fi
	"$QSUP" run --profile "$T_TMP/s.lua" -- sh -c 'cat /tmp/x 2>&1; echo "$SECRET"' >"$T_TMP/out"
	expect_match "no file of the last run, own env" "No such file.*
$secret" "$(cat "$T_TMP/out")"
}

# Changed behind qsup's back, size and mtime kept: QEMU refuses the stream,
# qsup discards the template and boots.
test_corrupt_template_falls_back() {
	local st
	fresh_cache corrupt
	"$QSUP" run -- true
	st=$(state_file)
	[ -n "$st" ] || { fail "no template written"; return; }
	touch -r "$st" "$T_TMP/ref"
	head -c 64 /dev/urandom | dd of="$st" bs=1 conv=notrunc 2>/dev/null
	touch -r "$T_TMP/ref" "$st"
	out=$("$QSUP" run --json -v -- echo works 2>"$T_TMP/err")
	expect_eq "status" 0 $?
	expect_eq "output" works "$out"
	expect_match "says so under -v" 'did not restore' "$(cat "$T_TMP/err")"
	expect_eq "rebuilt" '"template-build"' "$(json_field start "$T_TMP/err")"
	"$QSUP" run --json -- true 2>"$T_TMP/err"
	expect_eq "warm again" '"warm"' "$(json_field start "$T_TMP/err")"
}

test_deleted_template_boots() {
	local st
	fresh_cache deleted
	"$QSUP" run -- true
	st=$(state_file)
	rm -f "$st"
	out=$("$QSUP" run --json -- echo works 2>"$T_TMP/err")
	expect_eq "status" 0 $?
	expect_eq "output" works "$out"
	expect_eq "rebuilt" '"template-build"' "$(json_field start "$T_TMP/err")"
}

# Changed visibly (size, mtime): not even tried.
test_changed_template_is_rebuilt() {
	local st
	fresh_cache changed
	"$QSUP" run -- true
	st=$(state_file)
	truncate -s 1000000 "$st"
	out=$("$QSUP" run --json -v -- echo works 2>"$T_TMP/err")
	expect_eq "status" 0 $?
	expect_eq "output" works "$out"
	expect_match "says so" 'changed since it was written' "$(cat "$T_TMP/err")"
	expect_eq "rebuilt" '"template-build"' "$(json_field start "$T_TMP/err")"
	"$QSUP" run --json -- true 2>"$T_TMP/err"
	expect_eq "warm again" '"warm"' "$(json_field start "$T_TMP/err")"
}

test_shape_change_new_template() {
	fresh_cache shape
	"$QSUP" run -- true
	printf 'return { memory = "256M" }\n' >"$T_TMP/m.lua"
	"$QSUP" run --json --profile "$T_TMP/m.lua" -- true 2>"$T_TMP/err"
	expect_eq "new shape builds" '"template-build"' "$(json_field start "$T_TMP/err")"
	expect_eq "two templates" 2 "$("$QSUP" cache ls | grep -cE '^[0-9a-f]{32} ')"
	"$QSUP" run --json -- true 2>"$T_TMP/err"
	expect_eq "the first is still used" '"warm"' "$(json_field start "$T_TMP/err")"
}

test_concurrent_cold_cache() {
	local p1 p2 s1 s2 kinds
	fresh_cache concurrent
	"$QSUP" run --json -- echo one >"$T_TMP/o1" 2>"$T_TMP/e1" & p1=$!
	"$QSUP" run --json -- echo two >"$T_TMP/o2" 2>"$T_TMP/e2" & p2=$!
	wait $p1; s1=$?
	wait $p2; s2=$?
	expect_eq "first status" 0 $s1
	expect_eq "second status" 0 $s2
	expect_eq "first output" one "$(cat "$T_TMP/o1")"
	expect_eq "second output" two "$(cat "$T_TMP/o2")"
	kinds=$(json_field start "$T_TMP/e1")$(json_field start "$T_TMP/e2")
	expect_eq "built once" 1 "$(grep -o template-build <<<"$kinds" | wc -l)"
	# The other waited for that template rather than booting beside it.
	expect_eq "the other restored it" 1 "$(grep -o '"warm"' <<<"$kinds" | wc -l)"
	expect_eq "one template" 1 "$("$QSUP" cache ls | grep -cE '^[0-9a-f]{32} ')"
}

test_cache_ls_clear() {
	fresh_cache lsclear
	expect_eq "empty" "" "$("$QSUP" cache ls)"
	"$QSUP" run -- true
	expect_match "listed" '^[0-9a-f]{32} +[0-9.]+ MB' "$("$QSUP" cache ls)"
	expect_eq "clear" "removed 1 template
removed 0 staged trees" "$("$QSUP" cache clear)"
	expect_eq "empty again" "" "$("$QSUP" cache ls)"
	"$QSUP" cache bogus 2>/dev/null
	expect_eq "bad subcommand" 125 $?
}

# kill -9 of qsup while it builds a template leaves KEY.ram.PID (the
# guest's memory, written while the build boots; KEY.state.PID with
# template_ram = "stream", while it saves): listed by "cache ls", removed
# by the next run and by "cache clear" once its writer is gone, never while
# it is alive.
test_half_written_template_swept() {
	local pid tpl part st
	fresh_cache halfwritten
	tpl=$XDG_CACHE_HOME/qsup/templates
	"$QSUP" run -- true 2>/dev/null &
	pid=$!
	for _ in $(seq 1 1200); do
		ls "$tpl"/*.ram.* >/dev/null 2>&1 && break
		sleep 0.05
	done
	kill -9 $pid
	wait $pid 2>/dev/null
	part=$(ls "$tpl" | grep '\.ram\.[0-9]*$')
	[ -n "$part" ] || { fail "no half-written template seen"; return; }
	expect_match "listed" "^$part +[0-9.]+ MB +half-written by process $pid, gone" \
	    "$("$QSUP" cache ls)"
	# A live writer's (ours) stays.
	: >"$tpl/0123456789abcdef0123456789abcdef.state.$$"
	expect_match "cleared" 'removed 1 half-written file' "$("$QSUP" cache clear)"
	[ ! -e "$tpl/$part" ] || fail "cache clear left $part"
	[ -e "$tpl/0123456789abcdef0123456789abcdef.state.$$" ] ||
	    fail "cache clear removed a live writer's file"
	rm -f "$tpl/0123456789abcdef0123456789abcdef.state.$$"
	# And a run sweeps what a killed qsup left.
	: >"$tpl/$part"
	"$QSUP" run -- true; st=$?
	expect_eq "status" 0 $st
	[ ! -e "$tpl/$part" ] || fail "the next run left $part"
	# The QEMU of the killed qsup died with it; its run directory is the
	# next run's to sweep (run_test.sh test_stale_run_dirs_swept).
}

# A remembered "kvm" verdict is not trusted forever: when QEMU then does
# not boot under KVM, the verdict is dropped and the run boots under TCG.
# This host's KVM (nested, kvm_pvm) hangs a guest, which makes the case:
# elsewhere the test says it cannot run.
test_kvm_verdict_remeasured() {
	local v=$T_TMP/kvm-cache/qsup/kvm-verdict out st
	export XDG_CACHE_HOME=$T_TMP/kvm-cache
	rm -rf "$XDG_CACHE_HOME"
	if [ ! -c /dev/kvm ]; then
		echo "    (no /dev/kvm: cannot make KVM fail here; skipped)"
		return
	fi
	QSUP_KVM_FORCE_PROBE=1 "$QSUP" run -- true
	if [ "$(sed -n 2p "$v")" != tcg ]; then
		echo "    (KVM works on this host: skipped)"
		return
	fi
	# As if KVM had worked when it was measured.
	sed -i '2s/.*/kvm/; 3s/.*/a probe guest booted under KVM/' "$v"
	out=$(QSUP_KVM_FORCE_PROBE=1 "$QSUP" run -v --json \
	    --set start_timeout=10 -- echo fine 2>"$T_TMP/err"); st=$?
	expect_eq "status" 0 $st
	expect_eq "output" fine "$out"
	expect_match "said under -v" 'QEMU failed under KVM .*remembered to work: the verdict is dropped; booting again under TCG' \
	    "$(cat "$T_TMP/err")"
	expect_eq "accelerator" '"tcg"' "$(json_field accelerator "$T_TMP/err")"
	[ ! -e "$v" ] || fail "the verdict is still there: $(cat "$v")"
}

# Every QEMU qsup starts is confined with -sandbox: the KVM probe's too.
test_every_qemu_sandboxed() {
	local n
	fresh_cache sandboxed
	cat >"$T_TMP/qemu" <<-EOF
	#!/bin/bash
	echo "\$*" >>"$T_TMP/qemu.log"
	exec qemu-system-x86_64 "\$@"
	EOF
	chmod +x "$T_TMP/qemu"
	QSUP_QEMU=$T_TMP/qemu QSUP_KVM_FORCE_PROBE=1 "$QSUP" run -- true
	expect_eq "status" 0 $?
	if [ -c /dev/kvm ]; then
		expect_match "the probe ran" 'qsup\.probe=1' "$(cat "$T_TMP/qemu.log")"
	fi
	n=$(grep -vc -- '-sandbox on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny' "$T_TMP/qemu.log")
	expect_eq "QEMUs without -sandbox" 0 "$n"
}

test_warm_start_off() {
	fresh_cache off
	printf 'return { warm_start = false }\n' >"$T_TMP/off.lua"
	out=$("$QSUP" run --json --profile "$T_TMP/off.lua" -- echo cold 2>"$T_TMP/err")
	expect_eq "output" cold "$out"
	expect_eq "cold" '"cold"' "$(json_field start "$T_TMP/err")"
	expect_eq "no template" "" "$("$QSUP" cache ls)"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
