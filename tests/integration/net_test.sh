#!/usr/bin/env bash
# Network policy, enforced on the host: from real guests, against real HTTP
# servers that this file starts on the host's loopback. All traffic stays on
# this machine. The default guest has no firewall tools (busybox only), so
# "after the guest changes its firewall" is covered by what it can change:
# its own addresses, routes and neighbours, as root.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

SRV=$T_TMP/srv
SERVER_PIDS=()
trap 'kill "${SERVER_PIDS[@]}" 2>/dev/null; rm -rf "$T_TMP"' EXIT
mkdir -p "$SRV/www"
echo allowed-content >"$SRV/www/a.txt"

# start_server NAME: an HTTP server on 127.0.0.1, any free port, in
# $SRV/NAME.port.
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

# A static helper that floods the guest's network with IPv4 fragments.
HELPERS=$T_TMP/helpers
mkdir -p "$HELPERS"
musl-gcc -static -Os -o "$HELPERS/fragflood" tests/integration/helpers/fragflood.c ||
    { echo "cannot build the fragment flood helper"; exit 1; }
A=$(cat "$SRV/a.port")	# the port rules allow
B=$(cat "$SRV/b.port")	# a second port, never allowed

# A guest shell function: "HOST:PORT reached" when an HTTP request sent
# straight to HOST:PORT got the file back, "HOST:PORT unreachable" if not.
PROBE='probe() {
	if printf "GET /a.txt HTTP/1.0\r\n\r\n" | nc -w 2 "$1" "$2" 2>/dev/null |
	    grep -q allowed-content; then echo "$1:$2 reached"
	else echo "$1:$2 unreachable"; fi
}
proxy() {	# proxy URL: the status line and body through the proxy
	printf "GET %s HTTP/1.0\r\n\r\n" "$1" | nc -w 3 10.0.2.100 3128 2>/dev/null |
	    sed -n "1p;\$p" | tr -d "\r" | tr "\n" " "; echo
}'

json_net() {	# json_net FILE PYTHON-EXPR: evaluated on the "network" object
	/usr/bin/python3 -c 'import json, sys
n = json.loads(open(sys.argv[1]).read().splitlines()[-1])["network"]
print(eval(sys.argv[2]))' "$1" "$2"
}

test_restricted_reaches_nothing() {
	local out
	out=$("$QSUP" run --json -- sh -c "$PROBE
	    probe 10.0.2.2 $A; probe 10.0.2.2 $B; probe 10.0.2.100 3128
	    probe 192.0.2.1 80
	    ping -c 1 -W 2 10.0.2.2 >/dev/null 2>&1 && echo ping answered
	    nslookup localhost >/dev/null 2>&1 && echo localhost resolved
	    # As root, rewire the guest's side: another address, a host
	    # route to the gateway, no cached neighbours.
	    ip addr flush dev eth0 2>/dev/null
	    ip addr add 10.0.2.77/24 dev eth0
	    ip route add 10.0.2.2/32 dev eth0 src 10.0.2.77
	    ip route add default via 10.0.2.2
	    ip neigh flush all >/dev/null 2>&1
	    probe 10.0.2.2 $A; probe 10.0.2.3 $A; probe 10.0.2.2 $B
	    echo done" 2>"$T_TMP/err")
	expect_eq "nothing reached" "10.0.2.2:$A unreachable
10.0.2.2:$B unreachable
10.0.2.100:3128 unreachable
192.0.2.1:80 unreachable
10.0.2.2:$A unreachable
10.0.2.3:$A unreachable
10.0.2.2:$B unreachable
done" "$out"
	expect_eq "server a saw nothing" "" "$(cat "$SRV/a.log")"
	expect_eq "server b saw nothing" "" "$(cat "$SRV/b.log")"
	expect_eq "mode" restricted "$(json_net "$T_TMP/err" 'n["mode"]')"
	# Three connections reached qsup before the rewiring (10.0.2.100 has
	# no owner in this mode: the guest's ARP goes unanswered), a ping and
	# a lookup tried twice.
	expect_eq "refusals counted" True \
	    "$(json_net "$T_TMP/err" 'n["refused"] >= 6')"
	expect_eq "the host's loopback attempt is listed" True \
	    "$(json_net "$T_TMP/err" "any(d['dest'] == '10.0.2.2:$A' and not d['allowed'] for d in n['destinations'])")"
	expect_eq "nothing allowed" 0 "$(json_net "$T_TMP/err" 'n["allowed"]')"
}

test_allowlist_proxy_allows_only_the_rule() {
	local out p=$T_TMP/allow.lua
	cat >"$p" <<-EOF
	return {
		network = "allowlist",
		network_allow = { "127.0.0.1:$A", "localhost:$A" },
	}
	EOF
	out=$("$QSUP" run -v --json -p "$p" -- sh -c "$PROBE
	    echo \$http_proxy \$https_proxy
	    proxy http://127.0.0.1:$A/a.txt
	    proxy http://localhost:$A/a.txt
	    proxy http://127.0.0.1:$B/a.txt
	    printf 'CONNECT 127.0.0.1:$B HTTP/1.1\r\n\r\n' |
	        nc -w 3 10.0.2.100 3128 | head -n 1 | tr -d '\r'
	    printf 'CONNECT 127.0.0.1:$A HTTP/1.1\r\n\r\nGET /a.txt HTTP/1.0\r\n\r\n' |
	        nc -w 3 10.0.2.100 3128 | grep -c allowed-content
	    probe 10.0.2.2 $A
	    # A real client, told of the proxy by the environment alone
	    # (busybox wget's -T crashes it, so no timeout flag).
	    wget -q -O- http://127.0.0.1:$A/a.txt
	    wget -q -O- http://127.0.0.1:$B/a.txt 2>&1 | grep -o '403 Forbidden'
	    nslookup localhost 2>&1 | grep -A1 '^Name:' | tail -n 1
	    nslookup not-listed.example 2>&1 | grep -q NXDOMAIN && echo NXDOMAIN" 2>"$T_TMP/err")
	expect_eq "through the proxy" "http://10.0.2.100:3128 http://10.0.2.100:3128
HTTP/1.0 200 OK allowed-content 
HTTP/1.0 200 OK allowed-content 
HTTP/1.1 403 Forbidden qsup: 127.0.0.1:$B is not allowed by the sandbox's network policy: no rule allows the address and port 
HTTP/1.1 403 Forbidden
1
10.0.2.2:$A unreachable
allowed-content
403 Forbidden
Address: 127.0.0.1
NXDOMAIN" "$out"
	expect_eq "server b saw nothing" "" "$(cat "$SRV/b.log")"
	expect_eq "server a saw the four allowed requests" 4 \
	    "$(grep -c 'GET /a.txt' "$SRV/a.log")"
	expect_eq "mode" allowlist "$(json_net "$T_TMP/err" 'n["mode"]')"
	expect_eq "refused port listed" True \
	    "$(json_net "$T_TMP/err" "any(d['dest'] == '127.0.0.1:$B' and not d['allowed'] for d in n['destinations'])")"
	expect_eq "the unlisted name listed" True \
	    "$(json_net "$T_TMP/err" "any(d['kind'] == 'dns' and d['dest'] == 'not-listed.example' and not d['allowed'] for d in n['destinations'])")"
	expect_match "-v names the refusal" "refused http 127.0.0.1:$B" \
	    "$(cat "$T_TMP/err")"
}

test_none_has_no_interface() {
	local out
	out=$("$QSUP" run --json --set 'network="none"' -- sh -c \
	    'ls /sys/class/net; echo works' 2>"$T_TMP/err")
	expect_eq "only the loopback" "lo
works" "$out"
	expect_eq "mode" none "$(json_net "$T_TMP/err" 'n["mode"]')"
	expect_eq "no card on QEMU's command line" 0 \
	    "$("$QSUP" run -v --set 'network="none"' -- true 2>&1 | grep -c 'virtio-net')"
	# Without a card the guest loads no driver for one (a template's
	# restore, then a cold boot); with the card, it does.
	local ws mode
	for ws in true false; do
		for mode in none restricted; do
			out=$("$QSUP" run --set "network=\"$mode\"" \
			    --set "warm_start=$ws" -- \
			    sh -c 'grep -c "^virtio_net " /proc/modules')
			expect_eq "virtio_net loaded, $mode, warm_start $ws" \
			    "$([ $mode = none ] && echo 0 || echo 1)" "$out"
		done
	done
}

test_forwards_on_loopback_only() {
	local p=$T_TMP/fwd.lua port="" i body listen pid qpid
	cat >"$p" <<-EOF
	return { ports = { 8000 } }
	EOF
	"$QSUP" run -v -p "$p" -- sh -c 'mkdir -p /tmp/w; echo from-guest >/tmp/w/x
	    httpd -p 8000 -h /tmp/w; sleep 20' >/dev/null 2>"$T_TMP/err" &
	pid=$!
	for i in $(seq 100); do
		port=$(sed -n 's/.*port 127\.0\.0\.1:\([0-9]*\) on the host.*/\1/p' "$T_TMP/err")
		[ -n "$port" ] && grep -q "command started" "$T_TMP/err" && break
		sleep 0.2
	done
	[ -n "$port" ] || fail "no forward reported: $(cat "$T_TMP/err")"
	for i in $(seq 30); do
		body=$(/usr/bin/python3 -c 'import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/x" % sys.argv[1], timeout=5).read().decode().strip())' "$port" 2>/dev/null) && break
		sleep 0.5
	done
	expect_eq "guest server reached from the host" from-guest "$body"
	listen=$(ss -Htln "sport = :$port" | awk '{print $4}')
	expect_eq "bound on 127.0.0.1 only" "127.0.0.1:$port" "$listen"
	# The listener is qsup's; QEMU holds no internet socket at all.
	expect_match "qsup listens" "qsup" "$(ss -Htlnp "sport = :$port")"
	qpid=$(pgrep -f "qemu-system.*$T_RUN" | head -n 1)
	[ -n "$qpid" ] || fail "no QEMU while the command runs"
	expect_eq "QEMU's internet sockets" "" \
	    "$(ss -Htanup | grep "pid=$qpid," || true)"
	kill -INT "$pid"
	wait "$pid"
}

test_open_needs_ack_and_warns() {
	local out err st p=$T_TMP/open.lua
	err=$("$QSUP" run --set 'network="open"' -- true 2>&1); st=$?
	expect_eq "refused without the acknowledgement" 125 $st
	expect_match "says why" "network_open_ack" "$err"
	cat >"$p" <<-EOF
	return { network = "open", network_open_ack = true }
	EOF
	out=$("$QSUP" run -p "$p" -- sh -c "$PROBE
	    probe 10.0.2.2 $A" 2>"$T_TMP/err")
	expect_match "QEMU keeps spawn=deny" "spawn=deny" \
	    "$("$QSUP" run -v -p "$p" -- true 2>&1 | grep 'qsup: qemu:')"
	expect_match "warns about the host's loopback" \
	    "open.*127\.0\.0\.1.*10\.0\.2\.2" "$(cat "$T_TMP/err")"
	# What the warning says is true: open reaches the host's services.
	expect_eq "open reaches the host" "10.0.2.2:$A reached" "$out"
}

test_tcp_map_reaches_one_host_port() {
	local out p=$T_TMP/tcp.lua
	cat >"$p" <<-EOF
	return {
		network_tcp = { { host = "127.0.0.1", port = $A, name = "web" } },
	}
	EOF
	# restricted, the default: the map is the one way out.
	out=$("$QSUP" run --json -p "$p" -- sh -c "$PROBE
	    probe web $A; probe web $B; probe 10.0.2.2 $A
	    nslookup web | grep -A1 '^Name:' | tail -n 1" 2>"$T_TMP/err")
	expect_eq "only the mapped port" "web:$A reached
web:$B unreachable
10.0.2.2:$A unreachable
Address: 10.0.2.101" "$out"
	expect_eq "server b saw nothing" "" "$(cat "$SRV/b.log")"
	expect_eq "--json lists the map" "[('10.0.2.101:$A', 'web', '127.0.0.1:$A')]" \
	    "$(json_net "$T_TMP/err" "[(m['guest'], m['name'], m['host']) for m in n['tcp_maps']]")"
}

test_socket_rules_compile_to_the_allowlist() {
	local out p=$T_TMP/rules.lua
	cat >"$p" <<-EOF
	return {
		network = "allowlist",
		network_rules = {
			"ALLOW|TCP|localhost|$A,$B|OUT",
			"DENY|TCP|127.0.0.1|$B|OUT",
			"DENY|TCP|::1|$B|OUT",	-- localhost is both
			"ALLOW|TCP|*|8000|IN",
		},
	}
	EOF
	out=$("$QSUP" run -v -p "$p" -- sh -c "$PROBE
	    proxy http://localhost:$A/a.txt
	    proxy http://localhost:$B/a.txt" 2>"$T_TMP/err")
	expect_eq "allowed, then denied by the rule" "HTTP/1.0 200 OK allowed-content 
HTTP/1.1 403 Forbidden qsup: localhost:$B is not allowed by the sandbox's network policy: denied by the rule \"127.0.0.1:$B\" " "$out"
	expect_eq "server b saw nothing" "" "$(cat "$SRV/b.log")"
	expect_match "the IN rule forwards port 8000" \
	    "port 127\.0\.0\.1:[0-9]+ on the host leads to port 8000" \
	    "$(cat "$T_TMP/err")"
}

# The guest's own firewall is defence in depth; asked for and not loaded,
# the sandbox does not start. The default guest is busybox only, with no
# iptables-restore and no netfilter modules, so on this machine only this
# refusal can be shown, not a firewall that loads.
test_guest_firewall_that_cannot_load_stops_the_start() {
	local err st
	err=$("$QSUP" run --set guest_firewall=true -- echo ran 2>&1); st=$?
	expect_eq "status" 125 $st
	expect_match "names what is missing" \
	    "guest firewall: the guest has no iptables-nft-restore, iptables-legacy-restore or iptables-restore" "$err"
	[[ $err != *ran* ]] || fail "the command ran without its firewall"
}

# flood NAME PROFILE-OPTIONS... -- GUEST-COMMAND: run the command (which
# floods) while sampling qsup's resident memory; $T_TMP/NAME.peak gets the
# largest VmRSS seen (kB), NAME.teardown the seconds from the command's
# last line ("flood-done") to qsup's exit.
flood() {
	local name=$1 pid peak=0 rss done_at="" end; shift
	"$QSUP" run --json "$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err" &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
		[ -n "$rss" ] && [ "$rss" -gt "$peak" ] && peak=$rss
		if [ -z "$done_at" ] && grep -qs flood-done "$T_TMP/$name.out"; then
			done_at=$(date +%s.%N)
		fi
		sleep 0.05
	done
	end=$(date +%s.%N)
	wait "$pid"
	echo "$peak" >"$T_TMP/$name.peak"
	[ -n "$done_at" ] || done_at=$end
	awk -v a="$done_at" -v b="$end" 'BEGIN { printf "%.1f\n", b - a }' \
	    >"$T_TMP/$name.teardown"
	echo "    $name: qsup's VmRSS peaked at $peak kB, teardown $(cat "$T_TMP/$name.teardown") s" \
	    "($(json_net "$T_TMP/$name.err" 'n["frames_in"]') frames in," \
	    "$(json_net "$T_TMP/$name.err" 'n.get("fragments_dropped")') fragments dropped)"
}

# 20,000 datagrams of 60 KB from the guest, cut into fragments by its
# kernel, once took qsup to 1 GB and its teardown to 100 s: libslirp holds
# every incomplete datagram's fragments for 30 s. qsup drops fragments;
# it stays small and ends at once.
FLOOD_RSS_MAX=65536	# kB: qsup's own needs are a fraction of it
test_fragment_flood_keeps_qsup_small() {
	local mode p=$T_TMP/flood.lua
	cat >"$p" <<-EOF
	return { network = "allowlist", network_allow = { "example.org" } }
	EOF
	flood restricted -v --share "$HELPERS:/h" -- sh -c \
	    '/h/fragflood udp 10.0.2.3 9 20000 60000; echo flood-done'
	flood allowlist -p "$p" --share "$HELPERS:/h" -- sh -c \
	    '/h/fragflood udp 10.0.2.3 53 20000 60000; echo flood-done'
	for mode in restricted allowlist; do
		expect_eq "$mode: the flood ran" "sent 20000
flood-done" "$(cat "$T_TMP/$mode.out")"
		[ "$(cat "$T_TMP/$mode.peak")" -lt $FLOOD_RSS_MAX ] ||
		    fail "$mode: qsup grew to $(cat "$T_TMP/$mode.peak") kB"
		expect_eq "$mode: quick teardown" True "$(awk -v t="$(cat "$T_TMP/$mode.teardown")" 'BEGIN { print (t < 10) ? "True" : "False" }')"
		expect_eq "$mode: fragments counted" True \
		    "$(json_net "$T_TMP/$mode.err" 'n["fragments_dropped"] >= 20000 * 3')"
		expect_eq "$mode: listed as refused" True \
		    "$(json_net "$T_TMP/$mode.err" "any(d['kind'] == 'fragment' and d['dest'] == '10.0.2.3' and d['count'] >= 60000 and not d['allowed'] for d in n['destinations'])")"
	done
	# -v: the first few as they come, then the count at the end.
	expect_match "-v lists the fragments" \
	    "refused fragment 10\.0\.2\.3 \([0-9]{5,} times\): IPv4 fragments are dropped" \
	    "$(cat "$T_TMP/restricted.err")"
	expect_eq "-v stays short" 6 \
	    "$(grep -c 'refused fragment' "$T_TMP/restricted.err")"
}

# Open mode drops fragments too: libslirp 4.7 would keep lone middle
# fragments of datagrams that never complete (20,000 took qsup to 400 MB),
# and a last fragment that comes first crashes it. Whole datagrams still
# go through.
test_open_mode_drops_fragments() {
	local p=$T_TMP/open.lua
	cat >"$p" <<-EOF
	return { network = "open", network_open_ack = true }
	EOF
	flood open -p "$p" --share "$HELPERS:/h" -- sh -c \
	    'ping -c 1 -W 5 -s 60000 10.0.2.2 >/dev/null || echo no answer to a fragmented ping
	    /h/fragflood raw 10.0.2.2 20000
	    ping -c 1 -W 5 10.0.2.2 >/dev/null && echo a whole ping answered
	    echo flood-done'
	expect_eq "the flood ran" "no answer to a fragmented ping
sent 20000
a whole ping answered
flood-done" "$(cat "$T_TMP/open.out")"
	[ "$(cat "$T_TMP/open.peak")" -lt $FLOOD_RSS_MAX ] ||
	    fail "qsup grew to $(cat "$T_TMP/open.peak") kB"
	expect_eq "quick teardown" True "$(awk -v t="$(cat "$T_TMP/open.teardown")" 'BEGIN { print (t < 10) ? "True" : "False" }')"
	expect_eq "fragments counted" True \
	    "$(json_net "$T_TMP/open.err" 'n["fragments_dropped"] >= 20000')"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	: >"$SRV/a.log"
	: >"$SRV/b.log"
	run_test "$t"
done
finish
