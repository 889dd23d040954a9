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
# pointed at the rest. OUT is rebuilt only when this script or lib.sh
# changes (OUT.stamp); a half-built image is never left at OUT.
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
PROG=cloud.sh
ARGC=$#
OUT=${1:-}
. "$(dirname "$0")/lib.sh"
image_start python3

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
image_disk "$WORK/root" 128

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
image_finish
