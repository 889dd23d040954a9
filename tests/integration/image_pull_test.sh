#!/usr/bin/env bash
# qsup image pull | ls | rm against a real HTTP(S) server on 127.0.0.1
# (helpers/httpd.py: Range, and faults chosen by the path): a pull, a
# cached pull making no request, a dropped transfer resumed, an
# interrupted qsup resumed with Range, a wrong digest, no checksum file,
# --unverified, a 404, a stalled server, two pulls at once downloading
# once, a full images_dir, HTTPS with the test's own CA, SHA512SUMS,
# a redirect, a server ignoring Range, progress lines (none under --json),
# ls, rm, and rm refused while a sandbox uses the image; a body that never
# ends (stopped at image_max_size, or at the room left on the disk), a
# Content-Length over either (refused before a byte is written), a body
# short of its Content-Length, a redirect to file://. After each failure
# the whole of images_dir is listed: no image, no lock, no temporary file,
# and no part unless the connection stalled or dropped (kept for the next
# pull to resume). No QEMU is needed.
. "$(dirname "$0")/lib.sh"

W=$T_TMP/www
LOG=$T_TMP/httpd.log
SRV_PIDS=()
trap 'for p in "${SRV_PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$T_TMP"' EXIT

# start_server PORTFILE [--tls CERT KEY]: the server, its port in PORTFILE.
start_server() {
	local pf=$1; shift
	/usr/bin/python3 tests/integration/helpers/httpd.py "$@" "$W" "$pf" \
	    "$LOG" </dev/null >/dev/null 2>&1 &
	SRV_PIDS+=($!)
	for _ in $(seq 100); do [ -s "$pf" ] && break; sleep 0.1; done
	[ -s "$pf" ] || { echo "httpd.py did not start"; exit 1; }
}

mkdir -p "$W/good" "$W/nosums" "$W/wrong" "$W/debian"
head -c 3000000 /dev/urandom >"$W/good/disk.img"
(cd "$W/good" && { echo "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  other.img"; sha256sum disk.img; } >SHA256SUMS)
cp "$W/good/disk.img" "$W/nosums/disk.img"
cp "$W/good/disk.img" "$W/wrong/disk.img"
WRONG=$(printf '%064d' 0 | tr 0 e)
echo "$WRONG *disk.img" >"$W/wrong/SHA256SUMS"
cp "$W/good/disk.img" "$W/debian/disk.img"
(cd "$W/debian" && sha512sum disk.img >SHA512SUMS)
GOOD256=$(sha256sum <"$W/good/disk.img" | cut -d' ' -f1)
: >"$LOG"
start_server "$T_TMP/port"
URL=http://127.0.0.1:$(cat "$T_TMP/port")

# The test's own CA (a self-signed certificate) for HTTPS.
HTTPS=""
if openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$T_TMP/key.pem" \
    -out "$T_TMP/cert.pem" >/dev/null 2>&1; then
	start_server "$T_TMP/tlsport" --tls "$T_TMP/cert.pem" "$T_TMP/key.pem"
	HTTPS=https://127.0.0.1:$(cat "$T_TMP/tlsport")
fi

# pull ARGS...: qsup image pull into this test's images_dir; OUT ERR RC.
pull() {
	OUT=$("$QSUP" image pull "$@" 2>"$T_TMP/err"); RC=$?
	ERR=$(cat "$T_TMP/err")
}

# What the server saw since this test's setup; how many requests for a
# path (a fixed string).
log_since() { tail -n +$((LOG_AT + 1)) "$LOG"; }
requests() { log_since | grep -cF -- "$1 " || true; }

# Everything in images_dir (hidden files too), on one line, sorted.
images_tree() {
	(cd "$XDG_DATA_HOME/qsup/images" 2>/dev/null &&
	    find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort | tr '\n' ' ' |
	    sed 's/ $//')
}

# Nothing of a failed pull: no image, no .meta, no part, no lock, no
# temporary file, no .partial.
expect_nothing_left() {
	expect_eq "left in images_dir" "" "$(images_tree)"
}

# expect_part_kept NAME: a pull that stopped where the next one resumes:
# the part and its URL, and nothing else (no lock).
expect_part_kept() {
	expect_eq "in images_dir" ".partial .partial/$1 .partial/$1.url" \
	    "$(images_tree)"
}

# Each test its own images_dir.
setup() {
	export XDG_DATA_HOME=$T_TMP/$1/data
	LOG_AT=$(wc -l <"$LOG")
	unset QSUP_IMAGE_STALL_TIMEOUT SSL_CERT_FILE CURL_CA_BUNDLE
}

test_pull() {
	setup test_pull
	pull "$URL/good/disk.img"
	expect_eq "status" 0 "$RC"
	expect_eq "path" "$XDG_DATA_HOME/qsup/images/disk.img" "$OUT"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
	expect_eq "mode of images_dir" 700 \
	    "$(stat -c %a "$XDG_DATA_HOME/qsup/images")"
	expect_match "meta" "\"url\":\"$URL/good/disk.img\"" \
	    "$(cat "$OUT.meta" 2>/dev/null)"
	expect_match "meta" "\"sha256\":\"$GOOD256\"" "$(cat "$OUT.meta")"
	expect_eq "images_dir" "disk.img disk.img.meta" "$(images_tree)"
}

test_cached_no_request() {
	local n
	setup test_cached_no_request
	pull "$URL/good/disk.img"
	expect_eq "first pull" 0 "$RC"
	n=$(wc -l <"$LOG")
	pull "$URL/good/disk.img"
	expect_eq "second pull" 0 "$RC"
	expect_eq "requests of the second pull" "$n" "$(wc -l <"$LOG")"
	pull --json "$URL/good/disk.img"
	expect_match "json" '"cached":true' "$OUT"
}

test_dropped_resumes() {
	setup test_dropped_resumes
	pull "$URL/drop/1000000/good/disk.img"
	expect_eq "status" 0 "$RC"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
	expect_match "said" "dropped at 1000000 bytes.*resuming" "$ERR"
	expect_match "server saw the resume" \
	    "^/drop/1000000/good/disk.img range=bytes=1000000- status=206" \
	    "$(log_since)"
}

# interrupt SIGNAL STATUS: a slow pull killed half-way, then pulled again.
interrupt() {
	local pid part size i
	part=$XDG_DATA_HOME/qsup/images/.partial/disk.img
	"$QSUP" image pull "$URL/slow/1000000/good/disk.img" \
	    >/dev/null 2>"$T_TMP/err1" &
	pid=$!
	for i in $(seq 100); do
		size=$(stat -c %s "$part" 2>/dev/null || echo 0)
		[ "$size" -gt 500000 ] && break
		sleep 0.1
	done
	kill -"$1" "$pid"
	{ wait "$pid"; } 2>/dev/null
	expect_eq "status of the pull killed by SIG$1" "$2" "$?"
	size=$(stat -c %s "$part" 2>/dev/null || echo 0)
	[ "$size" -gt 0 ] && [ "$size" -lt 3000000 ] ||
	    fail "no part kept after SIG$1 (size $size)"
	[ "$1" = KILL ] || expect_part_kept disk.img
	pull "$URL/slow/1000000/good/disk.img"
	expect_eq "status of the next pull" 0 "$RC"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
	expect_match "server saw a Range request" \
	    "^/slow/1000000/good/disk.img range=bytes=[1-9][0-9]*- status=206" \
	    "$(log_since)"
	expect_match "said" "resuming the part left at [0-9]+ bytes" "$ERR"
	[ ! -e "$part" ] || fail "the part is still there"
	# A lock a killed qsup left goes with the next pull's.
	expect_eq "images_dir" "disk.img disk.img.meta" "$(images_tree)"
}

test_interrupted_resumes() {
	setup test_interrupted_resumes
	interrupt TERM 143
	setup test_interrupted_resumes/kill
	interrupt KILL 137
}

test_server_ignores_range() {
	setup test_server_ignores_range
	pull "$URL/drop/1000000/badrange/good/disk.img"
	expect_eq "status" 0 "$RC"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
	expect_match "said" "Content-Range is not what was asked" "$ERR"
	rm -rf "$XDG_DATA_HOME"
	pull "$URL/drop/1000000/norange/good/disk.img"
	expect_eq "status, Range ignored" 0 "$RC"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
	expect_match "said" "sent it whole \(HTTP 200\), not from 1000000" "$ERR"
}

test_whole_part_kept() {
	local d
	setup test_whole_part_kept
	d=$XDG_DATA_HOME/qsup/images/.partial
	mkdir -p "$d"
	cp "$W/good/disk.img" "$d/disk.img"
	printf '%s' "$URL/redirect/good/disk.img" >"$d/disk.img.url"
	pull "$URL/redirect/good/disk.img"
	expect_eq "status" 0 "$RC"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
	expect_match "asked from its end" \
	    "^/good/disk.img range=bytes=3000000- status=416" "$(log_since)"
	expect_eq "whole GETs" 0 \
	    "$(log_since | grep -c '^/good/disk.img range=- status=200 method=GET' || true)"
}

test_same_name_at_once() {
	local a b
	setup test_same_name_at_once
	"$QSUP" image pull "$URL/slow/3000000/good/disk.img" >"$T_TMP/a" \
	    2>"$T_TMP/ea" & a=$!
	"$QSUP" image pull --sha256 "$GOOD256" \
	    "$URL/slow/3000001/nosums/disk.img" >"$T_TMP/b" 2>"$T_TMP/eb" & b=$!
	wait "$a"; expect_eq "first's status" 0 "$?"
	wait "$b"; expect_eq "second's status" 0 "$?"
	[ "$(cat "$T_TMP/a")" != "$(cat "$T_TMP/b")" ] ||
	    fail "both in $(cat "$T_TMP/a")"
	expect_match "first's .meta" "slow/3000000/good/disk.img" \
	    "$(cat "$(cat "$T_TMP/a").meta")"
	expect_match "second's .meta" "slow/3000001/nosums/disk.img" \
	    "$(cat "$(cat "$T_TMP/b").meta")"
	# The hex prefix sorts before or after "disk.img" by its first digits.
	expect_match "images_dir" \
	    "^([0-9a-f]{8}-disk.img [0-9a-f]{8}-disk.img.meta disk.img disk.img.meta|disk.img disk.img.meta [0-9a-f]{8}-disk.img [0-9a-f]{8}-disk.img.meta)$" \
	    "$(images_tree)"
}

test_redirects_bounded() {
	setup test_redirects_bounded
	pull --unverified "$URL$(printf '/redirect%.0s' $(seq 11))/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "[Rr]edirect" "$ERR"
	expect_nothing_left
}

test_profile() {
	local out
	setup test_profile
	mkdir -p "$T_TMP/test_profile/imgs"
	cat >"$T_TMP/test_profile/p.lua" <<LUA
return { image = "$URL/good/disk.img", images_dir = "$T_TMP/test_profile/imgs" }
LUA
	pull -p "$T_TMP/test_profile/p.lua"
	expect_eq "status" 0 "$RC"
	expect_eq "path" "$T_TMP/test_profile/imgs/disk.img" "$OUT"
	out=$("$QSUP" image ls -p "$T_TMP/test_profile/p.lua")
	expect_match "ls" "^disk.img  3.0 MB" "$out"
	pull --set images_dir="$T_TMP/test_profile/imgs" "$URL/debian/disk.img"
	expect_eq "--set" 0 "$RC"
	expect_match "--set: beside it" "^$T_TMP/test_profile/imgs/[0-9a-f]{8}-disk.img$" "$OUT"
	pull
	expect_eq "no image" 125 "$RC"
	expect_match "no image" "no image named" "$ERR"
	pull ./some/file.img
	expect_eq "a file" 125 "$RC"
	pull -p "$T_TMP/test_profile/nothere.lua"
	expect_eq "no profile" 125 "$RC"
}

test_wrong_digest() {
	setup test_wrong_digest
	pull "$URL/wrong/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "SHA-256 mismatch: expected $WRONG .*got $GOOD256" \
	    "$ERR"
	expect_nothing_left
	pull --sha256 "$WRONG" "$URL/good/disk.img"
	expect_eq "status, pinned" 125 "$RC"
	expect_match "error, pinned" "mismatch: expected $WRONG \(SHA-256 pinned" \
	    "$ERR"
	expect_nothing_left
}

test_missing_sums() {
	setup test_missing_sums
	pull "$URL/nosums/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "nosums/disk.img: no digest.*SHA256SUMS: HTTP 404.*SHA512SUMS: HTTP 404" "$ERR"
	expect_eq "GETs of the image" 0 \
	    "$(log_since | grep -c '^/nosums/disk.img .*method=GET' || true)"
	expect_nothing_left
}

test_unverified_ok() {
	setup test_unverified_ok
	pull --unverified "$URL/nosums/disk.img"
	expect_eq "status" 0 "$RC"
	expect_match "warning" "no digest.*unverified" "$ERR"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs"
	pull --sha256 "$GOOD256" "$URL/nosums/disk.img"
	expect_eq "status, pinned: cached" 0 "$RC"
}

test_sha512sums() {
	setup test_sha512sums
	pull "$URL/debian/disk.img"
	expect_eq "status" 0 "$RC"
	expect_match "meta" "SHA-512 $URL/debian/SHA512SUMS" \
	    "$(cat "$OUT.meta" 2>/dev/null)"
}

test_404() {
	setup test_404
	pull "$URL/404/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "$URL/404/good/disk.img: HTTP 404" "$ERR"
	expect_nothing_left
	pull --unverified "$URL/good/none.img"
	expect_eq "status, no sums asked" 125 "$RC"
	expect_match "error" "good/none.img: HTTP 404" "$ERR"
	expect_nothing_left
}

# A stall keeps the part: what came is what the server sent, and the
# next pull resumes it.
test_stall() {
	local t0=$SECONDS
	setup test_stall
	export QSUP_IMAGE_STALL_TIMEOUT=2
	pull "$URL/stall/1000000/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "stall/1000000/good/disk.img: stalled: no data for 2 s.*the part \(1000000 bytes\) is kept" "$ERR"
	[ $((SECONDS - t0)) -le 15 ] || fail "took $((SECONDS - t0)) s"
	expect_part_kept disk.img
	pull "$URL/stall/1000000/good/disk.img"
	expect_match "resumed" "resuming the part left at 1000000 bytes" "$ERR"
	expect_part_kept disk.img
}

# A body that never ends, the digest pinned: stopped at image_max_size,
# nothing kept.
test_endless_body() {
	local t0=$SECONDS
	setup test_endless_body
	pull --sha256 "$GOOD256" --set image_max_size=10M "$URL/endless/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "endless/good/disk.img: the body goes past image_max_size, 10485760 bytes: stopped; the part is removed" "$ERR"
	[ $((SECONDS - t0)) -le 20 ] || fail "took $((SECONDS - t0)) s"
	expect_nothing_left
	# Its checksum file never ends either: bounded as well.
	pull --set image_max_size=10M "$URL/endless/good/disk.img"
	expect_eq "status, unpinned" 125 "$RC"
	expect_match "error, unpinned" "SHA256SUMS: over [0-9]+ bytes" "$ERR"
	expect_nothing_left
}

# A Content-Length over the cap: refused before any byte is written (the
# slow server would take 30 s to send its 3 MB).
test_huge_length() {
	local t0=$SECONDS d
	setup test_huge_length
	d=$XDG_DATA_HOME/qsup/images
	pull --sha256 "$GOOD256" --set image_max_size=1M "$URL/slow/100000/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "slow/100000/good/disk.img: its size, 3000000 bytes \(Content-Length\), is more than image_max_size, 1048576 bytes: not downloaded" "$ERR"
	[ $((SECONDS - t0)) -le 10 ] || fail "took $((SECONDS - t0)) s"
	expect_nothing_left
	# 1 PB: more than the disk has, whatever image_max_size says.
	pull --sha256 "$GOOD256" --set image_max_size=2T "$URL/huge/slow/100000/good/disk.img"
	expect_eq "status, 1 PB" 125 "$RC"
	expect_match "error, 1 PB" "its size, 1000000000000000 bytes \(Content-Length\), is more than the room in $d, [0-9]+ bytes \(its free space less a margin of [0-9]+\): not downloaded" "$ERR"
	[ $((SECONDS - t0)) -le 20 ] || fail "took $((SECONDS - t0)) s"
	expect_nothing_left
}

# A body short of its Content-Length, every time: a dropped connection,
# resumed 5 times, then given up with the part kept; the next pull
# resumes it.
test_short_body() {
	setup test_short_body
	pull --sha256 "$GOOD256" "$URL/short/1000/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "short/1000/good/disk.img: .*\(6000 of 3000000 bytes there\); the part \(6000 bytes\) is kept" "$ERR"
	expect_part_kept disk.img
	pull --sha256 "$GOOD256" "$URL/short/1000/good/disk.img"
	expect_match "resumed" "resuming the part left at 6000 bytes" "$ERR"
	expect_match "server saw it" "^/short/1000/good/disk.img range=bytes=6000- status=206" \
	    "$(log_since)"
	expect_part_kept disk.img
	# qsup image rm takes a kept part, and .partial with it.
	"$QSUP" image rm disk.img >/dev/null
	expect_eq "rm of a part" 0 "$?"
	expect_nothing_left
}

# A redirect to file:// is not followed, for the image or its checksums.
test_redirect_to_file() {
	setup test_redirect_to_file
	pull --sha256 "$GOOD256" "$URL/tofile/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "tofile/good/disk.img: .*\"?file\"? not supported" "$ERR"
	expect_nothing_left
	pull "$URL/tofile/good/disk.img"
	expect_eq "status, checksums" 125 "$RC"
	expect_match "error, checksums" "tofile/good/SHA256SUMS: .*\"?file\"? not supported" "$ERR"
	expect_nothing_left
}

test_redirect() {
	setup test_redirect
	pull "$URL/redirect/good/disk.img"
	expect_eq "status" 0 "$RC"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
}

test_concurrent() {
	local a b ra rb
	setup test_concurrent
	"$QSUP" image pull "$URL/slow/3000000/good/disk.img" >"$T_TMP/a" \
	    2>"$T_TMP/ea" & a=$!
	"$QSUP" image pull "$URL/slow/3000000/good/disk.img" >"$T_TMP/b" \
	    2>"$T_TMP/eb" & b=$!
	wait "$a"; ra=$?
	wait "$b"; rb=$?
	expect_eq "first's status" 0 "$ra"
	expect_eq "second's status" 0 "$rb"
	expect_eq "same path" "$(cat "$T_TMP/a")" "$(cat "$T_TMP/b")"
	expect_eq "images_dir" "disk.img disk.img.meta" "$(images_tree)"
	expect_eq "downloads" 1 "$(requests /slow/3000000/good/disk.img)"
	expect_match "one waited" "another qsup is pulling it" \
	    "$(cat "$T_TMP/ea" "$T_TMP/eb")"
	cmp -s "$(cat "$T_TMP/a")" "$W/good/disk.img" || fail "the image differs"
}

# images_dir on a 4 MB tmpfs: a Content-Length over its room is refused,
# a body that never ends stops at it, and a disk that another writer
# fills meanwhile (ENOSPC) ends the pull; nothing kept of any.
test_full_disk() {
	local d pid i
	setup test_full_disk
	d=$XDG_DATA_HOME/qsup/images
	mkdir -p "$d"
	if ! mount -t tmpfs -o size=4m tmpfs "$d" 2>"$T_TMP/mnt"; then
		echo "    SKIP test_full_disk: mount refused: $(cat "$T_TMP/mnt")"
		return
	fi
	head -c 2000000 /dev/zero >"$d/other"
	pull "$URL/good/disk.img"
	expect_eq "status" 125 "$RC"
	expect_match "error" "good/disk.img: its size, 3000000 bytes \(Content-Length\), is more than the room in $d, [0-9]+ bytes" "$ERR"
	rm -f "$d/other"
	expect_nothing_left
	pull --sha256 "$GOOD256" "$URL/endless/good/disk.img"
	expect_eq "status, endless" 125 "$RC"
	expect_match "error, endless" "the body goes past the room in $d, [0-9]+ bytes" "$ERR"
	expect_nothing_left
	"$QSUP" image pull --sha256 "$GOOD256" \
	    "$URL/slow/400000/endless/good/disk.img" >/dev/null \
	    2>"$T_TMP/err" & pid=$!
	for i in $(seq 100); do
		[ "$(stat -c %s "$d/.partial/disk.img" 2>/dev/null || echo 0)" \
		    -gt 400000 ] && break
		sleep 0.1
	done
	head -c 8000000 /dev/zero >"$d/fill" 2>/dev/null
	wait "$pid"
	expect_eq "status, disk filled" 125 "$?"
	expect_match "error, disk filled" "disk.img: no space left in $d" \
	    "$(cat "$T_TMP/err")"
	rm -f "$d/fill"
	expect_nothing_left
	umount "$d"
}

test_https() {
	setup test_https
	if [ -z "$HTTPS" ]; then
		echo "    SKIP test_https: openssl could not make a certificate"
		return
	fi
	pull "$HTTPS/good/disk.img"
	expect_eq "status, CA unknown" 125 "$RC"
	expect_match "error" "SSL|certificate" "$ERR"
	expect_nothing_left
	SSL_CERT_FILE=$T_TMP/cert.pem pull "$HTTPS/good/disk.img"
	expect_eq "status, SSL_CERT_FILE" 0 "$RC"
	cmp -s "$OUT" "$W/good/disk.img" || fail "the image differs: $ERR"
	rm -rf "$XDG_DATA_HOME"
	CURL_CA_BUNDLE=$T_TMP/cert.pem pull "$HTTPS/drop/500000/good/disk.img"
	expect_eq "status, CURL_CA_BUNDLE, resumed" 0 "$RC"
}

test_progress() {
	local a b
	setup test_progress
	# Not a TTY: a line every few seconds; --json: nothing at all.
	"$QSUP" image pull "$URL/slow/500000/good/disk.img" >/dev/null \
	    2>"$T_TMP/ea" & a=$!
	XDG_DATA_HOME=$XDG_DATA_HOME/json "$QSUP" image pull --json \
	    "$URL/slow/500000/good/disk.img" >"$T_TMP/ja" 2>"$T_TMP/eb" & b=$!
	wait "$a"; expect_eq "status" 0 "$?"
	wait "$b"; expect_eq "status, --json" 0 "$?"
	expect_match "progress line" \
	    "^qsup: pulling disk.img: [0-9.]+ of 3.0 MB, [0-9.]+ MB/s, [0-9:]+ left$" \
	    "$(cat "$T_TMP/ea")"
	expect_eq "stderr under --json" "" "$(cat "$T_TMP/eb")"
	expect_match "--json" '^\{"path":".*/json/qsup/images/disk.img","url":".*","cached":false\}$' \
	    "$(cat "$T_TMP/ja")"
}

test_ls_rm() {
	local out
	setup test_ls_rm
	pull "$URL/good/disk.img"
	pull "$URL/debian/disk.img"
	out=$("$QSUP" image ls)
	expect_match "ls" "^disk.img  3.0 MB  ${GOOD256:0:12}  $URL/good/disk.img$" "$out"
	expect_match "ls, same name, other URL" \
	    "^[0-9a-f]{8}-disk.img .*$URL/debian/disk.img$" "$out"
	out=$("$QSUP" image ls --json)
	expect_eq "ls --json" "disk.img $GOOD256 3000000 None" \
	    "$(python3 -c 'import json,sys; i=json.load(sys.stdin)["images"]; print(*[(x["name"],x["sha256"],x["size"],x["in_use_by"]) for x in i if x["name"]=="disk.img"][0])' <<<"$out")"
	out=$("$QSUP" image rm disk.img); expect_eq "rm" "removed disk.img" "$out"
	[ ! -e "$XDG_DATA_HOME/qsup/images/disk.img" ] || fail "still there"
	[ ! -e "$XDG_DATA_HOME/qsup/images/disk.img.meta" ] || fail ".meta left"
	"$QSUP" image rm disk.img 2>"$T_TMP/err"
	expect_eq "rm again" 125 "$?"
	expect_match "rm again" "no image disk.img in" "$(cat "$T_TMP/err")"
}

test_rm_in_use() {
	local sb=$T_RUN/qsup/sb-fake sleeper out
	setup test_rm_in_use
	pull "$URL/good/disk.img"
	mkdir -p "$sb"; chmod 700 "$T_RUN/qsup"
	sleep 60 & sleeper=$!
	echo "$sleeper" >"$sb/pid"
	echo "$OUT" >"$sb/image"
	out=$("$QSUP" image ls)
	expect_match "ls" "in use by sb-fake \(process $sleeper\)" "$out"
	"$QSUP" image rm disk.img 2>"$T_TMP/err"
	expect_eq "rm refused" 125 "$?"
	expect_match "rm refused" "disk.img is in use by sandbox sb-fake \(process $sleeper\)" \
	    "$(cat "$T_TMP/err")"
	[ -e "$OUT" ] || fail "removed anyway"
	kill "$sleeper"; wait "$sleeper" 2>/dev/null
	out=$("$QSUP" image rm disk.img)
	expect_eq "rm once the sandbox is gone" "removed disk.img" "$out"
	rm -rf "$sb"
}

echo "image pull tests"
for t in test_pull test_cached_no_request test_dropped_resumes \
    test_interrupted_resumes test_server_ignores_range test_whole_part_kept \
    test_same_name_at_once test_redirects_bounded test_profile test_wrong_digest \
    test_missing_sums test_unverified_ok test_sha512sums test_404 test_stall \
    test_redirect test_concurrent test_full_disk test_https test_progress \
    test_ls_rm test_rm_in_use test_endless_body test_huge_length \
    test_short_body test_redirect_to_file; do
	run_test "$t"
done
finish
