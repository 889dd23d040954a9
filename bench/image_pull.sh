#!/usr/bin/env bash
# Image pulls: download throughput of `qsup image pull` from an HTTP server
# on the host's loopback (tests/integration/helpers/httpd.py) against curl
# itself, on one file of SIZE_MB (default 300) made here, in one run, runs
# alternating. qsup also checks the SHA-256 from a SHA256SUMS beside the
# file (with OpenSSL's libcrypto, in a thread beside the download) and
# starts its writeback without waiting for it (its .meta says so:
# docs/images.md); curl does neither check, so "curl then
# sha256sum" is shown too, and the CPU time (user + system) each took, as
# on 2 shared cores that, more than the wire, sets the pace. Medians of
# RUNS (default 5). Then the same pulls paced by the server at
# QSUP_BENCH_PULL_RATE bytes a second (default 1000000000: a 8 Gbit/s
# link), where the sender leaves this host's CPUs to the receiver as a
# server on another machine would.
# Usage: bench/image_pull.sh [RUNS] [SIZE_MB]
# QSUP_OTHER=path: another build too, alternating in the same loop (a
# change measured against the code before it, under the same load).
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-5}
mb=${2:-300}
qsup=${QSUP:-$PWD/build/qsup}	# QSUP=path: another build
other=${QSUP_OTHER:-}		# QSUP_OTHER=path: also it, in the same loop
tmp=$(mktemp -d /tmp/qsup-bench-pull.XXXXXX)
srv=""
trap '[ -z "$srv" ] || kill "$srv"; rm -rf "$tmp"' EXIT

mkdir -p "$tmp/www"
head -c $((mb * 1000000)) /dev/urandom >"$tmp/www/big.img"
(cd "$tmp/www" && sha256sum big.img >SHA256SUMS)
/usr/bin/python3 tests/integration/helpers/httpd.py "$tmp/www" \
    "$tmp/port" "$tmp/log" >/dev/null 2>&1 </dev/null &
srv=$!
for i in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
url=http://127.0.0.1:$(cat "$tmp/port")/big.img

# once NAME CMD...: its wall time in ms, appended to NAME, and the CPU
# seconds (user + system) of its children to NAME.cpu.
once() {
	local name=$1 t0 t1 c0 c1; shift
	sync
	c0=$(children_cpu)
	t0=$(now_ms)
	"$@" >/dev/null
	t1=$(now_ms)
	c1=$(children_cpu)
	echo $((t1 - t0)) >>"$tmp/$name"
	awk -v c=$((c1 - c0)) -v h="$hz" 'BEGIN {printf "%.2f\n", c / h}' \
	    >>"$tmp/$name.cpu"
}
# user+system ticks of this shell's waited-for children.
children_cpu() { awk '{print $16 + $17}' /proc/$$/stat; }
hz=$(getconf CLK_TCK)
qsup_pull() {
	rm -rf "$tmp/data"
	XDG_DATA_HOME=$tmp/data "${1:-$qsup}" image pull --json "$url"
}
curl_get() { rm -f "$tmp/c.img"; curl -sSf -o "$tmp/c.img" "$url"; }
rate=${QSUP_BENCH_PULL_RATE:-1000000000}
curl_check() {
	curl_get && (cd "$tmp" && echo "$(cut -d' ' -f1 www/SHA256SUMS)  c.img" |
	    sha256sum -c --quiet)
}

qsup_pull >/dev/null		# warm the server's page cache
for i in $(seq 1 "$runs"); do
	once qsup qsup_pull
	[ -z "$other" ] || once other qsup_pull "$other"
	once curl curl_get
	once curl_sum curl_check
done
q=$(median %d <"$tmp/qsup"); c=$(median %d <"$tmp/curl")
s=$(median %d <"$tmp/curl_sum")
rate() { awk -v b="$mb" -v ms="$1" 'BEGIN {printf "%.0f", b / (ms / 1000)}'; }
echo "image pull of $mb MB from the loopback, median of $runs: qsup $q ms ($(rate "$q") MB/s, SHA-256 checked)   (runs: $(tr '\n' ' ' <"$tmp/qsup"))"
echo "curl -o, median of $runs: $c ms ($(rate "$c") MB/s)   (runs: $(tr '\n' ' ' <"$tmp/curl"))"
echo "curl -o then sha256sum -c, median of $runs: $s ms ($(rate "$s") MB/s)"
echo "CPU (user + system), median: qsup $(median %.2f <"$tmp/qsup.cpu") s, curl -o $(median %.2f <"$tmp/curl.cpu") s, curl -o then sha256sum -c $(median %.2f <"$tmp/curl_sum.cpu") s; load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$other" ]; then
	o=$(median %d <"$tmp/other")
	echo "QSUP_OTHER ($other), the same loop: $o ms, CPU $(median %.2f <"$tmp/other.cpu") s; ratio to curl $(awk -v o="$o" -v c="$c" 'BEGIN {printf "%.2f", c / o}')   (runs: $(tr '\n' ' ' <"$tmp/other"))"
fi
echo "throughput ratio qsup/curl: $(awk -v q="$q" -v c="$c" 'BEGIN {printf "%.2f", c / q}') (target >= 0.9); qsup/(curl + sha256sum): $(awk -v q="$q" -v s="$s" 'BEGIN {printf "%.2f", s / q}')"

# Paced by the server (httpd.py's /slow/R/): the wire, not the CPUs
# shared with the sender, sets the pace.
url=http://127.0.0.1:$(cat "$tmp/port")/slow/$rate/big.img
rm -f "$tmp/qsup" "$tmp/curl"
for i in $(seq 1 "$runs"); do
	once qsup qsup_pull
	once curl curl_get
done
q=$(median %d <"$tmp/qsup"); c=$(median %d <"$tmp/curl")
echo "paced at $rate bytes/s by the server, median of $runs: qsup $q ms, curl -o $c ms: ratio $(awk -v q="$q" -v c="$c" 'BEGIN {printf "%.2f", c / q}') (target >= 0.9)   (runs: qsup $(tr '\n' ' ' <"$tmp/qsup")curl $(tr '\n' ' ' <"$tmp/curl"))"
