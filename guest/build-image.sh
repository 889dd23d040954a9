#!/usr/bin/env bash
# Build the default guest from Debian's packages, without root and without
# installing anything on the host:
#   guest/build-image.sh BUILDDIR
# BUILDDIR must hold qsup-agent (static; it becomes /init) and mkcpio. Writes
#   BUILDDIR/guest/vmlinux          uncompressed ELF kernel (QEMU boots it
#                                   through its PVH entry: no decompression
#                                   under TCG)
#   BUILDDIR/guest/initramfs.cpio   uncompressed newc cpio: the agent,
#                                   busybox, the modules of guest/modules.txt
#   BUILDDIR/guest/kernel-release   e.g. 6.1.0-57-amd64
# The .debs and their unpacked trees stay in BUILDDIR/guest/cache/, so a
# re-run only re-packs the cpio; remove that folder to fetch the current
# kernel. In the guest, /etc/qsup-modules lists the modules the agent loads
# at boot, /etc/qsup-modules-net the network card's (when the guest has
# one), /etc/qsup-modules-root those it loads for a disk image's root
# (at boot with qsup.root=1), /etc/qsup-modules-share those of 9p shares
# (at a template's boot, else before the first share),
# /etc/qsup-modules-disk virtio's disk driver (when the guest has a disk),
# and
# /etc/qsup-modules-extra those it may load later, one guest path a line,
# dependencies first.
# Module signatures are cut off: checking them under TCG doubles the time
# finit_module takes (about 0.13 s more at boot), and this kernel loads
# unsigned modules anyway (it only taints itself 'E'). QSUP_MODULE_SIGS=keep
# keeps them, for a guest booted with module.sig_enforce=1.
set -euo pipefail

PROG=build-image.sh
HERE=$(dirname "$(readlink -f "$0")")
# depmod and modprobe live in /usr/sbin, which a user's PATH may lack.
PATH=$PATH:/usr/sbin:/sbin

die() {
	echo "$PROG: $*" >&2
	exit 1
}

note() {
	echo "$PROG: $*" >&2
}

[ $# -eq 1 ] || { echo "usage: $PROG BUILDDIR" >&2; exit 2; }
[ -d "$1" ] || die "$1: no such build directory"
B=$(readlink -f "$1")
G=$B/guest
C=$G/cache
AGENT=$B/qsup-agent
MKCPIO=$B/mkcpio
LIST=$HERE/modules.txt

for tool in apt-get dpkg-deb xz depmod modprobe od grep; do
	command -v "$tool" >/dev/null ||
	    die "$tool not found (Debian packages: apt, dpkg, xz-utils, kmod)"
done
[ -x "$MKCPIO" ] || die "$MKCPIO: missing; build it first (make $MKCPIO)"
[ -f "$LIST" ] || die "$LIST: missing"

mkdir -p "$C"
WORK=$(mktemp -d "$G/.work.XXXXXX")
DL=
cleanup() {
	rm -rf "$WORK"
	[ -z "$DL" ] || rm -rf "$DL"
}
trap cleanup EXIT

# Print the hex of LEN bytes at OFFSET of FILE, without spaces.
hexat() {
	od -An -tx1 -j "$2" -N "$3" "$1" | tr -d ' \n'
}

# Fail unless FILE is a 64-bit x86 ELF executable.
check_elf() {
	[ "$(hexat "$1" 0 5)" = 7f454c4602 ] || return 1
	[ "$(hexat "$1" 18 2)" = 3e00 ] || return 1
}

check_elf "$AGENT" 2>/dev/null ||
    die "$AGENT: missing or not an x86-64 ELF executable"
# A dynamic /init cannot start: the guest has no loader or libc.
if command -v readelf >/dev/null &&
    readelf -lW "$AGENT" | grep -q 'program interpreter'; then
	die "$AGENT: dynamically linked; PID 1 must be static"
fi

# --- Fetch: linux-image-amd64, the kernel package it names, busybox-static.

# apt-get download into DIR the packages named; as root, let apt's _apt
# user write there so it keeps its sandbox and does not warn.
apt_download() {
	local dir=$1 out
	shift
	if [ "$(id -u)" -eq 0 ] && id -u _apt >/dev/null 2>&1; then
		chown _apt "$dir"
	fi
	if ! out=$(cd "$dir" && apt-get -qq download "$@" 2>&1); then
		echo "$out" >&2
		die "apt-get download $* failed; if apt cannot locate a" \
		    "package, its lists are stale (as root: apt-get update)"
	fi
}

fetch() {
	local kpkg kver deps
	[ -f "$C/debs/.done" ] && return 0
	note "downloading linux-image-amd64 and busybox-static"
	# In TMPDIR, not under BUILDDIR: _apt must be able to reach it.
	DL=$(mktemp -d "${TMPDIR:-/tmp}/qsup-guest.XXXXXX")
	apt_download "$DL" linux-image-amd64
	deps=$(dpkg-deb -f "$DL"/linux-image-amd64_*.deb Depends)
	# "linux-image-6.1.0-57-amd64 (= 6.1.192-3)"
	kpkg=$(echo "$deps" | sed -n 's/^\(linux-image-[^ ,]*\) (= \([^)]*\)).*/\1/p')
	kver=$(echo "$deps" | sed -n 's/^\(linux-image-[^ ,]*\) (= \([^)]*\)).*/\2/p')
	if [ -z "$kpkg" ] || [ -z "$kver" ]; then
		die "linux-image-amd64: unexpected Depends: $deps"
	fi
	apt_download "$DL" "$kpkg=$kver" busybox-static
	# What was unpacked from older packages goes too.
	rm -rf "$C/debs" "$C/debs.new" "$C/kernel" "$C/busybox" "$C/modroot"
	mkdir "$C/debs.new"
	mv "$DL"/"$kpkg"_*.deb "$C/debs.new/kernel.deb"
	mv "$DL"/busybox-static_*.deb "$C/debs.new/busybox.deb"
	rm -rf "$DL"
	DL=
	touch "$C/debs.new/.done"
	mv "$C/debs.new" "$C/debs"
}

# Unpack DEB into cache folder NAME, once; RUN is called on the new tree.
unpack() {
	local deb=$1 name=$2 run=${3:-}
	[ -f "$C/$name/.done" ] && return 0
	rm -rf "${C:?}/$name" "$C/$name.new"
	dpkg-deb -x "$deb" "$C/$name.new" || die "$deb: dpkg-deb -x failed"
	[ -z "$run" ] || "$run" "$C/$name.new"
	touch "$C/$name.new/.done"
	mv "$C/$name.new" "$C/$name"
}

# Debian builds modules.dep at install time; make it in the unpacked tree.
kernel_depmod() {
	local rel
	rel=$(kernel_release "$1")
	depmod -b "$1" "$rel" || die "depmod -b $1 $rel failed"
}

# Print the release of the unpacked kernel tree ROOT.
kernel_release() {
	local d n=0 rel=
	for d in "$1"/lib/modules/*/; do
		[ -d "$d" ] || continue
		rel=$(basename "$d")
		n=$((n + 1))
	done
	[ "$n" -eq 1 ] || die "$1/lib/modules: expected one kernel, found $n"
	echo "$rel"
}

fetch
unpack "$C/debs/kernel.deb" kernel kernel_depmod
unpack "$C/debs/busybox.deb" busybox
K=$C/kernel
REL=$(kernel_release "$K")
MODDIR=/lib/modules/$REL
BUSYBOX=$C/busybox/bin/busybox
[ -x "$BUSYBOX" ] || die "$BUSYBOX: missing from busybox-static"
[ -f "$K/boot/config-$REL" ] || die "$K/boot/config-$REL: missing"

# --- vmlinux: the ELF inside the bzImage's XZ payload.

make_vmlinux() {
	local bz=$K/boot/vmlinuz-$REL off out=$WORK/vmlinux

	[ -f "$bz" ] || die "$bz: missing"
	grep -q '^CONFIG_PVH=y' "$K/boot/config-$REL" ||
	    die "kernel $REL lacks CONFIG_PVH: QEMU cannot boot it as an ELF"
	# The first XZ stream header: FD 37 7A 58 5A 00.
	off=$(LC_ALL=C grep -obUaP -m1 '\xfd7zXZ\x00' "$bz" | head -n1 |
	    cut -d: -f1) || true
	[ -n "$off" ] || die "$bz: no XZ stream (not an XZ-compressed bzImage)"
	# The bzImage goes on after the stream (its size word, padding):
	# --single-stream stops at the stream's end and ignores the rest.
	# xz stops reading there, so tail may die of SIGPIPE: that is fine.
	{ tail -c +$((off + 1)) "$bz" || true; } |
	    xz -dc --single-stream >"$out" ||
	    die "$bz: XZ stream at offset $off does not decompress"
	check_elf "$out" || die "$bz: the XZ payload is not an x86-64 ELF"
	LC_ALL=C grep -qa "Linux version $REL " "$out" ||
	    die "$bz: payload is not kernel $REL"
	mv "$out" "$G/vmlinux"
}

# Redo vmlinux only when missing or older than the tree it comes from.
if [ ! -f "$G/vmlinux" ] || [ "$K/.done" -nt "$G/vmlinux" ] ||
    [ "$(cat "$G/kernel-release" 2>/dev/null)" != "$REL" ]; then
	make_vmlinux
fi

# --- Modules: resolve guest/modules.txt against the kernel's modules.dep.

# Append NAME and its dependencies, dependencies first, to the array named
# by $2, skipping modules already seen, omitted or built into the kernel
# (=y in its config, so listed in modules.builtin).
resolve() {
	local name=$1 out line path mod
	local -n into=$2
	out=$(modprobe -C "$WORK/modprobe.d" -S "$REL" -d "$K" \
	    --show-depends "$name" 2>&1) ||
	    die "module $name: not found in kernel $REL: $out"
	while read -r line; do
		case $line in
		builtin\ *)
			note "module ${line#builtin }: built into $REL, skipped"
			continue
			;;
		"insmod $K$MODDIR/"*)
			path=${line#"insmod $K$MODDIR/"}
			path=${path%% *}
			;;
		*)
			die "module $name: unexpected modprobe output: $line"
			;;
		esac
		mod=${path##*/}
		mod=${mod%%.ko*}
		mod=${mod//-/_}
		[ -z "${omit[$mod]:-}" ] || continue
		[ -z "${seen[$mod]:-}" ] || continue
		seen[$mod]=1
		into+=("$path")
	done <<<"$out"
}

# Drop the signature appended to module FILE (PKCS#7, as Debian signs).
strip_sig() {
	local f=$1 size meta siglen marker='~Module signature appended~'
	size=$(stat -c %s "$f")
	[ "$size" -gt 40 ] || return 0
	[ "$(tail -c 28 "$f" | head -c 27)" = "$marker" ] || return 0
	# struct module_signature: algo hash id_type signer_len key_id_len
	# pad[3] sig_len(be32), then the marker.
	read -r -a meta <<<"$(od -An -tu1 -j $((size - 40)) -N 12 "$f")"
	[ "${meta[2]}" -eq 2 ] || die "$f: signature of an unknown type"
	siglen=$(((meta[8] << 24) | (meta[9] << 16) | (meta[10] << 8) |
	    meta[11]))
	siglen=$((siglen + meta[3] + meta[4] + 40))
	[ "$siglen" -lt "$size" ] || die "$f: bad signature length"
	truncate -s $((size - siglen)) "$f"
	check_elf "$f" || die "$f: not an ELF once unsigned"
}

# Copy module PATH (relative to the kernel's module folder) into the tree M
# as a plain .ko, and append its guest path to the array named by $2.
add_module() {
	local src=$K$MODDIR/$1 rel dst
	local -n list=$2
	rel=${1%.ko*}.ko
	dst=$M$MODDIR/$rel
	mkdir -p "$(dirname "$dst")"
	case $1 in
	*.ko) cp "$src" "$dst" ;;
	*.ko.xz) xz -dc "$src" >"$dst" ;;
	*.ko.zst) zstd -qdc "$src" >"$dst" ;;
	*.ko.gz) gzip -dc "$src" >"$dst" ;;
	*) die "$src: unknown module compression" ;;
	esac || die "$src: cannot copy or decompress"
	[ "$SIGS" = keep ] || strip_sig "$dst"
	list+=("$MODDIR/$rel")
}

# The kinds of guest/modules.txt that load, in the order their modules are
# resolved (a module two kinds need goes to the first), and each one's list
# in the guest: /etc/qsup-modules for boot, /etc/qsup-modules-KIND else.
KINDS=(boot net root extra display share disk)
kind_list() {
	[ "$1" = boot ] && echo /etc/qsup-modules || echo "/etc/qsup-modules-$1"
}

# Build the guest's module tree and its /etc/qsup-modules* lists in $M.
make_modroot() {
	local kind name rest lineno=0 p
	local -A omit=() seen=() known=()
	local -a order=()

	for kind in "${KINDS[@]}"; do
		known[$kind]=1
		local -a "names_$kind=()" "order_$kind=()" "guest_$kind=()"
	done
	while read -r kind name rest || [ -n "$kind" ]; do
		lineno=$((lineno + 1))
		case $kind in
		''|'#'*) continue ;;
		esac
		if [ -z "$name" ] || [ -n "$rest" ]; then
			die "$LIST:$lineno: expected: KIND NAME (KIND: ${KINDS[*]} or omit)"
		fi
		if [ "$kind" = omit ]; then
			omit[${name//-/_}]=1
		elif [ -n "${known[$kind]:-}" ]; then
			local -n names=names_$kind
			names+=("$name")
			unset -n names
		else
			die "$LIST:$lineno: $kind: unknown kind (${KINDS[*]}, omit)"
		fi
	done <"$LIST"

	# An empty config folder: the host's /etc/modprobe.d must not count.
	mkdir -p "$WORK/modprobe.d"
	for kind in "${KINDS[@]}"; do
		local -n names=names_$kind
		for name in "${names[@]}"; do
			resolve "$name" "order_$kind"
		done
		unset -n names
	done

	mkdir -p "$M$MODDIR" "$M/etc"
	for p in modules.builtin modules.builtin.modinfo; do
		[ ! -f "$K$MODDIR/$p" ] || cp "$K$MODDIR/$p" "$M$MODDIR/$p"
	done
	for kind in "${KINDS[@]}"; do
		local -n paths=order_$kind guest=guest_$kind
		for p in "${paths[@]}"; do
			add_module "$p" "guest_$kind"
		done
		# Written even when empty: the agent reads each.
		printf '%s\n' "${guest[@]}" >"$M$(kind_list "$kind")"
		order+=("${guest[@]#"$MODDIR"/}")
		unset -n paths guest
	done
	# A modules.dep of its own, so that busybox modprobe works in the
	# guest; depmod wants a modules.order, and the load order is that.
	printf '%s\n' "${order[@]}" >"$M$MODDIR/modules.order"
	depmod -b "$M" "$REL" || die "depmod -b $M $REL failed"
}

# The tree is kept in the cache until the kernel, the list, this script or
# the signature choice changes.
SIGS=${QSUP_MODULE_SIGS:-strip}
case $SIGS in
keep|strip) ;;
*) die "QSUP_MODULE_SIGS=$SIGS: expected keep or strip" ;;
esac
key="$REL $SIGS $(cat "$LIST" "$HERE/$PROG" | cksum)"
M=$C/modroot
if [ "$(cat "$M/.key" 2>/dev/null)" != "$key" ]; then
	rm -rf "$M" "$M.new"
	M=$C/modroot.new
	make_modroot
	echo "$key" >"$M/.key"
	mv "$M" "$C/modroot"
	M=$C/modroot
fi

# --- The cpio spec. Host paths in it are relative to BUILDDIR, where
# mkcpio runs, so that a BUILDDIR with blanks in its path does no harm.

applets=$("$BUSYBOX" --list-full) || die "$BUSYBOX --list-full failed"
case $'\n'$applets$'\n' in
*$'\n'bin/sh$'\n'*) ;;
*) die "$BUSYBOX has no sh applet" ;;
esac
rel_m=${M#"$B"/}
spec=$WORK/spec
{
	for d in /bin /sbin /dev /etc /lib /lib/modules /mnt /proc /run \
	    /sys /usr; do
		echo "dir $d 0755 0 0"
	done
	echo "dir /root 0700 0 0"
	echo "dir /tmp 1777 0 0"
	echo "nod /dev/console 0600 0 0 c 5 1"
	echo "slink /usr/bin ../bin 0777 0 0"
	echo "slink /usr/sbin ../sbin 0777 0 0"
	echo "file /init ${AGENT#"$B"/} 0755 0 0"
	echo "file /bin/busybox ${BUSYBOX#"$B"/} 0755 0 0"

	# Applets: usr/bin and usr/sbin ones go to /bin and /sbin, which
	# /usr/bin and /usr/sbin point to.
	declare -A seen_applet=([busybox]=1)
	while read -r a; do
		case $a in
		bin/*|usr/bin/*) dir=/bin ;;
		sbin/*|usr/sbin/*) dir=/sbin ;;
		*) continue ;;
		esac
		a=${a##*/}
		[ -z "${seen_applet[$a]:-}" ] || continue
		seen_applet[$a]=1
		echo "slink $dir/$a /bin/busybox 0777 0 0"
	done <<<"$applets"

	for kind in "${KINDS[@]}"; do
		f=$(kind_list "$kind")
		echo "file $f $rel_m$f 0644 0 0"
	done

	# The module tree, each folder before what it holds.
	(cd "$M" && find "lib/modules/$REL" -mindepth 0 | LC_ALL=C sort) |
	    while read -r p; do
		# What busybox modprobe reads; not kmod's indexes.
		case $p in
		*/modules.dep|*/modules.alias|*/modules.softdep) ;;
		*/modules.symbols|*/modules.builtin) ;;
		*/modules.*) continue ;;
		esac
		if [ -d "$M/$p" ]; then
			echo "dir /$p 0755 0 0"
		else
			echo "file /$p $rel_m/$p 0644 0 0"
		fi
	    done
} >"$spec"

if ! (cd "$B" && "$MKCPIO" "$spec") >"$WORK/initramfs.cpio"; then
	cp "$spec" "$G/initramfs.spec.failed"
	die "mkcpio failed; its spec is in $G/initramfs.spec.failed"
fi
rm -f "$G/initramfs.spec.failed"
mv "$WORK/initramfs.cpio" "$G/initramfs.cpio"
echo "$REL" >"$WORK/kernel-release"
mv "$WORK/kernel-release" "$G/kernel-release"
# make compares all three outputs with the agent: keep vmlinux current too.
touch "$G/vmlinux"
