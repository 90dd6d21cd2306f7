# SPDX-License-Identifier: Apache-2.0
"""coverage.py OUT_PREFIX MODE: per rank, the kernels torch.profiler (CUPTI) saw over the
profiled steps against the preload's launches over the same steps, and the preload's
CUDA-graph counters. Exit status 1 when a rank's counts differ."""
import glob
import json
import sys


def main():
    prefix, mode = sys.argv[1], sys.argv[2]
    ok = True
    files = sorted(glob.glob(prefix + ".rank*.json"))
    if not files:
        print("%-16s no result (the run failed)" % mode)
        return 1
    for path in files:
        r = json.load(open(path))
        p, c = r.get("profile") or {}, r.get("counters") or {}
        prof, pre = p.get("profiler_kernels"), p.get("preload_launches")
        same = prof is not None and prof == pre
        ok &= same
        print("%-16s rank %d: torch.profiler %s kernels, preload %s launches in %s steps: %s; "
              "graphs %s (uncounted %s), graph launches %s, captured %s, host functions %s, "
              "median step %.2f ms" % (
                  mode, r["rank"], prof, pre, p.get("steps"), "equal" if same else "DIFFER",
                  c.get("graphs"), c.get("graphs_uncounted"), c.get("graph_launches"),
                  c.get("captured"), c.get("host_funcs"), 1e3 * (r["median_step_s"] or 0)))
        if not same:
            print("  profiler kernels by name: %s" % p.get("kernel_names"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
