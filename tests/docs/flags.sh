#!/usr/bin/env bash
# Every flag qsup's help prints is in the manual: each option (--xxx and
# -x) of "qsup --help" and of every command's and subcommand's --help
# (the commands found as contrib/man/gen.sh finds them, through the hidden
# "qsup __complete") must appear, as that exact word, in some page of
# docs/, and every command and subcommand as "qsup CMD [SUB]". So a new
# option or command cannot ship undocumented. Each missing one is named
# with the help that prints it:
#
#   MISSING --persist-every (qsup sandbox create --help)
#   MISSING command qsup sandbox fork
#
# and every route "qsup serve --routes" prints is in docs/serve-api.md,
# as "`METHOD PATH" (its table of routes):
#
#   MISSING route POST /v1/sandboxes/{name}/fork
#
#   tests/docs/flags.sh [QSUP [DOCS]]   check QSUP's help (default
#                                       build/qsup) against DOCS (docs/)
#   tests/docs/flags.sh --self-test     check that a flag, a command and
#                                       a route missing from the docs
#                                       are caught, and new ones qsup
#                                       prints and no page has
set -u
here=$(dirname "$(readlink -f "$0")")
root=$here/../..

# The flags of one help text, one a line: "--word" or "-x" standing
# alone (not "x86-64", "-ti", "1-63", nor the "--" before a command).
flags_of() {
	grep -oP '(?<![A-Za-z0-9_-])(--[a-z][a-z0-9-]*|-[A-Za-z])(?![A-Za-z0-9_-])'
}

# Every command, and each subcommand as "CMD SUB", one a line.
all_commands() {
	local qsup=$1 c s subs
	for c in $("$qsup" __complete ""); do
		echo "$c"
		subs=$("$qsup" __complete "$c" "")
		[ "$c" != help ] && grep -qx help <<<"$subs" || continue
		for s in $(grep -vx help <<<"$subs"); do
			echo "$c $s"
		done
	done
}

# "WHERE<tab>FLAG" for every help qsup prints, WHERE the command line.
all_flags() {
	local qsup=$1 c help
	"$qsup" --help | flags_of | sed 's/^/qsup --help\t/'
	while IFS= read -r c; do
		# A help that fails is "!": its flags are not known.
		# shellcheck disable=SC2086 # "CMD SUB" is two words
		if ! help=$("$qsup" $c --help 2>&1); then
			printf 'qsup %s --help\t!\n' "$c"
			continue
		fi
		flags_of <<<"$help" | sed "s/^/qsup $c --help\t/"
	done < <(all_commands "$qsup")
}

# What a qsup prints, asked once: the self-test checks nine trees of
# docs against two qsups, and asking each help again took most of its
# time. learn QSUP fills the cache in the calling shell (a check runs in
# a subshell, whose cache would go with it).
declare -A flags_cache=() commands_cache=() routes_cache=()
learn() {
	[ -n "${commands_cache[$1]+set}" ] && return 0
	commands_cache[$1]=$(all_commands "$1")
	flags_cache[$1]=$(all_flags "$1")
	routes_cache[$1]=$("$1" serve --routes)
}

check() {
	local qsup=$1 docs=$2 pass=0 fail=0 where flag text c needle
	local -a pages
	# The pages' flags and those already checked, looked up in bash: a
	# grep a flag took most of the self-test's nine checks.
	local -A documented=() seen=()
	if ! [ -x "$qsup" ]; then
		echo "FAIL: no qsup at $qsup (build it first)"
		return 1
	fi
	text=$(cat "$docs"/*.md 2>/dev/null | flags_of | sort -u)
	if [ -z "$text" ]; then
		echo "FAIL: no pages in $docs"
		return 1
	fi
	for flag in $text; do
		documented[$flag]=1
	done
	while IFS=$'\t' read -r where flag; do
		if [ "$flag" = ! ]; then
			echo "FAILED $where"
			fail=$((fail + 1))
			continue
		fi
		# Each flag once, named with the first help that prints it.
		[ -z "${seen[$flag]:-}" ] || continue
		seen[$flag]=1
		if [ -n "${documented[$flag]:-}" ]; then
			pass=$((pass + 1))
		else
			echo "MISSING $flag ($where)"
			fail=$((fail + 1))
		fi
	done < <(learn "$qsup"; printf '%s\n' "${flags_cache[$qsup]}")
	# Each command by its full name, in some page's text; each route of
	# the API in serve-api.md, as "`METHOD PATH".
	while IFS=$'\t' read -r where c; do
		if [ "$where" = command ]; then
			needle=$c pages=("$docs"/*.md)
		else
			needle="\`$c" pages=("$docs/serve-api.md")
		fi
		if grep -qF -- "$needle" "${pages[@]}"; then
			pass=$((pass + 1))
		else
			echo "MISSING $where $c"
			fail=$((fail + 1))
		fi
	done < <(learn "$qsup"
	    sed 's/^/command\tqsup /' <<<"${commands_cache[$qsup]}"
	    sed 's/^/route\t/' <<<"${routes_cache[$qsup]}")
	echo "docs flags, commands and routes: $pass passed, $fail failed"
	[ "$pass" -gt 0 ] && [ "$fail" -eq 0 ]
}

# The check of QSUP against DOCS must fail and name what LINE matches
# (a grep pattern); one more pass or fail.
expect_named() {
	local qsup=$1 docs=$2 line=$3 out
	if out=$(check "$qsup" "$docs"); then
		echo "FAIL: let through, where $line was planted"
		fail=$((fail + 1))
	elif ! grep -q -- "$line" <<<"$out"; then
		echo "FAIL: no $line in: $out"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
}

self_test() {
	local tmp pass=0 fail=0 qsup=$root/build/qsup
	tmp=$(mktemp -d /tmp/qsup-docflags.XXXXXX)
	trap 'rm -rf "$tmp"' RETURN
	cp -r "$root/docs" "$tmp/docs"
	learn "$qsup"

	# The copy says what the tree says.
	if [ "$(check "$qsup" "$tmp/docs")" = "$(check "$qsup" "$root/docs")" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: the copy and the tree differ"
		fail=$((fail + 1))
	fi

	# A flag the help prints, taken out of every page: named.
	sed -i 's/--idle-timeout/--idle-t1meout/g' "$tmp"/docs/*.md
	expect_named "$qsup" "$tmp/docs" \
	    '^MISSING --idle-timeout (qsup serve --help)$'
	cp "$root"/docs/*.md "$tmp/docs/"

	# A short flag alone, taken out: "-w" must not be found in "-w/x".
	sed -i -E 's/(^|[^A-Za-z0-9_-])-w([^A-Za-z0-9_-]|$)/\1-W\2/g' \
	    "$tmp"/docs/*.md
	expect_named "$qsup" "$tmp/docs" '^MISSING -w '
	cp "$root"/docs/*.md "$tmp/docs/"

	# A qsup whose run --help prints a flag no page has: named.
	# and a command no page names (qsup does not know it: its --help is
	# an error, and its name alone is missing).
	cat >"$tmp/qsup" <<-EOF
	#!/bin/sh
	"$qsup" "\$@" || exit \$?
	[ "\$1 \$2" = "run --help" ] &&
	    echo "      --planted-flag   planted by the self-test"
	[ "\$1 \$2" = "__complete " ] && echo planted-command
	[ "\$1 \$2" = "serve --routes" ] && echo "GET /v1/planted"
	exit 0
	EOF
	chmod +x "$tmp/qsup"
	learn "$tmp/qsup"
	expect_named "$tmp/qsup" "$tmp/docs" \
	    '^MISSING --planted-flag (qsup run --help)$'
	expect_named "$tmp/qsup" "$tmp/docs" \
	    '^MISSING command qsup planted-command$'
	expect_named "$tmp/qsup" "$tmp/docs" '^MISSING route GET /v1/planted$'

	# A route taken out of serve-api.md's table: named.
	sed -i 's|`POST /v1/sandboxes/{name}/fork|`POST /v1/sandboxes/{name}/f0rk|' \
	    "$tmp/docs/serve-api.md"
	expect_named "$qsup" "$tmp/docs" \
	    '^MISSING route POST /v1/sandboxes/{name}/fork$'
	cp "$root"/docs/*.md "$tmp/docs/"

	# A subcommand taken out of every page: named.
	sed -i 's/qsup sandbox fork/qsup sandbox f0rk/g' "$tmp"/docs/*.md
	expect_named "$qsup" "$tmp/docs" '^MISSING command qsup sandbox fork$'
	cp "$root"/docs/*.md "$tmp/docs/"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}

case "${1:-}" in
--self-test) self_test ;;
*) check "${1:-$root/build/qsup}" "${2:-$root/docs}" ;;
esac
