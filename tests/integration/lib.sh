# Helpers for integration tests: each test is a shell function that runs the
# real qsup against real QEMU guests. Every test gets its own runtime and
# cache directories so leftovers can be checked after it.
set -u
cd "$(dirname "$(readlink -f "$0")")/../.."
QSUP=${QSUP:-$PWD/build/qsup}
T_PASS=0
T_FAIL=0
T_FAILED=()
T_RAN=()
T_TMP=$(mktemp -d /tmp/qsup-test.XXXXXX)
trap 'rm -rf "$T_TMP"' EXIT
# The user's data and configuration are the suite's own too: what it
# pulls, builds and configures is not another suite's, nor the host's.
export XDG_DATA_HOME=$T_TMP/data XDG_CONFIG_HOME=$T_TMP/config
# Every response a qsup serve of this suite gives, recorded (--record) for
# the contract test that tests/run.sh runs last (tests/contract/check.py):
# build/contract/SUITE.jsonl, SUITE-asan.jsonl under the sanitizers' qsup.
T_RECORD=$PWD/build/contract/$(basename "$0" .sh)
case $QSUP in */asan/*) T_RECORD=$T_RECORD-asan ;; esac
T_RECORD=$T_RECORD.jsonl
mkdir -p "${T_RECORD%/*}"

fail() {
	echo "    FAIL: $*"
	T_CUR_FAILED=1
}

# expect_eq WHAT EXPECTED ACTUAL
expect_eq() {
	if [ "$2" != "$3" ]; then
		fail "$1: expected '$2', got '$3'"
	fi
}

# expect_match WHAT ERE TEXT: a line of TEXT matches; a pattern of several
# lines must match across them, in order (grep would take each line of it
# as a pattern of its own, any one of them enough).
expect_match() {
	local ok=0
	case $2 in
	*$'\n'*) [[ $3 =~ $2 ]] && ok=1 ;;
	*) grep -qE -- "$2" <<<"$3" && ok=1 ;;
	esac
	if [ "$ok" = 0 ]; then
		fail "$1: expected to match /$2/, got: $(head -c 600 <<<"$3")"
	fi
}

# fresh_cache NAME: an empty cache of this test's own; TPL its templates.
fresh_cache() {
	export XDG_CACHE_HOME=$T_TMP/$1/cache
	rm -rf "$XDG_CACHE_HOME"
	TPL=$XDG_CACHE_HOME/qsup/templates
}

# json_field NAME FILE: the value of "NAME": in FILE's last line (qsup's
# --json summary).
json_field() {
	tail -n 1 "$2" | sed -n "s/.*\"$1\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p"
}

# No QEMU of this test alive, no run directory left.
expect_clean() {
	local left
	left=$(pgrep -f "qemu-system.*$T_RUN" || true)
	[ -z "$left" ] || fail "QEMU processes left behind: $left"
	# The start slots (gate) stay, shared by every qsup; their tickets
	# go with their waiters.
	if [ -d "$T_RUN/qsup" ] &&
	    [ -n "$(ls -A "$T_RUN/qsup" | grep -vx -e gate -e disks)" ]; then
		fail "run directory left behind: $(ls -A "$T_RUN/qsup")"
	fi
	# So does the registry of disks in use (its lock); its records go
	# with their sandboxes.
	if [ -d "$T_RUN/qsup/disks" ] &&
	    [ -n "$(ls -A "$T_RUN/qsup/disks" | grep -vx lock)" ]; then
		fail "disk records left behind: $(ls -A "$T_RUN/qsup/disks")"
	fi
	if [ -d "$T_RUN/qsup/gate" ] &&
	    [ -n "$(ls -A "$T_RUN/qsup/gate" | grep -v '^slot\.[0-9]*$')" ]; then
		fail "start tickets left behind: $(ls -A "$T_RUN/qsup/gate")"
	fi
}

# serve_launch SOCK TOKEN LOG [ARGS...]: qsup serve on the unix socket
# SOCK (and whatever ARGS add), its token in the file TOKEN, its output in
# LOG, its pid in SERVE_PID; 0 once /v1/healthz answers, 1 if it exited
# or did not answer within 10 s.
serve_launch() {
	local sock=$1 token=$2 log=$3 i
	shift 3
	"$QSUP" serve --listen "unix:$sock" --token-file "$token" \
	    --record "$T_RECORD" "$@" >"$log" 2>&1 &
	SERVE_PID=$!
	for i in $(seq 1 200); do
		curl -sf --unix-socket "$sock" http://qsup/v1/healthz \
		    >/dev/null 2>&1 && return 0
		kill -0 "$SERVE_PID" 2>/dev/null || return 1
		sleep 0.05
	done
	return 1
}

run_test() {
	local name=$1
	T_CUR_FAILED=0
	T_RUN=$T_TMP/$name/run
	mkdir -p "$T_RUN"
	chmod 700 "$T_RUN"
	export XDG_RUNTIME_DIR=$T_RUN
	export XDG_CACHE_HOME=$T_TMP/cache
	local t0=$SECONDS
	T_RAN+=("$name")
	declare -F "$name" >/dev/null || fail "no such test: $name"
	[ "$T_CUR_FAILED" = 1 ] || "$name"
	expect_clean
	if [ "$T_CUR_FAILED" = 0 ]; then
		T_PASS=$((T_PASS + 1))
		echo "  ok   $name ($((SECONDS - t0)) s)"
	else
		T_FAIL=$((T_FAIL + 1))
		T_FAILED+=("$name")
		echo "  FAIL $name ($((SECONDS - t0)) s)"
	fi
}

# debian_image: IMG, the Debian test image (tests/images/debian.sh, cached
# under build/images/); a suite that cannot have it ends failed, saying why.
debian_image() {
	IMG=$PWD/build/images/debian-12.qcow2
	if ! bash tests/images/debian.sh "$IMG"; then
		echo "cannot build the Debian test image (tests/images/debian.sh)"
		echo "0 passed, 1 failed"
		exit 1
	fi
}

# The suite's summary. A whole run (no TESTS) must have run every test_
# function the suite defines: one left out of a suite's own list would
# otherwise never fail, however broken.
finish() {
	local t missed=()
	if [ -z "${TESTS:-}" ] && [ $((T_PASS + T_FAIL)) -gt 0 ]; then
		for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
			[[ " ${T_RAN[*]} " == *" $t "* ]] || missed+=("$t")
		done
		if [ ${#missed[@]} -gt 0 ]; then
			echo "  FAIL defined but never run (missing from the suite's list): ${missed[*]}"
			T_FAIL=$((T_FAIL + 1))
		fi
	fi
	echo "$T_PASS passed, $T_FAIL failed"
	[ "$T_FAIL" = 0 ]
}
