#!/usr/bin/env bash
# Setup steps cached as image layers: a profile's setup runs once over the
# Debian test image, each step a qcow2 layer in images_dir/layers; later
# runs start from the top layer. Hits, misses, a changed step rebuilding
# only itself and the steps after it, a failing step, two runs at once,
# prune with a layer in use, the base never written, --json's summary,
# and setup_network's allowlist against real HTTP servers on the host.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

debian_image

SRV=$T_TMP/srv
SERVER_PIDS=()
trap 'kill "${SERVER_PIDS[@]}" 2>/dev/null; rm -rf "$T_TMP"' EXIT
mkdir -p "$SRV/www"
echo served-to-setup >"$SRV/www/a.txt"

# start_server NAME: an HTTP server on 127.0.0.1, its port in NAME.port.
start_server() {
	local i
	/usr/bin/python3 tests/integration/helpers/httpserver.py "$SRV/www" \
	    "$SRV/$1.port" "$SRV/$1.log" >"$SRV/$1.out" 2>&1 </dev/null &
	SERVER_PIDS+=($!)
	for i in $(seq 100); do
		[ -s "$SRV/$1.port" ] && break
		sleep 0.1
	done
	[ -s "$SRV/$1.port" ] || { echo "server $1 did not start"; exit 1; }
	touch "$SRV/$1.log"
}
start_server a
start_server b
A=$(cat "$SRV/a.port")	# allowed to setup
B=$(cat "$SRV/b.port")	# never allowed

# The base's size, inode, mtime and ctime: any write moves the ctime.
base_stat() {
	stat -c '%s %i %Y.%y %Z.%z' "$IMG"
}
BASE_STAT=$(base_stat)
expect_base_unchanged() {
	expect_eq "the base's size, inode, mtime, ctime" "$BASE_STAT" \
	    "$(base_stat)"
}

# fresh_store NAME: an images_dir (and cache) of this test's own.
fresh_store() {
	export XDG_DATA_HOME=$T_TMP/$1/data
	rm -rf "$XDG_DATA_HOME"
	LAYERS=$XDG_DATA_HOME/qsup/images/layers
	fresh_cache "$1"
}

# profile FILE STEP...: a profile over the test image with these steps,
# each written as Lua (a quoted string or a { ... } list).
profile() {
	local f=$1 s
	shift
	{
		echo "return {"
		echo "  image = \"$IMG\","
		echo "  setup = {"
		for s in "$@"; do
			echo "    $s,"
		done
		echo "  },"
		echo "}"
	} >"$f"
}

nlayers() {
	ls "$LAYERS" 2>/dev/null | grep -c '^[0-9a-f]\{64\}\.qcow2$'
}

# layers_json FILE PY: a Python expression over L, the summary's layers.
layers_json() {
	tail -n 1 "$1" | python3 -c "import json,sys; L=json.load(sys.stdin)['layers']; print($2)"
}

test_miss_then_hit() {
	local p=$T_TMP/p.lua out err=$T_TMP/err
	fresh_store hit
	profile "$p" '"echo one >/etc/one; echo built-one"' \
	    '{ "sh", "-c", "cat /etc/one >/etc/two; echo built-two >&2" }'
	out=$("$QSUP" run -p "$p" -- cat /etc/one /etc/two 2>"$err")
	expect_eq "first run: exit" 0 $?
	expect_eq "first run: the command sees both steps" "one
one" "$out"
	expect_match "each step's name on stderr" "setup 1/2: echo one >/etc/one; echo built-one" "$(cat "$err")"
	expect_match "... and its output" "^built-one$" "$(cat "$err")"
	expect_match "the second step's name and output" "setup 2/2: cat /etc/one >/etc/two.*
built-two" "$(cat "$err")"
	expect_eq "two layers in the store" 2 "$(nlayers)"
	local layers_stat
	layers_stat=$(stat -c '%n %s %i %Y %Z' "$LAYERS"/*.qcow2)
	out=$("$QSUP" run --json -p "$p" -- sh -c 'cat /etc/two; echo over >/etc/two; sync' 2>"$err")
	expect_eq "second run: exit" 0 $?
	expect_eq "second run: the top layer" one "$out"
	expect_eq "second run: both hits" "['hit', 'hit']" \
	    "$(layers_json "$err" '[l["result"] for l in L]')"
	expect_eq "nothing of setup on stderr under --json" 1 \
	    "$(wc -l <"$err")"
	expect_eq "still two layers" 2 "$(nlayers)"
	expect_eq "warm from the top layer" '"warm"' "$(json_field start "$err")"
	expect_eq "the layers' size, inode, mtime, ctime" "$layers_stat" \
	    "$(stat -c '%n %s %i %Y %Z' "$LAYERS"/*.qcow2)"
	out=$("$QSUP" run -p "$p" -- cat /etc/two 2>"$err")
	expect_eq "a run's writes never reach the layer" one "$out"
	expect_base_unchanged
}

# A changed step rebuilds itself and those after it, not those before.
test_changed_step_rebuilds_only_it_and_later() {
	local p=$T_TMP/p.lua err=$T_TMP/err out
	fresh_store change
	profile "$p" '"echo a >/etc/a"' '"echo b >/etc/b"' '"echo c >/etc/c"'
	"$QSUP" run --json -p "$p" -- true 2>"$err" || fail "first run"
	expect_eq "first: all built" "['built', 'built', 'built']" \
	    "$(layers_json "$err" '[l["result"] for l in L]')"
	profile "$p" '"echo a >/etc/a"' '"echo B >/etc/b"' '"echo c >/etc/c"'
	out=$("$QSUP" run --json -p "$p" -- cat /etc/a /etc/b /etc/c 2>"$err")
	expect_eq "the changed chain's files" "a
B
c" "$out"
	expect_eq "step 1 hit, 2 and 3 built" "['hit', 'built', 'built']" \
	    "$(layers_json "$err" '[l["result"] for l in L]')"
	expect_eq "five layers: the old 2 and 3 kept" 5 "$(nlayers)"
	# The environment is part of a step's key.
	"$QSUP" run --json -p "$p" --set env=X=1 -- true 2>"$err" ||
	    fail "a run with another env"
	expect_eq "another env: all built" "['built', 'built', 'built']" \
	    "$(layers_json "$err" '[l["result"] for l in L]')"
	expect_base_unchanged
}

test_failing_step_caches_nothing() {
	local p=$T_TMP/p.lua err=$T_TMP/err rc
	fresh_store failing
	profile "$p" '"echo fine >/etc/fine"' \
	    '"echo partial >/etc/partial; echo line-before-failure; echo the-last-words >&2; exit 7"' \
	    '"echo never"'
	"$QSUP" run -p "$p" -- echo not-run >"$T_TMP/out" 2>"$err"
	rc=$?
	expect_eq "qsup's status for a failed setup" 125 "$rc"
	expect_eq "the command did not run" "" "$(cat "$T_TMP/out")"
	expect_match "the status and the step named" \
	    "setup step 2/3 \(echo partial.*\) failed with exit status 7; nothing was cached" \
	    "$(cat "$err")"
	expect_match "the output's tail in the error" "its output ended:
(.*
)?line-before-failure
the-last-words" "$(cat "$err")"
	expect_eq "only the first step's layer" 1 "$(nlayers)"
	expect_eq "no hidden part left" "" \
	    "$(ls -A "$LAYERS" | grep -v -e '\.lock$' -e '^\.bases$' -e '^[0-9a-f]\{64\}\.\(qcow2\|meta\)$')"
	"$QSUP" run --json -p "$p" -- true 2>"$err"
	expect_eq "again: the first hit, the second failed again" \
	    "['hit', 'failed']" "$(layers_json "$err" '[l["result"] for l in L]')"
	expect_match "--json's error has the status" \
	    '"error":"setup step 2/3 .*exit status 7' "$(tail -n 1 "$err")"
	expect_base_unchanged
}

# Two runs needing the same layer: built once, the second waits for it.
test_two_runs_build_once() {
	local p=$T_TMP/p.lua a b
	fresh_store twice
	profile "$p" '"sleep 3; echo built >>/etc/built"'
	"$QSUP" run --json -p "$p" -- cat /etc/built >"$T_TMP/a" 2>"$T_TMP/a.err" &
	a=$!
	sleep 1
	"$QSUP" run -p "$p" -- cat /etc/built >"$T_TMP/b" 2>"$T_TMP/b.err"
	b=$?
	wait $a
	expect_eq "both exit 0" "0 0" "$? $b"
	expect_eq "the first sees it built once" built "$(cat "$T_TMP/a")"
	expect_eq "the second too" built "$(cat "$T_TMP/b")"
	expect_eq "one layer" 1 "$(nlayers)"
	expect_match "the second says it waits" "waiting for another qsup building this layer" \
	    "$(cat "$T_TMP/b.err")"
	expect_eq "the second built nothing" "" \
	    "$(grep 'setup 1/1' "$T_TMP/b.err")"
	expect_base_unchanged
}

test_prune_keeps_layers_in_use() {
	local p=$T_TMP/p.lua q=$T_TMP/q.lua a out
	fresh_store prune
	profile "$p" '"echo p1 >/etc/p1"' '"echo p2 >/etc/p2"'
	profile "$q" '"echo q1 >/etc/q1"'
	"$QSUP" run -p "$p" -- true 2>/dev/null || fail "building p"
	"$QSUP" run -p "$q" -- true 2>/dev/null || fail "building q"
	expect_eq "three layers" 3 "$(nlayers)"
	"$QSUP" run -p "$p" -- sh -c 'sleep 6; cat /etc/p2' >"$T_TMP/a" 2>/dev/null &
	a=$!
	sleep 3
	out=$("$QSUP" image ls)
	expect_match "ls: the top layer, its parent, step, in use" \
	    "over layer [0-9a-f]{12} .* last used .*in use
    echo p2 >/etc/p2" "$out"
	expect_match "ls: the bottom one over the base" "over base $IMG " "$out"
	out=$("$QSUP" image prune)
	expect_match "prune: two kept in use, one removed" \
	    "1 layer removed .*, 2 in use kept" "$out"
	wait $a
	expect_eq "the run in use went on" "0 p2" "$? $(cat "$T_TMP/a")"
	expect_eq "p's two layers kept" 2 "$(nlayers)"
	out=$("$QSUP" image prune --older-than 1h)
	expect_match "recently used: kept" "0 layers removed" "$out"
	out=$("$QSUP" image prune --json)
	expect_match "unused now: removed" '"removed":2,"kept_in_use":0' "$out"
	expect_eq "no layer left" 0 "$(nlayers)"
	expect_eq "the base is still there" "$BASE_STAT" "$(base_stat)"
	"$QSUP" image prune --older-than 3x >/dev/null 2>"$T_TMP/err"
	expect_eq "a bad age: 125" 125 $?
	expect_match "a bad age named" "--older-than 3x: not an age" "$(cat "$T_TMP/err")"
}

# setup_network: an allowlist reaches what it lists and nothing else; the
# command's own network is the profile's network, not setup's.
test_setup_network_allowlist() {
	local p=$T_TMP/p.lua out err=$T_TMP/err
	# Through the proxy the allowlist gives: no_proxy lists 127.0.0.1,
	# and urllib would go direct, to the guest's own loopback.
	local FETCH='import os, urllib.request as u; o = u.build_opener(u.ProxyHandler({"http": os.environ["http_proxy"]})); print(o.open'
	fresh_store net
	cat >"$p" <<-EOF
	return {
	  image = "$IMG",
	  setup = {
	    [[no_proxy= NO_PROXY= python3 -c '$FETCH("http://127.0.0.1:$A/a.txt", timeout=20).read().decode())' >/etc/fetched]],
	  },
	  setup_network = { "127.0.0.1:$A" },
	}
	EOF
	out=$("$QSUP" run -p "$p" -- cat /etc/fetched 2>"$err")
	expect_eq "exit" 0 $?
	expect_eq "setup fetched from the allowed server" served-to-setup "$out"
	expect_eq "the server saw it" 1 "$(grep -c 'GET /a.txt' "$SRV/a.log")"
	cat >"$p" <<-EOF
	return {
	  image = "$IMG",
	  setup = {
	    [[no_proxy= NO_PROXY= python3 -c '$FETCH("http://127.0.0.1:$B/a.txt", timeout=20).read().decode())']],
	  },
	  setup_network = { "127.0.0.1:$A" },
	}
	EOF
	"$QSUP" run -p "$p" -- true 2>"$err"
	expect_eq "a host not allowed: the step fails" 125 $?
	expect_match "refused by the policy" "403|Forbidden|not allowed" "$(cat "$err")"
	expect_eq "server b saw nothing" "" "$(cat "$SRV/b.log")"
	expect_eq "nothing cached for it" 1 "$(nlayers)"
}

test_bad_profiles_named() {
	local p=$T_TMP/p.lua out
	cat >"$p" <<-EOF
	return {
	  setup = { "true" },
	}
	EOF
	out=$("$QSUP" run -p "$p" -- true 2>&1)
	expect_eq "setup without an image: 125" 125 $?
	expect_match "named" "p.lua:2: setup: the steps are cached as layers of an image, and image is nil" "$out"
	cat >"$p" <<-EOF
	return {
	  image = "$IMG",
	  setup = { 42 },
	  setup_network = { "no such:host:1" },
	}
	EOF
	out=$("$QSUP" run -p "$p" -- true 2>&1)
	expect_match "a step that is not one" "p.lua:3: setup\[1\]: 42 is not a step" "$out"
	expect_match "a rule the policy cannot express" "p.lua:4: setup_network\[1\]:" "$out"
}

# sapi DIR METHOD PATH [CURL ARGS...]: the server's answer's body in
# DIR/body, its status printed.
sapi() {
	local d=$1 m=$2 path=$3
	shift 3
	curl -sS --unix-socket "$d/s.sock" -o "$d/body.$$.$BASHPID" \
	    -w '%{http_code}' -X "$m" -H "Authorization: Bearer $(cat "$d/token")" \
	    "$@" "http://qsup$path"
	mv "$d/body.$$.$BASHPID" "$d/body"
}

# sexec DIR NAME CMD: CMD's stdout in the sandbox NAME (sh -c).
sexec() {
	curl -sSN --unix-socket "$1/s.sock" -H "Authorization: Bearer $(cat "$1/token")" \
	    -d "{\"argv\":[\"sh\",\"-c\",\"$3\"]}" \
	    "http://qsup/v1/sandboxes/$2/exec" | python3 -c '
import base64, sys
ev = None
for line in sys.stdin:
    line = line.rstrip("\n")
    if line.startswith("event: "):
        ev = line[7:]
    elif line.startswith("data: ") and ev == "stdout":
        sys.stdout.write(base64.b64decode(line[6:]).decode())'
}

# qsup serve with a profile that has setup: the first creates build the
# layer once (two at once, one child), the server answering meanwhile;
# a later create is a hit; the sandbox holds its chain against prune.
test_serve_setup() {
	local p=$T_TMP/p.lua d=$T_TMP/serve code t0 t1 out a b kids
	mkdir -p "$d"
	fresh_store serve
	profile "$p" '"sleep 8; echo from-setup >/etc/served; echo step-ran"'
	serve_launch "$d/s.sock" "$d/token" "$d/serve.log" --profile "$p" ||
	    { fail "the server did not come up: $(cat "$d/serve.log")"; return; }
	curl -sSN --unix-socket "$d/s.sock" -H "Authorization: Bearer $(cat "$d/token")" \
	    http://qsup/v1/events >"$d/events" 2>/dev/null &
	local ev=$!
	(sapi "$d" POST /v1/sandboxes -d '{"name":"s1"}' >"$d/s1.code"; cp "$d/body" "$d/s1.body") &
	a=$!
	sleep 0.5
	(sapi "$d" POST /v1/sandboxes -d '{"name":"s2"}' >"$d/s2.code"; cp "$d/body" "$d/s2.body") &
	b=$!
	sleep 3
	t0=$(date +%s.%N)
	code=$(curl -sS -m 5 --unix-socket "$d/s.sock" -o /dev/null -w '%{http_code}' http://qsup/v1/healthz)
	t1=$(date +%s.%N)
	expect_eq "healthz answered during the build" 200 "$code"
	echo "    healthz during the build: $(awk -v a="$t1" -v b="$t0" 'BEGIN { print a - b }') s"
	kids=$(pgrep -P "$SERVE_PID" -f -- '--setup-only' | wc -l)
	expect_eq "one build for both creates" 1 "$kids"
	code=$(sapi "$d" GET /v1/sandboxes/s2)
	expect_match "s2 building, its phase said" '"state":"booting".*"phase":"building setup step 1/1: sleep 8' "$(cat "$d/body")"
	wait $a $b
	expect_eq "both created" "201 201" "$(cat "$d/s1.code") $(cat "$d/s2.code")"
	expect_eq "one layer" 1 "$(nlayers)"
	expect_match "the phase on the event stream" '"phase":"building setup step 1/1' "$(cat "$d/events")"
	out=$(sexec "$d" s1 "cat /etc/served")
	expect_eq "s1 sees what the step wrote" from-setup "$out"
	out=$(sexec "$d" s2 "cat /etc/served")
	expect_eq "s2 too" from-setup "$out"
	t0=$(date +%s.%N)
	code=$(sapi "$d" POST /v1/sandboxes -d '{"name":"s3"}')
	t1=$(date +%s.%N)
	expect_eq "a later create" 201 "$code"
	echo "    create on a hit: $(awk -v a="$t1" -v b="$t0" 'BEGIN { print a - b }') s ($(grep -o '"start":"[a-z-]*"' "$d/body"))"
	expect_eq "no build for it" "" "$(grep '"name":"s3".*"phase"' "$d/events")"
	out=$(sexec "$d" s3 "cat /etc/served")
	expect_eq "s3 sees it" from-setup "$out"
	sapi "$d" DELETE /v1/sandboxes/s1 >/dev/null
	sapi "$d" DELETE /v1/sandboxes/s2 >/dev/null
	out=$("$QSUP" image prune)
	expect_match "prune keeps the layer s3 holds" "0 layers removed.*1 in use kept" "$out"
	code=$(sapi "$d" DELETE /v1/sandboxes/s3)
	expect_eq "s3 deleted" 200 "$code"
	out=$("$QSUP" image prune)
	expect_match "then prune removes it" "1 layer removed" "$out"
	expect_eq "no layer left" 0 "$(nlayers)"
	kill "$ev" 2>/dev/null
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
	expect_eq "serve exits 0" 0 $?
	expect_base_unchanged
}

# A failing step: the create answers 500 with the step, its status and
# its output's tail; nothing is cached; the server goes on.
test_serve_setup_fails() {
	local p=$T_TMP/p.lua d=$T_TMP/serve2 code body
	mkdir -p "$d"
	fresh_store servefail
	profile "$p" '"echo fine >/etc/fine"' \
	    '"echo partial >/etc/partial; echo the-last-words >&2; exit 7"'
	serve_launch "$d/s.sock" "$d/token" "$d/serve.log" ||
	    { fail "the server did not come up: $(cat "$d/serve.log")"; return; }
	code=$(sapi "$d" POST /v1/sandboxes -d "{\"name\":\"f1\",\"profile\":\"$p\"}")
	body=$(cat "$d/body")
	expect_eq "a failed step: 500" 500 "$code"
	expect_match "the step and its status" \
	    'setup step 2/2 \(echo partial.*\) failed with exit status 7; nothing was cached' "$body"
	expect_match "its output's tail" 'the-last-words' "$body"
	expect_eq "only the first step's layer" 1 "$(nlayers)"
	expect_eq "no hidden part left" "" \
	    "$(ls -A "$LAYERS" | grep -v -e '\.lock$' -e '^\.bases$' -e '^[0-9a-f]\{64\}\.\(qcow2\|meta\)$')"
	code=$(sapi "$d" GET /v1/sandboxes/f1)
	expect_eq "the sandbox is gone" 404 "$code"
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
	expect_eq "serve exits 0" 0 $?
}

# A create deleted while its layer builds: the build is stopped, nothing
# cached, no QEMU left; a server stopped during a build exits 0, clean.
test_serve_setup_cancelled() {
	local p=$T_TMP/p.lua d=$T_TMP/serve3 code i
	mkdir -p "$d"
	fresh_store servecancel
	profile "$p" '"sleep 600"'
	serve_launch "$d/s.sock" "$d/token" "$d/serve.log" --profile "$p" ||
	    { fail "the server did not come up: $(cat "$d/serve.log")"; return; }
	code=$(sapi "$d" POST /v1/sandboxes -d '{"name":"c1","wait":false}')
	expect_eq "created, not waited for" 202 "$code"
	for i in $(seq 300); do
		sapi "$d" GET /v1/sandboxes/c1 >/dev/null
		grep -q '"phase":"building' "$d/body" && break
		sleep 0.5
	done
	expect_match "building" '"phase":"building setup step 1/1: sleep 600"' "$(cat "$d/body")"
	code=$(sapi "$d" DELETE /v1/sandboxes/c1)
	expect_eq "deleted during its build" 200 "$code"
	for i in $(seq 120); do
		[ -z "$(pgrep -P "$SERVE_PID" -f -- '--setup-only')" ] && break
		sleep 0.5
	done
	expect_eq "the build's child is gone" "" "$(pgrep -P "$SERVE_PID" -f -- '--setup-only')"
	expect_eq "nothing cached" 0 "$(nlayers)"
	code=$(sapi "$d" POST /v1/sandboxes -d '{"name":"c2","wait":false}')
	for i in $(seq 300); do
		sapi "$d" GET /v1/sandboxes/c2 >/dev/null
		grep -q '"phase":"building' "$d/body" && break
		sleep 0.5
	done
	kill -TERM "$SERVE_PID"
	wait "$SERVE_PID"
	expect_eq "serve stopped during a build exits 0" 0 $?
	expect_eq "still nothing cached" 0 "$(nlayers)"
	expect_eq "no hidden part left" "" \
	    "$(ls -A "$LAYERS" | grep -v -e '\.lock$' -e '^\.bases$')"
}

# boot = "image": the step runs through the agent of the image's own
# boot (cloud test image, slow under TCG); the layer is the overlay after
# QEMU's clean stop; a later run is a hit, warm from the top layer.
test_image_boot_setup() {
	local p=$T_TMP/p.lua err=$T_TMP/err out cloud=$PWD/build/images/cloud.qcow2
	bash tests/images/cloud.sh "$cloud" >/dev/null 2>&1 ||
	    { fail "cannot build the cloud test image (tests/images/cloud.sh)"; return; }
	fresh_store imageboot
	cat >"$p" <<-EOF
	return {
	  image = "$cloud",
	  boot = "image",
	  setup = { "echo from-image-setup >/etc/imgsetup; cat /proc/1/comm" },
	}
	EOF
	out=$("$QSUP" run --json -p "$p" -- cat /etc/imgsetup 2>"$err")
	expect_eq "first run: exit" 0 $?
	expect_eq "the command sees the step's file" from-image-setup "$out"
	expect_eq "built" "['built']" "$(layers_json "$err" '[l["result"] for l in L]')"
	expect_eq "one layer" 1 "$(nlayers)"
	out=$("$QSUP" run --json -p "$p" -- cat /etc/imgsetup 2>"$err")
	expect_eq "second run: exit, output" "0 from-image-setup" "$? $out"
	expect_eq "a hit" "['hit']" "$(layers_json "$err" '[l["result"] for l in L]')"
	expect_eq "warm from the top layer" '"warm"' "$(json_field start "$err")"
	echo "    second run's boot: $(json_field boot_s "$err") s"
}

for t in ${LAYERS_TESTS:-test_miss_then_hit test_changed_step_rebuilds_only_it_and_later \
    test_failing_step_caches_nothing test_two_runs_build_once \
    test_prune_keeps_layers_in_use test_setup_network_allowlist \
    test_bad_profiles_named test_serve_setup test_serve_setup_fails test_serve_setup_cancelled \
    test_image_boot_setup}; do
	run_test "$t"
done
finish
