#!/usr/bin/env bash
# Host shares over virtio-9p: read-only enforced by QEMU, read-write seen on
# the host, failures fatal and named.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# A static helper that writes through a shared mapping, run in the guest.
HELPERS=$T_TMP/helpers
mkdir -p "$HELPERS"
musl-gcc -static -Os -o "$HELPERS/mmapwrite" tests/integration/helpers/mmapwrite.c ||
    { echo "cannot build the mmap helper"; exit 1; }

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

test_bad_share_specs() {
	local err
	err=$("$QSUP" run --share "$T_TMP:rel" -- true 2>&1)
	expect_eq "relative guest path" 125 $?
	expect_match "message" 'guest path must be absolute' "$err"
	err=$("$QSUP" run --share "$T_TMP:/a:xx" -- true 2>&1)
	expect_eq "bad mode" 125 $?
	expect_match "message" 'ro or rw' "$err"
	err=$("$QSUP" run --share "$T_TMP:/a" --share "$T_TMP:/a" -- true 2>&1)
	expect_eq "same guest path twice" 125 $?
	err=$("$QSUP" run --share /tmp:/1 --share /tmp:/2 --share /tmp:/3 \
	    --share /tmp:/4 --share /tmp:/5 --share /tmp:/6 -- true 2>&1)
	expect_eq "too many" 125 $?
	expect_match "message" 'room for 5' "$err"
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

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
