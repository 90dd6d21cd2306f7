#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the device compute time per step that reached the analyzer, from a compact
timeline (trainscope timeline --compact): per rank, the steps with a device time and
their median and mean ms. Usage: compute_ms.py TRACE.json"""
import json
import statistics
import sys


def main(path):
    ranks = {}
    for e in json.load(open(path)).get("traceEvents", []):
        if e.get("ph") == "C" and e.get("name") == "ms per step":
            c = e["args"].get("compute", 0)
            if c > 0:
                ranks.setdefault(e["pid"], []).append(c)
    for r, v in sorted(ranks.items()):
        print("device compute, rank %d: %d steps, median %.3f ms, mean %.3f ms"
              % (r, len(v), statistics.median(v), statistics.fmean(v)))
    if not ranks:
        print("device compute: no step with a device time in %s" % path)


if __name__ == "__main__":
    main(sys.argv[1])
