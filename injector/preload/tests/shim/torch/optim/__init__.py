# SPDX-License-Identifier: Apache-2.0
from torch.optim.optimizer import Optimizer  # noqa: F401
