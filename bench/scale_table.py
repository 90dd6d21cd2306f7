# SPDX-License-Identifier: Apache-2.0
"""The scale benches' tables (bench_scale.sh, bench_100k.sh): rows of (what, measured,
budget) printed aligned under a title, and written to OUT when it is set."""
import sys


def finish(title, rows, ok, out, width):
    """Prints the table, writes it to out (a path, or empty), exits 0 when ok, else 1."""
    w = max(len(r[0]) for r in rows)
    text = "\n".join("  %-*s  %-*s %s" % (w, r[0], width, r[1], r[2]) for r in rows)
    print(title)
    print(text)
    if out:
        with open(out, "w") as fh:
            fh.write(text + "\n")
    sys.exit(0 if ok else 1)
