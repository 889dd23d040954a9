#!/usr/bin/env python3
"""Print a block of a README's "## Example" section, as it is written.

  readme_example.py README LANG

LANG is the fence's language: "python" for the example, "text" for the
output it says the example prints (the first such block after the
example). Exit 1, saying why, when the section or the block is missing.
"""
import re
import sys


def main():
    path, lang = sys.argv[1], sys.argv[2]
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^## Example\n(.*?)(?=^## |\Z)", text, re.S | re.M)
    if m is None:
        print("%s: no \"## Example\" section" % path, file=sys.stderr)
        return 1
    section = m.group(1)
    code = re.search(r"^```python\n(.*?)^```$", section, re.S | re.M)
    if code is None:
        print("%s: no python block in its example" % path, file=sys.stderr)
        return 1
    if lang == "python":
        sys.stdout.write(code.group(1))
        return 0
    block = re.compile(r"^```%s\n(.*?)^```$" % re.escape(lang), re.S | re.M)
    out = block.search(section, code.end())
    if out is None:
        print("%s: no %s block after its example" % (path, lang),
              file=sys.stderr)
        return 1
    sys.stdout.write(out.group(1))
    return 0


sys.exit(main())
