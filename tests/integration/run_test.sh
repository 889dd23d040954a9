#!/usr/bin/env bash
# "qsup run" as a user meets it: real QEMU, real guest, real agent.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

test_uname() {
	local out
	out=$("$QSUP" run -- uname -a)
	expect_eq "status" 0 $?
	expect_match "uname output" '^Linux qsup .*x86_64' "$out"
}

test_exit_statuses() {
	local out st
	"$QSUP" run -- true; expect_eq "true" 0 $?
	"$QSUP" run -- false; expect_eq "false" 1 $?
	"$QSUP" run -- sh -c 'exit 42'; expect_eq "exit 42" 42 $?
	"$QSUP" run -- sh -c 'kill -9 $$'; expect_eq "killed by 9" 137 $?
	out=$("$QSUP" run -- no-such-command 2>&1); st=$?
	expect_eq "missing command" 127 $st
	expect_match "missing command message" 'no-such-command' "$out"
	out=$("$QSUP" run -- /etc/qsup-modules 2>&1); st=$?
	expect_eq "not executable" 126 $st
}

test_stdout_stderr_apart() {
	local out err
	out=$("$QSUP" run -- sh -c 'echo to-out; echo to-err >&2' \
	    2>"$T_TMP/err")
	err=$(cat "$T_TMP/err")
	expect_eq "stdout" "to-out" "$out"
	expect_eq "stderr" "to-err" "$err"
}

test_argv_exact() {
	local out
	out=$("$QSUP" run -- printf '%s|' 'a b' '"c"' '$HOME' '' "x'y" '*')
	expect_eq "argv" "a b|\"c\"|\$HOME||x'y|*|" "$out"
}

test_env_and_cwd() {
	local out
	out=$("$QSUP" run -e FOO='bar baz' -e EMPTY= -w /proc -- \
	    sh -c 'echo "$FOO/${EMPTY-unset}/$(pwd)"')
	expect_eq "env and cwd" "bar baz///proc" "$out"
}

test_stdin_lines() {
	local out
	out=$(printf 'a\nb\n' | "$QSUP" run -- wc -l)
	expect_eq "wc -l" 2 "$(echo $out)"
}

test_big_binary_output() {
	local want got
	"$QSUP" run -- sh -c 'head -c 20971520 /dev/urandom > /tmp/x &&
	    md5sum /tmp/x >&2 && cat /tmp/x' >"$T_TMP/out" 2>"$T_TMP/err"
	expect_eq "status" 0 $?
	want=$(awk '{print $1}' "$T_TMP/err")
	got=$(md5sum <"$T_TMP/out" | awk '{print $1}')
	expect_eq "size" 20971520 "$(stat -c %s "$T_TMP/out")"
	expect_eq "digest" "$want" "$got"
}

test_big_binary_stdin() {
	local want got
	head -c 10485760 /dev/urandom >"$T_TMP/in"
	want=$(md5sum <"$T_TMP/in" | awk '{print $1}')
	got=$("$QSUP" run -- md5sum <"$T_TMP/in" | awk '{print $1}')
	expect_eq "digest" "$want" "$got"
}

test_stdin_unread_and_dev_null() {
	local out
	out=$(head -c 5000000 /dev/zero | "$QSUP" run -- echo fine)
	expect_eq "unread stdin" fine "$out"
	out=$("$QSUP" run -- cat </dev/null)
	expect_eq "empty stdin" "" "$out"
}

# Ctrl-C (SIGINT) or SIGTERM mid-command: exit 128+N within 2 s, nothing left.
interrupt_case() {
	local sig=$1 want=$2 pid t0 st
	"$QSUP" run -- sh -c 'echo started; exec sleep 300' >"$T_TMP/o" &
	pid=$!
	# The start is not what is tested: a loaded machine may take long.
	for _ in $(seq 1 2400); do
		grep -q started "$T_TMP/o" 2>/dev/null && break
		sleep 0.05
	done
	expect_eq "command started" started "$(cat "$T_TMP/o")"
	t0=$(date +%s%N)
	kill -"$sig" $pid
	wait $pid; st=$?
	expect_eq "status after SIG$sig" "$want" $st
	local ms=$((($(date +%s%N) - t0) / 1000000))
	[ $ms -le 2000 ] || fail "took $ms ms to stop after SIG$sig"
}

test_sigint() {
	interrupt_case INT 130
}

test_sigterm() {
	interrupt_case TERM 143
}

test_timeout() {
	local st t0=$SECONDS
	"$QSUP" run --timeout 2 -- sleep 60 2>"$T_TMP/err"; st=$?
	expect_eq "status" 124 $st
	expect_match "message" 'timed out' "$(cat "$T_TMP/err")"
	[ $((SECONDS - t0)) -lt 20 ] || fail "timeout took too long"
}

test_qemu_killed() {
	local pid st qpid
	"$QSUP" run -- sh -c 'echo started; exec sleep 300' >"$T_TMP/o" \
	    2>"$T_TMP/err" &
	pid=$!
	for _ in $(seq 1 2400); do
		grep -q started "$T_TMP/o" 2>/dev/null && break
		sleep 0.05
	done
	qpid=$(pgrep -f "qemu-system.*$T_RUN")
	kill -9 $qpid
	wait $pid; st=$?
	expect_eq "status" 125 $st
	expect_match "message" 'QEMU|agent' "$(cat "$T_TMP/err")"
}

test_json_summary() {
	local err
	"$QSUP" run --json -- sh -c 'exit 3' 2>"$T_TMP/err"
	expect_eq "status" 3 $?
	err=$(tail -n 1 "$T_TMP/err")
	expect_match "json" '^\{"exit_status":3,' "$err"
	expect_match "accelerator" '"accelerator":"(tcg|kvm)"' "$err"
	expect_match "timings" '"boot_s":[0-9.]+' "$err"
	if command -v python3 >/dev/null; then
		python3 -c 'import json,sys; json.loads(sys.argv[1])' "$err" ||
		    fail "not valid JSON: $err"
	fi
}

test_verbose() {
	local err
	"$QSUP" run -v -- true 2>"$T_TMP/err"
	err=$(cat "$T_TMP/err")
	expect_match "profile" 'profile: builtin:default' "$err"
	expect_match "accelerator and why" 'accelerator: (tcg|kvm) \(.+\)' "$err"
	expect_match "qemu command line" 'qemu: .*-sandbox on,obsolete=deny' "$err"
	expect_match "timings" 'timings: prepare' "$err"
}

test_console() {
	local err
	"$QSUP" run --console -- true 2>"$T_TMP/err"
	expect_eq "status" 0 $?
	expect_match "console shown" 'qsup-agent' "$(cat "$T_TMP/err")"
}

test_bad_usage() {
	local err
	err=$("$QSUP" run --no-such-flag -- true 2>&1)
	expect_eq "unknown flag" 125 $?
	expect_match "unknown flag message" 'no-such-flag' "$err"
	err=$("$QSUP" run 2>&1)
	expect_eq "no command" 125 $?
	err=$("$QSUP" run --profile /nonexistent.lua -- true 2>&1)
	expect_eq "missing profile" 125 $?
	expect_match "missing profile message" '/nonexistent.lua' "$err"
	err=$("$QSUP" run --timeout abc -- true 2>&1)
	expect_eq "bad timeout" 125 $?
	err=$("$QSUP" run -e 1X=y -- true 2>&1)
	expect_eq "bad -e" 125 $?
}

# The seed ISO path: no template, the agent configured at boot.
test_cold_boot_seed() {
	local out
	printf 'return { warm_start = false, env = { FROM_PROFILE = "p v" }, cwd = "/tmp" }\n' \
	    >"$T_TMP/cold.lua"
	out=$("$QSUP" run --json --profile "$T_TMP/cold.lua" -- sh -c \
	    'echo "$FROM_PROFILE|$(pwd)|$(hostname)"' 2>"$T_TMP/err")
	expect_eq "status" 0 $?
	expect_eq "profile env, cwd, hostname" "p v|/tmp|qsup" "$out"
	expect_match "cold" '"start":"cold"' "$(tail -n 1 "$T_TMP/err")"
}

# The profile's extra_args reach QEMU; the ones that weaken isolation do not.
test_extra_args() {
	local out err st
	out=$("$QSUP" run --set 'extra_args={"-device","virtio-balloon-device"}' -- \
	    sh -c 'cat /sys/bus/virtio/devices/*/device')
	expect_match "a balloon (virtio id 5) in the guest" '0x0005' "$out"
	err=$("$QSUP" run --set 'extra_args={"-monitor","stdio"}' -- true 2>&1); st=$?
	expect_eq "refused" 125 $st
	expect_match "says why" '"-monitor" "stdio" is refused' "$err"
}

# A qsup killed outright leaves its run directory; the next one removes it,
# and only if the process that made it is gone.
test_stale_run_dirs_swept() {
	local base=$T_RUN/qsup dead
	mkdir -p -m 700 "$base"
	sh -c 'exit 0' & dead=$!; wait $dead
	mkdir -m 700 "$base/sb-stale" "$base/sb-live" "$base/sb-nopid"
	echo "$dead" >"$base/sb-stale/pid"
	echo x >"$base/sb-stale/console.log"
	echo $$ >"$base/sb-live/pid"
	"$QSUP" run -- true
	expect_eq "status" 0 $?
	[ ! -e "$base/sb-stale" ] || fail "the stale run directory is still there"
	[ -d "$base/sb-live" ] || fail "a live qsup's run directory was removed"
	[ -d "$base/sb-nopid" ] || fail "a run directory without a pid file was removed"
	rm -rf "$base/sb-live" "$base/sb-nopid"
}

test_short_form() {
	local out
	printf 'return { memory = "256M" }\n' >"$T_TMP/small.lua"
	out=$("$QSUP" --profile "$T_TMP/small.lua" -- sh -c \
	    'grep MemTotal /proc/meminfo')
	expect_match "memory from the profile" 'MemTotal: +2[0-9]{5} kB' "$out"
}

test_never_ready() {
	local err st t0=$SECONDS
	# An initramfs whose /init never answers: busybox as init.
	printf 'dir /dev 0755 0 0\nnod /dev/console 0600 0 0 c 5 1\n%s\n' \
	    "file /init /bin/busybox 0755 0 0" | build/mkcpio >"$T_TMP/bad.cpio"
	printf 'return { initramfs = "%s", start_timeout = 4 }\n' \
	    "$T_TMP/bad.cpio" >"$T_TMP/bad.lua"
	err=$("$QSUP" run --profile "$T_TMP/bad.lua" -- true 2>&1); st=$?
	expect_eq "status" 125 $st
	expect_match "message" 'did not become ready within 4 s' "$err"
	expect_match "console tail" 'last lines of the console' "$err"
	[ $((SECONDS - t0)) -lt 15 ] || fail "deadline overrun: $((SECONDS - t0)) s"
}

test_kvm_verdict() {
	local err
	"$QSUP" run -v -- true 2>"$T_TMP/err"
	err=$(cat "$T_TMP/err")
	# A machine of this kind may also come without /dev/kvm at all,
	# though its kvm_pvm module is loaded: then that is the reason.
	if [ ! -e /dev/kvm ]; then
		expect_match "no /dev/kvm: said" \
		    'accelerator: tcg \(KVM unusable: /dev/kvm: No such file or directory' "$err"
	elif [ -e /sys/module/kvm_pvm ]; then
		expect_match "pvm host falls back" \
		    'accelerator: tcg \(KVM unusable: .*kvm_pvm' "$err"
	fi
}

# The probe itself: boot under KVM with a deadline, fall back, remember.
test_kvm_probe() {
	local err t0=$SECONDS
	[ -r /dev/kvm ] || { echo "    (no /dev/kvm here: probe not exercised)"; return; }
	QSUP_KVM_FORCE_PROBE=1 "$QSUP" run -v -- true 2>"$T_TMP/err"
	expect_eq "status" 0 $?
	err=$(grep 'accelerator:' "$T_TMP/err")
	expect_match "verdict" 'accelerator: (tcg \(KVM unusable: (a probe guest did not boot|QEMU failed under KVM)|kvm \(a probe guest booted)' "$err"
	[ $((SECONDS - t0)) -lt 20 ] || fail "probe and run took $((SECONDS - t0)) s"
	[ -s "$XDG_CACHE_HOME/qsup/kvm-verdict" ] || fail "verdict not remembered"
	QSUP_KVM_FORCE_PROBE=1 "$QSUP" run -v -- true 2>"$T_TMP/err"
	expect_match "second run" 'accelerator: .*\(remembered\)' "$(cat "$T_TMP/err")"
}

test_console_flood() {
	local err rss
	"$QSUP" run --json -- sh -c \
	    'i=0; while [ $i -lt 2000 ]; do echo "flood line $i with some padding to make it longer" >/dev/console; i=$((i+1)); done; echo done' \
	    >"$T_TMP/out" 2>"$T_TMP/err"
	expect_eq "status" 0 $?
	expect_eq "output" done "$(cat "$T_TMP/out")"
	rss=$(tail -n 1 "$T_TMP/err" | sed -n 's/.*"qsup_max_rss_kb":\([0-9]*\).*/\1/p')
	[ -n "$rss" ] || fail "no qsup_max_rss_kb in the summary"
	[ "${rss:-99999}" -lt 20000 ] || fail "qsup grew to $rss kB"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
