#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_timeline.py TRACE.json RANKS SLOW_RANK HOG: the trace has every rank's steps
and phases, the host counters, and the hog's preemption falls mostly on the slow rank
(others may meet it when the scheduler moves them onto its core)."""
import json
import sys


def main():
    path, ranks, slow, hog = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    ev = json.load(open(path))["traceEvents"]
    steps = {e["pid"] for e in ev if e.get("ph") == "X" and e["name"].startswith("step ")}
    phases = {e["name"] for e in ev if e.get("ph") == "X" and e.get("tid") == 2}
    counters = [e for e in ev if e.get("ph") == "C"]
    blamed = {}
    for e in ev:
        if e.get("ph") == "X" and e.get("tid") == 3:
            for p in e["args"]["preemptors"]:
                if p["comm"] == hog:
                    blamed[e["pid"]] = blamed.get(e["pid"], 0) + p["ms"]
    share = blamed.get(slow, 0) / max(sum(blamed.values()), 1e-9)
    ok = steps == set(range(ranks)) and {"dataloader", "compute", "collective"} <= phases \
        and counters and share > 0.5
    print("%s  %s: steps of ranks %s, phases %s, %d counters, %.0f%% of %s's preemption on "
          "rank %d" % ("ok   " if ok else "FAIL ", path, sorted(steps), sorted(phases),
                        len(counters), 100 * share, hog, slow))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
