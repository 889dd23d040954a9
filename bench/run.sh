#!/usr/bin/env bash
# Cold start benchmark: qsup run -- true against bare QEMU booting the same
# kernel and initramfs to the agent's first console line, interleaved, with
# medians and their ratio. Usage: bench/run.sh [RUNS] (default 7).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
runs=${1:-7}
qsup=$PWD/build/qsup
guest=$PWD/build/guest
tmp=$(mktemp -d /tmp/qsup-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

median() { sort -n | awk '{a[NR]=$1} END {m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%d", m}'; }

tsc_khz=$(awk -F: '/^cpu MHz/ {printf "%d", $2*1000; exit}' /proc/cpuinfo)
cmdline="console=ttyS0 quiet panic=-1 tsc_early_khz=$tsc_khz tsc=reliable no_timer_check pci=off cryptomgr.notests random.trust_cpu=on mitigations=off init_on_alloc=0 audit=0 apparmor=0 8250.nr_uarts=1 initcall_blacklist=init_kprobe_trace,crypto_kdf108_init,init_mmio_trace,init_trace_printk_function_export"

# Bare QEMU: time to the first line the agent (PID 1) prints.
bare_once() {
	local t0 t1 fifo=$tmp/con pid line
	rm -f "$fifo"; mkfifo "$fifo"
	t0=$(now_ms)
	qemu-system-x86_64 -M microvm -accel tcg,tb-size=64 -m 512 -smp 1 \
	    -nodefaults -no-user-config -display none -no-reboot \
	    -serial stdio -kernel "$guest/vmlinux" \
	    -initrd "$guest/initramfs.cpio" -append "$cmdline" \
	    </dev/null >"$fifo" 2>/dev/null &
	pid=$!
	while IFS= read -r line; do
		case $line in *qsup-agent*) break ;; esac
	done <"$fifo"
	t1=$(now_ms)
	kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null || true
	echo $((t1 - t0))
}

qsup_once() {
	local t0 t1
	t0=$(now_ms)
	"$qsup" run --json -- true 2>"$tmp/json"
	t1=$(now_ms)
	echo $((t1 - t0))
	sed -n 's/.*"qsup_max_rss_kb":\([0-9]*\).*/\1/p' "$tmp/json" >>"$tmp/rss"
}

export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"
"$qsup" run -- true >/dev/null 2>&1 || { echo "bench: qsup run failed" >&2; exit 1; }
: >"$tmp/rss"
for i in $(seq 1 "$runs"); do
	qsup_once >>"$tmp/qsup"
	bare_once >>"$tmp/bare"
done
q=$(median <"$tmp/qsup")
b=$(median <"$tmp/bare")
rss=$(sort -n "$tmp/rss" | tail -n 1)
echo "qsup run -- true, cold, median of $runs: $q ms   (runs: $(tr '\n' ' ' <"$tmp/qsup"))"
echo "bare QEMU to the agent's first console line, median of $runs: $b ms   (runs: $(tr '\n' ' ' <"$tmp/bare"))"
echo "ratio qsup / bare: $(awk -v q="$q" -v b="$b" 'BEGIN {printf "%.2f", q / b}')"
echo "qsup peak RSS: $rss kB"
