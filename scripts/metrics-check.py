#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks a program's /metrics against the families it declares (--print-metrics,
common/metric.h): every family served is declared with the same type and help, every
sample belongs to a served family and carries only the declared labels (a histogram's
buckets `le` too). Usage: metrics-check.py PROGRAM URL|FILE. Exit status: 0 agrees,
1 what differs on stderr, 2 the program or the scrape could not be read."""
import json
import re
import subprocess
import sys
import urllib.request

HIST = ("_bucket", "_sum", "_count")
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"')


def check(declared, text):
    bad, served, undeclared = [], {}, set()
    for line in text.splitlines():
        m = re.match(r"^# (HELP|TYPE) (\S+) ?(.*)$", line)
        if m:
            kind, name, rest = m.groups()
            d = declared.get(name)
            if d is None:
                bad.append("family %s is served but not declared" % name)
                undeclared.add(name)
                continue  # its samples: said once, here
            elif kind == "TYPE" and rest != d["type"]:
                bad.append("family %s: served as %s, declared %s" % (name, rest, d["type"]))
            elif kind == "HELP" and rest != d["help"]:
                bad.append("family %s: served help differs from its declaration" % name)
            served[name] = True
            continue
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            bad.append("not a sample: %r" % line)
            continue
        name, labels = m.group(1), m.group(2) or ""
        fam = name
        for suf in HIST:
            base = name[: -len(suf)]
            if name.endswith(suf) and declared.get(base, {}).get("type") == "histogram":
                fam = base
        if fam not in served:
            if not any(name == u or name.startswith(u + "_") for u in undeclared):
                bad.append("sample %s outside its family's HELP and TYPE" % name)
            continue
        allowed = set((declared[fam].get("labels") or "").split(",")) - {""}
        if name == fam + "_bucket":
            allowed.add("le")
        got = set(LABEL.findall(labels))
        if got != allowed:
            bad.append("sample %s: labels %s, declared %s"
                       % (name, sorted(got) or "none", sorted(allowed) or "none"))
    return sorted(set(bad)), len(served)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        out = subprocess.run([argv[1], "--print-metrics"], capture_output=True, text=True,
                             timeout=20, check=True).stdout
        declared = {m["name"]: m for m in json.loads(out)}
        if re.match(r"^https?://", argv[2]):
            text = urllib.request.urlopen(argv[2], timeout=5).read().decode()
        else:
            text = open(argv[2], encoding="utf-8").read()
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        print("metrics-check: %s" % e, file=sys.stderr)
        return 2
    bad, n = check(declared, text)
    for b in bad:
        print("metrics-check: %s: %s" % (argv[1], b), file=sys.stderr)
    if not bad:
        print("metrics-check: %s: %d families served, all as declared" % (argv[1], n))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
