#!/usr/bin/env bash
# Shares: reading a 200 MB file over 9p in the guest against the same read
# from the guest's own memory; python3 -c pass through shares against the
# host, and on the sparse library closure against the full one; staging a
# 10,000-file execution tree. Medians of RUNS (default 3).
# Usage: bench/share.sh [RUNS]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-3}
qsup=$PWD/build/qsup
tmp=$(mktemp -d /tmp/qsup-bench-share.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$tmp/run"


# 200 MB read: over 9p, then from the guest's tmpfs; times from the
# guest's /proc/uptime (10 ms steps), so qsup's own start is not counted.
mkdir -p "$tmp/share"
head -c 209715200 /dev/urandom >"$tmp/share/big"
for i in $(seq 1 "$runs"); do
	"$qsup" run --set memory=1G --share "$tmp/share:/s" -- sh -c '
	    t() { read u _ </proc/uptime; echo "$u"; }
	    a=$(t); cat /s/big >/dev/null; b=$(t)
	    cp /s/big /tmp/big; c=$(t); cat /tmp/big >/dev/null; d=$(t)
	    echo "$a $b $c $d"' |
	    awk '{printf "%.1f %.1f\n", 200 / ($2 - $1), 200 / ($4 - $3)}' >>"$tmp/read"
done
echo "read 200 MB over 9p in the guest, median of $runs: $(cut -d' ' -f1 "$tmp/read" | median) MB/s"
echo "the same read from the guest's memory (tmpfs): $(cut -d' ' -f2 "$tmp/read" | median) MB/s"

# python3 -c pass: the host's interpreter through shares (python.lua), the
# guest warm, the interpreter's files read cold by this guest.
if command -v python3 >/dev/null; then
	for i in $(seq 1 5); do
		t0=$(now_ms); python3 -c pass; echo $(( $(now_ms) - t0 )) >>"$tmp/host"
	done
	(cd "$tmp" && "$qsup" --profile python -- python3 -c pass)	# template
	for i in $(seq 1 "$runs"); do
		(cd "$tmp" && "$qsup" --profile python -v -- python3 -c pass) 2>&1 |
		    sed -n 's/.*timings:.*command \([0-9.]*\) s.*/\1/p' |
		    awk '{printf "%d\n", $1 * 1000}' >>"$tmp/guest"
	done
	h=$(median <"$tmp/host"); g=$(median <"$tmp/guest")
	echo "python3 -c pass: host $h ms, in the guest through shares $g ms (ratio $(awk -v g="$g" -v h="$h" 'BEGIN {printf "%.1f", g / h}'), TCG)"
fi

# python3 -c pass on ld_closure_libs = "sparse" against "full", for PATH's
# python3 and the system's, with virtfs as it is here ("auto": staged when
# qsup runs in a container) and off: qsup's wall time (the closure found
# and staged, the staged copies removed, included), its prepare phase and
# the command alone; then what the guest sees of the library directory.
triplet=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
closure() {
	local label=$1 mode vfs i t0
	shift
	for vfs in auto off; do
		for mode in full sparse; do
			: >"$tmp/w"; : >"$tmp/t"
			(cd "$tmp" && env "$@" "$qsup" --profile python --set virtfs=$vfs --set ld_closure_libs=$mode -- python3 -c pass)
			for i in $(seq 1 "$runs"); do
				t0=$(now_ms)
				(cd "$tmp" && env "$@" "$qsup" --profile python -v --set virtfs=$vfs --set ld_closure_libs=$mode -- python3 -c pass) 2>&1 |
				    sed -n 's/.*timings: prepare \([0-9.]*\) s.*command \([0-9.]*\) s.*/\1 \2/p' >>"$tmp/t"
				echo $(( $(now_ms) - t0 )) >>"$tmp/w"
			done
			echo "python3 -c pass, $label, virtfs=$vfs, $mode, median of $runs: wall $(awk '{print $1 / 1000}' "$tmp/w" | median %.2f) s, prepare $(awk '{print $1}' "$tmp/t" | median %.2f) s, command $(awk '{print $2}' "$tmp/t" | median %.2f) s"
		done
	done
	for mode in full sparse; do
		(cd "$tmp" && env "$@" "$qsup" --profile python --set ld_closure_libs=$mode -- python3 -c '
import os, stat, sys
d = "/lib/" + sys.argv[1]
f = l = b = 0
for top, dirs, files in os.walk(d):
	for n in files:
		st = os.lstat(os.path.join(top, n))
		if stat.S_ISLNK(st.st_mode):
			l += 1
		else:
			f += 1
			b += st.st_size
print("  %s, %s: the guest'"'"'s %s holds %d files (%.1f MB) and %d symlinks" % (sys.argv[2], sys.argv[3], d, f, b / 1e6, l))' "$triplet" "$label" "$mode")
	done
}
if command -v python3 >/dev/null; then
	closure "PATH's python3"
fi
if [ -x /usr/bin/python3 ]; then
	closure "/usr/bin/python3" PATH=/usr/bin:/bin
fi

# Staging a 10,000-file execution tree (forced on): the "prepare" phase.
gen=$tmp/tree
for d in $(seq -w 0 99); do
	mkdir -p "$gen/d$d"
	for f in $(seq -w 0 99); do echo "$d$f" >"$gen/d$d/f$f"; done
done
printf 'return { virtfs = "on", shares = { { host = "%s", exec = true } } }\n' "$gen" >"$tmp/st.lua"
for i in $(seq 1 "$runs"); do
	"$qsup" run -v --profile "$tmp/st.lua" -- true 2>&1 |
	    sed -n 's/.*timings: prepare \([0-9.]*\) s.*/\1/p' |
	    awk '{printf "%d\n", $1 * 1000}' >>"$tmp/stage"
done
echo "staging a 10,000-file tree (hard links) before the boot, median of $runs: $(median <"$tmp/stage") ms"
