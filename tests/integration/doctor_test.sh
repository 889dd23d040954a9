#!/usr/bin/env bash
# qsup doctor, qsup profile import and contrib/ as a user meets them: the
# host's checks (text and JSON), a broken guest named, a seed's
# .py-sandboxes turned into a profile that runs, and contrib's files
# checked with what this machine has (systemd-analyze, python3-yaml;
# contrib/container's image: container_test.sh).
. "$(dirname "$(readlink -f "$0")")/lib.sh"

CHECKS="profile qemu libraries guest kvm seccomp cache templates run_dir container cgroup images_dir"
FIXTURE=tests/integration/fixtures/sample.py-sandboxes

# Here a sandbox can run: exit 0, and every check in the JSON document.
test_doctor_ok() {
	local out st c
	out=$("$QSUP" doctor 2>&1)
	st=$?
	expect_eq "status" 0 $st
	expect_match "verdict line" '^a sandbox can run here' "$out"
	for c in $CHECKS; do
		expect_match "$c in the text" "^(ok|warn|fail) +$c " "$out"
	done
	"$QSUP" doctor --json >"$T_TMP/doctor.json" 2>"$T_TMP/doctor.err"
	expect_eq "json status" 0 $?
	python3 -m json.tool "$T_TMP/doctor.json" >/dev/null ||
	    fail "--json does not parse: $(head -c 300 "$T_TMP/doctor.json")"
	out=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is True, d["failed"]
for c in d["checks"]:
    assert c["verdict"] in ("ok", "warn", "fail"), c
    assert c["detail"], c
    assert c["verdict"] == "ok" or c["remedy"], c
print(" ".join(c["name"] for c in d["checks"]))' "$T_TMP/doctor.json" 2>&1)
	expect_eq "json checks" "$CHECKS" "$out"
	out=$("$QSUP" doctor --bogus 2>&1)
	expect_eq "usage status" 125 $?
}

# No guest: exit 1, the guest check failing with what to do.
test_doctor_broken_guest() {
	local out st
	out=$(QSUP_GUEST_DIR=/nonexistent "$QSUP" doctor 2>&1)
	st=$?
	expect_eq "status" 1 $st
	expect_match "guest fails" '^fail +guest +no default guest \(vmlinux, initramfs.cpio\) in /nonexistent \(QSUP_GUEST_DIR\)' "$out"
	expect_match "remedy" 'QSUP_GUEST_DIR names a directory without the guest' "$out"
	expect_match "summary" '^no sandbox can run here: guest failed$' "$out"
	out=$(QSUP_GUEST_DIR=/nonexistent "$QSUP" doctor --json 2>/dev/null)
	expect_eq "json failed" '["guest"] False' "$(python3 -c '
import json, sys; d = json.loads(sys.stdin.read())
print(json.dumps(d["failed"]), d["ok"])' <<<"$out")"
}

# A libcurl that cannot be loaded (an empty file the loader finds first):
# doctor fails it with what to install, a pull says so and leaves nothing,
# and a server does not start; a run, which needs neither, still works.
test_doctor_broken_library() {
	local out st pid i lib=$T_TMP/lib
	mkdir -p "$lib"
	: >"$lib/libcurl.so.4"
	out=$(LD_LIBRARY_PATH=$lib "$QSUP" doctor 2>&1)
	st=$?
	expect_eq "status" 1 $st
	expect_match "libraries fail" '^fail +libraries +cannot load libcurl.so.4, which qsup needs for downloads and qsup.s API client: .*libcurl.so.4: file too short' "$out"
	expect_match "remedy" 'apt-get install libcurl4 libarchive13 libssl3' "$out"
	out=$(LD_LIBRARY_PATH=$lib XDG_DATA_HOME=$T_TMP/data \
	    "$QSUP" image pull http://127.0.0.1:1/x.qcow2 2>&1)
	st=$?
	expect_eq "pull status" 125 $st
	expect_match "pull says" 'cannot load libcurl.so.4' "$out"
	expect_eq "pull left" "" "$(find "$T_TMP/data" -type f 2>/dev/null)"
	out=$(LD_LIBRARY_PATH=$lib timeout 20 "$QSUP" serve \
	    --listen "unix:$T_TMP/s.sock" 2>&1)
	st=$?
	expect_eq "serve status" 125 $st
	expect_match "serve says" 'cannot load libcurl.so.4' "$out"
	out=$(LD_LIBRARY_PATH=$lib "$QSUP" run -- echo ran 2>&1)
	expect_eq "run status" 0 $?
	expect_match "run output" '^ran$' "$out"
	# libcrypto, loaded for a pull's digests only: doctor names it (it
	# is libcurl's too), a run does without it.
	rm "$lib/libcurl.so.4"
	: >"$lib/libcrypto.so.3"
	out=$(LD_LIBRARY_PATH=$lib "$QSUP" doctor 2>&1)
	expect_eq "libcrypto: status" 1 $?
	expect_match "libcrypto: named" '^fail +libraries +cannot load .*libcrypto.so.3: file too short' "$out"
	# QEMU links libcrypto itself, so a run is looked at, not broken: its
	# qsup, once QEMU runs, has not mapped it.
	out=$(LD_LIBRARY_PATH=$lib "$QSUP" version 2>&1)
	expect_eq "libcrypto: version status" 0 $?
	"$QSUP" run -- sleep 3 >/dev/null 2>&1 &
	pid=$!
	for i in $(seq 100); do
		pgrep -P $pid -f qemu-system >/dev/null && break
		sleep 0.1
	done
	expect_eq "libcrypto: QEMU runs" 0 "$(pgrep -P $pid -f qemu-system >/dev/null; echo $?)"
	expect_eq "libcrypto: not mapped by qsup run" 0 \
	    "$(grep -c 'libcrypto\.so' /proc/$pid/maps)"
	wait $pid
	expect_eq "libcrypto: run status" 0 $?
}

# A profile that does not load is a failed check; the rest still run.
test_doctor_bad_profile() {
	local out
	out=$("$QSUP" doctor --profile tests/profiles/fail-two.lua 2>&1)
	expect_eq "status" 1 $?
	expect_match "profile fails" '^fail +profile +tests/profiles/fail-two.lua:' "$out"
	expect_match "qemu still checked" '^ok +qemu ' "$out"
}

# The seed's lines: translated and commented; 2GB and unknown keys named
# with their lines; the result passes check and runs a command.
test_import() {
	local out err st
	"$QSUP" profile import "$FIXTURE" -o "$T_TMP/imp.lua" 2>"$T_TMP/imp.err"
	st=$?
	err=$(cat "$T_TMP/imp.err")
	out=$(cat "$T_TMP/imp.lua")
	expect_eq "status: written, lines untranslated" 1 $st
	expect_match "2GB refused" "^$FIXTURE:8: qemu.memory=2GB: not translated: .*more than one suffix" "$err"
	expect_match "unknown key" "^$FIXTURE:15: qemu.cdrom_extra=-boot d: not translated" "$err"
	expect_match "bad virtfs" "^$FIXTURE:16: qemu.virtfs=sometimes: not translated" "$err"
	expect_eq "three named" 3 "$(grep -c ': not translated: ' <<<"$err")"
	expect_match "use_kvm" '^	use_kvm = "auto",$' "$out"
	expect_match "use_kvm why" '^	-- line 7: qemu.use_kvm=true: .*"auto"' "$out"
	expect_match "later memory" '^	memory = 384,$' "$out"
	expect_match "truthy yes" '^	show_boot_console = true,$' "$out"
	expect_match "virtfs_stage" '^	virtfs = "on",$' "$out"
	expect_match "ld minimal" '^	ld_closure_libs = "sparse",$' "$out"
	expect_match "ignored lines" '^-- Not qemu.\* lines, ignored .*: lines 3, 4\.$' "$out"
	expect_match "untranslated commented" '^-- line 8: qemu.memory=2GB: NOT TRANSLATED' "$out"
	"$QSUP" profile check "$T_TMP/imp.lua"
	expect_eq "profile check" 0 $?
	out=$("$QSUP" --profile "$T_TMP/imp.lua" --set show_boot_console=false \
	    -- sh -c 'echo ran; free -m | sed -n 2p' 2>&1)
	expect_eq "runs" 0 $?
	expect_match "output" '^ran$' "$out"
	# To stdout, and a clean file exits 0.
	printf 'qemu.use_kvm=false\nqemu.memory=256M\n' >"$T_TMP/clean"
	out=$("$QSUP" profile import "$T_TMP/clean" 2>&1)
	expect_eq "clean status" 0 $?
	expect_match "use_kvm false" '^	use_kvm = false,$' "$out"
	"$QSUP" profile import /nonexistent 2>/dev/null
	expect_eq "unreadable" 125 $?
}

# The units verify, against the build's binary; socket activation serves.
test_contrib_systemd() {
	local d=$T_TMP/units f out pid
	if ! command -v systemd-analyze >/dev/null; then
		echo "    skip: no systemd-analyze (apt-get install systemd)"
		return
	fi
	mkdir -p "$d/system" "$d/user"
	for f in contrib/systemd/qsup-serve.socket contrib/systemd/qsup-serve.service; do
		sed "s|/usr/local/bin/qsup|$QSUP|" "$f" >"$d/system/${f##*/}"
	done
	for f in socket service; do
		sed "s|/usr/local/bin/qsup|$QSUP|" \
		    "contrib/systemd/qsup-serve-user.$f" >"$d/user/qsup-serve.$f"
	done
	out=$(cd "$d/system" && systemd-analyze verify qsup-serve.socket \
	    qsup-serve.service 2>&1)
	expect_eq "system units verify" 0 $?
	expect_eq "system units say nothing" "" "$out"
	out=$(cd "$d/user" && systemd-analyze verify qsup-serve.socket \
	    qsup-serve.service 2>&1)
	expect_eq "user units verify" 0 $?
	expect_eq "user units say nothing" "" "$out"
	command -v systemd-socket-activate >/dev/null || return
	systemd-socket-activate -l "$T_TMP/sa.sock" "$QSUP" serve \
	    --token-file "$T_TMP/sa.token" >"$T_TMP/sa.log" 2>&1 &
	pid=$!
	sleep 0.3
	out=$(curl -s --max-time 20 --unix-socket "$T_TMP/sa.sock" \
	    http://x/v1/healthz)
	expect_match "healthz through systemd's socket" '"ok":true' "$out"
	kill -TERM $pid
	wait $pid
	expect_match "took fd 3" 'listening on fd:3' "$(cat "$T_TMP/sa.log")"
}

# Every manifest parses; the fields a mistake would break are there.
test_contrib_kubernetes() {
	local out
	out=$(python3 - contrib/kubernetes/*.yaml <<'PY' 2>&1
import sys, yaml
kinds = []
for path in sys.argv[1:]:
    for doc in yaml.safe_load_all(open(path)):
        assert doc["apiVersion"] and doc["metadata"]["name"], path
        kinds.append(doc["kind"])
        if doc["kind"] in ("Deployment", "Job"):
            spec = doc["spec"]
            pod = spec["template"]
            if doc["kind"] == "Deployment":
                sel = spec["selector"]["matchLabels"]
                labels = pod["metadata"]["labels"]
                assert all(labels.get(k) == v for k, v in sel.items()), path
            vols = {v["name"] for v in pod["spec"]["volumes"]}
            for c in pod["spec"]["containers"]:
                assert c["image"] and c["command"][0] == "qsup", path
                assert c["resources"]["requests"]["memory"], path
                for m in c["volumeMounts"]:
                    assert m["name"] in vols, (path, m)
                if doc["kind"] == "Deployment":
                    for p in ("readinessProbe", "livenessProbe"):
                        assert c[p]["httpGet"]["path"] == "/v1/healthz", path
                    secrets = [v["secret"]["secretName"] for v in
                               pod["spec"]["volumes"] if "secret" in v]
                    assert "qsup-token" in secrets, path
print(" ".join(sorted(kinds)))
PY
)
	expect_eq "manifests" "Deployment Deployment Job Service" "$out"
}

run_test test_doctor_ok
run_test test_doctor_broken_guest
run_test test_doctor_broken_library
run_test test_doctor_bad_profile
run_test test_import
run_test test_contrib_systemd
run_test test_contrib_kubernetes
finish
