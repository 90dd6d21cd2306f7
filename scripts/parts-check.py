#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""make lint: the analyzer's parts keep their doors.

analysis/ is in parts (analysis/README.md): detect, sinks, ingest, state, and the
program (analysis/main*). A part includes only the parts ranked below it, so the
drawing of who includes whom has no circle; and a part's private headers (*_impl.h)
are included only by the files of that part. Exits 1 naming each wrong include."""
import os
import re
import subprocess
import sys

# a part may include the parts before it in this list, never one after it
RANK = ["detect", "sinks", "ingest", "state", "program"]
INC = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def part_of(path):
    d = path.split("/")
    if d[0] != "analysis":
        return None
    if len(d) == 2:
        return "program"
    return d[1] if d[1] in RANK else None


def resolve(src, name):
    """The repository path of include name from file src, or None (a system or
    common header)."""
    for cand in (os.path.join(os.path.dirname(src), name), name):
        cand = os.path.normpath(cand)
        if os.path.isfile(cand):
            return cand
    return None


def main():
    files = subprocess.check_output(["git", "ls-files", "*.c", "*.h"]).decode().split()
    bad = []
    for f in files:
        src = open(f, encoding="utf-8", errors="replace").read()
        mine = part_of(f)
        for name in INC.findall(src):
            h = resolve(f, name)
            theirs = part_of(h) if h else None
            if not theirs:
                continue
            if h.endswith("_impl.h") and os.path.dirname(h) != os.path.dirname(f):
                bad.append(f"{f}: includes {h}, private to analysis/{theirs}")
            elif mine and RANK.index(theirs) > RANK.index(mine):
                bad.append(f"{f}: part {mine} includes {h} of part {theirs}, above it")
    for b in bad:
        print("parts-check:", b, file=sys.stderr)
    if bad:
        return 1
    print(f"parts-check: analysis/ parts include downward only ({' < '.join(RANK)}), "
          "private headers kept")
    return 0


if __name__ == "__main__":
    sys.exit(main())
