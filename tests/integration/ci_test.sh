#!/usr/bin/env bash
# A pipeline's job with the shipped ci profile, as docs/ci.md
# writes it, on a real upstream C project: zlib, fetched at test time from
# Debian's source packages (tests/images/debian-source.sh: apt-get source
# against the mirror), built and
# tested with ./configure && make && make test. The profile's toolchain
# comes from its setup steps (apt-get install build-essential ccache from
# the mirror, kept as layers), the checkout is copy-on-write, the library
# comes back through /artifacts and ccache's objects stay in /cache: the
# second run hits every layer and every compile. The image is the Debian
# test image (tests/images/debian.sh) given with --set image=, since the
# profile's own, docker://debian:bookworm, is on Docker Hub, which this
# machine cannot reach.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# The job's ccache statistics, after its test.
JOB='./configure && make && make test && cp libz.so.1.* /artifacts/ &&
    ccache --print-stats | grep -E "^(direct|preprocessed)_cache_hit|^cache_miss"'

debian_image
# zlib's source, as Debian ships it (and the mirror the toolchain comes
# from: without it, there is nothing to test).
mkdir -p "$T_TMP/src"
rc=0
SRC=$(bash tests/images/debian-source.sh zlib "$T_TMP/src") || rc=$?
if [ $rc = 2 ]; then
	echo "  skip: ${QSUP_DEBIAN_MIRROR:-http://deb.debian.org/debian} cannot"
	echo "        be reached: no source package to build, no toolchain to"
	echo "        install (set QSUP_DEBIAN_MIRROR)"
	echo "0 passed, 0 failed"
	exit 0
elif [ $rc != 0 ] || [ ! -x "$SRC/configure" ]; then
	echo "apt-get source zlib failed (tests/images/debian-source.sh)"
	echo "0 passed, 1 failed"
	exit 1
fi
# setup's layers and everything else qsup keeps, this suite's own.
export XDG_DATA_HOME=$T_TMP/data

# Every entry of the checkout but qsup's own .qsup (artifacts and cache,
# which the first run makes, so the checkout's own directory is left out
# too): type, size, mode, mtime, link target, then every file's digest.
fingerprint() {
	(cd "$1" && find . -mindepth 1 -path ./.qsup -prune -o \
	    -printf '%p %y %s %m %T@ %l\n' | sort &&
	    find . -path ./.qsup -prune -o -type f -exec sha256sum {} + | sort)
}

# expect_tree WHAT BEFORE AFTER: two fingerprints the same, or the lines
# that differ.
expect_tree() {
	local d
	d=$(diff <(echo "$2") <(echo "$3") | head -n 20)
	[ -z "$d" ] || fail "$1 changed: $d"
}

# ci_job OUT: the job in the checkout, as a pipeline runs it; its stdout
# in OUT, its --json summary in OUT.json, its status returned.
ci_job() {
	(cd "$SRC" && env -u GITHUB_WORKSPACE -u CI_PROJECT_DIR -u WORKSPACE \
	    -u QSUP_ARTIFACTS -u QSUP_CACHE -u QSUP_CI_IMAGE "$QSUP" --profile ci --set image="$IMG" --json -- \
	    sh -c "$JOB") >"$1" 2>"$1.json"
}

# stat NAME OUT: ccache's counter NAME in the job's output.
ccache_stat() {
	sed -n "s/^$1[[:space:]]*//p" "$2"
}

test_configure_make_test_twice() {
	local before t0 t1 t2 out=$T_TMP/job1 out2=$T_TMP/job2 lib
	before=$(fingerprint "$SRC")
	t0=$(date +%s)
	ci_job "$out"
	expect_eq "the first run's status" 0 $?
	t1=$(date +%s)
	expect_match "zlib's own tests" '\*\*\* zlib test OK \*\*\*' "$(cat "$out")"
	expect_match "and the shared library's" '\*\*\* zlib shared test OK \*\*\*' \
	    "$(cat "$out")"
	expect_match "every setup step built" \
	    '"layers":\[\{"step":"apt-get update",[^]]*"result":"built".*"result":"built".*"result":"built"' \
	    "$(tail -n 1 "$out.json")"
	lib=$(ls "$SRC"/.qsup/artifacts/libz.so.1.* 2>/dev/null | head -n 1)
	[ -n "$lib" ] || fail "no libz.so.1.* in .qsup/artifacts"
	[ "$(head -c 4 "$lib" | od -An -c | tr -d ' ')" = '177ELF' ] ||
	    fail "the artifact is not an ELF file"
	expect_tree "the checkout after the build" "$before" "$(fingerprint "$SRC")"
	[ ! -e "$SRC/config.log" ] && [ ! -e "$SRC/libz.a" ] ||
	    fail "the build's files reached the host's checkout"
	expect_eq "first run: compiles missed" 0 \
	    "$(($(ccache_stat direct_cache_hit "$out") + $(ccache_stat preprocessed_cache_hit "$out")))"

	# The second run: every layer a hit, every compile from /cache.
	rm -f "$SRC"/.qsup/artifacts/*
	ci_job "$out2"
	expect_eq "the second run's status" 0 $?
	t2=$(date +%s)
	expect_match "zlib's tests again" '\*\*\* zlib test OK \*\*\*' "$(cat "$out2")"
	expect_match "every layer a hit" \
	    '"layers":\[\{"step":"apt-get update",[^]]*"result":"hit".*"result":"hit".*"result":"hit"' \
	    "$(tail -n 1 "$out2.json")"
	expect_eq "the second run starts warm" '"warm"' "$(json_field start "$out2.json")"
	[ "$(ccache_stat direct_cache_hit "$out2")" -ge 40 ] 2>/dev/null ||
	    fail "ccache hits in the second run: $(ccache_stat direct_cache_hit "$out2") (expected every compile, 40 and more)"
	ls "$SRC"/.qsup/artifacts/libz.so.1.* >/dev/null 2>&1 ||
	    fail "no artifact from the second run"
	expect_tree "the checkout after both" "$before" "$(fingerprint "$SRC")"
	echo "    first run $((t1 - t0)) s (setup $(sed -n 's/.*"prepare_s":\([0-9.]*\).*/\1/p' "$out.json") s), second run $((t2 - t1)) s"
}

# The job's sandbox: no network card, the profile's environment, its
# timeout; the layers built above are hits (built again if that failed).
test_job_is_confined() {
	local out st
	out=$(cd "$SRC" && env -u GITHUB_WORKSPACE -u CI_PROJECT_DIR \
	    -u WORKSPACE "$QSUP" --profile ci --set image="$IMG" -- \
	    sh -c 'echo "CI=$CI"; ls /sys/class/net; pwd; command -v gcc; echo "$CCACHE_DIR"')
	expect_eq "status" 0 $?
	expect_match "env" '^CI=true$' "$out"
	expect_match "in the checkout" '^/src$' "$out"
	expect_match "gcc through ccache" '^/usr/lib/ccache/gcc$' "$out"
	expect_match "ccache's directory in the cache share" '^/cache/ccache$' "$out"
	if grep -q '^eth' <<<"$out"; then
		fail "network = none, yet the guest has a card: $out"
	fi
	(cd "$SRC" && env -u GITHUB_WORKSPACE -u CI_PROJECT_DIR -u WORKSPACE \
	    "$QSUP" --profile ci --set image="$IMG" --set timeout=2 \
	    -- sleep 30) 2>"$T_TMP/err"
	st=$?
	expect_eq "the profile's timeout" 124 $st
	expect_match "message" 'timed out' "$(cat "$T_TMP/err")"
}

run_test test_configure_make_test_twice
run_test test_job_is_confined
finish
