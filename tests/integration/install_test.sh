#!/usr/bin/env bash
# The install: make install with DESTDIR and ./build.sh install PREFIX put
# every file in its place; the installed qsup finds its guest under its
# own prefix (never the build tree, never DESTDIR), also once its tree is
# moved, and runs a real sandbox from there; its man pages render and
# qsup-profile(5) lists exactly the settings qsup prints; the installed
# completions complete commands, options, profile names and settings in
# bash, and in zsh and fish where those shells are installed.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# What an install holds, under its prefix.
FILES="bin/qsup lib/qsup/vmlinux lib/qsup/initramfs.cpio lib/qsup/qsup-agent
share/man/man1/qsup.1 share/man/man5/qsup-profile.5
share/man/man8/qsup-serve.8 share/bash-completion/completions/qsup
share/zsh/site-functions/_qsup share/fish/vendor_completions.d/qsup.fish"

# One install for the tests that only read it: ./build.sh install PREFIX.
P=$T_TMP/prefix
install_once() {
	[ -x "$P/bin/qsup" ] && return 0
	if ! ./build.sh install "$P" >"$T_TMP/install.log" 2>&1; then
		fail "./build.sh install $P: $(tail -5 "$T_TMP/install.log")"
		return 1
	fi
}

# The setting names "qsup profile settings" prints.
settings_of() {
	"$1" profile settings | sed -n 's/^\([a-z_0-9]*\) = .*/\1/p'
}

test_install_destdir_stages_under_prefix() {
	local stage=$T_TMP/stage f out st
	make -s install DESTDIR="$stage" PREFIX=/opt/qsup-test \
	    >"$T_TMP/make.log" 2>&1 ||
	    { fail "make install: $(tail -5 "$T_TMP/make.log")"; return; }
	for f in $FILES; do
		[ -f "$stage/opt/qsup-test/$f" ] || fail "not installed: $f"
	done
	out=$(cd "$stage" && find . -type f | grep -v '^\./opt/qsup-test/')
	expect_eq "files outside PREFIX" "" "$out"
	# The prefix is compiled in, DESTDIR is not.
	grep -q /opt/qsup-test/lib/qsup "$stage/opt/qsup-test/bin/qsup" ||
	    fail "the binary does not name /opt/qsup-test/lib/qsup"
	grep -q "$stage" "$stage/opt/qsup-test/bin/qsup" &&
	    fail "the binary names DESTDIR ($stage)"
	# The binary alone, away from its tree: it looks beside itself, under
	# its own prefix and under the compiled-in one, and names them all.
	mkdir -p "$T_TMP/alone/bin"
	cp "$stage/opt/qsup-test/bin/qsup" "$T_TMP/alone/bin/qsup"
	out=$(env -u QSUP_GUEST_DIR "$T_TMP/alone/bin/qsup" run -- true 2>&1)
	st=$?
	expect_eq "guestless status" 125 $st
	expect_match "every place named" "^qsup: no default guest \(vmlinux, initramfs.cpio\) in $T_TMP/alone/bin/guest, $T_TMP/alone/lib/qsup nor /opt/qsup-test/lib/qsup: run ./build.sh" "$out"
	# QSUP_GUEST_DIR still overrides, and is then the only place.
	out=$(QSUP_GUEST_DIR=$T_TMP/none "$T_TMP/alone/bin/qsup" run -- true 2>&1)
	expect_match "QSUP_GUEST_DIR named" "^qsup: no default guest \(vmlinux, initramfs.cpio\) in $T_TMP/none \(QSUP_GUEST_DIR\)$" "$out"
	# Uninstall takes back every file.
	make -s uninstall DESTDIR="$stage" PREFIX=/opt/qsup-test \
	    >"$T_TMP/make.log" 2>&1 || fail "make uninstall failed"
	out=$(cd "$stage" && find . -type f)
	expect_eq "files left by uninstall" "" "$out"
}

# qsup -v prints QEMU's command line: the kernel it boots.
kernel_of() {
	sed -n 's/.* -kernel \([^ ]*\) .*/\1/p' "$1" | head -n 1
}

test_installed_qsup_runs_a_sandbox() {
	local out moved=$T_TMP/moved
	install_once || return
	for f in $FILES; do
		[ -f "$P/$f" ] || fail "not installed: $f"
	done
	# From / with no QSUP_GUEST_DIR: its own prefix's guest, not build/'s.
	out=$(cd / && env -u QSUP_GUEST_DIR "$P/bin/qsup" run -v -- echo ok \
	    2>"$T_TMP/v.err")
	expect_eq "installed qsup run" "ok" "$out"
	expect_eq "its kernel" "$P/lib/qsup/vmlinux" "$(kernel_of "$T_TMP/v.err")"
	# The whole tree moved: the binary follows it (its own ../lib/qsup).
	rm -rf "$moved"
	cp -a "$P" "$moved"
	out=$(cd / && env -u QSUP_GUEST_DIR "$moved/bin/qsup" run -v -- \
	    echo moved 2>"$T_TMP/v.err")
	expect_eq "moved qsup run" "moved" "$out"
	expect_eq "its kernel" "$moved/lib/qsup/vmlinux" \
	    "$(kernel_of "$T_TMP/v.err")"
	rm -rf "$moved"
}

test_man_pages() {
	local page out want got
	install_once || return
	for page in man1/qsup.1 man5/qsup-profile.5 man8/qsup-serve.8; do
		out=$(MANWIDTH=80 man -l "$P/share/man/$page" 2>&1)
		expect_eq "man -l $page status" 0 $?
		expect_match "man -l $page" '^NAME$' "$out"
		if command -v lexgrog >/dev/null; then
			expect_match "lexgrog $page" ': "qsup[a-z-]* - ' \
			    "$(lexgrog "$P/share/man/$page")"
		fi
		if command -v mandoc >/dev/null; then
			out=$(mandoc -T lint -W error "$P/share/man/$page" 2>&1)
			expect_eq "mandoc -T lint -W error $page" "" "$out"
		fi
	done
	# qsup-profile(5) lists what qsup profile settings prints, in order.
	want=$(settings_of "$P/bin/qsup")
	got=$(MANWIDTH=200 man -l "$P/share/man/man5/qsup-profile.5" |
	    awk '/^SETTINGS/ { s = 1; next } /^[A-Z]/ { s = 0 }
	    s && /^       [a-z_0-9]+ = / { print $1 }')
	[ "$(wc -l <<<"$want")" -ge 30 ] || fail "few settings: $want"
	expect_eq "qsup-profile(5) settings" "$want" "$got"
	# qsup(1) has a section for every command qsup help lists.
	out=$(MANWIDTH=200 man -l "$P/share/man/man1/qsup.1")
	for c in $("$P/bin/qsup" help | awk -F'  +' '/^commands:$/ { c = 1;
	    next } c && /^$/ { exit } c { print $2 }' | tr ' ' '_'); do
		grep -qx "   qsup ${c//_/ }" <<<"$out" ||
		    fail "qsup(1) has no section qsup ${c//_/ }"
	done
	expect_match "qsup(1) exit status" '^EXIT STATUS$' "$out"
	expect_match "qsup(1) environment" '^ +QSUP_GUEST_DIR$' "$out"
	expect_match "qsup-serve(8) endpoints" '^ +GET /v1/healthz$' \
	    "$(MANWIDTH=200 man -l "$P/share/man/man8/qsup-serve.8")"
}

# bash_complete WORD...: COMPREPLY of the installed bash completion for
# the command line WORD... (the last one the word being completed).
bash_complete() {
	PATH=$P/bin:$PATH bash -c '
	. "$1"/share/bash-completion/completions/qsup || exit 1
	shift
	COMP_WORDS=("$@")
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	_qsup
	printf "%s\n" "${COMPREPLY[@]}" | sort -u' bash "$P" "$@"
}

test_bash_completion() {
	local out cfg=$T_TMP/config
	install_once || return
	out=$(bash -c '. "$1" && complete -p qsup' bash \
	    "$P/share/bash-completion/completions/qsup")
	expect_eq "complete -p qsup" \
	    "complete -o bashdefault -o default -F _qsup qsup" "$out"
	expect_eq "qsup ru" "run" "$(bash_complete qsup ru)"
	expect_eq "qsup run --set mem" "memory=" \
	    "$(bash_complete qsup run --set mem)"
	expect_eq "qsup run --set use_kvm=" $'auto\nfalse\ntrue' \
	    "$(bash_complete qsup run --set use_kvm = '')"
	expect_eq "qsup profile s" $'settings\nshow' \
	    "$(bash_complete qsup profile s)"
	expect_eq "qsup run --ti" "--timeout" "$(bash_complete qsup run --ti)"
	# Every setting, and nothing else, after --set.
	expect_eq "--set offers the settings" \
	    "$(settings_of "$P/bin/qsup" | sed 's/$/=/' | sort)" \
	    "$(bash_complete qsup run --set '')"
	# Profile names: the built-in ones, and the user's profiles.
	mkdir -p "$cfg/qsup/profiles"
	echo 'return {}' >"$cfg/qsup/profiles/mine.lua"
	out=$(cd "$T_TMP" && XDG_CONFIG_HOME=$cfg bash_complete qsup --profile '')
	for p in default ci dev python nested-container mine; do
		grep -qx "$p" <<<"$out" || fail "--profile does not offer $p: $out"
	done
	expect_eq "--profile builtin:n" "nested-container" \
	    "$(bash_complete qsup --profile builtin : n)"
}

test_zsh_and_fish_completion() {
	local out
	install_once || return
	if ! command -v zsh >/dev/null; then
		echo "    skip: zsh is not installed (Debian package zsh)"
	else
		zsh -n "$P/share/zsh/site-functions/_qsup" ||
		    fail "zsh -n _qsup"
		# compadd and _files stand in for the completion system's.
		out=$(PATH=$P/bin:$PATH zsh -fc '
		    compdef() { :; }
		    . "$1"
		    compadd() { print -r -- "compadd $*"; }
		    words=(qsup run --set mem); CURRENT=4; _qsup
		    words=(qsup ru); CURRENT=2; _qsup' zsh \
		    "$P/share/zsh/site-functions/_qsup")
		expect_match "zsh --set mem" '^compadd -S  -- memory=$' "$out"
		expect_match "zsh qsup ru" '^compadd -- run$' "$out"
	fi
	if ! command -v fish >/dev/null; then
		echo "    skip: fish is not installed (Debian package fish)"
	else
		fish -n "$P/share/fish/vendor_completions.d/qsup.fish" ||
		    fail "fish -n qsup.fish"
		out=$(PATH=$P/bin:$PATH fish -c '. $argv[1]
		    complete -C "qsup run --set mem"
		    complete -C "qsup --profile builtin:p"' \
		    "$P/share/fish/vendor_completions.d/qsup.fish")
		expect_eq "fish" $'memory=\nbuiltin:python' "$out"
	fi
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
