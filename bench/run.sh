#!/usr/bin/env bash
# Start-up benchmark, everything measured in the same run:
#   cold:  qsup run -- true with warm_start off, interleaved with bare QEMU
#          booting the same kernel and initramfs to the agent's first
#          console line;
#   warm:  qsup run -- true restored from a template;
#   the template's size and the time to make it; QEMU's RSS for a cold and
#   a restored guest; qsup's own peak RSS;
#   template_ram=stream (the RAM inside the state file) against the default
#   template_ram=shared (the RAM in a file QEMU maps): restore, warm run,
#   save, QEMU's RSS, the template on disk.
# Usage: bench/run.sh [COLD_RUNS] [WARM_RUNS]   (default 5 and 11)
# QSUP_BENCH_DENSITY=N adds bench/density.sh N (N sandboxes at once) and
# bench/density_serve.sh N (N creates at once through qsup serve).
# QSUP_OTHER=PATH adds another build's cold run (its own guest, beside
# it) to the same loop: a before and after in one run.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
cold_runs=${1:-5}
warm_runs=${2:-11}
qsup=$PWD/build/qsup
guest=$PWD/build/guest
tmp=$(mktemp -d /tmp/qsup-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

field() { tail -n 1 "$2" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
ms() { awk -v s="$1" 'BEGIN {printf "%d", s * 1000}'; }
runs() { tr '\n' ' ' <"$1"; }
kind() { tail -n 1 "$1" | sed -n 's/.*"start":"\([a-z-]*\)".*/\1/p'; }
# The templates' files on disk, allocated (not apparent) kB.
templates_kb() { du -sk "$XDG_CACHE_HOME/qsup/templates" | cut -f 1; }
# compare WHAT SHARED STREAM UNIT: a row with shared / stream.
compare() {
	awk -v w="$1" -v a="$2" -v b="$3" -v u="$4" 'BEGIN {
	    printf "  %s: shared %d %s, stream %d %s, ratio shared / stream %s\n",
	    w, a, u, b, u, (b > 0 ? sprintf("%.2f", a / b) : "n/a") }'
}

tsc_khz=$(awk -F: '/^cpu MHz/ {printf "%d", $2*1000; exit}' /proc/cpuinfo)
cmdline="console=ttyS0 quiet panic=-1 tsc_early_khz=$tsc_khz tsc=reliable no_timer_check pci=off cryptomgr.notests random.trust_cpu=on mitigations=off init_on_alloc=0 audit=0 apparmor=0 8250.nr_uarts=1 initcall_blacklist=init_kprobe_trace,crypto_kdf108_init,init_mmio_trace,init_trace_printk_function_export"

# Bare QEMU: time to the first line the agent (PID 1) prints. Without
# transparent huge pages, as qsup runs QEMU under TCG (qemu.c): with them,
# a bare boot after a second or two of idle took 2.6-3.6 s here instead of
# 1.3-1.6 (its 2 MB pages faulted in anew, on a host whose free memory is
# handed back to its hypervisor), and the baseline swung with what ran
# before it. perl-base is in every Debian; prctl(PR_SET_THP_DISABLE) is
# syscall 157 on x86-64, 167 on arm64.
case $(uname -m) in
aarch64) nr_prctl=167 ;;
*) nr_prctl=157 ;;
esac
# A command, not a function: backgrounded, its pid is QEMU's (perl execs).
no_thp=(perl -e 'syscall('"$nr_prctl"', 41, 1, 0, 0, 0) == 0 or die "prctl: $!\n";
    exec @ARGV or die "$ARGV[0]: $!\n"')
bare_once() {
	local t0 t1 fifo=$tmp/con pid line
	rm -f "$fifo"; mkfifo "$fifo"
	t0=$(now_ms)
	"${no_thp[@]}" qemu-system-x86_64 -M microvm -accel tcg,tb-size=64 -m 512 -smp 1 \
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

# qsup_once NAME [ARGS...]: wall ms to NAME, the JSON summary to NAME.json.
qsup_once() {
	local name=$1 t0 t1; shift
	t0=$(now_ms)
	"$qsup" run --json "$@" -- true 2>"$tmp/json"
	t1=$(now_ms)
	echo $((t1 - t0)) >>"$tmp/$name"
	field boot_s "$tmp/json" >>"$tmp/$name.boot"
	field qemu_rss_kb "$tmp/json" >>"$tmp/$name.qemu_rss"
	field qsup_max_rss_kb "$tmp/json" >>"$tmp/rss"
	for f in prepare_s qemu_start_s guest_setup_s exec_start_s exec_s \
	    teardown_s; do
		field "$f" "$tmp/json" >>"$tmp/$name.$f"
	done
	cp "$tmp/json" "$tmp/$name.json"
}

export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"
printf 'return { warm_start = false }\n' >"$tmp/cold.lua"
"$qsup" run --profile "$tmp/cold.lua" -- true >/dev/null 2>&1 ||
    { echo "bench: qsup run failed" >&2; exit 1; }
: >"$tmp/rss"

other=${QSUP_OTHER:-}
for i in $(seq 1 "$cold_runs"); do
	qsup_once cold --profile "$tmp/cold.lua"
	bare_once >>"$tmp/bare"
	if [ -n "$other" ]; then
		t0=$(now_ms)
		"$other" run --profile "$tmp/cold.lua" -- true >/dev/null 2>&1 ||
		    { echo "bench: $other run failed" >&2; exit 1; }
		echo $(($(now_ms) - t0)) >>"$tmp/other"
	fi
done

# The same with template_ram=stream, first, so that the default profile's
# template is the one the cache holds afterwards, as before.
stream="--set template_ram=stream"
"$qsup" cache clear >/dev/null
qsup_once build_stream $stream
[ "$(kind "$tmp/build_stream.json")" = template-build ] ||
    { echo "bench: the stream run did not build a template" >&2; exit 1; }
stream_disk_kb=$(templates_kb)
for i in $(seq 1 "$warm_runs"); do
	qsup_once warm_stream $stream
done
[ "$(kind "$tmp/warm_stream.json")" = warm ] ||
    { echo "bench: a stream run was not restored" >&2; exit 1; }

# The template: made by the first run of the default profile.
"$qsup" cache clear >/dev/null
qsup_once build
[ "$(kind "$tmp/build.json")" = template-build ] ||
    { echo "bench: the default run did not build a template" >&2; exit 1; }
shared_disk_kb=$(templates_kb)
build_ms=$(cat "$tmp/build")
save_ms=$(ms "$(field template_save_s "$tmp/build.json")")
state=$(ls "$XDG_CACHE_HOME"/qsup/templates/*.state)
size_mb=$(awk -v b="$(stat -c %s "$state")" 'BEGIN {printf "%.1f", b / 1e6}')

for i in $(seq 1 "$warm_runs"); do
	qsup_once warm
done

c=$(median %d <"$tmp/cold"); b=$(median %d <"$tmp/bare"); w=$(median %d <"$tmp/warm")
echo "cold qsup run -- true, median of $cold_runs: $c ms   (runs: $(runs "$tmp/cold"))"
echo "bare QEMU to the agent's first console line, median of $cold_runs: $b ms   (runs: $(runs "$tmp/bare"))"
echo "ratio cold qsup / bare QEMU: $(awk -v q="$c" -v b="$b" 'BEGIN {printf "%.2f", q / b}')"
if [ -n "$other" ]; then
	o=$(median %d <"$tmp/other")
	echo "QSUP_OTHER ($other), cold, the same loop: $o ms, ratio to bare QEMU $(awk -v q="$o" -v b="$b" 'BEGIN {printf "%.2f", q / b}')   (runs: $(runs "$tmp/other"))"
fi
echo "warm qsup run -- true, median of $warm_runs: $w ms   (runs: $(runs "$tmp/warm"))"
echo "warm: restore to agent ready, median: $(awk '{printf "%d\n", $1 * 1000}' "$tmp/warm.boot" | median %d) ms   (values: $(runs "$tmp/warm.boot"))"
echo "ratio warm / cold: $(awk -v w="$w" -v c="$c" 'BEGIN {printf "%.2f", w / c}')"
# phase NAME: the warm runs' median of timings.NAME, in ms.
phase() { awk '{printf "%.1f\n", $1 * 1000}' "$tmp/warm.$1" | median %.1f; }
echo "warm: where a run's time goes (medians of $warm_runs, qsup run --json's timings):" \
    "prepare $(phase prepare_s) ms, QEMU's start to loading the template $(phase qemu_start_s) ms," \
    "then the load, the wake and /setup to agent ready (the agent's own /setup $(phase guest_setup_s) ms)," \
    "the command to its start in the guest $(phase exec_start_s) ms, all of the command $(phase exec_s) ms," \
    "teardown $(phase teardown_s) ms"
echo "template: state $size_mb MB, all its files $((shared_disk_kb / 1000)) MB on disk (allocated); first run (boot + save + restore) $build_ms ms, of which saving $save_ms ms"
echo "QEMU RSS at the command's exit: cold $(median %d <"$tmp/cold.qemu_rss") kB, restored $(median %d <"$tmp/warm.qemu_rss") kB"
echo "qsup peak RSS: $(sort -n "$tmp/rss" | tail -n 1) kB"

# template_ram: shared (the default, just measured) against stream.
boot_ms() { awk '{printf "%d\n", $1 * 1000}' "$1" | median %d; }
echo "template_ram=shared (default) against template_ram=stream, medians of $warm_runs warm runs each:"
compare "restore to agent ready" "$(boot_ms "$tmp/warm.boot")" \
    "$(boot_ms "$tmp/warm_stream.boot")" ms
compare "warm qsup run -- true" "$(median %d <"$tmp/warm")" \
    "$(median %d <"$tmp/warm_stream")" ms
compare "template save (first run)" "$save_ms" \
    "$(ms "$(field template_save_s "$tmp/build_stream.json")")" ms
compare "QEMU RSS at the command's exit" "$(median %d <"$tmp/warm.qemu_rss")" \
    "$(median %d <"$tmp/warm_stream.qemu_rss")" kB
compare "template on disk (allocated)" "$shared_disk_kb" "$stream_disk_kb" kB

# Profile loading, for the profile language's own targets.
echo
bench/profile.sh

# Shares: 9p reads, the host's Python through shares, staging.
echo
bench/share.sh

# Copy-on-write shares against read-only ones, in the same sandbox.
echo
bench/cow.sh

# Network: the allowlist proxy against open networking.
echo
bench/net.sh

# Disk images: the Debian test image against the built-in guest.
echo
bench/image.sh "$cold_runs" "$warm_runs"

# setup's layers: warm start on a 2-layer image against the plain one.
echo
bench/layers.sh "$warm_runs"

# A pipeline's job with the ci profile: first and second run.
echo
bench/ci.sh

# boot = "image": a cloud image booting itself against the fast path.
echo
bench/cloud.sh

# qsup image build of a Debian minbase tree: time and size.
echo
bench/image_build.sh

# Image pulls: qsup against curl from a local HTTP server.
echo
bench/image_pull.sh

# OCI registry pulls: qsup against skopeo from a local registry.
echo
bench/oci.sh

# The server: exec round trip, streams, files, the API against qsup run,
# the server's RSS.
echo
bench/serve.sh "$warm_runs"

# Fork of 1, restore, fork of 8: QEMUs started ahead (--spares 8) or not.
echo
echo "serve --spares: fork of 1, restore and fork of 8, without and with spare QEMUs:"
bench/serve_ab.sh "$warm_runs" "$PWD/build/qsup" "$PWD/build/qsup --spares 8"

# E2B's SDK against qsup serve --e2b, beside qsup's own API.
echo
bench/e2b.sh 5 "$warm_runs"

# Density, on demand: N sandboxes at once (slow: N guests).
# The previous format first, then the default, in the same run.
if [ -n "${QSUP_BENCH_DENSITY:-}" ]; then
	echo
	echo "density with template_ram = \"stream\" (the previous format):"
	QSUP_DENSITY_SET=template_ram=stream bench/density.sh "$QSUP_BENCH_DENSITY" || true
	echo
	echo "density with template_ram = \"shared\" (the default):"
	bench/density.sh "$QSUP_BENCH_DENSITY" || true
	echo
	bench/density_serve.sh "$QSUP_BENCH_DENSITY"
fi
