#!/usr/bin/env bash
# `qsup image build` of a Debian 12 minbase tree: the tarball mmdebstrap
# writes (mmdebstrap --variant=minbase bookworm TAR MIRROR, cached under
# build/images/), built into a qcow2 by an unprivileged user (uid 65534
# through setpriv when run as root), N times: the median wall time, the
# output's size and the tarball's.
# Usage: bench/image_build.sh [RUNS]   (default 3)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-3}
qsup=$PWD/build/qsup
tar=$PWD/build/images/minbase.tar
mirror=${QSUP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [ ! -f "$tar" ]; then
	mkdir -p "$(dirname "$tar")"
	echo "bench: mmdebstrap --variant=minbase bookworm (a few minutes)" >&2
	mmdebstrap --quiet --variant=minbase --format=tar bookworm "$tar.part" \
	    "$mirror"
	mv "$tar.part" "$tar"
fi
tmp=$(mktemp -d /tmp/qsup-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cp "$qsup" "$tmp/qsup"
cp "$tar" "$tmp/minbase.tar"
mkdir "$tmp/out"
as=()
if [ "$(id -u)" = 0 ]; then
	chown 65534:65534 "$tmp/out"
	as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
for i in $(seq 1 "$runs"); do
	rm -f "$tmp/out/minbase.qcow2"
	t0=$(now_ms)
	"${as[@]}" "$tmp/qsup" image build "$tmp/minbase.tar" \
	    -o "$tmp/out/minbase.qcow2" >/dev/null
	t1=$(now_ms)
	echo $((t1 - t0)) >>"$tmp/ms"
done
size=$(stat -c %s "$tmp/out/minbase.qcow2")
disk=$(qemu-img info --output=json "$tmp/out/minbase.qcow2" |
    sed -n 's/.*"virtual-size": \([0-9]*\).*/\1/p')
entries=$(tar -tf "$tar" | wc -l)
mb() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1e6 }'; }
printf 'qsup image build, Debian 12 minbase tarball (%s entries, %s MB):\n' \
    "$entries" "$(mb "$(stat -c %s "$tar")")"
printf '  time: median %s ms of %s (%s)\n' "$(median %d <"$tmp/ms")" "$runs" \
    "$(tr '\n' ' ' <"$tmp/ms" | sed 's/ $//')"
printf '  output: %s MB of qcow2, a %d MiB disk\n' "$(mb "$size")" \
    $((disk / 1048576))
# Does it boot and run the image's own userland?
"$qsup" run --set image="$tmp/out/minbase.qcow2" --set warm_start=false -- \
    sh -c '. /etc/os-release; echo "  boots: $PRETTY_NAME, apt $(apt-get --version | head -n 1 | cut -d" " -f2)"'
