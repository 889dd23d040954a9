#!/usr/bin/env bash
# qsup mcp over a pipe, driven by python3 as an MCP client would: the
# handshake, the seventeen tools and their schemas (the five for computer
# use act on a sandbox's screen: screen_test.sh calls those), each other
# tool called on a real guest, JSON-RPC's errors; on a running qsup serve,
# and on one of its own that it starts and stops, leaving nothing behind.
. "$(dirname "$(readlink -f "$0")")/lib.sh"

# The MCP session: prints "ok" lines, and "FAIL ..." for each failure.
mcp_session() {
	python3 - "$@" <<-'EOF'
	import json, subprocess, sys
	qsup, name = sys.argv[1], sys.argv[2]
	p = subprocess.Popen([qsup, "mcp"], stdin=subprocess.PIPE,
	    stdout=subprocess.PIPE, bufsize=0)
	fails = []
	def check(what, cond, got=None):
	    if not cond:
	        fails.append("%s: %s" % (what, json.dumps(got)[:400]))
	n = [0]
	def send(obj):
	    p.stdin.write((json.dumps(obj) + "\n").encode())
	def rpc(method, params=None):
	    n[0] += 1
	    msg = {"jsonrpc": "2.0", "id": n[0], "method": method}
	    if params is not None:
	        msg["params"] = params
	    send(msg)
	    r = json.loads(p.stdout.readline())
	    check("%s: id" % method, r.get("id") == n[0], r)
	    return r
	def tool(tname, args):
	    r = rpc("tools/call", {"name": tname, "arguments": args})
	    res = r.get("result") or {}
	    text = "".join(c.get("text", "") for c in res.get("content", []))
	    return res.get("isError"), text, r

	r = rpc("initialize", {"protocolVersion": "2024-11-05",
	    "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
	check("initialize", r.get("result", {}).get("protocolVersion") ==
	    "2024-11-05" and "tools" in r["result"].get("capabilities", {}), r)
	send({"jsonrpc": "2.0", "method": "notifications/initialized"})
	r = rpc("ping")
	check("ping", r.get("result") == {}, r)
	r = rpc("tools/list")
	tools = {t["name"]: t for t in r.get("result", {}).get("tools", [])}
	check("seventeen tools", sorted(tools) == sorted(["sandbox_create",
	    "sandbox_exec", "sandbox_file_write", "sandbox_file_read",
	    "sandbox_list", "sandbox_destroy", "sandbox_pause",
	    "sandbox_resume", "sandbox_snapshot", "sandbox_snapshot_list",
	    "sandbox_snapshot_delete", "sandbox_fork", "screenshot", "click",
	    "type", "key", "scroll"]), r)
	for t in tools.values():
	    s = t.get("inputSchema", {})
	    check("%s's schema" % t["name"], s.get("type") == "object" and
	        isinstance(s.get("properties"), dict) and t.get("description"), t)
	check("exec's schema", tools["sandbox_exec"]["inputSchema"]
	    .get("required") == ["name", "argv"], tools["sandbox_exec"])

	err, text, r = tool("sandbox_create", {"name": name})
	check("create", err is False and json.loads(text)["name"] == name and
	    json.loads(text)["state"] == "ready", r)
	err, text, r = tool("sandbox_list", {})
	check("list", err is False and name in [s["name"] for s in
	    json.loads(text)["sandboxes"]], r)
	err, text, r = tool("sandbox_exec", {"name": name, "argv": ["sh", "-c",
	    "cat; echo to-err >&2; printf '\\377'; exit 3"],
	    "stdin": "some input\n", "env": {"A": "1"}, "cwd": "/tmp"})
	out = json.loads(text) if not err else {}
	check("exec", err is False and out.get("exit_code") == 3 and
	    out.get("status") == 3 and out.get("stdout") ==
	    "some input\n\ufffd" and out.get("stderr") == "to-err\n", r)
	err, text, r = tool("sandbox_exec", {"name": name, "argv": ["sh", "-c",
	    "echo \"$A $(pwd)\"; kill -9 $$"], "env": {"A": "x"}, "cwd": "/tmp"})
	out = json.loads(text) if not err else {}
	check("exec: env, cwd, a signal", err is False and
	    out.get("stdout") == "x /tmp\n" and out.get("signal") == 9 and
	    out.get("exit_code") == 137, r)
	err, text, r = tool("sandbox_exec", {"name": name, "argv": ["sh", "-c",
	    "head -c 3000000 /dev/zero"]})
	out = json.loads(text) if not err else {}
	check("exec: output bounded", err is False and
	    len(out.get("stdout", "")) == 1048576 and
	    out.get("stdout_truncated") is True, r)
	err, text, r = tool("sandbox_exec", {"name": name, "argv": ["sleep",
	    "30"], "timeout": 1})
	out = json.loads(text) if not err else {}
	check("exec: timeout", out.get("timed_out") is True and
	    out.get("exit_code") == 124, r)
	err, text, r = tool("sandbox_file_write", {"name": name, "path":
	    "/tmp/f.sh", "content": "#!/bin/sh\necho h\u00e9\n", "mode": "0755"})
	check("file_write", err is False and json.loads(text)["size"] == 19, r)
	err, text, r = tool("sandbox_exec", {"name": name, "argv":
	    ["/tmp/f.sh"]})
	check("the file written runs", json.loads(text).get("stdout") ==
	    "h\u00e9\n", r)
	err, text, r = tool("sandbox_file_read", {"name": name, "path":
	    "/tmp/f.sh"})
	check("file_read", err is False and text == "#!/bin/sh\necho h\u00e9\n", r)
	err, text, r = tool("sandbox_file_write", {"name": name, "path":
	    "/tmp/b", "content": "AP8A", "encoding": "base64"})
	check("file_write base64", err is False, r)
	err, text, r = tool("sandbox_file_read", {"name": name, "path": "/tmp/b"})
	check("file_read of bytes as text: refused", err is True, r)
	err, text, r = tool("sandbox_file_read", {"name": name, "path": "/tmp/b",
	    "encoding": "base64"})
	check("file_read base64", err is False and text == "AP8A", r)
	err, text, r = tool("sandbox_file_read", {"name": name, "path":
	    "/nonexistent"})
	check("file_read of a missing file", err is True and text, r)
	err, text, r = tool("sandbox_pause", {"name": name})
	check("pause", err is False and json.loads(text)["state"] == "paused", r)
	err, text, r = tool("sandbox_exec", {"name": name, "argv": ["true"]})
	check("exec while paused: refused", err is True and "paused" in text, r)
	err, text, r = tool("sandbox_resume", {"name": name})
	check("resume", err is False and json.loads(text)["state"] == "ready", r)
	err, text, r = tool("sandbox_exec", {"name": name, "argv": ["cat",
	    "/tmp/f.sh"]})
	check("its file after the resume", json.loads(text).get("stdout") ==
	    "#!/bin/sh\necho h\u00e9\n", r)

	# JSON-RPC's errors, and the session goes on after them.
	r = rpc("no/such/method")
	check("a bad method", r.get("error", {}).get("code") == -32601, r)
	r = rpc("tools/call", {"name": "sandbox_exec", "arguments":
	    {"name": name}})
	check("a missing argument", r.get("error", {}).get("code") == -32602, r)
	r = rpc("tools/call", {"name": "nope", "arguments": {}})
	check("an unknown tool", r.get("error", {}).get("code") == -32602, r)
	p.stdin.write(b"{not json\n")
	r = json.loads(p.stdout.readline())
	check("a parse error", r.get("error", {}).get("code") == -32700 and
	    r.get("id") is None, r)

	err, text, r = tool("sandbox_destroy", {"name": "no-such-box"})
	check("destroy of no sandbox", err is True, r)
	if "--keep" not in sys.argv:
	    err, text, r = tool("sandbox_destroy", {"name": name})
	    check("destroy", err is False and json.loads(text).get("state") ==
	        "deleted", r)
	    err, text, r = tool("sandbox_list", {})
	    check("list after destroy", err is False and
	        json.loads(text)["sandboxes"] == [], r)
	p.stdin.close()
	rc = p.wait(timeout=120)
	check("qsup mcp's exit status", rc == 0, rc)
	for f in fails:
	    print("FAIL " + f)
	print("ok" if not fails else "failed")
	EOF
}

# A server of this test's own, as client_test.sh starts it.
serve_start() {
	SRV=$T_TMP/$1/srv
	mkdir -p "$SRV"
	chmod 700 "$SRV"
	export QSUP_HOST=unix:$SRV/s.sock QSUP_TOKEN_FILE=$SRV/token
	serve_launch "$SRV/s.sock" "$SRV/token" "$SRV/log"
	local rc=$?
	SRV_PID=$SERVE_PID
	[ $rc != 0 ] || return 0
	fail "qsup serve did not answer: $(tail -5 "$SRV/log")"
	return 1
}

serve_stop() {
	kill -TERM $SRV_PID
	wait $SRV_PID
	expect_eq "qsup serve's exit status" 0 $?
	unset QSUP_HOST QSUP_TOKEN_FILE
}

# On a running server: its sandbox outlives the session (--keep).
test_mcp_with_server() {
	local out
	serve_start with || return
	out=$(mcp_session "$QSUP" m1 --keep 2>"$T_TMP/err")
	grep '^FAIL' <<<"$out" | while read -r l; do echo "    $l"; done
	expect_eq "the session" ok "$(tail -n 1 <<<"$out")"
	expect_match "the server's sandbox stays" '^m1 +ready' "$("$QSUP" ls)"
	"$QSUP" rm m1 >/dev/null
	serve_stop
}

# With no server there: one of its own, gone with the session.
test_mcp_own_server() {
	local out
	export QSUP_HOST=unix:$T_TMP/none.sock TMPDIR=$T_TMP/own-tmp
	mkdir -p "$TMPDIR"
	out=$(mcp_session "$QSUP" m2 --keep 2>"$T_TMP/err")
	grep '^FAIL' <<<"$out" | while read -r l; do echo "    $l"; done
	expect_eq "the session" ok "$(tail -n 1 <<<"$out")"
	expect_eq "its private directory removed" "" "$(ls -A "$TMPDIR")"
	left=$(pgrep -f "qsup serve --listen unix:$TMPDIR" || true)
	expect_eq "its server stopped" "" "$left"
	unset QSUP_HOST TMPDIR
}

# SIGTERM with a sandbox running: its own server stopped, nothing left.
test_mcp_sigterm() {
	local pid i
	export QSUP_HOST=unix:$T_TMP/none.sock TMPDIR=$T_TMP/term-tmp
	mkdir -p "$TMPDIR"
	rm -f "$T_TMP/fifo"
	mkfifo "$T_TMP/fifo"
	"$QSUP" mcp <"$T_TMP/fifo" >"$T_TMP/mcp.out" 2>"$T_TMP/mcp.err" &
	pid=$!
	exec 3>"$T_TMP/fifo"
	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_create","arguments":{"name":"t1"}}}' >&3
	for i in $(seq 1 1200); do
		grep -q '"id":1' "$T_TMP/mcp.out" 2>/dev/null && break
		sleep 0.05
	done
	expect_match "created" '\\"state\\":\\"ready\\"' "$(cat "$T_TMP/mcp.out")"
	kill -TERM $pid
	wait $pid
	expect_eq "qsup mcp's status after SIGTERM" 0 $?
	exec 3>&-
	expect_eq "its private directory removed" "" "$(ls -A "$TMPDIR")"
	unset QSUP_HOST TMPDIR
}

for t in $(declare -F | awk '$3 ~ /^test_/ {print $3}'); do
	run_test "$t"
done
finish
