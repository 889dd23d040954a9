#!/usr/bin/env bash
# boot = "image" against the fast path on the same cloud image
# (tests/images/cloud.sh), measured in the same run and interleaved: wall
# time of `qsup run -- true`, the image booting itself (firmware, GRUB,
# its kernel, systemd, cloud-init, the agent) against qsup's kernel with
# the image as its root, cold (warm_start off) and warm (restored from
# each one's own template: for the image boot, taken once cloud-init has
# finished, its disk kept with it).
# Usage: bench/cloud.sh [RUNS]   (default 3: each image boot is ~1 min)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-3}
qsup=$PWD/build/qsup
img=$PWD/build/images/cloud.qcow2
bash tests/images/cloud.sh "$img"
tmp=$(mktemp -d /tmp/qsup-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"

# once NAME [ARGS...]: wall ms of `qsup run ARGS -- true` to NAME.
once() {
	local name=$1 t0 t1; shift
	t0=$(now_ms)
	"$qsup" run "$@" -- true 2>"$tmp/err" ||
	    { echo "bench: qsup run $* failed: $(tail -n 3 "$tmp/err")" >&2; exit 1; }
	t1=$(now_ms)
	echo $((t1 - t0)) >>"$tmp/$name"
}

for i in $(seq 1 "$runs"); do
	once image_cold --set boot=image --set warm_start=false --set image="$img"
	once fast_cold --set warm_start=false --set image="$img"
done
once image_build --set boot=image --set image="$img"
once fast_build --set image="$img"
for i in $(seq 1 $((runs * 3))); do
	once image_warm --set boot=image --set image="$img"
	once fast_warm --set image="$img"
done
ic=$(median %d <"$tmp/image_cold"); fc=$(median %d <"$tmp/fast_cold")
iw=$(median %d <"$tmp/image_warm"); fw=$(median %d <"$tmp/fast_warm")
echo "cloud image ($(du -h "$img" | cut -f1) qcow2: GRUB, Debian's kernel, systemd, cloud-init), qsup run -- true:"
echo "  boot = \"image\", cold:  $ic ms median ($(tr '\n' ' ' <"$tmp/image_cold")ms)"
echo "  boot = \"image\", template build: $(cat "$tmp/image_build") ms (boot, cloud-init to its end, save, restore)"
echo "  boot = \"image\", warm:  $iw ms median ($(tr '\n' ' ' <"$tmp/image_warm")ms)"
echo "  fast path, cold:       $fc ms median ($(tr '\n' ' ' <"$tmp/fast_cold")ms)"
echo "  fast path, warm:       $fw ms median ($(tr '\n' ' ' <"$tmp/fast_warm")ms)"
awk -v a="$ic" -v b="$fc" -v c="$iw" -v d="$fw" 'BEGIN {
	printf "  image boot / fast path: cold %.1f, warm %.2f\n", a / b, c / d }'
