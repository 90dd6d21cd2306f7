# SPDX-License-Identifier: Apache-2.0
"""HuggingFace transformers.Trainer: GPT-2 from its config (no download) on random
tokens, gradient accumulation, data-loader workers; started by torchrun or accelerate
launch. From --noisy-from a GEMM neighbour joins GPU --noisy-rank. Host-bound faults,
from the optimizer step --fault-from on rank --fault-rank: --slow-data-ms (each item its
dataset reads waits so long, as slow storage would) and --hogs (so many busy loops on
that rank's cores, with --pin cores per rank). Each rank writes the Trainer's own
optimizer step count (state.global_step) to --out.rank<N>.json. It never imports
trainscope."""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def pin():
    """--pin N: this rank on cores [N*LOCAL_RANK, N*(LOCAL_RANK+1)), before torch starts
    threads (affinity is per thread; the ones made later, loader workers too, inherit)."""
    if "--pin" in sys.argv:
        n = int(sys.argv[sys.argv.index("--pin") + 1])
        lr = int(os.environ.get("LOCAL_RANK", "0"))
        base = int(os.environ.get("TS_PIN_BASE", "0"))  # jobs side by side: cores apart
        os.sched_setaffinity(0, range(base + n * lr, base + n * (lr + 1)))


pin()

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, \
    TrainingArguments

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import Tokens, device_counters, start_noisy, truth  # noqa: E402


class LMTokens(Tokens):
    """train.py's random tokens as a causal LM's inputs and labels."""

    slow_s, slow_after, reads, rank = 0.0, 0, 0, -1

    def __getitem__(self, i):
        # the count is per process: each loader worker reads its share of the items
        self.reads += 1
        if self.slow_s and self.reads > self.slow_after:
            if self.reads == self.slow_after + 1:
                truth("data", self.rank)
            time.sleep(self.slow_s)
        ids = super().__getitem__(i)[:-1]
        return {"input_ids": ids, "labels": ids.clone()}


class Neighbour(TrainerCallback):
    def __init__(self, gpu, at):
        self.gpu, self.at, self.proc = gpu, at, None

    def on_step_begin(self, args, state, control, **kw):
        if self.gpu >= 0 and state.global_step == self.at and args.local_rank <= 0 and \
                self.proc is None:
            self.proc = start_noisy(self.gpu)

    def on_train_end(self, args, state, control, **kw):
        if self.proc:
            self.proc.kill()


class StepTimes(TrainerCallback):
    """Each optimizer step's time, end to end: entry i is step i (the shim's numbering,
    which e2e/gpu/ab_inrun.py pairs with TRAINSCOPE_AB_STEPS' blocks); step 0 has none."""

    def __init__(self):
        self.last, self.times = None, [None]

    def on_step_end(self, args, state, control, **kw):
        now = time.perf_counter()
        if self.last is not None:
            self.times.append(round(now - self.last, 6))
        self.last = now


class Hogs(TrainerCallback):
    """n busy loops on this rank's cores from optimizer step at, as another tenant's
    processes on the same host would."""

    def __init__(self, rank, at, n):
        self.rank, self.at, self.n, self.procs = rank, at, n, []

    def on_step_begin(self, args, state, control, **kw):
        if self.n and args.process_index == self.rank and state.global_step == self.at and \
                not self.procs:
            self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                          for _ in range(self.n)]
            truth("hogs", self.rank)

    def on_train_end(self, args, state, control, **kw):
        for p in self.procs:
            p.kill()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--accum", type=int, default=2)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=512)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--noisy-rank", type=int, default=-1)
    ap.add_argument("--noisy-from", type=int, default=60)
    ap.add_argument("--fault-rank", type=int, default=1)
    ap.add_argument("--fault-from", type=int, default=60)
    ap.add_argument("--slow-data-ms", type=float, default=0)
    ap.add_argument("--hogs", type=int, default=0)
    ap.add_argument("--pin", type=int, default=0)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    cfg = GPT2Config(n_layer=a.layers, n_positions=a.seq)
    model = GPT2LMHeadModel(cfg)
    args = TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=a.steps,
                             per_device_train_batch_size=a.batch,
                             gradient_accumulation_steps=a.accum, bf16=True,
                             dataloader_num_workers=a.workers, report_to=[],
                             save_strategy="no", logging_steps=10 ** 6,
                             disable_tqdm=True)
    data = LMTokens(a.steps * a.batch * a.accum * 8, a.seq, cfg.vocab_size)
    if a.slow_data_ms and args.process_index == a.fault_rank:
        data.slow_s, data.rank = a.slow_data_ms / 1000, a.fault_rank
        data.slow_after = a.fault_from * a.batch * a.accum // max(a.workers, 1)
    times = StepTimes()
    tr = Trainer(model=model, args=args, train_dataset=data,
                 callbacks=[Neighbour(a.noisy_rank, a.noisy_from),
                            Hogs(a.fault_rank, a.fault_from, a.hogs), times])
    tr.train()
    rank = args.process_index
    if a.out:
        with open("%s.rank%d.json" % (a.out, rank), "w") as f:
            json.dump({"rank": rank, "world": args.world_size,
                       "steps": tr.state.global_step,
                       "counters": device_counters(), "step_times": times.times}, f)
    print("rank %d: %d optimizer steps" % (rank, tr.state.global_step), flush=True)


if __name__ == "__main__":
    main()
