#!/usr/bin/env bash
# boot = "image": a cloud image built from Debian's packages
# (tests/images/cloud.sh: GRUB, Debian's kernel, systemd, cloud-init;
# cached under build/images/) boots as a PC would, and cloud-init, from
# the NoCloud seed qsup writes, starts qsup's agent. Slow under TCG (about
# a minute a boot here), so each boot checks all it can.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

IMG=$PWD/build/images/cloud.qcow2
if ! bash tests/images/cloud.sh "$IMG"; then
	echo "cannot build the cloud test image (tests/images/cloud.sh)"
	echo "0 passed, 1 failed"
	exit 1
fi
IMG_SUM=$(sha256sum "$IMG" | cut -d' ' -f1)

# Cold unless a test says otherwise (test_warm_start).
image_run() {
	"$QSUP" run --set boot=image --set image="$IMG" "$@"
}

# The image's own kernel (its GRUB loaded it) and init; cloud-init ran the bootstrap (its own
# log says so); the agent serves as on the fast path: output both ways,
# the exit status, a share it mounted, the network card it set up; the
# progress on stderr; the console kept in console_log; the base unchanged.
test_image_boots_itself() {
	local out err=$T_TMP/err dir=$T_TMP/share log=$T_TMP/console.log
	mkdir -p "$dir"
	echo "from the host" >"$dir/hello"
	out=$(image_run --json --share "$dir:/mnt/host" \
	    --set console_log="$log" --set network=restricted -- sh -c '
	    uname -r; ls /boot | sed -n "s/^vmlinuz-//p"; cat /proc/1/comm
	    grep -c "Running module bootcmd" /var/log/cloud-init.log
	    cat /mnt/host/hello
	    cat /sys/class/net/eth0/operstate
	    cat /proc/cmdline
	    echo to-stderr >&2; exit 7' 2>"$err")
	expect_eq "CMD's exit status" 7 $?
	# The image's GRUB loaded the kernel from the image's /boot: GRUB's
	# linux command puts BOOT_IMAGE=PATH first on the command line, and
	# qsup's direct boot (-kernel) never does. Whether the release
	# differs from qsup's own guest kernel does not matter (both may come
	# from the same Debian package).
	expect_eq "the image's own kernel" "$(sed -n 2p <<<"$out")" \
	    "$(sed -n 1p <<<"$out")"
	expect_match "GRUB booted /boot/vmlinuz-$(sed -n 1p <<<"$out")" \
	    "^BOOT_IMAGE=/boot/vmlinuz-$(sed -n 1p <<<"$out") " \
	    "$(sed -n 7p <<<"$out")"
	expect_eq "PID 1 is the image's init" systemd "$(sed -n 3p <<<"$out")"
	expect_match "cloud-init ran bootcmd" '^[1-9]' "$(sed -n 4p <<<"$out")"
	expect_eq "the share, mounted by the agent" "from the host" \
	    "$(sed -n 5p <<<"$out")"
	expect_eq "the card is up" up "$(sed -n 6p <<<"$out")"
	expect_match "stderr" '^to-stderr$' "$(cat "$err")"
	expect_match "progress on stderr" \
	    'booting the image: cloud-init \([0-9]+ s\)' "$(cat "$err")"
	expect_match "the console log is kept" "Cloud-init v\\. .* running" \
	    "$(cat "$log" 2>&1)"
	expect_match "the bootstrap on the console" \
	    "qsup: cloud-init runs the bootstrap" "$(cat "$log" 2>&1)"
	expect_match "base_image_untouched" '"untouched":true' \
	    "$(tail -n 1 "$err")"
	expect_eq "the base image's digest" "$IMG_SUM" \
	    "$(sha256sum "$IMG" | cut -d' ' -f1)"
}

# show_boot_console: everything live on stderr, the bootstrap traced,
# cloud-init's log at debug level on the console.
test_verbose_boot_console() {
	local err=$T_TMP/err
	image_run --set show_boot_console=true -- true 2>"$err"
	expect_eq "exit" 0 $?
	expect_match "the kernel's lines, live" 'Linux version ' "$(cat "$err")"
	expect_match "the bootstrap, traced" \
	    '\+ echo .?qsup: cloud-init runs the bootstrap' "$(cat "$err")"
	expect_match "cloud-init at debug level" '\[DEBUG\]' "$(cat "$err")"
}

# A share the agent cannot mount is fatal: the sandbox does not start,
# whether the agent read the seed (cold) or got /setup (restored).
test_mount_failure_is_fatal() {
	local err=$T_TMP/err dir=$T_TMP/share warm rc
	mkdir -p "$dir"
	for warm in false true; do
		image_run --set warm_start=$warm --share "$dir:/proc/qsup-cannot" \
		    -- echo ran >"$T_TMP/out" 2>"$err"
		rc=$?
		[ "$rc" -ne 0 ] ||
		    fail "warm_start=$warm: the sandbox started without its share"
		[ ! -s "$T_TMP/out" ] ||
		    fail "warm_start=$warm: CMD ran: $(cat "$T_TMP/out")"
		expect_match "warm_start=$warm: the mount is named" \
		    'mount .*/proc/qsup-cannot' "$(cat "$err")"
	done
}

# The first run builds a template once cloud-init has finished (its disk
# kept with it), the next restores it: cloud-init done, what the template's
# boot wrote there, nothing the first run's command wrote.
test_warm_start() {
	local out err=$T_TMP/err
	fresh_cache cloud_warm
	out=$(image_run --json -- sh -c 'cloud-init status; echo one >/root/mine' 2>"$err")
	expect_eq "exit" 0 $?
	expect_eq "the first run builds" '"template-build"' \
	    "$(json_field start "$err")"
	expect_eq "taken once cloud-init finished" "status: done" "$out"
	out=$(image_run --json -- sh -c 'cloud-init status; cat /root/mine 2>&1; cat /proc/1/comm' 2>"$err")
	expect_eq "exit" 0 $?
	expect_eq "the next run restores" '"warm"' "$(json_field start "$err")"
	expect_eq "cloud-init, done before the save" "status: done" \
	    "$(sed -n 1p <<<"$out")"
	expect_match "a fresh overlay over the template's disk" \
	    'No such file' "$(sed -n 2p <<<"$out")"
	expect_eq "the image's init" systemd "$(sed -n 3p <<<"$out")"
	ls "$XDG_CACHE_HOME"/qsup/templates/*.disk >/dev/null 2>&1 ||
	    fail "no template disk in the cache"
	expect_eq "the base image's digest" "$IMG_SUM" \
	    "$(sha256sum "$IMG" | cut -d' ' -f1)"
}

# What cannot work is refused before anything starts.
test_bad_settings() {
	local err
	err=$("$QSUP" run --set boot=image -- true 2>&1)
	expect_match "no image" 'boot: "image" boots the image.s own kernel, and image is nil' "$err"
	err=$("$QSUP" run --set boot=image --set image="$IMG" \
	    --set kernel=build/guest/vmlinux -- true 2>&1)
	expect_match "a kernel too" 'kernel: boot = "image" boots the image.s own kernel' "$err"
	err=$("$QSUP" run --set boot=uefi -- true 2>&1)
	expect_match "no such boot" 'boot' "$err"
	err=$("$QSUP" run --set console_log=/nonexistent/x.log -- true 2>&1)
	expect_match "console_log's directory" \
	    'console_log: /nonexistent: no such directory' "$err"
}

for t in test_warm_start; do
	run_test "$t"
done
finish
