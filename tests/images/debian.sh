#!/usr/bin/env bash
# A real Debian 12 disk image for the tests and benchmarks, built from
# Debian's packages alone (no cloud image can be downloaded here):
#   tests/images/debian.sh OUT.qcow2
# mmdebstrap makes a minbase bookworm tree with python3 in it; mke2fs -d
# writes it into an ext4 file system without mounting anything; sfdisk
# lays out a GPT as Debian's own cloud images do (14: BIOS boot, 15: EFI
# system, 1: the root, last and typed "Linux root (x86-64)"); qemu-img
# converts the raw disk to qcow2. Nothing qsup-specific is put in the
# image. OUT is rebuilt only when this script changes (OUT.stamp holds its
# digest); a half-built image is never left at OUT.
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
PROG=debian.sh

die() {
	echo "$PROG: $*" >&2
	exit 1
}

[ $# -eq 1 ] || { echo "usage: $PROG OUT.qcow2" >&2; exit 2; }
OUT=$1
STAMP=$(sha256sum "$0" | cut -d' ' -f1)
if [ -f "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$STAMP" ]; then
	exit 0
fi
for tool in mmdebstrap mke2fs sfdisk qemu-img; do
	command -v "$tool" >/dev/null ||
	    die "$tool not found (Debian packages: mmdebstrap, e2fsprogs, fdisk, qemu-utils)"
done
MIRROR=${QSUP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d "$(dirname "$OUT")/.debian.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

echo "$PROG: building a Debian 12 image from $MIRROR (a few minutes)" >&2
# minbase has apt; python3 is what the tests run. The tree is made as
# root would make it (root's own mode here, or unshare without root).
mmdebstrap --quiet --variant=minbase --include=python3 \
    --customize-hook='echo qsup-test > "$1/etc/hostname"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/*.bin "$1"/var/lib/apt/lists/*' \
    bookworm "$WORK/root" "$MIRROR"

# The file system: the tree's size, a third more, and 64 MiB to spare.
KIB=$(du -sk "$WORK/root" | cut -f1)
FS_MIB=$(( (KIB * 4 / 3) / 1024 + 64 ))
mke2fs -q -t ext4 -L root -d "$WORK/root" "$WORK/root.ext4" "${FS_MIB}M"

# 1 MiB of GPT, 3 MiB BIOS boot, 8 MiB EFI, then the root; 1 MiB spare at
# the end for the backup GPT.
DISK_MIB=$((1 + 3 + 8 + FS_MIB + 1))
truncate -s "${DISK_MIB}M" "$WORK/disk.raw"
sfdisk --quiet "$WORK/disk.raw" <<SFDISK
label: gpt
$WORK/disk.raw14 : start=2048, size=6144, type=21686148-6449-6E6F-744E-656564454649
$WORK/disk.raw15 : start=8192, size=16384, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B
$WORK/disk.raw1 : start=24576, size=$((FS_MIB * 2048)), type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709
SFDISK
dd if="$WORK/root.ext4" of="$WORK/disk.raw" bs=1M seek=12 conv=notrunc \
    status=none
qemu-img convert -f raw -O qcow2 "$WORK/disk.raw" "$WORK/out.qcow2"
mv "$WORK/out.qcow2" "$OUT"
echo "$STAMP" >"$OUT.stamp"
echo "$PROG: $OUT: $(du -h "$OUT" | cut -f1) ($DISK_MIB MiB disk)" >&2
