#!/usr/bin/env bash
# Setup's layers against the plain image, measured in the same run and
# interleaved: warm `qsup run -- true` on the Debian 12 test image with a
# two-step setup (two qcow2 layers over it, built once first) and on the
# plain image, each restored from its own template. Goal: the layered
# start within 0.1 s of the plain one.
# Usage: bench/layers.sh [WARM_RUNS]   (default 11)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
warm_runs=${1:-11}
qsup=$PWD/build/qsup
img=$PWD/build/images/debian-12.qcow2
bash tests/images/debian.sh "$img"
tmp=$(mktemp -d /tmp/qsup-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache \
    XDG_DATA_HOME=$tmp/data
mkdir -m 700 "$tmp/run"
cat >"$tmp/layered.lua" <<EOF2
return {
  image = "$img",
  setup = { "echo one >/etc/layer-one", "echo two >/etc/layer-two" },
}
EOF2

runs() { tr '\n' ' ' <"$1"; }
kind() { tail -n 1 "$1" | sed -n 's/.*"start":"\([a-z-]*\)".*/\1/p'; }

# once NAME [ARGS...]: wall ms of `qsup run ARGS -- true` to NAME.
once() {
	local name=$1 t0 t1; shift
	t0=$(now_ms)
	"$qsup" run --json "$@" -- true 2>"$tmp/json" ||
	    { echo "bench: qsup run $* failed: $(tail -n 3 "$tmp/json")" >&2; exit 1; }
	t1=$(now_ms)
	echo $((t1 - t0)) >>"$tmp/$name"
	kind "$tmp/json" >>"$tmp/$name.kind"
}

# The layers and both templates first.
t0=$(now_ms)
once build_layered -p "$tmp/layered.lua"
t1=$(now_ms)
once build_plain --set image="$img"
for i in $(seq 1 "$warm_runs"); do
	once warm_layered -p "$tmp/layered.lua"
	once warm_plain --set image="$img"
done
if grep -qv '^warm$' "$tmp/warm_layered.kind" "$tmp/warm_plain.kind"; then
	echo "bench: a run that was not warm" >&2
	exit 1
fi
wl=$(median %d <"$tmp/warm_layered"); wp=$(median %d <"$tmp/warm_plain")
echo "layers: Debian 12 test image, qsup run -- true, warm:"
echo "  building 2 layers and the template, once: $((t1 - t0)) ms"
echo "  plain image, median of $warm_runs: $wp ms   (runs: $(runs "$tmp/warm_plain"))"
echo "  2-layer image, median of $warm_runs: $wl ms   (runs: $(runs "$tmp/warm_layered"))"
echo "  difference 2-layer - plain: $((wl - wp)) ms   (goal: within 100 ms)"
