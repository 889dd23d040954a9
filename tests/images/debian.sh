#!/usr/bin/env bash
# A real Debian 12 disk image for the tests and benchmarks, built from
# Debian's packages alone (no cloud image can be downloaded here):
#   tests/images/debian.sh OUT.qcow2
# mmdebstrap makes a minbase bookworm tree with python3 in it; mke2fs -d
# writes it into an ext4 file system without mounting anything; sfdisk
# lays out a GPT as Debian's own cloud images do (14: BIOS boot, 15: EFI
# system, 1: the root, last and typed "Linux root (x86-64)"); qemu-img
# converts the raw disk to qcow2. Nothing qsup-specific is put in the
# image. OUT is rebuilt only when this script or lib.sh changes (OUT.stamp
# holds their digest); a half-built image is never left at OUT.
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
PROG=debian.sh
ARGC=$#
OUT=${1:-}
. "$(dirname "$0")/lib.sh"
image_start

echo "$PROG: building a Debian 12 image from $MIRROR (a few minutes)" >&2
# minbase has apt; python3 is what the tests run. The tree is made as
# root would make it (root's own mode here, or unshare without root).
mmdebstrap --quiet --variant=minbase --include=python3 \
    --customize-hook='echo qsup-test > "$1/etc/hostname"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/*.bin "$1"/var/lib/apt/lists/*' \
    bookworm "$WORK/root" "$MIRROR"

# The file system: the tree's size, a third more, and 64 MiB to spare.
image_disk "$WORK/root" 64
image_finish
