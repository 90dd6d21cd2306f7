# SPDX-License-Identifier: Apache-2.0
"""Which calls make a stream wait on another's work, per step: the Lightning job of
lit_train.py (one device, strategy "ddp") or the plain DDP loop of train.py, under
torch.profiler, each cudaStreamWaitEvent with the Python and operator stack it came
from. The preload ends a stream's busy segment at each such wait (bench/results/gpu.md,
session 25: Lightning 51 a step, the DDP loop 1). Not the preload's doing: run without
it. Prints the counts per stack, most first."""
import argparse
import collections
import os
import sys

import torch
import lightning as L

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lit_train import Model  # noqa: E402
from train import Tokens, job_args  # noqa: E402

WAITS = ("cudaStreamWaitEvent", "cuStreamWaitEvent")


def report(prof, steps, what):
    counts = collections.Counter()
    for e in prof.events():
        if e.name not in WAITS:
            continue
        ops, p = [], e.cpu_parent
        while p is not None and len(ops) < 6:
            ops.append(p.name)
            p = p.cpu_parent
        stack = [s for s in (e.stack or []) if "site-packages/torch/profiler" not in s][:6]
        counts[(" < ".join(ops), " | ".join(stack))] += 1
    total = sum(counts.values())
    print("== %s: %d stream waits in %d profiled steps (%.1f a step)" %
          (what, total, steps, total / max(steps, 1)))
    for (ops, stack), n in counts.most_common(12):
        print("%6d  ops: %s\n        py: %s" % (n, ops or "-", stack or "-"))


def streams(prof):
    """Kernels and copies per CUDA stream, from the profiler's trace."""
    import json
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        trace = json.load(open(f.name))
    per = collections.Counter()
    for ev in trace.get("traceEvents", []):
        if ev.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            per[(ev.get("args", {}).get("stream"), ev["cat"])] += 1
    print("== device work per stream: %s" % dict(per))


def main():
    ap = job_args(argparse.ArgumentParser(description=__doc__))
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--precision", default="bf16-mixed")
    a = ap.parse_args()
    a.steps = 40
    data = torch.utils.data.DataLoader(Tokens(a.steps * a.batch, a.seq, a.vocab),
                                       batch_size=a.batch, num_workers=2)
    trainer = L.Trainer(accelerator="gpu", devices=a.devices, strategy="ddp",
                        max_steps=a.steps, precision=a.precision, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False)
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts, with_stack=True) as prof:
        trainer.fit(Model(a), data)
    report(prof, a.steps, "Lightning (strategy ddp, %d device)" % a.devices)
    streams(prof)


if __name__ == "__main__":
    main()
