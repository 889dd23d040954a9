# fish completion for qsup. The candidates come from qsup itself
# (qsup __complete WORDS...), from its command table, options tables and
# profile schema, so they are those of the qsup on PATH.

function __qsup_complete
	set -l words (commandline -opc)
	set -l cur (commandline -ct)
	for line in ($words[1] __complete $words[2..-1] "$cur" 2>/dev/null)
		switch $line
			case ::files
				__fish_complete_path "$cur"
			case ::dirs
				__fish_complete_directories "$cur"
			case '*'
				echo $line
		end
	end
end

complete -c qsup -f -a '(__qsup_complete)'
