#!/usr/bin/env bash
# ld_closure_libs = "sparse" and the guest's glibc, against real guests: the
# host's Python (pyenv's, the system's) runs on the sparse closure; the
# guest sees far fewer library files than with "full"; what is missing is
# named, before boot or after the command failed; a guest with a newer
# glibc than the host's is refused before boot; nothing is left behind.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

TRIPLET=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
# Execution trees are not staged (virtfs=off) where qsup thinks it runs in
# a container: copying the interpreter's 50,000 files would double each
# run, and share_test tests that. The sparse copies are made regardless.
PY="--profile python --set virtfs=off"
PYCODE='import os, sys, ssl, json, sqlite3; print(sys.version); print(len(os.listdir("/lib/'$TRIPLET'")))'

# A profile with the host's library directories and one execution tree.
# lib_profile FILE TREE EXEC
lib_profile() {
	cat >"$1" <<EOF
return {
	shares = {
		{ host = "$2", guest = "/t", exec = $3 },
		{ host = "/usr/lib/" .. qsup.triplet, guest = "/lib/" .. qsup.triplet },
		{ host = "/lib64", guest = "/lib64" },
	},
	virtfs_security_model = "none",
	ld_closure_libs = "sparse",
}
EOF
}

# The pyenv (PATH's) python3 on "sparse": the host's version, its C
# modules import, and far fewer files in /lib/TRIPLET than with "full".
test_sparse_python_from_path() {
	local out full want n_sparse n_full
	command -v python3 >/dev/null || { fail "no python3 on this host"; return; }
	want=$(python3 -c 'import sys; print(sys.version)')
	out=$(cd "$T_TMP" && "$QSUP" $PY --set ld_closure_libs=sparse -- python3 -c "$PYCODE")
	expect_eq "version" "$want" "$(head -1 <<<"$out")"
	full=$(cd "$T_TMP" && "$QSUP" $PY -- python3 -c "$PYCODE")
	expect_eq "version, full" "$want" "$(head -1 <<<"$full")"
	n_sparse=$(sed -n 2p <<<"$out"); n_full=$(sed -n 2p <<<"$full")
	echo "    /lib/$TRIPLET in the guest: $n_sparse entries sparse, $n_full full"
	# Python's closure is some 70 entries; a developer's host has
	# thousands of libraries, a fresh debootstrap with qsup's build
	# packages about 600: a fourth is far fewer on either.
	[ -n "$n_sparse" ] && [ -n "$n_full" ] && [ "$n_sparse" -gt 10 ] &&
	    [ $((n_sparse * 4)) -lt "$n_full" ] ||
	    fail "sparse should show far fewer files: $n_sparse against $n_full"
}

# The system's python3: /usr/lib is shared as it is (no copy) and the
# guest binds the closure over /usr/lib/TRIPLET inside it, as over
# /lib/TRIPLET: both show the closure, the rest of /usr/lib is there. On a
# guest restored from a template (configured by POST /setup) and on one
# booted cold with the seed.
test_sparse_system_python() {
	local out want n_lib n_usr n_host walk warm
	[ -x /usr/bin/python3 ] || { fail "no /usr/bin/python3 on this host"; return; }
	want=$(/usr/bin/python3 -c 'import sys; print(sys.version)')
	walk='def n(p): return sum(len(d) + len(f) for _, d, f in os.walk(p))'
	n_host=$(find /usr/lib/$TRIPLET -mindepth 1 | wc -l)
	# The first run builds the template, the second restores it.
	for warm in true true false; do
		out=$(cd "$T_TMP" && PATH=/usr/bin:/bin "$QSUP" -v $PY --set warm_start=$warm \
		    --set ld_closure_libs=sparse -- python3 -c "import os, sys, ssl, json, sqlite3
$walk
print(sys.version)
print(n('/lib/$TRIPLET'))
print(n('/usr/lib/$TRIPLET'))
print(os.path.isdir('/usr/lib/python3/dist-packages'))
print(os.path.isdir('/usr/lib/python3.11'))" 2>"$T_TMP/err")
		expect_eq "warm_start=$warm: version" "$want" "$(head -1 <<<"$out")"
		n_lib=$(sed -n 2p <<<"$out"); n_usr=$(sed -n 3p <<<"$out")
		echo "    warm_start=$warm, in the guest: /lib/$TRIPLET $n_lib entries in all, /usr/lib/$TRIPLET $n_usr; the host's: $n_host"
		expect_eq "warm_start=$warm: the same closure through /usr/lib" "$n_lib" "$n_usr"
		[ -n "$n_lib" ] && [ "$n_lib" -gt 10 ] && [ $((n_lib * 10)) -lt "$n_host" ] ||
		    fail "warm_start=$warm: sparse should show far fewer files: $n_lib against $n_host"
		expect_eq "warm_start=$warm: the rest of /usr/lib is there" "True
True" "$(sed -n 4,5p <<<"$out")"
		grep -q "shown through" "$T_TMP/err" &&
		    fail "warm_start=$warm: a share was copied: $(grep "shown through" "$T_TMP/err")"
	done
}

# A bind the guest cannot make (its mount point would be in a read-only
# share, where nothing can be created) stops the start, naming both paths.
test_sparse_bind_failure() {
	local out err rc
	mkdir -p "$T_TMP/ro"
	cat >"$T_TMP/p.lua" <<EOF
return {
	shares = {
		{ host = "$T_TMP/ro", guest = "/t" },
		{ host = "/usr/lib/" .. qsup.triplet, guest = "/t/lib/" .. qsup.triplet },
	},
	virtfs_security_model = "none",
	ld_closure_libs = "sparse",
}
EOF
	out=$("$QSUP" run --profile "$T_TMP/p.lua" -- true 2>"$T_TMP/err")
	rc=$?
	err=$(cat "$T_TMP/err")
	expect_eq "exit status" 125 "$rc"
	expect_match "names both paths" \
	    "bind /run/qsup/ld/usr/lib/$TRIPLET on /t/lib/$TRIPLET: Read-only file system" "$err"
}

# A library the command needs and the host lacks: named, with who needs
# it, before QEMU starts.
test_missing_library_refused_before_boot() {
	local d=$T_TMP/prog out err rc
	mkdir -p "$d"
	printf 'int qsupt(void) { return 42; }\n' >"$d/l.c"
	printf '#include <stdio.h>\nint qsupt(void);\nint main(void) { printf("hello %%d\\n", qsupt()); return 0; }\n' >"$d/p.c"
	gcc -shared -fPIC -Wl,-soname,libqsupt.so.1 -o "$d/libqsupt.so.1" "$d/l.c" &&
	    gcc -o "$d/prog" "$d/p.c" "$d/libqsupt.so.1" -Wl,-rpath,'$ORIGIN' ||
	    { fail "cannot build the test program"; return; }
	lib_profile "$T_TMP/p.lua" "$d" true
	out=$("$QSUP" run --profile "$T_TMP/p.lua" -- /t/prog)
	expect_eq "runs on the sparse closure, its own library by \$ORIGIN" "hello 42" "$out"
	rm "$d/libqsupt.so.1"
	out=$("$QSUP" run -v --profile "$T_TMP/p.lua" -- /t/prog 2>"$T_TMP/err")
	rc=$?
	err=$(cat "$T_TMP/err")
	expect_eq "exit status" 125 "$rc"
	expect_match "names the library and who needs it" \
	    "libqsupt.so.1 \(needed by $d/prog\): found nowhere on the host, so /t/prog cannot start" "$err"
	grep -q "booting" <<<"$err" && fail "QEMU was started: $err"
}

# The guest's loader and dlopen fail on a library outside the closure:
# qsup names it and the remedy after the command's own stderr, and
# ld_closure_extra is that remedy.
test_missing_library_named_after_failure() {
	local d=$T_TMP/bz out err rc
	mkdir -p "$d"
	printf '#include <stdio.h>\nint BZ2_bzBuffToBuffCompress();\nint main(void) { printf("%%p\\n", (void *)BZ2_bzBuffToBuffCompress); puts("bz ok"); return 0; }\n' >"$d/p.c"
	gcc -o "$d/prog" "$d/p.c" /usr/lib/$TRIPLET/libbz2.so.1.0 ||
	    { fail "cannot build the test program"; return; }
	# Not an execution tree, and run through the guest's sh: no root.
	lib_profile "$T_TMP/p.lua" "$d" false
	out=$("$QSUP" run --profile "$T_TMP/p.lua" -- sh -c /t/prog 2>"$T_TMP/err")
	rc=$?
	err=$(cat "$T_TMP/err")
	expect_eq "the loader's status" 127 "$rc"
	expect_match "the loader's own message first" \
	    "error while loading shared libraries: libbz2.so.1.0: cannot open shared object file" "$(head -1 <<<"$err")"
	expect_match "then qsup's line" \
	    '^qsup: libbz2.so.1.0 is on the host but not in the sparse library closure .*ld_closure_extra = \{ "libbz2.so.1.0" \}, or use ld_closure_libs = "full"$' \
	    "$(tail -1 <<<"$err")"
	out=$("$QSUP" run --profile "$T_TMP/p.lua" --set 'ld_closure_extra={"libbz2.so.1.0"}' -- sh -c /t/prog)
	expect_eq "ld_closure_extra adds it" "bz ok" "$(tail -1 <<<"$out")"
	# dlopen, through Python's ctypes.
	command -v python3 >/dev/null || return
	[ -e /usr/lib/$TRIPLET/libzstd.so.1 ] || { fail "no libzstd.so.1 on this host"; return; }
	(cd "$T_TMP" && "$QSUP" $PY --set ld_closure_libs=sparse -- \
	    python3 -c 'import ctypes; ctypes.CDLL("libzstd.so.1")') 2>"$T_TMP/err"
	rc=$?
	err=$(cat "$T_TMP/err")
	expect_eq "ctypes' status" 1 "$rc"
	expect_match "Python's error" "OSError: libzstd.so.1: cannot open shared object file" "$err"
	expect_match "qsup's line" '^qsup: libzstd.so.1 is on the host but not in the sparse' "$(tail -1 <<<"$err")"
	# Under "full" no such line: the library is there.
	out=$(cd "$T_TMP" && "$QSUP" $PY -- python3 -c 'import ctypes; ctypes.CDLL("libzstd.so.1"); print("ok")' 2>&1)
	expect_eq "full has it" "ok" "$out"
}

# This machine has no guest image with a glibc newer than the host's (the
# default guest has no glibc at all), so the test builds one: the real
# kernel, and the real initramfs followed by a second cpio archive holding a
# libc.so.6 whose banner says 2.99 (the kernel unpacks both, in order).
test_newer_guest_glibc_refused() {
	local g=$T_TMP/guest w=$T_TMP/cpio out err rc host
	host=$(/lib/$TRIPLET/libc.so.6 2>/dev/null | sed -n 's/.*release version \([0-9.]*[0-9]\).*/\1/p')
	mkdir -p "$g" "$w/lib/$TRIPLET"
	ln -s "$PWD/build/guest/vmlinux" "$g/vmlinux"
	printf '\177ELF GNU C Library (Debian GLIBC 2.99-1) stable release version 2.99.\n' >"$w/lib/$TRIPLET/libc.so.6"
	cp build/guest/initramfs.cpio "$g/initramfs.cpio"
	(cd "$w" && find lib | cpio -o -H newc --quiet) >>"$g/initramfs.cpio"
	# That guest boots when no host library is shared.
	out=$(QSUP_GUEST_DIR=$g "$QSUP" run --set warm_start=false -- cat /lib/$TRIPLET/libc.so.6)
	expect_match "the guest boots, with its libc.so.6" "release version 2.99" "$out"
	for mode in full sparse; do
		out=$(cd "$T_TMP" && QSUP_GUEST_DIR=$g "$QSUP" -v $PY --set ld_closure_libs=$mode -- python3 -c pass 2>"$T_TMP/err")
		rc=$?
		err=$(cat "$T_TMP/err")
		expect_eq "$mode: exit status" 125 "$rc"
		expect_match "$mode: both versions, the reason" \
		    "the guest's glibc is 2.99 \(/lib/$TRIPLET/libc.so.6 in $g/initramfs.cpio\) and the host's is $host .*older C library shared at" "$err"
		grep -q "booting" <<<"$err" && fail "$mode: QEMU was started"
	done
}

# A sparse start that fails after staging (QEMU cannot run) removes the
# staged closure with the run directory (expect_clean, after each test).
test_sparse_failed_start_leaves_nothing() {
	local rc
	(cd "$T_TMP" && QSUP_QEMU=/bin/false "$QSUP" -v --profile python --set ld_closure_libs=sparse -- python3 -c pass) 2>"$T_TMP/err"
	rc=$?
	expect_eq "exit status" 125 "$rc"
	expect_match "the closure was staged first" "sparse: the closure staged in $T_RUN/qsup/sb-" "$(cat "$T_TMP/err")"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
