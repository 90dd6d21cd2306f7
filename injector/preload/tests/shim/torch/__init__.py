# SPDX-License-Identifier: Apache-2.0
"""TEST DOUBLE of torch for the Python shim's tests: only the names the shim reaches
(the optimizer step post hook, the dataloader iterator, torch.distributed, torch.cuda,
torch.amp's GradScaler)."""
from torch import amp, cuda, distributed, optim  # noqa: F401
from torch.utils import data  # noqa: F401
