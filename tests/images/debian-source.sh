#!/usr/bin/env bash
# A Debian source package, unpacked, for the CI workflow's test and bench:
#   tests/images/debian-source.sh PACKAGE DIR
# prints the unpacked tree's path (DIR/PACKAGE-VERSION). apt-get source
# against the mirror (QSUP_DEBIAN_MIRROR, default deb.debian.org) with a
# source list and state of its own under DIR, so the host's apt
# configuration is neither needed nor touched. Exit 2 when the mirror
# cannot be reached (the caller skips), 1 on any other failure (its log).
set -euo pipefail
PATH=$PATH:/usr/sbin:/sbin
[ $# = 2 ] || { echo "usage: $0 PACKAGE DIR" >&2; exit 1; }
pkg=$1 dir=$2
mirror=${QSUP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
if ! curl -sfI --max-time 20 "$mirror/dists/bookworm/Release" >/dev/null; then
	echo "debian-source.sh: $mirror cannot be reached" >&2
	exit 2
fi
apt=$dir/.apt
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
echo "deb-src $mirror bookworm main" >"$apt/sources.list"
opts=(-q -o "Dir::Etc::SourceList=$apt/sources.list"
    -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$apt/lists"
    -o "Dir::Cache=$apt/cache" -o APT::Sandbox::User=root)
if ! { apt-get "${opts[@]}" update && (cd "$dir" &&
    apt-get "${opts[@]}" source "$pkg"); } >"$apt/log" 2>&1; then
	cat "$apt/log" >&2
	exit 1
fi
ls -d "$dir/$pkg"-*/ | head -n 1 | sed 's|/$||'
