#!/usr/bin/env bash
# Profiles as a user meets them: qsup profile check/show/facts, --set, the
# shipped profiles, profile names, and real runs under dev.lua (ci.lua's
# are ci_test.sh's: it needs an image).
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# A python3 of our own making, so python.lua resolves the same everywhere.
fake_python() {
	mkdir -p "$T_TMP/py/bin"
	printf '#!/bin/sh\nexit 1\n' >"$T_TMP/py/bin/python3.12"
	chmod 755 "$T_TMP/py/bin/python3.12"
	ln -sf python3.12 "$T_TMP/py/bin/python3"
	echo "$T_TMP/py/bin:$PATH"
}

# Checked as in a container and as on a plain host, whatever this machine
# is: only nested-container.lua speaks, and only outside a container.
test_check_shipped() {
	local out st
	out=$(PATH=$(fake_python) QSUP_IN_CONTAINER=1 "$QSUP" profile check \
	    profiles/*.lua 2>&1)
	st=$?
	expect_eq "status" 0 $st
	expect_eq "output" "" "$out"
	out=$(PATH=$(fake_python) QSUP_IN_CONTAINER=0 "$QSUP" profile check \
	    profiles/*.lua 2>&1)
	expect_eq "status on a plain host" 0 $?
	expect_eq "output on a plain host" "qsup: profiles/nested-container.lua:18: nested-container.lua: this host does not look like a container (no /.dockerenv, /.containerenv or \$container)" "$out"
	# By name too: the built-in copies.
	out=$(PATH=$(fake_python) "$QSUP" profile check -v default ci dev \
	    python nested-container 2>&1)
	expect_eq "status by name" 0 $?
	expect_eq "five built-ins" 5 "$(grep -c '^builtin:.*: ok (' <<<"$out")"
}

# Every fail-*.lua: exit 125 and exactly its golden lines on stderr.
test_check_golden() {
	local f st out err n=0
	for f in tests/profiles/fail-*.lua; do
		out=$("$QSUP" profile check "$f" 2>"$T_TMP/err")
		st=$?
		err=$(cat "$T_TMP/err")
		expect_eq "$f status" 125 $st
		expect_eq "$f stdout" "" "$out"
		expect_eq "$f messages" "$(cat "${f%.lua}.err")" "$err"
		n=$((n + 1))
	done
	[ $n -ge 28 ] || fail "only $n golden files"
}

# Several files: each one's mistakes, and a good one says nothing.
test_check_several() {
	local err st
	err=$("$QSUP" profile check profiles/ci.lua tests/profiles/fail-two.lua \
	    tests/profiles/empty.lua 2>&1)
	st=$?
	expect_eq "status" 125 $st
	expect_eq "messages" "$(cat tests/profiles/fail-two.err)" "$err"
	err=$("$QSUP" profile check 2>&1)
	expect_eq "no file" 125 $?
	expect_match "usage" 'no profile given' "$err"
}

# A profile of our own, with the mistakes people make: each message names
# FILE:LINE and says what to write instead.
test_user_mistakes() {
	local f=$T_TMP/mine.lua err st
	cat >"$f" <<'EOF'
return {
	memroy = "2G",
	memory = "2GB",
	use_kvm = "yes",
	timeout = "30s",
	network = "opne",
	["qemu.start_timeout"] = 90,
	shares = { { host = "/", mode = "readonly" } },
	extra_args = { "-virtfs", "local,path=/" },
}
EOF
	err=$("$QSUP" profile check "$f" 2>&1)
	st=$?
	expect_eq "status" 125 $st
	expect_match "misspelt" "^$f:2: unknown setting \"memroy\" \\(did you mean \"memory\"\\?\\)" "$err"
	expect_match "unit" "^$f:3: memory: \"2GB\" is not a size \\(write \"2G\"\\)" "$err"
	expect_match "boolean" "^$f:4: use_kvm: \"yes\" is not valid \\(write true, without quotes\\)" "$err"
	expect_match "seconds" "^$f:5: timeout: \"30s\" is not valid \\(write 30\\)" "$err"
	expect_match "choice" "^$f:6: network: \"opne\" is not valid \\(write \"open\"\\)" "$err"
	expect_match "seed name" "^$f:7: unknown setting \"qemu.start_timeout\" \\(did you mean \"start_timeout\"\\?\\)" "$err"
	expect_match "share mode" "^$f:8: shares\\[1\\].mode: \"readonly\" is not valid; expected \"ro\"" "$err"
	expect_match "share over /" "^$f:8: shares\\[1\\].guest: / is the guest system's own" "$err"
	expect_match "extra_args" "^$f:9: extra_args\\[1\\]: \"-virtfs\" \"local,path=/\" is refused" "$err"
	expect_eq "one line each" 9 "$(wc -l <<<"$err")"
}

# A FIFO as the profile (a process substitution is one) is refused at
# once, named; so are directories and devices. print() is capped.
test_not_a_regular_file() {
	local err st
	mkfifo "$T_TMP/p.lua"
	err=$(timeout 10 "$QSUP" run --profile "$T_TMP/p.lua" -- true 2>&1); st=$?
	expect_eq "status" 125 $st
	expect_eq "message" "$T_TMP/p.lua: not a regular file" "$err"
	err=$(timeout 10 "$QSUP" profile check /dev/null 2>&1); st=$?
	expect_eq "device" "125 /dev/null: not a regular file" "$st $err"
	printf 'for i = 1, 1e8 do print("flood", i) end\nreturn {}\n' >"$T_TMP/flood.lua"
	err=$("$QSUP" profile check "$T_TMP/flood.lua" 2>&1 | wc -c)
	[ "$err" -lt 65536 ] || fail "print() wrote $err bytes"
}

test_show() {
	local out
	out=$("$QSUP" profile show ci)
	expect_eq "status" 0 $?
	expect_match "header" '^-- builtin:ci, as qsup will use it' "$out"
	expect_match "from the profile" $'\ttimeout = 1800, +-- profile, builtin:ci:[0-9]+' "$out"
	expect_match "default" $'\tvirtfs = "auto", +-- default$' "$out"
	out=$("$QSUP" profile show --set timeout=5 --set cpus=2 ci)
	expect_match "command line" $'\ttimeout = 5, +-- command line, --set timeout=5' "$out"
	out=$("$QSUP" profile show)
	expect_match "no file: the default" '^-- builtin:default,' "$out"
	out=$("$QSUP" profile show --json profiles/dev.lua)
	expect_match "json" '^\{"profile":"profiles/dev.lua","settings":\{"use_kvm":\{"value":"auto","from":"profile","at":"profiles/dev.lua:[0-9]+"\}' "$out"
	if command -v python3 >/dev/null; then
		python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["settings"]["network"]["value"] == "allowlist"' "$out" ||
		    fail "not the JSON expected: $out"
	fi
	"$QSUP" profile show tests/profiles/fail-two.lua >/dev/null 2>"$T_TMP/err"
	expect_eq "bad profile" 125 $?
	expect_eq "its mistakes" "$(cat tests/profiles/fail-two.err)" "$(cat "$T_TMP/err")"
}

# show's output is a profile: it checks, and shows the same again.
test_show_round_trip() {
	local p one two
	for p in default ci dev nested-container tests/profiles/full.lua; do
		"$QSUP" profile show "$p" >"$T_TMP/shown.lua" ||
		    fail "$p: show failed"
		"$QSUP" profile check "$T_TMP/shown.lua" ||
		    fail "$p: its show does not check"
		one=$(sed 's/, *--.*$/,/; 1d' "$T_TMP/shown.lua")
		two=$("$QSUP" profile show "$T_TMP/shown.lua" |
		    sed 's/, *--.*$/,/; 1d')
		expect_eq "$p shown twice" "$one" "$two"
	done
}

# The seed's socket rules and TCP maps, as a user writes and reads them.
test_network_rules() {
	local out err st
	out=$("$QSUP" profile show --set network=allowlist \
	    --set 'network_rules={"ALLOW|TCP|deb.debian.org|80,443|OUT", "DENY|TCP|*.internal.example|*|OUT", "ALLOW|TCP|*|8000-8001|IN"}' \
	    --set 'network_tcp={{host="127.0.0.1", port=5432, name="db"}}')
	expect_eq "status" 0 $?
	expect_match "allow" $'\t-- and "deb.debian.org:443", +-- network_rules\\[1\\], --set network_rules=' "$out"
	expect_match "deny" $'\t-- but not "\\*.internal.example", +-- network_rules\\[2\\]' "$out"
	expect_match "forward" $'\t-- and \\{ guest = 8001, host = 0, address = "127.0.0.1" \\}, -- network_rules\\[3\\]' "$out"
	expect_match "map" $'\tnetwork_tcp = \\{ \\{ host = "127.0.0.1", port = 5432, name = "db", guest_port = 5432 \\} \\},' "$out"
	out=$("$QSUP" profile settings)
	expect_match "settings" '^network_rules = \{\}' "$out"
	expect_match "settings" '^network_tcp = \{\}' "$out"
	# Refused before anything starts, with what to write.
	err=$("$QSUP" run --set 'network_rules=ALLOW|TCP|deb.debian.org|443|OUT' -- true 2>&1)
	st=$?
	expect_eq "refused" 125 $st
	expect_match "needs allowlist" 'network_rules\[1\]: ALLOW ... OUT needs network = "allowlist", and network is "restricted"' "$err"
	err=$("$QSUP" run --set 'network_rules=ALLOW|UDP|deb.debian.org|53|OUT' -- true 2>&1)
	expect_eq "UDP refused" 125 $?
	expect_match "UDP" 'qsup answers DNS itself' "$err"
}

# --set on qsup run: checked before anything starts.
test_run_set_mistakes() {
	local err st t0
	t0=$(date +%s%N)
	err=$("$QSUP" run --set memroy=1G --set memory=2GB -- true 2>&1)
	st=$?
	expect_eq "status" 125 $st
	expect_match "misspelt" '^--set memroy=1G: unknown setting "memroy" \(did you mean "memory"\?\)' "$err"
	expect_match "unit" '^--set memory=2GB: memory: "2GB" is not a size \(write "2G"\)' "$err"
	[ $((($(date +%s%N) - t0) / 1000000)) -lt 1000 ] ||
	    fail "a refused --set took more than a second"
	err=$("$QSUP" run --set nonsense -- true 2>&1)
	expect_eq "no =" 125 $?
	expect_match "no = message" 'expected NAME=VALUE' "$err"
}

test_run_set() {
	local out
	out=$("$QSUP" run --set memory=256M --set 'env={GREETING="hi there"}' \
	    -- sh -c 'echo "$GREETING"; grep MemTotal /proc/meminfo')
	expect_eq "status" 0 $?
	expect_match "env from --set" '^hi there$' "$out"
	expect_match "memory from --set" 'MemTotal: +2[0-9]{5} kB' "$out"
}

# dev.lua for real: its memory and CPUs reach the guest.
test_run_dev() {
	local out want
	"$QSUP" --profile dev -- true
	expect_eq "qsup --profile dev -- true" 0 $?
	want=$("$QSUP" profile show --json dev |
	    sed -n 's/.*"cpus":{"value":\([0-9]*\).*/\1/p')
	out=$("$QSUP" --profile dev -- sh -c 'grep -c ^processor /proc/cpuinfo')
	expect_eq "cpus" "$want" "$out"
}

# --profile NAME: ./NAME.lua, then $XDG_CONFIG_HOME/qsup/profiles, then
# the built-in ones.
test_profile_names() {
	local out err
	mkdir -p "$T_TMP/cfg/qsup/profiles" "$T_TMP/work"
	printf 'return { cpus = 3 }\n' >"$T_TMP/cfg/qsup/profiles/mine.lua"
	out=$(cd "$T_TMP/work" && XDG_CONFIG_HOME=$T_TMP/cfg "$QSUP" profile show mine)
	expect_match "config dir" "^-- $T_TMP/cfg/qsup/profiles/mine.lua," "$out"
	printf 'return { cpus = 2 }\n' >"$T_TMP/work/mine.lua"
	out=$(cd "$T_TMP/work" && XDG_CONFIG_HOME=$T_TMP/cfg "$QSUP" profile show mine)
	expect_match "current directory first" '^-- mine.lua,' "$out"
	out=$(cd "$T_TMP/work" && "$QSUP" profile show ci)
	expect_match "built-in" '^-- builtin:ci,' "$out"
	err=$("$QSUP" --profile no-such-profile -- true 2>&1)
	expect_eq "not found" 125 $?
	expect_match "not found message" 'profile no-such-profile not found: .* built-in profiles are default, ci, dev, python, nested-container' "$err"
}

# include/extend across a tree, and a cycle, through the command.
test_include() {
	local out err
	out=$("$QSUP" profile show tests/profiles/include-extend.lua)
	expect_match "from the base" $'\tmemory = "1G", +-- profile, tests/profiles/include/base.lua:3' "$out"
	expect_match "from the profile" $'\tcpus = 3, +-- profile, tests/profiles/include-extend.lua:3' "$out"
	err=$("$QSUP" profile check tests/profiles/fail-include-cycle.lua 2>&1)
	expect_eq "cycle" 125 $?
	expect_match "cycle message" 'include cycle: ' "$err"
}

# Profiles cannot reach the host, and stop in time.
test_escapes() {
	local f st t0 ms
	for f in tests/profiles/escape-*.lua; do
		t0=$(date +%s%N)
		"$QSUP" profile check "$f" 2>"$T_TMP/err"
		st=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		expect_eq "$f status" 125 $st
		expect_match "$f message" "^$f:[0-9]+: " "$(cat "$T_TMP/err")"
		[ $ms -lt 2000 ] || fail "$f took $ms ms"
	done
	[ ! -e /tmp/qsup-escaped ] || fail "os.execute ran"
}

test_facts() {
	local out
	out=$(PATH=$(fake_python) "$QSUP" profile facts)
	expect_eq "status" 0 $?
	expect_match "arch" "^qsup.arch = \"$(uname -m)\"$" "$out"
	expect_match "triplet" '^qsup.triplet = "[a-z0-9_]+-linux-gnu[a-z0-9]*"$' "$out"
	expect_match "glibc" "^qsup.glibc = \"$(getconf GNU_LIBC_VERSION | awk '{print $2}')\"$" "$out"
	expect_match "cpus" "^qsup.cpus = [0-9]+$" "$out"
	expect_match "kvm" '^qsup.kvm = (true|false)$' "$out"
	expect_match "python" '^qsup.python.version = "3.12"$' "$out"
	expect_match "python prefix" "^qsup.python.prefix = \"$T_TMP/py\"$" "$out"
	out=$(QSUP_IN_CONTAINER=0 "$QSUP" profile facts)
	expect_match "forced plain host" '^qsup.in_container = false$' "$out"
	out=$(env -u QSUP_IN_CONTAINER container=podman "$QSUP" profile facts --json)
	expect_match "json" '^\{"arch":' "$out"
	expect_match "container" '"in_container":true' "$out"
	if command -v python3 >/dev/null; then
		python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out" ||
		    fail "not JSON: $out"
	fi
}

# python.lua resolves from the host's Python (here, one of our making).
test_python_profile() {
	local out
	out=$(PATH=$(fake_python) "$QSUP" profile show python)
	expect_eq "status" 0 $?
	expect_match "the host's glibc" 'host = "/usr/lib/x86_64-linux-gnu", guest = "/lib/x86_64-linux-gnu", mode = "ro"' "$out"
	expect_match "interpreter shared" "host = \"$T_TMP/py\", guest = \"$T_TMP/py\", mode = \"ro\"" "$out"
	out=$(PATH=$(fake_python) PYSANDBOXES_QEMU_IMAGE_URL=https://example.org/x.img \
	    "$QSUP" profile show python)
	expect_match "the seed's variable" $'\timage = "https://example.org/x.img",' "$out"
	out=$(PATH=$T_TMP/nowhere "$QSUP" profile check python 2>&1)
	expect_eq "no python" 125 $?
	expect_match "no python message" 'no python3 on the host.s PATH' "$out"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
