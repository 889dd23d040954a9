#!/usr/bin/env bash
# A disk image as the command's root, in the guest: the built-in guest
# booted in real QEMU (TCG) with the image attached as qsup attaches it (a
# qcow2 overlay on virtio-blk-pci, serial qsup-root, qsup.root=1), the
# agent spoken to directly over its virtio-serial port
# (helpers/guest_root.py): the config's "root" line through POST /setup,
# as after a warm-start restore, or on a seed ISO at a cold boot. The images are built here by sfdisk and
# mke2fs -d, without root or loop devices, in the layouts Debian's and
# Ubuntu's cloud images use, with a static busybox, a marker file and a
# real glibc libc.so.6 in them. qsup's own host side is not used: it does
# not attach images yet.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

KERNEL=$PWD/build/guest/vmlinux
INITRD=$PWD/build/guest/initramfs.cpio
BUSYBOX=$PWD/build/guest/cache/busybox/bin/busybox
LIBC=$(ls /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc.so.6 \
    2>/dev/null | head -1)
KHZ=$(awk -F: '/^cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
IMG=$T_TMP/img
mkdir -p "$IMG"

for f in "$KERNEL" "$INITRD" "$BUSYBOX"; do
	[ -e "$f" ] || { echo "$f: missing; build first (make)"; exit 1; }
done
for t in sfdisk mke2fs e2fsck debugfs qemu-img qemu-system-x86_64; do
	command -v "$t" >/dev/null || PATH=$PATH:/sbin:/usr/sbin
	command -v "$t" >/dev/null ||
	    { echo "$t not found (Debian packages fdisk, e2fsprogs, qemu)"; exit 1; }
done
[ -n "$LIBC" ] || { echo "no host libc.so.6 to put in the image"; exit 1; }
GLIBC=$(ldd --version 2>/dev/null | sed -n '1s/.* \([0-9]*\.[0-9]*\)$/\1/p')

# The tree every image holds.
ROOT=$IMG/tree
mkdir -p "$ROOT"/{bin,etc,tmp,proc,sys,dev,run,lib/x86_64-linux-gnu}
cp "$BUSYBOX" "$ROOT/bin/busybox"
for a in sh cat ls df echo pwd stat hostname mount test; do
	ln -s busybox "$ROOT/bin/$a"
done
cp "$LIBC" "$ROOT/lib/x86_64-linux-gnu/libc.so.6"
# As in Debian's and Ubuntu's cloud images: systemd-resolved's stub,
# dangling without systemd.
ln -s ../run/systemd/resolve/stub-resolv.conf "$ROOT/etc/resolv.conf"

# mkimage FILE MARKER LAYOUT: a 64 MiB raw disk; LAYOUT is debian (GPT:
# 1 Linux data at the end, 14 BIOS boot, 15 ESP), ubuntu (GPT: 1 root
# x86-64 labelled cloudimg-rootfs, 15 ESP, 16 an ext4 /boot), mbr, whole
# or esp-only.
mkimage() {
	local f=$1 marker=$2 layout=$3 start size
	echo "$marker" >"$ROOT/marker"
	rm -f "$f"
	truncate -s 64M "$f"
	case $layout in
	debian)
		sfdisk -q "$f" >/dev/null <<-EOF
		label: gpt
		${f}1 : start=10240, type=0FC63DAF-8483-4772-8E79-3D69D8477DE4
		${f}14 : start=2048, size=4096, type=21686148-6449-6E6F-744E-656564454649
		${f}15 : start=6144, size=4096, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B
		EOF
		;;
	ubuntu)
		sfdisk -q "$f" >/dev/null <<-EOF
		label: gpt
		${f}1 : start=40960, type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709
		${f}15 : start=2048, size=8192, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B
		${f}16 : start=10240, size=30720, type=BC13C2FF-59E6-4262-A352-B275FD6F7172
		EOF
		mke2fs -q -F -t ext4 -L BOOT -E offset=$((10240 * 512)) "$f" 15M
		;;
	mbr)
		sfdisk -q "$f" >/dev/null <<-EOF
		label: dos
		${f}1 : start=4096, type=83
		EOF
		;;
	esp-only)
		sfdisk -q "$f" >/dev/null <<-EOF
		label: gpt
		${f}15 : start=2048, size=8192, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B
		EOF
		return 0
		;;
	whole)
		mke2fs -q -F -t ext4 -d "$ROOT" "$f" || fail "mke2fs $f"
		return 0
		;;
	esac
	read -r start size < <(sfdisk -d "$f" | awk -v p="${f}1 " \
	    'index($0, p) == 1 { gsub(",", ""); print $4, $6 }')
	mke2fs -q -F -t ext4 $([ "$layout" = ubuntu ] && echo -L cloudimg-rootfs) \
	    -d "$ROOT" -E offset=$((start * 512)) "$f" $((size / 2))k ||
	    fail "mke2fs $f"
}

# overlay BASE OUT [SIZE]: a fresh qcow2 overlay, as qsup makes one.
overlay() {
	qemu-img create -q -f qcow2 -F raw -b "$1" "$2" ${3:-} ||
	    fail "qemu-img create $2"
}

# boot OVERLAY CONFIG-LINES [harness options] -- ARGV: setup's answer on
# line 1 of $OUT, then ARGV's output; its status in $RC.
boot() {
	local ov=$1 lines=$2
	shift 2
	# Under $T_RUN, so that expect_clean sees a QEMU left behind.
	VM=$T_RUN/vm
	mkdir -p "$VM"
	printf 'token @TOKEN@\nhostname imgbox\n%b' "$lines" >"$VM/cfg"
	timeout -k 5 200 python3 tests/integration/helpers/guest_root.py \
	    --kernel "$KERNEL" --initrd "$INITRD" --tsc-khz "$KHZ" \
	    --dir "$VM" --disk "$ov" --config "$VM/cfg" "$@" \
	    >"$T_TMP/out" 2>"$T_TMP/err"
	RC=$?
	OUT=$(cat "$T_TMP/out")
	SETUP=$(head -1 "$T_TMP/out")
}

# The partition table and file system of an overlay, checked on the host.
check_overlay() {
	local ov=$1 raw=$T_TMP/check.raw start
	qemu-img convert -O raw "$ov" "$raw" || { fail "qemu-img convert"; return; }
	if ! sfdisk -V "$raw" >"$T_TMP/verify" 2>&1; then
		fail "sfdisk -V: $(cat "$T_TMP/verify")"
	fi
	start=$(sfdisk -d "$raw" | awk -v p="$raw" \
	    'index($0, p "1 ") == 1 { gsub(",", ""); print $4 }')
	dd if="$raw" of="$raw.p1" bs=512 skip="${start:-0}" status=none
	e2fsck -fn "$raw.p1" >"$T_TMP/fsck" 2>&1 ||
	    fail "e2fsck -fn: $(tail -5 "$T_TMP/fsck")"
	PARTS=$(sfdisk -d "$raw")
	FILE_WRITTEN=$(debugfs -R "cat /written" "$raw.p1" 2>/dev/null)
	rm -f "$raw" "$raw.p1"
}

test_debian_layout_becomes_the_root() {
	local base=$IMG/debian.raw ov=$T_TMP/ov.qcow2 sum
	mkimage "$base" marker-debian debian
	sum=$(sha256sum <"$base")
	overlay "$base" "$ov"
	mkdir -p "$T_TMP/share"
	echo from-the-host >"$T_TMP/share/hostfile"
	# The share and a bind from it, inside the image.
	boot "$ov" 'root qsup-root keep\nroot_glibc 1\nmount share0 /work rw\nbind /work /etc/bound ro\n' \
	    --share "$T_TMP/share:share0" -- sh -c 'cat /marker; echo "PATH=$PATH";
	    cat /work/hostfile /etc/bound/hostfile; echo to-host >/work/back;
	    pwd; cat /etc/resolv.conf; stat -c %F /etc/resolv.conf;
	    cat /etc/hostname; hostname; test -r /proc/self/status && echo proc;
	    echo written >/written'
	expect_eq "exit status" 0 "$RC"
	expect_match "setup answer" '^setup 200 .*"root":"/dev/vda1","glibc":"'"$GLIBC"'"' \
	    "$SETUP"
	expect_match "the image's marker" '^marker-debian$' "$OUT"
	expect_match "PATH" '^PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin$' "$OUT"
	expect_match "cwd" '^/$' "$OUT"
	expect_match "resolv.conf" '^nameserver 10\.0\.2\.3$' "$OUT"
	expect_match "resolv.conf replaced" '^regular file$' "$OUT"
	expect_match "hostname" '^imgbox$' "$OUT"
	expect_eq "share and bind in the image" 2 "$(grep -c '^from-the-host$' <<<"$OUT")"
	expect_eq "written through the share" to-host "$(cat "$T_TMP/share/back" 2>&1)"
	expect_match "/proc inside" '^proc$' "$OUT"
	expect_match "console" 'root /dev/vda1 \(found by its content \(ext4\)\)' \
	    "$(cat "$VM/console.log")"
	expect_eq "base untouched" "$sum" "$(sha256sum <"$base")"
	check_overlay "$ov"
	expect_eq "the write is in the overlay" written "$FILE_WRITTEN"
}

# Ubuntu's layout: the root by its GPT type, never the ext4 /boot.
test_ubuntu_layout_root_by_type_not_boot() {
	local base=$IMG/ubuntu.raw ov=$T_TMP/ov.qcow2
	mkimage "$base" marker-ubuntu ubuntu
	overlay "$base" "$ov"
	boot "$ov" 'root qsup-root keep\n' -- cat /marker
	expect_eq "exit status" 0 "$RC"
	expect_match "the root" '"root":"/dev/vda1"' "$SETUP"
	case $SETUP in *'"glibc"'*) fail "glibc looked for unasked: $SETUP" ;; esac
	expect_match "the image's marker" '^marker-ubuntu$' "$OUT"
	expect_match "console" 'found by its GPT type' "$(cat "$VM/console.log")"
}

# disk_size: the overlay is bigger than the base; grow fills it.
test_grow_fills_an_enlarged_gpt_disk() {
	local base=$IMG/debian.raw ov=$T_TMP/ov.qcow2 kb last end
	[ -f "$base" ] || mkimage "$base" marker-debian debian
	overlay "$base" "$ov" 300M
	boot "$ov" 'root qsup-root grow 314572800\n' -- sh -c \
	    'df -k / | tail -1; echo written >/written'
	expect_eq "exit status" 0 "$RC"
	kb=$(awk 'NR == 2 { print $2 }' <<<"$OUT")
	[ "${kb:-0}" -gt 250000 ] || fail "root not grown: ${kb:-?} KiB: $OUT"
	check_overlay "$ov"
	last=$(awk '/^last-lba:/ { print $2 }' <<<"$PARTS")
	end=$(awk '/check.raw1 / { gsub(",", ""); print $4 + $6 - 1 }' <<<"$PARTS")
	expect_eq "partition 1 ends at the last usable sector" "$last" "$end"
	expect_eq "the write is in the overlay" written "$FILE_WRITTEN"

	# keep: the same overlay size, left as the base made it.
	overlay "$base" "$ov" 300M
	boot "$ov" 'root qsup-root keep\n' -- sh -c 'df -k / | tail -1'
	kb=$(awk 'NR == 2 { print $2 }' <<<"$OUT")
	[ "${kb:-0}" -lt 70000 ] || fail "keep grew the root: ${kb:-?} KiB"
}

test_grow_mbr_and_whole_disk() {
	local ov=$T_TMP/ov.qcow2 kb what
	for what in mbr whole; do
		mkimage "$IMG/$what.raw" "marker-$what" "$what"
		overlay "$IMG/$what.raw" "$ov" 200M
		boot "$ov" 'root qsup-root grow\n' -- sh -c \
		    'cat /marker; df -k / | tail -1'
		expect_eq "$what: exit status" 0 "$RC"
		expect_match "$what: marker" "^marker-$what\$" "$OUT"
		kb=$(awk 'NR == 3 { print $2 }' <<<"$OUT")
		[ "${kb:-0}" -gt 150000 ] ||
		    fail "$what: root not grown: ${kb:-?} KiB: $OUT"
	done
	expect_match "whole disk" '"root":"/dev/vda"' "$SETUP"
}

# A template booted on one overlay, restored on another of a different
# base: the restored guest mounts its own, never what the template cached.
test_restored_guest_mounts_its_own_overlay() {
	local a=$IMG/debian.raw b=$IMG/ubuntu.raw ov=$T_TMP/ov.qcow2 st=$T_TMP/state
	local kb
	[ -f "$a" ] || mkimage "$a" marker-debian debian
	[ -f "$b" ] || mkimage "$b" marker-ubuntu ubuntu
	overlay "$a" "$ov"
	boot "$ov" '' --save "$st"
	expect_eq "template saved" 0 "$RC"
	overlay "$b" "$ov"
	boot "$ov" 'root qsup-root keep\n' --restore "$st" -- cat /marker
	expect_eq "exit status" 0 "$RC"
	expect_match "its own overlay" '^marker-ubuntu$' "$OUT"

	# A bigger overlay: the restored kernel knows the template's size
	# until the host resizes the disk; told the size, the agent says so.
	overlay "$a" "$ov" 300M
	boot "$ov" 'root qsup-root grow 314572800\n' --restore "$st" -- true
	expect_eq "stale size: exit status" 3 "$RC"
	expect_match "stale size: named" '/dev/vda is 67108864 bytes, the host says 314572800' \
	    "$SETUP"
	overlay "$a" "$ov" 300M
	boot "$ov" 'root qsup-root grow 314572800\n' --restore "$st" \
	    --resize 314572800 -- sh -c 'df -k / | tail -1'
	expect_eq "after block_resize: exit status" 0 "$RC"
	kb=$(awk 'NR == 2 { print $2 }' <<<"$OUT")
	[ "${kb:-0}" -gt 250000 ] || fail "restored root not grown: ${kb:-?} KiB"
	rm -f "$st"
}

# A cold boot: the root line on the seed ISO, applied before the ports.
test_cold_boot_from_the_seed() {
	local ov=$T_TMP/ov.qcow2 kb
	[ -f "$IMG/debian.raw" ] || mkimage "$IMG/debian.raw" marker-debian debian
	overlay "$IMG/debian.raw" "$ov" 300M
	boot "$ov" 'root qsup-root grow 314572800\n' --cold -- sh -c \
	    'cat /marker; df -k / | tail -1'
	expect_eq "exit status" 0 "$RC"
	expect_match "ping" '^setup 200 .*"root":"/dev/vda1"' "$SETUP"
	expect_match "marker" '^marker-debian$' "$OUT"
	kb=$(awk 'NR == 3 { print $2 }' <<<"$OUT")
	[ "${kb:-0}" -gt 250000 ] || fail "root not grown: ${kb:-?} KiB: $OUT"
}

# Booted without qsup.root=1: ext4 is loaded when the config asks.
test_root_modules_load_when_asked() {
	local ov=$T_TMP/ov.qcow2
	[ -f "$IMG/debian.raw" ] || mkimage "$IMG/debian.raw" marker-debian debian
	overlay "$IMG/debian.raw" "$ov"
	boot "$ov" 'root qsup-root keep\n' --no-root-word -- cat /marker
	expect_eq "exit status" 0 "$RC"
	expect_match "marker" '^marker-debian$' "$OUT"
}

test_setup_errors_say_what_was_seen() {
	local ov=$T_TMP/ov.qcow2
	[ -f "$IMG/debian.raw" ] || mkimage "$IMG/debian.raw" marker-debian debian
	overlay "$IMG/debian.raw" "$ov"
	boot "$ov" 'root other-disk keep\n' --setup-only
	expect_eq "no such disk: status" 3 "$RC"
	expect_match "no such disk" '^setup 503 .*no virtio disk with serial other-disk \(seen: vda \(serial \\"qsup-root\\"\)\)' \
	    "$SETUP"
	mkimage "$IMG/esp.raw" none esp-only
	overlay "$IMG/esp.raw" "$ov"
	boot "$ov" 'root qsup-root grow\n' --setup-only
	expect_eq "no root: status" 3 "$RC"
	expect_match "no root" 'no root file system found: GPT: 15 \(EFI system\): no ext4 root file system' \
	    "$SETUP"
}

# With names given, only those tests run.
for t in ${*:-test_debian_layout_becomes_the_root \
    test_ubuntu_layout_root_by_type_not_boot \
    test_grow_fills_an_enlarged_gpt_disk test_grow_mbr_and_whole_disk \
    test_restored_guest_mounts_its_own_overlay test_cold_boot_from_the_seed \
    test_root_modules_load_when_asked test_setup_errors_say_what_was_seen}; do
	run_test "$t"
done
finish
