# bash completion for qsup. The candidates come from qsup itself
# (qsup __complete WORDS...), from its command table, options tables and
# profile schema, so they are those of the qsup on PATH.

# bash splits words at COMP_WORDBREAKS (= and : among them): --set
# memory=1G is "memory" "=" "1G" to it, builtin:ci "builtin" ":" "ci".
# The words are joined again for qsup, and what it offers is cut back to
# the part the current bash word holds.
_qsup() {
	local i w words=() cur line prefix
	for ((i = 1; i <= COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [ ${#words[@]} -gt 0 ] && { [[ $w == [=:] ]] ||
		    [[ ${COMP_WORDS[i - 1]} == [=:] ]]; }; then
			words[${#words[@]} - 1]+=$w
		else
			words+=("$w")
		fi
	done
	[ ${#words[@]} -gt 0 ] || words=("")
	cur=${COMP_WORDS[COMP_CWORD]}
	[[ $cur == [=:] ]] && cur=
	prefix=${words[${#words[@]} - 1]}
	prefix=${prefix%"$cur"}
	COMPREPLY=()
	while IFS= read -r line; do
		case $line in
		::files | ::dirs)
			[ -z "$prefix" ] || continue	# a path with : or =
			compopt -o filenames 2>/dev/null
			mapfile -t -O ${#COMPREPLY[@]} COMPREPLY < <(compgen \
			    "$([ "$line" = ::dirs ] && echo -d || echo -f)" \
			    -- "$cur")
			;;
		*) COMPREPLY+=("${line#"$prefix"}") ;;
		esac
	done < <("${COMP_WORDS[0]}" __complete "${words[@]}" 2>/dev/null)
	# A setting's name is followed by its value, not a space.
	if [ ${#COMPREPLY[@]} -eq 1 ] && [[ ${COMPREPLY[0]} == *= ]]; then
		compopt -o nospace 2>/dev/null
	fi
	return 0
}
complete -o bashdefault -o default -F _qsup qsup
