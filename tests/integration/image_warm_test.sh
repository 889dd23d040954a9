#!/usr/bin/env bash
# Warm starts of a disk image: the template is taken with the image's root
# mounted (the agent mounts it before the save, POST /root), so the build's
# overlay is kept with the template (KEY.disk) and every restore's own
# overlay goes over it, the base below both. Checked here from the host's
# side: the base and the template's disk are never written, two runs of one
# template never see each other's files, the file system a warm run leaves
# is whole (e2fsck), and an image changed since its template (even keeping
# its size and mtime) gets a template of its own.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

debian_image
IMG_SUM=$(sha256sum "$IMG" | cut -d' ' -f1)
# Where the test image's root partition starts (tests/images/lib.sh).
ROOT_OFF_MIB=12

expect_base_unchanged() {
	expect_eq "the base image's digest" "$IMG_SUM" \
	    "$(sha256sum "$IMG" | cut -d' ' -f1)"
}

warm() {
	"$QSUP" run --json --set image="$IMG" "$@"
}

# The one template's disk in $TPL.
tpl_disk() {
	local d
	d=$(ls "$TPL"/*.disk 2>/dev/null)
	[ "$(wc -w <<<"$d")" = 1 ] || { echo "none or several: $d"; return 1; }
	echo "$d"
}

test_runs_of_one_template_are_apart() {
	local err=$T_TMP/err out disk dsum
	fresh_cache apart
	warm -- true 2>"$err" || fail "the build failed: $(tail -n 3 "$err")"
	expect_eq "the first run builds" '"template-build"' "$(json_field start "$err")"
	disk=$(tpl_disk) || { fail "the template's disk: $disk"; return; }
	# The build's overlay, over the base, checked and never written again.
	out=$(qemu-img info -U --output=json "$disk")
	expect_match "the template's disk is over the base" "\"backing-filename\": \"$IMG\"" "$out"
	expect_match "... and is qcow2" '"format": "qcow2"' "$out"
	out=$(qemu-img check -U "$disk" 2>&1)
	expect_match "qemu-img check of the template's disk" "No errors were found" "$out"
	dsum=$(sha256sum <"$disk")

	out=$(warm -- sh -c 'ls /root; echo one >/root/one; sync; awk "\$2 == \"/\" {print \$1, \$3}" /proc/mounts; cat /etc/hostname /etc/resolv.conf' 2>"$err")
	expect_eq "run 1 restores" '"warm"' "$(json_field start "$err")"
	expect_eq "run 1: its root, mounted by the template, and its files" \
	    "/dev/vda1 ext4
qsup
nameserver 10.0.2.3" "$out"
	out=$(warm -- sh -c 'cat /root/one 2>&1; echo two >/root/two; sync' 2>"$err")
	expect_eq "run 2 restores" '"warm"' "$(json_field start "$err")"
	expect_match "run 2 does not see run 1's file" "No such file" "$out"
	out=$(warm -- ls -A /root 2>"$err")
	expect_eq "run 3 sees neither" "" "$(grep -E '^(one|two)$' <<<"$out")"
	expect_eq "the template's disk was not written" "$dsum" "$(sha256sum <"$disk")"
	expect_base_unchanged
	expect_match "the base untouched, says qsup" '"untouched":true' "$(tail -n 1 "$err")"
}

# A warm run writes a tree and leaves its root read-only (clean on disk);
# the chain under its overlay (base, the template's disk, its own overlay)
# read by the host then holds a whole ext4 file system: what the restored
# guest had in its page cache matched the disk it wrote to.
test_warm_run_leaves_a_whole_file_system() {
	local err=$T_TMP/err out pid ov raw=$T_TMP/whole.raw fs=$T_TMP/whole.ext4 i rc
	fresh_cache whole
	warm -- true 2>"$err" || fail "the build failed: $(tail -n 3 "$err")"
	"$QSUP" run --set image="$IMG" -- sh -c 'cp -a /usr/lib/python3.11/email /root/tree && rm -rf /usr/share/doc && sync && mount -o remount,ro / && echo clean && sleep 60' >"$T_TMP/out" 2>"$err" &
	pid=$!
	for i in $(seq 1 600); do
		grep -q clean "$T_TMP/out" 2>/dev/null && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	expect_eq "the guest wrote and left its root read-only" clean "$(cat "$T_TMP/out")"
	ov=$(ls "$T_RUN"/qsup/sb-*/disk.qcow2 2>/dev/null | head -n 1)
	if [ -n "$ov" ]; then
		out=$(qemu-img info -U --backing-chain "$ov" 2>&1)
		expect_match "the run's overlay is over the template's disk" "backing file: $TPL/[0-9a-f]*\.disk" "$out"
		qemu-img convert -U -O raw "$ov" "$raw" ||
		    fail "qemu-img convert of the run's chain"
	else
		fail "no overlay in the run directory"
	fi
	# qsup itself: the run ends, QEMU and the run directory with it.
	kill -TERM "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	if [ -s "$raw" ]; then
		dd if="$raw" of="$fs" bs=1M skip="$ROOT_OFF_MIB" status=none
		out=$(/sbin/e2fsck -fn "$fs" 2>&1)
		rc=$?
		expect_eq "e2fsck of the run's root (exit 0: clean)" 0 "$rc"
		[ "$rc" = 0 ] || fail "e2fsck: $(tail -n 8 <<<"$out")"
		out=$(/sbin/debugfs -R 'ls -l /root/tree' "$fs" 2>/dev/null)
		expect_match "the tree the run wrote" "message.py" "$out"
	fi
	rm -f "$raw" "$fs"
	expect_base_unchanged
}

# An image rebuilt in place: a new template, never the old one's disk
# under the new image. The rebuild here keeps the size and the mtime, so
# only the inode and ctime tell it from the first.
test_changed_image_gets_its_own_template() {
	local err=$T_TMP/err out raw=$T_TMP/rb/img.raw new fs=$T_TMP/rb/fs
	fresh_cache rebuilt
	mkdir -p "$T_TMP/rb"
	qemu-img convert -O raw "$IMG" "$raw"
	"$QSUP" run --json --set image="$raw" -- true 2>"$err"
	expect_eq "the first image's build" '"template-build"' "$(json_field start "$err")"
	out=$("$QSUP" run --json --set image="$raw" -- sh -c 'cat /etc/qsup-rebuilt 2>&1' 2>"$err")
	expect_eq "restored" '"warm"' "$(json_field start "$err")"
	expect_match "the first image has no such file" "No such file" "$out"
	# The rebuild: one file more, written into a copy's ext4.
	new=$raw.new
	cp --sparse=always "$raw" "$new"
	dd if="$new" of="$fs" bs=1M skip="$ROOT_OFF_MIB" status=none
	echo rebuilt >"$T_TMP/rb/marker"
	/sbin/debugfs -w -R "write $T_TMP/rb/marker /etc/qsup-rebuilt" "$fs" >/dev/null 2>&1 ||
	    fail "debugfs write"
	dd if="$fs" of="$new" bs=1M seek="$ROOT_OFF_MIB" conv=notrunc,sparse status=none
	rm -f "$fs"
	touch -r "$raw" "$new"
	mv "$new" "$raw"
	out=$("$QSUP" run --json --set image="$raw" -- sh -c 'cat /etc/qsup-rebuilt 2>&1' 2>"$err")
	expect_eq "the rebuilt image gets a template of its own" '"template-build"' "$(json_field start "$err")"
	expect_eq "... and its file" rebuilt "$out"
	out=$("$QSUP" run --json --set image="$raw" -- sh -c 'cat /etc/qsup-rebuilt 2>&1' 2>"$err")
	expect_eq "restored again" '"warm"' "$(json_field start "$err")"
	expect_eq "... with the rebuilt image's file" rebuilt "$out"
	expect_eq "two templates, each with its disk" 2 "$(ls "$TPL"/*.disk | wc -l)"
	rm -rf "$T_TMP/rb"
}

# A template of a grown disk (disk_size) keeps the grown table and file
# system; a run restored from it has the room, and no second growth.
test_grown_root_in_the_template() {
	local err=$T_TMP/err out kb
	fresh_cache grown
	warm --set disk_size=1G -- true 2>"$err" || fail "the build failed: $(tail -n 3 "$err")"
	out=$(warm --set disk_size=1G -- sh -c 'df -k / | tail -n 1' 2>"$err")
	expect_eq "restored" '"warm"' "$(json_field start "$err")"
	kb=$(awk '{print $2}' <<<"$out")
	[ -n "$kb" ] && [ "$kb" -gt 900000 ] ||
	    fail "the root is $kb KiB after disk_size=1G: $out"
	expect_base_unchanged
}

for t in ${TESTS:-test_runs_of_one_template_are_apart \
    test_warm_run_leaves_a_whole_file_system \
    test_changed_image_gets_its_own_template \
    test_grown_root_in_the_template}; do
	run_test "$t"
done
finish
