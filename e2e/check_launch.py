#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Asserts a launcher test's report: check_launch.py REPORT.json ranked WORLD LAST_STEP |
unranked PROCESSES STEPS

ranked: the analyzer saw WORLD ranks, analysed every step to LAST_STEP with every rank's
step there (none missing), and says every process has a rank.
unranked PROCESSES STEPS: the RanksKnown condition is False, its message names the cure
(RANK), and the report lists PROCESSES processes that made STEPS steps each with no rank."""
import json
import sys


def main():
    try:
        rep = json.load(open(sys.argv[1]))
    except (OSError, ValueError) as e:
        print("FAIL  no report: %s" % e)
        return 1
    st, want = rep["status"], sys.argv[2]
    cond = {c["type"]: c for c in st["conditions"]}
    ranks = cond.get("RanksKnown", {})
    data = st.get("data", {})
    where = "world %s, last step %s, %s steps analysed, rank-steps missing %s, RanksKnown %s" % (
        st["worldSize"], st["lastStep"], st["stepsAnalyzed"], data.get("rankStepsMissing"),
        ranks.get("status"))
    if want == "ranked":
        world, last = int(sys.argv[3]), int(sys.argv[4])
        ok = st["worldSize"] == world and st["lastStep"] == last and \
            st["stepsAnalyzed"] == last + 1 and data.get("rankStepsMissing") == 0 and \
            data.get("rankStepsExpected") == world * (last + 1) and ranks.get("status") == "True"
    else:
        n, steps = int(sys.argv[3]), int(sys.argv[4])
        listed = st.get("unranked", [])
        where += ", %d unranked listed with %s steps: %s" % (
            len(listed), [u["steps"] for u in listed], ranks.get("message", ""))
        ok = ranks.get("status") == "False" and "RANK" in ranks.get("message", "") and \
            len(listed) == n and all(u["steps"] == steps for u in listed)
    print(("ok    " if ok else "FAIL  ") + where)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
