#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""docs-links.py FILE.md...: every relative link of the given Markdown files resolves:
the file or folder exists (relative to the linking file), and a #anchor names a heading
of the Markdown file it points to (GitHub's anchors: lowercased, punctuation dropped,
spaces made '-', repeats numbered). Links in code blocks and code spans are not links;
http(s) and mailto links are not checked. Exit status 1 with one line per broken link."""
import os
import re
import sys

LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"\!\[[^\]]*\]\(\s*<?([^)\s>]+)>?\s*\)")


def prose_lines(text):
    """(line number, line) outside fenced code blocks, code spans blanked."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```|~~~)", line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            yield n, re.sub(r"`[^`]*`", lambda c: " " * len(c.group(0)), line)


def slug(heading):
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    h = h.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


_anchors = {}


def anchors(path):
    if path not in _anchors:
        seen, got = {}, set()
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        fence = None
        for line in text.split("\n"):
            m = re.match(r"^\s*(```|~~~)", line)
            if m:
                fence = m.group(1) if fence is None else (None if m.group(1) == fence else fence)
                continue
            h = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line) if fence is None else None
            if not h:
                continue
            base = slug(h.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            got.add(base if n == 0 else "%s-%d" % (base, n))
        for a in re.findall(r'<a\s+(?:name|id)="([^"]+)"', text):
            got.add(a)
        _anchors[path] = got
    return _anchors[path]


def check(md):
    bad = []
    with open(md, encoding="utf-8") as fh:
        text = fh.read()
    for n, line in prose_lines(text):
        for target in LINK.findall(line) + IMAGE.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(md), path)) if path else md
            if not os.path.exists(dest):
                bad.append("%s:%d: %s: no such file" % (md, n, target))
                continue
            if frag and dest.endswith(".md") and frag not in anchors(dest):
                bad.append("%s:%d: %s: no heading #%s in %s" % (md, n, target, frag, dest))
    return bad


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    bad = []
    for md in argv[1:]:
        bad += check(md)
    for b in bad:
        print("docs-check: broken link %s" % b, file=sys.stderr)
    if bad:
        return 1
    print("docs-check: every relative link of %d files resolves" % (len(argv) - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
