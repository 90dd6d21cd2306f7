# SPDX-License-Identifier: Apache-2.0
"""A torch_npu training loop over the fake torch and torch_npu: the process group on
HCCL, 5 optimizer steps with data loading, GC and device synchronisation, a dump of all
stacks on the shim's signal, then an uncaught exception."""
import gc
import os

import torch
import torch_npu  # noqa: F401  (patches torch, as the real one does)
import torch.distributed as dist
from torch.utils.data import DataLoader

torch.npu.set_device(int(os.environ.get("LOCAL_RANK", "0")))
dist.init_process_group(backend="hccl", world_size=4, rank=0)
dist.new_group(ranks=[0, 2], backend="hccl")
opt = torch.optim.Optimizer()
for batch in DataLoader(5):
    gc.collect()
    opt.step()
    torch.npu.synchronize()
os.kill(os.getpid(), int(os.environ["TRAINSCOPE_DUMP_SIGNAL"]))
print("trained", flush=True)
raise ValueError("the fake NPU model diverged")
