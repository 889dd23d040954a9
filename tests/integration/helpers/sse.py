#!/usr/bin/env python3
"""Read an exec's event stream (as curl -N writes it) and show it.

  sse.py FILE [--out OUT] [--err ERR]

Writes the decoded stdout and stderr events to OUT and ERR (default: this
process's own), then prints one line: the exit event's JSON, or
"no-exit" when the stream had none. "--id" prints the start event's id
instead, as soon as it is there (waiting for the file and for it while the
file grows).
"""
import base64
import json
import sys
import time


def events(text):
    name, data = None, []
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if line == "":
            if name is not None or data:
                yield name or "message", "\n".join(data)
            name, data = None, []
        elif line.startswith(":"):
            continue
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].lstrip(" ") if line[5:6] == " " else line[5:])


def main():
    args = sys.argv[1:]
    path = args.pop(0)
    out, err, want_id = None, None, False
    while args:
        a = args.pop(0)
        if a == "--out":
            out = args.pop(0)
        elif a == "--err":
            err = args.pop(0)
        elif a == "--id":
            want_id = True
    if want_id:
        for _ in range(600):
            # The file is made by a shell redirection in the background,
            # which may not have run yet.
            try:
                with open(path, errors="replace") as f:
                    text = f.read()
            except FileNotFoundError:
                text = ""
            for name, data in events(text):
                if name == "start":
                    print(json.loads(data)["id"])
                    return 0
            time.sleep(0.05)
        print("no-start")
        return 1
    with open(path, "rb") as f:
        text = f.read().decode("latin-1")
    o = open(out, "wb") if out else sys.stdout.buffer
    e = open(err, "wb") if err else sys.stderr.buffer
    exit_line = "no-exit"
    for name, data in events(text):
        if name == "stdout":
            o.write(base64.b64decode(data))
        elif name == "stderr":
            e.write(base64.b64decode(data))
        elif name == "exit":
            exit_line = data
    o.flush()
    e.flush()
    print(exit_line)
    return 0


sys.exit(main())
