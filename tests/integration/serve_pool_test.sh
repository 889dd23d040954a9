#!/usr/bin/env bash
# "qsup serve"'s warm pool (serve_pool): sandboxes booted and paused ahead
# of creates (costing no CPU), a create answered from it ("start":"pool")
# that runs commands, the pool refilled, a create with a setting that
# changes QEMU's command line booting instead, two takers with two
# sandboxes, a taker's clock right after its sandbox sat paused, room
# made for a user's create by evicting pool sandboxes, nothing left after
# SIGTERM, and bad serve_pool values refused at startup.
. "$(dirname "$0")/lib.sh"
SSE="python3 $PWD/tests/integration/helpers/sse.py"

serve_start() {
	S=$T_TMP/${FUNCNAME[1]}
	mkdir -p "$S"
	SOCK=$S/s.sock
	if ! serve_launch "$SOCK" "$S/token" "$S/serve.log" -v "$@"; then
		fail "the server did not come up: $(cat "$S/serve.log")"
		return 1
	fi
	TOKEN=$(cat "$S/token" 2>/dev/null)
}

serve_stop() {
	kill -TERM "$SERVE_PID" 2>/dev/null
	local rc=0
	wait "$SERVE_PID" || rc=$?
	expect_eq "serve's exit status after SIGTERM" 0 "$rc"
}

# api METHOD PATH [CURL ARGS...]: $CODE, $BODY.
api() {
	local m=$1 p=$2 out
	shift 2
	out=$(curl -sS --unix-socket "$SOCK" -o "$S/body" -w '%{http_code}' \
	    -X "$m" -H "Authorization: Bearer $TOKEN" "$@" "http://qsup$p")
	CODE=$out
	BODY=$(cat "$S/body")
}

# run_exec NAME ARGV_JSON: stdout in $OUT, the exit in $EXIT.
run_exec() {
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d "{\"argv\":$2}" "http://qsup/v1/sandboxes/$1/exec" >"$S/stream"
	EXIT=$($SSE "$S/stream" --out "$S/out" --err "$S/err")
	OUT=$(cat "$S/out")
}

# metric NAME: its value in /metrics (the first line of it).
metric() {
	curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    http://qsup/metrics | awk -v m="$1" 'index($0, m " ") == 1 {print $NF; exit}'
}

# wait_pool_of PROFILE N SECONDS: 0 once N pool sandboxes of PROFILE's
# entry are paused; wait_pool N SECONDS: of "default".
wait_pool_of() {
	local i
	for i in $(seq 1 $(($3 * 5))); do
		[ "$(metric "qsup_pool_sandboxes{profile=\"$1\",state=\"paused\"}")" = "$2" ] &&
		    return 0
		kill -0 "$SERVE_PID" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

wait_pool() {
	wait_pool_of default "$1" "$2"
}

cpu_ticks() {
	awk '{print $14 + $15}' "/proc/$1/stat"
}

OK='{"status":0,"signal":null,"timed_out":false,"error":null}'

test_pool_take_refill_bypass() {
	local pids p t0 total=0 n rb
	serve_start --set 'serve_pool={default=2}' || return
	wait_pool 2 300 || {
		fail "the pool did not fill: $(tail -20 "$S/serve.log")"
		serve_stop
		return
	}
	api GET /v1/sandboxes
	expect_eq "the pool is not listed" '{"sandboxes":[]}' "$BODY"
	api GET /v1/sandboxes/pool-1
	expect_eq "nor found by its name" 404 "$CODE"
	pids=$(pgrep -f "qemu-system.*$T_RUN/qsup/sb-")
	expect_eq "two QEMUs" 2 "$(wc -w <<<"$pids")"
	# Paused: no CPU (as serve_state_test.sh measures it).
	for p in $pids; do
		t0=$(cpu_ticks "$p")
		sleep 2
		total=$((total + $(cpu_ticks "$p") - t0))
	done
	echo "pool QEMUs: $total ticks in 2 s each, paused" >>"$S/figures"
	[ "$total" -le 4 ] || fail "paused pool QEMUs took $total ticks"

	api POST /v1/sandboxes -d '{"name":"a","ttl":600}'
	expect_eq "create from the pool" 201 "$CODE"
	expect_match "start pool" '"start":"pool"' "$BODY"
	expect_match "ready" '"state":"ready"' "$BODY"
	expect_match "its ttl" '"ttl":600' "$BODY"
	expect_match "its name" '"name":"a"' "$BODY"
	run_exec a '["sh","-c","echo hi; echo a >/tmp/who"]'
	expect_eq "exec in it" "$OK" "$EXIT"
	expect_eq "its output" hi "$OUT"
	expect_eq "hits" 1 "$(metric qsup_pool_hits_total)"
	wait_pool 2 120 || fail "the pool did not refill"
	n=$(metric qsup_pool_refills_total)
	[ "$n" -ge 3 ] || fail "refills: $n"

	# Two takers at once: two sandboxes.
	curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d '{"name":"b"}' http://qsup/v1/sandboxes >"$S/b.json" &
	curl -sS --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d '{"name":"c"}' http://qsup/v1/sandboxes >"$S/c.json"
	wait $!
	expect_match "b from the pool" '"start":"pool"' "$(cat "$S/b.json")"
	expect_match "c from the pool" '"start":"pool"' "$(cat "$S/c.json")"
	run_exec b '["sh","-c","echo b >/tmp/who; cat /tmp/who"]'
	expect_eq "b's" b "$OUT"
	run_exec c '["sh","-c","cat /tmp/who 2>/dev/null || echo none"]'
	expect_eq "c is not b (nor a)" none "$OUT"
	# Each was booted and seeded on its own: their random streams differ.
	run_exec b '["sh","-c","head -c 16 /dev/urandom | od -An -tx1"]'
	rb=$OUT
	run_exec c '["sh","-c","head -c 16 /dev/urandom | od -An -tx1"]'
	[ -n "$rb" ] && [ "$rb" != "$OUT" ] ||
	    fail "b and c read the same random bytes: $rb"
	api GET /v1/sandboxes
	expect_eq "a, b and c listed, from the pool" 3 \
	    "$(grep -o '"start":"pool"' <<<"$BODY" | wc -l)"

	# Settings that change nothing: taken all the same.
	wait_pool 2 120 || fail "the pool did not refill after b and c"
	api POST /v1/sandboxes -d '{"name":"s","settings":{"cpus":1,"memory":512}}'
	expect_match "settings as the pool's: taken" '"start":"pool"' "$BODY"
	run_exec s '["echo","s"]'
	expect_eq "exec in s" s "$OUT"

	# A setting that changes QEMU's command line: booted, not taken.
	api POST /v1/sandboxes -d '{"name":"d","settings":{"memory":"384M"}}'
	expect_eq "create with a setting" 201 "$CODE"
	expect_match "not from the pool" '"start":"(warm|cold|template-build)"' "$BODY"
	expect_match "its memory" '"memory_mib":384' "$BODY"
	run_exec d '["echo","d"]'
	expect_eq "exec in d" d "$OUT"
	n=$(metric qsup_pool_misses_total)
	[ "$n" -ge 1 ] || fail "misses: $n"
	serve_stop
}

# A pool of a profile file that changes: its sandboxes are not handed
# out for the new profile; they are replaced.
test_pool_profile_changed() {
	local pf
	S=$T_TMP/test_pool_profile_changed
	mkdir -p "$S"
	pf=$S/p.lua
	echo 'return { memory = 512 }' >"$pf"
	serve_start --set "serve_pool={[\"$pf\"]=1}" || return
	wait_pool_of "$pf" 1 300 || {
		fail "the pool did not fill: $(tail -20 "$S/serve.log")"
		serve_stop
		return
	}
	api POST /v1/sandboxes -d "{\"name\":\"p1\",\"profile\":\"$pf\"}"
	expect_match "p1 from the pool" '"start":"pool"' "$BODY"
	wait_pool_of "$pf" 1 120 || fail "no refill"
	echo 'return { memory = 384 }' >"$pf"
	api POST /v1/sandboxes -d "{\"name\":\"p2\",\"profile\":\"$pf\"}"
	expect_eq "p2 created" 201 "$CODE"
	expect_match "p2 booted for the changed profile" '"start":"(warm|cold|template-build)"' "$BODY"
	expect_match "p2's memory" '"memory_mib":384' "$BODY"
	wait_pool_of "$pf" 1 300 || fail "no refill of the changed profile"
	api POST /v1/sandboxes -d "{\"name\":\"p3\",\"profile\":\"$pf\"}"
	expect_match "p3 from the refilled pool" '"start":"pool"' "$BODY"
	expect_match "p3's memory" '"memory_mib":384' "$BODY"
	serve_stop
}

test_pool_clock() {
	local host guest
	serve_start --set 'serve_pool={default=1}' || return
	wait_pool 1 300 || {
		fail "the pool did not fill: $(tail -20 "$S/serve.log")"
		serve_stop
		return
	}
	sleep 10	# paused: the guest's clock stands still meanwhile
	api POST /v1/sandboxes -d '{"name":"t"}'
	expect_match "from the pool" '"start":"pool"' "$BODY"
	run_exec t '["date","+%s"]'
	host=$(date +%s)
	guest=$OUT
	echo "host $host guest $guest" >>"$S/figures"
	[ -n "$guest" ] && [ $((host - guest)) -le 3 ] &&
	    [ $((guest - host)) -le 3 ] ||
	    fail "the guest's clock is $guest, the host's $host"
	serve_stop
}

test_pool_evict() {
	serve_start --max-sandboxes 2 --set 'serve_pool={default=2}' || return
	wait_pool 2 300 || {
		fail "the pool did not fill: $(tail -20 "$S/serve.log")"
		serve_stop
		return
	}
	api POST /v1/sandboxes -d '{"name":"e","settings":{"memory":"384M"}}'
	expect_eq "a create past the limit with a full pool" 201 "$CODE"
	expect_match "booted" '"state":"ready"' "$BODY"
	run_exec e '["echo","e"]'
	expect_eq "exec in e" e "$OUT"
	api POST /v1/sandboxes -d '{"name":"f"}'
	expect_eq "and another, from the pool" 201 "$CODE"
	expect_match "f from the pool" '"start":"pool"' "$BODY"
	api POST /v1/sandboxes -d '{"name":"g"}'
	expect_eq "the limit holds for users' own" 503 "$CODE"
	serve_stop
}

# The same when memory is the limit: 2 x 512 MiB of pool fill 1 GiB.
test_pool_evict_memory() {
	serve_start --max-memory 1G --set 'serve_pool={default=2}' || return
	wait_pool 2 300 || {
		fail "the pool did not fill: $(tail -20 "$S/serve.log")"
		serve_stop
		return
	}
	api POST /v1/sandboxes -d '{"name":"m","settings":{"memory":"384M"}}'
	expect_eq "a create past the memory limit with a full pool" 201 "$CODE"
	expect_match "m's memory" '"memory_mib":384' "$BODY"
	expect_eq "one pool sandbox left" 1 \
	    "$(metric 'qsup_pool_sandboxes{profile="default",state="paused"}')"
	api POST /v1/sandboxes -d '{"name":"m2","settings":{"memory":"384M"}}'
	expect_eq "and another" 201 "$CODE"
	api POST /v1/sandboxes -d '{"name":"m3","settings":{"memory":"384M"}}'
	expect_eq "the limit holds for users' own" 503 "$CODE"
	expect_match "naming it" '"limit":"max_memory"' "$BODY"
	serve_stop
}

test_pool_bad_values() {
	local out rc
	S=$T_TMP/bad
	mkdir -p "$S"
	out=$("$QSUP" serve --listen "unix:$S/s.sock" --token-file "$S/token" \
	    --set 'serve_pool={default=-1}' 2>&1)
	rc=$?
	expect_eq "a negative count: status" 125 "$rc"
	expect_match "names the entry" 'serve_pool: default = -1 is out of range' "$out"
	out=$("$QSUP" serve --listen "unix:$S/s.sock" --token-file "$S/token" \
	    --set 'serve_pool={["no-such-profile"]=1}' 2>&1)
	rc=$?
	expect_eq "an unknown profile: status" 125 "$rc"
	expect_match "names the entry" 'serve_pool: no-such-profile: ' "$out"
	out=$("$QSUP" serve --listen "unix:$S/s.sock" --token-file "$S/token" \
	    --max-sandboxes 2 --set 'serve_pool={default=3}' 2>&1)
	rc=$?
	expect_eq "more than the limit: status" 125 "$rc"
	expect_match "says so" 'serve_pool: 3 sandboxes in all, more than serve_max_sandboxes \(2\)' "$out"
	[ ! -e "$S/token" ] || fail "a refused start left its token"
	[ ! -e "$S/s.sock" ] || fail "a refused start left its socket"
}

for t in ${TESTS:-test_pool_bad_values test_pool_take_refill_bypass \
    test_pool_clock test_pool_evict test_pool_evict_memory \
    test_pool_profile_changed}; do
	run_test "$t"
done
finish
