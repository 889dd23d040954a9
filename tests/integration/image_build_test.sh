#!/usr/bin/env bash
# qsup image build, run as an unprivileged user (uid 65534 through setpriv
# when the test runs as root; the test's own user otherwise), from a
# tarball, an OCI layout of two layers and a directory, each booted on
# qsup's fast path to look at what the archive said: a set-uid root
# binary, a file of uid 1234, hard links, device nodes, the whiteouts, the
# OCI config's Env, WorkingDir and Entrypoint; each input again with a
# relative FROM and OUT from another directory. xattrs are looked at in the
# built file system with debugfs (the guest's busybox has no getfattr).
# Bad input: each a non-zero exit, a message naming the entry, and
# nothing left beside OUT. The archives are written entry by entry by
# helpers/mkrootfs.py from Debian's busybox-static, so their owners and
# device nodes need no privileges.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

HELPER=$PWD/tests/integration/helpers/mkrootfs.py
# A directory the builder may write in: T_TMP is root's alone.
IB=$(mktemp -d /tmp/qsup-image-build.XXXXXX)
trap 'rm -rf "$T_TMP" "$IB"' EXIT
chmod 755 "$IB"
cp "$QSUP" "$IB/qsup"
mkdir "$IB/out"
mkdir "$IB/tree"
if [ "$(id -u)" = 0 ]; then
	chown 65534:65534 "$IB/out" "$IB/tree"
	BUILDER_UID=65534
	# setpriv execs the command: a background build's $! is qsup's.
	BUILDER=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else
	BUILDER_UID=$(id -u)
	BUILDER=()
fi
as_builder() {
	"${BUILDER[@]}" "$@"
}

build() {
	as_builder "$IB/qsup" image build "$@"
}

# boot IMG [qsup run options] -- CMD...
boot() {
	local img=$1
	shift
	"$QSUP" run --set image="$img" --set warm_start=false "$@"
}

python3 "$HELPER" base "$IB/base.tar" || { echo "mkrootfs.py failed"; exit 1; }
gzip -k "$IB/base.tar"
# 40 MiB of zeros more: too big for a 16 MiB --size or a 24 MiB disk.
python3 "$HELPER" big "$IB/big.tar" 40 random
read -r LAYER1 LAYER2 MANIFEST <<<"$(python3 "$HELPER" oci "$IB/oci")"

# Nothing beside OUT but what the test put there.
expect_nothing_left() {
	local left
	left=$(ls -A "$IB/out")
	[ -z "$left" ] || fail "left beside OUT: $left"
	rm -rf "${IB:?}/out/"*
}

# debugfs's view of PATH in IMG's root file system.
fs_ea() {
	qemu-img convert -O raw "$1" "$IB/fs.raw" &&
	    debugfs -R "ea_list $2" "$IB/fs.raw?offset=1048576" 2>/dev/null
	rm -f "$IB/fs.raw"
}

test_tarball_owners_modes_links_devices() {
	local out img=$IB/out/tar.qcow2
	build "$IB/base.tar.gz" -o "$img" >/dev/null || fail "build failed"
	[ -f "$img" ] || { fail "no image"; return; }
	expect_eq "the builder" "$BUILDER_UID" "$(stat -c %u "$img")"
	out=$(boot "$img" -- sh -c 'stat -c "%a %u %g" /bin/suid; stat -c "%u %g" /home/u/f; stat -c "%i %h" /home/u/f; stat -c "%i %h" /home/u/g; stat -c "%F %t %T" /srv/null9 /srv/blk; readlink /etc/motd; id -u' 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "set-uid root" "4755 0 0" "$(sed -n 1p <<<"$out")"
	expect_eq "uid 1234's file" "1234 1234" "$(sed -n 2p <<<"$out")"
	expect_match "a hard link: one inode, 2 links" " 2$" "$(sed -n 3p <<<"$out")"
	expect_eq "the link's inode" "$(sed -n 3p <<<"$out")" "$(sed -n 4p <<<"$out")"
	expect_eq "a character device 1,3" "character special file 1 3" \
	    "$(sed -n 5p <<<"$out")"
	expect_eq "a block device 7,9" "block special file 7 9" \
	    "$(sed -n 6p <<<"$out")"
	expect_eq "an absolute symlink" "/etc/passwd" "$(sed -n 7p <<<"$out")"
	expect_eq "root in the guest" 0 "$(sed -n 8p <<<"$out")"
	out=$(fs_ea "$img" /bin/capped)
	expect_match "security.capability kept" \
	    'security.capability \(20\) = 01 00 00 02 00 20' "$out"
	expect_match "user.qsup kept" 'user.qsup \(5\) = "hello"' "$out"
	rm -f "$img"
	expect_nothing_left
}

test_oci_layers_whiteouts_config() {
	local out img=$IB/out/oci.qcow2
	build "oci:$IB/oci:latest" -o "$img" --size 96M >/dev/null ||
	    fail "build failed"
	[ -f "$img" ] || { fail "no image"; return; }
	expect_eq "--size is the disk's" 100663296 \
	    "$(qemu-img info --output=json "$img" | sed -n 's/.*"virtual-size": \([0-9]*\).*/\1/p')"
	# The Entrypoint is sh -c: the command is its script.
	out=$(boot "$img" -- 'pwd; echo "$QSUP_IMG|$SPACED|$PATH"; ls /etc/gone 2>&1; ls /opt/o; cat /srv/added; stat -c "%u %g" /srv/added; stat -c "%a %u" /bin/suid /etc/qsup/image.conf' 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "WorkingDir" /work "$(sed -n 1p <<<"$out")"
	expect_eq "Env" "from-oci|a b%c|/bin" "$(sed -n 2p <<<"$out")"
	expect_match "the whiteout removed /etc/gone" "No such file" \
	    "$(sed -n 3p <<<"$out")"
	expect_eq "the opaque dir: layer 2's file alone" new \
	    "$(sed -n 4p <<<"$out")"
	expect_eq "layer 2's file" "added by layer 2" "$(sed -n 5p <<<"$out")"
	expect_eq "layer 2's owners" "42 43" "$(sed -n 6p <<<"$out")"
	expect_eq "layer 1's set-uid binary" "4755 0" "$(sed -n 7p <<<"$out")"
	expect_eq "the config file" "644 0" "$(sed -n 8p <<<"$out")"
	# -e and -w win over the image's; the entrypoint still goes first.
	out=$(boot "$img" -e QSUP_IMG=mine -w /tmp -- 'pwd; echo $QSUP_IMG' 2>&1)
	expect_eq "-w over WorkingDir" /tmp "$(sed -n 1p <<<"$out")"
	expect_eq "-e over Env" mine "$(sed -n 2p <<<"$out")"
	rm -f "$img"
	# No tag: the layout's one manifest.
	build "oci:$IB/oci" -o "$img" >/dev/null || fail "build without a tag failed"
	rm -f "$img"
	build "oci:$IB/oci:nosuch" -o "$img" 2>"$T_TMP/err" &&
	    fail "an unknown tag was taken"
	expect_match "the tag" "tagged nosuch" "$(cat "$T_TMP/err")"
	expect_nothing_left
}

test_directory() {
	local out img=$IB/out/dir.qcow2
	# Extracted by the builder: its files are the builder's (and its
	# device nodes are missing: mknod is refused).
	as_builder tar -xf "$IB/base.tar" -C "$IB/tree" --no-same-owner \
	    2>/dev/null
	build "$IB/tree" -o "$img" >/dev/null || fail "build failed"
	build "$IB/tree" -o "$IB/tree/in.qcow2" 2>"$T_TMP/err" &&
	    fail "built an image inside its own tree"
	expect_match "OUT inside FROM" "lies inside the directory" \
	    "$(cat "$T_TMP/err")"
	expect_eq "nothing left in the tree" "" "$(ls -A "$IB/tree" | grep qcow2)"
	[ -f "$img" ] || { fail "no image"; return; }
	out=$(boot "$img" -- sh -c 'cat /home/u/f; stat -c %u /home/u/f' 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "the directory's file" "owned by 1234" "$(sed -n 1p <<<"$out")"
	expect_eq "owned as on disk" "$BUILDER_UID" "$(sed -n 2p <<<"$out")"
	rm -f "$img"
	expect_nothing_left
}

# has_file IMG PATH: PATH is a regular file in IMG's root file system.
has_file() {
	qemu-img convert -O raw "$1" "$IB/fs.raw" &&
	    debugfs -R "stat $2" "$IB/fs.raw?offset=1048576" 2>/dev/null |
	    grep -q 'Type: regular'
	local rc=$?
	rm -f "$IB/fs.raw"
	return $rc
}

# Relative OUT and FROM, from another working directory: the work
# directory beside OUT was relative, and the script, run in the tree,
# gave tar a path relative to the tree.
test_relative_paths() {
	local d=$IB/out
	[ -d "$IB/tree/home" ] || as_builder tar -xf "$IB/base.tar" \
	    -C "$IB/tree" --no-same-owner 2>/dev/null
	as_builder mkdir -p "$d/sub"
	(cd "$d/sub" && as_builder "$IB/qsup" image build ../../base.tar.gz \
	    -o rel-tar.qcow2) >/dev/null 2>"$T_TMP/err" ||
	    fail "tarball, relative -o: $(cat "$T_TMP/err")"
	(cd "$d/sub" && as_builder "$IB/qsup" image build oci:../../oci:latest \
	    -o ./rel-oci.qcow2) >/dev/null 2>"$T_TMP/err" ||
	    fail "OCI layout, relative -o: $(cat "$T_TMP/err")"
	(cd "$d/sub" && as_builder "$IB/qsup" image build ../../tree \
	    -o ../rel-dir.qcow2) >/dev/null 2>"$T_TMP/err" ||
	    fail "directory, relative -o: $(cat "$T_TMP/err")"
	expect_eq "beside OUT in sub" "rel-oci.qcow2 rel-tar.qcow2" \
	    "$(ls -A "$d/sub" | tr '\n' ' ' | sed 's/ $//')"
	has_file "$d/sub/rel-tar.qcow2" /home/u/f || fail "tarball: no /home/u/f"
	has_file "$d/sub/rel-oci.qcow2" /srv/added || fail "OCI: no /srv/added"
	has_file "$d/rel-dir.qcow2" /home/u/f || fail "directory: no /home/u/f"
	rm -f "$d/rel-dir.qcow2"
	# A failure with a relative OUT leaves nothing beside it either.
	rm -rf "$d/sub"/*
	python3 "$HELPER" bad dotdot "$IB/dotdot.tar"
	(cd "$d/sub" && as_builder "$IB/qsup" image build ../../dotdot.tar \
	    -o bad.qcow2) >/dev/null 2>"$T_TMP/err" && fail "built dotdot.tar"
	expect_match "refused" 'a ".." component' "$(cat "$T_TMP/err")"
	expect_eq "beside a relative OUT" "" "$(ls -A "$d/sub")"
	rm -rf "$d/sub"
	expect_nothing_left
}

# expect_refused WHAT ERE FROM [OPTIONS]: non-zero, ERE in the message.
expect_refused() {
	local what=$1 ere=$2 err=$T_TMP/err
	shift 2
	if build "$@" -o "$IB/out/bad.qcow2" 2>"$err" >/dev/null; then
		fail "$what: built"
	fi
	expect_match "$what" "$ere" "$(cat "$err")"
	expect_nothing_left
}

test_bad_archives() {
	local k
	for k in dotdot absolute symlink hardlink through; do
		python3 "$HELPER" bad "$k" "$IB/$k.tar"
	done
	expect_refused "../" 'entry "\./bin/\.\./\.\./evil": a ".." component' \
	    "$IB/dotdot.tar"
	expect_refused "an absolute path" 'entry "/etc/evil": an absolute path' \
	    "$IB/absolute.tar"
	expect_refused "a symlink out" \
	    'entry "\./bin/escape": symlink to "\.\./\.\./etc/passwd" points out of the tree' \
	    "$IB/symlink.tar"
	expect_refused "a hard link out" \
	    'entry "\./bin/hard": hard link to "\.\./outside", out of the tree' \
	    "$IB/hardlink.tar"
	expect_refused "a write through a symlink" \
	    'entry "\./etc/evil" lies under the symlink "etc"' "$IB/through.tar"
	head -c 4096 /dev/urandom >"$IB/noise"
	expect_refused "not a tar" "noise: not a tar archive" "$IB/noise"
	expect_refused "a missing FROM" "nosuch: No such file" "$IB/nosuch"
	expect_refused "--size too small" \
	    "too small for the tree: give a larger --size" "$IB/big.tar" \
	    --size 16M
}

# A copy of the OCI layout to break.
oci_copy() {
	rm -rf "$IB/broken"
	cp -r "$IB/oci" "$IB/broken"
}

test_bad_oci() {
	local junk d
	oci_copy
	rm "$IB/broken/blobs/sha256/${LAYER2#sha256:}"
	expect_refused "a missing blob" "blob $LAYER2 missing" "oci:$IB/broken"
	oci_copy
	echo tampered >>"$IB/broken/blobs/sha256/${LAYER1#sha256:}"
	expect_refused "a digest mismatch" "blob $LAYER1: digest mismatch" \
	    "oci:$IB/broken"
	# A layer that is not a tar, under its true digest.
	oci_copy
	head -c 8192 /dev/urandom >"$IB/junk"
	junk=sha256:$(sha256sum "$IB/junk" | cut -d' ' -f1)
	cp "$IB/junk" "$IB/broken/blobs/sha256/${junk#sha256:}"
	python3 - "$IB/broken" "$MANIFEST" "$junk" <<'EOF'
import hashlib, json, os, sys
d, man, junk = sys.argv[1:]
p = os.path.join(d, "blobs", "sha256", man.split(":")[1])
m = json.load(open(p))
m["layers"][1]["digest"] = junk
data = json.dumps(m).encode()
h = hashlib.sha256(data).hexdigest()
open(os.path.join(d, "blobs", "sha256", h), "wb").write(data)
i = json.load(open(os.path.join(d, "index.json")))
i["manifests"][0]["digest"] = "sha256:" + h
json.dump(i, open(os.path.join(d, "index.json"), "w"))
EOF
	expect_refused "a layer not a tar" "layer $junk: not a tar archive" \
	    "oci:$IB/broken"
	oci_copy
	echo '{"manifests":[{"digest":"sha256:../../../etc/passwd"}]}' \
	    >"$IB/broken/index.json"
	expect_refused "a digest that is a path" 'bad digest "sha256:\.\./' \
	    "oci:$IB/broken"
	rm -rf "$IB/broken"
}

# A full disk: OUT on a 24 MiB tmpfs. Mounting one needs root, or a user
# namespace of our own; where neither is allowed (a container without
# CAP_SYS_ADMIN and with user namespaces off) the case is skipped, said.
test_full_disk() {
	local mnt=$IB/full err=$T_TMP/err rc
	mkdir -p "$mnt"
	if mount -t tmpfs -o size=24m,mode=0777 tmpfs "$mnt" 2>/dev/null; then
		as_builder "$IB/qsup" image build "$IB/big.tar" \
		    -o "$mnt/out.qcow2" 2>"$err" >/dev/null
		rc=$?
		left=$(ls -A "$mnt")
		umount "$mnt"
	elif unshare -rm true 2>/dev/null; then
		left=$(unshare -rm sh -c 'mount -t tmpfs -o size=24m tmpfs "$1" &&
		    "$2" image build "$3" -o "$1/out.qcow2" 2>"$4" >/dev/null
		    echo "rc=$?"; ls -A "$1"' sh "$mnt" "$IB/qsup" "$IB/big.tar" "$err")
		rc=$(sed -n 's/^rc=//p' <<<"$left")
		left=$(grep -v '^rc=' <<<"$left")
	else
		echo "    skipped: no tmpfs can be mounted here (not root, no user namespaces)"
		return
	fi
	[ "$rc" != 0 ] || fail "built on a full disk"
	expect_match "the message" "no space left beside $mnt/out.qcow2" "$(cat "$err")"
	expect_eq "nothing left on the full disk" "" "$left"
}

# SIGTERM in the middle: no OUT, no work directory, no process left.
test_signal_cleans_up() {
	local pid rc
	# 20000 files: several seconds of build under fakeroot, whose every
	# chown is a round trip to its daemon (5000 took about a second: the
	# signal could come after the end).
	python3 "$HELPER" many "$IB/many.tar" 20000
	"${BUILDER[@]}" "$IB/qsup" image build "$IB/many.tar" \
	    -o "$IB/out/sig.qcow2" 2>"$T_TMP/err" >/dev/null &
	pid=$!
	# Until its scratch is made, on the tmpfs or beside OUT (tar itself
	# may live a tenth of a second, too short to poll for).
	for _ in $(seq 200); do
		compgen -G "/dev/shm/qsup-build.$pid.*" >/dev/null && break
		[ -n "$(ls -A "$IB/out")" ] && break
		sleep 0.05
	done
	sleep 0.3
	kill -0 "$pid" 2>/dev/null ||
	    fail "the build was over before its signal: nothing was tested"
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	rm -f "$IB/many.tar"
	expect_eq "exit status (128 + SIGTERM)" 143 "$rc"
	sleep 0.5
	expect_eq "processes left" "" "$(pgrep -f "$IB/out" || true)"
	# fakeroot's daemon is a session of its own: fakeroot's trap stops it.
	# (A zombie of it is PID 1's to reap, which a container may not do.)
	expect_eq "faked left" "" "$(ps -o stat=,pid=,comm= -u "$BUILDER_UID" | grep faked | grep -v '^Z' || true)"
	expect_eq "its tree on the tmpfs left" "" \
	    "$(ls -d /dev/shm/qsup-build."$pid".* 2>/dev/null || true)"
	expect_nothing_left
}

# The tree and the raw disk on /dev/shm when it is a tmpfs with room:
# removed at the end, as a killed build's scratch is by the next build;
# QSUP_IMAGE_SCRATCH=disk keeps them beside OUT.
test_scratch_tmpfs() {
	local dead holder scr img=$IB/out/s.qcow2
	if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" != tmpfs ]; then
		echo "    skipped: /dev/shm is not a tmpfs"
		return
	fi
	# A host (or chroot) whose /dev/shm the builder cannot write: the
	# build rightly goes beside OUT, and there is nothing to check here.
	if ! as_builder test -w /dev/shm -a -x /dev/shm; then
		echo "    skipped: /dev/shm is not writable by the builder ($(stat -c '%A %U' /dev/shm))"
		return
	fi
	# A process ended: its pid is no build's.
	sh -c 'exit 0' &
	dead=$!
	wait "$dead"
	as_builder mkdir -p "/dev/shm/qsup-build.$dead.killed/tree" \
	    "/dev/shm/qsup-build.$dead.held"
	# One whose builder still holds its lock (a pid of another pid
	# namespace): kept.
	as_builder flock -o "/dev/shm/qsup-build.$dead.held" sleep 60 &
	holder=$!
	sleep 0.3
	XDG_RUNTIME_DIR='' build -v "oci:$IB/oci:latest" -o "$img" \
	    2>"$T_TMP/err" >/dev/null || fail "build failed"
	[ -d "/dev/shm/qsup-build.$dead.held" ] ||
	    fail "a locked scratch directory was removed"
	kill "$holder"
	wait "$holder" 2>/dev/null
	rm -rf "/dev/shm/qsup-build.$dead.held"
	scr=$(sed -n 's/.*tree and raw disk in \(.*\)$/\1/p' "$T_TMP/err")
	expect_match "on the tmpfs" "^/dev/shm/qsup-build\.[0-9]+\." "$scr"
	[ -n "$scr" ] && [ ! -e "$scr" ] || fail "its scratch left: $scr"
	[ ! -e "/dev/shm/qsup-build.$dead.killed" ] ||
	    fail "a killed build's scratch was not removed"
	rm -f "$img"
	QSUP_IMAGE_SCRATCH=disk build -v "oci:$IB/oci:latest" -o "$img" \
	    2>"$T_TMP/err" >/dev/null || fail "build beside OUT failed"
	expect_match "beside OUT" "tree and raw disk in $IB/out/\.s\.qcow2\.build\." \
	    "$(cat "$T_TMP/err")"
	[ -f "$img" ] || fail "no image built beside OUT"
	rm -f "$img"
	expect_nothing_left
}

run_test test_tarball_owners_modes_links_devices
run_test test_oci_layers_whiteouts_config
run_test test_directory
run_test test_relative_paths
run_test test_bad_archives
run_test test_bad_oci
run_test test_full_disk
run_test test_signal_cleans_up
run_test test_scratch_tmpfs
finish
