# What the test-image builders share (sourced by debian.sh and cloud.sh).
#
# image_start TOOL...: the one argument, OUT; leaves at once when OUT is
# current (OUT.stamp holds the digest of the builder and of this file);
# checks the tools; a work directory beside OUT, removed on every way out.
# Sets OUT, STAMP, MIRROR and WORK. PROG is the builder's name.
image_start() {
	local tool
	[ "$ARGC" -eq 1 ] ||
	    { echo "usage: $PROG OUT.qcow2" >&2; exit 2; }
	STAMP=$(cat "$0" "$(dirname "$0")/lib.sh" | sha256sum | cut -d' ' -f1)
	image_current && exit 0
	# One builder at a time (suites run side by side): the others wait
	# for it, then find OUT current.
	mkdir -p "$(dirname "$OUT")"
	exec 9>>"$OUT.lock"
	flock 9
	image_current && exit 0
	for tool in mmdebstrap mke2fs sfdisk qemu-img "$@"; do
		command -v "$tool" >/dev/null ||
		    die "$tool not found (Debian packages: mmdebstrap, e2fsprogs, fdisk, qemu-utils, and $*)"
	done
	MIRROR=${QSUP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
	WORK=$(mktemp -d "$(dirname "$OUT")/.$PROG.XXXXXX")
	trap 'rm -rf "$WORK"' EXIT
}

# image_current: OUT is there, built by these very scripts.
image_current() {
	[ -f "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$STAMP" ]
}

die() {
	echo "$PROG: $*" >&2
	exit 1
}

# image_disk TREE SPARE_MIB: TREE as an ext4 file system (labelled root,
# the tree's size, a third more and SPARE_MIB), in $WORK/disk.raw laid
# out as Debian's cloud images are: 1 MiB of GPT, 3 MiB BIOS boot (14,
# from sector 2048), 8 MiB EFI system (15), then the root (1, last, typed
# "Linux root (x86-64)"), and 1 MiB spare for the backup GPT. TREE goes.
image_disk() {
	local kib fs_mib
	kib=$(du -sk "$1" | cut -f1)
	fs_mib=$(( (kib * 4 / 3) / 1024 + $2 ))
	mke2fs -q -t ext4 -L root -d "$1" "$WORK/root.ext4" "${fs_mib}M"
	rm -rf "$1"
	DISK_MIB=$((1 + 3 + 8 + fs_mib + 1))
	truncate -s "${DISK_MIB}M" "$WORK/disk.raw"
	sfdisk --quiet "$WORK/disk.raw" <<SFDISK
label: gpt
$WORK/disk.raw14 : start=2048, size=6144, type=21686148-6449-6E6F-744E-656564454649
$WORK/disk.raw15 : start=8192, size=16384, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B
$WORK/disk.raw1 : start=24576, size=$((fs_mib * 2048)), type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709
SFDISK
	dd if="$WORK/root.ext4" of="$WORK/disk.raw" bs=1M seek=12 \
	    conv=notrunc status=none
	rm -f "$WORK/root.ext4"
}

# image_finish: $WORK/disk.raw to OUT as qcow2, whole or not at all.
image_finish() {
	qemu-img convert -f raw -O qcow2 "$WORK/disk.raw" "$WORK/out.qcow2"
	# The old stamp goes first, the new one into place whole: a stamp
	# that is not OUT's makes one more build, never a wrong OUT current.
	rm -f "$OUT.stamp"
	mv "$WORK/out.qcow2" "$OUT"
	echo "$STAMP" >"$WORK/stamp"
	mv "$WORK/stamp" "$OUT.stamp"
	echo "$PROG: $OUT: $(du -h "$OUT" | cut -f1) ($DISK_MIB MiB disk)" >&2
}
