#!/usr/bin/env bash
# Host shares over virtio-9p: read-only enforced by QEMU, read-write seen on
# the host, failures fatal and named.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# A static helper that writes through a shared mapping, run in the guest.
HELPERS=$T_TMP/helpers
mkdir -p "$HELPERS"
musl-gcc -static -Os -o "$HELPERS/mmapwrite" tests/integration/helpers/mmapwrite.c ||
    { echo "cannot build the mmap helper"; exit 1; }
# One file-system call made directly, as root in the guest.
musl-gcc -static -Os -o "$HELPERS/sa" tests/integration/helpers/shareattack.c ||
    { echo "cannot build the share attack helper"; exit 1; }

# Every extended attribute under a tree, as "PATH NAME=VALUE" (getfattr is
# not installed everywhere).
xattrs() {
	python3 - "$1" <<'EOF2'
import os, sys
top = sys.argv[1]
for d, dirs, files in os.walk(top):
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        for a in sorted(os.listxattr(p, follow_symlinks=False)):
            v = os.getxattr(p, a, follow_symlinks=False)
            print(os.path.relpath(p, top), a + "=" + v.hex())
EOF2
}

# Digest, size, mode, mtime and ctime of every file under a tree.
fingerprint() {
	(cd "$1" && find . -printf '%p %s %m %T@ %C@\n' | sort &&
	    find . -type f -exec sha256sum {} + | sort)
}

test_readonly_share_refuses_every_write() {
	local ro=$T_TMP/ro before after out
	mkdir -p "$ro/sub"
	printf 'original\n' >"$ro/f"
	printf 'other\n' >"$ro/g"
	printf 'mapped file, long enough\n' >"$ro/m"
	chmod 644 "$ro/f" "$ro/g" "$ro/m"
	before=$(fingerprint "$ro")
	# As root in the guest, and after remounting the share read-write:
	# only QEMU stands in the way.
	out=$("$QSUP" run --share "$ro:/ro" --share "$HELPERS:/helpers" -- sh -c '
	    mount -o remount,rw /ro 2>/dev/null
	    try() { if "$@" 2>/dev/null; then echo "WROTE: $*"; fi; }
	    try sh -c ": > /ro/f"
	    try sh -c "echo more >> /ro/f"
	    try sh -c "echo new > /ro/new"
	    try touch /ro/new2
	    try rm /ro/g
	    try mv /ro/f /ro/f2
	    try chmod 777 /ro/f
	    try mkdir /ro/d
	    try ln -s f /ro/l
	    try ln /ro/f /ro/hard
	    try rmdir /ro/sub
	    try truncate -s 0 /ro/f
	    try touch -d 2001-01-01 /ro/f
	    try /helpers/mmapwrite /ro/m
	    cat /ro/f')
	expect_eq "only the read got through" "original" "$out"
	after=$(fingerprint "$ro")
	expect_eq "host tree unchanged (content, modes, times)" "$before" "$after"
}

test_readwrite_share_reaches_the_host() {
	local rw=$T_TMP/rw out
	mkdir -p "$rw"
	printf 'from host\n' >"$rw/in"
	out=$("$QSUP" run --share "$rw:/work:rw" -w /work -- sh -c \
	    'cat in; echo from guest > out; mkdir d; echo deep > d/f; rm in; echo ok')
	expect_eq "guest saw the host file" "from host
ok" "$out"
	expect_eq "guest file on the host" "from guest" "$(cat "$rw/out")"
	expect_eq "nested" "deep" "$(cat "$rw/d/f")"
	[ ! -e "$rw/in" ] || fail "the guest's rm did not reach the host"
}

test_default_guest_path_and_mode() {
	local d=$T_TMP/same out
	mkdir -p "$d"
	echo here >"$d/file"
	out=$("$QSUP" run --share "$d" -- sh -c "cat $d/file; echo x > $d/file || echo refused")
	expect_match "same path, read-only" "here.*refused" "$(tr '\n' ' ' <<<"$out")"
	expect_eq "host file" here "$(cat "$d/file")"
}

test_vanished_share_is_an_error() {
	local gone=$T_TMP/gone err st
	mkdir -p "$gone"; rmdir "$gone"
	err=$("$QSUP" run --share "$gone:/x" -- true 2>&1); st=$?
	expect_eq "status" 125 $st
	expect_match "names the path" "share $gone: No such file or directory" "$err"
	err=$("$QSUP" run --share "/etc/hostname:/x" -- true 2>&1); st=$?
	expect_eq "a file" 125 $st
	expect_match "not a directory" 'not a directory' "$err"
}

test_mount_failure_is_fatal_and_named() {
	local d=$T_TMP/mf err st
	mkdir -p "$d"
	# The guest cannot create a mount point inside /proc.
	err=$("$QSUP" run --share "$d:/proc/qsup-nope" -- echo ran 2>&1); st=$?
	expect_eq "status" 125 $st
	expect_match "the share and the reason" "mount qsup0 on /proc/qsup-nope: .*the share of $d" "$err"
	if grep -q '^ran$' <<<"$err"; then fail "the command ran anyway"; fi
}

# Sixteen shares at once, each seen in the guest with its own content:
# microvm's eight virtio-mmio slots held five; 9p is on PCIe now.
test_sixteen_shares() {
	local many=() want="" i out
	for i in $(seq 16); do
		mkdir -p "$T_TMP/s$i"
		echo "$i" >"$T_TMP/s$i/f"
		many+=(--share "$T_TMP/s$i:/mnt/s$i:ro")
		want="$want$i "
	done
	out=$("$QSUP" run "${many[@]}" -- sh -c \
	    'for i in $(seq 16); do printf "%s " "$(cat /mnt/s$i/f)"; done')
	expect_eq "exit" 0 $?
	expect_eq "every share's content" "$want" "$out"
}

test_bad_share_specs() {
	local err
	err=$("$QSUP" run --share "$T_TMP:rel" -- true 2>&1)
	expect_eq "relative guest path" 125 $?
	expect_match "message" 'guest path must be absolute' "$err"
	err=$("$QSUP" run --share "$T_TMP:/a:xx" -- true 2>&1)
	expect_eq "bad mode" 125 $?
	expect_match "message" 'ro, rw or cow' "$err"
	err=$("$QSUP" run --share "$T_TMP:/a" --share "$T_TMP:/a" -- true 2>&1)
	expect_eq "same guest path twice" 125 $?
	local many=() i
	for i in $(seq 17); do many+=(--share "/tmp:/$i"); done
	err=$("$QSUP" run "${many[@]}" -- true 2>&1)
	expect_eq "too many" 125 $?
	expect_match "message" 'room for 16' "$err"
}

# Shares from a profile, with ignored paths that the guest never sees.
test_profile_shares_and_ignore() {
	local d=$T_TMP/proj out err st
	mkdir -p "$d/src" "$d/keys" "$T_TMP/pout"
	echo code >"$d/src/main.c"
	echo key >"$d/keys/id.pem"
	echo token >"$d/secret.txt"
	cat >"$T_TMP/sh.lua" <<EOF2
return {
	shares = {
		{ host = "$d", guest = "/proj", ignore = { "secret*", "*.pem" } },
		{ host = "$T_TMP/pout", guest = "/out", mode = "rw" },
	},
	cwd = "/proj",
}
EOF2
	out=$("$QSUP" run --profile "$T_TMP/sh.lua" -- sh -c \
	    'find . | sort; cat src/main.c; cat secret.txt 2>&1; echo made > /out/o')
	expect_eq "ignored paths are absent" ".
./keys
./src
./src/main.c
code
cat: can't open 'secret.txt': No such file or directory" "$out"
	expect_eq "the rw share" made "$(cat "$T_TMP/pout/o")"
	expect_eq "host keeps its files" token "$(cat "$d/secret.txt")"
	printf 'return { shares = { { host = "%s", mode = "rw", ignore = { "x" } } } }\n' \
	    "$d" >"$T_TMP/bad.lua"
	err=$("$QSUP" run --profile "$T_TMP/bad.lua" -- true 2>&1); st=$?
	expect_eq "rw with ignore" 125 $st
	expect_match "message" 'ignore needs a read-only share' "$err"
}

# The host's own Python, run in the busybox-only guest on the host's glibc.
test_host_python_in_guest() {
	local want got code='import sys, ssl, json; print(sys.version); print(sys.prefix)'
	command -v python3 >/dev/null || { echo "    (no python3 on this host)"; return; }
	want=$(python3 -c "$code")
	got=$(cd "$T_TMP" && "$QSUP" --profile python -- python3 -c "$code")
	expect_eq "same interpreter" "$want" "$got"
	# The system's, when a version manager's is first on PATH here.
	if [ -x /usr/bin/python3 ]; then
		want=$(/usr/bin/python3 -c "$code")
		got=$(cd "$T_TMP" && PATH=/usr/bin:/bin "$QSUP" --profile python -- python3 -c "$code")
		expect_eq "the system's interpreter" "$want" "$got"
	fi
}

# Execution trees staged (forced on): copies without the bulky names, gone
# with the sandbox (expect_clean checks the run directory).
test_staging_forced_on() {
	local t=$T_TMP/tree out
	mkdir -p "$t/.git/objects" "$t/.venv/bin" "$t/pkg/__pycache__" "$t/node_modules/x"
	echo ref >"$t/.git/HEAD"
	echo py >"$t/.venv/bin/python"
	echo code >"$t/pkg/mod.py"
	echo byte >"$t/pkg/__pycache__/mod.pyc"
	ln -s mod.py "$t/pkg/link.py"
	for v in on off; do
		printf 'return { virtfs = "%s", shares = { { host = "%s", guest = "/t", exec = true } } }\n' \
		    "$v" "$t" >"$T_TMP/st-$v.lua"
	done
	out=$("$QSUP" run -v --profile "$T_TMP/st-on.lua" -- sh -c 'cd /t && find . | sort; cat pkg/link.py' 2>"$T_TMP/err")
	expect_eq "staged tree" ".
./pkg
./pkg/__pycache__
./pkg/__pycache__/mod.pyc
./pkg/link.py
./pkg/mod.py
code" "$out"
	expect_match "said under -v" 'share .*tree: .*shown through' "$(cat "$T_TMP/err")"
	out=$("$QSUP" run --profile "$T_TMP/st-off.lua" -- sh -c 'ls -a /t | tr "\n" " "')
	expect_eq "not staged when off" ". .. .git .venv node_modules pkg " "$out"
	expect_eq "host tree intact" "ref" "$(cat "$t/.git/HEAD")"
}

# Staged copies are kept between runs and used again only while their
# source is unchanged.
test_staged_copy_kept_while_unchanged() {
	local t=$T_TMP/kept p=$T_TMP/kept.lua out
	export XDG_CACHE_HOME=$T_TMP/kept-cache	# this test's cache alone
	mkdir -p "$t/lib"
	echo one >"$t/lib/a"
	printf 'return { virtfs = "on", virtfs_cache = true, shares = { { host = "%s", guest = "/t", exec = true } } }\n' \
	    "$t" >"$p"
	out=$("$QSUP" run -v -p "$p" -- cat /t/lib/a 2>"$T_TMP/err")
	expect_eq "first run" one "$out"
	expect_match "made and kept" "files shown through .*/staged/.*kept for later runs" "$(cat "$T_TMP/err")"
	out=$("$QSUP" run -v -p "$p" -- cat /t/lib/a 2>"$T_TMP/err")
	expect_eq "second run" one "$out"
	expect_match "used again" "kept from an earlier run" "$(cat "$T_TMP/err")"
	sleep 0.05
	echo two >"$t/lib/b"
	rm "$t/lib/a"
	out=$("$QSUP" run -v -p "$p" -- ls /t/lib 2>"$T_TMP/err")
	expect_eq "the change is seen" b "$out"
	expect_match "made again" "kept for later runs" "$(cat "$T_TMP/err")"
	expect_match "listed" "staged [0-9a-f]{32}  $t " "$("$QSUP" cache ls)"
	expect_match "cleared" "removed 1 staged tree" "$("$QSUP" cache clear)"
	out=$("$QSUP" run --set virtfs_cache=false -p "$p" -- ls /t/lib)
	expect_eq "without the cache" b "$out"
	expect_eq "nothing kept" "" "$("$QSUP" cache ls | grep staged)"
	# The default: nothing of a run stays behind.
	printf 'return { virtfs = "on", shares = { { host = "%s", guest = "/t", exec = true } } }\n' \
	    "$t" >"$p"
	out=$("$QSUP" run -p "$p" -- ls /t/lib)
	expect_eq "by default" b "$out"
	expect_eq "nothing kept by default" "" "$("$QSUP" cache ls | grep staged)"
}

# A share given to one run is not there for the next, warm or not.
test_share_invisible_to_next_run() {
	local a=$T_TMP/a b=$T_TMP/b out
	mkdir -p "$a" "$b"
	echo secret-a >"$a/s"
	echo public-b >"$b/p"
	"$QSUP" run --share "$a:/data:rw" -- sh -c 'cat /data/s; echo left > /data/left' >/dev/null
	out=$("$QSUP" run -- sh -c 'ls /data 2>&1; cat /tmp/* 2>/dev/null; echo end')
	expect_match "no /data without the share" "No such file.*end" "$(tr '\n' ' ' <<<"$out")"
	out=$("$QSUP" run --share "$b:/data:rw" -- sh -c 'ls /data')
	expect_eq "another share at the same place" "p" "$out"
}

# Symlinks in a share work as on the host, read-only and read-write, made on
# the host or by the guest; link text is resolved in the guest's namespace,
# so no absolute or ../ chain reaches a host file outside the share.
test_symlinks_work_and_stay_in_the_guest() {
	local t=$T_TMP/links secret=$T_TMP/outside/secret out want up
	mkdir -p "$t/sub/deeper" "$T_TMP/outside"
	echo in-tree >"$t/sub/f"
	echo HOST-SECRET >"$secret"
	ln -s sub/f "$t/rel"
	ln -s sub "$t/dirlink"
	ln -s rel "$t/chain"
	ln -s nowhere "$t/dangling"
	ln -s "$secret" "$t/abs"
	up=$(realpath --relative-to="$t/sub/deeper" "$secret")
	ln -s "$up" "$t/sub/deeper/up"
	ln -s ../../../../../../../../../../etc/shadow "$t/sub/deeper/shadow"
	# Read-only at the host's own path, so the links' text names the same
	# paths in the guest as on the host; read-write elsewhere.
	out=$("$QSUP" run --share "$t" --share "$t:/w:rw" -- sh -c "
	    rm -f /etc/shadow
	    for m in $t /w; do
	        cat \$m/rel \$m/chain; ls \$m/dirlink; cat \$m/dirlink/f
	        readlink \$m/dangling; cat \$m/dangling 2>/dev/null || echo dangling
	        [ -L \$m/abs ] && readlink \$m/abs
	        cat \$m/abs 2>/dev/null || echo no-abs
	        cat \$m/sub/deeper/up 2>/dev/null || echo no-up
	        cat \$m/sub/deeper/shadow 2>/dev/null || echo no-shadow
	    done
	    # The same path in the guest: what the links reach there.
	    mkdir -p $T_TMP/outside && echo GUEST-FILE > $secret
	    cat $t/abs $t/sub/deeper/up
	    cd /w && ln -s sub/f made-rel && ln -s sub made-dir &&
	        ln -s /etc/hostname made-abs && ln -s gone made-dangling &&
	        cat made-rel made-dir/f" 2>&1)
	want="in-tree
in-tree
deeper
f
in-tree
nowhere
dangling
$secret
no-abs
no-up
no-shadow"
	expect_eq "symlinks, both modes" "$want
$want
GUEST-FILE
GUEST-FILE
in-tree
in-tree" "$out"
	[ -L "$t/made-rel" ] && [ -L "$t/made-dir" ] && [ -L "$t/made-abs" ] &&
	    [ -L "$t/made-dangling" ] || fail "the guest's links are not symlinks on the host"
	expect_eq "the guest's links on the host" "sub/f sub /etc/hostname gone in-tree" \
	    "$(readlink "$t/made-rel" "$t/made-dir" "$t/made-abs" "$t/made-dangling" | tr '\n' ' ')$(cat "$t/made-rel")"
	expect_eq "host file outside untouched" HOST-SECRET "$(cat "$secret")"
}

# The attacks of a hostile guest root on a read-write share, under each
# model qsup accepts there; checked on the host.
attack_script() {
	cat <<'EOF2'
cd /w
A=/h/sa
$A creat 4755 c-suid
$A creat 2755 c-sgid
$A creat 0644 plain
$A chmod 4755 plain
$A chmod 6755 plain
$A chmod 2755 plain
$A chown 1234 5678 plain
$A chown 0 0 plain
$A mknod c 1 3 dev-chr
$A mknod b 7 0 dev-blk
$A mknod r 0 0 reg-suid
$A mkdir 0755 dir
$A chmod 4755 dir
$A setxattr user.virtfs.mode planted plain
$A setxattr user.virtfs.uid 0 plain
$A setxattr user.other planted plain
$A removexattr user.host-set host-xattr
$A acl 1234 plain
$A write payload suid-root
$A write payload sgid
echo done
EOF2
}

rw_attacks() {
	local model=$1 rw=$T_TMP/attack-$1 out err st bad
	mkdir -p "$rw"
	cp /bin/true "$rw/suid-root" && chmod 4755 "$rw/suid-root"
	cp /bin/true "$rw/sgid" && chmod 2755 "$rw/sgid"
	echo x >"$rw/host-xattr"
	python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.host-set", b"1")' \
	    "$rw/host-xattr" 2>/dev/null
	attack_script >"$HELPERS/attack.sh"
	out=$("$QSUP" run --set virtfs_security_model="$model" \
	    --share "$rw:/w:rw" --share "$HELPERS:/h" -- sh /h/attack.sh 2>&1); st=$?
	expect_eq "$model: the guest ran it" 0 $st
	expect_match "$model: to the end" 'done' "$out"
	# Under the mapped models a chmod only changes QEMU's record of it.
	[ "$model" != none ] ||
	    expect_match "$model: chmod u+s refused, said" 'chmod refused: Operation not permitted' "$out"
	# A directory may carry a setgid bit its parent passed on, nothing else.
	bad=$(find "$rw" \( -perm /4000 -o -perm /2000 ! -type d \) -printf '%m %p\n')
	expect_eq "$model: no setuid or setgid file on the host" "" "$bad"
	bad=$(find "$rw" \( -type b -o -type c \) -printf '%p\n')
	expect_eq "$model: no device node on the host" "" "$bad"
	bad=$(find "$rw" \( ! -user "$(id -u)" -o ! -group "$(id -g)" \) -printf '%u:%g %p\n')
	expect_eq "$model: no owner changed on the host" "" "$bad"
	bad=$(xattrs "$rw" | grep -v '^host-xattr user.host-set=31$')
	if [ "$model" = mapped-xattr ]; then
		# QEMU's own record of the guest's view (an ACL included, as
		# data), and the guest's plain user.* names, which QEMU passes
		# through as it passes file contents; nothing the guest wrote
		# into user.virtfs.*.
		bad=$(grep -v ' user\.virtfs\.\(uid\|gid\|mode\|rdev\|system\.posix_acl_access\)=\| user\.other=' <<<"$bad")
		if xattrs "$rw" | grep -q "user.virtfs.*=$(printf planted | od -An -tx1 | tr -d ' \n')"; then
			fail "$model: the guest planted user.virtfs.mode"
		fi
	fi
	expect_eq "$model: no xattr or ACL from the guest on the host" "" "$bad"
	[ "$model" = mapped-xattr ] && return
	if command -v getfacl >/dev/null &&
	    getfacl -cp "$rw/plain" 2>/dev/null | grep -q '^user:[0-9]'; then
		fail "$model: an ACL reached the host"
	fi
	expect_eq "$model: the host's own xattr kept" "$(printf 1 | od -An -tx1 | tr -d ' \n')" \
	    "$(xattrs "$rw" | sed -n 's/^host-xattr user.host-set=//p')"
}

test_rw_share_none_leaves_no_privilege() {
	rw_attacks none
}

test_rw_share_mapped_xattr_leaves_no_privilege() {
	rw_attacks mapped-xattr
}

test_rw_share_mapped_file_leaves_no_privilege() {
	rw_attacks mapped-file
}

# "passthrough" gives the guest's owners and modes to the host: refused with
# a read-write share, naming it; a read-only share does not care.
test_passthrough_refused_with_rw_share() {
	local rw=$T_TMP/pt err st out
	mkdir -p "$rw"
	err=$("$QSUP" run --set virtfs_security_model=passthrough --share "$rw:/w:rw" -- \
	    touch /w/x 2>&1); st=$?
	expect_eq "status" 125 $st
	expect_match "names the share and the setting" \
	    "share $rw: virtfs_security_model = \"passthrough\" would let the guest chown" "$err"
	[ ! -e "$rw/x" ] || fail "the guest ran"
	out=$("$QSUP" run --set virtfs_security_model=passthrough --share "$rw:/r" -- ls /r 2>&1)
	expect_eq "read-only is fine" "" "$out"
}

# In a setgid directory the guest's mkdir works (the host kernel passes the
# bit on, as for any process); chmod g+s does nothing, chmod u+s fails.
test_rw_share_setgid_directory() {
	local rw=$T_TMP/sgdir out
	mkdir -p "$rw" && chmod 2775 "$rw"
	out=$("$QSUP" run --share "$rw:/w:rw" --share "$HELPERS:/h" -- sh -c '
	    mkdir /w/d && echo mkdir-ok; echo x > /w/f
	    /h/sa chmod 2755 /w/f; /h/sa chmod 4755 /w/d' 2>&1)
	expect_eq "guest" "mkdir-ok
chmod ok
chmod refused: Operation not permitted" "$out"
	expect_eq "inherited, as on the host" 2 "$(stat -c %a "$rw/d" | cut -c1)"
	expect_eq "no setgid file" "" "$(find "$rw" -type f -perm /6000)"
}

# A read-only share refuses xattrs too, even when a mapped-xattr share lets
# QEMU set them.
test_readonly_share_refuses_xattrs() {
	local ro=$T_TMP/roxa rw=$T_TMP/roxa-rw out before
	mkdir -p "$ro" "$rw"
	echo x >"$ro/f"
	before=$(xattrs "$ro")
	out=$("$QSUP" run --set virtfs_security_model=mapped-xattr --share "$ro:/r" \
	    --share "$rw:/w:rw" --share "$HELPERS:/h" -- sh -c '
	    mount -o remount,rw /r 2>/dev/null
	    /h/sa setxattr user.x y /r/f; /h/sa acl 1234 /r/f
	    echo g > /w/g; /h/sa setxattr user.x y /w/g' 2>&1)
	expect_eq "refused on the read-only share, allowed on the other" \
	    "setxattr refused: Read-only file system
acl refused: Read-only file system
setxattr ok" "$out"
	expect_eq "nothing on the host" "$before" "$(xattrs "$ro")"
}

# A share named by a link is at the link's path in the guest, not at
# where the link leads (--share /lib64, a link to usr/lib64, is /lib64:
# where programs look for their loader), from --share and a profile alike.
test_share_of_a_link_is_at_its_path() {
	local out prof=$T_TMP/link.lua
	mkdir -p "$T_TMP/real"
	echo there >"$T_TMP/real/f"
	ln -sfn real "$T_TMP/link"
	out=$("$QSUP" run --share "$T_TMP/link" -- sh -c "cat $T_TMP/link/f; ls -d $T_TMP/real 2>&1; true")
	expect_eq "exit" 0 $?
	expect_eq "--share: at the link's path" there "$(sed -n 1p <<<"$out")"
	expect_match "--share: not at its target's" 'No such file' \
	    "$(sed -n 2p <<<"$out")"
	printf 'return { shares = { { host = "link" } } }\n' >"$prof"
	out=$("$QSUP" run --profile "$prof" -- cat "$T_TMP/link/f")
	expect_eq "a profile's share: at the link's path" there "$out"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
