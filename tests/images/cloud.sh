#!/usr/bin/env bash
# A cloud image for the tests and benchmarks of boot = "image", built from
# Debian's packages alone (no cloud image can be downloaded here):
#   tests/images/cloud.sh OUT.qcow2
# Like Debian's own cloud images it boots as a PC does: the BIOS loads
# GRUB from the disk's first sector and its BIOS boot partition, GRUB
# loads the image's own kernel and initramfs from the root file system,
# systemd starts, and cloud-init reads its NoCloud seed (the "cidata"
# disk qsup attaches). Nothing qsup-specific is put in the image: qsup's
# agent arrives on the seed, and cloud-init starts it.
#
# Without root or loop devices: mmdebstrap makes the tree (grub-pc-bin's
# grub-mkimage runs inside it and makes GRUB's core image, with its
# configuration built in), mke2fs -d writes the tree into an ext4 file
# system, sfdisk lays out the GPT, and this script does what grub-install
# would: GRUB's boot sector into the protective MBR's code area, pointed
# at the core image in the BIOS boot partition, whose first sector is
# pointed at the rest. OUT is rebuilt only when this script changes
# (OUT.stamp); a half-built image is never left at OUT.
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
PROG=cloud.sh

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
for tool in mmdebstrap mke2fs sfdisk qemu-img python3; do
	command -v "$tool" >/dev/null ||
	    die "$tool not found (Debian packages: mmdebstrap, e2fsprogs, fdisk, qemu-utils, python3)"
done
MIRROR=${QSUP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mkdir -p "$(dirname "$OUT")"
WORK=$(mktemp -d "$(dirname "$OUT")/.cloud.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The kernel's command line, as a cloud image's GRUB gives it: the root
# by label (the seed is a virtio disk too, so vda may be either), the
# console on the first serial port, the classic interface names.
CMDLINE="root=LABEL=root rw console=ttyS0,115200n8 net.ifnames=0"

echo "$PROG: building a Debian 12 cloud image from $MIRROR (a few minutes)" >&2
# The initramfs holds only what finds the root (MODULES=list): the whole
# module tree would be unpacked for nothing on every boot. ifupdown is
# there for cloud-init to render a network configuration into, and
# locales for its locale module (en_US.UTF-8), as on Debian's images.
mmdebstrap --quiet --variant=minbase \
    --include=systemd-sysv,udev,cloud-init,linux-image-amd64,initramfs-tools,grub-pc-bin,ifupdown,locales,python3 \
    --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d"' \
    --essential-hook='echo MODULES=list > "$1/etc/initramfs-tools/conf.d/modules.conf"' \
    --essential-hook='printf "%s\n" virtio_pci virtio_blk ext4 > "$1/etc/initramfs-tools/modules"' \
    --customize-hook='echo qsup-cloud > "$1/etc/hostname"' \
    --customize-hook='echo "en_US.UTF-8 UTF-8" > "$1/etc/locale.gen"' \
    --customize-hook='chroot "$1" locale-gen' \
    --customize-hook='echo "LABEL=root / ext4 defaults 0 1" > "$1/etc/fstab"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/*.bin "$1"/var/lib/apt/lists/*' \
    --customize-hook="set -e
	kernel=\$(cd \"\$1\" && ls boot/vmlinuz-* | head -1)
	initrd=\$(cd \"\$1\" && ls boot/initrd.img-* | head -1)
	printf '%s\n' 'search --no-floppy --label root --set root' \
	    'serial --unit=0 --speed=115200' 'terminal_output serial' \
	    \"linux /\$kernel $CMDLINE\" \"initrd /\$initrd\" boot \
	    > \"\$1/boot/qsup-grub.cfg\"
	chroot \"\$1\" grub-mkimage -O i386-pc -o /boot/core.img \
	    -c /boot/qsup-grub.cfg -p /boot/grub \
	    biosdisk part_gpt ext2 search search_label linux serial \
	    terminal echo boot
	cp \"\$1/usr/lib/grub/i386-pc/boot.img\" \"\$1/boot/boot.img\"" \
    bookworm "$WORK/root" "$MIRROR"

mv "$WORK/root/boot/core.img" "$WORK/root/boot/boot.img" "$WORK"
CORE_BYTES=$(stat -c %s "$WORK/core.img")
[ "$CORE_BYTES" -le $((6144 * 512)) ] ||
    die "GRUB's core image ($CORE_BYTES bytes) does not fit its partition"

# The file system: the tree's size, a third more, and 128 MiB to spare.
KIB=$(du -sk "$WORK/root" | cut -f1)
FS_MIB=$(( (KIB * 4 / 3) / 1024 + 128 ))
mke2fs -q -t ext4 -L root -d "$WORK/root" "$WORK/root.ext4" "${FS_MIB}M"
rm -rf "$WORK/root"

# As debian.sh: 1 MiB of GPT, 3 MiB BIOS boot (sector 2048), 8 MiB EFI
# (empty here), then the root; 1 MiB spare for the backup GPT.
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
rm -f "$WORK/root.ext4"

# What grub-install does for a BIOS boot partition at sector 2048: the
# boot sector's code (its first 440 bytes: the partition table stays)
# loads sector 2048 (its 64-bit "kernel sector" at 0x5c); that sector,
# the core image's first, loads the rest from its block list at its end
# (start 0x1f4, sector count 0x1fc, which grub-mkimage has filled in).
python3 - "$WORK/disk.raw" "$WORK/boot.img" "$WORK/core.img" <<'EOF'
import struct, sys
disk, boot, core = sys.argv[1:]
boot = bytearray(open(boot, "rb").read())
core = bytearray(open(core, "rb").read())
assert len(boot) == 512
struct.pack_into("<Q", boot, 0x5c, 2048)
struct.pack_into("<Q", core, 0x1f4, 2049)
with open(disk, "r+b") as f:
    f.seek(0)
    f.write(boot[:440])
    f.seek(2048 * 512)
    f.write(core)
EOF
qemu-img convert -f raw -O qcow2 "$WORK/disk.raw" "$WORK/out.qcow2"
mv "$WORK/out.qcow2" "$OUT"
echo "$STAMP" >"$OUT.stamp"
echo "$PROG: $OUT: $(du -h "$OUT" | cut -f1) ($DISK_MIB MiB disk)" >&2
