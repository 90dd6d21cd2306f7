# SPDX-License-Identifier: Apache-2.0
"""One row of bench/results/frameworks.md from a GPU job: frameworks_row.py JOB REPORT.json
TRACE.json OUT_PREFIX. The ranks the analyzer saw, each rank's steps in the stream (the
timeline) against the framework's own count (OUT_PREFIX.rank<N>.json), and the verdict
(slow ranks with cause and the step they were confirmed at)."""
import glob
import json
import sys


def main():
    job, rep_path, trace_path, prefix = sys.argv[1:5]
    st = json.load(open(rep_path))["status"]
    own = {}
    for p in glob.glob(prefix + ".rank*.json"):
        r = json.load(open(p))
        own[r["rank"]] = r["steps"]
    seen = {}
    try:
        for e in json.load(open(trace_path))["traceEvents"]:
            if e.get("ph") == "X" and e.get("tid") == 1 and str(e.get("name", "")).startswith("step "):
                seen[e["pid"]] = seen.get(e["pid"], 0) + 1
    except (OSError, ValueError):
        pass
    cond = {c["type"]: c["status"] for c in st["conditions"]}
    steps = ", ".join("rank %s %s/%s" % (k, seen.get(k, 0), own.get(k, "?"))
                      for k in sorted(set(own) | set(seen)))
    same = bool(own) and all(seen.get(k) == v for k, v in own.items())
    slow = "; ".join("rank %d %s (onset %s, confirmed %s)" % (s["rank"], s["cause"],
                     s.get("onsetStep"), s.get("confirmedStep")) for s in st["slowRanks"])
    net = st.get("network", {}).get("evidence")
    print("| %s | world %d, RanksKnown %s | %s | %s | %s | %s%s |" % (
        job, st["worldSize"], cond.get("RanksKnown"), steps,
        "equal" if same else "DIFFER", st["state"], slow or "no slow rank",
        "; network: " + net if net else ""))


if __name__ == "__main__":
    main()
