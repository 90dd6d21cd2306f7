# SPDX-License-Identifier: Apache-2.0
"""A/A check of the in-run A/B's interval (ab_inrun.py), from the A/B's own recordings,
no GPU needed: the blocks of one side only (all paused, or all recorded) are strung
together and handed to the same estimator, as if every other one were the other side.
Both "sides" then ran alike, so the true overhead is 0: a calibrated 95 % interval
holds 0 in about 95 % of such estimates, and estimate / (half-width / 1.96) has a
spread near 1. Compared blocks are twice as far apart as in the A/B (two blocks, not
one), so the job's wander weighs more here than there.

A job's periodic event can bias this check where it does not bias the A/B: a step that
is slow every P steps lands, in the A/B's cycle of 2N steps, on every position that P
reaches modulo 2N, but in this check's cycle of 4N it may reach only one of the two
sides. The harness's own slow step every 100 steps (about +70 % on some Lightning runs)
does so at N = 3: 100 cycles over 3 of the A/B's 6 positions (one dropped, one of each
side) and over 3 of the 12 here (one dropped, two of one side). --trim leaves out each
step over F times its run's median, as a check of the intervals on the job's wander
alone.

  ab_aa.py --synthetic   the A/B's and this check's z on 40 synthetic jobs of 12,000
        steps with no overhead (wander: lag-1 correlation 0.9), without and with a
        pattern of +70 %, +15 %, +5 % on steps 0-2 of every 100
  ab_aa.py [--chunk STEPS] [--trim F] [--each] N SKIP FILE...
        N, SKIP, FILE: as ab_inrun.py; each file's steps past SKIP are cut into chunks of
        STEPS (default 3600: about 600 compared blocks a side; 0: the whole file), one
        estimate per chunk and side; the last, shorter chunk is left out. --each prints
        every estimate too."""
import math
import statistics
import sys
import json
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ab_inrun  # noqa: E402


def one_side(times, n, parity):
    """The steps of the blocks of one parity (0: recorded, 1: paused), in order."""
    out = []
    for b in range(parity, len(times) // n, 2):
        out.extend(times[b * n:(b + 1) * n])
    return out


def estimates(times, n, skip, chunk):
    """(side, overhead %, 95 % half-width %) of each chunk of each side."""
    lo = skip - skip % (2 * n) + (2 * n if skip % (2 * n) else 0)  # a recorded block's start
    chunk = chunk or len(times) - lo
    for c in range(lo, len(times) - chunk + 1, chunk):
        part = times[c:c + chunk]
        for parity, side in ((1, "paused"), (0, "recorded")):
            r = ab_inrun.overhead(one_side(part, n, parity), n, 0)
            if r is not None:
                yield side, r["overhead_pct"], r["ci95_pct"]


def main():
    args = sys.argv[1:]
    if args == ["--synthetic"]:
        return synthetic()
    chunk, trim, each = 3600, 0.0, False
    while args[:1] in (["--chunk"], ["--trim"], ["--each"]) and len(args) > 1:
        if args[0] == "--each":
            each, args = True, args[1:]
            continue
        if args[0] == "--chunk":
            chunk = int(args[1])
        else:
            trim = float(args[1])
        args = args[2:]
    if len(args) < 3:
        sys.exit(__doc__)
    n, skip = int(args[0]), int(args[1])
    chunk -= chunk % (2 * n) if chunk > 0 else 0
    rows = {"paused": [], "recorded": []}
    for path in args[2:]:
        try:
            times = json.load(open(path))["step_times"]
        except (OSError, ValueError, KeyError) as e:
            sys.exit("%s: %s" % (path, e))
        if trim > 0:
            limit = trim * statistics.median(t for t in times[skip:] if t is not None)
            times = [t if t is None or t <= limit else None for t in times]
        for side, m, half in estimates(times, n, skip, chunk):
            rows[side].append((m, half))
            if each:
                print("%s: %s %+.2f %% +- %.2f %%, z %+.1f" % (
                    path, side, m, half, m / (half / 1.96) if half > 0 else float("nan")))
    print("side       estimates  interval holds 0   spread of estimate/(half/1.96)   "
          "median half-width")
    for side, r in rows.items():
        if len(r) < 2:
            print("%-10s %d (too few)" % (side, len(r)))
            continue
        held = sum(abs(m) <= h for m, h in r)
        z = [m / (h / 1.96) for m, h in r if h > 0]
        print("%-10s %-10d %3d (%5.1f %%)       %.2f                             %.2f %%" % (
            side, len(r), held, 100 * held / len(r), statistics.pstdev(z),
            statistics.median(h for _, h in r)))
    allr = rows["paused"] + rows["recorded"]
    if allr:
        held = sum(abs(m) <= h for m, h in allr)
        lo, hi = wilson(held, len(allr))
        print("all        %-10d %3d (%5.1f %%; 95 %% %.1f-%.1f %%)" % (
            len(allr), held, 100 * held / len(allr), 100 * lo, 100 * hi))


def synthetic():
    import random
    rng = random.Random(1)
    for pattern in ({}, {0: 1.7, 1: 1.15, 2: 1.05}):
        ab, aa = [], []
        for _ in range(40):
            times, w = [], 0.0
            for i in range(12000):
                w = 0.9 * w + rng.gauss(0, 0.002)
                times.append(0.033 * (1 + w) * pattern.get(i % 100, 1.0) +
                             rng.gauss(0, 0.0003))
            r = ab_inrun.overhead(times, 3, 100)
            ab.append(r["overhead_pct"] / (r["ci95_pct"] / 1.96))
            aa.extend(m / (h / 1.96) for _, m, h in estimates(times, 3, 100, 0))
        print("%-16s A/B z: mean %+.2f, spread %.2f   A/A z: mean %+.2f, spread %.2f" % (
            "with the pattern" if pattern else "plain", statistics.mean(ab),
            statistics.pstdev(ab), statistics.mean(aa), statistics.pstdev(aa)))


def wilson(k, n):
    """The 95 % Wilson interval of a proportion k / n."""
    z, p = 1.96, k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return c - h, c + h


if __name__ == "__main__":
    main()
