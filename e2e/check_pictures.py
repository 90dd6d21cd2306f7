#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks what `trainscope report --plot` and `trainscope timeline` drew of a job whose rank
SLOW computes slower from step ONSET (a 150-step job): in the SVG, SLOW's row after ONSET is red (its cells
above the step's median) while the other rows stay near white, the rank is marked, and
no cell is empty (every rank reported every step);
the compact timeline is at most a third of the full one; the filtered one holds only the
ranks and steps asked for.

usage: check_pictures.py PLOT.svg SLOW ONSET RANKS FULL.json COMPACT.json PART.json"""
import json
import sys
import xml.etree.ElementTree as ET


def redness(fill):
    r, b = int(fill[1:3], 16), int(fill[5:7], 16)
    return r - b  # > 0 above the median, < 0 below


def main():
    svg, slow, onset, ranks, full, compact, part = sys.argv[1:8]
    slow, onset, ranks = int(slow), int(onset), int(ranks)
    root = ET.parse(svg).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
    top, bottom = 48, 620 - 70
    # the map's cells: coloured, within the rows (not the legend under the axis)
    rects = [r for r in root.iter(ns + "rect") if r.get("fill", "").startswith("#")
             and len(r.get("fill")) == 7 and float(r.get("height")) < 100
             and top - 0.5 <= float(r.get("y")) < bottom]
    row_h = (bottom - top) / ranks
    # the heatmap's x range is the cells' own
    x0 = min(float(r.get("x")) for r in rects)
    x1 = max(float(r.get("x")) + float(r.get("width")) for r in rects)
    steps_x = lambda s: x0 + (x1 - x0) * s / 150

    def row_red(k, after):
        w = tot = 0.0
        for r in rects:
            y = float(r.get("y"))
            if abs(y - (top + k * row_h)) > 0.5:
                continue
            x, width = float(r.get("x")), float(r.get("width"))
            lo = max(x, steps_x(after))
            if x + width <= lo:
                continue
            part_w = x + width - lo
            w += part_w * redness(r.get("fill"))
            tot += part_w
        return w / tot if tot else 0.0

    slow_red = row_red(slow, onset + 5)
    others = sorted(row_red(k, onset + 5) for k in range(ranks) if k != slow)
    print("      plot: rank %d's row after step %d %.0f red, the others' median %.0f; marked: %s"
          % (slow, onset, slow_red, others[len(others) // 2], "rank %d:" % slow in texts))
    empty = sum(1 for r in rects if r.get("fill") == "#dddddd")  # every rank-step came
    print("      plot: %d cells without data" % empty)
    ok = slow_red > 60 and others[len(others) // 2] < 25 and ("rank %d:" % slow) in texts
    ok &= empty == 0
    sizes = [len(open(p, "rb").read()) for p in (full, compact)]
    print("      timeline: full %d bytes, compact %d bytes (%.2f)" % (sizes[0], sizes[1],
                                                                   sizes[1] / sizes[0]))
    ok &= sizes[1] * 3 <= sizes[0]
    ev = json.load(open(part))["traceEvents"]
    got = {(e["pid"], int(e["name"][5:])) for e in ev if e.get("ph") == "X"
           and e["name"].startswith("step ")}
    want = {(k, s) for k in (0, 1, 2, 3, slow) for s in range(10, 20)}
    print("      timeline --ranks 0-3,%d --steps 10:19: %d rank-steps, as asked: %s"
          % (slow, len(got), got == want))
    ok &= got == want
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
