#!/usr/bin/env bash
# Disk images against the built-in guest, measured in the same run and
# interleaved: run-to-exit of `qsup run -- true`, cold (warm_start off) and
# warm (restored from each one's own template), in the Debian 12 test image
# (tests/images/debian.sh) and in the built-in initramfs guest; and the
# time qsup takes to make the image's overlay.
# Usage: bench/image.sh [COLD_RUNS] [WARM_RUNS]   (default 5 and 11)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
cold_runs=${1:-5}
warm_runs=${2:-11}
qsup=$PWD/build/qsup
img=$PWD/build/images/debian-12.qcow2
bash tests/images/debian.sh "$img"
tmp=$(mktemp -d /tmp/qsup-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"

field() { tail -n 1 "$2" | sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p"; }
runs() { tr '\n' ' ' <"$1"; }

# once NAME [ARGS...]: wall ms of `qsup run ARGS -- true` to NAME.
once() {
	local name=$1 t0 t1; shift
	t0=$(now_ms)
	"$qsup" run --json "$@" -- true 2>"$tmp/json" ||
	    { echo "bench: qsup run $* failed: $(tail -n 3 "$tmp/json")" >&2; exit 1; }
	t1=$(now_ms)
	echo $((t1 - t0)) >>"$tmp/$name"
	field overlay_s "$tmp/json" >>"$tmp/$name.overlay"
}

for i in $(seq 1 "$cold_runs"); do
	once cold_builtin --set warm_start=false
	once cold_image --set warm_start=false --set image="$img"
done
# Each one's template, then the warm runs.
once build_builtin
once build_image --set image="$img"
for i in $(seq 1 "$warm_runs"); do
	once warm_builtin
	once warm_image --set image="$img"
done

cb=$(median %d <"$tmp/cold_builtin"); ci=$(median %d <"$tmp/cold_image")
wb=$(median %d <"$tmp/warm_builtin"); wi=$(median %d <"$tmp/warm_image")
ov=$(awk '{printf "%d\n", $1 * 1000}' "$tmp/cold_image.overlay" "$tmp/warm_image.overlay" | median %d)
echo "image: Debian 12 ($(du -h "$img" | cut -f1) qcow2), qsup run -- true:"
echo "  cold, built-in guest, median of $cold_runs: $cb ms   (runs: $(runs "$tmp/cold_builtin"))"
echo "  cold, Debian image, median of $cold_runs: $ci ms   (runs: $(runs "$tmp/cold_image"))"
echo "  cold difference image - built-in: $((ci - cb)) ms   (goal: within 1200 ms)"
echo "  warm, built-in guest, median of $warm_runs: $wb ms   (runs: $(runs "$tmp/warm_builtin"))"
echo "  warm, Debian image, median of $warm_runs: $wi ms   (runs: $(runs "$tmp/warm_image"))"
echo "  warm difference image - built-in: $((wi - wb)) ms   (goal: within 100 ms)"
echo "  overlay creation, median of $((cold_runs + warm_runs)): $ov ms"
