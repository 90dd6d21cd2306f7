#!/usr/bin/env python3
"""Asserts what a report says: check_report.py REPORT.json healthy | RANK CAUSE

healthy: state Healthy and no rank was ever alarmed during the run.
RANK CAUSE: state FailSlow, exactly that rank named with that cause, and no other rank
was ever alarmed during the run."""
import json
import sys


def main():
    path, want = sys.argv[1], sys.argv[2:]
    rep = json.load(open(path))
    st = rep["status"]
    named = sorted((s["rank"], s["cause"]) for s in st["slowRanks"])
    ever = rep["history"]["ranksEverAlarmed"]
    where = "%s: state %s, slow %s, ever alarmed %s" % (path, st["state"], named, ever)
    if want == ["healthy"]:
        ok = st["state"] == "Healthy" and not named and not ever and rep["resultCode"] == 200
    else:
        rank, cause = int(want[0]), want[1]
        ok = st["state"] == "FailSlow" and named == [(rank, cause)] and ever == [rank] \
            and rep["resultCode"] == 201 and rep["abnormalDetail"][0]["objectId"] == str(rank)
    print(("ok    " if ok else "FAIL  ") + where)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
