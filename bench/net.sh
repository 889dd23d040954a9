#!/usr/bin/env bash
# Network: a 100 MB download by the guest from an HTTP server on the host's
# loopback, through the allowlist proxy against the same download with
# network = "open" (straight to 10.0.2.2), in one run; and the proxy's cost
# per connection, from 50 small requests each way. Times are taken in the
# guest (/proc/uptime, 10 ms steps), so qsup's own start is not counted.
# Medians of RUNS (default 5). Usage: bench/net.sh [RUNS]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-5}
qsup=$PWD/build/qsup
tmp=$(mktemp -d /tmp/qsup-bench-net.XXXXXX)
srv=""
trap '[ -z "$srv" ] || kill "$srv"; rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"

mkdir -p "$tmp/www"
head -c 104857600 /dev/urandom >"$tmp/www/big"
echo small >"$tmp/www/small"
/usr/bin/python3 tests/integration/helpers/httpserver.py "$tmp/www" \
    "$tmp/port" "$tmp/log" >/dev/null 2>&1 </dev/null &
srv=$!
for i in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
port=$(cat "$tmp/port")

cat >"$tmp/allow.lua" <<EOF
return { network = "allowlist", network_allow = { "127.0.0.1:$port" },
    memory = "1G" }
EOF
cat >"$tmp/open.lua" <<EOF
return { network = "open", network_open_ack = true, memory = "1G" }
EOF

# guest MODE: "SECONDS_100MB SECONDS_50_REQUESTS" from one guest.
guest() {
	local host=127.0.0.1
	[ "$1" = open ] && host=10.0.2.2
	"$qsup" run -p "$tmp/$1.lua" -- sh -c "
	    t() { read u _ </proc/uptime; echo \$u; }
	    a=\$(t); wget -q -O /dev/null http://$host:$port/big; b=\$(t)
	    i=0; while [ \$i -lt 50 ]; do
	        wget -q -O /dev/null http://$host:$port/small; i=\$((i + 1))
	    done; c=\$(t)
	    echo \$(echo \"\$b - \$a\" | bc) \$(echo \"\$c - \$b\" | bc)" 2>/dev/null
}

# calc FORMAT EXPR: EXPR worked out by awk (a bare Debian has no bc).
calc() {
	awk "BEGIN { printf \"$1\", $2 }"
}

guest open >/dev/null		# the template, shared by both modes
for i in $(seq 1 "$runs"); do
	# Alternate, so that a slow spell of the machine hits both.
	guest allow >>"$tmp/allow"
	guest open >>"$tmp/open"
done
a=$(awk '{print $1}' "$tmp/allow" | median %.2f)
o=$(awk '{print $1}' "$tmp/open" | median %.2f)
echo "100 MB download, allowlist proxy, median of $runs: $a s ($(calc %.1f "100 / $a") MB/s)"
echo "100 MB download, open (straight to the host): $o s ($(calc %.1f "100 / $o") MB/s)"
echo "throughput ratio proxy/open: $(calc %.2f "$o / $a") (target >= 0.8)"
a=$(awk '{print $2}' "$tmp/allow" | median %.3f)
o=$(awk '{print $2}' "$tmp/open" | median %.3f)
echo "50 small requests by wget (a process each): proxy $a s, open $o s"

# The proxy's cost per connection without a process start in each: 200
# requests from one Python process in the guest (the host's interpreter,
# python.lua), each on a new connection, through the proxy and straight.
command -v python3 >/dev/null || exit 0
cat >"$tmp/lat.py" <<PY
import os, sys, time, urllib.request
via = sys.argv[1]
# no_proxy names the guest's own 127.0.0.1; this 127.0.0.1 is the host's.
for k in ("no_proxy", "NO_PROXY"):
    os.environ.pop(k, None)
proxies = {"http": "http://10.0.2.100:3128"} if via == "proxy" else {}
o = urllib.request.build_opener(urllib.request.ProxyHandler(proxies))
url = "http://%s:$port/small" % ("127.0.0.1" if via == "proxy" else "10.0.2.2")
for i in range(20):
    o.open(url).read()
t = time.monotonic()
for i in range(200):
    o.open(url).read()
print("%.3f" % ((time.monotonic() - t) * 1000 / 200))
PY
cat >"$tmp/pyallow.lua" <<EOF
return extend("builtin:python", { network = "allowlist",
    network_allow = { "127.0.0.1:$port" } })
EOF
cat >"$tmp/pyopen.lua" <<EOF
return extend("builtin:python", { network = "open", network_open_ack = true })
EOF
for i in $(seq 1 "$runs"); do
	(cd "$tmp" && "$qsup" -p "$tmp/pyallow.lua" -- python3 /app/lat.py proxy) \
	    >>"$tmp/lat.proxy" 2>/dev/null
	(cd "$tmp" && "$qsup" -p "$tmp/pyopen.lua" -- python3 /app/lat.py direct) \
	    >>"$tmp/lat.open" 2>/dev/null
done
a=$(median %.2f <"$tmp/lat.proxy")
o=$(median %.2f <"$tmp/lat.open")
echo "a request on a new connection, from one process in the guest: proxy $a ms, open $o ms; the proxy adds $(calc %.2f "$a - $o") ms"
