#!/usr/bin/env bash
# What the guest says and what really happened: a guest root that forges
# the agent's messages never switches off a host-side limit, a guest that
# halts or stops answering is noticed, and a guest that dies mid-command
# is reported as it died, with the console's important lines.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# A static helper that takes PID 1's agent port and writes to qsup on it.
HELPERS=$T_TMP/helpers
mkdir -p "$HELPERS"
musl-gcc -static -Os -o "$HELPERS/forge" tests/integration/helpers/forge.c ||
    { echo "cannot build the forge helper"; exit 1; }

# Every run here is bounded from outside too: the old code hung forever.
# -k: a qsup that ignores timeout's SIGTERM is killed all the same.
bounded() {
	local secs=$1; shift
	timeout -k 5 "$secs" "$@"
}

# The QEMU of this test's sandbox, once it runs.
qemu_pid() {
	local i q
	for i in $(seq 300); do
		q=$(pgrep -f "qemu-system.*$T_RUN" | head -1)
		[ -n "$q" ] && { echo "$q"; return 0; }
		sleep 0.1
	done
	return 1
}

# A forged exit event without the stream's end: --timeout still holds.
test_forged_exit_keeps_the_timeout() {
	local rc t0=$SECONDS
	bounded 60 "$QSUP" run --timeout 5 --share "$HELPERS:/h" -- \
	    /h/forge exit 2>"$T_TMP/err"
	rc=$?
	expect_eq "exit status" 124 "$rc"
	expect_match "says so" "timed out after 5 s" "$(cat "$T_TMP/err")"
	[ $((SECONDS - t0)) -lt 40 ] || fail "took $((SECONDS - t0)) s"
}

# ... and the first SIGTERM is not ignored.
test_forged_exit_keeps_signals() {
	local m=$T_TMP/mark pid rc t0
	mkdir -p "$m"
	bounded 90 "$QSUP" run --share "$HELPERS:/h" --share "$m:/m:rw" -- \
	    /h/forge exit /m/forged 2>"$T_TMP/err" &
	pid=$!
	for _ in $(seq 600); do
		[ -e "$m/forged" ] && break
		sleep 0.1
	done
	[ -e "$m/forged" ] || fail "the helper did not run: $(cat "$T_TMP/err")"
	t0=$SECONDS
	kill -TERM "$(pgrep -f "^$QSUP run --share $HELPERS")"
	wait "$pid"
	rc=$?
	expect_eq "exit status" 143 "$rc"
	[ $((SECONDS - t0)) -lt 20 ] || fail "stopped $((SECONDS - t0)) s after SIGTERM"
}

# Each malformed or oversized stream is a protocol error, named.
test_malformed_streams_are_protocol_errors() {
	local mode why rc n=0
	while read -r mode why; do
		n=$((n + 1))
		bounded 60 "$QSUP" run --share "$HELPERS:/h" -- /h/forge "$mode" \
		    </dev/null 2>"$T_TMP/err"
		rc=$?
		expect_eq "$mode: exit status" 125 "$rc"
		expect_match "$mode: named" "the agent broke the protocol: $why" \
		    "$(cat "$T_TMP/err")"
	done <<-'EOF'
	signal1000 signal 1000 out of range
	badjson a malformed exit event
	trailing [0-9]+ bytes after the last response
	framing a bad chunk size
	junk an event over 262144 bytes
	EOF
	expect_eq "streams tried" 5 "$n"
}

# The agent's error text reaches the terminal without its escape sequences.
test_agent_error_text_is_escaped() {
	local rc
	bounded 60 "$QSUP" run --share "$HELPERS:/h" -- /h/forge error \
	    2>"$T_TMP/err"
	rc=$?
	expect_eq "exit status" 126 "$rc"
	if grep -q $'\x1b\|\x07' "$T_TMP/err"; then
		fail "raw control bytes on stderr: $(cat -v "$T_TMP/err")"
	fi
	expect_match "shown escaped" '\\x1b\]0;pwned\\x07\\x1b\[2Jboom' \
	    "$(cat "$T_TMP/err")"
}

# A complete forged stream ends the run, and the VM with it (expect_clean).
test_complete_forgery_ends_the_vm_too() {
	local rc
	bounded 60 "$QSUP" run --share "$HELPERS:/h" -- /h/forge exit-done
	rc=$?
	expect_eq "exit status" 7 "$rc"
}

# halt -f stops the guest's CPUs; QEMU runs on. No --timeout.
test_halted_guest_is_noticed() {
	local rc t0=$SECONDS
	bounded 60 "$QSUP" run -- sh -c 'halt -f' 2>"$T_TMP/err"
	rc=$?
	expect_eq "exit status" 125 "$rc"
	expect_match "the reason" "^qsup: the guest halted" "$(cat "$T_TMP/err")"
	[ $((SECONDS - t0)) -lt 30 ] || fail "noticed after $((SECONDS - t0)) s"
}

# A guest that stops answering (here: its QEMU is stopped, as a wedged
# guest would be) is noticed by the liveness pings.
test_wedged_guest_is_noticed() {
	local pid q rc t0
	bounded 120 "$QSUP" run -- sleep 300 2>"$T_TMP/err" &
	pid=$!
	q=$(qemu_pid) || fail "no QEMU"
	sleep 2
	t0=$SECONDS
	kill -STOP "$q"
	wait "$pid"
	rc=$?
	kill -KILL "$q" 2>/dev/null
	expect_eq "exit status" 125 "$rc"
	expect_match "the reason" "the guest stopped answering for [0-9]+ s" \
	    "$(cat "$T_TMP/err")"
	[ $((SECONDS - t0)) -lt 40 ] || fail "noticed after $((SECONDS - t0)) s"
}

# A healthy guest busy with a CPU-bound command for most of a minute is
# left alone by the liveness check, even under TCG on a loaded host.
test_busy_guest_is_left_alone() {
	local out rc
	out=$(bounded 180 "$QSUP" run -v -- sh -c '
	    end=$(($(date +%s) + 45)); i=0
	    while [ $(date +%s) -lt $end ]; do i=$((i + 1)); done
	    echo busy done' 2>"$T_TMP/err")
	rc=$?
	expect_eq "exit status" 0 "$rc"
	expect_eq "output" "busy done" "$out"
	expect_match "pinged meanwhile" "liveness: [0-9]+ pings answered" \
	    "$(cat "$T_TMP/err")"
}

# A panic mid-command: said so, with the panic line and QEMU's status.
test_panic_mid_command_is_told() {
	local rc err
	bounded 60 "$QSUP" run -v -- sh -c 'echo c > /proc/sysrq-trigger' \
	    2>"$T_TMP/err"
	rc=$?
	err=$(cat "$T_TMP/err")
	expect_eq "exit status" 125 "$rc"
	expect_match "the reason" "^qsup: the guest kernel panicked: sysrq triggered crash \(QEMU exited with status 0\)" "$err"
	expect_match "console shown" "last lines of the console" "$err"
	expect_match "the panic line kept" "\] Kernel panic - not syncing" "$err"
	if grep -q "lost the connection\|stopping the sandbox: the command finished" <<<"$err"; then
		fail "told as a lost connection or a finished command"
	fi
}

# QEMU killed from outside mid-command: its signal, and not "finished".
test_qemu_killed_mid_command_is_told() {
	local pid q rc err
	bounded 60 "$QSUP" run -v -- sleep 300 2>"$T_TMP/err" &
	pid=$!
	q=$(qemu_pid) || fail "no QEMU"
	sleep 2
	kill -KILL "$q"
	wait "$pid"
	rc=$?
	err=$(cat "$T_TMP/err")
	expect_eq "exit status" 125 "$rc"
	expect_match "the reason" "^qsup: QEMU was killed by signal 9" "$err"
	if grep -q "stopping the sandbox: the command finished" <<<"$err"; then
		fail "-v says the command finished"
	fi
}

# Out of memory at boot (96 MiB): the panic scrolled far out of the tail
# (its stack trace is longer than console_on_failure), and is shown.
test_oom_panic_line_is_kept() {
	local rc err
	bounded 120 "$QSUP" run --set memory=96M -- true 2>"$T_TMP/err"
	rc=$?
	err=$(cat "$T_TMP/err")
	expect_eq "exit status" 125 "$rc"
	expect_match "the reason" "^qsup: the guest kernel panicked: .*memory" "$err"
	expect_match "the panic line, first" "^\[ *[0-9.]+\] Kernel panic - not syncing" \
	    "$(sed -n '/last lines of the console/{n;p;}' <<<"$err")"
}

# The OOM killer takes the command: 137, and qsup says why.
test_oom_killed_command_is_told() {
	local rc
	# 256M: at 128M the default guest leaves a command about 4 MB, and
	# once that is killed the kernel may still find itself out of
	# memory and panic ("System is deadlocked on memory"), seen in CI.
	bounded 120 "$QSUP" run --set memory=256M -- tail /dev/zero \
	    2>"$T_TMP/err"
	rc=$?
	expect_eq "exit status" 137 "$rc"
	expect_match "the reason" "killed: the guest ran out of memory \(console: .*Out of memory: Killed process [0-9]+ \(tail\)" \
	    "$(cat "$T_TMP/err")"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
