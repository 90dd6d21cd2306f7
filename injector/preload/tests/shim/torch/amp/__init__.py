# SPDX-License-Identifier: Apache-2.0
from torch.amp import grad_scaler  # noqa: F401
from torch.amp.grad_scaler import GradScaler  # noqa: F401
