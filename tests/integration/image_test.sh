#!/usr/bin/env bash
# Disk images: a real Debian 12 image built from Debian's packages
# (tests/images/debian.sh, cached under build/images/), booted on qsup's
# own kernel with the agent switching to its root, on a fresh overlay each
# run; the base never written.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

debian_image
IMG_SUM=$(sha256sum "$IMG" | cut -d' ' -f1)

# The base's bytes, after every test.
expect_base_unchanged() {
	expect_eq "the base image's digest" "$IMG_SUM" \
	    "$(sha256sum "$IMG" | cut -d' ' -f1)"
}

cold() {
	"$QSUP" run --set image="$IMG" --set warm_start=false "$@"
}

test_debian_userland() {
	local out err=$T_TMP/err
	out=$(cold --json -- sh -c '. /etc/os-release; echo "$VERSION_CODENAME"; python3 -c "import sys; print(sys.version_info[:2])"; apt-get --version | head -n 1; cat /proc/1/comm; id -u' 2>"$err")
	expect_eq "exit" 0 $?
	expect_match "Debian's own codename" '^bookworm$' "$(sed -n 1p <<<"$out")"
	expect_eq "the image's python3" "(3, 11)" "$(sed -n 2p <<<"$out")"
	expect_match "the image's apt" '^apt 2\.6' "$(sed -n 3p <<<"$out")"
	# PID 1 is still qsup's agent, not the image's init.
	expect_eq "PID 1" "init" "$(sed -n 4p <<<"$out")"
	expect_eq "root in the guest" 0 "$(sed -n 5p <<<"$out")"
	expect_match "base_image_untouched" \
	    "\"base_image_untouched\":\\{\"path\":\"$IMG\",\"untouched\":true,\"format\":\"qcow2\"" \
	    "$(tail -n 1 "$err")"
	expect_base_unchanged
}

test_write_is_gone_next_time() {
	local out
	cold -- sh -c 'echo scribble >/etc/qsup-marker; rm -f /usr/bin/apt-get; sync' ||
	    fail "the writing run failed"
	out=$(cold -- sh -c 'cat /etc/qsup-marker 2>&1; ls /usr/bin/apt-get')
	expect_match "a fresh overlay" "No such file.*
/usr/bin/apt-get" "$out"
	expect_base_unchanged
}

# One template serves every overlay of the base; a restored guest mounts
# its own overlay, never the one the template was taken with.
test_warm_mounts_its_own_overlay() {
	local out err=$T_TMP/err
	fresh_cache warm_own
	"$QSUP" run --json --set image="$IMG" -- sh -c 'echo one >/root/run' 2>"$err" ||
	    fail "the first run failed"
	expect_eq "the first run builds" '"template-build"' "$(json_field start "$err")"
	out=$("$QSUP" run --json --set image="$IMG" -- sh -c 'cat /root/run 2>&1; echo two >/root/run; cat /root/run; . /etc/os-release; echo $ID' 2>"$err")
	expect_eq "the second run restores" '"warm"' "$(json_field start "$err")"
	expect_match "its own overlay" "No such file.*
two
debian" "$out"
	out=$("$QSUP" run --set image="$IMG" -- sh -c 'cat /root/run 2>&1 || true')
	expect_match "and again" "No such file" "$out"
	# The built-in guest has a template of its own.
	out=$("$QSUP" run --json -- sh -c 'test -e /etc/os-release && echo image || echo builtin' 2>"$err")
	expect_eq "the built-in guest is not the image" builtin "$out"
	expect_eq "... and builds its own template" '"template-build"' "$(json_field start "$err")"
	expect_base_unchanged
}

# The format comes from the header, never from the name.
test_raw_detected_by_header() {
	local raw=$T_TMP/disk.qcow2 out
	qemu-img convert -f qcow2 -O raw "$IMG" "$raw"
	out=$("$QSUP" run --json --set image="$raw" --set warm_start=false -- cat /etc/debian_version 2>"$T_TMP/err")
	expect_match "a raw image named .qcow2 boots" '^12' "$out"
	expect_match "reported raw" '"format":"raw"' "$(tail -n 1 "$T_TMP/err")"
	rm -f "$raw"
}

# A qcow2 whose header names a backing file could point QEMU at any file of
# this host: refused, with nothing left behind.
test_backing_file_refused() {
	local top=$T_TMP/top.qcow2 out
	qemu-img create -q -f qcow2 -b "$IMG" -F qcow2 "$top"
	out=$("$QSUP" run --set image="$top" --set warm_start=false -- true 2>&1; echo "status $?")
	expect_match "refused" "image $top: a qcow2 image with a backing file of its own" "$out"
	expect_match "exit 125" "status 125$" "$out"
	rm -f "$top"
}

test_not_an_image() {
	local f=$T_TMP/odd.img out
	head -c 1000 /dev/urandom >"$f"
	out=$(cold --set image="$f" -- true 2>&1; echo "status $?")
	expect_match "named" "image $f: a raw image must be a whole number of 512-byte sectors" "$out"
	expect_match "exit 125" "status 125$" "$out"
	printf 'KDMV' | dd of="$f" conv=notrunc status=none
	out=$(cold --set image="$f" -- true 2>&1)
	expect_match "VMDK by its magic" "a VMDK image; qsup runs raw and qcow2" "$out"
	rm -f "$f"
}

# A disk with no file system the agent can use as a root: a setup error
# that says what was there.
test_no_root_file_system() {
	local f=$T_TMP/blank.raw out
	truncate -s 64M "$f"
	out=$(cold --set image="$f" -- true 2>&1; echo "status $?")
	expect_match "a setup error" "guest setup failed.*root" "$out"
	expect_match "exit 125" "status 125$" "$out"
	rm -f "$f"
}

test_disk_size_grows_the_root() {
	local out
	out=$(cold --set disk_size=2G -- sh -c 'df -k / | tail -n 1')
	expect_eq "exit" 0 $?
	# 2 GiB less the 12 MiB before the root and ext4's own overhead.
	local kb
	kb=$(awk '{print $2}' <<<"$out")
	[ -n "$kb" ] && [ "$kb" -gt 1800000 ] ||
	    fail "the root is $kb KiB after disk_size=2G: $out"
	out=$(cold -- sh -c 'df -k / | tail -n 1')
	kb=$(awk '{print $2}' <<<"$out")
	[ -n "$kb" ] && [ "$kb" -lt 600000 ] ||
	    fail "without disk_size the root is $kb KiB: $out"
	out=$(cold --set disk_size=64M -- true 2>&1; echo "status $?")
	expect_match "smaller than the image" "disk_size .* is smaller than the image" "$out"
	expect_base_unchanged
}

test_shares_env_cwd_status() {
	local dir=$T_TMP/share out
	mkdir -p "$dir"
	echo hello-from-host >"$dir/file"
	out=$(cold --share "$dir:/mnt/host:rw" -e GREETING=hi -w /mnt/host -- sh -c 'cat file; echo "$GREETING"; pwd; echo back >reply; exit 7')
	expect_eq "status passes through" 7 $?
	expect_eq "share, env and cwd inside the image" "hello-from-host
hi
/mnt/host" "$out"
	expect_eq "a write through the share" back "$(cat "$dir/reply")"
}

test_timeout_and_network_off() {
	local out
	out=$(cold --timeout 3 -- sh -c 'sleep 60')
	expect_eq "--timeout" 124 $?
	out=$(cold -- python3 -c 'import socket
try:
    socket.create_connection(("10.0.2.2", 80), timeout=3); print("reached")
except OSError as e: print("refused", type(e).__name__)')
	expect_match "no network by default" "^refused" "$out"
}

# While a sandbox runs, its run directory says which base it uses (qsup
# image rm and ls read it).
test_run_dir_names_the_base() {
	local pid f i out copy=$T_TMP/copy.qcow2
	# A copy: were the lock missing, the resize below would change it.
	cp "$IMG" "$copy"
	"$QSUP" run --set image="$copy" --set warm_start=false -- sleep 30 &
	pid=$!
	for i in $(seq 1 300); do
		f=$(ls "$XDG_RUNTIME_DIR"/qsup/sb-*/image 2>/dev/null | head -n 1)
		[ -n "$f" ] && break
		sleep 0.1
	done
	[ -n "$f" ] || fail "no image file in the run directory"
	[ -z "$f" ] || expect_eq "the base's real path" "$copy" "$(cat "$f")"
	# QEMU's own image locking is on: nothing may write the base now.
	for i in $(seq 1 100); do
		pgrep -f "qemu-system.*$XDG_RUNTIME_DIR" >/dev/null && break
		sleep 0.1
	done
	sleep 1
	out=$(qemu-img resize -f qcow2 "$copy" +1M 2>&1)
	expect_match "QEMU holds the base's lock" 'lock' "$out"
	kill -TERM $pid
	wait $pid
	rm -f "$copy"
}

# By URL: pulled from a real HTTP server on 127.0.0.1 into images_dir,
# verified against the SHA256SUMS beside it, then booted; the next run
# uses the cached copy without a request.
test_run_pulls_by_url() {
	local www=$T_TMP/www log=$T_TMP/httpd.log pf=$T_TMP/port srv out url
	mkdir -p "$www/debian"
	cp "$IMG" "$www/debian/debian-12.qcow2"
	echo "$IMG_SUM  debian-12.qcow2" >"$www/debian/SHA256SUMS"
	: >"$log"
	/usr/bin/python3 tests/integration/helpers/httpd.py "$www" "$pf" "$log" \
	    </dev/null >/dev/null 2>&1 &
	srv=$!
	for _ in $(seq 100); do [ -s "$pf" ] && break; sleep 0.1; done
	url=http://127.0.0.1:$(cat "$pf")/debian/debian-12.qcow2
	export XDG_DATA_HOME=$T_TMP/data
	out=$("$QSUP" run --json --set image="$url" --set warm_start=false -- cat /etc/debian_version 2>"$T_TMP/err")
	expect_match "pulled, verified, booted" '^12' "$out"
	expect_match "the base is the pulled copy" \
	    "\"path\":\"$XDG_DATA_HOME/qsup/images/debian-12.qcow2\",\"untouched\":true" \
	    "$(tail -n 1 "$T_TMP/err")"
	expect_eq "the copy's digest" "$IMG_SUM" \
	    "$(sha256sum "$XDG_DATA_HOME/qsup/images/debian-12.qcow2" | cut -d' ' -f1)"
	local n
	n=$(grep -c "debian-12.qcow2 " "$log")
	out=$("$QSUP" run --set image="$url" --set warm_start=false -- cat /etc/debian_version)
	expect_match "the cached copy" '^12' "$out"
	expect_eq "no second download" "$n" "$(grep -c "debian-12.qcow2 " "$log")"
	# While a sandbox runs on it, qsup image rm refuses and names it.
	local pid i by
	"$QSUP" run --set image="$url" --set warm_start=false -- sleep 30 &
	pid=$!
	for i in $(seq 1 300); do
		by=$(ls -d "$XDG_RUNTIME_DIR"/qsup/sb-* 2>/dev/null | head -n 1)
		[ -n "$by" ] && [ -f "$by/image" ] && break
		sleep 0.1
	done
	out=$("$QSUP" image rm debian-12.qcow2 2>&1; echo "status $?")
	expect_match "rm refused" "debian-12.qcow2 is in use by sandbox .*${by##*/}.*
status 125" "$out"
	[ -f "$XDG_DATA_HOME/qsup/images/debian-12.qcow2" ] ||
	    fail "the image in use was removed"
	kill -TERM $pid; wait $pid
	out=$("$QSUP" image rm debian-12.qcow2 2>&1; echo "status $?")
	expect_match "removed once free" "status 0" "$out"
	[ ! -e "$XDG_DATA_HOME/qsup/images/debian-12.qcow2" ] ||
	    fail "not removed once no sandbox used it"
	kill $srv; wait $srv 2>/dev/null
	rm -rf "$XDG_DATA_HOME"
	unset XDG_DATA_HOME
}

# An image whose glibc is newer than the host's, with the host's library
# directory shared over the image's: its programs would fail on the
# host's older C library, so the sandbox is refused, naming both.
test_newer_glibc_refused_under_host_libs() {
	local tree=$T_TMP/tree f=$T_TMP/newer.raw triplet out
	triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
	mkdir -p "$tree/lib/$triplet" "$tree/etc"
	printf 'GNU C Library (Debian GLIBC 2.99-1) stable release version 2.99.\n' \
	    >"$tree/lib/$triplet/libc.so.6"
	truncate -s 32M "$f"
	mke2fs -q -t ext4 -d "$tree" "$f"
	out=$(cold --set image="$f" --share "/lib/$triplet" -- true 2>&1; echo "status $?")
	expect_match "refused" "the image's glibc is 2\.99 and the host's is 2\.[0-9]+" "$out"
	expect_match "exit 125" "status 125$" "$out"
	rm -rf "$f" "$tree"
}

# Two sandboxes on one base at once: QEMU's shared read lock lets both
# open it, and each writes only its own overlay.
test_two_at_once_on_one_base() {
	local a b
	cold -- sh -c 'echo a >/root/x; sleep 4; cat /root/x' >"$T_TMP/a" &
	a=$!
	cold -- sh -c 'sleep 2; cat /root/x 2>&1; echo b >/root/x; cat /root/x' >"$T_TMP/b"
	b=$?
	wait $a
	expect_eq "the first, both exit" "0 0" "$? $b"
	expect_eq "the first sees its own" a "$(cat "$T_TMP/a")"
	expect_match "the second never sees the first's" "No such file.*
b" "$(cat "$T_TMP/b")"
	expect_base_unchanged
}

for t in test_two_at_once_on_one_base test_newer_glibc_refused_under_host_libs test_run_pulls_by_url test_debian_userland test_write_is_gone_next_time \
    test_warm_mounts_its_own_overlay test_raw_detected_by_header \
    test_backing_file_refused test_not_an_image test_no_root_file_system \
    test_disk_size_grows_the_root test_shares_env_cwd_status \
    test_timeout_and_network_off test_run_dir_names_the_base; do
	run_test "$t"
done
finish
