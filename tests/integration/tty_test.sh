#!/usr/bin/env bash
# qsup run -t and -i: a terminal in the guest of the host terminal's size,
# typed keys (^C too) reaching it, SIGWINCH following, and the host
# terminal put back as it was on every way out. qsup runs under a real
# pseudo-terminal made by python3's pty module (pty_run below).
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# pty_run OUT SPEC -- CMD...: run CMD as the session leader of a new
# pseudo-terminal, its stdin, stdout and stderr, of the size SPEC says;
# everything it prints goes to OUT, the report to OUT.report. SPEC is a
# JSON object: rows, cols; stdin: a file for stdin instead of the
# terminal; steps: [{"after": TEXT, "send": TEXT} | {"after": TEXT,
# "resize": [R, C]} | {"after": TEXT, "signal": N}], each waiting for
# TEXT in the output since the previous step; raw_at: TEXT, where the
# terminal's mode is looked at. Exit status: CMD's.
pty_run() {
	local out=$1 spec=$2
	shift 3
	python3 - "$out" "$spec" "$@" <<'EOF'
import fcntl, json, os, pty, select, signal, struct, sys, termios, time

out, spec, argv = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]
master, slave = pty.openpty()

def size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

size(slave, spec.get("rows", 24), spec.get("cols", 80))
before = termios.tcgetattr(slave)
pid = os.fork()
if pid == 0:
    os.setsid()
    fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
    if "stdin" in spec:
        fd = os.open(spec["stdin"], os.O_RDONLY)
        os.dup2(fd, 0)
    else:
        os.dup2(slave, 0)
    os.dup2(slave, 1)
    os.dup2(slave, 2)
    os.closerange(3, 256)
    os.execvp(argv[0], argv)

steps = list(spec.get("steps", []))
report = {"raw": None}
data, seen, status = b"", 0, None
deadline = time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([master], [], [], 0.05)
    if r:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            chunk = b""
        data += chunk
    if status is None:
        p, st = os.waitpid(pid, os.WNOHANG)
        if p == pid:
            status = os.waitstatus_to_exitcode(st)
            deadline = min(deadline, time.time() + 0.5)   # the rest
    if spec.get("raw_at") and report["raw"] is None and \
            spec["raw_at"].encode() in data:
        lflag = termios.tcgetattr(slave)[3]
        report["raw"] = not (lflag & (termios.ICANON | termios.ECHO |
            termios.ISIG))
    while steps and steps[0]["after"].encode() in data[seen:]:
        step = steps.pop(0)
        seen = data.index(step["after"].encode(), seen) + 1
        if "send" in step:
            os.write(master, step["send"].encode())
        if "resize" in step:
            # The kernel sends the terminal's group SIGWINCH.
            size(master, *step["resize"])
        if "signal" in step:
            os.kill(pid, step["signal"])
    if status is not None and not r and time.time() >= deadline:
        break
if status is None:
    # Politely first, so that qsup takes its guest down.
    os.kill(pid, signal.SIGTERM)
    for i in range(100):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    status = 255
    report["timed_out"] = True
report["restored"] = termios.tcgetattr(slave) == before
report["steps_left"] = len(steps)
open(out, "wb").write(data)
json.dump(report, open(out + ".report", "w"))
sys.exit(status)
EOF
}

# report_field NAME OUT: NAME of pty_run's report.
report_field() {
	python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))[sys.argv[2]]))' \
	    "$2.report" "$1"
}

expect_restored() {
	expect_eq "host terminal restored" true "$(report_field restored "$1")"
	expect_eq "steps all taken" 0 "$(report_field steps_left "$1")"
}

# -t: the command is on a terminal of our size, with our TERM, and its
# status passes through.
test_tty_is_a_terminal_of_our_size() {
	local o=$T_TMP/out st
	TERM=vt220 pty_run "$o" '{"rows": 31, "cols": 97}' -- \
	    "$QSUP" run -t -- sh -c 'tty; stty size; test -t 0 && test -t 1 &&
	    test -t 2 && echo all-three; echo "term=$TERM"; exit 42'
	st=$?
	expect_eq "status" 42 $st
	expect_match "tty" '^/dev/pts/[0-9]+'$'\r''?$' "$(cat "$o")"
	expect_match "size" '^31 97'$'\r''?$' "$(cat "$o")"
	expect_match "isatty" '^all-three' "$(cat "$o")"
	expect_match "TERM" '^term=vt220' "$(cat "$o")"
	expect_restored "$o"

	# -e TERM wins over ours.
	TERM=vt220 pty_run "$o" '{}' -- "$QSUP" run -t -e TERM=linux -- \
	    sh -c 'echo "term=$TERM"'
	expect_eq "status" 0 $?
	expect_match "-e TERM" '^term=linux' "$(cat "$o")"
}

# Without -t, no terminal in the guest even when qsup has one.
test_without_t_no_terminal() {
	local o=$T_TMP/out
	pty_run "$o" '{}' -- "$QSUP" run -- sh -c 'test -t 0 || echo in-no;
	    test -t 1 || echo out-no'
	expect_eq "status" 0 $?
	expect_match "stdin" '^in-no' "$(cat "$o")"
	expect_match "stdout" '^out-no' "$(cat "$o")"
	expect_restored "$o"
}

# Keys reach the guest's terminal raw; ^C there is its SIGINT, not ours.
test_typed_keys_and_ctrl_c() {
	local o=$T_TMP/out
	pty_run "$o" '{"raw_at": "ready2", "steps": [
	    {"after": "ready1", "send": "hello\r"},
	    {"after": "ready2", "send": "\u0003"}]}' -- \
	    "$QSUP" run -t -- sh -c 'echo ready1; read x; echo "got:$x";
	    echo ready2; exec sleep 60'
	expect_eq "status (SIGINT in the guest)" 130 $?
	expect_match "echoed and read" '^got:hello' "$(cat "$o")"
	expect_eq "raw mode while the command runs" true \
	    "$(report_field raw "$o")"
	expect_restored "$o"
}

# SIGWINCH: the guest's terminal takes the new size, and its command the
# signal.
test_resize_follows() {
	local o=$T_TMP/out
	pty_run "$o" '{"rows": 20, "cols": 60, "steps": [
	    {"after": "ready", "resize": [50, 150]}]}' -- \
	    "$QSUP" run -t -- sh -c 'trap "stty size; exit 3" WINCH;
	    stty size; echo ready; while :; do sleep 0.1; done'
	expect_eq "status" 3 $?
	expect_match "first size" '^20 60' "$(cat "$o")"
	expect_match "new size" '^50 150' "$(cat "$o")"
	expect_restored "$o"
}

# The host terminal comes back after a signal to qsup, and after a
# command that could not start.
test_terminal_restored_on_signal_and_error() {
	local o=$T_TMP/out
	pty_run "$o" '{"raw_at": "ready", "steps": [
	    {"after": "ready", "signal": 15}]}' -- \
	    "$QSUP" run -t -- sh -c 'echo ready; exec sleep 60'
	expect_eq "status" 143 $?
	expect_eq "raw mode while the command runs" true \
	    "$(report_field raw "$o")"
	expect_restored "$o"

	pty_run "$o" '{}' -- "$QSUP" run -t -- /no/such/command
	expect_eq "status" 127 $?
	expect_match "why" 'no/such/command' "$(cat "$o")"
	expect_restored "$o"
}

# -t with no terminal here: the guest still has one (of 24x80); stdin is
# not forwarded without -i, and with -i its end is typed as ^D.
test_tty_without_a_host_terminal() {
	local out st
	out=$("$QSUP" run -t -- sh -c 'test -t 0 && echo tty; stty size' \
	    </dev/null 2>&1)
	expect_eq "status" 0 $?
	expect_eq "output" $'tty\r\n24 80\r' "$out"

	out=$(printf 'abc\n' | "$QSUP" run -t -- sh -c 'read -t 2 x;
	    echo "[$?:$x]"' 2>&1)
	st=$?
	expect_eq "status" 0 $st
	expect_match "stdin not forwarded" '^\[[1-9][0-9]*:\]' "$out"

	out=$(printf 'abc\n' | "$QSUP" run -ti -- cat 2>&1)
	expect_eq "status (cat ended by ^D)" 0 $?
	expect_eq "echo and cat" $'abc\r\nabc\r' "$out"

	# No -t: stdin forwarded, as before.
	out=$(printf 'abc\n' | "$QSUP" run -- cat 2>&1)
	expect_eq "status" 0 $?
	expect_eq "plain stdin" "abc" "$out"
}

# -t with stdin a file but a terminal for output: the size is still ours.
test_tty_size_from_stdout() {
	local o=$T_TMP/out
	pty_run "$o" '{"rows": 12, "cols": 34, "stdin": "/dev/null"}' -- \
	    "$QSUP" run -t -- stty size
	expect_eq "status" 0 $?
	expect_match "size" '^12 34' "$(cat "$o")"
	expect_restored "$o"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
