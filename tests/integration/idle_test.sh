#!/usr/bin/env bash
# An idle guest: what may wake it is gone, and what replaced the timers
# (SIGIO for a port's host coming back) works.
. "$(dirname "$0")/lib.sh"

GUEST=$PWD/build/guest

# A bare QEMU booting the guest as a template (no seed, /ping served
# without a token) with one agent port on a socket we can open and close
# at will, which qsup never does to a running guest.
bare_guest() {
	local dir=$1 ports=${2:-1} khz
	# As qsup tells a TCG guest: it cannot time its TSC by itself.
	khz=$(awk -F: '/^cpu MHz/ {printf "%d", $2 * 1000; exit}' /proc/cpuinfo)
	qemu-system-x86_64 -M microvm,pcie=on,pit=off -accel tcg,tb-size=64 \
	    -m 256 -smp 1 -nodefaults -no-user-config -display none \
	    -no-reboot -name "qsup-idle-test:$T_RUN" \
	    -kernel "$GUEST/vmlinux" -initrd "$GUEST/initramfs.cpio" \
	    -append "console=ttyS0 quiet panic=-1 tsc_early_khz=$khz \
	    tsc=reliable no_timer_check qsup.ports=$ports qsup.template=1" \
	    -chardev "socket,id=con,path=$dir/con.sock,server=on,wait=off" \
	    -serial chardev:con \
	    -device virtio-serial-device \
	    -chardev "socket,id=a0,path=$dir/a0.sock,server=on,wait=off" \
	    -device virtserialport,chardev=a0,name=org.qsup.agent.0 \
	    -qmp "unix:$dir/qmp.sock,server=on,wait=off" \
	    </dev/null >"$dir/qemu.log" 2>&1 &
	echo $!
}

# stop_guest PID: bare_guest's QEMU gone. It is no child of this shell
# (bare_guest ran in a command substitution), so wait cannot wait for it:
# its end is looked for, then forced.
stop_guest() {
	local i
	kill "$1" 2>/dev/null
	for i in $(seq 1 100); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	sleep 0.5
}

# ping SOCKET TIMEOUT: connect, GET /ping until it answers or TIMEOUT s
# pass, hang up; prints the seconds it took from connecting.
ping_port() {
	python3 - "$1" "$2" <<'EOF'
import socket, sys, time
path, limit = sys.argv[1], float(sys.argv[2])
t0 = time.monotonic()
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
while True:
	try:
		s.connect(path)
		break
	except OSError:
		if time.monotonic() - t0 > limit:
			sys.exit("cannot connect to " + path)
		time.sleep(0.05)
t0 = time.monotonic()
s.settimeout(0.5)
got = b""
while b"\r\n\r\n" not in got:
	if time.monotonic() - t0 > limit:
		sys.exit("no answer in %.1f s" % limit)
	try:
		if not got:
			s.sendall(b"GET /ping HTTP/1.1\r\nHost: guest\r\n\r\n")
		d = s.recv(4096)
		if not d:
			sys.exit("the guest hung up")
		got += d
	except socket.timeout:
		pass
if not got.startswith(b"HTTP/1.1 200"):
	sys.exit("bad answer: %r" % got[:200])
print("%.3f" % (time.monotonic() - t0))
s.close()
EOF
}

# The agent polls with no timeout; a port whose host hung up must still
# be served when the host comes back, soon after a hang-up and long after.
test_port_host_comes_back() {
	local dir=$T_TMP/bare pid out
	mkdir -p "$dir"
	pid=$(bare_guest "$dir")
	out=$(ping_port "$dir/a0.sock" 60) ||
	    fail "first ping: $out"
	out=$(ping_port "$dir/a0.sock" 10) ||
	    fail "ping right after a hang-up: $out"
	# Down for longer than the old 5 s of fast rechecks.
	sleep 7
	out=$(ping_port "$dir/a0.sock" 10) ||
	    fail "ping after 7 s down: $out"
	stop_guest "$pid"
	rm -rf "$dir"
}

# A promised port that comes late (hot-plugged long after boot) is found:
# the agent learns of it from a uevent, not a timer.
test_late_port_found() {
	local dir=$T_TMP/late pid out
	mkdir -p "$dir"
	pid=$(bare_guest "$dir" 2)
	out=$(ping_port "$dir/a0.sock" 60) ||
	    fail "first ping: $out"
	sleep 3
	python3 - "$dir" <<'EOF' || fail "hot-plugging a port"
import json, socket, sys
d = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(d + "/qmp.sock")
f = s.makefile("rw")
def cmd(c, **a):
	f.write(json.dumps({"execute": c, "arguments": a}) + "\n")
	f.flush()
	while True:
		r = json.loads(f.readline())
		if "return" in r or "error" in r:
			if "error" in r:
				sys.exit(str(r))
			return r
json.loads(f.readline())
cmd("qmp_capabilities")
cmd("chardev-add", id="a1", backend={"type": "socket", "data": {
    "addr": {"type": "unix", "data": {"path": d + "/a1.sock"}},
    "server": True, "wait": False}})
cmd("device_add", driver="virtserialport", chardev="a1",
    name="org.qsup.agent.1", id="p1")
EOF
	out=$(ping_port "$dir/a1.sock" 10) ||
	    fail "ping on the late port: $out"
	stop_guest "$pid"
	rm -rf "$dir"
}

# What the kernel command line and init turn off is off in a sandbox.
test_idle_kernel_settings() {
	local out
	out=$("$QSUP" run -- sh -c 'cat /proc/cmdline;
	    echo compaction=$(cat /proc/sys/vm/compaction_proactiveness);
	    echo softlockup=$(cat /proc/sys/kernel/soft_watchdog 2>/dev/null ||
	    echo none) watchdog=$(cat /proc/sys/kernel/watchdog);
	    [ -e /proc/pressure/cpu ] && cat /proc/pressure/cpu || echo nopsi;
	    grep -w memory /proc/cgroups || echo nomemcg' 2>&1)
	expect_match "command line" " nowatchdog " "$out"
	expect_match "compaction" "^compaction=0$" "$out"
	expect_match "lockup watchdog" "watchdog=0$" "$out"
	expect_match "psi" "^nopsi$|Permission|not supported" "$out"
	expect_match "memcg" "memory[[:space:]]+[0-9]+[[:space:]]+[0-9]+[[:space:]]+0$|^nomemcg$" "$out"
}

# The agent sleeps while the command does: PID 1 wakes only for the
# host's liveness pings (one every 5 s, each a wakeup or two), not on a
# timer of its own.
test_agent_sleeps() {
	local out n
	out=$("$QSUP" run -- sh -c 'a=$(grep -h ctxt_switches /proc/1/status |
	    awk "{s += \$2} END {print s}"); sleep 6;
	    b=$(grep -h ctxt_switches /proc/1/status |
	    awk "{s += \$2} END {print s}"); echo wakeups=$((b - a))' 2>&1)
	n=$(sed -n 's/^wakeups=//p' <<<"$out")
	[ -n "$n" ] || { fail "no count: $out"; return; }
	[ "$n" -le 12 ] || fail "PID 1 woke $n times in 6 s"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
