# SPDX-License-Identifier: Apache-2.0
"""A training loop over the fake torch: 5 optimizer steps, data loading, GC, process
groups, a dump of all stacks on the shim's signal, then an uncaught exception."""
import gc
import os
import signal

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader

dist.init_process_group("nccl", world_size=4, rank=0)
dist.new_group(ranks=[0, 1])
opt = torch.optim.Optimizer()
for batch in DataLoader(5):
    gc.collect()
    opt.step()
os.kill(os.getpid(), int(os.environ["TRAINSCOPE_DUMP_SIGNAL"]))
print("trained", flush=True)
raise ValueError("the fake model diverged")
