#!/usr/bin/env bash
# The size limits, checked over every C file of core/, lua/, staging/ and
# guest/ (and, for the file limit, every C, shell and Python file of tests/
# and bench/): a file is at most SIZE_FILE_MAX lines, a function at most
# SIZE_FUNC_MAX (from the line of its name to its column-0 '}', both
# counted, as house style writes every function). Each offender is named,
#
#   FILE:LINE: function NAME is N lines (at most 120)
#   FILE: file is N lines (at most 1200)
#
# so that a file or function that grew past them is split before it is
# merged, rather than after it has doubled.
#
#   tests/size.sh [ROOT]        check ROOT (default: this tree)
#   tests/size.sh --self-test   check that the check catches a planted
#                               long function and long file, and lets
#                               the same just under the limits through
set -u
here=$(dirname "$(readlink -f "$0")")

SIZE_FILE_MAX=1200
SIZE_FUNC_MAX=120
dirs=(core lua staging guest)
test_dirs=(tests bench)

# The files given (NUL-separated on stdin), in one awk: each function
# over the limit, then the file if it is. A function's name is the
# identifier before the first '(' of the nearest line before its '{' that
# starts at column 0 with one ("name(", or "int main(" on one line). With
# FUNCS=0 only the file limit is checked. One process for every file, not
# one a file: the self-test checks its tree seven times.
check_files() {
	local root=$1 funcs=$2
	xargs -0 -r awk -v root="$root/" -v fmax="$SIZE_FILE_MAX" \
	    -v gmax="$SIZE_FUNC_MAX" -v funcs="$funcs" '
	function file_end() {
		if (file != "" && lines > fmax)
			printf("%s: file is %d lines (at most %d)\n", file,
			    lines, fmax)
	}
	FNR == 1 {
		file_end()
		file = FILENAME
		if (index(file, root) == 1)
			file = substr(file, length(root) + 1)
		nameline = 0
		open = 0
	}
	{ lines = FNR }
	funcs && /^[A-Za-z_]/ && /\(/ {
		name = $0
		sub(/[ \t]*\(.*/, "", name)
		n = split(name, w, /[ \t*]+/)
		name = w[n]
		nameline = FNR
	}
	funcs && /^\{/ {
		open = FNR
		if (nameline == 0) {
			fname = "?"
			fline = FNR
		} else {
			fname = name
			fline = nameline
		}
	}
	funcs && /^\}/ && open {
		if (FNR - fline + 1 > gmax)
			printf("%s:%d: function %s is %d lines (at most %d)\n",
			    file, fline, fname, FNR - fline + 1, gmax)
		open = 0
		nameline = 0
	}
	END { file_end() }'
}

check() {
	local root=$1 files out dir
	files=$( { for dir in "${dirs[@]}"; do
		[ -d "$root/$dir" ] || continue
		find "$root/$dir" -name '*.[ch]' -type f
	done; for dir in "${test_dirs[@]}"; do
		[ -d "$root/$dir" ] || continue
		find "$root/$dir" -type f \( -name '*.[ch]' -o -name '*.sh' \
		    -o -name '*.py' \)
	done; } | grep -c .)
	out=$( { for dir in "${dirs[@]}"; do
		[ -d "$root/$dir" ] || continue
		find "$root/$dir" -name '*.[ch]' -type f -print0
	done | sort -z | check_files "$root" 1
	# The tests' files too, to the file limit: a suite past it is split
	# by topic, as the code is.
	for dir in "${test_dirs[@]}"; do
		[ -d "$root/$dir" ] || continue
		find "$root/$dir" -type f \( -name '*.[ch]' -o -name '*.sh' \
		    -o -name '*.py' \) -print0
	done | sort -z | check_files "$root" 0; } )
	[ -z "$out" ] || echo "$out"
	echo "size: $files files checked, $(grep -c . <<<"$out") over the limits"
	[ -z "$out" ]
}

# A function called NAME of N lines from its name to its '}', two-line
# signature.
plant_function() {
	local name=$1 n=$2 i
	printf '\nstatic int\n%s(int a,\n    int b)\n{\n' "$name"
	for ((i = 0; i < n - 5; i++)); do
		printf '\ta += b;\n'
	done
	printf '\treturn (a);\n}\n'
}

# pad_to FILE N: blank lines added to FILE up to N lines.
pad_to() {
	local i
	for ((i = $(wc -l <"$1"); i < $2; i++)); do
		echo
	done >>"$1"
}

self_test() {
	local tmp out base pass=0 fail=0 dir i
	tmp=$(mktemp -d /tmp/qsup-size.XXXXXX)
	trap 'rm -rf "$tmp"' RETURN
	for dir in "${dirs[@]}"; do
		[ -d "$here/../$dir" ] || continue
		mkdir -p "$tmp/$dir"
		(cd "$here/.." && find "$dir" -name '*.[ch]' -type f \
		    -exec cp --parents -t "$tmp/" {} +)
	done
	for dir in "${test_dirs[@]}"; do
		(cd "$here/.." && find "$dir" -type f \( -name '*.[ch]' -o \
		    -name '*.sh' -o -name '*.py' \) \
		    -exec cp --parents -t "$tmp/" {} +)
	done

	# The copy says what the tree says (which may be offenders still).
	base=$(check "$tmp")
	if [ "$base" = "$(check "$here/..")" ]; then
		pass=$((pass + 1))
	else
		echo "FAIL: the copy and the tree differ"
		fail=$((fail + 1))
	fi

	# A function one line over, in a file of the tree: named, and its
	# line is the line of its name.
	cp "$tmp/core/net/net.c" "$tmp/net.c.orig"
	plant_function size_plant_long 121 >>"$tmp/core/net/net.c"
	i=$(grep -n '^size_plant_long(' "$tmp/core/net/net.c" | cut -d: -f1)
	if out=$(check "$tmp"); then
		echo "FAIL: a function of 121 lines was let through"
		fail=$((fail + 1))
	elif ! grep -qx "core/net/net.c:$i: function size_plant_long is 121 lines (at most 120)" <<<"$out"; then
		echo "FAIL: no core/net/net.c:$i: function size_plant_long in: $out"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	mv "$tmp/net.c.orig" "$tmp/core/net/net.c"

	# One exactly at the limit: not named.
	plant_function size_plant_ok 120 >>"$tmp/core/net/net.c"
	if check "$tmp" | grep -q size_plant_ok; then
		echo "FAIL: a function of 120 lines was named"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi

	# A test file one line over: named.
	mkdir -p "$tmp/tests/unit"
	for ((i = 0; i < 1201; i++)); do echo "/* $i */"; done \
	    >"$tmp/tests/unit/size_plant_test.c"
	if ! check "$tmp" | grep -qx "tests/unit/size_plant_test.c: file is 1201 lines (at most 1200)"; then
		echo "FAIL: a test file of 1201 lines was let through"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	rm -f "$tmp/tests/unit/size_plant_test.c"

	# A file one line over, of short functions, in a new file of guest/.
	{
		printf '/* planted */\n'
		for ((i = 0; i < 100; i++)); do
			plant_function "size_plant_$i" 5
		done
	} >"$tmp/guest/size_plant.c"
	pad_to "$tmp/guest/size_plant.c" 1201
	if out=$(check "$tmp"); then
		echo "FAIL: a file of 1201 lines was let through"
		fail=$((fail + 1))
	elif ! grep -qx "guest/size_plant.c: file is 1201 lines (at most 1200)" <<<"$out"; then
		echo "FAIL: no guest/size_plant.c: file is 1201 lines in: $out"
		fail=$((fail + 1))
	elif grep -q 'function size_plant_' <<<"$out"; then
		echo "FAIL: a short function was named: $out"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi

	# A tree within the limits passes: a file of 1200 lines whose
	# longest function is 120.
	mkdir -p "$tmp/small/lua"
	{
		printf '/* planted */\n'
		plant_function size_plant_ok 120
		for ((i = 0; i < 100; i++)); do
			plant_function "size_plant_$i" 5
		done
	} >"$tmp/small/lua/size_plant.c"
	pad_to "$tmp/small/lua/size_plant.c" 1200
	if ! out=$(check "$tmp/small"); then
		echo "FAIL: a tree within the limits fails: $out"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}

case "${1:-}" in
--self-test) self_test ;;
*) check "${1:-$here/..}" ;;
esac
