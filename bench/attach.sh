#!/usr/bin/env bash
# "qsup serve" on QEMUs it did not start, and on real disks:
#   attach            POST /v1/sandboxes {"attach": ...} of a running QEMU to
#                     its 201 (QMP greeting, capabilities, query-status)
#   exec via qemu-ga  POST .../exec of `true` through guest-exec and
#                     guest-exec-status (polled every 0.1 s) to the end of
#                     its stream
#   pause, resume     QMP stop and cont, each to its answer
#   detach            DELETE of the attached sandbox to its answer
#   disk create       a sandbox on a small busybox disk (qsup image build),
#                     writable (cold: no template) and read-only (warm), to
#                     ready
# The guest: qsup's initramfs with Debian's qemu-ga added
# (tests/integration/helpers/qga_initramfs.sh), started by hand.
# Usage: bench/attach.sh [RUNS]   (default 7)
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
. bench/lib.sh
runs=${1:-7}
qsup=${QSUP:-$PWD/build/qsup}
tmp=$(mktemp -d /tmp/qsup-attach-bench.XXXXXX)
spid= qpid=
cleanup() {
	[ -n "$spid" ] && kill -TERM "$spid" 2>/dev/null && wait "$spid" || true
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_RUNTIME_DIR=$tmp/run XDG_CACHE_HOME=$tmp/cache
mkdir -m 700 "$XDG_RUNTIME_DIR"

bash tests/integration/helpers/qga_initramfs.sh "$tmp/qga.cpio"
khz=$(awk -F: '/cpu MHz/ { printf "%d", $2 * 1000; exit }' /proc/cpuinfo)
qemu-system-x86_64 -M microvm -m 256 -nodefaults -no-user-config \
    -display none -no-reboot -kernel build/guest/vmlinux \
    -initrd "$tmp/qga.cpio" \
    -append "console=ttyS0 quiet panic=-1 tsc_early_khz=$khz tsc=reliable no_timer_check pci=off random.trust_cpu=on mitigations=off 8250.nr_uarts=1" \
    -serial "file:$tmp/console" -qmp "unix:$tmp/qmp.sock,server=on,wait=off" \
    -chardev "socket,id=qga0,path=$tmp/qga.sock,server=on,wait=off" \
    -device virtio-serial-device \
    -device virtserialport,chardev=qga0,name=org.qemu.guest_agent.0 \
    >"$tmp/qemu.log" 2>&1 &
qpid=$!
for _ in $(seq 1 1200); do
	grep -q "qga-guest: ready" "$tmp/console" 2>/dev/null && break
	sleep 0.1
done

"$qsup" serve --listen "unix:$tmp/s.sock" --token-file "$tmp/token" \
    >"$tmp/serve.log" 2>&1 &
spid=$!
for _ in $(seq 1 200); do
	curl -sf --unix-socket "$tmp/s.sock" http://qsup/v1/healthz >/dev/null 2>&1 && break
	sleep 0.05
done
tok=$(cat "$tmp/token")
# ms METHOD PATH [DATA]: the call's time in ms.
ms() {
	curl -sS -o /dev/null --unix-socket "$tmp/s.sock" -X "$1" \
	    -H "Authorization: Bearer $tok" ${3:+-d "$3"} \
	    -w '%{time_total}\n' "http://qsup$2" | awk '{ printf "%.1f\n", $1 * 1000 }'
}
att="{\"name\":\"h\",\"attach\":{\"qmp\":\"$tmp/qmp.sock\",\"qga\":\"$tmp/qga.sock\"}}"
: >"$tmp/att"; : >"$tmp/exec"; : >"$tmp/pause"; : >"$tmp/resume"; : >"$tmp/detach"
for _ in $(seq 1 "$runs"); do
	ms POST /v1/sandboxes "$att" >>"$tmp/att"
	ms POST /v1/sandboxes/h/exec '{"argv":["true"]}' >>"$tmp/exec"
	ms POST /v1/sandboxes/h/pause >>"$tmp/pause"
	ms POST /v1/sandboxes/h/resume >>"$tmp/resume"
	ms DELETE /v1/sandboxes/h >>"$tmp/detach"
done
printf 'attach          median %s ms\n' "$(median '%.1f' <"$tmp/att")"
printf 'exec via qemu-ga median %s ms\n' "$(median '%.1f' <"$tmp/exec")"
printf 'pause           median %s ms\n' "$(median '%.1f' <"$tmp/pause")"
printf 'resume          median %s ms\n' "$(median '%.1f' <"$tmp/resume")"
printf 'detach          median %s ms\n' "$(median '%.1f' <"$tmp/detach")"

python3 tests/integration/helpers/mkrootfs.py base "$tmp/base.tar"
"$qsup" image build "$tmp/base.tar" -o "$tmp/disk.qcow2" >/dev/null 2>&1
: >"$tmp/rw"; : >"$tmp/ro"
# Writes move the disk's mtime, which is in a template's key: the
# writable runs first, then the read-only ones on one template.
for _ in $(seq 1 "$runs"); do
	ms POST /v1/sandboxes "{\"name\":\"w\",\"disk\":{\"path\":\"$tmp/disk.qcow2\",\"writable\":true}}" >>"$tmp/rw"
	ms DELETE /v1/sandboxes/w >/dev/null
done
ms POST /v1/sandboxes "{\"name\":\"w\",\"disk\":{\"path\":\"$tmp/disk.qcow2\"}}" >/dev/null
ms DELETE /v1/sandboxes/w >/dev/null	# the template built
for _ in $(seq 1 "$runs"); do
	ms POST /v1/sandboxes "{\"name\":\"w\",\"disk\":{\"path\":\"$tmp/disk.qcow2\"}}" >>"$tmp/ro"
	ms DELETE /v1/sandboxes/w >/dev/null
done
printf 'disk writable   median %s ms to ready (cold boot)\n' "$(median '%.0f' <"$tmp/rw")"
printf 'disk read-only  median %s ms to ready (warm)\n' "$(median '%.0f' <"$tmp/ro")"
