#!/usr/bin/env bash
# Images from OCI registries: docker://REF pulled from a real registry
# (Debian's docker-registry) that the test starts on 127.0.0.1, plain and
# with TLS and htpasswd, holding images pushed with skopeo from layouts
# helpers/oci_images.py writes (gzip, zstd, a multi-platform index, an
# upper layer that deletes and replaces lower files); each image booted
# and its files looked at. Faults come from helpers/registry_proxy.py in
# front of the plain registry: a bearer challenge, a connection dropped
# mid-blob, a wrong blob, a stall, 401/404/429/500. Every registry and
# proxy is killed at the end.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

HELP=$PWD/tests/integration/helpers
O=$(mktemp -d /tmp/qsup-oci.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	rm -rf "$T_TMP" "$O"
}
trap cleanup EXIT

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT: 0 once something listens there (5 s at most).
wait_port() {
	local i
	for i in $(seq 1 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# start_registry NAME [tls]: a docker-registry of its own storage on a
# free port (REG_PORT); with tls, HTTPS with a self-signed certificate
# (O/NAME/cert.pem) and htpasswd auth (user "qsup", password "s3cret").
start_registry() {
	local d=$O/$1 extra=""
	mkdir -p "$d"
	REG_PORT=$(free_port)
	if [ "${2:-}" = tls ]; then
		openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
		    -addext subjectAltName=IP:127.0.0.1 -keyout "$d/key.pem" \
		    -out "$d/cert.pem" 2>/dev/null
		python3 -c 'import crypt, sys; print("qsup:" + crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)))' \
		    2>/dev/null >"$d/htpasswd"
		extra="  tls:
    certificate: $d/cert.pem
    key: $d/key.pem
auth:
  htpasswd:
    realm: qsup-test
    path: $d/htpasswd"
	fi
	cat >"$d/config.yml" <<-CONF
	version: 0.1
	log:
	  level: info
	  accesslog:
	    disabled: false
	storage:
	  filesystem:
	    rootdirectory: $d/store
	  delete:
	    enabled: true
	http:
	  addr: 127.0.0.1:$REG_PORT
	$extra
	CONF
	docker-registry serve "$d/config.yml" >"$d/log" 2>&1 &
	PIDS+=($!)
	wait_port "$REG_PORT" || { echo "docker-registry did not start"; cat "$d/log"; exit 1; }
}

# start_proxy MODE: registry_proxy.py before the plain registry, on
# PROXY_PORT, its requests in PROXY_LOG.
start_proxy() {
	PROXY_PORT=$(free_port)
	PROXY_LOG=$O/proxy.$PROXY_PORT.log
	: >"$PROXY_LOG"
	python3 "$HELP/registry_proxy.py" "$PROXY_PORT" "$PLAIN" "$1" \
	    "$PROXY_LOG" 2>>"$O/proxy.err" &
	PIDS+=($!)
	wait_port "$PROXY_PORT" || { fail "the proxy did not start"; return 1; }
}

stop_proxy() {
	kill "${PIDS[-1]}" 2>/dev/null
	wait "${PIDS[-1]}" 2>/dev/null
	unset 'PIDS[-1]'
}

# push LAYOUT HOST:PORT/NAME:TAG [skopeo options]
push() {
	local src=$1 dst=$2
	shift 2
	skopeo copy -q --dest-tls-verify=false "$@" "oci:$src:latest" \
	    "docker://$dst" >/dev/null 2>>"$O/skopeo.err" ||
	    { echo "skopeo could not push $dst"; cat "$O/skopeo.err"; exit 1; }
}

# A fresh images_dir for each test.
fresh_images() {
	export XDG_DATA_HOME=$T_TMP/$1/data
	IMAGES=$XDG_DATA_HOME/qsup/images
}

boot() {
	local img=$1
	shift
	"$QSUP" run --set image="$img" --set warm_start=false "$@"
}

# What every image here must show: the upper layer's deletion, opaque
# directory and replacement, the base's owners, set-uid bit, hard link.
CHECK='cat /etc/flavor /etc/passwd; ls /etc/gone 2>&1; ls /opt/o; stat -c "%a %u" /bin/suid; stat -c "%u %g" /etc/flavor; stat -c %h /home/u/f; echo "$QSUP_IMG"'

expect_files() {
	local out
	out=$(grep -v '^qsup: ' <<<"$2")
	expect_eq "$1: the flavor file" "$1" "$(sed -n 1p <<<"$out")"
	expect_eq "$1: replaced by the upper layer" \
	    "root:x:0:0:replaced:/root:/bin/sh" "$(sed -n 2p <<<"$out")"
	expect_match "$1: deleted by a whiteout" "No such file" "$(sed -n 3p <<<"$out")"
	expect_eq "$1: the opaque directory" "new" "$(sed -n 4p <<<"$out")"
	expect_eq "$1: set-uid root" "4755 0" "$(sed -n 5p <<<"$out")"
	expect_eq "$1: the layer's owner" "42 43" "$(sed -n 6p <<<"$out")"
	expect_eq "$1: a hard link" "2" "$(sed -n 7p <<<"$out")"
	expect_eq "$1: the config's Env" "from-registry" "$(sed -n 8p <<<"$out")"
}

# count_blob_gets LOG NAME: GETs of NAME's blobs in a registry's log.
count_blob_gets() {
	grep -c "\"GET /v2/$2/blobs/sha256:" "$1" || true
}

for k in gzip zstd multi arm shared latewh ownwh; do
	python3 "$HELP/oci_images.py" "$k" "$O/$k" >"$O/$k.digest"
done
start_registry plain
PLAIN=$REG_PORT
for k in gzip zstd shared latewh ownwh; do
	push "$O/$k" "127.0.0.1:$PLAIN/t/$k:1"
done
push "$O/gzip" "127.0.0.1:$PLAIN/t/v2s2:1" --format v2s2
push "$O/multi" "127.0.0.1:$PLAIN/t/multi:1" --all
push "$O/arm" "127.0.0.1:$PLAIN/t/arm:1" --all
start_registry secure tls
SECURE=$REG_PORT
push "$O/gzip" "127.0.0.1:$SECURE/t/gzip:1" --dest-creds qsup:s3cret

test_pull_gzip_boots() {
	local out ref=docker://127.0.0.1:$PLAIN/t/gzip:1
	fresh_images gzip
	out=$("$QSUP" image pull "$ref" 2>&1)
	expect_eq "exit" 0 $?
	expect_match "the image's path" "^$IMAGES/oci-[0-9a-f]{16}\.qcow2$" "$out"
	out=$("$QSUP" image ls 2>&1)
	expect_match "ls: the reference and the digest" \
	    "oci-.*$(cut -c8-19 "$O/gzip.digest").*docker://127.0.0.1:$PLAIN/t/gzip:1" "$out"
	out=$(boot "$ref" -- sh -c "$CHECK" 2>&1)
	expect_eq "boot exit" 0 $?
	expect_files gzip "$out"
	# The guest's busybox has no getfattr: the file system's own view.
	qemu-img convert -O raw "$IMAGES"/oci-*.qcow2 "$T_TMP/fs.raw"
	out=$(debugfs -R "ea_list /bin/capped" "$T_TMP/fs.raw?offset=1048576" 2>/dev/null)
	rm -f "$T_TMP/fs.raw"
	expect_match "xattrs kept" 'user.qsup.*hello' "$out"
	expect_match "a file capability kept" 'security.capability' "$out"
}

# The layers are extracted while they download (-v says so), whiteouts
# and the opaque directory between a layer's entries applied there.
test_stream_extracts_while_downloading() {
	local out
	fresh_images stream
	out=$("$QSUP" image pull -v "docker://127.0.0.1:$PLAIN/t/zstd:1" 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "both layers extracted as they came" 2 \
	    "$(grep -c 'extracting it as it downloads' <<<"$out")"
	expect_eq "never stopped for the classic build" 0 \
	    "$(grep -c 'as they come stopped' <<<"$out")"
	out=$(boot "docker://127.0.0.1:$PLAIN/t/zstd:1" -- sh -c "$CHECK" 2>&1)
	expect_files zstd "$out"
}

# A whiteout after a layer's first entries: applied there (the layer's
# own files after it stay); one of a file the layer holds itself stops
# the streaming, and the classic build keeps that file, as the OCI spec
# has it (a whiteout is of the layers below).
test_stream_late_whiteouts() {
	local out k
	for k in latewh ownwh; do
		fresh_images "$k"
		out=$("$QSUP" image pull -v "docker://127.0.0.1:$PLAIN/t/$k:1" 2>&1)
		expect_eq "$k: exit" 0 $?
		if [ $k = latewh ]; then
			expect_eq "$k: streamed to the end" 0 \
			    "$(grep -c 'as they come stopped' <<<"$out")"
		else
			expect_match "$k: stopped, built from the cache" \
			    "as they come stopped \(layer sha256:[0-9a-f]{64}: a whiteout of what the layer itself holds\)" "$out"
		fi
		out=$(boot "docker://127.0.0.1:$PLAIN/t/$k:1" -- sh -c \
		    'cat /etc/new /etc/after; ls /etc/motd 2>&1; true' 2>&1)
		expect_eq "$k: boot exit" 0 $?
		out=$(grep -v '^qsup: ' <<<"$out")
		expect_eq "$k: the layer's own files" "new after" \
		    "$(sed -n 1,2p <<<"$out" | paste -sd' ')"
		expect_match "$k: the lower file whited out" "No such file" \
		    "$(sed -n 3p <<<"$out")"
	done
}

test_profile_image_pulled_on_first_use() {
	local out
	fresh_images first
	printf 'return { image = "docker://127.0.0.1:%s/t/zstd:1", warm_start = false }\n' \
	    "$PLAIN" >"$T_TMP/zstd.lua"
	out=$("$QSUP" run -p "$T_TMP/zstd.lua" -- sh -c "$CHECK" 2>&1)
	expect_eq "exit" 0 $?
	expect_files zstd "$out"
}

test_multi_platform_index() {
	local out
	fresh_images multi
	out=$(boot "docker://127.0.0.1:$PLAIN/t/multi:1" -- cat /etc/flavor 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "this host's platform" amd64 "$(tail -n 1 <<<"$out")"
}

test_docker_schema2() {
	local out
	fresh_images v2s2
	out=$(curl -s -H 'Accept: application/vnd.docker.distribution.manifest.v2+json' \
	    "http://127.0.0.1:$PLAIN/v2/t/v2s2/manifests/1")
	expect_match "the registry holds a Docker schema 2 manifest" \
	    "application/vnd.docker.distribution.manifest.v2\+json" "$out"
	out=$(boot "docker://127.0.0.1:$PLAIN/t/v2s2:1" -- sh -c "$CHECK" 2>&1)
	expect_files gzip "$out"
}

test_by_digest_then_cached() {
	local out d
	fresh_images digest
	d=$(cat "$O/gzip.digest")
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip@$d" 2>&1)
	expect_eq "exit" 0 $?
	: >"$O/empty.log"
	# Cached by digest: no request at all (a dead port would fail it).
	out=$("$QSUP" image pull "docker://127.0.0.1:1/t/gzip@$d" 2>&1)
	expect_eq "cached exit" 0 $?
	expect_match "the same image" "oci-$(cut -c8-23 <<<"$d")\.qcow2$" "$out"
}

test_shared_base_fetched_once() {
	local before after
	fresh_images shared
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:1" >/dev/null 2>&1 ||
	    fail "the first pull failed"
	before=$(count_blob_gets "$O/plain/log" t/shared)
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/shared:1" >/dev/null 2>&1 ||
	    fail "the second pull failed"
	after=$(count_blob_gets "$O/plain/log" t/shared)
	# Its upper layer alone: the base layer and the config (the same
	# bytes as gzip's) are the cache's.
	expect_eq "blobs fetched for the second image" 1 $((after - before))
}

test_two_pulls_download_once() {
	local before after p1 p2
	fresh_images twice
	before=$(count_blob_gets "$O/plain/log" t/zstd)
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/zstd:1" >"$T_TMP/p1" 2>&1 &
	p1=$!
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/zstd:1" >"$T_TMP/p2" 2>&1 &
	p2=$!
	wait $p1 || fail "pull 1: $(cat "$T_TMP/p1")"
	wait $p2 || fail "pull 2: $(cat "$T_TMP/p2")"
	after=$(count_blob_gets "$O/plain/log" t/zstd)
	expect_eq "blobs fetched (config and two layers, once)" 3 $((after - before))
	expect_eq "one image" "$(tail -n 1 "$T_TMP/p1")" "$(tail -n 1 "$T_TMP/p2")"
}

# A pull leaves its files' sync to the kernel's writeback, each .meta
# saying so with this boot's id (image.c): trusted in this boot; in
# another (made here by writing another id into the .meta files, as a
# reboot would find them) a blob is hashed again and kept if whole, and
# the image, whose digest is its manifest's, is built again from them;
# a torn blob is fetched again. A sandbox syncs its image before using
# it; a reader finding a file a minute old syncs it; both drop the mark.
test_unsynced_until_synced() {
	local boot metas before after out n blob
	fresh_images unsynced
	boot=$(cat /proc/sys/kernel/random/boot_id)
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:1" >/dev/null 2>&1 ||
	    fail "the first pull failed"
	metas() { ls "$IMAGES"/*.meta "$IMAGES"/.oci/blobs/sha256/*.meta; }
	n=$(grep -l "\"unsynced\":\"$boot\"" $(metas) | wc -l)
	expect_eq "the image's and its 3 blobs' .meta say unsynced, in this boot" 4 "$n"
	# Another boot, and the biggest blob torn as a crash may leave it.
	sed -i 's/"unsynced":"[^"]*"/"unsynced":"another-boot"/' $(metas)
	blob=$(ls -S "$IMAGES"/.oci/blobs/sha256/ | grep -v '\.meta$' | head -n 1)
	truncate -s 100 "$IMAGES/.oci/blobs/sha256/$blob"
	before=$(count_blob_gets "$O/plain/log" t/gzip)
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:1" 2>&1) ||
	    fail "the pull after the reboot failed: $out"
	after=$(count_blob_gets "$O/plain/log" t/gzip)
	expect_eq "blobs fetched again: the torn one only" 1 $((after - before))
	expect_match "the torn blob is named" "$blob.*earlier boot" "$out"
	n=$(grep -l '"unsynced":"another-boot"' $(metas) | wc -l)
	expect_eq "no file of the other boot left marked" 0 "$n"
	n=$(grep -l "\"unsynced\":\"$boot\"" "$IMAGES"/*.meta | wc -l)
	expect_eq "the image built again, unsynced" 1 "$n"
	# A sandbox on it: synced first, unmarked.
	out=$(boot "docker://127.0.0.1:$PLAIN/t/gzip:1" -- sh -c "$CHECK" 2>&1)
	expect_files gzip "$out"
	n=$(grep -l '"unsynced"' "$IMAGES"/*.meta | wc -l)
	expect_eq "the image's mark dropped by its first sandbox" 0 "$n"
	# Old enough: a reader (a pull of an image on the same base and
	# config) syncs the blobs and drops their marks.
	sed -i 's/"pulled":[0-9]*/"pulled":1000/' "$IMAGES"/.oci/blobs/sha256/*.meta
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/shared:1" >/dev/null 2>&1 ||
	    fail "the pull of t/shared failed"
	n=$(grep -l '"pulled":1000,"unsynced"' "$IMAGES"/.oci/blobs/sha256/*.meta | wc -l)
	expect_eq "the old blobs' marks dropped" 0 "$n"
	n=$(grep -l '"pulled":1000' "$IMAGES"/.oci/blobs/sha256/*.meta | wc -l)
	expect_eq "the old blobs kept" 3 "$n"
}

test_image_build_ref() {
	local out
	fresh_images build
	out=$("$QSUP" image build "docker://127.0.0.1:$PLAIN/t/gzip:1" \
	    -o "$T_TMP/built.qcow2" 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "the output" "$T_TMP/built.qcow2" "$(tail -n 1 <<<"$out")"
	out=$(boot "$T_TMP/built.qcow2" -- sh -c "$CHECK" 2>&1)
	expect_files gzip "$out"
}

# image build docker://REF takes --profile and --set as image pull does:
# the profile's registries (a mirror for a registry nobody serves), and a
# --set image_max_size that refuses the blobs. A local FROM refuses both.
test_image_build_ref_profile() {
	local out dead good_log
	fresh_images buildprof
	dead=$(free_port)
	start_proxy pass || return
	good_log=$PROXY_LOG
	cat >"$T_TMP/buildreg.lua" <<-EOF
	return {
	  registries = { ["127.0.0.1:$dead"] = { mirrors = { "http://127.0.0.1:$PROXY_PORT" } } },
	}
	EOF
	out=$("$QSUP" image build -p "$T_TMP/buildreg.lua" \
	    "docker://127.0.0.1:$dead/t/gzip:1" -o "$T_TMP/bp.qcow2" 2>&1)
	expect_eq "exit" 0 $?
	expect_eq "the output" "$T_TMP/bp.qcow2" "$(tail -n 1 <<<"$out")"
	expect_match "the profile's mirror served the blobs" \
	    "^GET /v2/t/gzip/blobs/sha256:" "$(cat "$good_log")"
	expect_eq "blobs in the profile's images_dir" 1 \
	    $(($(count_blobs) > 0))
	out=$("$QSUP" image build -p "$T_TMP/buildreg.lua" \
	    --set image_max_size=1M "docker://127.0.0.1:$dead/t/zstd:1" \
	    -o "$T_TMP/bp2.qcow2" 2>&1)
	expect_eq "--set: refused" 1 $(($? != 0))
	expect_match "--set image_max_size applied" \
	    "more than image_max_size \\(1048576\\)" "$out"
	expect_eq "--set: no output" "" "$(ls "$T_TMP/bp2.qcow2" 2>/dev/null)"
	mkdir -p "$T_TMP/bpdir"
	out=$("$QSUP" image build --set image_max_size=1M "$T_TMP/bpdir" \
	    -o "$T_TMP/bp3.qcow2" 2>&1)
	expect_eq "a local FROM: refused" 1 $(($? != 0))
	expect_match "a local FROM: named" \
	    "--profile and --set apply to docker://REF only" "$out"
	stop_proxy
}

test_tls_htpasswd() {
	local out ref=docker://127.0.0.1:$SECURE/t/gzip:1
	fresh_images tls
	local CURL_CA_BUNDLE=$O/secure/cert.pem
	export CURL_CA_BUNDLE
	out=$("$QSUP" image pull "$ref" 2>&1)
	expect_match "no credentials: 401 with the realm" \
	    '401 Unauthorized \(Basic realm "qsup-test"\): no credentials' "$out"
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$SECURE" \
	    "$(printf qsup:wrong | base64)" >"$T_TMP/bad-auth.json"
	out=$(REGISTRY_AUTH_FILE=$T_TMP/bad-auth.json "$QSUP" image pull "$ref" 2>&1)
	expect_match "wrong credentials: named" "bad-auth.json were refused" "$out"
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$SECURE" \
	    "$(printf qsup:s3cret | base64)" >"$T_TMP/auth.json"
	out=$(REGISTRY_AUTH_FILE=$T_TMP/auth.json boot "$ref" -- sh -c "$CHECK" 2>&1)
	expect_files gzip "$out"
	# Not the test's CA: refused, and never retried over plain http.
	out=$(CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
	    REGISTRY_AUTH_FILE=$T_TMP/auth.json "$QSUP" image pull \
	    "docker://127.0.0.1:$SECURE/t/zstd:1" 2>&1)
	expect_match "an unknown CA" "certificate" "$out"
}

# Credential helpers (credHelpers, credsStore): docker-credential-NAME get
# run with the registry's host on stdin, its JSON the credentials for
# the TLS+htpasswd registry; its failures named.
test_cred_helpers() {
	local out ref=docker://127.0.0.1:$SECURE/t/gzip:1 bin=$T_TMP/credbin
	fresh_images cred
	local CURL_CA_BUNDLE=$O/secure/cert.pem
	export CURL_CA_BUNDLE
	mkdir -p "$bin"
	cat >"$bin/docker-credential-qtest" <<-EOF
	#!/bin/sh
	[ "\$1" = get ] || exit 2
	host=\$(cat)
	echo "\$host" >>"$T_TMP/cred.asked"
	case \$host in
	127.0.0.1:$SECURE) echo '{"ServerURL":"x","Username":"qsup","Secret":"s3cret"}' ;;
	*) echo "credentials not found in native keychain"; exit 1 ;;
	esac
	EOF
	printf '#!/bin/sh\necho %s\n' \
	    "'{\"Username\":\"qsup\",\"Secret\":\"wrong\"}'" \
	    >"$bin/docker-credential-qbad"
	printf '#!/bin/sh\necho boom >&2\nexit 3\n' >"$bin/docker-credential-qfail"
	printf '#!/bin/sh\necho not-json\n' >"$bin/docker-credential-qjunk"
	# Each says its PID (its sleep's, after exec): another run's sleep
	# of the same length (a second suite on the host) is not theirs.
	printf '#!/bin/sh\necho $$ >"%s"\nexec sleep 60\n' "$T_TMP/qhang.pid" \
	    >"$bin/docker-credential-qhang"
	printf '#!/bin/sh\necho $$ >"%s"\nexec >&- 2>&-\nexec sleep 61\n' \
	    "$T_TMP/qlinger.pid" >"$bin/docker-credential-qlinger"
	chmod +x "$bin"/docker-credential-*
	local PATH=$bin:$PATH
	printf '{"credHelpers":{"127.0.0.1:%s":"qtest"}}' "$SECURE" \
	    >"$T_TMP/helper.json"
	out=$(REGISTRY_AUTH_FILE=$T_TMP/helper.json "$QSUP" image pull "$ref" 2>&1)
	expect_eq "credHelpers: exit" 0 $?
	expect_eq "the helper got the host" "127.0.0.1:$SECURE" \
	    "$(head -n 1 "$T_TMP/cred.asked")"
	fresh_images cred2
	printf '{"auths":{},"credsStore":"qtest"}' >"$T_TMP/store.json"
	out=$(REGISTRY_AUTH_FILE=$T_TMP/store.json "$QSUP" image pull "$ref" 2>&1)
	expect_eq "credsStore: exit" 0 $?
	# None for the plain registry: anonymous, as docker goes on.
	out=$(REGISTRY_AUTH_FILE=$T_TMP/store.json "$QSUP" image pull \
	    "docker://127.0.0.1:$PLAIN/t/zstd:1" 2>&1)
	expect_eq "the helper has none: anonymous" 0 $?
	expect_eq "it was asked" "127.0.0.1:$PLAIN" \
	    "$(tail -n 1 "$T_TMP/cred.asked")"
	for h in qbad qfail qjunk qnone qhang qlinger; do
		fresh_images "cred-$h"
		printf '{"credsStore":"%s"}' "$h" >"$T_TMP/h.json"
		out=$(REGISTRY_AUTH_FILE=$T_TMP/h.json "$QSUP" image pull \
		    "$ref" 2>&1)
		expect_eq "$h: fails" 1 $(($? != 0))
		case $h in
		qbad) expect_match "$h: named" "the credentials of credential helper docker-credential-qbad \\(named by $T_TMP/h.json\\) were refused" "$out" ;;
		qfail) expect_match "$h: named" "credential helper docker-credential-qfail get failed \\(exit 3\\): boom \\(named by $T_TMP/h.json\\)" "$out" ;;
		qjunk) expect_match "$h: named" "credential helper docker-credential-qjunk for 127.0.0.1:$SECURE: its output is not a JSON object" "$out" ;;
		qnone) expect_match "$h: named" "credential helper docker-credential-qnone: not found on PATH" "$out" ;;
		qhang) expect_match "$h: named" "credential helper docker-credential-qhang: no answer in 10 s: killed" "$out"
			expect_eq "$h: its sleep killed" "" "$(still_sleeping qhang)" ;;
		qlinger) expect_match "$h: its output closed, it lingers: named" "credential helper docker-credential-qlinger: no answer in 10 s: killed" "$out"
			expect_eq "$h: its sleep killed" "" "$(still_sleeping qlinger)" ;;
		esac
	done
	fresh_images cred-path
	printf '{"credsStore":"../../bin/sh"}' >"$T_TMP/h.json"
	out=$(REGISTRY_AUTH_FILE=$T_TMP/h.json "$QSUP" image pull "$ref" 2>&1)
	expect_match "a helper's name that is a path: refused" \
	    "h.json: the credential helper's name is not one" "$out"
}

# still_sleeping H: helper H's PID if its sleep still runs.
still_sleeping() {
	local pid
	pid=$(cat "$T_TMP/$1.pid" 2>/dev/null) || { echo "no $1.pid: it never ran"; return; }
	if grep -qs sleep "/proc/$pid/cmdline" &&
	    ! grep -qs '^State:.*Z' "/proc/$pid/status"; then
		echo "$pid"
	fi
}

test_errors_name_what_failed() {
	local out
	fresh_images errors
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:nope" 2>&1)
	expect_match "unknown tag" 'unknown tag "nope" in t/gzip' "$out"
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/arm:1" 2>&1)
	expect_match "no manifest for this platform" \
	    "no manifest for this platform, linux/amd64 \(the index has: linux/arm64\)" "$out"
	out=$("$QSUP" image build "docker://127.0.0.1:$PLAIN/T/Bad" -o "$T_TMP/x" 2>&1)
	expect_match "a bad reference" 'repository "T/Bad" is not valid' "$out"
	out=$("$QSUP" run --set image=docker://bad@sha256:12 -- true 2>&1)
	expect_match "a bad reference in a profile" "is not an image reference" "$out"
}

test_mirrors_in_order() {
	local out
	fresh_images mirrors
	export QSUP_REGISTRIES_CONF=$T_TMP/registries.conf
	start_proxy pass || return
	local good=$PROXY_PORT good_log=$PROXY_LOG
	start_proxy status:500 || return
	printf '# mirrors, tried in order\nmirror 127.0.0.1:%s http://127.0.0.1:%s http://127.0.0.1:%s\n' \
	    "$PLAIN" "$PROXY_PORT" "$good" >"$QSUP_REGISTRIES_CONF"
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/zstd:1" 2>&1)
	expect_eq "exit" 0 $?
	expect_match "the failing mirror said, the next one tried" \
	    "HTTP 500 from the registry.*trying http://127.0.0.1:$good" "$out"
	expect_match "the first mirror asked first" "^GET /v2/t/zstd/manifests/1" "$(cat "$PROXY_LOG")"
	expect_match "the blobs from the second mirror" "^GET /v2/t/zstd/blobs/sha256:" "$(cat "$good_log")"
	printf 'mirror 127.0.0.1:%s ftp://x\n' "$PLAIN" >"$QSUP_REGISTRIES_CONF"
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:1" 2>&1)
	expect_match "a bad line named" "registries.conf:1: mirror ftp://x is not an http\(s\) URL" "$out"
	unset QSUP_REGISTRIES_CONF
	stop_proxy
	stop_proxy
}

# The profile's registries setting: its mirrors replace the file's for
# that registry; an http:// mirror off loopback needs insecure = true.
test_registries_setting() {
	local out good good_log
	fresh_images regset
	export QSUP_REGISTRIES_CONF=$T_TMP/registries.conf
	start_proxy pass || return
	good=$PROXY_PORT good_log=$PROXY_LOG
	start_proxy status:500 || return
	# The file names the failing proxy alone; the profile, the good one.
	printf 'mirror 127.0.0.1:%s http://127.0.0.1:%s\n' "$PLAIN" \
	    "$PROXY_PORT" >"$QSUP_REGISTRIES_CONF"
	cat >"$T_TMP/reg.lua" <<-EOF
	return {
	  image = "docker://127.0.0.1:$PLAIN/t/zstd:1",
	  registries = { ["127.0.0.1:$PLAIN"] = { mirrors = { "http://127.0.0.1:$good" } } },
	}
	EOF
	out=$("$QSUP" image pull -p "$T_TMP/reg.lua" 2>&1)
	expect_eq "exit" 0 $?
	expect_match "the profile's mirror served the blobs" \
	    "^GET /v2/t/zstd/blobs/sha256:" "$(cat "$good_log")"
	expect_eq "the file's mirror, replaced, never asked" 0 \
	    "$(grep -c . "$PROXY_LOG" || true)"
	cat >"$T_TMP/bad.lua" <<-EOF
	return {
	  registries = {
	    ["docker.io"] = { mirrors = { "http://mirror.lan:5000", "ftp://x" } },
	    ["q.io"] = { insecur = true },
	  },
	}
	EOF
	out=$("$QSUP" profile check "$T_TMP/bad.lua" 2>&1)
	expect_match "http off loopback refused, with file:line" \
	    'bad.lua:3: registries: docker.io: mirror "http://mirror.lan:5000" is plain http' "$out"
	expect_match "not a URL" 'bad.lua:3: registries: docker.io: mirror "ftp://x" is not an http\(s\) URL' "$out"
	expect_match "an unknown field" 'bad.lua:4: registries: q.io: unknown field "insecur"' "$out"
	cat >"$T_TMP/ok.lua" <<-EOF
	return {
	  registries = {
	    ["docker.io"] = { mirrors = { "http://mirror.lan:5000" } },
	    ["mirror.lan:5000"] = { insecure = true },
	  },
	}
	EOF
	out=$("$QSUP" profile check "$T_TMP/ok.lua" 2>&1)
	expect_eq "an insecure mirror allowed" 0 $?
	# The file's plain http mirror off loopback: refused at the pull.
	printf 'mirror 127.0.0.1:%s http://mirror.lan:5000\n' "$PLAIN" \
	    >"$QSUP_REGISTRIES_CONF"
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:1" 2>&1)
	expect_match "the file's http mirror refused" \
	    "registries.conf:1: mirror http://mirror.lan:5000 is plain http" "$out"
	unset QSUP_REGISTRIES_CONF
	stop_proxy
	stop_proxy
}

# count_blobs: the blob cache's blobs (not their .meta, nor parts).
count_blobs() {
	find "$IMAGES/.oci/blobs/sha256" -maxdepth 1 -type f -regex '.*/[0-9a-f]*' 2>/dev/null | wc -l
}

# rm and prune take the blobs and tags no image uses, never those of a
# remaining image, nor anything while a pull holds the cache's lock.
test_blob_cache_pruned() {
	local out gz sh
	fresh_images prune
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:1" >"$T_TMP/gz" 2>&1 ||
	    fail "pull gzip: $(cat "$T_TMP/gz")"
	"$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/shared:1" >"$T_TMP/sh" 2>&1 ||
	    fail "pull shared: $(cat "$T_TMP/sh")"
	gz=$(basename "$(tail -n 1 "$T_TMP/gz")")
	sh=$(basename "$(tail -n 1 "$T_TMP/sh")")
	# gzip: manifest, config, 2 layers; shared: its manifest and layer.
	expect_eq "blobs of both images" 6 "$(count_blobs)"
	out=$("$QSUP" image ls 2>&1)
	expect_match "ls shows the blob cache" "blob cache \(docker:// layers\): 6 blobs, [0-9.]+ MB" "$out"
	out=$("$QSUP" image ls --json 2>&1)
	expect_match "ls --json too" '"blob_cache":\{"blobs":6,"bytes":[1-9]' "$out"
	out=$("$QSUP" image prune 2>&1)
	expect_eq "prune: every blob in use" 6 "$(count_blobs)"
	# A pull under way (the cache's lock held shared): nothing goes.
	"$QSUP" image rm "$sh" >/dev/null 2>&1 &&
	    "$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/shared:1" >/dev/null 2>&1 ||
	    fail "rm and pull again"
	expect_eq "rm: shared's own blobs went, and came back with its pull" 6 "$(count_blobs)"
	mv "$IMAGES/$sh" "$T_TMP/held.qcow2"
	mv "$IMAGES/$sh.meta" "$T_TMP/held.meta"
	out=$(flock -s "$IMAGES/.oci/lock" "$QSUP" image prune 2>&1)
	expect_match "a pull under way keeps the cache" "blob cache kept: a docker:// pull is under way" "$out"
	expect_eq "nothing removed under the lock" 6 "$(count_blobs)"
	out=$("$QSUP" image prune 2>&1)
	expect_match "prune: the blobs only the gone image used" \
	    "2 blobs removed from the blob cache \([0-9.]+ MB\), 1 tag record" "$out"
	expect_eq "gzip's blobs kept" 4 "$(count_blobs)"
	expect_eq "gzip's tag record kept" 1 "$(ls "$IMAGES/.oci/refs" | wc -l)"
	out=$(boot "docker://127.0.0.1:$PLAIN/t/gzip:1" -- cat /etc/flavor 2>&1)
	expect_eq "the image left still boots" gzip "$(tail -n 1 <<<"$out")"
	out=$("$QSUP" image rm "$gz" 2>&1)
	expect_match "rm names what the cache lost" "4 blobs removed from the blob cache .*1 tag record" "$out"
	expect_eq "the cache is empty" 0 "$(count_blobs)"
	expect_eq "no tag records left" 0 "$(ls "$IMAGES/.oci/refs" | wc -l)"
}

# qsup serve: a create naming a docker:// image pulls it, the sandbox
# runs it; a pull that fails says so once, naming the image.
test_serve_docker_image() {
	local S=$T_TMP/serve sock token body code
	fresh_images serve
	mkdir -p "$S"
	sock=$S/s.sock
	serve_launch "$sock" "$S/token" "$S/serve.log" ||
	    { fail "the server did not come up: $(cat "$S/serve.log")"; return; }
	token=$(cat "$S/token")
	code=$(curl -sS --unix-socket "$sock" -o "$S/body" -w '%{http_code}' \
	    -H "Authorization: Bearer $token" -d "{\"name\":\"a\",\"settings\":{\"image\":\"docker://127.0.0.1:$PLAIN/t/zstd:1\",\"warm_start\":false}}" \
	    http://qsup/v1/sandboxes)
	body=$(cat "$S/body")
	expect_eq "create: 201" 201 "$code"
	expect_match "create: ready" '"state":"ready"' "$body"
	curl -sS -N --unix-socket "$sock" -H "Authorization: Bearer $token" \
	    -d "{\"argv\":[\"sh\",\"-c\",$(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$CHECK")]}" \
	    http://qsup/v1/sandboxes/a/exec >"$S/stream"
	code=$(python3 "$HELP/sse.py" "$S/stream" --out "$S/out" --err "$S/err")
	expect_match "exec: exit 0" '"status":0,' "$code"
	expect_files zstd "$(cat "$S/out")"
	expect_match "the image is images_dir's" "oci-[0-9a-f]{16}\.qcow2" "$(ls "$IMAGES")"
	code=$(curl -sS --unix-socket "$sock" -o "$S/body" -w '%{http_code}' \
	    -H "Authorization: Bearer $token" -d "{\"name\":\"b\",\"settings\":{\"image\":\"docker://127.0.0.1:$PLAIN/t/zstd:nope\",\"warm_start\":false}}" \
	    http://qsup/v1/sandboxes)
	body=$(cat "$S/body")
	expect_match "a failed pull: the tag named" 'unknown tag \\"nope\\" in t/zstd' "$body"
	expect_match "the image named once" "image pull: docker://127.0.0.1:$PLAIN/t/zstd:nope: " "$body"
	expect_eq "not twice" 0 "$(grep -c "image docker://" <<<"$body")"
	curl -sS --unix-socket "$sock" -X DELETE -H "Authorization: Bearer $token" \
	    http://qsup/v1/sandboxes/a >/dev/null
	kill -TERM "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID"
	expect_eq "serve's exit status after SIGTERM" 0 $?
}

test_fault_bearer() {
	local out
	fresh_images bearer
	start_proxy bearer || return
	out=$(boot "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" -- cat /etc/flavor 2>&1)
	expect_eq "anonymous token: booted" gzip "$(tail -n 1 <<<"$out")"
	expect_match "the token was asked for" "^GET /token\?service=qsup-test&scope=repository%3At%2Fgzip%3Apull" "$(cat "$PROXY_LOG")"
	stop_proxy
	PROXY_CRED=$(printf u:p | base64) start_proxy bearer || return
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/zstd:1" 2>&1)
	expect_match "401 from the realm" "HTTP 401 from the token realm" "$out"
	printf '{"auths":{"127.0.0.1:%s":{"auth":"%s"}}}' "$PROXY_PORT" \
	    "$(printf u:p | base64)" >"$T_TMP/auth.json"
	out=$(REGISTRY_AUTH_FILE=$T_TMP/auth.json "$QSUP" image pull \
	    "docker://127.0.0.1:$PROXY_PORT/t/zstd:1" 2>&1)
	expect_eq "with credentials: exit" 0 $?
	stop_proxy
}

test_fault_token_expires() {
	local out
	fresh_images expire
	start_proxy expire || return
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "exit" 0 $?
	expect_match "said" "token expired: asking for another" "$out"
	expect_eq "tokens asked for" 2 "$(grep -c '^GET /token' "$PROXY_LOG")"
	stop_proxy
}

test_fault_drop_resumes() {
	local out
	fresh_images drop
	start_proxy drop || return
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "exit" 0 $?
	expect_match "resumed" "resuming" "$out"
	expect_match "asked from where it stopped (a Range)" "blobs/sha256" "$(sort "$PROXY_LOG" | uniq -d)"
	stop_proxy
}

# A blob written again from its start (the server ignored Range after a
# drop): what the build read of its part is not trusted, the streaming
# stops, and the image is built from the cache, whole.
test_stream_blob_restarted() {
	local out
	fresh_images norange
	start_proxy norange || return
	out=$("$QSUP" image pull -v "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "exit" 0 $?
	expect_match "the server ignored Range" "sent it whole \(HTTP 200\), not from [1-9][0-9]*: starting over" "$out"
	# Why the build stopped depends on where its reader was when the
	# part was emptied: told "x" first, or the layer cut under it
	# ("stopped", "truncated gzip input", ...).
	expect_match "stopped for it, built from the cache" \
	    "as they come stopped \((a blob (is|was) fetched again|layer sha256:[0-9a-f]{64}: [^)]+)\): building once they are all in the cache" "$out"
	# The tag resolved by this pull: its image, without a request.
	out=$(boot "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" -- sh -c "$CHECK" 2>&1)
	expect_files gzip "$out"
	stop_proxy
}

test_fault_resume_across_pulls() {
	local out
	fresh_images resume
	start_proxy dropall || return
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_match "the first pull gives up, keeping its part" "is kept: the next pull resumes it" "$out"
	touch "$PROXY_LOG.heal"
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "the second pull: exit" 0 $?
	expect_match "the part resumed" "resuming the part left at [1-9][0-9]* bytes" "$out"
	stop_proxy
}

# After a failed pull: blobs only (not the cache's lock, an empty file
# that stays; no FIFO or tree of a build), each what its name says, and
# no image.
expect_only_verified_blobs() {
	local f left
	left=$(find "$IMAGES" \( -type f -o -type p \) ! -path '*/refs/*' ! -path '*/.oci/lock' 2>/dev/null | grep -v '\.meta$' || true)
	for f in $left; do
		[ "$(sha256sum <"$f" | cut -c1-64)" = "$(basename "$f")" ] ||
		    fail "a file left that is not what its name says: $f"
	done
	ls "$IMAGES"/*.qcow2 >/dev/null 2>&1 && fail "an image was made"
}

test_fault_wrong_blob() {
	local out
	fresh_images wrong
	start_proxy wrong || return
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "exit" 125 $?
	expect_match "a mismatch, both digests" "SHA-256 mismatch: expected [0-9a-f]{64} .*got [0-9a-f]{64}" "$out"
	expect_only_verified_blobs
	stop_proxy
}

# A layer's digest fails once its extraction began (the proxy sends half
# of each blob, pauses, then the rest with its last byte changed): the
# pull fails and leaves no tree, no blob that is not what its name says,
# no image.
test_stream_digest_fails_mid_layer() {
	local out rt
	fresh_images wronglate
	rt=$(mktemp -d /dev/shm/qsup-oci-rt.XXXXXX)
	start_proxy wronglate || return
	out=$(XDG_RUNTIME_DIR=$rt "$QSUP" image pull -v \
	    "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "exit" 125 $?
	expect_match "a layer was being extracted" "extracting it as it downloads" "$out"
	expect_match "a mismatch, both digests" "SHA-256 mismatch: expected [0-9a-f]{64} .*got [0-9a-f]{64}" "$out"
	expect_eq "no tree left on the tmpfs" "" "$(ls -A "$rt")"
	expect_only_verified_blobs
	stop_proxy
	rm -rf "$rt"
}

# A 429 with Retry-After: waited out on the loop, the same registry
# asked again; a wait longer than qsup's bound goes to the next mirror.
test_fault_429_waits() {
	local out t0 good good_log
	fresh_images busy
	start_proxy busy:1:2 || return
	t0=$(date +%s.%N)
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "exit after the wait" 0 $?
	expect_match "the wait said" "HTTP 429 Too Many Requests: waiting 2 s" "$out"
	expect_eq "the manifest asked twice of the same registry" 2 \
	    "$(grep -c "^GET /v2/t/gzip/manifests/1" "$PROXY_LOG")"
	expect_eq "waited Retry-After's 2 s" 1 \
	    "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print (a - b >= 2) }')"
	stop_proxy
	# Retry-After beyond the 60 s bound: no wait, the next mirror.
	fresh_images busy2
	start_proxy pass || return
	good=$PROXY_PORT good_log=$PROXY_LOG
	start_proxy busy:1:3600 || return
	export QSUP_REGISTRIES_CONF=$T_TMP/registries.conf
	printf 'mirror 127.0.0.1:%s http://127.0.0.1:%s http://127.0.0.1:%s\n' \
	    "$PLAIN" "$PROXY_PORT" "$good" >"$QSUP_REGISTRIES_CONF"
	t0=$SECONDS
	out=$("$QSUP" image pull "docker://127.0.0.1:$PLAIN/t/gzip:1" 2>&1)
	expect_eq "exit" 0 $?
	expect_match "too long a wait named" \
	    "Retry-After 3600 s is more than the 60 s qsup waits" "$out"
	expect_match "the next mirror served it" \
	    "^GET /v2/t/gzip/manifests/1" "$(cat "$good_log")"
	expect_eq "no wait" 1 $((SECONDS - t0 < 30))
	unset QSUP_REGISTRIES_CONF
	stop_proxy
	stop_proxy
}

# A blob's 429, or 503 with Retry-After: waited out (bounded), asked
# again; a 503 without one, a wait beyond 60 s or a third 429 fail,
# named, and leave no image.
test_fault_blob_busy() {
	local out t0 blobs asked mode
	fresh_images blobbusy
	start_proxy blobbusy:429:1:2 || return
	t0=$(date +%s.%N)
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "429: exit after the wait" 0 $?
	expect_match "429: the wait said" \
	    "/blobs/sha256:[0-9a-f]*: HTTP 429: waiting 2 s \\(Retry-After\\)" "$out"
	blobs=$(grep "^GET /v2/t/gzip/blobs/" "$PROXY_LOG" | sort -u | wc -l)
	asked=$(grep -c "^GET /v2/t/gzip/blobs/" "$PROXY_LOG")
	expect_eq "429: one blob asked twice" $((blobs + 1)) "$asked"
	expect_eq "429: waited Retry-After's 2 s" 1 \
	    "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { print (a - b >= 2) }')"
	stop_proxy
	fresh_images blobbusy503
	start_proxy blobbusy:503:1:1 || return
	out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_eq "503 with Retry-After: exit" 0 $?
	expect_match "503: the wait said" "HTTP 503: waiting 1 s" "$out"
	stop_proxy
	for mode in 503:1:none 429:1:3600 429:99:1; do
		fresh_images "blobbusy-${mode//:/-}"
		start_proxy "blobbusy:$mode" || return
		t0=$SECONDS
		out=$("$QSUP" image pull \
		    "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
		expect_eq "$mode: fails" 1 $(($? != 0))
		case $mode in
		503:1:none)
			expect_match "$mode: named" \
			    "HTTP 503 from the server" "$out"
			expect_eq "$mode: no wait" "" \
			    "$(grep waiting <<<"$out")" ;;
		429:1:3600)
			expect_match "$mode: named" \
			    "HTTP 429 from the server \\(Retry-After 3600 s is more than the 60 s qsup waits\\)" "$out"
			expect_eq "$mode: no wait" 1 $((SECONDS - t0 < 30)) ;;
		429:99:1)
			expect_match "$mode: named" \
			    "HTTP 429 from the server \\(still after 2 waits\\)" \
			    "$out" ;;
		esac
		expect_eq "$mode: no image left" "" \
		    "$(ls "$IMAGES"/*.qcow2 2>/dev/null)"
		stop_proxy
	done
}

test_fault_statuses() {
	local out code
	fresh_images status
	for code in 404 429 500; do
		start_proxy "status:$code" || return
		out=$("$QSUP" image pull "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
		expect_match "HTTP $code named" "HTTP $code" "$out"
		[ "$code" != 429 ] || expect_match "429: given up after its waits" \
		    "still after 2 waits" "$out"
		stop_proxy
	done
	start_proxy stall || return
	out=$(QSUP_IMAGE_STALL_TIMEOUT=2 "$QSUP" image pull \
	    "docker://127.0.0.1:$PROXY_PORT/t/gzip:1" 2>&1)
	expect_match "a registry that stalls" "stalled: no data for 2 s" "$out"
	stop_proxy
}

run_test test_pull_gzip_boots
run_test test_profile_image_pulled_on_first_use
run_test test_multi_platform_index
run_test test_docker_schema2
run_test test_stream_extracts_while_downloading
run_test test_stream_late_whiteouts
run_test test_by_digest_then_cached
run_test test_shared_base_fetched_once
run_test test_two_pulls_download_once
run_test test_unsynced_until_synced
run_test test_image_build_ref
run_test test_image_build_ref_profile
run_test test_tls_htpasswd
run_test test_cred_helpers
run_test test_errors_name_what_failed
run_test test_mirrors_in_order
run_test test_registries_setting
run_test test_blob_cache_pruned
run_test test_serve_docker_image
run_test test_fault_bearer
run_test test_fault_token_expires
run_test test_fault_drop_resumes
run_test test_stream_blob_restarted
run_test test_fault_resume_across_pulls
run_test test_fault_wrong_blob
run_test test_stream_digest_fails_mid_layer
run_test test_fault_429_waits
run_test test_fault_blob_busy
run_test test_fault_statuses
finish
