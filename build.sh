#!/usr/bin/env bash
# Build qsup, its guest agent and the default guest; install the Debian
# packages they need first.
#   ./build.sh          build everything
#   ./build.sh test     build, then run every test (with the unit suites and
#                       fuzz targets again under ASan and UBSan), several
#                       suites at a time (tests/run.sh, tests/README.md)
#   ./build.sh check    build, then the fast tier: the checks, the unit
#                       suites plain and under the sanitizers, and the
#                       quickest integration suites (tests/run.sh --check)
#   ./build.sh fuzz NAME [SECONDS]
#                       run tests/fuzz/NAME_fuzz.c under clang's libFuzzer
#                       (default 300 s), from its corpus; findings go to
#                       build/libfuzzer/NAME/
#   ./build.sh install [PREFIX]
#                       build, then install into PREFIX (default
#                       /usr/local; DESTDIR in the environment stages it)
#   ./build.sh bench    build, then run the benchmarks
#   ./build.sh deps     only install the Debian packages (as root); the
#                       container image's build stage caches this layer
#   ./build.sh clean    remove build/
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")"

PACKAGES=(
	build-essential pkg-config musl-tools
	libev-dev liblua5.4-dev libcurl4-openssl-dev libssl-dev libmbedtls-dev
	libcdio-dev libiso9660-dev libcriterion-dev libslirp-dev libjansson-dev
	libpng-dev zlib1g-dev
	qemu-system-x86 qemu-utils
	busybox-static kmod xz-utils cpio procps python3 iproute2
	fdisk e2fsprogs qemu-guest-agent
	clang libclang-rt-14-dev
	mmdebstrap fdisk e2fsprogs
	curl openssl jq
	scdoc mandoc zsh fish python3-yaml systemd
	fakeroot libarchive-dev zstd
	python3-jsonschema
	python3-venv python3-pip python3-setuptools python3-wheel
	podman runc
	docker-registry skopeo
	chromium
	stress-ng
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

# npm, for the spec's lint (tests/contract/lint.sh) and the TypeScript
# client's test (tests/integration/sdk_typescript_test.sh): Debian's nodejs and
# npm only when there is no npm at all, so a newer Node installed from
# elsewhere is left alone. Not root: the lint says it was skipped.
ensure_npm() {
	command -v npm >/dev/null && return 0
	[ "$(id -u)" -eq 0 ] || return 0
	echo "build.sh: installing nodejs npm (for the OpenAPI lint and the TypeScript client)" >&2
	apt-get update -qq || true
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends nodejs npm ||
	    echo "build.sh: nodejs and npm could not be installed" >&2
}

# The web console (contrib/console): its libraries, pinned by its
# package-lock.json, from the npm registry (npm ci --ignore-scripts in
# build/console-npm, kept while the lock is unchanged), vendored with its
# own files into build/console, which qsup serve serves at /. Without npm
# or the registry it is not built, said in one line, and / answers 404
# saying how to build it.
build_console() {
	local src=contrib/console npmdir=build/console-npm out=build/console
	local nm=build/console-npm/node_modules lock stamp
	command -v npm >/dev/null || {
		echo "build.sh: web console not built: npm is not installed" >&2
		return 0
	}
	mkdir -p "$npmdir"
	cp "$src/package.json" "$src/package-lock.json" "$npmdir/"
	lock=$(sha256sum <"$src/package-lock.json")
	if [ "$(cat "$nm/.qsup-lock" 2>/dev/null)" != "$lock" ]; then
		if ! (cd "$npmdir" && timeout 300 npm ci --ignore-scripts \
		    --no-audit --no-fund >npm.log 2>&1); then
			echo "build.sh: web console not built: npm ci failed" \
			    "(the npm registry out of reach?): see $npmdir/npm.log" >&2
			return 0
		fi
		echo "$lock" >"$nm/.qsup-lock"
	fi
	# Kept while its sources and the lock are unchanged: a server (or a
	# test suite) may be serving it meanwhile.
	stamp=$(cat "$src/package-lock.json" "$src/index.html" \
	    "$src/console.js" "$src/console.css" | sha256sum)
	[ -f "$out/index.html" ] &&
	    [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ] && return 0
	rm -rf "$out.tmp"
	mkdir -p "$out.tmp/vendor/xterm" "$out.tmp/vendor/novnc"
	cp "$src/index.html" "$src/console.js" "$src/console.css" "$out.tmp/"
	cp "$nm/@xterm/xterm/lib/xterm.js" "$nm/@xterm/xterm/css/xterm.css" \
	    "$nm/@xterm/addon-fit/lib/addon-fit.js" \
	    "$nm/@xterm/addon-canvas/lib/addon-canvas.js" "$out.tmp/vendor/xterm/"
	cp "$nm/@xterm/xterm/LICENSE" "$out.tmp/vendor/xterm/LICENSE"
	# noVNC's core/ is ES modules (1.7): loaded as they are, no bundler.
	cp -R "$nm/@novnc/novnc/core" "$nm/@novnc/novnc/vendor" \
	    "$nm/@novnc/novnc/LICENSE.txt" "$out.tmp/vendor/novnc/"
	rm -rf "$out"
	mv "$out.tmp" "$out"
	echo "$stamp" >"$out.stamp"
}

jobs=$(nproc 2>/dev/null || echo 2)
case "${1:-all}" in
all)
	ensure_packages
	make -s -j"$jobs" all
	build_console
	;;
test)
	ensure_packages
	ensure_npm
	make -s -j"$jobs" WERROR=-Werror tests
	build_console
	exec tests/run.sh
	;;
check)
	ensure_packages
	make -s -j"$jobs" WERROR=-Werror tests
	exec tests/run.sh --check
	;;
fuzz)
	[ $# -ge 2 ] && [ -f "tests/fuzz/$2_fuzz.c" ] || {
		echo "usage: ./build.sh fuzz NAME [SECONDS]; NAME is one of:" \
		    $(basename -s _fuzz.c tests/fuzz/*_fuzz.c) >&2
		exit 2
	}
	ensure_packages
	make -s -j"$jobs" "build/libfuzzer/$2_fuzz"
	# New inputs go to a corpus of their own; the checked-in one is read.
	mkdir -p "build/libfuzzer/$2/corpus"
	cd "build/libfuzzer/$2"
	exec "../$2_fuzz" -max_total_time="${3:-300}" -timeout=10 \
	    -print_final_stats=1 corpus "../../../tests/fuzz/corpus/$2"
	;;
install)
	ensure_packages
	make -s -j"$jobs" all
	build_console
	exec make -s install PREFIX="${2:-/usr/local}"
	;;
deps)
	ensure_packages
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
	echo "usage: ./build.sh [all|test|check|fuzz NAME [SECONDS]|install [PREFIX]|bench|deps|clean]" >&2
	exit 2
	;;
esac
