# SPDX-License-Identifier: Apache-2.0
"""The in-run A/B's overhead (TRAINSCOPE_AB_STEPS=N): recording paused in blocks 1, 3, 5, ...
of N steps and on in blocks 0, 2, 4, ..., in one job. Each recorded block's median step time
over the mean of its two paused neighbours' is one ratio (a drift of the job's pace cancels);
the overhead is their mean less 1. Its 95 % interval is Student's t over the ratios, or,
from 40 ratios on, the wider of that and the t interval over 20 batches of consecutive
ratios (neighbouring ratios share a paused block, and a job's pace wanders over tens of
steps, so the ratios are not independent; the last len % 20 ratios are in no batch).

Short blocks measure closer: a job's step times are correlated over some 10-50 steps
(lag-1 autocorrelation 0.7 on eager jobs), so the nearer the compared steps, the more of
that wander cancels.

  ab_inrun.py [--drop D] N SKIP FILE...   (--drop first, if given; several FILEs of one
        program, from separate runs: each, then pooled)
        FILE: a rank's result JSON with "step_times" (entry i: step i, None where unknown);
        each run's line is followed by its A/A check (ab_aa.py over the whole run);
        SKIP: the first steps left out (warm-up, compilation); each block's first D steps
        are left out too (the switch's own step; D: 2 for blocks of 6 or more, else 1)."""
import json
import math
import statistics
import sys

# two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom; 1.96 past them
T975 = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23, 2.20, 2.18, 2.16, 2.14,
        2.13, 2.12, 2.11, 2.10, 2.09, 2.09, 2.08, 2.07, 2.07, 2.06, 2.06, 2.06, 2.05, 2.05,
        2.05, 2.04]


BATCHES = 20


def default_drop(n):
    return 2 if n >= 6 else 1


def blocks(times, n, skip, drop):
    """{block: median step time} of the blocks wholly past skip, each without its first
    drop steps."""
    out = {}
    for b in range(len(times) // n):
        lo = b * n
        if lo < skip:
            continue
        v = [t for t in times[lo + drop:lo + n] if t is not None]
        if v and len(v) >= (n - drop) // 2:
            out[b] = statistics.median(v)
    return out


def t_half(values):
    """The 95 % interval's half-width of the mean of values (Student's t)."""
    k = len(values)
    return (T975[k - 2] if k - 1 <= len(T975) else 1.96) * statistics.stdev(values) / \
        math.sqrt(k)


def overhead(times, n, skip, drop=None):
    drop = default_drop(n) if drop is None else drop
    med = blocks(times, n, skip, drop)
    ratios = [med[b] / ((med[b - 1] + med[b + 1]) / 2) for b in sorted(med)
              if b % 2 == 0 and b - 1 in med and b + 1 in med]
    if len(ratios) < 3:
        return None
    m = statistics.mean(ratios)
    half = t_half(ratios)
    k = len(ratios) // BATCHES
    if k >= 2:
        half = max(half, t_half([statistics.mean(ratios[i * k:(i + 1) * k])
                                 for i in range(BATCHES)]))
    on = statistics.median(med[b] for b in med if b % 2 == 0)
    off = statistics.median(med[b] for b in med if b % 2 == 1)
    return {"pairs": len(ratios), "overhead_pct": 100 * (m - 1), "ci95_pct": 100 * half,
            "step_on_ms": 1e3 * on, "step_off_ms": 1e3 * off, "drop": drop}


def pooled(runs):
    """Runs of one program, each (overhead, 95 % half-width), as one estimate: the mean
    weighted by 1 / half-width^2 and its half-width (independent runs, the normal
    approximation each interval already makes at these sizes)."""
    if any(h <= 0 for _, h in runs):
        return float("nan"), float("nan")
    w = [1 / h ** 2 for _, h in runs]
    return sum(wi * m for wi, (m, _) in zip(w, runs)) / sum(w), 1 / math.sqrt(sum(w))


def aa_line(times, n, skip):
    """The run's own A/A check (ab_aa.py, whole run): each side's blocks alone, as if they
    alternated, where the true overhead is 0. A z past 1.96 says the job has a structure
    over the run that the A/B's interval may not hold (session 37's torch.compile run), or
    one that biases the check alone (ab_aa.py's help says when)."""
    import os
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ab_aa
    got = {side: (m, h) for side, m, h in ab_aa.estimates(times, n, skip, 0)}
    if len(got) < 2 or any(h <= 0 for _, h in got.values()):
        return "A/A check: too few blocks"
    z = {side: m / (h / 1.96) for side, (m, h) in got.items()}
    verdict = ("both hold 0" if all(abs(v) <= 1.96 for v in z.values()) else
               "a miss: the interval above may be too narrow for this job (largest z %.1f)" %
               max(abs(v) for v in z.values()))
    return "A/A check (each side against itself): paused %+.2f %% (z %+.1f), recorded " \
        "%+.2f %% (z %+.1f): %s" % (got["paused"][0], z["paused"], got["recorded"][0],
                                   z["recorded"], verdict)


def main():
    args = sys.argv[1:]
    drop = None
    if args[:1] == ["--drop"] and len(args) > 1:
        drop, args = int(args[1]), args[2:]
    if len(args) < 3:
        sys.exit(__doc__)
    n, skip = int(args[0]), int(args[1])
    if drop is not None and not 0 <= drop < n:
        sys.exit("ab_inrun.py: --drop %d leaves no step of a block of %d" % (drop, n))
    bad = 0
    runs = []
    for path in args[2:]:
        try:
            r = json.load(open(path))
            res = overhead(r["step_times"], n, skip, drop)
        except (OSError, ValueError, KeyError) as e:
            print("%s: %s" % (path, e))
            bad = 1
            continue
        if res is None:
            print("%s: fewer than 3 recorded blocks between paused ones" % path)
            bad = 1
            continue
        print("%s: %d blocks of %d steps paired (first %d of each left out), step %.2f ms "
              "recorded / %.2f ms paused, overhead %+.2f %% +- %.2f %% (95 %%)" % (
                  path, res["pairs"], n, res["drop"],
                                                      res["step_on_ms"], res["step_off_ms"],
                                                      res["overhead_pct"], res["ci95_pct"]))
        print("  " + aa_line(r["step_times"], n, skip))
        runs.append((res["overhead_pct"], res["ci95_pct"]))
    if len(runs) > 1:
        m, half = pooled(runs)
        print("pooled over %d runs (each weighted by its interval's inverse square): overhead "
              "%+.2f %% +- %.2f %% (95 %%)" % (len(runs), m, half))
    sys.exit(bad)


if __name__ == "__main__":
    main()
