#!/usr/bin/env bash
# Copy-on-write shares (mode = "cow"): the guest may write anything in the
# tree, its writes live on the sandbox's own disk and vanish with it, and
# the host tree stays byte-, mode- and mtime-identical; a full upper layer
# is ENOSPC, promptly; on the built-in guest, a Debian image, an image
# that boots itself, in qsup serve, and restored warm.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

IMG=$PWD/build/images/debian-12.qcow2
CLOUD=$PWD/build/images/cloud.qcow2

# Every entry under a tree: type, size, mode, mtime, link target; then the
# digest of every file. What "unchanged" means here.
fingerprint() {
	(cd "$1" && find . -printf '%p %y %s %m %T@ %l\n' | sort &&
	    find . -type f -exec sha256sum {} + | sort)
}

# A tree with something of every kind, its times in the past (so a write
# that put "now" in would show).
make_tree() {
	local t=$1
	mkdir -p "$t/dir/deep" "$t/empty" "$t/gone"
	printf 'original\n' >"$t/file"
	printf 'keep\n' >"$t/dir/deep/f"
	printf 'to remove\n' >"$t/gone/x"
	printf 'mode\n' >"$t/mode"
	printf '0123456789\n' >"$t/trunc"
	head -c 4194304 /dev/urandom >"$t/mid"
	ln -s file "$t/link"
	chmod 640 "$t/file"
	chmod 600 "$t/mode"
	chmod 750 "$t/dir"
	find "$t" -exec touch -h -d '2020-02-02 02:02:02' {} +
}

# What the guest does to a tree at /src, every kind of write, then what it
# sees of it (one line per check).
WRITES='
set -e
cd /src
echo new >created
echo more >>file
printf x | dd of=mid bs=1 seek=100 conv=notrunc 2>/dev/null
rm gone/x; rmdir gone
mv dir moved
mv created renamed
chmod 755 mode
truncate -s 3 trunc
mkdir newdir; mkdir newdir/sub; rmdir newdir/sub
ln -s renamed newlink
rm link
ln renamed hard
touch -d 2001-01-01 moved/deep/f
cat file renamed trunc; echo
ls -A | tr "\n" " "; echo
stat -c "%a" mode
readlink newlink
ls moved/deep
'
WANT='original
more
new
012
empty file hard mid mode moved newdir newlink renamed trunc 
755
renamed
f'

test_every_write_stays_in_the_sandbox() {
	local t=$T_TMP/tree before out
	make_tree "$t"
	before=$(fingerprint "$t")
	out=$("$QSUP" run --share "$t:/src:cow" -- sh -c "$WRITES" 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "what the guest sees after its writes" "$WANT" "$out"
	expect_eq "host tree unchanged (content, modes, mtimes, links)" \
	    "$before" "$(fingerprint "$t")"
	# The next sandbox sees the host's tree, not the last one's writes.
	out=$("$QSUP" run --share "$t:/src:cow" -- sh -c \
	    'cd /src; ls -A | tr "\n" " "; cat file; stat -c %a mode')
	expect_eq "writes gone with the sandbox" "dir empty file gone link mid mode trunc original
600" "$out"
}

# The overlay's root looks like the host directory (owner, mode), and the
# layers under it are out of sight.
test_root_and_layers() {
	local t=$T_TMP/root out
	mkdir -p "$t"
	chmod 711 "$t"
	out=$("$QSUP" run --share "$t:/src:cow" -- sh -c \
	    'stat -c %a /src; grep -c "^qsup0 " /proc/mounts; ls /run/qsup-cow/disk')
	expect_eq "root mode, no layer mounted elsewhere" "711
0" "$out"
}

# Big writes go to the cow disk (not the guest's memory): 150 MB written
# with 512 MiB of RAM, read back whole, and counted on the disk.
test_big_file_through() {
	local t=$T_TMP/big out before
	mkdir -p "$t"
	head -c 1048576 /dev/urandom >"$t/seed"
	before=$(fingerprint "$t")
	out=$("$QSUP" run --share "$t:/src:cow" -- sh -c '
	    for i in $(seq 150); do cat /src/seed; done >/src/big
	    sync; echo 3 >/proc/sys/vm/drop_caches
	    ls -l /src/big | awk "{print \$5}"
	    a=$(for i in $(seq 150); do cat /src/seed; done | md5sum)
	    b=$(md5sum </src/big)
	    [ "$a" = "$b" ] && echo same
	    df -k /src | awk "NR == 2 {print (\$3 >= 150000)}"' 2>&1)
	expect_eq "150 MB written, read back, on the disk" "157286400
same
1" "$out"
	expect_eq "host tree unchanged" "$before" "$(fingerprint "$t")"
}

# A full upper layer is ENOSPC to the writer, quickly, and the sandbox
# goes on answering (and writing, once there is room again).
test_full_upper_is_enospc() {
	local t=$T_TMP/full out t0
	mkdir -p "$t"
	t0=$SECONDS
	out=$("$QSUP" run --timeout 120 --set cow_size=32M \
	    --share "$t:/src:cow" -- sh -c '
	    dd if=/dev/zero of=/src/fill bs=1M count=64 2>&1 | grep -o "No space left on device" | head -n 1
	    echo status $?
	    rm /src/fill; echo again >/src/after; cat /src/after' 2>&1)
	expect_eq "ENOSPC, then room again" "No space left on device
status 0
again" "$out"
	[ $((SECONDS - t0)) -lt 60 ] ||
	    fail "a full upper layer took $((SECONDS - t0)) s"
	[ -z "$(ls -A "$t")" ] || fail "something reached the host: $(ls -A "$t")"
	out=$("$QSUP" run --set cow_size=32M --share "$t:/src:cow" -- echo alive)
	expect_eq "the next sandbox starts" alive "$out"
}

# The cow disk on the host is a file of cow_size bytes, no more, however
# much the guest tries to write, and it goes with the sandbox.
test_cow_disk_is_bounded() {
	local t=$T_TMP/bound pid img i out=$T_TMP/bound.out
	mkdir -p "$t"
	"$QSUP" run --set cow_size=32M --share "$t:/src:cow" -- sh -c '
	    dd if=/dev/urandom of=/src/fill bs=1M count=64 2>/dev/null
	    sync; echo filled; sleep 60' >"$out" 2>&1 &
	pid=$!
	for i in $(seq 600); do
		grep -q filled "$out" && break
		sleep 0.1
	done
	img=$(ls "$T_RUN"/qsup/sb-*/cow.img)
	expect_eq "the disk's size" 33554432 "$(stat -c %s "$img")"
	[ $(($(stat -c %b "$img") * $(stat -c %B "$img"))) -le 33554432 ] ||
	    fail "$img takes more than 32M on the host"
	kill -TERM "$pid"
	wait "$pid"
	[ ! -e "$img" ] || fail "$img left behind"
}

# A profile's cow share; one on a missing tree is an error naming its
# line, in a profile and from --share.
test_profile_and_errors() {
	local t=$T_TMP/prof out prof=$T_TMP/cow.lua
	mkdir -p "$t"
	echo host >"$t/f"
	printf 'return {\n\tshares = {\n\t\t{ host = "%s", guest = "/w", mode = "cow" },\n\t},\n}\n' \
	    "$t" >"$prof"
	out=$("$QSUP" run --profile "$prof" -w /w -- sh -c 'echo g >f; cat f')
	expect_eq "profile share written" g "$out"
	expect_eq "host file kept" host "$(cat "$t/f")"
	out=$("$QSUP" profile show "$prof" 2>&1 | grep 'shares =')
	expect_match "shown as cow" 'mode = "cow"' "$out"
	printf 'return {\n\tshares = {\n\t\t{ host = "%s/none", mode = "cow" },\n\t},\n}\n' \
	    "$t" >"$prof"
	out=$("$QSUP" run --profile "$prof" -- true 2>&1)
	expect_match "missing tree, profile" \
	    "cow.lua:3: shares\[1\].host: $t/none: No such file or directory" "$out"
	out=$("$QSUP" run --share "$t/none:/x:cow" -- true 2>&1)
	expect_match "missing tree, --share" "share $t/none: No such file" "$out"
	out=$("$QSUP" run --set cow_size=1M --share "$t:/x:cow" -- true 2>&1)
	expect_match "too small" 'cow_size: .*16M' "$out"
}

# ignore globs show the tree through a hard-linked copy: a write through
# the overlay must not reach the host file the link shares.
test_ignore_through_hard_links() {
	local t=$T_TMP/ign out prof=$T_TMP/ign.lua
	mkdir -p "$t"
	echo host >"$t/a"
	echo key >"$t/k.pem"
	printf 'return { shares = { { host = "%s", guest = "/w", mode = "cow", ignore = { "*.pem" } } } }\n' \
	    "$t" >"$prof"
	out=$("$QSUP" run --profile "$prof" -- sh -c \
	    'ls /w; echo guest >/w/a; echo more >>/w/a; cat /w/a')
	expect_eq "ignored, written" "a
guest
more" "$out"
	expect_eq "the host file (linked in the copy) kept" host "$(cat "$t/a")"
}

# Warm start: the second run restores the template the first made, and
# its cow share works as on a cold boot.
test_warm_start() {
	local t=$T_TMP/warm-tree out err=$T_TMP/warm.err
	fresh_cache warm
	mkdir -p "$t"
	echo host >"$t/f"
	"$QSUP" run --share "$t:/src:cow" -- true
	out=$("$QSUP" run -v --share "$t:/src:cow" -- sh -c \
	    'echo guest >/src/f; cat /src/f' 2>"$err")
	expect_eq "written after a restore" guest "$out"
	expect_match "restored" 'restoring it' "$(cat "$err")"
	expect_match "warm" 'guest ready in .*warm start' "$(cat "$err")"
	expect_eq "host file kept" host "$(cat "$t/f")"
	# Another size is another template (the guest knows its disk's size).
	out=$("$QSUP" run -v --set cow_size=64M --share "$t:/src:cow" -- \
	    sh -c 'df -k /src | awk "NR == 2 {print (\$2 < 70000)}"' 2>"$err")
	expect_eq "64M disk seen" 1 "$out"
	expect_match "a template of its own" 'building it' "$(cat "$err")"
}

test_debian_image() {
	local t=$T_TMP/img before out
	bash tests/images/debian.sh "$IMG" >"$T_TMP/debian.log" 2>&1 ||
	    { fail "cannot build $IMG: $(tail -3 "$T_TMP/debian.log")"; return; }
	make_tree "$t"
	before=$(fingerprint "$t")
	out=$("$QSUP" run --set image="$IMG" --share "$t:/src:cow" -- \
	    sh -c "$WRITES" 2>&1)
	expect_eq "what the guest sees after its writes" "$WANT" "$out"
	expect_eq "host tree unchanged" "$before" "$(fingerprint "$t")"
	out=$("$QSUP" run --set image="$IMG" --share "$t:/src:cow" -- \
	    sh -c 'cat /src/file; ls /src | wc -l')
	expect_eq "a restored image's share, fresh" "original
8" "$out"
}

# The image's own kernel and init (cloud-init starts the agent): the
# first run boots it (a minute or two under TCG) and saves the template,
# the second restores it; both write through the share.
test_boot_image() {
	local t=$T_TMP/cloud-tree before out err=$T_TMP/cloud.err
	bash tests/images/cloud.sh "$CLOUD" >"$T_TMP/cloud.log" 2>&1 ||
	    { fail "cannot build $CLOUD: $(tail -3 "$T_TMP/cloud.log")"; return; }
	fresh_cache cloud
	make_tree "$t"
	before=$(fingerprint "$t")
	out=$("$QSUP" run --set boot=image --set image="$CLOUD" \
	    --share "$t:/src:cow" -- sh -c "$WRITES" 2>"$err")
	expect_eq "exit" 0 $?
	expect_eq "what the guest sees after its writes" "$WANT" "$out"
	out=$("$QSUP" run -v --set boot=image --set image="$CLOUD" \
	    --share "$t:/src:cow" -- sh -c "$WRITES" 2>"$err")
	expect_eq "restored: the same, from the host's tree" "$WANT" "$out"
	expect_match "restored" 'guest ready in .*warm start' "$(cat "$err")"
	expect_eq "host tree unchanged" "$before" "$(fingerprint "$t")"
}

test_serve() {
	local S=$T_TMP/serve t=$T_TMP/srv before code
	mkdir -p "$S" "$t"
	echo host >"$t/f"
	before=$(fingerprint "$t")
	printf 'return { shares = { { host = "%s", guest = "/w", mode = "cow" } } }\n' \
	    "$t" >"$S/cow.lua"
	serve_launch "$S/s.sock" "$S/token" "$S/serve.log" ||
	    { fail "the server did not come up: $(cat "$S/serve.log")"; return; }
	for sb in a b; do
		code=$(curl -sS --unix-socket "$S/s.sock" -o "$S/body" \
		    -w '%{http_code}' -H "Authorization: Bearer $(cat "$S/token")" \
		    -d "{\"name\":\"$sb\",\"profile\":\"$S/cow.lua\"}" \
		    http://qsup/v1/sandboxes)
		expect_eq "create $sb" 201 "$code"
	done
	curl -sS -N --unix-socket "$S/s.sock" \
	    -H "Authorization: Bearer $(cat "$S/token")" \
	    -d '{"argv":["sh","-c","echo a >/w/f; echo n >/w/new; cat /w/f"]}' \
	    http://qsup/v1/sandboxes/a/exec >"$S/stream"
	python3 tests/integration/helpers/sse.py "$S/stream" --out "$S/out" \
	    --err "$S/err" >/dev/null
	expect_eq "a wrote its share" a "$(cat "$S/out")"
	curl -sS -N --unix-socket "$S/s.sock" \
	    -H "Authorization: Bearer $(cat "$S/token")" \
	    -d '{"argv":["sh","-c","cat /w/f; ls /w"]}' \
	    http://qsup/v1/sandboxes/b/exec >"$S/stream"
	python3 tests/integration/helpers/sse.py "$S/stream" --out "$S/out" \
	    --err "$S/err" >/dev/null
	expect_eq "b sees the host's tree" "host
f" "$(cat "$S/out")"
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
	expect_eq "host tree unchanged" "$before" "$(fingerprint "$t")"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
