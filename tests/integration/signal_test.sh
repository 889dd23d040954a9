#!/usr/bin/env bash
# Signals and exit status: a second signal stops qsup at once in every
# phase, a command's own status survives a signal in teardown, --json
# keeps the figures of a run cut short.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# wait_for FILE REGEX [SECONDS]: until FILE matches (default 60 s).
wait_for() {
	local i
	for i in $(seq 1 $((${3:-60} * 20))); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# wait_gone PID SECONDS: 0 once PID has exited; else it is killed, 1.
wait_gone() {
	local i
	for i in $(seq 1 $(($2 * 20))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	kill -9 "$1" 2>/dev/null
	return 1
}

ms_since() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

# expect_stopped PID T0 SECONDS STATUS MAX_MS WHAT: PID (a qsup of ours)
# ends within SECONDS (else it is killed) with STATUS, at most MAX_MS
# after T0 (date +%s%N), when WHAT (the signals) was sent.
expect_stopped() {
	local ms st
	wait_gone "$1" "$3" || fail "$6 did not stop qsup within $3 s"
	ms=$(ms_since "$2")
	echo "    stopped $ms ms after the signal"
	wait "$1"; st=$?
	expect_eq "status" "$4" $st
	[ $ms -le "$5" ] || fail "took $ms ms after $6"
}

# A FIFO held open on fd 3 and never read, unless a test reads it.
held_fifo() {
	rm -f "$T_TMP/fifo"; mkfifo "$T_TMP/fifo"
	exec 3<>"$T_TMP/fifo"
}

# A QEMU that logs its pid and how it was started.
log_qemu() {
	cat >"$T_TMP/qemu" <<-EOF
	#!/bin/bash
	echo "\$\$ \$*" >>"$T_TMP/qemu.log"
	exec qemu-system-x86_64 "\$@"
	EOF
	chmod +x "$T_TMP/qemu"
}

# A QEMU that holds a SIGTERM for STOP_DELAY seconds before it stops: a
# window into teardown. Less than sandbox.c's 2 s before SIGKILL, or the
# real QEMU behind this script would outlive it.
slow_qemu() {
	cat >"$T_TMP/qemu" <<-EOF
	#!/bin/bash
	trap 'sleep \$STOP_DELAY; kill -TERM \$q; wait \$q; exit 0' TERM
	qemu-system-x86_64 "\$@" & q=\$!
	wait \$q
	EOF
	chmod +x "$T_TMP/qemu"
}

# stdout is a FIFO that we hold open but never read: qsup's output blocks.
# The first SIGTERM stops the command and QEMU, then qsup waits to write
# what it holds; the second makes it give that up and exit at once.
test_blocked_stdout_two_sigterms() {
	local pid t0
	held_fifo
	"$QSUP" run -v --set warm_start=false -- cat /dev/zero \
	    >"$T_TMP/fifo" 2>"$T_TMP/err" &
	pid=$!
	wait_for "$T_TMP/err" 'command started' || fail "the command never started"
	sleep 1		# the pipe and qsup's queue fill up
	kill -TERM $pid
	# QEMU goes; qsup stays, holding output nobody reads.
	wait_for "$T_TMP/err" 'sandbox: stopping -> dead' 20 ||
	    fail "the sandbox did not stop after SIGTERM"
	sleep 0.5
	kill -0 $pid 2>/dev/null || fail "qsup exited before its output was read"
	t0=$(date +%s%N)
	kill -TERM $pid
	expect_stopped $pid $t0 10 143 2000 "the second SIGTERM"
	exec 3<&-
}

# The same with the second SIGTERM while the command still runs: QEMU is
# killed outright, no waiting for it or for the output.
test_blocked_stdout_second_sigterm_running() {
	local pid t0
	held_fifo
	"$QSUP" run -v --set warm_start=false -- cat /dev/zero \
	    >"$T_TMP/fifo" 2>"$T_TMP/err" &
	pid=$!
	wait_for "$T_TMP/err" 'command started' || fail "the command never started"
	sleep 1
	t0=$(date +%s%N)
	kill -TERM $pid
	sleep 0.2	# two signals, not one pending twice
	kill -TERM $pid
	expect_stopped $pid $t0 10 143 2500 "two SIGTERMs"
	exec 3<&-
}

# The first run of a shape saves a template. Two SIGINTs during the save:
# exit 130 at once, QEMU gone, no half-written state file left.
test_sigint_during_template_save() {
	local pid t0 tpl
	export XDG_CACHE_HOME=$T_TMP/save-cache
	tpl=$XDG_CACHE_HOME/qsup/templates
	rm -rf "$XDG_CACHE_HOME"
	# The save of a 512 MiB guest's state with its RAM in the stream
	# (about 117 MB) lasts about a second here, the half-written
	# KEY.state.PID all the while. (With shared RAM the save takes a few
	# milliseconds, too short to aim a signal at.)
	"$QSUP" run -v --set template_ram=stream -- true 2>"$T_TMP/err" &
	pid=$!
	for _ in $(seq 1 1200); do
		ls "$tpl"/*.state.* >/dev/null 2>&1 && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.05
	done
	ls "$tpl"/*.state.* >/dev/null 2>&1 || fail "no template save seen"
	t0=$(date +%s%N)
	kill -INT $pid
	sleep 0.1
	kill -INT $pid
	expect_stopped $pid $t0 20 130 1500 "two SIGINTs during the save"
	expect_eq "partial template" "" "$(ls "$tpl" | grep '\.state\.')"
	# Cut short, not waited for: no template either.
	expect_eq "template" "" "$(ls "$tpl" | grep '\.state$')"
	expect_match "it was saving" 'sandbox: booting -> saving' "$(cat "$T_TMP/err")"
}

# One SIGINT while the KVM probe runs (before anything else): exit 130
# at once, the probe's QEMU gone, nothing remembered of a cut probe.
test_sigint_during_kvm_probe() {
	local pid t0 q
	[ -c /dev/kvm ] || { echo "    (no /dev/kvm: skipped)"; return; }
	log_qemu
	QSUP_QEMU=$T_TMP/qemu QSUP_KVM_FORCE_PROBE=1 \
	    "$QSUP" run -- true 2>"$T_TMP/err" &
	pid=$!
	wait_for "$T_TMP/qemu.log" 'qsup.probe=1' 30 || fail "no KVM probe seen"
	sleep 0.5
	q=$(awk '{print $1}' "$T_TMP/qemu.log" | head -n 1)
	if ! kill -0 $pid 2>/dev/null; then
		echo "    (the KVM probe finished at once: skipped)"
		wait $pid
		return
	fi
	# A KVM that QEMU cannot use at all (it aborts at once, as on a host
	# whose KVM refuses its MSRs) ends the probe before any signal: the
	# run then boots under TCG, and there is no probe left to cut.
	if ! kill -0 "$q" 2>/dev/null; then
		echo "    (the KVM probe's QEMU ended before the signal: this" \
		    "host's KVM cannot run it; skipped)"
		kill -INT $pid
		wait $pid
		return
	fi
	t0=$(date +%s%N)
	kill -INT $pid
	expect_stopped $pid $t0 10 130 1500 "SIGINT during the probe"
	sleep 0.2
	kill -0 "$q" 2>/dev/null && fail "the probe's QEMU $q is still running"
	[ ! -e "$XDG_CACHE_HOME/qsup/kvm-verdict" ] ||
	    fail "a cut probe was remembered: $(cat "$XDG_CACHE_HOME/qsup/kvm-verdict")"
}

# A signal while tearing down after the command exited: its status stays.
test_signal_in_teardown_keeps_status() {
	local pid st
	slow_qemu
	STOP_DELAY=1 QSUP_QEMU=$T_TMP/qemu "$QSUP" run -v --json \
	    --set warm_start=false -- sh -c 'exit 5' 2>"$T_TMP/err" &
	pid=$!
	wait_for "$T_TMP/err" 'stopping the sandbox' ||
	    fail "no teardown seen"
	kill -INT $pid
	wait_gone $pid 20 || fail "qsup did not stop"
	wait $pid; st=$?
	expect_eq "status" 5 $st
	expect_match "json" '^\{"exit_status":5,' "$(tail -n 1 "$T_TMP/err")"
}

# ... and a second signal then still stops it at once, status kept.
test_two_signals_in_teardown() {
	local pid t0
	slow_qemu
	STOP_DELAY=1.5 QSUP_QEMU=$T_TMP/qemu "$QSUP" run -v \
	    --set warm_start=false -- sh -c 'exit 5' 2>"$T_TMP/err" &
	pid=$!
	wait_for "$T_TMP/err" 'stopping the sandbox' || fail "no teardown seen"
	t0=$(date +%s%N)
	kill -INT $pid
	sleep 0.1
	kill -TERM $pid
	expect_stopped $pid $t0 20 5 1000 "two signals in teardown"
	# qsup killed the script it started; the script's own QEMU (which
	# qsup never saw) is this test's to end.
	sleep 0.2
	pkill -9 -f "qemu-system.*$T_RUN" 2>/dev/null
}

# stderr is a FIFO read only until the command starts: under -v qsup's own
# messages (the first signal's "stopping the command") meet a full pipe.
# They wait in qsup's queue, not in a write, so the second signal still
# stops it at once.
test_blocked_stderr_verbose_two_sigterms() {
	local pid t0
	held_fifo
	"$QSUP" run -v --set warm_start=false -- sh -c 'cat /dev/zero >&2' \
	    >/dev/null 2>"$T_TMP/fifo" &
	pid=$!
	timeout 60 grep -q -a -m 1 'command started' <&3 ||
	    fail "the command never started"
	sleep 1		# the pipe and qsup's queue fill up
	kill -TERM $pid
	sleep 0.5
	kill -0 $pid 2>/dev/null || fail "qsup exited before its stderr was read"
	t0=$(date +%s%N)
	kill -TERM $pid
	expect_stopped $pid $t0 10 143 2500 "the second SIGTERM"
	exec 3<&-
}

# --timeout ends the command: --json still says how long it ran and how
# large QEMU was.
test_timeout_json_figures() {
	local exec_s rss
	"$QSUP" run --json --timeout 2 -- sleep 60 2>"$T_TMP/err"
	expect_eq "status" 124 $?
	exec_s=$(sed -n 's/.*"exec_s":\([0-9.]*\).*/\1/p' <<<"$(tail -n 1 "$T_TMP/err")")
	rss=$(json_field qemu_rss_kb "$T_TMP/err")
	awk -v e="${exec_s:-0}" 'BEGIN { exit !(e >= 1.9 && e < 10) }' ||
	    fail "exec_s is '$exec_s', expected about 2"
	[ "${rss:-0}" -gt 10000 ] 2>/dev/null || fail "qemu_rss_kb is '$rss'"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
