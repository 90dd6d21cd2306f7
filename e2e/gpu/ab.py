# SPDX-License-Identifier: Apache-2.0
"""Interleaved A/B overhead from run.sh's result files: per alternation the ratio of the
median steady step time with the preload to the one without (rank 0), then the median
of those ratios."""
import glob
import json
import statistics
import sys

out = sys.argv[1]
ratios = []
i = 1
while True:
    a = glob.glob("%s/ab-%d-without.rank0.json" % (out, i))
    b = glob.glob("%s/ab-%d-with.rank0.json" % (out, i))
    if not a or not b:
        break
    wo, w = json.load(open(a[0])), json.load(open(b[0]))
    r = w["median_step_s"] / wo["median_step_s"]
    ratios.append(r)
    print("alternation %d: without %.2f ms, with %.2f ms, ratio %.4f (%d steps each)"
          % (i, wo["median_step_s"] * 1e3, w["median_step_s"] * 1e3, r, w["steps"]))
    i += 1
if ratios:
    m = statistics.median(ratios)
    print("overhead: %.2f %% (median of %d step-time ratios)" % ((m - 1) * 100, len(ratios)))
else:
    print("overhead: no complete alternation")
    sys.exit(1)
