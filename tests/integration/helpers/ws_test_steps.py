#!/usr/bin/env python3
"""ws_test.sh's exchanges with qsup serve's WebSockets, one per call:

    ws_test_steps.py SOCK TOKEN STEP SANDBOX [ARGS...]

Each prints what it saw, a line a thing: "status N", "protocol P",
"started ID", "stdout TEXT", "stderr TEXT", "exit code=N status=N",
"error MSG field=F", "saw TEXT", "rfb GREETING", "close CODE".
"""
import json
import sys
import time

sys.path.insert(0, __import__("os").path.dirname(__file__))
from ws_client import WS  # noqa: E402


def opts(args):
    o = {"token": True, "protocol": None, "origin": None, "version": "13",
         "path": "exec/ws", "stdin": None, "eof": False, "binary": False}
    rest = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--no-token":
            o["token"] = False
        elif a in ("--protocol", "--origin", "--version", "--path", "--stdin"):
            o[a[2:]] = args[i + 1]
            i += 1
        elif a == "--eof":
            o["eof"] = True
        elif a == "--binary":
            o["binary"] = True
        else:
            rest.append(a)
        i += 1
    return o, rest


def connect(sock, token, name, o):
    h = {"Sec-WebSocket-Version": o["version"]}
    if o["token"]:
        h["Authorization"] = "Bearer " + token
    if o["protocol"]:
        h["Sec-WebSocket-Protocol"] = o["protocol"]
    if o["origin"]:
        h["Origin"] = o["origin"]
    ws = WS.connect(sock, "/v1/sandboxes/%s/%s" % (name, o["path"]), h)
    print("status", ws.status)
    for line in ws.head.split("\r\n"):
        if line.lower().startswith("sec-websocket-protocol:"):
            print("protocol", line.split(":", 1)[1].strip())
    return ws


def frames(ws, until=None, limit=30):
    """Print frames until a close (or until(op, payload) says stop)."""
    t0 = time.time()
    while time.time() - t0 < limit:
        op, p = ws.recv()
        if op is None:
            print("eof")
            return
        if op == 8:
            code = p[0] << 8 | p[1] if len(p) >= 2 else 1005
            print("close", code)
            return
        if op == 1:
            m = json.loads(p)
            if m["type"] == "started":
                print("started", m["id"])
            elif m["type"] == "exit":
                print("exit code=%s status=%s" % (m["code"], m["status"]))
            elif m["type"] == "error":
                print("error", m["error"], "field=%s" % m.get("field"))
        elif op == 2:
            ch = {1: "stdout", 2: "stderr"}.get(p[0], "?")
            print(ch, p[1:].decode(errors="replace").strip())
        if until is not None and until(op, p):
            return


def main():
    sock, token, step, name = sys.argv[1:5]
    o, rest = opts(sys.argv[5:])
    if step == "display":
        o["path"] = "display"
    ws = connect(sock, token, name, o)
    if ws.status != 101:
        return
    if step == "handshake":
        ws.send(8, b"\x03\xe8")
        frames(ws)
    elif step == "command":
        ws.send(1, rest[0])
        if o["stdin"] is not None:
            ws.send(2, b"\x00" + o["stdin"].encode())
        if o["eof"]:
            ws.send(1, json.dumps({"type": "eof"}))
        frames(ws)
    elif step == "terminal":
        ws.send(1, json.dumps({"argv": ["/bin/sh"], "tty": True,
                               "rows": 24, "cols": 80}))
        out = b""

        def wait_for(text, limit=60):
            nonlocal out
            t0 = time.time()
            while text not in out and time.time() - t0 < limit:
                op, p = ws.recv()
                if op is None or op == 8:
                    break
                if op == 2:
                    out += p[1:]
            return text in out

        ws.send(2, b"\x00echo h''i\n")
        if wait_for(b"hi\r\n"):
            print("saw hi")
        ws.send(1, json.dumps({"type": "resize", "rows": 30, "cols": 100}))
        time.sleep(0.5)
        out = b""
        ws.send(2, b"\x00stty size\n")
        if wait_for(b"30 100"):
            print("saw 30 100")
        ws.send(2, b"\x00exit 5\n")
        frames(ws)
    elif step == "abandon":
        ws.send(1, rest[0])
        op, p = ws.recv()
        if op == 1:
            print("started", json.loads(p).get("id"))
        ws.close()
    elif step == "unmasked":
        ws.send(1, json.dumps({"argv": ["true"]}), mask=False)
        frames(ws)
    elif step == "oversize":
        ws.send(1, raw=b"\x82\xff" + (2 << 20).to_bytes(8, "big") + b"abcd")
        frames(ws)
    elif step == "first":
        if o["binary"]:
            ws.send(2, b"\x00hello")
        else:
            ws.send(1, rest[0])
        frames(ws)
    elif step == "display":
        op, p = ws.recv()
        print("rfb", p[:12].decode(errors="replace").strip() if op == 2 else op)
        ws.close()


if __name__ == "__main__":
    main()
