#!/usr/bin/env python3
"""Every relative link of README.md and docs/*.md resolves: its file (or
directory) exists in the tree, and its anchor, "#x" or "FILE.md#x", is a
heading of that Markdown file by GitHub's slug rules (lower case, markup
and punctuation dropped but for "-" and "_", spaces to "-", a repeated
slug given "-1", "-2"...). Links with a scheme (https:, mailto:) are not
followed; links inside code spans and fenced blocks are not links. Each
broken one is named:

  BROKEN docs/images.md:12: speed.md#nowhere: no heading "nowhere" in docs/speed.md

  tests/docs/links.py [ROOT]     check ROOT (default: this tree)
  tests/docs/links.py --self-test
                                 check that a link to a missing file and
                                 one to a missing heading are caught
"""
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.realpath(__file__))
TREE = os.path.realpath(os.path.join(HERE, "..", ".."))

LINK = re.compile(r"(?<!\\)\[(?:[^\]\\]|\\.)*\]\(\s*<?([^()\s>]+)>?"
                  r"(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
CODE = re.compile(r"(`+).*?\1")


def pages(root):
    out = [os.path.join(root, "README.md")]
    d = os.path.join(root, "docs")
    if os.path.isdir(d):
        out += sorted(os.path.join(d, f) for f in os.listdir(d)
                      if f.endswith(".md"))
    return [p for p in out if os.path.isfile(p)]


def lines_outside_fences(text):
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, line


def slug(text):
    # What GitHub shows of the heading: links as their text, no markup.
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.replace("`", "")
    text = re.sub(r"<[^>]+>", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    text = text.replace("*", "")
    return text.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, out = {}, set()
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for _, line in lines_outside_fences(text):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            if s in seen:
                seen[s] += 1
                s = "%s-%d" % (s, seen[s])
            else:
                seen[s] = 0
            out.add(s)
        _anchors[path] = out
    return _anchors[path]


def check_link(root, page, target):
    """None if target, a link written in page, resolves; else why not."""
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
        return None
    path, _, anchor = target.partition("#")
    if path == "":
        dest = page
    elif path.startswith("/"):
        dest = os.path.join(root, path.lstrip("/"))
    else:
        dest = os.path.join(os.path.dirname(page), path)
    dest = os.path.normpath(dest)
    rel = os.path.relpath(dest, root)
    if rel.startswith(".."):
        return "%s is outside the tree" % rel
    if not os.path.exists(dest):
        return "no file %s" % rel
    if anchor == "":
        return None
    if not dest.endswith(".md") or not os.path.isfile(dest):
        return "an anchor into %s, which is not a Markdown file" % rel
    if anchor not in anchors(dest):
        return 'no heading "%s" in %s' % (anchor, rel)
    return None


def check(root, quiet=False):
    _anchors.clear()
    ok = bad = 0
    msgs = []
    for page in pages(root):
        with open(page, encoding="utf-8") as f:
            text = f.read()
        for n, line in lines_outside_fences(text):
            for m in LINK.finditer(CODE.sub(lambda c: " " * len(c.group(0)),
                                            line)):
                why = check_link(root, page, m.group(1))
                if why is None:
                    ok += 1
                    continue
                bad += 1
                msgs.append("BROKEN %s:%d: %s: %s" % (
                    os.path.relpath(page, root), n, m.group(1), why))
    if not pages(root):
        msgs.append("BROKEN no README.md nor docs/*.md in %s" % root)
        bad += 1
    msgs.append("docs links: %d passed, %d failed" % (ok, bad))
    if not quiet:
        print("\n".join(msgs))
    return bad == 0 and ok > 0, msgs


def self_test():
    passed = failed = 0

    def expect(cond, what):
        nonlocal passed, failed
        if cond:
            passed += 1
        else:
            failed += 1
            print("FAIL: " + what)

    tmp = tempfile.mkdtemp(prefix="qsup-doclinks.")
    try:
        # README.md and docs/ copied, the rest of the tree linked in.
        for name in os.listdir(TREE):
            src = os.path.join(TREE, name)
            if name in ("README.md", "docs"):
                if os.path.isdir(src):
                    shutil.copytree(src, os.path.join(tmp, name))
                else:
                    shutil.copy(src, os.path.join(tmp, name))
            elif name != ".git":
                os.symlink(src, os.path.join(tmp, name))
        base = check(TREE, quiet=True)
        copy = check(tmp, quiet=True)
        expect(base[1] == [m.replace(tmp, TREE) for m in copy[1]],
               "the copy and the tree differ: %s" % copy[1])

        page = os.path.join(tmp, "docs", "install.md")
        with open(page, encoding="utf-8") as f:
            orig = f.read()
        with open(page, "a", encoding="utf-8") as f:
            f.write("\nSee [nothing](no-such-page.md) and "
                    "[a heading](speed.md#no-such-heading), "
                    "[one here](#nor-here), but `[code](not-a-link.md)`.\n"
                    "\n```\n[fenced](not-a-link-either.md)\n```\n")
        ok, msgs = check(tmp, quiet=True)
        text = "\n".join(msgs)
        expect(not ok, "planted broken links were let through")
        expect("docs/install.md" in text and
               "no-such-page.md: no file docs/no-such-page.md" in text,
               "the missing file was not named: " + text)
        expect('speed.md#no-such-heading: no heading "no-such-heading" '
               "in docs/speed.md" in text,
               "the missing heading was not named: " + text)
        expect('#nor-here: no heading "nor-here" in docs/install.md'
               in text, "the missing local heading was not named: " + text)
        expect("not-a-link" not in text,
               "a link in code was checked: " + text)
        with open(page, "w", encoding="utf-8") as f:
            f.write(orig)

        # A README link to a missing file, and GitHub's slugs.
        readme = os.path.join(tmp, "README.md")
        with open(readme, "a", encoding="utf-8") as f:
            f.write("\n[gone](docs/gone.md)\n")
        ok, msgs = check(tmp, quiet=True)
        expect(not ok and any("README.md" in m and "docs/gone.md" in m
                              for m in msgs),
               "a README link to a missing page was not named: %s" % msgs)
        expect(slug("Booting the image's own kernel: `boot = \"image\"`")
               == "booting-the-images-own-kernel-boot--image",
               "slug of a heading with code and quotes")
        expect(slug("Pause, resume and time limits")
               == "pause-resume-and-time-limits", "slug with commas")
    finally:
        shutil.rmtree(tmp)
    print("%d passed, %d failed" % (passed, failed))
    return failed == 0


def main():
    if sys.argv[1:2] == ["--self-test"]:
        return 0 if self_test() else 1
    root = sys.argv[1] if len(sys.argv) > 1 else TREE
    ok, _ = check(os.path.realpath(root))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
