# SPDX-License-Identifier: Apache-2.0
"""TEST DOUBLE of torch_npu for the Python shim's tests. Importing the real one patches
torch: torch.npu appears and torch.distributed gains the "hccl" backend. The stand-in
does the same with the few names a training loop touches."""
import sys
import types

import torch
import torch.distributed as dist

npu = types.ModuleType("torch.npu")
npu.is_available = lambda: True
npu.set_device = lambda device: None
npu.current_device = lambda: 0
npu.synchronize = lambda device=None: None
torch.npu = npu
sys.modules["torch.npu"] = npu
dist.Backend.HCCL = "hccl"
