# SPDX-License-Identifier: Apache-2.0
from torch.utils.data.dataloader import DataLoader  # noqa: F401
