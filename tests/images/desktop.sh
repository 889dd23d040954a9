#!/usr/bin/env bash
# A Debian 12 desktop disk image for a sandbox with a screen (display =
# "vnc"), from Debian's packages alone:
#   tests/images/desktop.sh OUT.qcow2
# mmdebstrap makes a minbase bookworm tree with Xorg (the modesetting
# driver on virtio-gpu's /dev/dri/card0: the fbdev driver finds no device
# without udev; evdev for the keyboard and tablet), twm and xterm, and
# /usr/local/bin/qsup-desktop, which
# writes an xorg.conf naming the input devices by their /sys names (no
# udev in the guest) and starts X on :0 with twm and an xterm, in the
# background. Started by an exec (or a profile's setup step):
#   qsup-desktop            # returns once X answers; log in /tmp/X.log
# Laid out as tests/images/debian.sh's image (lib.sh).
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
PROG=desktop.sh
ARGC=$#
OUT=${1:-}
. "$(dirname "$0")/lib.sh"
image_start

cat >"$WORK/qsup-desktop" <<'SCRIPT'
#!/bin/sh
# Xorg on the sandbox's screen, with twm and an xterm: qsup's guest has no
# udev, so the input devices are named in the config.
set -e
dev() {
	for e in /sys/class/input/event*; do
		grep -q "$1" "$e/device/name" && echo "/dev/input/${e##*/}" && return
	done
	echo "qsup-desktop: no $1 device (display = \"vnc\"?)" >&2
	exit 1
}
[ -e /dev/dri/card0 ] || { echo "qsup-desktop: no /dev/dri/card0 (display = \"vnc\"?)" >&2; exit 1; }
mkdir -p /etc/X11/xorg.conf.d
cat >/etc/X11/xorg.conf.d/10-qsup.conf <<CONF
Section "ServerFlags"
	Option "AutoAddDevices" "false"
	Option "AutoEnableDevices" "false"
EndSection
Section "Device"
	Identifier "gpu"
	Driver "modesetting"
	Option "kmsdev" "/dev/dri/card0"
EndSection
Section "Screen"
	Identifier "screen"
	Device "gpu"
EndSection
Section "InputDevice"
	Identifier "kbd"
	Driver "evdev"
	Option "Device" "$(dev Keyboard)"
EndSection
Section "InputDevice"
	Identifier "tablet"
	Driver "evdev"
	Option "Device" "$(dev Tablet)"
EndSection
Section "ServerLayout"
	Identifier "qsup"
	Screen "screen"
	InputDevice "kbd" "CoreKeyboard"
	InputDevice "tablet" "CorePointer"
EndSection
CONF
cat >/tmp/qsup-session <<'SESSION'
#!/bin/sh
xsetroot -solid '#204080'
xterm -geometry 80x24+40+40 &
exec twm
SESSION
chmod +x /tmp/qsup-session
setsid xinit /tmp/qsup-session -- /usr/bin/Xorg :0 -nolisten tcp \
    -novtswitch -sharevts -logfile /tmp/X.log </dev/null >/tmp/xinit.log 2>&1 &
i=0
while [ $i -lt 100 ]; do
	[ -S /tmp/.X11-unix/X0 ] && DISPLAY=:0 xsetroot -name qsup 2>/dev/null &&
	    { echo "X is up on :0"; exit 0; }
	sleep 0.2
	i=$((i + 1))
done
echo "qsup-desktop: X did not start; /tmp/X.log:" >&2
tail -n 20 /tmp/X.log >&2
exit 1
SCRIPT

echo "$PROG: building a Debian 12 desktop image from $MIRROR (a few minutes)" >&2
mmdebstrap --quiet --variant=minbase \
    --include=xserver-xorg-core,xserver-xorg-input-evdev,xinit,x11-xserver-utils,twm,xterm,fonts-dejavu-core \
    --customize-hook='echo qsup-desktop > "$1/etc/hostname"' \
    --customize-hook="install -m 755 '$WORK/qsup-desktop' \"\$1/usr/local/bin/qsup-desktop\"" \
    --customize-hook='rm -rf "$1"/var/cache/apt/*.bin "$1"/var/lib/apt/lists/*' \
    bookworm "$WORK/root" "$MIRROR"

image_disk "$WORK/root" 64
image_finish
