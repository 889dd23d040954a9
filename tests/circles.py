#!/usr/bin/env python3
"""Circles of calls between the files of one folder.

  circles.py ROOT FOLDER...

Within a folder, file A leans on file B when A names a function or
variable that B defines and exports (not static). The files of a folder
should lean one way only, a layer at a time, as the folders do: a file
that leans on another which leans back on it (directly or round a longer
loop) is a circle, and each is printed as

  FOLDER: a circle of N files: a.c -> b.c -> a.c (a.c uses b_x; b.c uses a_y)

House style writes every function's name at column 0 with its return
type on the line above, so definitions are found without a compiler.
Exit status 1 if any circle was printed.
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
FUNC_DEF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\(")
# A global at column 0: "type name[...] = ..." or "type name;".
VAR_DEF = re.compile(r"^(?!static\b|extern\b|typedef\b|return\b)"
                     r"[A-Za-z_][\w \t\*]*?[\s\*]([A-Za-z_]\w*)\s*"
                     r"(\[[^\]]*\])?\s*(=|;)")


def strip(text):
    """The text without comments, strings and character constants."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j == -1 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j == -1 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def exported(lines):
    """Names a file defines for others: functions and globals, not static."""
    names = set()
    for k, line in enumerate(lines):
        m = FUNC_DEF.match(line)
        if m and k > 0:
            prev = lines[k - 1]
            if not prev.startswith("static") and \
                    re.match(r"^[A-Za-z_]", prev) and \
                    not prev.rstrip().endswith((";", ",", "{")):
                names.add(m.group(1))
            continue
        if line.startswith(("static", "extern", "typedef", "#")) or \
                "(" in line.split("=")[0]:
            continue
        m = VAR_DEF.match(line)
        if m:
            names.add(m.group(1))
    # Each program's own entry point: no file calls another's (guest/
    # builds two programs, the agent and mkcpio).
    names.discard("main")
    return names


def circles(root, folder):
    d = os.path.join(root, folder)
    files = sorted(f for f in os.listdir(d) if f.endswith(".c"))
    text, defs = {}, {}
    for f in files:
        with open(os.path.join(d, f), errors="replace") as fh:
            text[f] = strip(fh.read())
        defs[f] = exported(text[f].split("\n"))
    edges = {f: {} for f in files}
    for a in files:
        used = set(IDENT.findall(text[a]))
        for b in files:
            if a != b and used & defs[b]:
                edges[a][b] = sorted(used & defs[b])
    # Tarjan's strongly connected components.
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in files:
        if v not in index:
            visit(v)
    return [(comp, loop(comp, edges)) for comp in found]


def loop(comp, edges):
    """One loop through the component's first file, for the message."""
    start = comp[0]
    inside = set(comp)
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(edges[v]):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp


def main():
    root, folders = sys.argv[1], sys.argv[2:]
    bad = 0
    for folder in folders:
        if not os.path.isdir(os.path.join(root, folder)):
            continue
        for comp, path in circles(root, folder):
            d = os.path.join(root, folder)
            edges = {}
            for f in path[:-1]:
                with open(os.path.join(d, f), errors="replace") as fh:
                    edges[f] = set(IDENT.findall(strip(fh.read())))
            why = []
            for a, b in zip(path, path[1:]):
                with open(os.path.join(d, b), errors="replace") as fh:
                    names = sorted(edges[a] & exported(
                        strip(fh.read()).split("\n")))
                why.append("%s uses %s" % (a, ", ".join(names[:3])))
            print("%s: a circle of %d files: %s (%s)" % (
                folder, len(comp), " -> ".join(path), "; ".join(why)))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
