#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Asserts what a report says:
check_report.py REPORT.json healthy | network SCOPE | RANK CAUSE [--passing]

healthy: state Healthy, no rank was ever alarmed and no network alarm raised during the run.
network SCOPE: state FailSlow with cause Communication over SCOPE (Job, Node, Link) and no
rank ever alarmed.
RANK CAUSE: state FailSlow, exactly that rank named with that cause, and no other rank
was ever alarmed during the run. --passing: other ranks may have been alarmed in passing
(said, never named): a CPU hog on a 2-core host preempts whichever ranks run on its core,
the faulted one most (the agent e2e: 58 % of the hog's preemption fell on rank 5, and
rank 6's run-queue alarm was raised at step 101 and cleared at 166)."""
import json
import sys


def main():
    path, want = sys.argv[1], sys.argv[2:]
    rep = json.load(open(path))
    st = rep["status"]
    named = sorted((s["rank"], s["cause"]) for s in st["slowRanks"])
    ever = rep["history"]["ranksEverAlarmed"]
    where = "%s: state %s, slow %s, ever alarmed %s" % (path, st["state"], named, ever)
    net = [e for e in rep["history"]["events"] if e.get("metric") == "collective"]
    where += ", network %s" % (st.get("network", {}).get("evidence", "none"))
    if want == ["healthy"]:
        ok = st["state"] == "Healthy" and not named and not ever and not net \
            and rep["resultCode"] == 200
    elif want[0] == "network":
        ok = st["state"] == "FailSlow" and st.get("network", {}).get("scope") == want[1] \
            and not named and not ever and rep["network"] and rep["resultCode"] == 201 \
            and "Communication" in st["conditions"][1]["message"]
    else:
        rank, cause = int(want[0]), want[1]
        alarmed = rank in ever if want[2:] == ["--passing"] else ever == [rank]
        ok = st["state"] == "FailSlow" and named == [(rank, cause)] and alarmed \
            and rep["resultCode"] == 201 and rep["abnormalDetail"][0]["objectId"] == str(rank)
    print(("ok    " if ok else "FAIL  ") + where)
    if not ok:
        for e in rep["history"]["events"]:
            print("      event: %s" % e.get("message"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
