#!/usr/bin/env bash
# A pipeline's job with the shipped ci profile, first and second run, in
# the same run: zlib's Debian source (tests/images/debian-source.sh),
# ./configure && make && make test in the Debian test image (--set
# image=, the profile's own being on Docker Hub). The first run builds
# setup's layers (apt-get install build-essential ccache from the mirror)
# and fills ccache's /cache; each second run starts warm from the top
# layer and compiles from the cache. Printed: the first run's setup, job
# and total, the second run's (median of RUNS), and second / first.
# Usage: bench/ci.sh [RUNS]   (default 1; a first run is minutes under TCG)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-1}
qsup=$PWD/build/qsup
img=$PWD/build/images/debian-12.qcow2
bash tests/images/debian.sh "$img"
tmp=$(mktemp -d /tmp/qsup-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache \
    XDG_DATA_HOME=$tmp/data
mkdir -m 700 "$tmp/run" "$tmp/src"
rc=0
src=$(bash tests/images/debian-source.sh zlib "$tmp/src") || rc=$?
if [ $rc != 0 ]; then
	echo "ci: skipped: no zlib source (tests/images/debian-source.sh exit $rc)"
	exit 0
fi

field() { tail -n 1 "$1" | sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p"; }

# job NAME: one run, its total and setup seconds appended to NAME, NAME.setup.
job() {
	local t0 t1
	t0=$(now_ms)
	(cd "$src" && env -u GITHUB_WORKSPACE -u CI_PROJECT_DIR -u WORKSPACE \
	    -u QSUP_ARTIFACTS -u QSUP_CACHE "$qsup" --profile ci \
	    --set image="$img" --json -- \
	    sh -c './configure && make && make test') >"$tmp/out" 2>"$tmp/json" ||
	    { echo "bench: the ci job failed: $(tail -n 5 "$tmp/out")" >&2; exit 1; }
	t1=$(now_ms)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f\n", (b - a) / 1000}' >>"$tmp/$1"
	field "$tmp/json" prepare_s >>"$tmp/$1.setup"
}

job first
for _ in $(seq 1 "$runs"); do
	job second
done
first=$(median <"$tmp/first" %.1f)
second=$(median <"$tmp/second" %.1f)
echo "ci job (zlib: ./configure && make && make test, ci profile, the Debian test image):"
echo "  first run (setup's layers built, ccache empty): $first s, of which setup $(median <"$tmp/first.setup" %.1f) s"
echo "  second run (layers hit, warm, ccache full), median of $runs: $second s ($(tr '\n' ' ' <"$tmp/second"))"
awk -v a="$second" -v b="$first" 'BEGIN {printf "  second / first: %.2f\n", a / b}'
