#!/usr/bin/env bash
# qga_initramfs.sh OUT.cpio: a guest for serve_attach_test.sh that runs
# Debian's qemu-ga (package qemu-guest-agent, the host's own binary and its
# shared libraries) on the virtio-serial port org.qemu.guest_agent.0: qsup's
# own initramfs (build/guest/initramfs.cpio: busybox, the virtio modules)
# with a shell /init in place of qsup's agent. Exit 2 (said) when the
# host has no qemu-ga.
set -eu
out=$1
ga=$(command -v qemu-ga || echo /usr/sbin/qemu-ga)
[ -x "$ga" ] || { echo "no qemu-ga (Debian package qemu-guest-agent)" >&2; exit 2; }
base=${QSUP_INITRAMFS:-build/guest/initramfs.cpio}
[ -f "$base" ] || { echo "no $base (./build.sh makes it)" >&2; exit 2; }
base=$(readlink -f "$base")
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
(cd "$d" && cpio -id --quiet <"$base")
rm -f "$d/init"
mkdir -p "$d/usr/sbin" "$d/var/run" "$d/lib64" "$d/lib/x86_64-linux-gnu"
cp "$ga" "$d/usr/sbin/qemu-ga"
for lib in $(ldd "$ga" | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^\t\(\/[^ ]*\) .*/\1/p'); do
	mkdir -p "$d$(dirname "$lib")"
	cp -L "$lib" "$d$lib"
done
cat >"$d/init" <<'INIT'
#!/bin/busybox sh
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /run
for m in $(cat /etc/qsup-modules); do insmod "$m" 2>/dev/null; done
port=
for i in $(seq 1 100); do
	for n in /sys/class/virtio-ports/*; do
		[ "$(cat "$n/name" 2>/dev/null)" = org.qemu.guest_agent.0 ] &&
		    port=/dev/${n##*/}
	done
	[ -n "$port" ] && [ -e "$port" ] && break
	sleep 0.1
done
echo "qga-guest: port $port"
qemu-ga -m virtio-serial -p "$port" -f /run/qga.pid -t /run &
echo "qga-guest: ready"
# A ticker on the console: it stops while the VM is paused.
i=0
while :; do i=$((i + 1)); echo "tick $i" >/run/tick; sleep 0.2; done
INIT
chmod 755 "$d/init"
(cd "$d" && find . | cpio -o -H newc --quiet) >"$out.tmp"
mv "$out.tmp" "$out"
