# SPDX-License-Identifier: Apache-2.0
"""The in-run A/B's overhead (TRAINSCOPE_AB_STEPS=N): recording paused in blocks 1, 3, 5, ...
of N steps and on in blocks 0, 2, 4, ..., in one job. Each recorded block's median step time
over the mean of its two paused neighbours' is one ratio (a drift of the job's pace cancels);
the overhead is their mean less 1, with a 95 % interval from the t distribution over the
blocks.

  ab_inrun.py N SKIP FILE...   FILE: a rank's result JSON with "step_times" (entry i: step i,
                               None where unknown); SKIP: the first steps left out (warm-up,
                               compilation); each block's first 2 steps are left out too
                               (the switch's own step)."""
import json
import math
import statistics
import sys

# two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom; 1.96 past them
T975 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14,
        2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05,
        2.05, 2.04]


def blocks(times, n, skip):
    """{block: median step time} of the blocks wholly past skip."""
    out = {}
    for b in range(len(times) // n):
        lo = b * n
        if lo < skip:
            continue
        v = [t for t in times[lo + 2:lo + n] if t is not None]
        if len(v) >= n // 2:
            out[b] = statistics.median(v)
    return out


def overhead(times, n, skip):
    med = blocks(times, n, skip)
    ratios = [med[b] / ((med[b - 1] + med[b + 1]) / 2) for b in med
              if b % 2 == 0 and b - 1 in med and b + 1 in med]
    if len(ratios) < 3:
        return None
    m = statistics.mean(ratios)
    half = (T975[len(ratios) - 2] if len(ratios) - 1 <= len(T975) else 1.96) * \
        statistics.stdev(ratios) / math.sqrt(len(ratios))
    on = statistics.median(med[b] for b in med if b % 2 == 0)
    off = statistics.median(med[b] for b in med if b % 2 == 1)
    return {"pairs": len(ratios), "overhead_pct": 100 * (m - 1), "ci95_pct": 100 * half,
            "step_on_ms": 1e3 * on, "step_off_ms": 1e3 * off}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    n, skip = int(sys.argv[1]), int(sys.argv[2])
    bad = 0
    for path in sys.argv[3:]:
        try:
            r = json.load(open(path))
            res = overhead(r["step_times"], n, skip)
        except (OSError, ValueError, KeyError) as e:
            print("%s: %s" % (path, e))
            bad = 1
            continue
        if res is None:
            print("%s: fewer than 3 recorded blocks between paused ones" % path)
            bad = 1
            continue
        print("%s: %d blocks of %d steps paired, step %.2f ms recorded / %.2f ms paused, "
              "overhead %+.2f %% +- %.2f %% (95 %%)" % (path, res["pairs"], n,
                                                      res["step_on_ms"], res["step_off_ms"],
                                                      res["overhead_pct"], res["ci95_pct"]))
    sys.exit(bad)


if __name__ == "__main__":
    main()
