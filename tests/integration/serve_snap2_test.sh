#!/usr/bin/env bash
# "qsup serve"'s snapshots of format 2: a sandbox restored from a
# shared-RAM template is saved as the pages its guest changed, its
# devices and the template's RAM file pinned (a hard link), so the
# snapshot on disk is far smaller than the guest's RAM and a restore of
# it still goes on from where the source was after its template was
# removed and rebuilt; without the pinned file, the restore is refused
# naming it. A sandbox of a format 1 template keeps format 1.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve_lib.sh"

test_format2_small_and_pinned() {
	local n0 snap ram rundirs sum
	fresh_cache snap2
	serve_start
	# The first start builds the template; the second restores it.
	create w
	api DELETE /v1/sandboxes/w
	create a
	expect_match "a restored its template" '"start":"warm"' "$BODY"
	counting a
	ask a
	n0=$N
	api POST /v1/sandboxes/a/snapshots -d '{"name":"s1"}'
	expect_eq "snapshot" 201 "$CODE"
	expect_match "of format 2" '"format":2' "$BODY"
	ram=$(( $(jq -r .memory_mib <<<"$BODY") * 1048576 ))
	[ "$(jq -r .size_bytes <<<"$BODY")" -lt $((ram / 4)) ] ||
	    fail "a format 2 snapshot of $(jq -r .size_bytes <<<"$BODY") bytes, the guest's RAM $ram"
	snap=$XDG_CACHE_HOME/qsup/snapshots/s1
	[ "$(du -B1 -s --exclude=tpl.ram "$snap" | cut -f1)" -lt $((ram / 4)) ] ||
	    fail "its files take $(du -B1 -s --exclude=tpl.ram "$snap") bytes on disk"
	[ "$(stat -c %s "$snap/ram.pages")" -lt "$ram" ] ||
	    fail "its pages: $(stat -c %s "$snap/ram.pages") bytes"
	expect_eq "the template's RAM file pinned (the same inode)" \
	    "$(stat -c %i "$TPL"/*.ram)" "$(stat -c %i "$snap/tpl.ram")"
	sum=$(sha256sum <"$snap/tpl.ram")
	# The template removed, then rebuilt (a new RAM file) by a start.
	rm -f "$TPL"/*
	create x
	[ "$(stat -c %i "$TPL"/*.ram)" != "$(stat -c %i "$snap/tpl.ram")" ] ||
	    fail "the template was not rebuilt into a new file"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"s1"}'
	expect_eq "restore after the rebuild" 201 "$CODE"
	expect_match "started from a snapshot" '"start":"snapshot"' "$BODY"
	run_exec b '{"argv":["cat","/tmp/keep"]}'
	expect_eq "the file is there" kept "$OUT"
	ask b
	[ "$N" -ge "$n0" ] && [ "$N" -le $((n0 + 40)) ] ||
	    fail "the restored counter is $N, the source's was $n0 before the save"
	n0=$N
	sleep 1
	ask b
	[ "$N" -gt "$n0" ] || fail "the restored counter stood still: $n0 then $N"
	# A snapshot of a restored one is of format 2 too, and restores.
	api POST /v1/sandboxes/b/fork -d '{"count":1}'
	expect_eq "fork of the restored" 201 "$CODE"
	ask b-f1
	[ "$N" -ge "$n0" ] || fail "the fork's counter is $N, b's was $n0"
	n0=$N
	# The fork's hidden snapshot is gone: its RAM file has no name left,
	# so the next save keeps a copy of it.
	api POST /v1/sandboxes/b-f1/snapshots -d '{"name":"s2"}'
	expect_eq "snapshot of a fork" 201 "$CODE"
	expect_match "of format 2 too" '"format":2' "$BODY"
	[ "$(du -B1 "$snap/../s2/tpl.ram" | cut -f1)" -lt "$ram" ] ||
	    fail "its template's RAM file was copied whole: $(du -B1 "$snap/../s2/tpl.ram")"
	api POST /v1/sandboxes -d '{"name":"d","snapshot":"s2"}'
	expect_eq "restore of it" 201 "$CODE"
	ask d
	[ "$N" -ge "$n0" ] || fail "d's counter is $N, b-f1's was $n0"
	api DELETE /v1/sandboxes/d
	api DELETE /v1/snapshots/s2
	expect_eq "no restore wrote the pinned RAM file" "$sum" \
	    "$(sha256sum <"$snap/tpl.ram")"
	rundirs=$(ls "$XDG_RUNTIME_DIR/qsup" | wc -l)
	# Pages that are not the ones its map lists: refused, naming them.
	cp "$snap/ram.pages" "$S/pages"
	truncate -s -4096 "$snap/ram.pages"
	api POST /v1/sandboxes -d '{"name":"c","snapshot":"s1"}'
	[ "$CODE" -ge 400 ] || fail "a restore of short pages: $CODE $BODY"
	expect_match "the pages named" 'ram\.pages: [0-9]* bytes, its map lists' "$BODY"
	expect_eq "no sandbox c" gone "$(state c)"
	cp "$S/pages" "$snap/ram.pages"
	# Without its template's RAM file: refused, naming it, nothing left.
	rm "$snap/tpl.ram"
	api POST /v1/sandboxes -d '{"name":"c","snapshot":"s1"}'
	[ "$CODE" -ge 400 ] || fail "a restore without tpl.ram: $CODE $BODY"
	expect_match "the file named" 'tpl\.ram' "$BODY"
	expect_eq "no sandbox c" gone "$(state c)"
	expect_eq "no run directory left" "$rundirs" \
	    "$(ls "$XDG_RUNTIME_DIR/qsup" | wc -l)"
	for n in a b b-f1 x; do api DELETE /v1/sandboxes/$n; done
	api DELETE /v1/snapshots/s1
	serve_stop
}

test_format1_kept() {
	local n0
	fresh_cache snap1
	serve_start
	create w '"settings":{"template_ram":"stream"}'
	api DELETE /v1/sandboxes/w
	create a '"settings":{"template_ram":"stream"}'
	counting a
	ask a
	n0=$N
	api POST /v1/sandboxes/a/snapshots -d '{"name":"s1"}'
	expect_eq "snapshot" 201 "$CODE"
	expect_match "of format 1" '"format":1' "$BODY"
	[ ! -e "$XDG_CACHE_HOME/qsup/snapshots/s1/tpl.ram" ] ||
	    fail "a format 1 snapshot pinned a template"
	api POST /v1/sandboxes -d '{"name":"b","snapshot":"s1"}'
	expect_eq "restore" 201 "$CODE"
	ask b
	[ "$N" -ge "$n0" ] || fail "the restored counter is $N, the source's $n0"
	for n in a b; do api DELETE /v1/sandboxes/$n; done
	api DELETE /v1/snapshots/s1
	serve_stop
}

for t in ${TESTS:-test_format2_small_and_pinned test_format1_kept}; do
	run_test "$t"
done
finish
