#!/usr/bin/env bash
# Build qsup, its guest agent and the default guest; install the Debian
# packages they need first.
#   ./build.sh          build everything
#   ./build.sh test     build, then run every test
#   ./build.sh bench    build, then run the benchmarks
#   ./build.sh clean    remove build/
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

PACKAGES=(
	build-essential pkg-config musl-tools
	libev-dev liblua5.4-dev libcurl4-openssl-dev libmbedtls-dev
	libcdio-dev libiso9660-dev libcriterion-dev libslirp-dev
	qemu-system-x86 qemu-utils
	busybox-static kmod xz-utils cpio procps python3 iproute2
)

ensure_packages() {
	local missing=() p
	for p in "${PACKAGES[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		    grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "build.sh: missing Debian packages; as root, run:" >&2
		echo "  apt-get install -y --no-install-recommends ${missing[*]}" >&2
		exit 1
	fi
	echo "build.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

jobs=$(nproc 2>/dev/null || echo 2)
case "${1:-all}" in
all)
	ensure_packages
	make -s -j"$jobs" all
	;;
test)
	ensure_packages
	make -s -j"$jobs" WERROR=-Werror tests
	exec tests/run.sh
	;;
bench)
	ensure_packages
	make -s -j"$jobs" all
	exec bench/run.sh "${@:2}"
	;;
clean)
	rm -rf build
	;;
*)
	echo "usage: ./build.sh [all|test|bench|clean]" >&2
	exit 2
	;;
esac
