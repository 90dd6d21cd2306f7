# SPDX-License-Identifier: Apache-2.0
"""Optimizer steps through the framework paths the shim must count once each: 4 plain,
6 through AMP's GradScaler (every third skipped on overflow), 3 DeepSpeed accumulation
boundaries of 2 micro-steps (the second skipped on overflow): 13 steps. No RANK in the
environment: the rank comes from init_process_group, after a first record."""
import torch
import torch.distributed as dist
from deepspeed.runtime.engine import DeepSpeedEngine
from torch.utils.data import DataLoader

for _ in DataLoader(1):  # a record before the rank is known: the ring is made unranked
    pass
dist.init_process_group("gloo", world_size=3, rank=2)
opt = torch.optim.Optimizer()
for _ in range(4):
    opt.step()
scaler = torch.amp.GradScaler(skip_every=3)
for _ in range(6):
    scaler.step(opt)
engine = DeepSpeedEngine(opt, accumulation=2, overflow_every=2)
for _ in range(6):
    engine.step()
print("trained", flush=True)
