#!/usr/bin/env bash
# The command line itself, no guest booted: every command and subcommand in
# the table (core/cmd/cmd.c) answers --help and -h with its usage on stdout
# and status 0; the list is read from "qsup help", so a new command is
# covered without a word here. Usage errors go to stderr with status 125.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# What "qsup help" lists ("run", "cache ls", ...), then each command that
# has subcommands ("cache", "profile").
commands() {
	local list
	list=$("$QSUP" help | awk -F'  +' '
	    /^commands:$/ { c = 1; next }
	    c && /^$/ { exit }
	    c { print $2 }')
	echo "$list"
	awk 'NF > 1 { print $1 }' <<<"$list" | sort -u
}

# err STATUS WHAT CMD...: CMD fails with STATUS, says nothing on stdout and
# something matching WHAT on stderr.
err() {
	local want=$1 what=$2 out st
	shift 2
	out=$("$@" 2>"$T_TMP/err")
	st=$?
	expect_eq "$* status" "$want" $st
	expect_eq "$* stdout" "" "$out"
	expect_match "$* stderr" "$what" "$(cat "$T_TMP/err")"
}

test_help_lists_the_table() {
	local list
	list=$(commands)
	for c in run "cache ls" "cache clear" "profile check" "profile show" \
	    "profile settings" "profile facts" version help cache profile; do
		grep -qx "$c" <<<"$list" || fail "qsup help does not list '$c'"
	done
	expect_eq "qsup --help" "$("$QSUP" help)" "$("$QSUP" --help)"
	expect_eq "qsup -h" "$("$QSUP" help)" "$("$QSUP" -h)"
	expect_match "run's options too" '^  -p, --profile FILE' "$("$QSUP" help)"
}

test_every_command_has_help() {
	local c flag out st
	while read -r c; do
		for flag in --help -h; do
			# $c unquoted: "cache ls" is two words.
			out=$(timeout 10 "$QSUP" $c $flag 2>"$T_TMP/err")
			st=$?
			expect_eq "qsup $c $flag status" 0 $st
			expect_match "qsup $c $flag usage" "^usage: qsup $c( |\$)" \
			    "$(head -n 1 <<<"$out")"
			expect_eq "qsup $c $flag stderr" "" "$(cat "$T_TMP/err")"
		done
		expect_eq "qsup help $c" "$out" "$("$QSUP" help $c)"
	done < <(commands)
	# Not one of them ran its command (facts would probe KVM).
	[ ! -e "$XDG_CACHE_HOME/qsup/kvm-verdict" ] ||
	    fail "a --help probed KVM"
}

# A command's own options keep working after its subcommand.
test_help_among_options() {
	expect_match "profile check -v --help" '^usage: qsup profile check' \
	    "$("$QSUP" profile check -v --help)"
	expect_match "profile facts --json --help" '^usage: qsup profile facts' \
	    "$("$QSUP" profile facts --json --help)"
	expect_match "run -v --help" '^usage: qsup run' \
	    "$("$QSUP" run -v --help)"
	expect_match "profile help" '^usage: qsup profile check' \
	    "$("$QSUP" profile help)"
}

test_usage_errors() {
	local out
	err 125 '^usage: qsup run' "$QSUP"
	err 125 "^qsup: unknown command 'bogus'; try 'qsup --help'\$" \
	    "$QSUP" bogus
	err 125 "^qsup: unknown command 'bogus'; try 'qsup --help'\$" \
	    "$QSUP" help bogus
	err 125 '^qsup: usage: qsup cache ls \| clear \[--stale\] \| prune$' \
	    "$QSUP" cache bogus
	err 125 '^qsup: usage: qsup cache clear \[--stale\]$' \
	    "$QSUP" cache clear --bogus
	err 125 '^usage: qsup profile check' "$QSUP" profile
	err 125 "^qsup: profile: unknown command 'bogus'; try 'qsup profile help'\$" \
	    "$QSUP" profile bogus
	err 125 '^qsup: profile check: no profile given' "$QSUP" profile check
	err 125 '^qsup: no command given' "$QSUP" run
	err 125 "^try 'qsup --help'\$" "$QSUP" run --bogus -- true
	err 125 "^try 'qsup --help'\$" "$QSUP" --bogus -- true
	# Options before a command's name: said so, nothing run.
	err 125 "^qsup: 'run' is a command: put the options after it" \
	    "$QSUP" -v run -- true
	err 125 "^qsup: 'image' is a command: put the options after it" \
	    "$QSUP" --json image ls
	# After CMD, --help is CMD's: the run goes on (and stops at the profile).
	err 125 '/nonexistent/x.lua' "$QSUP" --profile /nonexistent/x.lua -- \
	    true --help
	err 125 '/nonexistent/x.lua' "$QSUP" run --profile /nonexistent/x.lua \
	    -- true -h
}

test_version_and_cache() {
	local out
	out=$("$QSUP" version)
	expect_eq "version status" 0 $?
	expect_match "version" '^qsup [0-9.]+ \(agent protocol [0-9]+\)$' "$out"
	expect_eq "--version" "$out" "$("$QSUP" --version)"
	out=$("$QSUP" cache)
	expect_eq "plain cache status" 0 $?
	expect_eq "plain cache is ls" "$("$QSUP" cache ls)" "$out"
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
