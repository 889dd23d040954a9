#!/usr/bin/env bash
# A sandbox's screen (display = "vnc") through qsup serve: the guest paints
# /dev/fb0 a known colour and GET .../screenshot shows it (full size and
# scaled), POST .../input's text and key chords arrive as key codes on the
# guest's keyboard, a click as BTN_LEFT at the right place on its tablet,
# and a sandbox without a screen, or a bad event, is refused, named.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

PNG="python3 $PWD/tests/integration/helpers/png_pixels.py"
DISPLAY_SETTINGS='"settings":{"display":"vnc","display_size":"640x480"}'

# Paint the whole frame buffer XRGB (0x20, 0xc0, 0x40), its geometry read
# from sysfs.
PAINT='set -e; s=$(cat /sys/class/graphics/fb0/stride)
h=$(cat /sys/class/graphics/fb0/virtual_size); h=${h#*,}
printf "\100\300\040\000" >/tmp/p; i=0
while [ $i -lt 21 ]; do cat /tmp/p /tmp/p >/tmp/q; mv /tmp/q /tmp/p; i=$((i+1)); done
head -c $((s * h)) /tmp/p >/dev/fb0; echo painted'

# sh_json CMD: an exec body running CMD under sh -c.
sh_json() {
	echo "{\"argv\":[\"sh\",\"-c\",$(jq -Rn --arg c "$1" '$c')]}"
}

# shot NAME QUERY FILE: a screenshot into FILE; $CODE, $SECS.
shot() {
	local out
	out=$(curl -sS --unix-socket "$SOCK" -o "$3" -w '%{http_code} %{time_total}' \
	    -H "Authorization: Bearer $TOKEN" "http://qsup/v1/sandboxes/$1/screenshot$2")
	CODE=${out% *}
	SECS=${out#* }
}

# reader NAME DEVNAME: the guest records the input device named DEVNAME
# (its /sys name) into /tmp/ev for 8 s, in the background (RPID); returns
# once the recording has begun.
reader() {
	local i c="d=; for e in /sys/class/input/event*; do
		grep -q '$2' \$e/device/name && d=/dev/input/\${e##*/}; done
		[ -n \"\$d\" ] || { echo no device; exit 1; }
		echo recording \$d; timeout 8 cat \$d >/tmp/ev || true"
	curl -sS -N --unix-socket "$SOCK" -H "Authorization: Bearer $TOKEN" \
	    -d "$(sh_json "$c")" "http://qsup/v1/sandboxes/$1/exec" \
	    >"$S/reader" &
	RPID=$!
	touch "$S/reader"
	for i in $(seq 1 100); do
		grep -q '^event: stdout' "$S/reader" && break
		sleep 0.1
	done
	sleep 0.5
}

# recorded NAME: once the reader is done, "TYPE CODE VALUE" of each
# struct input_event (24 bytes on x86-64) the guest recorded.
recorded() {
	wait "$RPID"
	run_exec "$1" "$(sh_json 'od -An -v -tu2 -w24 /tmp/ev |
	    awk "{ v = \$11 + 65536 * \$12; if (v >= 2147483648) v -= 4294967296; print \$9, \$10, v }"')"
}

test_screenshot_pixels() {
	local px
	serve_start
	create d "$DISPLAY_SETTINGS"
	run_exec d "$(sh_json "$PAINT")"
	expect_eq "the guest painted /dev/fb0" painted "$OUT"
	sleep 0.5
	shot d "" "$S/full.png"
	expect_eq "screenshot" 200 "$CODE"
	echo "screenshot took $SECS s" >>"$S/figures"
	px=$($PNG "$S/full.png" 320,240 10,470 639,479 200,20)
	expect_eq "the screenshot's size and pixels" "640x480
32 192 64
32 192 64
32 192 64
32 192 64" "$px"
	shot d "?scale=0.25" "$S/small.png"
	expect_eq "scaled screenshot" 200 "$CODE"
	px=$($PNG "$S/small.png" 80,60 150,110)
	expect_eq "the scaled screenshot's size and pixels" "160x120
32 192 64
32 192 64" "$px"
	QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN "$QSUP" sandbox screenshot \
	    --scale 0.5 -o "$S/cli.png" d
	expect_eq "qsup sandbox screenshot" "320x240
32 192 64" "$($PNG "$S/cli.png" 300,200)"
	QSUP_HOST=unix:$SOCK QSUP_TOKEN=$TOKEN "$QSUP" sandbox screenshot \
	    -o "$S/none.png" nosuch 2>/dev/null
	expect_eq "qsup sandbox screenshot of no sandbox" 1 "$?"
	[ -e "$S/none.png" ] && fail "a file written for a refused screenshot"
	ls "$T_RUN"/qsup/sb-*/screen-*.png >/dev/null 2>&1 &&
	    fail "screendump files left in the run directory"
	api GET "/v1/sandboxes/d/screenshot?scale=3"
	expect_eq "scale 3" 400 "$CODE"
	expect_match "scale named" '"field":"scale"' "$BODY"
	api DELETE /v1/sandboxes/d
	serve_stop
	sed 's/^/    /' "$S/figures"
}

test_input_keys_and_click() {
	serve_start
	create d "$DISPLAY_SETTINGS"
	reader d Keyboard
	api POST /v1/sandboxes/d/input -d '{"events":[{"type":"text","text":"Hi\n"},{"type":"key","keys":["ctrl","c"]}]}'
	expect_eq "input" 200 "$CODE"
	recorded d
	# Key presses (EV_KEY, value 1) and releases, in order: shift H, i,
	# enter, ctrl c.
	expect_eq "the keys the guest saw" "42 35 35 42 23 23 28 28 29 46 46 29" \
	    "$(awk '$1 == 1 { printf "%s%s", sep, $2; sep = " " }' <<<"$OUT")"
	expect_eq "down and up" "1 1 0 0 1 0 1 0 1 1 0 0" \
	    "$(awk '$1 == 1 { printf "%s%s", sep, $3; sep = " " }' <<<"$OUT")"

	reader d Tablet
	api POST /v1/sandboxes/d/input -d '{"events":[{"type":"click","x":320,"y":120},{"type":"scroll","x":320,"y":120,"dy":2}]}'
	expect_eq "click" 200 "$CODE"
	recorded d
	# EV_ABS x and y scaled to QEMU's 0..32767; BTN_LEFT (272) down, up.
	expect_match "the tablet's x" '^3 0 16409$' "$OUT"
	expect_match "the tablet's y" '^3 1 8208$' "$OUT"
	expect_eq "the clicks the guest saw" "272 1,272 0" \
	    "$(awk '$1 == 1 { printf "%s%s %s", sep, $2, $3; sep = "," }' <<<"$OUT")"
	expect_eq "the wheel's two steps down" "-1,-1" \
	    "$(awk '$1 == 2 && $2 == 8 { printf "%s%s", sep, $3; sep = "," }' <<<"$OUT")"
	api DELETE /v1/sandboxes/d
	serve_stop
}

# mcp JSON...: the answers of qsup mcp to an initialize and these calls.
mcp() {
	local init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
	printf '%s\n' "$init" "$@" | QSUP_TOKEN=$TOKEN "$QSUP" mcp --host "unix:$SOCK" 2>&1
}

test_mcp_tools() {
	local out
	serve_start
	create d "$DISPLAY_SETTINGS"
	run_exec d "$(sh_json "$PAINT")"
	out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
	expect_eq "the computer-use tools listed" "click key screenshot scroll type" \
	    "$(jq -r 'select(.id == 2) | .result.tools[].name' <<<"$out" |
	    grep -xE 'screenshot|click|type|key|scroll' | sort | tr '\n' ' ' | sed 's/ $//')"
	out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"screenshot","arguments":{"name":"d","scale":0.5}}}')
	expect_eq "an image block" "image image/png false" \
	    "$(jq -r 'select(.id == 2) | .result | "\(.content[0].type) \(.content[0].mimeType) \(.isError)"' <<<"$out")"
	jq -r 'select(.id == 2) | .result.content[0].data' <<<"$out" | base64 -d >"$S/mcp.png"
	expect_eq "its pixels" "320x240
32 192 64" "$($PNG "$S/mcp.png" 160,120)"
	reader d Keyboard
	out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"type","arguments":{"name":"d","text":"a"}}}' \
	    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"key","arguments":{"name":"d","keys":["ctrl","l"]}}}' \
	    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"key","arguments":{"name":"d","keys":["nokey"]}}}')
	expect_eq "type and key done" "false false true" \
	    "$(jq -r 'select(.id >= 2) | .result.isError' <<<"$out" | tr '\n' ' ' | sed 's/ $//')"
	expect_match "the unknown key named" 'nokey' "$out"
	recorded d
	expect_eq "the keys typed through MCP" "30 30 29 38 38 29" \
	    "$(awk '$1 == 1 { printf "%s%s", sep, $2; sep = " " }' <<<"$OUT")"
	reader d Tablet
	out=$(mcp '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"click","arguments":{"name":"d","x":1,"y":2,"button":"right"}}}' \
	    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"scroll","arguments":{"name":"d","x":1,"y":2,"dy":-1}}}')
	recorded d
	expect_eq "the right click (BTN_RIGHT)" "273 1,273 0" \
	    "$(awk '$1 == 1 { printf "%s%s %s", sep, $2, $3; sep = "," }' <<<"$OUT")"
	expect_match "the wheel up" '^2 8 1$' "$OUT"
	api DELETE /v1/sandboxes/d
	serve_stop
}

# The desktop image (tests/images/desktop.sh, built once: its stamp):
# Xorg, twm and an xterm on the screen; the root window's colour seen in
# the screenshot, and text typed into the xterm run by its shell.
test_desktop() {
	local img=$PWD/build/images/desktop-12.qcow2 px try
	if ! bash tests/images/desktop.sh "$img" >"$T_TMP/desktop.log" 2>&1; then
		fail "cannot build the desktop image: $(tail -n 5 "$T_TMP/desktop.log")"
		return
	fi
	serve_start
	create x "\"settings\":{\"display\":\"vnc\",\"image\":\"$img\",\"memory\":\"1G\"}"
	run_exec x '{"argv":["/usr/local/bin/qsup-desktop"]}'
	expect_eq "X started" "X is up on :0" "$OUT"
	sleep 2
	shot x "" "$S/desktop.png"
	expect_eq "screenshot" 200 "$CODE"
	# xsetroot -solid '#204080' outside the xterm (at 40,40, 80x24).
	px=$($PNG "$S/desktop.png" 900,700 10,10)
	expect_eq "the root window's colour" "1024x768
32 64 128
32 64 128" "$px"
	# Typed keys before the xterm's shell reads them are lost: wait for
	# the shell (a child of xterm) first, then for the file, on a slow host.
	for _ in $(seq 1 60); do
		# No procps in the image: /proc read by hand.
		run_exec x '{"argv":["sh","-c","for d in /proc/[0-9]*; do [ \"$(cat $d/comm 2>/dev/null)\" = xterm ] && x=${d#/proc/}; done; [ -n \"$x\" ] && grep -qs \"^PPid:[[:space:]]*$x$\" /proc/[0-9]*/status && echo up"]}'
		[ "$OUT" = up ] && break
		sleep 0.5
	done
	expect_eq "the xterm's shell is up" up "$OUT"
	# The pointer into the xterm (twm gives it the focus), a click, then
	# the line. Keys that reach X before the focus has moved are lost on
	# a loaded host: the line is typed again, up to three times, after a
	# ctrl-u that clears what a try left half typed on the shell's line
	# (a try that lost its end left "echo " there: the next ran
	# "echo echo typed-in-xterm").
	for try in 1 2 3; do
		api POST /v1/sandboxes/x/input -d '{"events":[{"type":"move","x":200,"y":200},{"type":"click","x":200,"y":200}]}'
		expect_eq "input: the click" 200 "$CODE"
		sleep 1
		api POST /v1/sandboxes/x/input -d '{"events":[{"type":"key","keys":["ctrl","u"]},{"type":"text","text":"echo typed-in-xterm > /tmp/typed\n"}]}'
		expect_eq "input: the line" 200 "$CODE"
		for _ in $(seq 1 20); do
			run_exec x '{"argv":["cat","/tmp/typed"]}'
			[ -n "$OUT" ] && break 2
			sleep 0.5
		done
		echo "    typing $try: nothing ran yet"
	done
	expect_eq "the xterm ran what was typed" typed-in-xterm "$OUT"
	api DELETE /v1/sandboxes/x
	serve_stop
}

test_refused() {
	serve_start
	create plain
	api GET /v1/sandboxes/plain/screenshot
	expect_eq "screenshot without a display" 409 "$CODE"
	expect_match "says so" 'no display' "$BODY"
	api POST /v1/sandboxes/plain/input -d '{"events":[{"type":"text","text":"x"}]}'
	expect_eq "input without a display" 409 "$CODE"
	create d "$DISPLAY_SETTINGS"
	api POST /v1/sandboxes/d/input -d '{"events":[{"type":"key","keys":["ctrl","bogus"]}]}'
	expect_eq "unknown key" 400 "$CODE"
	expect_match "named" '"field":"events\[0\]\.keys".*|bogus' "$BODY"
	expect_match "the key named" 'bogus' "$BODY"
	api POST /v1/sandboxes/d/input -d '{"events":[{"type":"text","text":"ok"},{"type":"click","x":640,"y":1}]}'
	expect_eq "off the screen" 400 "$CODE"
	expect_match "named" '"field":"events\[1\]\.x"' "$BODY"
	api POST /v1/sandboxes/d/input -d '{"events":[{"type":"wave"}]}'
	expect_eq "unknown type" 400 "$CODE"
	expect_match "named" '"field":"events\[0\]\.type"' "$BODY"
	api POST /v1/sandboxes/d/input -d '{"events":[]}'
	expect_eq "no events" 400 "$CODE"
	api POST /v1/sandboxes/d/input -d '{"events":[{"type":"text","text":"é"}]}'
	expect_eq "no such key" 400 "$CODE"
	expect_match "named" '"field":"events\[0\]\.text"' "$BODY"
	api POST /v1/sandboxes/d/pause
	expect_eq "pause" 200 "$CODE"
	shot d "" "$S/paused.png"
	expect_eq "a paused sandbox's screenshot" 200 "$CODE"
	# Display and non-display sandboxes never share a template.
	expect_match "a template with a screen" 'virtio-gpu-pci,xres=640,yres=480' \
	    "$(cat "$XDG_CACHE_HOME"/qsup/templates/*.shape)"
	grep -L virtio-gpu "$XDG_CACHE_HOME"/qsup/templates/*.shape | grep -q . ||
	    fail "no template without a screen"
	api DELETE /v1/sandboxes/plain
	api GET /v1/sandboxes/plain/screenshot
	expect_eq "a deleted sandbox" 404 "$CODE"
	api DELETE /v1/sandboxes/d
	serve_stop
}

# A screenshot or input under way when the sandbox's QEMU dies is
# answered (200 if QEMU answered first, else 409), never left hanging:
# the monitor may be freed with the QEMU reaped before its end is read.
test_qemu_dies_under_a_call() {
	local i pid spid ipid scode icode
	serve_start
	for i in 1 2 3; do
		create d$i "$DISPLAY_SETTINGS"
		pid=$(pgrep -P "$SERVE_PID" -f -- "-name qsup:$XDG_RUNTIME_DIR/qsup/sb-")
		[ "$(wc -w <<<"$pid")" = 1 ] || { fail "d$i's QEMU: '$pid'"; break; }
		curl -sS -m 30 --unix-socket "$SOCK" -o "$S/sbody" -w '%{http_code}' \
		    -H "Authorization: Bearer $TOKEN" \
		    "http://qsup/v1/sandboxes/d$i/screenshot" >"$S/scode" 2>/dev/null &
		spid=$!
		curl -sS -m 30 --unix-socket "$SOCK" -o "$S/ibody" -w '%{http_code}' \
		    -H "Authorization: Bearer $TOKEN" \
		    -d '{"events":[{"type":"text","text":"abcdefgh"}]}' \
		    "http://qsup/v1/sandboxes/d$i/input" >"$S/icode" 2>/dev/null &
		ipid=$!
		kill -9 "$pid"
		wait "$spid" "$ipid"
		scode=$(cat "$S/scode") icode=$(cat "$S/icode")
		[[ $scode == 200 || $scode == 409 ]] ||
		    fail "round $i: the screenshot got '$scode' (000: no answer in 30 s): $(head -c 300 "$S/sbody")"
		[[ $icode == 200 || $icode == 409 ]] ||
		    fail "round $i: the input got '$icode' (000: no answer in 30 s): $(head -c 300 "$S/ibody")"
		api DELETE /v1/sandboxes/d$i
	done
	serve_stop
}

for t in ${TESTS:-test_screenshot_pixels test_input_keys_and_click \
    test_mcp_tools test_refused test_qemu_dies_under_a_call test_desktop}; do
	run_test "$t"
done
finish
