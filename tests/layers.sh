#!/usr/bin/env bash
# The layers' include rule, checked over every #include "..." in the tree:
#
#   core/wire <- core/base <- staging, core/net, core/image, core/httpd
#   <- lua <- core/vm <- core/serve, core/client <- core/cmd
#
# A file may include headers of its own folder and of the layers below it;
# staging, core/net, core/image and core/httpd are peers and include none of each
# other, and so are core/serve (the server) and core/client (its client). guest/ (the static in-guest agent) may include its own headers and
# the wire layer's, nothing else, and no host layer includes guest/'s.
#
# Within a folder, calls between files go one way (tests/circles.py):
# a circle of them fails.
#
#   tests/layers.sh [ROOT]      check ROOT (default: this tree)
#   tests/layers.sh --self-test check that the check fails on planted
#                               upward includes, and passes without them
set -u
here=$(dirname "$(readlink -f "$0")")

# folder rank; guest is ranked apart
declare -A rank=(
	[core/wire]=0 [core/base]=1 [staging]=2 [core/net]=2 [core/image]=2 [core/httpd]=2 [lua]=3
	[core/vm]=4 [core/serve]=5 [core/client]=5 [core/cmd]=6 [guest]=-1
)

check() {
	local root=$1 bad=0 files=0 dir f line n hdr where
	local include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]*)"'
	declare -A home=()
	for dir in "${!rank[@]}"; do
		for f in "$root/$dir"/*.h; do
			[ -f "$f" ] || continue
			hdr=${f##*/}
			if [ -n "${home[$hdr]:-}" ]; then
				echo "$dir/$hdr: a header of that name is in" \
				    "${home[$hdr]} too"
				bad=$((bad + 1))
			fi
			home[$hdr]=$dir
		done
	done
	# One grep a folder and the lines matched in bash, not a grep a file
	# and a sed a line: the self-test checks the tree ten times.
	for dir in "${!rank[@]}"; do
		local srcs=()
		for f in "$root/$dir"/*.[ch]; do
			[ -f "$f" ] && srcs+=("$f")
		done
		files=$((files + ${#srcs[@]}))
		[ ${#srcs[@]} -gt 0 ] || continue
		while IFS=: read -r f n line; do
			[[ $line =~ $include_re ]] || continue
			hdr=${BASH_REMATCH[1]}
			where=${home[$hdr]:-}
			if [ -z "$where" ]; then
				echo "$dir/${f##*/}:$n: includes \"$hdr\"," \
				    "which is no layer's header"
			elif [ "$where" = "$dir" ]; then
				continue
			elif [ "$dir" = guest ]; then
				[ "$where" = core/wire ] && continue
				echo "$dir/${f##*/}:$n: includes \"$hdr\"" \
				    "($where); guest/ may use only the" \
				    "wire layer"
			elif [ "$where" = guest ]; then
				echo "$dir/${f##*/}:$n: includes \"$hdr\"" \
				    "(guest); only the agent uses" \
				    "guest/'s headers"
			elif [ "${rank[$where]}" -lt "${rank[$dir]}" ]; then
				continue
			else
				echo "$dir/${f##*/}:$n: includes \"$hdr\"" \
				    "($where), which is not below $dir"
			fi
			bad=$((bad + 1))
		done < <(grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' \
		    "${srcs[@]}")
	done
	echo "layers: $files files checked, $bad bad includes"
	# The self-test's planted includes change no call: it asks for the
	# includes alone there (a second argument), circles.py taking 1 s.
	[ -n "${2:-}" ] || circles "$root" || bad=$((bad + 1))
	[ "$bad" -eq 0 ]
}

# Inside a folder, files lean one way too (tests/circles.py): a circle of
# calls between its files fails, in every folder.
circles() {
	local root=$1 out rc=0
	if ! out=$(python3 "$here/circles.py" "$root" $(printf '%s\n' \
	    "${!rank[@]}" | sort)); then
		echo "$out"
		rc=1
	fi
	echo "circles: ${#rank[@]} folders checked, $(grep -c . <<<"$out")" \
	    "circles"
	return $rc
}

self_test() {
	local tmp out pass=0 fail=0
	tmp=$(mktemp -d /tmp/qsup-layers.XXXXXX)
	trap 'rm -rf "$tmp"' RETURN
	for dir in "${!rank[@]}"; do
		mkdir -p "$tmp/$dir"
		cp "$here/../$dir"/*.[ch] "$tmp/$dir/" 2>/dev/null
	done
	if check "$tmp" >/dev/null; then
		pass=$((pass + 1))
	else
		echo "FAIL: the unchanged tree does not pass"
		fail=$((fail + 1))
	fi
	# Upward, peer to peer, guest into a host layer, host into guest.
	local plant
	for plant in "core/base/util.c:vm.h:is not below core/base" \
	    "core/net/net.c:staging.h:is not below core/net" \
	    "lua/facts.c:vm.h:is not below lua" \
	    "guest/agent.c:base.h:guest/ may use only the wire layer" \
	    "core/vm/kvm.c:agent.h:only the agent uses" \
	    "core/client/client.c:serve.h:is not below core/client" \
	    "core/serve/serve.c:cmd.h:is not below core/serve" \
	    "core/wire/wire.h:base.h:is not below core/wire"; do
		IFS=: read -r f hdr why <<<"$plant"
		cp "$tmp/$f" "$tmp/$f.orig"
		echo "#include \"$hdr\"" >>"$tmp/$f"
		if out=$(check "$tmp" includes); then
			echo "FAIL: $f including $hdr was let through"
			fail=$((fail + 1))
		elif ! grep -q "$why" <<<"$out"; then
			echo "FAIL: $f including $hdr: no \"$why\" in: $out"
			fail=$((fail + 1))
		else
			pass=$((pass + 1))
		fi
		mv "$tmp/$f.orig" "$tmp/$f"
	done
	# Two files of one folder that call each other.
	printf 'int plant_b(void);\nint\nplant_a(void)\n{\n\treturn (plant_b());\n}\n' \
	    >"$tmp/core/image/plant_a.c"
	printf 'int plant_a(void);\nint\nplant_b(void)\n{\n\treturn (plant_a());\n}\n' \
	    >"$tmp/core/image/plant_b.c"
	if out=$(check "$tmp"); then
		echo "FAIL: a circle of two files was let through"
		fail=$((fail + 1))
	elif ! grep -q "core/image: a circle of 2 files: plant_a.c -> plant_b.c -> plant_a.c" <<<"$out"; then
		echo "FAIL: the circle is not named in: $out"
		fail=$((fail + 1))
	else
		pass=$((pass + 1))
	fi
	rm -f "$tmp/core/image/plant_a.c" "$tmp/core/image/plant_b.c"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
}

case "${1:-}" in
--self-test) self_test ;;
*) check "${1:-$here/..}" ;;
esac
