#!/usr/bin/env bash
# Make a page's scdoc source from its template: the lines @SETTINGS@,
# @COMMANDS@ and @HELP CMD...@ become what the freshly built qsup says,
# so qsup-profile(5) lists exactly the settings "qsup profile settings"
# prints, qsup(1) every command's --help and qsup-serve(8) serve's, and
# none of them can drift from the binary.
#   contrib/man/gen.sh QSUP TEMPLATE > PAGE.scd
set -euo pipefail
qsup=$1
template=$2

# scdoc's markup characters, taken literally.
esc() {
	sed -e 's/\\/\\\\/g' -e 's/\*/\\*/g' -e 's/_/\\_/g'
}

# "NAME = DEFAULT", a tab and the help, a tab and "(what it accepts)".
settings() {
	"$qsup" profile settings | esc | awk '
	/^[^\t]/ {
		if (n++) print ""
		name = $0; sub(/ = .*/, "", name)
		def = $0; sub(/^[^=]* = /, "", def)
		printf("*%s* = %s\n", name, def)
		next
	}
	/^\t\(/ {
		sub(/^\t\(/, ""); sub(/\)$/, "")
		printf("\n\tAccepts: %s.\n", $0)
		next
	}
	/^\t/ { sub(/^\t/, ""); printf("\t%s\n", $0) }'
}

# Each command and subcommand, its --help verbatim.
commands() {
	local c s subs
	for c in $("$qsup" __complete ""); do
		# A command with subcommands offers them, and "help" (help
		# itself offers the commands).
		subs=$("$qsup" __complete "$c" "")
		[ "$c" != help ] && grep -qx help <<<"$subs" &&
		    subs=$(grep -vx help <<<"$subs") || subs=
		if [ -z "$subs" ]; then
			printf '## qsup %s\n\n```\n' "$c"
			"$qsup" help "$c"
			printf '```\n\n'
			continue
		fi
		for s in $subs; do
			printf '## qsup %s %s\n\n```\n' "$c" "$s"
			"$qsup" help "$c" "$s"
			printf '```\n\n'
		done
	done
}

while IFS= read -r line; do
	case $line in
	@SETTINGS@) settings ;;
	@COMMANDS@) commands ;;
	@HELP\ *@)
		line=${line#@HELP }
		printf '```\n'
		"$qsup" help ${line%@}
		printf '```\n'
		;;
	*) printf '%s\n' "$line" ;;
	esac
done <"$template"
