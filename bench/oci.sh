#!/usr/bin/env bash
# OCI registry pulls, from Debian's docker-registry on 127.0.0.1 (started
# here, killed at the end): an image of about SIZE_MB (default 150: the
# busybox base and one gzip layer of random bytes), pulled by
# `qsup image pull docker://...` (download, digests, and the qcow2 build)
# against `skopeo copy docker://... oci:DIR` (download and digests only),
# runs alternating, in one run; `qsup image build oci:DIR` of skopeo's
# copy is timed too, so the download's share of qsup's time shows. Then a
# second image sharing the first one's layers: the blobs qsup asks the
# registry for (goal: only its new layer). Medians of RUNS (default 3).
# Usage: bench/oci.sh [RUNS] [SIZE_MB]
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-3}
mb=${2:-150}
qsup=$PWD/build/qsup
tmp=$(mktemp -d /tmp/qsup-bench-oci.XXXXXX)
reg=""
# The registry's status after kill is not 0: under set -e that ended the
# trap before its rm, and each run left its 1.2 GB behind.
trap '[ -z "$reg" ] || { kill "$reg"; wait "$reg"; } 2>/dev/null || true; rm -rf "$tmp"' EXIT

python3 tests/integration/helpers/oci_images.py big "$tmp/img" "$mb" >/dev/null
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/config.yml" <<CONF
version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: $tmp/store
http:
  addr: 127.0.0.1:$port
CONF
docker-registry serve "$tmp/config.yml" >"$tmp/reg.log" 2>&1 &
reg=$!
for i in $(seq 100); do curl -sf "http://127.0.0.1:$port/v2/" >/dev/null && break; sleep 0.1; done
for k in a b; do
	skopeo copy -q --dest-tls-verify=false "oci:$tmp/img/$k:latest" \
	    "docker://127.0.0.1:$port/bench/$k:1" >/dev/null
done
ref=127.0.0.1:$port/bench/a:1
size=$(du -sm "$tmp/store" | cut -f1)

once() {
	local name=$1 t0 t1; shift
	sync
	t0=$(now_ms)
	"$@" >/dev/null 2>&1
	t1=$(now_ms)
	echo $((t1 - t0)) >>"$tmp/$name"
}
qsup_pull() {
	rm -rf "$tmp/data"
	XDG_DATA_HOME=$tmp/data "$qsup" image pull --json "docker://$ref"
}
skopeo_copy() {
	rm -rf "$tmp/sk"
	skopeo copy -q --src-tls-verify=false "docker://$ref" "oci:$tmp/sk:1"
}
qsup_build() {
	rm -f "$tmp/built.qcow2"
	"$qsup" image build "oci:$tmp/sk:1" -o "$tmp/built.qcow2"
}

skopeo_copy >/dev/null 2>&1	# warm the registry's page cache
for i in $(seq 1 "$runs"); do
	once qsup qsup_pull
	once skopeo skopeo_copy
	once build qsup_build
done
echo "OCI registry pull of a ${size} MB image (docker-registry on loopback), median of $runs:"
echo "  qsup image pull docker://  (download, digests, qcow2 build): $(median <"$tmp/qsup") ms  [$(tr '\n' ' ' <"$tmp/qsup")]"
echo "  skopeo copy docker:// oci: (download, digests):              $(median <"$tmp/skopeo") ms  [$(tr '\n' ' ' <"$tmp/skopeo")]"
echo "  of qsup's: qsup image build oci:DIR (the same image's build): $(median <"$tmp/build") ms"
echo "  qsup / skopeo: $(awk -v q="$(median <"$tmp/qsup")" -v s="$(median <"$tmp/skopeo")" 'BEGIN { printf "%.2f", q / s }') (goal: 1.00 or less)"

# Where one pull's time goes: -v times its phases and the build's steps
# (the tree and the raw disk on a tmpfs, or beside the image).
rm -rf "$tmp/data"
XDG_DATA_HOME=$tmp/data "$qsup" image pull -v "docker://$ref" 2>&1 >/dev/null |
    grep -v 'as it downloads$' |
    sed -n 's/^qsup: image \(pull\|build\): //p' | paste -sd, - |
    sed 's/,/, /g; s/^/  one more pull'"'"'s phases (-v): /'

# The second image, its base already pulled: what is asked for.
rm -rf "$tmp/data"
XDG_DATA_HOME=$tmp/data "$qsup" image pull --json "docker://$ref" >/dev/null 2>&1
before=$(grep -c '"GET /v2/bench/b/blobs/' "$tmp/reg.log" || true)
t0=$(now_ms)
XDG_DATA_HOME=$tmp/data "$qsup" image pull --json "docker://127.0.0.1:$port/bench/b:1" >/dev/null 2>&1
t1=$(now_ms)
after=$(grep -c '"GET /v2/bench/b/blobs/' "$tmp/reg.log" || true)
# b: a's config (the same bytes), a's two layers and one of its own.
echo "  a second image on the same layers: $((after - before)) of its 4 blobs fetched (goal: 1, its own layer), $((t1 - t0)) ms"
