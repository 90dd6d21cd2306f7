# SPDX-License-Identifier: Apache-2.0
"""PyTorch Lightning DDP, started by Lightning's own launcher (python lit_train.py: it
starts the other local ranks itself, and sets no RANK): the GPT of train.py on random
tokens. From --noisy-from a GEMM neighbour joins GPU --noisy-rank. Each rank writes its
own step count (trainer.global_step) to --out.rank<N>.json. It never imports
trainscope: the preload and the shim find it."""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

try:
    import lightning as L
except ImportError:  # the older package name
    import pytorch_lightning as L

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train import GPT, Tokens, device_counters, job_args, start_noisy  # noqa: E402


class Model(L.LightningModule):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.net = GPT(a.vocab, a.dim, a.layers, a.heads, a.seq)
        self.noisy = None
        self.truth = []  # per step: (host ms since the last batch start, CUDA event pair)
        self.ev = None

    # The truth the analyzer is judged against: each rank's device time from batch start
    # to batch end on its compute stream (gaps included) and its host step time.
    def on_train_batch_start(self, batch, i):
        now = time.perf_counter()
        if self.ev:
            self.truth.append((now - self.ev[2], self.ev[0], self.ev[1]))
        start = torch.cuda.Event(enable_timing=True)
        start.record()
        self.ev = [start, None, now]

    def on_train_batch_end(self, out, batch, i):
        end = torch.cuda.Event(enable_timing=True)
        end.record()
        self.ev[1] = end

    def truth_windows(self, w=25):
        torch.cuda.synchronize()
        host = [h * 1e3 for h, _, _ in self.truth]
        dev = [s.elapsed_time(e) for _, s, e in self.truth]
        med = lambda v: sorted(v)[len(v) // 2] if v else 0
        return [{"from": k, "host_ms": round(med(host[k:k + w]), 2),
                 "device_ms": round(med(dev[k:k + w]), 2)} for k in range(0, len(dev), w)]

    def training_step(self, batch, i):
        if self.a.noisy_rank >= 0 and self.global_step == self.a.noisy_from and \
                self.local_rank == 0 and self.noisy is None:
            self.noisy = start_noisy(self.a.noisy_rank)
        x, y = batch[:, :-1], batch[:, 1:]
        return F.cross_entropy(self.net(x).flatten(0, 1), y.flatten())

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)

    def on_train_end(self):
        if self.noisy:
            self.noisy.kill()


def main():
    ap = job_args(argparse.ArgumentParser(description=__doc__))
    ap.add_argument("--devices", type=int, default=torch.cuda.device_count())
    ap.add_argument("--precision", default="bf16-mixed")
    ap.add_argument("--max-seconds", type=int, default=0,
                    help="stop training after this long, results written (0: no limit)")
    a = ap.parse_args()
    data = torch.utils.data.DataLoader(Tokens(a.steps * a.batch * a.devices, a.seq, a.vocab),
                                       batch_size=a.batch, num_workers=2)
    trainer = L.Trainer(accelerator="gpu", devices=a.devices, strategy="ddp",
                        max_steps=a.steps, precision=a.precision, logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False,
                        max_time={"seconds": a.max_seconds} if a.max_seconds > 0 else None)
    trainer.fit(Model(a), data)
    if a.out:
        with open("%s.rank%d.json" % (a.out, trainer.global_rank), "w") as f:
            json.dump({"rank": trainer.global_rank, "world": trainer.world_size,
                       "steps": trainer.global_step,
                       "counters": device_counters(),
                       "windows": trainer.lightning_module.truth_windows(),
                       # entry i: batch i's host time, start to next start (ab_inrun.py)
                       "step_times": [round(h, 6) for h, _, _ in
                                      trainer.lightning_module.truth]}, f)
    print("rank %d: %d optimizer steps" % (trainer.global_rank, trainer.global_step), flush=True)


if __name__ == "__main__":
    main()
