#!/usr/bin/env bash
# contrib/container/'s image, built and run with Podman as a user without a
# container registry does it: the base image from Debian's mirror
# (mmdebstrap | podman import), the Containerfile built on it
# (--build-arg BASE=), then qsup doctor and a sandbox (TCG, as the
# unprivileged user qsup) inside it.
#
# Podman's state is this test's own: images and layers under
# build/container/KEY/ (KEY: a digest of the Containerfile; another KEY's
# directory is removed), so a rerun only rebuilds what changed; its run
# root in /tmp/qsup-podman-*/, containers.conf in the test's temporary
# directory. (Podman 4.3 still writes its blob-info cache to
# /var/lib/containers/cache/, whatever --root says.) Builds use the host's
# network (apt reaches the mirror; no CNI bridge, firewall rule or IPAM
# file is made on the host) and runs have none (qsup's guest networking
# is QEMU's own slirp). A cold run takes about 3.5 minutes here, a rerun
# with nothing changed about 12 s.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

CF=contrib/container/Containerfile
KEY=$(sha256sum "$CF" | cut -c1-16)
CDIR=$PWD/build/container
CK=$CDIR/$KEY
BASE=localhost/qsup-base:bookworm
IMAGE=localhost/qsup-test:$KEY
MIRROR=${QSUP_TEST_MIRROR:-http://deb.debian.org/debian}
# Why the image cannot be tested here, once known: every later test skips.
SKIP=

# The run root and libpod's tmp dir are recorded in the store's database,
# so they stay the same from run to run; podman wants the run root's path
# under 50 characters, so it is in /tmp, named by the store's path.
# overlay.skip_mount_home: else the overlay driver leaves its directory
# bind-mounted on itself after podman exits, and rm -rf build fails
# ("Device or resource busy").
PRUN=/tmp/qsup-podman-$(printf %s "$CK" | sha256sum | cut -c1-12)
PM=(podman --root "$CK/root" --runroot "$PRUN/run" --tmpdir "$PRUN/tmp"
    --storage-opt overlay.skip_mount_home=true)
pm() {
	"${PM[@]}" "$@"
}

skip() {
	SKIP=$*
	echo "    skip: $SKIP"
}

# After test_container_base's skip, the others' (its reason once).
skipped() {
	[ -n "$SKIP" ] || return 1
	echo "    skip: as test_container_base"
}

# podman's settings for this machine, in a containers.conf of the test's.
setup_podman() {
	local n p conf=$T_TMP/podman/containers.conf ul=()
	mkdir -p "$T_TMP/podman/cni" "$CK"
	# Podman raises a container's RLIMIT_NOFILE to 1048576 and
	# RLIMIT_NPROC to 4194304, which fails ("setrlimit RLIMIT_NOFILE:
	# Operation not permitted") where root lacks CAP_SYS_RESOURCE and the
	# hard limits are lower: ask for no more than there is. (podman
	# itself ran with an RLIMIT_NPROC of 32768 here, below the shell's.)
	n=$(ulimit -Hn)
	[ "$n" = unlimited ] || ul+=("\"nofile=$n:$n\"")
	p=$(ulimit -Hu)
	[ "$p" = unlimited ] || [ "$p" -gt 16384 ] && p=16384
	ul+=("\"nproc=$p:$p\"")
	{
		echo "[containers]"
		echo "default_ulimits = [$(IFS=,; echo "${ul[*]}")]"
		echo "[engine]"
		# No systemd, no journald in a container like this one.
		echo 'cgroup_manager = "cgroupfs"'
		echo 'events_logger = "file"'
		echo "events_logfile_path = \"$T_TMP/podman/events.log\""
		# crun 1.8 refuses a hybrid cgroup hierarchy ("cgroups in
		# hybrid mode not supported, drop all controllers from
		# cgroupv2"); runc takes v1, v2 and hybrid.
		if command -v runc >/dev/null; then
			echo 'runtime = "runc"'
		fi
		echo "[network]"
		echo "network_config_dir = \"$T_TMP/podman/cni\""
	} >"$conf"
	export CONTAINERS_CONF=$conf
	# Another Containerfile's images and layers go.
	for d in "$CDIR"/*; do
		[ "$d" = "$CK" ] || [ ! -d "$d" ] || rm -rf "$d"
	done
}

# The base image: Debian bookworm minbase from the mirror, imported; the
# tarball is kept beside the layers.
test_container_base() {
	local out st
	if ! command -v podman >/dev/null; then
		skip "no podman (apt-get install podman runc)"
		return
	fi
	if ! command -v mmdebstrap >/dev/null; then
		skip "no mmdebstrap (apt-get install mmdebstrap)"
		return
	fi
	# Podman makes / a private mount in a namespace of its own; where /
	# is no mount point (a chroot, as a bare debootstrap is) that fails
	# with EINVAL ("remount /, flags: 0x44000: invalid argument") at the
	# first podman import: a limit of the host, not of the image. The
	# same remount, tried alone, says so before minutes of mmdebstrap.
	if ! out=$(unshare --mount --propagation unchanged \
	    mount --make-rprivate / 2>&1); then
		skip "podman cannot work here: / cannot be made a private" \
		    "mount (a chroot?): $out"
		return
	fi
	setup_podman
	if [ ! -s "$CK/base.tar" ]; then
		# The tarball on stdout, as a user pipes it into podman import.
		out=$(timeout 600 mmdebstrap --quiet --variant=minbase bookworm \
		    - "$MIRROR" 2>&1 >"$CK/base.tar.tmp")
		if [ $? -ne 0 ]; then
			rm -f "$CK/base.tar.tmp"
			skip "mmdebstrap --variant=minbase bookworm $MIRROR" \
			    "failed: $(tail -n 3 <<<"$out")"
			return
		fi
		mv "$CK/base.tar.tmp" "$CK/base.tar"
	fi
	if ! pm image exists "$BASE"; then
		out=$(pm import -q "$CK/base.tar" "$BASE" 2>&1)
		st=$?
		expect_eq "podman import: $out" 0 $st
		[ $st = 0 ] || return
	fi
	out=$(pm run --rm --pull=never --network none "$BASE" cat /etc/debian_version 2>&1)
	if [ $? -ne 0 ]; then
		skip "podman cannot run a container here" \
		    "(podman run $BASE): $(tail -n 3 <<<"$out")"
		return
	fi
	expect_match "bookworm" '^12\.' "$out"
}

# The Containerfile, on that base: the build stage first, tagged so its
# package layer outlives the next source change's prune.
test_container_build() {
	local out st
	! skipped || return
	out=$(timeout 1500 "${PM[@]}" build -q --pull=never --network host \
	    --build-arg BASE="$BASE" --target build -t "$IMAGE-build" \
	    -f "$CF" . 2>&1)
	st=$?
	expect_eq "podman build --target build: $(tail -n 5 <<<"$out")" 0 $st
	[ $st = 0 ] || return
	out=$(timeout 900 "${PM[@]}" build -q --pull=never --network host \
	    --build-arg BASE="$BASE" -t "$IMAGE" -f "$CF" . 2>&1)
	st=$?
	expect_eq "podman build: $(tail -n 5 <<<"$out")" 0 $st
	# The last run's layers, now untagged.
	pm image prune -f >/dev/null 2>&1
	out=$(pm run --rm --pull=never --network none "$IMAGE" qsup version 2>&1)
	expect_match "qsup in the image" '^qsup [0-9]' "$out"
	out=$(pm run --rm --pull=never --network none "$IMAGE" id -un 2>&1)
	expect_eq "not root" qsup "$out"
}

# The image's default command: qsup doctor, exit 0, no /dev/kvm given.
test_container_doctor() {
	local out st
	! skipped || return
	out=$(pm run --rm --pull=never --network none --tmpfs /tmp "$IMAGE" 2>&1)
	st=$?
	expect_eq "doctor status: $(tail -n 3 <<<"$out")" 0 $st
	expect_match "verdict" '^a sandbox can run here' "$out"
	expect_match "guest found" '^ok +guest +/usr/local/lib/qsup/guest/vmlinux' "$out"
	expect_match "in a container" '^ok +container ' "$out"
	expect_match "run dir on the tmpfs" '^ok +run_dir .*tmpfs' "$out"
}

# A sandbox in the container, as the README says: no --privileged, no
# seccomp=unconfined, no /dev/kvm. Then a project's make test, its tree
# and the container's make shared into the guest.
test_container_sandbox() {
	local out st proj=$T_TMP/proj
	! skipped || return
	out=$(timeout 300 "${PM[@]}" run --rm --pull=never --network none -v "$PWD":/src -w /src \
	    "$IMAGE" qsup --profile nested-container -- echo ok 2>&1)
	st=$?
	expect_eq "echo status: $(tail -n 5 <<<"$out")" 0 $st
	expect_eq "echo output" ok "$out"
	mkdir -p "$proj"
	printf 'test:\n\t@echo "make test in $$(pwd)"; test -f Makefile\n' \
	    >"$proj/Makefile"
	out=$(timeout 300 "${PM[@]}" run --rm --pull=never --network none --tmpfs /tmp \
	    -v "$proj":/src -w /src "$IMAGE" \
	    qsup --profile nested-container \
	    --share /usr/bin:/usr/local/bin \
	    --share /usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu \
	    --share /usr/lib64:/lib64 --share /src -w /src -- make test 2>&1)
	st=$?
	expect_eq "make status: $(tail -n 5 <<<"$out")" 0 $st
	expect_eq "make output" "make test in /src" "$out"
}

run_test test_container_base
run_test test_container_build
run_test test_container_doctor
run_test test_container_sandbox
# Nothing of Podman's stays mounted (build/ must stay removable).
if grep -q " $CDIR/" /proc/self/mountinfo; then
	echo "  FAIL mounts left under $CDIR: $(grep " $CDIR/" /proc/self/mountinfo)"
	T_FAIL=$((T_FAIL + 1))
fi
finish
