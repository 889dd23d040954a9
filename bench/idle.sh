#!/usr/bin/env bash
# Idle cost: N sandboxes whose command sleeps. Once each is running its
# command, measure over WINDOW seconds, per sandbox:
#   qemu %cpu   QEMU's utime+stime as a share of one core
#   qemu cs/s   context switches of all QEMU's threads, per second: how
#               often something wakes it
#   LOC/s       local timer interrupts per second inside the guest
#               (/proc/interrupts, over the guest's own uptime)
#   qsup %cpu   the host-side qsup run process
# and the guest's clocksource and tick mode (periodic or one-shot).
# Usage: bash bench/idle.sh [N] [WINDOW]   (default 1 and 10)
# QSUP=path/to/qsup runs another build (default build/qsup of this tree).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
n=${1:-1}
window=${2:-10}
qsup=${QSUP:-$PWD/build/qsup}
tmp=$(mktemp -d /tmp/qsup-idle.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"
hz=$(getconf CLK_TCK)

# The guest prints its LOC count and uptime, sleeps past the window, then
# prints them again; between the two nothing runs in it but the sleep.
sleep_s=$((window + 4))
guest_cmd="x() { set -- \$(grep LOC: /proc/interrupts); l=\$2; read u r </proc/uptime; echo \"loc \$l \$u\"; }
echo cs \$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
echo tick \$(sed -n '/^Per CPU device: 0/,/^\$/s/^ event_handler: *//p' /proc/timer_list)
x; sleep $sleep_s; x; sleep 30"

# Ticks of user+system CPU time of PID (fields 14 and 15 of its stat).
cpu_ticks() {
	awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$1/stat"
}
# Context switches, voluntary and not, of every thread of PID.
ctx_switches() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
	    awk '/ctxt_switches/ {s += $2} END {print s + 0}'
}
# The QEMU of the qsup run process PID: its child whose -name is
# qsup:RUNDIR with RUNDIR under our runtime directory.
qemu_of() {
	local d
	for d in /proc/[0-9]*; do
		[ "$(awk '{sub(/^.*\) /, ""); print $2}' "$d/stat" 2>/dev/null)" = \
		    "$1" ] || continue
		tr '\0' ' ' <"$d/cmdline" 2>/dev/null |
		    grep -q -- "-name qsup:$XDG_RUNTIME_DIR" &&
		    echo "${d#/proc/}"
	done
	return 0
}

# Make the template first, so every sandbox below is a warm restore.
"$qsup" run -- true

for i in $(seq 1 "$n"); do
	"$qsup" run -- sh -c "$guest_cmd" >"$tmp/out.$i" 2>"$tmp/err.$i" &
	pids+=($!)
done
deadline=$(( $(now_ms) + 120000 ))
for i in $(seq 1 "$n"); do
	until grep -q '^loc ' "$tmp/out.$i"; do
		if [ "$(now_ms)" -gt "$deadline" ]; then
			echo "idle.sh: sandbox $i never ran its command" >&2
			cat "$tmp/err.$i" >&2
			exit 1
		fi
		sleep 0.1
	done
done
qpids=()
for p in "${pids[@]}"; do
	q=$(qemu_of "$p")
	if [ -z "$q" ] || [ "$(wc -w <<<"$q")" -ne 1 ]; then
		echo "idle.sh: no single QEMU for qsup $p: '$q'" >&2
		exit 1
	fi
	qpids+=("$q")
done

# Let the start settle (the host's last writes, the guest's first sleep).
sleep 1
declare -A q0 c0 s0
for p in "${qpids[@]}"; do
	q0[$p]=$(cpu_ticks "$p")
	c0[$p]=$(ctx_switches "$p")
done
for p in "${pids[@]}"; do
	s0[$p]=$(cpu_ticks "$p")
done
t0=$(now_ms)
sleep "$window"
t1=$(now_ms)
declare -A q1 c1 s1
for p in "${qpids[@]}"; do
	q1[$p]=$(cpu_ticks "$p")
	c1[$p]=$(ctx_switches "$p")
done
for p in "${pids[@]}"; do
	s1[$p]=$(cpu_ticks "$p")
done

for i in $(seq 1 "$n"); do
	until [ "$(grep -c '^loc ' "$tmp/out.$i")" -ge 2 ]; do
		if [ "$(now_ms)" -gt "$deadline" ] ||
		    ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
			echo "idle.sh: sandbox $i stopped early" >&2
			cat "$tmp/err.$i" >&2
			exit 1
		fi
		sleep 0.2
	done
done

el=$(( t1 - t0 ))
printf '%d sandbox(es) idle, %d ms window, clocksource %s, tick %s\n' \
    "$n" "$el" "$(sed -n 's/^cs //p' "$tmp/out.1")" \
    "$(sed -n 's/^tick //p' "$tmp/out.1")"
printf '%-4s %10s %10s %10s %10s\n' "#" "qemu %cpu" "qemu cs/s" "LOC/s" \
    "qsup %cpu"
: >"$tmp/qcpu"; : >"$tmp/loc"; : >"$tmp/cs"; : >"$tmp/scpu"
i=0
for p in "${qpids[@]}"; do
	i=$((i + 1))
	qc=$(awk -v a="${q0[$p]}" -v b="${q1[$p]}" -v hz="$hz" -v el="$el" \
	    'BEGIN {printf "%.2f", (b - a) * 100000 / hz / el}')
	cs=$(awk -v a="${c0[$p]}" -v b="${c1[$p]}" -v el="$el" \
	    'BEGIN {printf "%.0f", (b - a) * 1000 / el}')
	loc=$(awk '/^loc / {l[++k] = $2; u[k] = $3}
	    END {printf "%.1f", (l[2] - l[1]) / (u[2] - u[1])}' "$tmp/out.$i")
	sp=${pids[$((i - 1))]}
	sc=$(awk -v a="${s0[$sp]}" -v b="${s1[$sp]}" -v hz="$hz" -v el="$el" \
	    'BEGIN {printf "%.2f", (b - a) * 100000 / hz / el}')
	printf '%-4s %10s %10s %10s %10s\n' "$i" "$qc" "$cs" "$loc" "$sc"
	echo "$qc" >>"$tmp/qcpu"; echo "$cs" >>"$tmp/cs"
	echo "$loc" >>"$tmp/loc"; echo "$sc" >>"$tmp/scpu"
done
printf '%-4s %10s %10s %10s %10s\n' "med" "$(median %.2f <"$tmp/qcpu")" \
    "$(median %.0f <"$tmp/cs")" "$(median %.1f <"$tmp/loc")" \
    "$(median %.2f <"$tmp/scpu")"
